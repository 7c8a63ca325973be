// SPDX-License-Identifier: BSD-2-Clause
// Tests for platform/sched.hpp: the calling thread's scheduling class.
#include "platform/sched.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

namespace mrc::platform {
namespace {

int my_policy() { return sched_getscheduler(0); }

TEST(PlatformSched, YieldsOnWakeIsBatchAndBackKeepsTheNiceValue) {
  // In a thread of its own: the change belongs to the calling thread only.
  std::thread t([] {
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    ASSERT_EQ(setpriority(PRIO_PROCESS, tid, 5), 0);
    ASSERT_EQ(my_policy(), SCHED_OTHER);
    ASSERT_TRUE(set_thread_yields_on_wake(true).ok());
    EXPECT_EQ(my_policy(), SCHED_BATCH);
    EXPECT_EQ(getpriority(PRIO_PROCESS, tid), 5);
    ASSERT_TRUE(set_thread_yields_on_wake(false).ok());
    EXPECT_EQ(my_policy(), SCHED_OTHER);
    EXPECT_EQ(getpriority(PRIO_PROCESS, tid), 5);
  });
  t.join();
  EXPECT_EQ(my_policy(), SCHED_OTHER) << "the test's own thread is untouched";
}

}  // namespace
}  // namespace mrc::platform
