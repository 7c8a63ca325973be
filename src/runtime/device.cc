#include "runtime/device.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cstring>

#include "platform/os_error.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"

namespace mrc::rt {

namespace {

uint64_t os_random_u64() {
  uint64_t v = 0;
  // getrandom on a 8-byte request never returns short once the pool is
  // initialised; retry on EINTR.
  while (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
  }
  return v;
}

Status reject(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return Errc::invalid_argument;
}

wire::IpAddress ip_of(const platform::SockAddr& a) {
  wire::IpAddress ip{};
  const auto b = a.address_bytes();
  std::copy(b.begin(), b.end(), ip.begin());
  return ip;
}

platform::SockAddr without_port(platform::SockAddr a) {
  a.set_port(0);
  return a;
}

constexpr size_t kTxBatch = 64;        ///< packets polled per engine iteration
constexpr size_t kRxBatch = 64;        ///< datagrams per recvmmsg
constexpr Duration kMaxSleep = Duration::ms(50);

}  // namespace

// ----------------------------------------------------------------- config

core::ProtocolConfig DeviceConfig::default_protocol() {
  core::ProtocolConfig p;
  // A software path: an engine iteration and the kernel's loopback take tens
  // of microseconds, and a sleeping engine wakes in about 50 us.
  p.base_rtt = Duration::us(100);
  p.reorder_allowance = Duration::us(100);
  p.sack_coalesce_delay = Duration::us(5);
  p.probe_interval = Duration::ms(1);
  p.probe_interval_max = Duration::ms(100);
  return p;
}

Status DeviceConfig::validate(std::string* why) const {
  if (planes.empty() || planes.size() > core::kMaxPorts)
    return reject(why, "planes: give 1..32 local addresses, one per plane");
  std::optional<platform::AddrFamily> fam;
  for (const std::string& s : planes) {
    auto a = platform::SockAddr::parse(s);
    if (!a) return reject(why, "planes: '" + s + "' is not a numeric IPv4 or IPv6 address");
    if (fam && *fam != a->family()) return reject(why, "planes: all planes must use one address family");
    fam = a->family();
  }
  if (udp_port == 0) return reject(why, "udp_port: must be 1..65535 (default 4791)");
  if (evs_per_plane == 0 || evs_per_plane > 1024)
    return reject(why, "evs_per_plane: must be 1..1024 (one sending socket each; default 16)");
  // Plane p's EVs are source ports ev_port_base + p * evs_per_plane + i: an
  // EV value names one path of one plane (the core wants them distinct).
  const uint32_t ev_end = uint32_t{ev_port_base} + static_cast<uint32_t>(planes.size()) * evs_per_plane;
  if (ev_end > 65536)
    return reject(why, "ev_port_base: ev_port_base + planes x evs_per_plane must not exceed 65536");
  if (ev_port_base <= udp_port && udp_port < ev_end)
    return reject(why, "ev_port_base: the EV source ports must not include udp_port");
  if (burst == 0 || burst > 64) return reject(why, "burst: must be 1..64 (1 = per-packet spraying)");
  if (engines != 1)
    return reject(why, "engines: this build runs one progress engine per device (more are not implemented yet)");
  if (ev_mode == EvWire::stev && fam == platform::AddrFamily::ipv4)
    return reject(why, "ev_mode: stev needs IPv6 plane addresses (the flow label)");
  if (cc != core::kCcFixed && cc != core::kCcNscc)
    return reject(why, "cc: must be \"fixed\" or \"uet-1.0-nscc\"");
  if (cc == core::kCcFixed && fixed_window_bytes < 4096)
    return reject(why, "fixed_window_bytes: must be >= 4096");
  if (socket_buffer_bytes < 65536) return reject(why, "socket_buffer_bytes: must be >= 65536");
  return {};
}

// ----------------------------------------------------------------- CQ

size_t CompletionQueue::poll(std::span<core::WorkCompletion> out) {
  // An empty CQ answers without the consumer lock: applications spin here.
  if (ring_.size() == 0) return 0;
  std::lock_guard<std::mutex> g(consumer_mu_);
  return ring_.pop(out);
}

// ----------------------------------------------------------------- open/close

Device::Device(const DeviceConfig& cfg) : cfg_(cfg), rx_batch_(kRxBatch, 65536) {}

Result<std::unique_ptr<Device>> Device::open(const DeviceConfig& cfg, std::string* why) {
  if (Status s = cfg.validate(why); !s) return s.error();
  std::unique_ptr<Device> d(new Device(cfg));
  for (const std::string& s : cfg.planes) {
    Plane p;
    p.addr = without_port(*platform::SockAddr::parse(s));
    p.ip = ip_of(p.addr);
    d->planes_.push_back(std::move(p));
  }
  d->fmt_.mode = cfg.ev_mode == EvWire::stev ? wire::EvMode::stev : wire::EvMode::udp;
  d->fmt_.ip = d->planes_[0].addr.is_ipv4() ? wire::IpVersion::v4 : wire::IpVersion::v6;
  d->fmt_.udp_dport = cfg.udp_port;
  // STEV: the whole EV in the source port, none in the flow label (the
  // kernel derives the label from the port hash).
  d->fmt_.stev.sport_bits = 16;
  d->fmt_.stev.flow_label_bits = 0;

  core::EndpointConfig& ec = d->ep_cfg_;
  ec.seed = cfg.seed ? cfg.seed : os_random_u64();
  ec.entropy = os_random_u64;
  ec.ports.assign(cfg.planes.size(), core::PortConfig{100'000'000'000ull});
  ec.protocol = cfg.protocol;
  ec.protocol.ev_burst = cfg.burst;
  ec.cap_svc_time = false;  // no service-time reporting in software
  auto ep = core::Endpoint::create(ec, why);
  if (!ep) return ep.error();
  d->ep_ = std::move(*ep);

  // Profile 0 of each kind is what QPs use unless the controller says
  // otherwise: every EV of every plane, all active.
  core::EvProfile evp;
  for (uint32_t p = 0; p < d->num_planes(); ++p)
    for (uint32_t i = 0; i < cfg.evs_per_plane; ++i)
      evp.explicit_evs.push_back(core::EvEntry{cfg.ev_port_base + p * cfg.evs_per_plane + i, static_cast<uint8_t>(p)});
  evp.active_count = static_cast<uint32_t>(evp.explicit_evs.size());
  evp.ev_min_active = std::max<uint32_t>(1, evp.active_count / 4);
  if (Status s = d->ep_->set_ev_profile(0, evp, why); !s) return s.error();
  core::CcProfile ccp;
  ccp.algorithm = cfg.cc;
  ccp.fixed.window_bytes = cfg.fixed_window_bytes;
  if (Status s = d->ep_->set_cc_profile(0, ccp, why); !s) return s.error();

  if (Status s = d->open_sockets(why); !s) return s.error();
  d->slots_.resize(kTxBatch);
  d->engine_ = std::thread([dev = d.get()] { dev->engine_main(); });
  return d;
}

Status Device::open_sockets(std::string* why) {
  auto ep = platform::Epoll::create();
  auto wk = platform::EventFd::create();
  if (!ep || !wk) {
    if (why) *why = "epoll/eventfd: " + platform::last_error_message();
    return Errc::no_memory;
  }
  epoll_ = std::move(*ep);
  wake_ = std::move(*wk);
  if (Status s = epoll_.add(wake_.fd(), platform::events::kReadable, ~uint64_t{0}); !s) return s;
  const int buf = static_cast<int>(cfg_.socket_buffer_bytes);
  for (uint32_t p = 0; p < planes_.size(); ++p) {
    Plane& pl = planes_[p];
    platform::UdpSocketOptions o;
    o.rcvbuf_bytes = buf;
    o.sndbuf_bytes = buf;
    o.gro = cfg_.burst > 1;
    platform::SockAddr at = pl.addr;
    at.set_port(cfg_.udp_port);
    auto rx = platform::UdpSocket::open(at, o);
    if (!rx) {
      if (why) *why = "plane " + std::to_string(p) + " (" + at.to_string() + "): " + platform::last_error_message();
      return rx.error();
    }
    pl.rx = std::move(*rx);
    if (Status s = epoll_.add(pl.rx.fd(), platform::events::kReadable, p); !s) return s;
    platform::UdpSocketOptions so;
    so.sndbuf_bytes = buf;
    so.rcvbuf_bytes = 4096;  // these sockets only send
    for (uint32_t i = 0; i < cfg_.evs_per_plane; ++i) {
      platform::SockAddr from = pl.addr;
      from.set_port(static_cast<uint16_t>(cfg_.ev_port_base + p * cfg_.evs_per_plane + i));
      auto tx = platform::UdpSocket::open(from, so);
      if (!tx) {
        if (why)
          *why = "plane " + std::to_string(p) + " EV source port " + from.to_string() + ": " +
                 platform::last_error_message() + " (choose another ev_port_base)";
        return tx.error();
      }
      pl.tx.push_back(std::move(*tx));
    }
  }
  return {};
}

Device::~Device() {
  stop_.store(true);
  if (wake_.fd() >= 0) (void)wake_.signal();
  if (engine_.joinable()) engine_.join();
  // The CQs the application did not destroy: the device owns them (header).
  for (CompletionQueue* cq : cqs_) delete cq;
  cqs_.clear();
}

// ----------------------------------------------------------------- peers

uint64_t Device::add_peer_locked(const platform::SockAddr& gid, std::vector<platform::SockAddr> planes) {
  Peer p;
  p.gid = without_port(gid);
  for (platform::SockAddr& a : planes) {
    a.set_port(cfg_.udp_port);
    p.ips.push_back(ip_of(a));
  }
  p.planes = std::move(planes);
  peers_.push_back(std::move(p));
  const uint64_t id = peers_.size();
  for (const platform::SockAddr& a : peers_.back().planes) peer_by_addr_[without_port(a)] = id;
  peer_by_addr_[peers_.back().gid] = id;
  return id;
}

Status Device::set_peer(const platform::SockAddr& gid, std::span<const platform::SockAddr> planes) {
  if (planes.size() != planes_.size()) return Errc::invalid_argument;
  for (const auto& a : planes)
    if (a.family() != planes_[0].addr.family()) return Errc::invalid_argument;
  if (gid.family() != planes_[0].addr.family()) return Errc::invalid_argument;
  std::lock_guard<std::mutex> g(mu_);
  auto it = peer_by_addr_.find(without_port(gid));
  if (it != peer_by_addr_.end()) {
    // Redeclaring a peer: refused while a QP talks to it (its packets would
    // change destination mid-connection).
    for (uint32_t qpn : ep_->qp_numbers()) {
      auto q = ep_->query_qp(qpn);
      if (q && q->peer == it->second && (q->state == core::QpState::rtr || q->state == core::QpState::rts))
        return Errc::busy;
    }
    Peer& p = peers_[it->second - 1];
    for (const auto& a : p.planes) peer_by_addr_.erase(without_port(a));
    p.planes.assign(planes.begin(), planes.end());
    p.ips.clear();
    for (auto& a : p.planes) {
      a.set_port(cfg_.udp_port);
      p.ips.push_back(ip_of(a));
      peer_by_addr_[without_port(a)] = it->second;
    }
    return {};
  }
  add_peer_locked(gid, std::vector<platform::SockAddr>(planes.begin(), planes.end()));
  return {};
}

Result<uint64_t> Device::peer_id(const platform::SockAddr& gid) {
  if (gid.family() != planes_[0].addr.family()) return Errc::invalid_argument;
  std::lock_guard<std::mutex> g(mu_);
  auto it = peer_by_addr_.find(without_port(gid));
  if (it != peer_by_addr_.end()) return it->second;
  return add_peer_locked(gid, std::vector<platform::SockAddr>(planes_.size(), without_port(gid)));
}

std::optional<platform::SockAddr> Device::peer_gid(uint64_t peer) const {
  std::lock_guard<std::mutex> g(const_cast<std::mutex&>(mu_));
  if (peer == 0 || peer > peers_.size()) return std::nullopt;
  return peers_[peer - 1].gid;
}

// ----------------------------------------------------------------- control calls

Result<uint32_t> Device::alloc_pd() {
  std::lock_guard<std::mutex> g(mu_);
  return ep_->alloc_pd();
}

Status Device::dealloc_pd(uint32_t pd) {
  std::lock_guard<std::mutex> g(mu_);
  return ep_->dealloc_pd(pd);
}

Result<core::MemoryRegion> Device::reg_mr(const void* addr, size_t length, uint32_t access, uint32_t pd) {
  std::lock_guard<std::mutex> g(mu_);
  return ep_->reg_mr(reinterpret_cast<uint64_t>(addr), length, access, true, pd);
}

Status Device::dereg_mr(uint32_t lkey) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (Status s = ep_->dereg_mr(lkey); !s) return s;
  }
  // A send in progress may still read the region's last retransmission:
  // wait for it (file comment).
  std::lock_guard<std::mutex> g(send_mu_);
  return {};
}

Result<CompletionQueue*> Device::create_cq(uint32_t capacity) {
  std::lock_guard<std::mutex> g(mu_);
  auto id = ep_->create_cq(capacity);
  if (!id) return id.error();
  auto* cq = new CompletionQueue(*id, capacity);
  cqs_.push_back(cq);
  return cq;
}

Status Device::destroy_cq(CompletionQueue* cq) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = std::find(cqs_.begin(), cqs_.end(), cq);
  if (it == cqs_.end()) return Errc::not_found;
  if (Status s = ep_->destroy_cq(cq->core_id()); !s) return s;
  cqs_.erase(it);
  // Completions staged for it by the engine are dropped at publication
  // (publish() checks cqs_ under the lock).
  delete cq;
  return {};
}

Result<uint32_t> Device::create_qp(const core::QpInit& init) {
  std::lock_guard<std::mutex> g(mu_);
  return ep_->create_qp(init);
}

Status Device::destroy_qp(uint32_t qpn) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (Status s = ep_->destroy_qp(qpn); !s) return s;
  }
  kick();  // the flushed completions
  std::lock_guard<std::mutex> g(send_mu_);
  return {};
}

Status Device::modify_qp(uint32_t qpn, const core::QpAttr& attr, uint32_t mask) {
  Status s;
  {
    std::lock_guard<std::mutex> g(mu_);
    s = ep_->modify_qp(clock_.now(), qpn, attr, mask);
  }
  kick();
  return s;
}

std::optional<core::QpInfo> Device::query_qp(uint32_t qpn) {
  std::lock_guard<std::mutex> g(mu_);
  return ep_->query_qp(qpn);
}

size_t Device::query_evs(uint32_t qpn, std::span<core::EvInfo> out) {
  std::lock_guard<std::mutex> g(mu_);
  return ep_->query_evs(qpn, out);
}

uint32_t Device::random_psn() {
  std::lock_guard<std::mutex> g(mu_);
  return ep_->random_psn();
}

Status Device::post_send(uint32_t qpn, const core::SendWr& wr) {
  Status s;
  {
    std::lock_guard<std::mutex> g(mu_);
    s = ep_->post_send(clock_.now(), qpn, wr);
  }
  kick();
  return s;
}

Status Device::post_recv(uint32_t qpn, const core::RecvWr& wr) {
  std::lock_guard<std::mutex> g(mu_);
  return ep_->post_recv(qpn, wr);
}

void Device::set_event_sink(std::function<void(const core::Event&)> sink) {
  std::lock_guard<std::mutex> g(mu_);
  sink_ = std::move(sink);
}

DeviceStats Device::stats() {
  std::lock_guard<std::mutex> g(mu_);
  DeviceStats s = st_;
  s.core = ep_->stats();
  for (uint32_t qpn : ep_->qp_numbers())
    if (auto q = ep_->query_qp(qpn)) s.retransmissions += q->stats.retransmissions;
  return s;
}

void Device::kick() {
  if (sleeping_.load(std::memory_order_acquire)) (void)wake_.signal();
}

// ----------------------------------------------------------------- engine

void Device::engine_main() {
  std::vector<StagedCompletion> staged;
  std::vector<core::Event> events;
  platform::EpollEvent evs[40];
  while (!stop_.load(std::memory_order_acquire)) {
    const bool got = receive_all();
    size_t n = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      const Time now = clock_.now();
      if (ep_->next_timeout() <= now) ep_->handle_timeout(now);
      collect_events();
      staged.swap(staged_);
      events.swap(events_out_);
      ++st_.engine_iterations;
      // Publishing before polling packets is what makes completions safe
      // (file comment): no packet polled below belongs to a completed WR.
      publish(staged);
      n = poll_transmits(now);
    }
    staged.clear();
    if (sink_)
      for (const core::Event& e : events) sink_(e);
    events.clear();
    if (n > 0) {
      std::lock_guard<std::mutex> g(send_mu_);
      send_slots(n);
    }
    if (got || n > 0 || cfg_.busy_poll) continue;
    // Idle: sleep until a packet, a kick or the next timer. The flag is set
    // before the last look so a post in between is not missed.
    sleeping_.store(true, std::memory_order_release);
    bool pending;
    Time deadline;
    {
      std::lock_guard<std::mutex> g(mu_);
      pending = ep_->has_pending_transmit() || ep_->next_timeout() <= clock_.now();
      deadline = ep_->next_timeout();
    }
    if (!pending) {
      Duration wait = kMaxSleep;
      if (!deadline.is_never()) wait = std::min(wait, std::max(Duration{}, deadline - clock_.now()));
      ++st_.engine_sleeps;
      auto r = epoll_.wait(evs, wait);
      if (r)
        for (size_t i = 0; i < *r; ++i)
          if (evs[i].user_data == ~uint64_t{0}) (void)wake_.drain();
    }
    sleeping_.store(false, std::memory_order_release);
  }
}

// Drains every plane's receive queue into the core. Returns true if any
// datagram arrived.
bool Device::receive_all() {
  bool any = false;
  for (uint32_t p = 0; p < planes_.size(); ++p) {
    for (int rounds = 0; rounds < 4; ++rounds) {
      auto r = planes_[p].rx.recv_batch(rx_batch_);
      if (!r || *r == 0) break;
      any = true;
      std::lock_guard<std::mutex> g(mu_);
      const Time now = clock_.now();
      for (platform::RxDatagram& d : rx_batch_.received()) handle_datagram(p, d, now);
      if (*r < rx_batch_.capacity()) break;
    }
  }
  return any;
}

void Device::handle_datagram(uint32_t plane, const platform::RxDatagram& d, Time now) {
  platform::SockAddr src = d.source;
  const uint16_t sport = src.port();
  src.set_port(0);
  auto it = peer_by_addr_.find(src);
  const size_t nseg = d.segment_count();
  if (it == peer_by_addr_.end()) {
    st_.rx_unknown_source += nseg;
    return;
  }
  const Peer& peer = peers_[it->second - 1];
  core::RxMeta meta;
  meta.port = static_cast<uint8_t>(plane);
  meta.peer = it->second;
  meta.entropy = sport;
  meta.ecn_ce = d.tos_valid && (d.tos & 3) == 3;
  wire::FrameFields f;
  f.src = plane < peer.ips.size() ? peer.ips[plane] : ip_of(src);
  f.dst = planes_[plane].ip;
  f.ev = sport;
  for (std::span<std::byte> seg : d.segments()) {
    ++st_.rx_packets;
    st_.rx_bytes += seg.size();
    if (seg.size() < wire::Bth::kSize + wire::kIcrcBytes) {
      ++st_.rx_short;
      continue;
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(seg.data());
    const size_t body = seg.size() - wire::kIcrcBytes;
    auto crc = wire::datagram_icrc(fmt_, f, std::span<const uint8_t>(bytes, body), {});
    if (!crc || *crc != wire::get_icrc(bytes + body)) {
      ++st_.rx_icrc_errors;
      continue;
    }
    ep_->handle_datagram(now, meta, std::span<const uint8_t>(bytes, body));
  }
}

// Polls up to kTxBatch packets from the core into slots; ports are always
// offered (the kernel queues what the socket buffer holds).
size_t Device::poll_transmits(Time now) {
  const uint32_t all = num_planes() >= 32 ? ~0u : (1u << num_planes()) - 1;
  size_t n = 0;
  while (n < slots_.size()) {
    TxSlot& s = slots_[n];
    auto tx = ep_->poll_transmit(now, all, s.hdr);
    if (!tx) break;
    s.tx = *tx;
    s.payload = s.tx.payload;
    const Peer& peer = peers_[s.tx.peer - 1];
    s.dest = peer.planes[s.tx.port];
    s.dst_ip = peer.ips[s.tx.port];
    if (s.tx.gather != nullptr) {
      // The packet straddles gather elements: one contiguous copy, so the
      // ICRC and the send see one payload (rare: only at element edges).
      core::PayloadSegment segs[core::kMaxSge];
      const size_t k = core::payload_segments(s.tx, segs);
      size_t at = 0;
      for (size_t i = 0; i < k; ++i) {
        std::memcpy(s.bounce.data() + at, segs[i].data, segs[i].len);
        at += segs[i].len;
      }
      s.payload = s.bounce.data();
    }
    ++n;
  }
  return n;
}

// Sends the polled packets. Consecutive packets on one socket to one
// destination with equal sizes form one GSO burst (burst mode); otherwise
// each is a datagram. The ICRC is computed here, outside the device lock.
void Device::send_slots(size_t n) {
  platform::IoSlice iov[platform::UdpSocket::kMaxIovPerDatagram];
  size_t i = 0;
  while (i < n) {
    TxSlot& first = slots_[i];
    const core::Transmit& t0 = first.tx;
    const uint32_t plane = t0.port;
    const uint32_t ev_index = t0.entropy - cfg_.ev_port_base - plane * cfg_.evs_per_plane;
    platform::UdpSocket& sock = planes_[plane].tx[ev_index < cfg_.evs_per_plane ? ev_index : 0];
    const size_t seg_bytes = size_t{t0.header_len} + t0.payload_len + wire::kIcrcBytes;
    size_t j = i;
    size_t iovs = 0;
    size_t total = 0;
    while (j < n) {
      TxSlot& s = slots_[j];
      const core::Transmit& t = s.tx;
      const size_t bytes = size_t{t.header_len} + t.payload_len + wire::kIcrcBytes;
      if (j > i) {
        // Same socket and destination, and the GSO rule: every segment the
        // size of the first, the last one possibly shorter.
        const TxSlot& prev = slots_[j - 1];
        const size_t prev_bytes = size_t{prev.tx.header_len} + prev.tx.payload_len + wire::kIcrcBytes;
        if (cfg_.burst == 1 || t.port != t0.port || t.entropy != t0.entropy || t.peer != t0.peer ||
            bytes > seg_bytes || prev_bytes != seg_bytes || iovs + 3 > std::size(iov) ||
            total + bytes > 65000 || j - i >= platform::UdpSocket::kMaxGsoSegments)
          break;
      }
      wire::FrameFields f;
      f.src = planes_[plane].ip;
      f.dst = s.dst_ip;
      f.ev = t.entropy;
      const auto crc = wire::datagram_icrc(fmt_, f, std::span<const uint8_t>(s.hdr.data(), t.header_len),
                                           std::span<const uint8_t>(s.payload, t.payload_len));
      wire::put_icrc(crc ? *crc : 0, s.icrc.data());
      iov[iovs++] = platform::IoSlice{s.hdr.data(), t.header_len};
      if (t.payload_len) iov[iovs++] = platform::IoSlice{s.payload, t.payload_len};
      iov[iovs++] = platform::IoSlice{s.icrc.data(), wire::kIcrcBytes};
      total += bytes;
      ++j;
    }
    platform::TxDatagram dg;
    dg.dest = &first.dest;
    dg.iov = std::span<const platform::IoSlice>(iov, iovs);
    dg.gso_segment_bytes = j - i > 1 ? static_cast<uint16_t>(seg_bytes) : 0;
    auto r = sock.send_batch({&dg, 1});
    const size_t pkts = j - i;
    if (r && *r == 1) {
      st_.tx_packets += pkts;
      st_.tx_bytes += total;
      ++st_.tx_datagrams;
    } else {
      // A full socket buffer (or a transient error): the packets are lost
      // as if the network dropped them; the protocol recovers them.
      st_.tx_eagain += pkts;
    }
    i = j;
  }
}

// Moves the core's completions and events out (under mu_).
void Device::collect_events() {
  core::WorkCompletion wcs[64];
  for (CompletionQueue* cq : cqs_) {
    while (size_t k = ep_->poll_cq(cq->core_id(), wcs))
      for (size_t i = 0; i < k; ++i) staged_.push_back(StagedCompletion{wcs[i], cq});
  }
  while (auto e = ep_->poll_event()) {
    if (auto* ce = std::get_if<core::CqErrorEvent>(&*e)) {
      for (CompletionQueue* cq : cqs_)
        if (cq->core_id() == ce->cq) cq->overflows_.fetch_add(1, std::memory_order_relaxed);
    }
    events_out_.push_back(*e);
  }
}

// Pushes staged completions into their rings (under mu_, so a CQ cannot be
// destroyed meanwhile) and fires the notify hook of armed CQs.
void Device::publish(std::vector<StagedCompletion>& staged) {
  CompletionQueue* last = nullptr;
  for (const StagedCompletion& s : staged) {
    if (std::find(cqs_.begin(), cqs_.end(), s.cq) == cqs_.end()) continue;
    if (!s.cq->ring_.push(s.wc)) {
      // The application let the CQ fill: IBV_EVENT_CQ_ERR once, as the
      // core does for its own queue.
      if (s.cq->overflows_.fetch_add(1, std::memory_order_relaxed) == 0)
        events_out_.push_back(core::CqErrorEvent{s.cq->core_id()});
      continue;
    }
    if (s.cq != last && s.cq->armed_.exchange(false, std::memory_order_acq_rel) && s.cq->notify_) s.cq->notify_();
    last = s.cq;
  }
}

}  // namespace mrc::rt
