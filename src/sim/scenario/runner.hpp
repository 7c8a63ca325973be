// SPDX-License-Identifier: BSD-2-Clause
// Scenario runner: builds a simulation (fabric, NICs with the real core,
// workload, failure schedule, samplers), runs it for one transport, and
// returns everything the outputs need. mrc-sim and the scenario tests share it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/fabric/fabric.hpp"
#include "sim/scenario/controller_plan.hpp"
#include "sim/scenario/failures.hpp"
#include "sim/workload/cluster.hpp"
#include "sim/workload/workload.hpp"

namespace mrc::sim {

enum class WorkloadKind : uint8_t { train, allreduce, permutation, incast, alltoall, matrix };

/// Where a run stands, for a progress display. Passed to Scenario::progress
/// between chunks of simulated time.
struct Progress {
  Time now;                 ///< simulated time reached
  Duration time_limit;      ///< the run stops here at the latest (Scenario::time_limit)
  uint64_t events = 0;      ///< simulator events processed so far
  size_t steps_done = 0;    ///< train/allreduce: collectives completed
  size_t steps_total = 0;   ///< train/allreduce: collectives to run; 0 for flow workloads
  size_t flows_done = 0;    ///< flow workloads: flows ended (successfully or not)
  size_t flows_total = 0;   ///< flow workloads: flows to run; 0 for collectives
};

struct Scenario {
  TopologyConfig topology;
  WorkloadKind workload = WorkloadKind::train;
  uint64_t bytes = 16ull << 20;      ///< all-reduce size, or bytes per flow
  uint32_t steps = 8;                ///< training steps
  Duration compute = Duration::us(150);
  uint32_t fan_in = 8;               ///< incast senders
  uint32_t incast_target = 0;
  bool victim = false;               ///< incast: add a victim flow
  std::vector<FlowSpec> flows;       ///< matrix workload (or any explicit flow list)
  std::vector<FailureSpec> failures;
  /// Controller profiles of the MRC transports' QPs (controller_plan.hpp);
  /// empty: the transport's own EV sets and congestion control.
  ControllerPlan controller;
  uint64_t seed = 1;
  /// Partitions of a parallel run (ParallelEngine): the switches and the
  /// hosts split as plan_partitions() says.
  /// Results are the same for every count; plan_partitions() must accept
  /// it for `topology` (run_scenario aborts with its message otherwise).
  uint32_t partitions = 1;
  /// Threads that run this process's partitions (ParallelEngine::
  /// set_threads); 0: one per partition. Results do not depend on it.
  uint32_t threads = 0;
  /// A run across processes (MPI ranks, not owned; null: one process):
  /// every rank calls run_scenario() with the same scenario and runs
  /// partitions / ranks->size() of the partitions (rank r the r-th block),
  /// on `threads` threads. partitions must be a multiple of the
  /// ranks, above 1, and the run without failures (run_scenario aborts with
  /// a message otherwise; mrc-sim refuses these beforehand). Rank 0's
  /// result is the whole run's, the same as on one process; the other
  /// ranks' results are theirs alone (RunResult::rank_share).
  Ranks* ranks = nullptr;
  Duration time_limit = Duration::ms(200);
  Duration sample_every = Duration::us(20);
  /// Protocol knobs for every endpoint; base_rtt 0 = twice the fabric's
  /// longest one-way latency.
  core::ProtocolConfig protocol;
  bool derive_base_rtt = true;
  /// core::EndpointConfig::balance_peer_ports of every endpoint (the port
  /// arbiter: balance each destination over the planes, or plain turns).
  bool balance_peer_ports = true;
  /// Goodput series per host, per plane and per flow besides the total
  /// (RunResult::host_series, ...); off by default: rows of one value per
  /// host (plane, flow) per sample.
  bool series_hosts = false;
  bool series_planes = false;
  bool series_flows = false;
  /// Called between chunks of simulated time (every 200 us simulated), for a
  /// progress display; must not change the simulation.
  std::function<void(const Progress&)> progress;
  /// Called once at the end of the run, before teardown (diagnostics: the
  /// state of QPs that did not finish).
  std::function<void(Time now, const Cluster& cluster)> at_end;
  /// Called at every sample (every sample_every of simulated time), after
  /// the sample is taken: tests read NIC and QP counters over time here.
  /// Must not change the simulation.
  std::function<void(Time now, const Cluster& cluster)> on_sample;
  /// Called for every packet as it leaves a host's NIC (Nic::on_transmit),
  /// at simulated time `now`; for packet captures. Must not change the
  /// simulation. Empty = no tap (nothing is called per packet). Needs one
  /// partition (run_scenario aborts with a message otherwise).
  std::function<void(Time now, uint32_t host, const Packet& p)> packet_tap;
};

struct Sample {
  Time at;
  /// Payload placed by all NICs in the interval: each byte once (unique).
  double goodput_gbps = 0;
  /// Payload that arrived at the NICs in the interval and was not placed:
  /// duplicates (needless retransmissions), a go-back-N receiver's
  /// out-of-order packets.
  double unplaced_gbps = 0;
  uint64_t queued_bytes = 0; ///< sum over switch egress queues at the sample
};

struct RunResult {
  std::string transport;
  bool completed = false;
  std::vector<Duration> steps;        ///< training step times
  std::vector<Duration> collectives;  ///< all-reduce times
  Duration ideal_collective;
  std::vector<FlowRecord> flows;
  FabricStats fabric;
  uint64_t retransmissions = 0, timeouts = 0, losses_rule = 0, losses_nack = 0, probes = 0;
  /// First transmissions of data packets, over every QP.
  uint64_t data_packets = 0;
  /// Retransmissions that delivered nothing new: data packets the responders
  /// already had (core::QpStats::duplicates_received), the ground truth of
  /// spurious retransmission, whatever the requester believed.
  uint64_t spurious_retransmissions = 0;
  uint64_t evs_retired = 0, evs_resurrected = 0, qp_failures = 0;
  /// core::PathStats summed over both QPs of every connection:
  /// active EVs traded for a backup on ECN marks (congestion_swaps), EVs
  /// taken out of service on a loss pending a confirming probe (suspected)
  /// and those put back without retiring (cleared).
  uint64_t ev_congestion_swaps = 0, evs_suspected = 0, evs_cleared = 0;
  uint64_t events = 0;
  /// Windows of the parallel engine and events carried between partitions
  /// (0 with one partition).
  uint64_t windows = 0, messages = 0;
  /// Batches those messages travelled in: one per (source, destination)
  /// pair with any in a window (ParallelEngine::batches).
  uint64_t batches = 0;
  /// Events run in each partition (the global ones not included): the
  /// balance of the work, which bounds the speedup at sum / max.
  std::vector<uint64_t> partition_events;
  /// CPU time of each partition's thread (ParallelEngine::thread_cpu_s;
  /// empty with one partition).
  std::vector<double> partition_cpu_s;
  /// The critical path's CPU time (ParallelEngine::span_cpu_s; 0 with one
  /// partition).
  double span_cpu_s = 0;
  /// Across processes (Scenario::ranks): bytes and non-empty buffers this
  /// rank sent to other ranks (rank 0: every rank's added up), and whether
  /// this result is only a rank's share (every rank but 0).
  uint64_t rank_bytes = 0, rank_buffers = 0;
  bool rank_share = false;
  Time end;
  double wall_s = 0;
  size_t peak_rss_kb = 0;
  std::vector<Sample> series;
  /// With Scenario::series_hosts / series_planes / series_flows: one row per
  /// sample of `series`, the payload (Gb/s, placed or not) that arrived in the interval at each
  /// host, over each plane, and of each flow (payload from its source to its
  /// destination; flows of the same host pair share theirs), in the order of
  /// hosts, planes and `flows`.
  std::vector<std::vector<double>> host_series, plane_series, flow_series;
  std::vector<std::pair<Time, std::string>> failure_log;
  std::vector<std::pair<Time, core::EvEvent>> ev_events;  ///< capped at 100k
  std::vector<uint32_t> ev_event_hosts;  ///< the host (NIC) of each of ev_events
  /// Port-status changes (Cluster::on_port_event), capped at 100k: at
  /// `host`, its own ports (`local`) or peer `peer`'s ports as its
  /// PORT_STATUS_UPDATE gave them; up_mask bit p = plane p up.
  struct PortRecord {
    Time at;
    uint32_t host = 0;
    bool local = true;
    uint32_t peer = 0;
    uint32_t up_mask = 0;
  };
  std::vector<PortRecord> port_events;
};

/// The flows a flow workload of `sc` runs (permutation, incast, all-to-all:
/// generated for sc.topology.hosts hosts from sc.seed; matrix: sc.flows);
/// empty for train and allreduce. run_scenario() runs exactly these, so a
/// caller can show or check them beforehand.
std::vector<FlowSpec> scenario_flows(const Scenario& sc);

/// Runs `sc` once with transport `t`.
///
/// The run goes in synchronous windows (ParallelEngine) whatever
/// sc.partitions is, so that it stops at the same point with any count: a
/// window spans the fabric's link delay (the lookahead; 1 ps without one),
/// the events global to the hosts and switches (failures, samples, ECMP
/// reconvergence) run between windows before anything else at their time,
/// and the run ends after the window in which the workload finished (its
/// end, RunResult::end, is the finishing event's time).
RunResult run_scenario(const Scenario& sc, const TransportSpec& t);

/// The lookahead of run_scenario's windows for `topo`: its link delay (at
/// least 1 ps), the least time a packet or a PFC frame takes over a link.
Duration scenario_lookahead(const TopologyConfig& topo);

/// The transports mrc-sim knows by name: "mrc" (MRC with NSCC; "mrc-nscc"
/// is the same), "mrc-fixed" (MRC with a constant window), "mrc-oblivious"
/// (spraying without EV management), "mrc-single-path" (one ECMP path per
/// QP), "roce" and "roce-pfc" (RoCEv2 RC with DCQCN, without/with PFC);
/// Errc::not_found for others.
Result<TransportSpec> transport_by_name(const std::string& name, uint32_t evs_per_plane, uint32_t qps_per_peer);

}  // namespace mrc::sim
