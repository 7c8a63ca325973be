// SPDX-License-Identifier: BSD-2-Clause
#include "sim/fabric/partition.hpp"

#include <algorithm>
#include <numeric>

namespace mrc::sim {

namespace {

// Block i of n equal blocks over `count` items, for item x: contiguous,
// sizes differing by at most one.
uint32_t block_of(uint64_t x, uint64_t count, uint32_t n) { return static_cast<uint32_t>(x * n / count); }

struct Cutter {
  const TopologyShape& s;
  uint32_t plane_groups;
  uint32_t unit_groups;

  // Units a plane group is cut into: pods (3-tier) or T0s (2-tier).
  uint32_t units() const { return s.three_tier ? s.pods : s.t0_count; }
  uint32_t plane_group(uint32_t plane) const { return block_of(plane, s.planes, plane_groups); }
  uint32_t t0_unit(uint32_t t0) const { return s.three_tier ? t0 / s.t0_per_pod : t0; }
  uint32_t at(uint32_t plane, uint32_t group) const { return plane_group(plane) * unit_groups + group; }

  uint32_t t0(uint32_t plane, uint32_t t) const { return at(plane, block_of(t0_unit(t), units(), unit_groups)); }
  uint32_t t1(uint32_t plane, uint32_t x) const {
    // 3-tier: with its pod; 2-tier: T1s are shared by every T0, spread them.
    return s.three_tier ? at(plane, block_of(x / s.t1_per_pod, s.pods, unit_groups))
                        : at(plane, block_of(x, s.t1_count, unit_groups));
  }
  uint32_t t2(uint32_t plane, uint32_t z) const { return at(plane, block_of(z, s.t2_count, unit_groups)); }
  uint32_t host_group(uint32_t h) const { return block_of(t0_unit(h / s.t0_down), units(), unit_groups); }
};

}  // namespace

uint32_t PartitionPlan::switch_partition(const TopologyShape& s, uint32_t plane, SwitchRef::Tier tier,
                                         uint32_t index) const {
  uint32_t id = plane * s.switches_per_plane() + index;
  if (tier != SwitchRef::Tier::t0) id += s.t0_count;
  if (tier == SwitchRef::Tier::t2) id += s.t1_count;
  return sw[id];
}

Result<PartitionPlan> plan_partitions(const TopologyConfig& cfg, uint32_t partitions, std::string* why) {
  auto fail = [&](std::string m) -> Result<PartitionPlan> {
    if (why) *why = std::move(m);
    return Errc::invalid_argument;
  };
  const TopologyShape s = cfg.shape();
  if (partitions == 0) return fail("--partitions must be at least 1 (1 runs the sequential engine)");
  PartitionPlan p;
  p.partitions = partitions;
  p.plane_groups = std::gcd(partitions, s.planes);
  p.unit_groups = partitions / p.plane_groups;
  const Cutter c{s, p.plane_groups, p.unit_groups};
  if (p.unit_groups > c.units()) {
    const uint32_t fits = p.plane_groups * c.units();
    return fail("--partitions " + std::to_string(partitions) + " cuts each group of " +
                std::to_string(s.planes / p.plane_groups) + " plane(s) into " + std::to_string(p.unit_groups) +
                " parts, but a plane has only " + std::to_string(c.units()) + (s.three_tier ? " pods" : " T0s") +
                "; use at most " + std::to_string(fits) +
                " (the planes times that), or a divisor or multiple of the " + std::to_string(s.planes) +
                " planes");
  }
  if (partitions > 1 && cfg.link_delay <= Duration{})
    return fail("--partitions " + std::to_string(partitions) +
                " needs a link delay above 0 (--link-delay-ns): partitions run ahead of each other by the "
                "shortest delay between them");

  p.sw.resize(s.switches());
  for (uint32_t plane = 0; plane < s.planes; ++plane) {
    uint32_t id = plane * s.switches_per_plane();
    for (uint32_t t = 0; t < s.t0_count; ++t) p.sw[id++] = c.t0(plane, t);
    for (uint32_t x = 0; x < s.t1_count; ++x) p.sw[id++] = c.t1(plane, x);
    for (uint32_t z = 0; z < s.t2_count; ++z) p.sw[id++] = c.t2(plane, z);
  }
  // Hosts go with their T0's unit group (its T0s are theirs in every plane
  // of the group's plane groups); the hosts of a unit group, contiguous, are
  // split in equal blocks over the plane groups. A NIC reaches every plane,
  // so it has cut links whichever plane group it joins.
  p.host.resize(s.hosts);
  std::vector<uint32_t> first(p.unit_groups, s.hosts), count(p.unit_groups, 0);
  for (uint32_t h = 0; h < s.hosts; ++h) {
    const uint32_t g = c.host_group(h);
    first[g] = std::min(first[g], h);
    ++count[g];
  }
  for (uint32_t h = 0; h < s.hosts; ++h) {
    const uint32_t g = c.host_group(h);
    p.host[h] = block_of(h - first[g], count[g], p.plane_groups) * p.unit_groups + g;
  }

  // Cut links, and the shortest latency over one: into a NIC a packet takes
  // the link delay, into a switch the delay and the traversal; a PFC frame
  // (either way) the link delay.
  bool host_cut = false, fabric_cut = false;
  for (uint32_t plane = 0; plane < s.planes; ++plane) {
    for (uint32_t h = 0; h < s.hosts; ++h)
      if (p.host[h] != c.t0(plane, h / s.t0_down)) {
        ++p.cut_links;
        host_cut = true;
      }
    for (uint32_t t = 0; t < s.t0_count; ++t)
      for (uint32_t u = 0; u < s.t0_up; ++u) {
        const uint32_t base = s.three_tier ? (t / s.t0_per_pod) * s.t1_per_pod : 0;
        if (c.t0(plane, t) != c.t1(plane, base + u / s.lanes0)) {
          ++p.cut_links;
          fabric_cut = true;
        }
      }
    for (uint32_t x = 0; x < s.t1_count && s.three_tier; ++x)
      for (uint32_t k = 0; k < s.t1_up; ++k) {
        const uint32_t j = x % s.t1_per_pod;
        if (c.t1(plane, x) != c.t2(plane, j * s.t2_per_group + k / s.lanes1)) {
          ++p.cut_links;
          fabric_cut = true;
        }
      }
  }
  if (host_cut || (fabric_cut && cfg.queue.pfc)) p.lookahead = cfg.link_delay;
  else if (fabric_cut) p.lookahead = cfg.link_delay + cfg.switch_latency;
  return p;
}

}  // namespace mrc::sim
