// SPDX-License-Identifier: BSD-2-Clause
// Shared fabric settings for the core's claim tests.
#pragma once

#include "harness/fabric.hpp"

namespace mrc::testing {

/// 2 hosts, 4 planes x 4 paths, 100 Gb/s ports, 1 us per path: an RTT of a
/// few microseconds, with the core's loss-rule timing matched to it.
inline harness::FabricConfig small_fabric(uint64_t seed = 1) {
  harness::FabricConfig fc;
  fc.hosts = 2;
  fc.planes = 4;
  fc.paths_per_plane = 4;
  fc.path_delay = Duration::us(1);
  fc.seed = seed;
  fc.endpoint.protocol.base_rtt = Duration::us(4);
  fc.endpoint.protocol.reorder_allowance = Duration::us(2);
  fc.endpoint.protocol.probe_interval = Duration::us(50);
  fc.endpoint.protocol.probe_interval_max = Duration::us(400);
  return fc;
}

/// QP options: the default EV profile (256 EVs, 128 active, split over the
/// planes) and a 64 us ACK timeout.
inline harness::QpOptions default_qp() {
  harness::QpOptions o;
  o.attr.timeout = 6;
  return o;
}

inline Time at_us(int64_t us) { return Time::zero() + Duration::us(us); }
inline Time at_ms(int64_t ms) { return Time::zero() + Duration::ms(ms); }

}  // namespace mrc::testing
