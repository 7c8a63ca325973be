// SPDX-License-Identifier: BSD-2-Clause
#include "runtime/spsc_ring.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <thread>

namespace mrc::rt {
namespace {

TEST(SpscRing, HoldsItsCapacityThenRefuses) {
  SpscRing<int> r(5);
  EXPECT_EQ(r.capacity(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(r.push(i));
  EXPECT_FALSE(r.push(8));
  std::array<int, 3> out;
  ASSERT_EQ(r.pop(out), 3u);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[2], 2);
  EXPECT_TRUE(r.push(8));
  EXPECT_EQ(r.size(), 6u);
}

TEST(SpscRing, AProducerAndAConsumerThreadSeeEveryValueOnceInOrder) {
  SpscRing<uint64_t> r(64);
  constexpr uint64_t kN = 50000;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kN;) {
      if (r.push(i))
        ++i;
      else
        std::this_thread::yield();  // two cores: let the consumer run
    }
  });
  uint64_t next = 0;
  std::array<uint64_t, 16> out;
  while (next < kN) {
    const size_t k = r.pop(out);
    for (size_t i = 0; i < k; ++i) ASSERT_EQ(out[i], next++);
    if (k == 0) std::this_thread::yield();
  }
  producer.join();
  EXPECT_EQ(r.size(), 0u);
}

}  // namespace
}  // namespace mrc::rt
