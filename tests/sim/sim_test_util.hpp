// SPDX-License-Identifier: BSD-2-Clause
// Helpers shared by the simulator scenario tests.
#pragma once

#include <cstdint>

#include "sim/scenario/runner.hpp"

namespace mrc::sim::testing {

/// A non-blocking 2-tier fabric of `planes` x 100 Gb/s (a single-plane fat
/// tree when planes == 1) with `per_t0` hosts, uplinks and T1s per T0.
inline TopologyConfig clos(uint32_t planes, uint32_t hosts, uint32_t per_t0) {
  TopologyConfig t;
  t.kind = planes > 1 ? TopologyKind::clos2_multiplane : TopologyKind::fattree2;
  t.planes = planes;
  t.hosts = hosts;
  t.t0_down = per_t0;
  t.t0_up = per_t0;
  t.t1_count = per_t0;
  t.host_link_bps = 100'000'000'000ull;
  return t;
}

/// A transport by mrc-sim name, 16 EVs per plane, `qps` QPs per host pair.
inline TransportSpec transport(const char* name, uint32_t qps = 1) {
  return transport_by_name(name, 16, qps).value();
}

/// 15 -> 1 incast of 4 MiB per sender into one NIC of 4 x 100 Gb/s (32
/// hosts, 8 per T0), plus a victim flow to the target's T0 neighbour: it
/// shares the T0 and its uplinks but not the congested downlink. The victim
/// is the last flow.
inline Scenario incast15_with_victim() {
  Scenario sc;
  sc.topology = clos(4, 32, 8);
  sc.workload = WorkloadKind::incast;
  sc.fan_in = 15;
  sc.victim = true;
  sc.bytes = 4 << 20;
  sc.seed = 8;
  return sc;
}

}  // namespace mrc::sim::testing
