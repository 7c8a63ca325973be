// SPDX-License-Identifier: BSD-2-Clause
#include "mrc-sim/settings.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace mrc::sim::tool {

Rule integer(uint64_t lo, uint64_t hi, const char* note) {
  Rule r;
  r.int_min = lo;
  r.int_max = hi;
  r.note = note;
  return r;
}

Rule number(double lo, double hi, bool open, const char* note) {
  Rule r;
  r.min = lo;
  r.max = hi;
  r.min_open = open;
  r.note = note;
  return r;
}

Rule one_of(std::vector<std::string> names) {
  Rule r;
  r.choices = std::move(names);
  return r;
}

Rule one_of_values(std::vector<uint64_t> values) {
  Rule r;
  r.int_min = *std::min_element(values.begin(), values.end());
  r.int_max = *std::max_element(values.begin(), values.end());
  r.values = std::move(values);
  return r;
}

Rule any() { return Rule{}; }

namespace {

// Limits the simulator itself sets (the reasons are in the comments of the
// table below).
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 31;  // the largest RDMA message (core/qp.cc)
constexpr uint32_t kMaxRadix = 1024;                      // switch ports (TopologyConfig::validate)
constexpr uint32_t kMaxPlanes = 32;                       // NIC ports (core::kMaxPorts)
constexpr uint32_t kMaxHosts = 1u << 20;
constexpr double kMaxGbps = 100'000;     // 100 Tb/s per link
constexpr double kMaxDelayNs = 1e9;      // 1 s per link or switch
constexpr double kMaxTimeMs = 1e7;       // about 3 hours of simulated time
constexpr uint64_t kMaxBufferBytes = uint64_t{1} << 34;  // 16 GiB per queue

}  // namespace

std::vector<Setting> settings(SimOptions& o) {
  const uint64_t u64max = std::numeric_limits<uint64_t>::max();
  return {
      // [topology]
      {"topology", "kind", "--topology", "clos2 (multi-plane 2-tier), fattree2, fattree3", &o.topology,
       one_of({"clos2", "fattree2", "fattree3"})},
      {"topology", "routing", "--routing", "srv6 (static uSID source routing) or ecmp", &o.routing,
       one_of({"srv6", "ecmp"})},
      {"topology", "planes", "--planes", "network planes = NIC ports (clos2, fattree3)", &o.planes,
       integer(0, kMaxPlanes, "0 = 8 on clos2, 1 on fattree3")},
      {"topology", "hosts", "--hosts", "NICs", &o.hosts, integer(2, kMaxHosts)},
      {"topology", "t0_down", "--t0-down", "host ports per T0", &o.t0_down, integer(1, kMaxRadix)},
      {"topology", "t0_up", "--t0-up", "uplinks per T0", &o.t0_up, integer(1, kMaxRadix)},
      {"topology", "t1", "--t1", "T1 switches per plane (per pod in fattree3)", &o.t1, integer(1, kMaxRadix)},
      {"topology", "pods", "--pods", "fattree3: pods", &o.pods, integer(0, kMaxRadix, "0 = derived")},
      {"topology", "t2", "--t2", "fattree3: core (T2) switches", &o.t2, integer(0, kMaxHosts, "0 = derived")},
      {"topology", "rate_gbps", "--rate-gbps", "rate of every NIC port and host link (per plane), Gb/s",
       &o.rate_gbps, number(0, kMaxGbps, true)},
      {"topology", "fabric_rate_gbps", "--fabric-rate-gbps", "rate of T0-T1 and T1-T2 links, Gb/s",
       &o.fabric_rate_gbps, number(0, kMaxGbps, false, "0 = --rate-gbps")},
      {"topology", "link_delay_ns", "--link-delay-ns", "propagation delay per link", &o.link_delay_ns,
       number(0, kMaxDelayNs)},
      {"topology", "switch_latency_ns", "--switch-latency-ns", "latency per switch", &o.switch_latency_ns,
       number(0, kMaxDelayNs)},
      {"topology", "reconverge_ms", "--reconverge-ms",
       "routing reconverges this long after a failure (ECMP fabrics with BGP)", &o.reconverge_ms,
       number(0, kMaxTimeMs, false, "0 = static routes")},
      // [topology.queue]: file only.
      {"topology.queue", "data_bytes", nullptr, "", &o.queue.data_bytes,
       integer(0, kMaxBufferBytes, "0 = one BDP")},
      {"topology.queue", "ecn_kmin_bytes", nullptr, "", &o.queue.ecn_kmin_bytes,
       integer(0, kMaxBufferBytes, "0 = 20% of data_bytes")},
      {"topology.queue", "ecn_kmax_bytes", nullptr, "", &o.queue.ecn_kmax_bytes,
       integer(0, kMaxBufferBytes, "0 = 80% of data_bytes")},
      {"topology.queue", "ecn_last_hop", "!--no-ecn-last-hop",
       "switches do not ECN-mark on ports facing hosts (by default they do; an incast is then seen only by "
       "its trims)",
       &o.queue.ecn_last_hop, any()},
      {"topology.queue", "ecn_at_dequeue", "--ecn-at-dequeue",
       "switches mark ECN when a packet leaves the queue (default: when it joins it)", &o.queue.ecn_at_dequeue,
       any()},
      {"topology.queue", "trimming", nullptr, "", &o.queue.trimming, any()},
      {"topology.queue", "trimmed_weight_pct", nullptr, "", &o.queue.trimmed_weight_pct, integer(0, 100)},
      {"topology.queue", "trimmed_bytes", nullptr, "", &o.queue.trimmed_bytes, integer(0, kMaxBufferBytes)},
      {"topology.queue", "control_bytes", nullptr, "", &o.queue.control_bytes, integer(1, kMaxBufferBytes)},
      {"topology.queue", "pfc", nullptr, "", &o.queue.pfc, any()},
      {"topology.queue", "pfc_xoff_bytes", nullptr, "", &o.queue.pfc_xoff_bytes,
       integer(0, kMaxBufferBytes, "0 = 70% of data_bytes")},
      {"topology.queue", "pfc_xon_bytes", nullptr, "", &o.queue.pfc_xon_bytes,
       integer(0, kMaxBufferBytes, "0 = 50% of data_bytes")},
      // [workload]
      {"workload", "kind", "--workload", "train, allreduce, permutation, incast, alltoall, cm", &o.workload,
       one_of({"train", "allreduce", "permutation", "incast", "alltoall", "cm"})},
      // One RDMA message at most: a flow is one WRITE per QP, and an all-reduce
      // chunk a fraction of the size.
      {"workload", "bytes", "--bytes", "all-reduce size (train/allreduce) or bytes per flow", &o.bytes,
       integer(1, kMaxMessageBytes)},
      {"workload", "steps", "--steps", "training steps", &o.steps, integer(1, 100'000)},
      {"workload", "compute_us", "--compute-us", "compute time per training step", &o.compute_us,
       number(0, kMaxTimeMs * 1e3)},
      {"workload", "fan_in", "--fan-in", "incast senders", &o.fan_in, integer(1, kMaxHosts - 1)},
      {"workload", "victim", "--victim", "incast: add a victim flow to the target's T0 neighbour", &o.victim,
       any()},
      {"workload", "cm", "--cm", "connection matrix file (workload cm)", &o.cm_file, any()},
      // [run]
      {"run", "transports", "--transports", "transports side by side (docs/mrc-sim.md)", &o.transports,
       one_of(transport_names())},
      {"run", "seed", "--seed", "seed; same configuration + seed = byte-identical output", &o.seed,
       integer(0, u64max)},
      {"run", "partitions", "--partitions",
       "split the fabric into this many partitions, run on --threads threads (the switches by planes, "
       "then pods or T0 ranges, each host with its T0); the output is the same for every count",
       &o.partitions, integer(1, 4096, "1 = one thread")},
      {"run", "threads", "--threads",
       "threads running the partitions (of each MPI rank); the output is the same for every count",
       &o.threads, integer(0, 4096, "0 = one per partition, at most one per CPU this process may use")},
      {"run", "memory_limit_gb", "--memory-limit-gb",
       "refuse to build a run whose estimated memory exceeds this many GB (default: the memory the machine "
       "has available); under mpirun, per rank",
       &o.memory_limit_gb, number(0, 1e9, false, "0 = available memory")},
      {"run", "time_limit_ms", "--time-limit-ms", "stop after this much simulated time", &o.time_limit_ms,
       number(0, kMaxTimeMs, true)},
      // 1 ns at least: the clock counts picoseconds, and a finer series would
      // only fill memory.
      {"run", "sample_us", "--sample-us", "time-series sample interval", &o.sample_us,
       number(0.001, kMaxTimeMs * 1e3)},
      // A transfer is split over at most 256 QPs: the piece number is 8 bits
      // of the immediate (workload.cc).
      {"run", "qps_per_peer", "--qps-per-peer", "QPs per host pair", &o.qps_per_peer,
       integer(0, 256, "0 = 1 for MRC, one per plane for RoCE")},
      // A QP has at most 4096 EVs (core::EvProfile); resolve() checks the
      // total over the planes.
      {"run", "evs_per_plane", "--evs-per-plane", "EVs per QP and plane (half active)", &o.evs_per_plane,
       integer(0, 4096, "0 = for the routing: 32 under srv6, 256 and recycling under ecmp")},
      {"run", "mrc_qps_per_peer", "--mrc-qps-per-peer", "QPs per host pair of the mrc* transports",
       &o.mrc_qps_per_peer, integer(0, 256, "0 = --qps-per-peer")},
      {"run", "roce_qps_per_peer", "--roce-qps-per-peer", "QPs per host pair of the roce* transports",
       &o.roce_qps_per_peer, integer(0, 256, "0 = --qps-per-peer")},
      // The core takes the ACK timeout as the verbs exponent (QpAttr::timeout <= 24).
      {"run", "mrc_ack_timeout", "--mrc-ack-timeout", "ACK timeout of the mrc* transports: 1.024 us x 2^N",
       &o.mrc_ack_timeout, integer(1, 24, "6 = 65.5 us")},
      {"run", "roce_ack_timeout", "--roce-ack-timeout", "ACK timeout of the roce* transports: 1.024 us x 2^N",
       &o.roce_ack_timeout, integer(1, 24, "6 = 65.5 us")},
      {"run", "mrc_retry_count", "--mrc-retry-count", "retries (timeouts, NAKs) before an mrc* QP fails",
       &o.mrc_retry_count, integer(0, 32, "32 = forever")},
      {"run", "roce_retry_count", "--roce-retry-count", "retries (timeouts, NAKs) before a roce* QP fails",
       &o.roce_retry_count, integer(0, 32, "32 = forever")},
      {"run", "mrc_sack_bytes", "--mrc-sack-bytes",
       "an mrc* responder SACKs after this many new bytes (the reference's UEC default: 16384)", &o.mrc_sack_bytes,
       integer(256, 16 << 20, "16384")},
      {"run", "mrc_ev_recycle", "--mrc-ev-recycle",
       "an mrc* QP sends its next packets on the EVs whose packets came back unmarked before the rotation's "
       "(core::ProtocolConfig::ev_recycle); on by itself under --routing ecmp with --evs-per-plane 0",
       &o.mrc_ev_recycle, any()},
      {"run", "mrc_sack_ports", "--mrc-sack-ports",
       "spread: an mrc* responder's SACKs take turns over the ports; arrival: each leaves on the plane its "
       "trigger arrived on (the reference's choice)",
       &o.mrc_sack_ports, one_of({"spread", "arrival"})},
      {"run", "mrc_sack_wait_max_us", "--mrc-sack-wait-max-us",
       "a coalesced mrc* SACK waits for data to stop (1 us) but at most this long after the first arrival it "
       "covers, us",
       &o.mrc_sack_wait_max_us, number(1, 1000, false, "16; 1 = a fixed 1 us timer")},
      {"run", "mrc_sack_wait_gaps", "--mrc-sack-wait-gaps",
       "a coalesced mrc* SACK's data has stopped after 1 us or this many of the QP's recent arrival gaps, "
       "whichever is longer",
       &o.mrc_sack_wait_gaps, integer(0, 64, "2; 0 = 1 us alone")},
      {"run", "mrc_port_arbiter", "--mrc-port-arbiter",
       "balance: a NIC's free port goes to the first mrc* QP in turn whose destination has used that plane "
       "least, so each destination's packets spread evenly over the planes; turns: plain turns",
       &o.mrc_port_arbiter, one_of({"balance", "turns"})},
      {"run", "roce_ack_packets", "--roce-ack-packets", "a roce* responder ACKs every this many packets",
       &o.roce_ack_packets, integer(1, 4096, "16")},
      {"run", "mtu", "--mtu", "path MTU: payload bytes per packet", &o.mtu,
       one_of_values({256, 512, 1024, 2048, 4096})},
      {"run", "base_rtt_us", "--base-rtt-us", "base RTT for buffer sizes (one BDP) and congestion control, us",
       &o.base_rtt_us, number(0, 1e6, false, "0 = derived from the topology: twice the longest one-way latency")},
      // Uplink numbers are T0 ports, so below the radix; resolve() checks the
      // T0s of the topology have this one, and SRv6 routing (under ECMP the
      // switches hash the path, the EV cannot name it).
      {"run", "pin_t0_uplink", "--pin-t0-uplink",
       "pin every QP's active EVs to this uplink of its T0 (srv6; a congested-uplink experiment)", &o.pin_t0_uplink,
       integer(0, kMaxRadix - 1, "left out = no pinning")},
      {"run", "pin_only", "--pin-only", "with --pin-t0-uplink: no EVs on other uplinks, QPs never leave it",
       &o.pin_only, any()},
      {"run", "qp_hints", "!--no-qp-hints",
       "give QPs no traffic hint (by default each gets QPs per peer and its target's senders, and NSCC starts "
       "at that share of line rate)",
       &o.qp_hints, any()},
      {"run", "mrc_hint_share", "--mrc-hint-share",
       "an mrc* QP whose hinted share of its target's line rate is a few packets starts its window at this "
       "many shares, up to --mrc-hint-share-cap packets",
       &o.mrc_hint_share, number(0, 65536, true, "2")},
      {"run", "mrc_hint_share_cap", "--mrc-hint-share-cap", "the most packets --mrc-hint-share raises a window to",
       &o.mrc_hint_share_cap, integer(1, 65536, "8")},
      {"run", "default_failures", "!--no-default-failures",
       "without --fail, run no failures (by default the T1 reboot and link flap of the default scenario)",
       &o.default_failures, any()},
      // [output]
      {"output", "json", "--json", "write results as JSON to this file", &o.json_out, any()},
      {"output", "csv", "--csv", "write results as CSV files into this directory (created if missing)",
       &o.csv_dir, any()},
      {"output", "svg", "--svg", "write SVG plots into this directory (created if missing)", &o.svg_dir, any()},
      {"output", "quiet", "--quiet", "no progress bar on stderr", &o.quiet, any()},
      {"output", "series", "--series",
       "goodput series besides the total, in the JSON and CSV outputs (flow: flow workloads)", &o.series,
       one_of({"host", "plane", "flow"})},
      {"output", "plot_from_us", "--plot-from-us", "throughput.svg: the time axis starts here, us", &o.plot_from_us,
       number(0, kMaxTimeMs * 1e3)},
      {"output", "plot_to_us", "--plot-to-us", "throughput.svg: the time axis ends here, us", &o.plot_to_us,
       number(0, kMaxTimeMs * 1e3, false, "0 = the end of the run")},
      {"output", "pcap", "--pcap",
       "capture every packet leaving a host NIC to this pcap file, simulated time as timestamps (several "
       "transports: one file each, FILE.<transport>.pcap); open it with tools/wireshark/mrc.lua",
       &o.pcap, any()},
      {"output", "pcap_host", "--pcap-host", "with --pcap: capture only the packets this host sends", &o.pcap_host,
       integer(0, kMaxHosts - 1, "left out = every host")},
      {"output", "pcap_max_packets", "--pcap-max-packets",
       "with --pcap: packets written per file at most (a long run cannot fill the disk)", &o.pcap_max_packets,
       integer(1, 100'000'000)},
  };
}

const std::vector<std::string>& transport_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    std::string_view all = kTransportNames;
    while (!all.empty()) {
      const size_t comma = all.find(", ");
      out.emplace_back(all.substr(0, comma));
      all = comma == std::string_view::npos ? std::string_view() : all.substr(comma + 2);
    }
    return out;
  }();
  return names;
}

namespace {

/// A bound as a user would write it: 1000000000, not 1e+09.
std::string bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

bool is_integer(const Setting& s) {
  return std::holds_alternative<uint32_t*>(s.target) || std::holds_alternative<uint64_t*>(s.target);
}

bool is_number(const Setting& s) { return std::holds_alternative<double*>(s.target); }

std::string out_of_range(const Setting& s, const std::string& shown) {
  return fmt::format("{} is out of range ({})", shown, accepted(s));
}

}  // namespace

std::string accepted(const Setting& s) {
  const Rule& r = s.rule;
  std::string out;
  if (is_integer(s) && !r.values.empty()) {
    out = fmt::format("one of {}", fmt::join(r.values, ", "));
  } else if (is_integer(s)) {
    out = fmt::format("an integer from {} to {}", r.int_min, r.int_max);
  } else if (is_number(s)) {
    out = r.min_open ? fmt::format("a number > {} and <= {}", bound(r.min), bound(r.max))
                     : fmt::format("a number from {} to {}", bound(r.min), bound(r.max));
  } else if (!r.choices.empty()) {
    out = fmt::format("one of {}", fmt::join(r.choices, ", "));
  } else {
    out = "any value";
  }
  if (r.note) out += fmt::format("; {}", r.note);
  return out;
}

namespace {
bool integer_ok(const Rule& r, uint64_t v) {
  if (v < r.int_min || v > r.int_max) return false;
  return r.values.empty() || std::find(r.values.begin(), r.values.end(), v) != r.values.end();
}
}  // namespace

std::string check_integer(const Setting& s, int64_t v, const std::string& shown) {
  if (v < 0 || !integer_ok(s.rule, static_cast<uint64_t>(v))) return out_of_range(s, shown);
  return {};
}

std::string check_number(const Setting& s, double v, const std::string& shown) {
  const Rule& r = s.rule;
  if (!std::isfinite(v) || v < r.min || (r.min_open && v == r.min) || v > r.max) return out_of_range(s, shown);
  return {};
}

std::string check_choice(const Setting& s, const std::string& v, const std::string& shown) {
  const auto& c = s.rule.choices;
  if (c.empty() || std::find(c.begin(), c.end(), v) != c.end()) return {};
  return fmt::format("{} is not one of {}{}", shown, fmt::join(c, ", "), did_you_mean(v, c));
}

std::string check_text(const Setting& s, std::string_view text) {
  const std::string shown(text);
  if (is_integer(s)) {
    uint64_t v = 0;
    const char* end = text.data() + text.size();
    const bool digits =
        !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (!digits || ec != std::errc() || ptr != end || !integer_ok(s.rule, v))
      return out_of_range(s, shown);
    return {};
  }
  if (is_number(s)) {
    const std::string z(text);
    char* end = nullptr;
    const double v = z.empty() ? 0 : std::strtod(z.c_str(), &end);
    if (z.empty() || end != z.c_str() + z.size()) return out_of_range(s, shown);
    return check_number(s, v, shown);
  }
  return check_choice(s, shown, shown);
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = 3;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_d && d < name.size()) {
      best_d = d;
      best = c;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace mrc::sim::tool
