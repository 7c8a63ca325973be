// SPDX-License-Identifier: BSD-2-Clause
#include "runtime/device.hpp"

#include <sys/random.h>

#include <algorithm>
#include <bit>
#include <cstdio>

#include "crypto/aes_gcm.hpp"
#include "platform/os_error.hpp"
#include "platform/memory_guard.hpp"
#include "runtime/device_internal.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"

namespace mrc::rt {

using namespace detail;

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
  // The core's three confirming probes (loss_confirm_probes) and gray-loss
  // rule hold on the kernel fabric too: `fabric compare` reports a dead T1,
  // link or plane within tens of milliseconds with them.
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
  if (link_rate_bps != 0 && link_rate_bps != kUnpaced && link_rate_bps < 1'000'000)
    return reject(why, "link_rate_bps: must be at least 1000000 (1 Mbit/s), 0 to learn it from the interface, or "
                       "kUnpaced");
  return {};
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
    // Pacing: the configured rate, or a physical interface's speed.
    if (cfg.link_rate_bps == DeviceConfig::kUnpaced) p.rate_bps = 0;
    else if (cfg.link_rate_bps != 0) p.rate_bps = cfg.link_rate_bps;
    else if (auto speed = platform::local_interface_speed_bps(p.addr)) p.rate_bps = *speed;
    d->planes_.push_back(std::move(p));
  }
  for (const Plane& p : d->planes_) {
    d->paced_ = d->paced_ || p.rate_bps != 0;
    // An engine may run this far ahead of its share of the rate, so that a
    // wake-up's lateness does not idle the link: 3 ms of it (kPaceLead), at
    // most 4 MiB, at least 64 KiB (a batch of a GSO burst's size) or 50 us.
    // On the fabric's 300 Mbit/s links, 64 KiB alone (1.7 ms) left the link
    // idle whenever a loaded 2-vCPU host kept the engine from a CPU longer
    // than that (docs/fabric.md, "The software device against raw UDP").
    const uint64_t share = p.rate_bps == 0 ? 1 : std::max<uint64_t>(1, p.rate_bps / cfg.engines);
    const Duration lead = std::min(kPaceLead, Duration::serialization(kPaceLeadMaxBytes, share));
    d->pace_ahead_.push_back(std::max({lead, Duration::serialization(64 * 1024, share), Duration::us(50)}));
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
  ec.ports.clear();
  for (const Plane& p : d->planes_) ec.ports.push_back(core::PortConfig{p.rate_bps != 0 ? p.rate_bps : 100'000'000'000ull});
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
  // Payload lands in application memory the application may unmap while
  // it is registered: a fault there fails that WRITE, not the process
  // (platform/memory_guard.hpp).
  platform::install_fault_guard();
  ec.place = &platform::guarded_copy;
  // Secure QPs (QpAttr::secure) seal and open with OpenSSL's AES-GCM.
  ec.make_aead = &crypto::make_aes_gcm;

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
    e->pace_free.assign(cfg.planes.size(), Time::zero());
    e->tx_hold.assign(cfg.planes.size(), Time::zero());
    e->tx_backoff.assign(cfg.planes.size(), kMinQueueBackoff);
    e->gso_stage.resize(kTxSlots * (wire::kMaxHeaderBytes + sizeof(TxSlot::bounce) + wire::kIcrcBytes));
    d->engines_.push_back(std::move(e));
  }
  const uint32_t all = d->all_planes();
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
    // A packet the interface's qdisc drops then fails its send (ENOBUFS) and
    // goes back to the core as local congestion; without it the kernel
    // reports success and the packet is lost, blamed on its path. ICMP
    // errors about these sockets' packets land in their error queues
    // (send_batch drains them; the receive sockets never send, so no error
    // is ever about them and they go without).
    so.recv_errors = true;
    // DF and identification 0, which the ICRC covers (wire::datagram_icrc
    // takes it as 0): the kernel's own choice made the ICRC wrong on the
    // wire for any receiver that checks the real header.
    so.no_fragment = pl.whole_packets;
    if (cfg_.ecn) so.tos = ecn_bits();
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
    so.recv_errors = true;  // qdisc drops as ENOBUFS, as on the EV sockets
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
    s.tx_queue_drops += t.tx_queue_drops;
    s.tx_queue_held += t.tx_queue_held;
    s.tx_icmp_errors += t.tx_icmp_errors;
    s.tx_local_errors += t.tx_local_errors;
    s.tx_paced += t.tx_paced;
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
    s.core.ep_replies_shed_source += c.ep_replies_shed_source;
    s.core.rx_place_faults += c.rx_place_faults;
    s.core.rx_bad_ack += c.rx_bad_ack;
    s.core.rx_stale_ack += c.rx_stale_ack;
    s.core.rx_nak_unconfirmed += c.rx_nak_unconfirmed;
    s.core.rx_ep_refused += c.rx_ep_refused;
    s.core.port_status_sent += c.port_status_sent;
    s.core.port_status_answered += c.port_status_answered;
    s.core.peer_port_rechecks += c.peer_port_rechecks;
    s.core.peer_ports_restored += c.peer_ports_restored;
    s.core.tx_packets += c.tx_packets;
    s.core.ep_requests += c.ep_requests;
    s.core.ep_responses += c.ep_responses;
    s.core.ep_replies_shed += c.ep_replies_shed;
    s.core.ctrl_shed += c.ctrl_shed;
    s.core.rx_auth_failures += c.rx_auth_failures;
    s.core.rx_replays += c.rx_replays;
    s.core.rx_bad_key_id += c.rx_bad_key_id;
    s.core.tx_seal_failures += c.tx_seal_failures;
    for (uint32_t qpn : e->ep->qp_numbers()) {
      const auto q = e->ep->query_qp(qpn);
      if (!q) continue;
      s.retransmissions += q->stats.retransmissions;
      s.losses_rule += q->stats.losses_rule;
      s.losses_timeout += q->stats.losses_timeout;
      s.losses_local += q->stats.losses_local;
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

}  // namespace mrc::rt
