// SPDX-License-Identifier: BSD-2-Clause
// Fabric hot path: simulated packet-hops per wall second, without the
// protocol core.
//
// 128 hosts on a 2-tier fabric (T0: 16 down / 16 up, 16 T1s per plane, all
// links 100G) run a permutation: every host sends 4 KiB packets back to back
// at line rate on every NIC port to one fixed peer, spraying over 16 EVs per
// plane (SRv6) or hashing 16 entropy values (ECMP). A tiny Node per host
// stands in for the NIC: one serialization event per packet and port, then
// Fabric::inject(); arrivals are freed. Each benchmark iteration simulates
// 20 us more of the same steady state.
//
//   build/release/bench/bench_sim_fabric
// Counters: hops/s (packet-hops: link traversals, host links included),
// events/s, and delivered Gb/s of simulated traffic per wall second.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "sim/fabric/fabric.hpp"

namespace {

using namespace mrc;
using namespace mrc::sim;

constexpr uint32_t kHosts = 128;
constexpr uint32_t kPayload = 4096;
constexpr uint32_t kEvsPerPlane = 16;

class Host final : public Node {
 public:
  Host(Simulator& sim, Fabric& f, uint32_t id, uint32_t dst, std::vector<core::EvEntry> evs)
      : sim_(sim), f_(f), id_(id), dst_(dst), evs_(std::move(evs)), next_(f.planes(), 0), keys_(sim.new_keys()) {}

  void start() {
    for (uint32_t p = 0; p < f_.planes(); ++p) send(p);
  }
  void on_event(Simulator&, uint64_t tag) override {
    const uint32_t plane = static_cast<uint32_t>(tag);
    f_.inject(cur_[plane]);
    send(plane);
  }
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }

 private:
  void send(uint32_t plane) {
    Packet* p = sim_.new_packet();
    p->hdr_len = 56;
    p->payload_len = kPayload;
    p->src = id_;
    p->dst = dst_;
    p->plane = static_cast<uint8_t>(plane);
    p->entropy = evs_[plane * kEvsPerPlane + (next_[plane]++ % kEvsPerPlane)].value;
    p->cls = Class::data;
    p->trimmable = true;
    f_.set_route(*p);
    if (cur_.size() <= plane) cur_.resize(plane + 1);
    cur_[plane] = p;
    sim_.schedule(sim_.now() + Duration::serialization(p->wire_bytes(), f_.host_port_bps(id_, plane)), this, plane,
                  keys_.next());
  }
  Simulator& sim_;
  Fabric& f_;
  uint32_t id_, dst_;
  std::vector<core::EvEntry> evs_;
  std::vector<uint32_t> next_;
  std::vector<Packet*> cur_;
  EventKeys keys_;
};

// range(0): planes (1 = fattree2, else clos2_multiplane); range(1): 0 = SRv6, 1 = ECMP.
void BM_FabricPermutation(benchmark::State& state) {
  TopologyConfig cfg;
  const auto planes = static_cast<uint32_t>(state.range(0));
  cfg.kind = planes == 1 ? TopologyKind::fattree2 : TopologyKind::clos2_multiplane;
  cfg.planes = planes;
  cfg.hosts = kHosts;
  cfg.t0_down = 16;
  cfg.t0_up = 16;
  cfg.t1_count = 16;
  cfg.routing = state.range(1) ? Routing::ecmp : Routing::srv6;
  Simulator sim(1);
  Fabric fabric(sim, cfg);
  Prng rng(7);
  // A permutation without fixed points, crossing T0s.
  std::vector<std::unique_ptr<Host>> hosts;
  for (uint32_t h = 0; h < kHosts; ++h) {
    const uint32_t dst = (h + 37) % kHosts;
    hosts.push_back(std::make_unique<Host>(sim, fabric, h, dst, fabric.make_evs(h, dst, kEvsPerPlane, rng)));
    fabric.attach(h, hosts.back().get());
  }
  for (auto& h : hosts) h->start();
  sim.run_until(Time::zero() + Duration::us(20));  // warm up: queues and rings at steady size
  const uint64_t hops0 = fabric.stats().packets_forwarded;
  const uint64_t events0 = sim.events_processed();
  const uint64_t delivered0 = fabric.stats().delivered;
  for (auto _ : state) sim.run_until(sim.now() + Duration::us(20));
  const double hops = static_cast<double>(fabric.stats().packets_forwarded - hops0);
  state.counters["hops/s"] = benchmark::Counter(hops, benchmark::Counter::kIsRate);
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(sim.events_processed() - events0), benchmark::Counter::kIsRate);
  state.counters["sim_Gb/s"] = benchmark::Counter(
      static_cast<double>(fabric.stats().delivered - delivered0) * kPayload * 8 / 1e9, benchmark::Counter::kIsRate);
  state.counters["events/hop"] = static_cast<double>(sim.events_processed() - events0) / hops;
  state.counters["pending"] = static_cast<double>(sim.pending_events());
  state.counters["trims"] = static_cast<double>(fabric.stats().trims);
}
BENCHMARK(BM_FabricPermutation)
    ->ArgNames({"planes", "ecmp"})
    ->Args({1, 0})
    ->Args({8, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
