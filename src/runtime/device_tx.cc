// SPDX-License-Identifier: BSD-2-Clause
// Device: the transmit path. Packets polled from the core into slots,
// grouped into datagrams (GSO bursts where the EV allows), their ICRC
// computed, and sent by sendmmsg or io_uring; SRv6 and raw_send frames
// through the raw socket; the capture file.

#include "runtime/device.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstring>

#include "platform/os_error.hpp"
#include "runtime/device_internal.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"

namespace mrc::rt {

using namespace detail;

namespace {

/// A packet's UDP payload on the wire: MRC headers, payload, ICRC.
size_t wire_bytes(const core::Transmit& t) { return size_t{t.header_len} + t.payload_len + wire::kIcrcBytes; }

}  // namespace

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
  uint32_t offer = pace_mask(e, now);
  size_t n = 0;
  while (n < e.slots.size() && (n < kTxBatch || e.slots[n - 1].tx.burst_more)) {
    // A burst's packets stay together whatever pacing says (the core
    // continues it on the same port); pacing applies between bursts.
    const bool in_burst = n > 0 && e.slots[n - 1].tx.burst_more;
    if (!in_burst && offer == 0) break;
    TxSlot& s = e.slots[n];
    // An encrypting secure QP's ciphertext goes to the slot's bounce buffer.
    auto tx = e.ep->poll_transmit(now, in_burst ? all_planes() : offer, s.hdr, s.bounce);
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
    if (pace_charge(e, now, s.tx.port, wire_bytes(s.tx))) {
      offer &= ~(1u << s.tx.port);
      ++e.st.tx_paced;
    }
    ++n;
  }
  return n;
}

// Pacing. Each engine sends on a plane at its share of the plane's rate:
// what it sent is due to have left at pace_free; the plane is offered while
// that is less than kPaceAhead's worth of bytes ahead of now, so a batch
// still goes to the kernel at once and the interface's queue holds at most
// that much of this engine's traffic.
// A plane whose queue dropped a packet is held back too (tx_hold), paced or not.
uint32_t Device::pace_mask(Engine& e, Time now) const {
  uint32_t m = all_planes();
  for (uint32_t p = 0; p < planes_.size(); ++p)
    if (e.tx_hold[p] > now || (paced_ && planes_[p].rate_bps != 0 && e.pace_free[p] > now + pace_ahead_[p]))
      m &= ~(1u << p);
  return m;
}

bool Device::pace_charge(Engine& e, Time now, uint32_t plane, size_t udp_payload_bytes) {
  if (!paced_ || planes_[plane].rate_bps == 0) return false;
  const uint64_t share = std::max<uint64_t>(1, planes_[plane].rate_bps / engines_.size());
  // The frame as a link counts it: IP and UDP headers, and Ethernet's 38
  // bytes (header, FCS, preamble, gap; a shaper on a veth counts 14 of
  // them, so there the pace is 0.6 % under the rate, never over).
  constexpr size_t kEthernetBytes = 38;
  const size_t frame = udp_payload_bytes + wire::kUdpHeaderBytes + kEthernetBytes +
                       (planes_[plane].addr.is_ipv4() ? wire::kIpv4HeaderBytes : wire::kIpv6HeaderBytes);
  e.pace_free[plane] = std::max(e.pace_free[plane], now) + Duration::serialization(frame, share);
  return e.pace_free[plane] > now + pace_ahead_[plane];
}

Time Device::pace_release(Engine& e) const {
  Time t = Time::never();
  for (uint32_t p = 0; p < planes_.size(); ++p) {
    Time open = e.tx_hold[p];
    if (paced_ && planes_[p].rate_bps != 0) open = std::max(open, e.pace_free[p] - pace_ahead_[p]);
    t = std::min(t, open);
  }
  return t;
}

// One send_slots call: the slots in sending order, the datagrams built from
// them, and the counts of what the kernel did with them. On the stack: its
// arrays are filled as far as the batch goes, never cleared.
struct Device::TxBatch {
  /// A datagram: its socket and source port (the EV), its packets
  /// order[first, end), its UDP payload bytes.
  struct Built {
    platform::UdpSocket* sock;
    uint16_t sport;
    uint16_t first, end;
    size_t bytes;
  };

  explicit TxBatch(Engine& engine) : e(engine) {}

  Engine& e;
  std::array<uint16_t, kTxSlots> order;
  std::array<platform::IoSlice, kTxSlots * 3> iov_store;
  std::array<platform::TxDatagram, kTxSlots> dgs;
  std::array<Built, kTxSlots> built;
  size_t nb = 0, iov_used = 0, stage_used = 0;
  uint64_t sent_pkts = 0, sent_bytes = 0, datagrams = 0, errors = 0, uring_submits = 0;
  /// Packets refused because a socket buffer was full (EAGAIN), because
  /// the egress queue dropped them (ENOBUFS), and not tried because their
  /// plane's queue had dropped one of the batch.
  uint64_t buffer_full = 0, queue_drops = 0, queue_held = 0;
  /// What the sockets' error queues held (ICMP errors about earlier packets).
  platform::ErrorQueueCounts errq;
  /// Slots the kernel refused (a full socket buffer or egress queue): the
  /// core hears of each (Endpoint::on_transmit_refused) once the batch is done.
  std::array<uint16_t, kTxSlots> refused_slots;
  size_t n_refused = 0;
  /// Planes on which the egress queue dropped a packet of this batch, and
  /// planes on which a packet left.
  uint32_t dropped_planes = 0, sent_planes = 0;

  enum class Refusal : uint8_t { buffer_full, queue_drop, queue_held };
  void refuse(size_t d, Refusal why) {
    (why == Refusal::queue_drop ? queue_drops : why == Refusal::queue_held ? queue_held : buffer_full) += packets(d);
    if (why == Refusal::queue_drop) dropped_planes |= 1u << plane(d);
    for (size_t k = built[d].first; k < built[d].end; ++k) refused_slots[n_refused++] = order[k];
  }
  uint32_t plane(size_t d) { return slot(built[d].first).tx.port; }

  TxSlot& slot(size_t k) { return e.slots[order[k]]; }
  size_t packets(size_t d) const { return built[d].end - built[d].first; }
  /// The UDP payload of a datagram's largest packet (a burst's segments are
  /// equal but for the last), for the message of a refused send.
  size_t packet_bytes(size_t d) const { return (built[d].bytes + packets(d) - 1) / packets(d); }

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
  void order_data_first(size_t n) {
    auto control = [&](size_t k) { return e.slots[k].tx.tc == core::TrafficClass::control; };
    size_t filled = 0;
    for (const bool want_control : {false, true})
      for (size_t k = 0; k < n; ++k)
        if (control(k) == want_control) order[filled++] = static_cast<uint16_t>(k);
  }

  // Where the datagram that starts at packet i ends, and its bytes: the
  // packets after it on the same socket and to the same destination, while
  // the GSO rule holds (every segment the size of the first, the last one
  // possibly shorter) and the datagram fits a GSO send.
  size_t datagram_end(size_t i, size_t n, uint32_t burst, size_t& total) {
    const core::Transmit& t0 = slot(i).tx;
    const size_t seg_bytes = wire_bytes(t0);
    size_t j = i;
    total = 0;
    while (j < n) {
      const core::Transmit& t = slot(j).tx;
      const size_t bytes = wire_bytes(t);
      if (j > i) {
        const size_t prev_bytes = wire_bytes(slot(j - 1).tx);
        if (burst == 1 || t.port != t0.port || t.entropy != t0.entropy || t.peer != t0.peer ||
            (t.tc == core::TrafficClass::control) != (t0.tc == core::TrafficClass::control) ||
            bytes > seg_bytes || prev_bytes != seg_bytes || (j - i + 1) * 3 > platform::UdpSocket::kMaxIovPerDatagram ||
            total + bytes > kMaxGsoBytes || j - i >= platform::UdpSocket::kMaxGsoSegments)
          break;
      }
      total += bytes;
      ++j;
    }
    return j;
  }

  // The ICRC of a packet whose header and payload are at hdr and payload,
  // kept in the slot (the capture reads it there). With `copy_to`, the
  // payload is copied there in the same pass.
  static void seal(wire::SegmentIcrc& segment_icrc, TxSlot& s, const uint8_t* hdr, const uint8_t* payload,
                   uint8_t* copy_to = nullptr) {
    const auto crc = segment_icrc(std::span<const uint8_t>(hdr, s.tx.header_len),
                                  std::span<const uint8_t>(payload, s.tx.payload_len), copy_to);
    // No ICRC (headers the framing refuses) copies nothing: the packet
    // still leaves whole, with an ICRC the receiver drops it for.
    if (!crc && copy_to && s.tx.payload_len) std::memcpy(copy_to, payload, s.tx.payload_len);
    wire::put_icrc(crc ? *crc : 0, s.icrc.data());
  }

  // A GSO burst, packets [i, j), leaves as one contiguous piece, copied
  // here. Gathered from its segments' three pieces each (headers, the
  // payload in the application's buffer, ICRC) the kernel's copy into the
  // super-packet ran slower than this copy and a one-piece send together:
  // raw UDP GSO x15 of 4,140 B segments, 45-48 Gbit/s gathered, 57-61
  // staged, 75-78 from one buffer (mrc_raw_udp --header-bytes,
  // docs/performance.md). The payload's copy and its ICRC share one pass
  // over it (wire::crc32_copy). Returns the slices written at iov (one).
  size_t stage_burst(size_t i, size_t j, size_t total, wire::SegmentIcrc& segment_icrc, platform::IoSlice* iov) {
    // Sized for every slot staged once (Device::open): it cannot fill.
    assert(stage_used + total <= e.gso_stage.size());
    uint8_t* const start = e.gso_stage.data() + stage_used;
    uint8_t* d = start;
    for (size_t k = i; k < j; ++k) {
      TxSlot& s = slot(k);
      std::memcpy(d, s.hdr.data(), s.tx.header_len);
      seal(segment_icrc, s, d, s.payload, d + s.tx.header_len);
      d += size_t{s.tx.header_len} + s.tx.payload_len;
      std::memcpy(d, s.icrc.data(), wire::kIcrcBytes);
      d += wire::kIcrcBytes;
    }
    iov[0] = platform::IoSlice{start, total};
    stage_used += total;
    return 1;
  }

  // Packets [i, j) as they lie: headers, payload, ICRC slices each.
  // Returns the slices written at iov.
  size_t gather(size_t i, size_t j, wire::SegmentIcrc& segment_icrc, platform::IoSlice* iov) {
    size_t iovs = 0;
    for (size_t k = i; k < j; ++k) {
      TxSlot& s = slot(k);
      seal(segment_icrc, s, s.hdr.data(), s.payload);
      iov[iovs++] = platform::IoSlice{s.hdr.data(), s.tx.header_len};
      if (s.tx.payload_len) iov[iovs++] = platform::IoSlice{s.payload, s.tx.payload_len};
      iov[iovs++] = platform::IoSlice{s.icrc.data(), wire::kIcrcBytes};
    }
    return iovs;
  }

  // More than one socket among the datagrams.
  bool several_sockets() const {
    return nb > 1 && std::any_of(built.begin() + 1, built.begin() + static_cast<ptrdiff_t>(nb),
                                 [&](const Built& x) { return x.sock != built[0].sock; });
  }
};

// Sends the polled packets. Consecutive packets on one socket to one
// destination with equal sizes form one GSO burst (burst mode); otherwise
// each is a datagram. The ICRC is computed here, outside the engine lock.
//
// Every datagram of the batch is built first, then each run of consecutive
// datagrams on one socket leaves in one sendmmsg (control packets to one
// peer, bursts of small packets past the GSO limit), or the whole batch in
// one io_uring submission. Per packet (--burst 1) a spray gives every packet
// another EV, hence another socket: one sendmsg each, which the order
// forbids to regroup.
void Device::send_slots(Engine& e, size_t n) {
  TxBatch b(e);
  b.order_data_first(n);
  if (cfg_.ev_mode == EvWire::srv6 || cfg_.raw_send) n = send_raw_frames(b, n);
  for (size_t i = 0; i < n;) {
    size_t total = 0;
    const size_t j = b.datagram_end(i, n, cfg_.burst, total);
    build_datagram(b, i, j, total);
    i = j;
  }
  // What the kernel refused never left: the core resends it without
  // blaming its path, and takes it as congestion.
  if (b.several_sockets() && e.uring.live()) submit_uring(b);
  submit_sendmmsg(b);
  std::lock_guard g(e.mu);  // the counters are read under it
  if (b.n_refused != 0) {
    const Time now = clock_.now();
    for (size_t k = 0; k < b.n_refused; ++k) {
      const TxSlot& s = e.slots[b.refused_slots[k]];
      e.ep->on_transmit_refused(now, s.tx, std::span<const uint8_t>(s.hdr.data(), s.tx.header_len));
    }
  }
  hold_dropping_planes(e, b.dropped_planes, b.sent_planes);
  e.st.tx_packets += b.sent_pkts;
  e.st.tx_bytes += b.sent_bytes;
  e.st.tx_datagrams += b.datagrams;
  e.st.tx_eagain += b.buffer_full;
  e.st.tx_queue_drops += b.queue_drops;
  e.st.tx_queue_held += b.queue_held;
  e.st.tx_icmp_errors += b.errq.icmp;
  e.st.tx_local_errors += b.errq.local;
  e.st.tx_errors += b.errors;
  e.st.tx_uring_submits += b.uring_submits;
}

// Whole frames through the raw socket: with raw_send every packet; in srv6
// mode the packets with a wire EV, encapsulated (the rest, with no SRv6
// profile, through the EV sockets). Returns how many slots are left for the
// EV sockets, at the front of the order.
size_t Device::send_raw_frames(TxBatch& b, size_t n) {
  auto* mid = cfg_.raw_send ? b.order.begin()
                            : std::stable_partition(b.order.begin(), b.order.begin() + static_cast<ptrdiff_t>(n),
                                                    [&](uint16_t k) { return b.e.slots[k].tx.wire_ev == nullptr; });
  const size_t plain = static_cast<size_t>(mid - b.order.begin());
  if (plain < n) {
    const SendCount c = send_frames(b.e, std::span<const uint16_t>(mid, n - plain), b.refused_slots.data() + b.n_refused);
    b.n_refused += c.refused;
    b.sent_pkts += c.packets;
    b.sent_bytes += c.bytes;
    b.datagrams += c.packets;
    b.queue_drops += c.queue_drops;
    b.buffer_full += c.refused - c.queue_drops;
    b.dropped_planes |= c.dropped_planes;
    b.sent_planes |= c.sent_planes;
    b.errors += c.errors;
    b.errq += c.errq;
  }
  return plain;
}

// Packets [i, j) of the order as one datagram from their EV's socket: their
// ICRCs, and their slices (one staged piece for a GSO burst, three per
// packet otherwise).
void Device::build_datagram(TxBatch& b, size_t i, size_t j, size_t total) {
  TxSlot& first = b.slot(i);
  const core::Transmit& t0 = first.tx;
  const uint32_t plane = t0.port;
  // The EV is the socket's source port. The core may pick an entropy no
  // socket has (a port-status update's is random, a reply echoes the
  // peer's EV): such a packet leaves from the plane's first EV socket,
  // and its ICRC must cover the port it really carries.
  uint32_t ev_index = t0.entropy - cfg_.ev_port_base - plane * cfg_.evs_per_plane;
  if (ev_index >= cfg_.evs_per_plane) ev_index = 0;
  platform::UdpSocket& sock = b.e.tx[plane][ev_index];
  const uint16_t sport = static_cast<uint16_t>(cfg_.ev_port_base + plane * cfg_.evs_per_plane + ev_index);
  wire::FrameFields f;
  f.src = planes_[plane].ip;
  f.dst = first.dst_ip;  // one peer and plane per datagram
  f.ev = sport;
  // A datagram's packets share the IP and UDP headers the ICRC covers, up
  // to the length of a shorter last one: their CRC register is computed
  // once per size (wire::SegmentIcrc).
  wire::SegmentIcrc segment_icrc(fmt_, f);
  platform::IoSlice* iov = b.iov_store.data() + b.iov_used;
  const size_t iovs = j - i > 1 ? b.stage_burst(i, j, total, segment_icrc, iov) : b.gather(i, j, segment_icrc, iov);
  platform::TxDatagram& dg = b.dgs[b.nb];
  dg = platform::TxDatagram{};
  dg.dest = &first.dest;
  dg.iov = std::span<const platform::IoSlice>(iov, iovs);
  dg.gso_segment_bytes = j - i > 1 ? static_cast<uint16_t>(wire_bytes(t0)) : 0;
  if (cfg_.dscp_control != 0 && t0.tc == core::TrafficClass::control)
    dg.tos = static_cast<int16_t>(cfg_.dscp_control << 2 | ecn_bits());
  b.built[b.nb++] = TxBatch::Built{&sock, sport, static_cast<uint16_t>(i), static_cast<uint16_t>(j), total};
  b.iov_used += iovs;
}

// A datagram the kernel took: counted, and captured when asked.
void Device::count_sent(TxBatch& b, size_t d) {
  const TxBatch::Built& x = b.built[d];
  if (pcap_) [[unlikely]] {
    for (size_t k = x.first; k < x.end; ++k) {
      const TxSlot& s = b.slot(k);
      wire::FrameFields f;
      f.src = planes_[s.tx.port].ip;
      f.dst = s.dst_ip;
      f.ev = x.sport;
      f.traffic_class = b.dgs[d].tos >= 0 ? static_cast<uint8_t>(b.dgs[d].tos) : ecn_bits();
      capture(f, std::span<const uint8_t>(s.hdr.data(), s.tx.header_len),
              std::span<const uint8_t>(s.payload, s.tx.payload_len), s.icrc);
    }
  }
  b.sent_pkts += x.end - x.first;
  b.sent_bytes += x.bytes;
  b.sent_planes |= 1u << b.plane(d);
  ++b.datagrams;
}

// A plane whose egress queue dropped a packet is held back (pace_mask) until
// the queue has had time to drain: the refused packets go back to the core,
// which would otherwise resend them at once into the same full queue, one
// system call after another. Holds double while the drops go on and start
// again from the shortest once a batch leaves whole. Under the engine's mutex.
void Device::hold_dropping_planes(Engine& e, uint32_t dropped, uint32_t sent) {
  const Time now = clock_.now();
  for (uint32_t p = 0; p < planes_.size(); ++p) {
    if (dropped >> p & 1u) {
      e.tx_hold[p] = now + e.tx_backoff[p];
      e.tx_backoff[p] = std::min(kMaxQueueBackoff, e.tx_backoff[p] + e.tx_backoff[p]);
    } else if (sent >> p & 1u) {
      e.tx_backoff[p] = kMinQueueBackoff;
    }
  }
}

// The whole batch, whatever its sockets, in one io_uring submission and in
// order. A ring that fails retires itself (UringSender::send): then this
// batch (left to submit_sendmmsg) and the later ones take the sendmmsg path.
void Device::submit_uring(TxBatch& b) {
  std::array<platform::UringSender::Item, kTxSlots> items;
  std::array<int, kTxSlots> res;
  for (size_t d = 0; d < b.nb; ++d) items[d] = {b.built[d].sock, &b.dgs[d]};
  auto r = b.e.uring.send(std::span<const platform::UringSender::Item>(items.data(), b.nb),
                          std::span<int>(res.data(), b.nb));
  if (!r) return;
  ++b.uring_submits;
  for (size_t d = 0; d < *r; ++d) {
    if (res[d] >= 0) {
      count_sent(b, d);
    } else if (res[d] == -EAGAIN || res[d] == -EWOULDBLOCK || res[d] == -ENOBUFS) {
      b.refuse(d, res[d] == -ENOBUFS ? TxBatch::Refusal::queue_drop : TxBatch::Refusal::buffer_full);
    } else {
      // An earlier packet's ICMP error, pending on the socket, fails its
      // next send before anything leaves: that datagram is sent again now,
      // a few places late, rather than lost.
      const auto q = b.built[d].sock->drain_errors();
      if (q) b.errq += *q;
      if (q && q->icmp != 0) {
        send_one(b, d);
        continue;
      }
      b.errors += b.packets(d);
      note_send_error(-res[d], b.packet_bytes(d), *b.dgs[d].dest);
    }
  }
  b.nb = 0;
}

// Datagram d alone, through its socket's send_batch (which drains the error
// queue and sends again itself when an ICMP error fails it).
void Device::send_one(TxBatch& b, size_t d) {
  auto r = b.built[d].sock->send_batch(std::span<const platform::TxDatagram>(&b.dgs[d], 1));
  b.errq += b.built[d].sock->last_send().drained;
  if (!r) {
    b.errors += b.packets(d);
    note_send_error(platform::last_error().errno_value, b.packet_bytes(d), *b.dgs[d].dest);
  } else if (*r == 1) {
    count_sent(b, d);
  } else {
    b.refuse(d, b.built[d].sock->last_send().queue_drop ? TxBatch::Refusal::queue_drop : TxBatch::Refusal::buffer_full);
  }
}

// Each socket's run of datagrams in as few sendmmsg calls as the kernel takes.
void Device::submit_sendmmsg(TxBatch& b) {
  for (size_t d = 0; d < b.nb;) {
    size_t run = d + 1;
    while (run < b.nb && b.built[run].sock == b.built[d].sock) ++run;
    // The plane's queue dropped a packet of this batch already: it is full,
    // and the rest wait for it to drain (hold_dropping_planes).
    if (b.dropped_planes >> b.plane(d) & 1u) {
      for (; d < run; ++d) b.refuse(d, TxBatch::Refusal::queue_held);
      continue;
    }
    while (d < run) {
      auto r = b.built[d].sock->send_batch(std::span<const platform::TxDatagram>(&b.dgs[d], run - d));
      const platform::SendReport& report = b.built[d].sock->last_send();
      b.errq += report.drained;
      if (!r) {
        // The error concerns the first datagram: it is lost, the rest go on.
        b.errors += b.packets(d);
        note_send_error(platform::last_error().errno_value, b.packet_bytes(d), *b.dgs[d].dest);
        ++d;
        continue;
      }
      for (size_t k = d; k < d + *r; ++k) count_sent(b, k);
      d += *r;
      if (*r == 0) {
        // A full socket buffer or egress queue: the rest of the run goes
        // back to the core.
        const auto why = report.queue_drop ? TxBatch::Refusal::queue_drop : TxBatch::Refusal::buffer_full;
        for (; d < run; ++d) b.refuse(d, why);
      }
    }
  }
}

Device::SendCount Device::send_frames(Engine& e, std::span<const uint16_t> order, uint16_t* refused) {
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
      f.traffic_class = ecn_bits();
      if (cfg_.dscp_control != 0 && t.tc == core::TrafficClass::control)
        f.traffic_class = static_cast<uint8_t>(cfg_.dscp_control << 2 | ecn_bits());
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
    // Send what the kernel takes; a failed frame is lost as if the network
    // dropped it (the protocol recovers it), a refused one goes back to the
    // core (send_slots).
    size_t done = 0;
    while (done < k) {
      auto r = e.raw.send_batch(std::span<const platform::TxDatagram>(dgs.data() + done, k - done));
      c.errq += e.raw.last_send().drained;
      if (!r) {
        ++c.errors;  // this frame failed (too big for the link, no route to its carrier): skip it
        const core::Transmit& t = e.slots[order[i + done]].tx;
        note_send_error(platform::last_error().errno_value, wire_bytes(t), *dgs[done].dest);
        ++done;
        continue;
      }
      if (*r == 0) {  // the socket buffer or the egress queue is full
        if (e.raw.last_send().queue_drop) {
          c.queue_drops += k - done;
          c.dropped_planes |= 1u << e.slots[order[i + done]].tx.port;
        }
        break;
      }
      for (size_t d = done; d < done + *r; ++d) {
        const TxSlot& s = e.slots[order[i + d]];
        const core::Transmit& t = s.tx;
        c.bytes += wire_bytes(t);
        c.sent_planes |= 1u << t.port;
        // The frame exactly as sent, outer and inner headers included.
        if (pcap_) [[unlikely]]
          capture_frame(std::span<const uint8_t>(s.net.data(), s.net_len),
                        std::span<const uint8_t>(s.hdr.data(), t.header_len),
                        std::span<const uint8_t>(s.payload, t.payload_len), s.icrc);
      }
      c.packets += *r;
      done += *r;
    }
    for (size_t d = done; d < k; ++d) refused[c.refused++] = order[i + d];
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

}  // namespace mrc::rt
