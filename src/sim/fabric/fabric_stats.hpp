// SPDX-License-Identifier: BSD-2-Clause
// FabricStats: fabric-wide counters, and FabricContext: what every fabric
// element (pipe, egress port, switch) shares.
#pragma once

#include <cstdint>

#include "util/time.hpp"

namespace mrc::sim {

class Simulator;
class Node;
class ParallelEngine;

/// Counters over the whole fabric.
struct FabricStats {
  uint64_t packets_forwarded = 0;   ///< packet-hops: one per completed link traversal, host links included
  uint64_t delivered = 0;           ///< packets handed to a destination NIC
  uint64_t drops_queue = 0;         ///< buffer full (no trimming, or control/trimmed class full)
  uint64_t drops_link_down = 0;     ///< sent into (or queued for, or in flight on) a dead link or switch
  uint64_t drops_random = 0;        ///< gray-failure loss
  uint64_t drops_no_route = 0;      ///< SRv6 uSID not in a switch's table; ECMP route withdrawn
  uint64_t trims = 0;               ///< every trim, last-hop trims included
  uint64_t trims_last_hop = 0;      ///< of `trims`, those on ports facing a host (TRIMMED_LASTHOP)
  uint64_t ecn_marks = 0;           ///< packets newly marked CE
  uint64_t pfc_pauses = 0;          ///< PAUSE frames sent (to a switch port or a NIC port)
  uint64_t peak_queue_bytes = 0;    ///< largest data-class occupancy any switch egress port reached
  /// Every drop above (queue, dead link, random loss, no route), by the
  /// class of the packet dropped, indexed by Packet::Class: control (ACKs,
  /// NACKs, CNPs, probes), trimmed headers, data.
  uint64_t drops_by_class[3] = {0, 0, 0};
  void count_drop(uint8_t cls) { ++drops_by_class[cls < 3 ? cls : 2]; }
  /// Adds `o`'s counters (peak_queue_bytes: the larger): the fabric's
  /// totals over the partitions of a parallel run.
  void add(const FabricStats& o);
};

/// Shared state of one fabric's elements. Tests of a single element build one
/// by hand; Fabric owns one for all of its elements, or one per partition of
/// a parallel run (each element uses its partition's).
struct FabricContext {
  Simulator* sim = nullptr;
  /// A parallel run: the engine that carries events to other partitions,
  /// and this context's partition. Null: one partition.
  ParallelEngine* engine = nullptr;
  uint32_t part = 0;
  FabricStats stats;
  /// Bytes queued right now over every class of every switch egress port.
  uint64_t queued_bytes = 0;
  /// PFC towards NICs: PAUSE/RESUME for host h, plane p is delivered as the
  /// event `pfc_host_tag(h, p, pause)` on this node after `pfc_delay`; so is
  /// one towards a switch port the sending process did not build
  /// (`pfc_port_tag`).
  Node* pfc_host_sink = nullptr;
  Duration pfc_delay;
  /// Set while the fabric is torn down: no more PFC frames are scheduled.
  bool closing = false;

  /// Runs node->on_event(tag) at `at`, keyed `key`, in partition `dst`:
  /// this context's queue, or another partition's through the engine (then
  /// `at` must be at least its lookahead after now).
  void post(uint32_t dst, Time at, Node* node, uint64_t tag, uint64_t key);
};

/// Event tag of a PFC frame towards a NIC port (see FabricContext).
inline constexpr uint64_t kPfcHostTagKind = uint64_t{1} << 60;
constexpr uint64_t pfc_host_tag(uint32_t host, uint32_t plane, bool pause) {
  return kPfcHostTagKind | (uint64_t{pause} << 48) | (uint64_t{host} << 8) | (plane & 0xFFu);
}
/// Event tag of a PFC frame towards switch egress port `global_port` (in
/// the fabric's numbering) that the sending process did not build (across
/// processes): delivered to the same node as above, which resolves the
/// port in the process that built it.
inline constexpr uint64_t kPfcPortTagKind = uint64_t{3} << 60;
constexpr uint64_t pfc_port_tag(uint32_t global_port, bool pause) {
  return kPfcPortTagKind | (uint64_t{pause} << 48) | global_port;
}

}  // namespace mrc::sim
