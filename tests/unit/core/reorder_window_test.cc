// SPDX-License-Identifier: BSD-2-Clause
// ReorderWindow: the loss rule's age follows the delivery ages seen, widens
// on spurious losses (once per round trip) and narrows again over time.
#include "core/reorder_window.hpp"

#include <gtest/gtest.h>

namespace mrc::core {
namespace {

Time at_us(int64_t us) { return Time::zero() + Duration::us(us); }

ReorderWindowConfig cfg() {
  ReorderWindowConfig c;
  c.base_rtt = Duration::us(10);
  c.allowance = Duration::us(5);
  c.max_multiplier = 4;
  c.initial_multiplier = 1;
  c.decay = Duration::ms(1);
  return c;
}

TEST(ReorderWindow, ANewQpStartsAtTheInitialMultiplierAndDecaysFromIt) {
  ReorderWindowConfig c = cfg();
  c.initial_multiplier = 2;
  ReorderWindow w(c);
  EXPECT_EQ(w.multiplier(), 2u);
  EXPECT_EQ(w.loss_age(at_us(0)), Duration::us(20));  // base RTT + 2 x allowance
  EXPECT_EQ(w.loss_age(at_us(1001)), Duration::us(15));
  EXPECT_EQ(w.multiplier(), 1u);
}

TEST(ReorderWindow, IdleQpUsesTheUnloadedFloor) {
  ReorderWindow w(cfg());
  EXPECT_EQ(w.loss_age(at_us(0)), Duration::us(15));  // base RTT + allowance
  EXPECT_EQ(w.multiplier(), 1u);
}

TEST(ReorderWindow, SmoothedRttAndDeviationsRaiseTheAge) {
  ReorderWindow w(cfg());
  w.on_rtt(Duration::us(20));  // srtt 20, rttvar 10
  EXPECT_EQ(w.srtt(), Duration::us(20));
  EXPECT_EQ(w.min_rtt(), Duration::us(20));
  EXPECT_EQ(w.loss_age(at_us(1)), Duration::us(60));  // 20 + 4 x 10
  w.on_rtt(Duration::us(12));
  EXPECT_EQ(w.min_rtt(), Duration::us(12));
}

TEST(ReorderWindow, TheSlowestRecentDeliveryIsTheAge) {
  ReorderWindow w(cfg());
  for (int i = 0; i < 50; ++i) w.on_rtt(Duration::us(10));  // srtt 10, rttvar ~0
  w.on_delivery_age(at_us(100), Duration::us(31));
  w.on_delivery_age(at_us(101), Duration::us(12));
  EXPECT_EQ(w.loss_age(at_us(102)), Duration::us(31));
  // Still remembered one window (4 srtt = 40 us) later, in the previous bucket ...
  w.on_delivery_age(at_us(145), Duration::us(11));
  EXPECT_EQ(w.loss_age(at_us(146)), Duration::us(31));
  // ... and forgotten after two windows of smaller ages (the floor: base
  // RTT + allowance, and srtt + allowance).
  w.on_delivery_age(at_us(190), Duration::us(11));
  EXPECT_EQ(w.loss_age(at_us(191)), Duration::us(15));
  // A silence longer than two windows forgets everything at once.
  w.on_delivery_age(at_us(200), Duration::us(40));
  EXPECT_EQ(w.loss_age(at_us(201)), Duration::us(40));
  EXPECT_EQ(w.loss_age(at_us(400)), Duration::us(15));
  // Each spurious step adds the allowance on top of the maximum.
  w.on_delivery_age(at_us(401), Duration::us(40));
  w.on_spurious(at_us(402));
  EXPECT_EQ(w.loss_age(at_us(403)), Duration::us(45));
}

TEST(ReorderWindow, SpuriousLossesWidenOncePerRoundTripUpToTheCap) {
  ReorderWindow w(cfg());
  for (int i = 0; i < 50; ++i) w.on_rtt(Duration::us(10));
  w.on_spurious(at_us(100));
  EXPECT_EQ(w.multiplier(), 2u);
  w.on_spurious(at_us(105));  // same round trip: one lesson
  EXPECT_EQ(w.multiplier(), 2u);
  EXPECT_EQ(w.spurious(), 2u);
  w.on_spurious(at_us(111));
  w.on_spurious(at_us(122));
  w.on_spurious(at_us(133));
  EXPECT_EQ(w.multiplier(), 4u) << "capped at max_multiplier";
  EXPECT_EQ(w.loss_age(at_us(134)), Duration::us(30));  // base RTT + 4 x 5
}

TEST(ReorderWindow, TheMarginDecaysOneStepPerQuietPeriod) {
  ReorderWindow w(cfg());
  for (int i = 0; i < 50; ++i) w.on_rtt(Duration::us(10));
  for (int64_t t = 100; t < 150; t += 11) w.on_spurious(at_us(t));
  ASSERT_EQ(w.multiplier(), 4u);
  (void)w.loss_age(at_us(900));
  EXPECT_EQ(w.multiplier(), 4u);
  (void)w.loss_age(at_us(1150));
  EXPECT_EQ(w.multiplier(), 3u);
  (void)w.loss_age(at_us(3200));
  EXPECT_EQ(w.multiplier(), 1u);
}

}  // namespace
}  // namespace mrc::core
