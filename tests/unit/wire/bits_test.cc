// SPDX-License-Identifier: BSD-2-Clause
// Tests for wire/bits.hpp: put_bits/get_bits at every alignment and width,
// including 64-bit fields that straddle nine bytes, against a bit-at-a-time
// reference.
#include "wire/bits.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "util/prng.hpp"

namespace mrc::wire::detail {
namespace {

constexpr uint64_t mask(unsigned w) { return w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1; }

bool ref_bit(const uint8_t* b, unsigned bit) { return (b[bit / 8] >> (7 - bit % 8)) & 1u; }

void ref_set(uint8_t* b, unsigned bit, bool v) {
  const uint8_t m = static_cast<uint8_t>(0x80u >> (bit % 8));
  b[bit / 8] = static_cast<uint8_t>(v ? (b[bit / 8] | m) : (b[bit / 8] & ~m));
}

TEST(Bits, KnownAnswers) {
  std::array<uint8_t, 4> b{};
  put_bits(b.data(), 4, 8, 0xAB);  // straddles bytes 0 and 1: 0000 1010 | 1011 0000
  EXPECT_EQ(b, (std::array<uint8_t, 4>{0x0A, 0xB0, 0, 0}));
  EXPECT_EQ(get_bits(b.data(), 4, 8), 0xABu);
  EXPECT_EQ(get_bits(b.data(), 0, 16), 0x0AB0u);
  EXPECT_EQ(get_bits(b.data(), 4, 4), 0xAu);
  put_bits(b.data(), 31, 1, 1);
  EXPECT_EQ(b[3], 0x01);
  put_bits(b.data(), 0, 32, 0x1234567890ull);  // wider than the field: low 32 bits
  EXPECT_EQ(b, (std::array<uint8_t, 4>{0x34, 0x56, 0x78, 0x90}));
}

TEST(Bits, PutPreservesNeighbours) {
  std::array<uint8_t, 4> b;
  b.fill(0xFF);
  put_bits(b.data(), 5, 9, 0);  // clears bits 5..13
  EXPECT_EQ(b, (std::array<uint8_t, 4>{0xF8, 0x03, 0xFF, 0xFF}));
  put_bits(b.data(), 5, 9, 0x1FF);
  EXPECT_EQ(b, (std::array<uint8_t, 4>{0xFF, 0xFF, 0xFF, 0xFF}));
  b.fill(0);
  put_bits(b.data(), 8, 16, 0xFFFFFF);  // byte-aligned path, wide value
  EXPECT_EQ(b, (std::array<uint8_t, 4>{0x00, 0xFF, 0xFF, 0x00}));
}

TEST(Bits, EveryOffsetAndWidthMatchesReference) {
  Prng rng(0xB175);
  constexpr unsigned kBytes = 12;
  for (unsigned bit = 0; bit < 24; ++bit) {
    for (unsigned width = 1; width <= 64; ++width) {
      for (int rep = 0; rep < 4; ++rep) {
        std::array<uint8_t, kBytes> buf{}, ref{};
        for (unsigned i = 0; i < kBytes; ++i) buf[i] = ref[i] = static_cast<uint8_t>(rng.next_u64());
        const uint64_t v = rng.next_u64();  // deliberately wider than the field
        put_bits(buf.data(), bit, width, v);
        for (unsigned j = 0; j < width; ++j) ref_set(ref.data(), bit + width - 1 - j, (v >> j) & 1u);
        ASSERT_EQ(buf, ref) << "bit " << bit << " width " << width;
        ASSERT_EQ(get_bits(buf.data(), bit, width), v & mask(width)) << "bit " << bit << " width " << width;
        uint64_t want = 0;
        for (unsigned j = 0; j < width; ++j) want = (want << 1) | (ref_bit(ref.data(), bit + j) ? 1u : 0u);
        ASSERT_EQ(get_bits(ref.data(), bit, width), want);
      }
    }
  }
}

}  // namespace
}  // namespace mrc::wire::detail
