// SPDX-License-Identifier: BSD-2-Clause
// Shared parts of mrc_write_bw and mrc_write_lat: options and their command
// line, the out-of-band exchange over TCP (messages, encoding, a blocking
// channel), the message-size list, data patterns, statistics, and the
// perftest-style banner, result table and JSON report.
//
// Nothing here touches the MRC device, so all of it is unit-tested without
// one (tests/tools/perf_test.cc). The device side lives in perf_device.hpp.
// Defined in perf_options.cc (options and the command line),
// perf_messages.cc (the exchange's messages), perf_channel.cc (its TCP
// channel), perf_stats.cc (patterns, statistics) and perf_report.cc (banner,
// tables, completion status names, JSON).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mrc::perf {

/// Any failure of a run: the text is printed as "<tool>: error: <text>" and
/// sent to the peer, and the process exits non-zero.
class PerfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Tool : uint8_t { write_bw = 1, write_lat = 2 };

/// --transport: the QPs' reliable transport (mrc_soft_device_attr.transport).
/// The client decides; the server takes it over (Params).
enum class Transport : uint8_t { mrc = 0, roce = 1 };
/// "mrc" / "roce".
std::string_view transport_name(Transport t);

/// --secure[=integrity|encrypt]: secure QPs (mrc_soft_set_qp_secure), an
/// OpenMRC extension. The client decides; the server takes it over (Params).
/// Each side draws its QPs' send keys and sends them in ConnInfo over the
/// TCP exchange, which is not protected: a test tool's shortcut, where a
/// deployment gets its keys from its controller.
enum class Secure : uint8_t { off = 0, integrity = 1, encrypt = 2 };
/// "off" / "integrity" / "encrypt".
std::string_view secure_name(Secure s);

/// "mrc_write_bw" / "mrc_write_lat".
std::string_view tool_name(Tool tool);
/// perftest's centred title: "RDMA_Write BW Test" / "RDMA_Write Latency Test".
std::string_view test_title(Tool tool);

// ------------------------------------------------------------------ options

/// Data verification: `auto` checks every message size up to kVerifyAutoMaxBytes.
enum class VerifyMode : uint8_t { off = 0, on = 1, automatic = 2 };
inline constexpr uint64_t kVerifyAutoMaxBytes = uint64_t{64} << 20;

inline constexpr uint16_t kDefaultTcpPort = 18515;  // perftest's default
inline constexpr uint16_t kDefaultUdpPort = 4791;   // IANA RoCEv2
inline constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 31;
inline constexpr uint32_t kMaxQps = 1024;
inline constexpr uint32_t kMaxPlanes = 32;

struct Options {
  Tool tool = Tool::write_bw;
  std::string host;  ///< empty = server
  uint16_t port = kDefaultTcpPort;

  // Test shape: decided by the client, sent to the server in Params.
  uint64_t size = 0;  ///< 0 until parsed: 65536 (bw) or 2 (lat)
  bool all = false;
  uint64_t iters = 0;  ///< 0 until parsed: 5000 (bw) or 1000 (lat)
  uint32_t duration_s = 0;  ///< 0 = run `iters` iterations
  uint32_t num_qps = 1;
  uint32_t tx_depth = 128;  ///< write_lat: 1
  uint32_t cq_mod = 100;
  uint32_t mtu = 4096;
  uint32_t inline_size = 0;  ///< write_lat: 220 unless given
  VerifyMode verify = VerifyMode::automatic;

  // Reporting.
  bool report_gbits = false;
  bool out_json = false;
  std::string out_json_file;  ///< set = JSON on; empty with out_json = "<tool>_out.json"
  bool cpu_freq_warning_off = false;  ///< -F: accepted for perftest compatibility
  /// -N, --noPeak (write_bw): BW peak is not computed and reads 0, as
  /// perftest prints it.
  bool no_peak = false;
  /// --run_infinitely (write_bw client, with -D): the sizes run again and
  /// again, a row each -D seconds, until the process is stopped.
  bool run_infinitely = false;
  /// --report-both: accepted; perftest reports RX and TX apart only in
  /// bidirectional tests (-b), which these tools do not run.
  bool report_both = false;
  /// write_lat client, -H: after each size's row, every one-way sample, in
  /// ascending order (-U: in the order measured; implies -H).
  bool report_histogram = false;
  bool report_unsorted = false;
  bool use_event = false;
  double timeout_s = 10.0;  ///< no completion (or no peer answer) for this long = error

  // The software device.
  /// -d NAME: the device of the library's configuration file to open (its
  /// planes, port and attributes are the file's); empty = the device the
  /// flags below describe.
  std::string ib_dev;
  std::vector<std::string> planes;  ///< empty = derived (see --help)
  uint16_t udp_port = kDefaultUdpPort;
  bool udp_port_given = false;
  std::string ev_mode = "udp";
  uint32_t evs = 16;
  uint32_t burst = 1;
  /// --raw-send: per-packet sends through one raw socket
  /// (mrc_soft_device_attr.raw_send).
  bool raw_send = false;
  /// --no-io-uring: never one io_uring submission across sockets
  /// (mrc_soft_device_attr.no_io_uring).
  bool no_io_uring = false;
  /// --channel-bulk: with -e, the payload rate (bytes a millisecond) above
  /// which the engine threads take the packets rather than waking the
  /// application asleep on its channel; 0 = the device's default, < 0 =
  /// never wake it (mrc_soft_device_attr.channel_bulk_bytes_per_ms).
  int64_t channel_bulk = 0;
  uint32_t engines = 1;
  bool busy_poll = false;
  /// --no-carrier-watch turns it off: the device takes a plane out of
  /// service while its interface has no carrier (mrc_soft_device_attr.no_carrier_watch).
  bool carrier_watch = true;
  /// --dscp-control: DSCP of control packets (0 = no marking;
  /// mrc_soft_device_attr.dscp_control).
  uint32_t dscp_control = 0;
  /// Pacing rate per plane in bit/s (mrc_soft_device_attr.link_rate_bps):
  /// 0 = the interface's speed where it has one; UINT64_MAX = unpaced.
  uint64_t link_rate_bps = 0;
  /// Packets leave Not-ECT (mrc_soft_device_attr.no_ecn).
  bool no_ecn = false;
  /// --counters: print the device's counters (packets, datagrams,
  /// retransmissions, drops by cause) when the run ends.
  bool counters = false;
  uint64_t seed = 0;
  uint32_t qp_timeout = 16;  ///< ACK timeout exponent: 1.024 us * 2^n (67 ms, perftest's default time)
  uint32_t retry_exp = 8;    ///< doubling retries after 7 linear ones; 25 = forever
  /// --transport (test shape: the server takes the client's).
  Transport transport = Transport::mrc;
  /// --secure (test shape: the server takes the client's).
  Secure secure = Secure::off;
  /// --ctl: mrcctl's controller file, applied to this side's device before
  /// its QPs are created (mrcctl/ctl_apply.hpp); empty = none.
  std::string ctl_file;
  /// --ev-profile / --cc-profile: the controller profiles every QP of this
  /// side names at INIT (0 = the device's default). Non-zero ids must be
  /// defined by --ctl's file (checked before anything starts).
  uint64_t ev_profile = 0;
  uint64_t cc_profile = 0;
  /// --timeline MS (write_bw client): sample goodput and per-plane packets
  /// every MS milliseconds, print EV events, measure the longest stall; 0 = off.
  uint32_t timeline_ms = 0;
  /// --pcap: capture file of this side's device (DeviceConfig::pcap_path); empty = none.
  std::string pcap;

  /// Test-shape flags the user typed (long names without dashes): a server
  /// checks these against the client's Params; the others it takes over.
  std::vector<std::string> explicit_shape_flags;

  bool is_server() const { return host.empty(); }
  std::string json_path() const;
};

/// Outcome of parsing a command line: run, or exit with `exit_code` after
/// printing `text` (help to stdout when exit_code is 0, an error to stderr).
struct ParseOutcome {
  bool run = false;
  int exit_code = 0;
  std::string text;
};

/// Parses argv (argv[0] included) into `out`, applying the tool's defaults.
/// Every numeric flag is range-checked; errors name the flag.
ParseOutcome parse_command_line(Tool tool, int argc, const char* const* argv, Options& out);
/// The same for a list of arguments without argv[0] (tests).
ParseOutcome parse_command_line(Tool tool, const std::vector<std::string>& args, Options& out);

/// The message sizes of a run: 2^1 .. 2^23 with -a, else {size}.
std::vector<uint64_t> size_list(bool all, uint64_t size);
inline constexpr uint64_t kAllMinBytes = 2;
inline constexpr uint64_t kAllMaxBytes = uint64_t{1} << 23;

/// Whether a message size is verified under `mode`.
bool verify_enabled(VerifyMode mode, uint64_t size);

/// perftest's -m values (256..4096) to the ibv_mtu enum value (1..5); 0 if invalid.
int mtu_to_ibv(uint32_t mtu_bytes);

// ------------------------------------------------------------------ exchange messages
//
// Every message is a 12-byte header, then `length` payload bytes, all
// integers big-endian:
//   "MRCP" magic | version u8 (1) | type u8 | reserved u16 (0) | length u32
// Order of a run (C = client, S = server):
//   C->S Params; S->C ConnInfo (or Error); C->S ConnInfo (or Error);
//   per size: C->S SizeBegin, S->C Ready, (traffic), C->S SizeEnd, S->C SizeResult;
//   C->S Done.
// Either side may send Error instead of its next message and then closes.

inline constexpr std::array<uint8_t, 4> kMagic = {'M', 'R', 'C', 'P'};
inline constexpr uint8_t kProtocolVersion = 2;  // 2: Params.secure, QpInfo key and salt
inline constexpr size_t kHeaderBytes = 12;
inline constexpr uint32_t kMaxPayloadBytes = 1u << 20;

enum class MsgType : uint8_t {
  params = 1,
  conn_info = 2,
  size_begin = 3,
  ready = 4,
  size_end = 5,
  size_result = 6,
  done = 7,
  error = 8,
};
std::string_view msg_type_name(MsgType t);

using Gid = std::array<uint8_t, 16>;

/// The client's test shape.
struct Params {
  Tool tool = Tool::write_bw;
  VerifyMode verify = VerifyMode::automatic;
  bool all = false;
  uint32_t num_qps = 1;
  uint32_t mtu = 4096;
  uint32_t tx_depth = 128;
  uint32_t cq_mod = 100;
  uint32_t inline_size = 0;
  uint64_t iters = 0;
  uint32_t duration_s = 0;
  uint64_t size = 0;  ///< -s (ignored with all)
  Transport transport = Transport::mrc;
  Secure secure = Secure::off;
  bool operator==(const Params&) const = default;
};

/// What the peer needs to WRITE into one of our QPs' buffers.
struct QpInfo {
  uint32_t qpn = 0;   ///< 24 bits
  uint32_t psn = 0;   ///< 24 bits: our initial send PSN (the peer's RQ PSN)
  uint32_t rkey = 0;
  uint64_t addr = 0;  ///< target buffer
  uint64_t size = 0;  ///< its length
  /// --secure: the AES-128-GCM key and salt this QP sends under (the
  /// peer's receive key); zeros without --secure.
  std::array<uint8_t, 16> key{};
  uint32_t salt = 0;
  bool operator==(const QpInfo&) const = default;
};

struct ConnInfo {
  uint16_t udp_port = kDefaultUdpPort;
  std::vector<Gid> plane_gids;  ///< plane 0 first: the GID QPs name at RTR
  std::vector<QpInfo> qps;
  bool operator==(const ConnInfo&) const = default;
};

struct SizeBegin {
  uint64_t size = 0;
  uint32_t salt = 0;  ///< pattern seed for this size
  bool verify = false;
  bool operator==(const SizeBegin&) const = default;
};

/// The client's measurement of one size (the server prints it too).
struct SizeEnd {
  uint64_t size = 0;
  uint64_t iters = 0;
  /// write_bw: BW peak, BW average (bytes/s), MsgRate (messages/s);
  /// write_lat: t_min, t_max, t_typical, t_avg, t_stdev, p99, p99.9 (usec).
  std::vector<double> values;
  bool operator==(const SizeEnd&) const = default;
};

struct SizeResult {
  enum Status : uint8_t { ok = 0, mismatch = 1, skipped = 2 };
  Status status = ok;
  uint32_t qp = 0;      ///< mismatch: which QP's buffer
  uint64_t offset = 0;  ///< mismatch: first wrong byte
  bool operator==(const SizeResult&) const = default;
};

struct Header {
  MsgType type = MsgType::error;
  uint32_t length = 0;
};

/// A decoded value or the reason it was rejected.
template <class T>
struct Parsed {
  std::optional<T> value;
  std::string error;
  explicit operator bool() const { return value.has_value(); }
  static Parsed fail(std::string why) { return Parsed{std::nullopt, std::move(why)}; }
};

std::vector<uint8_t> encode_header(MsgType type, uint32_t length);
Parsed<Header> decode_header(std::span<const uint8_t> bytes);

std::vector<uint8_t> encode(const Params& p);
std::vector<uint8_t> encode(const ConnInfo& c);
std::vector<uint8_t> encode(const SizeBegin& s);
std::vector<uint8_t> encode(const SizeEnd& s);
std::vector<uint8_t> encode(const SizeResult& r);
std::vector<uint8_t> encode_error(std::string_view text);

Parsed<Params> decode_params(std::span<const uint8_t> payload);
Parsed<ConnInfo> decode_conn_info(std::span<const uint8_t> payload);
Parsed<SizeBegin> decode_size_begin(std::span<const uint8_t> payload);
Parsed<SizeEnd> decode_size_end(std::span<const uint8_t> payload);
Parsed<SizeResult> decode_size_result(std::span<const uint8_t> payload);
/// Error text, with control characters replaced and at most 1000 bytes.
std::string decode_error(std::span<const uint8_t> payload);

/// Client Params from options.
Params params_from(const Options& o);
/// Empty if a server configured as `server` can run the client's `client`
/// shape; else why not (naming the flag). The server adopts the client's
/// values for every shape flag it was not given explicitly.
std::string check_compatible(const Options& server, const Params& client);
/// What a server allocates for a client (the exchange is unauthenticated:
/// anyone who reaches the TCP port can ask). Beyond these, and beyond the
/// per-field ranges decode_params checks, a request is refused.
inline constexpr uint32_t kMaxPeerQps = 256;
inline constexpr uint64_t kMaxPeerMemoryBytes = uint64_t{8} << 30;   ///< buffers: QPs x 2 x largest message
inline constexpr uint64_t kMaxPeerWorkRequests = 1u << 18;          ///< QPs x tx depth (CQ entries, WR slots)
/// Seconds an accepted client has to send its parameters.
inline constexpr double kFirstMessageTimeoutS = 5.0;
/// Empty if a server may allocate what `client` asks for; else why not,
/// naming the limit and the flag that exceeds it.
std::string check_peer_request(const Params& client);
/// Applies the client's shape to the server's options.
void adopt(Options& server, const Params& client);

// ------------------------------------------------------------------ TCP channel

/// A blocking TCP connection carrying the messages above. Every call throws
/// PerfError on failure (closed connection, timeout, malformed message).
class Channel {
 public:
  Channel() = default;
  explicit Channel(int fd) : fd_(fd) {}
  Channel(Channel&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Channel& operator=(Channel&& o) noexcept;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  ~Channel();

  /// Connects to host:port, retrying for up to timeout_s while the server is
  /// not listening yet (as perftest's client does not, but scripts like).
  static Channel connect(const std::string& host, uint16_t port, double timeout_s);
  /// Listens on every address (IPv6 dual-stack, else IPv4) and accepts one client.
  static Channel accept_one(uint16_t port);

  void send(MsgType type, std::span<const uint8_t> payload);
  void send(MsgType type) { send(type, {}); }
  /// Sends an Error message and ignores failures (the peer may be gone).
  void send_error_quietly(std::string_view text) noexcept;

  struct Message {
    MsgType type = MsgType::error;
    std::vector<uint8_t> payload;
  };
  /// Receives the next message; timeout_s < 0 waits forever.
  Message recv(double timeout_s);
  /// Receives a message of type `want`: an Error message becomes a PerfError
  /// "the peer reports: <text>", another type a protocol error.
  std::vector<uint8_t> expect(MsgType want, double timeout_s);

  /// Local and peer address (numeric, IPv4-mapped IPv6 shown as IPv4).
  std::string local_address() const;
  std::string peer_address() const;
  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }

 private:
  void read_exact(uint8_t* dst, size_t n, double timeout_s, std::string_view what);
  int fd_ = -1;
};

/// Default local plane addresses of a client that gave no --planes: one per
/// server plane, each a loopback address (127.0.0.2, .3, ...) not among the
/// server's when the client reaches the server over loopback on this host,
/// otherwise the client's own address towards the server (one plane only).
/// Throws PerfError when no default works, saying what to pass.
std::vector<std::string> default_client_planes(const std::string& local_tcp_addr,
                                               const std::vector<std::string>& server_planes);

// ------------------------------------------------------------------ data

/// Fills buf with the pattern of `salt` (distinct salts give distinct data).
void fill_pattern(uint8_t* buf, size_t len, uint32_t salt);
/// Offset of the first byte that differs from the pattern, if any.
std::optional<size_t> check_pattern(const uint8_t* buf, size_t len, uint32_t salt);
/// The salt of size number `index` of a run.
uint32_t salt_for(uint64_t size, size_t index);

// ------------------------------------------------------------------ statistics

/// Cumulative bytes completed at a time (ns since the run's start).
struct RateSample {
  int64_t t_ns = 0;
  uint64_t bytes = 0;
};
/// BW peak in bytes/s: the best rate over any window spanning 1/20 of the
/// samples (at least one interval), and never below the whole run's average.
double peak_rate(const std::vector<RateSample>& samples);

struct BwRow {
  uint64_t bytes = 0;
  uint64_t iters = 0;
  double bw_peak = 0;  ///< bytes/s
  double bw_avg = 0;   ///< bytes/s
  double msg_rate = 0; ///< messages/s
};

struct LatRow {
  uint64_t bytes = 0;
  uint64_t iters = 0;
  double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p999 = 0;  ///< usec
};
/// Statistics of one-way latencies in usec (samples are sorted in place).
/// t_typical is the median; percentiles are nearest-rank.
LatRow lat_stats(uint64_t bytes, std::vector<double>& samples_usec);

std::vector<double> bw_values(const BwRow& r);
BwRow bw_row_from(const SizeEnd& e);
std::vector<double> lat_values(const LatRow& r);
LatRow lat_row_from(const SizeEnd& e);

// ------------------------------------------------------------------ formatting

/// perftest's RESULT_LINE: a dashed rule (87 dashes) and a newline.
std::string result_line();

/// One "Key : Value" cell of the banner.
struct KeyValue {
  std::string key;
  std::string value;
};
/// The banner: rule, centred title, the cells two per line, rule.
std::string format_banner(std::string_view title, const std::vector<KeyValue>& cells);

/// The banner cells of a run (perftest's rows, then MRC's).
std::vector<KeyValue> banner_cells(const Options& o, uint32_t num_planes, uint32_t max_inline);

/// perftest's address lines for one QP:
///   " local address: LID 0000 QPN 0x0001 PSN 0x123456 RKey 0x12345678 VAddr 0x00...",
///   " GID: 00:00:...:255:255:127:00:00:01", then MRC's " Planes: a, b".
std::string format_address(std::string_view side, const QpInfo& qp, const Gid& gid0,
                           const std::vector<std::string>& plane_addrs);
/// A GID in perftest's notation: 16 decimal bytes, two digits, ':'-separated.
std::string gid_perftest(const Gid& gid);

std::string bw_table_header(bool gbits);
std::string format_bw_row(const BwRow& r, bool gbits);
std::string lat_table_header();
std::string format_lat_row(const LatRow& r);
/// -H / -U: "#, usec" then one "i, value" line per sample (i from 1, the
/// value with two decimals, as the table prints them), in the given order.
std::string format_lat_samples(std::span<const double> samples);

/// Bytes/s in the table's unit: MB/s (perftest's MB, 2^20 bytes), or Gb/s
/// with --report_gbits.
double bw_in_unit(double bytes_per_s, bool gbits);

// ------------------------------------------------------------------ completion errors

/// "IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded): <hint>", for
/// an ibv_wc_status value.
std::string wc_status_text(int status);
/// The ibv_wc_status_str-style name alone ("transport retry counter exceeded").
std::string_view wc_status_name(int status);

// ------------------------------------------------------------------ JSON report

struct TimelineReport;

/// Collects the configuration and the rows and writes valid JSON (keys as
/// perftest's: MsgSize, n_iterations, BW_peak, BW_average, MsgRate, t_min, ...).
class JsonReport {
 public:
  JsonReport(const Options& o, std::string_view role);
  ~JsonReport();
  JsonReport(const JsonReport&) = delete;
  JsonReport& operator=(const JsonReport&) = delete;
  void set_config(const Options& o, uint32_t num_planes);
  void set_addresses(const std::vector<std::string>& local_planes, const std::vector<std::string>& remote_planes);
  void add_bw(const BwRow& r, bool gbits, std::string_view verify);
  void add_lat(const LatRow& r, std::string_view verify);
  void set_error(std::string_view text);
  /// --timeline's report of one message size, appended to the "timeline"
  /// array: MsgSize, interval_ms, longest_stall_ms (and _at_s), samples,
  /// ev_events and their counts.
  void add_timeline(uint64_t size, const TimelineReport& t);
  std::string dump() const;
  /// Writes to `path`; returns false (and sets why) on failure.
  bool write(const std::string& path, std::string& why) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ------------------------------------------------------------------ timeline

/// One --timeline interval: goodput over it, and packets sent per plane.
struct TimelineSample {
  double t_s = 0;                       ///< end of the interval, seconds since the first post
  double gbps = 0;                      ///< goodput (bytes the peer acknowledged) over the interval
  std::vector<uint64_t> plane_packets;  ///< packets sent per plane in the interval
  std::vector<double> plane_gbps;       ///< gbps apportioned by each plane's share of the packets
};

/// One EV state change the controller reported.
struct EvEventRecord {
  double t_s = 0;          ///< seconds since the first post
  uint64_t profile = 0;
  uint32_t plane = 0;      ///< 0-based (the event's port - 1)
  uint64_t ev = 0;         ///< the compact EV, first 8 bytes big-endian
  std::string state;       ///< "ASSUMED_BAD", "GOOD", "DENIED", "UNPOPULATED"
  uint32_t dropped = 0;    ///< events lost before this one (event CQ full)
};

/// Everything --timeline reports.
struct TimelineReport {
  uint32_t interval_ms = 0;
  std::vector<TimelineSample> samples;
  std::vector<EvEventRecord> events;
  /// Longest time with no byte delivered (acknowledged by the peer),
  /// measured to the millisecond, or from the first post to the first
  /// delivery, in ms, and when it began (seconds since the first post).
  double longest_stall_ms = 0;
  double longest_stall_at_s = 0;
  /// The QPs' path policy over the size: EVs taken out of service on a
  /// loss pending a confirming probe, retired (ASSUMED_BAD), put back.
  uint64_t ev_suspected = 0, ev_retired = 0, ev_resurrected = 0;
};

/// "  0.500 s  1.234 Gb/s  plane0 0.617 Gb/s (151 pkts)  plane1 ..." (no newline).
std::string format_timeline_sample(const TimelineSample& s);
/// "  0.512 s  EV event: plane 1 EV 0x0000c001 -> ASSUMED_BAD (profile 1)" (no newline).
std::string format_ev_event(const EvEventRecord& e);

/// Tracks the longest gap between progress timestamps (ns, monotonic):
/// start() at the first post, completion() at each observation of progress
/// (the --timeline thread: bytes delivered, checked every millisecond).
class StallMeter {
 public:
  void start(int64_t t_ns) { start_ = last_ = t_ns; }
  void completion(int64_t t_ns) {
    if (t_ns - last_ > longest_) {
      longest_ = t_ns - last_;
      longest_from_ = last_;
    }
    last_ = t_ns;
  }
  double longest_ms() const { return static_cast<double>(longest_) / 1e6; }
  double longest_at_s() const { return static_cast<double>(longest_from_ - start_) / 1e9; }

 private:
  int64_t start_ = 0, last_ = 0, longest_ = 0, longest_from_ = 0;
};

/// Monotonic nanoseconds.
int64_t now_ns();

}  // namespace mrc::perf
