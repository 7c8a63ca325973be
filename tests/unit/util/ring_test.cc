// SPDX-License-Identifier: BSD-2-Clause
// Tests for util/ring.hpp: FIFO and LIFO order across growth and wrap-around,
// erasure in the middle, and a long random mix of operations checked against
// std::deque.
#include "util/ring.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>

#include "util/prng.hpp"

namespace mrc {
namespace {

TEST(Ring, StartsEmptyWithoutStorage) {
  Ring<int> r;
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.capacity(), 0u);
}

TEST(Ring, FifoOrderSurvivesGrowthWhileWrapped) {
  Ring<uint64_t> r;
  uint64_t next_in = 0, next_out = 0;
  // Keep 5 values queued so head moves round the ring, then grow it while the
  // live values straddle the end of the array.
  for (int i = 0; i < 5; ++i) r.push_back(next_in++);
  for (int i = 0; i < 100; ++i) {
    r.push_back(next_in++);
    ASSERT_EQ(r.front(), next_out);
    r.pop_front();
    ++next_out;
  }
  EXPECT_EQ(r.capacity(), 8u);
  for (int i = 0; i < 50; ++i) r.push_back(next_in++);
  EXPECT_EQ(r.capacity(), 64u);
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i], next_out + i);
  EXPECT_EQ(r.back(), next_in - 1);
}

TEST(Ring, PushFrontAndPopBackWorkAsAStack) {
  Ring<int> r;
  for (int i = 0; i < 20; ++i) r.push_front(i);
  EXPECT_EQ(r.front(), 19);
  EXPECT_EQ(r.back(), 0);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(r.back(), i);
    r.pop_back();
  }
  EXPECT_TRUE(r.empty());
}

TEST(Ring, EraseAtKeepsOrderFromEitherSide) {
  Ring<int> r;
  for (int i = 0; i < 10; ++i) r.push_back(i);
  r.erase_at(2);  // nearer the front
  r.erase_at(6);  // nearer the back (value 7)
  const int want[] = {0, 1, 3, 4, 5, 6, 8, 9};
  ASSERT_EQ(r.size(), 8u);
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i], want[i]);
}

TEST(Ring, EraseValueRemovesEveryCopy) {
  Ring<int> r;
  for (int i : {1, 2, 1, 3, 1}) r.push_back(i);
  EXPECT_EQ(r.erase(1), 3u);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], 2);
  EXPECT_EQ(r[1], 3);
  EXPECT_EQ(r.erase(7), 0u);
}

TEST(Ring, ClearKeepsStorageAndCopiesAreIndependent) {
  Ring<int> r;
  for (int i = 0; i < 30; ++i) r.push_back(i);
  Ring<int> c = r;
  r.clear();
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.capacity(), 32u);
  ASSERT_EQ(c.size(), 30u);
  EXPECT_EQ(c[29], 29);
  r = c;
  EXPECT_EQ(r.size(), 30u);
  EXPECT_EQ(r.front(), 0);
}

TEST(Ring, RandomOperationsMatchStdDeque) {
  Prng rng(42);
  Ring<uint32_t> r;
  std::deque<uint32_t> d;
  for (int step = 0; step < 200000; ++step) {
    const uint64_t op = rng.below(100);
    const uint32_t v = rng.next_u32();
    if (op < 35) {
      r.push_back(v), d.push_back(v);
    } else if (op < 45) {
      r.push_front(v), d.push_front(v);
    } else if (op < 80 && !d.empty()) {
      r.pop_front(), d.pop_front();
    } else if (op < 90 && !d.empty()) {
      r.pop_back(), d.pop_back();
    } else if (op < 97 && !d.empty()) {
      const size_t i = rng.below(d.size());
      r.erase_at(i);
      d.erase(d.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op < 98) {
      r.clear(), d.clear();
    }
    ASSERT_EQ(r.size(), d.size()) << "step " << step;
    if (!d.empty()) {
      ASSERT_EQ(r.front(), d.front()) << "step " << step;
      ASSERT_EQ(r.back(), d.back()) << "step " << step;
      const size_t i = rng.below(d.size());
      ASSERT_EQ(r[i], d[i]) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace mrc
