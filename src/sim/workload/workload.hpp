// SPDX-License-Identifier: BSD-2-Clause
// Workloads: flow sets (permutation, incast, all-to-all, connection
// matrices) and collectives (ring all-reduce, training-step loops), driven
// over a Cluster.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/engine/parallel.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/workload/cluster.hpp"
#include "util/result.hpp"

namespace mrc::sim {

struct FlowSpec {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint64_t bytes = 0;
  Time start;
};

struct FlowRecord {
  FlowSpec spec;
  bool done = false;
  core::WcStatus status = core::WcStatus::success;
  Time finish;
  Duration ideal;  ///< alone on an idle fabric at the sender's full NIC rate
  /// Data packets the sender's QPs of this host pair retransmitted while the
  /// flow ran: the growth of core::QpStats::retransmissions, summed over the
  /// pair's QPs (every lane), from the flow's start to its finish, or to the
  /// end of the run if it never finished. Counted per QP, not per flow: flows
  /// of the same (src, dst) pair that overlap in time share those QPs, so
  /// each of them also counts the others' retransmissions.
  uint64_t retransmits = 0;
  /// Trimmed packets (payload cut by a switch, header delivered) that the
  /// receiver's QPs of this host pair got while the flow ran: the growth of
  /// core::QpStats::trims_received, with the same sharing between
  /// overlapping flows as `retransmits`, from a post delay
  /// (Cluster::post_delay) after the flow's start to a post delay after its
  /// finish (or the end of the run): the receiver reads its own counters
  /// when the sender tells it, as it would across partitions.
  uint64_t trims = 0;
  Duration fct() const { return finish - spec.start; }
  double slowdown() const { return done ? static_cast<double>(fct().count_ps()) / static_cast<double>(ideal.count_ps()) : 0; }
};

/// Each host sends `bytes` to a distinct other host (a random derangement).
std::vector<FlowSpec> permutation_flows(uint32_t hosts, uint64_t bytes, Prng& rng);
/// `fan_in` senders (hosts other than `target`) send `bytes` to `target`;
/// with a victim, one more host sends `bytes` to a host under the same T0 as
/// the target (its own receiver is otherwise idle).
std::vector<FlowSpec> incast_flows(uint32_t hosts, uint32_t fan_in, uint32_t target, uint64_t bytes,
                                   bool victim, uint32_t hosts_per_t0, uint32_t* victim_index);
/// Every host sends `bytes` to every other host.
std::vector<FlowSpec> all_to_all_flows(uint32_t hosts, uint64_t bytes);
/// htsim-style connection matrix: "Nodes N", "Connections M", then lines
/// "src->dst start T size B" (T in microseconds, B in bytes; extra
/// "id"/"start"/"size" keyword pairs accepted in any order). Errors name the
/// line and what is wrong.
Result<std::vector<FlowSpec>> read_connection_matrix(const std::string& path, uint32_t hosts,
                                                     std::string* why);

/// Runs a set of flows: each starts at its start time as one WRITE per QP of
/// the host pair (TransportSpec::qps_per_peer), splitting the bytes evenly,
/// as a collective library spreads a transfer over its QPs; the flow ends when
/// the last piece completes. Every QP is opened at construction. A flow's
/// events run in its hosts' partitions; the last completion, which the
/// partitions count apart, is found between windows (finished_at()).
class FlowWorkload final : public Node {
 public:
  FlowWorkload(Simulator& sim, Cluster& cluster, std::vector<FlowSpec> flows, Duration base_latency,
               uint64_t host_bps);
  void start();
  bool done() const { return finished() == recs_.size(); }
  /// Flows that ended (successfully or not) so far.
  size_t finished() const;
  /// Between windows: the time the last flow ended once every flow has.
  std::optional<Time> finished_at() const;
  const std::vector<FlowRecord>& records() const { return recs_; }
  /// A run across processes: every rank's tallies of the partitions it
  /// runs to every rank (one reduction), so that finished(), finished_at()
  /// and done() tell the whole run's. Every rank calls it, between windows.
  void share_tallies(Ranks& ranks, const ParallelEngine& engine);
  /// Sets `retransmits` and `trims` of flows that started but whose counts
  /// are not final to their counts so far. Call once when the run stops;
  /// flows that never started keep 0.
  void count_unfinished();
  void on_event(Simulator& sim, uint64_t tag) override;
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }

 private:
  uint64_t pair_retransmissions(const FlowSpec& f) const;
  uint64_t pair_trims(const FlowSpec& f) const;
  void start_flow(size_t i);

  /// Per partition: what its flows' last completions tell (cache-line apart).
  struct alignas(64) Tally {
    size_t finished = 0;
    Time last;
  };
  Cluster& cluster_;
  std::vector<FlowRecord> recs_;
  std::vector<uint32_t> pieces_left_;
  std::vector<uint8_t> started_;  ///< bytes, not bits: set from several partitions
  /// Trims counts: 1 once the receiver took the start snapshot, 2 once it
  /// took the finish one (FlowRecord::trims is final).
  std::vector<uint8_t> trims_state_;
  std::vector<uint64_t> retransmits_at_start_;  ///< pair counters when each flow started
  std::vector<uint64_t> trims_at_start_;
  std::vector<Tally> tallies_;
  EventKeys keys_;  ///< flow starts (one per flow, in flow order)
};

/// A training loop: `steps` times, every host computes for `compute`, then
/// the ring all-reduces `bytes` (reduce-scatter + all-gather: 2(N-1) chunks
/// of bytes/N per host, each WRITE_WITH_IMM to the next host in the ring; a
/// host forwards step k+1 when it has received step k).
///
/// Every QP is opened at construction. A host's part of the ring runs in its
/// partition: it posts its receives when its predecessor writes (Cluster::
/// write), counts the pieces of each step it receives, and forwards the
/// next step. A collective ends when every host has received its last step,
/// which the partitions count apart: at_barrier(), between windows, finds
/// it and starts the next training step (its compute phase ends at the same
/// time at every host, an event in each host's partition).
class RingTraining final : public Node {
 public:
  /// `step_latency` is the unloaded time for one ring step's first byte to
  /// reach the next host (used only for the ideal collective time).
  RingTraining(Simulator& sim, Cluster& cluster, std::vector<uint32_t> ring, uint64_t bytes, uint32_t steps,
               Duration compute, Duration step_latency = Duration{});
  void start();
  bool done() const { return step_times_.size() == steps_; }
  /// Training steps the loop runs in total.
  uint32_t steps() const { return steps_; }
  /// Wall time of each completed training step (compute + all-reduce).
  const std::vector<Duration>& step_times() const { return step_times_; }
  /// Time each all-reduce took (without compute).
  const std::vector<Duration>& collective_times() const { return coll_times_; }
  /// 2(N-1) ring steps, each a chunk at the host's full NIC rate, plus
  /// `step_latency` per step: with the default 0, a bandwidth lower bound.
  Duration ideal_collective() const;
  uint64_t failed_writes() const { return failed_.load(std::memory_order_relaxed); }
  /// Called when training step `step` (0-based, as step_times() counts)
  /// starts its compute phase at `at`; for schedules relative to the
  /// workload. Called from start() and at_barrier() (no partition running).
  std::function<void(uint32_t step, Time at)> on_step_start;
  /// Call at every window boundary (no partition running): if every host
  /// finished the collective, records it and starts the next training step
  /// (no earlier than `earliest`, the next window's start, for a compute
  /// phase under the lookahead). Returns the time the last one ended when
  /// that was the last step (the run stops there).
  std::optional<Time> at_barrier(Time earliest);
  /// A run across processes: as FlowWorkload::share_tallies, before
  /// at_barrier().
  void share_tallies(Ranks& ranks, const ParallelEngine& engine);
  void on_event(Simulator& sim, uint64_t tag) override;
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }

 private:
  /// Schedules every host's compute phase to end at `at`: its collective starts.
  void schedule_collective(Time at);
  void send_step(uint32_t pos, uint32_t k);
  void on_piece(uint32_t host, uint32_t k);
  void on_received(uint32_t pos, uint32_t k);
  uint32_t pieces() const;

  struct alignas(64) Tally {
    uint32_t hosts_done = 0;
    Time last;
  };
  Cluster& cluster_;
  std::vector<uint32_t> ring_;
  std::vector<uint32_t> pos_of_;  ///< ring position of each host (UINT32_MAX: not in the ring)
  uint64_t bytes_;
  uint32_t steps_;
  Duration compute_;
  Duration step_latency_;
  uint32_t step_ = 0;
  Time step_start_;
  Time coll_start_;
  std::vector<uint32_t> received_;  ///< per ring position: chunks received this collective
  /// Per ring position: pieces received of each step not yet complete (a
  /// host may be several steps behind its predecessor). A table of every
  /// position's every step took 4 n (2n - 2) bytes: 537 MB at 8,192 hosts.
  std::vector<std::unordered_map<uint32_t, uint32_t>> pieces_got_;
  std::vector<Tally> tallies_;  ///< per partition
  std::vector<Duration> step_times_;
  std::vector<Duration> coll_times_;
  std::atomic<uint64_t> failed_{0};
  EventKeys keys_;  ///< compute phases ending
};

}  // namespace mrc::sim
