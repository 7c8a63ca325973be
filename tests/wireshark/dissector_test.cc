// SPDX-License-Identifier: BSD-2-Clause
// tools/wireshark/mrc.lua under Debian's tshark: packets of every kind are
// built with the real codec (wire::encode, wire::build_frame), written with
// the pcap writer, decoded by tshark with the dissector, and every decoded
// field is compared with what was encoded. Skips when tshark is missing.
#include <gtest/gtest.h>

#include <algorithm>

#include "tshark.hpp"

namespace mrc::test {
namespace {

using wire::Opcode;

wire::IpAddress v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  wire::IpAddress x{};
  x[0] = a, x[1] = b, x[2] = c, x[3] = d;
  return x;
}
wire::IpAddress v6(uint16_t first, uint16_t last) {
  wire::IpAddress x{};
  x[0] = static_cast<uint8_t>(first >> 8), x[1] = static_cast<uint8_t>(first);
  x[14] = static_cast<uint8_t>(last >> 8), x[15] = static_cast<uint8_t>(last);
  return x;
}

TestPacket base(Opcode op, uint32_t psn, uint32_t ev) {
  TestPacket p;
  p.fmt.mode = wire::EvMode::udp;
  p.fmt.ip = wire::IpVersion::v4;
  p.f.src = v4(10, 0, 0, 1);
  p.f.dst = v4(10, 0, 0, 2);
  p.f.ev = ev;
  p.h.bth.opcode = static_cast<uint8_t>(op);
  p.h.bth.dest_qp = 0xabcdef;
  p.h.bth.psn = psn;
  return p;
}

constexpr wire::NackCode kNackCodes[] = {
    wire::NackCode::trimmed,       wire::NackCode::trimmed_lasthop, wire::NackCode::no_bitmap,
    wire::NackCode::no_pkt_buffer, wire::NackCode::no_resource,     wire::NackCode::psn_oor_window,
    wire::NackCode::unexp_event,
};
constexpr const char* kNackNames[] = {"TRIMMED",     "TRIMMED_LASTHOP", "NO_BITMAP",    "NO_PKT_BUFFER",
                                      "NO_RESOURCE", "PSN_OOR_WINDOW",  "UNEXP_EVENT"};

// The packets, in capture order; frame numbers are index + 1.
struct Capture {
  std::vector<TestPacket> pkts;
  size_t write_first, write_imm, sack, nack0, ack, probe, epreq, epresp, stev, srv6, truncated, rc, secure_write,
      secure_sack;
};

Capture make_capture() {
  Capture c;
  auto add = [&c](TestPacket p) {
    c.pkts.push_back(std::move(p));
    return c.pkts.size();
  };
  {
    TestPacket p = base(Opcode::write_first, 0x123456, 49153);
    p.h.bth.ack_req = true;
    p.h.meth.msn = 7;
    p.h.reth.va = 0x1122334455667788ull;
    p.h.reth.rkey = 0xdeadbeef;
    p.h.reth.dma_length = 8192;
    p.payload.assign(100, 0x5a);
    c.write_first = add(p);
  }
  {
    TestPacket p = base(Opcode::write_only_imm, 42, 49154);
    p.h.bth.ts = true;
    p.h.bth.rtx = true;
    p.h.bth.pad_count = 2;
    p.h.meth.msn = 8;
    p.h.meth.rqmsn = 3;
    p.h.tseth.timestamp = 0x4321;
    p.h.reth.va = 0x7f0000001000ull;
    p.h.reth.rkey = 0x01020304;
    p.h.reth.dma_length = 62;
    p.h.imm.imm = 0xcafef00d;
    p.payload.assign(64, 0x11);  // 62 bytes of payload and 2 of pad
    c.write_imm = add(p);
  }
  {
    TestPacket p = base(Opcode::sack, 0, 49155);
    p.h.bth.dest_qp = 0x000102;
    wire::Seth& s = p.h.seth;
    s.mark = static_cast<uint8_t>(wire::Mark::always_skip);
    s.probe_response = true;
    s.ack_psn_offset = 66;
    s.entropy = 0x12345678;
    s.src_conn = 0x1111;
    s.dst_conn = 0x2222;
    s.cack_psn = 1000;
    s.cc_type = 1;
    s.cc_flags = 2;
    s.mpr = 8;
    s.sack_offset = 2;
    s.bitmap = 0x8000000000000005ull;
    p.h.cc.reflected_ts = 555;
    p.h.cc.ooo_count = 17;
    p.h.cc.restore_cwnd = true;
    p.h.cc.rcv_cwnd_pen = 9;
    p.h.cc.rcvd_bytes = 123456;
    c.sack = add(p);
  }
  for (size_t i = 0; i < std::size(kNackCodes); ++i) {
    TestPacket p = base(Opcode::nack, 0, static_cast<uint32_t>(49160 + i));
    p.h.neth.reason = static_cast<uint8_t>(kNackCodes[i]);
    p.h.neth.nack_psn = static_cast<uint32_t>(5000 + i);
    p.h.neth.entropy = static_cast<uint32_t>(60000 + i);
    p.h.neth.reflected_ts = 77;
    const size_t n = add(p);
    if (i == 0) c.nack0 = n;
  }
  {
    TestPacket p = base(Opcode::ack, 9, 49170);
    p.h.aeth.syndrome = wire::aeth::kAckNoCredit;
    p.h.aeth.msn = 77;
    c.ack = add(p);
  }
  {
    TestPacket p = base(Opcode::probe, 0, 49171);
    p.h.peth.probe_id = 4242;
    p.h.peth.src_conn = 0x33;
    p.h.peth.timestamp = 999;
    c.probe = add(p);
  }
  {
    TestPacket p = base(Opcode::endpoint_request, 17, 49172);
    p.h.bth.dest_qp = 2;
    p.h.erth.op = static_cast<uint8_t>(wire::EpWireOp::ev_probe);
    p.h.erth.port_status_mask = 0xf;
    c.epreq = add(p);
  }
  {
    TestPacket p = base(Opcode::endpoint_response, 17, 49173);
    p.h.bth.dest_qp = 2;
    p.h.eeth.op = static_cast<uint8_t>(wire::EpWireOp::ev_probe);
    p.h.eeth.entropy = 49172;
    p.h.eeth.rx_port = 3;
    p.h.eeth.svc_time_adjusted = true;
    p.h.eeth.reflected_ts = 1234;
    c.epresp = add(p);
  }
  {
    // STEV over IPv6: EV[15:0] in the source port, EV[31:16] in the flow label.
    TestPacket p = base(Opcode::write_middle, 77, 0x0003beef);
    p.fmt.mode = wire::EvMode::stev;
    p.fmt.ip = wire::IpVersion::v6;
    p.f.src = v6(0xfd00, 1);
    p.f.dst = v6(0xfd00, 2);
    p.h.reth.va = 0x2000;
    p.h.reth.rkey = 5;
    p.h.reth.dma_length = 4096;
    p.payload.assign(256, 1);
    c.stev = add(p);
  }
  {
    // SRv6: IPv6-in-IPv6 to a uSID carrier.
    TestPacket p = base(Opcode::write_last, 78, 0x0000abcd);
    p.fmt.mode = wire::EvMode::srv6;
    p.fmt.ip = wire::IpVersion::v6;
    p.f.src = v6(0xfd00, 1);
    p.f.dst = v6(0xfd00, 2);
    p.f.srv6_carrier = v6(0xfcbb, 0);
    p.f.srv6_carrier[4] = 0x12;
    p.h.reth.va = 0x3000;
    p.h.reth.rkey = 6;
    p.h.reth.dma_length = 8192;
    p.payload.assign(128, 2);
    c.srv6 = add(p);
  }
  {
    // A SACK cut 10 bytes into its SETH.
    TestPacket p = base(Opcode::sack, 0, 49180);
    p.cut_transport = wire::Bth::kSize + 10;
    c.truncated = add(p);
  }
  {
    // A RoCEv2 RC WRITE: not MRC, handed to Wireshark's InfiniBand dissector.
    TestPacket p = base(Opcode::rc_write_only, 5, 49181);
    p.h.reth.va = 0x4000;
    p.h.reth.rkey = 7;
    p.h.reth.dma_length = 16;
    p.payload.assign(16, 3);
    c.rc = add(p);
  }
  {
    // A secure QP's WRITE (docs/security.md): BTH.sec, SECETH, then METH,
    // TSETH and RETH as usual, the payload encrypted.
    TestPacket p = base(Opcode::write_only, 91, 49182);
    p.h.bth.ts = true;
    p.h.bth.sec = true;
    p.h.sec.key_id = 3;
    p.h.sec.encrypted = true;
    p.h.sec.counter = 0x0000a1b2c3d4e5f6ull;
    p.h.sec.tag_hi = 0x0011223344556677ull;
    p.h.sec.tag_lo = 0x8899aabbccddeeffull;
    p.h.meth.msn = 12;
    p.h.tseth.timestamp = 0x2222;
    p.h.reth.va = 0x5000;
    p.h.reth.rkey = 0x0badf00d;
    p.h.reth.dma_length = 48;
    p.payload.assign(48, 0xc3);
    c.secure_write = add(p);
  }
  {
    // A secure QP's SACK: SECETH (integrity only) before SETH.
    TestPacket p = base(Opcode::sack, 0, 49183);
    p.h.bth.sec = true;
    p.h.sec.key_id = 4;
    p.h.sec.counter = 7;
    p.h.seth.cack_psn = 4321;
    p.h.cc.reflected_ts = 99;
    c.secure_sack = add(p);
  }
  return c;
}

class Dissector : public ::testing::Test {
 protected:
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  // Writes the capture and returns tshark's rows for `fields` (frame.number first).
  std::vector<std::vector<std::string>> decode(const std::string& tshark, const std::vector<std::string>& fields,
                                               const std::string& filter = "") {
    if (path_.empty()) {
      path_ = temp_pcap("all");
      write_pcap(path_, cap_.pkts);
    }
    std::vector<std::string> f = {"frame.number"};
    f.insert(f.end(), fields.begin(), fields.end());
    return tshark_fields(tshark, path_, f, filter);
  }
  // The row of frame `n` (1-based) in `rows`.
  static const std::vector<std::string>& row(const std::vector<std::vector<std::string>>& rows, size_t n) {
    static const std::vector<std::string> none(64);
    for (const auto& r : rows)
      if (num(r[0]) == n) return r;
    ADD_FAILURE() << "frame " << n << " not decoded";
    return none;
  }
  Capture cap_ = make_capture();
  std::string path_;
};

TEST_F(Dissector, DataPacketsBthMethTsethRethImmPayloadIcrc) {
  MRC_REQUIRE_TSHARK(tshark);
  const auto rows = decode(*tshark, {"mrc.bth.opcode", "mrc.bth.psn", "mrc.bth.dqpn", "mrc.bth.ackreq", "mrc.bth.rtx",
                                     "mrc.bth.ts", "mrc.bth.pad", "mrc.ev", "mrc.meth.msn", "mrc.meth.rqmsn",
                                     "mrc.tseth.timestamp", "mrc.reth.va", "mrc.reth.rkey", "mrc.reth.len",
                                     "mrc.immdt", "mrc.payload_len", "mrc.icrc", "_ws.col.Info"});
  ASSERT_EQ(rows.size(), cap_.pkts.size());
  {
    const auto& r = row(rows, cap_.write_first);
    EXPECT_EQ(num(r[1]), 0xC6u);
    EXPECT_EQ(num(r[2]), 0x123456u);
    EXPECT_EQ(num(r[3]), 0xabcdefu);
    EXPECT_TRUE(flag(r[4]));
    EXPECT_FALSE(flag(r[5]));
    EXPECT_FALSE(flag(r[6]));
    EXPECT_EQ(num(r[8]), 49153u);
    EXPECT_EQ(num(r[9]), 7u);
    EXPECT_EQ(r[11], "");  // no TSETH
    EXPECT_EQ(num(r[12]), 0x1122334455667788ull);
    EXPECT_EQ(num(r[13]), 0xdeadbeefu);
    EXPECT_EQ(num(r[14]), 8192u);
    EXPECT_EQ(r[15], "");
    EXPECT_EQ(num(r[16]), 100u);
    const auto bytes = build(cap_.pkts[cap_.write_first - 1]);
    EXPECT_EQ(num(r[17]), wire::get_icrc(bytes.data() + bytes.size() - 4));
    EXPECT_NE(r[18].find("WRITE_FIRST"), std::string::npos) << r[18];
    EXPECT_NE(r[18].find("PSN=1193046"), std::string::npos) << r[18];
  }
  {
    const auto& r = row(rows, cap_.write_imm);
    EXPECT_EQ(num(r[1]), 0xCBu);
    EXPECT_EQ(num(r[2]), 42u);
    EXPECT_TRUE(flag(r[5]));
    EXPECT_TRUE(flag(r[6]));
    EXPECT_EQ(num(r[7]), 2u);
    EXPECT_EQ(num(r[9]), 8u);
    EXPECT_EQ(num(r[10]), 3u);
    EXPECT_EQ(num(r[11]), 0x4321u);
    EXPECT_EQ(num(r[12]), 0x7f0000001000ull);
    EXPECT_EQ(num(r[13]), 0x01020304u);
    EXPECT_EQ(num(r[15]), 0xcafef00du);
    EXPECT_EQ(num(r[16]), 62u);
    EXPECT_NE(r[18].find("WRITE_ONLY_WITH_IMM"), std::string::npos) << r[18];
    EXPECT_NE(r[18].find("rtx"), std::string::npos) << r[18];
  }
  {
    const auto& r = row(rows, cap_.stev);
    EXPECT_EQ(num(r[1]), 0xC7u);
    EXPECT_EQ(num(r[2]), 77u);
    EXPECT_EQ(num(r[8]), 0xbeefu);  // the source-port part of the EV
    EXPECT_EQ(num(r[12]), 0x2000u);
    EXPECT_EQ(num(r[16]), 256u);
  }
  {
    const auto& r = row(rows, cap_.srv6);
    EXPECT_EQ(num(r[1]), 0xC8u);
    EXPECT_EQ(num(r[2]), 78u);
    EXPECT_EQ(num(r[8]), 0xabcdu);
    EXPECT_EQ(num(r[12]), 0x3000u);
    EXPECT_EQ(num(r[16]), 128u);
  }
}

TEST_F(Dissector, SecureQpPacketsShowSecethAndTheHeadersAfterIt) {
  MRC_REQUIRE_TSHARK(tshark);
  const auto rows = decode(*tshark, {"mrc.bth.sec", "mrc.seceth.key_id", "mrc.seceth.encrypted", "mrc.seceth.counter",
                                     "mrc.seceth.tag", "mrc.meth.msn", "mrc.tseth.timestamp", "mrc.reth.rkey",
                                     "mrc.payload_len", "mrc.sack.cack_psn", "mrc.ccstate.reflected_ts", "_ws.col.Info"});
  ASSERT_EQ(rows.size(), cap_.pkts.size());
  {
    const auto& r = row(rows, cap_.secure_write);
    EXPECT_TRUE(flag(r[1]));
    EXPECT_EQ(num(r[2]), 3u);
    EXPECT_TRUE(flag(r[3]));
    EXPECT_EQ(num(r[4]), 0xa1b2c3d4e5f6ull);
    std::string tag = r[5];
    tag.erase(std::remove(tag.begin(), tag.end(), ':'), tag.end());
    EXPECT_EQ(tag, "00112233445566778899aabbccddeeff");
    EXPECT_EQ(num(r[6]), 12u);
    EXPECT_EQ(num(r[7]), 0x2222u);
    EXPECT_EQ(num(r[8]), 0x0badf00du);
    EXPECT_EQ(num(r[9]), 48u);
    EXPECT_NE(r[12].find("sec ctr=177789161760246 enc"), std::string::npos) << r[12];
  }
  {
    const auto& r = row(rows, cap_.secure_sack);
    EXPECT_TRUE(flag(r[1]));
    EXPECT_EQ(num(r[2]), 4u);
    EXPECT_FALSE(flag(r[3]));
    EXPECT_EQ(num(r[4]), 7u);
    EXPECT_EQ(num(r[10]), 4321u);
    EXPECT_EQ(num(r[11]), 99u);
  }
  EXPECT_FALSE(flag(row(rows, cap_.write_first)[1])) << "plain packets: BTH.sec clear";
  EXPECT_EQ(row(rows, cap_.write_first)[2], "") << "and no SECETH";
}

TEST_F(Dissector, StevFlowLabelCarriesTheHighEvBits) {
  MRC_REQUIRE_TSHARK(tshark);
  const auto rows = decode(*tshark, {"ipv6.flow", "udp.srcport"}, "mrc.bth.psn == 77");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(num(rows[0][1]), 3u);
  EXPECT_EQ(num(rows[0][2]), 0xbeefu);
}

TEST_F(Dissector, SackFieldsBitmapAndCcState) {
  MRC_REQUIRE_TSHARK(tshark);
  const auto rows = decode(*tshark,
                           {"mrc.bth.opcode", "mrc.sack.cack_psn", "mrc.sack.ack_psn_offset", "mrc.sack.ack_psn",
                            "mrc.sack.sack_offset", "mrc.sack.base_psn", "mrc.sack.bitmap", "mrc.sack.sacked_psns",
                            "mrc.sack.mark", "mrc.sack.pr", "mrc.sack.entropy", "mrc.sack.src_conn",
                            "mrc.sack.dst_conn", "mrc.sack.cc_type", "mrc.sack.cc_flags", "mrc.sack.mpr",
                            "mrc.ccstate.reflected_ts", "mrc.ccstate.ooo_count", "mrc.ccstate.rc",
                            "mrc.ccstate.rcv_cwnd_pen", "mrc.ccstate.rcvd_bytes", "_ws.col.Info"},
                           "mrc.bth.opcode == 0xdc");
  ASSERT_EQ(rows.size(), 3u);  // the SACK, the truncated one and the secure QP's
  const auto& r = row(rows, cap_.sack);
  EXPECT_EQ(num(r[1]), 0xDCu);
  EXPECT_EQ(num(r[2]), 1000u);
  EXPECT_EQ(num(r[3]), 66u);
  EXPECT_EQ(num(r[4]), 1066u);
  EXPECT_EQ(num(r[5]), 2u);
  EXPECT_EQ(num(r[6]), 1002u);
  EXPECT_EQ(num(r[7]), 0x8000000000000005ull);
  EXPECT_EQ(r[8], "1002,1004,1065");
  EXPECT_EQ(num(r[9]), 2u);
  EXPECT_TRUE(flag(r[10]));
  EXPECT_EQ(num(r[11]), 0x12345678u);
  EXPECT_EQ(num(r[12]), 0x1111u);
  EXPECT_EQ(num(r[13]), 0x2222u);
  EXPECT_EQ(num(r[14]), 1u);
  EXPECT_EQ(num(r[15]), 2u);
  EXPECT_EQ(num(r[16]), 8u);
  EXPECT_EQ(num(r[17]), 555u);
  EXPECT_EQ(num(r[18]), 17u);
  EXPECT_TRUE(flag(r[19]));
  EXPECT_EQ(num(r[20]), 9u);
  EXPECT_EQ(num(r[21]), 123456u);
  EXPECT_NE(r[22].find("RELIABILITY_SACK"), std::string::npos) << r[22];
  EXPECT_NE(r[22].find("ALWAYS_SKIP"), std::string::npos) << r[22];
}

TEST_F(Dissector, EveryNackCodeByNameInTreeAndInfo) {
  MRC_REQUIRE_TSHARK(tshark);
  const auto rows = decode(*tshark, {"mrc.nack.code", "mrc.nack.psn", "mrc.nack.entropy", "mrc.nack.reflected_ts",
                                     "mrc.ev", "_ws.col.Info"},
                           "mrc.nack.code");
  ASSERT_EQ(rows.size(), std::size(kNackCodes));
  for (size_t i = 0; i < std::size(kNackCodes); ++i) {
    const auto& r = row(rows, cap_.nack0 + i);
    EXPECT_EQ(num(r[1]), static_cast<uint64_t>(kNackCodes[i])) << kNackNames[i];
    EXPECT_EQ(num(r[2]), 5000u + i);
    EXPECT_EQ(num(r[3]), 60000u + i);
    EXPECT_EQ(num(r[4]), 77u);
    EXPECT_EQ(num(r[5]), 49160u + i);
    EXPECT_NE(r[6].find(std::string("RELIABILITY_NACK ") + "QP=0xabcdef PSN=0 " + kNackNames[i]), std::string::npos)
        << r[6];
  }
  // A filter by name works as Wireshark users write it.
  const auto trimmed = decode(*tshark, {"mrc.nack.psn"}, "mrc.nack.code == 0x02");
  ASSERT_EQ(trimmed.size(), 1u);
  EXPECT_EQ(num(trimmed[0][1]), 5001u);
}

TEST_F(Dissector, AckProbeAndEndpointOperations) {
  MRC_REQUIRE_TSHARK(tshark);
  const auto rows =
      decode(*tshark, {"mrc.aeth.syndrome", "mrc.aeth.msn", "mrc.probe.id", "mrc.probe.src_conn", "mrc.probe.timestamp",
                       "mrc.epreq.op", "mrc.epreq.port_status_mask", "mrc.epresp.op", "mrc.epresp.entropy",
                       "mrc.epresp.rx_port", "mrc.epresp.svc_time_adjusted", "mrc.epresp.reflected_ts", "mrc.bth.dqpn",
                       "_ws.col.Info"});
  {
    const auto& r = row(rows, cap_.ack);
    EXPECT_EQ(num(r[1]), 0x1Fu);
    EXPECT_EQ(num(r[2]), 77u);
    EXPECT_NE(r[14].find("ACKNOWLEDGE"), std::string::npos) << r[14];
  }
  {
    const auto& r = row(rows, cap_.probe);
    EXPECT_EQ(num(r[3]), 4242u);
    EXPECT_EQ(num(r[4]), 0x33u);
    EXPECT_EQ(num(r[5]), 999u);
    EXPECT_NE(r[14].find("RELIABILITY_PROBE"), std::string::npos) << r[14];
  }
  {
    const auto& r = row(rows, cap_.epreq);
    EXPECT_EQ(num(r[6]), 1u);
    EXPECT_EQ(num(r[7]), 0xfu);
    EXPECT_EQ(num(r[13]), 2u);
    EXPECT_NE(r[14].find("ENDPOINT_REQUEST"), std::string::npos) << r[14];
    EXPECT_NE(r[14].find("EV_PROBE"), std::string::npos) << r[14];
  }
  {
    const auto& r = row(rows, cap_.epresp);
    EXPECT_EQ(num(r[8]), 1u);
    EXPECT_EQ(num(r[9]), 49172u);
    EXPECT_EQ(num(r[10]), 3u);
    EXPECT_TRUE(flag(r[11]));
    EXPECT_EQ(num(r[12]), 1234u);
  }
}

TEST_F(Dissector, ExpertInfoOnlyOnTheTruncatedHeader) {
  MRC_REQUIRE_TSHARK(tshark);
  const auto bad = decode(*tshark, {"mrc.bth.opcode"}, "mrc.truncated");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(num(bad[0][0]), cap_.truncated);
  // No other frame has an error-level expert item or a malformed mark.
  const auto errors = decode(*tshark, {}, "_ws.expert.severity == error || _ws.malformed");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(num(errors[0][0]), cap_.truncated);
}

TEST_F(Dissector, RoceRcTrafficStaysWithTheInfinibandDissector) {
  MRC_REQUIRE_TSHARK(tshark);
  const auto rows = decode(*tshark, {"frame.protocols", "mrc.bth.opcode"}, "frame.number == " + std::to_string(cap_.rc));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0][1].find("infiniband"), std::string::npos) << rows[0][1];
  EXPECT_EQ(rows[0][2], "");
  // Every MRC frame is MRC's, on the default port 4791.
  const auto mrc_frames = decode(*tshark, {}, "mrc");
  EXPECT_EQ(mrc_frames.size(), cap_.pkts.size() - 1);
}

TEST_F(Dissector, OtherPortsThroughDecodeAsAndTheHeuristic) {
  MRC_REQUIRE_TSHARK(tshark);
  // The same packets on port 5000: no port registration applies.
  for (auto& p : cap_.pkts) p.fmt.udp_dport = 5000;
  path_ = temp_pcap("port5000");
  write_pcap(path_, cap_.pkts);
  // The heuristic takes the MRC frames that are whole (not the truncated
  // one, not the RC one).
  EXPECT_EQ(tshark_fields(*tshark, path_, {"frame.number"}, "mrc").size(), cap_.pkts.size() - 2);
  // Decode As (here: tshark -d) takes them all but the RC one (handed to
  // InfiniBand there too), and the port preference too.
  int status = 0;
  const std::string base_cmd = "'" + *tshark + "' -n -X lua_script:'" + dissector_path() + "' -r '" + path_ + "' ";
  const std::string da = run(base_cmd + "-d udp.port==5000,mrc -Y mrc -T fields -e frame.number 2>/dev/null", &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(std::count(da.begin(), da.end(), '\n'), static_cast<long>(cap_.pkts.size() - 1));
  const std::string pref =
      run(base_cmd + "-o mrc.udp_port:5000 -Y mrc.truncated -T fields -e frame.number 2>/dev/null", &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(num(pref), cap_.truncated);
}

}  // namespace
}  // namespace mrc::test
