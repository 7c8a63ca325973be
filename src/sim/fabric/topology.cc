// SPDX-License-Identifier: BSD-2-Clause
#include "sim/fabric/topology.hpp"

#include <string>

#include "sim/fabric/egress_port.hpp"
#include "sim/fabric/packet.hpp"
#include "sim/fabric/usid.hpp"

namespace mrc::sim {

namespace {

/// Largest switch radix a configuration may ask for (ports per switch).
constexpr uint32_t kMaxRadix = 1024;
constexpr uint32_t kMaxPlanes = 32;
/// A full-size packet on the wire: 4 KiB payload, the largest MRC header,
/// framing and the SRv6 outer header. A data queue must hold one.
constexpr uint64_t kFullPacketBytes = 4096 + wire::kMaxPlainHeaderBytes + kWireOverhead + kSrv6Overhead;

Status reject(std::string* why, const std::string& msg) {
  if (why) *why = msg;
  return Errc::invalid_argument;
}

std::string str(uint64_t v) { return std::to_string(v); }

// Shape of the configuration, computed without any checks (divisions by zero
// excluded). validate() checks the inputs of every step.
TopologyShape compute_shape(const TopologyConfig& c) {
  TopologyShape s;
  s.three_tier = c.kind == TopologyKind::fattree3;
  s.planes = c.num_planes();
  s.hosts = c.hosts;
  s.t0_down = c.t0_down;
  s.t0_up = c.t0_up;
  s.t0_count = c.t0_down ? c.hosts / c.t0_down : 0;
  s.t1_per_pod = c.t1_count;
  s.lanes0 = c.t1_count ? c.t0_up / c.t1_count : 1;
  s.host_bps = c.host_link_bps;
  s.fabric_bps = c.fabric_link_bps ? c.fabric_link_bps : c.host_link_bps;
  if (!s.three_tier) {
    s.pods = 1;
    s.t0_per_pod = s.t0_count;
  } else {
    s.pods = c.pods ? c.pods : (c.t1_count ? s.t0_count / c.t1_count : 0);
    s.t0_per_pod = s.pods ? s.t0_count / s.pods : 0;
  }
  s.t1_count = s.pods * s.t1_per_pod;
  s.t1_down = s.t0_per_pod * s.lanes0;
  if (s.three_tier) {
    s.t1_up = s.t1_down;
    s.t2_count = c.t2_count ? c.t2_count : s.t1_per_pod * s.t1_up;
    s.t2_per_group = s.t1_per_pod ? s.t2_count / s.t1_per_pod : 0;
    s.lanes1 = s.t2_per_group ? s.t1_up / s.t2_per_group : 1;
    s.t2_ports = s.pods * s.lanes1;
  }
  return s;
}

}  // namespace

TopologyShape TopologyConfig::shape() const { return compute_shape(*this); }

Status TopologyConfig::validate(std::string* why) const {
  const bool three = kind == TopologyKind::fattree3;
  if (kind != TopologyKind::fattree2 && (planes == 0 || planes > kMaxPlanes))
    return reject(why, "planes: must be 1.." + str(kMaxPlanes) + " (got " + str(planes) +
                           "); one NIC port per plane");
  if (hosts < 2) return reject(why, "hosts: need at least 2 hosts (got " + str(hosts) + ")");
  if (t0_down == 0) return reject(why, "t0_down: must be at least 1 host port per T0");
  if (hosts % t0_down != 0) {
    const uint64_t lo = uint64_t{hosts} / t0_down * t0_down;
    return reject(why, "hosts: " + str(hosts) + " is not a multiple of t0_down (" + str(t0_down) +
                           "); every T0 is full: use " + (lo ? str(lo) + " or " : std::string()) +
                           str(lo + t0_down) + " hosts, or change t0_down");
  }
  if (t1_count == 0) return reject(why, "t1_count: must be at least 1");
  if (t0_up == 0) return reject(why, "t0_up: must be at least 1 uplink per T0");
  if (t0_up % t1_count != 0)
    return reject(why, "t0_up: " + str(t0_up) + " is not a multiple of t1_count (" + str(t1_count) +
                           "); each T0 spreads its uplinks evenly over the T1s: set t0_up to a multiple "
                           "of t1_count (parallel links) or t1_count to a divisor of t0_up");
  if (uint64_t{t0_down} + t0_up > kMaxRadix)
    return reject(why, "t0_down + t0_up: a T0 would need " + str(uint64_t{t0_down} + t0_up) +
                           " ports; at most " + str(kMaxRadix) + " (lower t0_down or t0_up)");
  if (host_link_bps == 0) return reject(why, "host_link_bps: must be > 0 (e.g. 100000000000 for 100G)");
  if (link_delay < Duration{}) return reject(why, "link_delay: must be >= 0");
  if (switch_latency < Duration{}) return reject(why, "switch_latency: must be >= 0");
  if (base_rtt <= Duration{}) return reject(why, "base_rtt: must be > 0 (it sizes buffers: e.g. 10us)");
  if (reconverge_after < Duration{}) return reject(why, "reconverge_after: must be >= 0 (0 = static routes)");
  if (reconverge_after > Duration{} && routing != Routing::ecmp)
    return reject(why, "reconverge_after: only the ECMP baseline reconverges (SRv6 routes are static, "
                       "reference 2.3); set it to 0 or routing to ecmp");

  // Fat-tree pods and core.
  const uint32_t t0s = hosts / t0_down;
  if (three) {
    if (pods != 0 && t0s % pods != 0)
      return reject(why, "pods: the " + str(t0s) + " T0s (hosts / t0_down) do not split into " + str(pods) +
                             " equal pods; choose pods dividing " + str(t0s));
    if (pods == 0 && t0s % t1_count != 0)
      return reject(why, "pods: derived as T0s / t1_count, but " + str(t0s) + " T0s (hosts / t0_down) are "
                             "not a multiple of t1_count (" + str(t1_count) + "); set pods explicitly or "
                             "change hosts");
  }
  const TopologyShape s = compute_shape(*this);
  if (three) {
    if (s.pods == 0 || s.t0_per_pod == 0)
      return reject(why, "pods: need at least one T0 per pod (" + str(t0s) + " T0s)");
    if (t2_count != 0 && t2_count % t1_count != 0)
      return reject(why, "t2_count: " + str(t2_count) + " is not a multiple of t1_count (" + str(t1_count) +
                             "); the core splits into one group per T1 position");
    if (s.t2_per_group == 0 || s.t1_up % s.t2_per_group != 0)
      return reject(why, "t2_count: each T1 has " + str(s.t1_up) + " uplinks, which must spread evenly over "
                             "its group of t2_count / t1_count = " + str(s.t2_per_group) +
                             " T2s; choose t2_count = t1_count x a divisor of " + str(s.t1_up));
    if (s.t2_ports > kMaxRadix)
      return reject(why, "pods: a T2 would need " + str(s.t2_ports) + " ports; at most " + str(kMaxRadix) +
                             " (fewer pods, or more T2s via t2_count)");
  }
  if (uint64_t{s.t1_down} + s.t1_up > kMaxRadix)
    return reject(why, "t1_count: a T1 would need " + str(uint64_t{s.t1_down} + s.t1_up) + " ports (" +
                           str(s.t0_per_pod) + " T0s x " + str(s.lanes0) + " links" +
                           (three ? std::string(" x 2 for uplinks") : std::string()) + "); at most " +
                           str(kMaxRadix) + (three ? " (more pods via `pods`)" : " (fewer hosts or more T0 ports)"));

  if (routing == Routing::srv6) {
    // Every uSID index must fit its 11-bit field (usid.hpp).
    if (s.t0_count - 1 > usid::kMaxIndex)
      return reject(why, "hosts: " + str(s.t0_count) + " T0s per plane exceed the SRv6 uSID index space (" +
                             str(usid::kMaxIndex + 1) + "); fewer hosts, larger t0_down, or routing=ecmp");
    if (uint64_t{s.pods} * t0_up - 1 > usid::kMaxIndex)
      return reject(why, "pods: pods x t0_up = " + str(uint64_t{s.pods} * t0_up) +
                             " T1 uSIDs exceed the SRv6 index space (" + str(usid::kMaxIndex + 1) + ")");
    if (three && uint64_t{s.t1_per_pod} * s.t1_up - 1 > usid::kMaxIndex)
      return reject(why, "t1_count: t1_count x T1 uplinks = " + str(uint64_t{s.t1_per_pod} * s.t1_up) +
                             " T2 uSIDs exceed the SRv6 index space (" + str(usid::kMaxIndex + 1) + ")");
  }

  // Queues, checked with their defaults resolved for both port speeds.
  if (queue.trimmed_weight_pct > 100)
    return reject(why, "queue.trimmed_weight_pct: a share in percent, 0..100 (got " +
                           str(queue.trimmed_weight_pct) + ")");
  if (queue.control_bytes == 0) return reject(why, "queue.control_bytes: must be > 0");
  if (queue.trimming && queue.trimmed_bytes == 0)
    return reject(why, "queue.trimmed_bytes: must be > 0 with trimming on");
  for (const uint64_t bps : {s.host_bps, s.fabric_bps}) {
    const PortParams p = PortParams::resolve(queue, bps, base_rtt, false);
    if (p.data_bytes < kFullPacketBytes)
      return reject(why, "queue.data_bytes: " + str(p.data_bytes) + " bytes (" +
                             (queue.data_bytes ? std::string("as set") : "one BDP at base_rtt") +
                             ") cannot hold one full-size packet (" + str(kFullPacketBytes) +
                             " B); raise queue.data_bytes or base_rtt");
    if (p.ecn_kmin_bytes > p.ecn_kmax_bytes)
      return reject(why, "queue.ecn_kmin_bytes: " + str(p.ecn_kmin_bytes) + " is above ecn_kmax_bytes (" +
                             str(p.ecn_kmax_bytes) + "); set kmin <= kmax");
    if (queue.pfc && p.pfc_xon_bytes > p.pfc_xoff_bytes)
      return reject(why, "queue.pfc_xon_bytes: " + str(p.pfc_xon_bytes) + " is above pfc_xoff_bytes (" +
                             str(p.pfc_xoff_bytes) + "); set xon <= xoff");
  }
  return {};
}

}  // namespace mrc::sim
