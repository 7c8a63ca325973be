// SPDX-License-Identifier: BSD-2-Clause
#include "mrc-sim/options.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

#include <openmrc/version.h>

#include "mrc-sim/config_file.hpp"
#include "mrc-sim/settings.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric.hpp"
#include "sim/fabric/partition.hpp"
#include "sim/scenario/failures.hpp"

namespace mrc::sim::tool {

namespace {

/// Appends fmt output to `out` (format string checked at compile time).
template <class... Args>
void append(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

/// A CLI11 check running the setting's shared rule (settings.hpp) on the
/// text given, before CLI11 converts it; CLI11 reports a refusal as
/// "--flag: <why>". Its description is the accepted range, for --help.
CLI::Validator rule_check(const Setting& s) {
  return CLI::Validator([s](std::string& text) { return check_text(s, text); }, accepted(s));
}

void add_flags(CLI::App& app, SimOptions& o) {
  app.add_option("--config", o.config_file,
                 "TOML scenario file (docs/mrc-sim.md); flags given as well override its values")
      ->check(CLI::ExistingFile);
  for (const Setting& s : settings(o)) {
    if (!s.flag) continue;
    std::visit(
        [&](auto* p) {
          using T = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<T, bool>) {
            app.add_flag(s.flag, *p, s.help);
          } else {
            CLI::Option* opt = app.add_option(s.flag, *p, s.help)->check(rule_check(s));
            if constexpr (std::is_same_v<T, std::vector<std::string>>) opt->delimiter(',');
          }
        },
        s.target);
  }
  // Failure specs are checked by parse_failure(), as in the scenario file.
  app.add_option("--fail", o.failures,
                 "failure, e.g. switch-down:tier=t1,plane=0,index=2,at=1ms,for=2ms (repeatable; replaces the "
                 "scenario file's failures)")
      ->check(CLI::Validator(
          [](std::string& text) {
            std::string why;
            return parse_failure(text, &why) ? std::string() : why;
          },
          "SPEC"));
}

Duration from_units(double v, double ps_per_unit) { return Duration::ps(static_cast<int64_t>(v * ps_per_unit)); }

// Only the fields a user can set, in the order the scenario file lists them;
// printed when any differs from the built-in defaults.
std::string queue_text(const QueueConfig& q) {
  return fmt::format("data {} B, ECN {}-{} B{}, trimming {} ({}% weight, {} B), control {} B, PFC {}{}", q.data_bytes,
                     q.ecn_kmin_bytes, q.ecn_kmax_bytes, q.ecn_last_hop ? "" : " (not on the last hop)",
                     q.trimming ? "on" : "off", q.trimmed_weight_pct, q.trimmed_bytes, q.control_bytes,
                     q.pfc ? "on" : "off",
                     q.pfc ? fmt::format(" (XOFF {} B, XON {} B)", q.pfc_xoff_bytes, q.pfc_xon_bytes) : "");
}

// Limits of the core the settings must respect together.
constexpr uint64_t kMaxEvsPerQp = 4096;    // core::EvProfile::validate
constexpr uint64_t kMaxQpsPerHost = 4096;  // core::EndpointConfig::max_qps

/// The most host pairs one host is part of (as sender or receiver) in the
/// workload (`flows`: the connection matrix's).
uint64_t max_peers_per_host(const SimOptions& o, uint32_t hosts, const std::vector<FlowSpec>& flows) {
  if (o.workload == "cm") {
    std::vector<uint64_t> pairs(hosts);
    std::set<std::pair<uint32_t, uint32_t>> seen;
    for (const FlowSpec& f : flows)
      if (seen.emplace(f.src, f.dst).second) {
        ++pairs[f.src];
        ++pairs[f.dst];
      }
    return pairs.empty() ? 0 : *std::max_element(pairs.begin(), pairs.end());
  }
  if (o.workload == "alltoall") return 2 * uint64_t{hosts - 1};
  if (o.workload == "incast") return uint64_t{o.fan_in} + 1;
  return 2;  // ring neighbours, permutation partners
}

/// A size as a user would write it: "32 MiB" when exact, else bytes.
std::string size_text(uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

/// What the workload will do once resolved: the collective's ring steps, or
/// the flows the run will start (scenario_flows(), the runner's own list).
std::string workload_text(const SimOptions& o, const Scenario& sc) {
  const uint32_t n = sc.topology.hosts;
  if (sc.workload == WorkloadKind::train || sc.workload == WorkloadKind::allreduce) {
    // RingTraining: each of the 2 (n - 1) ring steps moves bytes / n per host.
    const std::string ring = fmt::format("ring all-reduce of {} over {} hosts (2 x {} ring steps of {} per host)",
                                         size_text(sc.bytes), n, n - 1, size_text(std::max<uint64_t>(1, sc.bytes / n)));
    if (sc.workload == WorkloadKind::allreduce) return "one " + ring;
    return fmt::format("{} training steps: {:.0f} us compute + {}", sc.steps, o.compute_us, ring);
  }
  const std::vector<FlowSpec> flows = scenario_flows(sc);
  uint64_t total = 0, lo = std::numeric_limits<uint64_t>::max(), hi = 0;
  for (const FlowSpec& f : flows) {
    total += f.bytes;
    lo = std::min(lo, f.bytes);
    hi = std::max(hi, f.bytes);
  }
  std::string each = "no flows";
  if (!flows.empty() && lo == hi) each = fmt::format("{} flows of {}", flows.size(), size_text(lo));
  else if (!flows.empty()) each = fmt::format("{} flows of {} to {}", flows.size(), size_text(lo), size_text(hi));
  std::string what;
  if (sc.workload == WorkloadKind::permutation) what = "each host sends to one other";
  else if (sc.workload == WorkloadKind::alltoall) what = "every host to every other";
  else if (sc.workload == WorkloadKind::incast) {
    const size_t senders = flows.size() - (sc.victim ? 1 : 0);
    what = fmt::format("{} senders to host {}{}", senders, sc.incast_target,
                       sc.victim ? ", and a victim flow to its T0 neighbour" : "");
    if (senders < o.fan_in) what += fmt::format("; fan_in {} capped at the {} hosts free to send", o.fan_in, senders);
  } else {
    what = "connection matrix " + o.cm_file;
  }
  return fmt::format("{}: {} ({}), {} in all", o.workload, each, what, size_text(total));
}

/// A transport as it will run: protocol, paths, congestion control, QPs per
/// host pair.
std::string transport_text(const SimOptions& o, const Scenario& sc, const TransportSpec& t) {
  const bool roce = t.transport == core::Transport::roce_rc;
  std::string paths;
  switch (t.policy) {
    case core::PathPolicyKind::mrc:
      paths = fmt::format("{} EVs/plane ({} active), EV management{}", t.evs_per_plane, t.active_per_plane,
                          sc.protocol.ev_recycle ? " with EV recycling" : "");
      break;
    case core::PathPolicyKind::oblivious:
      paths = fmt::format("{} EVs/plane ({} active), no EV management", t.evs_per_plane, t.active_per_plane);
      break;
    default: paths = roce ? "1 ECMP path per QP, 1 plane per QP" : "1 ECMP path per QP"; break;
  }
  const bool pfc = sc.topology.queue.pfc || t.name == "roce-pfc";
  const bool qps_defaulted = roce && !o.qps_per_peer && !o.roce_qps_per_peer;
  std::string out = fmt::format("{}: {}, {}, {}, {} QP{}/host pair{}{}", t.name, roce ? "RoCEv2 RC go-back-N" : "MRC",
                                paths, t.cc.algorithm, t.qps_per_peer, t.qps_per_peer == 1 ? "" : "s",
                                qps_defaulted ? " (1 per plane)" : "", pfc ? ", PFC" : "");
  // Knobs at their defaults (TransportSpec) are not repeated.
  const TransportSpec d;
  if (t.timeout != d.timeout)
    out += fmt::format(", ACK timeout {:.1f} us", 1.024 * static_cast<double>(uint64_t{1} << t.timeout));
  if (t.retry_exp < 25) out += fmt::format(", {} retries", t.retry_linear + t.retry_exp);
  if (t.mtu != d.mtu) out += fmt::format(", MTU {}", t.mtu);
  if (!t.qp_hints) out += ", no QP hints";
  else if (t.cc.algorithm == core::kCcNscc && (o.mrc_hint_share != SimOptions{}.mrc_hint_share ||
                                                o.mrc_hint_share_cap != SimOptions{}.mrc_hint_share_cap))
    out += fmt::format(", small hinted shares x {:g} up to {} packets", t.cc.nscc.hint_share,
                       t.cc.nscc.hint_share_cap);
  const core::ProtocolConfig dp;
  if (!roce && sc.protocol.sack_bytes_threshold != dp.sack_bytes_threshold)
    out += fmt::format(", SACK every {} B", sc.protocol.sack_bytes_threshold);
  if (!roce && sc.protocol.spread_sacks != dp.spread_sacks) out += ", SACKs on the arrival plane";
  if (!roce && sc.protocol.sack_coalesce_max != dp.sack_coalesce_max)
    out += fmt::format(", SACK wait at most {:.3g} us", sc.protocol.sack_coalesce_max.to_us());
  if (!roce && sc.protocol.sack_coalesce_gaps != dp.sack_coalesce_gaps)
    out += sc.protocol.sack_coalesce_gaps == 0 ? std::string(", SACK wait 1 us")
                                                : fmt::format(", SACK wait {} gaps", sc.protocol.sack_coalesce_gaps);
  if (!roce && !sc.balance_peer_ports) out += ", plain port turns";
  if (roce && sc.protocol.rc_ack_packets != dp.rc_ack_packets)
    out += fmt::format(", ACK every {} packets", sc.protocol.rc_ack_packets);
  if (t.pin_t0_uplink >= 0)
    out += t.pin_only ? fmt::format(", only T0 uplink {}", t.pin_t0_uplink)
                      : fmt::format(", active EVs pinned to T0 uplink {}", t.pin_t0_uplink);
  return out;
}

}  // namespace

int parse_command_line(int argc, const char* const* argv, SimOptions* o, std::string* error) {
  CLI::App app{"mrc-sim: packet-level simulation of multi-plane AI fabrics with the real MRC core on every NIC"};
  const SimOptions base = *o;
  app.set_version_flag("--version", "mrc-sim (OpenMRC) " OPENMRC_VERSION_STRING);
  add_flags(app, *o);
  try {
    app.parse(argc, argv);
    if (!o->config_file.empty()) {
      // Load the file over the defaults, then parse again: CLI11 assigns only
      // the options present on the command line, so those win.
      const std::string path = o->config_file;
      *o = base;
      std::string why;
      if (!load_config_file(path, o, &why)) {
        fmt::print(stderr, "mrc-sim: {}\n", why);
        if (error) *error = why;
        return 2;
      }
      app.parse(argc, argv);
    }
  } catch (const CLI::ParseError& e) {
    // --help exits with 0; every usage error with 2, as a bad scenario file.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::ostringstream msg;
    app.exit(e, msg, msg);
    std::fputs(msg.str().c_str(), stderr);
    if (error) *error = msg.str();
    return 2;
  }
  return -1;
}

namespace {

// Memory model of estimate_memory, fitted to peak RSS (/usr/bin/time -f %M)
// of release builds with 8 planes, permutations of 1,024 and 4,096 hosts at
// 2 to 64 EVs per plane on clos2 (3 switch ports per host-plane): 58.2, 81.2
// and 106.0 MB at 1,024 hosts (2, 32, 64 EVs), 308.7 MB at 4,096 with 32
// (the model: 57.9, 81.2, 105.5, 308.4); and 1,024 hosts on fattree3 (5
// switch ports per host-plane): 95.8 MB (the model: 95.8). An EV that has
// had trouble (a loss, a SKIP, a probe) takes its EvHealth record on top,
// about 90 bytes, which a fault-free run never allocates.
//
// A host's own state (NIC, endpoint, CQs, its part of the workload) is
// about 12 KB whatever its planes; the fits above, all with 8 planes, could
// not tell it from the per-host-plane cost, which left a 1-plane fabric 40 %
// under (32,768 hosts: 1,172 MB measured).
//
// Packets in flight and queued cost about 250 B each (a simulator packet is
// headers and bookkeeping, no payload, and its events): each host-plane
// holds its flows' packets on the plane, at most about two round trips'
// worth at its link rate. Fitted on permutations at 100 Gb/s with 16 EVs per
// plane on 51.2T switches, with 8 planes: bench/scale.sh's 1 MiB flows
// stopped at 0.05 ms, 477, 962, 1,931 and 3,869 MB at 4,096 to 32,768 hosts
// (the model: 508, 1,010, 2,011, 4,022); run to completion at 8,192 hosts,
// 512 and 786 MB with 64 KiB and 512 KiB flows (518 and 747); at 131,072
// hosts 8,122 and 12,551 MB with 64 KiB and 512 KiB flows (8,208 and
// 11,878); and with 1 plane: 116 MB at 4,096 hosts with 64 KiB flows (113),
// 1,172 MB at 32,768 with 1 MiB flows stopped at 0.05 ms (1,192). The model
// is within 7 % of each. (MB here as in the docs: /usr/bin/time's KiB /
// 1024.)
constexpr double kFixedBytes = 5.4e6;           // the process, libraries, buffers
constexpr double kPerHostBytes = 12064;         // NIC, endpoint, CQs, the workload's state
constexpr double kPerHostPlaneBytes = 1000;     // NIC port, host link (uplink pipe and link record)
constexpr double kPerPacketBytes = 250;         // a packet in flight or queued
constexpr double kPerSwitchPortBytes = 890;     // egress queues and pipe, links
constexpr double kPerConnectionBytes = 5000;    // the QPs at both ends, without their EVs
constexpr double kPerConnectionEvBytes = 95;    // an EV at both ends (EvSlot, indexes, EvHealth pointer)
// Across R processes (MPI ranks), each rank builds the NICs, endpoints and
// QPs (and their EVs) of its own hosts alone; another rank's host is a
// stand-in of about 1 KB (what its endpoint draws, core::EndpointIds, its
// memory keys and receive poster). The NIC and endpoint a rank does not
// build (kPerNicBytes of kPerHostBytes, and kPerNicPortBytes of each
// host-plane's kPerHostPlaneBytes) are fitted to the drop in peak RSS when
// ranks stopped building them: about 8 KB per other rank's host at 8 planes
// (7 KB net of the placeholder QPs they had), at 1,024 and 4,096 hosts on 2
// and 4 ranks. The packets in flight are the rank's planes'. Of the fabric, a rank
// builds the switches of its partitions (a switch port's egress queues and
// pipe: all of kPerSwitchPortBytes but its share of the link records and
// port tables, kept on every rank) and the host links' pipes with an end in
// its partitions: with plane partitions a host link's uplink where its host
// or its T0 is the rank's, (2R - 1) / R^2 of them, and its downlink outside
// a T0 slot where its host is the rank's and its T0 is not, (R - 1) / R^2
// (docs/simulator.md, "Across processes").
constexpr double kPerNicBytes = 5500;           // of kPerHostBytes: NIC, endpoint, CQs
constexpr double kPerNicPortBytes = 300;        // of kPerHostPlaneBytes: the NIC's and endpoint's port
constexpr double kStandInBytes = 1000;          // another rank's host
constexpr double kKeptPerSwitchPortBytes = 40;  // every rank: link records, port tables, switch placeholders
constexpr double kHostPipeBytes = 320;          // a host link's pipe (sizeof(Pipe))

// The planes of the topology `o` names: `planes`, or where it is 0 the
// topology's own default (8 on clos2, 1 on fattree3); fattree2 has one.
uint32_t planes_of(const SimOptions& o) {
  if (o.topology == "fattree2") return 1;
  return o.planes ? o.planes : o.topology == "clos2" ? 8 : 1;
}

// The kind and sizes of the topology `o` names (resolve() checks the names
// first; the rest of the configuration is resolve()'s).
TopologyConfig topology_sizes(const SimOptions& o) {
  TopologyConfig t;
  t.kind = o.topology == "fattree3"   ? TopologyKind::fattree3
           : o.topology == "fattree2" ? TopologyKind::fattree2
                                      : TopologyKind::clos2_multiplane;
  t.planes = planes_of(o);
  t.hosts = o.hosts;
  t.t0_down = o.t0_down;
  t.t0_up = o.t0_up;
  t.t1_count = o.t1;
  t.pods = o.pods;
  t.t2_count = o.t2;
  return t;
}

// QPs per host pair of transport `t`: its family's setting, else
// qps_per_peer, else 1 for MRC and one per plane for RoCE.
uint32_t qps_per_peer_for(const SimOptions& o, const std::string& t, uint32_t planes) {
  const bool roce = t.rfind("roce", 0) == 0;
  const uint32_t family_qps = roce ? o.roce_qps_per_peer : o.mrc_qps_per_peer;
  return family_qps ? family_qps : o.qps_per_peer ? o.qps_per_peer : (roce ? planes : 1);
}

// evs_per_plane 0 picks the EV set for the routing. Under ECMP the switches
// hash the EV onto their uplinks, so a QP needs many EVs, all in use and
// the well-behaved ones reused first (EV recycling), to spread as evenly as
// a sprayer drawing from a large entropy space: the 128-host permutation's
// slowest flow finishes within 5-7 % of UEC htsim's with 256 EVs per plane
// and recycling, 33-47 % behind with 32 (docs/simulator.md, "ECMP and
// htsim"). Under SRv6 routing each EV names its path and 32 per plane (half
// active) are plenty.
constexpr uint32_t kSrv6EvsPerPlane = 32;
constexpr uint32_t kEcmpEvsPerPlane = 256;

SimOptions with_routing_defaults(const SimOptions& in) {
  SimOptions o = in;
  if (o.evs_per_plane != 0) return o;
  if (o.routing == "ecmp") {
    o.evs_per_plane = static_cast<uint32_t>(std::min<uint64_t>(kEcmpEvsPerPlane, kMaxEvsPerQp / planes_of(o)));
    o.mrc_ev_recycle = true;
  } else {
    o.evs_per_plane = kSrv6EvsPerPlane;
  }
  return o;
}

}  // namespace

MemoryEstimate estimate_memory(const SimOptions& given, size_t matrix_flows) {
  const SimOptions o = with_routing_defaults(given);
  MemoryEstimate e;
  e.planes = planes_of(o);
  const double hosts = o.hosts;
  if (o.workload == "incast") e.connections = static_cast<double>(o.fan_in) + (o.victim ? 1 : 0);
  else if (o.workload == "alltoall") e.connections = hosts * (hosts - 1);
  else if (o.workload == "cm") e.connections = static_cast<double>(matrix_flows);
  else e.connections = hosts;  // a ring (train, allreduce) or a permutation: one pair per host
  for (const auto& t : o.transports) e.qps_per_peer = std::max(e.qps_per_peer, qps_per_peer_for(o, t, e.planes));
  const double conns = e.connections * e.qps_per_peer;
  const double evs = static_cast<double>(o.evs_per_plane) * e.planes;
  // Switch ports per host-plane, from the topology's shape (3 on a clos2
  // with as many uplinks as host ports, 5 on a fat tree with a core); sizes
  // resolve() will refuse are counted as 3.
  double ports = 3;
  TopologyConfig t = topology_sizes(o);
  t.host_link_bps = static_cast<uint64_t>(o.rate_gbps * 1e9);
  if (t.validate(nullptr)) {
    const TopologyShape s = t.shape();
    const uint64_t per_plane = uint64_t{s.t0_count} * (s.t0_down + s.t0_up) +
                               uint64_t{s.t1_count} * (s.t1_down + s.t1_up) + uint64_t{s.t2_count} * s.t2_ports;
    ports = static_cast<double>(per_plane) / hosts;
  }
  // Packets in flight per host-plane: a flow's packets on the plane (a
  // ring step's share of an all-reduce), at most two round trips at the
  // link rate (host-T0-T1-T0-host, or through a T2 on fattree3).
  const bool ring = o.workload == "allreduce" || o.workload == "train";
  const double flow_bytes = ring ? static_cast<double>(o.bytes) / hosts : static_cast<double>(o.bytes);
  const double flow_packets = std::ceil(flow_bytes / e.planes / o.mtu) * (conns / hosts);
  const double links = o.topology == "fattree3" ? 6 : 4;
  const double link_bps = o.rate_gbps * 1e9;
  const double one_way_s = links * (o.link_delay_ns * 1e-9 + (o.mtu + 200) * 8 / link_bps) +
                           (links - 1) * o.switch_latency_ns * 1e-9;
  const double rtt_packets = 2 * one_way_s * link_bps / 8 / o.mtu;
  const double in_flight = std::min(flow_packets, 2 * rtt_packets);
  // What every process builds, what R ranks divide, and the host links'
  // pipes, which a rank builds where one of their ends is its own.
  const double host_planes = hosts * e.planes;
  const double every =
      kFixedBytes + (kPerHostBytes - kPerNicBytes) * hosts +
      (kPerHostPlaneBytes - kHostPipeBytes - kPerNicPortBytes + ports * kKeptPerSwitchPortBytes) * host_planes;
  const double divided = in_flight * kPerPacketBytes * host_planes + conns * kPerConnectionBytes +
                         conns * evs * kPerConnectionEvBytes + kPerNicBytes * hosts +
                         (kPerNicPortBytes + ports * (kPerSwitchPortBytes - kKeptPerSwitchPortBytes)) * host_planes;
  e.ranks = std::max<uint32_t>(1, o.ranks);
  const double r = e.ranks;
  const double host_pipes = kHostPipeBytes * host_planes * (3 * r - 2) / (r * r);
  const double per_rank = every + divided / r + host_pipes + kStandInBytes * hosts * (r - 1) / r;
  auto to_bytes = [](double b) {
    return b >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(b);
  };
  e.bytes = to_bytes(per_rank);
  e.total_bytes = to_bytes(every + divided + kHostPipeBytes * host_planes);
  return e;
}

std::string memory_refusal(const SimOptions& given, size_t matrix_flows) {
  const SimOptions o = with_routing_defaults(given);
  const uint64_t limit =
      o.memory_limit_gb > 0 ? static_cast<uint64_t>(o.memory_limit_gb * 1e9) : o.memory_available_bytes;
  const MemoryEstimate e = estimate_memory(o, matrix_flows);
  if (limit == 0 || e.bytes <= limit) return {};
  // Across processes the figure and the limit are one rank's: a user sizes
  // each machine of the cluster by it (or runs more ranks).
  const std::string per =
      e.ranks > 1 ? fmt::format(" per MPI rank ({} ranks; {:.1f} GB in one process)", e.ranks,
                                static_cast<double>(e.total_bytes) / 1e9)
                  : std::string();
  return fmt::format(
      "this run needs about {:.1f} GB of memory{} ({} hosts x {} planes, {:.0f} connections x {} QP(s) with {} EVs "
      "per plane), more than {} ({:.1f} GB). Make it smaller (--hosts, --planes, --evs-per-plane {}, "
      "--qps-per-peer){}, or give --memory-limit-gb if the machine has the memory",
      static_cast<double>(e.bytes) / 1e9, per, o.hosts, e.planes, e.connections, e.qps_per_peer, o.evs_per_plane,
      o.memory_limit_gb > 0 ? "--memory-limit-gb" : "the memory available", static_cast<double>(limit) / 1e9,
      std::max<uint32_t>(2, o.evs_per_plane / 2), e.ranks > 1 ? ", run on more ranks (mpirun -np)" : "");
}

uint32_t run_threads(const SimOptions& o) {
  const uint32_t mine = std::max<uint32_t>(1, o.partitions / std::max<uint32_t>(1, o.ranks));
  if (o.threads) return std::min(o.threads, mine);
  return o.cpus_available ? std::min(mine, o.cpus_available) : mine;
}

Result<ResolvedRun> resolve(const SimOptions& given, std::string* why) {
  const SimOptions o = with_routing_defaults(given);
  auto fail = [&](Errc e, const std::string& msg) {
    if (why) *why = msg;
    return e;
  };
  if (o.topology != "clos2" && o.topology != "fattree2" && o.topology != "fattree3")
    return fail(Errc::invalid_argument, "unknown topology '" + o.topology + "' (clos2, fattree2, fattree3)");
  if (o.routing != "srv6" && o.routing != "ecmp")
    return fail(Errc::invalid_argument, "unknown routing '" + o.routing + "' (srv6, ecmp)");
  TopologyConfig topo = topology_sizes(o);
  topo.routing = o.routing == "ecmp" ? Routing::ecmp : Routing::srv6;
  topo.host_link_bps = static_cast<uint64_t>(o.rate_gbps * 1e9);
  topo.fabric_link_bps = static_cast<uint64_t>(o.fabric_rate_gbps * 1e9);
  topo.link_delay = from_units(o.link_delay_ns, 1e3);
  topo.switch_latency = from_units(o.switch_latency_ns, 1e3);
  topo.reconverge_after = from_units(o.reconverge_ms, 1e9);
  topo.queue = o.queue;
  std::string msg;
  if (Status s = topo.validate(&msg); !s) return fail(Errc::invalid_argument, "invalid topology: " + msg);
  // Before anything of this size is built: a run that would not fit is
  // refused here, not by std::bad_alloc half-way. A connection matrix is counted once it is read.
  if (std::string m = memory_refusal(o); !m.empty()) return fail(Errc::invalid_argument, m);
  if (o.ranks > 1 && o.partitions == 1)
    return fail(Errc::invalid_argument,
                fmt::format("--partitions 1 under {} MPI ranks: give --partitions {} (a partition per rank) or a "
                            "multiple of it, or run without mpirun",
                            o.ranks, o.ranks));
  if (o.ranks > 1 && o.partitions % o.ranks != 0)
    return fail(Errc::invalid_argument,
                fmt::format("--partitions {} does not divide over {} MPI ranks (mpirun -np {}): give --partitions a "
                            "multiple of {}",
                            o.partitions, o.ranks, o.ranks, o.ranks));
  if (o.partitions > 1)
    if (auto plan = plan_partitions(topo, o.partitions, &msg); !plan) return fail(Errc::invalid_argument, msg);

  std::vector<std::string> fail_text = o.failures;
  const bool default_failures = fail_text.empty() && o.default_failures && topo.kind == TopologyKind::clos2_multiplane;
  if (default_failures) {
    // The default scenario: a T1 switch reboots and a NIC-T0 link flaps
    // mid-run: T1 1 of plane 0, and host 5's link on plane 3, or the last
    // T1, host or plane where the topology has fewer.
    const uint32_t t1 = std::min<uint32_t>(1, o.t1 - 1);
    const uint32_t plane = std::min<uint32_t>(3, topo.planes - 1);
    const uint32_t host = std::min<uint32_t>(5, o.hosts - 1);
    fail_text = {fmt::format("switch-down:tier=t1,plane=0,index={},at=3ms,for=1ms", t1),
                 fmt::format("link-flap:tier=host,plane={},a={},at=5ms,until=6500us,period=300us,duty=0.5", plane,
                             host)};
  }
  // A default failure the topology still refuses says which flag removes it.
  auto failure_error = [&](const std::string& m) {
    return fail(Errc::invalid_argument,
                default_failures ? m + " (in the default failure schedule: give --fail, or --no-default-failures "
                                       "to run without failures)"
                                 : m);
  };
  ResolvedRun run;
  Scenario& sc = run.scenario;
  for (const auto& t : fail_text) {
    auto f = parse_failure(t, &msg);
    if (!f) return failure_error(msg);
    sc.failures.push_back(*f);
  }
  {
    // The layout alone: the real fabric is built by each run (a built
    // probe took 728 MB and 1.2 s of CPU at 32,768 hosts x 8 planes).
    Simulator probe(o.seed);
    Fabric probe_fabric(probe, topo, Fabric::LayoutOnly{});
    if (Status s = validate_failures(sc.failures, probe_fabric, &msg); !s) return failure_error(msg);
    // The base RTT sizes the switch buffers (one BDP) and seeds congestion
    // control: twice the longest unloaded one-way latency of a full packet
    // on this fabric, as the runner derives the protocol's, unless given.
    topo.base_rtt = o.base_rtt_us > 0 ? from_units(o.base_rtt_us, 1e6) : probe_fabric.max_one_way_latency() * 2;
  }
  if (!o.controller.empty() || o.controller.ev_profile != 0 || o.controller.cc_profile != 0 ||
      !o.controller.hosts.empty()) {
    if (Status s = validate_controller_plan(o.controller, topo.num_planes(), topo.hosts, &msg); !s)
      return fail(Errc::invalid_argument, "controller profiles: " + msg);
    sc.controller = o.controller;
  }
  if (o.base_rtt_us > 0) {
    sc.derive_base_rtt = false;
    sc.protocol.base_rtt = topo.base_rtt;
    sc.protocol.reorder_allowance = topo.base_rtt / 4;  // as the runner sets it from a derived base RTT
  }
  if (Status s = topo.validate(&msg); !s) return fail(Errc::invalid_argument, "invalid topology: " + msg);
  // Settings that are fine alone but not together (each alone follows its
  // rule in settings.cc).
  if (o.plot_to_us > 0 && o.plot_to_us <= o.plot_from_us)
    return fail(Errc::invalid_argument, fmt::format("plot_to_us ({}) must be above plot_from_us ({}), or 0",
                                                    o.plot_to_us, o.plot_from_us));
  if (o.transports.empty())
    return fail(Errc::invalid_argument, std::string("no transport to run (transports: ") + kTransportNames + ")");
  if (uint64_t{o.evs_per_plane} * topo.num_planes() > kMaxEvsPerQp)
    return fail(Errc::invalid_argument,
                fmt::format("evs_per_plane: {} EVs per plane x {} planes = {} EVs per QP; at most {} (lower "
                            "evs_per_plane to {} or less)",
                            o.evs_per_plane, topo.num_planes(), uint64_t{o.evs_per_plane} * topo.num_planes(),
                            kMaxEvsPerQp, kMaxEvsPerQp / topo.num_planes()));
  // A capture (main.cc) names hosts by index.
  if (o.pcap.empty() && (o.pcap_host != kAllHosts || o.pcap_max_packets != SimOptions{}.pcap_max_packets))
    return fail(Errc::invalid_argument, "pcap_host and pcap_max_packets need pcap (the capture file)");
  if (!o.pcap.empty() && o.partitions > 1)
    return fail(Errc::invalid_argument,
                "pcap: a capture needs --partitions 1 (the hosts of a partitioned run transmit from several threads)");
  if (o.pcap_host != kAllHosts && o.pcap_host >= topo.hosts)
    return fail(Errc::invalid_argument,
                fmt::format("pcap_host: {} is not a host (0 to {})", o.pcap_host, topo.hosts - 1));
  // Pinning (Cluster::pin) names a T0 uplink through the EV, which only
  // SRv6 source routing honours; with pin_only, each plane needs an EV on
  // that uplink, and make_evs() names every uplink once per t0_up EVs.
  if (o.pin_only && o.pin_t0_uplink == kNoPin)
    return fail(Errc::invalid_argument, "pin_only needs pin_t0_uplink (the uplink to pin to)");
  if (o.pin_t0_uplink != kNoPin) {
    if (topo.routing != Routing::srv6)
      return fail(Errc::invalid_argument,
                  "pin_t0_uplink needs srv6 routing (under ecmp the switches hash the path; the EV cannot name it)");
    if (o.pin_t0_uplink >= topo.t0_up)
      return fail(Errc::invalid_argument, fmt::format("pin_t0_uplink: {} is not an uplink of the T0s (0 to {})",
                                                      o.pin_t0_uplink, topo.t0_up - 1));
    if (o.pin_only && o.evs_per_plane < topo.t0_up)
      return fail(Errc::invalid_argument,
                  fmt::format("pin_only: {} EVs per plane name only {} of the {} T0 uplinks, maybe not uplink {} "
                              "(evs_per_plane {} or more)",
                              o.evs_per_plane, o.evs_per_plane, topo.t0_up, o.pin_t0_uplink, topo.t0_up));
  }
  // An ACK timeout shorter than the fabric's base RTT expires before any
  // acknowledgement can return: every packet would be resent (a 65.5 us
  // timeout against a 281 us RTT resent 8 times the data and took 10x the
  // ideal FCTs). Refused up front, naming the flag and the value that fits.
  for (const bool roce : {false, true}) {
    const bool used = std::any_of(o.transports.begin(), o.transports.end(),
                                  [&](const std::string& t) { return (t.rfind("roce", 0) == 0) == roce; });
    const uint32_t n = roce ? o.roce_ack_timeout : o.mrc_ack_timeout;
    const Duration timeout = Duration::ns(1024) * (int64_t{1} << n);
    if (!used || timeout >= topo.base_rtt) continue;
    uint32_t fit = n;
    while (fit < 24 && Duration::ns(1024) * (int64_t{1} << fit) < topo.base_rtt * 2) ++fit;
    return fail(Errc::invalid_argument,
                fmt::format("--{0}-ack-timeout {1} ({2:.1f} us) is shorter than this fabric's base RTT of {3:.1f} us "
                            "({4}): every packet would time out before its acknowledgement returns; use "
                            "--{0}-ack-timeout {5} ({6:.1f} us) or more",
                            roce ? "roce" : "mrc", n, timeout.to_us(), topo.base_rtt.to_us(),
                            o.base_rtt_us > 0 ? "--base-rtt-us" : "derived: twice the longest one-way latency",
                            fit, (Duration::ns(1024) * (int64_t{1} << fit)).to_us()));
  }
  for (const auto& t : o.transports) {
    const bool roce = t.rfind("roce", 0) == 0;
    const uint32_t qps = qps_per_peer_for(o, t, topo.num_planes());
    auto s = transport_by_name(t, o.evs_per_plane, qps);
    if (!s) return fail(Errc::not_found, "unknown transport '" + t + "' (" + kTransportNames + ")");
    s->timeout = static_cast<uint8_t>(roce ? o.roce_ack_timeout : o.mrc_ack_timeout);
    // N retries: up to 7 at the same timeout, the rest with doubling ones
    // (core::QpAttr retry_linear / retry_exp); 32 = retry_exp 25, forever.
    const uint32_t retries = roce ? o.roce_retry_count : o.mrc_retry_count;
    s->retry_linear = static_cast<uint8_t>(std::min<uint32_t>(7, retries));
    s->retry_exp = static_cast<uint8_t>(retries >= 32 ? 25 : retries - s->retry_linear);
    s->mtu = o.mtu;
    s->qp_hints = o.qp_hints;
    s->cc.nscc.hint_share = o.mrc_hint_share;  // read by NSCC only (mrc, mrc-nscc)
    s->cc.nscc.hint_share_cap = o.mrc_hint_share_cap;
    if (o.pin_t0_uplink != kNoPin) {
      s->pin_t0_uplink = static_cast<int32_t>(o.pin_t0_uplink);
      s->pin_only = o.pin_only;
    }
    run.transports.push_back(*s);
  }
  sc.topology = topo;
  if (o.workload == "train") sc.workload = WorkloadKind::train;
  else if (o.workload == "allreduce") sc.workload = WorkloadKind::allreduce;
  else if (o.workload == "permutation") sc.workload = WorkloadKind::permutation;
  else if (o.workload == "incast") sc.workload = WorkloadKind::incast;
  else if (o.workload == "alltoall") sc.workload = WorkloadKind::alltoall;
  else if (o.workload == "cm") sc.workload = WorkloadKind::matrix;
  else
    return fail(Errc::invalid_argument,
                "unknown workload '" + o.workload + "' (train, allreduce, permutation, incast, alltoall, cm)");
  sc.bytes = o.bytes;
  sc.steps = o.steps;
  sc.compute = from_units(o.compute_us, 1e6);
  sc.fan_in = o.fan_in;
  sc.victim = o.victim;
  sc.seed = o.seed;
  sc.partitions = o.partitions;
  sc.threads = run_threads(o);
  sc.time_limit = from_units(o.time_limit_ms, 1e9);
  sc.sample_every = from_units(o.sample_us, 1e6);
  auto wants = [&](const char* s) { return std::find(o.series.begin(), o.series.end(), s) != o.series.end(); };
  sc.series_hosts = wants("host");
  sc.series_planes = wants("plane");
  sc.series_flows = wants("flow");
  if (sc.sample_every <= Duration{}) return fail(Errc::invalid_argument, "the sample interval must be > 0 (sample_us)");
  sc.protocol.probe_interval = Duration::us(100);
  sc.protocol.probe_interval_max = Duration::ms(2);
  sc.protocol.sack_bytes_threshold = o.mrc_sack_bytes;
  sc.protocol.spread_sacks = o.mrc_sack_ports == "spread";
  sc.protocol.ev_recycle = o.mrc_ev_recycle;
  sc.protocol.sack_coalesce_max = from_units(o.mrc_sack_wait_max_us, 1e6);
  sc.protocol.sack_coalesce_gaps = o.mrc_sack_wait_gaps;
  sc.balance_peer_ports = o.mrc_port_arbiter == "balance";
  sc.protocol.rc_ack_packets = o.roce_ack_packets;
  if (sc.workload == WorkloadKind::matrix) {
    if (o.cm_file.empty()) return fail(Errc::invalid_argument, "workload cm needs a connection matrix (--cm FILE)");
    auto cm = read_connection_matrix(o.cm_file, topo.hosts, &msg);
    if (!cm) return fail(cm.error(), msg);
    sc.flows = *cm;
    if (std::string m = memory_refusal(o, sc.flows.size()); !m.empty()) return fail(Errc::invalid_argument, m);
  }
  // Failures timed from a training step need that step to happen.
  for (const FailureSpec& f : sc.failures) {
    if (f.at_step < 0) continue;
    const bool collective = sc.workload == WorkloadKind::train || sc.workload == WorkloadKind::allreduce;
    if (!collective)
      return fail(Errc::invalid_argument, "failure '" + f.text + "': at=step<K> needs the train or allreduce workload");
    const uint32_t steps = sc.workload == WorkloadKind::train ? sc.steps : 1;
    if (static_cast<uint32_t>(f.at_step) >= steps)
      return fail(Errc::invalid_argument, fmt::format("failure '{}': step {} never starts (steps 0 to {})", f.text,
                                                      f.at_step, steps - 1));
  }
  // Every host pair that exchanges data has a transport's QPs on each side.
  const uint64_t peers = max_peers_per_host(o, topo.hosts, sc.flows);
  for (const TransportSpec& t : run.transports) {
    const uint64_t per_host = uint64_t{std::max<uint32_t>(1, t.qps_per_peer)} * peers;
    if (per_host > kMaxQpsPerHost)
      return fail(Errc::invalid_argument,
                  fmt::format("qps_per_peer: {} with {} QPs per host pair needs up to {} QPs on one host; at most "
                              "{} (fewer QPs per peer, or fewer peers)",
                              t.name, t.qps_per_peer, per_host, kMaxQpsPerHost));
  }
  return run;
}

std::string describe(const SimOptions& o, const ResolvedRun& run) {
  const Scenario& sc = run.scenario;
  std::string out;
  append(out, "mrc-sim configuration\n");
  append(
      out,
      "  topology    {} ({} routing): {} hosts, {} plane(s), {} hosts/T0, {} up/T0, {} T1/plane, {:.0f} Gb/s links\n",
      o.topology, o.routing, o.hosts, sc.topology.num_planes(), o.t0_down, o.t0_up, o.t1, o.rate_gbps);
  // Lines for settings the default scenario leaves alone appear only when set,
  // so the default printout stays as it was.
  if (o.pods || o.t2) append(out, "  core        {} pods, {} T2 switches (0 = derived)\n", o.pods, o.t2);
  if (o.fabric_rate_gbps > 0 && o.fabric_rate_gbps != o.rate_gbps)
    append(out, "  fabric      {:.0f} Gb/s T0-T1 (and T1-T2) links\n", o.fabric_rate_gbps);
  if (queue_text(o.queue) != queue_text(QueueConfig{})) append(out, "  queues      {}\n", queue_text(o.queue));
  append(out, "  latency     {:.0f} ns per link, {:.0f} ns per switch; base RTT {:.2f} us ({})\n", o.link_delay_ns,
         o.switch_latency_ns, sc.topology.base_rtt.to_us(), o.base_rtt_us > 0 ? "set" : "derived");
  if (queue_text(o.queue) != queue_text(QueueConfig{}) || o.queue.ecn_at_dequeue)
    append(out, "  ECN         marked at {}\n", o.queue.ecn_at_dequeue ? "dequeue" : "enqueue");
  if (o.reconverge_ms > 0) append(out, "  routing     reconverges {} ms after each failure\n", o.reconverge_ms);
  append(out, "  workload    {}\n", workload_text(o, sc));
  for (const auto& f : sc.failures) append(out, "  failure     {}\n", f.text);
  for (size_t i = 0; i < run.transports.size(); ++i)
    append(out, "  {}  {}\n", i == 0 ? "transports" : "          ", transport_text(o, sc, run.transports[i]));
  if (const ControllerPlan& c = sc.controller; !c.empty()) {
    // Which profiles the MRC QPs use where (controller_plan.hpp).
    std::string hosts = "every host";
    if (!c.hosts.empty()) hosts = fmt::format("hosts {}", fmt::join(c.hosts, ", "));
    std::string ev = "own EV sets", cc = "own congestion control";
    for (const auto& p : c.ev_profiles)
      if (p.id == c.ev_profile) {
        const char* mode = p.mode == core::ctl::ev_mode::kAuto ? "auto" : p.mode == core::ctl::ev_mode::kExp ? "exp"
                                                                                                             : "gen";
        std::vector<std::string> events;
        if (p.event_mask & core::ctl::ev_state::kGood) events.push_back("good");
        if (p.event_mask & core::ctl::ev_state::kAssumedBad) events.push_back("assumed_bad");
        ev = fmt::format("EV profile {} ({}, {} EVs, min_active {}, events {})", p.id, mode,
                         p.count ? fmt::format("{}", p.count) : std::string("the simulator's"), p.min_active,
                         events.empty() ? std::string("none") : fmt::format("{}", fmt::join(events, "+")));
      }
    for (const auto& p : c.cc_profiles)
      if (p.id == c.cc_profile) cc = fmt::format("CC profile {} ({})", p.id, p.nscc ? core::kCcNscc : "none");
    append(out, "  controller  mrc QPs of {}: {}, {}\n", hosts, ev, cc);
  }
  append(out, "  seed        {}\n", o.seed);
  if (o.partitions > 1) {
    const uint32_t threads = run.scenario.threads;
    append(out, "  partitions  {} ({}{} thread{}; the results do not depend on it)\n", o.partitions,
           o.ranks > 1 ? fmt::format("{} MPI ranks x ", o.ranks) : "", threads, threads == 1 ? "" : "s");
  }
  if (!o.pcap.empty()) {
    std::string files;
    for (const auto& t : run.transports) files += (files.empty() ? "" : ", ") + pcap_file_for(o, t.name);
    append(out, "  capture     {}: packets leaving {}, at most {} per file\n", files,
           o.pcap_host == kAllHosts ? std::string("every host NIC") : fmt::format("host {}'s NIC", o.pcap_host),
           o.pcap_max_packets);
  }
  return out;
}

std::string pcap_file_for(const SimOptions& o, const std::string& transport) {
  if (o.transports.size() <= 1) return o.pcap;
  std::string stem = o.pcap;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".pcap") == 0) stem.resize(stem.size() - 5);
  return stem + "." + transport + ".pcap";
}

}  // namespace mrc::sim::tool
