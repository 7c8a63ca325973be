#include "perf/perf_common.hpp"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <thread>

namespace mrc::perf {

namespace {

template <class... Args>
void append(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

std::string errno_text(int err) { return fmt::format("{} ({})", std::strerror(err), err); }

}  // namespace

std::string_view tool_name(Tool tool) { return tool == Tool::write_bw ? "mrc_write_bw" : "mrc_write_lat"; }

std::string_view test_title(Tool tool) {
  return tool == Tool::write_bw ? "RDMA_Write BW Test" : "RDMA_Write Latency Test";
}

std::string Options::json_path() const {
  if (!out_json_file.empty()) return out_json_file;
  return fmt::format("{}_out.json", tool_name(tool));
}

// ------------------------------------------------------------------ command line

namespace {

/// A valid IPv4 or IPv6 address literal (what the software device binds).
const CLI::Validator kIpAddress(
    [](std::string& s) -> std::string {
      in6_addr a6{};
      in_addr a4{};
      if (inet_pton(AF_INET, s.c_str(), &a4) == 1 || inet_pton(AF_INET6, s.c_str(), &a6) == 1) return {};
      return "'" + s + "' is not an IPv4 or IPv6 address";
    },
    "ADDR", "IP address");

bool is_ipv4(const std::string& s) {
  in_addr a4{};
  return inet_pton(AF_INET, s.c_str(), &a4) == 1;
}

constexpr std::string_view kFooter =
    "Run the server with no host argument, then the client with the server's host name or\n"
    "address; both exchange QP information over TCP (-p) and run MRC over UDP.\n"
    "\n"
    "Planes: each side's software device binds UDP --udp-port on each of its --planes\n"
    "addresses. Without --planes the server uses the address the client reached it on, and\n"
    "the client the address it reaches the server from -- except when the server's planes\n"
    "are loopback addresses: then the client takes one free loopback address per server\n"
    "plane (127.0.0.2, 127.0.0.3, ...), since client and server on one host cannot bind the\n"
    "same address and port. Both sides must use the same --udp-port (a client without\n"
    "--udp-port takes the server's) and the same number of planes.\n"
    "\n"
    "The client decides the test (message sizes, iterations, QPs, MTU, depth, verification);\n"
    "the server takes it over, and refuses a client whose values differ from flags the\n"
    "server was given explicitly.\n";

constexpr std::string_view kBwNotes =
    "\n"
    "BW average = bytes of all QPs / time from the first post to the last completion;\n"
    "BW peak = best rate over any 1/20 of the run's completions (at least the average);\n"
    "MsgRate = messages of all QPs per second. Every -Q'th WRITE of a QP is signalled.\n"
    "Verification: the client writes a pattern distinct for each size, and after each size\n"
    "the server checks it in every QP's buffer (default: sizes up to 64 MiB; --verify for\n"
    "all, --no-verify for none). Verification is outside the timed part.\n";

constexpr std::string_view kLatNotes =
    "\n"
    "Ping-pong of RDMA WRITE WITH IMMEDIATE: each side answers the other's WRITE, detected\n"
    "by a receive completion. Times are one-way latency = round trip / 2, in usec;\n"
    "t_typical is the median. Verification (as for mrc_write_bw): each side checks the\n"
    "last message the other wrote, after each size.\n";

void add_flags(CLI::App& app, Tool tool, Options& o, std::string& ev_mode_arg) {
  const bool bw = tool == Tool::write_bw;
  app.add_option("host", o.host, "server to connect to (client mode); none = server mode");
  app.add_option("-p,--port", o.port, "TCP port of the out-of-band exchange")
      ->default_val(kDefaultTcpPort)
      ->check(CLI::Range(1, 65535));
  auto* size = app.add_option("-s,--size", o.size, fmt::format("message size in bytes (default {})", bw ? 65536 : 2))
                   ->check(CLI::Range(uint64_t{1}, kMaxMessageBytes));
  app.add_flag("-a,--all", o.all, "run sizes 2^1 .. 2^23 bytes")->excludes(size);
  auto* iters = app.add_option("-n,--iters", o.iters,
                               fmt::format("iterations per size (and per QP) (default {})", bw ? 5000 : 1000))
                    ->check(CLI::Range(uint64_t{1}, uint64_t{1000000000}));
  app.add_option("-D,--duration", o.duration_s, "run each size for this many seconds instead of -n iterations")
      ->check(CLI::Range(1, 86400))
      ->excludes(iters);
  if (bw) {
    app.add_option("-q,--qp", o.num_qps, "number of QPs")->default_val(1)->check(CLI::Range(1u, kMaxQps));
    app.add_option("-t,--tx-depth", o.tx_depth, "WRITEs outstanding per QP")
        ->default_val(128)
        ->check(CLI::Range(1, 16384));
    app.add_option("-Q,--cq-mod", o.cq_mod, "signal one WRITE in this many (at most --tx-depth)")
        ->default_val(100)
        ->check(CLI::Range(1, 1024));
  }
  app.add_option("-m,--mtu", o.mtu, "path MTU in bytes: 256, 512, 1024, 2048 or 4096")
      ->default_val(4096)
      ->check(CLI::IsMember({256, 512, 1024, 2048, 4096}));
  app.add_option("-I,--inline_size", o.inline_size,
                 fmt::format("send messages up to this size inline (default {}; at most the device's limit)",
                             bw ? "0" : "220, or the device's limit if lower"))
      ->check(CLI::Range(0, 65536));
  if (bw)
    app.add_option("--timeline", o.timeline_ms,
                   "client: every MS milliseconds print goodput (total and per plane) and packets per plane; print "
                   "EV state changes as they happen; report the longest stall between completions (also in "
                   "--out_json)")
        ->type_name("MS")
        ->check(CLI::Range(1u, 60000u));
  app.add_flag("--report_gbits", o.report_gbits, "report bandwidth in Gb/sec instead of MiB/sec");
  app.add_flag("--out_json", o.out_json,
               fmt::format("also write the results as JSON (to --out_json_file, default {}_out.json)", tool_name(tool)));
  app.add_option("--out_json_file", o.out_json_file, "JSON output file (implies --out_json)");
  app.add_flag("-F,--CPU-freq", o.cpu_freq_warning_off, "accepted for perftest compatibility (no effect)");
  if (!bw) {
    app.add_flag("-H,--report-histogram", o.report_histogram,
                 "client: after each size's row, print every one-way sample (usec), in ascending order");
    app.add_flag("-U,--report-unsorted", o.report_unsorted,
                 "client: print every one-way sample in the order measured (implies -H)");
  }
  app.add_flag("-e,--events,--use_event", o.use_event,
               "wait for completions on a completion channel (epoll) instead of busy polling");
  auto* verify = app.add_flag_callback(
      "--verify", [&o] { o.verify = VerifyMode::on; }, "verify the data of every message size");
  app.add_flag_callback(
         "--no-verify", [&o] { o.verify = VerifyMode::off; }, "never verify the data")
      ->excludes(verify);
  app.add_option("--timeout", o.timeout_s,
                 "fail when no completion or peer message arrives for this many seconds")
      ->default_val(10.0)
      ->check(CLI::Range(0.1, 3600.0));
  // The software device.
  app.add_option("--planes", o.planes, "local plane addresses ADDR[,ADDR...] (1..32; default: see below)")
      ->delimiter(',')
      ->check(kIpAddress);
  app.add_option("--udp-port", o.udp_port, "UDP port MRC is received on, on every plane (both sides the same)")
      ->default_val(kDefaultUdpPort)
      ->check(CLI::Range(1, 65535));
  app.add_option("--ev-mode", ev_mode_arg,
                 "where the EV goes: udp (UDP source port), stev (also the IPv6 flow label) or srv6 (IPv6 "
                 "planes, root: QPs on an SRv6 EV profile of --ctl send to its uSID carriers)")
      ->default_val("udp")
      ->check(CLI::IsMember({"udp", "stev", "srv6"}));
  app.add_option_function<std::string>(
         "--transport",
         [&o](const std::string& v) { o.transport = v == "roce" ? Transport::roce : Transport::mrc; },
         "QP transport: mrc, or roce (the RoCEv2 RC baseline: one path per QP, go-back-N); the client decides")
      ->check(CLI::IsMember({"mrc", "roce"}))
      ->type_name("mrc|roce");
  app.add_option("--ctl", o.ctl_file,
                 "controller file (mrcctl's TOML: [[format]], [[ev_profile]], [[cc_profile]]) applied to this "
                 "side's device before its QPs are created")
      ->type_name("FILE.toml");
  app.add_option("--ev-profile", o.ev_profile, "EV profile every QP of this side uses (defined by --ctl; 0 = default)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{16}));
  app.add_option("--cc-profile", o.cc_profile, "CC profile every QP of this side uses (defined by --ctl; 0 = default)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{16}));
  app.add_option("--evs", o.evs, "EVs (paths) per plane")->default_val(16)->check(CLI::Range(1, 1024));
  app.add_option("--burst", o.burst, "packets sent back to back on one EV as a GSO burst (1 = per packet)")
      ->default_val(1)
      ->check(CLI::Range(1, 64));
  app.add_flag("--raw-send", o.raw_send,
               "per packet (--burst 1, UDP EV mode): send through one raw socket, headers written by the device, a "
               "whole batch in one sendmmsg whatever its EVs (faster than a socket per EV; needs root or CAP_NET_RAW)");
  app.add_flag("--no-io-uring", o.no_io_uring,
               "send each EV socket's datagrams with their own sendmmsg, never a batch across sockets in one "
               "io_uring submission (the default where the kernel allows io_uring)");
  app.add_option("--channel-bulk", o.channel_bulk,
                 "with -e: below this many payload bytes a millisecond the packet wakes the application asleep on "
                 "its channel, which runs the engine (one wake-up per message); above it the engine threads take "
                 "the packets (0 = the device's default, 262144; -1 = always the engine threads)")
      ->default_val(0);
  app.add_option("--engines", o.engines, "progress engine threads of the device")
      ->default_val(1)
      ->check(CLI::Range(1, 64));
  auto* busy = app.add_flag("--busy-poll", o.busy_poll,
                            "device engines never sleep (lowest latency; one core per engine)");
  app.add_flag("!--no-busy-poll", o.busy_poll, "device engines sleep in epoll when idle (default)")->excludes(busy);
  app.add_flag("!--no-carrier-watch", o.carrier_watch,
               "the device does not follow its planes' interfaces: a plane whose link dies leaves service only "
               "when its paths time out (default: it leaves at once, as if the controller disabled the port)");
  app.add_flag("--counters", o.counters,
               "print this side's device counters when the run ends (packets and datagrams sent, GSO bursts' "
               "size, retransmissions and why they were sent, duplicates received, drops by cause)");
  app.add_option("--dscp-control", o.dscp_control,
                 "DSCP of SACKs, NACKs, ACKs and probes, for a network with a strict-priority control class "
                 "(46 in tools/fabric; 0 = no marking)")
      ->default_val(0)
      ->check(CLI::Range(0, 63));
  app.add_option("--seed", o.seed, "seed of the protocol's random choices (0 = random)");
  app.add_option("--pcap", o.pcap,
                 "write every MRC packet this side sends and receives to FILE (pcap; open it in Wireshark with "
                 "tools/wireshark/mrc.lua, docs/wireshark.md)")
      ->type_name("FILE");
  app.add_option("--qp-timeout", o.qp_timeout, "QP ACK timeout: 1.024 us * 2^N")
      ->default_val(14)
      ->check(CLI::Range(1, 24));
  app.add_option("--retry-exp", o.retry_exp,
                 "after 7 retries at the ACK timeout, N more with doubling timeouts before a WRITE fails with "
                 "IBV_WC_RETRY_EXC_ERR (25 = retry forever)")
      ->default_val(8)
      ->check(CLI::Range(0, 25));
}

}  // namespace

ParseOutcome parse_command_line(Tool tool, int argc, const char* const* argv, Options& out) {
  out = Options{};
  out.tool = tool;
  const bool bw = tool == Tool::write_bw;
  CLI::App app{fmt::format("{}: {} over the OpenMRC software device (perftest's ib_{} for MRC)",
                           tool_name(tool), test_title(tool), bw ? "write_bw" : "write_lat"),
               std::string(tool_name(tool))};
  app.footer(std::string(kFooter) + std::string(bw ? kBwNotes : kLatNotes));
  app.get_formatter()->column_width(34);
  std::string ev_mode_arg = "udp";
  add_flags(app, tool, out, ev_mode_arg);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return {false, 0, app.help()};
  } catch (const CLI::CallForAllHelp&) {
    return {false, 0, app.help("", CLI::AppFormatMode::All)};
  } catch (const CLI::ParseError& e) {
    return {false, e.get_exit_code() != 0 ? e.get_exit_code() : 2,
            fmt::format("{}\nRun with --help for more information.", e.what())};
  }
  out.ev_mode = ev_mode_arg;
  out.udp_port_given = app.count("--udp-port") > 0;
  if (out.size == 0) out.size = bw ? 65536 : 2;
  if (out.iters == 0) out.iters = bw ? 5000 : 1000;
  if (!bw) {
    out.num_qps = 1;
    out.tx_depth = 1;
    out.cq_mod = 1;
    if (app.count("--inline_size") == 0) out.inline_size = 220;
  }
  out.cq_mod = std::min(out.cq_mod, out.tx_depth);
  if (!out.out_json_file.empty()) out.out_json = true;
  if (out.report_unsorted) out.report_histogram = true;
  if (out.planes.size() > kMaxPlanes)
    return {false, 2, fmt::format("--planes: {} addresses given, at most {}", out.planes.size(), kMaxPlanes)};
  if (!out.planes.empty()) {
    const bool v4 = is_ipv4(out.planes[0]);
    for (const auto& p : out.planes)
      if (is_ipv4(p) != v4) return {false, 2, "--planes: all addresses must be IPv4, or all IPv6"};
  }
  if (out.ctl_file.empty() && (out.ev_profile != 0 || out.cc_profile != 0))
    return {false, 2,
            fmt::format("--{} {}: give --ctl FILE.toml defining that profile (only profile 0, the device's default, "
                        "exists without one)",
                        out.ev_profile != 0 ? "ev-profile" : "cc-profile",
                        out.ev_profile != 0 ? out.ev_profile : out.cc_profile)};
  if (out.raw_send && (out.burst != 1 || out.ev_mode != "udp"))
    return {false, 2, "--raw-send: sends per packet in UDP EV mode only; drop --burst and --ev-mode, or --raw-send"};
  if (out.timeline_ms != 0 && out.is_server())
    return {false, 2, "--timeline: the client measures the timeline; give it to the client"};
  for (const char* flag : {"--transport", "--size", "--all", "--iters", "--duration", "--qp", "--tx-depth", "--cq-mod", "--mtu",
                           "--inline_size", "--verify", "--no-verify"}) {
    if (app.get_option_no_throw(flag) != nullptr && app.count(flag) > 0) out.explicit_shape_flags.emplace_back(flag + 2);
  }
  return {true, 0, {}};
}

ParseOutcome parse_command_line(Tool tool, const std::vector<std::string>& args, Options& out) {
  std::vector<const char*> argv;
  argv.push_back(tool_name(tool).data());
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_command_line(tool, static_cast<int>(argv.size()), argv.data(), out);
}

std::vector<uint64_t> size_list(bool all, uint64_t size) {
  if (!all) return {size};
  std::vector<uint64_t> sizes;
  for (uint64_t s = kAllMinBytes; s <= kAllMaxBytes; s *= 2) sizes.push_back(s);
  return sizes;
}

bool verify_enabled(VerifyMode mode, uint64_t size) {
  switch (mode) {
    case VerifyMode::off: return false;
    case VerifyMode::on: return true;
    case VerifyMode::automatic: return size <= kVerifyAutoMaxBytes;
  }
  return false;
}

int mtu_to_ibv(uint32_t mtu_bytes) {
  switch (mtu_bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    case 4096: return IBV_MTU_4096;
    default: return 0;
  }
}

// ------------------------------------------------------------------ encoding

std::string_view msg_type_name(MsgType t) {
  switch (t) {
    case MsgType::params: return "Params";
    case MsgType::conn_info: return "ConnInfo";
    case MsgType::size_begin: return "SizeBegin";
    case MsgType::ready: return "Ready";
    case MsgType::size_end: return "SizeEnd";
    case MsgType::size_result: return "SizeResult";
    case MsgType::done: return "Done";
    case MsgType::error: return "Error";
  }
  return "unknown";
}

namespace {

class Writer {
 public:
  void u8(uint8_t v) { b_.push_back(v); }
  void u16(uint16_t v) { be(v, 2); }
  void u32(uint32_t v) { be(v, 4); }
  void u64(uint64_t v) { be(v, 8); }
  void f64(double v) {
    uint64_t bits = 0;
    static_assert(sizeof bits == sizeof v);
    std::memcpy(&bits, &v, sizeof bits);
    u64(bits);
  }
  void bytes(std::span<const uint8_t> s) { b_.insert(b_.end(), s.begin(), s.end()); }
  std::vector<uint8_t> take() { return std::move(b_); }

 private:
  void be(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> b_;
};

/// Bounds-checked big-endian reader: a short read sets failed() and yields 0.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> s) : s_(s) {}
  uint8_t u8() { return static_cast<uint8_t>(be(1)); }
  uint16_t u16() { return static_cast<uint16_t>(be(2)); }
  uint32_t u32() { return static_cast<uint32_t>(be(4)); }
  uint64_t u64() { return be(8); }
  double f64() {
    const uint64_t bits = u64();
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  void bytes(uint8_t* dst, size_t n) {
    if (s_.size() - pos_ < n) {
      failed_ = true;
      return;
    }
    std::memcpy(dst, s_.data() + pos_, n);
    pos_ += n;
  }
  bool failed() const { return failed_; }
  size_t remaining() const { return s_.size() - pos_; }
  /// Why the payload does not have exactly the expected length, or "".
  std::string length_error(std::string_view what) const {
    if (failed_) return fmt::format("{}: truncated ({} bytes)", what, s_.size());
    if (remaining() != 0) return fmt::format("{}: {} unexpected trailing bytes", what, remaining());
    return {};
  }

 private:
  uint64_t be(size_t n) {
    if (s_.size() - pos_ < n) {
      failed_ = true;
      pos_ = s_.size();
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | s_[pos_ + i];
    pos_ += n;
    return v;
  }
  std::span<const uint8_t> s_;
  size_t pos_ = 0;
  bool failed_ = false;
};

constexpr uint32_t kMaxTxDepth = 16384;
constexpr uint32_t kMaxCqMod = 1024;
constexpr uint32_t kMaxInline = 65536;
constexpr uint64_t kMaxIters = 1000000000;
constexpr uint32_t kMaxDuration = 86400;
constexpr size_t kQpInfoBytes = 28;
constexpr size_t kMaxSizeEndValues = 16;

}  // namespace

std::vector<uint8_t> encode_header(MsgType type, uint32_t length) {
  Writer w;
  w.bytes(kMagic);
  w.u8(kProtocolVersion);
  w.u8(static_cast<uint8_t>(type));
  w.u16(0);
  w.u32(length);
  return w.take();
}

Parsed<Header> decode_header(std::span<const uint8_t> bytes) {
  using P = Parsed<Header>;
  if (bytes.size() < kHeaderBytes) return P::fail(fmt::format("message header truncated ({} bytes)", bytes.size()));
  if (!std::equal(kMagic.begin(), kMagic.end(), bytes.begin()))
    return P::fail("not an mrc_write_bw/mrc_write_lat peer (bad magic): is something else listening on this port?");
  Reader r(bytes.subspan(4, kHeaderBytes - 4));
  const uint8_t version = r.u8();
  const uint8_t type = r.u8();
  const uint16_t reserved = r.u16();
  const uint32_t length = r.u32();
  if (version != kProtocolVersion)
    return P::fail(fmt::format("peer speaks exchange version {}, this tool {}: use the same OpenMRC release",
                               version, kProtocolVersion));
  if (type < static_cast<uint8_t>(MsgType::params) || type > static_cast<uint8_t>(MsgType::error))
    return P::fail(fmt::format("unknown message type {}", type));
  if (reserved != 0) return P::fail("reserved header bits set");
  if (length > kMaxPayloadBytes) return P::fail(fmt::format("message of {} bytes exceeds the limit", length));
  return Parsed<Header>{Header{static_cast<MsgType>(type), length}, {}};
}

std::vector<uint8_t> encode(const Params& p) {
  Writer w;
  w.u8(static_cast<uint8_t>(p.tool));
  w.u8(static_cast<uint8_t>(p.verify));
  w.u8(p.all ? 1 : 0);
  w.u8(static_cast<uint8_t>(p.transport));  // was reserved (0 = mrc)
  w.u32(p.num_qps);
  w.u32(p.mtu);
  w.u32(p.tx_depth);
  w.u32(p.cq_mod);
  w.u32(p.inline_size);
  w.u64(p.iters);
  w.u32(p.duration_s);
  w.u64(p.size);
  return w.take();
}

Parsed<Params> decode_params(std::span<const uint8_t> payload) {
  using P = Parsed<Params>;
  Reader r(payload);
  Params p;
  const uint8_t tool = r.u8();
  const uint8_t verify = r.u8();
  const uint8_t all = r.u8();
  const uint8_t transport = r.u8();
  p.num_qps = r.u32();
  p.mtu = r.u32();
  p.tx_depth = r.u32();
  p.cq_mod = r.u32();
  p.inline_size = r.u32();
  p.iters = r.u64();
  p.duration_s = r.u32();
  p.size = r.u64();
  if (auto e = r.length_error("Params"); !e.empty()) return P::fail(e);
  if (tool != static_cast<uint8_t>(Tool::write_bw) && tool != static_cast<uint8_t>(Tool::write_lat))
    return P::fail(fmt::format("Params: unknown test {}", tool));
  if (verify > static_cast<uint8_t>(VerifyMode::automatic)) return P::fail("Params: bad verify mode");
  if (all > 1) return P::fail("Params: bad flags");
  if (transport > static_cast<uint8_t>(Transport::roce)) return P::fail(fmt::format("Params: unknown transport {}", transport));
  p.transport = static_cast<Transport>(transport);
  p.tool = static_cast<Tool>(tool);
  p.verify = static_cast<VerifyMode>(verify);
  p.all = all == 1;
  if (p.num_qps < 1 || p.num_qps > kMaxQps) return P::fail(fmt::format("Params: {} QPs out of range", p.num_qps));
  if (mtu_to_ibv(p.mtu) == 0) return P::fail(fmt::format("Params: bad MTU {}", p.mtu));
  if (p.tx_depth < 1 || p.tx_depth > kMaxTxDepth) return P::fail("Params: tx depth out of range");
  if (p.cq_mod < 1 || p.cq_mod > kMaxCqMod || p.cq_mod > p.tx_depth) return P::fail("Params: cq moderation out of range");
  if (p.inline_size > kMaxInline) return P::fail("Params: inline size out of range");
  if (p.iters < 1 || p.iters > kMaxIters) return P::fail("Params: iterations out of range");
  if (p.duration_s > kMaxDuration) return P::fail("Params: duration out of range");
  if (p.size < 1 || p.size > kMaxMessageBytes) return P::fail("Params: message size out of range");
  return P{p, {}};
}

std::vector<uint8_t> encode(const ConnInfo& c) {
  Writer w;
  w.u16(c.udp_port);
  w.u16(static_cast<uint16_t>(c.plane_gids.size()));
  w.u32(static_cast<uint32_t>(c.qps.size()));
  for (const auto& g : c.plane_gids) w.bytes(g);
  for (const auto& q : c.qps) {
    w.u32(q.qpn);
    w.u32(q.psn);
    w.u32(q.rkey);
    w.u64(q.addr);
    w.u64(q.size);
  }
  return w.take();
}

Parsed<ConnInfo> decode_conn_info(std::span<const uint8_t> payload) {
  using P = Parsed<ConnInfo>;
  Reader r(payload);
  ConnInfo c;
  c.udp_port = r.u16();
  const uint16_t planes = r.u16();
  const uint32_t qps = r.u32();
  if (r.failed()) return P::fail(fmt::format("ConnInfo: truncated ({} bytes)", payload.size()));
  if (c.udp_port == 0) return P::fail("ConnInfo: UDP port 0");
  if (planes < 1 || planes > kMaxPlanes) return P::fail(fmt::format("ConnInfo: {} planes out of range", planes));
  if (qps < 1 || qps > kMaxQps) return P::fail(fmt::format("ConnInfo: {} QPs out of range", qps));
  const size_t want = 8 + size_t{planes} * 16 + size_t{qps} * kQpInfoBytes;
  if (payload.size() != want)
    return P::fail(fmt::format("ConnInfo: {} bytes for {} planes and {} QPs, expected {}", payload.size(), planes,
                               qps, want));
  c.plane_gids.resize(planes);
  for (auto& g : c.plane_gids) r.bytes(g.data(), g.size());
  c.qps.resize(qps);
  for (auto& q : c.qps) {
    q.qpn = r.u32();
    q.psn = r.u32();
    q.rkey = r.u32();
    q.addr = r.u64();
    q.size = r.u64();
    if (q.qpn > 0xFFFFFF || q.psn > 0xFFFFFF) return P::fail("ConnInfo: QPN or PSN wider than 24 bits");
    if (q.size == 0 || q.addr + q.size < q.addr) return P::fail("ConnInfo: empty or wrapping buffer");
  }
  if (auto e = r.length_error("ConnInfo"); !e.empty()) return P::fail(e);
  return P{std::move(c), {}};
}

std::vector<uint8_t> encode(const SizeBegin& s) {
  Writer w;
  w.u64(s.size);
  w.u32(s.salt);
  w.u8(s.verify ? 1 : 0);
  return w.take();
}

Parsed<SizeBegin> decode_size_begin(std::span<const uint8_t> payload) {
  using P = Parsed<SizeBegin>;
  Reader r(payload);
  SizeBegin s;
  s.size = r.u64();
  s.salt = r.u32();
  const uint8_t verify = r.u8();
  if (auto e = r.length_error("SizeBegin"); !e.empty()) return P::fail(e);
  if (s.size < 1 || s.size > kMaxMessageBytes) return P::fail("SizeBegin: message size out of range");
  if (verify > 1) return P::fail("SizeBegin: bad verify flag");
  s.verify = verify == 1;
  return P{s, {}};
}

std::vector<uint8_t> encode(const SizeEnd& s) {
  Writer w;
  w.u64(s.size);
  w.u64(s.iters);
  w.u8(static_cast<uint8_t>(s.values.size()));
  for (double v : s.values) w.f64(v);
  return w.take();
}

Parsed<SizeEnd> decode_size_end(std::span<const uint8_t> payload) {
  using P = Parsed<SizeEnd>;
  Reader r(payload);
  SizeEnd s;
  s.size = r.u64();
  s.iters = r.u64();
  const uint8_t n = r.u8();
  if (r.failed()) return P::fail(fmt::format("SizeEnd: truncated ({} bytes)", payload.size()));
  if (n > kMaxSizeEndValues) return P::fail("SizeEnd: too many values");
  for (uint8_t i = 0; i < n; ++i) {
    const double v = r.f64();
    if (!std::isfinite(v) || v < 0) return P::fail("SizeEnd: value not a finite non-negative number");
    s.values.push_back(v);
  }
  if (auto e = r.length_error("SizeEnd"); !e.empty()) return P::fail(e);
  if (s.size < 1 || s.size > kMaxMessageBytes) return P::fail("SizeEnd: message size out of range");
  return P{std::move(s), {}};
}

std::vector<uint8_t> encode(const SizeResult& res) {
  Writer w;
  w.u8(static_cast<uint8_t>(res.status));
  w.u32(res.qp);
  w.u64(res.offset);
  return w.take();
}

Parsed<SizeResult> decode_size_result(std::span<const uint8_t> payload) {
  using P = Parsed<SizeResult>;
  Reader r(payload);
  SizeResult res;
  const uint8_t status = r.u8();
  res.qp = r.u32();
  res.offset = r.u64();
  if (auto e = r.length_error("SizeResult"); !e.empty()) return P::fail(e);
  if (status > SizeResult::skipped) return P::fail(fmt::format("SizeResult: unknown status {}", status));
  res.status = static_cast<SizeResult::Status>(status);
  return P{res, {}};
}

std::vector<uint8_t> encode_error(std::string_view text) {
  const auto n = std::min<size_t>(text.size(), 1000);
  return {text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n)};
}

std::string decode_error(std::span<const uint8_t> payload) {
  std::string s;
  for (size_t i = 0; i < payload.size() && i < 1000; ++i) {
    const auto c = static_cast<char>(payload[i]);
    s.push_back(payload[i] >= 0x20 && payload[i] < 0x7f ? c : '?');
  }
  return s;
}

Params params_from(const Options& o) {
  Params p;
  p.tool = o.tool;
  p.verify = o.verify;
  p.all = o.all;
  p.num_qps = o.num_qps;
  p.mtu = o.mtu;
  p.tx_depth = o.tx_depth;
  p.cq_mod = o.cq_mod;
  p.inline_size = o.inline_size;
  p.iters = o.iters;
  p.duration_s = o.duration_s;
  p.size = o.size;
  p.transport = o.transport;
  return p;
}

std::string check_compatible(const Options& server, const Params& client) {
  if (client.tool != server.tool)
    return fmt::format("the client runs {}, this server {}: run the same test on both sides",
                       tool_name(client.tool), tool_name(server.tool));
  auto given = [&](std::string_view flag) {
    return std::find(server.explicit_shape_flags.begin(), server.explicit_shape_flags.end(), flag) !=
           server.explicit_shape_flags.end();
  };
  auto differ = [](std::string_view flag, auto mine, auto theirs) -> std::string {
    return fmt::format("the server was started with --{} {} but the client asks for {}: give both sides the "
                       "same value (or none to the server)",
                       flag, mine, theirs);
  };
  if (given("size") && (client.all || client.size != server.size))
    return client.all ? "the server was started with --size but the client runs --all" : differ("size", server.size, client.size);
  if (given("all") && !client.all) return "the server was started with --all but the client runs one size";
  if (given("iters") && (client.duration_s != 0 || client.iters != server.iters))
    return differ("iters", server.iters, client.iters);
  if (given("duration") && client.duration_s != server.duration_s)
    return differ("duration", server.duration_s, client.duration_s);
  if (given("qp") && client.num_qps != server.num_qps) return differ("qp", server.num_qps, client.num_qps);
  if (given("tx-depth") && client.tx_depth != server.tx_depth)
    return differ("tx-depth", server.tx_depth, client.tx_depth);
  if (given("cq-mod") && client.cq_mod != server.cq_mod) return differ("cq-mod", server.cq_mod, client.cq_mod);
  if (given("mtu") && client.mtu != server.mtu) return differ("mtu", server.mtu, client.mtu);
  if (given("inline_size") && client.inline_size != server.inline_size)
    return differ("inline_size", server.inline_size, client.inline_size);
  if (given("transport") && client.transport != server.transport)
    return differ("transport", transport_name(server.transport), transport_name(client.transport));
  if ((given("verify") || given("no-verify")) && client.verify != server.verify)
    return "the server's --verify/--no-verify differs from the client's: give both sides the same";
  return {};
}

void adopt(Options& server, const Params& client) {
  server.verify = client.verify;
  server.all = client.all;
  server.num_qps = client.num_qps;
  server.mtu = client.mtu;
  server.tx_depth = client.tx_depth;
  server.cq_mod = client.cq_mod;
  server.inline_size = client.inline_size;
  server.iters = client.iters;
  server.duration_s = client.duration_s;
  server.size = client.size;
  server.transport = client.transport;
}

// ------------------------------------------------------------------ TCP

namespace {

/// Numeric address of a socket address; IPv4-mapped IPv6 shown as IPv4.
std::string numeric_address(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], buf, sizeof buf);
    } else {
      inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    }
  }
  return buf;
}

void set_nodelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

Channel& Channel::operator=(Channel&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

Channel::~Channel() {
  if (fd_ >= 0) ::close(fd_);
}

Channel Channel::connect(const std::string& host, uint16_t port, double timeout_s) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw PerfError(fmt::format("cannot resolve '{}': {}", host, gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  int last_err = 0;
  for (;;) {
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) {
        last_err = errno;
        continue;
      }
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        set_nodelay(fd);
        return Channel(fd);
      }
      last_err = errno;
      ::close(fd);
    }
    // A server started a moment later is the common case in scripts: retry
    // while the connection is refused, until the timeout.
    if (last_err != ECONNREFUSED || now_ns() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw PerfError(fmt::format("cannot connect to {} port {}: {} (is the server running? -p must match)", host, port,
                              errno_text(last_err)));
}

Channel Channel::accept_one(uint16_t port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw PerfError(fmt::format("socket: {}", errno_text(errno)));
  Channel listener(fd);
  int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc = 0;
  if (v6) {
    int zero = 0;
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(port);
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(port);
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  }
  if (rc != 0) throw PerfError(fmt::format("cannot listen on TCP port {}: {} (use -p)", port, errno_text(errno)));
  if (::listen(fd, 1) != 0) throw PerfError(fmt::format("listen: {}", errno_text(errno)));
  for (;;) {
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) {
      set_nodelay(c);
      return Channel(c);
    }
    if (errno != EINTR && errno != ECONNABORTED) throw PerfError(fmt::format("accept: {}", errno_text(errno)));
  }
}

void Channel::send(MsgType type, std::span<const uint8_t> payload) {
  if (fd_ < 0) throw PerfError("exchange: connection closed");
  std::vector<uint8_t> buf = encode_header(type, static_cast<uint32_t>(payload.size()));
  buf.insert(buf.end(), payload.begin(), payload.end());
  size_t off = 0;
  while (off < buf.size()) {
    const ssize_t n = ::send(fd_, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw PerfError(fmt::format("exchange: sending {} failed: {}", msg_type_name(type), errno_text(errno)));
    }
    off += static_cast<size_t>(n);
  }
}

void Channel::send_error_quietly(std::string_view text) noexcept {
  if (fd_ < 0) return;
  try {
    const auto payload = encode_error(text);
    send(MsgType::error, payload);
  } catch (...) {  // NOLINT(bugprone-empty-catch): the peer may be gone already
  }
}

void Channel::read_exact(uint8_t* dst, size_t n, double timeout_s, std::string_view what) {
  const int64_t deadline = timeout_s < 0 ? -1 : now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  size_t off = 0;
  while (off < n) {
    int wait_ms = -1;
    if (deadline >= 0) {
      const int64_t left = deadline - now_ns();
      if (left <= 0) throw PerfError(fmt::format("exchange: no {} from the peer within {} s", what, timeout_s));
      wait_ms = static_cast<int>(std::min<int64_t>(left / 1000000 + 1, 1000000));
    }
    pollfd p{fd_, POLLIN, 0};
    const int rc = ::poll(&p, 1, wait_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      throw PerfError(fmt::format("exchange: poll: {}", errno_text(errno)));
    }
    if (rc == 0) continue;  // deadline re-checked above
    const ssize_t got = ::recv(fd_, dst + off, n - off, 0);
    if (got == 0)
      throw PerfError(fmt::format("exchange: the peer closed the connection while this side waited for {}", what));
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw PerfError(fmt::format("exchange: receiving {}: {}", what, errno_text(errno)));
    }
    off += static_cast<size_t>(got);
  }
}

Channel::Message Channel::recv(double timeout_s) {
  if (fd_ < 0) throw PerfError("exchange: connection closed");
  std::array<uint8_t, kHeaderBytes> hdr{};
  read_exact(hdr.data(), hdr.size(), timeout_s, "a message");
  auto h = decode_header(hdr);
  if (!h) throw PerfError("exchange: " + h.error);
  Message m;
  m.type = h.value->type;
  m.payload.resize(h.value->length);
  read_exact(m.payload.data(), m.payload.size(), timeout_s, msg_type_name(m.type));
  return m;
}

std::vector<uint8_t> Channel::expect(MsgType want, double timeout_s) {
  Message m = recv(timeout_s);
  if (m.type == MsgType::error) throw PerfError("the peer reports: " + decode_error(m.payload));
  if (m.type != want)
    throw PerfError(fmt::format("exchange: expected {} from the peer, got {}", msg_type_name(want),
                                msg_type_name(m.type)));
  return std::move(m.payload);
}

std::string Channel::local_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return numeric_address(ss);
}

std::string Channel::peer_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return numeric_address(ss);
}

std::vector<std::string> default_client_planes(const std::string& local_tcp_addr,
                                               const std::vector<std::string>& server_planes) {
  auto is_v4_loopback = [](const std::string& s) {
    in_addr a{};
    return inet_pton(AF_INET, s.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
  };
  const bool loopback = !server_planes.empty() && std::all_of(server_planes.begin(), server_planes.end(), is_v4_loopback);
  if (loopback) {
    std::vector<std::string> mine;
    for (uint32_t k = 2; mine.size() < server_planes.size() && k < 255; ++k) {
      std::string a = fmt::format("127.0.0.{}", k);
      if (std::find(server_planes.begin(), server_planes.end(), a) == server_planes.end()) mine.push_back(a);
    }
    return mine;
  }
  if (server_planes.size() != 1)
    throw PerfError(fmt::format("the server has {} planes: give --planes with {} local addresses",
                                server_planes.size(), server_planes.size()));
  if (local_tcp_addr.empty()) throw PerfError("cannot tell this host's address towards the server: give --planes");
  if (std::find(server_planes.begin(), server_planes.end(), local_tcp_addr) != server_planes.end())
    throw PerfError(fmt::format("this client would bind {} UDP port of the server's plane address {}: on one host give "
                                "--planes with another local address",
                                "the same", local_tcp_addr));
  return {local_tcp_addr};
}

// ------------------------------------------------------------------ data

namespace {

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t pattern_word(uint32_t salt, uint64_t index) { return mix64((uint64_t{salt} << 40) ^ index); }

}  // namespace

void fill_pattern(uint8_t* buf, size_t len, uint32_t salt) {
  const size_t words = len / 8;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t w = pattern_word(salt, i);
    std::memcpy(buf + i * 8, &w, 8);
  }
  if (const size_t tail = len % 8; tail != 0) {
    const uint64_t w = pattern_word(salt, words);
    std::memcpy(buf + words * 8, &w, tail);
  }
}

std::optional<size_t> check_pattern(const uint8_t* buf, size_t len, uint32_t salt) {
  const size_t words = (len + 7) / 8;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t w = pattern_word(salt, i);
    uint8_t want[8];
    std::memcpy(want, &w, 8);
    const size_t n = std::min<size_t>(8, len - i * 8);
    if (std::memcmp(buf + i * 8, want, n) != 0) {
      for (size_t j = 0; j < n; ++j)
        if (buf[i * 8 + j] != want[j]) return i * 8 + j;
    }
  }
  return std::nullopt;
}

uint32_t salt_for(uint64_t size, size_t index) {
  return static_cast<uint32_t>(mix64(size ^ (uint64_t{index} << 32)) | 1u);
}

// ------------------------------------------------------------------ statistics

double peak_rate(const std::vector<RateSample>& s) {
  if (s.size() < 2) return 0;
  const auto rate = [](const RateSample& a, const RateSample& b) {
    const int64_t dt = b.t_ns - a.t_ns;
    return dt > 0 ? static_cast<double>(b.bytes - a.bytes) * 1e9 / static_cast<double>(dt) : 0.0;
  };
  double best = rate(s.front(), s.back());
  const size_t k = std::max<size_t>(1, (s.size() - 1) / 20);
  for (size_t i = 0; i + k < s.size(); ++i) best = std::max(best, rate(s[i], s[i + k]));
  return best;
}

LatRow lat_stats(uint64_t bytes, std::vector<double>& v) {
  LatRow r;
  r.bytes = bytes;
  r.iters = v.size();
  if (v.empty()) return r;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  r.t_min = v.front();
  r.t_max = v.back();
  r.t_typical = v[n / 2];
  double sum = 0;
  for (double x : v) sum += x;
  r.t_avg = sum / static_cast<double>(n);
  double sq = 0;
  for (double x : v) sq += (x - r.t_avg) * (x - r.t_avg);
  r.t_stdev = std::sqrt(sq / static_cast<double>(n));
  const auto rank = [&](double p) {
    const auto idx = static_cast<size_t>(std::ceil(p * static_cast<double>(n)));
    return v[std::clamp<size_t>(idx, 1, n) - 1];
  };
  r.p99 = rank(0.99);
  r.p999 = rank(0.999);
  return r;
}

std::vector<double> bw_values(const BwRow& r) { return {r.bw_peak, r.bw_avg, r.msg_rate}; }

BwRow bw_row_from(const SizeEnd& e) {
  BwRow r;
  r.bytes = e.size;
  r.iters = e.iters;
  if (e.values.size() >= 3) {
    r.bw_peak = e.values[0];
    r.bw_avg = e.values[1];
    r.msg_rate = e.values[2];
  }
  return r;
}

std::vector<double> lat_values(const LatRow& r) {
  return {r.t_min, r.t_max, r.t_typical, r.t_avg, r.t_stdev, r.p99, r.p999};
}

LatRow lat_row_from(const SizeEnd& e) {
  LatRow r;
  r.bytes = e.size;
  r.iters = e.iters;
  if (e.values.size() >= 7) {
    r.t_min = e.values[0];
    r.t_max = e.values[1];
    r.t_typical = e.values[2];
    r.t_avg = e.values[3];
    r.t_stdev = e.values[4];
    r.p99 = e.values[5];
    r.p999 = e.values[6];
  }
  return r;
}

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
constexpr int kBwBytesW = 11, kBwItersW = 15, kBwPeakW = 20, kBwAvgW = 22;
constexpr int kLatBytesW = 8, kLatItersW = 13, kLatMinW = 15, kLatMaxW = 15, kLatTypW = 17, kLatAvgW = 15,
              kLatStdW = 16, kLatP99W = 23;

}  // namespace

double bw_in_unit(double bytes_per_s, bool gbits) {
  return gbits ? bytes_per_s * 8.0 / 1e9 : bytes_per_s / (1024.0 * 1024.0);
}

std::string bw_table_header(bool gbits) {
  const std::string_view unit = gbits ? "Gb/sec" : "MiB/sec";
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
  row["BW_unit"] = gbits ? "Gb/sec" : "MiB/sec";
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

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace mrc::perf
