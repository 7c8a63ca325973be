// SPDX-License-Identifier: BSD-2-Clause
// ReorderWindow: the loss rule's age follows the delivery ages seen, widens
// on spurious losses (once per round trip) and narrows again over time; a
// new QP's extra step goes once a calm window of ages has been seen.
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

// The extra step a new QP starts with is provisional: a window (4 base
// RTTs, 40 us) of delivery ages no older than the fastest round trip plus an
// allowance ends it; ages spread wider (queues building) keep it, as does a
// spurious loss, which makes it a learned step that decays as usual.
TEST(ReorderWindow, ANewQpDropsItsExtraStepAfterACalmWindow) {
  ReorderWindowConfig c = cfg();
  c.initial_multiplier = 2;
  ReorderWindow calm(c), busy(c), wrong(c);
  for (ReorderWindow* w : {&calm, &busy, &wrong})
    for (int i = 0; i < 50; ++i) w->on_rtt(Duration::us(10));
  for (int64_t t = 1; t < 40; t += 3) {
    calm.on_delivery_age(at_us(t), Duration::us(12));
    busy.on_delivery_age(at_us(t), Duration::us(16));
    wrong.on_delivery_age(at_us(t), Duration::us(12));
  }
  wrong.on_spurious(at_us(20));
  for (ReorderWindow* w : {&calm, &busy, &wrong}) w->on_delivery_age(at_us(41), Duration::us(12));
  EXPECT_EQ(calm.multiplier(), 1u);
  EXPECT_EQ(busy.multiplier(), 2u) << "ages 6 us over the fastest round trip are no calm window";
  EXPECT_EQ(wrong.multiplier(), 3u) << "a spurious loss: the step is learned";
  // Once the queues settle, the busy QP's next window is calm; the learned
  // step decays only at the usual pace.
  for (ReorderWindow* w : {&busy, &wrong}) w->on_delivery_age(at_us(90), Duration::us(12));
  EXPECT_EQ(busy.multiplier(), 1u);
  EXPECT_EQ(wrong.multiplier(), 3u);
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
  // The maximum plus half an allowance (multiplier 1).
  EXPECT_EQ(w.loss_age(at_us(102)), Duration::us(31) + Duration::ns(2500));
  // Still remembered one window (4 srtt = 40 us) later, in the previous bucket ...
  w.on_delivery_age(at_us(145), Duration::us(11));
  EXPECT_EQ(w.loss_age(at_us(146)), Duration::us(31) + Duration::ns(2500));
  // ... and forgotten after two windows of smaller ages (the newest, 11 us,
  // plus half an allowance; the smoothed RTT's term is 2.5 us less).
  w.on_delivery_age(at_us(190), Duration::us(11));
  EXPECT_EQ(w.loss_age(at_us(191)), Duration::us(11) + Duration::ns(2500));
  // A silence longer than two windows forgets everything at once.
  w.on_delivery_age(at_us(200), Duration::us(40));
  EXPECT_EQ(w.loss_age(at_us(201)), Duration::us(40) + Duration::ns(2500));
  EXPECT_EQ(w.loss_age(at_us(400)), Duration::us(10) + Duration::ns(2500));  // srtt + half an allowance
  // Each spurious step adds the allowance on top of the maximum.
  w.on_delivery_age(at_us(401), Duration::us(40));
  w.on_spurious(at_us(402));
  EXPECT_EQ(w.loss_age(at_us(403)), Duration::us(40) + Duration::ns(7500));
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
  EXPECT_EQ(w.loss_age(at_us(134)), Duration::us(10) + Duration::ns(17500));  // srtt + 3.5 x 5
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
