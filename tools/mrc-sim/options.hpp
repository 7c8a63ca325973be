// SPDX-License-Identifier: BSD-2-Clause
// mrc-sim's settings as a user gives them (flags or a TOML scenario file,
// in the units the flags use), and their resolution into a Scenario and the
// transports to run. docs/mrc-sim.md lists every setting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario/runner.hpp"
#include "util/result.hpp"

namespace mrc::sim::tool {

/// SimOptions::pin_t0_uplink when no pinning is asked for (the key left out).
inline constexpr uint32_t kNoPin = UINT32_MAX;
/// SimOptions::pcap_host when every host is captured (the key left out).
inline constexpr uint32_t kAllHosts = UINT32_MAX;

/// Everything mrc-sim can be told. The defaults are the default scenario
/// (README, docs/mrc-sim.md). Each field is one flag and one key of the
/// scenario file ([section] key in the comments).
struct SimOptions {
  // [topology]
  std::string topology = "clos2";  ///< kind: clos2, fattree2, fattree3
  std::string routing = "srv6";    ///< routing: srv6 or ecmp
  uint32_t planes = 0;             ///< planes (clos2, fattree3); 0 = 8 on clos2, 1 on fattree3
  uint32_t hosts = 64;             ///< hosts
  uint32_t t0_down = 8;            ///< t0_down: host ports per T0
  uint32_t t0_up = 8;              ///< t0_up: uplinks per T0
  uint32_t t1 = 8;                 ///< t1: T1 switches per plane (per pod in fattree3)
  uint32_t pods = 0;               ///< pods (fattree3; 0 = derived)
  uint32_t t2 = 0;                 ///< t2: core switches (fattree3; 0 = derived)
  double rate_gbps = 100;          ///< rate_gbps: NIC port / host link rate
  double fabric_rate_gbps = 0;     ///< fabric_rate_gbps: T0-T1 and T1-T2 links (0 = rate_gbps)
  double link_delay_ns = 500;      ///< link_delay_ns: propagation per link
  double switch_latency_ns = 400;  ///< switch_latency_ns: per switch traversal
  /// reconverge_ms: routing reconverges this long after a failure (the ECMP
  /// baseline with BGP); 0 = static routes forever, as MRC fabrics run.
  double reconverge_ms = 0;
  QueueConfig queue;               ///< [topology.queue]: switch egress queues (file only)
  // [workload]
  std::string workload = "train";  ///< kind: train, allreduce, permutation, incast, alltoall, cm
  uint64_t bytes = 32ull << 20;    ///< bytes: all-reduce size (train/allreduce) or bytes per flow
  uint32_t steps = 8;              ///< steps: training steps
  double compute_us = 150;         ///< compute_us: compute time per training step
  uint32_t fan_in = 8;             ///< fan_in: incast senders
  bool victim = false;             ///< victim: incast victim flow
  std::string cm_file;             ///< cm: connection matrix file (workload cm)
  // [[format]], [[ev_profile]], [[cc_profile]] and [controller] (file only):
  // the controller profiles of the MRC transports (controller_plan.hpp)
  ControllerPlan controller;
  // [[failure]]
  std::vector<std::string> failures;  ///< parse_failure() texts; empty = defaults (if default_failures)
  // [run]
  bool qp_hints = true;  ///< qp_hints: QPs get the application's traffic hint (core::QpHint)
  /// mrc_hint_share, mrc_hint_share_cap: an mrc* QP whose hinted share of
  /// the target's line rate is a few packets starts NSCC at this many
  /// shares, up to the cap in packets (core::NsccConfig::hint_share)
  double mrc_hint_share = 2;
  uint32_t mrc_hint_share_cap = 8;
  bool default_failures = true;  ///< default_failures: the default scenario's failures when none is given
  std::vector<std::string> transports = {"mrc", "roce"};  ///< transports
  uint64_t seed = 1;                                      ///< seed
  uint32_t partitions = 1;  ///< partitions: of the parallel engine (Scenario::partitions)
  /// threads: threads running this process's partitions; 0 = one per
  /// partition, at most cpus_available (run_threads)
  uint32_t threads = 0;
  /// CPUs this process may run on (main reads its affinity; not a setting).
  /// 0 = unknown: --threads 0 then means one thread per partition.
  uint32_t cpus_available = 0;
  double memory_limit_gb = 0;  ///< memory_limit_gb: refuse runs estimated above it; 0 = available memory
  /// What the machine has available (main reads it; not a setting). 0 =
  /// unknown: without memory_limit_gb no run is refused for its size.
  uint64_t memory_available_bytes = 0;
  /// MPI ranks mrc-sim runs under (mpirun -np; main.cc sets it, not a
  /// flag): with more than one, --partitions must be a multiple of it.
  uint32_t ranks = 1;
  double time_limit_ms = 200;                             ///< time_limit_ms: simulated time limit
  double sample_us = 20;                                  ///< sample_us: time-series sample interval
  uint32_t qps_per_peer = 0;                              ///< qps_per_peer: 0 = 1 for MRC, one per plane for RoCE
  /// evs_per_plane: EVs per QP and plane (half active); 0 = for the
  /// routing: 32 under srv6, under ecmp 256 (at most 4096 / planes) with
  /// mrc_ev_recycle on
  uint32_t evs_per_plane = 0;
  uint32_t mrc_qps_per_peer = 0;   ///< mrc_qps_per_peer: for mrc* transports; 0 = qps_per_peer
  uint32_t roce_qps_per_peer = 0;  ///< roce_qps_per_peer: for roce* transports; 0 = qps_per_peer
  uint32_t mrc_ack_timeout = 6;    ///< mrc_ack_timeout: ACK timeout 1.024 us x 2^N (mrc* transports)
  uint32_t roce_ack_timeout = 6;   ///< roce_ack_timeout: the same for roce* transports
  uint32_t mrc_retry_count = 32;   ///< mrc_retry_count: retries before the QP fails; 32 = forever
  uint32_t roce_retry_count = 32;  ///< roce_retry_count: the same for roce* transports
  uint32_t mtu = 4096;             ///< mtu: path MTU (payload bytes per packet) of every transport
  /// mrc_sack_bytes: an mrc* responder SACKs after this many new bytes when
  /// nothing forces one sooner (core::ProtocolConfig::sack_bytes_threshold)
  uint32_t mrc_sack_bytes = 16384;
  /// mrc_ev_recycle: mrc* QPs reuse the EVs whose packets came back
  /// unmarked first (core::ProtocolConfig::ev_recycle).
  bool mrc_ev_recycle = false;
  /// mrc_sack_ports: "spread" (SACKs take turns over the ports) or
  /// "arrival" (each on its trigger's plane; core::ProtocolConfig::spread_sacks)
  std::string mrc_sack_ports = "spread";
  /// mrc_sack_wait_max_us: a coalesced SACK waits for data to stop, at most
  /// this long after the first arrival it covers (sack_coalesce_max; 1 = a
  /// fixed 1 us timer)
  double mrc_sack_wait_max_us = 16;
  /// mrc_sack_wait_gaps: ... and data has stopped once the QP got nothing
  /// for this many of its recent arrival gaps (sack_coalesce_gaps; 0 = 1 us)
  uint32_t mrc_sack_wait_gaps = 2;
  /// mrc_port_arbiter: "balance" (a free port goes to the first QP in turn
  /// whose destination has used that plane least) or "turns" (plain turns;
  /// core::EndpointConfig::balance_peer_ports)
  std::string mrc_port_arbiter = "balance";
  /// roce_ack_packets: a roce* responder ACKs every this many packets
  /// (core::ProtocolConfig::rc_ack_packets)
  uint32_t roce_ack_packets = 16;
  double base_rtt_us = 0;          ///< base_rtt_us: buffer sizing and CC base RTT; 0 = derived from the topology
  /// pin_t0_uplink: every QP of every transport starts with its active EVs on
  /// this uplink of its T0 (TransportSpec::pin_t0_uplink; SRv6 only);
  /// kNoPin = no pinning.
  uint32_t pin_t0_uplink = kNoPin;
  bool pin_only = false;  ///< pin_only: drop the EVs on other uplinks, so no QP can leave the pinned one
  // [output]
  std::string json_out;  ///< json: JSON results file
  std::string csv_dir;   ///< csv: directory for the CSV files
  std::string svg_dir;   ///< svg: directory for the SVG plots
  bool quiet = false;    ///< quiet: no progress bar
  /// series: goodput series besides the total: "host", "plane", "flow"
  std::vector<std::string> series;
  double plot_from_us = 0;  ///< plot_from_us: throughput.svg's time axis starts here
  double plot_to_us = 0;    ///< plot_to_us: ... and ends here; 0 = the end of the run
  /// pcap: capture file of every packet leaving a host NIC (one file per
  /// transport when several run: NAME.<transport>.pcap); empty = none.
  std::string pcap;
  uint32_t pcap_host = kAllHosts;      ///< pcap_host: capture only this host's NIC; kAllHosts = every host
  uint64_t pcap_max_packets = 100000;  ///< pcap_max_packets: packets written per file at most
  /// --config: the scenario file these options were loaded from (flag only).
  std::string config_file;
};

/// The transport names transport_by_name() knows, for messages and help
/// (keep in step with it).
inline constexpr const char* kTransportNames =
    "mrc, mrc-fixed, mrc-nscc, mrc-oblivious, mrc-single-path, roce, roce-pfc";

/// Parses mrc-sim's command line into `o` (whose values are the defaults
/// for anything not given). With --config FILE, `o` is first loaded from the
/// file and then every flag given explicitly overrides it. Returns -1 to go
/// on with the run, or the exit code to leave with: 0 after --help, 2 after
/// a usage or scenario-file error (the message is already on stderr, and
/// also in `*error` if given). Every value is checked by its setting's rule
/// (settings.hpp), the same one the scenario file uses; a refusal names the
/// flag and what it accepts, e.g.
///   --bytes: -5 is out of range (an integer from 1 to 2147483648)
int parse_command_line(int argc, const char* const* argv, SimOptions* o, std::string* error = nullptr);

/// A scenario ready to run: the Scenario (without a progress callback) and
/// one TransportSpec per transport, in the order given.
struct ResolvedRun {
  Scenario scenario;
  std::vector<TransportSpec> transports;
};

/// The capture file of transport `transport` (SimOptions::pcap): the name
/// as given when one transport runs, else NAME.<transport>.pcap (the name
/// without a trailing ".pcap", then the transport, then ".pcap").
std::string pcap_file_for(const SimOptions& o, const std::string& transport);

/// Turns options into a runnable scenario: builds and validates the
/// topology (TopologyConfig::validate), parses and validates the failures
/// against the fabric, reads the connection matrix of the cm workload and
/// looks up the transports. On error `why` says what is wrong and how to fix
/// it; the error code is Errc::invalid_argument (or not_found for a missing
/// matrix file or an unknown transport). A run whose memory estimate
/// exceeds its limit is refused (invalid_argument, with memory_refusal()'s
/// message) before anything of its size is built.
Result<ResolvedRun> resolve(const SimOptions& o, std::string* why);

/// Peak memory a run of `o` is expected to need, from the sizes alone,
/// before anything is built: a fixed part, a part per host-plane (NIC
/// ports, switch ports, links, queues) and a part per connection and EV
/// (every host pair the workload connects has QPs at both ends, each holding
/// evs_per_plane x planes EVs). Calibrated on clos2 runs with
/// /usr/bin/time -v (docs/mrc-sim.md, "Memory"). Transports run one after
/// the other, so the one with the most QPs per host pair counts. Under R
/// MPI ranks (SimOptions::ranks) `bytes` is one rank's share: each rank
/// builds the switches of its own partitions and the NICs, QPs and EVs of
/// its own hosts (other ranks' hosts are stand-ins of about 1 KB, and every
/// link's record is kept), and holds the packets of its own partitions.
struct MemoryEstimate {
  uint64_t bytes = 0;         ///< per process: one rank's with ranks > 1
  uint64_t total_bytes = 0;   ///< the same run in one process
  uint32_t ranks = 1;         ///< SimOptions::ranks
  uint32_t planes = 1;
  double connections = 0;     ///< host pairs with QPs
  uint32_t qps_per_peer = 1;  ///< the most of any transport
};
/// `matrix_flows`: the flows of the cm workload's matrix (0 before it is read).
MemoryEstimate estimate_memory(const SimOptions& o, size_t matrix_flows = 0);

/// Empty if a run of `o` fits its memory limit (memory_limit_gb, else
/// memory_available_bytes; neither known: every run fits), per rank under
/// MPI (MemoryEstimate::bytes against the limit of each). Otherwise why
/// not, as resolve() reports it: the estimate, the limit, and which flags
/// make the run smaller or raise the limit.
std::string memory_refusal(const SimOptions& o, size_t matrix_flows = 0);

/// The threads that run this process's partitions (Scenario::threads): the
/// threads setting (at most one per partition of this rank), or where it is
/// 0 one per partition, at most cpus_available when that is known.
uint32_t run_threads(const SimOptions& o);

/// The resolved configuration as mrc-sim prints it before running
/// ("mrc-sim configuration" and one indented line per aspect).
std::string describe(const SimOptions& o, const ResolvedRun& run);

}  // namespace mrc::sim::tool
