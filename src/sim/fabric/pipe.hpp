// SPDX-License-Identifier: BSD-2-Clause
// Pipe: one direction of a link.
//
// A pipe carries packets whose last bit has left the sender to the node at
// the far end after the propagation delay (plus the far switch's traversal
// latency, folded in here so a hop costs one event). In-flight packets sit in
// a FIFO; a busy pipe keeps exactly one pending event, for its head packet.
// Arrival times are monotonic because the sender serializes (a switch egress
// port or a NIC), so the FIFO never needs sorting. The FIFO is a list through
// the packets themselves (Packet::pipe_next and pipe_next_at, the next
// packet's arrival, in the first cache line; the pipe keeps the head's), and
// the event's tag is the head packet, which the simulator loop prefetches
// with the pipe: a delivery touches the pipe's first line and the packet,
// nothing else.
//
// A delivery's event is keyed (event_key) by the pipe's id and the ordinal
// of the packet it delivers (packets that entered the FIFO before it), so
// its order among events at the same time does not depend on who made the
// pipe schedule it (the sender's transmission or the previous delivery).
//
// The pipe also owns the link's physical state in its direction: rate (which
// the sender reads to serialize), alive (link up and both end switches up),
// and random gray loss from its own seeded stream.
//
// A pipe whose sender runs in another partition of a parallel run (a cut
// link, set_sender) has no FIFO: send() hands each packet to the engine as
// an event of the receiving partition, keyed by its ordinal as above, and
// each delivery is its own event. The two sides share no field that either
// writes while the other runs: the sender counts what it sent, the receiver
// what arrived, and a flush (at a window boundary, where nothing runs) marks
// what was sent by then as lost, which the deliveries then release. The
// port feeding it gets no catch-up from the deliveries (they run elsewhere):
// send() returns false, so it schedules its own transmissions.
#pragma once

#include <cstdint>

#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric_stats.hpp"

namespace mrc::sim {

class EgressPort;
class Switch;

class alignas(64) Pipe final : public Node {
 public:
  Pipe() = default;

  /// Sets rate and delay; `rng_stream` seeds the gray-loss stream (sim.rng_for).
  /// Takes the pipe's entity id for event keys (Simulator::new_entity).
  void init(FabricContext* ctx, uint64_t rate_bps, Duration delay, uint64_t rng_stream);
  /// The far end is switch `sw`, which sees the packet arrive on `in_port`.
  void connect_to_switch(Switch* sw, uint32_t in_port);
  /// The far end is NIC port `plane` of `host`; the NIC attaches later.
  void connect_to_host(uint32_t host, uint32_t plane);
  void attach_nic(Node* nic) { nic_ = nic; }
  /// The sender runs in context `tx` (its partition's); when that is not
  /// the context init() gave (the receiver's), the pipe crosses partitions
  /// and works as described above. Call after init(), before any send().
  void set_sender(FabricContext* tx);
  /// The pipe crosses partitions (set_sender).
  bool cut() const { return cut_; }
  /// The switch port that transmits into this pipe, if it is one that
  /// advances lazily (EgressPort::catch_up): each delivery, and any change
  /// of rate or loss, first lets it catch up to now.
  void set_feeder(EgressPort* port) { feeder_ = port; }
  /// The feeder's likely next queue entry, a prefetch hint (may be stale).
  void set_feeder_next(const void* entry) { feeder_next_ = entry; }

  bool alive() const { return alive_; }
  /// Marks the pipe alive or dead. Dying does not flush: call flush().
  void set_alive(bool a) { alive_ = a; }
  uint64_t rate_bps() const { return rate_bps_; }
  void set_rate(uint64_t bps);
  double loss() const { return loss_; }
  void set_loss(double p);
  /// Propagation delay, including the far switch's traversal latency.
  Duration delay() const { return delay_; }

  /// Time to serialize `bytes` at the current rate (exactly
  /// Duration::serialization, with a fast path for whole-picosecond bytes).
  Duration serialization(uint32_t bytes) const {
    return ps_per_byte_ ? Duration::ps(int64_t{bytes} * ps_per_byte_)
                        : Duration::serialization(bytes, rate_bps_);
  }

  /// The last bit of `p` leaves the sender at `done` (>= now): the packet is
  /// lost (dead pipe: drops_link_down; gray loss: drops_random) or arrives at
  /// the far end at done + delay(). Returns true in the second case (its
  /// delivery will run this pipe's event, which lets the feeder catch up),
  /// false for a cut pipe, whose deliveries run in another partition.
  bool send(Packet* p, Time done);
  /// Loses every packet in flight (the link or a switch at its end died),
  /// counting drops_link_down. Returns how many.
  uint64_t flush();

  /// Packets and wire bytes that completed this pipe. (in_flight(): of a
  /// pipe that is not cut.)
  uint64_t packets() const { return packets_; }
  uint64_t bytes() const { return bytes_; }
  size_t in_flight() const { return count_; }

  void on_event(Simulator& sim, uint64_t tag) override;
  void receive(Simulator& sim, Packet* p, int in_port) override;
  /// The head packet's next hop: the egress port and pipe its far switch
  /// will route it to.
  void prefetch(uint64_t tag) const override;
  /// A cut pipe whose receiver runs in another process: the packet (the
  /// tag) travels as its bytes and is released to the sender's pool;
  /// import_tag() takes a packet from the receiver's pool for it and counts
  /// it as sent on this side (what a flush here needs).
  void export_tag(Simulator& from, uint64_t tag, std::vector<uint8_t>& out) override;
  uint64_t import_tag(Simulator& to, const uint8_t*& in) override;

 private:
  void deliver(Packet* p);
  bool send_cut(Packet* p, Time done);
  void drop(FabricContext& c, Packet* p, uint64_t& counter);

  // Hot fields first, in one cache line: on_event and send read these.
  FabricContext* ctx_ = nullptr;
  Packet* head_ = nullptr;  ///< in flight, oldest first, linked by pipe_next
  Packet* tail_ = nullptr;
  Time head_at_;            ///< when head_ arrives
  Duration delay_;
  Switch* sw_ = nullptr;  ///< far end: a switch port, or (null) NIC port in_port_ of host_
  uint32_t in_port_ = 0;
  bool ev_pending_ = false;
  bool alive_ = true;
  // Second line (the simulator loop prefetches it too).
  uint32_t count_ = 0;
  EgressPort* feeder_ = nullptr;      ///< lazy port transmitting into this pipe
  const void* feeder_next_ = nullptr; ///< the queue entry it will likely send next
  double loss_ = 0;
  int64_t ps_per_byte_ = 0;  ///< 8e12 / rate when that is whole, else 0
  Time tail_at_;             ///< when tail_ arrives (checks the FIFO order)
  uint64_t packets_ = 0;
  uint64_t bytes_ = 0;
  uint64_t rate_bps_ = 0;
  Node* nic_ = nullptr;
  uint32_t host_ = 0;
  uint32_t id_ = 0;         ///< entity id (event keys)
  uint64_t head_seq_ = 0;   ///< ordinal of head_: packets that entered the FIFO before it
  Prng rng_;
  // A cut pipe (set_sender): the sender's side, then the receiver's.
  bool cut_ = false;
  FabricContext* tx_ = nullptr;  ///< the sender's context (ctx_ is the receiver's)
  uint64_t sent_ = 0;            ///< packets sent: the next one's ordinal
  uint64_t sent_cls_[3] = {0, 0, 0};
  alignas(64) uint64_t recv_ = 0;  ///< deliveries run (flushed ones too)
  uint64_t recv_cls_[3] = {0, 0, 0};  ///< delivered, and flushed, by class
  uint64_t flushed_upto_ = 0;    ///< deliveries before this ordinal were flushed
};

}  // namespace mrc::sim
