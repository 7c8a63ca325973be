// SPDX-License-Identifier: BSD-2-Clause
// The device side of mrc_write_bw and mrc_write_lat: the software device,
// registered buffers, CQs (busy polling or a completion channel in epoll),
// QPs, and the whole connection set-up of a run (Session::establish), on the
// C API of <mrc.h> and <openmrc/mrc_soft.h>.
#pragma once

#include <mrc.h>
#include <mrc_ctl.h>
#include <openmrc/mrc_soft.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mrcctl/ctl_file.hpp"

#include "perf/perf_common.hpp"

namespace mrc::perf {

/// A software device with one context and one PD.
class Device {
 public:
  /// Opens the device on `planes`; throws PerfError with the errno and what to do.
  Device(const Options& o, const std::vector<std::string>& planes);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_context* dev() const { return dev_; }
  mrc_context* ctx() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  const mrc_device_attr& attr() const { return attr_; }
  const mrc_soft_device_limits& limits() const { return limits_; }
  const std::vector<Gid>& gids() const { return gids_; }
  const std::vector<std::string>& planes() const { return planes_; }

  /// Declares the peer's planes (mrc_soft_set_peer).
  void set_peer(const std::vector<Gid>& peer_gids);
  /// One line of device counters, for the end of a run.
  std::string stats_text() const;
  /// Applies a controller file (mrcctl::apply_ctl_file); throws PerfError
  /// "--ctl FILE: <what the device refused>".
  void apply_ctl(const std::string& path, const mrcctl::CtlFile& f);

 private:
  ibv_context* dev_ = nullptr;
  mrc_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  mrc_device_attr attr_{};
  mrc_soft_device_limits limits_{};
  std::vector<Gid> gids_;
  std::vector<std::string> planes_;
};

/// A page-aligned, zeroed, registered buffer (local and remote write).
class Buffer {
 public:
  Buffer(ibv_pd* pd, uint64_t size);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  ibv_mr* mr_ = nullptr;
};

/// A CQ, optionally with a completion channel waited on in epoll.
class Cq {
 public:
  Cq(mrc_context* ctx, int cqe, bool use_event);
  ~Cq();
  Cq(const Cq&) = delete;
  Cq& operator=(const Cq&) = delete;
  mrc_cq* get() const { return cq_; }
  /// Non-blocking poll; throws on an API error.
  int poll(ibv_wc* wc, int n);
  /// Returns >= 1 completions: busy polls, or sleeps on the channel. Throws
  /// PerfError when none arrives for timeout_s ("waiting for <what>"), or
  /// when `peer` (the exchange connection, may be NULL) turns readable
  /// meanwhile: the peer reported an error or went away.
  int wait(ibv_wc* wc, int n, double timeout_s, const char* what, Channel* peer = nullptr);

 private:
  void check_peer(Channel* peer, const char* what);
  mrc_comp_channel* channel_ = nullptr;
  mrc_cq* cq_ = nullptr;
  int epfd_ = -1;
  int watched_fd_ = -1;
};

/// Throws PerfError with wc_status_text when a completion failed.
void check_wc(const ibv_wc& wc, const char* what);

/// Throws PerfError naming the flag when the device cannot run `o`.
void check_device_limits(const Options& o, const mrc_soft_device_limits& limits);

/// Loads --ctl's file and checks that it defines --ev-profile and
/// --cc-profile; throws PerfError naming the file, line and field, or the
/// flag. Nothing when --ctl is not given.
mrcctl::CtlFile load_ctl(const Options& o);
/// --ev-mode srv6 with an SRv6 EV profile (--ctl, --ev-profile): each EV's
/// carrier (its expanded wire EV) must have a route, checked with a UDP
/// socket's connect() before anything starts; PerfError naming the carrier
/// and the fix (on an ECMP fabric: --ev-mode udp with `fabric ev-profile`)
/// if one has none. Other modes and profiles: nothing to check.
void check_srv6_routes(const Options& o, const mrcctl::CtlFile& f);

/// The controller's EV event CQ of a context (mrc_ctl_create_ev_event_cq):
/// EV state changes of the ONLINE EV profiles whose `events` select them.
class EvEventQueue {
 public:
  explicit EvEventQueue(mrc_context* ctx);
  ~EvEventQueue();
  EvEventQueue(const EvEventQueue&) = delete;
  EvEventQueue& operator=(const EvEventQueue&) = delete;
  /// Moves the pending events into `out` (non-blocking).
  void poll(std::vector<mrc_ctl_ev_event>& out);

 private:
  mrc_cq* cq_ = nullptr;
};

/// --timeline of one message size on the client: a thread reads, every
/// millisecond, the payload bytes the peer has acknowledged so far
/// (mrc_soft_query_qp_stats' bytes_delivered: bytes placed at the responder,
/// not whole messages) and the EV events; every interval it prints the
/// goodput of those bytes and the packets the QPs sent per plane
/// (mrc_soft_query_qp_plane_packets). The longest stall is the longest time
/// with no byte delivered, to the millisecond.
class Timeline {
 public:
  /// `qps` and `events` (may be NULL) outlive the Timeline. `ctl` (the
  /// --ctl file) gives each profile's compact EV width, so events show the
  /// EV as the file writes it; EVs of other profiles show their first 8 bytes.
  Timeline(uint32_t interval_ms, const std::vector<mrc_qp*>& qps, uint32_t num_planes, EvEventQueue* events,
           const mrcctl::CtlFile& ctl);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  /// The first post: starts the sampling thread and the stall meter.
  void begin(int64_t t0_ns);
  /// Stops the thread after a last (partial) sample ending at `end_ns`;
  /// returns what was measured.
  TimelineReport finish(int64_t end_ns);

 private:
  void run();
  /// The QPs' counters summed (bytes_delivered: since they were created).
  mrc_soft_qp_stats totals() const;
  uint64_t delivered() const { return totals().bytes_delivered; }
  /// Feeds the stall meter: called every millisecond or so.
  void watch_delivery(int64_t t_ns);
  void sample(int64_t t_ns);
  void drain_events(int64_t t_ns);
  uint32_t interval_ms_;
  std::vector<mrc_qp*> qps_;
  uint32_t num_planes_;
  EvEventQueue* events_;
  const mrcctl::CtlFile& ctl_;
  int64_t t0_ = 0;
  int64_t last_sample_ns_ = 0;
  mrc_soft_qp_stats at_begin_{};  ///< totals() at begin()
  uint64_t last_bytes_ = 0;      ///< delivered() at the last sample
  uint64_t watched_bytes_ = 0;   ///< delivered() at the last watch_delivery
  std::vector<uint64_t> last_packets_;
  StallMeter stall_;
  TimelineReport report_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

/// Everything of one run, in destruction order (QPs go first).
struct Session {
  explicit Session(Options& options) : o(options) {}
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Options& o;
  mrcctl::CtlFile ctl;  ///< --ctl's file (load_ctl), applied in open_and_create
  Channel ch;
  std::unique_ptr<Device> dev;
  std::unique_ptr<EvEventQueue> ev_events;  ///< with --timeline on the client
  std::unique_ptr<Cq> cq_storage[2];
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;  ///< == send_cq for write_bw
  std::vector<std::unique_ptr<Buffer>> src;  ///< per QP: what we write from
  std::vector<std::unique_ptr<Buffer>> dst;  ///< per QP: what the peer writes into
  std::vector<mrc_qp*> qps;
  ConnInfo local;
  ConnInfo remote;
  std::vector<std::string> remote_planes;
  uint32_t inline_size = 0;  ///< granted
  uint32_t recv_depth = 1;
  uint32_t send_depth = 1;

  /// Server: accepts a client, takes over its test shape, sets everything up.
  /// Client: connects, sends its shape, sets everything up. Both end with
  /// connected QPs in RTS and the banner printed.
  void establish();
  /// Posts `n` empty receives on QP `q` (write_lat).
  void post_recvs(size_t q, uint32_t n);
  double reply_timeout() const { return o.timeout_s < 30 ? 30 : o.timeout_s; }
  /// Largest message of the run.
  uint64_t max_size() const;
  /// Checks a destination buffer after a size; the mismatch, if any.
  SizeResult verify_dst(uint64_t size, uint32_t salt) const;

 private:
  void open_and_create(const std::vector<std::string>& planes);
  void connect_all();
  void print_banner() const;
};

/// The imm_data of write_lat's last WRITE of a size (answered by nobody).
inline constexpr uint32_t kStopImm = 0xFFFFFFFFu;

/// Runs `body`, turning every failure into the tool's error report: prints
/// "<tool>: error: ...", tells the peer, writes the JSON report (with the
/// error) when asked, and returns the exit code.
int run_tool(Session& s, JsonReport& report, const std::function<void()>& body);

/// The server's or the client's part of a run, once the session is established.
using Role = std::function<void(Session&, JsonReport&)>;

/// The whole of a tool's main(): parses the command line (printing the help,
/// or the error prefixed "<tool_name>: "), establishes the session and runs
/// `server` or `client` under run_tool; returns the exit code.
int tool_main(Tool tool, int argc, char** argv, const Role& server, const Role& client);

/// What a tool does on the server at each step of one size.
struct SizeHandlers {
  /// On SizeBegin, before answering Ready: prepare the buffers.
  std::function<void(const SizeBegin&)> prepare;
  /// After Ready was sent (may be empty): the server's share of the traffic.
  std::function<void(const SizeBegin&)> traffic;
  /// After SizeResult was sent: print and report the row, throw on a mismatch.
  std::function<void(const SizeBegin&, const SizeEnd&, const SizeResult&)> finish;
};

/// The server's loop: prints `table_header`, answers the client's sizes
/// (verifying the destination buffers when asked) until it is done, then
/// prints the result line. Throws PerfError on an error of the exchange.
void serve_sizes(Session& s, const std::string& table_header, const SizeHandlers& h);

}  // namespace mrc::perf
