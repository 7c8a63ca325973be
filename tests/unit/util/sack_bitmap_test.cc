// SPDX-License-Identifier: BSD-2-Clause
// Tests for util/sack_bitmap.hpp, including word boundaries, ring wrap and a
// randomized comparison against a std::set reference model.
#include "util/sack_bitmap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "util/prng.hpp"

namespace mrc {
namespace {

TEST(SackBitmap, CapacityRounding) {
  // words = bit_ceil(ceil(bits/64) + 1); capacity = (words - 1) * 64.
  EXPECT_EQ(SackBitmap(1).capacity(), 64u);
  EXPECT_EQ(SackBitmap(64).capacity(), 64u);
  EXPECT_EQ(SackBitmap(65).capacity(), 192u);
  EXPECT_EQ(SackBitmap(192).capacity(), 192u);
  EXPECT_EQ(SackBitmap(193).capacity(), 448u);
  EXPECT_EQ(SackBitmap(1024).capacity(), 1984u);
  for (uint64_t bits : {1u, 63u, 64u, 65u, 100u, 500u, 1000u, 32640u})
    EXPECT_GE(SackBitmap(bits).capacity(), bits) << bits;
  const SackBitmap empty;
  EXPECT_EQ(empty.capacity(), 0u);
  EXPECT_FALSE(empty.in_window(0));
  EXPECT_FALSE(empty.test(0));
}

TEST(SackBitmap, InitialState) {
  SackBitmap b(128, 1000);
  EXPECT_EQ(b.base(), 1000u);
  EXPECT_EQ(b.capacity(), 192u);
  EXPECT_EQ(b.limit(), 1192u);
  EXPECT_EQ(b.count(), 0u);
  EXPECT_TRUE(b.test(999));   // below base reads as set
  EXPECT_TRUE(b.test(0));
  EXPECT_FALSE(b.test(1000));
  EXPECT_FALSE(b.test(1191));
  EXPECT_FALSE(b.test(1192));
  EXPECT_TRUE(b.in_window(1000));
  EXPECT_TRUE(b.in_window(1191));
  EXPECT_FALSE(b.in_window(1192));
  EXPECT_FALSE(b.in_window(999));
  EXPECT_EQ(b.next_unset(0), 1000u);
  EXPECT_EQ(b.advance(), 0u);
}

TEST(SackBitmap, SetTestDuplicatesAndOutsideWindow) {
  SackBitmap b(128, 0);  // capacity 192
  EXPECT_TRUE(b.set(5));
  EXPECT_TRUE(b.test(5));
  EXPECT_FALSE(b.test(4));
  EXPECT_FALSE(b.test(6));
  EXPECT_EQ(b.count(), 1u);
  EXPECT_FALSE(b.set(5));  // duplicate
  EXPECT_EQ(b.count(), 1u);
  EXPECT_TRUE(b.set(191));  // last in window
  EXPECT_FALSE(b.set(192));  // one past
  EXPECT_FALSE(b.set(1'000'000));
  EXPECT_FALSE(b.test(192));
  EXPECT_EQ(b.count(), 2u);
  // Below base after advancing is rejected and reads as set.
  b.advance_to(10);
  EXPECT_FALSE(b.set(3));
  EXPECT_TRUE(b.test(3));
  EXPECT_EQ(b.count(), 1u);  // 5 was passed over
}

TEST(SackBitmap, WordBoundaries) {
  SackBitmap b(256, 0);
  for (uint64_t s : {63u, 64u, 127u, 128u}) EXPECT_TRUE(b.set(s));
  EXPECT_TRUE(b.test(63));
  EXPECT_TRUE(b.test(64));
  EXPECT_FALSE(b.test(62));
  EXPECT_FALSE(b.test(65));
  EXPECT_EQ(b.next_unset(63), 65u);
  EXPECT_EQ(b.next_unset(127), 129u);
  EXPECT_EQ(b.next_unset(0), 0u);
  // extract64 straddling words 0 and 1: start 60 -> bits 3 (63) and 4 (64).
  EXPECT_EQ(b.extract64(60), (uint64_t{1} << 3) | (uint64_t{1} << 4));
  // Fill 0..62 and advance across the word boundary: stops at 65.
  for (uint64_t s = 0; s < 63; ++s) EXPECT_TRUE(b.set(s));
  EXPECT_EQ(b.advance(), 65u);
  EXPECT_EQ(b.base(), 65u);
  EXPECT_EQ(b.count(), 2u);  // 127, 128
  // A run covering exactly one whole aligned word.
  for (uint64_t s = 65; s < 127; ++s) EXPECT_TRUE(b.set(s));
  EXPECT_EQ(b.advance(), 64u);  // 65..128
  EXPECT_EQ(b.base(), 129u);
  EXPECT_EQ(b.count(), 0u);
}

TEST(SackBitmap, AdvanceWholeWordsFromAlignedBase) {
  SackBitmap b(256, 128);  // capacity 448
  for (uint64_t s = 128; s < 128 + 256; ++s) ASSERT_TRUE(b.set(s));
  EXPECT_EQ(b.count(), 256u);
  EXPECT_EQ(b.advance(), 256u);
  EXPECT_EQ(b.base(), 384u);
  EXPECT_EQ(b.count(), 0u);
  EXPECT_EQ(b.advance(), 0u);
}

TEST(SackBitmap, AdvanceToClearsAndCounts) {
  SackBitmap b(256, 0);
  for (uint64_t s : {1u, 2u, 70u, 71u, 200u}) ASSERT_TRUE(b.set(s));
  b.advance_to(71);
  EXPECT_EQ(b.base(), 71u);
  EXPECT_EQ(b.count(), 2u);  // 71 and 200 remain
  EXPECT_TRUE(b.test(71));
  EXPECT_EQ(b.advance(), 1u);
  EXPECT_EQ(b.base(), 72u);
  // advance_to to the current base or below is a no-op.
  b.advance_to(72);
  b.advance_to(10);
  EXPECT_EQ(b.base(), 72u);
  EXPECT_EQ(b.count(), 1u);
  // Far beyond the window: everything is dropped, window restarts there.
  b.advance_to(1'000'000'007);
  EXPECT_EQ(b.base(), 1'000'000'007u);
  EXPECT_EQ(b.count(), 0u);
  EXPECT_FALSE(b.test(1'000'000'007));
  EXPECT_FALSE(b.test(1'000'000'007 + 200));
  EXPECT_TRUE(b.set(1'000'000'007 + 200));
  EXPECT_EQ(b.next_unset(1'000'000'007), 1'000'000'007u);
  EXPECT_EQ(b.next_unset(1'000'000'007 + 200), 1'000'000'007u + 201);
}

TEST(SackBitmap, AdvanceToMidWordKeepsHigherBits) {
  SackBitmap b(128, 0);
  for (uint64_t s = 0; s < 64; ++s) ASSERT_TRUE(b.set(s));
  b.advance_to(30);
  EXPECT_EQ(b.count(), 34u);
  EXPECT_EQ(b.extract64(30), (uint64_t{1} << 34) - 1);  // 30..63 set, 64..93 clear
  EXPECT_EQ(b.advance(), 34u);
  EXPECT_EQ(b.base(), 64u);
}

TEST(SackBitmap, Extract64) {
  SackBitmap b(128, 100);  // capacity 192, limit 292
  ASSERT_TRUE(b.set(100));
  ASSERT_TRUE(b.set(163));
  ASSERT_TRUE(b.set(164));
  EXPECT_EQ(b.extract64(100), (uint64_t{1} << 0) | (uint64_t{1} << 63));
  EXPECT_EQ(b.extract64(101), uint64_t{1} << 62 | uint64_t{1} << 63);
  // Below base reads as 1: start 90 -> bits 0..9 set, bit 10 = seq 100 set.
  EXPECT_EQ(b.extract64(90), (uint64_t{1} << 11) - 1);
  // Everything below base.
  EXPECT_EQ(b.extract64(0), ~uint64_t{0});
  // Beyond the window reads as 0; [260, 324) has nothing set.
  EXPECT_EQ(b.extract64(260), 0u);
  EXPECT_EQ(b.extract64(10'000), 0u);
}

TEST(SackBitmap, NextUnset) {
  SackBitmap b(128, 0);  // capacity 192
  EXPECT_EQ(b.next_unset(0), 0u);
  for (uint64_t s = 0; s < 130; ++s) ASSERT_TRUE(b.set(s));
  EXPECT_EQ(b.next_unset(0), 130u);
  EXPECT_EQ(b.next_unset(64), 130u);
  EXPECT_EQ(b.next_unset(131), 131u);
  // Full window -> limit().
  for (uint64_t s = 130; s < 192; ++s) ASSERT_TRUE(b.set(s));
  EXPECT_EQ(b.next_unset(0), b.limit());
  EXPECT_EQ(b.next_unset(191), 192u);
  EXPECT_EQ(b.next_unset(500), 192u);  // from beyond limit -> limit
  EXPECT_EQ(b.advance(), 192u);
  EXPECT_EQ(b.base(), 192u);
  EXPECT_EQ(b.next_unset(0), 192u);
}

TEST(SackBitmap, RingWrapManyTimes) {
  // Walk the window through 100x its capacity with a hole pattern that
  // straddles words, checking state at every step: exercises aliasing of the
  // ring words across laps.
  SackBitmap b(128, 37);  // capacity 192, unaligned base
  const uint64_t cap = b.capacity();
  uint64_t next = b.base();
  const uint64_t end = 37 + 100 * cap;
  while (next < end) {
    // Set next+1 .. next+9 (leaving `next` as a hole), then fill the hole.
    for (uint64_t s = next + 1; s < next + 10; ++s) ASSERT_TRUE(b.set(s)) << s;
    ASSERT_EQ(b.next_unset(next), next);
    ASSERT_EQ(b.next_unset(next + 1), next + 10);
    ASSERT_EQ(b.advance(), 0u);
    ASSERT_FALSE(b.test(next));
    ASSERT_EQ(b.extract64(next), uint64_t{0x3FE});
    ASSERT_TRUE(b.set(next));
    ASSERT_EQ(b.advance(), 10u);
    next += 10;
    ASSERT_EQ(b.base(), next);
    ASSERT_EQ(b.count(), 0u);
    ASSERT_EQ(b.limit(), next + cap);
    // The far end of the window is still clean after many laps.
    ASSERT_FALSE(b.test(b.limit() - 1));
    ASSERT_EQ(b.extract64(b.limit() - 64), 0u);
  }
  // Fill the whole window at the end and drain it.
  for (uint64_t s = b.base(); s < b.limit(); ++s) ASSERT_TRUE(b.set(s));
  EXPECT_EQ(b.count(), cap);
  EXPECT_EQ(b.advance(), cap);
  EXPECT_EQ(b.count(), 0u);
}

TEST(SackBitmap, ResetClears) {
  SackBitmap b(64, 0);
  ASSERT_TRUE(b.set(3));
  b.reset(256, 500);
  EXPECT_EQ(b.base(), 500u);
  EXPECT_EQ(b.count(), 0u);
  EXPECT_EQ(b.capacity(), 448u);
  EXPECT_FALSE(b.test(503));
  EXPECT_FALSE(b.test(512 + 3));
}

// Reference model: the set of flags at or above base, plus base and capacity.
class Model {
 public:
  Model(uint64_t cap, uint64_t base) : cap_(cap), base_(base) {}
  bool set(uint64_t s) {
    if (s < base_ || s >= base_ + cap_) return false;
    return flags_.insert(s).second;
  }
  bool test(uint64_t s) const {
    if (s < base_) return true;
    if (s >= base_ + cap_) return false;
    return flags_.count(s) != 0;
  }
  uint64_t advance() {
    uint64_t n = 0;
    while (!flags_.empty() && *flags_.begin() == base_) {
      flags_.erase(flags_.begin());
      ++base_;
      ++n;
    }
    return n;
  }
  void advance_to(uint64_t nb) {
    if (nb <= base_) return;
    flags_.erase(flags_.begin(), flags_.lower_bound(nb));
    base_ = nb;
  }
  uint64_t extract64(uint64_t start) const {
    uint64_t out = 0;
    for (unsigned i = 0; i < 64; ++i)
      if (test(start + i)) out |= uint64_t{1} << i;
    return out;
  }
  uint64_t next_unset(uint64_t from) const {
    uint64_t s = std::max(from, base_);
    while (s < base_ + cap_ && flags_.count(s)) ++s;
    return std::min(s, base_ + cap_);
  }
  uint64_t base() const { return base_; }
  uint64_t count() const { return flags_.size(); }

 private:
  uint64_t cap_, base_;
  std::set<uint64_t> flags_;
};

TEST(SackBitmap, RandomizedAgainstReferenceModel) {
  Prng rng(0x5AC4B17);
  for (uint64_t bits : {64u, 200u, 1000u}) {
    const uint64_t start = rng.below(1u << 20);
    SackBitmap b(bits, start);
    const uint64_t cap = b.capacity();
    Model m(cap, start);
    for (int step = 0; step < 20'000; ++step) {
      const uint64_t op = rng.below(100);
      // Sequence numbers from a little below base to a little past limit.
      const uint64_t s = m.base() + rng.below(cap + 40) - std::min<uint64_t>(m.base(), 20);
      if (op < 60) {
        ASSERT_EQ(b.set(s), m.set(s)) << "set " << s << " step " << step;
      } else if (op < 75) {
        ASSERT_EQ(b.test(s), m.test(s)) << "test " << s;
      } else if (op < 85) {
        ASSERT_EQ(b.advance(), m.advance()) << "advance step " << step;
      } else if (op < 88) {
        const uint64_t nb = m.base() + rng.below(cap / 2 + 2);
        b.advance_to(nb);
        m.advance_to(nb);
      } else if (op < 89) {
        const uint64_t nb = m.base() + cap + rng.below(3 * cap);  // jump past the window
        b.advance_to(nb);
        m.advance_to(nb);
      } else if (op < 95) {
        ASSERT_EQ(b.extract64(s), m.extract64(s)) << "extract64 " << s;
      } else {
        ASSERT_EQ(b.next_unset(s), m.next_unset(s)) << "next_unset " << s;
      }
      ASSERT_EQ(b.base(), m.base()) << "step " << step;
      ASSERT_EQ(b.count(), m.count()) << "step " << step;
    }
    // The window must have wrapped the ring many times.
    EXPECT_GT(b.base() - start, 5 * cap) << bits;
  }
}

}  // namespace
}  // namespace mrc
