// SPDX-License-Identifier: BSD-2-Clause
// Tests for util/time.hpp: Duration/Time units, exact serialization times and
// never() saturation.
#include "util/time.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace mrc {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(Duration, UnitConstructors) {
  EXPECT_EQ(Duration::ps(7).count_ps(), 7);
  EXPECT_EQ(Duration::ns(3).count_ps(), 3'000);
  EXPECT_EQ(Duration::us(3).count_ps(), 3'000'000);
  EXPECT_EQ(Duration::ms(3).count_ps(), 3'000'000'000);
  EXPECT_EQ(Duration::s(3).count_ps(), 3'000'000'000'000);
  EXPECT_EQ(Duration().count_ps(), 0);
  EXPECT_EQ(Duration::ns(-2).count_ps(), -2'000);
  // 2^63 ps is about 106 days: a day fits with room to spare.
  EXPECT_EQ(Duration::s(86'400).count_ps(), 86'400'000'000'000'000);
  static_assert(Duration::us(1) == Duration::ns(1'000));
}

TEST(Duration, Conversions) {
  EXPECT_DOUBLE_EQ(Duration::ps(1'500).to_ns(), 1.5);
  EXPECT_DOUBLE_EQ(Duration::ns(2'500).to_us(), 2.5);
  EXPECT_DOUBLE_EQ(Duration::us(250).to_ms(), 0.25);
  EXPECT_DOUBLE_EQ(Duration::ms(1'500).to_s(), 1.5);
}

TEST(Duration, Arithmetic) {
  const Duration a = Duration::ns(10), b = Duration::ps(250);
  EXPECT_EQ((a + b).count_ps(), 10'250);
  EXPECT_EQ((a - b).count_ps(), 9'750);
  EXPECT_EQ((-a).count_ps(), -10'000);
  EXPECT_EQ((a * 3).count_ps(), 30'000);
  EXPECT_EQ((a / 4).count_ps(), 2'500);
  EXPECT_EQ(a / b, 40);
  Duration c = a;
  c += b;
  EXPECT_EQ(c.count_ps(), 10'250);
  c -= Duration::ns(1);
  EXPECT_EQ(c.count_ps(), 9'250);
  EXPECT_LT(b, a);
  EXPECT_GT(a, b);
  EXPECT_EQ(Duration::ns(1), Duration::ps(1'000));
  EXPECT_NE(Duration::ns(1), Duration::ps(999));
  EXPECT_EQ(Duration::infinite().count_ps(), kMax);
  EXPECT_GT(Duration::infinite(), Duration::s(86'400 * 100));
}

TEST(Duration, SerializationExact) {
  // 4096 B * 8 bit / 100e9 bit/s = 327.68 ns.
  EXPECT_EQ(Duration::serialization(4096, 100'000'000'000).count_ps(), 327'680);
  // 1 B at 800 Gb/s = 8 / 800e9 s = 10 ps.
  EXPECT_EQ(Duration::serialization(1, 800'000'000'000).count_ps(), 10);
  // 4 KiB at 800 Gb/s = 40.96 ns (the "~41 ns" of the design).
  EXPECT_EQ(Duration::serialization(4096, 800'000'000'000).count_ps(), 40'960);
  // 1500 B at 400 Gb/s = 30 ns.
  EXPECT_EQ(Duration::serialization(1500, 400'000'000'000).count_ps(), 30'000);
  EXPECT_EQ(Duration::serialization(0, 100'000'000'000).count_ps(), 0);
  static_assert(Duration::serialization(1, 800'000'000'000).count_ps() == 10);
}

TEST(Duration, SerializationRoundsUp) {
  // 1 B at 3 b/s = 8e12/3 ps = 2666666666666.67 -> 2666666666667.
  EXPECT_EQ(Duration::serialization(1, 3).count_ps(), 2'666'666'666'667);
  // 1 B at 300 Gb/s = 26.67 ps -> 27.
  EXPECT_EQ(Duration::serialization(1, 300'000'000'000).count_ps(), 27);
  // Exact results are not bumped.
  EXPECT_EQ(Duration::serialization(3, 300'000'000'000).count_ps(), 80);
}

TEST(Duration, SerializationLargeByteCountsDoNotOverflow) {
  // bytes * 8e12 overflows 64 bits beyond ~2.3 MB; the 128-bit path must hold.
  // 2^40 B at 800 Gb/s = 2^40 * 10 ps.
  EXPECT_EQ(Duration::serialization(uint64_t{1} << 40, 800'000'000'000).count_ps(),
            int64_t{10} << 40);
  // 1 TB at 100 Gb/s = 80 s.
  EXPECT_EQ(Duration::serialization(1'000'000'000'000, 100'000'000'000).count_ps(),
            Duration::s(80).count_ps());
  // 10 MB at 1 Gb/s = 80 ms (num = 8e19 > 2^64).
  EXPECT_EQ(Duration::serialization(10'000'000, 1'000'000'000).count_ps(),
            Duration::ms(80).count_ps());
}

TEST(Time, Basics) {
  EXPECT_EQ(Time().ps(), 0);
  EXPECT_EQ(Time::zero().ps(), 0);
  const Time t = Time::from_ps(1'000);
  EXPECT_EQ((t + Duration::ns(2)).ps(), 3'000);
  EXPECT_EQ((t - Duration::ps(400)).ps(), 600);
  EXPECT_EQ((Time::from_ps(5'000) - t).count_ps(), 4'000);
  EXPECT_EQ((t - Time::from_ps(5'000)).count_ps(), -4'000);
  Time u = t;
  u += Duration::ps(1);
  EXPECT_EQ(u.ps(), 1'001);
  EXPECT_LT(t, u);
  EXPECT_EQ(min(t, u), t);
  EXPECT_EQ(max(t, u), u);
  EXPECT_EQ(min(u, t), t);
  EXPECT_EQ(max(u, t), u);
  EXPECT_DOUBLE_EQ(Time::from_ps(2'500'000).to_us(), 2.5);
  EXPECT_DOUBLE_EQ(Time::from_ps(1'500'000'000'000).to_s(), 1.5);
}

TEST(Time, NeverSaturates) {
  const Time n = Time::never();
  EXPECT_TRUE(n.is_never());
  EXPECT_EQ(n.ps(), kMax);
  EXPECT_FALSE(Time::zero().is_never());
  EXPECT_FALSE(Time::from_ps(kMax - 1).is_never());
  EXPECT_GT(n, Time::from_ps(kMax - 1));
  // Adding anything to never() stays never() (documented: even a negative duration).
  EXPECT_TRUE((n + Duration::ps(1)).is_never());
  EXPECT_TRUE((n + Duration::infinite()).is_never());
  EXPECT_TRUE((n + Duration::ps(-1)).is_never());
  EXPECT_TRUE((n + Duration()).is_never());
  // A finite time plus a duration that would overflow saturates at never().
  EXPECT_TRUE((Time::from_ps(kMax - 5) + Duration::ps(10)).is_never());
  EXPECT_TRUE((Time::from_ps(kMax - 5) + Duration::ps(5)).is_never());  // lands exactly on max
  EXPECT_EQ((Time::from_ps(kMax - 5) + Duration::ps(4)).ps(), kMax - 1);
  EXPECT_TRUE((Time::from_ps(1) + Duration::infinite()).is_never());
  EXPECT_TRUE((Time::zero() + Duration::infinite()).is_never());
  Time t = Time::from_ps(kMax - 1);
  t += Duration::s(1);
  EXPECT_TRUE(t.is_never());
  // Negative durations on finite times are ordinary subtraction.
  EXPECT_EQ((Time::from_ps(10) + Duration::ps(-20)).ps(), -10);
  EXPECT_EQ(min(n, Time::zero()), Time::zero());
  static_assert((Time::never() + Duration::ns(1)).is_never());
}

}  // namespace
}  // namespace mrc
