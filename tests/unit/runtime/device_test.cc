// SPDX-License-Identifier: BSD-2-Clause
// The software device over real UDP sockets on loopback: two devices in one
// process, each with two planes (two loopback addresses), exchanging WRITEs
// that are verified byte for byte. Bounded by wall-clock deadlines (the
// engines run on their own threads); no sleeps.
#include "runtime/device.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <thread>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../platform/netns_helper.hpp"
#include "device_fixture.hpp"
#include "platform/udp_socket.hpp"
#include "platform/uring_sender.hpp"
#include "wire/framing.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"
#include "wire/psn.hpp"

namespace mrc::rt {
namespace {

using fixture::Clock;
using fixture::fill;
using fixture::open_device;
using fixture::write;
using Side = fixture::Endpoint;

DeviceConfig config(std::vector<std::string> planes, uint32_t burst = 1) {
  DeviceConfig c;
  c.planes = std::move(planes);
  c.udp_port = 24791;  // not 4791: a real RoCE/MRC stack on the host may own it
  c.ev_port_base = 28000;
  c.evs_per_plane = 8;
  c.burst = burst;
  c.seed = 7;
  return c;
}

/// Two devices with a connected QP pair and a registered buffer each.
struct Pair {
  Side a, b;
  /// `net` picks the loopback addresses 127.0.net.1-4: ctest runs each test
  /// as its own process, in parallel, so tests must not share addresses.
  Pair(int net, uint32_t burst = 1, size_t bytes = 1 << 20)
      : Pair(config({prefix(net) + "1", prefix(net) + "3"}, burst), config({prefix(net) + "2", prefix(net) + "4"}, burst),
             bytes) {}
  static std::string prefix(int net) { return "127.0." + std::to_string(net) + "."; }
  Pair(const DeviceConfig& ca, const DeviceConfig& cb, size_t bytes = 1 << 20) {
    a.dev = open_device(ca);
    b.dev = open_device(cb);
    if (!a.dev || !b.dev) return;
    for (Side* s : {&a, &b}) fixture::create_resources(*s, bytes);
    const uint32_t psn_a = a.dev->random_psn(), psn_b = b.dev->random_psn();
    connect(a, b, psn_a, psn_b);
    connect(b, a, psn_b, psn_a);
  }
  void connect(Side& me, Side& peer, uint32_t my_psn, uint32_t peer_psn) {
    std::vector<platform::SockAddr> planes;
    for (uint32_t p = 0; p < peer.dev->num_planes(); ++p) planes.push_back(peer.dev->plane_address(p));
    fixture::connect_qp(me, planes, peer.qpn, my_psn, peer_psn);
  }
  bool ok() const { return a.dev && b.dev; }
};

/// How a device sends data: `burst` packets per GSO burst (1 = per packet),
/// through its EV sockets or, with `raw`, one raw socket (raw_send).
struct SendPath {
  uint32_t burst = 1;
  bool raw = false;
  int net = 0;           ///< Pair::prefix's loopback net, one per test and path
  bool io_uring = true;  ///< DeviceConfig::io_uring (the default)
};
std::string send_path_name(const ::testing::TestParamInfo<SendPath>& i) {
  if (i.param.raw) return "RawPerPacket";
  return (i.param.burst == 1 ? std::string("PerPacket") : "Burst" + std::to_string(i.param.burst)) +
         (i.param.io_uring ? "" : "Sendmmsg");
}
/// Whether this kernel lets the device use io_uring (a container's seccomp
/// filter or kernel.io_uring_disabled may refuse it; the device then sends
/// with sendmmsg, and so do the io_uring paths' tests).
bool io_uring_here() { return platform::UringSender::open().ok(); }
/// raw_send needs CAP_NET_RAW: "" when this process may use it (root; CI
/// runs as root), else why the test skips.
std::string raw_send_skip(const SendPath& s) {
  if (!s.raw || ::geteuid() == 0) return "";
  return "raw_send needs CAP_NET_RAW: run as root (CI does)";
}
DeviceConfig config(std::vector<std::string> planes, const SendPath& s) {
  DeviceConfig c = config(std::move(planes), s.burst);
  c.raw_send = s.raw;
  c.io_uring = s.io_uring;
  return c;
}

/// Polls `cq` until `n` completions arrived or 20 s passed.
std::vector<core::WorkCompletion> wait(CompletionQueue* cq, size_t n) {
  return fixture::wait_until(cq, n, Clock::now() + std::chrono::seconds(20), fixture::Idle::spin);
}

class DeviceTransfer : public ::testing::TestWithParam<SendPath> {};

TEST_P(DeviceTransfer, WritesOfEverySizeArriveIntactOverTwoPlanes) {
  const SendPath& path = GetParam();
  if (const std::string skip = raw_send_skip(path); !skip.empty()) GTEST_SKIP() << skip;
  Pair p(config({Pair::prefix(path.net) + "1", Pair::prefix(path.net) + "3"}, path),
         config({Pair::prefix(path.net) + "2", Pair::prefix(path.net) + "4"}, path), 8 << 20);
  ASSERT_TRUE(p.ok());
  fill(p.a.mem, 3);
  uint64_t id = 0;
  for (uint32_t len : {1u, 7u, 4096u, 4097u, 65536u, 1u << 20, 7u << 20}) {
    std::fill(p.b.mem.begin(), p.b.mem.end(), 0);
    ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, write(p.a, p.b, 0, len, ++id)).ok());
    const auto wcs = wait(p.a.cq, 1);
    ASSERT_EQ(wcs.size(), 1u) << len << " B did not complete";
    EXPECT_EQ(wcs[0].status, core::WcStatus::success);
    EXPECT_EQ(0, std::memcmp(p.a.mem.data(), p.b.mem.data(), len)) << len << " B";
    EXPECT_EQ(p.b.mem[len], 0) << "nothing past the message";
  }
  const DeviceStats sa = p.a.dev->stats();
  const DeviceStats sb = p.b.dev->stats();
  EXPECT_EQ(sb.rx_icrc_errors, 0u);
  EXPECT_EQ(sb.rx_unknown_source, 0u);
  EXPECT_GT(sa.tx_packets, (8u << 20) / 4096);
  if (path.burst > 1) {
    EXPECT_LT(sa.tx_datagrams, sa.tx_packets) << "bursts leave as GSO super-packets";
  } else {
    EXPECT_EQ(sa.tx_datagrams, sa.tx_packets) << "one datagram per packet";
  }
  EXPECT_EQ(sa.tx_errors, 0u);
  // A spray's batches span several EV sockets: one io_uring submission each
  // where the kernel allows it (raw_send needs none: one raw socket).
  if (path.io_uring && !path.raw && io_uring_here()) {
    EXPECT_GT(sa.tx_uring_submits, 0u) << "a batch over several sockets went out in one io_uring submission";
  } else {
    EXPECT_EQ(sa.tx_uring_submits, 0u);
  }
  // Every EV of both planes carried data.
  const auto info = p.a.dev->query_qp(p.a.qpn);
  ASSERT_TRUE(info.has_value());
  ASSERT_EQ(info->evs, 16u);
  std::vector<core::EvInfo> evs(info->evs);
  ASSERT_EQ(p.a.dev->query_evs(p.a.qpn, evs), 16u);
  for (const auto& e : evs) EXPECT_GT(e.packets_sent, 0u) << "EV " << e.value << " on plane " << int{e.port};
}

INSTANTIATE_TEST_SUITE_P(Granularity, DeviceTransfer,
                         ::testing::Values(SendPath{1, false, 11}, SendPath{8, false, 12}, SendPath{1, true, 32},
                                           SendPath{1, false, 34, false}, SendPath{8, false, 35, false}),
                         send_path_name);

// The device may group a batch's datagrams by socket, but never reorder a
// QP's data against the order the core sent it: the core's loss rule counts
// later-sent packets delivered, and behind a slow bottleneck a packet moved
// 48 places back arrives milliseconds late, declared lost and its EV
// demoted (on tools/fabric's ECMP run, EV events went from 25 to 1,000).
class DeviceOrder : public ::testing::TestWithParam<SendPath> {};

TEST_P(DeviceOrder, AQpsDataLeavesInTheOrderTheCoreSentIt) {
  const SendPath& path = GetParam();
  if (const std::string skip = raw_send_skip(path); !skip.empty()) GTEST_SKIP() << skip;
  const int net = path.net;
  DeviceConfig ca = config({Pair::prefix(net) + "1", Pair::prefix(net) + "3"}, path);
  const std::string pcap = ::testing::TempDir() + "mrc-order-" + std::to_string(::getpid()) + "-" +
                           std::to_string(net) + ".pcap";
  ca.pcap_path = pcap;
  {
    Pair p(ca, config({Pair::prefix(net) + "2", Pair::prefix(net) + "4"}, path), 4 << 20);
    ASSERT_TRUE(p.ok());
    fill(p.a.mem, 4);
    for (uint64_t id = 0; id < 4; ++id)
      ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, write(p.a, p.b, id << 20, 1 << 20, id)).ok());
    ASSERT_EQ(wait(p.a.cq, 4).size(), 4u);
    EXPECT_EQ(0, std::memcmp(p.a.mem.data(), p.b.mem.data(), 4 << 20));
  }  // closing A's device flushes the capture
  std::ifstream f(pcap, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(pcap.c_str());
  // Classic pcap of raw IPv4 packets: a 24-byte file header, then 16-byte
  // record headers. A's packets (127.0.net.1 and .3) with data, in order.
  std::vector<uint32_t> psns;
  size_t foreign_sports = 0;
  for (size_t off = 24; off + 16 + 28 <= bytes.size();) {
    const size_t incl = size_t{bytes[off + 8]} | size_t{bytes[off + 9]} << 8 | size_t{bytes[off + 10]} << 16 |
                        size_t{bytes[off + 11]} << 24;
    const uint8_t* ip = &bytes[off + 16];
    off += 16 + incl;
    if (off > bytes.size() || (ip[15] != 1 && ip[15] != 3)) continue;
    const size_t l4 = size_t{ip[0] & 0x0Fu} * 4 + 8;
    if (incl < l4) continue;
    auto parsed = wire::parse(std::span<const uint8_t>(ip + l4, incl - l4));
    if (!parsed.ok() || !parsed->h.info().data) continue;
    psns.push_back(parsed->h.bth.psn);
    // The EV is the source port: one of the profile's (28000 + 16).
    const uint32_t sport = uint32_t{ip[l4 - 8]} << 8 | ip[l4 - 7];
    if (sport < 28000 || sport >= 28016) ++foreign_sports;
  }
  ASSERT_GT(psns.size(), 1000u) << "the capture holds A's data packets";
  EXPECT_EQ(foreign_sports, 0u) << "data left from a source port that is not one of its EVs";
  // First transmissions rise one by one; a retransmission (an older PSN,
  // rare on loopback) may come anywhere.
  uint32_t top = psns[0], out_of_order = 0;
  for (size_t i = 1; i < psns.size(); ++i) {
    const uint32_t d = (psns[i] - top) & wire::kPsnMask;
    if (d == 1) top = psns[i];
    else if (d != 0 && d < wire::kPsnMask / 2) ++out_of_order;
  }
  EXPECT_EQ(out_of_order, 0u) << "new data left ahead of older new data (" << psns.size() << " packets)";
}

INSTANTIATE_TEST_SUITE_P(Granularity, DeviceOrder,
                         ::testing::Values(SendPath{1, false, 30}, SendPath{8, false, 31}, SendPath{1, true, 33},
                                           SendPath{1, false, 36, false}),
                         send_path_name);

TEST(Device, WriteWithImmediateCompletesReceivesInOrder) {
  Pair p(13);
  ASSERT_TRUE(p.ok());
  fill(p.a.mem, 5);
  for (uint64_t i = 0; i < 32; ++i) ASSERT_TRUE(p.b.dev->post_recv(p.b.qpn, core::RecvWr{1000 + i}).ok());
  for (uint32_t i = 0; i < 32; ++i) {
    core::SendWr wr = write(p.a, p.b, i * 16384, 16384, i);
    wr.opcode = core::WrOpcode::rdma_write_with_imm;
    wr.imm = 0xAB00 + i;
    ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, wr).ok());
  }
  const auto sent = wait(p.a.cq, 32);
  const auto got = wait(p.b.cq, 32);
  ASSERT_EQ(sent.size(), 32u);
  ASSERT_EQ(got.size(), 32u);
  for (uint32_t i = 0; i < 32; ++i) {
    EXPECT_EQ(got[i].status, core::WcStatus::success);
    EXPECT_EQ(got[i].wr_id, 1000 + i);
    EXPECT_EQ(got[i].imm, 0xAB00 + i) << "message order";
    EXPECT_EQ(got[i].byte_len, 16384u);
  }
  EXPECT_EQ(0, std::memcmp(p.a.mem.data(), p.b.mem.data(), 32 * 16384));
}

// A polling application that receives a completion gets it before the
// iteration sends anything; the message's SACK is handed to the engine
// thread. An application that then stops polling (a server computing its
// answer) must not hold that SACK back: the writer completes tens of
// microseconds after the receiver, not after the engine's millisecond of
// deference to a driving application (or a tail probe).
TEST(Device, ASackLeftByAnApplicationThatStopsPollingStillLeaves) {
  Pair p(19);
  ASSERT_TRUE(p.ok());
  fill(p.a.mem, 9);
  std::vector<double> gaps_us;
  for (uint64_t round = 0; round < 21; ++round) {
    ASSERT_TRUE(p.b.dev->post_recv(p.b.qpn, core::RecvWr{round}).ok());
    core::SendWr wr = write(p.a, p.b, round * 4096, 2, round);
    wr.opcode = core::WrOpcode::rdma_write_with_imm;
    wr.imm = static_cast<uint32_t>(round);
    ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, wr).ok());
    // B polls until its completion, then stops polling; A's poll drives
    // only A's device.
    const auto got = wait(p.b.cq, 1);
    const auto received = Clock::now();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].imm, round);
    const auto sent = wait(p.a.cq, 1);
    gaps_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - received).count());
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].status, core::WcStatus::success);
  }
  std::sort(gaps_us.begin(), gaps_us.end());
  const double decile = gaps_us[gaps_us.size() / 10], median = gaps_us[gaps_us.size() / 2];
  std::printf("  writer's completion after the receiver's: lowest decile %.0f us, median %.0f us, max %.0f us\n",
              decile, median, gaps_us.back());
  // Measured here: median 4-39 us on the first VM, 26-60 us on the 2-core
  // AMD VM (lowest decile 18-27; 41-93 and rounds of 8-16 ms beside four
  // busy loops); every round 260 us or more with the SACK
  // left to the engine's timer slack (kAppTimerSlack), 1 ms with it left to
  // the engine's deference. The first round does wait for the deference
  // (up to a few ms): only once the engine thread has had to send a left
  // SACK are the later ones handed to it at once (Device::iterate). The
  // lowest decile, since a loaded machine (CI's sanitizer stage, or ctest
  // -j2 beside it: a lower quartile of 336 us once) only ever adds delay.
  EXPECT_LT(decile, 150.0) << "the SACK waited for the engine thread's timers";
}

TEST(Device, CorruptAndForeignDatagramsAreDroppedAndCounted) {
  Pair p(14);
  ASSERT_TRUE(p.ok());
  // A datagram from an address that is no peer, and one from the peer's
  // address whose ICRC is wrong.
  auto stranger = platform::UdpSocket::open(*platform::SockAddr::parse("127.0.14.9"));
  ASSERT_TRUE(stranger.ok());
  platform::SockAddr to = p.b.dev->plane_address(0);
  to.set_port(24791);
  std::vector<std::byte> junk(64, std::byte{0x5A});
  ASSERT_TRUE(stranger->send_to(to, junk).ok());
  platform::SockAddr from = p.a.dev->plane_address(0);
  from.set_port(45000);  // outside the device's EV ports
  auto forger = platform::UdpSocket::open(from);
  ASSERT_TRUE(forger.ok());
  ASSERT_TRUE(forger->send_to(to, junk).ok());
  const auto end = Clock::now() + std::chrono::seconds(10);
  DeviceStats s;
  do {
    s = p.b.dev->stats();
  } while ((s.rx_unknown_source < 1 || s.rx_icrc_errors < 1) && Clock::now() < end);
  EXPECT_EQ(s.rx_unknown_source, 1u);
  EXPECT_EQ(s.rx_icrc_errors, 1u);
  // The device keeps serving.
  fill(p.a.mem, 9);
  ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, write(p.a, p.b, 0, 100000, 1)).ok());
  ASSERT_EQ(wait(p.a.cq, 1).size(), 1u);
  EXPECT_EQ(0, std::memcmp(p.a.mem.data(), p.b.mem.data(), 100000));
}

TEST(Device, DestroyingAQpWithWorkOutstandingFlushesIt) {
  Pair p(15, 1, 16 << 20);
  ASSERT_TRUE(p.ok());
  for (uint64_t i = 0; i < 8; ++i)
    ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, write(p.a, p.b, i << 21, 2 << 20, i)).ok());
  ASSERT_TRUE(p.a.dev->destroy_qp(p.a.qpn).ok());
  const auto wcs = wait(p.a.cq, 8);
  ASSERT_EQ(wcs.size(), 8u);
  size_t flushed = 0;
  for (const auto& w : wcs) flushed += w.status == core::WcStatus::wr_flush_err;
  EXPECT_GE(flushed, 1u);
  EXPECT_TRUE(p.a.dev->dereg_mr(p.a.mr.lkey).ok()) << "no WR holds the region any more";
}

// IPv6 over two planes. Loopback has one IPv6 address, so the test makes a
// network namespace of its own (one thread's), brings its lo up and gives
// it fd00::1-4; the devices opened on that thread, and their engine
// threads, live in it. Needs root (CI has it); skips without. Sends 1 B,
// 4 KiB and 1 MiB from A (fd00::1, ::3) to B (fd00::2, ::4) and checks them.
void ipv6_transfer(const DeviceConfig& proto) {
  std::string skip;
  std::thread t([&] {
    skip = test_support::enter_private_netns();
    if (!skip.empty()) return;
    for (int i = 1; i <= 4; ++i) {
      // fork() from this thread: ip runs in this thread's namespace.
      const std::string cmd = "ip -6 addr add fd00::" + std::to_string(i) + "/128 dev lo nodad 2>/dev/null";
      if (std::system(cmd.c_str()) != 0) {
        skip = "ip (iproute2) unavailable or refused an address";
        return;
      }
    }
    DeviceConfig ca = proto, cb = proto;
    ca.planes = {"fd00::1", "fd00::3"};
    cb.planes = {"fd00::2", "fd00::4"};
    Pair p(ca, cb);
    ASSERT_TRUE(p.ok());
    fill(p.a.mem, 11);
    for (uint32_t len : {1u, 4096u, 1u << 20}) {
      std::fill(p.b.mem.begin(), p.b.mem.end(), 0);
      ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, write(p.a, p.b, 0, len, len)).ok());
      const auto wcs = wait(p.a.cq, 1);
      ASSERT_EQ(wcs.size(), 1u);
      EXPECT_EQ(wcs[0].status, core::WcStatus::success);
      EXPECT_EQ(0, std::memcmp(p.a.mem.data(), p.b.mem.data(), len)) << len;
    }
    EXPECT_EQ(p.b.dev->stats().rx_icrc_errors, 0u);
    EXPECT_EQ(p.a.dev->stats().tx_errors, 0u);
    std::vector<core::EvInfo> evs(16);
    ASSERT_EQ(p.a.dev->query_evs(p.a.qpn, evs), 16u);
    for (const auto& e : evs) EXPECT_GT(e.packets_sent, 0u) << "EV " << e.value;
  });
  t.join();
  if (!skip.empty()) GTEST_SKIP() << skip;
}

TEST(Device, Ipv6SteVTransfersOverTwoPlanesInAPrivateNamespace) {
  DeviceConfig c = config({}, 4);
  c.ev_mode = EvWire::stev;
  ipv6_transfer(c);
}

// raw_send over IPv6: the device writes the UDP checksum IPv6 requires (the
// receiving kernel drops a datagram whose checksum is wrong, and the
// transfer would not complete).
TEST(Device, Ipv6RawSendTransfersOverTwoPlanesInAPrivateNamespace) {
  DeviceConfig c = config({}, 1);
  c.raw_send = true;
  ipv6_transfer(c);
}

// The packets on the wire carry an ICRC that is right for their real IP
// header. The ICRC covers the IPv4 identification, which the sender's
// kernel writes: the device's sockets never fragment, so it is 0, as the
// ICRC assumes (wire::datagram_icrc). A raw socket in the thread's own
// namespace sees each datagram as it arrived; a real RoCE/MRC receiver
// would drop any that fails. Per packet, and in GSO bursts, which loopback
// carries unsegmented: each segment is checked against the header the
// super-packet's (identification 0, DF) gives it. Needs root.
void wire_icrc_is_right(uint32_t burst) {
  size_t checked = 0, bad = 0, data = 0, supers = 0;
  const std::string skip = test_support::in_private_netns([&](std::string& why) {
    const int raw = test_support::open_udp_capture(why);
    if (raw < 0) return;
    Pair p(9, burst);
    ASSERT_TRUE(p.ok());
    fill(p.a.mem, 12);
    ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, write(p.a, p.b, 0, 256 << 10, 256 << 10)).ok());
    ASSERT_EQ(wait(p.a.cq, 1).size(), 1u);
    wire::FrameFormat fmt;
    fmt.ip = wire::IpVersion::v4;
    fmt.udp_dport = 24791;
    std::vector<uint8_t> buf(70000), seg(wire::kMaxFrameHeaderBytes);
    for (;;) {
      const ssize_t n = ::recv(raw, buf.data(), buf.size(), MSG_DONTWAIT);  // all arrived before the completion
      if (n < 0) break;
      const std::span<const uint8_t> frame(buf.data(), static_cast<size_t>(n));
      auto f = wire::parse_frame(fmt, frame);
      if (!f) continue;  // not MRC (the QP exchange is TCP; nothing else runs here)
      EXPECT_EQ(buf[4] << 8 | buf[5], 0) << "IPv4 identification";
      EXPECT_EQ(buf[6] << 8 | buf[7], 0x4000) << "DF";
      const std::span<const uint8_t> udp = frame.subspan(f->bth_offset, f->udp_payload_len);
      // A datagram is one packet or a GSO burst: segments of the first
      // packet's size, the last one shorter or equal. A data packet's size
      // follows from its headers (4 KiB of payload but for a message's
      // last); a control packet has no trailing bytes, so its size is the
      // shortest that parses.
      size_t gso = 0;
      if (auto pk = wire::parse(udp.first(udp.size() - wire::kIcrcBytes)); pk && pk->payload_len > 0) {
        gso = std::min(udp.size(), pk->header_len + 4096 + wire::kIcrcBytes);
      } else {
        for (size_t len = wire::Bth::kSize + wire::kIcrcBytes; len <= udp.size() && gso == 0; len += 4)
          if (wire::parse(udp.first(len - wire::kIcrcBytes))) gso = len;
      }
      ASSERT_GT(gso, 0u) << "a datagram of " << udp.size() << " bytes that does not parse";
      supers += gso < udp.size();
      for (size_t off = 0; off < udp.size(); off += gso) {
        const size_t len = std::min(gso, udp.size() - off);
        const auto packet = udp.subspan(off, len);
        wire::FrameFields ff;
        ff.src = f->src;
        ff.dst = f->dst;
        ff.ev = f->udp_sport;
        ff.traffic_class = f->traffic_class;
        ff.hop_limit = f->hop_limit;
        auto built = wire::build_frame(fmt, ff, packet.first(wire::Bth::kSize),
                                       packet.subspan(wire::Bth::kSize, len - wire::Bth::kSize - wire::kIcrcBytes), seg);
        ASSERT_TRUE(built.ok());
        ++checked;
        data += len > 4096;
        bad += built->icrc != wire::get_icrc(packet.data() + len - wire::kIcrcBytes);
      }
    }
    ::close(raw);
    EXPECT_EQ(p.a.dev->stats().rx_icrc_errors + p.b.dev->stats().rx_icrc_errors, 0u);
  });
  if (!skip.empty()) GTEST_SKIP() << skip;
  EXPECT_GE(data, 64u) << "the 256 KiB WRITE's packets (and any resent)";
  EXPECT_GT(checked, data) << "and SACKs";
  if (burst > 1) {
    EXPECT_GT(supers, 0u) << "GSO bursts";
  }
  EXPECT_EQ(bad, 0u) << "of " << checked << " packets";
}

TEST(Device, IcrcOnTheWireIsRightPerPacket) { wire_icrc_is_right(1); }
TEST(Device, IcrcOnTheWireIsRightInGsoBursts) { wire_icrc_is_right(16); }

// Several engines: QPs are spread over them (the QPN's low bits name the
// engine) and the kernel steers each datagram to the engine of its
// destination QP. A packet steered wrong would find no QP there
// (rx_unknown_qp) and its transfer would stall.
class DeviceEngines : public ::testing::TestWithParam<uint32_t> {};

TEST_P(DeviceEngines, QpsOnEveryEngineTransferAndPacketsReachTheirEngine) {
  const uint32_t engines = GetParam();
  const std::string pre = "127.0." + std::to_string(20 + engines) + ".";
  DeviceConfig ca = config({pre + "1", pre + "3"}, 4);
  DeviceConfig cb = config({pre + "2", pre + "4"}, 4);
  ca.engines = cb.engines = engines;
  Pair p(ca, cb, 8 << 20);
  ASSERT_TRUE(p.ok());
  // More QPs on each side, connected pairwise (the Pair's own is the first).
  std::vector<std::pair<uint32_t, uint32_t>> qps{{p.a.qpn, p.b.qpn}};
  for (uint32_t i = 1; i < 2 * engines; ++i) {
    Side a2 = {}, b2 = {};
    a2.dev = std::move(p.a.dev);
    b2.dev = std::move(p.b.dev);
    core::QpInit ia, ib;
    ia.send_cq = ia.recv_cq = p.a.cq->core_id();
    ib.send_cq = ib.recv_cq = p.b.cq->core_id();
    a2.qpn = *a2.dev->create_qp(ia);
    b2.qpn = *b2.dev->create_qp(ib);
    p.connect(a2, b2, 100 + i, 200 + i);
    p.connect(b2, a2, 200 + i, 100 + i);
    qps.emplace_back(a2.qpn, b2.qpn);
    p.a.dev = std::move(a2.dev);
    p.b.dev = std::move(b2.dev);
  }
  std::vector<bool> shard_seen(engines, false);
  for (auto [qa, qb] : qps) shard_seen[qa & (engines - 1)] = true;
  for (uint32_t s = 0; s < engines; ++s) EXPECT_TRUE(shard_seen[s]) << "no QP on engine " << s;
  fill(p.a.mem, 21);
  const uint32_t slice = (8u << 20) / static_cast<uint32_t>(qps.size());
  for (size_t i = 0; i < qps.size(); ++i) {
    core::SendWr wr = write(p.a, p.b, i * slice, slice, i);
    ASSERT_TRUE(p.a.dev->post_send(qps[i].first, wr).ok());
  }
  const auto wcs = wait(p.a.cq, qps.size());
  ASSERT_EQ(wcs.size(), qps.size());
  for (const auto& w : wcs) EXPECT_EQ(w.status, core::WcStatus::success);
  EXPECT_EQ(0, std::memcmp(p.a.mem.data(), p.b.mem.data(), slice * qps.size()));
  EXPECT_EQ(p.b.dev->stats().core.rx_unknown_qp, 0u) << "every datagram reached its QP's engine";
  EXPECT_EQ(p.a.dev->stats().core.rx_unknown_qp, 0u);
}

INSTANTIATE_TEST_SUITE_P(Engines, DeviceEngines, ::testing::Values(2u, 4u));

// The device owns the CQs still alive when it goes (the asan preset's leak
// checker fails this test if it does not free them).
TEST(Device, ClosingFreesTheCqsLeftAlive) {
  auto d = open_device(config({"127.0.17.1"}));
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->create_cq(16).ok());
  auto cq = d->create_cq(1024);
  ASSERT_TRUE(cq.ok());
  ASSERT_TRUE(d->create_cq(4).ok());
  EXPECT_TRUE(d->destroy_cq(*cq).ok());
  d.reset();
}

// An application arms its CQ just before it sleeps on the channel. An
// engine thread asleep on its sockets takes the next packet anyway, so
// arming must not wake it: on 2 cores each such wake-up of a blocking
// ping-pong competed with the threads that carry the message (typical
// one-way 87 us with it, 63 us without, commit 90463bf).
TEST(Device, ArmingACqDoesNotWakeAnEngineAsleepOnItsSockets) {
  auto d = open_device(config({"127.0.23.1"}));
  ASSERT_NE(d, nullptr);
  auto cq = d->create_cq(16);
  ASSERT_TRUE(cq.ok());
  // Once idle, the engine sleeps on its sockets for up to 50 ms (kMaxSleep).
  const auto idle = [&] {
    const uint64_t s = d->stats().engine_sleeps;
    const auto until = Clock::now() + std::chrono::milliseconds(2);
    while (Clock::now() < until) {
    }
    return d->stats().engine_sleeps == s;
  };
  for (int i = 0; i < 100 && !idle(); ++i) {
  }
  const uint64_t before = d->stats().engine_sleeps;
  // 50 arms, 200 us apart: an engine woken by each would sleep again
  // between them (it wakes in tens of microseconds).
  for (int i = 0; i < 50; ++i) {
    (*cq)->arm();
    const auto next = Clock::now() + std::chrono::microseconds(200);
    while (Clock::now() < next) {
    }
  }
  const uint64_t woken = d->stats().engine_sleeps - before;
  // At most the odd kMaxSleep timeout in the 10 ms; each arm woke it before.
  EXPECT_LE(woken, 3u) << "arming a CQ woke an engine asleep on its sockets";
}

// The verbs loop of a blocking application: woken by a notification, it
// polls one completion, arms again and polls once more before it sleeps.
// An engine that publishes several completions at once (here the flush of
// four WRITEs) must look at the arm after pushing all of them: looking
// after the first only, a re-arm in between left the other three in the
// ring with nobody notified (a blocking application hung, about 1 run in
// 10 of 8 MiB of WRITEs on 2 loaded cores). The notify hook plays that
// application, deterministically, on the engine thread.
TEST(Device, AnApplicationThatReArmsWhileABatchIsPublishedIsNotified) {
  DeviceConfig ca = config({"127.0.24.1"}), cb = config({"127.0.24.2"});
  ca.app_progress = false;  // the hook polls; polls must not run the engine
  Pair p(ca, cb);
  ASSERT_TRUE(p.ok());
  // The peer's QP goes first: nothing posted below can complete but by flush.
  ASSERT_TRUE(p.b.dev->destroy_qp(p.b.qpn).ok());
  CompletionQueue* cq = p.a.cq;
  std::atomic<int> notified{0}, taken{0};
  cq->set_notify([&] {
    ++notified;
    core::WorkCompletion wc[8];
    taken += static_cast<int>(cq->poll({wc, 1}));
    cq->arm();
    taken += static_cast<int>(cq->poll(wc));
  });
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, write(p.a, p.b, i << 12, 4096, i)).ok());
  cq->arm();
  ASSERT_TRUE(p.a.dev->destroy_qp(p.a.qpn).ok());
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (taken.load() < 4 && Clock::now() < until) std::this_thread::yield();
  EXPECT_EQ(taken.load(), 4) << "completions were left in the ring of an armed CQ (" << notified.load()
                             << " notifications)";
}

// Pacing holds the sender to its planes' link rate (a lower bound on the
// time, which a loaded machine cannot break), and every packet leaves
// ECN-capable: the receiver's capture records the traffic class it got.
TEST(Device, PacingHoldsTheSenderToTheLinkRateAndPacketsLeaveEct0) {
  constexpr int kNet = 71;
  DeviceConfig ca = config({Pair::prefix(kNet) + "1", Pair::prefix(kNet) + "3"});
  DeviceConfig cb = config({Pair::prefix(kNet) + "2", Pair::prefix(kNet) + "4"});
  ca.link_rate_bps = cb.link_rate_bps = 100'000'000;  // 2 planes: 200 Mbit/s
  const std::string pcap = ::testing::TempDir() + "mrc-pace-" + std::to_string(::getpid()) + ".pcap";
  cb.pcap_path = pcap;
  constexpr uint32_t kBytes = 4 << 20;
  std::chrono::nanoseconds took{};
  DeviceStats sa;
  {
    Pair p(ca, cb, kBytes);
    ASSERT_TRUE(p.ok());
    fill(p.a.mem, 5);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, write(p.a, p.b, 0, kBytes, 1)).ok());
    ASSERT_EQ(wait(p.a.cq, 1).size(), 1u);
    took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(0, std::memcmp(p.a.mem.data(), p.b.mem.data(), kBytes));
    sa = p.a.dev->stats();
  }
  // 1,024 frames of ~4.2 KB at 200 Mbit/s: 174 ms; each plane may run
  // 64 KiB ahead of its pace.
  EXPECT_GE(took, std::chrono::milliseconds(160)) << "the sender ran faster than its links";
  EXPECT_GT(sa.tx_paced, 100u);
  std::ifstream f(pcap, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(pcap.c_str());
  size_t received = 0, ect0 = 0;
  for (size_t off = 24; off + 16 + 20 <= bytes.size();) {
    const size_t incl = size_t{bytes[off + 8]} | size_t{bytes[off + 9]} << 8 | size_t{bytes[off + 10]} << 16 |
                        size_t{bytes[off + 11]} << 24;
    const uint8_t* ip = &bytes[off + 16];
    off += 16 + incl;
    if (off > bytes.size() || (ip[15] != 1 && ip[15] != 3)) continue;  // what B received from A
    ++received;
    ect0 += (ip[1] & 3) == 2;
  }
  ASSERT_GT(received, 1000u);
  EXPECT_EQ(ect0, received) << "every packet A sent arrived ECT(0)";
}

TEST(DeviceConfig, BadValuesNameTheField) {
  std::string why;
  DeviceConfig c = config({"127.0.1.1"});
  c.burst = 0;
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("burst"), std::string::npos);
  c = config({"127.0.1.1", "::1"});
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("family"), std::string::npos);
  c = config({"not-an-address"});
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("planes"), std::string::npos);
  c = config({"127.0.1.1"});
  c.ev_port_base = 24790;  // the EV ports would include udp_port
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("ev_port_base"), std::string::npos);
  c = config({"127.0.1.1"});
  c.engines = 3;
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("engines"), std::string::npos);
  c = config({"127.0.1.1"}, 8);
  c.raw_send = true;  // raw frames are per packet: no GSO
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("raw_send"), std::string::npos);
  c = config({"::1"});
  c.raw_send = true;
  c.ev_mode = EvWire::stev;
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("raw_send"), std::string::npos);
  c = config({"127.0.1.1"});
  c.dscp_control = 64;
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("dscp_control"), std::string::npos);
  c = config({"127.0.1.1"});
  c.link_rate_bps = 999'999;
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("link_rate_bps"), std::string::npos);
  c = config({"127.0.1.1"});
  c.ev_mode = EvWire::stev;
  EXPECT_FALSE(c.validate(&why).ok());
  EXPECT_NE(why.find("ev_mode"), std::string::npos);
}

TEST(Device, ABusyAddressIsReportedWithTheSocketError) {
  auto first = open_device(config({"127.0.16.5"}));
  ASSERT_NE(first, nullptr);
  std::string why;
  auto second = Device::open(config({"127.0.16.5"}), &why);
  EXPECT_FALSE(second.ok());
  EXPECT_NE(why.find("127.0.16.5"), std::string::npos) << why;
}

// The fuzzing entry: an injected datagram meets the same checks as one
// from a socket (source, ICRC), on the engine its QPN names.
TEST(Device, InjectedDatagramsTakeTheReceivePathsChecks) {
  Pair p(74);
  ASSERT_TRUE(p.ok());
  const std::vector<uint8_t> junk(64, 0x42);
  platform::SockAddr peer = p.a.dev->plane_address(1);
  peer.set_port(28008);
  const DeviceStats before = p.b.dev->stats();
  ASSERT_TRUE(p.b.dev->inject_datagram(1, peer, junk).ok());
  platform::SockAddr stranger = *platform::SockAddr::parse("127.0.74.9:28000");
  ASSERT_TRUE(p.b.dev->inject_datagram(0, stranger, junk).ok());
  EXPECT_EQ(p.b.dev->inject_datagram(2, peer, junk).error(), Errc::invalid_argument);
  const DeviceStats after = p.b.dev->stats();
  EXPECT_EQ(after.rx_icrc_errors - before.rx_icrc_errors, 1u);
  EXPECT_EQ(after.rx_unknown_source - before.rx_unknown_source, 1u);
}

}  // namespace
}  // namespace mrc::rt
