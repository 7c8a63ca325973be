// SPDX-License-Identifier: BSD-2-Clause
// Tests for sim/fabric/partition.hpp: planes first, then pods or T0 ranges;
// balanced shares; the lookahead is the shortest latency over a cut link.
#include "sim/fabric/partition.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace mrc::sim {
namespace {

// The default scenario's fabric: 64 hosts, 8 planes, 4 T0s and 16 T1s per plane.
TopologyConfig default_fabric() { return TopologyConfig{}; }

// A k = 8 fat tree of one plane: 8 pods of 4 T0s and 4 T1s, 16 T2s, 128 hosts.
TopologyConfig fattree3_k8() {
  TopologyConfig t;
  t.kind = TopologyKind::fattree3;
  t.planes = 1;
  t.hosts = 128;
  t.t0_down = 4;
  t.t0_up = 4;
  t.t1_count = 4;
  return t;
}

PartitionPlan plan(const TopologyConfig& t, uint32_t n) {
  std::string why;
  EXPECT_TRUE(t.validate(&why).ok()) << why;
  auto p = plan_partitions(t, n, &why);
  EXPECT_TRUE(p.ok()) << why;
  return p.ok() ? *p : PartitionPlan{};
}

// How many elements each partition got.
std::vector<size_t> shares(const std::vector<uint32_t>& owner, uint32_t n) {
  std::vector<size_t> c(n, 0);
  for (uint32_t o : owner) ++c.at(o);
  return c;
}

TEST(PartitionPlan, OnePartitionCutsNothing) {
  const PartitionPlan p = plan(default_fabric(), 1);
  EXPECT_EQ(p.cut_links, 0u);
  EXPECT_EQ(p.lookahead, Duration::infinite());
  EXPECT_TRUE(std::all_of(p.sw.begin(), p.sw.end(), [](uint32_t x) { return x == 0; }));
  EXPECT_TRUE(std::all_of(p.host.begin(), p.host.end(), [](uint32_t x) { return x == 0; }));
}

// Two partitions of 8 planes: planes 0-3 and 4-7, joined only through host
// links, so the lookahead is one link delay (a packet into a NIC).
TEST(PartitionPlan, PlanesComeFirstAndOnlyHostLinksAreCut) {
  const TopologyConfig t = default_fabric();
  const TopologyShape s = t.shape();
  const PartitionPlan p = plan(t, 2);
  EXPECT_EQ(p.plane_groups, 2u);
  EXPECT_EQ(p.unit_groups, 1u);
  for (uint32_t plane = 0; plane < s.planes; ++plane)
    for (uint32_t x = 0; x < s.t1_count; ++x)
      EXPECT_EQ(p.switch_partition(s, plane, SwitchRef::Tier::t1, x), plane < 4 ? 0u : 1u);
  EXPECT_EQ(shares(p.host, 2), (std::vector<size_t>{32, 32}));
  EXPECT_EQ(p.host[0], 0u);
  EXPECT_EQ(p.host[63], 1u);
  EXPECT_EQ(p.cut_links, uint64_t{s.hosts} * s.planes / 2);  // each NIC reaches the other half's planes
  EXPECT_EQ(p.lookahead, t.link_delay);
}

TEST(PartitionPlan, EveryPartitionGetsAnEqualShare) {
  const TopologyConfig t = default_fabric();
  for (uint32_t n : {4u, 8u, 16u, 32u}) {
    const PartitionPlan p = plan(t, n);
    const auto sw = shares(p.sw, n), hosts = shares(p.host, n);
    EXPECT_EQ(*std::min_element(sw.begin(), sw.end()), *std::max_element(sw.begin(), sw.end())) << n;
    EXPECT_EQ(hosts, std::vector<size_t>(n, 64 / n)) << n;
  }
}

// More partitions than planes cut each plane along pods: a pod's T0s and
// T1s stay together, T2s are spread; the hosts go with their pod, so only
// T1-T2 links are cut and a packet over one takes the link and a switch.
TEST(PartitionPlan, ThreeTierFabricsAreCutAlongPods) {
  const TopologyConfig t = fattree3_k8();
  const TopologyShape s = t.shape();
  const PartitionPlan p = plan(t, 4);
  EXPECT_EQ(p.unit_groups, 4u);
  for (uint32_t t0 = 0; t0 < s.t0_count; ++t0) {
    const uint32_t pod = t0 / s.t0_per_pod;
    EXPECT_EQ(p.switch_partition(s, 0, SwitchRef::Tier::t0, t0), pod / 2);
    EXPECT_EQ(p.switch_partition(s, 0, SwitchRef::Tier::t1, pod * s.t1_per_pod), pod / 2);
  }
  EXPECT_EQ(shares(p.sw, 4), (std::vector<size_t>{20, 20, 20, 20}));
  EXPECT_EQ(shares(p.host, 4), (std::vector<size_t>{32, 32, 32, 32}));
  EXPECT_GT(p.cut_links, 0u);
  EXPECT_EQ(p.lookahead, t.link_delay + t.switch_latency);
  // With PFC a PAUSE frame crosses a cut link in the link delay alone.
  TopologyConfig pfc = t;
  pfc.queue.pfc = true;
  EXPECT_EQ(plan(pfc, 4).lookahead, t.link_delay);
}

TEST(PartitionPlan, BadCountsNameTheFlagAndWhatFits) {
  std::string why;
  EXPECT_FALSE(plan_partitions(default_fabric(), 0, &why).ok());
  EXPECT_NE(why.find("--partitions must be at least 1"), std::string::npos) << why;
  EXPECT_FALSE(plan_partitions(default_fabric(), 64, &why).ok());
  EXPECT_NE(why.find("--partitions 64"), std::string::npos) << why;
  EXPECT_NE(why.find("at most 32"), std::string::npos) << why;
  TopologyConfig t = default_fabric();
  t.link_delay = Duration{};
  EXPECT_TRUE(plan_partitions(t, 1, &why).ok());
  EXPECT_FALSE(plan_partitions(t, 2, &why).ok());
  EXPECT_NE(why.find("--link-delay-ns"), std::string::npos) << why;
}

}  // namespace
}  // namespace mrc::sim
