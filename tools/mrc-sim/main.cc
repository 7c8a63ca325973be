// mrc-sim: packet-level simulation of multi-plane AI fabrics with the real
// MRC protocol core on every NIC.
//
// With no arguments it runs the default scenario: a 2-tier cluster with 8
// planes x 100 Gb/s per NIC runs training steps of ring all-reduce while a T1
// switch reboots and a NIC-T0 link flaps, once per transport under test, and
// prints the results side by side.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric.hpp"
#include "sim/scenario/failures.hpp"
#include "sim/scenario/runner.hpp"

using namespace mrc;
using namespace mrc::sim;
using json = nlohmann::ordered_json;

namespace {

struct Options {
  // topology
  std::string topology = "clos2";
  std::string routing = "srv6";
  uint32_t planes = 8;
  uint32_t hosts = 64;
  uint32_t t0_down = 8;
  uint32_t t0_up = 8;
  uint32_t t1 = 8;
  double rate_gbps = 100;
  double link_delay_ns = 500;
  double switch_latency_ns = 400;
  // workload
  std::string workload = "train";
  uint64_t bytes = 32ull << 20;
  uint32_t steps = 8;
  double compute_us = 150;
  uint32_t fan_in = 8;
  bool victim = false;
  std::string cm_file;
  // transports and failures
  std::vector<std::string> transports = {"mrc", "roce"};
  std::vector<std::string> failures;
  bool default_failures = true;
  uint32_t qps_per_peer = 0;  // 0: 1 for MRC, one per plane for RoCE
  uint32_t evs_per_plane = 32;
  // run
  uint64_t seed = 1;
  double time_limit_ms = 200;
  double sample_us = 20;
  std::string json_out, csv_out;
  bool quiet = false;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void print_table(const std::vector<RunResult>& rs, const Options& o) {
  const bool steps = !rs.empty() && !rs[0].steps.empty();
  fmt::print("\n{:<18}", "");
  for (const auto& r : rs) fmt::print("{:>20}", r.transport);
  fmt::print("\n");
  auto row = [&](const std::string& name, auto f) {
    fmt::print("{:<18}", name);
    for (const auto& r : rs) fmt::print("{:>20}", f(r));
    fmt::print("\n");
  };
  row("completed", [](const RunResult& r) { return r.completed ? std::string("yes") : std::string("NO"); });
  // Percentile rows over a per-run sample (p = 0 is the minimum, 100 the maximum).
  auto stat_row = [&](const std::string& name, auto sample, double p, const char* fmt_str) {
    row(name, [&](const RunResult& r) { return fmt::format(fmt::runtime(fmt_str), percentile(sample(r), p)); });
  };
  auto us_of = [](const std::vector<Duration>& ds) {
    std::vector<double> v;
    for (Duration d : ds) v.push_back(d.to_us());
    return v;
  };
  if (steps) {
    auto step_us = [&](const RunResult& r) { return us_of(r.steps); };
    auto coll_us = [&](const RunResult& r) { return us_of(r.collectives); };
    stat_row("step time min", step_us, 0, "{:.1f} us");
    stat_row("step time p50", step_us, 50, "{:.1f} us");
    stat_row("step time max", step_us, 100, "{:.1f} us");
    row("all-reduce ideal", [](const RunResult& r) { return fmt::format("{:.1f} us", r.ideal_collective.to_us()); });
    stat_row("all-reduce p50", coll_us, 50, "{:.1f} us");
    stat_row("all-reduce max", coll_us, 100, "{:.1f} us");
  } else {
    auto fct_us = [](const RunResult& r) {
      std::vector<double> v;
      for (const auto& f : r.flows)
        if (f.done) v.push_back(f.fct().to_us());
      return v;
    };
    auto slowdown = [](const RunResult& r) {
      std::vector<double> v;
      for (const auto& f : r.flows)
        if (f.done) v.push_back(f.slowdown());
      return v;
    };
    row("flows done", [](const RunResult& r) {
      size_t n = 0;
      for (const auto& f : r.flows) n += f.done;
      return fmt::format("{}/{}", n, r.flows.size());
    });
    for (double p : {0.0, 50.0, 99.0, 100.0})
      stat_row(p == 0 ? "FCT min" : p == 100 ? "FCT max" : fmt::format("FCT p{:.0f}", p), fct_us, p, "{:.1f} us");
    stat_row("slowdown p50", slowdown, 50, "{:.2f}");
    stat_row("slowdown max", slowdown, 100, "{:.2f}");
  }
  row("drops", [](const RunResult& r) {
    return fmt::format("{}", r.fabric.drops_queue + r.fabric.drops_link_down + r.fabric.drops_random + r.fabric.drops_no_route); });
  row("  on dead links", [](const RunResult& r) { return fmt::format("{}", r.fabric.drops_link_down); });
  row("trims", [](const RunResult& r) { return fmt::format("{}", r.fabric.trims + r.fabric.trims_last_hop); });
  row("ECN marks", [](const RunResult& r) { return fmt::format("{}", r.fabric.ecn_marks); });
  row("retransmissions", [](const RunResult& r) { return fmt::format("{}", r.retransmissions); });
  row("ACK timeouts", [](const RunResult& r) { return fmt::format("{}", r.timeouts); });
  row("EVs retired", [](const RunResult& r) { return fmt::format("{}", r.evs_retired); });
  row("EVs resurrected", [](const RunResult& r) { return fmt::format("{}", r.evs_resurrected); });
  row("QP failures", [](const RunResult& r) { return fmt::format("{}", r.qp_failures); });
  row("simulated", [](const RunResult& r) { return fmt::format("{:.1f} us", r.end.to_us()); });
  row("packet-hops/s", [](const RunResult& r) {
    return fmt::format("{:.2f} M", static_cast<double>(r.fabric.packets_forwarded) / r.wall_s / 1e6); });
  row("wall time", [](const RunResult& r) { return fmt::format("{:.2f} s", r.wall_s); });
  row("peak RSS", [](const RunResult& r) { return fmt::format("{} MB", r.peak_rss_kb / 1024); });
  (void)o;
}

json to_json(const RunResult& r) {
  json j;
  j["transport"] = r.transport;
  j["completed"] = r.completed;
  j["simulated_us"] = r.end.to_us();
  j["wall_s"] = r.wall_s;
  j["events"] = r.events;
  json steps = json::array();
  for (size_t i = 0; i < r.steps.size(); ++i)
    steps.push_back({{"step", i}, {"step_us", r.steps[i].to_us()}, {"allreduce_us", r.collectives[i].to_us()}});
  j["steps"] = steps;
  if (!r.steps.empty()) j["allreduce_ideal_us"] = r.ideal_collective.to_us();
  json flows = json::array();
  for (const auto& f : r.flows)
    flows.push_back({{"src", f.spec.src}, {"dst", f.spec.dst}, {"bytes", f.spec.bytes}, {"start_us", f.spec.start.to_us()},
                     {"finish_us", f.done ? f.finish.to_us() : -1.0}, {"fct_us", f.done ? f.fct().to_us() : -1.0},
                     {"ideal_fct_us", f.ideal.to_us()}, {"slowdown", f.slowdown()}, {"status", core::to_string(f.status)}});
  j["flows"] = flows;
  j["counters"] = {{"packet_hops", r.fabric.packets_forwarded}, {"delivered", r.fabric.delivered},
                   {"drops_queue", r.fabric.drops_queue}, {"drops_link_down", r.fabric.drops_link_down},
                   {"drops_random", r.fabric.drops_random}, {"drops_no_route", r.fabric.drops_no_route},
                   {"trims", r.fabric.trims}, {"trims_last_hop", r.fabric.trims_last_hop}, {"ecn_marks", r.fabric.ecn_marks},
                   {"pfc_pauses", r.fabric.pfc_pauses}, {"retransmissions", r.retransmissions}, {"ack_timeouts", r.timeouts},
                   {"losses_rule", r.losses_rule}, {"losses_nack", r.losses_nack}, {"probes", r.probes},
                   {"evs_retired", r.evs_retired}, {"evs_resurrected", r.evs_resurrected}, {"qp_failures", r.qp_failures}};
  json series = json::array();
  for (const auto& s : r.series)
    series.push_back({{"t_us", s.at.to_us()}, {"goodput_gbps", s.goodput_gbps}, {"queued_bytes", s.queued_bytes}});
  j["series"] = series;
  json evs = json::array();
  for (const auto& [t, e] : r.ev_events)
    evs.push_back({{"t_us", t.to_us()}, {"qpn", e.qpn}, {"ev", e.ev}, {"plane", e.port}, {"from", core::to_string(e.from)},
                   {"to", core::to_string(e.to)}, {"drops", e.drop_count}});
  j["ev_events"] = evs;
  json fl = json::array();
  for (const auto& [t, s] : r.failure_log) fl.push_back({{"t_us", t.to_us()}, {"action", s}});
  j["failures"] = fl;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"mrc-sim: packet-level simulation of multi-plane AI fabrics with the real MRC core on every NIC"};
  app.add_option("--topology", o.topology, "clos2 (multi-plane 2-tier), fattree2, fattree3")->check(CLI::IsMember({"clos2", "fattree2", "fattree3"}));
  app.add_option("--routing", o.routing, "srv6 (static uSID source routing) or ecmp")->check(CLI::IsMember({"srv6", "ecmp"}));
  app.add_option("--planes", o.planes, "network planes = NIC ports (clos2)");
  app.add_option("--hosts", o.hosts, "NICs");
  app.add_option("--t0-down", o.t0_down, "host ports per T0");
  app.add_option("--t0-up", o.t0_up, "uplinks per T0");
  app.add_option("--t1", o.t1, "T1 switches per plane");
  app.add_option("--rate-gbps", o.rate_gbps, "rate of every link (per plane), Gb/s");
  app.add_option("--link-delay-ns", o.link_delay_ns, "propagation delay per link");
  app.add_option("--switch-latency-ns", o.switch_latency_ns, "latency per switch");
  app.add_option("--workload", o.workload, "train, allreduce, permutation, incast, alltoall, cm")
      ->check(CLI::IsMember({"train", "allreduce", "permutation", "incast", "alltoall", "cm"}));
  app.add_option("--bytes", o.bytes, "all-reduce size (train/allreduce) or bytes per flow");
  app.add_option("--steps", o.steps, "training steps");
  app.add_option("--compute-us", o.compute_us, "compute time per training step");
  app.add_option("--fan-in", o.fan_in, "incast senders");
  app.add_flag("--victim", o.victim, "incast: add a victim flow to the target's T0 neighbour");
  app.add_option("--cm", o.cm_file, "connection matrix file (workload cm)");
  app.add_option("--transports", o.transports,
                 "transports side by side: mrc, mrc-nscc, mrc-oblivious, mrc-single-path, roce (RoCEv2 RC + DCQCN), roce-pfc")
      ->delimiter(',');
  app.add_option("--fail", o.failures, "failure, e.g. switch-down:tier=t1,plane=0,index=2,at=1ms,for=2ms (repeatable)");
  app.add_flag("!--no-default-failures", o.default_failures,
               "without --fail, run no failures (by default the T1 reboot and link flap of the default scenario)");
  app.add_option("--qps-per-peer", o.qps_per_peer, "QPs per host pair (default: 1 for MRC, one per plane for RoCE)");
  app.add_option("--evs-per-plane", o.evs_per_plane, "EVs per QP and plane (half active)");
  app.add_option("--seed", o.seed, "seed; same configuration + seed = byte-identical output");
  app.add_option("--time-limit-ms", o.time_limit_ms, "stop after this much simulated time");
  app.add_option("--sample-us", o.sample_us, "time-series sample interval");
  app.add_option("--json", o.json_out, "write results as JSON to this file");
  app.add_flag("--quiet", o.quiet, "no progress on stderr");
  CLI11_PARSE(app, argc, argv);

  TopologyConfig topo;
  topo.kind = o.topology == "clos2" ? TopologyKind::clos2_multiplane
              : o.topology == "fattree2" ? TopologyKind::fattree2 : TopologyKind::fattree3;
  topo.routing = o.routing == "srv6" ? Routing::srv6 : Routing::ecmp;
  topo.planes = o.planes;
  topo.hosts = o.hosts;
  topo.t0_down = o.t0_down;
  topo.t0_up = o.t0_up;
  topo.t1_count = o.t1;
  topo.host_link_bps = static_cast<uint64_t>(o.rate_gbps * 1e9);
  topo.link_delay = Duration::ps(static_cast<int64_t>(o.link_delay_ns * 1e3));
  topo.switch_latency = Duration::ps(static_cast<int64_t>(o.switch_latency_ns * 1e3));
  std::string why;
  if (Status s = topo.validate(&why); !s) {
    fmt::print(stderr, "mrc-sim: invalid topology: {}\n", why);
    return 2;
  }
  std::vector<std::string> fail_text = o.failures;
  if (fail_text.empty() && o.default_failures && topo.kind == TopologyKind::clos2_multiplane) {
    // The default scenario: a T1 switch reboots and a NIC-T0 link flaps mid-run.
    fail_text = {"switch-down:tier=t1,plane=0,index=1,at=3ms,for=1ms",
                 "link-flap:tier=host,plane=3,a=5,at=5ms,until=6500us,period=300us,duty=0.5"};
  }
  std::vector<FailureSpec> failures;
  for (const auto& t : fail_text) {
    auto f = parse_failure(t, &why);
    if (!f) {
      fmt::print(stderr, "mrc-sim: {}\n", why);
      return 2;
    }
    failures.push_back(*f);
  }
  {
    Simulator probe(o.seed);
    Fabric probe_fabric(probe, topo);
    if (Status s = validate_failures(failures, probe_fabric, &why); !s) {
      fmt::print(stderr, "mrc-sim: {}\n", why);
      return 2;
    }
  }
  std::vector<TransportSpec> specs;
  for (const auto& t : o.transports) {
    const bool roce = t.rfind("roce", 0) == 0;
    const uint32_t qps = o.qps_per_peer ? o.qps_per_peer : (roce ? topo.num_planes() : 1);
    auto s = transport_by_name(t, o.evs_per_plane, qps);
    if (!s) {
      fmt::print(stderr, "mrc-sim: unknown transport '{}' (mrc, mrc-nscc, mrc-oblivious, mrc-single-path, roce, roce-pfc)\n", t);
      return 2;
    }
    specs.push_back(*s);
  }
  Scenario sc;
  sc.topology = topo;
  sc.workload = o.workload == "train"         ? WorkloadKind::train
                : o.workload == "allreduce"   ? WorkloadKind::allreduce
                : o.workload == "permutation" ? WorkloadKind::permutation
                : o.workload == "incast"      ? WorkloadKind::incast
                : o.workload == "alltoall"    ? WorkloadKind::alltoall
                                              : WorkloadKind::matrix;
  sc.bytes = o.bytes;
  sc.steps = o.steps;
  sc.compute = Duration::ps(static_cast<int64_t>(o.compute_us * 1e6));
  sc.fan_in = o.fan_in;
  sc.victim = o.victim;
  sc.failures = failures;
  sc.seed = o.seed;
  sc.time_limit = Duration::ps(static_cast<int64_t>(o.time_limit_ms * 1e9));
  sc.sample_every = Duration::ps(static_cast<int64_t>(o.sample_us * 1e6));
  sc.protocol.probe_interval = Duration::us(100);
  sc.protocol.probe_interval_max = Duration::ms(2);
  if (sc.workload == WorkloadKind::matrix) {
    auto cm = read_connection_matrix(o.cm_file, topo.hosts, &why);
    if (!cm) {
      fmt::print(stderr, "mrc-sim: {}\n", why);
      return 2;
    }
    sc.flows = *cm;
  }

  fmt::print("mrc-sim configuration\n");
  fmt::print("  topology    {} ({} routing): {} hosts, {} plane(s), {} hosts/T0, {} up/T0, {} T1/plane, {:.0f} Gb/s links\n",
             o.topology, o.routing, o.hosts, topo.num_planes(), o.t0_down, o.t0_up, o.t1, o.rate_gbps);
  fmt::print("  latency     {:.0f} ns per link, {:.0f} ns per switch\n", o.link_delay_ns, o.switch_latency_ns);
  if (o.workload == "train")
    fmt::print("  workload    {} training steps: {:.0f} us compute + ring all-reduce of {} MiB over {} hosts\n", o.steps,
               o.compute_us, o.bytes >> 20, o.hosts);
  else
    fmt::print("  workload    {} ({} bytes per flow)\n", o.workload, o.bytes);
  for (const auto& f : failures) fmt::print("  failure     {}\n", f.text);
  fmt::print("  transports  {}\n", fmt::join(o.transports, ", "));
  fmt::print("  seed        {}\n", o.seed);

  std::vector<RunResult> results;
  const bool tty = isatty(2) && !o.quiet;
  for (const auto& s : specs) {
    if (tty)
      sc.progress = [&](Time now, uint64_t events, size_t steps_done) {
        fmt::print(stderr, "\r  {:<18} t = {:9.1f} us  {:>12} events  {}", s.name, now.to_us(), events,
                   sc.workload == WorkloadKind::train ? fmt::format("step {}/{}", steps_done, sc.steps) : "");
      };
    results.push_back(run_scenario(sc, s));
    if (tty) fmt::print(stderr, "\r{:90}\r", "");
  }
  print_table(results, o);

  if (!o.json_out.empty()) {
    json j;
    j["schema"] = "mrc-sim/1";
    j["seed"] = o.seed;
    json runs = json::array();
    for (const auto& r : results) runs.push_back(to_json(r));
    j["runs"] = runs;
    std::ofstream(o.json_out) << j.dump(1) << "\n";
    fmt::print("\nwrote {}\n", o.json_out);
  }
  return 0;
}
