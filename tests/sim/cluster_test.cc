// SPDX-License-Identifier: BSD-2-Clause
// Tests of sim/workload/cluster.hpp: what a QP gets does not depend on when
// or in which order the workload made it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

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

}  // namespace
}  // namespace mrc::sim
