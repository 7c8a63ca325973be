// SPDX-License-Identifier: BSD-2-Clause
// PartitionPlan: which partition of a parallel run owns each host (its NIC
// and the pipes it transmits into) and each switch (its egress ports and
// their pipes), and the lookahead that bounds a synchronous window.
//
// The fabric is cut along planes first: planes are disjoint copies joined
// only through the NICs, so a plane group's switches exchange packets with
// other partitions only over host links. When there are more partitions than
// planes, each plane group is cut along pods (3-tier: a pod's T0s and T1s
// stay together, the T2s are spread) or, in 2-tier fabrics, along ranges of
// T0s (the T1s, which every T0 reaches, are spread). Hosts go with their T0's
// unit (pod or T0 range), split evenly over the plane groups, so every
// partition gets a share of the NICs.
//
// An element's partition runs its events; a packet or PFC frame crossing a
// link whose ends are in different partitions is the only thing partitions
// exchange, and it arrives at least `lookahead` after it was sent (the
// latency of the shortest such link: a link's propagation delay, plus the
// switch traversal when it ends at a switch). So a partition may run every
// event before now + lookahead without hearing from the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/fabric/topology.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace mrc::sim {

struct PartitionPlan {
  uint32_t partitions = 1;
  uint32_t plane_groups = 1;  ///< partitions along planes: gcd(partitions, planes)
  uint32_t unit_groups = 1;   ///< partitions within a plane group: partitions / plane_groups
  /// Partition of each host's NIC, by host index.
  std::vector<uint32_t> host;
  /// Partition of each switch, in Fabric's switch order (plane by plane:
  /// T0s, then T1s, then T2s).
  std::vector<uint32_t> sw;
  /// Bidirectional links whose two ends are in different partitions.
  uint64_t cut_links = 0;
  /// The smallest time from a send to its arrival over a cut link (or a PFC
  /// frame over one); Duration::infinite() when nothing is cut.
  Duration lookahead = Duration::infinite();

  /// Partition of switch (plane, tier, index).
  uint32_t switch_partition(const TopologyShape& s, uint32_t plane, SwitchRef::Tier tier, uint32_t index) const;
};

/// Plans `partitions` partitions of the fabric `cfg` (which must have passed
/// validate()). Errors name --partitions and say what would fit: more
/// partitions than planes x units (pods in 3-tier, T0s in 2-tier), or a
/// zero link delay (no lookahead, so windows could not advance).
Result<PartitionPlan> plan_partitions(const TopologyConfig& cfg, uint32_t partitions, std::string* why = nullptr);

}  // namespace mrc::sim
