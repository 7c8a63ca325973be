// SPDX-License-Identifier: BSD-2-Clause
// Tests for sim/fabric/fabric.{hpp,cc}: exact delivery timing, failures (link
// and switch down, in flight and queued), gray loss, degraded rate, PFC
// towards switches and NICs, trimming and drops under incast, ECMP
// reconvergence, observation.
#include "sim/fabric/fabric.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim_test_util.hpp"

namespace mrc::sim {
namespace {

constexpr uint64_t k100G = 100'000'000'000ull;
constexpr uint64_t k400G = 400'000'000'000ull;
constexpr uint32_t kPayload = 4096;
const Duration kDelay = Duration::ns(500);
const Duration kSwitch = Duration::ns(300);

TopologyConfig timing_cfg() {
  TopologyConfig c;
  c.kind = TopologyKind::clos2_multiplane;
  c.planes = 2;
  c.hosts = 32;
  c.t0_down = 8;
  c.t0_up = 4;
  c.t1_count = 4;
  c.host_link_bps = k100G;
  c.fabric_link_bps = k400G;
  c.link_delay = kDelay;
  c.switch_latency = kSwitch;
  return c;
}

// A fabric with a recording sink on every host.
struct Net {
  Simulator sim;
  std::unique_ptr<Fabric> fabric;
  std::vector<test::Sink> sinks;
  explicit Net(const TopologyConfig& cfg, uint64_t seed = 1) : sim(seed) {
    std::string why;
    auto f = Fabric::create(sim, cfg, &why);
    EXPECT_TRUE(f.ok()) << why;
    fabric = std::move(*f);
    sinks.resize(cfg.hosts);
    for (uint32_t h = 0; h < cfg.hosts; ++h) fabric->attach(h, &sinks[h]);
  }
  Fabric& f() { return *fabric; }
  /// Routes and injects one packet now; returns its id.
  uint64_t send(uint32_t src, uint32_t dst, uint32_t ev, uint8_t plane = 0, uint32_t payload = kPayload,
                bool trimmable = false) {
    Packet* p = test::make_packet(sim, src, dst, payload, Class::data, trimmable, plane, ev);
    f().set_route(*p);
    const uint64_t id = p->id;
    f().inject(p);
    return id;
  }
  void run() { sim.run_until(Time::never()); }
  void run_for(Duration d) { sim.run_until(sim.now() + d); }
};

uint32_t wire_bytes(uint32_t payload, bool srv6) { return payload + 48 + kWireOverhead + (srv6 ? kSrv6Overhead : 0); }

TEST(FabricTiming, DeliveredAtExactlyTheComputedTime) {
  Net n(timing_cfg());
  const Duration ser_h = Duration::serialization(wire_bytes(kPayload, true), k100G);
  const Duration ser_f = Duration::serialization(wire_bytes(kPayload, true), k400G);
  n.sim.run_until(Time::zero() + Duration::us(1));
  const Time t0 = n.sim.now();
  n.send(1, 17, 0, 1);  // cross-T1 on plane 1
  n.send(1, 3, 0, 0);   // same T0
  n.run();
  ASSERT_EQ(n.sinks[17].rx.size(), 1u);
  ASSERT_EQ(n.sinks[3].rx.size(), 1u);
  EXPECT_EQ(n.sinks[17].rx[0].at, t0 + (kDelay + kSwitch) * 3 + ser_f * 2 + ser_h + kDelay);
  EXPECT_EQ(n.sinks[17].rx[0].port, 1);
  EXPECT_EQ(n.sinks[17].rx[0].hops, 4);
  EXPECT_EQ(n.sinks[3].rx[0].at, t0 + kDelay + kSwitch + ser_h + kDelay);
  EXPECT_EQ(n.sinks[3].rx[0].hops, 2);
  EXPECT_EQ(n.f().stats().packets_forwarded, 6u);
  EXPECT_EQ(n.f().stats().delivered, 2u);
  // The longest path, NIC serialization included, with the largest header.
  const uint32_t full = 4096 + static_cast<uint32_t>(wire::kMaxPlainHeaderBytes) + kWireOverhead + kSrv6Overhead;
  EXPECT_EQ(n.f().max_one_way_latency(), Duration::serialization(full, k100G) * 2 +
                                             Duration::serialization(full, k400G) * 2 + kDelay * 4 + kSwitch * 3);
}

TEST(FabricTiming, ThreeTierCrossPodAndEcmpTiming) {
  TopologyConfig c = timing_cfg();
  c.kind = TopologyKind::fattree3;
  c.hosts = 32;
  c.t0_down = 2;
  c.t0_up = 2;
  c.t1_count = 2;  // 16 T0s, 8 pods
  Net n(c);
  const Duration ser_h = Duration::serialization(wire_bytes(kPayload, true), k100G);
  const Duration ser_f = Duration::serialization(wire_bytes(kPayload, true), k400G);
  n.send(0, 31, 3);
  n.run();
  ASSERT_EQ(n.sinks[31].rx.size(), 1u);
  EXPECT_EQ(n.sinks[31].rx[0].hops, 6);
  EXPECT_EQ(n.sinks[31].rx[0].at, Time::zero() + (kDelay + kSwitch) * 5 + ser_f * 4 + ser_h + kDelay);

  c.routing = Routing::ecmp;
  Net e(c);
  e.send(0, 31, 3);
  e.run();
  ASSERT_EQ(e.sinks[31].rx.size(), 1u);
  const Duration eh = Duration::serialization(wire_bytes(kPayload, false), k100G);
  const Duration ef = Duration::serialization(wire_bytes(kPayload, false), k400G);
  EXPECT_EQ(e.sinks[31].rx[0].at, Time::zero() + (kDelay + kSwitch) * 5 + ef * 4 + eh + kDelay);
}

TEST(FabricTiming, DegradedRateChangesTiming) {
  Net n(timing_cfg());
  const EvPath path = n.f().ev_path(1, 2);
  const LinkRef l{LinkRef::Tier::t0_t1, 0, 0, path.t1, 0};
  n.f().set_link_rate(l, k100G);
  n.send(1, 17, 2);
  n.run();
  const uint32_t w = wire_bytes(kPayload, true);
  const Duration ser_h = Duration::serialization(w, k100G);
  ASSERT_EQ(n.sinks[17].rx.size(), 1u);
  // Up at 100G (degraded), down at 400G.
  EXPECT_EQ(n.sinks[17].rx[0].at, Time::zero() + (kDelay + kSwitch) * 3 + ser_h + Duration::serialization(w, k400G) +
                                      ser_h + kDelay);
  // A degraded host link is what the NIC sees as its port rate.
  n.f().set_link_rate(LinkRef{LinkRef::Tier::host_t0, 1, 5, 0, 0}, 37'000'000'000ull);
  EXPECT_EQ(n.f().host_port_bps(5, 1), 37'000'000'000ull);
  EXPECT_EQ(n.f().host_port_bps(5, 0), k100G);
}

TEST(FabricFailures, LinkDownLosesPacketsAndIsCounted) {
  Net n(timing_cfg());
  // EVs 0..3 take T0 uplinks 0..3, i.e. T1s 0..3.
  ASSERT_EQ(n.f().ev_path(1, 2).t1, 2u);
  const LinkRef l{LinkRef::Tier::t0_t1, 0, 0, 2, 0};
  n.f().set_link_up(l, false);
  n.send(1, 17, 2);
  n.send(1, 17, 1);
  n.run();
  EXPECT_EQ(n.f().stats().drops_link_down, 1u);
  EXPECT_EQ(n.sinks[17].rx.size(), 1u);
  // Both directions are down: the reply path T0 2 -> T1 2 -> T0 0 dies at T1 2.
  n.send(17, 1, 2);
  n.run();
  EXPECT_EQ(n.f().stats().drops_link_down, 2u);
  EXPECT_EQ(n.sinks[1].rx.size(), 0u);
  n.f().set_link_up(LinkRef{LinkRef::Tier::t0_t1, 0, 0, 2, 0}, true);
  n.send(1, 17, 2);
  n.run();
  EXPECT_EQ(n.sinks[17].rx.size(), 2u);
  // Destination side down: lost at T1 2 going down.
  n.f().set_link_up(LinkRef{LinkRef::Tier::t0_t1, 0, 2, 2, 0}, false);
  n.send(1, 17, 2);
  n.run();
  EXPECT_EQ(n.f().stats().drops_link_down, 3u);
  EXPECT_EQ(n.sim.live_packets(), 0u);
}

TEST(FabricFailures, HostLinkDownDropsCarrier) {
  Net n(timing_cfg());
  const LinkRef l{LinkRef::Tier::host_t0, 1, 9, 0, 0};
  EXPECT_TRUE(n.f().host_port_up(9, 1));
  n.f().set_link_up(l, false);
  EXPECT_FALSE(n.f().host_port_up(9, 1));
  EXPECT_TRUE(n.f().host_port_up(9, 0));
  n.send(9, 0, 0, 1);  // sent into the dead link
  n.send(0, 9, 0, 1);  // towards it: lost at its T0
  n.send(0, 9, 0, 0);  // other plane: fine
  n.run();
  EXPECT_EQ(n.f().stats().drops_link_down, 2u);
  EXPECT_EQ(n.sinks[9].rx.size(), 1u);
}

TEST(FabricFailures, PacketsInFlightAndQueuedAreLost) {
  Net n(timing_cfg());
  // In flight on T0 0 -> T1 1: it reaches T0 0 at d + L, then takes ser_f + d + L.
  n.send(1, 17, 1);
  n.run_for(kDelay + kSwitch + Duration::ns(50));
  n.f().set_link_up(LinkRef{LinkRef::Tier::t0_t1, 0, 0, 1, 0}, false);
  n.run();
  EXPECT_EQ(n.sinks[17].rx.size(), 0u);
  EXPECT_EQ(n.f().stats().drops_link_down, 1u);
  // Queued: 8 hosts of T0 0 fire at host 8 over one 100G downlink; take it down mid-way.
  Net q(timing_cfg());
  for (uint32_t h = 0; h < 8; ++h)
    for (int i = 0; i < 3; ++i) q.send(h == 0 ? 9 : h, 8, 0);
  q.run_for(Duration::us(3));
  const uint64_t queued_before = q.f().total_queued_bytes();
  EXPECT_GT(queued_before, 0u);
  q.f().set_link_up(LinkRef{LinkRef::Tier::host_t0, 0, 8, 0, 0}, false);
  EXPECT_EQ(q.f().total_queued_bytes(), 0u);
  q.run();
  EXPECT_EQ(q.f().stats().drops_link_down + q.sinks[8].rx.size(), 24u);
  EXPECT_GT(q.f().stats().drops_link_down, 0u);
  EXPECT_EQ(q.sim.live_packets(), 0u);
  // Queued at a T0 uplink: 8 hosts x 3 packets, all on EV 0 (T1 0).
  Net u(timing_cfg());
  for (uint32_t h = 0; h < 8; ++h)
    for (int i = 0; i < 3; ++i) u.send(h, 17, 0);
  u.run_for(Duration::ns(1000));
  const LinkRef up0{LinkRef::Tier::t0_t1, 0, 0, 0, 0};
  EXPECT_GT(u.f().link_counters(up0, true).queued_bytes, 0u);
  EXPECT_EQ(u.f().link_counters(up0, true).queued_bytes, u.f().total_queued_bytes());
  u.f().set_link_up(up0, false);
  EXPECT_EQ(u.f().total_queued_bytes(), 0u);
  u.run();
  EXPECT_EQ(u.f().stats().drops_link_down + u.sinks[17].rx.size(), 24u);
  EXPECT_GT(u.f().stats().drops_link_down, 15u);
  EXPECT_EQ(u.sim.live_packets(), 0u);
}

TEST(FabricFailures, SwitchDownLosesPackets) {
  Net n(timing_cfg());
  const SwitchRef t1{SwitchRef::Tier::t1, 0, 3};
  n.f().set_switch_up(t1, false);
  n.send(1, 17, 3);  // via T1 3: lost
  n.send(1, 17, 0);  // via T1 0: fine
  n.send(1, 17, 3, 1);  // plane 1's T1 3 is up
  n.run();
  EXPECT_EQ(n.f().stats().drops_link_down, 1u);
  EXPECT_EQ(n.sinks[17].rx.size(), 2u);
  n.f().set_switch_up(t1, true);
  n.send(1, 17, 3);
  n.run();
  EXPECT_EQ(n.sinks[17].rx.size(), 3u);
  // A T0 down takes its hosts' carriers with it and loses traffic to them.
  const SwitchRef t0{SwitchRef::Tier::t0, 0, 2};
  n.f().set_switch_up(t0, false);
  EXPECT_FALSE(n.f().host_port_up(17, 0));
  EXPECT_TRUE(n.f().host_port_up(17, 1));
  n.send(1, 17, 0);
  n.send(17, 1, 0);
  n.run();
  EXPECT_EQ(n.f().stats().drops_link_down, 3u);
  // A switch going down mid-flight loses what it holds.
  n.f().set_switch_up(t0, true);
  n.send(1, 17, 0);
  // Past T1 0, on the wire towards T0 2.
  n.run_for((kDelay + kSwitch) * 2 + Duration::serialization(wire_bytes(kPayload, true), k400G) + Duration::ns(10));
  n.f().set_switch_up(SwitchRef{SwitchRef::Tier::t1, 0, 0}, false);
  n.run();
  EXPECT_EQ(n.f().stats().drops_link_down, 4u);
  EXPECT_EQ(n.sinks[17].rx.size(), 3u);
  EXPECT_EQ(n.sim.live_packets(), 0u);
}

TEST(FabricFailures, ReferencesAreChecked) {
  Net n(timing_cfg());
  std::string why;
  EXPECT_TRUE(n.f().check(LinkRef{LinkRef::Tier::t0_t1, 1, 3, 2, 0}, &why).ok()) << why;
  EXPECT_FALSE(n.f().check(LinkRef{LinkRef::Tier::t0_t1, 2, 0, 0, 0}, &why).ok());
  EXPECT_NE(why.find("plane"), std::string::npos);
  EXPECT_FALSE(n.f().check(LinkRef{LinkRef::Tier::t0_t1, 0, 0, 4, 0}, &why).ok());
  EXPECT_NE(why.find("t1"), std::string::npos);
  EXPECT_FALSE(n.f().check(LinkRef{LinkRef::Tier::t1_t2, 0, 0, 0, 0}, &why).ok());
  EXPECT_FALSE(n.f().check(SwitchRef{SwitchRef::Tier::t0, 0, 4}, &why).ok());
  EXPECT_EQ(n.f().name(LinkRef{LinkRef::Tier::t0_t1, 1, 3, 7, 0}), "p1:t0[3]-t1[7]");
  EXPECT_EQ(n.f().name(LinkRef{LinkRef::Tier::host_t0, 0, 9, 0, 0}), "p0:h[9]-t0[1]");
  EXPECT_EQ(n.f().name(SwitchRef{SwitchRef::Tier::t1, 1, 7}), "p1:t1[7]");
}

TEST(FabricFailures, GrayLossRateWithinBoundsAndReproducible) {
  auto run = [](uint64_t seed) {
    Net n(timing_cfg(), seed);
    n.f().set_link_loss(LinkRef{LinkRef::Tier::t0_t1, 0, 0, 1, 0}, 0.2);
    for (int i = 0; i < 5000; ++i) {
      n.send(1, 17, 1);
      n.send(1, 17, 0);  // another T1: no loss
      n.run_for(Duration::us(1));
    }
    n.run();
    EXPECT_EQ(n.sinks[17].rx.size() + n.f().stats().drops_random, 10000u);
    return n.f().stats().drops_random;
  };
  const uint64_t lost = run(5);
  EXPECT_NEAR(static_cast<double>(lost) / 5000.0, 0.2, 0.02);
  EXPECT_EQ(run(5), lost);
  EXPECT_NE(run(6), lost);
}

TEST(FabricRouting, BadCarriersAndAddressesHaveNoRoute) {
  Net n(timing_cfg());
  Packet* p = test::make_packet(n.sim, 1, 17, 100, Class::data, false, 0, 1);
  n.f().set_route(*p);
  p->usid[1] ^= 0x0400;  // a T1 uSID index nobody at T0 0 has a route for
  n.f().inject(p);
  Packet* q = test::make_packet(n.sim, 1, 99, 100, Class::data, false, 0, 1);  // no host 99
  n.f().set_route(*q);
  n.f().inject(q);
  Packet* r = test::make_packet(n.sim, 1, 17, 100, Class::data, false, 0, 1);
  n.f().set_route(*r);
  r->usid[0] = r->usid[2];  // first uSID is not the source T0's
  n.f().inject(r);
  n.run();
  EXPECT_EQ(n.f().stats().drops_no_route, 3u);
  EXPECT_EQ(n.sim.live_packets(), 0u);
}

// A NIC stand-in: sends `count` packets to `dst` back to back at the port
// rate, honouring PFC pauses and the fabric's unpause wake-up.
class Source final : public Node {
 public:
  Source(Simulator& sim, Fabric& f, uint32_t host, uint32_t dst, int count, bool trimmable)
      : sim_(sim), f_(f), host_(host), dst_(dst), left_(count), trimmable_(trimmable), keys_(sim.new_keys()) {}
  void start() { try_send(); }
  void on_event(Simulator&, uint64_t tag) override {
    if (tag & kUnpauseTag) {
      EXPECT_EQ(tag & 0xFF, 0u);  // plane
      ++unpauses;
      try_send();
      return;
    }
    busy_ = false;
    f_.inject(cur_);
    --left_;
    try_send();
  }
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }
  bool saw_pause = false;
  int unpauses = 0;

 private:
  void try_send() {
    if (busy_ || left_ == 0) return;
    if (f_.host_port_paused(host_, 0)) {
      saw_pause = true;
      return;
    }
    cur_ = test::make_packet(sim_, host_, dst_, kPayload, Class::data, trimmable_, 0, ev_++);
    f_.set_route(*cur_);
    busy_ = true;
    sim_.schedule(sim_.now() + Duration::serialization(cur_->wire_bytes(), f_.host_port_bps(host_, 0)), this, 0,
                  keys_.next());
  }
  Simulator& sim_;
  Fabric& f_;
  uint32_t host_, dst_;
  int left_;
  bool trimmable_;
  bool busy_ = false;
  Packet* cur_ = nullptr;
  uint32_t ev_ = 0;
  EventKeys keys_;
};

// 4 hosts under T0 0 send 200 packets each to host 4 under T0 1; one T1; the
// fabric links run at 400G, so the bottleneck is T0 1's port to host 4.
struct Incast {
  TopologyConfig cfg;
  Simulator sim{1};
  std::unique_ptr<Fabric> f;
  std::vector<std::unique_ptr<Source>> src;
  test::Sink sink;
  explicit Incast(bool pfc, bool trimming, bool trimmable) {
    cfg.kind = TopologyKind::fattree2;
    cfg.hosts = 8;
    cfg.t0_down = 4;
    cfg.t0_up = 1;
    cfg.t1_count = 1;
    cfg.fabric_link_bps = k400G;
    cfg.queue.data_bytes = 40'000;
    cfg.queue.pfc = pfc;
    cfg.queue.trimming = trimming;
    cfg.queue.ecn_kmin_bytes = 30'000;  // above the bursts at T0 0's uplink: only the last hop congests
    cfg.queue.ecn_kmax_bytes = 39'000;
    // No marking on the last hop, so that ecn_marks counts only the fabric's
    // ports, which must not congest.
    cfg.queue.ecn_last_hop = false;
    std::string why;
    EXPECT_TRUE(cfg.validate(&why).ok()) << why;
    f = std::make_unique<Fabric>(sim, cfg);
    f->attach(4, &sink);
    for (uint32_t h = 0; h < 4; ++h) {
      src.push_back(std::make_unique<Source>(sim, *f, h, 4, 200, trimmable));
      f->attach(h, src.back().get());
    }
    for (auto& s : src) s->start();
  }
};

TEST(FabricPfc, PausesSwitchPortsAndNicsAndLosesNothing) {
  Incast x(true, false, false);
  const LinkRef t1_down{LinkRef::Tier::t0_t1, 0, 1, 0, 0};  // T1 0 -> T0 1 (downwards)
  const LinkRef t0_up{LinkRef::Tier::t0_t1, 0, 0, 0, 0};    // T0 0 -> T1 0 (upwards)
  bool t1_paused = false, t0_paused = false;
  uint64_t peak = 0;
  std::string where;
  while (x.sim.run_until(x.sim.now() + Duration::ns(200))) {
    t1_paused |= x.f->link_counters(t1_down, false).paused;
    t0_paused |= x.f->link_counters(t0_up, true).paused;
    peak = std::max(peak, x.f->max_queue_bytes(&where));
  }
  EXPECT_TRUE(t1_paused) << "the T1 port feeding the congested T0 was never paused";
  EXPECT_TRUE(t0_paused) << "PAUSE did not propagate to the T0 uplink";
  bool nic_paused = false;
  int unpauses = 0;
  for (auto& s : x.src) {
    nic_paused |= s->saw_pause;
    unpauses += s->unpauses;
  }
  EXPECT_TRUE(nic_paused);
  EXPECT_GT(unpauses, 0);
  const FabricStats& st = x.f->stats();
  EXPECT_GT(st.pfc_pauses, 0u);
  EXPECT_EQ(st.drops_queue, 0u);
  EXPECT_EQ(x.sink.rx.size(), 800u);
  EXPECT_GT(peak, 0u);
  EXPECT_EQ(x.f->total_queued_bytes(), 0u);
  for (uint32_t h = 0; h < 4; ++h) EXPECT_FALSE(x.f->host_port_paused(h, 0));
}

TEST(FabricPfc, WithoutPfcTheSameLoadDropsOrTrims) {
  {
    Incast x(false, false, false);
    x.sim.run_until(Time::never());
    EXPECT_GT(x.f->stats().drops_queue, 0u);
    EXPECT_EQ(x.f->stats().pfc_pauses, 0u);
    EXPECT_EQ(x.sink.rx.size() + x.f->stats().drops_queue, 800u);
  }
  {
    Incast x(false, true, true);
    bool seen_queue = false;
    std::string where;
    while (x.sim.run_until(x.sim.now() + Duration::us(1))) {
      if (x.f->max_queue_bytes(&where) > 20'000 && !seen_queue) {
        seen_queue = true;
        EXPECT_EQ(where, "p0:t0[1]->h[4]");
        EXPECT_GT(x.f->total_queued_bytes(), 0u);
      }
    }
    const FabricStats& st = x.f->stats();
    EXPECT_TRUE(seen_queue);
    EXPECT_GT(st.trims_last_hop, 0u);
    EXPECT_EQ(st.trims, st.trims_last_hop);  // only the last hop congests
    EXPECT_EQ(st.drops_queue, 0u);
    EXPECT_EQ(x.sink.rx.size(), 800u);
    uint64_t marked = 0;
    for (const auto& rx : x.sink.rx) marked += rx.trim == core::TrimMark::trimmed_lasthop;
    EXPECT_EQ(marked, st.trims_last_hop);
    EXPECT_EQ(st.ecn_marks, 0u);  // no marking on the last hop, none needed before it
    EXPECT_LE(st.peak_queue_bytes, x.cfg.queue.data_bytes);
  }
}

TEST(FabricEcmp, ReconvergesAroundFailuresAfterTheDelay) {
  TopologyConfig c = timing_cfg();
  c.planes = 1;
  c.routing = Routing::ecmp;
  c.reconverge_after = Duration::us(50);
  Net n(c);
  Prng rng(3);
  const auto evs = n.f().make_evs(1, 17, 400, rng);
  auto burst = [&](uint32_t dst) {
    const size_t before = n.sinks[dst].rx.size();
    for (const auto& ev : evs) {
      n.send(1, dst, ev.value, 0, 100);
      n.run_for(Duration::ns(100));
    }
    n.run_for(Duration::us(5));
    return n.sinks[dst].rx.size() - before;
  };
  // A remote failure: T1 1 can no longer reach T0 2 (hosts 16..23).
  n.f().set_link_up(LinkRef{LinkRef::Tier::t0_t1, 0, 2, 1, 0}, false);
  const size_t before = burst(17);
  EXPECT_LT(before, 400u);  // about a quarter hashed onto T1 1 and lost
  EXPECT_GT(before, 250u);
  n.run_for(Duration::us(50));  // routes reconverge
  EXPECT_EQ(burst(17), 400u);
  // Only routes towards T0 2 changed: traffic to T0 1 still uses T1 1.
  const LinkRef via_t1{LinkRef::Tier::t0_t1, 0, 0, 1, 0};
  const uint64_t used = n.f().link_counters(via_t1, true).packets;
  EXPECT_EQ(burst(9), 400u);
  EXPECT_GT(n.f().link_counters(via_t1, true).packets, used + 50);
  // Local failure plus recovery: T0 0's uplink to T1 3 down, then up again.
  n.f().set_link_up(LinkRef{LinkRef::Tier::t0_t1, 0, 0, 3, 0}, false);
  EXPECT_LT(burst(9), 400u);
  n.run_for(Duration::us(50));
  EXPECT_EQ(burst(9), 400u);
  n.f().set_link_up(LinkRef{LinkRef::Tier::t0_t1, 0, 0, 3, 0}, true);
  n.run_for(Duration::us(50));
  const LinkRef via_t3{LinkRef::Tier::t0_t1, 0, 0, 3, 0};
  const uint64_t t3 = n.f().link_counters(via_t3, true).packets;
  EXPECT_EQ(burst(9), 400u);
  EXPECT_GT(n.f().link_counters(via_t3, true).packets, t3 + 50);  // back in use
}

TEST(FabricEcmp, StaticRoutesNeverReconverge) {
  TopologyConfig c = timing_cfg();
  c.planes = 1;
  c.routing = Routing::ecmp;
  Net n(c);
  n.f().set_link_up(LinkRef{LinkRef::Tier::t0_t1, 0, 0, 1, 0}, false);
  n.run_for(Duration::ms(1));
  Prng rng(3);
  uint64_t delivered = 0;
  for (const auto& ev : n.f().make_evs(1, 17, 200, rng)) {
    n.send(1, 17, ev.value, 0, 100);
    n.run_for(Duration::ns(100));
  }
  n.run();
  delivered = n.sinks[17].rx.size();
  EXPECT_LT(delivered, 200u);
  EXPECT_EQ(delivered + n.f().stats().drops_link_down, 200u);
}

// A layout (no switches, ports or links built) checks references, names
// them, routes and draws EV sets exactly as the built fabric, on a 2-tier
// and a 3-tier multi-plane fabric.
TEST(Fabric, LayoutOnlyAnswersAsTheBuiltFabric) {
  TopologyConfig ft3;
  ft3.kind = TopologyKind::fattree3;
  ft3.planes = 2;
  ft3.hosts = 32;
  ft3.t0_down = ft3.t0_up = ft3.t1_count = 2;
  for (const TopologyConfig& cfg : {timing_cfg(), ft3}) {
    Simulator sim(1);
    const Fabric built(sim, cfg);
    const Fabric layout(sim, cfg, Fabric::LayoutOnly{});
    const TopologyShape& s = built.shape();
    EXPECT_EQ(layout.hosts(), built.hosts());
    EXPECT_EQ(layout.planes(), built.planes());
    EXPECT_EQ(layout.max_one_way_latency(), built.max_one_way_latency());
    std::string why_built, why_layout;
    for (uint32_t plane = 0; plane <= s.planes; ++plane)
      for (uint32_t a = 0; a <= s.t1_count; ++a)
        for (uint32_t b = 0; b <= std::max(s.t1_count, s.t2_count); ++b)
          for (const auto tier : {LinkRef::Tier::host_t0, LinkRef::Tier::t0_t1, LinkRef::Tier::t1_t2}) {
            const LinkRef l{tier, plane, a, b, 0};
            const bool ok = built.check(l, &why_built).ok();
            ASSERT_EQ(layout.check(l, &why_layout).ok(), ok) << built.name(l);
            if (!ok) EXPECT_EQ(why_layout, why_built);
            else EXPECT_EQ(layout.name(l), built.name(l));
          }
    for (const auto tier : {SwitchRef::Tier::t0, SwitchRef::Tier::t1, SwitchRef::Tier::t2})
      for (uint32_t i = 0; i <= s.t0_count; ++i)
        EXPECT_EQ(layout.check(SwitchRef{tier, 1, i}).ok(), built.check(SwitchRef{tier, 1, i}).ok());
    Prng r1(9), r2(9);
    const auto evs = built.make_evs(0, 31, 4, r1);
    const auto layout_evs = layout.make_evs(0, 31, 4, r2);
    ASSERT_EQ(layout_evs.size(), evs.size());
    for (size_t i = 0; i < evs.size(); ++i) {
      EXPECT_EQ(layout_evs[i].value, evs[i].value);
      EXPECT_EQ(layout_evs[i].port, evs[i].port);
    }
    Packet a, b;
    a.src = b.src = 0;
    a.dst = b.dst = 31;
    a.plane = b.plane = 1;
    a.entropy = b.entropy = evs[5].value;
    built.set_route(a);
    layout.set_route(b);
    EXPECT_TRUE(std::equal(std::begin(a.usid), std::end(a.usid), std::begin(b.usid)));
  }
}

TEST(Fabric, DestroyingTheFabricReturnsPacketsToThePool) {
  Simulator sim(1);
  {
    Fabric f(sim, timing_cfg());
    for (uint32_t h = 0; h < 8; ++h) {
      Packet* p = test::make_packet(sim, h, 20, kPayload, Class::data, false, 0, h);
      f.set_route(*p);
      f.inject(p);
    }
    sim.run_until(Time::zero() + Duration::ns(1500));
    EXPECT_GT(sim.live_packets(), 0u);
  }
  EXPECT_EQ(sim.live_packets(), 0u);
}

}  // namespace
}  // namespace mrc::sim
