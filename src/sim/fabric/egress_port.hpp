// SPDX-License-Identifier: BSD-2-Clause
// EgressPort: a switch output: three class queues and one serializer.
//
// Scheduling (reference 3.9, 5.8): control (SACK/NACK/ACK) is served with
// strict priority; trimmed headers and data share the rest by weighted
// deficit round robin (trimmed_weight_pct of the bytes to trimmed headers
// while both are backlogged). Admission: the data class is drop-tail at
// data_bytes; a trimmable data packet that does not fit is trimmed to its
// headers and admitted to the trimmed class instead (TRIMMED_LASTHOP when the
// port faces a host). Data packets are ECN-marked at enqueue with a
// probability rising linearly from 0 at ecn_kmin_bytes to 1 at ecn_kmax_bytes
// of data-class occupancy (RED-like, from the port's own seeded stream), on
// host-facing ports too unless ecn_last_hop is cleared. With PFC the data class is
// lossless: above pfc_xoff_bytes the sender behind each ingress that adds data
// is PAUSEd, and RESUMEd once the queue is back at pfc_xon_bytes.
//
// The serializer is lazy: a packet reaching an idle port goes straight onto
// the wire without an event. A busy port with packets waiting starts the next
// one when its current transmission ends, but without PFC it does not need an
// event of its own for that: everything that could change its choice (an
// arrival, a change of the link) reaches it through a call that first lets it
// catch up to now (catch_up: start, at the times they would have started,
// the packets whose turn came since), and the packet it transmitted last is
// on its pipe, whose delivery calls catch_up too, at most one propagation
// delay after the turn of the next one. So a switch hop costs one event (the
// pipe's) however busy the port; a third of all events were these ports'.
// Only if that packet did not make it onto the pipe (gray loss) does the port
// schedule an event for the end of its transmission. With PFC a port sends
// PAUSE and RESUME frames at the moment its queue crosses the thresholds, so
// it keeps one pending event at the end of each transmission instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric_stats.hpp"
#include "sim/fabric/topology.hpp"
#include "util/ring.hpp"

namespace mrc::sim {

class Pipe;

/// A port's queue settings with every default resolved.
struct PortParams {
  uint64_t data_bytes = 0;
  uint64_t trimmed_bytes = 0;
  uint64_t control_bytes = 0;
  bool ecn = true;                 ///< marking on (off on host-facing ports when ecn_last_hop is cleared)
  uint64_t ecn_kmin_bytes = 0;
  uint64_t ecn_kmax_bytes = 0;
  bool ecn_at_dequeue = false;     ///< QueueConfig::ecn_at_dequeue
  bool trimming = true;
  bool last_hop = false;           ///< the port faces a host
  uint32_t trimmed_weight_pct = 25;
  bool pfc = false;
  uint64_t pfc_xoff_bytes = 0;
  uint64_t pfc_xon_bytes = 0;

  /// Resolves `q`'s zero defaults for a port of `rate_bps` (one BDP at
  /// `base_rtt` for the data class; ECN 20%/80%, PFC 70%/50% of it).
  static PortParams resolve(const QueueConfig& q, uint64_t rate_bps, Duration base_rtt, bool faces_host);
};

/// Where an egress port sends PFC frames: the switch that owns it knows which
/// sender sits behind each of its ingress ports.
class PfcPeer {
 public:
  virtual ~PfcPeer() = default;
  /// PAUSE (`pause`) or RESUME the data class of whatever sends into `in_port`.
  virtual void pfc_signal(uint32_t in_port, bool pause) = 0;
};

class alignas(64) EgressPort final : public Node {
 public:
  /// Event tags: the serializer's, and PFC frames arriving from downstream.
  /// (The serializer's events carry the address of the queue entry they will
  /// likely pop, for the simulator loop to prefetch; any tag other than
  /// kTagPause and kTagResume is a send.)
  static constexpr uint64_t kTagSend = 0;
  static constexpr uint64_t kTagPause = 1;
  static constexpr uint64_t kTagResume = 2;

  EgressPort() = default;
  /// `out` is the pipe this port transmits into. `pfc_peer` and `radix` (the
  /// owning switch's port count) are needed only with prm.pfc. Takes the
  /// port's entity id for event keys (Simulator::new_entity).
  void init(FabricContext* ctx, Pipe* out, const PortParams& prm, uint64_t rng_stream,
            PfcPeer* pfc_peer = nullptr, uint32_t radix = 0);

  /// A packet from ingress `in_port` is routed here. The port owns it from
  /// now on: it queues, transmits, trims or drops it.
  void enqueue(Packet* p, uint32_t in_port);
  /// Starts, at the times they were due, the transmissions whose turn came
  /// by `now` (a port without PFC; a no-op with it). The fabric calls it
  /// before it reads or changes anything the port's past choices depend on.
  void catch_up(Time now);
  /// catch_up() where the queue may be empty, which makes it a no-op: the
  /// test inline, the call only for a queue (a pipe asks after every
  /// delivery, and most ports it asks are idle).
  void catch_up_if_queued(Time now) {
    if (packets_ != 0) catch_up(now);
  }
  /// Drops every queued packet (the link or the switch died), counting
  /// drops_link_down; RESUMEs any senders this port paused. Returns how many.
  uint64_t flush();

  uint64_t queued_bytes(Class c) const { return bytes_[static_cast<int>(c)]; }
  uint64_t queued_bytes() const { return bytes_[0] + bytes_[1] + bytes_[2]; }
  size_t queued_packets(Class c) const { return q_[static_cast<int>(c)].size(); }
  /// PAUSE frames in force against this port's data class.
  bool paused() const { return paused_ > 0; }
  bool xoff() const { return xoff_; }
  const PortParams& params() const { return prm_; }
  Pipe* out() const { return out_; }

  void on_event(Simulator& sim, uint64_t tag) override;
  void receive(Simulator& sim, Packet* p, int in_port) override;
  /// A send: the pipe it transmits into.
  void prefetch(uint64_t tag) const override;

 private:
  static constexpr int kControl = 0, kTrimmed = 1, kData = 2;
  struct Queued {
    Packet* p = nullptr;
    uint32_t bytes = 0;  ///< wire bytes, so dequeuing does not touch the packet
  };
  bool eligible() const {
    return !q_[kControl].empty() || !q_[kTrimmed].empty() || (!q_[kData].empty() && paused_ == 0);
  }
  void kick();
  void send_next();
  uint64_t send_tag() const;
  Queued select();
  Queued pop(int c);
  /// Starts p's transmission at `start` (<= now).
  void transmit(Packet* p, uint32_t bytes, Time start);
  /// An event at the end of the current transmission, unless one is pending.
  void schedule_send();
  void maybe_mark(Packet* p);
  void pfc_on_enqueue(uint32_t in_port);
  void pfc_resume_all();
  void drop(Packet* p, uint64_t& counter);

  // First cache line: what an enqueue onto an idle port reads.
  FabricContext* ctx_ = nullptr;
  Pipe* out_ = nullptr;
  Time busy_until_;
  uint64_t bytes_[3] = {0, 0, 0};
  uint32_t packets_ = 0;  ///< queued, all classes
  bool ev_pending_ = false;
  bool lazy_ = true;     ///< no events of its own while driven_ (no PFC)
  bool driven_ = false;  ///< the last packet transmitted is on the pipe
  bool pfc_ = false;
  bool ecn_ = false;
  bool trimming_ = false;
  // Second: admission and marking.
  uint64_t cap_[3] = {0, 0, 0};
  uint64_t ecn_kmin_ = 0;
  uint64_t ecn_kmax_ = 0;
  double ecn_inv_range_ = 0;
  uint32_t paused_ = 0;  ///< PAUSEs in force against this port
  bool last_hop_ = false;
  bool xoff_ = false;    ///< this port has paused its senders
  // The queues and the WDRR state (trimmed: index 0, data: 1).
  Ring<Queued> q_[3];
  int turn_ = 1;
  int64_t deficit_[2] = {0, 0};
  int64_t quantum_[2] = {0, 0};
  Prng rng_;
  EventKeys keys_;  ///< the serializer's own events
  // Cold.
  PortParams prm_;
  PfcPeer* pfc_peer_ = nullptr;
  std::vector<uint64_t> paused_in_;  ///< bitset over ingress ports this port paused
};

}  // namespace mrc::sim
