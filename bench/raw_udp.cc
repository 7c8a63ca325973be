// SPDX-License-Identifier: BSD-2-Clause
// mrc_raw_udp: this machine's UDP limit, the reference the software device's
// performance goals are stated against (docs/performance.md, "Raw UDP
// reference"). It sends and receives the same packet sizes with the same
// method the soft device uses, through the same platform layer and socket
// options (never fragment: DF, IPv4 identification 0):
//
//   mrc_raw_udp bw --method mmsg --size 4160 --batch 32 --seconds 5
//   mrc_raw_udp bw --method gso --size 4160 --burst 8 --batch 8 --seconds 5
//   mrc_raw_udp lat --size 64 --iters 100000 --poll busy
//
// bw: a sender thread and a receiver thread over loopback (127.0.0.1).
//   mmsg: every sendmmsg carries --batch datagrams of --size bytes.
//   gso:  every sendmmsg carries --batch GSO bursts of --burst segments of
//         --size bytes; the receiver has UDP_GRO on and counts segments.
//   --header-bytes H gathers every datagram (segment) from three pieces, H
//         header bytes, the payload and a 4-byte trailer, as the soft device
//         lays a packet out; --stage copies them into one buffer first.
//   --icrc makes the trailer a real ICRC: the sender computes it (in the
//         staging copy's pass with --stage) and the receiver checks it, both with
//         the soft device's own calls (wire::SegmentIcrc, the covered IP and
//         UDP headers once per size); --place has the
//         receiver copy every segment's payload into a 1 MiB region, as the
//         responder places a WRITE. Together they are the per-byte work MRC
//         asks of a software sender and receiver, with no protocol around it:
//         the ceiling of the device's figure on this machine.
//   Reports payload Gbit/s and Mpps at the sender and the receiver, the CPU
//   time of each thread (as % of one core) and the datagrams lost (loopback
//   drops when the receiver's socket buffer is full: the sender never blocks).
// lat: ping-pong between two threads; reports one-way latency (round trip / 2,
//   as perftest does) as min / median / p99 in microseconds. --poll busy spins
//   on a non-blocking receive, --poll block sleeps in poll().
// send / recv: the same between two hosts (network namespaces of
//   tools/fabric), over several planes, one socket per plane address: the
//   reference the device's goodput across a fabric is held against
//   (`fabric goodput`, docs/fabric.md).
//
//   mrc_raw_udp recv --at fd68:0:3::1,fd68:1:3::1 &                 # on h3
//   mrc_raw_udp send --from fd68::1,fd68:1::1 --to fd68:0:3::1,fd68:1:3::1 --seconds 5   # on h0
//
//   send: datagrams of --size bytes on every plane, each carrying its plane
//     and a sequence number, for --seconds. --rate-bps R paces each plane
//     to R bit/s (each frame counted with its IP and UDP headers and 38
//     Ethernet bytes, as the device paces); 0 (the default) blasts: as fast
//     as the host's egress queue takes them. The sockets have IP_RECVERR /
//     IPV6_RECVERR, so a datagram the queue drops fails its send (ENOBUFS)
//     and is sent again once the queue has had 50 us to drain: the queue
//     stays full, the link busy, and nothing is lost on the host.
//   recv: counts the unique datagrams (plane, sequence number) and their
//     bytes (every UDP payload byte counts: the same frames carry the
//     device's headers, which its goodput does not count), until --idle-ms
//     without one after the first; prints the goodput from the first
//     arrival to the last, the median of its --interval-ms samples (the
//     first and last left out), duplicates and sequence gaps.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "platform/clock.hpp"
#include "platform/epoll.hpp"
#include "platform/os_error.hpp"
#include "platform/udp_socket.hpp"
#include "wire/framing.hpp"
#include "wire/icrc.hpp"

using namespace mrc;
using namespace mrc::platform;

namespace {

constexpr size_t kMaxUdpPayload = 65507;  // IPv4: 65535 - 20 (IP) - 8 (UDP)

struct BwResult {
  uint64_t sent_datagrams = 0, sent_bytes = 0;
  uint64_t recv_datagrams = 0, recv_bytes = 0;
  double send_seconds = 0, recv_seconds = 0;
  double send_cpu_s = 0, recv_cpu_s = 0;
  uint64_t send_would_block = 0;
  uint64_t icrc_errors = 0;  ///< --icrc: segments whose ICRC did not check
};

// What the bytes of a bw run go through besides the kernel.
struct Work {
  size_t header_bytes = 0;  ///< gather (or stage) header, payload and trailer pieces
  bool stage = false;       ///< copy the pieces into one buffer before the send
  bool icrc = false;        ///< a real ICRC, computed in the staging pass, checked on receive
  bool place = false;       ///< the receiver copies each payload into a region
};

// The soft device's framing for a loopback IPv4 socket, whose kernel writes
// the IP and UDP headers the ICRC covers (wire::datagram_icrc).
wire::FrameFormat loopback_v4_format(uint16_t dport) {
  wire::FrameFormat fmt;
  fmt.ip = wire::IpVersion::v4;
  fmt.checksum = wire::UdpChecksumMode::zero;
  fmt.udp_dport = dport;
  return fmt;
}

wire::IpAddress ipv4_loopback_address() {
  wire::IpAddress a{};
  a[0] = 127;
  a[3] = 1;
  return a;
}

[[noreturn]] void die(const std::string& what) {
  fmt::print(stderr, "mrc_raw_udp: {}: {}\n", what, last_error_message());
  std::exit(1);
}

BwResult run_bw(const std::string& method, size_t size, size_t burst, size_t batch, double seconds,
                const Work& work) {
  const size_t header_bytes = work.header_bytes;
  const bool stage = work.stage;
  const bool gso = method == "gso";
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0), {.rcvbuf_bytes = 32 << 20, .recv_tos = false, .gro = gso});
  if (!rx) die("receiver socket");
  // DF and IPv4 identification 0, as the soft device sends (no_fragment):
  // the kernel's identification generator costs a per-packet sender.
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0),
                            {.sndbuf_bytes = 32 << 20, .recv_tos = false, .no_fragment = true});
  if (!tx) die("sender socket");
  const SockAddr dest = rx->local_address();
  const wire::FrameFormat fmt = loopback_v4_format(dest.port());
  wire::FrameFields frame;  // what the ICRC covers of the kernel's headers
  frame.src = frame.dst = ipv4_loopback_address();
  frame.ev = tx->local_address().port();
  BwResult res;
  std::atomic<bool> sender_done{false};

  std::thread receiver([&] {
    RxBatch b(64, gso ? 65536 : std::max<size_t>(size, 2048));
    // A receiver that reads the bytes takes at most 512 KiB a call, as the
    // soft device does (kRxBytesPerCall): 64 GRO datagrams, 4 MiB, would be
    // out of the cache by the time the checks read them back.
    const size_t per_call = work.icrc || work.place ? std::max<size_t>(1, (512u << 10) / (gso ? 65536 : size)) : 64;
    std::vector<uint8_t> region(work.place ? size_t{1} << 20 : 0);
    size_t region_at = 0;
    const Duration cpu0 = thread_cpu_time();
    Time first = Time::never(), last;
    while (true) {
      auto n = rx->recv_batch(b, per_call);
      if (!n) {
        if (n.error() != Errc::would_block) die("recvmmsg");
        // After the sender finished, 100 ms of silence ends the run.
        auto r = wait_readable(rx->fd(), sender_done.load() ? Duration::ms(100) : Duration::ms(500));
        if (r && !*r && sender_done.load()) break;
        continue;
      }
      const Time now = monotonic_now();
      if (first == Time::never()) first = now;
      last = now;
      for (const RxDatagram& d : b.received()) {
        res.recv_datagrams += d.segment_count();
        res.recv_bytes += d.data.size();
        if (!work.icrc && !work.place) continue;
        // One CRC register for the covered IP and UDP headers per segment
        // size, as the device's receiver does.
        wire::SegmentIcrc segment_icrc(fmt, frame);
        for (std::span<std::byte> seg : d.segments()) {
          const auto* bytes = reinterpret_cast<const uint8_t*>(seg.data());
          const size_t body = seg.size() - wire::kIcrcBytes;
          if (work.icrc) {
            const auto crc = segment_icrc(std::span<const uint8_t>(bytes, body));
            if (!crc || *crc != wire::get_icrc(bytes + body)) {
              ++res.icrc_errors;
              continue;
            }
          }
          if (work.place) {
            const size_t len = body - header_bytes;
            if (region_at + len > region.size()) region_at = 0;
            std::memcpy(region.data() + region_at, bytes + header_bytes, len);
            region_at += len;
          }
        }
      }
    }
    res.recv_cpu_s = (thread_cpu_time() - cpu0).to_s();
    res.recv_seconds = first == Time::never() ? 0 : (last - first).to_s();
  });

  std::thread sender([&] {
    const size_t per_msg = gso ? burst : 1;
    std::vector<std::byte> payload(size * per_msg * batch);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i);
    // --header-bytes: every datagram (segment) gathered from three pieces
    // as the soft device sends it: its headers, the payload in place in the
    // application's buffer, and the 4-byte ICRC.
    const size_t pieces = header_bytes > 0 ? 3 : 1;
    std::vector<std::byte> headers(header_bytes * per_msg * batch), trailers(4 * per_msg * batch);
    const size_t per_datagram = pieces == 1 ? 1 : per_msg * pieces;
    std::vector<std::byte> staging(stage ? size * per_msg * batch : 0);
    std::vector<IoSlice> one(stage ? batch : 0);
    std::vector<IoSlice> slices(batch * per_datagram);
    std::vector<TxDatagram> msgs(batch);
    for (size_t i = 0; i < batch; ++i) {
      if (pieces == 1) {
        slices[i] = IoSlice{payload.data() + i * size * per_msg, size * per_msg};
      } else {
        for (size_t k = 0; k < per_msg; ++k) {
          const size_t seg = i * per_msg + k;
          IoSlice* s = &slices[seg * 3];
          s[0] = IoSlice{headers.data() + seg * header_bytes, header_bytes};
          s[1] = IoSlice{payload.data() + seg * size + header_bytes, size - header_bytes - 4};
          s[2] = IoSlice{trailers.data() + seg * 4, 4};
        }
      }
      msgs[i] = TxDatagram{.dest = &dest, .iov = {&slices[i * per_datagram], per_datagram},
                           .gso_segment_bytes = static_cast<uint16_t>(gso ? size : 0)};
    }
    // Every segment is `size` bytes on one socket to one destination: the
    // ICRC's register after the covered IP and UDP headers is computed
    // once, as the device computes it once per burst.
    wire::SegmentIcrc segment_icrc(fmt, frame);
    const Duration cpu0 = thread_cpu_time();
    const Time start = monotonic_now();
    const Time end = start + Duration::us(static_cast<int64_t>(seconds * 1e6));
    Time now = start;
    while (now < end) {
      if (stage) {
        // --stage: the three pieces copied into one buffer, then sent as one.
        for (size_t i = 0; i < batch; ++i) {
          for (size_t k = 0; k < per_msg; ++k) {
            const size_t seg = i * per_msg + k;
            std::byte* d = staging.data() + seg * size;
            const std::byte* hdr = headers.data() + seg * header_bytes;
            const std::byte* body = payload.data() + seg * size + header_bytes;
            const size_t body_len = size - header_bytes - 4;
            std::memcpy(d, hdr, header_bytes);
            if (work.icrc) {
              // As the soft device stages a burst: the payload copied in
              // its ICRC's pass, the ICRC appended.
              auto* out = reinterpret_cast<uint8_t*>(d);
              const auto crc = segment_icrc(
                  std::span<const uint8_t>(out, header_bytes),
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body), body_len), out + header_bytes);
              wire::put_icrc(crc ? *crc : 0, out + size - 4);
            } else {
              std::memcpy(d + header_bytes, body, body_len);
              std::memcpy(d + size - 4, trailers.data() + seg * 4, 4);
            }
          }
          one[i] = IoSlice{staging.data() + i * size * per_msg, size * per_msg};
          msgs[i].iov = {&one[i], 1};
        }
      } else if (work.icrc) {
        // Gathered, as the soft device sends single packets: each ICRC
        // computed over its pieces in place into its trailer.
        for (size_t seg = 0; seg < per_msg * batch; ++seg) {
          const auto* hdr = reinterpret_cast<const uint8_t*>(headers.data() + seg * header_bytes);
          const auto* body = reinterpret_cast<const uint8_t*>(payload.data() + seg * size + header_bytes);
          const auto crc = segment_icrc(std::span<const uint8_t>(hdr, header_bytes),
                                        std::span<const uint8_t>(body, size - header_bytes - 4));
          wire::put_icrc(crc ? *crc : 0, reinterpret_cast<uint8_t*>(trailers.data() + seg * 4));
        }
      }
      size_t off = 0;
      while (off < batch) {
        auto n = tx->send_batch(std::span(msgs).subspan(off));
        if (!n) die("sendmmsg");
        if (*n == 0) {
          ++res.send_would_block;
          (void)wait_writable(tx->fd(), Duration::ms(10));
          continue;
        }
        off += *n;
        res.sent_datagrams += *n * per_msg;
        res.sent_bytes += *n * per_msg * size;
      }
      now = monotonic_now();
    }
    res.send_seconds = (now - start).to_s();
    res.send_cpu_s = (thread_cpu_time() - cpu0).to_s();
    sender_done.store(true);
  });
  sender.join();
  receiver.join();
  return res;
}

struct LatResult {
  double min_us = 0, median_us = 0, p99_us = 0, mean_us = 0;
  size_t iters = 0;
};

LatResult run_lat(size_t size, size_t iters, bool busy) {
  auto a = UdpSocket::open(SockAddr::ipv4_loopback(0), {.recv_tos = false, .no_fragment = true});
  auto b = UdpSocket::open(SockAddr::ipv4_loopback(0), {.recv_tos = false, .no_fragment = true});
  if (!a || !b) die("socket");
  const SockAddr addr_a = a->local_address(), addr_b = b->local_address();
  const size_t warmup = std::min<size_t>(1000, iters / 10 + 1);
  const size_t total = warmup + iters;
  std::vector<std::byte> msg(size, std::byte{0x5a});

  // Receives exactly one datagram on `s`, spinning or sleeping in poll().
  auto recv_one = [busy](UdpSocket& s, RxBatch& batch) {
    while (true) {
      auto n = s.recv_batch(batch);
      if (n) return;
      if (n.error() != Errc::would_block) die("recvmmsg");
      if (!busy) {
        auto r = wait_readable(s.fd(), Duration::s(5));
        if (!r || !*r) {
          fmt::print(stderr, "mrc_raw_udp: lat: no reply within 5 s\n");
          std::exit(1);
        }
      }
    }
  };

  std::thread echo([&] {
    RxBatch batch(1, std::max<size_t>(size, 64));
    for (size_t i = 0; i < total; ++i) {
      recv_one(*b, batch);
      while (true) {
        auto r = b->send_to(addr_a, msg);
        if (!r) die("send");
        if (*r == 1) break;
      }
    }
  });
  RxBatch batch(1, std::max<size_t>(size, 64));
  std::vector<double> oneway_us;
  oneway_us.reserve(iters);
  for (size_t i = 0; i < total; ++i) {
    const Time t0 = monotonic_now();
    while (true) {
      auto r = a->send_to(addr_b, msg);
      if (!r) die("send");
      if (*r == 1) break;
    }
    recv_one(*a, batch);
    const Time t1 = monotonic_now();
    if (i >= warmup) oneway_us.push_back((t1 - t0).to_us() / 2);
  }
  echo.join();
  std::sort(oneway_us.begin(), oneway_us.end());
  LatResult r;
  r.iters = oneway_us.size();
  r.min_us = oneway_us.front();
  r.median_us = oneway_us[oneway_us.size() / 2];
  r.p99_us = oneway_us[std::min(oneway_us.size() - 1, oneway_us.size() * 99 / 100)];
  double sum = 0;
  for (double v : oneway_us) sum += v;
  r.mean_us = sum / static_cast<double>(oneway_us.size());
  return r;
}

// ---------------------------------------------------------------- send / recv

/// What leads every datagram of send / recv: a magic number, the plane and
/// the sequence number on that plane, little-endian (both ends are this program).
constexpr uint32_t kMagic = 0x5543524d;  // "MRCU"
constexpr size_t kSeqHeaderBytes = 16;

struct SeqHeader {
  uint32_t magic;
  uint32_t plane;
  uint64_t seq;
};
static_assert(sizeof(SeqHeader) == kSeqHeaderBytes);

/// A comma-separated list of addresses, each with `port`; empty on error
/// (`bad` names the entry).
std::vector<SockAddr> parse_addrs(const std::string& list, uint16_t port, std::string& bad) {
  std::vector<SockAddr> out;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string one = list.substr(at, comma - at);
    auto a = SockAddr::parse(one);
    if (!a) {
      bad = one;
      return {};
    }
    a->set_port(port);
    out.push_back(*a);
    at = comma + 1;
  }
  return out;
}

struct SendResult {
  uint64_t datagrams = 0, bytes = 0;
  uint64_t queue_refusals = 0;   ///< send calls the egress queue cut short (ENOBUFS)
  uint64_t buffer_refusals = 0;  ///< ... a full socket buffer cut short
  uint64_t icmp_errors = 0;      ///< ICMP errors drained from the sockets' error queues
  double seconds = 0;
};

// One socket per plane; datagrams [magic, plane, seq, zeros...] of `size`
// bytes, `batch` per sendmmsg, round robin over the planes.
SendResult run_send(const std::vector<SockAddr>& from, const std::vector<SockAddr>& to, size_t size, double seconds,
                    uint64_t rate_bps, size_t batch) {
  const size_t planes = to.size();
  std::vector<UdpSocket> socks;
  for (const SockAddr& f : from) {
    auto s = UdpSocket::open(f, {.sndbuf_bytes = 4 << 20, .recv_tos = false, .no_fragment = true, .recv_errors = true});
    if (!s) die("sender socket on " + f.to_string());
    socks.push_back(std::move(*s));
  }
  // Per plane: `batch` datagrams, their headers rewritten before each send.
  std::vector<std::vector<std::byte>> bufs(planes, std::vector<std::byte>(size * batch));
  std::vector<std::vector<IoSlice>> slices(planes, std::vector<IoSlice>(batch));
  std::vector<std::vector<TxDatagram>> msgs(planes, std::vector<TxDatagram>(batch));
  for (size_t p = 0; p < planes; ++p)
    for (size_t i = 0; i < batch; ++i) {
      slices[p][i] = IoSlice{bufs[p].data() + i * size, size};
      msgs[p][i] = TxDatagram{.dest = &to[p], .iov = {&slices[p][i], 1}};
    }
  // Pacing as the device does it: a frame's time at the rate, with its IP
  // and UDP headers and Ethernet's 38 bytes; up to 64 KiB ahead of now.
  const size_t frame = size + 8 + 38 + (to[0].is_ipv6() ? 40 : 20);
  const Duration per_datagram = rate_bps ? Duration::serialization(frame, rate_bps) : Duration{};
  const Duration ahead = rate_bps ? Duration::serialization(64 * 1024, rate_bps) : Duration{};
  const Duration backoff = Duration::us(50);  // a refused plane waits this long for its queue to drain
  std::vector<uint64_t> seq(planes, 0);
  std::vector<Time> free_at(planes, Time::zero()), blocked_until(planes, Time::zero());
  SendResult res;
  const Time start = monotonic_now();
  const Time end = start + Duration::us(static_cast<int64_t>(seconds * 1e6));
  Time now = start;
  while (now < end) {
    Time wake = end;
    bool sent = false;
    for (size_t p = 0; p < planes; ++p) {
      if (blocked_until[p] > now) {
        wake = std::min(wake, blocked_until[p]);
        continue;
      }
      size_t k = batch;
      if (rate_bps) {
        Time f = std::max(free_at[p], now);
        for (k = 0; k < batch && f <= now + ahead; ++k) f = f + per_datagram;
        if (k == 0) {
          wake = std::min(wake, f - ahead);
          continue;
        }
      }
      for (size_t i = 0; i < k; ++i) {
        const SeqHeader h{kMagic, static_cast<uint32_t>(p), seq[p] + i};
        std::memcpy(bufs[p].data() + i * size, &h, sizeof h);
      }
      auto n = socks[p].send_batch(std::span(msgs[p]).first(k));
      if (!n) die("sendmmsg to " + to[p].to_string());
      const SendReport& rep = socks[p].last_send();
      res.icmp_errors += rep.drained.icmp;
      seq[p] += *n;
      res.datagrams += *n;
      res.bytes += *n * size;
      if (rate_bps) free_at[p] = std::max(free_at[p], now) + Duration::ps(per_datagram.count_ps() * static_cast<int64_t>(*n));
      sent = sent || *n > 0;
      if (*n < k) {
        // The queue dropped the next datagram (also when the call returned
        // the ones before it: ENOBUFS after the first ends sendmmsg
        // silently), or the buffer is full. It goes again after the wait.
        ++(rep.buffer_full ? res.buffer_refusals : res.queue_refusals);
        blocked_until[p] = now + backoff;
        wake = std::min(wake, blocked_until[p]);
      }
    }
    if (!sent && wake > monotonic_now())
      std::this_thread::sleep_for(std::chrono::nanoseconds((wake - monotonic_now()).count_ps() / 1000));
    now = monotonic_now();
  }
  res.seconds = (now - start).to_s();
  return res;
}

struct RecvResult {
  uint64_t unique = 0, unique_bytes = 0, duplicates = 0, foreign = 0, missing = 0;
  double seconds = 0;                 ///< first arrival to last
  double goodput_gbps = 0;            ///< unique bytes over `seconds`
  double steady_gbps = 0;             ///< median of the interval samples, first and last left out
  std::vector<double> intervals_gbps;
  std::vector<uint64_t> plane_bytes;
};

RecvResult run_recv(const std::vector<SockAddr>& at, double max_seconds, Duration idle, Duration interval) {
  std::vector<UdpSocket> socks;
  std::vector<int> fds;
  for (const SockAddr& a : at) {
    auto s = UdpSocket::open(a, {.rcvbuf_bytes = 32 << 20, .recv_tos = false});
    if (!s) die("receiver socket on " + a.to_string());
    fds.push_back(s->fd());
    socks.push_back(std::move(*s));
  }
  RxBatch b(64, 9216);
  std::vector<std::vector<uint64_t>> seen(at.size());  // per plane: a bit per sequence number
  std::vector<uint64_t> top(at.size(), 0);             // per plane: highest sequence number + 1
  std::vector<uint64_t> interval_bytes;
  RecvResult res;
  res.plane_bytes.assign(at.size(), 0);
  const Time start = monotonic_now();
  Time first = Time::never(), last;
  // std::vector<bool> has no span.
  const std::unique_ptr<bool[]> ready(new bool[fds.size()]());
  while (true) {
    const Time now = monotonic_now();
    if (first != Time::never() && now - last > idle) break;
    if ((now - start).to_s() > max_seconds) break;
    auto r = wait_readable(fds, Duration::ms(10), std::span<bool>(ready.get(), fds.size()));
    if (!r) die("poll");
    for (size_t p = 0; p < socks.size(); ++p) {
      if (!ready[p]) continue;
      while (true) {
        auto n = socks[p].recv_batch(b);
        if (!n) {
          if (n.error() != Errc::would_block) die("recvmmsg");
          break;
        }
        const Time t = monotonic_now();
        if (first == Time::never()) first = t;
        last = t;
        const auto slot = static_cast<size_t>((t - first).count_ps() / interval.count_ps());
        if (interval_bytes.size() <= slot) interval_bytes.resize(slot + 1, 0);
        for (const RxDatagram& d : b.received()) {
          SeqHeader h{};
          if (d.data.size() >= sizeof h) std::memcpy(&h, d.data.data(), sizeof h);
          if (h.magic != kMagic || h.plane >= at.size()) {
            ++res.foreign;
            continue;
          }
          std::vector<uint64_t>& bits = seen[h.plane];
          // A bound on the bitmap (2^32 datagrams a plane: 4 TB of them).
          if (h.seq >= (uint64_t{1} << 32)) {
            ++res.foreign;
            continue;
          }
          if (bits.size() <= h.seq / 64) bits.resize(h.seq / 64 + 1024, 0);
          const uint64_t bit = uint64_t{1} << (h.seq % 64);
          if (bits[h.seq / 64] & bit) {
            ++res.duplicates;
            continue;
          }
          bits[h.seq / 64] |= bit;
          top[h.plane] = std::max(top[h.plane], h.seq + 1);
          ++res.unique;
          res.unique_bytes += d.data.size();
          res.plane_bytes[h.plane] += d.data.size();
          interval_bytes[slot] += d.data.size();
        }
      }
    }
  }
  for (size_t p = 0; p < at.size(); ++p) res.missing += top[p];
  res.missing -= std::min(res.missing, res.unique);
  res.seconds = first == Time::never() ? 0 : (last - first).to_s();
  res.goodput_gbps = res.seconds > 0 ? static_cast<double>(res.unique_bytes) * 8 / res.seconds / 1e9 : 0;
  for (uint64_t v : interval_bytes) res.intervals_gbps.push_back(static_cast<double>(v) * 8 / interval.to_s() / 1e9);
  if (res.intervals_gbps.size() > 2) {
    std::vector<double> mid(res.intervals_gbps.begin() + 1, res.intervals_gbps.end() - 1);
    std::sort(mid.begin(), mid.end());
    res.steady_gbps = mid.size() % 2 ? mid[mid.size() / 2] : (mid[mid.size() / 2 - 1] + mid[mid.size() / 2]) / 2;
  }
  return res;
}

bool write_json(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return true;
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) {
    fmt::print(stderr, "mrc_raw_udp: --json {}: cannot write\n", path);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mrc_raw_udp: raw UDP throughput and latency over loopback, and between hosts (send / recv): the reference for the soft device"};
  app.require_subcommand(1);
  std::string json_path;
  app.add_option("--json", json_path, "also write the results as JSON to this file");

  auto* bw = app.add_subcommand("bw", "sender and receiver threads, payload Gbit/s and Mpps");
  std::string method = "mmsg";
  int64_t size = 4160, burst = 8, batch = 32;
  double seconds = 5;
  bw->add_option("--method", method, "mmsg (sendmmsg batches) or gso (GSO bursts, GRO receive)")
      ->check(CLI::IsMember({"mmsg", "gso"}));
  bw->add_option("--size", size, "UDP payload bytes per datagram (1..65507)");
  bw->add_option("--burst", burst, "gso: segments per GSO send (1..64)");
  bw->add_option("--batch", batch, "datagrams (mmsg) or bursts (gso) per sendmmsg (1..64)");
  bw->add_option("--seconds", seconds, "sending time (0 < s <= 3600)");
  int64_t header_bytes = 0;
  bw->add_option("--header-bytes", header_bytes,
                 "gather each datagram from three pieces as the soft device does: this many header bytes, the "
                 "payload and a 4-byte trailer (0: one contiguous piece)");
  bool stage = false;
  bw->add_flag("--stage", stage,
               "with --header-bytes: copy each datagram's pieces into one buffer before sending it (what the soft "
               "device does with a GSO burst)");
  bool icrc = false, place = false;
  bw->add_flag("--icrc", icrc,
               "with --header-bytes: the trailer is each datagram's ICRC, computed by the sender (in the staging "
               "copy's pass with --stage) and checked by the receiver, with the soft device's own code");
  bw->add_flag("--place", place,
               "with --header-bytes: the receiver copies each datagram's payload into a 1 MiB region, as the "
               "responder places a WRITE");
  bw->add_option("--json", json_path, "also write the results as JSON to this file");

  auto* lat = app.add_subcommand("lat", "ping-pong, one-way latency = round trip / 2");
  int64_t lat_size = 64, iters = 100000;
  std::string poll_mode = "busy";
  lat->add_option("--size", lat_size, "UDP payload bytes (1..65507)");
  lat->add_option("--iters", iters, "measured round trips (1..100000000)");
  lat->add_option("--poll", poll_mode, "busy (spin on non-blocking receive) or block (poll)")
      ->check(CLI::IsMember({"busy", "block"}));
  lat->add_option("--json", json_path, "also write the results as JSON to this file");

  auto* snd = app.add_subcommand("send", "datagrams to another host over one or more planes (recv there first)");
  std::string from_list, to_list, at_list;
  int64_t port = 4791, net_size = 4140, net_batch = 16;
  uint64_t rate_bps = 0;
  double net_seconds = 5;
  snd->add_option("--to", to_list, "the receiver's address on each plane, comma-separated")->required();
  snd->add_option("--from", from_list,
                  "this host's address on each plane, as many as --to (default: the wildcard, the kernel picks)");
  snd->add_option("--port", port, "the receiver's UDP port (1..65535)");
  snd->add_option("--size", net_size,
                  "UDP payload bytes per datagram, at least 16 (the default is the soft device's 4 KiB data packet: "
                  "4096 payload, 40 header, 4 ICRC bytes)");
  snd->add_option("--seconds", net_seconds, "sending time (0 < s <= 3600)");
  snd->add_option("--rate-bps", rate_bps,
                  "pace each plane to this many bit/s, frames counted with their IP, UDP and 38 Ethernet bytes; 0 "
                  "(default): as fast as the host's egress queue takes them");
  snd->add_option("--batch", net_batch, "datagrams per sendmmsg (1..64)");
  snd->add_option("--json", json_path, "also write the results as JSON to this file");

  auto* rcv = app.add_subcommand("recv", "count the unique datagrams and bytes `send` delivers, per interval");
  int64_t idle_ms = 500, interval_ms = 250;
  double max_seconds = 60;
  rcv->add_option("--at", at_list, "this host's address on each plane, comma-separated")->required();
  rcv->add_option("--port", port, "UDP port (1..65535)");
  rcv->add_option("--idle-ms", idle_ms, "stop this long after the last datagram (1..60000)");
  rcv->add_option("--interval-ms", interval_ms, "goodput sample length (1..60000)");
  rcv->add_option("--max-seconds", max_seconds, "stop after this long in any case (0 < s <= 3600)");
  rcv->add_option("--json", json_path, "also write the results as JSON to this file");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  auto reject = [](const std::string& msg) {
    fmt::print(stderr, "mrc_raw_udp: {}\n", msg);
    return 2;
  };

  if (bw->parsed()) {
    if (size < 1 || size > static_cast<int64_t>(kMaxUdpPayload))
      return reject(fmt::format("--size {}: must be 1..{}", size, kMaxUdpPayload));
    if (batch < 1 || batch > static_cast<int64_t>(UdpSocket::kMaxBatch))
      return reject(fmt::format("--batch {}: must be 1..{}", batch, UdpSocket::kMaxBatch));
    if (method == "gso") {
      if (burst < 1 || burst > static_cast<int64_t>(UdpSocket::kMaxGsoSegments))
        return reject(fmt::format("--burst {}: must be 1..{}", burst, UdpSocket::kMaxGsoSegments));
      if (size * burst > static_cast<int64_t>(kMaxUdpPayload))
        return reject(fmt::format("--size {} x --burst {} = {} bytes: a GSO send holds at most {}", size, burst,
                                  size * burst, kMaxUdpPayload));
    }
    if (header_bytes < 0 || (header_bytes > 0 && header_bytes + 4 > size))
      return reject(fmt::format("--header-bytes {}: must be 0, or at most --size less 4 ({})", header_bytes, size - 4));
    if (header_bytes > 0 && static_cast<size_t>(method == "gso" ? burst : 1) * 3 > UdpSocket::kMaxIovPerDatagram)
      return reject(fmt::format("--header-bytes with --burst {}: a datagram holds at most {} pieces", burst,
                                UdpSocket::kMaxIovPerDatagram));
    if (stage && header_bytes == 0) return reject("--stage: needs --header-bytes (the pieces to copy together)");
    if (icrc && header_bytes < static_cast<int64_t>(wire::Bth::kSize))
      return reject(fmt::format("--icrc: --header-bytes {} is shorter than a BTH ({} bytes)", header_bytes,
                                wire::Bth::kSize));
    if (place && header_bytes == 0) return reject("--place: needs --header-bytes (the payload is what follows them)");
    if (!(seconds > 0 && seconds <= 3600)) return reject(fmt::format("--seconds {}: must be in (0, 3600]", seconds));
    const auto r = run_bw(method, static_cast<size_t>(size), static_cast<size_t>(burst), static_cast<size_t>(batch),
                          seconds, Work{static_cast<size_t>(header_bytes), stage, icrc, place});
    const double tx_gbps = static_cast<double>(r.sent_bytes) * 8 / r.send_seconds / 1e9;
    const double tx_mpps = static_cast<double>(r.sent_datagrams) / r.send_seconds / 1e6;
    const double rx_s = r.recv_seconds > 0 ? r.recv_seconds : r.send_seconds;
    const double rx_gbps = static_cast<double>(r.recv_bytes) * 8 / rx_s / 1e9;
    const double rx_mpps = static_cast<double>(r.recv_datagrams) / rx_s / 1e6;
    const uint64_t lost = r.sent_datagrams - std::min(r.sent_datagrams, r.recv_datagrams);
    fmt::print("bw method={} size={} burst={} batch={} seconds={:.1f}\n", method, size, method == "gso" ? burst : 1,
               batch, r.send_seconds);
    fmt::print("  sender:   {:8.2f} Gbit/s {:7.3f} Mpps  cpu {:5.1f}%  ({} datagrams, {} would-block)\n", tx_gbps,
               tx_mpps, 100 * r.send_cpu_s / r.send_seconds, r.sent_datagrams, r.send_would_block);
    fmt::print("  receiver: {:8.2f} Gbit/s {:7.3f} Mpps  cpu {:5.1f}%  ({} datagrams)\n", rx_gbps, rx_mpps,
               100 * r.recv_cpu_s / rx_s, r.recv_datagrams);
    fmt::print("  lost:     {} datagrams ({:.2f}%)\n", lost,
               r.sent_datagrams ? 100.0 * static_cast<double>(lost) / static_cast<double>(r.sent_datagrams) : 0.0);
    if (icrc) fmt::print("  icrc:     {} datagrams failed the check\n", r.icrc_errors);
    nlohmann::json j = {{"mode", "bw"}, {"method", method}, {"size_bytes", size},
                        {"burst", method == "gso" ? burst : 1}, {"batch", batch},
                        {"header_bytes", header_bytes}, {"stage", stage},
                        {"icrc", icrc}, {"place", place}, {"icrc_errors", r.icrc_errors},
                        {"send_seconds", r.send_seconds}, {"recv_seconds", rx_s},
                        {"sender", {{"gbps", tx_gbps}, {"mpps", tx_mpps}, {"datagrams", r.sent_datagrams},
                                    {"cpu_percent", 100 * r.send_cpu_s / r.send_seconds},
                                    {"would_block", r.send_would_block}}},
                        {"receiver", {{"gbps", rx_gbps}, {"mpps", rx_mpps}, {"datagrams", r.recv_datagrams},
                                      {"cpu_percent", 100 * r.recv_cpu_s / rx_s}}},
                        {"lost_datagrams", lost}};
    return write_json(json_path, j) ? 0 : 1;
  }

  if (snd->parsed() || rcv->parsed()) {
    if (port < 1 || port > 65535) return reject(fmt::format("--port {}: must be 1..65535", port));
    std::string bad;
    const auto to_addrs = parse_addrs(snd->parsed() ? to_list : at_list, static_cast<uint16_t>(port), bad);
    if (to_addrs.empty())
      return reject(fmt::format("{} '{}': not a numeric IPv4 or IPv6 address", snd->parsed() ? "--to" : "--at", bad));
    if (rcv->parsed()) {
      if (idle_ms < 1 || idle_ms > 60000) return reject(fmt::format("--idle-ms {}: must be 1..60000", idle_ms));
      if (interval_ms < 1 || interval_ms > 60000)
        return reject(fmt::format("--interval-ms {}: must be 1..60000", interval_ms));
      if (!(max_seconds > 0 && max_seconds <= 3600))
        return reject(fmt::format("--max-seconds {}: must be in (0, 3600]", max_seconds));
      const auto r = run_recv(to_addrs, max_seconds, Duration::ms(idle_ms), Duration::ms(interval_ms));
      fmt::print("recv planes={} interval={} ms\n", to_addrs.size(), interval_ms);
      fmt::print("  unique:   {} datagrams, {} bytes over {:.3f} s (first arrival to last)\n", r.unique, r.unique_bytes,
                 r.seconds);
      fmt::print("  goodput:  {:.4f} Gbit/s  steady {:.4f} Gbit/s (median of {} samples)\n", r.goodput_gbps,
                 r.steady_gbps, r.intervals_gbps.size() > 2 ? r.intervals_gbps.size() - 2 : 0);
      fmt::print("  missing:  {} datagrams (sequence gaps)  duplicates {}  foreign {}\n", r.missing, r.duplicates,
                 r.foreign);
      nlohmann::json j = {{"mode", "recv"}, {"planes", to_addrs.size()}, {"unique_datagrams", r.unique},
                          {"unique_bytes", r.unique_bytes}, {"seconds", r.seconds}, {"goodput_gbps", r.goodput_gbps},
                          {"steady_gbps", r.steady_gbps}, {"intervals_gbps", r.intervals_gbps},
                          {"interval_ms", interval_ms}, {"plane_bytes", r.plane_bytes}, {"missing", r.missing},
                          {"duplicates", r.duplicates}, {"foreign", r.foreign}};
      return write_json(json_path, j) ? 0 : 1;
    }
    std::vector<SockAddr> from_addrs;
    if (from_list.empty()) {
      for (const SockAddr& t : to_addrs) from_addrs.push_back(t.is_ipv6() ? SockAddr::ipv6_any(0) : SockAddr::ipv4_any(0));
    } else {
      from_addrs = parse_addrs(from_list, 0, bad);
      if (from_addrs.empty()) return reject(fmt::format("--from '{}': not a numeric IPv4 or IPv6 address", bad));
      if (from_addrs.size() != to_addrs.size())
        return reject(fmt::format("--from has {} addresses, --to {}: give one per plane to each", from_addrs.size(),
                                  to_addrs.size()));
    }
    for (size_t p = 0; p < to_addrs.size(); ++p)
      if (from_addrs[p].family() != to_addrs[p].family() || to_addrs[p].family() != to_addrs[0].family())
        return reject("--from / --to: every address must be of one family");
    if (net_size < static_cast<int64_t>(kSeqHeaderBytes) || net_size > static_cast<int64_t>(kMaxUdpPayload))
      return reject(fmt::format("--size {}: must be {}..{}", net_size, kSeqHeaderBytes, kMaxUdpPayload));
    if (net_batch < 1 || net_batch > static_cast<int64_t>(UdpSocket::kMaxBatch))
      return reject(fmt::format("--batch {}: must be 1..{}", net_batch, UdpSocket::kMaxBatch));
    if (!(net_seconds > 0 && net_seconds <= 3600))
      return reject(fmt::format("--seconds {}: must be in (0, 3600]", net_seconds));
    if (rate_bps != 0 && rate_bps < 1'000'000) return reject(fmt::format("--rate-bps {}: 0, or at least 1000000", rate_bps));
    const auto r = run_send(from_addrs, to_addrs, static_cast<size_t>(net_size), net_seconds, rate_bps,
                            static_cast<size_t>(net_batch));
    const double gbps = r.seconds > 0 ? static_cast<double>(r.bytes) * 8 / r.seconds / 1e9 : 0;
    fmt::print("send planes={} size={} rate={} seconds={:.3f}\n", to_addrs.size(), net_size,
               rate_bps ? fmt::format("{} bit/s per plane", rate_bps) : std::string("as fast as the queue takes"),
               r.seconds);
    fmt::print("  sent:     {} datagrams, {} bytes, {:.4f} Gbit/s\n", r.datagrams, r.bytes, gbps);
    fmt::print("  refused:  {} sends cut short by the egress queue (ENOBUFS), {} by a full socket buffer; {} ICMP "
               "errors\n",
               r.queue_refusals, r.buffer_refusals, r.icmp_errors);
    nlohmann::json j = {{"mode", "send"}, {"planes", to_addrs.size()}, {"size_bytes", net_size},
                        {"rate_bps", rate_bps}, {"seconds", r.seconds}, {"datagrams", r.datagrams},
                        {"bytes", r.bytes}, {"gbps", gbps}, {"queue_refusals", r.queue_refusals},
                        {"buffer_refusals", r.buffer_refusals}, {"icmp_errors", r.icmp_errors}};
    return write_json(json_path, j) ? 0 : 1;
  }

  if (lat_size < 1 || lat_size > static_cast<int64_t>(kMaxUdpPayload))
    return reject(fmt::format("--size {}: must be 1..{}", lat_size, kMaxUdpPayload));
  if (iters < 1 || iters > 100'000'000) return reject(fmt::format("--iters {}: must be 1..100000000", iters));
  const auto r = run_lat(static_cast<size_t>(lat_size), static_cast<size_t>(iters), poll_mode == "busy");
  fmt::print("lat size={} iters={} poll={}\n", lat_size, r.iters, poll_mode);
  fmt::print("  one-way (RTT/2) usec: min {:.2f}  median {:.2f}  p99 {:.2f}  mean {:.2f}\n", r.min_us, r.median_us,
             r.p99_us, r.mean_us);
  nlohmann::json j = {{"mode", "lat"}, {"size_bytes", lat_size}, {"iters", r.iters}, {"poll", poll_mode},
                      {"oneway_us", {{"min", r.min_us}, {"median", r.median_us}, {"p99", r.p99_us}, {"mean", r.mean_us}}}};
  return write_json(json_path, j) ? 0 : 1;
}
