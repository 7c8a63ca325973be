// SPDX-License-Identifier: BSD-2-Clause
// Fabric: the simulated network between NICs: links, switches, queues,
// forwarding, and failures. Hosts attach as Nodes; everything else lives here.
//
// Contract with a NIC (sim/host/nic.hpp):
//  - the NIC serializes a packet on its port itself, then calls inject() when
//    the last bit has left; the fabric owns the packet from then on and
//    eventually either delivers it (attached NIC's receive(sim, p, plane)) or
//    frees it (drop, dead link), counting why;
//  - before inject() the NIC calls set_route() so the packet carries its SRv6
//    uSID carrier (or ECMP flow hash) for its EV;
//  - make_evs() builds the EV set for a QP so that in SRv6 mode each EV names a
//    real path (plane + T1 choice), in ECMP mode a random entropy value;
//  - with PFC (queue.pfc) the NIC checks host_port_paused() before starting a
//    data packet on a port; when a paused port resumes, the fabric calls the
//    NIC's on_event(sim, kUnpauseTag | plane).
//  - the fabric does not call the NIC when a port's carrier changes
//    (host_port_up()); whoever changes links tells the NIC.
//
// Timing of one hop: a packet whose last bit leaves a sender at t reaches the
// next switch at t + link_delay + switch_latency (store and forward, then the
// traversal) and is enqueued at its egress port, which serializes it at the
// link's rate; the last hop into a NIC adds link_delay only.
//
// SRv6 EV values (make_evs, ev_path): a compact 32-bit EV, bits from the top:
//   [plane:5][copy:rest][t1_uplink:w1][t0_uplink:w0]
// w0 = bits to hold t0_up - 1, w1 = bits to hold the T1 uplink count - 1 (0
// in 2-tier fabrics). t0_uplink picks the T1 (t0_uplink / lanes0) and the
// parallel link; t1_uplink picks the T2 in a 3-tier fat tree. `copy` tells
// apart EVs that name the same physical path. set_route() reads the uplink
// fields modulo their ranges, so any value names some path.
// The uSID encoding is described in sim/fabric/usid.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric_stats.hpp"
#include "sim/fabric/topology.hpp"
#include "util/result.hpp"

namespace mrc::sim {

class Pipe;
class ParallelEngine;

/// How a parallel run splits the fabric among partitions (each a Simulator
/// driven by one ParallelEngine): switches as `sw` says, each host's NIC
/// side (the pipes its NIC transmits into, PFC frames towards it) as `host`
/// says (empty: partition 0). Links whose ends are in different partitions
/// carry their packets through the engine (Pipe::set_sender).
struct FabricPartitions {
  std::vector<Simulator*> sims;  ///< one per partition (not owned; they outlive the fabric)
  ParallelEngine* engine = nullptr;
  std::vector<uint32_t> sw;      ///< partition of each switch, in switch order (PartitionPlan::sw)
  std::vector<uint32_t> host;    ///< partition of each host (PartitionPlan::host), or empty
};

/// Bit set in the event tag the fabric sends a NIC when one of its ports is
/// resumed after a PFC pause: on_event(sim, kUnpauseTag | plane).
inline constexpr uint64_t kUnpauseTag = uint64_t{1} << 61;

/// The physical path an SRv6 EV names from a given source (reference 4.3).
struct EvPath {
  uint32_t t0_uplink = 0;  ///< uplink of the source T0
  uint32_t t1 = 0;         ///< T1 it reaches (global index in the plane)
  uint32_t t1_uplink = 0;  ///< 3-tier: uplink of that T1
  uint32_t t2 = 0;         ///< 3-tier: T2 it reaches
};

/// One direction of a link: traffic that completed it, and the switch egress
/// port feeding it (none when a NIC feeds it: host link upwards).
struct LinkCounters {
  uint64_t packets = 0;
  uint64_t bytes = 0;         ///< wire bytes
  uint64_t queued_bytes = 0;  ///< now queued at the feeding port, all classes
  bool paused = false;        ///< PFC: the feeding port's data class is paused now
};

class Fabric {
 public:
  /// Builds the topology; `cfg` must have passed validate() (the constructor
  /// aborts with the validation message otherwise: use create() for
  /// configurations that come from users).
  Fabric(Simulator& sim, const TopologyConfig& cfg);
  /// A fabric split over `parts` (see FabricPartitions; sw must have one
  /// entry per switch, each below sims.size()): `sim` then runs only the
  /// fabric's own events (ECMP reconvergence), global to every partition
  /// (ParallelEngine's global Simulator), and numbers the elements' entities
  /// (Simulator::share_entities); each NIC attaches in its host's. Aborts
  /// with a message on a plan that does not fit the topology.
  ///
  /// Across processes (parts.engine with ParallelEngine::set_ranks called
  /// before): only the elements of this process's partitions are built:
  /// their switches with their ports, and the pipes whose sender or
  /// receiver is here (a cut link has its pipe at both ends). Another
  /// process's switch is a placeholder (its name and up state); every
  /// element takes its entity id and message-target index all the same, and
  /// every link's up state is kept, so ids, keys, targets and ECMP routes are
  /// those of one process. Failures act on what is built here (the owner
  /// does the rest); reading an element not built here aborts with a
  /// message naming it.
  Fabric(Simulator& sim, const TopologyConfig& cfg, const FabricPartitions& parts);
  /// Tag of the constructor below.
  struct LayoutOnly {};
  /// The fabric's shape and addressing without its switches, ports and
  /// links: a few hundred bytes, where building 8 planes x 131,072 hosts
  /// takes gigabytes and seconds. config(), shape(), hosts(), planes(),
  /// check(), name(), make_evs(), ev_path(), set_route() and
  /// max_one_way_latency() answer as on the built fabric; nothing else may
  /// be called on it. For checking a failure schedule and deriving sizes
  /// before the run builds its own. `cfg` must have passed validate()
  /// (aborts with the validation message otherwise).
  Fabric(Simulator& sim, const TopologyConfig& cfg, LayoutOnly);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  /// Validates `cfg` (message in `why`) and builds the fabric.
  static Result<std::unique_ptr<Fabric>> create(Simulator& sim, const TopologyConfig& cfg,
                                                std::string* why = nullptr);

  const TopologyConfig& config() const;
  const TopologyShape& shape() const;
  uint32_t hosts() const;
  uint32_t planes() const;
  /// Switches over all planes, and bidirectional links (host links included).
  uint32_t switch_count() const;
  uint64_t link_count() const;

  // ---- hosts
  /// Delivered packets for `host` go to nic->receive(sim, p, plane).
  void attach(uint32_t host, Node* nic);
  /// Rate of host's port on `plane` (its NIC-T0 link), after any degradation.
  uint64_t host_port_bps(uint32_t host, uint32_t plane) const;
  /// True if host's NIC-T0 link on `plane` is up (the NIC's carrier): the
  /// link is up and its T0 is up.
  bool host_port_up(uint32_t host, uint32_t plane) const;
  /// PFC: true while the T0 has host's port on `plane` paused; the NIC must
  /// not start a data packet on it. Always false without queue.pfc.
  bool host_port_paused(uint32_t host, uint32_t plane) const;
  /// For a NIC to read per packet without a lookup, both valid for the
  /// fabric's life: the pipe host's port on `plane` transmits into (its rate
  /// follows degradation; null if out of range), and the PFC PAUSE counts in
  /// force against host's ports, indexed by plane (nonzero = paused).
  const Pipe* host_uplink(uint32_t host, uint32_t plane) const;
  const uint32_t* host_pause_counts(uint32_t host) const;
  /// Fills p's forwarding state from (p.src, p.dst, p.plane, p.entropy): the
  /// SRv6 uSID carrier (srv6 = true, usid_pos = 0) or the ECMP flow hash.
  void set_route(Packet& p) const;
  /// The packet has left host p->src's NIC port p->plane at sim.now().
  /// Packets with an out-of-range src, dst or plane are dropped (no route).
  void inject(Packet* p);
  /// `per_plane` EVs on each plane from src towards dst, distinct values over
  /// the whole set, port = plane. SRv6: EV i of a plane takes T0 uplink
  /// (hence T1) and, in 3-tier, T1 uplink from shuffled cycles, so T1s (and
  /// T2s) are used evenly and the EV -> path map is fixed. ECMP: random
  /// distinct 16-bit values (at most 65,536 in all).
  std::vector<core::EvEntry> make_evs(uint32_t src, uint32_t dst, uint32_t per_plane, Prng& rng) const;
  /// SRv6: the path EV `ev` takes from host `src` (any plane: planes are
  /// wired alike). Meaningless under ECMP.
  EvPath ev_path(uint32_t src, uint32_t ev) const;
  /// One-way unloaded latency of a full-size (4096 B payload) packet on the
  /// longest path, NIC serialization included.
  Duration max_one_way_latency() const;

  // ---- failures (any time; take effect at sim.now())
  /// Checks a reference (e.g. from a failure script); the message says what is wrong.
  Status check(const LinkRef& l, std::string* why = nullptr) const;
  Status check(const SwitchRef& s, std::string* why = nullptr) const;
  /// The calls below abort on a reference check() rejects.
  void set_link_up(const LinkRef& l, bool up);      ///< both directions; down loses queued and in-flight packets
  void set_link_loss(const LinkRef& l, double p);   ///< both directions, random (gray) loss
  void set_link_rate(const LinkRef& l, uint64_t bps);  ///< both directions, degraded rate (> 0)
  void set_switch_up(const SwitchRef& s, bool up);  ///< a down switch drops everything, loses its queues
  /// Human-readable name of a link/switch for output ("p1:t0[3]-t1[7]").
  std::string name(const LinkRef& l) const;
  std::string name(const SwitchRef& s) const;

  // ---- observation
  /// Counters over the whole fabric (every partition's, added up; across
  /// processes, those of the partitions built here count).
  FabricStats stats() const;
  /// Counters of partition `p` alone (p < the partitions it was built with).
  FabricStats partition_stats(uint32_t p) const;
  /// Calls f(Node*) for every element that an event of another partition
  /// may target (every switch egress port, for PFC frames; every pipe that
  /// crosses partitions; the fabric itself, for PFC frames towards NICs),
  /// in an order that depends only on the configuration: the targets of a
  /// run across processes (ParallelEngine::register_target). Across
  /// processes, an element this process did not build is a null in its place.
  void for_each_message_target(const std::function<void(Node*)>& f);
  /// What this process built (see "Across processes" above): switches,
  /// switch ports (each an egress port and the pipe it feeds) and pipes
  /// outside them (hosts' uplinks, and the receiving side of a cut link
  /// whose sender is another process's). In one process: every switch and
  /// port, and an uplink per host and plane.
  struct Elements {
    uint32_t switches = 0;
    uint64_t ports = 0;
    uint64_t lone_pipes = 0;
  };
  Elements elements_built() const;
  /// Bytes queued in the data class of the busiest switch egress port, and
  /// its name. Reads every switch: across processes it aborts with a message.
  uint64_t max_queue_bytes(std::string* where = nullptr);
  /// Sum of bytes queued at every switch egress port (across processes, at
  /// those built here: the sum over the processes is the fabric's).
  uint64_t total_queued_bytes();
  /// Link `l` upwards (towards T1/T2) or downwards. Across processes the
  /// direction and the port feeding it must be built here (else aborts with
  /// a message naming them).
  LinkCounters link_counters(const LinkRef& l, bool upward);

  struct Impl;  // sim/fabric/fabric_impl.hpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace mrc::sim
