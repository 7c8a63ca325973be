// SPDX-License-Identifier: BSD-2-Clause
#include "perf/perf_device.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <fmt/core.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>

#include "core/ctl/profiles.hpp"
#include "mrcctl/ctl_apply.hpp"

namespace mrc::perf {

namespace {

std::string err_text(int err) { return fmt::format("{} ({})", std::strerror(err), err); }

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : ",") + v[i];
  return s;
}

std::string gid_address(const Gid& g) {
  union ibv_gid gid{};
  std::memcpy(gid.raw, g.data(), g.size());
  char buf[64] = {};
  if (mrc_soft_gid_to_str(&gid, buf, sizeof buf) != 0) return gid_perftest(g);
  return buf;
}

bool is_v4_mapped(const Gid& g) {
  static constexpr std::array<uint8_t, 12> kPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(kPrefix.begin(), kPrefix.end(), g.begin());
}

}  // namespace

// ------------------------------------------------------------------ device

namespace {

/// A TOML string (basic string, with the characters TOML escapes escaped).
std::string toml_string(const std::string& v) {
  std::string out = "\"";
  for (char ch : v) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

constexpr const char* kPerfDeviceName = "mrc_perf";

/// The [[device]] the library's configuration file would need to describe
/// the device the command-line flags ask for (docs/using-the-library.md,
/// "Configuring the software devices"): the perf tools open it through
/// ibverbs as any application opens a device of that file.
std::string device_config(const Options& o, const std::vector<std::string>& planes) {
  std::string t = fmt::format("[[device]]\nname = \"{}\"\nplanes = [", kPerfDeviceName);
  for (size_t i = 0; i < planes.size(); ++i) t += (i ? ", " : "") + toml_string(planes[i]);
  t += fmt::format("]\nudp_port = {}\nev_mode = {}\ntransport = \"{}\"\n", o.udp_port, toml_string(o.ev_mode),
                   o.transport == Transport::roce ? "roce_rc" : "mrc");
  t += fmt::format("evs_per_plane = {}\nburst = {}\nnum_engines = {}\n", o.evs, o.burst, o.engines);
  t += fmt::format("raw_send = {}\nno_io_uring = {}\nbusy_poll = {}\nno_carrier_watch = {}\nno_ecn = {}\n",
                   o.raw_send, o.no_io_uring, o.busy_poll, !o.carrier_watch, o.no_ecn);
  t += fmt::format("channel_bulk_bytes_per_ms = {}\ndscp_control = {}\n", o.channel_bulk, o.dscp_control);
  if (o.seed > static_cast<uint64_t>(INT64_MAX))
    throw PerfError(fmt::format("--seed {}: at most {}", o.seed, INT64_MAX));
  t += fmt::format("seed = {}\n", o.seed);
  if (o.link_rate_bps == UINT64_MAX) t += "link_rate_bps = \"none\"\n";
  else t += fmt::format("link_rate_bps = {}\n", o.link_rate_bps);
  if (!o.pcap.empty()) t += "pcap_path = " + toml_string(o.pcap) + "\n";
  return t;
}

/// Sets $OPENMRC_CONFIG to a temporary file holding `text` for its
/// lifetime (the list call reads it), then restores the variable and
/// removes the file.
class ConfigOverride {
 public:
  explicit ConfigOverride(const std::string& text) {
    char path[] = "/tmp/openmrc-perf-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) throw PerfError(fmt::format("cannot create a device configuration file in /tmp: {}", err_text(errno)));
    path_ = path;
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok) throw PerfError(fmt::format("cannot write {}: {}", path_, err_text(errno)));
    if (const char* old = std::getenv(kEnv)) old_ = old;
    ::setenv(kEnv, path_.c_str(), 1);
  }
  ~ConfigOverride() {
    if (old_) ::setenv(kEnv, old_->c_str(), 1);
    else ::unsetenv(kEnv);
    ::unlink(path_.c_str());
  }
  ConfigOverride(const ConfigOverride&) = delete;
  ConfigOverride& operator=(const ConfigOverride&) = delete;

 private:
  static constexpr const char* kEnv = "OPENMRC_CONFIG";
  std::string path_;
  std::optional<std::string> old_;
};

}  // namespace

Device::Device(const Options& o, const std::vector<std::string>& planes) {
  // As any OCP application: the device from ibv_get_device_list, opened
  // with ibv_open_device; -d names one of the configuration file's devices,
  // else the flags describe one (device_config) the library lists.
  const std::string name = o.ib_dev.empty() ? kPerfDeviceName : o.ib_dev;
  std::vector<std::string> listed;
  {
    std::optional<ConfigOverride> cfg;
    if (o.ib_dev.empty()) cfg.emplace(device_config(o, planes));
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) throw PerfError(fmt::format("ibv_get_device_list: {}", err_text(errno)));
    for (int i = 0; i < n; ++i) {
      const char* dn = ibv_get_device_name(list[i]);
      listed.emplace_back(dn ? dn : "?");
      if (dev_ == nullptr && dn && name == dn) {
        dev_ = ibv_open_device(list[i]);
        if (dev_ == nullptr) {
          const int err = errno;
          ibv_free_device_list(list);
          throw PerfError(open_error(o, planes, err));
        }
      }
    }
    ibv_free_device_list(list);
  }
  if (dev_ == nullptr)
    throw PerfError(fmt::format("-d {}: no such device (listed: {}); the software devices are those of "
                                "$OPENMRC_CONFIG, else /etc/openmrc/devices.toml, else mrc_soft0",
                                name, listed.empty() ? std::string("none") : join(listed)));
  int supported = 0;
  if (int rc = mrc_query_device(dev_, &attr_, &supported); rc != 0 || supported == 0)
    throw PerfError(fmt::format("mrc_query_device: {}", rc != 0 ? err_text(errno) : "not an MRC device"));
  if (int rc = mrc_soft_query_limits(dev_, &limits_); rc != 0)
    throw PerfError(fmt::format("mrc_soft_query_limits: {}", err_text(rc)));
  ctx_ = mrc_create_context(dev_, nullptr);
  if (ctx_ == nullptr) throw PerfError(fmt::format("mrc_create_context: {}", err_text(errno)));
  pd_ = ibv_alloc_pd(dev_);
  if (pd_ == nullptr) throw PerfError(fmt::format("ibv_alloc_pd: {}", err_text(errno)));
  // Port p is plane p - 1; its GID (any index) is the plane's address.
  ibv_device_attr da{};
  if (int rc = ibv_query_device(dev_, &da); rc != 0) throw PerfError(fmt::format("ibv_query_device: {}", err_text(rc)));
  for (uint8_t port = 1; port <= da.phys_port_cnt; ++port) {
    union ibv_gid gid{};
    if (ibv_query_gid(dev_, port, 0, &gid) != 0)
      throw PerfError(fmt::format("ibv_query_gid(port {}): {}", port, err_text(errno)));
    Gid g{};
    std::memcpy(g.data(), gid.raw, g.size());
    gids_.push_back(g);
    planes_.push_back(gid_address(g));
  }
}

std::string Device::open_error(const Options& o, const std::vector<std::string>& planes, int err) {
  std::string hint;
  if (err == EADDRINUSE)
    hint = fmt::format(": another MRC device (or program) uses UDP port {} on one of these addresses; give "
                       "--planes with other local addresses, or --udp-port on both sides",
                       o.udp_port);
  else if (err == EADDRNOTAVAIL)
    hint = ": an address is not configured on this host (see `ip addr`); give --planes";
  else if (err == EPERM && (o.raw_send || o.ev_mode == "srv6"))
    hint = fmt::format(": {} sends through a raw socket, which needs root or CAP_NET_RAW",
                       o.raw_send ? "--raw-send" : "--ev-mode srv6");
  else if (!o.pcap.empty() && (err == ENOENT || err == EACCES || err == EPERM || err == EROFS))
    hint = fmt::format(": cannot create the capture file {} (--pcap)", o.pcap);
  else if (err == EINVAL)
    hint = ": a device attribute was refused (see the message above)";
  if (!o.ib_dev.empty())
    return fmt::format("ibv_open_device({}): {}{}", o.ib_dev, err_text(err), hint);
  return fmt::format("cannot open the software device on planes {} (UDP port {}): {}{}", join(planes), o.udp_port,
                     err_text(err), hint);
}

Device::~Device() {
  // Destruction order: PD, context, device (each refuses while the previous exists).
  if (pd_ != nullptr) (void)ibv_dealloc_pd(pd_);
  if (ctx_ != nullptr) (void)mrc_destroy_context(ctx_);
  if (dev_ != nullptr) (void)ibv_close_device(dev_);
}

void Device::set_peer(const std::vector<Gid>& peer_gids) {
  std::vector<union ibv_gid> g(peer_gids.size());
  for (size_t i = 0; i < g.size(); ++i) std::memcpy(g[i].raw, peer_gids[i].data(), 16);
  if (int rc = mrc_soft_set_peer(dev_, &g[0], g.data(), static_cast<int>(g.size())); rc != 0)
    throw PerfError(fmt::format("mrc_soft_set_peer: {}", err_text(rc)));
}

std::string Device::stats_text() const {
  mrc_soft_stats st{};
  if (mrc_soft_query_stats(dev_, &st) != 0) return {};
  return fmt::format(
      " Device counters: tx {} packets ({} datagrams, {} deferred, {} paced, {} io_uring submissions), {} dropped by "
      "the egress queue, {} ICMP errors, rx {} packets ({} duplicates), "
      "retransmissions {} (lost by the SACK rule {}, by timeouts {}, locally {}, tail probes {}; {} proven spurious), dropped: "
      "{} ICRC, {} unknown source, {} malformed, {} other, {} access, {} authentication, {} replays; {} late "
      "acknowledgements; carrier {} down, {} up (watched planes {:#x})",
      st.tx_packets, st.tx_datagrams, st.tx_eagain, st.tx_paced, st.tx_uring_submits, st.tx_queue_drops,
      st.tx_icmp_errors, st.rx_packets, st.rx_duplicates, st.retransmissions, st.losses_rule, st.losses_timeout,
      st.losses_local, st.tail_probes, st.spurious_losses, st.rx_icrc_errors, st.rx_unknown_source,
      st.rx_malformed, st.rx_dropped, st.rx_access_errors, st.rx_auth_failures, st.rx_replays, st.rx_stale_acks,
      st.carrier_downs, st.carrier_ups, st.carrier_watched_mask);
}

void Device::apply_ctl(const std::string& path, const mrcctl::CtlFile& f) {
  std::string why;
  if (!mrcctl::apply_ctl_file(ctx_, f, why)) throw PerfError(fmt::format("--ctl {}: {}", path, why));
}

mrcctl::CtlFile load_ctl(const Options& o) {
  mrcctl::CtlFile f;
  if (o.ctl_file.empty()) return f;
  std::string why;
  if (!mrcctl::load_ctl_file(o.ctl_file, f, why)) throw PerfError("--ctl: " + why);
  if (!mrcctl::defines_ev_profile(f, o.ev_profile))
    throw PerfError(fmt::format("--ev-profile {}: {} defines no [[ev_profile]] with id = {}", o.ev_profile,
                                o.ctl_file, o.ev_profile));
  if (!mrcctl::defines_cc_profile(f, o.cc_profile))
    throw PerfError(fmt::format("--cc-profile {}: {} defines no [[cc_profile]] with id = {}", o.cc_profile,
                                o.ctl_file, o.cc_profile));
  return f;
}

void check_srv6_routes(const Options& o, const mrcctl::CtlFile& f) {
  if (o.ev_mode != "srv6" || o.ev_profile == 0) return;
  const auto ev = std::find_if(f.ev_profiles.begin(), f.ev_profiles.end(),
                               [&](const mrcctl::EvProfileSpec& e) { return e.id == o.ev_profile; });
  if (ev == f.ev_profiles.end()) return;
  const auto fm = std::find_if(f.formats.begin(), f.formats.end(),
                               [&](const mrcctl::FormatSpec& x) { return x.id == ev->format; });
  if (fm == f.formats.end() || fm->mode != mrcctl::kFmtSrv6) return;
  std::vector<mrc::core::ctl::Field> fields;
  for (const mrcctl::FieldSpec& x : ev->fields) fields.push_back({x.width, x.init, x.min, x.max, x.mask});
  const uint32_t bits = mrc::core::ctl::compact_bits(fields);
  for (const mrcctl::EvSpec& e : ev->evs) {
    auto w = mrc::core::ctl::expand(fm->widths, fields, mrc::core::ctl::compact_from_uint(e.value, bits));
    if (!w || w->bits > 128) continue;  // the device refuses these itself, with its own message
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(o.udp_port);
    std::memcpy(&a.sin6_addr, w->bytes.data(), 16);
    const int fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;  // no socket, no check: the run reports what happens
    const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    const int err = errno;
    ::close(fd);
    if (rc != 0 && (err == ENETUNREACH || err == EHOSTUNREACH || err == EADDRNOTAVAIL)) {
      char text[INET6_ADDRSTRLEN] = "?";
      (void)inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
      throw PerfError(fmt::format(
          "--ev-mode srv6: no route to {}, the SRv6 carrier of EV {}:{} of EV profile {} ({}): this network does not "
          "route the profile's locator, so every packet on it would be lost. On a fabric in ECMP mode (no SID "
          "routes) use --ev-mode udp with the profile `fabric ev-profile SRC DST` writes there (UDP source ports, "
          "one per plane x T1); else add the routes to the locator",
          text, e.port, e.value, ev->id, err_text(err)));
    }
  }
}

// ------------------------------------------------------------------ EV events and the timeline

EvEventQueue::EvEventQueue(mrc_context* ctx) : ctx_(ctx) {
  cq_ = mrc_ctl_create_ev_event_cq(ctx, 4096, nullptr, nullptr, 0);
  if (cq_ == nullptr) throw PerfError(fmt::format("mrc_ctl_create_ev_event_cq: {}", err_text(errno)));
}

EvEventQueue::~EvEventQueue() {
  if (cq_ != nullptr) (void)mrc_destroy_cq(cq_);
}

void EvEventQueue::poll(std::vector<mrc_ctl_ev_event>& out) {
  mrc_ctl_ev_event ev[64];
  for (;;) {
    const int n = mrc_ctl_poll_ev_event(cq_, 64, ev);
    if (n <= 0) return;
    out.insert(out.end(), ev, ev + n);
    if (n < 64) return;
  }
}

uint32_t EvEventQueue::state_of(uint64_t profile, const mrc_ctl_ev& ev) {
  mrc_ctl_ev_profile_attr q{};
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_STATE;
  q.ev_op.query_ev_state.ev = ev;
  uint32_t state = MRC_CTL_EV_UNKNOWN;
  if (mrc_ctl_query_ev_profile(ctx_, profile, &q, MRC_CTL_EV_PROFILE_EV_OP) == 0)
    std::memcpy(&state, &q.ev_op.query_ev_state.state, sizeof state);
  return state;
}

namespace {

std::string ev_state_word(uint32_t state) {
  switch (state) {
    case MRC_CTL_EV_GOOD: return "GOOD";
    case MRC_CTL_EV_ASSUMED_BAD: return "ASSUMED_BAD";
    case MRC_CTL_EV_DENIED: return "DENIED";
    default: return "UNPOPULATED";
  }
}

}  // namespace

Timeline::Timeline(uint32_t interval_ms, const std::vector<mrc_qp*>& qps, uint32_t num_planes, EvEventQueue* events,
                   const mrcctl::CtlFile& ctl)
    : interval_ms_(interval_ms),
      qps_(qps),
      num_planes_(num_planes),
      events_(events),
      ctl_(ctl),
      last_packets_(num_planes) {
  report_.interval_ms = interval_ms;
}

Timeline::~Timeline() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Timeline::begin(int64_t t0_ns) {
  t0_ = last_sample_ns_ = t0_ns;
  stall_.start(t0_ns);
  // Counters before the first post are not this size's.
  at_begin_ = totals();
  last_bytes_ = watched_bytes_ = at_begin_.bytes_delivered;
  std::vector<uint64_t> per(num_planes_);
  for (mrc_qp* qp : qps_) {
    if (mrc_soft_query_qp_plane_packets(qp, per.data(), static_cast<int>(num_planes_)) < 0) continue;
    for (uint32_t p = 0; p < num_planes_; ++p) last_packets_[p] += per[p];
  }
  thread_ = std::thread([this] { run(); });
}

mrc_soft_qp_stats Timeline::totals() const {
  mrc_soft_qp_stats t{};
  for (mrc_qp* qp : qps_) {
    mrc_soft_qp_stats st{};
    if (mrc_soft_query_qp_stats(qp, &st) != 0) continue;
    t.bytes_delivered += st.bytes_delivered;
    t.ev_suspected += st.ev_suspected;
    t.ev_retired += st.ev_retired;
    t.ev_resurrected += st.ev_resurrected;
  }
  return t;
}

void Timeline::watch_delivery(int64_t t_ns) {
  const uint64_t now = delivered();
  if (now == watched_bytes_) return;
  watched_bytes_ = now;
  stall_.completion(t_ns);
}

void Timeline::run() {
  std::unique_lock<std::mutex> lk(mu_);
  int64_t next = t0_ + int64_t{interval_ms_} * 1000000;
  while (!stop_) {
    // Wake at the next sample, and every millisecond for deliveries and EV events.
    const int64_t now = now_ns();
    const int64_t wait = std::clamp<int64_t>(next - now, 0, 1000000);
    cv_.wait_for(lk, std::chrono::nanoseconds(wait), [this] { return stop_; });
    if (stop_) break;
    const int64_t t = now_ns();
    watch_delivery(t);
    drain_events(t);
    if (t >= next) {
      sample(t);
      next += int64_t{interval_ms_} * 1000000;
      if (next <= t) next = t + int64_t{interval_ms_} * 1000000;  // fell behind: skip, do not burst
    }
  }
}

void Timeline::drain_events(int64_t t_ns) {
  if (events_ == nullptr) return;
  std::vector<mrc_ctl_ev_event> evs;
  events_->poll(evs);
  for (const auto& e : evs) {
    EvEventRecord r;
    r.t_s = static_cast<double>(t_ns - t0_) / 1e9;
    r.profile = e.profile_id;
    r.plane = e.ev.port > 0 ? e.ev.port - 1u : 0u;
    // An EXPLICIT profile's EV is its UDP source port (a host-order
    // uint32_t, mrc_ctl.h); an SRv6 one its address, whose last 8 bytes
    // (the uSIDs) are shown.
    uint32_t port_ev;
    std::memcpy(&port_ev, e.ev.val, sizeof port_ev);
    r.ev = port_ev;
    for (const auto& spec : ctl_.ev_profiles)
      if (spec.id == e.profile_id && spec.mode == MRC_CTL_EV_MODE_SRV6_GENERATED) {
        r.ev = 0;
        for (size_t i = 8; i < 16; ++i) r.ev = r.ev << 8 | e.ev.val[i];
      }
    r.state = ev_state_word(events_->state_of(e.profile_id, e.ev));
    r.dropped = e.drop_count;
    std::printf("%s\n", format_ev_event(r).c_str());
    std::fflush(stdout);
    report_.events.push_back(std::move(r));
  }
}

void Timeline::sample(int64_t t_ns) {
  const uint64_t bytes = delivered();
  std::vector<uint64_t> now(num_planes_), per(num_planes_);
  for (mrc_qp* qp : qps_) {
    if (mrc_soft_query_qp_plane_packets(qp, per.data(), static_cast<int>(num_planes_)) < 0) continue;
    for (uint32_t p = 0; p < num_planes_; ++p) now[p] += per[p];
  }
  TimelineSample s;
  s.t_s = static_cast<double>(t_ns - t0_) / 1e9;
  const double dt = static_cast<double>(t_ns - last_sample_ns_) / 1e9;
  s.gbps = dt > 0 ? static_cast<double>(bytes - last_bytes_) * 8 / dt / 1e9 : 0;
  uint64_t total = 0;
  for (uint32_t p = 0; p < num_planes_; ++p) {
    // A retired EV takes its count with it: never report a negative interval.
    s.plane_packets.push_back(now[p] >= last_packets_[p] ? now[p] - last_packets_[p] : 0);
    total += s.plane_packets.back();
  }
  for (uint32_t p = 0; p < num_planes_; ++p)
    s.plane_gbps.push_back(total != 0 ? s.gbps * static_cast<double>(s.plane_packets[p]) / static_cast<double>(total)
                                      : 0.0);
  last_packets_ = now;
  last_bytes_ = bytes;
  last_sample_ns_ = t_ns;
  std::printf("%s\n", format_timeline_sample(s).c_str());
  std::fflush(stdout);
  report_.samples.push_back(std::move(s));
}

TimelineReport Timeline::finish(int64_t end_ns) {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The thread is gone: the last partial interval and events from here.
  watch_delivery(end_ns);
  drain_events(end_ns);
  if (end_ns > last_sample_ns_) sample(end_ns);
  report_.longest_stall_ms = stall_.longest_ms();
  report_.longest_stall_at_s = stall_.longest_at_s();
  const mrc_soft_qp_stats end = totals();
  report_.ev_suspected = end.ev_suspected - at_begin_.ev_suspected;
  report_.ev_retired = end.ev_retired - at_begin_.ev_retired;
  report_.ev_resurrected = end.ev_resurrected - at_begin_.ev_resurrected;
  std::printf("%s\n", fmt::format(" Longest stall: {:.0f} ms with no byte delivered (from {:.3f} s), {} EV events;"
                                  " EVs {} suspected, {} retired, {} resurrected",
                                  report_.longest_stall_ms, report_.longest_stall_at_s, report_.events.size(),
                                  report_.ev_suspected, report_.ev_retired, report_.ev_resurrected)
                          .c_str());
  std::fflush(stdout);
  return report_;
}

// ------------------------------------------------------------------ buffers

Buffer::Buffer(ibv_pd* pd, uint64_t size) : size_(size) {
  constexpr uint64_t kPage = 4096;
  const uint64_t alloc = (size + kPage - 1) / kPage * kPage;
  data_ = static_cast<uint8_t*>(std::aligned_alloc(kPage, alloc));
  if (data_ == nullptr) throw PerfError(fmt::format("cannot allocate a {} byte buffer", alloc));
  std::memset(data_, 0, alloc);
  mr_ = ibv_reg_mr(pd, data_, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr_ == nullptr) {
    const int err = errno;
    std::free(data_);
    throw PerfError(fmt::format("ibv_reg_mr({} bytes): {}", size, err_text(err)));
  }
}

Buffer::~Buffer() {
  if (mr_ != nullptr) (void)ibv_dereg_mr(mr_);
  std::free(data_);
}

// ------------------------------------------------------------------ CQs

Cq::Cq(mrc_context* ctx, int cqe, bool use_event) {
  if (use_event) {
    if (mrc_create_comp_channel(ctx, &channel_) != 0)
      throw PerfError(fmt::format("mrc_create_comp_channel: {}", err_text(errno)));
    int fd = -1;
    if (mrc_get_comp_channel_fd(channel_, &fd) != 0)
      throw PerfError(fmt::format("mrc_get_comp_channel_fd: {}", err_text(errno)));
    // Non-blocking, so a spurious wake-up never blocks in mrc_get_cq_event.
    if (fd < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
      throw PerfError(fmt::format("completion channel fd: {}", err_text(errno)));
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw PerfError(fmt::format("epoll_create1: {}", err_text(errno)));
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) throw PerfError(fmt::format("epoll_ctl: {}", err_text(errno)));
  }
  cq_ = mrc_create_cq(ctx, cqe, this, channel_, 0);
  if (cq_ == nullptr) throw PerfError(fmt::format("mrc_create_cq({} entries): {}", cqe, err_text(errno)));
}

Cq::~Cq() {
  if (cq_ != nullptr) (void)mrc_destroy_cq(cq_);
  if (channel_ != nullptr) (void)mrc_destroy_comp_channel(channel_);
  if (epfd_ >= 0) ::close(epfd_);
}

int Cq::poll(ibv_wc* wc, int n) {
  const int k = mrc_poll_cq(cq_, n, wc);
  if (k < 0) throw PerfError(fmt::format("mrc_poll_cq: {}", err_text(errno)));
  return k;
}

void Cq::check_peer(Channel* peer, const char* what) {
  // A message now can only be an Error (or the connection closing): the
  // peer gave up, so stop waiting for completions that will never come.
  Channel::Message m;
  try {
    m = peer->recv(1.0);
  } catch (const PerfError& e) {
    throw PerfError(fmt::format("the exchange connection failed while this side waited for {}: the peer stopped "
                                "or failed ({})",
                                what, e.what()));
  }
  if (m.type == MsgType::error) throw PerfError("the peer reports: " + decode_error(m.payload));
  throw PerfError(fmt::format("exchange: unexpected {} from the peer while waiting for {}", msg_type_name(m.type),
                              what));
}

int Cq::wait(ibv_wc* wc, int n, double timeout_s, const char* what, Channel* peer) {
  const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  if (channel_ != nullptr && peer != nullptr && watched_fd_ != peer->fd()) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u32 = 1;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, peer->fd(), &ev) != 0) throw PerfError(fmt::format("epoll_ctl: {}", err_text(errno)));
    watched_fd_ = peer->fd();
  }
  for (uint64_t spins = 1;; ++spins) {
    if (int k = poll(wc, n); k > 0) return k;
    if (channel_ != nullptr) {
      // The verbs loop: arm, poll once more (completions that arrived before
      // arming raise no event), then sleep until the channel fires.
      if (int rc = mrc_req_notify_cq(cq_, 0); rc != 0) throw PerfError(fmt::format("mrc_req_notify_cq: {}", err_text(rc)));
      if (int k = poll(wc, n); k > 0) return k;
      const int64_t left_ms = (deadline - now_ns()) / 1000000;
      if (left_ms > 0) {
        epoll_event ev[2]{};
        const int rc = epoll_wait(epfd_, ev, 2, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
        if (rc < 0 && errno != EINTR) throw PerfError(fmt::format("epoll_wait: {}", err_text(errno)));
        bool peer_spoke = false;
        for (int i = 0; i < rc; ++i) peer_spoke |= ev[i].data.u32 == 1 && peer != nullptr;
        mrc_cq* ev_cq = nullptr;
        void* ev_ctx = nullptr;
        // One event a wake-up, as perftest takes them: the channel stays
        // readable while more are pending (level-triggered), and a get
        // that finds none costs the device a look at its sockets and at
        // the fd's flags (two system calls) to say EAGAIN.
        if (mrc_get_cq_event(channel_, &ev_cq, &ev_ctx) == 0) mrc_ack_cq_events(ev_cq, 1);
        // The completion first: the peer may speak as soon as its own
        // completion arrived, and the channel's event for ours (published
        // before the acknowledgement that completed the peer's) can be
        // returned by the same epoll_wait.
        if (peer_spoke) {
          if (int k = poll(wc, n); k > 0) return k;
          check_peer(peer, what);
        }
      }
    } else if ((spins & 4095) == 0 && peer != nullptr) {
      pollfd p{peer->fd(), POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) check_peer(peer, what);
    }
    if ((channel_ != nullptr || (spins & 1023) == 0) && now_ns() > deadline)
      throw PerfError(fmt::format("no completion for {} s while waiting for {}: the peer or the path is gone "
                                  "(--timeout to wait longer)",
                                  timeout_s, what));
  }
}

void check_wc(const ibv_wc& wc, const char* what) {
  if (wc.status == IBV_WC_SUCCESS) return;
  throw PerfError(fmt::format("{} failed on QP {:#x}: {}", what, wc.qp_num, wc_status_text(wc.status)));
}

void check_device_limits(const Options& o, const mrc_soft_device_limits& a) {
  const uint64_t max_size = o.all ? kAllMaxBytes : o.size;
  if (a.max_msg_size != 0 && max_size > a.max_msg_size)
    throw PerfError(fmt::format("{} {}: the device's largest message is {} bytes", o.all ? "--all: size" : "--size",
                                max_size, a.max_msg_size));
  if (a.max_qp != 0 && o.num_qps > a.max_qp)
    throw PerfError(fmt::format("--qp {}: the device has at most {} QPs", o.num_qps, a.max_qp));
  if (a.max_qp_wr != 0 && o.tx_depth > a.max_qp_wr)
    throw PerfError(fmt::format("--tx-depth {}: the device allows at most {} WRs per QP", o.tx_depth, a.max_qp_wr));
  if (o.tool == Tool::write_bw && a.max_inline_data != 0 && o.inline_size > a.max_inline_data)
    throw PerfError(
        fmt::format("--inline_size {}: the device inlines at most {} bytes", o.inline_size, a.max_inline_data));
}

// ------------------------------------------------------------------ session

Session::~Session() {
  for (mrc_qp* qp : qps) (void)mrc_destroy_qp(qp);
  qps.clear();
  // Buffers (memory regions) and CQs go before the device (members below).
  src.clear();
  dst.clear();
  send_cq = recv_cq = nullptr;
  cq_storage[0].reset();
  cq_storage[1].reset();
  ev_events.reset();
  dev.reset();
}

uint64_t Session::max_size() const { return o.all ? kAllMaxBytes : o.size; }

void Session::open_and_create(const std::vector<std::string>& planes) {
  dev = std::make_unique<Device>(o, planes);
  // The controller file goes first: QPs name its profiles at INIT.
  if (!o.ctl_file.empty()) dev->apply_ctl(o.ctl_file, ctl);
  if (o.timeline_ms != 0 && !o.is_server()) ev_events = std::make_unique<EvEventQueue>(dev->ctx());
  const mrc_soft_device_limits& a = dev->limits();
  check_device_limits(o, a);
  inline_size = o.inline_size;
  if (a.max_inline_data != 0) inline_size = std::min(inline_size, a.max_inline_data);

  const bool bw = o.tool == Tool::write_bw;
  send_depth = bw ? o.tx_depth : 16;
  recv_depth = bw ? 1 : 16;
  if (a.max_qp_wr != 0) {
    send_depth = std::min(send_depth, a.max_qp_wr);
    recv_depth = std::min(recv_depth, a.max_qp_wr);
  }
  uint64_t cqe = bw ? uint64_t{o.num_qps} * send_depth + 16 : send_depth + 16;
  if (a.max_cqe != 0) cqe = std::min<uint64_t>(cqe, a.max_cqe);
  if (bw) {
    // write_bw's client waits on its send CQ; the server polls nothing.
    cq_storage[0] = std::make_unique<Cq>(dev->ctx(), static_cast<int>(cqe), o.use_event && !o.is_server());
    send_cq = recv_cq = cq_storage[0].get();
  } else {
    cq_storage[0] = std::make_unique<Cq>(dev->ctx(), static_cast<int>(cqe), false);
    cq_storage[1] = std::make_unique<Cq>(dev->ctx(), static_cast<int>(recv_depth + 16), o.use_event);
    send_cq = cq_storage[0].get();
    recv_cq = cq_storage[1].get();
  }

  std::random_device rd;
  const uint64_t size = max_size();
  local.udp_port = o.udp_port;
  local.plane_gids = dev->gids();
  for (uint32_t q = 0; q < o.num_qps; ++q) {
    src.push_back(std::make_unique<Buffer>(dev->pd(), size));
    dst.push_back(std::make_unique<Buffer>(dev->pd(), size));
    mrc_qp_init_attr ia{};
    ia.send_cq = send_cq->get();
    ia.recv_cq = recv_cq->get();
    ia.cap.max_send_wr = send_depth;
    ia.cap.max_recv_wr = recv_depth;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 0;
    ia.cap.max_inline_data = inline_size;
    ia.pd = dev->pd();
    mrc_qp* qp = mrc_create_qp(dev->ctx(), &ia);
    if (qp == nullptr) throw PerfError(fmt::format("mrc_create_qp (QP {} of {}): {}", q + 1, o.num_qps, err_text(errno)));
    qps.push_back(qp);
    if (ia.cap.max_inline_data < inline_size) inline_size = ia.cap.max_inline_data;
    QpInfo info;
    if (mrc_get_qpn(qp, &info.qpn) != 0) throw PerfError(fmt::format("mrc_get_qpn: {}", err_text(errno)));
    info.psn = static_cast<uint32_t>(rd()) & 0xFFFFFF;
    info.rkey = dst.back()->rkey();
    info.addr = reinterpret_cast<uintptr_t>(dst.back()->data());
    info.size = dst.back()->size();
    if (o.secure != Secure::off) {
      // This QP's send key; the peer's QP receives under it.
      for (size_t i = 0; i < info.key.size(); i += 4) {
        const uint32_t r = rd();
        std::memcpy(info.key.data() + i, &r, 4);
      }
      info.salt = rd();
    }
    local.qps.push_back(info);
  }
}

void Session::connect_all() {
  dev->set_peer(remote.plane_gids);
  const Gid& peer = remote.plane_gids[0];
  // MRC's own RTR/RTS attributes: the device's largest windows (a benchmark
  // wants them), linear retries then --retry-exp doubling ones, so a dead
  // peer or path ends in IBV_WC_RETRY_EXC_ERR rather than a silent stall.
  const mrc_device_attr& a = dev->attr();
  mrc_qp_attr m{};
  m.wimm.max_wimm = a.wimm_attr.max_wimm != 0 ? a.wimm_attr.max_wimm : 64;
  m.wimm.max_wimm_dest = a.wimm_attr.max_wimm_dest != 0 ? a.wimm_attr.max_wimm_dest : 64;
  m.mpr.mpr = m.mpr.mpr_dest = a.mpr_attr.max_mpr != 0 ? a.mpr_attr.max_mpr : 8;
  m.retry.linear_cnt = 7;
  m.retry.exp_cnt = static_cast<uint8_t>(o.retry_exp);
  m.timeout = static_cast<uint8_t>(o.qp_timeout);
  for (size_t q = 0; q < qps.size(); ++q) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    mrc_qp_attr init{};
    init.profile.ev_profile_id = o.ev_profile;
    init.profile.cc_profile_id = o.cc_profile;
    const uint32_t init_mask = (o.ev_profile != 0 ? uint32_t{MRC_EV_PROFILE_ID} : 0u) |
                               (o.cc_profile != 0 ? uint32_t{MRC_CC_PROFILE_ID} : 0u);
    if (int rc = mrc_modify_qp(qps[q], &attr, IBV_QP_STATE, &init, init_mask); rc != 0)
      throw PerfError(fmt::format("mrc_modify_qp(INIT{}{}): {}",
                                  o.ev_profile != 0 ? fmt::format(", --ev-profile {}", o.ev_profile) : "",
                                  o.cc_profile != 0 ? fmt::format(", --cc-profile {}", o.cc_profile) : "",
                                  err_text(rc)));
    if (o.secure != Secure::off) {
      mrc_soft_qp_secure sec{};
      sec.mode = o.secure == Secure::encrypt ? MRC_SOFT_SECURE_ENCRYPT : MRC_SOFT_SECURE_INTEGRITY;
      const std::pair<mrc_soft_secure_key*, const QpInfo*> keys[] = {{&sec.send, &local.qps[q]},
                                                                     {&sec.recv, &remote.qps[q]}};
      for (const auto& [k, from] : keys) {
        std::memcpy(k->key, from->key.data(), from->key.size());
        k->key_len = static_cast<uint32_t>(from->key.size());
        k->salt = from->salt;
        k->key_id = 1;
      }
      const int rc = mrc_soft_set_qp_secure(qps[q], &sec);
      explicit_bzero(&sec, sizeof sec);
      if (rc != 0)
        throw PerfError(fmt::format("mrc_soft_set_qp_secure (--secure {}): {}", secure_name(o.secure), err_text(rc)));
    }

    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = static_cast<ibv_mtu>(mtu_to_ibv(o.mtu));
    attr.dest_qp_num = remote.qps[q].qpn;
    attr.rq_psn = remote.qps[q].psn;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.port_num = 1;
    attr.ah_attr.grh.hop_limit = 64;
    std::memcpy(attr.ah_attr.grh.dgid.raw, peer.data(), peer.size());
    const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU;
    if (int rc = mrc_modify_qp(qps[q], &attr, rtr_mask, &m, MRC_QP_MAX_WIMM_DEST | MRC_QP_MPR_DEST); rc != 0)
      throw PerfError(fmt::format("mrc_modify_qp(RTR) to QPN {:#x} at {}: {}", remote.qps[q].qpn,
                                  gid_address(peer), err_text(rc)));

    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = local.qps[q].psn;
    if (int rc = mrc_modify_qp(qps[q], &attr, IBV_QP_STATE | IBV_QP_SQ_PSN, &m,
                               MRC_QP_MAX_WIMM | MRC_QP_MPR | MRC_QP_RETRY_CNT | MRC_QP_TIMEOUT);
        rc != 0)
      throw PerfError(fmt::format("mrc_modify_qp(RTS): {}", err_text(rc)));
  }
}

void Session::post_recvs(size_t q, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    ibv_recv_wr wr{};
    wr.wr_id = q;
    wr.num_sge = 0;
    ibv_recv_wr* bad = nullptr;
    if (int rc = mrc_post_recv(qps[q], &wr, &bad); rc != 0)
      throw PerfError(fmt::format("mrc_post_recv: {}", err_text(rc)));
  }
}

SizeResult Session::verify_dst(uint64_t size, uint32_t salt) const {
  SizeResult r;
  for (size_t q = 0; q < dst.size(); ++q) {
    if (auto off = check_pattern(dst[q]->data(), size, salt)) {
      r.status = SizeResult::mismatch;
      r.qp = static_cast<uint32_t>(q);
      r.offset = *off;
      return r;
    }
  }
  return r;
}

void Session::print_banner() const {
  std::string out = format_banner(test_title(o.tool), banner_cells(o, static_cast<uint32_t>(local.plane_gids.size()),
                                                                   inline_size));
  for (const auto& q : local.qps) out += format_address("local", q, local.plane_gids[0], dev->planes());
  for (const auto& q : remote.qps) out += format_address("remote", q, remote.plane_gids[0], remote_planes);
  out += result_line();
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
}

void Session::establish() {
  const double t = reply_timeout();
  std::vector<std::string> planes = o.planes;
  if (o.is_server()) {
    std::printf("\n************************************\n* Waiting for client to connect... *\n"
                "************************************\n");
    std::fflush(stdout);
    ch = Channel::accept_one(o.port);
    // The exchange is unauthenticated: a client that says nothing, says
    // nonsense or asks for too much is refused with the reason, and this
    // one-shot server exits (code 1) as it does for a client whose flags
    // differ, so that a script running it sees the failure instead of a
    // server that waits on. A silent client holds it only kFirstMessageTimeoutS.
    auto params = decode_params(ch.expect(MsgType::params, std::min(t, kFirstMessageTimeoutS)));
    if (!params) throw PerfError("exchange: " + params.error);
    if (auto why = check_peer_request(*params.value); !why.empty()) throw PerfError("exchange: refused: " + why);
    if (auto why = check_compatible(o, *params.value); !why.empty()) throw PerfError(why);
    adopt(o, *params.value);
    if (planes.empty()) planes = {ch.local_address()};
    open_and_create(planes);
    ch.send(MsgType::conn_info, encode(local));
    auto info = decode_conn_info(ch.expect(MsgType::conn_info, t));
    if (!info) throw PerfError("exchange: " + info.error);
    remote = std::move(*info.value);
  } else {
    ch = Channel::connect(o.host, o.port, o.timeout_s);
    ch.send(MsgType::params, encode(params_from(o)));
    auto info = decode_conn_info(ch.expect(MsgType::conn_info, t));
    if (!info) throw PerfError("exchange: " + info.error);
    remote = std::move(*info.value);
    if (!o.udp_port_given) {
      o.udp_port = remote.udp_port;
    } else if (o.udp_port != remote.udp_port) {
      throw PerfError(fmt::format("--udp-port {}: the server uses UDP port {}; both sides must use the same",
                                  o.udp_port, remote.udp_port));
    }
    if (planes.empty()) {
      std::vector<std::string> server_planes;
      for (const auto& g : remote.plane_gids) server_planes.push_back(gid_address(g));
      planes = default_client_planes(ch.local_address(), server_planes);
    }
    if (planes.size() != remote.plane_gids.size())
      throw PerfError(fmt::format("--planes: this client has {} planes, the server {}: give as many addresses",
                                  planes.size(), remote.plane_gids.size()));
    open_and_create(planes);
    ch.send(MsgType::conn_info, encode(local));
  }
  if (remote.plane_gids.size() != local.plane_gids.size())
    throw PerfError(fmt::format("the peer has {} planes, this side {}: give both sides --planes with as many addresses",
                                remote.plane_gids.size(), local.plane_gids.size()));
  if (remote.qps.size() != local.qps.size())
    throw PerfError(fmt::format("the peer has {} QPs, this side {}", remote.qps.size(), local.qps.size()));
  for (const auto& g : remote.plane_gids)
    if (is_v4_mapped(g) != is_v4_mapped(local.plane_gids[0]))
      throw PerfError("the peer's plane addresses are of another family (IPv4/IPv6) than this side's");
  for (const auto& q : remote.qps)
    if (q.size < max_size())
      throw PerfError(fmt::format("the peer's buffer ({} bytes) is smaller than the largest message ({} bytes)", q.size,
                                  max_size()));
  for (const auto& g : remote.plane_gids) remote_planes.push_back(gid_address(g));
  connect_all();
  if (o.tool == Tool::write_lat)
    for (size_t q = 0; q < qps.size(); ++q) post_recvs(q, recv_depth);
  print_banner();
}

int run_tool(Session& s, JsonReport& report, const std::function<void()>& body) {
  int code = 0;
  try {
    body();
  } catch (const PerfError& e) {
    std::fprintf(stderr, "%s: error: %s\n", std::string(tool_name(s.o.tool)).c_str(), e.what());
    s.ch.send_error_quietly(e.what());
    report.set_error(e.what());
    code = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", std::string(tool_name(s.o.tool)).c_str(), e.what());
    s.ch.send_error_quietly(e.what());
    report.set_error(e.what());
    code = 1;
  }
  report.set_config(s.o, s.dev ? static_cast<uint32_t>(s.dev->planes().size()) : 0);
  if (s.dev) report.set_addresses(s.dev->planes(), s.remote_planes);
  if (s.o.out_json) {
    std::string why;
    if (!report.write(s.o.json_path(), why)) {
      std::fprintf(stderr, "%s: error: %s\n", std::string(tool_name(s.o.tool)).c_str(), why.c_str());
      code = 1;
    }
  }
  return code;
}

int tool_main(Tool tool, int argc, char** argv, const Role& server, const Role& client) {
  Options o;
  const ParseOutcome p = parse_command_line(tool, argc, argv, o);
  if (!p.run) {
    if (p.exit_code == 0) {
      std::fprintf(stdout, "%s\n", p.text.c_str());
    } else {
      std::fprintf(stderr, "%s: %s\n", std::string(tool_name(tool)).c_str(), p.text.c_str());
    }
    return p.exit_code;
  }
  JsonReport report(o, o.is_server() ? "server" : "client");
  Session s(o);
  return run_tool(s, report, [&] {
    s.ctl = load_ctl(o);  // before any connection: a bad file or id changes nothing
    check_srv6_routes(o, s.ctl);
    s.establish();
    if (o.is_server()) {
      server(s, report);
    } else {
      client(s, report);
    }
    if (o.counters && s.dev) std::printf("%s\n", s.dev->stats_text().c_str());
  });
}

void serve_sizes(Session& s, const std::string& table_header, const SizeHandlers& h) {
  std::fputs(table_header.c_str(), stdout);
  std::fflush(stdout);
  SizeBegin begin;
  bool in_size = false;
  for (;;) {
    Channel::Message m = s.ch.recv(-1);
    if (m.type == MsgType::error) throw PerfError("the peer reports: " + decode_error(m.payload));
    if (m.type == MsgType::done && !in_size) break;
    if (m.type == MsgType::size_begin && !in_size) {
      auto b = decode_size_begin(m.payload);
      if (!b) throw PerfError("exchange: " + b.error);
      if (b.value->size > s.max_size()) throw PerfError("exchange: the client asks for a size above its maximum");
      begin = *b.value;
      h.prepare(begin);
      in_size = true;
      s.ch.send(MsgType::ready);
      if (h.traffic) h.traffic(begin);
    } else if (m.type == MsgType::size_end && in_size) {
      auto e = decode_size_end(m.payload);
      if (!e) throw PerfError("exchange: " + e.error);
      SizeResult r;
      r.status = SizeResult::skipped;
      if (begin.verify) r = s.verify_dst(begin.size, begin.salt);
      s.ch.send(MsgType::size_result, encode(r));
      in_size = false;
      h.finish(begin, *e.value, r);
    } else {
      throw PerfError(fmt::format("exchange: unexpected {} from the client", msg_type_name(m.type)));
    }
  }
  std::fputs(result_line().c_str(), stdout);
}

}  // namespace mrc::perf
