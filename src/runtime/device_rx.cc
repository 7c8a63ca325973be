// SPDX-License-Identifier: BSD-2-Clause
// Device: the receive path. Datagrams from the plane sockets, checked
// (source, port in service, ICRC of each GRO segment) and handed to the
// core; port-status updates shared with the other engines.

#include "runtime/device.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/device_internal.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"

namespace mrc::rt {

using namespace detail;

namespace {

/// Bytes one recvmmsg may write: the ICRC and the responder's copy then read
/// them from cache. 64 GRO datagrams a call (4 MiB) made 1 MiB WRITEs in
/// burst mode 17 % slower than 8 or 16 (docs/performance.md);
/// per-packet datagrams still come 64 a call.
constexpr size_t kRxBytesPerCall = 512 * 1024;

}  // namespace

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

Status Device::inject_datagram(uint32_t plane, const platform::SockAddr& source, std::span<const uint8_t> bytes) {
  if (plane >= planes_.size() || bytes.size() > 65536) return Errc::invalid_argument;
  // As the reuseport program steers: by the destination QP's low bits
  // (BTH bytes 5..7), engine 0 for anything too short to have one.
  uint32_t qpn = 0;
  if (bytes.size() >= 8) qpn = uint32_t{bytes[5]} << 16 | uint32_t{bytes[6]} << 8 | bytes[7];
  Engine& e = engine_of(qpn);
  std::vector<std::byte> copy(bytes.size());
  if (!bytes.empty()) std::memcpy(copy.data(), bytes.data(), bytes.size());
  platform::RxDatagram d;
  d.data = copy;
  d.source = source;
  {
    std::shared_lock<std::shared_mutex> peers(peers_mu_);
    std::lock_guard g(e.mu);
    handle_datagram(e, plane, d, clock_.now());
  }
  if (engines_.size() > 1) forward_port_status(e);
  kick(e);
  return {};
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

}  // namespace mrc::rt
