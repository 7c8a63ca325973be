// SPDX-License-Identifier: BSD-2-Clause
#include "platform/memory_guard.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <vector>

namespace mrc::platform {
namespace {

size_t page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

TEST(MemoryGuard, RangeMappedSeesHolesAndNull) {
  uint8_t* m = static_cast<uint8_t*>(mmap(nullptr, 3 * page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m, MAP_FAILED);
  EXPECT_TRUE(range_mapped(m + 1, 3 * page() - 1));
  ASSERT_EQ(munmap(m + page(), page()), 0);
  EXPECT_FALSE(range_mapped(m, 3 * page()));
  EXPECT_FALSE(range_mapped(m + page() + 8, 8));
  EXPECT_TRUE(range_mapped(m, page()));
  EXPECT_FALSE(range_mapped(nullptr, 16));
  EXPECT_FALSE(range_mapped(m, 0));
  munmap(m, page());
  munmap(m + 2 * page(), page());
}

TEST(MemoryGuard, ACopyIntoMemoryThatIsGoneFailsAndTheProcessLives) {
  if (!install_fault_guard()) GTEST_SKIP() << "another SIGSEGV handler (a sanitizer's) replaced ours";
  uint8_t* m = static_cast<uint8_t*>(mmap(nullptr, 2 * page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m, MAP_FAILED);
  std::vector<uint8_t> src(2 * page(), 0x77);
  EXPECT_TRUE(guarded_copy(m, src.data(), src.size()));
  EXPECT_EQ(m[2 * page() - 1], 0x77);
  // Read-only: SIGSEGV on write.
  ASSERT_EQ(mprotect(m + page(), page(), PROT_READ), 0);
  EXPECT_FALSE(guarded_copy(m, src.data(), src.size()));
  // Unmapped.
  ASSERT_EQ(munmap(m, 2 * page()), 0);
  EXPECT_FALSE(guarded_copy(m, src.data(), 64));
  // And again: the signal is not left blocked by the jump out.
  EXPECT_FALSE(guarded_copy(m + 8, src.data(), 64));
}

TEST(MemoryGuard, AFaultOutsideAGuardedCopyStillKillsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        install_fault_guard();
        volatile uint8_t* p = static_cast<volatile uint8_t*>(
            mmap(nullptr, page(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        p[0] = 1;
      },
      "");
}

}  // namespace
}  // namespace mrc::platform
