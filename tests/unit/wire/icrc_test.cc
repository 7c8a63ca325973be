// SPDX-License-Identifier: BSD-2-Clause
// Tests for wire/icrc.hpp: the CRC-32 against its published check value and a
// bit-at-a-time reference; the IBTA RoCEv2 ICRC against masked byte strings
// built here by hand from the rule, its coverage and its masking.
#include "wire/icrc.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "util/prng.hpp"
#include "wire/headers.hpp"
#include "wire/packet.hpp"

namespace mrc::wire {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

// Bit-at-a-time reflected CRC-32, straight from the definition.
uint32_t reference_crc32(const Bytes& b) {
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t x : b) {
    c ^= x;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

// The BTH from the headers_test known-answer vector.
const Bytes kBth = {0xC6, 0x00, 0xFF, 0xFF, 0x00, 0x12, 0x34, 0x56, 0xB0, 0xAB, 0xCD, 0xEF};

// ---- CRC-32: every property below holds for both implementations, the
// active crc32_update() (ISA-L when built with it) and the portable tables.

using Crc32Fn = uint32_t (*)(uint32_t, std::span<const uint8_t>);

struct Impl {
  const char* name;
  Crc32Fn update;
};

void PrintTo(const Impl& i, std::ostream* os) { *os << i.name; }

class Crc32 : public ::testing::TestWithParam<Impl> {
 protected:
  uint32_t update(uint32_t c, std::span<const uint8_t> b) const { return GetParam().update(c, b); }
  uint32_t crc(const Bytes& b) const { return ~update(0xFFFFFFFFu, b); }
};

INSTANTIATE_TEST_SUITE_P(Impls, Crc32,
                         ::testing::Values(Impl{"active", &crc32_update},
                                           Impl{"portable", &crc32_update_portable}),
                         [](const ::testing::TestParamInfo<Impl>& i) { return i.param.name; });

TEST_P(Crc32, CheckValue) {
  // The CRC-32/ISO-HDLC check value (also zlib.crc32(b"123456789")).
  EXPECT_EQ(crc(bytes_of("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc({}), 0u);
  // The register passes through an empty update untouched, null data() or not.
  EXPECT_EQ(update(0x12345678u, {}), 0x12345678u);
  EXPECT_EQ(update(0xFFFFFFFFu, std::span<const uint8_t>()), 0xFFFFFFFFu);
}

TEST_P(Crc32, MatchesBitwiseReferenceAtEveryLengthAndAlignment) {
  Prng rng(0xC8C);
  Bytes big(300);
  for (auto& x : big) x = static_cast<uint8_t>(rng.next_u64());
  for (size_t off = 0; off < 8; ++off) {
    for (size_t len = 0; len + off <= 80; ++len) {
      const Bytes b(big.begin() + static_cast<long>(off), big.begin() + static_cast<long>(off + len));
      ASSERT_EQ(crc(b), reference_crc32(b)) << off << " " << len;
    }
  }
  EXPECT_EQ(crc(big), reference_crc32(big));
}

TEST_P(Crc32, IncrementalUpdateEqualsOneShot) {
  Prng rng(7);
  Bytes b(100);
  for (auto& x : b) x = static_cast<uint8_t>(rng.next_u64());
  const uint32_t whole = crc(b);
  for (size_t split = 0; split <= b.size(); ++split) {
    uint32_t c = update(0xFFFFFFFFu, std::span<const uint8_t>(b.data(), split));
    c = update(c, std::span<const uint8_t>(b.data() + split, b.size() - split));
    ASSERT_EQ(~c, whole) << split;
  }
}

TEST(Crc32Backend, IsNamed) {
  const std::string_view b = crc32_backend();
  EXPECT_TRUE(b == "isa-l" || b == "slice-by-8") << b;
  RecordProperty("crc32_backend", crc32_backend());
  const std::string_view c = crc32_copy_backend();
  EXPECT_TRUE(c == "avx512-vpclmulqdq" || c == "memcpy+crc32_update") << c;
  RecordProperty("crc32_copy_backend", crc32_copy_backend());
}

// The active implementation against the portable one on random buffers of
// every length 0..9000 (jumbo frames), at unaligned starts, from random
// registers, and chained across random split points: a wrong seed or result
// convention (zlib's finished CRC versus this raw register) or a length or
// alignment corner in the fast path cannot pass.
TEST(Crc32Backend, ActiveEqualsPortableOnRandomBuffersAndChains) {
  Prng rng(0x1C4C);
  constexpr size_t kMax = 9000;
  Bytes big(kMax + 64);
  for (auto& x : big) x = static_cast<uint8_t>(rng.next_u64());
  for (size_t len = 0; len <= kMax; ++len) {
    const size_t off = rng.below(64);  // any start, mostly unaligned
    const std::span<const uint8_t> b(big.data() + off, len);
    ASSERT_EQ(crc32_update(0xFFFFFFFFu, b), crc32_update_portable(0xFFFFFFFFu, b))
        << "len " << len << " off " << off;
    const auto reg = static_cast<uint32_t>(rng.next_u64());
    ASSERT_EQ(crc32_update(reg, b), crc32_update_portable(reg, b))
        << "len " << len << " off " << off << " register " << reg;
  }
  for (int round = 0; round < 2000; ++round) {
    const size_t off = rng.below(64);
    const size_t len = rng.below(kMax + 1);
    const std::span<const uint8_t> b(big.data() + off, len);
    const uint32_t want = crc32_update_portable(0xFFFFFFFFu, b);
    // Up to four pieces at random split points, each through the active code.
    size_t cuts[3];
    for (auto& c : cuts) c = rng.below(len + 1);
    std::sort(std::begin(cuts), std::end(cuts));
    uint32_t c = 0xFFFFFFFFu;
    size_t at = 0;
    for (size_t cut : cuts) {
      c = crc32_update(c, b.subspan(at, cut - at));
      at = cut;
    }
    c = crc32_update(c, b.subspan(at));
    ASSERT_EQ(c, want) << "round " << round << " len " << len << " cuts " << cuts[0] << ","
                       << cuts[1] << "," << cuts[2];
  }
}

// ---- crc32_copy: the copy and the CRC in one pass

// Every length 0..9000 at random source and destination offsets, from the
// initial register and from random ones: the CRC equals the portable one,
// the destination holds exactly the source, and the bytes on either side of
// it are untouched. The folded path starts at 256 bytes and changes shape at
// 512 (four accumulators) and at each 64-byte step after; all are crossed.
TEST(Crc32Copy, CopiesExactlyAndEqualsPortableAtEveryLengthAndAlignment) {
  Prng rng(0xC0C7);
  constexpr size_t kMax = 9000;
  constexpr uint8_t kGuard = 0xA5;
  Bytes src(kMax + 64);
  for (auto& x : src) x = static_cast<uint8_t>(rng.next_u64());
  Bytes dst(kMax + 192);
  for (size_t len = 0; len <= kMax; ++len) {
    const size_t so = rng.below(64);
    const size_t doff = 64 + rng.below(64);
    std::fill(dst.begin(), dst.end(), kGuard);
    const std::span<const uint8_t> b(src.data() + so, len);
    const auto reg = len % 2 ? static_cast<uint32_t>(rng.next_u64()) : 0xFFFFFFFFu;
    ASSERT_EQ(crc32_copy(dst.data() + doff, b, reg), crc32_update_portable(reg, b))
        << "len " << len << " src off " << so << " dst off " << doff << " register " << reg;
    ASSERT_TRUE(std::equal(b.begin(), b.end(), dst.begin() + static_cast<long>(doff))) << "len " << len;
    ASSERT_TRUE(std::all_of(dst.begin(), dst.begin() + static_cast<long>(doff), [](uint8_t x) { return x == kGuard; }))
        << "wrote before the destination, len " << len;
    ASSERT_TRUE(std::all_of(dst.begin() + static_cast<long>(doff + len), dst.end(),
                            [](uint8_t x) { return x == kGuard; }))
        << "wrote past the destination, len " << len;
  }
}

// A register chained through crc32_copy pieces and crc32_update pieces in
// any order gives the one-shot CRC: crc32_copy takes and returns the raw
// register, as crc32_update does.
TEST(Crc32Copy, ChainsWithCrc32Update) {
  Prng rng(0xC4A1);
  Bytes src(20000);
  for (auto& x : src) x = static_cast<uint8_t>(rng.next_u64());
  Bytes dst(src.size());
  for (int round = 0; round < 500; ++round) {
    const size_t len = rng.below(src.size() + 1);
    const std::span<const uint8_t> b(src.data(), len);
    size_t cuts[3];
    for (auto& c : cuts) c = rng.below(len + 1);
    std::sort(std::begin(cuts), std::end(cuts));
    uint32_t c = 0xFFFFFFFFu;
    size_t at = 0, piece = 0;
    for (size_t cut : cuts) {
      const auto part = b.subspan(at, cut - at);
      c = piece++ % 2 ? crc32_update(c, part) : crc32_copy(dst.data() + at, part, c);
      at = cut;
    }
    c = crc32_copy(dst.data() + at, b.subspan(at), c);
    ASSERT_EQ(c, crc32_update_portable(0xFFFFFFFFu, b)) << "round " << round << " len " << len;
  }
}

// ---- IBTA RoCEv2 ICRC over IP + UDP + BTH + rest

const Bytes kMeth = {0x00, 0x01, 0x00, 0x02};
constexpr uint8_t kUdpLen = 8 + 16 + 9 + 4;  // UDP + BTH/METH + "123456789" + ICRC

// IPv6 (traffic class 0xBA, flow label 0x12345, hop limit 0x40, fd00::1 ->
// fd00::2) + UDP (0xC001 -> 4791, checksum 0xABCD), as on the wire.
Bytes ipv6_udp() {
  Bytes b = {0x6B, 0xA1, 0x23, 0x45, 0x00, kUdpLen, 17, 0x40};
  for (uint8_t last : {uint8_t{1}, uint8_t{2}}) {
    b.push_back(0xFD);
    b.insert(b.end(), 14, 0x00);
    b.push_back(last);
  }
  const Bytes udp = {0xC0, 0x01, 0x12, 0xB7, 0x00, kUdpLen, 0xAB, 0xCD};
  b.insert(b.end(), udp.begin(), udp.end());
  return b;
}

// IPv4 (TOS 0xB8, id 0x1234, DF, TTL 0x40, checksum 0x5A5A, 10.0.0.1 ->
// 10.0.0.2) + the same UDP with checksum 0.
Bytes ipv4_udp() {
  return {0x45, 0xB8, 0x00, 20 + kUdpLen, 0x12, 0x34, 0x40, 0x00, 0x40, 17, 0x5A, 0x5A,
          10, 0, 0, 1, 10, 0, 0, 2, 0xC0, 0x01, 0x12, 0xB7, 0x00, kUdpLen, 0x00, 0x00};
}

Bytes transport() {
  Bytes t = kBth;
  t.insert(t.end(), kMeth.begin(), kMeth.end());
  return t;
}

// The byte string the rule says the CRC covers, written out field by field.
Bytes masked_ipv6_string() {
  Bytes s(8, 0xFF);                                      // masked LRH
  const Bytes ip = {0x6F, 0xFF, 0xFF, 0xFF,              // version | TC, flow label -> ones
                    0x00, kUdpLen, 17, 0xFF};            // payload length, NH, hop limit -> ones
  s.insert(s.end(), ip.begin(), ip.end());
  const Bytes full = ipv6_udp();
  s.insert(s.end(), full.begin() + 8, full.begin() + 40);  // addresses as they are
  const Bytes udp = {0xC0, 0x01, 0x12, 0xB7, 0x00, kUdpLen, 0xFF, 0xFF};  // checksum -> ones
  s.insert(s.end(), udp.begin(), udp.end());
  Bytes bth = kBth;
  bth[4] = 0xFF;                                         // resv8a -> ones
  s.insert(s.end(), bth.begin(), bth.end());
  s.insert(s.end(), kMeth.begin(), kMeth.end());
  const Bytes pl = bytes_of("123456789");
  s.insert(s.end(), pl.begin(), pl.end());
  return s;
}

Bytes masked_ipv4_string() {
  Bytes s(8, 0xFF);
  const Bytes ip = {0x45, 0xFF, 0x00, 20 + kUdpLen,      // TOS -> ones
                    0x12, 0x34, 0x40, 0x00,              // id, flags/fragment kept
                    0xFF, 17, 0xFF, 0xFF,                // TTL, checksum -> ones
                    10, 0, 0, 1, 10, 0, 0, 2,
                    0xC0, 0x01, 0x12, 0xB7, 0x00, kUdpLen, 0xFF, 0xFF};
  s.insert(s.end(), ip.begin(), ip.end());
  Bytes bth = kBth;
  bth[4] = 0xFF;
  s.insert(s.end(), bth.begin(), bth.end());
  s.insert(s.end(), kMeth.begin(), kMeth.end());
  const Bytes pl = bytes_of("123456789");
  s.insert(s.end(), pl.begin(), pl.end());
  return s;
}

TEST(Icrc, MaskedLrhSeedIsTheKnownConstant) {
  // rxe (drivers/infiniband/sw/rxe/rxe_icrc.c) starts its CRC from this
  // state: 0xFFFFFFFF advanced over eight 0xFF bytes.
  EXPECT_EQ(crc32_update(0xFFFFFFFFu, Bytes(8, 0xFF)), 0xDEBB20E3u);
}

TEST(Icrc, Ipv6KnownAnswer) {
  const Bytes pl = bytes_of("123456789");
  // zlib.crc32 of masked_ipv6_string(), computed outside this code base.
  EXPECT_EQ(icrc(ipv6_udp(), transport(), pl).value(), 0x13D93F5Bu);
  EXPECT_EQ(icrc(ipv6_udp(), transport(), pl).value(), reference_crc32(masked_ipv6_string()));
}

TEST(Icrc, Ipv4KnownAnswer) {
  const Bytes pl = bytes_of("123456789");
  EXPECT_EQ(icrc(ipv4_udp(), transport(), pl).value(), 0x8BB3A157u);
  EXPECT_EQ(icrc(ipv4_udp(), transport(), pl).value(), reference_crc32(masked_ipv4_string()));
}

// What the ICRC covers, built byte by byte from the rule: the masked LRH,
// the IP + UDP headers with their variant fields set to ones, the transport
// headers with BTH resv8a set to ones, and the payload.
Bytes masked_concatenation(const Bytes& ip, const Bytes& t, const Bytes& payload) {
  const bool v6 = (ip[0] >> 4) == 6;
  Bytes m = ip;
  if (v6) {
    m[0] = 0x6F;
    m[1] = m[2] = m[3] = m[7] = 0xFF;
  } else {
    m[1] = m[8] = m[10] = m[11] = 0xFF;
  }
  const size_t u = v6 ? 40 : 20;
  m[u + 6] = m[u + 7] = 0xFF;
  Bytes all(8 + m.size() + t.size() + payload.size(), 0xFF);
  const auto bth = std::copy(m.begin(), m.end(), all.begin() + 8);
  std::copy(payload.begin(), payload.end(), std::copy(t.begin(), t.end(), bth));
  bth[4] = 0xFF;  // resv8a
  return all;
}

Bytes random_bytes(Prng& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng.next_u64());
  return b;
}

TEST(Icrc, RandomPacketsEqualCrcOfMaskedConcatenation) {
  Prng rng(11);
  for (int round = 0; round < 50; ++round) {
    const bool v6 = round % 2 == 0;
    Bytes ip = v6 ? ipv6_udp() : ipv4_udp();
    for (size_t i = 1; i < ip.size(); ++i) ip[i] = static_cast<uint8_t>(rng.next_u64());
    const Bytes t = random_bytes(rng, Bth::kSize + rng.below(40));
    const Bytes payload = random_bytes(rng, rng.below(2000));
    const uint32_t want = reference_crc32(masked_concatenation(ip, t, payload));
    ASSERT_EQ(icrc(ip, t, payload).value(), want) << round;
    // With the payload copied on the way: the same ICRC, and the copy.
    Bytes copy(payload.size());
    ASSERT_EQ(icrc(ip, t, payload, copy.data()).value(), want) << round;
    ASSERT_EQ(copy, payload) << round;
  }
}

// Every length of headers a sender hands over (BTH alone up to
// kMaxHeaderBytes, and longer, which a receiver's form takes), over IPv4 and
// IPv6, so the covered headers end at every offset modulo 16 (the folded
// path pads them at the front to a whole 16 bytes, and the register spills
// into their second 16 bytes when 1-3 bytes open the first); each with
// payloads around the fold's 16-byte and 256-byte steps and of a whole
// 4 KiB packet, in the sender's form (headers, payload), with the payload
// copied on the way, and in the receiver's form (all in `transport`).
TEST(Icrc, EveryHeaderLengthAndShapeEqualsCrcOfMaskedConcatenation) {
  Prng rng(0x1C4C2);
  for (const bool v6 : {false, true}) {
    for (size_t tlen = Bth::kSize; tlen <= kMaxHeaderBytes + 20; ++tlen) {
      for (const size_t plen : {0, 1, 3, 15, 16, 17, 31, 64, 255, 256, 300, 4096, 4100}) {
        Bytes ip = v6 ? ipv6_udp() : ipv4_udp();
        for (size_t i = 1; i < ip.size(); ++i) ip[i] = static_cast<uint8_t>(rng.next_u64());
        const Bytes t = random_bytes(rng, tlen);
        const Bytes payload = random_bytes(rng, plen);
        const uint32_t want = reference_crc32(masked_concatenation(ip, t, payload));
        ASSERT_EQ(icrc(ip, t, payload).value(), want) << "v6 " << v6 << " headers " << tlen << " payload " << plen;
        Bytes copy(plen + 2, 0xA5);
        ASSERT_EQ(icrc(ip, t, payload, copy.data() + 1).value(), want)
            << "copying, v6 " << v6 << " headers " << tlen << " payload " << plen;
        ASSERT_TRUE(std::equal(payload.begin(), payload.end(), copy.begin() + 1)) << tlen << " " << plen;
        ASSERT_EQ(copy.front(), 0xA5);
        ASSERT_EQ(copy.back(), 0xA5);
        Bytes whole = t;
        whole.insert(whole.end(), payload.begin(), payload.end());
        ASSERT_EQ(icrc(ip, whole, {}).value(), want)
            << "receiver's form, v6 " << v6 << " headers " << tlen << " payload " << plen;
      }
    }
  }
}

// icrc_prefix() then icrc_from_prefix() is icrc(), for every header length
// and each kind of BTH resv8a byte: 0 (a sender's headers, read in place and
// fixed up by a per-length constant), 0xFF and others (copied and masked);
// in the sender's form, with the copy, and in the receiver's form. Headers
// longer than kMaxHeaderBytes take the copy whatever resv8a holds.
TEST(Icrc, PrefixThenRestEqualsTheWholeForEveryHeaderLengthAndResv8a) {
  Prng rng(0x9E3F);
  for (const bool v6 : {false, true}) {
    Bytes ip = v6 ? ipv6_udp() : ipv4_udp();
    for (size_t i = 1; i < ip.size(); ++i) ip[i] = static_cast<uint8_t>(rng.next_u64());
    const uint32_t prefix = icrc_prefix(ip).value();
    for (size_t tlen = Bth::kSize; tlen <= kMaxHeaderBytes + 20; ++tlen) {
      for (const int resv8a : {0x00, 0xFF, 0x01, 0x80, -1}) {
        for (const size_t plen : {0, 5, 64, 4096}) {
          Bytes t = random_bytes(rng, tlen);
          if (resv8a >= 0) t[4] = static_cast<uint8_t>(resv8a);
          const Bytes payload = random_bytes(rng, plen);
          const uint32_t want = reference_crc32(masked_concatenation(ip, t, payload));
          const std::string where = "v6 " + std::to_string(v6) + " headers " + std::to_string(tlen) + " resv8a " +
                                    std::to_string(t[4]) + " payload " + std::to_string(plen);
          ASSERT_EQ(icrc_from_prefix(prefix, t, payload).value(), want) << where;
          ASSERT_EQ(icrc(ip, t, payload).value(), want) << where;
          Bytes copy(plen, 0);
          ASSERT_EQ(icrc_from_prefix(prefix, t, payload, copy.data()).value(), want) << "copying, " << where;
          ASSERT_EQ(copy, payload) << where;
          Bytes whole = t;
          whole.insert(whole.end(), payload.begin(), payload.end());
          ASSERT_EQ(icrc_from_prefix(prefix, whole, {}).value(), want) << "receiver's form, " << where;
        }
      }
    }
  }
  EXPECT_EQ(icrc_from_prefix(0, Bytes(Bth::kSize - 1, 0), {}).error(), Errc::invalid_argument);
  EXPECT_EQ(icrc_prefix(Bytes(27, 0x45)).error(), Errc::invalid_argument);
}

TEST(Icrc, SplitBetweenTransportAndPayloadDoesNotMatter) {
  Bytes pkt = kBth;
  for (int i = 0; i < 60; ++i) pkt.push_back(static_cast<uint8_t>(i * 13));
  const auto ip = ipv6_udp();
  const uint32_t want = icrc(ip, std::span<const uint8_t>(pkt.data(), 12),
                             std::span<const uint8_t>(pkt.data() + 12, pkt.size() - 12))
                            .value();
  for (size_t h = Bth::kSize; h <= pkt.size(); ++h) {
    EXPECT_EQ(icrc(ip, std::span<const uint8_t>(pkt.data(), h),
                   std::span<const uint8_t>(pkt.data() + h, pkt.size() - h))
                  .value(),
              want)
        << h;
  }
}

// Flips every bit of the IP+UDP bytes and of the BTH, one at a time: a bit in
// a masked byte (or masked nibble) must leave the ICRC alone, any other bit
// must change it.
void check_masking(const Bytes& ip_udp, const std::vector<uint8_t>& mask_of_byte) {
  const Bytes t = transport();
  const Bytes pl = bytes_of("123456789");
  const uint32_t base = icrc(ip_udp, t, pl).value();
  for (size_t i = 0; i < ip_udp.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes b = ip_udp;
      b[i] = static_cast<uint8_t>(b[i] ^ (1u << bit));
      const auto r = icrc(b, t, pl);
      if (!r.ok()) {  // changed the version nibble or IHL: not an ICRC input any more
        EXPECT_EQ(i, 0u);
        continue;
      }
      const bool masked = (mask_of_byte[i] >> bit) & 1u;
      if (masked)
        EXPECT_EQ(*r, base) << "masked byte " << i << " bit " << bit;
      else
        EXPECT_NE(*r, base) << "covered byte " << i << " bit " << bit;
    }
  }
  for (size_t i = 0; i < t.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes b = t;
      b[i] = static_cast<uint8_t>(b[i] ^ (1u << bit));
      if (i == 4)
        EXPECT_EQ(icrc(ip_udp, b, pl).value(), base) << "BTH resv8a bit " << bit;
      else
        EXPECT_NE(icrc(ip_udp, b, pl).value(), base) << "transport byte " << i << " bit " << bit;
    }
  }
  for (size_t i = 0; i < pl.size(); ++i) {
    Bytes p = pl;
    p[i] = static_cast<uint8_t>(p[i] ^ 0x01u);
    EXPECT_NE(icrc(ip_udp, t, p).value(), base) << "payload byte " << i;
  }
}

TEST(Icrc, Ipv6MasksTrafficClassFlowLabelHopLimitAndUdpChecksum) {
  std::vector<uint8_t> mask(48, 0x00);
  mask[0] = 0x0F;                       // traffic class high nibble
  mask[1] = mask[2] = mask[3] = 0xFF;   // traffic class low nibble + flow label
  mask[7] = 0xFF;                       // hop limit
  mask[46] = mask[47] = 0xFF;           // UDP checksum
  check_masking(ipv6_udp(), mask);
}

TEST(Icrc, Ipv4MasksTosTtlChecksumAndUdpChecksum) {
  std::vector<uint8_t> mask(28, 0x00);
  mask[1] = 0xFF;                       // TOS
  mask[8] = 0xFF;                       // TTL
  mask[10] = mask[11] = 0xFF;           // header checksum
  mask[26] = mask[27] = 0xFF;           // UDP checksum
  check_masking(ipv4_udp(), mask);
}

TEST(Icrc, RejectsWhatIsNotOneIpHeaderPlusUdp) {
  const Bytes t = transport();
  EXPECT_EQ(icrc(Bytes{}, t, {}).error(), Errc::invalid_argument);
  Bytes v6 = ipv6_udp();
  EXPECT_EQ(icrc(Bytes(v6.begin(), v6.end() - 1), t, {}).error(), Errc::invalid_argument);
  v6.push_back(0);
  EXPECT_EQ(icrc(v6, t, {}).error(), Errc::invalid_argument);
  Bytes v4 = ipv4_udp();
  v4[0] = 0x46;  // IHL 6: options
  EXPECT_EQ(icrc(v4, t, {}).error(), Errc::invalid_argument);
  v4[0] = 0x55;  // version 5
  EXPECT_EQ(icrc(v4, t, {}).error(), Errc::invalid_argument);
  // A 48-byte span that is not IPv6, a 28-byte one that is not IPv4.
  Bytes not6 = ipv6_udp();
  not6[0] = 0x45;
  EXPECT_EQ(icrc(not6, t, {}).error(), Errc::invalid_argument);
  EXPECT_EQ(icrc(ipv4_udp(), Bytes(kBth.begin(), kBth.end() - 1), {}).error(),
            Errc::invalid_argument);
}

TEST(Icrc, TravelsLeastSignificantByteFirst) {
  uint8_t b[4];
  put_icrc(0x13D93F5Bu, b);
  EXPECT_EQ(b[0], 0x5B);
  EXPECT_EQ(b[1], 0x3F);
  EXPECT_EQ(b[2], 0xD9);
  EXPECT_EQ(b[3], 0x13);
  EXPECT_EQ(get_icrc(b), 0x13D93F5Bu);
  EXPECT_EQ(kIcrcBytes, 4u);
  // The same order as a CRC-32 trailer: running the CRC over data + trailer
  // leaves the CRC-32 residue (0x2144DF1C after the final inversion).
  Bytes d = bytes_of("123456789");
  const uint32_t c = ~crc32_update(0xFFFFFFFFu, d);
  uint8_t t[4];
  put_icrc(c, t);
  d.insert(d.end(), t, t + 4);
  EXPECT_EQ(~crc32_update(0xFFFFFFFFu, d), 0x2144DF1Cu);
}

}  // namespace
}  // namespace mrc::wire
