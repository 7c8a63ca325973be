// SPDX-License-Identifier: BSD-2-Clause
// mrc_write_bw and mrc_write_lat's options: their flags (perftest's where
// they apply), the checks on them, and what follows from them (the size
// list, verification, the ibverbs MTU).

#include "perf/perf_common.hpp"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <optional>
#include <openmrc/version.h>

namespace mrc::perf {

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

// "300mbit", "25gbit", "100kbit", "2500000000" (bit/s), or "none"
// (UINT64_MAX: unpaced), as tools/fabric writes its --rate.
std::optional<uint64_t> parse_link_rate(const std::string& v) {
  if (v == "none") return UINT64_MAX;
  size_t used = 0;
  uint64_t n = 0;
  try {
    n = std::stoull(v, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string unit = v.substr(used);
  uint64_t mult = 0;
  if (unit.empty() || unit == "bit") mult = 1;
  else if (unit == "kbit") mult = 1'000;
  else if (unit == "mbit") mult = 1'000'000;
  else if (unit == "gbit") mult = 1'000'000'000;
  if (mult == 0 || n == 0 || n > UINT64_MAX / 2 / mult || n * mult < 1'000'000) return std::nullopt;
  return n * mult;
}

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
    "Device: the tool finds and opens its device through ibverbs (ibv_get_device_list,\n"
    "ibv_open_device, ibv_alloc_pd, ibv_reg_mr, then mrc_create_context), as any OCP\n"
    "application does. Without -d the device flags (--planes, --udp-port, --ev-mode, --evs,\n"
    "--engines, --link-rate, --no-ecn, ...) describe it: the tool hands the library that\n"
    "description as a configuration file ($OPENMRC_CONFIG, for the list call only) and\n"
    "opens the device it lists, mrc_perf. With -d NAME it opens device NAME of the\n"
    "configuration the library reads ($OPENMRC_CONFIG, else /etc/openmrc/devices.toml, else\n"
    "mrc_soft0 on this host's first IPv4 address), with that file's planes and attributes;\n"
    "device flags are then refused (set them in the file).\n"
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

/// perftest's flags that name ibverbs things the software device does not
/// have, or modes these tools do not run: accepted by the parser so that a
/// perftest command line gets a reason, not "not expected" (check_perftest_flags).
struct PerftestFlags {
  std::string ib_dev;
  uint32_t gid_index = 0, ib_port = 1, post_list = 1;
  std::string connection = "RC";
  bool bidirectional = false, warm_up = false, rdma_cm = false, cpu_util = false;
};

void add_perftest_flags(CLI::App& app, Tool tool, Options& o, PerftestFlags& pt) {
  const bool bw = tool == Tool::write_bw;
  app.add_option("-d,--ib-dev", pt.ib_dev,
                 "open this software device of the library's configuration file ($OPENMRC_CONFIG, else "
                 "/etc/openmrc/devices.toml, else mrc_soft0 on the first IPv4 address) instead of the one the "
                 "device flags describe");
  app.add_option("-i,--ib-port", pt.ib_port, "perftest's port: only 1 (the planes are the ports)");
  app.add_option("-x,--gid-index", pt.gid_index, "perftest's GID index: only 0 (the plane-0 address)");
  app.add_option("-c,--connection", pt.connection, "connection type: only RC (MRC is a reliable connection)");
  app.add_flag("-R,--rdma_cm", pt.rdma_cm, "not supported by MRC (the exchange is over TCP, -p)");
  app.add_flag("--cpu_util", pt.cpu_util, "not supported by MRC");
  if (!bw) return;
  app.add_flag("-N,--noPeak", o.no_peak, "do not compute BW peak (printed as 0)");
  app.add_flag("--run_infinitely", o.run_infinitely,
               "client, with -D: run the sizes again and again, a row every -D seconds, until stopped (the server accepts it)");
  app.add_flag("--report-both", o.report_both,
               "accepted: perftest reports RX and TX apart in bidirectional runs (-b), which MRC's tools do not run");
  app.add_flag("-b,--bidirectional", pt.bidirectional, "not supported by MRC (see --help's notes)");
  app.add_option("-l,--post_list", pt.post_list, "WRs per post: only 1 (each WRITE is posted on its own)");
  app.add_flag("--perform_warm_up", pt.warm_up, "not supported by MRC");
}

/// The reason a perftest flag does not apply, or empty.
std::string check_perftest_flags(const CLI::App& app, const PerftestFlags& pt) {
  auto given = [&](const char* flag) { return app.get_option_no_throw(flag) != nullptr && app.count(flag) > 0; };
  if (given("--ib-dev")) {
    // The file describes that device: a flag describing another is a contradiction.
    static constexpr struct {
      const char* flag;
      const char* key;
    } kDeviceFlags[] = {{"--planes", "planes"},
                        {"--udp-port", "udp_port"},
                        {"--ev-mode", "ev_mode"},
                        {"--transport", "transport"},
                        {"--evs", "evs_per_plane"},
                        {"--burst", "burst"},
                        {"--raw-send", "raw_send"},
                        {"--no-io-uring", "no_io_uring"},
                        {"--channel-bulk", "channel_bulk_bytes_per_ms"},
                        {"--engines", "num_engines"},
                        {"--busy-poll", "busy_poll"},
                        {"--no-busy-poll", "busy_poll"},
                        {"--no-carrier-watch", "no_carrier_watch"},
                        {"--dscp-control", "dscp_control"},
                        {"--link-rate", "link_rate_bps"},
                        {"--no-ecn", "no_ecn"},
                        {"--seed", "seed"},
                        {"--pcap", "pcap_path"}};
    for (const auto& f : kDeviceFlags)
      if (given(f.flag))
        return fmt::format("-d {} opens the device the configuration file describes; {} describes a device: set "
                           "`{}` in that device's [[device]] table (docs/using-the-library.md) or drop -d",
                           pt.ib_dev, f.flag, f.key);
  }
  if (pt.ib_port != 1)
    return fmt::format("-i {}: the software device has one port in perftest's sense (1); its planes are given "
                       "with --planes and every QP sprays over all of them",
                       pt.ib_port);
  if (pt.gid_index != 0)
    return fmt::format("-x {}: the software device has one GID (index 0, its plane-0 address); choose the "
                       "addresses with --planes",
                       pt.gid_index);
  std::string conn = pt.connection;
  for (char& ch : conn) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (conn != "RC") return fmt::format("-c {}: MRC is a reliable connection: only RC is supported", pt.connection);
  if (pt.rdma_cm) return "-R: not supported by MRC: the QPs are connected over the TCP exchange (-p)";
  if (pt.cpu_util) return "--cpu_util: not supported by MRC";
  if (pt.bidirectional)
    return "-b: not supported by MRC: the tools measure one direction; run a second pair with the roles swapped "
           "(on other ports, -p and --udp-port) for the other";
  if (pt.post_list != 1)
    return fmt::format("-l {}: not supported by MRC: each WRITE is posted on its own (only -l 1)", pt.post_list);
  if (pt.warm_up)
    return "--perform_warm_up: not supported by MRC: every WRITE of a size is measured; -D runs measure a steady "
           "state for that many seconds";
  return {};
}

void add_flags(CLI::App& app, Tool tool, Options& o, std::string& ev_mode_arg, PerftestFlags& pt) {
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
  app.add_flag("--report_gbits", o.report_gbits,
               "report bandwidth in Gb/sec instead of MB/sec (MB = 2^20 bytes, as perftest counts it)");
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
  app.add_option_function<std::string>(
         "--secure",
         [&o](const std::string& v) { o.secure = v == "encrypt" ? Secure::encrypt : v == "off" ? Secure::off : Secure::integrity; },
         "secure QPs (an OpenMRC extension): an AES-GCM tag on every packet (integrity, the default) and the payload "
         "encrypted too (encrypt); keys drawn per QP and sent over the TCP exchange, which is not protected; the "
         "client decides")
      ->expected(0, 1)
      ->default_str("integrity")
      ->check(CLI::IsMember({"integrity", "encrypt", "off", ""}))
      ->type_name("[=integrity|encrypt]");
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
  app.add_option_function<std::string>(
         "--link-rate",
         [&o](const std::string& v) {
           const auto r = parse_link_rate(v);
           if (!r) throw CLI::ValidationError("--link-rate", "'" + v + "': give a rate such as 300mbit, 25gbit or 2500000000 (bit/s), or none");
           o.link_rate_bps = *r;
         },
         "each plane's link rate: the device paces its sends to it, so its own interface's queue does not "
         "overflow (RATE: <n>[kbit|mbit|gbit], bit/s; none = unpaced; default: the interface's speed where it is "
         "a physical NIC, else unpaced)")
      ->type_name("RATE");
  app.add_flag("--no-ecn", o.no_ecn, "packets leave Not-ECT (default: ECT(0), so ECN-marking switches can signal congestion)");
  app.add_option("--seed", o.seed, "seed of the protocol's random choices (0 = random)");
  app.add_option("--pcap", o.pcap,
                 "write every MRC packet this side sends and receives to FILE (pcap; open it in Wireshark with "
                 "tools/wireshark/mrc.lua, docs/wireshark.md)")
      ->type_name("FILE");
  app.add_option("-u,--qp-timeout", o.qp_timeout,
                 "QP ACK timeout: 1.024 us * 2^N (MRC's unit; the default 16, 67 ms, is the time of perftest's "
                 "default 14 in IB's 4.096 us units, and outlasts a host descheduled for tens of milliseconds)")
      ->default_val(16)
      ->check(CLI::Range(1, 24));
  app.add_option("--retry-exp", o.retry_exp,
                 "after 7 retries at the ACK timeout, N more with doubling timeouts before a WRITE fails with "
                 "IBV_WC_RETRY_EXC_ERR (25 = retry forever)")
      ->default_val(8)
      ->check(CLI::Range(0, 25));
  add_perftest_flags(app, tool, o, pt);
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
  PerftestFlags pt;
  app.set_version_flag("-V,--version", fmt::format("{} (OpenMRC) {}", tool_name(tool), OPENMRC_VERSION_STRING));
  add_flags(app, tool, out, ev_mode_arg, pt);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return {false, 0, app.help()};
  } catch (const CLI::CallForAllHelp&) {
    return {false, 0, app.help("", CLI::AppFormatMode::All)};
  } catch (const CLI::CallForVersion& e) {
    return {false, 0, e.what()};
  } catch (const CLI::ParseError& e) {
    // Every usage error exits 2, as mrc-sim and mrcctl do (CLI11's own
    // codes, 105 or 109, say nothing a script can use).
    return {false, 2, fmt::format("{}\nRun with --help for more information.", e.what())};
  }
  if (std::string why = check_perftest_flags(app, pt); !why.empty()) return {false, 2, why};
  // The server serves whatever the client sends: the flag matters there not.
  if (out.run_infinitely && !out.is_server() && out.duration_s == 0)
    return {false, 2, "--run_infinitely: give -D SECONDS, the length of each row (as perftest requires)"};
  out.ev_mode = ev_mode_arg;
  out.ib_dev = pt.ib_dev;
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
  for (const char* flag : {"--transport", "--secure", "--size", "--all", "--iters", "--duration", "--qp", "--tx-depth", "--cq-mod", "--mtu",
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

}  // namespace mrc::perf
