// SPDX-License-Identifier: BSD-2-Clause
// Tests for sim/fabric/egress_port.hpp: strict control priority, WDRR share,
// drop-tail, trimming (with the last-hop mark), ECN marking probability,
// no marking towards hosts, PFC signalling, the lazy serializer, and a port
// that catches up on demand against one driven by its own events.
#include "sim/fabric/egress_port.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/fabric/pipe.hpp"
#include "sim_test_util.hpp"

namespace mrc::sim {
namespace {

constexpr uint64_t k100G = 100'000'000'000ull;
constexpr uint32_t kData = 4096;
constexpr uint32_t kDataWire = kData + 48 + kWireOverhead;  // 4234
constexpr uint32_t kHdrWire = 48 + kWireOverhead;           // 138

PortParams plain(uint64_t data_bytes) {
  PortParams p;
  p.data_bytes = data_bytes;
  p.trimmed_bytes = 1 << 20;
  p.control_bytes = 1 << 20;
  p.ecn = false;
  p.trimming = false;
  p.trimmed_weight_pct = 25;
  return p;
}

class PfcRecorder final : public PfcPeer {
 public:
  std::vector<std::pair<uint32_t, bool>> signals;
  void pfc_signal(uint32_t in_port, bool pause) override { signals.emplace_back(in_port, pause); }
};

struct PortRig {
  Simulator sim{1};
  FabricContext ctx;
  Pipe pipe;
  EgressPort port;
  test::Sink sink;
  PfcRecorder pfc;
  explicit PortRig(const PortParams& prm, uint64_t stream = 1, Duration delay = Duration{}) {
    ctx.sim = &sim;
    pipe.init(&ctx, k100G, delay, 1000);
    pipe.connect_to_host(0, 0);
    pipe.attach_nic(&sink);
    port.init(&ctx, &pipe, prm, stream, &pfc, 64);
  }
  Packet* data(bool trimmable = false, bool ecn = true) {
    Packet* p = test::make_packet(sim, 1, 0, kData, Class::data, trimmable);
    p->ecn_capable = ecn;
    return p;
  }
  Packet* ctrl() { return test::make_packet(sim, 1, 0, 0, Class::control); }
  Packet* trimmed() { return test::make_packet(sim, 1, 0, 0, Class::trimmed); }
  void drain() { sim.run_until(Time::never()); }
};

TEST(EgressPort, IdlePortTransmitsAtOnceAndBackToBack) {
  PortRig r(plain(1 << 20), 1, Duration::ns(100));
  for (int i = 0; i < 3; ++i) r.port.enqueue(r.data(), 0);
  r.drain();
  ASSERT_EQ(r.sink.rx.size(), 3u);
  const Duration ser = Duration::serialization(kDataWire, k100G);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.sink.rx[i].at, Time::zero() + ser * (i + 1) + Duration::ns(100));
  EXPECT_EQ(r.ctx.queued_bytes, 0u);
}

TEST(EgressPort, ControlIsServedStrictlyFirst) {
  PortRig r(plain(1 << 20));
  std::vector<uint64_t> ctrl_ids;
  r.port.enqueue(r.data(), 0);  // on the wire at once
  for (int i = 0; i < 4; ++i) {
    r.port.enqueue(r.data(), 0);
    r.port.enqueue(r.trimmed(), 0);
    Packet* c = r.ctrl();
    ctrl_ids.push_back(c->id);
    r.port.enqueue(c, 0);
  }
  r.drain();
  ASSERT_EQ(r.sink.rx.size(), 13u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r.sink.rx[1 + i].id, ctrl_ids[i]) << i;
  // A control packet arriving behind a backlog is next on the wire.
  PortRig r2(plain(1 << 20));
  for (int i = 0; i < 10; ++i) r2.port.enqueue(r2.data(), 0);
  r2.sim.run_until(Time::zero() + Duration::ns(500));
  Packet* c = r2.ctrl();
  const uint64_t id = c->id;
  r2.port.enqueue(c, 0);
  const size_t before = r2.sink.rx.size();
  r2.drain();
  // The packet in service when it arrived finishes first, then the control packet.
  EXPECT_EQ(r2.sink.rx[before + 1].id, id);
}

TEST(EgressPort, WdrrGivesTrimmedHeadersTheirShareUnderBacklog) {
  for (uint32_t pct : {25u, 50u}) {
    PortParams prm = plain(64 << 20);
    prm.trimmed_weight_pct = pct;
    PortRig r(prm);
    r.port.enqueue(r.ctrl(), 0);  // occupies the wire while the backlog builds
    const int n_trim = 6000, n_data = 600;
    for (int i = 0; i < n_data; ++i) r.port.enqueue(r.data(), 0);
    for (int i = 0; i < n_trim; ++i) r.port.enqueue(r.trimmed(), 0);
    r.drain();
    // Share of bytes while both classes were still backlogged.
    uint64_t tb = 0, db = 0;
    int tn = 0, dn = 0;
    for (size_t i = 1; i < r.sink.rx.size() && tn < n_trim && dn < n_data; ++i) {
      if (r.sink.rx[i].cls == Class::trimmed) {
        tb += kHdrWire;
        ++tn;
      } else {
        db += kDataWire;
        ++dn;
      }
    }
    const double share = static_cast<double>(tb) / static_cast<double>(tb + db);
    EXPECT_NEAR(share, pct / 100.0, 0.02) << "pct " << pct;
  }
}

TEST(EgressPort, DataQueueIsDropTail) {
  PortRig r(plain(3 * kDataWire));
  for (int i = 0; i < 10; ++i) r.port.enqueue(r.data(), 0);
  EXPECT_EQ(r.ctx.stats.drops_queue, 6u);  // 1 on the wire + 3 queued
  EXPECT_EQ(r.port.queued_bytes(Class::data), 3u * kDataWire);
  EXPECT_EQ(r.ctx.stats.peak_queue_bytes, 3u * kDataWire);
  r.drain();
  EXPECT_EQ(r.sink.rx.size(), 4u);
  EXPECT_EQ(r.sim.live_packets(), 0u);
}

TEST(EgressPort, TrimsIntoTheTrimmedClassAndMarksTheLastHop) {
  for (bool last_hop : {false, true}) {
    PortParams prm = plain(3 * kDataWire);
    prm.trimming = true;
    prm.last_hop = last_hop;
    PortRig r(prm);
    for (int i = 0; i < 10; ++i) r.port.enqueue(r.data(true), 0);
    r.port.enqueue(r.data(false), 0);  // not trimmable: dropped
    EXPECT_EQ(r.port.queued_packets(Class::trimmed), 6u);
    r.drain();
    ASSERT_EQ(r.sink.rx.size(), 10u);
    int trimmed = 0;
    for (const auto& rx : r.sink.rx) {
      if (rx.trim == core::TrimMark::none) {
        EXPECT_EQ(rx.payload, kData);
        continue;
      }
      ++trimmed;
      EXPECT_EQ(rx.trim, last_hop ? core::TrimMark::trimmed_lasthop : core::TrimMark::trimmed);
      EXPECT_EQ(rx.payload, 0u);
      EXPECT_EQ(rx.cls, Class::trimmed);
    }
    EXPECT_EQ(trimmed, 6);
    EXPECT_EQ(r.ctx.stats.trims, 6u);  // every trim; the last-hop ones are also counted apart
    EXPECT_EQ(r.ctx.stats.trims_last_hop, last_hop ? 6u : 0u);
    EXPECT_EQ(r.ctx.stats.drops_queue, 1u);
  }
}

TEST(EgressPort, FullTrimmedClassDrops) {
  PortParams prm = plain(3 * kDataWire);
  prm.trimming = true;
  prm.trimmed_bytes = 2 * kHdrWire;
  PortRig r(prm);
  for (int i = 0; i < 10; ++i) r.port.enqueue(r.data(true), 0);
  EXPECT_EQ(r.ctx.stats.trims, 6u);
  EXPECT_EQ(r.ctx.stats.drops_queue, 4u);
  r.drain();
  EXPECT_EQ(r.sink.rx.size(), 6u);
}

// One trial: `fill` non-ECN packets queued behind one on the wire, then an
// ECN-capable probe. Returns whether the probe left marked.
bool probe_marked(const PortParams& prm, int fill, uint64_t stream) {
  PortRig r(prm, stream);
  r.port.enqueue(r.data(false, false), 0);
  for (int i = 0; i < fill; ++i) r.port.enqueue(r.data(false, false), 0);
  Packet* probe = r.data(false, true);
  const uint64_t id = probe->id;
  r.port.enqueue(probe, 0);
  r.drain();
  for (const auto& rx : r.sink.rx)
    if (rx.id == id) return rx.ecn_ce;
  ADD_FAILURE() << "probe lost";
  return false;
}

TEST(EgressPort, EcnProbabilityRisesLinearlyFromKminToKmax) {
  PortParams prm = plain(64 * kDataWire);
  prm.ecn = true;
  prm.ecn_kmin_bytes = 10 * kDataWire;
  prm.ecn_kmax_bytes = 20 * kDataWire;
  int at_kmin = 0, at_kmax = 0, mid = 0, below = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    at_kmin += probe_marked(prm, 10, 100 + t);
    at_kmax += probe_marked(prm, 20, 100 + t);
    mid += probe_marked(prm, 15, 100 + t);
    below += probe_marked(prm, 3, 100 + t);
  }
  EXPECT_EQ(at_kmin, 0);
  EXPECT_EQ(below, 0);
  EXPECT_EQ(at_kmax, trials);
  EXPECT_NEAR(static_cast<double>(mid) / trials, 0.5, 0.04);
  // Three quarters of the way: 75%.
  int q3 = 0;
  for (int t = 0; t < trials; ++t) q3 += probe_marked(prm, 18, 5000 + t);  // (18-10)/10 = 80%
  EXPECT_NEAR(static_cast<double>(q3) / trials, 0.8, 0.04);
}

TEST(EgressPort, HostFacingPortsMarkUnlessLastHopMarkingIsOff) {
  QueueConfig q;  // data = 1 BDP = 125,000 B at 100G x 10us; kmax = 100,000 B
  const PortParams fabric = PortParams::resolve(q, k100G, Duration::us(10), false);
  const PortParams host = PortParams::resolve(q, k100G, Duration::us(10), true);
  EXPECT_EQ(fabric.data_bytes, 125'000u);
  EXPECT_EQ(fabric.ecn_kmin_bytes, 25'000u);
  EXPECT_EQ(fabric.ecn_kmax_bytes, 100'000u);
  EXPECT_EQ(fabric.pfc_xoff_bytes, 87'500u);
  EXPECT_EQ(fabric.pfc_xon_bytes, 62'500u);
  EXPECT_TRUE(fabric.ecn);
  EXPECT_FALSE(fabric.last_hop);
  EXPECT_TRUE(host.ecn);  // last-hop marking is on by default
  EXPECT_TRUE(host.last_hop);
  const int fill = 25;  // 105,850 B queued: above kmax
  EXPECT_TRUE(probe_marked(fabric, fill, 1));
  EXPECT_TRUE(probe_marked(host, fill, 1));
  q.ecn_last_hop = false;
  EXPECT_FALSE(PortParams::resolve(q, k100G, Duration::us(10), true).ecn);
  EXPECT_FALSE(probe_marked(PortParams::resolve(q, k100G, Duration::us(10), true), fill, 1));
  EXPECT_TRUE(probe_marked(PortParams::resolve(q, k100G, Duration::us(10), false), fill, 1));
}

TEST(EgressPort, PfcPausesEachSenderOnceAboveXoffAndResumesBelowXon) {
  PortParams prm = plain(10 * kDataWire);
  prm.pfc = true;
  prm.pfc_xoff_bytes = 4 * kDataWire;
  prm.pfc_xon_bytes = 2 * kDataWire;
  PortRig r(prm);
  for (int i = 0; i < 5; ++i) r.port.enqueue(r.data(), 3);  // 1 on the wire, 4 queued: at XOFF, not above
  EXPECT_TRUE(r.pfc.signals.empty());
  r.port.enqueue(r.data(), 3);
  r.port.enqueue(r.data(), 3);
  r.port.enqueue(r.data(), 5);
  ASSERT_EQ(r.pfc.signals.size(), 2u);
  EXPECT_EQ(r.pfc.signals[0], std::make_pair(3u, true));
  EXPECT_EQ(r.pfc.signals[1], std::make_pair(5u, true));
  EXPECT_EQ(r.ctx.stats.pfc_pauses, 2u);
  // Lossless: far above the data buffer, nothing is dropped.
  for (int i = 0; i < 20; ++i) r.port.enqueue(r.data(), 5);
  EXPECT_EQ(r.ctx.stats.drops_queue, 0u);
  r.drain();
  ASSERT_EQ(r.pfc.signals.size(), 4u);
  EXPECT_FALSE(r.pfc.signals[2].second);
  EXPECT_FALSE(r.pfc.signals[3].second);
  EXPECT_EQ(r.sink.rx.size(), 28u);
}

TEST(EgressPort, PausedPortHoldsDataButNotControl) {
  PortRig r(plain(1 << 20));
  r.port.on_event(r.sim, EgressPort::kTagPause);
  EXPECT_TRUE(r.port.paused());
  r.port.enqueue(r.data(), 0);
  r.port.enqueue(r.ctrl(), 0);
  r.sim.run_until(Time::zero() + Duration::us(5));
  ASSERT_EQ(r.sink.rx.size(), 1u);
  EXPECT_EQ(r.sink.rx[0].cls, Class::control);
  r.port.on_event(r.sim, EgressPort::kTagResume);
  r.drain();
  ASSERT_EQ(r.sink.rx.size(), 2u);
  EXPECT_EQ(r.sink.rx[1].cls, Class::data);
  EXPECT_EQ(r.sink.rx[1].at, Time::zero() + Duration::us(5) + Duration::serialization(kDataWire, k100G));
}

TEST(EgressPort, FlushDropsEverythingQueued) {
  PortRig r(plain(1 << 20));
  for (int i = 0; i < 5; ++i) r.port.enqueue(r.data(), 0);
  r.port.enqueue(r.ctrl(), 0);
  EXPECT_EQ(r.port.flush(), 5u);
  EXPECT_EQ(r.ctx.stats.drops_link_down, 5u);
  EXPECT_EQ(r.port.queued_bytes(), 0u);
  EXPECT_EQ(r.ctx.queued_bytes, 0u);
  r.drain();
  EXPECT_EQ(r.sink.rx.size(), 1u);  // the one already on the wire
  EXPECT_EQ(r.sim.live_packets(), 0u);
}

TEST(EgressPort, KeepsSendingAfterTheLinkLosesWhatWasOnIt) {
  // The link dies and comes back while B is being serialized and A is still
  // on the wire: both are lost with the pipe, whose one pending event (A's
  // arrival) comes before B would have finished, so nothing on the pipe
  // moves the port on. D, queued behind the lost B, still goes.
  const Duration ser = Duration::serialization(kDataWire, k100G);
  PortRig r(plain(1 << 20), 1, Duration::ns(20));
  r.port.enqueue(r.data(), 0);  // A: on the wire at once
  r.port.enqueue(r.data(), 0);  // B: waits for A
  r.sim.run_until(Time::zero() + ser + Duration::ns(10));
  r.port.enqueue(r.data(), 0);  // C: B is on the wire now
  r.sim.run_until(Time::zero() + ser + Duration::ns(15));
  r.pipe.set_alive(false);
  EXPECT_EQ(r.pipe.flush(), 2u);  // A and B
  EXPECT_EQ(r.port.flush(), 1u);  // C
  r.pipe.set_alive(true);
  r.port.enqueue(r.data(), 0);  // D: after B's time on the wire
  r.drain();
  ASSERT_EQ(r.sink.rx.size(), 1u);
  EXPECT_EQ(r.sink.rx[0].at, Time::zero() + ser * 3 + Duration::ns(20));
  EXPECT_EQ(r.sim.live_packets(), 0u);
}

TEST(EgressPort, DeadLinkDropsAtEnqueue) {
  PortRig r(plain(1 << 20));
  r.pipe.set_alive(false);
  r.port.enqueue(r.data(), 0);
  EXPECT_EQ(r.ctx.stats.drops_link_down, 1u);
  EXPECT_EQ(r.sim.live_packets(), 0u);
}

// Random traffic into one port: packets of every class and of random sizes at
// random picosecond times (so no two things happen at the same instant), a
// link rate change and, optionally, gray loss on the link (a link delay
// shorter than a packet time makes the port's own event the only thing that
// moves it on after a lost packet). `events_mode`
// turns PFC on with thresholds never reached, which makes the port keep an
// event at the end of every transmission; without it the port catches up on
// demand (EgressPort::catch_up). Returns what reached the far end.
std::vector<test::Sink::Rx> random_traffic(bool events_mode, double loss, Duration delay, uint64_t seed) {
  PortParams prm = plain(1 << 20);
  prm.ecn = true;
  prm.ecn_kmin_bytes = 16 * 1024;
  prm.ecn_kmax_bytes = 96 * 1024;
  if (events_mode) {
    prm.pfc = true;
    prm.pfc_xoff_bytes = prm.pfc_xon_bytes = uint64_t{1} << 40;
  }
  PortRig r(prm, 7, delay);
  r.pipe.set_loss(loss);
  struct Feeder final : public Node {
    PortRig* rig = nullptr;
    std::vector<Packet*> pending;
    void on_event(Simulator&, uint64_t tag) override {
      if (tag == UINT64_MAX) {
        rig->pipe.set_rate(k100G / 2);
        return;
      }
      rig->port.enqueue(pending[tag], 0);
    }
    void receive(Simulator&, Packet*, int) override {}
  } feeder;
  feeder.rig = &r;
  Prng rng(seed);
  EventKeys keys = r.sim.new_keys();
  const int64_t ser_ps = Duration::serialization(kDataWire, k100G).count_ps();
  Time t = Time::zero();
  for (uint32_t i = 0; i < 3000; ++i) {
    // Bursts above line rate, then gaps, so queues build and drain.
    const bool burst = (i / 200) % 2 == 0;
    t = t + Duration::ps(static_cast<int64_t>(rng.below(static_cast<uint64_t>(burst ? ser_ps : 3 * ser_ps))) + 1);
    const uint64_t kind = rng.below(10);
    Packet* p = kind == 0   ? r.ctrl()
                : kind == 1 ? r.trimmed()
                            : test::make_packet(r.sim, 1, 0, static_cast<uint32_t>(256 + rng.below(kData)));
    p->entropy = i;
    feeder.pending.push_back(p);
    r.sim.schedule(t, &feeder, i, keys.next());
  }
  r.sim.schedule(Time::zero() + Duration::us(150) + Duration::ps(7), &feeder, UINT64_MAX, keys.next());
  r.drain();
  EXPECT_EQ(r.sim.live_packets(), 0u);
  return r.sink.rx;
}

TEST(EgressPort, CatchingUpOnDemandMatchesAnEventPerTransmission) {
  for (const double loss : {0.0, 0.05}) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const Duration delay = seed % 2 ? Duration::ns(700) : Duration::ns(20);
      const auto lazy = random_traffic(false, loss, delay, seed);
      const auto events = random_traffic(true, loss, delay, seed);
      ASSERT_GT(lazy.size(), 2000u);
      ASSERT_EQ(lazy.size(), events.size()) << "loss " << loss << " seed " << seed;
      size_t marked = 0;
      for (size_t i = 0; i < lazy.size(); ++i) {
        ASSERT_EQ(lazy[i].entropy, events[i].entropy) << "packet " << i << " seed " << seed;
        ASSERT_EQ(lazy[i].at, events[i].at) << "packet " << i << " seed " << seed;
        ASSERT_EQ(lazy[i].ecn_ce, events[i].ecn_ce) << "packet " << i << " seed " << seed;
        marked += lazy[i].ecn_ce;
      }
      EXPECT_GT(marked, 0u);  // the queue did build
    }
  }
}

}  // namespace
}  // namespace mrc::sim
