// SPDX-License-Identifier: BSD-2-Clause
// Tests for platform/uring_sender.hpp over loopback: datagrams from several
// sockets leave in one submission, in order, with their own source ports,
// TOS bytes and GSO bursts; a bad datagram fails alone. Skipped where the
// kernel refuses io_uring (the device then sends with sendmmsg).
#include "platform/uring_sender.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "platform/epoll.hpp"
#include "platform/os_error.hpp"

namespace mrc::platform {
namespace {

constexpr Duration kWait = Duration::s(2);

struct Rx {
  std::vector<std::byte> bytes;
  uint16_t sport = 0;
  uint8_t tos = 0;
  uint16_t gro = 0;
};

std::vector<Rx> receive(UdpSocket& s, size_t want) {
  RxBatch batch(64, 65536);
  std::vector<Rx> out;
  while (out.size() < want) {
    auto n = s.recv_batch(batch);
    if (!n) {
      auto r = wait_readable(s.fd(), kWait);
      if (!r || !*r) break;
      continue;
    }
    for (const RxDatagram& d : batch.received())
      out.push_back(Rx{{d.data.begin(), d.data.end()}, d.source.port(), d.tos, d.gro_segment_bytes});
  }
  return out;
}

class UringSenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto u = UringSender::open();
    if (!u) {
      ASSERT_EQ(u.error(), Errc::not_supported) << last_error_message();
      GTEST_SKIP() << "this kernel refuses io_uring (" << last_error_message()
                   << "): the software device sends with sendmmsg here";
    }
    sender_ = std::move(*u);
  }
  UringSender sender_;
};

TEST_F(UringSenderTest, DatagramsOfSeveralSocketsLeaveInOrderWithTheirOwnSourcePorts) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(rx.ok());
  const SockAddr dest = rx->local_address();
  std::vector<UdpSocket> tx;
  for (int i = 0; i < 4; ++i) {
    auto s = UdpSocket::open(SockAddr::ipv4_loopback(0));
    ASSERT_TRUE(s.ok());
    tx.push_back(std::move(*s));
  }
  // 40 datagrams, each on socket i % 4 (a spray: no two neighbours share a
  // socket), the first byte its index; every fifth with a TOS byte.
  constexpr size_t kN = 40;
  std::vector<std::array<std::byte, 300>> payload(kN);
  std::vector<IoSlice> slices(kN);
  std::vector<TxDatagram> dgs(kN);
  std::vector<UringSender::Item> items(kN);
  for (size_t i = 0; i < kN; ++i) {
    payload[i].fill(static_cast<std::byte>(i));
    slices[i] = IoSlice{payload[i].data(), payload[i].size()};
    dgs[i] = TxDatagram{.dest = &dest, .iov = {&slices[i], 1}, .tos = static_cast<int16_t>(i % 5 == 0 ? 0xB8 : -1)};
    items[i] = {&tx[i % 4], &dgs[i]};
  }
  std::vector<int> res(kN, 12345);
  auto n = sender_.send(items, res);
  ASSERT_TRUE(n.ok()) << last_error_message();
  ASSERT_EQ(*n, kN);
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(res[i], 300) << "datagram " << i;
  const auto got = receive(*rx, kN);
  ASSERT_EQ(got.size(), kN);
  for (size_t i = 0; i < kN; ++i) {
    ASSERT_EQ(got[i].bytes.size(), 300u);
    EXPECT_EQ(got[i].bytes[0], static_cast<std::byte>(i)) << "arrived out of order at " << i;
    EXPECT_EQ(got[i].sport, tx[i % 4].local_address().port()) << "left from the wrong socket: " << i;
    EXPECT_EQ(got[i].tos, i % 5 == 0 ? 0xB8 : 0) << i;
  }
}

TEST_F(UringSenderTest, GsoBurstsOnDifferentSocketsArriveAsTheirSegments) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0), {.gro = true});
  ASSERT_TRUE(rx.ok());
  const SockAddr dest = rx->local_address();
  auto a = UdpSocket::open(SockAddr::ipv4_loopback(0));
  auto b = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<std::byte> burst(4 * 1000);
  for (size_t i = 0; i < burst.size(); ++i) burst[i] = static_cast<std::byte>(i / 1000);
  const IoSlice slice{burst.data(), burst.size()};
  const TxDatagram d{.dest = &dest, .iov = {&slice, 1}, .gso_segment_bytes = 1000};
  const UringSender::Item items[] = {{&*a, &d}, {&*b, &d}};
  int res[2] = {0, 0};
  auto n = sender_.send(items, res);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(res[0], 4000);
  EXPECT_EQ(res[1], 4000);
  const auto got = receive(*rx, 2);
  size_t segments = 0;
  for (const Rx& r : got) segments += r.gro ? r.bytes.size() / r.gro : 1;
  EXPECT_EQ(segments, 8u) << "two bursts of 4 segments";
}

TEST_F(UringSenderTest, ABadDatagramFailsAloneAndTheOthersLeave) {
  auto rx = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(rx.ok());
  const SockAddr dest = rx->local_address();
  const SockAddr v6 = SockAddr::ipv6_loopback(dest.port());
  auto s = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(s.ok());
  UdpSocket closed;  // never opened
  std::array<std::byte, 64> p{};
  const IoSlice slice{p.data(), p.size()};
  const TxDatagram good{.dest = &dest, .iov = {&slice, 1}};
  const TxDatagram wrong_family{.dest = &v6, .iov = {&slice, 1}};
  const UringSender::Item items[] = {{&*s, &good}, {&*s, &wrong_family}, {&closed, &good}, {nullptr, &good},
                                     {&*s, &good}};
  int res[5] = {};
  auto n = sender_.send(items, res);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(res[0], 64);
  EXPECT_EQ(res[1], -EINVAL) << "a destination of the other family";
  EXPECT_EQ(res[2], -EBADF) << "a socket that is not open";
  EXPECT_EQ(res[3], -EINVAL) << "no socket";
  EXPECT_EQ(res[4], 64);
  EXPECT_EQ(receive(*rx, 2).size(), 2u);
  // The sender is still usable.
  const UringSender::Item again[] = {{&*s, &good}};
  ASSERT_TRUE(sender_.send(again, std::span<int>(res, 1)).ok());
  EXPECT_EQ(res[0], 64);
  EXPECT_EQ(receive(*rx, 1).size(), 1u);
}

TEST_F(UringSenderTest, ResultsMustHoldEveryDatagram) {
  auto s = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(s.ok());
  std::array<std::byte, 8> p{};
  const IoSlice slice{p.data(), p.size()};
  const SockAddr dest = s->local_address();
  const TxDatagram d{.dest = &dest, .iov = {&slice, 1}};
  const UringSender::Item items[] = {{&*s, &d}, {&*s, &d}};
  int res[1] = {};
  auto n = sender_.send(items, std::span<int>(res, 1));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error(), Errc::invalid_argument);
}

TEST(UringSender, AClosedOrUnopenedSenderRefusesToSend) {
  UringSender never;
  const UringSender::Item items[1] = {};
  int res[1] = {};
  auto n = never.send(items, res);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error(), Errc::bad_state);
}

}  // namespace
}  // namespace mrc::platform
