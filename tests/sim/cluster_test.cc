// SPDX-License-Identifier: BSD-2-Clause
// Tests of sim/workload/cluster.hpp: what a QP gets does not depend on when
// or in which order the workload made it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "sim/engine/parallel.hpp"
#include "sim/engine/ranks.hpp"
#include "sim/fabric/partition.hpp"
#include "sim/workload/cluster.hpp"
#include "sim_test_util.hpp"

namespace mrc::sim {
namespace {

using testing::clos;
using testing::transport;

/// The EV values of every QP, as (src, dst, values) in the cluster's QP order,
/// after writes over `pairs` in that order.
std::vector<std::vector<uint32_t>> ev_sets_after(const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
  Simulator sim(5);
  Fabric fabric(sim, clos(2, 16, 4));
  Cluster c(sim, fabric, core::EndpointConfig{}, transport("mrc"));
  for (const auto& [src, dst] : pairs) c.write(src, dst, 4096, [](const Done&) {});
  std::vector<std::vector<uint32_t>> out;
  c.for_each_qp([&](uint32_t src, uint32_t dst, uint32_t, const core::Endpoint& e, uint32_t qpn) {
    std::vector<core::EvInfo> evs(e.query_evs(qpn, {}));
    e.query_evs(qpn, evs);
    std::vector<uint32_t> v{src, dst};
    for (const auto& x : evs) v.push_back(x.value);
    out.push_back(std::move(v));
  });
  return out;
}

// Each QP's EV set comes from a stream of its own (seed, source,
// destination, lane): a run that makes QPs in another order (events at the
// same time in another order, or hosts in other partitions) gives every QP
// the same EVs.
TEST(SimCluster, AQpsEvSetDoesNotDependOnTheOrderQpsAreMade) {
  const auto a = ev_sets_after({{0, 1}, {2, 3}, {3, 0}});
  const auto b = ev_sets_after({{3, 0}, {2, 3}, {0, 1}});
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[1]);
}


/// Rank `rank` of two, for a model that is built and never run: no
/// collective may be called.
class BuildOnlyRanks final : public Ranks {
 public:
  explicit BuildOnlyRanks(uint32_t rank) : rank_(rank) {}
  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return 2; }
  std::vector<std::vector<uint8_t>> exchange(const std::vector<std::vector<uint8_t>>&) override { std::abort(); }
  void sum(std::span<uint64_t>) override { std::abort(); }
  void max(std::span<uint64_t>) override { std::abort(); }
  void min(std::span<int64_t>) override { std::abort(); }
  std::vector<std::vector<uint8_t>> gather(const std::vector<uint8_t>&) override { std::abort(); }

 private:
  uint32_t rank_;
};

/// clos(2, 16, 4) over `partitions` partitions and its fabric, built as
/// `rank` of 2 (the first half of the partitions is rank 0's) or in one
/// process (-1).
struct RankModel {
  RankModel(int rank, uint32_t partitions) : ranks(rank < 0 ? 0 : static_cast<uint32_t>(rank)) {
    for (uint32_t p = 0; p < partitions; ++p) {
      parts.push_back(std::make_unique<Simulator>(9));
      parts.back()->share_entities(&global);
      ptrs.push_back(parts.back().get());
    }
    auto planned = plan_partitions(topo, partitions);
    EXPECT_TRUE(planned.ok());
    plan = *planned;
    engine = std::make_unique<ParallelEngine>(ptrs, Duration::ns(500), &global);
    std::vector<uint32_t> rank_of(partitions);
    for (uint32_t p = 0; p < partitions; ++p) rank_of[p] = p / (partitions / 2);
    if (rank >= 0) engine->set_ranks(&ranks, rank_of);
    fabric = std::make_unique<Fabric>(global, topo, FabricPartitions{ptrs, engine.get(), plan.sw, plan.host});
  }
  const TopologyConfig topo = clos(2, 16, 4);
  Simulator global{9};
  std::vector<std::unique_ptr<Simulator>> parts;
  std::vector<Simulator*> ptrs;
  PartitionPlan plan;
  BuildOnlyRanks ranks;
  std::unique_ptr<ParallelEngine> engine;
  std::unique_ptr<Fabric> fabric;
};

/// One end of a connection: its QPN, and where its host is built, the QP as
/// a query of its endpoint sees it (`built` false: the rest is zero).
struct End {
  uint32_t qpn = 0;
  bool built = false;
  core::QpState state = core::QpState::reset;
  uint32_t dest_qpn = 0, sq_psn = 0, rq_psn = 0, evs = 0;
  bool operator==(const End&) const = default;
};

/// 16 hosts on 2 planes in 2 partitions (hosts 0-7 and 8-15), connections
/// within and across them, built as `rank` of 2 (or in one process: -1).
/// Both ends of every connection, in connection order, and the entity id
/// the model takes next.
struct Built {
  std::vector<End> src, dst;
  bool rank_builds_all = true;
  uint32_t next_entity = 0;
};
Built build_as(int rank) {
  RankModel m(rank, 2);
  HostPlacement place{m.ptrs, m.plan.host, m.engine.get(), m.engine->lookahead()};
  Cluster c(m.global, place, *m.fabric, core::EndpointConfig{}, transport("mrc"));
  const std::vector<std::pair<uint32_t, uint32_t>> pairs{{0, 9}, {9, 0}, {1, 2}, {10, 11}, {3, 12}, {12, 3}};
  for (const auto& [src, dst] : pairs) c.connect(src, dst);
  Built out;
  out.next_entity = m.global.new_entity();
  auto end = [&](uint32_t h, uint32_t qpn) {
    if (!c.built(h)) return End{qpn};
    const auto q = c.nic(h).ep().query_qp(qpn);
    if (!q) {
      ADD_FAILURE() << "no QP " << qpn << " at host " << h;
      return End{};
    }
    return End{qpn, true, q->state, q->attr.dest_qpn, q->attr.sq_psn, q->attr.rq_psn, q->evs};
  };
  for (const auto& [src, dst] : pairs) {
    const auto qpns = c.qpns(src, dst);
    if (!qpns) {
      ADD_FAILURE() << "connection " << src << "-" << dst << " not opened";
      continue;
    }
    out.src.push_back(end(src, qpns->first));
    out.dst.push_back(end(dst, qpns->second));
    out.rank_builds_all = out.rank_builds_all && c.built(src) && c.built(dst);
  }
  return out;
}

// Across processes a rank builds the NICs, endpoints and QPs of its own
// hosts alone; another rank's host has no NIC, and the QPN and PSN of its
// end of a connection are drawn as its endpoint draws them
// (core::EndpointIds), so the ends a rank builds are those of a whole
// model, and so are the entity ids.
TEST(SimCluster, ARankBuildsOnlyItsOwnHostsQpsAndTheyMatchAWholeModel) {
  const Built whole = build_as(-1);
  ASSERT_TRUE(whole.rank_builds_all);
  ASSERT_EQ(whole.src.size(), 6u);
  for (const End& e : whole.src) {
    EXPECT_EQ(e.state, core::QpState::rts);
    EXPECT_GT(e.evs, 0u);
  }
  for (int rank = 0; rank < 2; ++rank) {
    const Built part = build_as(rank);
    ASSERT_FALSE(part.rank_builds_all);
    EXPECT_EQ(part.next_entity, whole.next_entity) << "as rank " << rank;
    ASSERT_EQ(part.src.size(), whole.src.size());
    ASSERT_EQ(part.dst.size(), whole.dst.size());
    size_t elsewhere = 0;
    for (size_t i = 0; i < whole.src.size(); ++i) {
      for (const auto& [p, w] : {std::pair{part.src[i], whole.src[i]}, std::pair{part.dst[i], whole.dst[i]}}) {
        EXPECT_EQ(p.qpn, w.qpn) << "connection " << i << " as rank " << rank;
        if (!p.built)
          ++elsewhere;
        else
          EXPECT_EQ(p, w) << "connection " << i << " as rank " << rank;
      }
    }
    // 0-9, 9-0, 3-12 and 12-3 cross: one end each is the other rank's;
    // 1-2 and 10-11 are both ends on one rank.
    EXPECT_EQ(elsewhere, 6u) << "as rank " << rank;
  }
}

/// RankModel's fabric: the entity id the model takes next, which message
/// targets are built here, and what was built.
struct FabricAs {
  uint32_t next_entity = 0;
  std::vector<bool> targets;
  Fabric::Elements built;
};
FabricAs fabric_as(int rank, uint32_t partitions) {
  RankModel m(rank, partitions);
  FabricAs out;
  out.next_entity = m.global.new_entity();
  m.fabric->for_each_message_target([&](Node* n) { out.targets.push_back(n != nullptr); });
  out.built = m.fabric->elements_built();
  return out;
}

// Across processes a rank builds the switches and ports of its own
// partitions and the pipes that start or end there; every element of the
// others still takes its entity id and its message-target index, so keys and
// messages are those of one process. 2 partitions cut along planes (host
// links cross); 4 cut the planes' T0s too (T0-T1 links cross).
TEST(SimCluster, ARankBuildsOnlyItsOwnPartitionsFabricWithTheWholeModelsIdsAndTargets) {
  for (uint32_t partitions : {2u, 4u}) {
    const FabricAs whole = fabric_as(-1, partitions);
    // 2 planes x (4 T0s of 8 ports + 4 T1s of 4); an uplink per host and plane.
    EXPECT_EQ(whole.built.switches, 16u);
    EXPECT_EQ(whole.built.ports, 96u);
    EXPECT_EQ(whole.built.lone_pipes, 32u);
    std::vector<bool> somewhere(whole.targets.size(), false);
    uint64_t ports = 0;
    for (int rank = 0; rank < 2; ++rank) {
      const FabricAs part = fabric_as(rank, partitions);
      EXPECT_EQ(part.next_entity, whole.next_entity) << partitions << " partitions, rank " << rank;
      ASSERT_EQ(part.targets.size(), whole.targets.size()) << partitions << " partitions, rank " << rank;
      EXPECT_EQ(part.built.switches, 8u);
      ports += part.built.ports;
      // The fabric's own node is every rank's; about half of the rest.
      EXPECT_TRUE(part.targets[0]);
      const auto here = static_cast<size_t>(std::count(part.targets.begin(), part.targets.end(), true));
      EXPECT_LT(here, whole.targets.size() * 3 / 4) << partitions << " partitions, rank " << rank;
      for (size_t i = 0; i < somewhere.size(); ++i) somewhere[i] = somewhere[i] || part.targets[i];
    }
    // Every switch port is built by exactly one rank, every target by one at least.
    EXPECT_EQ(ports, whole.built.ports);
    EXPECT_EQ(std::count(somewhere.begin(), somewhere.end(), false), 0) << partitions << " partitions";
  }
}

/// Builds clos(2, 16, 4) as rank 0 of 2 (a plane each) and reads a host
/// link whose ends are both rank 1's.
void read_another_ranks_link() {
  RankModel m(0, 2);
  // Plane 1 is partition 1's, and host 12 too.
  (void)m.fabric->link_counters(LinkRef{LinkRef::Tier::host_t0, 1, 12, 0, 0}, true);
}

// Reading an element of another rank's partition is a bug: it aborts with a
// message naming the element, never an answer made up here.
TEST(SimClusterDeathTest, ReadingAnotherRanksLinkAborts) {
  EXPECT_DEATH(read_another_ranks_link(),
               "the link h\\[12\\]-p1:t0\\[3\\] upwards is read in a process that does not build it");
}

}  // namespace
}  // namespace mrc::sim
