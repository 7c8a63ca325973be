// SPDX-License-Identifier: BSD-2-Clause
// IncastGuard: the responder's rcv_cwnd_pen (reference 5.7, incast_guard.hpp).
#include "core/incast_guard.hpp"

#include <gtest/gtest.h>

namespace mrc::core {
namespace {

constexpr Duration kInterval = Duration::us(10);

IncastGuard guard() {
  IncastGuard g;
  IncastGuardConfig c;
  c.interval = kInterval;
  g.configure(c);
  return g;
}

Time at_us(double us) { return Time::zero() + Duration::ps(static_cast<int64_t>(us * 1e6)); }

TEST(IncastGuard, NoTrimsNoPenalty) {
  IncastGuard g = guard();
  IncastGuardQp a;
  for (int i = 0; i < 100; ++i) g.on_arrival(at_us(0.05 * i), a, false);
  EXPECT_EQ(g.penalty(at_us(5), a), 0);
  EXPECT_EQ(g.penalty(at_us(12), a), 0);  // the next interval: still none
}

TEST(IncastGuard, PenaltyIsTheTrimmedShareScaledByTheQpsShareOfArrivals) {
  IncastGuard g = guard();
  IncastGuardQp a, b;
  // Interval 1: 30 arrivals from a (10 trimmed), 10 from b (none trimmed).
  // Trimmed share 10/40 = 0.25; fair share 20 per QP.
  g.on_arrival(at_us(0), a, false);  // opens the first interval at t = 0
  for (int i = 1; i < 30; ++i) g.on_arrival(at_us(0.1 * i), a, i <= 10);
  for (int i = 0; i < 10; ++i) g.on_arrival(at_us(5 + 0.1 * i), b, false);
  // Still in interval 1: nothing measured yet for the previous interval.
  EXPECT_EQ(g.penalty(at_us(9), a), 0);
  // Interval 2: a = 128 x 0.25 x 30/20 = 48, b = 128 x 0.25 x 10/20 = 16.
  EXPECT_EQ(g.penalty(at_us(11), a), 48);
  EXPECT_EQ(g.penalty(at_us(11), b), 16);
  // A QP that sent nothing in interval 1 is not penalised.
  IncastGuardQp c;
  EXPECT_EQ(g.penalty(at_us(11), c), 0);
}

TEST(IncastGuard, PenaltyCapsAt127AndEndsWhenTrimsStop) {
  IncastGuard g = guard();
  IncastGuardQp a, b;
  g.on_arrival(at_us(0), a, true);
  for (int i = 1; i < 40; ++i) g.on_arrival(at_us(0.1 * i), a, true);  // all trimmed
  g.on_arrival(at_us(5), b, true);
  EXPECT_EQ(g.penalty(at_us(10.5), a), 127);  // 128 x 1.0 x 40/20.5, capped
  // Interval 2 has arrivals but no trims: interval 3 carries no penalty.
  for (int i = 0; i < 20; ++i) g.on_arrival(at_us(11 + 0.1 * i), a, false);
  EXPECT_EQ(g.penalty(at_us(21), a), 0);
}

TEST(IncastGuard, StaleMeasurementsExpire) {
  IncastGuard g = guard();
  IncastGuardQp a;
  g.on_arrival(at_us(0), a, false);
  for (int i = 1; i < 10; ++i) g.on_arrival(at_us(0.1 * i), a, true);
  // Silence for several intervals: the old trims say nothing about now.
  EXPECT_EQ(g.penalty(at_us(55), a), 0);
}

TEST(IncastGuard, DisabledNeverPenalises) {
  IncastGuard g;
  IncastGuardConfig c;
  c.enabled = false;
  c.interval = kInterval;
  g.configure(c);
  IncastGuardQp a;
  for (int i = 0; i < 50; ++i) g.on_arrival(at_us(0.1 * i), a, true);
  EXPECT_EQ(g.penalty(at_us(11), a), 0);
}

}  // namespace
}  // namespace mrc::core
