// SPDX-License-Identifier: BSD-2-Clause
// Tests for wire/packet.hpp: the opcode table, header_size, encode and parse
// of every opcode, and every error parse() documents.
#include "wire/packet.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace mrc::wire {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr Opcode kData[] = {Opcode::write_first, Opcode::write_middle,   Opcode::write_last,
                            Opcode::write_last_imm, Opcode::write_only, Opcode::write_only_imm};
constexpr Opcode kControl[] = {Opcode::ack,  Opcode::endpoint_request, Opcode::endpoint_response,
                               Opcode::sack, Opcode::nack,             Opcode::probe};
// The RoCEv2 RC baseline's opcodes (IBTA RC + the RoCEv2 CNP).
constexpr Opcode kRcData[] = {Opcode::rc_write_first,    Opcode::rc_write_middle, Opcode::rc_write_last,
                              Opcode::rc_write_last_imm, Opcode::rc_write_only,   Opcode::rc_write_only_imm};
constexpr Opcode kRcControl[] = {Opcode::rc_ack, Opcode::cnp};

// Distinctive values in every header so a mixed-up member shows.
Headers make(Opcode op, bool ts = false) {
  Headers h;
  h.bth.opcode = static_cast<uint8_t>(op);
  h.bth.pkey = 0xFFFF;
  h.bth.dest_qp = 0x123456;
  h.bth.ack_req = true;
  h.bth.ts = ts;
  h.bth.psn = 0xABCDEF;
  h.meth.rqmsn = 0x0102;
  h.meth.msn = 0x0304;
  h.tseth.timestamp = 0x0506;
  h.reth.va = 0x1122334455667788ull;
  h.reth.rkey = 0x99AABBCC;
  h.reth.dma_length = 1 << 20;
  h.imm.imm = 0xDDEEFF00;
  h.aeth.syndrome = aeth::kAckNoCredit;
  h.aeth.msn = 0x0A0B0C;
  h.seth.mark = 1;
  h.seth.ack_psn_offset = -5;
  h.seth.entropy = 0xE0E1E2E3;
  h.seth.cack_psn = 0x00F00D;
  h.seth.sack_offset = 64;
  h.seth.bitmap = 0xF0F0F0F0F0F0F0F0ull;
  h.cc.reflected_ts = 0x0506;
  h.cc.ooo_count = 3;
  h.cc.rcvd_bytes = 0x123;
  h.neth.reason = static_cast<uint8_t>(NackCode::trimmed);
  h.neth.nack_psn = 0xABCDEF;
  h.neth.entropy = 0x0BADF00D;
  h.peth.probe_id = 0x7777;
  h.peth.timestamp = 0x0506;
  h.erth.op = static_cast<uint8_t>(EpWireOp::port_status_update);
  h.erth.port_status_mask = 0xFF;
  h.eeth.op = 1;
  h.eeth.rx_port = 3;
  h.eeth.entropy = 0x31415926;
  return h;
}

Bytes enc(const Headers& h) {
  Bytes b(kMaxHeaderBytes, 0);
  auto n = encode(h, b);
  EXPECT_TRUE(n.ok()) << to_string(n.error());
  b.resize(n.ok() ? *n : 0);
  return b;
}

// Expected chain length per opcode, from the reference's header sizes.
size_t expected_size(Opcode op, bool ts) {
  switch (op) {
    case Opcode::write_first:
    case Opcode::write_middle:
    case Opcode::write_last:
    case Opcode::write_only: return 12 + 4 + (ts ? 4 : 0) + 16;
    case Opcode::write_last_imm:
    case Opcode::write_only_imm: return 12 + 4 + (ts ? 4 : 0) + 16 + 4;
    case Opcode::ack: return 12 + 4;
    case Opcode::endpoint_request: return 12 + 16;
    case Opcode::endpoint_response: return 12 + 36;
    case Opcode::sack: return 12 + 28 + 8;
    case Opcode::nack: return 12 + 20;
    case Opcode::probe: return 12 + 16;
    // IBTA RC: RETH on FIRST/ONLY only, never METH/TSETH (BTH.ts ignored).
    case Opcode::rc_write_first:
    case Opcode::rc_write_only: return 12 + 16;
    case Opcode::rc_write_only_imm: return 12 + 16 + 4;
    case Opcode::rc_write_middle:
    case Opcode::rc_write_last: return 12;
    case Opcode::rc_write_last_imm: return 12 + 4;
    case Opcode::rc_ack: return 12 + 4;
    case Opcode::cnp: return 12 + 16;
  }
  return 0;
}

Bytes with_payload(Bytes b, size_t n) {
  for (size_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(i * 7 + 1));
  return b;
}

Errc parse_error(const Bytes& b) {
  auto r = parse(b);
  return r.ok() ? Errc::ok : r.error();
}

TEST(OpcodeTable, Rows) {
  struct Row {
    Opcode op;
    bool data, first, last, imm;
    ExtHeader ext;
    const char* name;
  };
  const Row rows[] = {
      {Opcode::write_first, true, true, false, false, ExtHeader::none, "WRITE_FIRST"},
      {Opcode::write_middle, true, false, false, false, ExtHeader::none, "WRITE_MIDDLE"},
      {Opcode::write_last, true, false, true, false, ExtHeader::none, "WRITE_LAST"},
      {Opcode::write_last_imm, true, false, true, true, ExtHeader::none, "WRITE_LAST_WITH_IMM"},
      {Opcode::write_only, true, true, true, false, ExtHeader::none, "WRITE_ONLY"},
      {Opcode::write_only_imm, true, true, true, true, ExtHeader::none, "WRITE_ONLY_WITH_IMM"},
      {Opcode::ack, false, false, false, false, ExtHeader::aeth, "ACKNOWLEDGE"},
      {Opcode::endpoint_request, false, false, false, false, ExtHeader::erth, "ENDPOINT_REQUEST"},
      {Opcode::endpoint_response, false, false, false, false, ExtHeader::eeth, "ENDPOINT_RESPONSE"},
      {Opcode::sack, false, false, false, false, ExtHeader::seth, "RELIABILITY_SACK"},
      {Opcode::nack, false, false, false, false, ExtHeader::neth, "RELIABILITY_NACK"},
      {Opcode::probe, false, false, false, false, ExtHeader::peth, "RELIABILITY_PROBE"},
      // The RoCEv2 RC baseline's opcodes (their header flags: RcOpcodeTable).
      {Opcode::rc_write_first, true, true, false, false, ExtHeader::none, "RC_RDMA_WRITE_FIRST"},
      {Opcode::rc_write_middle, true, false, false, false, ExtHeader::none, "RC_RDMA_WRITE_MIDDLE"},
      {Opcode::rc_write_last, true, false, true, false, ExtHeader::none, "RC_RDMA_WRITE_LAST"},
      {Opcode::rc_write_last_imm, true, false, true, true, ExtHeader::none, "RC_RDMA_WRITE_LAST_WITH_IMM"},
      {Opcode::rc_write_only, true, true, true, false, ExtHeader::none, "RC_RDMA_WRITE_ONLY"},
      {Opcode::rc_write_only_imm, true, true, true, true, ExtHeader::none, "RC_RDMA_WRITE_ONLY_WITH_IMM"},
      {Opcode::rc_ack, false, false, false, false, ExtHeader::aeth, "RC_ACKNOWLEDGE"},
      {Opcode::cnp, false, false, false, false, ExtHeader::cnp, "CNP"},
  };
  std::set<uint8_t> valid;
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const OpcodeInfo& i = opcode_info(static_cast<uint8_t>(r.op));
    EXPECT_TRUE(i.valid);
    EXPECT_EQ(i.data, r.data);
    EXPECT_EQ(i.first, r.first);
    EXPECT_EQ(i.last, r.last);
    EXPECT_EQ(i.imm, r.imm);
    EXPECT_EQ(i.ext, r.ext);
    EXPECT_EQ(i.name, r.name);
    valid.insert(static_cast<uint8_t>(r.op));
  }
  // Numeric values (reference 3.3).
  EXPECT_EQ(static_cast<uint8_t>(Opcode::write_first), 0xC6);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::write_only_imm), 0xCB);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::ack), 0xD1);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::endpoint_request), 0xD8);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::endpoint_response), 0xD9);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::sack), 0xDC);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::nack), 0xDD);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::probe), 0xDE);
  for (unsigned op = 0; op < 256; ++op) {
    if (!valid.count(static_cast<uint8_t>(op))) {
      EXPECT_FALSE(opcode_info(static_cast<uint8_t>(op)).valid) << op;
    }
  }
}

TEST(Packet, HeaderSizeAndEncodeAgree) {
  size_t largest = 0;
  for (Opcode op : kData) {
    for (bool ts : {false, true}) {
      SCOPED_TRACE(::testing::Message() << opcode_info(static_cast<uint8_t>(op)).name << " ts=" << ts);
      const Headers h = make(op, ts);
      EXPECT_EQ(header_size(h), expected_size(op, ts));
      EXPECT_LE(header_size(h), kMaxHeaderBytes);
      EXPECT_EQ(enc(h).size(), header_size(h));
      largest = std::max(largest, header_size(h));
    }
  }
  for (Opcode op : kControl) {
    for (bool ts : {false, true}) {  // BTH.ts does not change a control chain
      SCOPED_TRACE(opcode_info(static_cast<uint8_t>(op)).name);
      const Headers h = make(op, ts);
      EXPECT_EQ(header_size(h), expected_size(op, false));
      EXPECT_LE(header_size(h), kMaxHeaderBytes);
      EXPECT_EQ(enc(h).size(), header_size(h));
      largest = std::max(largest, header_size(h));
    }
  }
  EXPECT_EQ(largest, 48u);  // SACK and ENDPOINT_RESPONSE
}

TEST(Packet, EncodeKnownAnswerWriteOnlyImmWithTs) {
  Headers h;
  h.bth.opcode = 0xCB;
  h.bth.pkey = 0xFFFF;
  h.bth.dest_qp = 0x000010;
  h.bth.ts = true;
  h.bth.psn = 0x000100;
  h.meth.rqmsn = 0x0001;
  h.meth.msn = 0x0002;
  h.tseth.timestamp = 0x0003;
  h.reth.va = 0x1000;
  h.reth.rkey = 0x42;
  h.reth.dma_length = 8;
  h.imm.imm = 0x01020304;
  const Bytes want = {
      0xCB, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x10, 0x10, 0x00, 0x01, 0x00,  // BTH (ts=0x10)
      0x00, 0x01, 0x00, 0x02,                                                  // METH
      0x00, 0x03, 0x00, 0x01,                                                  // TSETH (format 1)
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,                          // RETH va
      0x00, 0x00, 0x00, 0x42, 0x00, 0x00, 0x00, 0x08,                          // rkey, dma_length
      0x01, 0x02, 0x03, 0x04,                                                  // ImmDt
  };
  EXPECT_EQ(enc(h), want);
  auto p = parse(with_payload(want, 8));
  ASSERT_TRUE(p.ok()) << to_string(p.error());
  EXPECT_EQ(p->header_len, 40u);
  EXPECT_EQ(p->payload_len, 8u);
  EXPECT_EQ(p->h.imm.imm, 0x01020304u);
  EXPECT_EQ(p->h.tseth.timestamp, 3);
}

TEST(Packet, EncodeKnownAnswerSack) {
  Headers h;
  h.bth.opcode = 0xDC;
  h.bth.pkey = 0xFFFF;
  h.bth.dest_qp = 0x000011;
  h.bth.psn = 0;
  h.seth.cack_psn = 0x000102;
  h.seth.bitmap = 1;
  h.cc.rcvd_bytes = 0x000010;
  Bytes want = {0xDC, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x00};
  Bytes seth(28, 0);
  seth[13] = 0x00;
  seth[14] = 0x01;
  seth[15] = 0x02;  // cack_psn in bytes 13..15
  seth[27] = 0x01;  // bitmap LSB is the last byte
  Bytes cc = {0, 0, 0, 0, 0, 0x00, 0x00, 0x10};
  want.insert(want.end(), seth.begin(), seth.end());
  want.insert(want.end(), cc.begin(), cc.end());
  EXPECT_EQ(enc(h), want);
}

TEST(Packet, RoundTripEveryOpcode) {
  for (Opcode op : kData) {
    for (bool ts : {false, true}) {
      for (size_t payload : {size_t{0}, size_t{1}, size_t{4096}}) {
        SCOPED_TRACE(::testing::Message() << opcode_info(static_cast<uint8_t>(op)).name
                                          << " ts=" << ts << " payload=" << payload);
        const Headers h = make(op, ts);
        const Bytes hdr = enc(h);
        const Bytes pkt = with_payload(hdr, payload);
        auto p = parse(pkt);
        ASSERT_TRUE(p.ok()) << to_string(p.error());
        EXPECT_EQ(p->header_len, hdr.size());
        EXPECT_EQ(p->payload_len, payload);
        EXPECT_EQ(p->h.opcode(), op);
        EXPECT_EQ(&p->h.info(), &opcode_info(static_cast<uint8_t>(op)));
        EXPECT_EQ(enc(p->h), hdr);
        EXPECT_EQ(p->h.bth.dest_qp, 0x123456u);
        EXPECT_EQ(p->h.bth.psn, 0xABCDEFu);
        EXPECT_EQ(p->h.meth.msn, 0x0304);
        EXPECT_EQ(p->h.reth.va, 0x1122334455667788ull);
        EXPECT_EQ(p->h.reth.dma_length, 1u << 20);
        EXPECT_EQ(p->h.tseth.timestamp, ts ? 0x0506 : 0);
        EXPECT_EQ(p->h.imm.imm, opcode_info(static_cast<uint8_t>(op)).imm ? 0xDDEEFF00u : 0u);
        // Only the members the opcode calls for are touched.
        EXPECT_EQ(p->h.seth.bitmap, 0u);
        EXPECT_EQ(p->h.aeth.msn, 0u);
      }
    }
  }
  for (Opcode op : kControl) {
    SCOPED_TRACE(opcode_info(static_cast<uint8_t>(op)).name);
    const Headers h = make(op);
    const Bytes hdr = enc(h);
    auto p = parse(hdr);
    ASSERT_TRUE(p.ok()) << to_string(p.error());
    EXPECT_EQ(p->header_len, hdr.size());
    EXPECT_EQ(p->payload_len, 0u);
    EXPECT_EQ(p->h.opcode(), op);
    EXPECT_EQ(enc(p->h), hdr);
    EXPECT_EQ(p->h.reth.va, 0u);  // data headers untouched
  }
}

TEST(Packet, ControlFieldsSurviveRoundTrip) {
  auto p = parse(enc(make(Opcode::sack)));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->h.seth.ack_psn_offset, -5);
  EXPECT_EQ(p->h.seth.entropy, 0xE0E1E2E3u);
  EXPECT_EQ(p->h.seth.cack_psn, 0x00F00Du);
  EXPECT_EQ(p->h.seth.sack_offset, 64);
  EXPECT_EQ(p->h.seth.bitmap, 0xF0F0F0F0F0F0F0F0ull);
  EXPECT_EQ(p->h.cc.ooo_count, 3);
  EXPECT_EQ(p->h.cc.rcvd_bytes, 0x123u);
  p = parse(enc(make(Opcode::nack)));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->h.neth.reason, 0x01);
  EXPECT_EQ(p->h.neth.nack_psn, 0xABCDEFu);
  p = parse(enc(make(Opcode::ack)));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->h.aeth.syndrome, 0x1F);
  EXPECT_EQ(p->h.aeth.msn, 0x0A0B0Cu);
  p = parse(enc(make(Opcode::probe)));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->h.peth.probe_id, 0x7777);
  p = parse(enc(make(Opcode::endpoint_request)));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->h.erth.port_status_mask, 0xFFu);
  p = parse(enc(make(Opcode::endpoint_response)));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->h.eeth.rx_port, 3);
  EXPECT_EQ(p->h.eeth.entropy, 0x31415926u);
}

TEST(Packet, TruncationAtEveryLength) {
  auto check = [](const Headers& h) {
    const Bytes hdr = enc(h);
    ASSERT_EQ(hdr.size(), header_size(h));
    for (size_t n = 0; n < hdr.size(); ++n) {
      auto r = parse(std::span<const uint8_t>(hdr.data(), n));
      ASSERT_FALSE(r.ok()) << "prefix " << n;
      EXPECT_EQ(r.error(), Errc::truncated) << "prefix " << n;
    }
    EXPECT_TRUE(parse(hdr).ok());  // the full chain parses (zero payload)
  };
  for (Opcode op : kData)
    for (bool ts : {false, true}) {
      SCOPED_TRACE(::testing::Message() << opcode_info(static_cast<uint8_t>(op)).name << " ts=" << ts);
      check(make(op, ts));
    }
  for (Opcode op : kControl) {
    SCOPED_TRACE(opcode_info(static_cast<uint8_t>(op)).name);
    check(make(op));
  }
}

TEST(Packet, UnknownOpcodes) {
  std::set<uint8_t> known;
  for (Opcode op : kData) known.insert(static_cast<uint8_t>(op));
  for (Opcode op : kControl) known.insert(static_cast<uint8_t>(op));
  for (Opcode op : kRcData) known.insert(static_cast<uint8_t>(op));
  for (Opcode op : kRcControl) known.insert(static_cast<uint8_t>(op));
  int unknown = 0;
  for (unsigned op = 0; op < 256; ++op) {
    if (known.count(static_cast<uint8_t>(op))) continue;
    ++unknown;
    Headers h = make(Opcode::write_only);
    h.bth.opcode = static_cast<uint8_t>(op);
    EXPECT_EQ(header_size(h), 0u) << op;
    Bytes out(kMaxHeaderBytes, 0);
    auto e = encode(h, out);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error(), Errc::unknown_opcode) << op;
    // A BTH with this opcode followed by plenty of bytes.
    Bytes pkt = enc(make(Opcode::write_only));
    pkt[0] = static_cast<uint8_t>(op);
    pkt.resize(100, 0);
    EXPECT_EQ(parse_error(pkt), Errc::unknown_opcode) << op;
    // Exactly a BTH is enough to know the opcode is unknown.
    EXPECT_EQ(parse_error(Bytes(pkt.begin(), pkt.begin() + 12)), Errc::unknown_opcode) << op;
  }
  EXPECT_EQ(unknown, 236);  // 12 MRC + 8 RC opcodes are defined
}

TEST(Packet, TrailingBytesOnControlPackets) {
  for (Opcode op : kControl) {
    SCOPED_TRACE(opcode_info(static_cast<uint8_t>(op)).name);
    for (size_t extra : {1u, 3u, 4u, 100u}) {
      EXPECT_EQ(parse_error(with_payload(enc(make(op)), extra)), Errc::length_mismatch) << extra;
    }
  }
}

TEST(Packet, PayloadBoundedByDmaLength) {
  for (Opcode op : kData) {
    SCOPED_TRACE(opcode_info(static_cast<uint8_t>(op)).name);
    Headers h = make(op);
    h.reth.dma_length = 100;
    const Bytes hdr = enc(h);
    EXPECT_EQ(parse_error(with_payload(hdr, 100)), Errc::ok);
    EXPECT_EQ(parse_error(with_payload(hdr, 99)), Errc::ok);
    EXPECT_EQ(parse_error(with_payload(hdr, 101)), Errc::length_mismatch);
    EXPECT_EQ(parse_error(with_payload(hdr, 4096)), Errc::length_mismatch);
    h.reth.dma_length = 0;  // zero-length WRITE: no payload allowed
    EXPECT_EQ(parse_error(enc(h)), Errc::ok);
    EXPECT_EQ(parse_error(with_payload(enc(h), 1)), Errc::length_mismatch);
  }
}

TEST(Packet, PadCount) {
  for (Opcode op : kData) {
    SCOPED_TRACE(opcode_info(static_cast<uint8_t>(op)).name);
    for (uint8_t pad = 0; pad <= 3; ++pad) {
      Headers h = make(op, /*ts=*/true);
      h.bth.pad_count = pad;
      h.reth.dma_length = 7;
      const Bytes hdr = enc(h);
      // Fewer bytes than the pad count: length mismatch.
      for (size_t rest = 0; rest < pad; ++rest)
        EXPECT_EQ(parse_error(with_payload(hdr, rest)), Errc::length_mismatch) << int{pad} << " " << rest;
      // Pad is removed from the payload length.
      for (size_t rest = pad; rest <= 7u + pad; ++rest) {
        auto p = parse(with_payload(hdr, rest));
        ASSERT_TRUE(p.ok()) << int{pad} << " " << rest << " " << to_string(p.error());
        EXPECT_EQ(p->payload_len, rest - pad);
        EXPECT_EQ(p->header_len, hdr.size());
        EXPECT_EQ(p->h.bth.pad_count, pad);
      }
      // The DMA bound applies to the payload without its pad.
      EXPECT_EQ(parse_error(with_payload(hdr, 8u + pad)), Errc::length_mismatch);
    }
  }
  // Control packets ignore pad_count (and still reject trailing bytes).
  Headers c = make(Opcode::sack);
  c.bth.pad_count = 3;
  EXPECT_EQ(parse_error(enc(c)), Errc::ok);
}

TEST(Packet, DataToReservedQpnIsMalformed) {
  for (Opcode op : kData) {
    SCOPED_TRACE(opcode_info(static_cast<uint8_t>(op)).name);
    for (uint32_t qp : {0u, 1u, 2u}) {
      Headers h = make(op);
      h.bth.dest_qp = qp;
      EXPECT_EQ(parse_error(with_payload(enc(h), 16)), Errc::malformed) << qp;
    }
    Headers h = make(op);
    h.bth.dest_qp = 3;
    EXPECT_EQ(parse_error(with_payload(enc(h), 16)), Errc::ok);
    h.bth.dest_qp = 0xFFFFFF;
    EXPECT_EQ(parse_error(with_payload(enc(h), 16)), Errc::ok);
  }
  // Control packets may use reserved QPNs (endpoint operations go to QP 0x2).
  for (Opcode op : kControl) {
    Headers h = make(op);
    h.bth.dest_qp = 2;
    EXPECT_EQ(parse_error(enc(h)), Errc::ok);
  }
}

TEST(Packet, NonZeroTverIsMalformed) {
  for (Opcode op : {Opcode::write_only, Opcode::sack, Opcode::ack}) {
    for (uint8_t tver = 1; tver < 16; ++tver) {
      Headers h = make(op);
      h.bth.tver = tver;
      EXPECT_EQ(parse_error(enc(h)), Errc::malformed) << int{tver};
    }
  }
}

TEST(Packet, EncodeIntoSmallBuffer) {
  for (Opcode op : {Opcode::write_last_imm, Opcode::sack, Opcode::endpoint_response, Opcode::ack}) {
    const Headers h = make(op, true);
    const size_t need = header_size(h);
    for (size_t n = 0; n < need; ++n) {
      Bytes out(n, 0xEE);
      auto r = encode(h, out);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error(), Errc::too_big) << n;
      EXPECT_EQ(out, Bytes(n, 0xEE)) << "encode wrote into a buffer it rejected";
    }
    // Exactly enough works and writes nothing past the chain.
    Bytes out(need + 8, 0xEE);
    auto r = encode(h, out);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, need);
    for (size_t i = need; i < out.size(); ++i) EXPECT_EQ(out[i], 0xEE) << i;
  }
}

TEST(Packet, TsFlagSelectsTseth) {
  // Same fields, ts off vs on: the RETH moves by 4 bytes.
  Headers h = make(Opcode::write_middle, false);
  const Bytes off = enc(h);
  h.bth.ts = true;
  const Bytes on = enc(h);
  ASSERT_EQ(on.size(), off.size() + 4);
  EXPECT_TRUE(std::equal(off.begin() + 16, off.end(), on.begin() + 20));
  EXPECT_EQ(on[17], 0x06);  // TSETH timestamp low byte
  // A packet with ts set but the TSETH and RETH missing is truncated, not misread.
  EXPECT_EQ(parse_error(Bytes(on.begin(), on.begin() + 16 + 4 + 15)), Errc::truncated);
}

// ------------------------------------------------------------------ IBTA RC / RoCEv2 opcodes

TEST(RcOpcodeTable, FamilyAndHeaderFlags) {
  // Numeric values (IBTA vol. 1 table 38, RoCEv2 annex A17.9.3).
  EXPECT_EQ(static_cast<uint8_t>(Opcode::rc_write_first), 0x06);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::rc_write_middle), 0x07);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::rc_write_last), 0x08);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::rc_write_last_imm), 0x09);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::rc_write_only), 0x0A);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::rc_write_only_imm), 0x0B);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::rc_ack), 0x11);
  EXPECT_EQ(static_cast<uint8_t>(Opcode::cnp), 0x81);
  for (Opcode op : kRcData) {
    const OpcodeInfo& i = opcode_info(static_cast<uint8_t>(op));
    SCOPED_TRACE(i.name);
    EXPECT_TRUE(i.rc);
    EXPECT_FALSE(i.meth);           // no METH, no TSETH
    EXPECT_EQ(i.reth, i.first);     // RETH only where the message starts
  }
  for (Opcode op : kRcControl) {
    const OpcodeInfo& i = opcode_info(static_cast<uint8_t>(op));
    EXPECT_TRUE(i.rc);
    EXPECT_FALSE(i.meth || i.reth);
  }
  // MRC rows: every data packet carries METH and RETH; nothing is RC.
  for (Opcode op : kData) {
    const OpcodeInfo& i = opcode_info(static_cast<uint8_t>(op));
    EXPECT_FALSE(i.rc);
    EXPECT_TRUE(i.meth && i.reth);
  }
  for (Opcode op : kControl) EXPECT_FALSE(opcode_info(static_cast<uint8_t>(op)).rc);
}

TEST(RcPacket, HeaderSizeIgnoresTsAndEncodeAgrees) {
  for (Opcode op : kRcData) {
    for (bool ts : {false, true}) {
      SCOPED_TRACE(::testing::Message() << opcode_info(static_cast<uint8_t>(op)).name << " ts=" << ts);
      const Headers h = make(op, ts);
      EXPECT_EQ(header_size(h), expected_size(op, false));
      EXPECT_EQ(enc(h).size(), header_size(h));
    }
  }
  for (Opcode op : kRcControl) {
    const Headers h = make(op);
    EXPECT_EQ(header_size(h), expected_size(op, false));
    EXPECT_EQ(enc(h).size(), header_size(h));
  }
}

TEST(RcPacket, EncodeKnownAnswers) {
  // RDMA WRITE FIRST: BTH then RETH, nothing else.
  Headers h;
  h.bth.opcode = 0x06;
  h.bth.pkey = 0xFFFF;
  h.bth.dest_qp = 0x000010;
  h.bth.ack_req = true;
  h.bth.psn = 0x000100;
  h.reth.va = 0x1000;
  h.reth.rkey = 0x42;
  h.reth.dma_length = 8192;
  h.meth.msn = 0x5555;     // not carried by RC
  h.tseth.timestamp = 0x7; // not carried by RC
  const Bytes first = {
      0x06, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x10, 0x80, 0x00, 0x01, 0x00,  // BTH (AckReq)
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,                          // RETH va
      0x00, 0x00, 0x00, 0x42, 0x00, 0x00, 0x20, 0x00,                          // rkey, dma_length
  };
  EXPECT_EQ(enc(h), first);
  // RDMA WRITE LAST with immediate: BTH then ImmDt.
  h.bth.opcode = 0x09;
  h.bth.ack_req = false;
  h.imm.imm = 0x01020304;
  const Bytes last_imm = {0x09, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x01, 0x00,
                          0x01, 0x02, 0x03, 0x04};
  EXPECT_EQ(enc(h), last_imm);
  // ACKNOWLEDGE: BTH then AETH.
  Headers a;
  a.bth.opcode = 0x11;
  a.bth.dest_qp = 0x000011;
  a.bth.psn = 0x0000FF;
  a.aeth.syndrome = aeth::kNakPsnSeqError;
  a.aeth.msn = 3;
  const Bytes ack = {0x11, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0xFF,
                     0x60, 0x00, 0x00, 0x03};
  EXPECT_EQ(enc(a), ack);
  // CNP: BTH then 16 zero bytes.
  Headers c;
  c.bth.opcode = 0x81;
  c.bth.dest_qp = 0x000012;
  Bytes cnp = {0x81, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x00, 0x00};
  cnp.resize(28, 0);
  EXPECT_EQ(enc(c), cnp);
  // Reserved CNP bytes are ignored on parse.
  for (size_t i = 12; i < cnp.size(); ++i) cnp[i] = 0xA5;
  EXPECT_EQ(parse_error(cnp), Errc::ok);
}

TEST(RcPacket, RoundTripEveryOpcode) {
  for (Opcode op : kRcData) {
    for (size_t payload : {size_t{0}, size_t{1}, size_t{4096}}) {
      const OpcodeInfo& info = opcode_info(static_cast<uint8_t>(op));
      SCOPED_TRACE(::testing::Message() << info.name << " payload=" << payload);
      const Headers h = make(op, /*ts=*/true);  // BTH.ts is a reserved bit for RC: no TSETH
      const Bytes hdr = enc(h);
      auto p = parse(with_payload(hdr, payload));
      ASSERT_TRUE(p.ok()) << to_string(p.error());
      EXPECT_EQ(p->header_len, hdr.size());
      EXPECT_EQ(p->payload_len, payload);
      EXPECT_EQ(p->h.opcode(), op);
      EXPECT_EQ(enc(p->h), hdr);
      EXPECT_EQ(p->h.bth.dest_qp, 0x123456u);
      EXPECT_EQ(p->h.bth.psn, 0xABCDEFu);
      EXPECT_TRUE(p->h.bth.ack_req);
      // Only the headers the opcode carries are written.
      EXPECT_EQ(p->h.meth.msn, 0);
      EXPECT_EQ(p->h.tseth.timestamp, 0);
      EXPECT_EQ(p->h.reth.va, info.reth ? 0x1122334455667788ull : 0u);
      EXPECT_EQ(p->h.reth.dma_length, info.reth ? 1u << 20 : 0u);
      EXPECT_EQ(p->h.imm.imm, info.imm ? 0xDDEEFF00u : 0u);
    }
  }
  for (Opcode op : kRcControl) {
    SCOPED_TRACE(opcode_info(static_cast<uint8_t>(op)).name);
    const Bytes hdr = enc(make(op));
    auto p = parse(hdr);
    ASSERT_TRUE(p.ok()) << to_string(p.error());
    EXPECT_EQ(p->header_len, hdr.size());
    EXPECT_EQ(p->payload_len, 0u);
    EXPECT_EQ(p->h.opcode(), op);
    EXPECT_EQ(enc(p->h), hdr);
  }
  auto p = parse(enc(make(Opcode::rc_ack)));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->h.aeth.syndrome, aeth::kAckNoCredit);
  EXPECT_EQ(p->h.aeth.msn, 0x0A0B0Cu);
}

TEST(RcPacket, TruncationAtEveryLength) {
  auto check = [](const Headers& h) {
    const Bytes hdr = enc(h);
    for (size_t n = 0; n < hdr.size(); ++n) {
      auto r = parse(std::span<const uint8_t>(hdr.data(), n));
      ASSERT_FALSE(r.ok()) << "prefix " << n;
      EXPECT_EQ(r.error(), Errc::truncated) << "prefix " << n;
    }
    EXPECT_TRUE(parse(hdr).ok());
  };
  for (Opcode op : kRcData)
    for (bool ts : {false, true}) {
      SCOPED_TRACE(::testing::Message() << opcode_info(static_cast<uint8_t>(op)).name << " ts=" << ts);
      check(make(op, ts));
    }
  for (Opcode op : kRcControl) {
    SCOPED_TRACE(opcode_info(static_cast<uint8_t>(op)).name);
    check(make(op));
  }
}

TEST(RcPacket, ControlTrailingBytesAndPayloadBounds) {
  for (Opcode op : kRcControl)
    for (size_t extra : {1u, 4u, 16u})
      EXPECT_EQ(parse_error(with_payload(enc(make(op)), extra)), Errc::length_mismatch);
  // FIRST/ONLY payloads are bounded by their RETH's DMA length ...
  for (Opcode op : {Opcode::rc_write_first, Opcode::rc_write_only, Opcode::rc_write_only_imm}) {
    Headers h = make(op);
    h.reth.dma_length = 100;
    EXPECT_EQ(parse_error(with_payload(enc(h), 100)), Errc::ok);
    EXPECT_EQ(parse_error(with_payload(enc(h), 101)), Errc::length_mismatch);
  }
  // ... MIDDLE/LAST carry no RETH: the responder bounds them by the message.
  for (Opcode op : {Opcode::rc_write_middle, Opcode::rc_write_last, Opcode::rc_write_last_imm})
    EXPECT_EQ(parse_error(with_payload(enc(make(op)), 4096)), Errc::ok);
  // Pad bytes are removed as for MRC.
  Headers h = make(Opcode::rc_write_last);
  h.bth.pad_count = 3;
  auto p = parse(with_payload(enc(h), 7));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->payload_len, 4u);
  EXPECT_EQ(parse_error(with_payload(enc(h), 2)), Errc::length_mismatch);
}

TEST(RcPacket, DataToReservedQpnIsMalformed) {
  for (Opcode op : kRcData) {
    for (uint32_t qp : {0u, 1u, 2u}) {
      Headers h = make(op);
      h.bth.dest_qp = qp;
      EXPECT_EQ(parse_error(with_payload(enc(h), 16)), Errc::malformed) << qp;
    }
  }
  for (Opcode op : kRcControl) {
    Headers h = make(op);
    h.bth.tver = 1;
    EXPECT_EQ(parse_error(enc(h)), Errc::malformed);
  }
}

}  // namespace
}  // namespace mrc::wire
