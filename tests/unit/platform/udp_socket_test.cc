// SPDX-License-Identifier: BSD-2-Clause
// Tests for platform/udp_socket.hpp over loopback: round trips, gather send,
// GSO with and without GRO, TOS/ECN, batches, would-block, flow labels.
// Every wait is a poll with a timeout; nothing sleeps.
#include "platform/udp_socket.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "netns_helper.hpp"
#include "platform/clock.hpp"
#include "platform/epoll.hpp"
#include "platform/os_error.hpp"

namespace mrc::platform {
namespace {

constexpr Duration kWait = Duration::s(2);

struct Got {
  std::vector<std::byte> bytes;
  SockAddr source;
  SockAddr local;
  uint8_t tos = 0;
  bool tos_valid = false;
  uint16_t gro = 0;
  uint32_t flow_label = 0;
};

// Receives until `want` datagrams arrived or nothing came for kWait.
std::vector<Got> receive(UdpSocket& s, size_t want, size_t buffer_bytes = 65536) {
  RxBatch batch(64, buffer_bytes);
  std::vector<Got> out;
  while (out.size() < want) {
    auto n = s.recv_batch(batch);
    if (!n) {
      EXPECT_EQ(n.error(), Errc::would_block) << last_error_message();
      auto r = wait_readable(s.fd(), kWait);
      if (!r || !*r) break;
      continue;
    }
    for (const RxDatagram& d : batch.received()) {
      out.push_back(Got{{d.data.begin(), d.data.end()}, d.source, d.local, d.tos, d.tos_valid,
                        d.gro_segment_bytes, d.flow_label});
    }
  }
  return out;
}

std::vector<std::byte> pattern(size_t n, uint8_t seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
  return v;
}

Result<UdpSocket> open_v6(const UdpSocketOptions& o = {}) {
  return UdpSocket::open(SockAddr::ipv6_loopback(0), o);
}

#define SKIP_IF_NO_V6(sock)                                                          \
  if (!(sock).ok()) GTEST_SKIP() << "::1 unavailable: " << last_error_message()

TEST(PlatformUdpSocket, OpenBindsEphemeralPortAndRejectsDuplicates) {
  auto a = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(a.ok()) << last_error_message();
  EXPECT_TRUE(a->valid());
  EXPECT_NE(a->local_address().port(), 0);
  auto b = UdpSocket::open(a->local_address());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error(), Errc::busy);
  EXPECT_NE(last_error_message().find("bind"), std::string::npos);
  EXPECT_EQ(UdpSocket::open(SockAddr()).error(), Errc::invalid_argument);
  // Moving transfers the descriptor.
  UdpSocket c = std::move(*a);
  EXPECT_TRUE(c.valid());
}

TEST(PlatformUdpSocket, RoundTripIpv4) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0), {.recv_pktinfo = true});
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(rx.ok() && tx.ok()) << last_error_message();
  const auto msg = pattern(100, 1);
  auto sent = tx->send_to(rx->local_address(), msg);
  ASSERT_TRUE(sent.ok()) << last_error_message();
  EXPECT_EQ(*sent, 1u);
  auto got = receive(*rx, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, msg);
  EXPECT_EQ(got[0].source, tx->local_address());
  EXPECT_EQ(got[0].local, rx->local_address());
  EXPECT_TRUE(got[0].tos_valid);
  EXPECT_EQ(got[0].gro, 0);
}

TEST(PlatformUdpSocket, RoundTripIpv6) {
  auto rx = open_v6({.recv_pktinfo = true});
  SKIP_IF_NO_V6(rx);
  auto tx = open_v6();
  ASSERT_TRUE(tx.ok()) << last_error_message();
  const auto msg = pattern(1200, 2);
  ASSERT_EQ(*tx->send_to(rx->local_address(), msg), 1u);
  auto got = receive(*rx, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, msg);
  EXPECT_EQ(got[0].source, tx->local_address());
  EXPECT_EQ(got[0].local, rx->local_address());
  // A v4 destination on a v6 socket is a usage error on datagram 0.
  const SockAddr v4 = SockAddr::ipv4_loopback(9);
  EXPECT_EQ(tx->send_to(v4, msg).error(), Errc::invalid_argument);
}

TEST(PlatformUdpSocket, WildcardSocketReportsLocalAddressPerDatagram) {
  auto rx = UdpSocket::open(SockAddr::ipv4_any(0), {.recv_pktinfo = true});
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(rx.ok() && tx.ok()) << last_error_message();
  const uint16_t port = rx->local_address().port();
  const auto msg = pattern(10, 3);
  ASSERT_EQ(*tx->send_to(*SockAddr::parse("127.0.0.2", port), msg), 1u);
  ASSERT_EQ(*tx->send_to(*SockAddr::parse("127.0.0.3", port), msg), 1u);
  auto got = receive(*rx, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].local.to_string(), "127.0.0.2:" + std::to_string(port));
  EXPECT_EQ(got[1].local.to_string(), "127.0.0.3:" + std::to_string(port));
}

TEST(PlatformUdpSocket, GatherSendArrivesContiguous) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(rx.ok() && tx.ok());
  const auto hdr = pattern(48, 10), p0 = pattern(1000, 11), p1 = pattern(1500, 12), p2 = pattern(7, 13);
  const IoSlice iov[] = {{hdr.data(), hdr.size()}, {p0.data(), p0.size()},
                         {p1.data(), p1.size()}, {p2.data(), p2.size()}};
  const SockAddr dest = rx->local_address();
  TxDatagram d{.dest = &dest, .iov = iov};
  ASSERT_EQ(*tx->send_batch({&d, 1}), 1u);
  auto got = receive(*rx, 1);
  ASSERT_EQ(got.size(), 1u);
  std::vector<std::byte> want;
  for (const auto* v : {&hdr, &p0, &p1, &p2}) want.insert(want.end(), v->begin(), v->end());
  EXPECT_EQ(got[0].bytes, want);
}

// k GSO segments of header + payload, last one shorter.
struct GsoBurst {
  static constexpr size_t kSeg = 1400, kCount = 8, kLast = 600;
  std::vector<std::vector<std::byte>> segs;
  std::vector<IoSlice> iov;
  GsoBurst() {
    for (size_t i = 0; i < kCount; ++i) segs.push_back(pattern(i + 1 == kCount ? kLast : kSeg, static_cast<uint8_t>(i)));
    for (const auto& s : segs) {
      iov.push_back({s.data(), 40});  // "header" slice
      iov.push_back({s.data() + 40, s.size() - 40});  // "payload" slice
    }
  }
};

TEST(PlatformUdpSocket, GsoBurstArrivesCoalescedWithGro) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0), {.gro = true});
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(rx.ok() && tx.ok()) << last_error_message();
  GsoBurst b;
  const SockAddr dest = rx->local_address();
  TxDatagram d{.dest = &dest, .iov = b.iov, .gso_segment_bytes = GsoBurst::kSeg};
  auto sent = tx->send_batch({&d, 1});
  ASSERT_TRUE(sent.ok()) << last_error_message();
  ASSERT_EQ(*sent, 1u);

  RxBatch batch(4, 65536);
  ASSERT_TRUE(*wait_readable(rx->fd(), kWait));
  auto n = rx->recv_batch(batch);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 1u);
  const RxDatagram& g = batch[0];
  EXPECT_EQ(g.gro_segment_bytes, GsoBurst::kSeg);
  EXPECT_EQ(g.data.size(), GsoBurst::kSeg * (GsoBurst::kCount - 1) + GsoBurst::kLast);
  ASSERT_EQ(g.segment_count(), GsoBurst::kCount);
  size_t i = 0;
  for (std::span<std::byte> seg : g.segments()) {
    ASSERT_LT(i, b.segs.size());
    EXPECT_TRUE(seg.size() == b.segs[i].size() && std::memcmp(seg.data(), b.segs[i].data(), seg.size()) == 0)
        << "segment " << i;
    ++i;
  }
  EXPECT_EQ(i, GsoBurst::kCount);
}

TEST(PlatformUdpSocket, GsoBurstArrivesSplitWithoutGro) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(rx.ok() && tx.ok());
  GsoBurst b;
  const SockAddr dest = rx->local_address();
  TxDatagram d{.dest = &dest, .iov = b.iov, .gso_segment_bytes = GsoBurst::kSeg};
  ASSERT_EQ(*tx->send_batch({&d, 1}), 1u);
  auto got = receive(*rx, GsoBurst::kCount);
  ASSERT_EQ(got.size(), GsoBurst::kCount);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].gro, 0);
    EXPECT_EQ(got[i].bytes, b.segs[i]) << "datagram " << i;
    EXPECT_EQ(got[i].source, tx->local_address());
  }
}

TEST(PlatformUdpSocket, GsoTooManySegmentsIsInvalid) {
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(tx.ok());
  std::vector<std::byte> buf(100 * (UdpSocket::kMaxGsoSegments + 1));
  const IoSlice s{buf.data(), buf.size()};
  const SockAddr dest = SockAddr::ipv4_loopback(9);
  TxDatagram d{.dest = &dest, .iov = {&s, 1}, .gso_segment_bytes = 100};
  EXPECT_EQ(tx->send_batch({&d, 1}).error(), Errc::invalid_argument);
}

TEST(PlatformUdpSocket, TosAndEcnRoundTripIpv4) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0), {.tos = 0x2a << 2 | 0x2});  // DSCP 42, ECT(0)
  ASSERT_TRUE(rx.ok() && tx.ok()) << last_error_message();
  const auto msg = pattern(64, 4);
  const SockAddr dest = rx->local_address();
  ASSERT_EQ(*tx->send_to(dest, msg), 1u);            // socket default
  ASSERT_EQ(*tx->send_to(dest, msg, 0x01), 1u);      // ECT(1) per datagram
  ASSERT_EQ(*tx->send_to(dest, msg, 0xb8 | 0x3), 1u);  // DSCP EF + CE
  auto got = receive(*rx, 3);
  ASSERT_EQ(got.size(), 3u);
  for (const auto& g : got) EXPECT_TRUE(g.tos_valid);
  EXPECT_EQ(got[0].tos, 0x2a << 2 | 0x2);
  EXPECT_EQ(got[1].tos, 0x01);
  EXPECT_EQ(got[2].tos, 0xbb);
  EXPECT_EQ(got[2].tos & 0x3, 0x3);  // CE survives
}

TEST(PlatformUdpSocket, TclassAndEcnRoundTripIpv6) {
  auto rx = open_v6();
  SKIP_IF_NO_V6(rx);
  auto tx = open_v6();
  ASSERT_TRUE(tx.ok());
  const auto msg = pattern(64, 5);
  const SockAddr dest = rx->local_address();
  ASSERT_EQ(*tx->send_to(dest, msg, 0x03), 1u);
  ASSERT_EQ(*tx->send_to(dest, msg, 0x62), 1u);
  auto got = receive(*rx, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].tos_valid);
  EXPECT_EQ(got[0].tos, 0x03);
  EXPECT_EQ(got[1].tos, 0x62);
}

TEST(PlatformUdpSocket, BatchOf64InOneCall) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0), {.rcvbuf_bytes = 4 << 20});
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(rx.ok() && tx.ok()) << last_error_message();
  const SockAddr dest = rx->local_address();
  std::vector<std::vector<std::byte>> msgs;
  std::vector<IoSlice> slices;
  for (size_t i = 0; i < 64; ++i) msgs.push_back(pattern(200 + i, static_cast<uint8_t>(i)));
  for (const auto& m : msgs) slices.push_back({m.data(), m.size()});
  std::vector<TxDatagram> tx_batch;
  for (const auto& s : slices) tx_batch.push_back(TxDatagram{.dest = &dest, .iov = {&s, 1}});
  auto sent = tx->send_batch(tx_batch);
  ASSERT_TRUE(sent.ok()) << last_error_message();
  EXPECT_EQ(*sent, 64u);
  auto got = receive(*rx, 64, 2048);
  ASSERT_EQ(got.size(), 64u);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(got[i].bytes, msgs[i]) << i;
}

TEST(PlatformUdpSocket, RecvBatchTakesAtMostTheAskedCount) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0), {.rcvbuf_bytes = 1 << 20});
  auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(rx.ok() && tx.ok()) << last_error_message();
  const SockAddr dest = rx->local_address();
  std::vector<std::vector<std::byte>> msgs;
  for (size_t i = 0; i < 6; ++i) {
    msgs.push_back(pattern(100 + i, static_cast<uint8_t>(i)));
    auto sent = tx->send_to(dest, msgs.back());
    ASSERT_TRUE(sent.ok() && *sent == 1u) << last_error_message();
  }
  RxBatch b(64, 2048);
  std::vector<std::vector<std::byte>> got;
  // Loopback usually has all six queued by now; whatever is, no call takes
  // more than it was asked for (0 counts as 1).
  const size_t asks[] = {2, 0, SIZE_MAX};
  for (size_t call = 0; got.size() < msgs.size() && call < 100; ++call) {
    const size_t max = asks[call % 3];
    auto n = rx->recv_batch(b, max);
    if (!n) {
      ASSERT_EQ(n.error(), Errc::would_block);
      auto r = wait_readable(rx->fd(), kWait);
      ASSERT_TRUE(r.ok() && *r) << "datagrams missing";
      continue;
    }
    EXPECT_LE(*n, std::max<size_t>(max, 1)) << "asked for " << max;
    for (const RxDatagram& d : b.received()) got.emplace_back(d.data.begin(), d.data.end());
  }
  EXPECT_EQ(rx->recv_batch(b, 4).error(), Errc::would_block);
  EXPECT_EQ(got, msgs);
}

// Loopback never fills a sender's buffer (the skb is orphaned on transmit and
// dropped at a full receiver instead), so this test makes a network namespace
// of its own whose lo has a slow tbf qdisc: queued datagrams then hold the
// sender's buffer and sendmmsg reports EAGAIN/ENOBUFS, which send_batch must
// turn into "0 sent". The namespace belongs to one thread and disappears with it.
TEST(PlatformUdpSocket, FullSendBufferIsWouldBlockNotError) {
  std::string skip;
  size_t zero_returns = 0;
  std::thread t([&] {
    skip = test_support::enter_private_netns();
    if (!skip.empty()) return;
    // fork() from this thread: the child (tc) runs in this thread's namespace.
    if (std::system("tc qdisc add dev lo root tbf rate 1mbit burst 70000 limit 100000000 2>/dev/null") != 0) {
      skip = "tc (iproute2) unavailable or tbf refused";
      return;
    }
    auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0));
    auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0), {.sndbuf_bytes = 4096});
    ASSERT_TRUE(rx.ok() && tx.ok()) << last_error_message();
    const auto msg = pattern(60000, 6);
    const SockAddr dest = rx->local_address();
    for (int i = 0; i < 100 && zero_returns == 0; ++i) {
      auto r = tx->send_to(dest, msg);
      ASSERT_TRUE(r.ok()) << "iteration " << i << ": " << last_error_message();
      if (*r == 0) ++zero_returns;
    }
    // Not writable while the qdisc holds the buffer.
    EXPECT_FALSE(*wait_writable(tx->fd(), Duration()));
  });
  t.join();
  if (!skip.empty()) GTEST_SKIP() << skip;
  EXPECT_EQ(zero_returns, 1u);
}

// The packets sent (Udp OutDatagrams) and the drops the kernel reported as
// successful sends (Udp SndbufErrors) in the calling thread's namespace.
std::pair<uint64_t, uint64_t> udp_out_and_sndbuf_errors() {
  std::FILE* f = std::fopen("/proc/thread-self/net/snmp", "re");
  if (f == nullptr) return {0, 0};
  char names[1024], values[1024];
  std::pair<uint64_t, uint64_t> r{0, 0};
  while (std::fgets(names, sizeof names, f) && std::fgets(values, sizeof values, f)) {
    if (std::strncmp(names, "Udp:", 4) != 0) continue;
    std::vector<std::string> n, v;
    for (char* t = std::strtok(names, " \n"); t; t = std::strtok(nullptr, " \n")) n.emplace_back(t);
    for (char* t = std::strtok(values, " \n"); t; t = std::strtok(nullptr, " \n")) v.emplace_back(t);
    for (size_t i = 0; i < n.size() && i < v.size(); ++i) {
      if (n[i] == "OutDatagrams") r.first = std::stoull(v[i]);
      if (n[i] == "SndbufErrors") r.second = std::stoull(v[i]);
    }
    break;
  }
  std::fclose(f);
  return r;
}

// A datagram the qdisc drops is reported (ENOBUFS: 0 sent, queue_drop) only
// with recv_errors; without it the send "succeeds" and only the kernel's
// SndbufErrors counter knows. lo of a private namespace gets a tbf whose
// queue holds one 60 KB datagram and drains it at 100 kbit/s (5 s), so
// every datagram after the second is dropped while the test runs; the
// sending buffer (8 MiB) is never the limit.
TEST(PlatformUdpSocket, QdiscDropIsReportedWithRecvErrors) {
  std::string skip = test_support::in_private_netns([&](std::string& why) {
    if (std::system("tc qdisc add dev lo root tbf rate 100kbit burst 70000 limit 70000 2>/dev/null") != 0) {
      why = "tc (iproute2) unavailable or tbf refused";
      return;
    }
    auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0));
    auto quiet = UdpSocket::open(SockAddr::ipv4_loopback(0), {.sndbuf_bytes = 8 << 20});
    auto told = UdpSocket::open(SockAddr::ipv4_loopback(0), {.sndbuf_bytes = 8 << 20, .recv_errors = true});
    ASSERT_TRUE(rx.ok() && quiet.ok() && told.ok()) << last_error_message();
    EXPECT_FALSE(quiet->recv_errors());
    EXPECT_TRUE(told->recv_errors());
    const auto msg = pattern(60000, 9);
    const SockAddr dest = rx->local_address();
    const auto before = udp_out_and_sndbuf_errors();
    for (int i = 0; i < 5; ++i) {
      auto r = quiet->send_to(dest, msg);
      ASSERT_TRUE(r.ok()) << last_error_message();
      EXPECT_EQ(*r, 1u) << "datagram " << i << ": without recv_errors a qdisc drop looks like a send";
    }
    const auto after = udp_out_and_sndbuf_errors();
    EXPECT_GE(after.second - before.second, 3u) << "the kernel counted the drops it did not report";
    auto r = told->send_to(dest, msg);
    ASSERT_TRUE(r.ok()) << last_error_message();
    EXPECT_EQ(*r, 0u) << "the queue is full: dropped, and said so";
    EXPECT_TRUE(told->last_send().queue_drop);
    EXPECT_FALSE(told->last_send().buffer_full);
    EXPECT_EQ(told->last_send().drained.total(), 0u);
    EXPECT_TRUE(*wait_writable(told->fd(), Duration())) << "the socket's buffer is not what is full";
  });
  if (!skip.empty()) GTEST_SKIP() << skip;
}

// Waits (bounded) until `s` has an error queued (POLLERR).
bool error_queued(const UdpSocket& s) {
  pollfd p{s.fd(), 0, 0};
  return ::poll(&p, 1, 2000) == 1 && (p.revents & POLLERR) != 0;
}

// An ICMP port unreachable about one datagram fails the socket's next call
// with ECONNREFUSED, sending nothing. With recv_errors send_batch drains
// the error queue and sends anyway; recv_batch drains it and still hands
// over the datagrams queued behind it; and the queue is left empty, so
// epoll does not report the socket again and again (no spin).
void icmp_error_is_drained(const SockAddr& loopback) {
  auto rx = UdpSocket::open(loopback);
  auto s = UdpSocket::open(loopback, {.recv_errors = true});
  ASSERT_TRUE(rx.ok() && s.ok()) << last_error_message();
  SockAddr closed;
  {
    auto gone = UdpSocket::open(loopback);
    ASSERT_TRUE(gone.ok());
    closed = gone->local_address();
  }
  const auto msg = pattern(200, 3);
  for (int round = 0; round < 2; ++round) {
    auto r = s->send_to(closed, msg);
    ASSERT_TRUE(r.ok() && *r == 1) << last_error_message();
    ASSERT_TRUE(error_queued(*s)) << "no ICMP error for a closed port";
    if (round == 0) {
      // The send fails with the pending error first, then goes.
      auto sent = s->send_to(rx->local_address(), msg);
      ASSERT_TRUE(sent.ok()) << "the pending ICMP error failed the send: " << last_error_message();
      EXPECT_EQ(*sent, 1u);
      EXPECT_TRUE(s->last_send().retried);
      EXPECT_EQ(s->last_send().drained.icmp, 1u);
      EXPECT_EQ(s->last_send().drained.last_errno, ECONNREFUSED);
      EXPECT_EQ(receive(*rx, 1).size(), 1u);
    } else {
      // A datagram waits for `s`; the pending error does not hide it.
      auto sent = rx->send_to(s->local_address(), msg);
      ASSERT_TRUE(sent.ok() && *sent == 1) << last_error_message();
      RxBatch b(4, 4096);
      auto n = s->recv_batch(b);
      ASSERT_TRUE(n.ok()) << "the pending ICMP error failed the receive: " << last_error_message();
      EXPECT_EQ(*n, 1u);
      EXPECT_EQ(std::vector<std::byte>(b[0].data.begin(), b[0].data.end()), msg);
      EXPECT_EQ(b.errors_drained().icmp, 1u);
    }
    pollfd p{s->fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 0), 0) << "the socket still reports events (revents " << p.revents << ")";
  }
  // The error queue alone (EPOLLERR, nothing to read): an empty receive
  // drains it, so a reader woken by it is not woken again.
  ASSERT_TRUE(s->send_to(closed, msg).ok());
  ASSERT_TRUE(error_queued(*s));
  RxBatch b(4, 4096);
  auto n = s->recv_batch(b);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error(), Errc::would_block);
  EXPECT_EQ(b.errors_drained().icmp, 1u);
  pollfd p{s->fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "EPOLLERR still reported after the empty receive";
  EXPECT_EQ(s->drain_errors()->total(), 0u);
}

TEST(PlatformUdpSocket, IcmpErrorIsDrainedAndNeitherSendNorReceiveFails) {
  icmp_error_is_drained(SockAddr::ipv4_loopback(0));
}

TEST(PlatformUdpSocket, IcmpErrorIsDrainedAndNeitherSendNorReceiveFailsIpv6) {
  auto probe = open_v6();
  SKIP_IF_NO_V6(probe);
  icmp_error_is_drained(SockAddr::ipv6_loopback(0));
}

TEST(PlatformUdpSocket, ZeroChecksumOptionIpv6) {
  auto rx = open_v6({.ipv6_zero_checksum_rx = true});
  SKIP_IF_NO_V6(rx);
  auto tx = open_v6({.ipv6_zero_checksum_tx = true});
  ASSERT_TRUE(tx.ok()) << last_error_message();
  const auto msg = pattern(300, 7);
  ASSERT_EQ(*tx->send_to(rx->local_address(), msg), 1u);
  auto got = receive(*rx, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, msg);
  auto v4 = UdpSocket::open(SockAddr::ipv4_loopback(0));
  EXPECT_EQ(v4->set_ipv6_zero_checksum(true, true).error(), Errc::not_supported);
}

TEST(PlatformUdpSocket, BufferSizesAndBusyPoll) {
  auto s = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->set_rcvbuf(1 << 20).ok()) << last_error_message();
  ASSERT_TRUE(s->set_sndbuf(1 << 20).ok()) << last_error_message();
  EXPECT_GE(*s->rcvbuf_bytes(), 1 << 20);  // the kernel doubles it
  EXPECT_GE(*s->sndbuf_bytes(), 1 << 20);
  EXPECT_TRUE(s->set_busy_poll(50).ok()) << last_error_message();
}

TEST(PlatformUdpSocket, FlowLabelLeasedAndReceived) {
  auto rx = open_v6();
  SKIP_IF_NO_V6(rx);
  auto tx = open_v6();
  ASSERT_TRUE(tx.ok());
  if (!rx->set_recv_flow_label(true).ok()) GTEST_SKIP() << "IPV6_FLOWINFO: " << last_error_message();
  ASSERT_TRUE(tx->set_flowinfo_send(true).ok()) << last_error_message();
  const SockAddr dest = rx->local_address();
  // An explicit label: varied per run, since a label lingers (>= 6 s) after
  // its socket closes and re-leasing it then fails with busy (EEXIST).
  const uint32_t want = 0x10000u | static_cast<uint32_t>((monotonic_now().ps() / 1000) & 0xffff);
  auto label = tx->lease_flow_label(dest, want);
  if (!label && label.error() == Errc::busy) label = tx->lease_flow_label(dest);
  if (!label) GTEST_SKIP() << "flow label lease refused: " << last_error_message();
  EXPECT_NE(*label, 0u);
  auto any = tx->lease_flow_label(dest);  // kernel-chosen
  ASSERT_TRUE(any.ok()) << last_error_message();
  EXPECT_NE(*any, 0u);
  EXPECT_NE(*any, *label);
  // The same label again on the same socket: busy while held.
  EXPECT_EQ(tx->lease_flow_label(dest, *label).error(), Errc::busy);

  const auto msg = pattern(50, 8);
  const IoSlice s{msg.data(), msg.size()};
  TxDatagram d[2] = {{.dest = &dest, .iov = {&s, 1}, .flow_label = *label},
                     {.dest = &dest, .iov = {&s, 1}, .flow_label = *any}};
  ASSERT_EQ(*tx->send_batch(d), 2u) << last_error_message();
  auto got = receive(*rx, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].flow_label, *label);
  EXPECT_EQ(got[1].flow_label, *any);

  // An unleased label is refused.
  TxDatagram bad{.dest = &dest, .iov = {&s, 1}, .flow_label = 0x54321};
  EXPECT_EQ(tx->send_batch({&bad, 1}).error(), Errc::invalid_argument);
}

TEST(PlatformUdpSocket, RecvOnEmptySocketIsWouldBlock) {
  auto s = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(s.ok());
  RxBatch b(8, 2048);
  EXPECT_EQ(s->recv_batch(b).error(), Errc::would_block);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.capacity(), 8u);
}

// no_fragment: the datagrams leave with DF set and IPv4 identification 0 (a
// raw socket in the thread's own namespace sees the real IP header), where
// the kernel's default gives an unconnected socket a generated
// identification, which the ICRC would cover.
TEST(PlatformUdpSocket, NoFragmentSendsDfAndZeroIdentification) {
  std::vector<std::pair<uint16_t, uint16_t>> seen;  // (identification, flags) per datagram
  const std::string skip = test_support::in_private_netns([&](std::string& why) {
    const int raw = test_support::open_udp_capture(why);
    if (raw < 0) return;
    auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0));
    auto tx = UdpSocket::open(SockAddr::ipv4_loopback(0), {.no_fragment = true});
    ASSERT_TRUE(rx.ok() && tx.ok()) << last_error_message();
    const SockAddr dest = rx->local_address();
    const auto msg = pattern(4000, 9);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(tx->send_to(dest, msg).ok()) << last_error_message();
    std::vector<uint8_t> buf(70000);
    while (seen.size() < 3) {
      const ssize_t n = ::recv(raw, buf.data(), buf.size(), 0);
      if (n < 0) break;
      if (n < 28 || buf[9] != IPPROTO_UDP || ((buf[22] << 8) | buf[23]) != dest.port()) continue;
      seen.emplace_back(static_cast<uint16_t>((buf[4] << 8) | buf[5]), static_cast<uint16_t>((buf[6] << 8) | buf[7]));
    }
    ::close(raw);
  });
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_EQ(seen.size(), 3u);
  for (const auto& [id, flags] : seen) {
    EXPECT_EQ(id, 0u);
    EXPECT_EQ(flags, 0x4000u);  // DF, no fragment offset
  }
}

// no_fragment: a datagram larger than the interface's MTU is refused
// (too_big) instead of being fragmented, over IPv4 and IPv6; the same
// datagram from a default socket leaves in fragments.
TEST(PlatformUdpSocket, NoFragmentRefusesDatagramsAboveTheMtu) {
  std::vector<std::string> failures;
  const std::string skip = test_support::in_private_netns(
      [&](std::string&) {
        const auto msg = pattern(4000, 10);
        for (const SockAddr& at : {SockAddr::ipv4_loopback(0), SockAddr::ipv6_loopback(0)}) {
          auto rx = UdpSocket::open(at);
          if (!rx && at.is_ipv6()) continue;  // no IPv6 in this kernel
          auto plain = UdpSocket::open(at);
          auto df = UdpSocket::open(at, {.no_fragment = true});
          if (!rx || !plain || !df) {
            failures.push_back(at.to_string() + ": " + last_error_message());
            continue;
          }
          const SockAddr dest = rx->local_address();
          auto a = plain->send_to(dest, msg);
          if (!a || *a != 1) failures.push_back(at.to_string() + ": the default socket did not fragment");
          auto b = df->send_to(dest, msg);
          if (b || b.error() != Errc::too_big)
            failures.push_back(at.to_string() + ": no_fragment sent or failed otherwise");
          if (!df->send_to(dest, pattern(1400, 11))) failures.push_back(at.to_string() + ": a datagram that fits failed");
        }
      },
      1500);
  if (!skip.empty()) GTEST_SKIP() << skip;
  EXPECT_TRUE(failures.empty()) << failures.front();
}

// The MTU of the interface holding an address: lo's, after setting it, for
// 127.0.0.1, another 127/8 address and ::1; not_found for an address no
// interface holds.
TEST(PlatformUdpSocket, LocalInterfaceMtu) {
  std::vector<std::string> failures;
  const std::string skip = test_support::in_private_netns(
      [&](std::string&) {
        for (const char* a : {"127.0.0.1", "127.0.9.2", "::1"}) {
          auto m = local_interface_mtu(*SockAddr::parse(a));
          if (!m && std::string(a) == "::1") continue;  // no IPv6 in this kernel
          if (!m || *m != 1500)
            failures.push_back(std::string(a) + ": " + (m ? std::to_string(*m) : last_error_message()));
        }
        auto none = local_interface_mtu(*SockAddr::parse("10.99.98.97"));
        if (none || none.error() != Errc::not_found) failures.push_back("10.99.98.97: not not_found");
      },
      1500);
  if (!skip.empty()) GTEST_SKIP() << skip;
  EXPECT_TRUE(failures.empty()) << failures.front();
}

}  // namespace
}  // namespace mrc::platform
