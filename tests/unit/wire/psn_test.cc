// SPDX-License-Identifier: BSD-2-Clause
// Tests for wire/psn.hpp: 24-bit PSN and 16-bit MSN serial arithmetic.
#include "wire/psn.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "util/prng.hpp"

namespace mrc::wire {
namespace {

constexpr uint64_t k24 = uint64_t{1} << 24;

TEST(Psn, Psn24) {
  EXPECT_EQ(kPsnMask, 0xFFFFFFu);
  EXPECT_EQ(psn24(0), 0u);
  EXPECT_EQ(psn24(0xFFFFFF), 0xFFFFFFu);
  EXPECT_EQ(psn24(0x1000000), 0u);
  EXPECT_EQ(psn24(0x123456789ABCull), 0x789ABCu);
}

TEST(Psn, Diff) {
  EXPECT_EQ(psn_diff(5, 5), 0);
  EXPECT_EQ(psn_diff(6, 5), 1);
  EXPECT_EQ(psn_diff(5, 6), -1);
  // Across the wrap.
  EXPECT_EQ(psn_diff(0, 0xFFFFFF), 1);
  EXPECT_EQ(psn_diff(0xFFFFFF, 0), -1);
  EXPECT_EQ(psn_diff(0x10, 0xFFFFF0), 0x20);
  EXPECT_EQ(psn_diff(0xFFFFF0, 0x10), -0x20);
  // Range edges: [-2^23, 2^23).
  EXPECT_EQ(psn_diff(0x7FFFFF, 0), 0x7FFFFF);
  EXPECT_EQ(psn_diff(0x800000, 0), -0x800000);
  EXPECT_EQ(psn_diff(0, 0x800000), -0x800000);
  EXPECT_EQ(psn_diff(0, 0x7FFFFF), -0x7FFFFF);
  // Bits above 24 are ignored.
  EXPECT_EQ(psn_diff(0xFF000001, 0x00000000), 1);
  static_assert(psn_diff(0, 0xFFFFFF) == 1);
}

TEST(Psn, UnwrapForwardAcrossWrap) {
  // Reference just below 2^24; wire value just after the wrap.
  EXPECT_EQ(unwrap_psn(0xFFFFF0, 0x000005), 0x1000005u);
  EXPECT_EQ(unwrap_psn(0xFFFFFF, 0x000000), 0x1000000u);
  // Several laps in.
  EXPECT_EQ(unwrap_psn(3 * k24 + 0xFFFFFE, 0x000003), 4 * k24 + 3);
  // Furthest forward value still taken as forward: ref + 2^23 - 1.
  EXPECT_EQ(unwrap_psn(10 * k24, 0x7FFFFF), 10 * k24 + 0x7FFFFF);
}

TEST(Psn, UnwrapBackwardAcrossWrap) {
  EXPECT_EQ(unwrap_psn(0x1000005, 0xFFFFF0), 0xFFFFF0u);
  EXPECT_EQ(unwrap_psn(0x1000000, 0xFFFFFF), 0xFFFFFFu);
  EXPECT_EQ(unwrap_psn(4 * k24 + 3, 0xFFFFFE), 3 * k24 + 0xFFFFFE);
  // Exactly 2^23 away is taken as backward.
  EXPECT_EQ(unwrap_psn(10 * k24, 0x800000), 10 * k24 - 0x800000);
}

TEST(Psn, UnwrapSameLap) {
  EXPECT_EQ(unwrap_psn(1000, 1000), 1000u);
  EXPECT_EQ(unwrap_psn(1000, 1010), 1010u);
  EXPECT_EQ(unwrap_psn(1000, 990), 990u);
  EXPECT_EQ(unwrap_psn(5 * k24 + 100, 50), 5 * k24 + 50);
  // Wire bits above 24 are ignored.
  EXPECT_EQ(unwrap_psn(1000, 0xAB0003EA), 1002u);
}

TEST(Psn, UnwrapNeverBelowZero) {
  // Nearest value would be negative: the next lap up is returned.
  EXPECT_EQ(unwrap_psn(5, 0xFFFFFE), 0xFFFFFEu);
  EXPECT_EQ(unwrap_psn(0, 0xFFFFFF), 0xFFFFFFu);
  EXPECT_EQ(unwrap_psn(0, 0x800000), 0x800000u);
}

TEST(Psn, UnwrapRandomizedWithinHalfRange) {
  Prng rng(0x9516);
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t ref = (uint64_t{1} << 23) + rng.below(uint64_t{1} << 40);
    const int64_t d = static_cast<int64_t>(rng.below(k24)) - (int64_t{1} << 23);  // [-2^23, 2^23)
    const uint64_t truth = static_cast<uint64_t>(static_cast<int64_t>(ref) + d);
    ASSERT_EQ(unwrap_psn(ref, psn24(truth)), truth) << ref << " " << d;
    ASSERT_EQ(psn_diff(psn24(truth), psn24(ref)), d);
  }
}

TEST(Psn, Unwrap16) {
  EXPECT_EQ(unwrap16(100, 100), 100u);
  EXPECT_EQ(unwrap16(100, 101), 101u);
  EXPECT_EQ(unwrap16(100, 99), 99u);
  // Forward across the 2^16 wrap.
  EXPECT_EQ(unwrap16(0xFFFF, 2), 0x10002u);
  EXPECT_EQ(unwrap16(0x2FFF0, 0x0005), 0x30005u);
  // Backward across the wrap.
  EXPECT_EQ(unwrap16(0x10002, 0xFFFF), 0xFFFFu);
  EXPECT_EQ(unwrap16(0x30005, 0xFFF0), 0x2FFF0u);
  // Edges of [-2^15, 2^15).
  EXPECT_EQ(unwrap16(0x50000, 0x7FFF), 0x57FFFu);
  EXPECT_EQ(unwrap16(0x50000, 0x8000), 0x48000u);
  // Never below zero.
  EXPECT_EQ(unwrap16(1, 0xFFFF), 0xFFFFu);
  EXPECT_EQ(unwrap16(0, 0x8000), 0x8000u);
  static_assert(unwrap16(0xFFFF, 0) == 0x10000);
}

TEST(Psn, Unwrap16Randomized) {
  Prng rng(0x3516);
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t ref = 0x8000 + rng.below(uint64_t{1} << 40);
    const int64_t d = static_cast<int64_t>(rng.below(0x10000)) - 0x8000;
    const uint64_t truth = static_cast<uint64_t>(static_cast<int64_t>(ref) + d);
    ASSERT_EQ(unwrap16(ref, static_cast<uint16_t>(truth)), truth);
  }
}

}  // namespace
}  // namespace mrc::wire
