// SPDX-License-Identifier: BSD-2-Clause
// Tests for wire/framing.hpp: every EV mode built, checked byte by byte and
// parsed back; UDP checksums against a plain RFC 768 implementation written
// here; the ICRC over the right IP header; malformed and truncated input.
#include "wire/framing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "util/prng.hpp"
#include "wire/headers.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"

namespace mrc::wire {
namespace {

using Bytes = std::vector<uint8_t>;

uint16_t be16(const Bytes& b, size_t at) { return static_cast<uint16_t>(b[at] << 8 | b[at + 1]); }
uint32_t be32(const Bytes& b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}
void put16(Bytes& b, size_t at, uint32_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}

// Straight from RFC 1071: add 16-bit big-endian words with end-around carry,
// an odd byte padded with a zero on the right; the checksum is the complement.
uint16_t ones_complement_sum(const Bytes& b) {
  uint32_t sum = 0;
  for (size_t i = 0; i < b.size(); i += 2) {
    const uint32_t hi = b[i];
    const uint32_t lo = i + 1 < b.size() ? b[i + 1] : 0;
    sum += hi << 8 | lo;
    while (sum > 0xFFFF) sum = (sum & 0xFFFF) + (sum >> 16);
  }
  return static_cast<uint16_t>(sum);
}

// RFC 768 / RFC 8200 8.1: the UDP checksum of `udp` (header with checksum 0,
// then data) under the pseudo-header of the given addresses.
uint16_t reference_udp_checksum(const Bytes& src, const Bytes& dst, Bytes udp) {
  udp[6] = udp[7] = 0;
  Bytes p = src;
  p.insert(p.end(), dst.begin(), dst.end());
  const size_t len = udp.size();
  if (src.size() == 4) {
    p.insert(p.end(), {0, 17, static_cast<uint8_t>(len >> 8), static_cast<uint8_t>(len)});
  } else {
    p.insert(p.end(), {0, 0, static_cast<uint8_t>(len >> 8), static_cast<uint8_t>(len), 0, 0, 0, 17});
  }
  p.insert(p.end(), udp.begin(), udp.end());
  const uint16_t c = static_cast<uint16_t>(~ones_complement_sum(p));
  return c == 0 ? 0xFFFF : c;
}

IpAddress addr(std::initializer_list<uint8_t> bytes) {
  IpAddress a{};
  size_t i = 0;
  for (uint8_t b : bytes) a[i++] = b;
  return a;
}
Bytes bytes_of(const IpAddress& a, size_t n) { return Bytes(a.begin(), a.begin() + static_cast<long>(n)); }

const IpAddress kSrc6 = addr({0xFD, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});
const IpAddress kDst6 = addr({0xFD, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02});
const IpAddress kSrc4 = addr({10, 0, 0, 1});
const IpAddress kDst4 = addr({10, 0, 0, 2});
// locator cafe:cafe, uSIDs 0101 0202 0303, then zeros (end of carrier).
const IpAddress kCarrier = addr({0xCA, 0xFE, 0xCA, 0xFE, 0x01, 0x01, 0x02, 0x02, 0x03, 0x03});

// A WRITE_ONLY header chain (BTH + METH + RETH) and a payload.
Bytes transport_bytes() {
  Headers h;
  h.bth.opcode = static_cast<uint8_t>(Opcode::write_only);
  h.bth.dest_qp = 0x123;
  h.bth.psn = 0x456;
  h.meth.msn = 1;
  h.reth.va = 0x1000;
  h.reth.rkey = 0x77;
  h.reth.dma_length = 100;
  Bytes b(kMaxHeaderBytes);
  b.resize(encode(h, b).value());
  return b;
}
Bytes payload_bytes(size_t n = 100) {
  Bytes p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 7 + 3);
  return p;
}

struct Built {
  Bytes frame;  // the whole datagram: headers, transport, payload, ICRC
  BuiltFrame info;
};

Built build(const FrameFormat& fmt, const FrameFields& f, const Bytes& t = transport_bytes(),
            const Bytes& pl = payload_bytes()) {
  Bytes out(kMaxFrameHeaderBytes);
  auto r = build_frame(fmt, f, t, pl, out);
  EXPECT_TRUE(r.ok()) << to_string(r.error());
  Built b;
  if (!r.ok()) return b;
  b.info = *r;
  out.resize(r->header_len);
  out.insert(out.end(), t.begin(), t.end());
  out.insert(out.end(), pl.begin(), pl.end());
  uint8_t crc[4];
  put_icrc(r->icrc, crc);
  out.insert(out.end(), crc, crc + 4);
  b.frame = out;
  return b;
}

FrameFields fields6(uint32_t ev) {
  FrameFields f;
  f.src = kSrc6;
  f.dst = kDst6;
  f.srv6_carrier = kCarrier;
  f.ev = ev;
  f.traffic_class = 0x12;  // DSCP 4, ECN 2 (ECT(0))
  f.hop_limit = 63;
  return f;
}

const size_t kUdpPayload = transport_bytes().size() + 100 + 4;

// ---- UDP mode

TEST(Framing, UdpModeIpv4BytesAndRoundTrip) {
  FrameFormat fmt;
  fmt.ip = IpVersion::v4;
  FrameFields f;
  f.src = kSrc4;
  f.dst = kDst4;
  f.ev = 0xBEEF;
  f.traffic_class = 0xB8;
  f.hop_limit = 17;
  const Built b = build(fmt, f);
  const Bytes& x = b.frame;
  ASSERT_EQ(b.info.header_len, 28u);
  EXPECT_EQ(x[0], 0x45);                                   // version 4, IHL 5
  EXPECT_EQ(x[1], 0xB8);                                   // TOS
  EXPECT_EQ(be16(x, 2), 20 + 8 + kUdpPayload);             // total length
  EXPECT_EQ(be16(x, 6), 0x4000);                           // DF, no fragment offset
  EXPECT_EQ(x[8], 17);                                     // TTL
  EXPECT_EQ(x[9], 17);                                     // UDP
  EXPECT_EQ(ones_complement_sum(Bytes(x.begin(), x.begin() + 20)), 0xFFFF);  // header checksum
  EXPECT_EQ(Bytes(x.begin() + 12, x.begin() + 16), bytes_of(kSrc4, 4));
  EXPECT_EQ(Bytes(x.begin() + 16, x.begin() + 20), bytes_of(kDst4, 4));
  EXPECT_EQ(be16(x, 20), 0xBEEF);                          // EV = source port
  EXPECT_EQ(be16(x, 22), 4791);
  EXPECT_EQ(be16(x, 24), 8 + kUdpPayload);
  const Bytes udp(x.begin() + 20, x.end());
  EXPECT_EQ(be16(x, 26), reference_udp_checksum(bytes_of(kSrc4, 4), bytes_of(kDst4, 4), udp));

  auto p = parse_frame(fmt, x);
  ASSERT_TRUE(p.ok()) << to_string(p.error());
  EXPECT_EQ(p->ip, IpVersion::v4);
  EXPECT_EQ(p->covered_ip_offset, 0u);
  EXPECT_EQ(p->udp_offset, 20u);
  EXPECT_EQ(p->bth_offset, 28u);
  EXPECT_EQ(p->frame_len, x.size());
  EXPECT_EQ(p->udp_payload_len, kUdpPayload);
  EXPECT_FALSE(p->trimmed);
  EXPECT_EQ(p->src, kSrc4);
  EXPECT_EQ(p->dst, kDst4);
  EXPECT_EQ(p->ev, 0xBEEFu);
  EXPECT_EQ(p->udp_sport, 0xBEEF);
  EXPECT_EQ(p->traffic_class, 0xB8);
  EXPECT_EQ(p->hop_limit, 17);
  EXPECT_EQ(p->checksum, UdpChecksumState::valid);
  EXPECT_TRUE(verify_icrc(x, *p));
  // The ICRC is the one over this IPv4 header and UDP.
  const Bytes t = transport_bytes();
  EXPECT_EQ(b.info.icrc, icrc(std::span<const uint8_t>(x.data(), 28), t, payload_bytes()).value());
  EXPECT_EQ(frame_icrc(std::span<const uint8_t>(x.data(), 28), t, payload_bytes()).value(), b.info.icrc);
}

TEST(Framing, UdpModeIpv4MayOmitTheChecksum) {
  FrameFormat fmt;
  fmt.ip = IpVersion::v4;
  fmt.checksum = UdpChecksumMode::zero;
  FrameFields f;
  f.src = kSrc4;
  f.dst = kDst4;
  f.ev = 7;
  const Built b = build(fmt, f);
  EXPECT_EQ(be16(b.frame, 26), 0);
  auto p = parse_frame(fmt, b.frame);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->checksum, UdpChecksumState::zero);
  EXPECT_TRUE(verify_icrc(b.frame, *p));
}

TEST(Framing, UdpModeIpv6BytesAndRoundTrip) {
  FrameFormat fmt;  // udp over IPv6 is the default
  const Built b = build(fmt, fields6(0x1234));
  const Bytes& x = b.frame;
  ASSERT_EQ(b.info.header_len, 48u);
  // version 6 | traffic class 0x12 | flow label 0 (the EV is all in the port)
  EXPECT_EQ(be32(x, 0), 0x60000000u | 0x12u << 20);
  EXPECT_EQ(be16(x, 4), 8 + kUdpPayload);  // payload length
  EXPECT_EQ(x[6], 17);                     // next header
  EXPECT_EQ(x[7], 63);                     // hop limit
  EXPECT_EQ(be16(x, 40), 0x1234);
  EXPECT_EQ(be16(x, 42), 4791);
  const Bytes udp(x.begin() + 40, x.end());
  EXPECT_EQ(be16(x, 46), reference_udp_checksum(bytes_of(kSrc6, 16), bytes_of(kDst6, 16), udp));
  auto p = parse_frame(fmt, x);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ev, 0x1234u);
  EXPECT_EQ(p->src, kSrc6);
  EXPECT_EQ(p->dst, kDst6);
  EXPECT_EQ(p->bth_offset, 48u);
  EXPECT_EQ(p->checksum, UdpChecksumState::valid);
  EXPECT_TRUE(verify_icrc(x, *p));
}

TEST(Framing, UdpModeRefusesAnEvWiderThanThePort) {
  Bytes out(kMaxFrameHeaderBytes);
  EXPECT_EQ(build_frame(FrameFormat{}, fields6(0x10000), transport_bytes(), {}, out).error(),
            Errc::invalid_argument);
}

TEST(Framing, ZeroChecksumRefusedOverPlainIpv6) {
  Bytes out(kMaxFrameHeaderBytes);
  for (EvMode m : {EvMode::udp, EvMode::stev}) {
    FrameFormat fmt;
    fmt.mode = m;
    fmt.checksum = UdpChecksumMode::zero;
    EXPECT_EQ(build_frame(fmt, fields6(1), transport_bytes(), {}, out).error(), Errc::invalid_argument);
  }
}

// ---- STEV mode

TEST(Framing, StevDefaultSplitPortTakesLow16FlowLabelHigh16) {
  FrameFormat fmt;
  fmt.mode = EvMode::stev;
  const Built b = build(fmt, fields6(0xABCD1234));
  const Bytes& x = b.frame;
  EXPECT_EQ(be16(x, 40), 0x1234);                         // EV[15:0]
  EXPECT_EQ(be32(x, 0), 0x60000000u | 0x12u << 20 | 0x0ABCDu);  // flow label[15:0] = EV[31:16]
  EXPECT_EQ(x[0], 0x61);  // version 6, traffic class high nibble 1
  EXPECT_EQ(x[1], 0x20);  // traffic class low nibble 2, flow label bits 19:16 = 0
  EXPECT_EQ(x[2], 0xAB);
  EXPECT_EQ(x[3], 0xCD);
  auto p = parse_frame(fmt, x);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->flow_label, 0x0ABCDu);
  EXPECT_EQ(p->ev, 0xABCD1234u);
  EXPECT_EQ(p->checksum, UdpChecksumState::valid);
  EXPECT_TRUE(verify_icrc(x, *p));
}

TEST(Framing, StevSplitIsAParameter) {
  // 12 bits in the port, 20 in the flow label.
  StevSplit s{12, 20, true};
  EXPECT_EQ(ev_to_fields(0xFEDCBA98, s)->udp_sport, 0xA98);
  EXPECT_EQ(ev_to_fields(0xFEDCBA98, s)->flow_label, 0xFEDCBu);
  // The other order: port ‖ flow label, the port taking the high bits.
  StevSplit hi{16, 16, false};
  EXPECT_EQ(ev_to_fields(0xABCD1234, hi)->udp_sport, 0xABCD);
  EXPECT_EQ(ev_to_fields(0xABCD1234, hi)->flow_label, 0x1234u);
  // A narrower split refuses EVs that do not fit, and invalid widths.
  StevSplit narrow{8, 8, true};
  EXPECT_TRUE(ev_to_fields(0xFFFF, narrow).ok());
  EXPECT_EQ(ev_to_fields(0x10000, narrow).error(), Errc::invalid_argument);
  EXPECT_EQ(ev_to_fields(0, StevSplit{17, 0, true}).error(), Errc::invalid_argument);
  EXPECT_EQ(ev_to_fields(0, StevSplit{0, 21, true}).error(), Errc::invalid_argument);

  Prng rng(3);
  for (const StevSplit& split : {StevSplit{}, s, hi, narrow, StevSplit{16, 20, false}, StevSplit{0, 20, true}}) {
    FrameFormat fmt;
    fmt.mode = EvMode::stev;
    fmt.stev = split;
    const unsigned width = std::min(32u, unsigned{split.sport_bits} + split.flow_label_bits);
    for (int i = 0; i < 50; ++i) {
      const uint32_t ev = static_cast<uint32_t>(rng.next_u64()) &
                          (width >= 32 ? ~uint32_t{0} : (uint32_t{1} << width) - 1);
      const Built b = build(fmt, fields6(ev));
      auto p = parse_frame(fmt, b.frame);
      ASSERT_TRUE(p.ok());
      ASSERT_EQ(p->ev, ev) << int{split.sport_bits} << "/" << int{split.flow_label_bits};
      const auto e = ev_to_fields(ev, split);
      ASSERT_EQ(ev_from_fields(e->udp_sport, e->flow_label, split), ev);
    }
  }
}

TEST(Framing, StevAndSrv6AreIpv6Only) {
  Bytes out(kMaxFrameHeaderBytes);
  for (EvMode m : {EvMode::stev, EvMode::srv6}) {
    FrameFormat fmt;
    fmt.mode = m;
    fmt.ip = IpVersion::v4;
    EXPECT_EQ(build_frame(fmt, fields6(1), transport_bytes(), {}, out).error(), Errc::invalid_argument);
  }
  // And a receiver in stev mode rejects IPv4.
  FrameFormat v4;
  v4.ip = IpVersion::v4;
  FrameFields f;
  f.src = kSrc4;
  f.dst = kDst4;
  const Built b = build(v4, f);
  FrameFormat stev;
  stev.mode = EvMode::stev;
  EXPECT_EQ(parse_frame(stev, b.frame).error(), Errc::malformed);
}

// ---- SRv6 mode

TEST(Framing, Srv6BytesAndRoundTrip) {
  FrameFormat fmt;
  fmt.mode = EvMode::srv6;
  const Built b = build(fmt, fields6(0x00420007));
  const Bytes& x = b.frame;
  ASSERT_EQ(b.info.header_len, 88u);
  // Outer: version 6, same traffic class, flow label = inner's, payload =
  // inner header + UDP datagram, next header 41, destination = carrier.
  EXPECT_EQ(be32(x, 0), 0x60000000u | 0x12u << 20 | 0x42u);
  EXPECT_EQ(be16(x, 4), 40 + 8 + kUdpPayload);
  EXPECT_EQ(x[6], 41);
  EXPECT_EQ(x[7], 63);
  EXPECT_EQ(Bytes(x.begin() + 8, x.begin() + 24), bytes_of(kSrc6, 16));
  EXPECT_EQ(Bytes(x.begin() + 24, x.begin() + 40), bytes_of(kCarrier, 16));
  // Inner: the hosts, the EV's flow-label part, UDP.
  EXPECT_EQ(be32(x, 40), 0x60000000u | 0x12u << 20 | 0x42u);
  EXPECT_EQ(be16(x, 44), 8 + kUdpPayload);
  EXPECT_EQ(x[46], 17);
  EXPECT_EQ(Bytes(x.begin() + 48, x.begin() + 64), bytes_of(kSrc6, 16));
  EXPECT_EQ(Bytes(x.begin() + 64, x.begin() + 80), bytes_of(kDst6, 16));
  EXPECT_EQ(be16(x, 80), 0x0007);  // EV[15:0] in the source port
  EXPECT_EQ(be16(x, 82), 4791);
  // Default checksum: computed over the INNER pseudo-header.
  const Bytes udp(x.begin() + 80, x.end());
  EXPECT_EQ(be16(x, 86), reference_udp_checksum(bytes_of(kSrc6, 16), bytes_of(kDst6, 16), udp));

  auto p = parse_frame(fmt, x);
  ASSERT_TRUE(p.ok()) << to_string(p.error());
  EXPECT_EQ(p->covered_ip_offset, 40u);
  EXPECT_EQ(p->udp_offset, 80u);
  EXPECT_EQ(p->bth_offset, 88u);
  EXPECT_EQ(p->src, kSrc6);
  EXPECT_EQ(p->dst, kDst6);
  EXPECT_EQ(p->srv6_carrier, kCarrier);
  EXPECT_EQ(p->ev, 0x00420007u);
  EXPECT_EQ(p->checksum, UdpChecksumState::valid);
  EXPECT_TRUE(verify_icrc(x, *p));
  // The ICRC covers the inner header, not the outer.
  const Bytes t = transport_bytes();
  EXPECT_EQ(b.info.icrc, icrc(std::span<const uint8_t>(x.data() + 40, 48), t, payload_bytes()).value());
  EXPECT_EQ(frame_icrc(std::span<const uint8_t>(x.data(), 88), t, payload_bytes()).value(), b.info.icrc);
}

TEST(Framing, Srv6SurvivesUsidShiftsAndHopLimitDecrements) {
  FrameFormat fmt;
  fmt.mode = EvMode::srv6;
  Bytes x = build(fmt, fields6(0xCAFE0001)).frame;
  // Two uN hops: shift the uSIDs after the 32-bit locator left by 16 bits,
  // zero-filling, and decrement the outer hop limit; a switch may also
  // remark DSCP and set ECN CE in the outer header.
  for (int hop = 0; hop < 2; ++hop) {
    for (size_t i = 28; i < 38; ++i) x[i] = x[i + 2];
    x[38] = x[39] = 0;
    --x[7];
  }
  x[1] = static_cast<uint8_t>(x[1] | 0x30);  // ECN CE (traffic class low bits)
  auto p = parse_frame(fmt, x);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->srv6_carrier, addr({0xCA, 0xFE, 0xCA, 0xFE, 0x03, 0x03}));
  EXPECT_EQ(p->hop_limit, 61);
  EXPECT_EQ(p->traffic_class & 0x3, 0x3);
  EXPECT_EQ(p->checksum, UdpChecksumState::valid);
  EXPECT_TRUE(verify_icrc(x, *p));
  EXPECT_EQ(p->ev, 0xCAFE0001u);
  // A change to the inner header is caught by both.
  x[79] ^= 1;  // inner destination
  p = parse_frame(fmt, x);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->checksum, UdpChecksumState::invalid);
  EXPECT_FALSE(verify_icrc(x, *p));
}

TEST(Framing, Srv6ZeroChecksumOption) {
  FrameFormat fmt;
  fmt.mode = EvMode::srv6;
  fmt.checksum = UdpChecksumMode::zero;
  const Built b = build(fmt, fields6(5));
  EXPECT_EQ(be16(b.frame, 86), 0);
  auto p = parse_frame(fmt, b.frame);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->checksum, UdpChecksumState::zero);
  EXPECT_TRUE(verify_icrc(b.frame, *p));
}

// ---- checksum and ICRC behaviour

TEST(Framing, CorruptionIsSeenByChecksumAndIcrc) {
  FrameFormat fmt;
  fmt.mode = EvMode::stev;
  const Built b = build(fmt, fields6(99));
  for (size_t i = 48; i < b.frame.size(); ++i) {
    Bytes x = b.frame;
    x[i] ^= 0x10;
    auto p = parse_frame(fmt, x);
    ASSERT_TRUE(p.ok()) << i;
    EXPECT_EQ(p->checksum, UdpChecksumState::invalid) << i;
    // BTH byte 4 (resv8a) is the one transport byte the ICRC masks.
    if (i == 48 + 4)
      EXPECT_TRUE(verify_icrc(x, *p));
    else
      EXPECT_FALSE(verify_icrc(x, *p)) << i;
  }
}

TEST(Framing, AComputedZeroChecksumIsSentAsOnes) {
  // Vary four payload bytes until the checksum computes to zero (about one
  // value in 65535: the ICRC moves with the payload, so this is a search):
  // it must go out as 0xFFFF (RFC 768) and verify.
  FrameFormat fmt;
  int found = 0;
  for (uint32_t v = 0; v < (1u << 22) && found < 1; ++v) {
    Bytes pl = payload_bytes(20);
    put16(pl, 0, v & 0xFFFF);
    put16(pl, 2, v >> 16);
    Bytes out(kMaxFrameHeaderBytes);
    const Bytes t = transport_bytes();
    auto r = build_frame(fmt, fields6(1), t, pl, out);
    ASSERT_TRUE(r.ok());
    if (be16(out, 46) != 0xFFFF) continue;
    ++found;
    out.resize(r->header_len);
    out.insert(out.end(), t.begin(), t.end());
    out.insert(out.end(), pl.begin(), pl.end());
    uint8_t crc[4];
    put_icrc(r->icrc, crc);
    out.insert(out.end(), crc, crc + 4);
    auto p = parse_frame(fmt, out);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->checksum, UdpChecksumState::valid);
  }
  EXPECT_GT(found, 0);
}

TEST(Framing, OddLengthPayloadsChecksumCorrectly) {
  FrameFormat fmt;
  for (size_t n : {0u, 1u, 3u, 7u, 9u, 15u, 17u}) {
    const Built b = build(fmt, fields6(2), transport_bytes(), payload_bytes(n));
    const Bytes udp(b.frame.begin() + 40, b.frame.end());
    EXPECT_EQ(be16(b.frame, 46), reference_udp_checksum(bytes_of(kSrc6, 16), bytes_of(kDst6, 16), udp)) << n;
    auto p = parse_frame(fmt, b.frame);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->checksum, UdpChecksumState::valid) << n;
  }
}

TEST(Framing, BuilderChecksItsInputs) {
  const Bytes t = transport_bytes();
  Bytes small(47);
  EXPECT_EQ(build_frame(FrameFormat{}, fields6(1), t, {}, small).error(), Errc::too_big);
  Bytes out(kMaxFrameHeaderBytes);
  EXPECT_EQ(build_frame(FrameFormat{}, fields6(1), Bytes(11), {}, out).error(), Errc::invalid_argument);
  const Bytes huge(65535 - 8 - t.size() - 4 + 1);
  EXPECT_EQ(build_frame(FrameFormat{}, fields6(1), t, huge, out).error(), Errc::too_big);
  const Bytes fits(65535 - 8 - t.size() - 4);
  EXPECT_TRUE(build_frame(FrameFormat{}, fields6(1), t, fits, out).ok());
  FrameFormat s;
  s.mode = EvMode::srv6;  // the outer payload length also holds the inner header
  EXPECT_EQ(build_frame(s, fields6(1), t, fits, out).error(), Errc::too_big);
}

TEST(Framing, FrameIcrcRejectsWhatBuildFrameDoesNotMake) {
  const Bytes t = transport_bytes();
  EXPECT_EQ(frame_icrc(Bytes(47), t, {}).error(), Errc::invalid_argument);
  Bytes tcp(48);
  tcp[0] = 0x60;
  tcp[6] = 6;
  EXPECT_EQ(frame_icrc(tcp, t, {}).error(), Errc::invalid_argument);
}

// ---- malformed input

// Recomputes an IPv4 header checksum after a test edited the header.
void fix_ipv4_checksum(Bytes& x) {
  x[10] = x[11] = 0;
  put16(x, 10, static_cast<uint16_t>(~ones_complement_sum(Bytes(x.begin(), x.begin() + 20))));
}

TEST(Framing, EveryTruncationIsRejected) {
  for (EvMode m : {EvMode::udp, EvMode::stev, EvMode::srv6}) {
    for (bool v4 : {false, true}) {
      if (v4 && m != EvMode::udp) continue;
      FrameFormat fmt;
      fmt.mode = m;
      fmt.ip = v4 ? IpVersion::v4 : IpVersion::v6;
      FrameFields f = fields6(3);
      if (v4) {
        f.src = kSrc4;
        f.dst = kDst4;
      }
      const Bytes x = build(fmt, f).frame;
      for (size_t n = 0; n < x.size(); ++n) {
        auto p = parse_frame(fmt, std::span<const uint8_t>(x.data(), n));
        ASSERT_FALSE(p.ok()) << int(m) << " " << n;
        EXPECT_EQ(p.error(), Errc::truncated) << int(m) << " " << n;
      }
      // Bytes past the IP length (Ethernet padding) are not part of the frame.
      Bytes padded = x;
      padded.insert(padded.end(), 6, 0xEE);
      auto p = parse_frame(fmt, padded);
      ASSERT_TRUE(p.ok());
      EXPECT_EQ(p->frame_len, x.size());
      EXPECT_TRUE(verify_icrc(padded, *p));
    }
  }
}

TEST(Framing, Ipv4HeaderErrors) {
  FrameFormat fmt;
  fmt.ip = IpVersion::v4;
  FrameFields f;
  f.src = kSrc4;
  f.dst = kDst4;
  const Bytes good = build(fmt, f).frame;
  Bytes x = good;
  x[12] ^= 1;  // source changed, header checksum not
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
  x = good;
  x[0] = 0x46;  // options
  fix_ipv4_checksum(x);
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::not_supported);
  x = good;
  x[0] = 0x44;  // IHL below 5
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
  x = good;
  x[6] = 0x20;  // more fragments
  fix_ipv4_checksum(x);
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::not_supported);
  x = good;
  x[9] = 6;  // TCP
  fix_ipv4_checksum(x);
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
  x = good;
  put16(x, 2, 19);  // total length below the header
  fix_ipv4_checksum(x);
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::length_mismatch);
  x = good;
  x[0] = 0x55;  // version 5
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
}

TEST(Framing, Ipv6AndUdpErrors) {
  FrameFormat fmt;
  const Bytes good = build(fmt, fields6(3)).frame;
  Bytes x = good;
  x[6] = 6;  // TCP
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
  x[6] = 43;  // a routing header (an SRH)
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::not_supported);
  x[6] = 41;  // encapsulation, but this receiver is not in srv6 mode
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
  x = good;
  put16(x, 42, 4792);  // another UDP port
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
  FrameFormat other = fmt;
  other.udp_dport = 4792;  // ... which a receiver can be configured for
  EXPECT_EQ(parse_frame(other, good).error(), Errc::malformed);
  x = good;
  put16(x, 44, 7);  // UDP length below its header
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::length_mismatch);
  x = good;
  put16(x, 44, be16(x, 44) - 1);  // UDP shorter than the IP payload
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::length_mismatch);
  x = good;
  put16(x, 4, 7);  // IP payload shorter than a UDP header
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::length_mismatch);
  // A datagram with less than a BTH after UDP.
  Bytes runt(good.begin(), good.begin() + 48 + 11);
  put16(runt, 4, 8 + 11);
  put16(runt, 44, 8 + 11);
  EXPECT_EQ(parse_frame(fmt, runt).error(), Errc::truncated);
}

TEST(Framing, Srv6Errors) {
  FrameFormat fmt;
  fmt.mode = EvMode::srv6;
  const Bytes good = build(fmt, fields6(3)).frame;
  Bytes x = good;
  x[6] = 17;  // not encapsulated
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
  x[6] = 43;  // an SRH before the inner header
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::not_supported);
  x = good;
  x[40] = 0x45;  // inner header not IPv6
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
  x = good;
  x[46] = 60;  // inner destination options
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::not_supported);
  x = good;
  put16(x, 4, 39);  // outer payload cannot hold the inner header
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::length_mismatch);
  x = good;
  put16(x, 44, be16(x, 44) - 2);  // inner shorter than the outer says
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::length_mismatch);
  x = good;
  x[0] = 0x40;
  EXPECT_EQ(parse_frame(fmt, x).error(), Errc::malformed);
}

TEST(Framing, TrimmedFramesParseWithoutChecks) {
  // A trimming switch cuts the packet and fixes the length of the header it
  // routes on, not UDP's (reference 3.9).
  for (EvMode m : {EvMode::stev, EvMode::srv6}) {
    FrameFormat fmt;
    fmt.mode = m;
    const Bytes good = build(fmt, fields6(0x00010002)).frame;
    const size_t keep = (m == EvMode::srv6 ? 88 : 48) + 40;
    Bytes x(good.begin(), good.begin() + static_cast<long>(keep));
    put16(x, 4, static_cast<uint32_t>(keep - 40));  // outermost payload length
    auto p = parse_frame(fmt, x);
    ASSERT_TRUE(p.ok()) << to_string(p.error());
    EXPECT_TRUE(p->trimmed);
    EXPECT_EQ(p->udp_payload_len, 40u);  // 48 bytes of UDP datagram left
    EXPECT_EQ(p->checksum, UdpChecksumState::unchecked);
    EXPECT_FALSE(verify_icrc(x, *p));
    EXPECT_EQ(p->ev, 0x00010002u);
  }
}

TEST(Framing, RandomBytesNeverParseOutOfBounds) {
  // Garbage of every length: parse either fails or describes bytes inside
  // the input (ASan/UBSan builds catch a stray read).
  Prng rng(42);
  for (int i = 0; i < 20000; ++i) {
    Bytes x(rng.below(140));
    for (auto& c : x) c = static_cast<uint8_t>(rng.next_u64());
    if (!x.empty()) x[0] = static_cast<uint8_t>((i % 2 ? 0x60 : 0x45) | (x[0] & 0x0F));
    for (EvMode m : {EvMode::udp, EvMode::stev, EvMode::srv6}) {
      FrameFormat fmt;
      fmt.mode = m;
      auto p = parse_frame(fmt, x);
      if (!p.ok()) continue;
      ASSERT_LE(p->frame_len, x.size());
      ASSERT_LE(p->bth_offset + p->udp_payload_len, p->frame_len);
      (void)verify_icrc(x, *p);
    }
  }
}

}  // namespace
}  // namespace mrc::wire

namespace mrc::wire {
namespace {

// The software device sends through UDP sockets: the kernel writes the IP
// and UDP headers, and datagram_icrc() must give the ICRC build_frame()
// would have (whatever DSCP/ECN and hop limit the packet carries, which the
// ICRC masks); srv6 needs the headers built here and is refused.
// IPv4 framing between 10.0.0.1 and 10.0.0.2, EV 0x1234.
FrameFormat format4() {
  FrameFormat fmt;
  fmt.ip = IpVersion::v4;
  return fmt;
}
FrameFields fields4() {
  FrameFields f = fields6(0x1234);
  f.src = IpAddress{10, 0, 0, 1};
  f.dst = IpAddress{10, 0, 0, 2};
  return f;
}

TEST(Framing, DatagramIcrcMatchesTheBuiltFramesIcrc) {
  const FrameFormat v4 = format4();
  const FrameFields f4 = fields4();
  FrameFormat v6;
  FrameFormat stev;
  stev.mode = EvMode::stev;
  for (const auto& [fmt, f] : {std::pair{v4, f4}, std::pair{v6, fields6(0x4321)}, std::pair{stev, fields6(0xABCDE)}}) {
    const Built b = build(fmt, f);
    FrameFields other = f;
    other.traffic_class = 0x03;  // CE, remarked: masked
    other.hop_limit = 7;
    auto crc = datagram_icrc(fmt, other, transport_bytes(), payload_bytes());
    ASSERT_TRUE(crc.ok());
    EXPECT_EQ(*crc, b.info.icrc);
    FrameFields moved = f;
    moved.ev = f.ev ^ 1;  // a different source port is covered
    EXPECT_NE(*datagram_icrc(fmt, moved, transport_bytes(), payload_bytes()), b.info.icrc);
    // In two steps, as the device does for a burst's segments: the same
    // ICRC, in the sender's form and the receiver's.
    const size_t udp_payload = transport_bytes().size() + payload_bytes().size() + kIcrcBytes;
    auto prefix = datagram_icrc_prefix(fmt, other, udp_payload);
    ASSERT_TRUE(prefix.ok());
    EXPECT_EQ(icrc_from_prefix(*prefix, transport_bytes(), payload_bytes()).value(), b.info.icrc);
    std::vector<uint8_t> whole = transport_bytes();
    const auto payload = payload_bytes();
    whole.insert(whole.end(), payload.begin(), payload.end());
    EXPECT_EQ(icrc_from_prefix(*prefix, whole, {}).value(), b.info.icrc);
    // The UDP length is covered: a prefix for another size is another CRC.
    EXPECT_NE(icrc_from_prefix(*datagram_icrc_prefix(fmt, other, udp_payload + 1), whole, {}).value(), b.info.icrc);
  }
  FrameFormat srv6;
  srv6.mode = EvMode::srv6;
  EXPECT_EQ(datagram_icrc(srv6, fields6(1), transport_bytes(), payload_bytes()).error(), Errc::invalid_argument);
  EXPECT_EQ(datagram_icrc_prefix(srv6, fields6(1), 100).error(), Errc::invalid_argument);
  EXPECT_EQ(datagram_icrc_prefix(v4, f4, 65535).error(), Errc::too_big);
}

// SegmentIcrc is datagram_icrc() for every segment of a datagram, its
// register recomputed when the size changes (a shorter last segment) and
// its errors those of datagram_icrc().
TEST(Framing, SegmentIcrcIsDatagramIcrcForEverySegmentSize) {
  const FrameFormat v4 = format4();
  const FrameFields f = fields4();
  SegmentIcrc segment_icrc(v4, f);
  const std::vector<uint8_t> t = transport_bytes();
  const std::vector<uint8_t> payload = payload_bytes();
  for (const size_t len : {payload.size(), payload.size(), size_t{7}, payload.size(), size_t{0}}) {
    const std::span<const uint8_t> p(payload.data(), len);
    EXPECT_EQ(segment_icrc(t, p).value(), datagram_icrc(v4, f, t, p).value()) << len;
    std::vector<uint8_t> copy(len);
    EXPECT_EQ(segment_icrc(t, p, copy.data()).value(), datagram_icrc(v4, f, t, p).value()) << len;
    EXPECT_TRUE(std::equal(copy.begin(), copy.end(), p.begin())) << len;
  }
  EXPECT_EQ(segment_icrc(std::span<const uint8_t>(t.data(), Bth::kSize - 1)).error(), Errc::invalid_argument);
  const std::vector<uint8_t> huge(65535);
  EXPECT_EQ(segment_icrc(t, huge).error(), Errc::too_big);
  FrameFormat srv6;
  srv6.mode = EvMode::srv6;
  SegmentIcrc srv6_icrc(srv6, f);
  EXPECT_EQ(srv6_icrc(t, payload).error(), Errc::invalid_argument);
}

}  // namespace
}  // namespace mrc::wire
