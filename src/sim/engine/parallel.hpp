// SPDX-License-Identifier: BSD-2-Clause
// ParallelEngine: conservative synchronous windows over several Simulators,
// run on one thread each or on fewer threads (set_threads).
//
// Each partition is a Simulator of its own (queue, packet pool, clock) whose
// nodes touch nothing of the other partitions. An event a partition's node
// makes for another partition's node goes through send(), at least
// `lookahead` after the sender's now. The engine runs every partition up to
// a window's end (the end of the cell of the lookahead grid, multiples of
// the lookahead from time 0, that holds the earliest pending event of any
// partition, exclusive: nothing sent during the window can fall inside it;
// cells, unlike that event, are the same however the model is split), then, on one thread at the barrier, moves the window's messages into their
// destination queues and finds the next window. Messages go to one outbox
// per (source, destination) pair, so a window costs at most one batch per
// pair. Where a message lands among the destination's own events is fixed by
// its key (event_key), not by when it was delivered: with keys that the
// entities compute alone (sim/engine/event_queue.hpp), a partitioned run
// executes every partition's events in the order the sequential engine
// would, and gives its results bit for bit.
//
// Across processes (set_ranks): every process numbers the same model (the
// same entity ids, the same message targets), builds what its own
// partitions need of it (the fabric and the cluster build no element of
// another process's partition), and runs only its own partitions. A
// message to another process's partition names its target by its index
// among the registered targets (the same places in the same order on every
// process, a null where a process did not build the node) and carries its tag as bytes
// (Node::export_tag: a packet travels as its fields and header bytes); the
// barrier sends each process's messages in one Ranks::exchange() per window
// and takes its decisions (the next window's first event, a stop) from
// reductions over the processes. The global events run on every process.
//
// Events global to every partition (a failure, a sample, an ECMP
// reconvergence) live in a Simulator of their own, the global one: they run
// between windows, on one thread, with every partition's clock moved to
// their time (windows end before the next one), so they may read and change
// any partition's elements and schedule events in any partition's queue. At
// a given time they run before every partition's events. An element running
// in a partition may schedule a global event: at a time inside the window
// being run it runs right after the window (the windows, and so that time,
// are the same however the model is split).
//
// Simulator::stop() in any partition ends the run after the window it was
// called in (every partition completes it), and stop_time() is the time of
// the earliest stop: a run stops at the same point of simulated time
// however it is partitioned.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "sim/engine/ranks.hpp"
#include "sim/engine/simulator.hpp"

namespace mrc::sim {

class ParallelEngine {
 public:
  /// `parts`: one Simulator per partition (not owned; they must outlive the
  /// engine, and their nodes must not touch each other's). `lookahead`: the
  /// smallest delay of any send() (> 0; PartitionPlan::lookahead). A
  /// lookahead of 0 or no partition is a programming error (aborts with a
  /// message).
  /// `global` (not owned, may be null): the Simulator of the events global
  /// to every partition (see above). With it, even one partition runs in
  /// windows, so that stopping and global events happen at the same points
  /// as with several.
  ParallelEngine(std::vector<Simulator*> parts, Duration lookahead, Simulator* global = nullptr);

  uint32_t partitions() const { return static_cast<uint32_t>(parts_.size()); }

  /// Runs across processes: this process runs only the partitions p with
  /// rank_of[p] == ranks->rank() (on set_threads() threads), and the
  /// messages for the others go through `ranks` (not owned; it must
  /// outlive the engine). Every rank must number the same model, register
  /// the same targets in the same order (nulls for nodes it does not
  /// build), and call run_until() with the same ends. `rank_of` has partitions() entries below ranks->size(),
  /// each rank with at least one partition (else aborts with a message).
  /// Call before run_until() (and before building a model that builds only
  /// this rank's elements: Fabric, Cluster). The other ranks' partitions'
  /// Simulators stay as they were built; a message a global event sends
  /// here from one of them is dropped (the owner sends its own).
  void set_ranks(Ranks* ranks, std::vector<uint32_t> rank_of);
  /// A node that a message from another process may target (set_ranks): a
  /// send() to a partition of another process aborts with a message if
  /// its node was not registered. Register the same nodes in the same
  /// order on every rank, before run_until(). A null `n` holds the place
  /// of a node this process does not build (another process's element):
  /// a message for it here aborts with a message.
  void register_target(Node* n);
  /// The Ranks of set_ranks(), or null within one process.
  Ranks* ranks() const { return ranks_; }
  /// This process runs partition `p` (always true within one process).
  bool local(uint32_t p) const { return !ranks_ || rank_of_[p] == ranks_->rank(); }
  /// The rank running partition p (0 without ranks).
  uint32_t rank_of(uint32_t p) const { return ranks_ ? rank_of_[p] : 0; }
  /// The partitions this process runs, in order.
  const std::vector<uint32_t>& local_partitions() const { return local_; }
  Duration lookahead() const { return lookahead_; }

  /// Called by an event running in partition `src`: runs node->on_event(tag)
  /// at `at` in partition `dst`, keyed `key` (the sender's EventKeys). `at`
  /// must be at least the sender's now() + lookahead() (else the message
  /// could fall in a window already run: aborts with a message). Only the
  /// thread running `src` may call it during run_until(). Across
  /// processes, a message from a partition of another process (a global
  /// event acting on its elements here) is dropped: that process sends it.
  void send(uint32_t src, uint32_t dst, Time at, Node* node, uint64_t tag, uint64_t key);

  /// Runs this process's partitions on `n` threads (at most one per
  /// partition; 0, the default: one per partition): the k-th of them on
  /// thread k % n, the calling thread being thread 0. A thread with several
  /// runs their shares of a window one after another, which is one order
  /// the threads' would allow, so the results do not depend on `n`; what `n`
  /// changes is the wall time: more threads than free cores wait for each
  /// other at every barrier (each window needs every thread to have run).
  /// Call before run_until().
  void set_threads(uint32_t n) { threads_ = n; }
  /// The threads run_until() uses: set_threads()'s count, at most one per
  /// partition this process runs.
  uint32_t threads() const;

  /// Runs every partition's events (and the global ones) up to and
  /// including `end`, window by window, on the threads of set_threads()
  /// (partition local_partitions()[0] on the calling thread; one partition
  /// without a global Simulator: the Simulator's own run_until). Every partition's
  /// clock is left at `end` (unless `end` is never), or, when an event
  /// called stop(), at the end of that window (then stopped() is true).
  /// Returns false if every queue emptied.
  bool run_until(Time end);

  /// An event called Simulator::stop() in some partition: the last
  /// run_until() ended after that window. stop_time(): the earliest such
  /// call's time. A later run_until() clears it.
  bool stopped() const { return stopped_; }
  Time stop_time() const { return stop_time_; }
  /// The time every partition has run to (the last window's end).
  Time now() const { return done_until_; }

  /// Called at every window boundary, on one thread while no partition
  /// runs (e.g. to hand packets released in one partition back to the one
  /// that allocates them). Set before run_until().
  void set_on_barrier(std::function<void()> f) { on_barrier_ = std::move(f); }
  /// Called from the on_barrier function: ends the run after the window
  /// just run, as a stop() at `at` in it would (stop_time() is the earliest
  /// of them). For what only the barrier can tell: the last of a
  /// workload's completions, which the partitions count apart.
  void request_stop(Time at) { stop_at_[0] = min(stop_at_[0], at); }
  /// True while the global events run (between windows, on one thread):
  /// what they record is ordered before every partition event at their
  /// time, by the global Simulator's current_key().
  bool in_globals() const { return in_globals_; }

  /// Windows run, and messages moved between partitions, since construction
  /// (across processes: those this process sent, and delivered within it).
  uint64_t windows() const { return windows_; }
  uint64_t messages() const { return messages_; }
  /// Batches moved: non-empty outboxes of a (source, destination) pair,
  /// counted once per window (and once per global-event merge): at most
  /// partitions^2 per window, partitions - 1 into each partition.
  uint64_t batches() const { return batches_; }
  /// CPU time (s) of each partition in run_until() calls with more than
  /// one partition: its shares of the windows, and for the first partition
  /// of each thread (set_threads) that thread's waits at the barrier (the
  /// barrier's own step, global events included, counts where it ran): how
  /// the work was balanced. Zeros with one partition.
  const std::vector<double>& thread_cpu_s() const { return cpu_s_; }
  /// The run's critical path in CPU time (s), with more than one partition:
  /// over every window, the CPU time of the partition that took longest to
  /// run its share (barrier waits left out), plus the barrier's own steps
  /// (merging outboxes, global events). On as many free cores as
  /// partitions the run would take about this long: the sequential run's
  /// CPU time over it bounds the speedup, whatever else loads the machine.
  /// Across processes: the longest share of any process (a reduction), and
  /// this process's barrier steps less the CPU time spent in the
  /// collectives (waits, and the copies of the exchange).
  double span_cpu_s() const { return span_s_; }

 private:
  struct Message {
    Time at;
    uint64_t key;
    Node* node;
    uint64_t tag;
  };
  /// At the barrier: every outbox into its destination's queue (sources in
  /// order), the global events due, then the next window's end; false when
  /// there is none by `end` (or a partition stopped).
  bool next_window(Time end);
  /// Every outbox into its destination's queue (sources in order).
  void deliver_outboxes();
  /// The earliest pending event of this process's partitions.
  Time local_first_event() const;
  /// The earliest pending event of any partition (of every process: a
  /// reduction, called by every rank alike).
  Time first_event();
  /// Across processes: this process's messages for each other one, sent
  /// and received in one exchange, into their destinations' queues.
  void exchange_remote();
  /// Runs one partition's share of the window (finishing it after a stop()).
  void run_window(uint32_t p);
  /// Runs the global events due before the next partition event `first`,
  /// each at its time or, if it fell inside a window already run, right
  /// after it; returns the next partition event after them.
  Time run_globals(Time end, Time first);
  /// Runs the window loop over this process's partitions (on threads() threads);
  /// `more` is the first window's next_window().
  void run_windows(Time end, bool more);
  /// next_window() after a window whose longest share took window_busy_s_,
  /// adding the window to the critical path (span_s_).
  bool barrier_step(Time end);

  std::vector<Simulator*> parts_;
  Simulator* global_ = nullptr;
  Duration lookahead_;
  std::function<void()> on_barrier_;
  std::vector<Time> stop_at_;  ///< per partition: its earliest stop() this window, or never
  bool stopped_ = false;
  bool in_globals_ = false;
  Time stop_time_ = Time::never();
  Time done_until_;  ///< every partition has run its events up to here
  std::vector<std::vector<Message>> out_;  ///< [src * partitions + dst]
  Time window_end_;
  uint64_t windows_ = 0;
  uint64_t messages_ = 0;
  uint64_t batches_ = 0;
  std::vector<double> cpu_s_;
  std::vector<double> busy_s_;  ///< per partition: CPU time running the window just run
  uint32_t threads_ = 0;        ///< set_threads(); 0 = one per local partition
  double span_s_ = 0;
  double window_busy_s_ = 0;  ///< the longest share of the window just run (every process's, after the barrier)
  double in_ranks_s_ = 0;     ///< CPU time in the collectives (Ranks) of the engine's barriers
  /// This thread's CPU time (s) where the run has several partitions (the
  /// balance figures above); 0 with one, where nothing is balanced: reading
  /// a thread's CPU clock is a system call, and several per window took a
  /// fifth of a one-partition run's time.
  double cpu_now() const;
  // Across processes (set_ranks).
  Ranks* ranks_ = nullptr;
  std::vector<uint32_t> rank_of_;  ///< per partition
  std::vector<uint32_t> local_;    ///< the partitions this process runs
  std::vector<Node*> targets_;     ///< register_target order
  std::unordered_map<const Node*, uint32_t> target_id_;
  std::vector<std::vector<uint8_t>> remote_out_;  ///< [src * ranks + rank]: records for that rank
  std::vector<uint64_t> remote_sent_;             ///< [src * partitions + dst]: this window's messages
};

}  // namespace mrc::sim
