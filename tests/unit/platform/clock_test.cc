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

}  // namespace
}  // namespace mrc::platform
