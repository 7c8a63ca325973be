// SPDX-License-Identifier: BSD-2-Clause
// What the tools print: the perftest-style banner, address lines and
// result tables, completion status names, the JSON report, and the
// timeline and EV-event lines.

#include "perf/perf_common.hpp"

#include <fmt/core.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

namespace mrc::perf {

namespace {

template <class... Args>
void append(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

}  // namespace

// ------------------------------------------------------------------ formatting

std::string result_line() {
  // Built in place: GCC 12's LTO flags `std::string(87, '-') + "\n"` with a
  // false -Wstringop-overread.
  std::string s(88, '-');
  s.back() = '\n';
  return s;
}

std::string format_banner(std::string_view title, const std::vector<KeyValue>& cells) {
  std::string out = result_line();
  const size_t pad = title.size() < 87 ? (87 - title.size()) / 2 : 0;
  append(out, "{}{}\n", std::string(pad, ' '), title);
  for (size_t i = 0; i < cells.size();) {
    // Two cells a line, unless the left value (a path) would run into the right one.
    if (i + 1 < cells.size() && cells[i].value.size() < 22) {
      append(out, " {:<16}: {:<22}{:<16}: {}\n", cells[i].key, cells[i].value, cells[i + 1].key, cells[i + 1].value);
      i += 2;
    } else {
      append(out, " {:<16}: {}\n", cells[i].key, cells[i].value);
      i += 1;
    }
  }
  out += result_line();
  return out;
}

std::vector<KeyValue> banner_cells(const Options& o, uint32_t num_planes, uint32_t max_inline) {
  const bool bw = o.tool == Tool::write_bw;
  std::string verify = o.verify == VerifyMode::on ? "ON" : o.verify == VerifyMode::off ? "OFF" : "ON (<= 64 MiB)";
  std::vector<KeyValue> rows = {
      {"Dual-port", "OFF"},
      {"Device", "mrc_soft (UDP)"},
      {"Number of qps", std::to_string(bw ? o.num_qps : 1)},
      {"Transport type", o.transport == Transport::roce ? "RoCEv2 RC over UDP" : "MRC over UDP"},
      {"Connection type", o.transport == Transport::roce ? "RC" : "MRC"},
      {"Secure QPs", o.secure == Secure::off ? "OFF" : o.secure == Secure::integrity ? "integrity (AES-GCM tag)" : "encrypt (AES-GCM)"},
      {"Using SRQ", "OFF"},
      {"TX depth", std::to_string(o.tx_depth)},
      {"CQ Moderation", std::to_string(o.cq_mod)},
      {"Mtu", fmt::format("{}[B]", o.mtu)},
      {"Link type", "Ethernet"},
      {"GID index", "0 (plane 0)"},
      {"Max inline data", fmt::format("{}[B]", max_inline)},
      {"rdma_cm QPs", "OFF"},
      {"Data ex. method", "Ethernet (TCP)"},
      {"Planes", std::to_string(num_planes)},
      {"EVs per plane", std::to_string(o.evs)},
      {"EV mode", o.ev_mode == "stev" ? "STEV" : o.ev_mode == "srv6" ? "SRv6" : "UDP source port"},
      {"GSO burst", o.burst == 1 ? "1 (per packet)" : std::to_string(o.burst)},
      {"Send path", o.raw_send      ? "raw socket"
                    : o.no_io_uring ? "a socket per EV, sendmmsg"
                                    : "a socket per EV, io_uring if the kernel allows"},
      {"EV profile", o.ev_profile == 0 ? std::string("0 (default)") : std::to_string(o.ev_profile)},
      {"CC profile", o.cc_profile == 0 ? std::string("0 (default)") : std::to_string(o.cc_profile)},
      {"Engines", std::to_string(o.engines)},
      {"Busy poll", o.busy_poll ? "ON" : "OFF"},
      {"Completions", o.use_event ? "events (epoll)" : "busy polling"},
      {"Verify data", verify},
      {"UDP port", std::to_string(o.udp_port)},
      {"Seed", o.seed == 0 ? std::string("random") : std::to_string(o.seed)},
  };
  if (!o.pcap.empty()) rows.push_back({"Capture", o.pcap});
  if (!o.carrier_watch) rows.push_back({"Carrier watch", "OFF"});
  if (o.dscp_control != 0) rows.push_back({"Control DSCP", std::to_string(o.dscp_control)});
  if (o.link_rate_bps != 0)
    rows.push_back({"Link rate", o.link_rate_bps == UINT64_MAX ? std::string("unpaced")
                                                               : fmt::format("{:g} Mb/s per plane", static_cast<double>(o.link_rate_bps) / 1e6)});
  if (o.no_ecn) rows.push_back({"ECN", "Not-ECT"});
  if (!o.ctl_file.empty()) rows.push_back({"Controller file", o.ctl_file});
  if (o.timeline_ms != 0) rows.push_back({"Timeline", fmt::format("every {} ms", o.timeline_ms)});
  return rows;
}

std::string gid_perftest(const Gid& gid) {
  std::string s;
  for (size_t i = 0; i < gid.size(); ++i) append(s, "{}{:02d}", i == 0 ? "" : ":", gid[i]);
  return s;
}

std::string format_address(std::string_view side, const QpInfo& qp, const Gid& gid0,
                           const std::vector<std::string>& plane_addrs) {
  std::string out;
  append(out, " {} address: LID 0000 QPN {:#06x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}\n", side, qp.qpn, qp.psn,
         qp.rkey, qp.addr);
  append(out, " GID: {}\n", gid_perftest(gid0));
  std::string planes;
  for (size_t i = 0; i < plane_addrs.size(); ++i) planes += (i == 0 ? "" : ", ") + plane_addrs[i];
  append(out, " Planes: {}\n", planes);
  return out;
}

namespace {

// Column widths shared by each table's header and rows, so they align by construction.
constexpr int kBwBytesW = 11, kBwItersW = 15, kBwPeakW = 19, kBwAvgW = 21;
constexpr int kLatBytesW = 8, kLatItersW = 13, kLatMinW = 15, kLatMaxW = 15, kLatTypW = 17, kLatAvgW = 15,
              kLatStdW = 16, kLatP99W = 23;

}  // namespace

double bw_in_unit(double bytes_per_s, bool gbits) {
  return gbits ? bytes_per_s * 8.0 / 1e9 : bytes_per_s / (1024.0 * 1024.0);
}

std::string bw_table_header(bool gbits) {
  const std::string_view unit = gbits ? "Gb/sec" : "MB/sec";  // perftest's name; MB = 2^20 bytes
  return fmt::format(" {:<{}}{:<{}}{:<{}}{:<{}}{}\n", "#bytes", kBwBytesW, "#iterations", kBwItersW,
                     fmt::format("BW peak[{}]", unit), kBwPeakW, fmt::format("BW average[{}]", unit), kBwAvgW,
                     "MsgRate[Mpps]");
}

std::string format_bw_row(const BwRow& r, bool gbits) {
  return fmt::format(" {:<{}}{:<{}}{:<{}.2f}{:<{}.2f}{:.6f}\n", r.bytes, kBwBytesW, r.iters, kBwItersW,
                     bw_in_unit(r.bw_peak, gbits), kBwPeakW, bw_in_unit(r.bw_avg, gbits), kBwAvgW, r.msg_rate / 1e6);
}

std::string lat_table_header() {
  return fmt::format(" {:<{}}{:<{}}{:<{}}{:<{}}{:<{}}{:<{}}{:<{}}{:<{}}{}\n", "#bytes", kLatBytesW, "#iterations",
                     kLatItersW, "t_min[usec]", kLatMinW, "t_max[usec]", kLatMaxW, "t_typical[usec]", kLatTypW,
                     "t_avg[usec]", kLatAvgW, "t_stdev[usec]", kLatStdW, "99% percentile[usec]", kLatP99W,
                     "99.9% percentile[usec]");
}

std::string format_lat_row(const LatRow& r) {
  return fmt::format(" {:<{}}{:<{}}{:<{}.2f}{:<{}.2f}{:<{}.2f}{:<{}.2f}{:<{}.2f}{:<{}.2f}{:.2f}\n", r.bytes, kLatBytesW,
                     r.iters, kLatItersW, r.t_min, kLatMinW, r.t_max, kLatMaxW, r.t_typical, kLatTypW, r.t_avg,
                     kLatAvgW, r.t_stdev, kLatStdW, r.p99, kLatP99W, r.p999);
}

std::string format_lat_samples(std::span<const double> samples) {
  std::string out = "#, usec\n";
  out.reserve(out.size() + samples.size() * 16);
  for (size_t i = 0; i < samples.size(); ++i) fmt::format_to(std::back_inserter(out), "{}, {:.2f}\n", i + 1, samples[i]);
  return out;
}

// ------------------------------------------------------------------ completion errors

std::string_view wc_status_name(int status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_LOC_LEN_ERR: return "local length error";
    case IBV_WC_LOC_QP_OP_ERR: return "local QP operation error";
    case IBV_WC_LOC_EEC_OP_ERR: return "local EE context operation error";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_WR_FLUSH_ERR: return "Work Request Flushed Error";
    case IBV_WC_MW_BIND_ERR: return "memory management operation error";
    case IBV_WC_BAD_RESP_ERR: return "bad response error";
    case IBV_WC_LOC_ACCESS_ERR: return "local access error";
    case IBV_WC_REM_INV_REQ_ERR: return "remote invalid request error";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
    case IBV_WC_LOC_RDD_VIOL_ERR: return "local RDD violation error";
    case IBV_WC_REM_INV_RD_REQ_ERR: return "remote invalid RD request";
    case IBV_WC_REM_ABORT_ERR: return "aborted error";
    case IBV_WC_INV_EECN_ERR: return "invalid EE context number";
    case IBV_WC_INV_EEC_STATE_ERR: return "invalid EE context state";
    case IBV_WC_FATAL_ERR: return "fatal error";
    case IBV_WC_RESP_TIMEOUT_ERR: return "response timeout error";
    case IBV_WC_GENERAL_ERR: return "general error";
    default: return "unknown completion status";
  }
}

std::string wc_status_text(int status) {
  std::string_view id;
  std::string_view hint;
  switch (status) {
    case IBV_WC_SUCCESS: id = "IBV_WC_SUCCESS"; break;
    case IBV_WC_LOC_LEN_ERR:
      id = "IBV_WC_LOC_LEN_ERR";
      hint = "a message is longer than the device allows";
      break;
    case IBV_WC_LOC_QP_OP_ERR:
      id = "IBV_WC_LOC_QP_OP_ERR";
      hint = "the work request is not valid for this QP";
      break;
    case IBV_WC_LOC_PROT_ERR:
      id = "IBV_WC_LOC_PROT_ERR";
      hint = "the local buffer's lkey or range is not a registered memory region";
      break;
    case IBV_WC_WR_FLUSH_ERR:
      id = "IBV_WC_WR_FLUSH_ERR";
      hint = "the QP had already failed, or was torn down; the first error (on either side) is the cause";
      break;
    case IBV_WC_REM_INV_REQ_ERR:
      id = "IBV_WC_REM_INV_REQ_ERR";
      hint = "the peer rejected the request as invalid (length, opcode, or its QP state)";
      break;
    case IBV_WC_REM_ACCESS_ERR:
      id = "IBV_WC_REM_ACCESS_ERR";
      hint = "the peer refused the WRITE: rkey, address or length outside its registered region";
      break;
    case IBV_WC_REM_OP_ERR:
      id = "IBV_WC_REM_OP_ERR";
      hint = "the peer could not complete the operation (e.g. no receive posted for a WRITE WITH IMMEDIATE)";
      break;
    case IBV_WC_RETRY_EXC_ERR:
      id = "IBV_WC_RETRY_EXC_ERR";
      hint = "the peer did not acknowledge: is it still running, and reachable on every plane address "
             "(--planes, --udp-port, firewall)?";
      break;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      id = "IBV_WC_RNR_RETRY_EXC_ERR";
      hint = "the peer had no receive posted for a WRITE WITH IMMEDIATE";
      break;
    case IBV_WC_REM_ABORT_ERR: id = "IBV_WC_REM_ABORT_ERR"; break;
    case IBV_WC_FATAL_ERR:
      id = "IBV_WC_FATAL_ERR";
      hint = "the device failed";
      break;
    case IBV_WC_RESP_TIMEOUT_ERR:
      id = "IBV_WC_RESP_TIMEOUT_ERR";
      hint = "no response from the peer in time";
      break;
    case IBV_WC_GENERAL_ERR: id = "IBV_WC_GENERAL_ERR"; break;
    default: id = "IBV_WC_?"; break;
  }
  std::string out = fmt::format("{} ({}, status {})", id, wc_status_name(status), status);
  if (!hint.empty()) out += fmt::format(": {}", hint);
  return out;
}

// ------------------------------------------------------------------ JSON

struct JsonReport::Impl {
  nlohmann::ordered_json doc;
};

namespace {

std::string_view verify_name(VerifyMode v) {
  return v == VerifyMode::on ? "on" : v == VerifyMode::off ? "off" : "auto";
}

}  // namespace

JsonReport::JsonReport(const Options& o, std::string_view role) : impl_(std::make_unique<Impl>()) {
  auto& d = impl_->doc;
  d["tool"] = tool_name(o.tool);
  d["test"] = test_title(o.tool);
  d["role"] = role;
  d["status"] = "ok";
  set_config(o, static_cast<uint32_t>(o.planes.size()));
  d["results"] = nlohmann::ordered_json::array();
}

JsonReport::~JsonReport() = default;

void JsonReport::set_config(const Options& o, uint32_t num_planes) {
  nlohmann::ordered_json c;
  c["host"] = o.host;
  c["port"] = o.port;
  c["connection_type"] = o.transport == Transport::roce ? "RC" : "MRC";
  c["transport"] = transport_name(o.transport);
  c["secure"] = secure_name(o.secure);
  c["sizes"] = size_list(o.all, o.size);
  c["iterations"] = o.duration_s == 0 ? o.iters : 0;
  c["duration_s"] = o.duration_s;
  c["num_qps"] = o.num_qps;
  c["tx_depth"] = o.tx_depth;
  c["cq_mod"] = o.cq_mod;
  c["mtu"] = o.mtu;
  c["inline_size"] = o.inline_size;
  c["verify"] = verify_name(o.verify);
  c["use_event"] = o.use_event;
  c["report_gbits"] = o.report_gbits;
  c["num_planes"] = num_planes;
  c["planes"] = o.planes;
  c["udp_port"] = o.udp_port;
  c["ev_mode"] = o.ev_mode;
  c["evs_per_plane"] = o.evs;
  c["burst"] = o.burst;
  c["raw_send"] = o.raw_send;
  c["io_uring"] = !o.no_io_uring && !o.raw_send;
  c["channel_bulk"] = o.channel_bulk;
  c["engines"] = o.engines;
  c["busy_poll"] = o.busy_poll;
  c["carrier_watch"] = o.carrier_watch;
  c["dscp_control"] = o.dscp_control;
  c["link_rate_bps"] = o.link_rate_bps;
  c["ecn"] = !o.no_ecn;
  c["seed"] = o.seed;
  c["qp_timeout"] = o.qp_timeout;
  c["retry_exp"] = o.retry_exp;
  if (!o.pcap.empty()) c["pcap"] = o.pcap;
  if (!o.ctl_file.empty()) c["ctl"] = o.ctl_file;
  c["ev_profile"] = o.ev_profile;
  c["cc_profile"] = o.cc_profile;
  if (o.timeline_ms != 0) c["timeline_ms"] = o.timeline_ms;
  impl_->doc["config"] = std::move(c);
}

void JsonReport::set_addresses(const std::vector<std::string>& local_planes,
                               const std::vector<std::string>& remote_planes) {
  impl_->doc["config"]["planes"] = local_planes;
  impl_->doc["config"]["num_planes"] = local_planes.size();
  impl_->doc["remote_planes"] = remote_planes;
}

void JsonReport::add_bw(const BwRow& r, bool gbits, std::string_view verify) {
  nlohmann::ordered_json row;
  row["MsgSize"] = r.bytes;
  row["n_iterations"] = r.iters;
  row["BW_peak"] = bw_in_unit(r.bw_peak, gbits);
  row["BW_average"] = bw_in_unit(r.bw_avg, gbits);
  row["BW_unit"] = gbits ? "Gb/sec" : "MB/sec";
  row["MsgRate"] = r.msg_rate / 1e6;
  row["verify"] = verify;
  impl_->doc["results"].push_back(std::move(row));
}

void JsonReport::add_lat(const LatRow& r, std::string_view verify) {
  nlohmann::ordered_json row;
  row["MsgSize"] = r.bytes;
  row["n_iterations"] = r.iters;
  row["t_min"] = r.t_min;
  row["t_max"] = r.t_max;
  row["t_typical"] = r.t_typical;
  row["t_avg"] = r.t_avg;
  row["t_stdev"] = r.t_stdev;
  row["t_99_percentile"] = r.p99;
  row["t_99_9_percentile"] = r.p999;
  row["t_unit"] = "usec";
  row["verify"] = verify;
  impl_->doc["results"].push_back(std::move(row));
}

void JsonReport::set_error(std::string_view text) {
  impl_->doc["status"] = "error";
  impl_->doc["error"] = text;
}

void JsonReport::add_timeline(uint64_t size, const TimelineReport& t) {
  nlohmann::ordered_json j;
  j["MsgSize"] = size;
  j["interval_ms"] = t.interval_ms;
  j["longest_stall_ms"] = t.longest_stall_ms;
  j["longest_stall_at_s"] = t.longest_stall_at_s;
  j["samples"] = nlohmann::ordered_json::array();
  for (const auto& s : t.samples) {
    nlohmann::ordered_json x;
    x["t_s"] = s.t_s;
    x["goodput_gbps"] = s.gbps;
    x["plane_packets"] = s.plane_packets;
    x["plane_gbps"] = s.plane_gbps;
    j["samples"].push_back(std::move(x));
  }
  j["ev_event_count"] = t.events.size();
  size_t bad = 0, good = 0;
  j["ev_events"] = nlohmann::ordered_json::array();
  for (const auto& e : t.events) {
    bad += e.state == "ASSUMED_BAD" ? 1 : 0;
    good += e.state == "GOOD" ? 1 : 0;
    j["ev_events"].push_back({{"t_s", e.t_s},
                              {"profile", e.profile},
                              {"plane", e.plane},
                              {"ev", e.ev},
                              {"state", e.state},
                              {"dropped_before", e.dropped}});
  }
  j["ev_events_assumed_bad"] = bad;
  j["ev_events_good"] = good;
  j["ev_suspected"] = t.ev_suspected;
  j["ev_retired"] = t.ev_retired;
  j["ev_resurrected"] = t.ev_resurrected;
  impl_->doc["timeline"].push_back(std::move(j));
}

std::string JsonReport::dump() const { return impl_->doc.dump(2) + "\n"; }

bool JsonReport::write(const std::string& path, std::string& why) const {
  std::ofstream f(path, std::ios::trunc);
  if (!f) {
    why = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return false;
  }
  f << dump();
  f.close();
  if (!f) {
    why = fmt::format("cannot write {}", path);
    return false;
  }
  return true;
}

std::string_view transport_name(Transport t) { return t == Transport::roce ? "roce" : "mrc"; }

std::string_view secure_name(Secure s) {
  switch (s) {
    case Secure::off: return "off";
    case Secure::integrity: return "integrity";
    case Secure::encrypt: return "encrypt";
  }
  return "off";
}

std::string format_timeline_sample(const TimelineSample& s) {
  std::string out = fmt::format("{:9.3f} s {:9.3f} Gb/s", s.t_s, s.gbps);
  for (size_t p = 0; p < s.plane_packets.size(); ++p)
    out += fmt::format("  plane{} {:.3f} Gb/s ({} pkts)", p, p < s.plane_gbps.size() ? s.plane_gbps[p] : 0.0,
                       s.plane_packets[p]);
  return out;
}

std::string format_ev_event(const EvEventRecord& e) {
  std::string out = fmt::format("{:9.3f} s EV event: plane {} EV {:#x} -> {} (profile {})", e.t_s, e.plane, e.ev,
                                e.state, e.profile);
  if (e.dropped != 0) out += fmt::format(" [{} earlier events lost]", e.dropped);
  return out;
}

}  // namespace mrc::perf
