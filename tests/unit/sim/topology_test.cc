// SPDX-License-Identifier: BSD-2-Clause
// Tests for sim/fabric/topology.{hpp,cc} and the forwarding the topology
// builder sets up: validation messages, element counts, SRv6 reachability of
// every host pair on every plane through every EV, the EV -> T1 mapping, and
// ECMP spreading.
#include "sim/fabric/topology.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/fabric/fabric.hpp"
#include "sim_test_util.hpp"

namespace mrc::sim {
namespace {

TopologyConfig clos(uint32_t planes, uint32_t hosts, uint32_t down, uint32_t up, uint32_t t1) {
  TopologyConfig c;
  c.kind = TopologyKind::clos2_multiplane;
  c.planes = planes;
  c.hosts = hosts;
  c.t0_down = down;
  c.t0_up = up;
  c.t1_count = t1;
  return c;
}

TopologyConfig fat3(uint32_t hosts, uint32_t down, uint32_t up, uint32_t t1) {
  TopologyConfig c = clos(1, hosts, down, up, t1);
  c.kind = TopologyKind::fattree3;
  return c;
}

// validate() must fail and name `field` in its message.
void expect_rejected(const TopologyConfig& c, const std::string& field) {
  std::string why;
  const Status s = c.validate(&why);
  EXPECT_FALSE(s.ok()) << "expected rejection naming " << field;
  EXPECT_NE(why.find(field), std::string::npos) << "message: " << why;
}

TEST(TopologyConfig, DefaultsAreValid) {
  std::string why;
  EXPECT_TRUE(TopologyConfig{}.validate(&why).ok()) << why;
  EXPECT_TRUE(fat3(16, 2, 2, 2).validate(&why).ok()) << why;
}

TEST(TopologyConfig, ErrorsNameTheFieldAndTheFix) {
  expect_rejected(clos(8, 100, 16, 16, 16), "hosts");
  {
    std::string why;
    EXPECT_FALSE(clos(8, 100, 16, 16, 16).validate(&why).ok());
    EXPECT_NE(why.find("96 or 112"), std::string::npos) << why;
  }
  expect_rejected(clos(8, 64, 16, 12, 8), "t0_up");
  expect_rejected(clos(33, 64, 16, 16, 16), "planes");
  expect_rejected(clos(0, 64, 16, 16, 16), "planes");
  expect_rejected(clos(1, 2000, 1000, 100, 100), "t0_down + t0_up");
  expect_rejected(clos(1, 64, 0, 16, 16), "t0_down");
  expect_rejected(clos(1, 64, 16, 16, 0), "t1_count");
  TopologyConfig c = clos(2, 64, 16, 16, 16);
  c.host_link_bps = 0;
  expect_rejected(c, "host_link_bps");
  c = clos(2, 64, 16, 16, 16);
  c.queue.trimmed_weight_pct = 101;
  expect_rejected(c, "queue.trimmed_weight_pct");
  c = clos(2, 64, 16, 16, 16);
  c.reconverge_after = Duration::ms(1);
  expect_rejected(c, "reconverge_after");
  c.routing = Routing::ecmp;
  std::string why;
  EXPECT_TRUE(c.validate(&why).ok()) << why;
  c = clos(2, 64, 16, 16, 16);
  c.queue.data_bytes = 1000;
  expect_rejected(c, "queue.data_bytes");
  c = clos(2, 64, 16, 16, 16);
  c.queue.ecn_kmin_bytes = 200'000;  // above the default kmax (80% of 125 kB)
  expect_rejected(c, "queue.ecn_kmin_bytes");
  c = clos(2, 64, 16, 16, 16);
  c.base_rtt = Duration{};
  expect_rejected(c, "base_rtt");
  // T1 radix: 2048 T0s x 1 link.
  expect_rejected(clos(1, 2048 * 4, 4, 1, 1), "t1_count");
  // Fat tree: T0s not a multiple of pods / of t1_count, T2 groups.
  TopologyConfig f = fat3(16, 2, 2, 2);
  f.pods = 3;
  expect_rejected(f, "pods");
  expect_rejected(fat3(12, 2, 2, 4), "t0_up");
  f = fat3(24, 2, 2, 2);  // 12 T0s, 6 pods of 2
  f.t2_count = 3;
  expect_rejected(f, "t2_count");
  f = fat3(20, 2, 4, 4);  // 10 T0s not a multiple of t1_count 4
  expect_rejected(f, "pods");
}

TEST(TopologyConfig, ShapeOfAKaryFatTree) {
  const TopologyShape s = fat3(16, 2, 2, 2).shape();  // k = 4
  EXPECT_TRUE(s.three_tier);
  EXPECT_EQ(s.pods, 4u);
  EXPECT_EQ(s.t0_per_pod, 2u);
  EXPECT_EQ(s.t1_count, 8u);
  EXPECT_EQ(s.t2_count, 4u);
  EXPECT_EQ(s.t2_ports, 4u);
  EXPECT_EQ(s.switches(), 20u);  // 5k^2/4
  EXPECT_EQ(s.links(), 48u);     // 3k^3/4
}

struct CountCase {
  TopologyConfig cfg;
  uint32_t switches;
  uint64_t links;
};

TEST(Fabric, NodeAndLinkCounts) {
  TopologyConfig ft2 = clos(1, 128, 16, 16, 16);
  ft2.kind = TopologyKind::fattree2;
  TopologyConfig lanes = clos(2, 32, 8, 8, 4);  // 2 parallel links per T0-T1 pair
  TopologyConfig k8 = fat3(128, 4, 4, 4);       // k = 8
  TopologyConfig f3l = fat3(32, 4, 4, 2);       // lanes0 = 2, 8 T0s, 4 pods of 2, T1 radix 8
  const CountCase cases[] = {
      {clos(8, 64, 16, 16, 16), 8 * (4 + 16), 8 * 64 + 8 * 4 * 16},
      {ft2, 8 + 16, 128 + 8 * 16},
      {lanes, 2 * (4 + 4), 2 * 32 + 2 * 4 * 8},
      {k8, 32 + 32 + 16, 128 + 128 + 128},
      {f3l, 8 + 8 + 8, 32 + 32 + 8 * 4},
  };
  for (const auto& c : cases) {
    std::string why;
    ASSERT_TRUE(c.cfg.validate(&why).ok()) << why;
    Simulator sim(1);
    Fabric f(sim, c.cfg);
    EXPECT_EQ(f.switch_count(), c.switches);
    EXPECT_EQ(f.link_count(), c.links);
    EXPECT_EQ(f.planes(), c.cfg.num_planes());
    EXPECT_EQ(f.hosts(), c.cfg.hosts);
  }
}

TEST(Fabric, CreateReportsInvalidConfigurations) {
  Simulator sim(1);
  std::string why;
  auto bad = Fabric::create(sim, clos(8, 100, 16, 16, 16), &why);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(why.find("hosts"), std::string::npos);
  auto good = Fabric::create(sim, clos(2, 32, 8, 4, 4), &why);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ((*good)->hosts(), 32u);
}

// Expected link traversals between two hosts.
uint32_t expected_hops(const TopologyShape& s, uint32_t a, uint32_t b) {
  const uint32_t ta = a / s.t0_down, tb = b / s.t0_down;
  if (ta == tb) return 2;
  if (ta / s.t0_per_pod == tb / s.t0_per_pod) return 4;
  return 6;
}

// Every ordered host pair, every plane, every EV make_evs returns: one packet,
// delivered to the right host on the right plane after the expected number of
// links, nothing dropped.
void check_all_pairs_reachable(const TopologyConfig& cfg, uint32_t per_plane) {
  Simulator sim(3);
  Fabric f(sim, cfg);
  std::vector<test::Sink> sinks(cfg.hosts);
  for (uint32_t h = 0; h < cfg.hosts; ++h) f.attach(h, &sinks[h]);
  Prng rng(11);
  uint64_t sent = 0;
  for (uint32_t a = 0; a < cfg.hosts; ++a) {
    for (uint32_t b = 0; b < cfg.hosts; ++b) {
      if (a == b) continue;
      const auto evs = f.make_evs(a, b, per_plane, rng);
      ASSERT_EQ(evs.size(), size_t{per_plane} * f.planes());
      for (const auto& ev : evs) {
        Packet* p = test::make_packet(sim, a, b, 1024, Class::data, true, ev.port, ev.value);
        f.set_route(*p);
        ASSERT_TRUE(p->srv6);
        f.inject(p);
        sim.run_until(Time::never());
        ++sent;
        ASSERT_EQ(sinks[b].rx.size(), 1u) << "from " << a << " to " << b << " plane " << int(ev.port) << " ev "
                                          << std::hex << ev.value;
        const auto& rx = sinks[b].rx[0];
        EXPECT_EQ(rx.port, ev.port);
        EXPECT_EQ(rx.src, a);
        EXPECT_EQ(rx.hops, expected_hops(f.shape(), a, b));
        sinks[b].rx.clear();
      }
    }
  }
  const FabricStats& st = f.stats();
  EXPECT_EQ(st.delivered, sent);
  EXPECT_EQ(st.drops_no_route + st.drops_link_down + st.drops_queue + st.drops_random, 0u);
  EXPECT_EQ(sim.live_packets(), 0u);
}

TEST(Fabric, Srv6ReachesEveryPairOnEveryPlaneThroughEveryEv2Tier) {
  check_all_pairs_reachable(clos(2, 32, 8, 4, 4), 6);
}

TEST(Fabric, Srv6ReachesEveryPairWithParallelLinks) {
  check_all_pairs_reachable(clos(3, 24, 8, 8, 4), 8);  // lanes0 = 2
}

TEST(Fabric, Srv6ReachesEveryPairEightPlanes) {
  check_all_pairs_reachable(clos(8, 16, 4, 2, 2), 4);
  // Planes beyond 8 reuse the uSID plane bits (disjoint networks).
  check_all_pairs_reachable(clos(12, 8, 4, 2, 2), 2);
}

TEST(Fabric, Srv6ReachesEveryPairIn3TierFatTree) {
  check_all_pairs_reachable(fat3(16, 2, 2, 2), 8);  // k = 4
  TopologyConfig c = fat3(32, 4, 4, 2);              // lanes0 = 2, t1_up = 4
  c.t2_count = 4;                                    // g = 2, lanes1 = 2
  check_all_pairs_reachable(c, 12);
}

TEST(Fabric, MakeEvsValuesAreDistinctWithPortsAndSpreadOverT1sEvenly) {
  Simulator sim(1);
  Fabric f(sim, clos(4, 64, 16, 16, 8));  // lanes0 = 2
  Prng rng(5);
  for (uint32_t per_plane : {5u, 8u, 13u, 16u, 40u}) {
    const auto evs = f.make_evs(0, 40, per_plane, rng);
    ASSERT_EQ(evs.size(), 4u * per_plane);
    std::set<uint32_t> values;
    std::map<uint32_t, std::map<uint32_t, int>> per_t1;  // plane -> T1 -> count
    std::map<uint32_t, std::set<uint32_t>> uplinks;
    for (size_t i = 0; i < evs.size(); ++i) {
      EXPECT_TRUE(values.insert(evs[i].value).second) << "duplicate EV";
      EXPECT_EQ(evs[i].port, i / per_plane);
      const EvPath p = f.ev_path(0, evs[i].value);
      ++per_t1[evs[i].port][p.t1];
      uplinks[evs[i].port].insert(p.t0_uplink);
      EXPECT_EQ(p.t1, p.t0_uplink / 2);
    }
    for (auto& [plane, counts] : per_t1) {
      int lo = 1 << 30, hi = 0;
      for (uint32_t t1 = 0; t1 < 8; ++t1) {
        lo = std::min(lo, counts[t1]);
        hi = std::max(hi, counts[t1]);
      }
      EXPECT_LE(hi - lo, 1) << "plane " << plane << " per_plane " << per_plane;
      EXPECT_EQ(uplinks[plane].size(), std::min(per_plane, 16u));  // distinct paths first
    }
  }
}

TEST(Fabric, EvToT1MappingIsDeterministicOnTheWire) {
  Simulator sim(1);
  const TopologyConfig cfg = clos(2, 32, 8, 8, 4);  // lanes0 = 2
  Fabric f(sim, cfg);
  std::vector<test::Sink> sinks(cfg.hosts);
  for (uint32_t h = 0; h < cfg.hosts; ++h) f.attach(h, &sinks[h]);
  Prng rng(9);
  const auto evs = f.make_evs(1, 17, 16, rng);
  for (int round = 0; round < 2; ++round) {
    for (const auto& ev : evs) {
      const EvPath path = f.ev_path(1, ev.value);
      const LinkRef up{LinkRef::Tier::t0_t1, ev.port, 0, path.t1, path.t0_uplink % 2};
      const LinkRef down{LinkRef::Tier::t0_t1, ev.port, 2, path.t1, path.t0_uplink % 2};
      const uint64_t before_up = f.link_counters(up, true).packets;
      const uint64_t before_down = f.link_counters(down, false).packets;
      Packet* p = test::make_packet(sim, 1, 17, 100, Class::data, false, ev.port, ev.value);
      f.set_route(*p);
      f.inject(p);
      sim.run_until(Time::never());
      EXPECT_EQ(f.link_counters(up, true).packets, before_up + 1) << f.name(up);
      // Down to the destination T0 on the same lane.
      EXPECT_EQ(f.link_counters(down, false).packets, before_down + 1) << f.name(down);
    }
  }
  EXPECT_EQ(f.stats().delivered, 2 * evs.size());
}

TEST(Fabric, ThreeTierEvPathNamesT1AndT2) {
  Simulator sim(1);
  TopologyConfig cfg = fat3(16, 2, 2, 2);
  Fabric f(sim, cfg);
  std::vector<test::Sink> sinks(cfg.hosts);
  for (uint32_t h = 0; h < cfg.hosts; ++h) f.attach(h, &sinks[h]);
  Prng rng(2);
  const auto evs = f.make_evs(0, 15, 4, rng);  // 4 paths: 2 T1 x 2 T2 each
  std::set<uint32_t> t2s;
  for (const auto& ev : evs) {
    const EvPath path = f.ev_path(0, ev.value);
    t2s.insert(path.t2);
    const LinkRef up1{LinkRef::Tier::t1_t2, 0, path.t1, path.t2, 0};
    const uint64_t before = f.link_counters(up1, true).packets;
    Packet* p = test::make_packet(sim, 0, 15, 100, Class::data, false, 0, ev.value);
    f.set_route(*p);
    f.inject(p);
    sim.run_until(Time::never());
    EXPECT_EQ(f.link_counters(up1, true).packets, before + 1) << f.name(up1);
  }
  EXPECT_EQ(t2s.size(), 4u);  // the 4 EVs take the 4 distinct core paths
}

TEST(Fabric, EcmpSpreadsFlowsOverUplinks) {
  Simulator sim(1);
  TopologyConfig cfg = clos(1, 64, 16, 16, 16);
  cfg.routing = Routing::ecmp;
  Fabric f(sim, cfg);
  std::vector<test::Sink> sinks(cfg.hosts);
  for (uint32_t h = 0; h < cfg.hosts; ++h) f.attach(h, &sinks[h]);
  Prng rng(4);
  const auto evs = f.make_evs(0, 50, 3200, rng);
  std::set<uint32_t> values;
  for (const auto& ev : evs) {
    EXPECT_LT(ev.value, 65536u);
    EXPECT_TRUE(values.insert(ev.value).second);
  }
  for (const auto& ev : evs) {
    Packet* p = test::make_packet(sim, 0, 50, 100, Class::data, false, 0, ev.value);
    f.set_route(*p);
    EXPECT_FALSE(p->srv6);
    f.inject(p);
    sim.run_until(Time::never());
  }
  EXPECT_EQ(f.stats().delivered, evs.size());
  // 3200 flows over 16 uplinks: 200 each on average.
  for (uint32_t t1 = 0; t1 < 16; ++t1) {
    const uint64_t n = f.link_counters(LinkRef{LinkRef::Tier::t0_t1, 0, 0, t1, 0}, true).packets;
    EXPECT_GT(n, 140u) << "t1 " << t1;
    EXPECT_LT(n, 260u) << "t1 " << t1;
  }
  // The same flow always takes the same path.
  const LinkRef l{LinkRef::Tier::t0_t1, 0, 0, 0, 0};
  uint64_t hits = 0;
  for (int i = 0; i < 10; ++i) {
    const uint64_t before = f.link_counters(l, true).packets;
    Packet* p = test::make_packet(sim, 0, 50, 100, Class::data, false, 0, evs[0].value);
    f.set_route(*p);
    f.inject(p);
    sim.run_until(Time::never());
    hits += f.link_counters(l, true).packets - before;
  }
  EXPECT_TRUE(hits == 0 || hits == 10);
}

TEST(Fabric, EcmpReachesEveryPairIn3Tier) {
  Simulator sim(1);
  TopologyConfig cfg = fat3(32, 4, 4, 2);
  cfg.routing = Routing::ecmp;
  Fabric f(sim, cfg);
  std::vector<test::Sink> sinks(cfg.hosts);
  for (uint32_t h = 0; h < cfg.hosts; ++h) f.attach(h, &sinks[h]);
  Prng rng(8);
  for (uint32_t a = 0; a < cfg.hosts; ++a)
    for (uint32_t b = 0; b < cfg.hosts; ++b) {
      if (a == b) continue;
      for (const auto& ev : f.make_evs(a, b, 3, rng)) {
        Packet* p = test::make_packet(sim, a, b, 100, Class::data, false, 0, ev.value);
        f.set_route(*p);
        f.inject(p);
        sim.run_until(Time::never());
        ASSERT_EQ(sinks[b].rx.size(), 1u);
        EXPECT_EQ(sinks[b].rx[0].hops, expected_hops(f.shape(), a, b));
        sinks[b].rx.clear();
      }
    }
}

}  // namespace
}  // namespace mrc::sim
