// SPDX-License-Identifier: BSD-2-Clause
// ParallelEngine: conservative synchronous windows over several Simulators,
// one thread each.
//
// Each partition is a Simulator of its own (queue, packet pool, clock) whose
// nodes touch nothing of the other partitions. An event a partition's node
// makes for another partition's node goes through send(), at least
// `lookahead` after the sender's now. The engine runs every partition up to
// a window's end (the earliest pending event of any partition plus the
// lookahead, exclusive: nothing sent during the window can fall inside it),
// then, on one thread at the barrier, moves the window's messages into their
// destination queues and finds the next window. Messages go to one outbox
// per (source, destination) pair, so a window costs at most one batch per
// pair. Where a message lands among the destination's own events is fixed by
// its key (event_key), not by when it was delivered: with keys that the
// entities compute alone (sim/engine/event_queue.hpp), a partitioned run
// executes every partition's events in the order the sequential engine
// would, and gives its results bit for bit.
//
// A message holds a Node pointer, which only threads of one process can
// follow; an engine across processes (MPI) would carry the target as an
// entity id and the payload as bytes, one exchange per window.
//
// Not covered: Simulator::stop() ends only its own partition's window (the
// engine runs until `end` or until every queue is empty), and nothing global
// (a failure plan, a sampler) runs between windows yet.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/simulator.hpp"

namespace mrc::sim {

class ParallelEngine {
 public:
  /// `parts`: one Simulator per partition (not owned; they must outlive the
  /// engine, and their nodes must not touch each other's). `lookahead`: the
  /// smallest delay of any send() (> 0; PartitionPlan::lookahead). A
  /// lookahead of 0 or no partition is a programming error (aborts with a
  /// message).
  ParallelEngine(std::vector<Simulator*> parts, Duration lookahead);

  uint32_t partitions() const { return static_cast<uint32_t>(parts_.size()); }
  Duration lookahead() const { return lookahead_; }

  /// Called by an event running in partition `src`: runs node->on_event(tag)
  /// at `at` in partition `dst`, keyed `key` (the sender's EventKeys). `at`
  /// must be at least the sender's now() + lookahead() (else the message
  /// could fall in a window already run: aborts with a message). Only the
  /// thread running `src` may call it during run_until().
  void send(uint32_t src, uint32_t dst, Time at, Node* node, uint64_t tag, uint64_t key);

  /// Runs every partition's events up to and including `end`, window by
  /// window, partition 0 on the calling thread and each other one on a
  /// thread of its own (one partition: the Simulator's own run_until).
  /// Every partition's clock is left at `end` (unless `end` is never).
  /// Returns false if every queue emptied.
  bool run_until(Time end);

  /// Windows run, and messages moved between partitions, since construction.
  uint64_t windows() const { return windows_; }
  uint64_t messages() const { return messages_; }

 private:
  struct Message {
    Time at;
    uint64_t key;
    Node* node;
    uint64_t tag;
  };
  /// At the barrier: every outbox into its destination's queue (sources in
  /// order), then the next window's end; false when there is none by `end`.
  bool next_window(Time end);

  std::vector<Simulator*> parts_;
  Duration lookahead_;
  std::vector<std::vector<Message>> out_;  ///< [src * partitions + dst]
  Time window_end_;
  uint64_t windows_ = 0;
  uint64_t messages_ = 0;
};

}  // namespace mrc::sim
