#include "runtime/device.hpp"

#include <sys/random.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "platform/os_error.hpp"
#include "platform/sched.hpp"
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

constexpr size_t kTxBatch = 64;        ///< packets polled per engine iteration ...
/// ... plus what it takes to finish the EV burst in progress at the 64th
/// (a burst is at most a GSO datagram's kMaxIovPerDatagram / 3 segments).
constexpr size_t kTxSlots = kTxBatch + platform::UdpSocket::kMaxIovPerDatagram / 3;
static_assert(kTxSlots <= platform::UringSender::kMaxBatch, "a batch goes in one io_uring submission");
/// Bytes of one GSO super-packet's UDP payload we send (the kernel's limit
/// is 65,507 less the IP options; a round margin).
constexpr uint32_t kMaxGsoBytes = 65000;
constexpr Duration kMaxSleep = Duration::ms(50);
/// Bytes one recvmmsg may write: the ICRC and the responder's copy then read
/// them from cache. 64 GRO datagrams a call (4 MiB) made 1 MiB WRITEs in
/// burst mode 17 % slower than 8 or 16 (docs/performance.md, stop 22);
/// per-packet datagrams still come 64 a call.
constexpr size_t kRxBytesPerCall = 512 * 1024;
/// An application that posted or polled this recently is driving: the
/// engine threads stay out of its way (engine_main).
constexpr Duration kAppDrivingWindow = Duration::ms(1);
/// The soonest an engine thread wakes for a timer while an application
/// drives (engine_main).
constexpr Duration kAppTimerSlack = Duration::us(200);
/// Once a millisecond of bulk data is seen, the device counts as moving bulk
/// data this long after it (Device::bulk_now).
constexpr Duration kBulkHold = Duration::ms(10);
/// epoll user data: the wake eventfd, and engine 0's link monitor (plane
/// sockets carry their plane number).
constexpr uint64_t kWakeTag = ~uint64_t{0};
constexpr uint64_t kLinkTag = ~uint64_t{0} - 1;
/// A busy engine 0 (it never sleeps in epoll) still reads link changes this
/// often: a nonblocking recvmsg that finds nothing, ~1 us per millisecond.
constexpr Duration kCarrierPoll = Duration::ms(1);

/// 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104: a loopback address has no
/// carrier of its own to watch.
bool loopback_address(const platform::SockAddr& a) {
  const auto b = a.address_bytes();
  if (a.is_ipv4()) return b[0] == 127;
  static constexpr uint8_t kOne[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(b.begin(), b.end(), kOne) || (std::equal(kMapped, kMapped + 12, b.begin()) && b[12] == 127);
}

}  // namespace

// ----------------------------------------------------------------- config

core::ProtocolConfig DeviceConfig::default_protocol() {
  core::ProtocolConfig p;
  // A software path: an engine iteration and the kernel's loopback take tens
  // of microseconds, and a sleeping engine wakes in about 50 us.
  p.base_rtt = Duration::us(100);
  p.reorder_allowance = Duration::us(100);
  // A fixed 5 us from the first arrival (the core's default restarts its
  // wait on each arrival): a burst arrives at once and is SACKed by its
  // bytes, and the engine's turn, not the spacing of arrivals, sets when
  // the rest go.
  p.sack_coalesce_delay = Duration::us(5);
  p.sack_coalesce_max = Duration::us(5);
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
  if (raw_send && (burst != 1 || ev_mode != EvWire::udp))
    return reject(why, "raw_send: needs burst 1 and ev_mode udp (GSO bursts, flow labels and SRv6 frames go "
                       "through their own sockets); turn raw_send off or use per-packet udp mode");
  if (dscp_control > 63) return reject(why, "dscp_control: must be 0..63 (a DSCP, or 0 to mark nothing)");
  if (engines == 0 || engines > 16 || (engines & (engines - 1)) != 0)
    return reject(why, "engines: must be 1, 2, 4, 8 or 16 (QPs are sharded by the low bits of their QPN)");
  if (ev_mode == EvWire::stev && fam == platform::AddrFamily::ipv4)
    return reject(why, "ev_mode: stev needs IPv6 plane addresses (the flow label)");
  if (ev_mode == EvWire::srv6 && fam == platform::AddrFamily::ipv4)
    return reject(why, "ev_mode: srv6 needs IPv6 plane addresses (IPv6-in-IPv6 frames)");
  if (cc != core::kCcFixed && cc != core::kCcNscc)
    return reject(why, "cc: must be \"fixed\" or \"uet-1.0-nscc\"");
  if (cc == core::kCcFixed && fixed_window_bytes < 4096)
    return reject(why, "fixed_window_bytes: must be >= 4096");
  if (socket_buffer_bytes < 65536) return reject(why, "socket_buffer_bytes: must be >= 65536");
  if (pcap_path.find('\0') != std::string::npos) return reject(why, "pcap_path: contains a NUL byte");
  return {};
}

// ----------------------------------------------------------------- CQ

size_t CompletionQueue::poll(std::span<core::WorkCompletion> out) {
  // An empty CQ answers without the consumer lock: applications spin here.
  if (ring_.size() == 0) {
    if (!progress_) return 0;
    progress_();
    if (ring_.size() == 0) return 0;
  }
  std::lock_guard<std::mutex> g(consumer_mu_);
  return ring_.pop(out);
}

// ----------------------------------------------------------------- open/close

Device::Device(const DeviceConfig& cfg) : cfg_(cfg) { channels_watch_.store(cfg.bulk_bytes_per_ms > 0); }

Result<std::unique_ptr<Device>> Device::open(const DeviceConfig& cfg, std::string* why) {
  if (Status s = cfg.validate(why); !s) return s.error();
  std::unique_ptr<Device> d(new Device(cfg));
  for (const std::string& s : cfg.planes) {
    Plane p;
    p.addr = without_port(*platform::SockAddr::parse(s));
    p.ip = ip_of(p.addr);
    // The largest packet: IP and UDP headers, MRC headers, 4 KiB, ICRC.
    const uint32_t largest = static_cast<uint32_t>((p.addr.is_ipv4() ? wire::kIpv4HeaderBytes : wire::kIpv6HeaderBytes) +
                                                   wire::kUdpHeaderBytes + wire::kMaxHeaderBytes + 4096 + wire::kIcrcBytes);
    if (auto mtu = platform::local_interface_mtu(p.addr); mtu && *mtu < largest) {
      p.whole_packets = false;
      std::fprintf(stderr,
                   "mrc: software device: plane %s: its interface's MTU (%u) is below the largest MRC packet (%u "
                   "bytes, 4 KiB path MTU): the kernel fragments packets that do not fit (RoCEv2 never does, and the "
                   "IPv4 identification their ICRC covers is then the kernel's); raise the MTU or use a path MTU "
                   "that fits\n",
                   s.c_str(), *mtu, largest);
    }
    d->planes_.push_back(std::move(p));
  }
  d->fmt_.mode = cfg.ev_mode == EvWire::stev ? wire::EvMode::stev : wire::EvMode::udp;
  d->fmt_.ip = d->planes_[0].addr.is_ipv4() ? wire::IpVersion::v4 : wire::IpVersion::v6;
  d->fmt_.udp_dport = cfg.udp_port;
  // STEV: the whole EV in the source port, none in the flow label (the
  // kernel derives the label from the port hash).
  d->fmt_.stev.sport_bits = 16;
  d->fmt_.stev.flow_label_bits = 0;
  // SRv6: the compact EV in the inner source port only, as above; the
  // receiving side sees a plain IPv6 datagram after decapsulation (fmt_).
  d->srv6_fmt_ = d->fmt_;
  d->srv6_fmt_.mode = wire::EvMode::srv6;
  d->srv6_fmt_.ip = wire::IpVersion::v6;
  // raw_send: the datagram the EV sockets would send. The ICRC covers the
  // whole packet, so an IPv4 UDP checksum would only cost a pass over the
  // payload; IPv6 requires one (RFC 8200).
  d->raw_fmt_ = d->fmt_;
  if (d->raw_fmt_.ip == wire::IpVersion::v4) d->raw_fmt_.checksum = wire::UdpChecksumMode::zero;
  if (!cfg.pcap_path.empty()) {
    platform::PcapOptions po;
    po.max_packets = cfg.pcap_max_packets;
    auto w = platform::PcapWriter::open(cfg.pcap_path, po, why);
    if (!w) return w.error();
    d->pcap_ = std::move(*w);
  }

  core::EndpointConfig& ec = d->ep_cfg_;
  ec.seed = cfg.seed ? cfg.seed : os_random_u64();
  ec.entropy = os_random_u64;
  ec.ports.assign(cfg.planes.size(), core::PortConfig{100'000'000'000ull});
  ec.protocol = cfg.protocol;
  // A burst is one GSO super-packet: at most kMaxGsoBytes, and three
  // slices (header, payload, ICRC) per segment.
  ec.protocol.ev_burst = std::min<uint32_t>(cfg.burst, platform::UdpSocket::kMaxIovPerDatagram / 3);
  ec.protocol.ev_burst_bytes = kMaxGsoBytes;
  // A burst's packets arrive together (one GRO datagram, one iteration):
  // SACK them once, not every 16 KiB of them. Four SACKs per 16-packet
  // burst were a quarter of the sender's receive work; per burst, 1 MiB
  // WRITEs went from 20.6 to 21.2 Gbit/s (median of 8, --burst 16).
  ec.protocol.sack_bytes_threshold = std::max<uint32_t>(ec.protocol.sack_bytes_threshold, ec.protocol.ev_burst * 4096);
  ec.cap_svc_time = false;  // no service-time reporting in software
  // The kernel takes every plane's packets at once (the core is offered all
  // ports on every poll), and the network behind the sockets, not a port
  // arbiter, decides when each leaves: the QP's own spraying is the balance.
  ec.balance_peer_ports = false;
  ec.qpn_shard_bits = static_cast<uint32_t>(std::countr_zero(cfg.engines));

  // Profile 0 of each kind is what QPs use unless the controller says
  // otherwise: every EV of every plane, all active.
  core::EvProfile evp;
  for (uint32_t p = 0; p < d->num_planes(); ++p)
    for (uint32_t i = 0; i < cfg.evs_per_plane; ++i)
      evp.explicit_evs.push_back(core::EvEntry{cfg.ev_port_base + p * cfg.evs_per_plane + i, static_cast<uint8_t>(p)});
  evp.active_count = static_cast<uint32_t>(evp.explicit_evs.size());
  evp.ev_min_active = std::max<uint32_t>(1, evp.active_count / 4);
  d->default_evp_ = evp;
  core::CcProfile ccp;
  ccp.algorithm = cfg.cc;
  ccp.fixed.window_bytes = cfg.fixed_window_bytes;

  for (uint32_t i = 0; i < cfg.engines; ++i) {
    auto e = std::make_unique<Engine>();
    e->index = i;
    core::EndpointConfig eci = ec;
    eci.qpn_shard = i;
    eci.seed = ec.seed + i;
    auto ep = core::Endpoint::create(eci, why);
    if (!ep) return ep.error();
    e->ep = std::move(*ep);
    if (Status s = e->ep->set_ev_profile(0, evp, why); !s) return s.error();
    if (Status s = e->ep->set_cc_profile(0, ccp, why); !s) return s.error();
    e->slots.resize(kTxSlots);
    e->gso_stage.resize(kTxSlots * (wire::kMaxHeaderBytes + sizeof(TxSlot::bounce) + wire::kIcrcBytes));
    d->engines_.push_back(std::move(e));
  }
  const uint32_t all = d->num_planes() >= 32 ? ~0u : (1u << d->num_planes()) - 1;
  d->port_up_.store(all);
  d->admin_up_.store(all);
  d->carrier_up_.store(all);
  for (auto& e : d->engines_)
    if (Status s = d->open_engine(*e, why); !s) return s.error();
  // Before the engines run: a plane whose link is down at open starts out
  // of service.
  if (cfg.watch_carrier) d->open_carrier_watch();
  // The plane groups steer by the QPN's shard bits: BTH bytes 4..7 end with
  // the destination QP (the first socket's program serves the group).
  if (cfg.engines > 1)
    for (uint32_t p = 0; p < d->num_planes(); ++p)
      if (Status s = d->engines_[0]->rx[p].steer_reuseport_group(4, cfg.engines - 1); !s) {
        if (why) *why = "plane " + std::to_string(p) + ": " + platform::last_error_message();
        return s.error();
      }
  for (auto& e : d->engines_) e->thread = std::thread([dev = d.get(), eng = e.get()] { dev->engine_main(*eng); });
  return d;
}

Status Device::open_engine(Engine& e, std::string* why) {
  auto ep = platform::Epoll::create();
  auto wk = platform::EventFd::create();
  if (!ep || !wk) {
    if (why) *why = "epoll/eventfd: " + platform::last_error_message();
    return Errc::no_memory;
  }
  auto quiet = platform::Epoll::create();
  if (!quiet) {
    if (why) *why = "epoll: " + platform::last_error_message();
    return Errc::no_memory;
  }
  e.epoll = std::move(*ep);
  e.quiet_epoll = std::move(*quiet);
  e.wake = std::move(*wk);
  if (Status s = e.epoll.add(e.wake.fd(), platform::events::kReadable, kWakeTag); !s) return s;
  if (Status s = e.quiet_epoll.add(e.wake.fd(), platform::events::kReadable, kWakeTag); !s) return s;
  const int buf = static_cast<int>(cfg_.socket_buffer_bytes);
  const bool shared = cfg_.engines > 1;  // the engines' sockets share each address and port
  e.tx.resize(planes_.size());
  for (uint32_t p = 0; p < planes_.size(); ++p) {
    const Plane& pl = planes_[p];
    platform::UdpSocketOptions o;
    o.rcvbuf_bytes = buf;
    o.sndbuf_bytes = buf;
    o.gro = cfg_.burst > 1;
    o.reuse_port = shared;
    o.no_fragment = pl.whole_packets;  // MRC, like RoCEv2, never fragments: DF, IPv4 identification 0
    platform::SockAddr at = pl.addr;
    at.set_port(cfg_.udp_port);
    auto rx = platform::UdpSocket::open(at, o);
    if (!rx) {
      if (why) *why = "plane " + std::to_string(p) + " (" + at.to_string() + "): " + platform::last_error_message();
      return rx.error();
    }
    e.rx.push_back(std::move(*rx));
    // Exclusively, and before any completion channel (watch_sockets): a
    // packet wakes this thread if it sleeps on its sockets, else a channel.
    if (Status s = e.epoll.add(e.rx.back().fd(), platform::events::kReadable | platform::events::kExclusive, p); !s)
      return s;
    platform::UdpSocketOptions so;
    so.sndbuf_bytes = buf;
    so.rcvbuf_bytes = 4096;  // these sockets only send
    so.reuse_port = shared;
    // DF and identification 0, which the ICRC covers (wire::datagram_icrc
    // takes it as 0): the kernel's own choice made the ICRC wrong on the
    // wire for any receiver that checks the real header.
    so.no_fragment = pl.whole_packets;
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
      e.tx[p].push_back(std::move(*tx));
    }
  }
  if (cfg_.ev_mode == EvWire::srv6 || cfg_.raw_send) {
    platform::UdpSocketOptions so;
    so.sndbuf_bytes = buf;
    const auto fam = cfg_.ev_mode == EvWire::srv6 ? platform::AddrFamily::ipv6 : planes_[0].addr.family();
    auto raw = platform::UdpSocket::open_raw(fam, so);
    if (!raw) {
      if (why)
        *why = std::string(cfg_.ev_mode == EvWire::srv6 ? "ev_mode srv6" : "raw_send") + ": raw socket: " +
               platform::last_error_message() + " (needs CAP_NET_RAW: run as root or grant the capability)";
      return raw.error();
    }
    e.raw = std::move(*raw);
  }
  // raw_send already sends a whole batch with one call. A kernel without
  // io_uring, or one that refuses it (kernel.io_uring_disabled, a
  // container's seccomp filter), leaves the sendmmsg path: not an error.
  if (cfg_.io_uring && !cfg_.raw_send) {
    if (auto u = platform::UringSender::open()) e.uring = std::move(*u);
  }
  return {};
}

Device::~Device() {
  stop_.store(true);
  for (auto& e : engines_) {
    if (e->wake.fd() >= 0) (void)e->wake.signal();
    if (e->thread.joinable()) e->thread.join();
  }
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

// True if a QP on any engine is connected (RTR/RTS) to `peer`.
bool Device::peer_connected_locked(uint64_t peer) {
  for (auto& e : engines_) {
    std::lock_guard g(e->mu);
    for (uint32_t qpn : e->ep->qp_numbers()) {
      auto q = e->ep->query_qp(qpn);
      if (q && q->peer == peer && (q->state == core::QpState::rtr || q->state == core::QpState::rts)) return true;
    }
  }
  return false;
}

Status Device::set_peer(const platform::SockAddr& gid, std::span<const platform::SockAddr> planes) {
  if (planes.size() != planes_.size()) return Errc::invalid_argument;
  for (const auto& a : planes)
    if (a.family() != planes_[0].addr.family()) return Errc::invalid_argument;
  if (gid.family() != planes_[0].addr.family()) return Errc::invalid_argument;
  std::unique_lock<std::shared_mutex> g(peers_mu_);
  auto it = peer_by_addr_.find(without_port(gid));
  if (it == peer_by_addr_.end()) {
    add_peer_locked(gid, std::vector<platform::SockAddr>(planes.begin(), planes.end()));
    return {};
  }
  // Redeclaring a peer: the same addresses are a no-op; new ones are
  // refused while a QP talks to it (its packets would change destination
  // mid-connection).
  const uint64_t id = it->second;
  Peer& p = peers_[id - 1];
  bool same = true;
  for (size_t i = 0; i < planes.size(); ++i) same = same && without_port(p.planes[i]) == without_port(planes[i]);
  if (same) return {};
  if (peer_connected_locked(id)) return Errc::busy;
  for (const auto& a : p.planes) peer_by_addr_.erase(without_port(a));
  p.planes.assign(planes.begin(), planes.end());
  p.ips.clear();
  for (auto& a : p.planes) {
    a.set_port(cfg_.udp_port);
    p.ips.push_back(ip_of(a));
    peer_by_addr_[without_port(a)] = id;
  }
  peer_by_addr_[p.gid] = id;
  return {};
}

Result<uint64_t> Device::peer_id(const platform::SockAddr& gid) {
  if (gid.family() != planes_[0].addr.family()) return Errc::invalid_argument;
  std::unique_lock<std::shared_mutex> g(peers_mu_);
  auto it = peer_by_addr_.find(without_port(gid));
  if (it != peer_by_addr_.end()) return it->second;
  return add_peer_locked(gid, std::vector<platform::SockAddr>(planes_.size(), without_port(gid)));
}

std::optional<platform::SockAddr> Device::peer_gid(uint64_t peer) const {
  std::shared_lock<std::shared_mutex> g(const_cast<std::shared_mutex&>(peers_mu_));
  if (peer == 0 || peer > peers_.size()) return std::nullopt;
  return peers_[peer - 1].gid;
}

// ----------------------------------------------------------------- control calls
// PDs, regions and CQs exist in every engine's endpoint with the same ids
// and keys: objects_mu_ keeps their creation order the same everywhere, and
// changes lock every engine, check, then apply, so they happen everywhere
// or nowhere.

std::vector<std::unique_lock<SpinThenBlockMutex>> Device::lock_all_engines() {
  std::vector<std::unique_lock<SpinThenBlockMutex>> locks;
  for (auto& e : engines_) locks.emplace_back(e->mu);
  return locks;
}

Result<uint32_t> Device::alloc_pd() {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  auto id = engines_[0]->ep->alloc_pd();
  if (!id) return id.error();  // the same limit everywhere
  for (size_t i = 1; i < engines_.size(); ++i) {
    auto r = engines_[i]->ep->alloc_pd();
    assert(r && *r == *id && "engines allocate PDs in lockstep");
    (void)r;
  }
  return id;
}

Status Device::dealloc_pd(uint32_t pd) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  for (auto& e : engines_)
    if (e->ep->pd_in_use(pd)) return Errc::busy;
  for (auto& e : engines_)
    if (Status s = e->ep->dealloc_pd(pd); !s) return s;
  return {};
}

Result<core::MemoryRegion> Device::reg_mr(const void* addr, size_t length, uint32_t access, uint32_t pd) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  auto first = engines_[0]->ep->reg_mr(reinterpret_cast<uint64_t>(addr), length, access, true, pd);
  if (!first) return first;
  // The other engines take the same keys, so any QP checks any region.
  for (size_t i = 1; i < engines_.size(); ++i) {
    if (auto r = engines_[i]->ep->reg_mr_as(*first); !r) {
      for (size_t j = 0; j < i; ++j) (void)engines_[j]->ep->dereg_mr(first->lkey);
      return r.error();
    }
  }
  return first;
}

Status Device::dereg_mr(uint32_t lkey) {
  {
    std::lock_guard<std::mutex> o(objects_mu_);
    auto locks = lock_all_engines();
    // A WR of any engine may hold it: refused unless none does.
    for (auto& e : engines_)
      if (e->ep->mr_refs(lkey) > 0) return Errc::busy;
    for (auto& e : engines_)
      if (Status s = e->ep->dereg_mr(lkey); !s) return s;
  }
  // A send in progress may still read the region's last retransmission:
  // wait for it (file comment).
  for (auto& e : engines_) std::lock_guard<std::mutex> g(e->send_mu);
  return {};
}

Result<CompletionQueue*> Device::create_cq(uint32_t capacity) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  auto id = engines_[0]->ep->create_cq(capacity);
  if (!id) return id.error();
  for (size_t i = 1; i < engines_.size(); ++i) {
    auto r = engines_[i]->ep->create_cq(capacity);
    assert(r && *r == *id && "engines create CQs in lockstep");
    (void)r;
  }
  auto* cq = new CompletionQueue(*id, capacity, next_cq_serial_++);
  if (cfg_.app_progress) {
    // A poll after arming (the verbs idiom that closes the race with a
    // completion before the arm) is the application's last look before it
    // sleeps on its channel: it runs the engines but does not claim to be
    // driving, or the engine threads would leave the packets to it. If the
    // channel watches the sockets, a packet that came since the last turn
    // wakes the application at once anyway: that look only sends what is
    // due (a post's turn, no receive: a system call per plane saved).
    cq->progress_ = [this, cq] {
      if (!cq->armed_.load(std::memory_order_acquire)) {
        app_progress(true);
      } else if (cq->channel_sockets_.load(std::memory_order_relaxed)) {
        for (auto& e : engines_) (void)try_iterate(*e, Turn::post);
      } else {
        app_progress(false);
      }
    };
    cq->on_arm_ = [this, cq] {
      if (cq->channel_sockets_.load(std::memory_order_relaxed)) {
        // Its application sleeps on a channel that watches the sockets and
        // runs the engines when a packet wakes it (watch_sockets): it goes
        // on driving, and the engine threads stay asleep on their timers,
        // so the packet wakes it alone. Not while bulk data flows: the
        // application would do all the engines' work on its own thread,
        // and be woken by every packet an engine thread busy elsewhere
        // had not taken yet (write_bw -e lost 11-17 % of its bandwidth).
        // The channels then stop watching the sockets until it stops.
        share_sockets(bulk_now());
      } else {
        engines_take_sockets();
      }
    };
  }
  cqs_.push_back(cq);
  for (auto& e : engines_) e->cqs.emplace_back(*id, cq->serial_);
  return cq;
}

Status Device::destroy_cq(CompletionQueue* cq) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto it = std::find(cqs_.begin(), cqs_.end(), cq);
  if (it == cqs_.end()) return Errc::not_found;
  auto locks = lock_all_engines();
  for (auto& e : engines_)
    if (auto info = e->ep->cq_info(cq->core_id()); info && info->qps > 0) return Errc::busy;
  for (auto& e : engines_) {
    if (Status s = e->ep->destroy_cq(cq->core_id()); !s) return s;
    std::erase(e->cqs, std::pair<uint32_t, uint64_t>{cq->core_id(), cq->serial_});
  }
  cqs_.erase(it);
  // Completions an engine staged for it are dropped at publication (the
  // serial no longer matches a live CQ).
  delete cq;
  return {};
}

Result<uint32_t> Device::create_qp(const core::QpInit& init) {
  Engine& e = *engines_[next_engine_.fetch_add(1) % engines_.size()];
  std::lock_guard g(e.mu);
  return e.ep->create_qp(init);
}

Status Device::destroy_qp(uint32_t qpn) {
  Engine& e = engine_of(qpn);
  {
    std::lock_guard g(e.mu);
    if (Status s = e.ep->destroy_qp(qpn); !s) return s;
  }
  kick(e);  // the flushed completions
  std::lock_guard<std::mutex> g(e.send_mu);
  return {};
}

Status Device::modify_qp(uint32_t qpn, const core::QpAttr& attr, uint32_t mask) {
  Engine& e = engine_of(qpn);
  Status s;
  {
    std::lock_guard g(e.mu);
    s = e.ep->modify_qp(clock_.now(), qpn, attr, mask);
  }
  kick(e);
  return s;
}

Status Device::set_ev_profile(uint64_t id, const core::EvProfile& p, std::string* why) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  for (auto& e : engines_)
    if (Status s = e->ep->set_ev_profile(id, p, why); !s) return s;
  return {};
}

Status Device::set_cc_profile(uint64_t id, const core::CcProfile& p, std::string* why) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  for (auto& e : engines_)
    if (Status s = e->ep->set_cc_profile(id, p, why); !s) return s;
  return {};
}

bool Device::ev_sendable(uint32_t plane, uint32_t value) const {
  const uint64_t first = uint64_t{cfg_.ev_port_base} + uint64_t{plane} * cfg_.evs_per_plane;
  return plane < num_planes() && value >= first && value < first + cfg_.evs_per_plane;
}

Status Device::set_ev_denied(uint32_t qpn, uint32_t value, bool denied) {
  Engine& e = engine_of(qpn);
  Status s;
  {
    std::lock_guard g(e.mu);
    s = e.ep->set_ev_denied(clock_.now(), qpn, value, denied);
  }
  kick(e);  // an EV back in service may let the QP send
  return s;
}

Status Device::set_port_admin(uint32_t plane, bool up) {
  if (plane >= num_planes()) return Errc::invalid_argument;
  std::lock_guard<std::mutex> a(port_admin_mu_);
  const uint32_t bit = 1u << plane;
  const uint32_t before = admin_up_.load(std::memory_order_acquire);
  if (((before & bit) != 0) == up) return {};
  admin_up_.store(up ? before | bit : before & ~bit, std::memory_order_release);
  apply_port_locked(plane);
  return {};
}

void Device::set_port_carrier(uint32_t plane, bool up) {
  std::lock_guard<std::mutex> a(port_admin_mu_);
  const uint32_t bit = 1u << plane;
  const uint32_t before = carrier_up_.load(std::memory_order_acquire);
  if (((before & bit) != 0) == up) return;
  carrier_up_.store(up ? before | bit : before & ~bit, std::memory_order_release);
  (up ? carrier_ups_ : carrier_downs_).fetch_add(1, std::memory_order_relaxed);
  apply_port_locked(plane);
}

void Device::apply_port_locked(uint32_t plane) {
  const uint32_t bit = 1u << plane;
  const bool up = (admin_up_.load(std::memory_order_acquire) & carrier_up_.load(std::memory_order_acquire) & bit) != 0;
  const uint32_t before = port_up_.load(std::memory_order_acquire);
  if (((before & bit) != 0) == up) return;
  port_up_.store(up ? before | bit : before & ~bit, std::memory_order_release);
  // One engine at a time: each core takes its plane out (or back), and
  // queues the port-status updates to its own peers.
  for (auto& e : engines_) {
    {
      std::lock_guard g(e->mu);
      e->ep->set_port_up(clock_.now(), static_cast<uint8_t>(plane), up);
    }
    kick(*e);
  }
}

// ----------------------------------------------------------------- carrier

void Device::open_carrier_watch() {
  auto fail = [this](const std::string& what) {
    // Once per device: the device works, its ports follow the controller.
    std::fprintf(stderr,
                 "mrc: software device: not watching the planes' carrier (%s); a plane whose link dies leaves "
                 "service only when its paths time out\n",
                 what.c_str());
    carrier_failed_ = true;
    carrier_.reset();
  };
  auto c = std::make_unique<CarrierWatch>();
  c->watched.assign(num_planes(), false);
  c->ifindex.assign(num_planes(), 0);
  bool any = false;
  for (uint32_t p = 0; p < num_planes(); ++p) {
    if (loopback_address(planes_[p].addr)) continue;
    auto idx = platform::interface_of(planes_[p].addr);
    if (!idx) {
      // Bound, yet on no interface (a non-local bind): nothing to watch.
      if (idx.error() == Errc::not_found) continue;
      return fail("plane " + std::to_string(p) + " (" + planes_[p].addr.host_string() +
                  "): " + platform::last_error_message());
    }
    c->watched[p] = true;
    c->ifindex[p] = *idx;
    any = true;
  }
  if (!any) return;  // every plane on loopback: no socket needed
  auto mon = platform::LinkMonitor::open();
  if (!mon) return fail("netlink: " + platform::last_error_message());
  c->mon = std::move(*mon);
  if (Status s = c->mon.dump(c->buf, Duration::s(1)); !s) return fail("netlink dump: " + platform::last_error_message());
  // A loopback interface has no carrier to lose, whatever its address.
  for (const platform::LinkStatus& l : c->buf)
    for (uint32_t p = 0; p < num_planes(); ++p)
      if (c->watched[p] && c->ifindex[p] == l.ifindex && (l.flags & platform::link_flags::kLoopback))
        c->watched[p] = false;
  uint32_t mask = 0;
  for (uint32_t p = 0; p < num_planes(); ++p)
    if (c->watched[p]) mask |= 1u << p;
  if (mask == 0) return;
  Engine& e0 = *engines_[0];
  if (!e0.epoll.add(c->mon.fd(), platform::events::kReadable, kLinkTag) ||
      !e0.quiet_epoll.add(c->mon.fd(), platform::events::kReadable, kLinkTag))
    return fail("epoll: " + platform::last_error_message());
  carrier_watched_.store(mask, std::memory_order_release);
  std::vector<platform::LinkStatus> initial;
  initial.swap(c->buf);
  carrier_ = std::move(c);
  for (const platform::LinkStatus& l : initial)
    for (uint32_t p = 0; p < num_planes(); ++p)
      if (carrier_->watched[p] && carrier_->ifindex[p] == l.ifindex) set_port_carrier(p, l.carrier_up);
  carrier_->next_poll = clock_.now() + kCarrierPoll;
}

void Device::poll_carrier() {
  CarrierWatch& c = *carrier_;
  c.readable = false;
  c.next_poll = clock_.now() + kCarrierPoll;
  c.buf.clear();
  // An error leaves the states as they are; the next poll tries again.
  (void)c.mon.read(c.buf);
  if (c.mon.take_addr_changed()) resolve_carrier_planes();
  for (const platform::LinkStatus& l : c.buf)
    for (uint32_t p = 0; p < num_planes(); ++p)
      if (c.watched[p] && c.ifindex[p] == l.ifindex) set_port_carrier(p, l.carrier_up);
  netlink_malformed_.store(c.mon.malformed(), std::memory_order_relaxed);
  netlink_overruns_.store(c.mon.overruns(), std::memory_order_relaxed);
}

// Addresses changed somewhere: a plane's address may have moved to another
// interface, gone, or come back. Rare, so a lookup per watched plane; a
// plane whose interface changed takes that interface's state from a dump.
void Device::resolve_carrier_planes() {
  CarrierWatch& c = *carrier_;
  bool dump = false;
  for (uint32_t p = 0; p < num_planes(); ++p) {
    if (!c.watched[p]) continue;
    auto idx = platform::interface_of(planes_[p].addr, Duration::ms(100));
    if (!idx && idx.error() != Errc::not_found) continue;  // no answer: keep what we know
    const int32_t now_on = idx ? *idx : 0;
    if (now_on == c.ifindex[p]) continue;
    c.ifindex[p] = now_on;
    if (now_on == 0) set_port_carrier(p, false);  // the address is on no interface: nothing can carry the plane
    else dump = true;
  }
  if (dump) (void)c.mon.request_dump();
}

Status Device::send_ep_request(const EpRequest& r, Duration timeout) {
  if (r.plane >= num_planes()) return Errc::invalid_argument;
  if (r.wire_ev ? (cfg_.ev_mode != EvWire::srv6 || r.ev > 0xFFFF) : !ev_sendable(r.plane, r.ev))
    return Errc::invalid_argument;
  // Answers come to QP 2, which the receive steering maps to this engine.
  Engine& e = engine_of(core::kEndpointOpsQpn);
  Status s;
  {
    std::lock_guard g(e.mu);
    const Time now = clock_.now();
    const auto port = static_cast<uint8_t>(r.plane);
    s = r.port_status ? e.ep->send_port_status(now, r.req_id, r.peer, port, r.ev, r.up_mask, timeout)
                      : e.ep->send_ev_probe(now, r.req_id, r.peer, port, r.ev, timeout);
    if (s && r.wire_ev) e.ep_wire[r.req_id] = *r.wire_ev;
  }
  kick(e);
  return s;
}

std::optional<core::QpInfo> Device::query_qp(uint32_t qpn) {
  Engine& e = engine_of(qpn);
  std::lock_guard g(e.mu);
  return e.ep->query_qp(qpn);
}

size_t Device::query_evs(uint32_t qpn, std::span<core::EvInfo> out) {
  Engine& e = engine_of(qpn);
  std::lock_guard g(e.mu);
  return e.ep->query_evs(qpn, out);
}

uint32_t Device::random_psn() {
  std::lock_guard g(engines_[0]->mu);
  return engines_[0]->ep->random_psn();
}

Status Device::post_send(uint32_t qpn, const core::SendWr& wr) {
  Engine& e = engine_of(qpn);
  Status s;
  {
    std::lock_guard g(e.mu);
    s = e.ep->post_send(clock_.now(), qpn, wr);
  }
  // With app_progress the posting thread sends at once if the engine is
  // free (no thread to wake); otherwise the engine thread, awake or kicked,
  // finds the packet on its next look.
  if (!cfg_.app_progress || !app_turn(e, Turn::post)) kick(e);
  return s;
}

Status Device::post_recv(uint32_t qpn, const core::RecvWr& wr) {
  Engine& e = engine_of(qpn);
  std::lock_guard g(e.mu);
  return e.ep->post_recv(qpn, wr);
}

void Device::set_event_sink(std::function<void(const core::Event&)> sink) { sink_ = std::move(sink); }

DeviceStats Device::stats() {
  DeviceStats s;
  for (auto& e : engines_) {
    std::lock_guard g(e->mu);
    const DeviceStats& t = e->st;
    s.tx_packets += t.tx_packets;
    s.tx_bytes += t.tx_bytes;
    s.tx_datagrams += t.tx_datagrams;
    s.tx_eagain += t.tx_eagain;
    s.tx_errors += t.tx_errors;
    s.tx_uring_submits += t.tx_uring_submits;
    s.rx_packets += t.rx_packets;
    s.rx_bytes += t.rx_bytes;
    s.rx_icrc_errors += t.rx_icrc_errors;
    s.rx_unknown_source += t.rx_unknown_source;
    s.rx_short += t.rx_short;
    s.rx_port_down += t.rx_port_down;
    s.engine_iterations += t.engine_iterations;
    s.engine_sleeps += t.engine_sleeps;
    const core::EndpointStats& c = e->ep->stats();
    s.core.rx_packets += c.rx_packets;
    s.core.rx_malformed += c.rx_malformed;
    s.core.rx_unknown_qp += c.rx_unknown_qp;
    s.core.rx_wrong_peer += c.rx_wrong_peer;
    s.core.rx_bad_state += c.rx_bad_state;
    s.core.rx_psn_out_of_window += c.rx_psn_out_of_window;
    s.core.rx_access_errors += c.rx_access_errors;
    s.core.rx_bad_ack += c.rx_bad_ack;
    s.core.rx_stale_ack += c.rx_stale_ack;
    s.core.rx_ep_refused += c.rx_ep_refused;
    s.core.tx_packets += c.tx_packets;
    s.core.ep_requests += c.ep_requests;
    s.core.ep_responses += c.ep_responses;
    s.core.ep_replies_shed += c.ep_replies_shed;
    s.core.ctrl_shed += c.ctrl_shed;
    for (uint32_t qpn : e->ep->qp_numbers()) {
      const auto q = e->ep->query_qp(qpn);
      if (!q) continue;
      s.retransmissions += q->stats.retransmissions;
      s.losses_rule += q->stats.losses_rule;
      s.losses_timeout += q->stats.losses_timeout;
      s.tail_probes += q->stats.tail_probes;
      s.spurious_losses += q->stats.spurious_losses;
      s.duplicates_received += q->stats.duplicates_received;
    }
  }
  s.carrier_down = carrier_downs_.load(std::memory_order_relaxed);
  s.carrier_up = carrier_ups_.load(std::memory_order_relaxed);
  s.carrier_watched = carrier_watched_.load(std::memory_order_acquire);
  s.carrier_watch_failed = carrier_failed_;
  s.netlink_malformed = netlink_malformed_.load(std::memory_order_relaxed);
  s.netlink_overruns = netlink_overruns_.load(std::memory_order_relaxed);
  if (pcap_) {
    s.pcap_packets = pcap_->packets();
    s.pcap_dropped = pcap_->dropped() + pcap_failed_.load(std::memory_order_relaxed);
  }
  return s;
}

void Device::kick(Engine& e) {
  if (e.sleeping.load(std::memory_order_acquire)) (void)e.wake.signal();
}

// ----------------------------------------------------------------- engine

bool Device::iterate(Engine& e, std::vector<StagedCompletion>& staged, std::vector<core::Event>& events, Turn turn) {
  // A post's turn does not look for packets: the posting thread wants its
  // work on the wire, and an empty receive is a system call per plane on
  // that path (a polling application's or the engine's turn takes them).
  // Nor does the engine thread's turn beside an application that takes
  // them itself (engine_main).
  const bool got = (turn == Turn::engine || turn == Turn::poll) && receive_all(e);
  {
    std::lock_guard g(e.mu);
    const Time now = clock_.now();
    if (turn == Turn::poll) e.app_rx_ps.store(now.ps(), std::memory_order_relaxed);
    if (e.ep->next_timeout() <= now) e.ep->handle_timeout(now);
    collect_events(e);
    staged.swap(e.staged);
    events.swap(e.events_out);
    ++e.st.engine_iterations;
  }
  // Publishing before polling packets is what makes completions safe
  // (file comment): no packet polled below belongs to a completed WR.
  // A message arrived for the application (a receive completion): what
  // this turn would send is that message's SACK (see below).
  const bool received = turn == Turn::poll && std::any_of(staged.begin(), staged.end(), [](const StagedCompletion& c) {
                                                 return c.wc.opcode == core::WcOpcode::recv_rdma_with_imm;
                                               });
  publish(staged, events);
  staged.clear();
  if (sink_)
    for (const core::Event& ev : events) sink_(ev);
  events.clear();
  // A polling application that just received a message is about to
  // answer it, and it runs this iteration: sending now (the message's SACK,
  // a system call) would hold its answer back. Its next turn (the post of
  // its answer) sends it, after that turn's data (send_slots). An
  // application that stops polling instead (a server computing its answer)
  // would leave it to the engine thread's millisecond of deference, and
  // the writer's tail probe fires first; so once the engine thread had to
  // send one, each later one is handed to it at once (a kick), until the
  // application's own turn is first again. (Kicking for every message made
  // the engine thread preempt the pollers: a 2-byte ping-pong took 10.3 us
  // one way, median, and 18-32 us on average; 9.0 and 10-13 us without.)
  // Send completions are not handed off: a writer's next turn has more
  // data.
  if (received) {
    e.handoff_waiting.store(true, std::memory_order_release);
    if (!e.app_answers.load(std::memory_order_acquire)) {
      e.handoff.store(true, std::memory_order_release);
      kick(e);
    }
    return true;
  }
  size_t n = 0;
  bool more = false;
  {
    // Lock order everywhere: peers_mu_, then an engine's mutex.
    std::shared_lock<std::shared_mutex> peers(peers_mu_);
    std::lock_guard g(e.mu);
    n = poll_transmits(e, clock_.now());
    more = e.ep->has_pending_transmit();
  }
  if (n > 0) {
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) bytes += e.slots[i].tx.payload_len;
    data_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    std::lock_guard<std::mutex> g(e.send_mu);
    send_slots(e, n);
  }
  if (!more && e.handoff_waiting.load(std::memory_order_acquire) &&
      e.handoff_waiting.exchange(false, std::memory_order_acq_rel))
    e.app_answers.store(turn == Turn::post || turn == Turn::poll, std::memory_order_release);
  return got || n > 0;
}

// An application thread's iteration of `e` (the caller holds e.run_mu).
void Device::app_iterate(Engine& e, Turn turn) {
  thread_local std::vector<StagedCompletion> staged;
  thread_local std::vector<core::Event> events;
  (void)iterate(e, staged, events, turn);
}

bool Device::try_iterate(Engine& e, Turn turn) {
  if (!e.run_mu.try_lock()) return false;  // its thread (or another application) is at it
  app_iterate(e, turn);
  e.run_mu.unlock();
  return true;
}

Status Device::watch_sockets_locked(platform::Epoll& ep, uint64_t tag, bool on) {
  for (auto& e : engines_)
    for (const platform::UdpSocket& s : e->rx) {
      Status st = on ? ep.add(s.fd(), platform::events::kReadable | platform::events::kExclusive, tag) : ep.del(s.fd());
      if (!st) return st;
    }
  return {};
}

Status Device::watch_sockets(platform::Epoll& ep, uint64_t tag) {
  std::lock_guard<std::mutex> g(watch_mu_);
  if (channels_watch_.load(std::memory_order_relaxed))
    if (Status st = watch_sockets_locked(ep, tag, true); !st) {
      (void)watch_sockets_locked(ep, tag, false);  // the ones added
      return st;
    }
  watchers_.push_back({&ep, tag});
  return {};
}

void Device::unwatch_sockets(platform::Epoll& ep) {
  std::lock_guard<std::mutex> g(watch_mu_);
  std::erase_if(watchers_, [&](const Watcher& w) { return w.ep == &ep; });
}

void Device::set_channels_watch_locked(bool on) {
  if (channels_watch_.load(std::memory_order_relaxed) == on) return;
  // A socket already (or not yet) in a channel's epoll is the only
  // failure, and leaves it as wanted.
  for (const Watcher& w : watchers_) (void)watch_sockets_locked(*w.ep, w.tag, on);
  channels_watch_.store(on, std::memory_order_relaxed);
}

bool Device::bulk_now() {
  if (cfg_.bulk_bytes_per_ms == 0) return true;
  const int64_t now = clock_.now().ps();
  const int64_t start = bulk_window_ps_.load(std::memory_order_relaxed);
  const int64_t since = now - start;
  if (start == kNotDriving || since >= kAppDrivingWindow.count_ps()) {
    // A window of a millisecond or more ends: its rate decides (racing
    // arms from several threads may each end one; any answer will do).
    // The first call only starts one.
    const uint64_t bytes = data_bytes_.load(std::memory_order_relaxed);
    const uint64_t moved = bytes - bulk_window_bytes_.exchange(bytes, std::memory_order_relaxed);
    bulk_window_ps_.store(now, std::memory_order_relaxed);
    // DeviceConfig::bulk_bytes_per_ms: a blocking ping-pong of small
    // messages moves a few kilobytes a millisecond, write_bw -e megabytes
    // (in bursts: a 4 MiB window, then a pause for its acknowledgements,
    // hence the hold).
    if (start != kNotDriving && static_cast<double>(moved) * static_cast<double>(kAppDrivingWindow.count_ps()) >=
                                    static_cast<double>(cfg_.bulk_bytes_per_ms) * static_cast<double>(since))
      bulk_until_ps_.store(now + kBulkHold.count_ps(), std::memory_order_relaxed);
  }
  return now < bulk_until_ps_.load(std::memory_order_relaxed);
}

void Device::drive_from_channel() {
  app_polled_ps_.store(clock_.now().ps(), std::memory_order_relaxed);
  for (auto& e : engines_) {
    std::lock_guard<std::mutex> run(e->run_mu);
    app_iterate(*e, Turn::poll);
  }
  // An application that sleeps through a whole transfer arms once, at its
  // start: bulk data is noticed here too.
  if (bulk_now()) share_sockets(true);
}

void Device::share_sockets(bool bulk) {
  // Under watch_mu_, so that two threads deciding at once (an arm and a
  // drive at a window's end) leave the channels and the engine threads
  // agreeing on who watches: never neither.
  std::lock_guard<std::mutex> g(watch_mu_);
  set_channels_watch_locked(!bulk);
  if (bulk)
    engines_take_sockets();
  else
    app_polled_ps_.store(clock_.now().ps(), std::memory_order_relaxed);
}

void Device::engines_take_sockets() {
  // Only an engine thread asleep on its timers alone needs waking: one
  // asleep on its sockets takes the next packet anyway, and waking it for
  // nothing cost a blocking ping-pong a third of its latency on 2 cores
  // (docs/performance.md, stop 19). Pairs with engine_main's store of
  // `quiet` then load of app_polled_ps_: seq_cst on both sides, so at least
  // one of them sees the other.
  app_polled_ps_.store(kNotDriving, std::memory_order_seq_cst);
  for (auto& e : engines_)
    if (e->quiet.load(std::memory_order_seq_cst)) (void)e->wake.signal();  // out of the timers-only sleep
}

void Device::app_progress(bool driving) {
  for (auto& e : engines_) (void)(driving ? app_turn(*e, Turn::poll) : try_iterate(*e, Turn::engine));
}

bool Device::app_turn(Engine& e, Turn turn) {
  // Stamped before the attempt: an application that posts or polls is
  // driving, and the engine thread stays out of its way (engine_main).
  app_polled_ps_.store(clock_.now().ps(), std::memory_order_relaxed);
  return try_iterate(e, turn);
}

void Device::engine_main(Engine& e) {
  std::vector<StagedCompletion> staged;
  std::vector<core::Event> events;
  platform::EpollEvent evs[40];
  const bool watches = carrier_ && e.index == 0;
  while (!stop_.load(std::memory_order_acquire)) {
    if (watches && (carrier_->readable || clock_.now() >= carrier_->next_poll)) poll_carrier();
    // While an application polls (DeviceConfig::app_progress, within the
    // last millisecond) each of its polls is an iteration: it takes the
    // packets as they come and runs the timers as they fall due. This
    // thread then only fills the gaps between its polls: it iterates when
    // the application is not iterating itself, and never queues behind it
    // on run_mu. (Blocking there put this thread to sleep and woke it again
    // on every iteration the application finished: a 1 MiB write_bw client
    // switched 7,000 times a second, preempting the peer's engine on 2 cores.)
    const int64_t now_ps = clock_.now().ps();
    const int64_t since_app = now_ps - app_polled_ps_.load(std::memory_order_relaxed);
    const bool app_driving = since_app < kAppDrivingWindow.count_ps();
    bool busy = false, deferred = false;
    // A handoff (iterate) is work the application left to this thread: it
    // waits for the lock like any turn, and its timers (a SACK's coalescing
    // delay) are kept to the microsecond.
    const bool handed = e.handoff.exchange(false, std::memory_order_acq_rel);
    if (e.yields && (!app_driving || handed)) set_yields(e, false);
    if (app_driving && !handed) {
      // While the application takes the packets itself (it polls, or the
      // channel it sleeps on wakes it), this thread runs the timers only.
      // Taking a packet here cost a blocking ping-pong a second wake-up
      // whenever this thread's timer fell as the answer arrived: the
      // engine published the completion and woke the application through
      // its channel's event count (docs/performance.md, stop 23). An
      // application that only posts (its post turns do not receive) gets
      // its SACKs taken here, as late as this thread's timers allow.
      const bool app_receives = now_ps - e.app_rx_ps.load(std::memory_order_relaxed) < kAppTimerSlack.count_ps();
      if (e.run_mu.try_lock()) {
        busy = iterate(e, staged, events, app_receives ? Turn::timers : Turn::engine);
        e.run_mu.unlock();
      } else {
        deferred = true;  // the application is iterating right now
      }
    } else {
      std::lock_guard<std::mutex> run(e.run_mu);
      busy = iterate(e, staged, events);
    }
    if (busy || cfg_.busy_poll) continue;
    // Idle: sleep until a packet, a kick or the next timer. The flag is set
    // before the last look so a post in between is not missed.
    e.sleeping.store(true, std::memory_order_release);
    bool pending = false;
    Time deadline = Time::never();
    if (!deferred) {
      std::lock_guard g(e.mu);
      pending = e.ep->has_pending_transmit() || e.ep->next_timeout() <= clock_.now();
      deadline = e.ep->next_timeout();
    }
    if (!pending) {
      Duration wait = kMaxSleep;
      if (!deadline.is_never()) wait = std::min(wait, std::max(Duration{}, deadline - clock_.now()));
      // While the application drives, its turns run the timers: wake for
      // kicks, when it has stopped for a millisecond (to take over), and
      // for a timer, but never sooner than kAppTimerSlack from now, so an
      // application that keeps polling is not preempted for every timer of
      // its QPs, while one that stopped (a server computing its answer)
      // leaves its SACK timers late by that much at most, well inside the
      // peer's tail-probe and loss ages. (When the application was
      // iterating, the next timer is unknown: the slack.)
      bool quiet = app_driving && !handed;
      if (quiet) {
        e.quiet.store(true, std::memory_order_seq_cst);
        // An application that armed its CQ since (on_arm_) is about to
        // sleep: watch the sockets after all.
        if (app_polled_ps_.load(std::memory_order_seq_cst) == kNotDriving) {
          quiet = false;
          e.quiet.store(false, std::memory_order_relaxed);
        }
      }
      // An application polling for small messages is preempted by every
      // wake-up of this thread on its CPU: on 2 cores two polling
      // applications and their engine threads made the average one-way
      // latency half again the typical (docs/performance.md, stop 22).
      // While it polls, this thread's wake-ups (its timers, to see whether
      // the application has stopped) wait for the application's time slice
      // to end, or run at once on an idle CPU. Not while bulk data moves:
      // there this thread's turns between the application's own are work
      // done on the other core.
      const bool yield = quiet && !bulk_now();
      if (yield != e.yields) set_yields(e, yield);
      if (quiet) {
        const Duration until_idle = Duration::ps(std::max<int64_t>(0, kAppDrivingWindow.count_ps() - since_app));
        wait = std::min(until_idle, deferred ? kAppTimerSlack : std::max(wait, kAppTimerSlack));
      }
      ++e.st.engine_sleeps;
      auto r = (quiet ? e.quiet_epoll : e.epoll).wait(evs, wait);
      e.quiet.store(false, std::memory_order_relaxed);
      if (r)
        for (size_t i = 0; i < *r; ++i) {
          if (evs[i].user_data == kWakeTag) (void)e.wake.drain();
          if (evs[i].user_data == kLinkTag) carrier_->readable = true;
        }
    }
    e.sleeping.store(false, std::memory_order_release);
  }
}

void Device::set_yields(Engine& e, bool yields) {
  // A failure leaves the thread as it was, which is correct, only slower.
  if (platform::set_thread_yields_on_wake(yields)) e.yields = yields;
}

// Drains the engine's receive queues into its core. Returns true if any
// datagram arrived.
bool Device::receive_all(Engine& e) {
  bool any = false;
  uint64_t bytes = 0;
  for (uint32_t p = 0; p < planes_.size(); ++p) {
    for (int rounds = 0; rounds < 4; ++rounds) {
      const size_t asked = e.rx_per_call;
      auto r = e.rx[p].recv_batch(e.rx_batch, asked);
      if (!r || *r == 0) break;
      any = true;
      uint64_t got = 0;
      for (const platform::RxDatagram& d : e.rx_batch.received()) got += d.data.size();
      bytes += got;
      e.rx_per_call = std::clamp<size_t>(kRxBytesPerCall * *r / std::max<uint64_t>(got, 1), 1, e.rx_batch.capacity());
      std::shared_lock<std::shared_mutex> peers(peers_mu_);
      std::lock_guard g(e.mu);
      const Time now = clock_.now();
      for (platform::RxDatagram& d : e.rx_batch.received()) handle_datagram(e, p, d, now);
      if (*r < asked) break;
    }
  }
  if (engines_.size() > 1) forward_port_status(e);
  if (bytes > 0) data_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return any;
}

// Called without any lock held: it takes the other engines' mutexes one at
// a time (an engine never holds its own while taking another's).
void Device::forward_port_status(Engine& from) {
  std::vector<Engine::PeerPortStatus> in;
  {
    std::lock_guard g(from.mu);
    if (from.port_status_in.empty()) return;
    in.swap(from.port_status_in);
  }
  for (auto& e : engines_) {
    if (e.get() == &from) continue;
    bool applied = false;
    {
      std::lock_guard g(e->mu);
      const Time now = clock_.now();
      for (const Engine::PeerPortStatus& u : in) applied |= e->ep->apply_peer_port_status(now, u.peer, u.mask);
    }
    if (applied) kick(*e);  // a plane back in service may let a QP send
  }
}

// Checks one datagram (source, ICRC of each GRO segment) and hands its
// packets to the core. Called holding peers_mu_ (shared) and the engine's
// mutex.
void Device::handle_datagram(Engine& e, uint32_t plane, const platform::RxDatagram& d, Time now) {
  platform::SockAddr src = d.source;
  const uint16_t sport = src.port();
  src.set_port(0);
  auto it = peer_by_addr_.find(src);
  const size_t nseg = d.segment_count();
  if (!(port_up_.load(std::memory_order_relaxed) >> plane & 1u)) {
    // A port out of service receives nothing (disabled: its link is down).
    e.st.rx_port_down += nseg;
    return;
  }
  if (it == peer_by_addr_.end()) {
    e.st.rx_unknown_source += nseg;
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
  // A GRO datagram's segments share the covered IP and UDP headers up to
  // a shorter last one's length: one CRC register per size.
  wire::SegmentIcrc segment_icrc(fmt_, f);
  for (std::span<std::byte> seg : d.segments()) {
    ++e.st.rx_packets;
    e.st.rx_bytes += seg.size();
    if (seg.size() < wire::Bth::kSize + wire::kIcrcBytes) {
      ++e.st.rx_short;
      continue;
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(seg.data());
    const size_t body = seg.size() - wire::kIcrcBytes;
    if (pcap_) [[unlikely]] {
      wire::FrameFields cf = f;
      if (d.tos_valid) cf.traffic_class = d.tos;
      capture(cf, std::span<const uint8_t>(bytes, body), {}, std::span<const uint8_t>(bytes + body, wire::kIcrcBytes));
    }
    const auto crc = segment_icrc(std::span<const uint8_t>(bytes, body));
    if (!crc || *crc != wire::get_icrc(bytes + body)) {
      ++e.st.rx_icrc_errors;
      continue;
    }
    e.ep->handle_datagram(now, meta, std::span<const uint8_t>(bytes, body));
    if (engines_.size() > 1) note_port_status(e, meta, std::span<const uint8_t>(bytes, body));
  }
}

// A port-status update for QP 2 reaches the one engine the steering picks;
// the peer's QPs may live on any engine. The engine's core has checked the
// update; the others apply it too (forward_port_status). Only endpoint
// requests are parsed twice, and they are rare.
void Device::note_port_status(Engine& e, const core::RxMeta& meta, std::span<const uint8_t> bytes) {
  if (bytes.size() < wire::Bth::kSize) return;
  const uint32_t dest_qp = uint32_t{bytes[5]} << 16 | uint32_t{bytes[6]} << 8 | bytes[7];
  if (dest_qp != core::kEndpointOpsQpn || bytes[0] != static_cast<uint8_t>(wire::Opcode::endpoint_request)) return;
  wire::Parsed p;
  if (!wire::parse_into(bytes, p) || static_cast<wire::EpWireOp>(p.h.erth.op) != wire::EpWireOp::port_status_update)
    return;
  // The same sanity rule the receiving core applied before answering.
  const uint32_t all = num_planes() >= 32 ? ~0u : (1u << num_planes()) - 1;
  const uint32_t mask = p.h.erth.port_status_mask & all;
  if ((mask & port_up_mask()) == 0 || !(mask >> meta.port & 1u)) return;
  e.port_status_in.push_back(Engine::PeerPortStatus{meta.peer, mask});
}

// An SRv6 endpoint request takes the wire EV it was sent with: the request
// id is the BTH PSN of a QP 2 endpoint request. The copy in the slot lives
// until the send (the map entry may go with its ProbeResult sooner).
void Device::attach_ep_wire(Engine& e, TxSlot& s) {
  const std::span<const uint8_t> hdr(s.hdr.data(), s.tx.header_len);
  if (hdr.size() < wire::Bth::kSize || hdr[0] != static_cast<uint8_t>(wire::Opcode::endpoint_request)) return;
  wire::Parsed p;
  if (!wire::parse_into(hdr, p) || p.h.bth.dest_qp != core::kEndpointOpsQpn) return;
  auto it = e.ep_wire.find(static_cast<uint16_t>(p.h.bth.psn));
  if (it == e.ep_wire.end()) return;
  s.wire_copy = it->second;
  s.tx.wire_ev = &s.wire_copy;
}

// Polls up to a batch of packets from the engine's core into slots; ports
// are always offered (the kernel queues what the socket buffer holds).
// A batch ends where an EV burst does: cut at a fixed count, a burst left
// as two datagrams (64 slots held four 15-packet bursts and 4 packets of
// the fifth, whose other 11 went in the next batch).
// Called holding peers_mu_ (shared) and the engine's mutex.
size_t Device::poll_transmits(Engine& e, Time now) {
  const uint32_t all = num_planes() >= 32 ? ~0u : (1u << num_planes()) - 1;
  size_t n = 0;
  while (n < e.slots.size() && (n < kTxBatch || e.slots[n - 1].tx.burst_more)) {
    TxSlot& s = e.slots[n];
    auto tx = e.ep->poll_transmit(now, all, s.hdr);
    if (!tx) break;
    s.tx = *tx;
    s.payload = s.tx.payload;
    const Peer& peer = peers_[s.tx.peer - 1];
    s.dest = peer.planes[s.tx.port];
    s.dst_ip = peer.ips[s.tx.port];
    if (!e.ep_wire.empty() && s.tx.wire_ev == nullptr) attach_ep_wire(e, s);
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
// each is a datagram. The ICRC is computed here, outside the engine lock.
void Device::send_slots(Engine& e, size_t n) {
  // Every datagram of the batch is built first, then each run of
  // consecutive datagrams on one socket leaves in one sendmmsg (control
  // packets to one peer, bursts of small packets past the GSO limit). Per
  // packet (--burst 1) a spray gives every packet another EV, hence another
  // socket: one sendmsg each, which the order forbids to regroup.
  struct Built {
    platform::UdpSocket* sock;
    uint16_t sport;
    uint16_t first, end;  // its packets: order[first, end)
    size_t bytes;
  };
  std::array<platform::IoSlice, kTxSlots * 3> iov_store;
  std::array<platform::TxDatagram, kTxSlots> dgs;
  std::array<Built, kTxSlots> built;
  size_t nb = 0, iov_used = 0, stage_used = 0;
  uint64_t sent_pkts = 0, sent_bytes = 0, datagrams = 0, refused = 0, errors = 0;
  // The UDP payload of a datagram's largest packet (a burst's segments are
  // equal but for the last), for the message of a refused send.
  auto packet_bytes = [](const Built& x) { return (x.bytes + (x.end - x.first) - 1) / (x.end - x.first); };
  // The batch leaves in the core's order, data before control. The core
  // keeps a QP's EV burst together (Endpoint::poll_transmit), so a burst's
  // packets are already side by side; regrouping the batch by EV would
  // reorder a QP's own packets, and behind a slow bottleneck a packet moved
  // a few dozen places back arrives milliseconds late, declared lost by the
  // core's loss rule (which counts later-sent packets delivered) with its
  // EV demoted. Control goes after the data: a SACK polled with the data of
  // the same turn (an application answering a message, which is when its
  // SACK was left for this turn: iterate) is off that data's critical path.
  // The partitions below are stable, so they keep the core's order.
  auto control = [&](size_t k) { return e.slots[k].tx.tc == core::TrafficClass::control; };
  std::array<uint16_t, kTxSlots> order;
  size_t filled = 0;
  for (const bool want_control : {false, true})
    for (size_t k = 0; k < n; ++k)
      if (control(k) == want_control) order[filled++] = static_cast<uint16_t>(k);
  if (cfg_.ev_mode == EvWire::srv6 || cfg_.raw_send) {
    // Whole frames through the raw socket: with raw_send every packet; in
    // srv6 mode the packets with a wire EV, encapsulated (the rest, with no
    // SRv6 profile, through the EV sockets below).
    auto* mid = cfg_.raw_send ? order.begin()
                              : std::stable_partition(order.begin(), order.begin() + static_cast<ptrdiff_t>(n),
                                                      [&](uint16_t k) { return e.slots[k].tx.wire_ev == nullptr; });
    const size_t plain = static_cast<size_t>(mid - order.begin());
    if (plain < n) {
      const SendCount c = send_frames(e, std::span<const uint16_t>(mid, n - plain));
      sent_pkts += c.packets;
      sent_bytes += c.bytes;
      datagrams += c.packets;
      refused += c.refused;
      errors += c.errors;
    }
    n = plain;
  }
  auto slot = [&](size_t k) -> TxSlot& { return e.slots[order[k]]; };
  size_t i = 0;
  while (i < n) {
    TxSlot& first = slot(i);
    const core::Transmit& t0 = first.tx;
    const uint32_t plane = t0.port;
    // The EV is the socket's source port. The core may pick an entropy no
    // socket has (a port-status update's is random, a reply echoes the
    // peer's EV): such a packet leaves from the plane's first EV socket,
    // and its ICRC must cover the port it really carries.
    uint32_t ev_index = t0.entropy - cfg_.ev_port_base - plane * cfg_.evs_per_plane;
    if (ev_index >= cfg_.evs_per_plane) ev_index = 0;
    platform::UdpSocket& sock = e.tx[plane][ev_index];
    const uint16_t sport = static_cast<uint16_t>(cfg_.ev_port_base + plane * cfg_.evs_per_plane + ev_index);
    const size_t seg_bytes = size_t{t0.header_len} + t0.payload_len + wire::kIcrcBytes;
    size_t j = i;
    size_t total = 0;
    while (j < n) {
      TxSlot& s = slot(j);
      const core::Transmit& t = s.tx;
      const size_t bytes = size_t{t.header_len} + t.payload_len + wire::kIcrcBytes;
      if (j > i) {
        // Same socket and destination, and the GSO rule: every segment the
        // size of the first, the last one possibly shorter.
        const TxSlot& prev = slot(j - 1);
        const size_t prev_bytes = size_t{prev.tx.header_len} + prev.tx.payload_len + wire::kIcrcBytes;
        if (cfg_.burst == 1 || t.port != t0.port || t.entropy != t0.entropy || t.peer != t0.peer ||
            (t.tc == core::TrafficClass::control) != (t0.tc == core::TrafficClass::control) ||
            bytes > seg_bytes || prev_bytes != seg_bytes || (j - i + 1) * 3 > platform::UdpSocket::kMaxIovPerDatagram ||
            total + bytes > kMaxGsoBytes || j - i >= platform::UdpSocket::kMaxGsoSegments)
          break;
      }
      total += bytes;
      ++j;
    }
    wire::FrameFields f;
    f.src = planes_[plane].ip;
    f.dst = first.dst_ip;  // one peer and plane per datagram
    f.ev = sport;
    // The ICRC of a packet whose header and payload are at hdr and payload;
    // kept in the slot too (the capture reads it there).
    // With `copy_to`, the payload is copied there in the same pass.
    // A datagram's packets share the IP and UDP headers the ICRC covers, up
    // to the length of a shorter last one: their CRC register is computed
    // once per size (wire::SegmentIcrc).
    wire::SegmentIcrc segment_icrc(fmt_, f);
    auto icrc = [&](TxSlot& s, const uint8_t* hdr, const uint8_t* payload, uint8_t* copy_to = nullptr) {
      const auto crc = segment_icrc(std::span<const uint8_t>(hdr, s.tx.header_len),
                                    std::span<const uint8_t>(payload, s.tx.payload_len), copy_to);
      // No ICRC (headers the framing refuses) copies nothing: the packet
      // still leaves whole, with an ICRC the receiver drops it for.
      if (!crc && copy_to && s.tx.payload_len) std::memcpy(copy_to, payload, s.tx.payload_len);
      wire::put_icrc(crc ? *crc : 0, s.icrc.data());
    };
    platform::IoSlice* iov = iov_store.data() + iov_used;
    size_t iovs = 0;
    if (j - i > 1) {
      // A GSO burst leaves as one contiguous piece, copied here. Gathered
      // from its segments' three pieces each (headers, the payload in the
      // application's buffer, ICRC) the kernel's copy into the
      // super-packet ran slower than this copy and a one-piece send
      // together: raw UDP GSO x15 of 4,140 B segments, 45-48 Gbit/s
      // gathered, 57-61 staged, 75-78 from one buffer (mrc_raw_udp
      // --header-bytes, docs/performance.md). The payload's copy and its
      // ICRC share one pass over it (wire::crc32_copy).
      // Sized for every slot staged once (Device::open): it cannot fill.
      assert(stage_used + total <= e.gso_stage.size());
      uint8_t* const start = e.gso_stage.data() + stage_used;
      uint8_t* d = start;
      for (size_t k = i; k < j; ++k) {
        TxSlot& s = slot(k);
        std::memcpy(d, s.hdr.data(), s.tx.header_len);
        icrc(s, d, s.payload, d + s.tx.header_len);
        d += size_t{s.tx.header_len} + s.tx.payload_len;
        std::memcpy(d, s.icrc.data(), wire::kIcrcBytes);
        d += wire::kIcrcBytes;
      }
      iov[iovs++] = platform::IoSlice{start, total};
      stage_used += total;
    } else {
      for (size_t k = i; k < j; ++k) {
        TxSlot& s = slot(k);
        icrc(s, s.hdr.data(), s.payload);
        iov[iovs++] = platform::IoSlice{s.hdr.data(), s.tx.header_len};
        if (s.tx.payload_len) iov[iovs++] = platform::IoSlice{s.payload, s.tx.payload_len};
        iov[iovs++] = platform::IoSlice{s.icrc.data(), wire::kIcrcBytes};
      }
    }
    platform::TxDatagram& dg = dgs[nb];
    dg = platform::TxDatagram{};
    dg.dest = &first.dest;
    dg.iov = std::span<const platform::IoSlice>(iov, iovs);
    dg.gso_segment_bytes = j - i > 1 ? static_cast<uint16_t>(seg_bytes) : 0;
    if (cfg_.dscp_control != 0 && t0.tc == core::TrafficClass::control)
      dg.tos = static_cast<int16_t>(cfg_.dscp_control << 2);
    built[nb++] = Built{&sock, sport, static_cast<uint16_t>(i), static_cast<uint16_t>(j), total};
    iov_used += iovs;
    i = j;
  }
  // A datagram the kernel took: counted, and captured when asked.
  auto sent = [&](size_t d) {
    const Built& x = built[d];
    if (pcap_) [[unlikely]] {
      for (size_t k = x.first; k < x.end; ++k) {
        const TxSlot& s = slot(k);
        wire::FrameFields f;
        f.src = planes_[s.tx.port].ip;
        f.dst = s.dst_ip;
        f.ev = x.sport;
        f.traffic_class = dgs[d].tos >= 0 ? static_cast<uint8_t>(dgs[d].tos) : 0;
        capture(f, std::span<const uint8_t>(s.hdr.data(), s.tx.header_len),
                std::span<const uint8_t>(s.payload, s.tx.payload_len), s.icrc);
      }
    }
    sent_pkts += x.end - x.first;
    sent_bytes += x.bytes;
    ++datagrams;
  };
  // What was not taken is lost as if the network dropped it; the protocol
  // recovers it.
  const bool several_sockets = nb > 1 && std::any_of(built.begin() + 1, built.begin() + static_cast<ptrdiff_t>(nb),
                                                       [&](const Built& x) { return x.sock != built[0].sock; });
  uint64_t uring_submits = 0;
  if (several_sockets && e.uring.live()) {
    // The whole batch, whatever its sockets, in one submission and in order.
    std::array<platform::UringSender::Item, kTxSlots> items;
    std::array<int, kTxSlots> res;
    for (size_t d = 0; d < nb; ++d) items[d] = {built[d].sock, &dgs[d]};
    auto r = e.uring.send(std::span<const platform::UringSender::Item>(items.data(), nb),
                          std::span<int>(res.data(), nb));
    // A ring that fails retires itself (UringSender::send): then this batch
    // and the later ones take the sendmmsg path below.
    if (r) {
      ++uring_submits;
      for (size_t d = 0; d < *r; ++d) {
        if (res[d] >= 0) sent(d);
        else if (res[d] == -EAGAIN || res[d] == -EWOULDBLOCK || res[d] == -ENOBUFS) refused += built[d].end - built[d].first;
        else {
          errors += built[d].end - built[d].first;
          note_send_error(-res[d], packet_bytes(built[d]), *dgs[d].dest);
        }
      }
      nb = 0;
    }
  }
  // Each socket's run of datagrams in as few calls as the kernel takes.
  for (size_t b = 0; b < nb;) {
    size_t run = b + 1;
    while (run < nb && built[run].sock == built[b].sock) ++run;
    while (b < run) {
      auto r = built[b].sock->send_batch(std::span<const platform::TxDatagram>(&dgs[b], run - b));
      if (!r) {
        // The error concerns the first datagram: it is lost, the rest go on.
        errors += built[b].end - built[b].first;
        note_send_error(platform::last_error().errno_value, packet_bytes(built[b]), *dgs[b].dest);
        ++b;
        continue;
      }
      for (size_t d = b; d < b + *r; ++d) sent(d);
      b += *r;
      if (*r == 0) {
        // A full socket buffer: the rest of the run waits for the protocol.
        for (; b < run; ++b) refused += built[b].end - built[b].first;
      }
    }
  }
  std::lock_guard g(e.mu);  // the counters are read under it
  e.st.tx_packets += sent_pkts;
  e.st.tx_bytes += sent_bytes;
  e.st.tx_datagrams += datagrams;
  e.st.tx_eagain += refused;
  e.st.tx_errors += errors;
  e.st.tx_uring_submits += uring_submits;
}

Device::SendCount Device::send_frames(Engine& e, std::span<const uint16_t> order) {
  constexpr size_t kSlices = 4;  // outer+inner+UDP headers, transport headers, payload, ICRC
  std::array<platform::TxDatagram, platform::UdpSocket::kMaxBatch> dgs;
  std::array<platform::IoSlice, platform::UdpSocket::kMaxBatch * kSlices> iov;
  SendCount c;
  size_t i = 0;
  while (i < order.size()) {
    size_t k = 0;
    for (; k < dgs.size() && i + k < order.size(); ++k) {
      TxSlot& s = e.slots[order[i + k]];
      const core::Transmit& t = s.tx;
      wire::FrameFields f;
      f.src = planes_[t.port].ip;
      f.dst = s.dst_ip;
      // The compact EV: the UDP source port (raw_send, which carries the
      // core's entropy as it is, where the EV sockets only have the
      // profile's ports), or an SRv6 EV, which the controller's limits keep
      // to 16 bits.
      f.ev = t.entropy & 0xFFFF;
      if (cfg_.dscp_control != 0 && t.tc == core::TrafficClass::control)
        f.traffic_class = static_cast<uint8_t>(cfg_.dscp_control << 2);
      const bool srv6 = t.wire_ev != nullptr;
      if (srv6) std::copy_n(t.wire_ev->bytes.begin(), 16, f.srv6_carrier.begin());
      const std::span<const uint8_t> transport(s.hdr.data(), t.header_len);
      const std::span<const uint8_t> payload(s.payload, t.payload_len);
      const auto built = wire::build_frame(srv6 ? srv6_fmt_ : raw_fmt_, f, transport, payload, s.net);
      // A frame that cannot be built (it cannot happen with the limits the
      // controller enforces) is lost like a dropped packet.
      const size_t hl = built ? built->header_len : 0;
      s.net_len = static_cast<uint16_t>(hl);
      wire::put_icrc(built ? built->icrc : 0, s.icrc.data());
      // The address the kernel routes by: the outer destination in srv6;
      // else the peer's, port 0 (an IPv6 raw socket takes a port as the
      // protocol and refuses one above 255).
      if (srv6) {
        s.carrier = platform::SockAddr::ipv6(f.srv6_carrier, 0);
      } else {
        s.carrier = s.dest;
        s.carrier.set_port(0);
      }
      platform::IoSlice* v = &iov[k * kSlices];
      size_t m = 0;
      v[m++] = platform::IoSlice{s.net.data(), hl};
      v[m++] = platform::IoSlice{s.hdr.data(), t.header_len};
      if (t.payload_len) v[m++] = platform::IoSlice{s.payload, t.payload_len};
      v[m++] = platform::IoSlice{s.icrc.data(), wire::kIcrcBytes};
      dgs[k] = platform::TxDatagram{};
      dgs[k].dest = &s.carrier;
      dgs[k].iov = std::span<const platform::IoSlice>(v, m);
    }
    // Send what the kernel takes; a refused or failed frame is lost as if
    // the network dropped it (the protocol recovers it).
    size_t done = 0;
    while (done < k) {
      auto r = e.raw.send_batch(std::span<const platform::TxDatagram>(dgs.data() + done, k - done));
      if (!r) {
        ++c.errors;  // this frame failed (too big for the link, no route to its carrier): skip it
        const core::Transmit& t = e.slots[order[i + done]].tx;
        note_send_error(platform::last_error().errno_value, size_t{t.header_len} + t.payload_len + wire::kIcrcBytes,
                        *dgs[done].dest);
        ++done;
        continue;
      }
      if (*r == 0) break;  // the socket buffer is full
      for (size_t d = done; d < done + *r; ++d) {
        const TxSlot& s = e.slots[order[i + d]];
        const core::Transmit& t = s.tx;
        c.bytes += size_t{t.header_len} + t.payload_len + wire::kIcrcBytes;
        // The frame exactly as sent, outer and inner headers included.
        if (pcap_) [[unlikely]]
          capture_frame(std::span<const uint8_t>(s.net.data(), s.net_len),
                        std::span<const uint8_t>(s.hdr.data(), t.header_len),
                        std::span<const uint8_t>(s.payload, t.payload_len), s.icrc);
      }
      c.packets += *r;
      done += *r;
    }
    c.refused += k - done;
    i += k;
  }
  return c;
}

void Device::note_send_error(int err, size_t packet_bytes, const platform::SockAddr& dest) {
  if (err != EMSGSIZE || too_big_reported_.exchange(true, std::memory_order_relaxed)) return;
  // Once per device: every later packet of that size fails the same way,
  // and the counters (tx_errors) keep the count.
  std::fprintf(stderr,
               "mrc: software device: the kernel refused a %zu-byte MRC packet to %s as larger than the link's MTU "
               "(EMSGSIZE); MRC, like RoCEv2, never fragments, so these packets are lost: raise the interface MTU "
               "above the packet plus its IP and UDP headers, or lower the QP's path MTU\n",
               packet_bytes, dest.to_string().c_str());
}

// The frame the kernel sent or received, rebuilt around the MRC bytes for
// the capture file. Engines call it concurrently; the writer serializes.
void Device::capture(const wire::FrameFields& f, std::span<const uint8_t> transport,
                     std::span<const uint8_t> payload, std::span<const uint8_t> icrc) {
  std::array<uint8_t, wire::kMaxFrameHeaderBytes> net;
  auto built = wire::build_frame(fmt_, f, transport, payload, net);
  if (!built) {
    pcap_failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  capture_frame(std::span<const uint8_t>(net.data(), built->header_len), transport, payload, icrc);
}

void Device::capture_frame(std::span<const uint8_t> net, std::span<const uint8_t> transport,
                           std::span<const uint8_t> payload, std::span<const uint8_t> icrc) {
  const std::span<const uint8_t> parts[] = {net, transport, payload, icrc};
  if (Status st = pcap_->write(platform::realtime_ns(), parts); !st && st.error() != Errc::too_big)
    pcap_failed_.fetch_add(1, std::memory_order_relaxed);  // the bound is counted by the writer
}

// Moves the core's completions and events out (under the engine lock).
void Device::collect_events(Engine& e) {
  core::WorkCompletion wcs[64];
  for (const auto& [id, serial] : e.cqs) {
    while (size_t k = e.ep->poll_cq(id, wcs))
      for (size_t i = 0; i < k; ++i) e.staged.push_back(StagedCompletion{wcs[i], serial});
  }
  while (auto ev = e.ep->poll_event()) {
    if (auto* pr = std::get_if<core::ProbeResult>(&*ev)) e.ep_wire.erase(pr->req_id);
    // Every engine's core reports a local port change; the device reports
    // it once (engine 0's), not once per engine.
    if (auto* pe = std::get_if<core::PortEvent>(&*ev); pe && pe->local && e.index != 0) continue;
    e.events_out.push_back(*ev);
  }
}

// Pushes staged completions into their rings and fires the notify hook of
// armed CQs; counts the core's CQ overflows. Under objects_mu_ (not the
// engine's lock), so a CQ cannot be destroyed meanwhile.
void Device::publish(std::vector<StagedCompletion>& staged, std::vector<core::Event>& events) {
  if (staged.empty() && events.empty()) return;
  std::lock_guard<std::mutex> o(objects_mu_);
  auto find = [this](auto pred) -> CompletionQueue* {
    for (CompletionQueue* cq : cqs_)
      if (pred(*cq)) return cq;
    return nullptr;
  };
  for (const core::Event& ev : events)
    if (auto* ce = std::get_if<core::CqErrorEvent>(&ev))
      if (CompletionQueue* cq = find([&](const CompletionQueue& c) { return c.core_id_ == ce->cq; }))
        cq->overflows_.fetch_add(1, std::memory_order_relaxed);
  CompletionQueue* cq = nullptr;
  thread_local std::vector<CompletionQueue*> filled;  // CQs this call pushed to
  filled.clear();
  for (const StagedCompletion& sc : staged) {
    if (!cq || cq->serial_ != sc.cq_serial)
      cq = find([&](const CompletionQueue& c) { return c.serial_ == sc.cq_serial; });
    if (!cq) continue;  // destroyed meanwhile
    bool pushed;
    {
      std::lock_guard<std::mutex> p(cq->producer_mu_);
      pushed = cq->ring_.push(sc.wc);
    }
    if (!pushed) {
      // The application let the CQ fill: IBV_EVENT_CQ_ERR once, as the
      // core does for its own queue.
      if (cq->overflows_.fetch_add(1, std::memory_order_relaxed) == 0)
        events.push_back(core::CqErrorEvent{cq->core_id_});
      continue;
    }
    if (filled.empty() || filled.back() != cq) filled.push_back(cq);
  }
  // The arms are looked at after every push, never between two: an
  // application woken by a batch's first completion can poll it, arm again
  // and sleep while the rest is pushed, and a push after the look would
  // notify nobody (a blocking application hung with a completion in its
  // ring, about 1 run in 10 of 8 MiB of WRITEs on 2 loaded cores). The
  // fence pairs with arm()'s: either the arming application's poll after
  // its arm sees these pushes, or this look sees its arm.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (CompletionQueue* f : filled)
    if (f->armed_.load(std::memory_order_relaxed) && f->armed_.exchange(false, std::memory_order_acq_rel) && f->notify_)
      f->notify_();
}

}  // namespace mrc::rt
