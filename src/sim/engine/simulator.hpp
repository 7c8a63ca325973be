// SPDX-License-Identifier: BSD-2-Clause
// Simulator: one discrete-event simulation instance.
//
// No globals: several simulations may run in one process (tests, sweeps).
// The clock is integer picoseconds; every random stream derives from the
// seed, so a configuration and a seed reproduce a run byte for byte.
//
// Elements (links, switch ports, NICs, workloads) derive from Node and keep
// at most one pending event each where they can (a busy link schedules only
// its next departure), which keeps the queue small and the loop fast.
//
// Events at the same picosecond run in the order of their keys
// (event_key: an entity id, then that entity's own count), never in the
// order they were scheduled in. Every entity takes its id from new_entity()
// while the model is built, and counts its own events (EventKeys), so the
// order depends only on the model and the seed: a run split into partitions
// that schedule in another interleaving runs its events in the same order.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/event_queue.hpp"
#include "sim/fabric/packet.hpp"
#include "util/pool.hpp"
#include "util/prng.hpp"
#include "util/time.hpp"

namespace mrc::sim {

class Simulator;

/// Anything that receives events or packets.
class Node {
 public:
  virtual ~Node() = default;
  /// A scheduled event for this node fired; `tag` is what schedule() was given.
  virtual void on_event(Simulator& sim, uint64_t tag) = 0;
  /// A packet arrived on `in_port` (numbering is the node's own). The node
  /// owns the packet from now on: forward it or release it to the pool.
  virtual void receive(Simulator& sim, Packet* p, int in_port) = 0;
  /// Called one event before on_event(tag), with the node's first two cache
  /// lines (and what `tag` may point at) already being loaded: may prefetch
  /// what that on_event will touch next (the egress port a packet will be
  /// routed to, ...). Must not change any state: the event before may still
  /// change the node, so whatever it reads is only a hint.
  virtual void prefetch(uint64_t tag) const { (void)tag; }
  /// A run across processes (ParallelEngine::set_ranks): an event for this
  /// node, with `tag`, leaves partition `from` for a partition another
  /// process runs. Appends to `out` what import_tag() needs to rebuild the
  /// tag there. By default the tag itself (8 bytes); a node whose tag
  /// points at something (a pipe's packet) writes what it points at, and
  /// releases it to `from`.
  virtual void export_tag(Simulator& from, uint64_t tag, std::vector<uint8_t>& out);
  /// On the receiving process: rebuilds the tag export_tag() wrote, for an
  /// event in partition `to`, reading from `in` and advancing it past what
  /// it read.
  virtual uint64_t import_tag(Simulator& to, const uint8_t*& in);
};

class Simulator {
 public:
  explicit Simulator(uint64_t seed) : rng_(seed) {}
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  Time now() const { return now_; }
  /// Runs `node->on_event(tag)` at `at` (>= now(); earlier is run at
  /// now()). `key` (event_key, usually EventKeys::next() of the entity
  /// scheduling) orders it among events at the same time.
  void schedule(Time at, Node* node, uint64_t tag, uint64_t key) {
    queue_.push(at < now_ ? now_ : at, node, tag, key);
  }
  /// A fresh entity id, for event keys. The model's builders take them in a
  /// fixed order (construction order), so ids, like streams, depend only on
  /// the configuration. Ids above 2^28 - 1 wrap (event_key).
  uint32_t new_entity() { return ids_ ? ids_->new_entity() : next_entity_++; }
  /// Takes entity ids from `owner` from now on (not owned; it must outlive
  /// this one): the Simulators of a partitioned run (ParallelEngine) number
  /// their entities from one count, in construction order, so an entity has
  /// the same id, hence the same event keys, however the model is split.
  void share_entities(Simulator* owner) { ids_ = owner; }
  /// EventKeys for a fresh entity.
  EventKeys new_keys() { return EventKeys(new_entity()); }
  /// Processes events up to and including `end`; the clock is left at `end`
  /// (or at the last event if the queue empties first). Returns false if the
  /// queue emptied.
  bool run_until(Time end);
  /// Stops run_until() after the current event.
  void stop() { stop_ = true; }
  bool stopped() const { return stop_; }

  uint64_t events_processed() const { return events_; }
  /// The key of the event running (or of the last one run): with now(), it
  /// places whatever that event records in the order a sequential run
  /// would record it (records of several partitions merged by it).
  uint64_t current_key() const { return cur_key_; }
  /// Moves the clock forward to `t` without running anything: for a
  /// ParallelEngine at a window boundary, before events global to every
  /// partition run at `t`. An event pending before `t`, or a `t` before
  /// now(), is a programming error (aborts with a message).
  void advance_to(Time t);
  /// Calls f(const Event&) for every pending event, in no particular order,
  /// without running or removing any: for a teardown to release what the
  /// events still hold (a packet on its way between partitions).
  template <class F>
  void for_each_pending(F&& f) const {
    queue_.for_each(f);
  }
  /// Time of the earliest pending event, or Time::never() if none.
  Time next_event_time() const { return queue_.empty() ? Time::never() : queue_.top().at; }
  size_t pending_events() const { return queue_.size(); }

  /// An independent random stream for element `id` (same seed + id, same stream).
  Prng rng_for(uint64_t id) const { return rng_.derive(id); }

  /// Packet pool: acquire() a Packet, release() it when it leaves the fabric.
  Packet* new_packet() { return packets_.acquire(); }
  void free_packet(Packet* p) {
    if (homes_) {
      const uint32_t h = p->src < homes_->size() ? (*homes_)[p->src] : self_;
      if (h != self_) {
        packets_.release_into(away_[h], p);
        return;
      }
    }
    packets_.release(p);
  }
  size_t live_packets() const { return packets_.live(); }
  /// Takes the packets released to `other`'s pool into this one's free
  /// list: in a partitioned run one partition allocates (the NICs') and the
  /// others release what their switches drop. Neither may be running.
  void take_free_packets(Simulator& other) { packets_.take_free(other.packets_); }
  /// A partitioned run where every partition's NICs allocate packets: this
  /// Simulator is partition `self`, and the packet of source host h came
  /// from partition (*home)[h] (not owned; it must outlive this one). A
  /// packet released here that came from elsewhere is set aside for its
  /// home until return_packets().
  void set_packet_homes(const std::vector<uint32_t>* home, uint32_t self, uint32_t partitions) {
    homes_ = home;
    self_ = self;
    away_.assign(partitions, {});
  }
  /// Hands the packets set aside here back to their home partitions'
  /// pools (parts[i] is partition i), in O(partitions). No partition may be
  /// running.
  void return_packets(const std::vector<Simulator*>& parts) {
    for (size_t i = 0; i < away_.size() && i < parts.size(); ++i)
      if (away_[i].count) parts[i]->packets_.take_back(away_[i]);
  }

 private:
  Time now_ = Time::zero();
  EventQueue queue_;
  Prng rng_;
  ObjectPool<Packet, 1024> packets_;
  const std::vector<uint32_t>* homes_ = nullptr;  ///< set_packet_homes
  uint32_t self_ = 0;
  std::vector<ObjectPool<Packet, 1024>::Chain> away_;  ///< per home partition
  uint64_t events_ = 0;
  uint64_t cur_key_ = 0;
  uint32_t next_entity_ = 1;
  Simulator* ids_ = nullptr;  ///< share_entities
  bool stop_ = false;
};

}  // namespace mrc::sim
