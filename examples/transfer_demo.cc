// SPDX-License-Identifier: BSD-2-Clause
// mrc-demo: one MRC connection moves a buffer between two endpoints over the
// deterministic test fabric while paths fail and recover, and reports what
// the transport did about it.
//
// This is the project's main job until the simulator (mrc-sim) lands. Every
// packet goes through the real protocol core; only the network is modelled.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstring>
#include <string>

#include "harness/fabric.hpp"

using namespace mrc;

namespace {

struct Options {
  uint64_t size_mib = 64;
  uint32_t planes = 4;
  uint32_t paths = 4;
  double rate_gbps = 100;
  double path_delay_us = 1;
  double fail_at_us = 100;
  double plane_down_at_us = 300;
  double plane_up_at_us = 800;
  double loss = 0.0;
  uint64_t seed = 1;
  double interval_us = 50;
};

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) {
    b /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", b, units[u]);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"mrc-demo: one MRC QP moves a buffer across a multi-plane fabric while paths fail"};
  app.add_option("--size-mib", o.size_mib, "bytes to WRITE, in MiB")->check(CLI::Range(1, 1024));
  app.add_option("--planes", o.planes, "network planes (NIC ports)")->check(CLI::Range(1, 32));
  app.add_option("--paths", o.paths, "paths per plane")->check(CLI::Range(1, 64));
  app.add_option("--rate-gbps", o.rate_gbps, "rate of each NIC port / path, Gb/s")->check(CLI::Range(1.0, 1600.0));
  app.add_option("--path-delay-us", o.path_delay_us, "one-way delay of each path, us")->check(CLI::Range(0.1, 1000.0));
  app.add_option("--fail-at-us", o.fail_at_us, "time one path (plane 1, path 0) dies for good; <0: never");
  app.add_option("--plane-down-at-us", o.plane_down_at_us, "time every path of the last plane dies; <0: never");
  app.add_option("--plane-up-at-us", o.plane_up_at_us, "time the last plane is repaired");
  app.add_option("--loss", o.loss, "random loss probability on every path")->check(CLI::Range(0.0, 0.5));
  app.add_option("--seed", o.seed, "seed: the same seed reproduces the same run bit for bit");
  app.add_option("--interval-us", o.interval_us, "report interval, us")->check(CLI::Range(1.0, 1e6));
  CLI11_PARSE(app, argc, argv);

  harness::FabricConfig fc;
  fc.hosts = 2;
  fc.planes = o.planes;
  fc.paths_per_plane = o.paths;
  fc.port_rate_bps = static_cast<uint64_t>(o.rate_gbps * 1e9);
  fc.path_delay = Duration::ps(static_cast<int64_t>(o.path_delay_us * 1e6));
  fc.seed = o.seed;
  fc.endpoint.protocol.base_rtt = fc.path_delay * 2 + Duration::us(2);
  fc.endpoint.protocol.reorder_allowance = Duration::us(2);
  fc.endpoint.protocol.probe_interval = Duration::us(50);
  fc.endpoint.protocol.probe_interval_max = Duration::us(800);
  harness::Fabric f(fc);

  const auto us = [](double v) { return Time::zero() + Duration::ps(static_cast<int64_t>(v * 1e6)); };
  const int dead_plane = o.planes > 1 ? 1 : 0;
  if (o.fail_at_us >= 0) f.path_down(dead_plane, 0, us(o.fail_at_us));
  const int flap_plane = static_cast<int>(o.planes) - 1;
  if (o.plane_down_at_us >= 0 && o.planes > 1)
    for (uint32_t k = 0; k < o.paths; ++k)
      f.path_down(flap_plane, static_cast<int>(k), us(o.plane_down_at_us), us(o.plane_up_at_us));
  if (o.loss > 0) {
    harness::Rule r;
    r.select = harness::Rule::Select::random;
    r.probability = o.loss;
    f.add_rule(r);
  }

  uint64_t lost_on_dead_path = 0;
  f.on_transmit = [&](const harness::Packet& p, Time t) {
    if (p.src == 0 && p.kind() == harness::PacketKind::data && o.fail_at_us >= 0 && p.plane == dead_plane &&
        p.path == 0 && t >= us(o.fail_at_us))
      ++lost_on_dead_path;
  };

  harness::QpOptions qo;
  qo.attr.timeout = 6;  // 65.5 us ACK timeout
  const auto qp = f.connect(0, 1, qo);
  const uint64_t bytes = o.size_mib << 20;
  auto& src = f.alloc(0, bytes);
  auto& dst = f.alloc(1, bytes);
  Prng fill(o.seed);
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint64_t v = fill.next_u64();
    std::memcpy(&src.mem[i], &v, 8);
  }

  fmt::print("OpenMRC demo: one MRC QP, host 0 -> host 1\n");
  fmt::print("  fabric   {} planes x {} paths, {:.0f} Gb/s per plane, {:.1f} us per path, seed {}\n", o.planes,
             o.paths, o.rate_gbps, o.path_delay_us, o.seed);
  fmt::print("  transfer {} in one RDMA WRITE (4096 B MTU, {} EVs spread over the planes)\n", human_bytes(double(bytes)),
             f.ep(0).qp(qp.a)->path()->size());
  if (o.fail_at_us >= 0) fmt::print("  failure  plane {} path 0 dies at {:.0f} us and stays dead\n", dead_plane, o.fail_at_us);
  if (o.plane_down_at_us >= 0 && o.planes > 1)
    fmt::print("  failure  every path of plane {} is down from {:.0f} to {:.0f} us\n", flap_plane, o.plane_down_at_us,
               o.plane_up_at_us);
  if (o.loss > 0) fmt::print("  failure  {:.2f}% random loss on every path\n", o.loss * 100);
  fmt::print("\n{:>10} {:>12} {:>9} {:>8} {:>8} {:>8}  {}\n", "time(us)", "delivered", "Gb/s", "rtx", "retired",
             "back", "EV events");

  core::SendWr wr;
  wr.wr_id = 1;
  wr.local_addr = src.addr();
  wr.lkey = src.mr.lkey;
  wr.length = static_cast<uint32_t>(bytes);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.mr.rkey;
  if (Status s = f.ep(0).post_send(f.now(), qp.a, wr); !s) {
    fmt::print(stderr, "post_send failed: {}\n", to_string(s.error()));
    return 1;
  }
  f.kick(0);

  const Duration step = Duration::ps(static_cast<int64_t>(o.interval_us * 1e6));
  bool done = false;
  core::WcStatus status = core::WcStatus::general_err;
  uint64_t last_rx = 0, retired_total = 0, back_total = 0;
  Time finish;
  while (!done && f.now() < Time::zero() + Duration::s(1)) {
    const Time t_end = f.now() + step;
    f.run_until(
        [&] {
          while (auto e = f.next_event(0)) {
            if (auto* w = std::get_if<core::WorkCompletion>(&*e)) {
              done = true;
              status = w->status;
              finish = f.now();
            } else {
              f.hold_event(0, std::move(*e));
            }
          }
          return done;
        },
        t_end);
    uint64_t retired = 0, back = 0;
    std::string evs;
    for (auto& e : f.events(0)) {
      if (auto* ev = std::get_if<core::EvEvent>(&e)) {
        if (ev->to == core::EvState::assumed_bad) ++retired;
        if (ev->to == core::EvState::good) ++back;
      }
    }
    if (retired) evs += fmt::format("{} EV(s) -> ASSUMED_BAD ", retired);
    if (back) evs += fmt::format("{} EV(s) probed back -> GOOD", back);
    retired_total += retired;
    back_total += back;
    const uint64_t rx = f.ep(1).qp(qp.b)->stats().data_packets_received;
    const double gbps = double(rx - last_rx) * 4096 * 8 / (o.interval_us * 1e3);
    last_rx = rx;
    fmt::print("{:>10.0f} {:>12} {:>9.1f} {:>8} {:>8} {:>8}  {}\n", f.now().to_us(),
               human_bytes(double(std::min<uint64_t>(rx * 4096, bytes))), gbps,
               f.ep(0).qp(qp.a)->stats().retransmissions, retired_total, back_total, evs);
  }

  const auto& st = f.ep(0).qp(qp.a)->stats();
  const auto* path = f.ep(0).qp(qp.a)->path();
  const bool intact = std::memcmp(src.mem.data(), dst.mem.data(), bytes) == 0;
  const double ideal_us = double(bytes) * 8 / (o.rate_gbps * 1e9 * o.planes) * 1e6;
  fmt::print("\nresult\n");
  fmt::print("  completion      {} at {:.1f} us ({:.1f} Gb/s goodput; {:.1f} us at full line rate)\n",
             done ? core::to_string(status) : "NOT COMPLETED", finish.to_us(),
             double(bytes) * 8 / (finish.to_us() * 1e3), ideal_us);
  fmt::print("  data            {} (checksum {:016x})\n", intact ? "intact" : "CORRUPT",
             harness::checksum(dst.mem.data(), bytes));
  fmt::print("  packets         {} data, {} retransmitted (loss rule {}, ACK timeout {}, NACK {}), {} probes\n",
             st.data_packets_sent, st.retransmissions, st.losses_rule, st.losses_timeout, st.losses_nack,
             st.probes_sent);
  fmt::print("  paths           {} EVs retired, {} resurrected by probes, {} now ASSUMED_BAD\n",
             path->stats().retired, path->stats().resurrected, path->count(core::EvState::assumed_bad));
  if (o.fail_at_us >= 0)
    fmt::print("  dead path       {} data packets sent into it after it died\n", lost_on_dead_path);
  fmt::print("  fabric          {} packets sent, {} dropped, {} delivered; trace hash {:016x}\n", f.stats().sent,
             f.stats().dropped + f.stats().overflow_drops, f.stats().delivered, f.trace_hash());
  return done && status == core::WcStatus::success && intact ? 0 : 1;
}
