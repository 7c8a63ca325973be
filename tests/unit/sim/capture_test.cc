// SPDX-License-Identifier: BSD-2-Clause
// Tests for sim/host/capture.hpp: a simulated packet serialized with the
// real codec parses back as the packet it stands for.
#include "sim/host/capture.hpp"

#include <gtest/gtest.h>

#include "wire/icrc.hpp"
#include "wire/packet.hpp"

namespace mrc::sim {
namespace {

Packet data_packet() {
  Packet p;
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_middle);
  h.bth.dest_qp = 0x1234;
  h.bth.psn = 777;
  h.reth.va = 0x10000;
  h.reth.rkey = 9;
  h.reth.dma_length = 1 << 20;
  p.hdr_len = static_cast<uint16_t>(*wire::encode(h, std::span<uint8_t>(p.hdr)));
  p.payload_len = 4096;
  p.src = 5;
  p.dst = 70000;
  p.plane = 3;
  p.entropy = 0x0002abcd;
  p.cls = Class::data;
  p.trimmable = true;
  p.ecn_capable = true;
  return p;
}

TEST(SimCapture, AddressesNameHostAndPlane) {
  const wire::IpAddress a = capture_address(0x01020304, 0x0506);
  const wire::IpAddress want = {0xfd, 0, 0x05, 0x06, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
  EXPECT_EQ(a, want);
}

TEST(SimCapture, EcmpPacketIsStevIpv6WithTheEvAndAValidIcrc) {
  const Packet p = data_packet();
  std::vector<uint8_t> f;
  ASSERT_TRUE(frame_packet(p, f).ok());
  ASSERT_EQ(f.size(), wire::kIpv6HeaderBytes + wire::kUdpHeaderBytes + p.hdr_len + p.payload_len + wire::kIcrcBytes);
  wire::FrameFormat fmt;
  fmt.mode = wire::EvMode::stev;
  auto parsed = wire::parse_frame(fmt, f);
  ASSERT_TRUE(parsed.ok()) << to_string(parsed.error());
  EXPECT_EQ(parsed->ev, p.entropy);
  EXPECT_EQ(parsed->udp_sport, 0xabcd);
  EXPECT_EQ(parsed->flow_label, 2u);
  EXPECT_EQ(parsed->src, capture_address(5, 3));
  EXPECT_EQ(parsed->dst, capture_address(70000, 3));
  EXPECT_EQ(parsed->traffic_class, 4 << 2 | 0b10);  // DSCP 4 (trimmable), ECT(0)
  EXPECT_EQ(parsed->checksum, wire::UdpChecksumState::valid);
  EXPECT_TRUE(wire::verify_icrc(f, *parsed));
  EXPECT_TRUE(std::equal(p.hdr, p.hdr + p.hdr_len, f.begin() + static_cast<ptrdiff_t>(parsed->bth_offset)));
  auto pk = wire::parse(std::span<const uint8_t>(f).subspan(parsed->bth_offset, p.hdr_len + p.payload_len));
  ASSERT_TRUE(pk.ok());
  EXPECT_EQ(pk->h.bth.psn, 777u);
  EXPECT_EQ(pk->payload_len, 4096u);
}

TEST(SimCapture, Srv6PacketCarriesTheUsidsFromTheCurrentOne) {
  Packet p = data_packet();
  p.srv6 = true;
  p.usid[0] = 0x1001;
  p.usid[1] = 0x2002;
  p.usid[2] = 0x3003;
  p.usid_pos = 1;
  p.cls = Class::control;
  p.ecn_ce = true;
  p.payload_len = 0;
  std::vector<uint8_t> f;
  ASSERT_TRUE(frame_packet(p, f).ok());
  wire::FrameFormat fmt;
  fmt.mode = wire::EvMode::srv6;
  auto parsed = wire::parse_frame(fmt, f);
  ASSERT_TRUE(parsed.ok()) << to_string(parsed.error());
  const wire::IpAddress carrier = {0xfc, 0xbb, 0xbb, 0x00, 0x20, 0x02, 0x30, 0x03, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(parsed->srv6_carrier, carrier);
  EXPECT_EQ(parsed->ev, p.entropy);
  EXPECT_EQ(parsed->dst, capture_address(70000, 3));
  EXPECT_EQ(parsed->traffic_class, 46 << 2 | 0b11);  // control, CE
  EXPECT_TRUE(wire::verify_icrc(f, *parsed));
}

TEST(SimCapture, ShortHeaderIsRefused) {
  Packet p = data_packet();
  p.hdr_len = 4;
  std::vector<uint8_t> f;
  EXPECT_EQ(frame_packet(p, f).error(), Errc::invalid_argument);
}

}  // namespace
}  // namespace mrc::sim
