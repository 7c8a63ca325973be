// SPDX-License-Identifier: BSD-2-Clause
// The software device's SRv6 mode over the kernel's real SRv6 data plane
// (srv6_netns.hpp): the sender's QP uses an EV profile whose EVs carry wire
// EVs (carriers through two different first uSIDs); the receiver's
// namespace shifts and decapsulates them and drops every plain MRC
// datagram, so data can only arrive encapsulated, and counters show both
// carriers carried it. Needs root, ip and nft; skips with a message
// without them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "device_fixture.hpp"
#include "srv6_netns.hpp"

namespace mrc::rt {
namespace {

using namespace fixture;

using test_support::Srv6Net;

core::WireEv carrier(uint16_t first_usid) {
  core::WireEv w;
  w.bits = 128;
  const auto a = test_support::srv6_test_carrier(first_usid);
  std::copy(a.begin(), a.end(), w.bytes.begin());
  return w;
}

DeviceConfig srv6_config(const char* plane) {
  DeviceConfig c;
  c.planes = {plane};
  c.ev_mode = EvWire::srv6;
  c.evs_per_plane = 4;
  c.seed = 7;
  return c;
}

TEST(DeviceSrv6, WritesTravelEncapsulatedOverEveryCarrierAndArriveIntact) {
  Srv6Net net({0xb1, 0xc1});
  if (!net.skip().empty()) GTEST_SKIP() << net.skip();
  Endpoint a, b;
  DeviceConfig ca = srv6_config("fd00:5::1");
  const std::string pcap = ::testing::TempDir() + "mrc-srv6-" + std::to_string(::getpid()) + ".pcap";
  ca.pcap_path = pcap;
  a.dev = open_device_in(net.a(), ca);
  b.dev = open_device_in(net.b(), srv6_config("fd00:5::2"));
  ASSERT_TRUE(a.dev && b.dev);

  // Four EVs on the plane: compact values 0x100..0x103 in the inner source
  // port, alternating between the two carriers.
  core::EvProfile p;
  auto wires = std::make_shared<std::vector<core::WireEv>>();
  for (uint32_t i = 0; i < 4; ++i) {
    p.explicit_evs.push_back(core::EvEntry{0x100 + i, 0});
    wires->push_back(carrier(i % 2 ? 0xc1 : 0xb1));
  }
  p.wire_evs = wires;
  p.active_count = 4;
  p.ev_min_active = 1;
  std::string why;
  ASSERT_TRUE(a.dev->set_ev_profile(5, p, &why).ok()) << why;

  create_resources(a, 1 << 20);
  create_resources(b, 1 << 20);
  core::QpAttr at;
  at.state = core::QpState::init;
  at.ev_profile_id = 5;
  ASSERT_TRUE(a.dev->modify_qp(a.qpn, at, core::qp_attr::kState | core::qp_attr::kEvProfileId).ok());
  const auto pa = *platform::SockAddr::parse("fd00:5::1");
  const auto pb = *platform::SockAddr::parse("fd00:5::2");
  connect_qp(a, {pb}, b.qpn, 1, 2);
  connect_qp(b, {pa}, a.qpn, 2, 1);

  fill(a.mem, 3);
  ASSERT_TRUE(a.dev->post_send(a.qpn, write(a, b, 0, 1 << 20, 1)).ok());
  const auto wcs = wait_until(a.cq, 1, Clock::now() + std::chrono::seconds(30), Idle::yield);
  ASSERT_EQ(wcs.size(), 1u) << "the WRITE did not complete";
  EXPECT_EQ(wcs[0].status, core::WcStatus::success);
  EXPECT_EQ(0, std::memcmp(a.mem.data(), b.mem.data(), a.mem.size()));
  EXPECT_EQ(b.dev->stats().rx_icrc_errors, 0u);

  // 1 MiB is 256 packets of 4 KiB: every one went through a carrier (the
  // plain path into B is dropped), and both carriers were used.
  const auto c = net.counters();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_GT(c[0], 0u) << "carrier fc00:0:b1:d0:: unused";
  EXPECT_GT(c[1], 0u) << "carrier fc00:0:c1:d0:: unused";
  EXPECT_GE(c[0] + c[1], 256u);
  std::vector<core::EvInfo> evs(4);
  ASSERT_EQ(a.dev->query_evs(a.qpn, evs), 4u);
  for (const auto& e : evs) EXPECT_GT(e.packets_sent, 0u) << "EV " << e.value;

  // A link MTU too small for a 4 KiB payload in two IPv6 headers: the
  // kernel refuses the frames (EMSGSIZE), and the device counts them.
  ASSERT_TRUE(test_support::sh("ip -n " + net.a() + " link set s6a mtu 1500"));
  EXPECT_EQ(a.dev->stats().tx_errors, 0u);
  ASSERT_TRUE(a.dev->post_send(a.qpn, write(a, b, 0, 1 << 16, 2)).ok());
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (a.dev->stats().tx_errors == 0 && Clock::now() < deadline) std::this_thread::yield();
  EXPECT_GT(a.dev->stats().tx_errors, 0u);

  // The capture holds the frames as sent: outer IPv6 (next header 41) to a
  // carrier. Records start after the 24-byte file header, 16 bytes each.
  a.dev.reset();  // flushes and closes the capture file
  {
    std::ifstream f(pcap, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t off = 24, encapsulated = 0;
    while (off + 16 + 40 <= bytes.size()) {
      const uint32_t incl = uint32_t{bytes[off + 8]} | uint32_t{bytes[off + 9]} << 8 | uint32_t{bytes[off + 10]} << 16 |
                            uint32_t{bytes[off + 11]} << 24;
      const uint8_t* ip = &bytes[off + 16];
      if (ip[6] == 41 && ip[24] == 0xfc && ip[25] == 0x00) ++encapsulated;
      off += 16 + incl;
    }
    EXPECT_GE(encapsulated, 256u) << pcap;
  }
  std::remove(pcap.c_str());
}

}  // namespace
}  // namespace mrc::rt
