// SPDX-License-Identifier: BSD-2-Clause
// Topology configuration for mrc-sim fabrics, validated up front.
//
// Wiring (every index below is per plane; planes are disjoint copies):
//
//   clos2_multiplane / fattree2 (2 tiers). Host h's port p goes to T0
//     h / t0_down of plane p, on its downlink h % t0_down. T0 uplink u
//     (0 <= u < t0_up) goes to T1 u / lanes0 of the plane, where lanes0 =
//     t0_up / t1_count parallel links join each T0-T1 pair; u % lanes0 is the
//     lane. T0 ports: [0, t0_down) hosts, then the t0_up uplinks in order.
//     T1 port t * lanes0 + lane goes down to T0 t.
//
//   fattree3 (3 tiers, `planes` disjoint copies with one NIC port in each,
//     as clos2; a k-ary fat tree per plane when t0_down = t0_up =
//     t1_count = k/2 and pods, t2_count are derived). A pod is t0_per_pod T0s
//     and t1_count T1s, wired as the 2-tier case inside the pod.
//     t0_per_pod = t1_count unless `pods` is set (then T0s / pods). Each T1
//     has as many uplinks as downlinks (t1_up = t1_down = t0_per_pod *
//     lanes0). Core: t2_count T2s (default t1_count * t1_up) in t1_count
//     groups of g = t2_count / t1_count; T1 index j of every pod connects only
//     to group j: its uplink k goes to T2 j*g + k / lanes1, lanes1 = t1_up / g
//     parallel links per pair. T2 port pod * lanes1 + lane goes down to that
//     pod's T1 j. T1 indexes are global within the plane: pod * t1_count + j.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.hpp"
#include "util/time.hpp"

namespace mrc::sim {

/// The sizes a valid TopologyConfig resolves to. Counts are per plane unless
/// named otherwise.
struct TopologyShape {
  bool three_tier = false;
  uint32_t planes = 1;
  uint32_t hosts = 0;
  uint32_t t0_down = 0;       ///< host ports per T0
  uint32_t t0_up = 0;         ///< uplinks per T0
  uint32_t t0_count = 0;      ///< T0s
  uint32_t pods = 1;          ///< 1 in 2-tier fabrics
  uint32_t t0_per_pod = 0;    ///< = t0_count in 2-tier fabrics
  uint32_t t1_per_pod = 0;    ///< = config t1_count
  uint32_t t1_count = 0;      ///< T1s = pods * t1_per_pod
  uint32_t lanes0 = 1;        ///< parallel links per T0-T1 pair
  uint32_t t1_down = 0;       ///< T1 ports towards T0s = t0_per_pod * lanes0
  uint32_t t1_up = 0;         ///< T1 ports towards T2s (3-tier only)
  uint32_t t2_count = 0;      ///< 3-tier only
  uint32_t t2_per_group = 0;  ///< T2s that T1 index j of each pod reaches
  uint32_t lanes1 = 1;        ///< parallel links per T1-T2 pair
  uint32_t t2_ports = 0;      ///< = pods * lanes1
  uint64_t host_bps = 0;
  uint64_t fabric_bps = 0;

  uint32_t switches_per_plane() const { return t0_count + t1_count + t2_count; }
  uint32_t switches() const { return planes * switches_per_plane(); }
  /// Bidirectional links: host-T0, T0-T1 and T1-T2, over every plane.
  uint64_t links() const {
    return uint64_t{planes} * hosts + uint64_t{planes} * t0_count * t0_up + uint64_t{planes} * t1_count * t1_up;
  }
};

enum class TopologyKind : uint8_t {
  clos2_multiplane,  ///< P planes; each plane a 2-tier leaf-spine (T0/T1); one NIC port per plane
  fattree2,          ///< single plane, 2-tier leaf-spine
  fattree3,          ///< P planes, each a 3-tier fat tree (T0/T1 pods + T2 core); one NIC port per plane
};

enum class Routing : uint8_t {
  srv6,  ///< static SRv6 uSID source routing (uN), the EV picks the path
  ecmp,  ///< switches hash the 5-tuple (incl. the EV in the UDP source port)
};

/// Egress queue settings of every switch port (reference 3.9, 5.8).
struct QueueConfig {
  uint64_t data_bytes = 0;        ///< data class buffer; 0 = 1 BDP of a port at base_rtt
  uint64_t ecn_kmin_bytes = 0;    ///< 0 = 20% of data_bytes
  uint64_t ecn_kmax_bytes = 0;    ///< 0 = 80% of data_bytes
  /// Mark on ports facing hosts too. On by default: without it the only
  /// signal of an incast is trimming at the last hop, and a 127 -> 1 incast
  /// at 400 Gb/s trims most of its data packets (109,620 of 130,048; with
  /// marking 6,413) and runs the receiver's link at 92.5 % instead of 95.4 %
  /// of line rate. Clear it to model switches that do not mark last hops.
  bool ecn_last_hop = true;
  /// Mark when a data packet leaves the queue (against the queue it leaves
  /// behind) instead of when it joins it: the congestion signal reaches the
  /// receiver a queueing delay sooner.
  bool ecn_at_dequeue = false;
  bool trimming = true;           ///< trim data that does not fit instead of dropping it
  /// WDRR share of the trimmed-header class vs data. MRC puts trimmed
  /// headers in its high-priority class (reference 3.9); UEC's example is a
  /// 25% share, with which a 64-to-1 incast fills and drops this class and
  /// its NACKs wait tens of microseconds (docs/congestion-control.md).
  uint32_t trimmed_weight_pct = 75;
  uint64_t trimmed_bytes = 128 * 1024;  ///< trimmed-header class buffer
  uint64_t control_bytes = 256 * 1024; ///< control class buffer
  bool pfc = false;               ///< lossless data class with PAUSE (RoCE baseline)
  uint64_t pfc_xoff_bytes = 0;    ///< 0 = 70% of data_bytes
  uint64_t pfc_xon_bytes = 0;     ///< 0 = 50% of data_bytes
};

struct TopologyConfig {
  TopologyKind kind = TopologyKind::clos2_multiplane;
  Routing routing = Routing::srv6;
  uint32_t planes = 8;            ///< clos2_multiplane and fattree3; fattree2 has 1
  uint32_t hosts = 64;            ///< NICs
  uint32_t t0_down = 16;          ///< host-facing ports per T0
  uint32_t t0_up = 16;            ///< uplinks per T0 (oversubscription = t0_down / t0_up)
  uint32_t t1_count = 16;         ///< T1 switches per plane (2-tier) or per pod (3-tier)
  uint32_t pods = 0;              ///< fattree3: number of pods (0 = derived)
  uint32_t t2_count = 0;          ///< fattree3: core switches (0 = derived)
  uint64_t host_link_bps = 100'000'000'000ull;   ///< NIC port / NIC-T0 link rate
  uint64_t fabric_link_bps = 0;                  ///< T0-T1 (and T1-T2) rate; 0 = host_link_bps
  Duration link_delay = Duration::ns(500);       ///< propagation per link
  Duration switch_latency = Duration::ns(500);   ///< per switch traversal
  Duration base_rtt = Duration::us(10);          ///< used to size buffers and CC defaults
  QueueConfig queue;
  /// Optional: routing reconverges D after a failure (ECMP baseline with BGP);
  /// zero = static routes forever (production MRC, reference 2.3).
  Duration reconverge_after = Duration{};

  /// Checks the whole configuration; the message names the field and the fix.
  Status validate(std::string* why) const;
  /// Hosts under one T0.
  uint32_t hosts_per_t0() const { return t0_down; }
  /// T0 switches per plane.
  uint32_t t0_count() const { return (hosts + t0_down - 1) / t0_down; }
  uint32_t num_planes() const { return kind == TopologyKind::fattree2 ? 1 : planes; }
  /// Derived sizes (see the wiring above). Meaningful only for a
  /// configuration that passed validate().
  TopologyShape shape() const;
};

/// Identifies a link (both directions) for failures and statistics.
struct LinkRef {
  enum class Tier : uint8_t { host_t0, t0_t1, t1_t2 } tier = Tier::host_t0;
  uint32_t plane = 0;
  uint32_t a = 0;     ///< lower endpoint: host index (host_t0), T0 index (t0_t1), T1 index (t1_t2)
  uint32_t b = 0;     ///< upper endpoint: ignored for host_t0 (its T0 is derived); T1 index; T2 index
  uint32_t lane = 0;  ///< which of the parallel links between a and b (TopologyShape::lanes0 / lanes1)
};

/// Identifies a switch. T1 indexes are global within the plane
/// (pod * t1_count + j in a 3-tier fat tree).
struct SwitchRef {
  enum class Tier : uint8_t { t0, t1, t2 } tier = Tier::t1;
  uint32_t plane = 0;
  uint32_t index = 0;
};

}  // namespace mrc::sim
