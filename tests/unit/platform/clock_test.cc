// SPDX-License-Identifier: BSD-2-Clause
// Tests for platform/clock.hpp.
#include "platform/clock.hpp"

#include <gtest/gtest.h>

namespace mrc::platform {
namespace {

TEST(PlatformClock, RawClockIsMonotonic) {
  Time prev = monotonic_now();
  for (int i = 0; i < 1000; ++i) {
    const Time t = monotonic_now();
    EXPECT_GE(t, prev);
    prev = t;
  }
  EXPECT_GT(prev.ps(), 0);
}

TEST(PlatformClock, RebasedClockStartsNearZero) {
  MonotonicClock c;
  const Time t = c.now();
  EXPECT_GE(t, Time::zero());
  EXPECT_LT(t, Time::zero() + Duration::s(1));  // generous: a loaded machine
  const Time later = c.now();
  EXPECT_GE(later, t);
}

TEST(PlatformClock, RawConversionsRoundTrip) {
  MonotonicClock c;
  const Time raw = monotonic_now();
  EXPECT_EQ(c.to_raw(c.from_raw(raw)), raw);
  EXPECT_EQ(c.from_raw(c.origin()), Time::zero());
}

TEST(PlatformClock, CpuTimesAdvanceWithWork) {
  const Duration t0 = thread_cpu_time(), p0 = process_cpu_time();
  volatile uint64_t x = 0;
  // Spin until the thread clock moves (bounded by the wall clock).
  const Time end = monotonic_now() + Duration::s(2);
  while (thread_cpu_time() == t0 && monotonic_now() < end) x = x + 1;
  EXPECT_GT(thread_cpu_time(), t0);
  EXPECT_GE(process_cpu_time(), p0);
}

}  // namespace
}  // namespace mrc::platform
