// Tests for wire/icrc.hpp: the CRC-32 against its published check value and a
// bit-at-a-time reference, and the ICRC's coverage and masking.
#include "wire/icrc.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "util/prng.hpp"
#include "wire/headers.hpp"

namespace mrc::wire {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

uint32_t crc32(const Bytes& b) { return ~crc32_update(0xFFFFFFFFu, b); }

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

TEST(Crc32, CheckValue) {
  // The CRC-32/ISO-HDLC check value (also zlib.crc32(b"123456789")).
  EXPECT_EQ(crc32(bytes_of("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32({}), 0u);
}

TEST(Crc32, MatchesBitwiseReferenceAtEveryLengthAndAlignment) {
  Prng rng(0xC8C);
  Bytes big(300);
  for (auto& x : big) x = static_cast<uint8_t>(rng.next_u64());
  for (size_t off = 0; off < 8; ++off) {
    for (size_t len = 0; len + off <= 80; ++len) {
      const Bytes b(big.begin() + static_cast<long>(off), big.begin() + static_cast<long>(off + len));
      ASSERT_EQ(crc32(b), reference_crc32(b)) << off << " " << len;
    }
  }
  EXPECT_EQ(crc32(big), reference_crc32(big));
}

TEST(Crc32, IncrementalUpdateEqualsOneShot) {
  Prng rng(7);
  Bytes b(100);
  for (auto& x : b) x = static_cast<uint8_t>(rng.next_u64());
  const uint32_t whole = crc32(b);
  for (size_t split = 0; split <= b.size(); ++split) {
    uint32_t c = crc32_update(0xFFFFFFFFu, std::span<const uint8_t>(b.data(), split));
    c = crc32_update(c, std::span<const uint8_t>(b.data() + split, b.size() - split));
    ASSERT_EQ(~c, whole) << split;
  }
}

TEST(Icrc, KnownAnswer) {
  // zlib.crc32(b"\xff"*8 + BTH with byte 4 set to 0xFF + b"123456789").
  EXPECT_EQ(icrc(kBth, bytes_of("123456789")), 0x26ED4915u);
  // Headers shorter than a BTH are covered as they are, after the 8 masked bytes.
  const Bytes five = {0, 1, 2, 3, 4};
  EXPECT_EQ(icrc(five, {}), 0x7171307Fu);
}

TEST(Icrc, EqualsCrcOfMaskedConcatenation) {
  Prng rng(11);
  Bytes hdr = kBth;
  for (int i = 0; i < 24; ++i) hdr.push_back(static_cast<uint8_t>(rng.next_u64()));
  Bytes payload(1000);
  for (auto& x : payload) x = static_cast<uint8_t>(rng.next_u64());
  Bytes masked = hdr;
  masked[4] = 0xFF;
  Bytes all(8, 0xFF);
  all.insert(all.end(), masked.begin(), masked.end());
  all.insert(all.end(), payload.begin(), payload.end());
  EXPECT_EQ(icrc(hdr, payload), reference_crc32(all));
}

TEST(Icrc, SplitBetweenHeadersAndPayloadDoesNotMatter) {
  Bytes pkt = kBth;
  for (int i = 0; i < 60; ++i) pkt.push_back(static_cast<uint8_t>(i * 13));
  const uint32_t want = icrc(std::span<const uint8_t>(pkt.data(), 12),
                             std::span<const uint8_t>(pkt.data() + 12, pkt.size() - 12));
  for (size_t h = Bth::kSize; h <= pkt.size(); ++h) {
    EXPECT_EQ(icrc(std::span<const uint8_t>(pkt.data(), h),
                   std::span<const uint8_t>(pkt.data() + h, pkt.size() - h)),
              want)
        << h;
  }
}

TEST(Icrc, MasksOnlyBthReservedByte) {
  Bytes hdr = kBth;
  hdr.resize(40, 0x11);
  const Bytes payload(64, 0x22);
  const uint32_t base = icrc(hdr, payload);
  // Byte 4 of BTH may change in flight: any value gives the same ICRC.
  for (unsigned v = 0; v < 256; ++v) {
    Bytes h = hdr;
    h[4] = static_cast<uint8_t>(v);
    ASSERT_EQ(icrc(h, payload), base) << v;
  }
  // Every other bit is covered: a CRC catches any single-bit flip.
  for (size_t i = 0; i < hdr.size(); ++i) {
    if (i == 4) continue;
    for (int bit = 0; bit < 8; ++bit) {
      Bytes h = hdr;
      h[i] = static_cast<uint8_t>(h[i] ^ (1u << bit));
      ASSERT_NE(icrc(h, payload), base) << "header byte " << i << " bit " << bit;
    }
  }
  for (size_t i = 0; i < payload.size(); ++i) {
    Bytes p = payload;
    p[i] = static_cast<uint8_t>(p[i] ^ 0x80u);
    ASSERT_NE(icrc(hdr, p), base) << "payload byte " << i;
  }
  EXPECT_EQ(kIcrcBytes, 4u);
}

}  // namespace
}  // namespace mrc::wire
