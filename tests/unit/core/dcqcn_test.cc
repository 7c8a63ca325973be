// SPDX-License-Identifier: BSD-2-Clause
// Tests for core/cc/dcqcn.hpp: DCQCN's reaction point rule by rule (rate
// cut and alpha on a CNP, alpha decay, fast recovery, additive and hyper
// increase from the timer and the byte counter, release at the line rate),
// its pacing, and the profile validation. Worked at 100 Gb/s with the
// defaults: g = 1/256, K = T = 55 us, B = 10 MB, F = 5, R_AI = 5 Gb/s,
// R_HAI = 50 Gb/s, min rate 100 Mb/s.
#include "core/cc/dcqcn.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/config.hpp"

namespace mrc::core::cc {
namespace {

constexpr double kG = 1e9;
constexpr double kLine = 100 * kG;

Time at_us(double us) { return Time::from_ps(std::llround(us * 1e6)); }

CcContext ctx100() {
  CcContext c;
  c.link_bps = 100'000'000'000ull;
  c.mtu_bytes = 4096;
  return c;
}

TEST(Dcqcn, DerivedDefaultsScaleWithTheLineRate) {
  const DcqcnParams p = derive_dcqcn_params(DcqcnConfig{}, 100'000'000'000ull);
  EXPECT_EQ(p.max_rate_bps, 100'000'000'000ull);
  EXPECT_EQ(p.rate_ai_bps, 5'000'000'000ull);
  EXPECT_EQ(p.rate_hai_bps, 50'000'000'000ull);
  EXPECT_EQ(p.min_rate_bps, 100'000'000ull);
  const DcqcnParams q = derive_dcqcn_params(DcqcnConfig{}, 400'000'000'000ull);
  EXPECT_EQ(q.rate_ai_bps, 20'000'000'000ull);
  DcqcnConfig c;
  c.rate_ai_bps = 40'000'000;
  c.max_rate_bps = 10'000'000'000ull;
  c.min_rate_bps = 1'000'000;
  const DcqcnParams r = derive_dcqcn_params(c, 100'000'000'000ull);
  EXPECT_EQ(r.rate_ai_bps, 40'000'000u);
  EXPECT_EQ(r.rate_hai_bps, 400'000'000u);
  EXPECT_EQ(r.max_rate_bps, 10'000'000'000ull);
  EXPECT_EQ(r.min_rate_bps, 1'000'000u);
}

TEST(Dcqcn, StartsAtLineRateUnpacedWithAnUnlimitedWindow) {
  Dcqcn d(DcqcnConfig{}, ctx100());
  EXPECT_EQ(d.name(), "dcqcn");
  EXPECT_EQ(d.rate_bps(), kLine);
  EXPECT_FALSE(d.limiting());
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(d.next_send_time(at_us(1), 4188), at_us(1));
    d.on_send(at_us(1), 4188);
  }
  EXPECT_TRUE(d.can_send(4188));
  EXPECT_EQ(d.inflight_bytes(), 4188 * 1000);
  AckInfo a;
  a.now = at_us(2);
  a.newly_rcvd_bytes = 4188 * 10;
  d.on_ack(a);
  d.on_inferred_loss(at_us(2), 4188);
  EXPECT_EQ(d.inflight_bytes(), 4188 * 989);
  EXPECT_EQ(d.rate_bps(), kLine);  // ACKs and losses do not move the rate
}

TEST(Dcqcn, CnpCutsTheRateAndRaisesAlpha) {
  Dcqcn d(DcqcnConfig{}, ctx100());
  d.on_cnp(at_us(10));
  // alpha = 1: Rc = Rc (1 - 1/2); Rt = the old Rc; alpha = (1-g) 1 + g = 1.
  EXPECT_EQ(d.rate_bps(), 50 * kG);
  EXPECT_EQ(d.target_bps(), kLine);
  EXPECT_DOUBLE_EQ(d.alpha(), 1.0);
  EXPECT_TRUE(d.limiting());
  EXPECT_EQ(d.cuts(), 1u);
  // Within rate_reduce_period (4 us) of the cut: ignored entirely.
  d.on_cnp(at_us(13));
  EXPECT_EQ(d.rate_bps(), 50 * kG);
  EXPECT_EQ(d.cnps_ignored(), 1u);
  d.on_cnp(at_us(14));
  EXPECT_EQ(d.rate_bps(), 25 * kG);
  EXPECT_EQ(d.target_bps(), 50 * kG);
  EXPECT_EQ(d.cuts(), 2u);
}

TEST(Dcqcn, AlphaDecaysOncePerPeriodWithoutCnp) {
  DcqcnConfig c;
  c.initial_alpha = 0.5;
  Dcqcn d(c, ctx100());
  const double g = 1.0 / 256;
  d.on_cnp(at_us(0));
  double alpha = (1 - g) * 0.5 + g;
  EXPECT_DOUBLE_EQ(d.alpha(), alpha);
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine * (1 - 0.5 / 2));
  d.advance(at_us(54.9));
  EXPECT_DOUBLE_EQ(d.alpha(), alpha);
  d.advance(at_us(55));
  EXPECT_DOUBLE_EQ(d.alpha(), alpha * (1 - g));
  d.advance(at_us(3 * 55 + 1));
  EXPECT_NEAR(d.alpha(), alpha * std::pow(1 - g, 3), 1e-15);
  // A CNP restarts the alpha period: the next decay is K after it.
  d.on_cnp(at_us(200));
  alpha = (1 - g) * alpha * std::pow(1 - g, 3) + g;
  EXPECT_NEAR(d.alpha(), alpha, 1e-15);
  d.advance(at_us(254));
  EXPECT_NEAR(d.alpha(), alpha, 1e-15);
  d.advance(at_us(255));
  EXPECT_NEAR(d.alpha(), alpha * (1 - g), 1e-15);
}

TEST(Dcqcn, TimerRecoveryFastThenAdditiveThenRelease) {
  Dcqcn d(DcqcnConfig{}, ctx100());
  d.on_cnp(at_us(0));  // Rc 50, Rt 100
  double rc = 50 * kG, rt = kLine;
  // Timer events 1..4 (T stage < F = 5): fast recovery, Rt unchanged.
  for (int k = 1; k <= 4; ++k) {
    d.advance(at_us(55.0 * k));
    rc = (rt + rc) / 2;
    EXPECT_DOUBLE_EQ(d.rate_bps(), rc) << k;
    EXPECT_DOUBLE_EQ(d.target_bps(), rt) << k;
    EXPECT_EQ(d.timer_stage(), static_cast<uint32_t>(k));
  }
  EXPECT_DOUBLE_EQ(rc, kLine - 50 * kG / 16);
  // Event 5: additive increase, Rt already at the maximum stays there.
  d.advance(at_us(55.0 * 5));
  rc = (rt + rc) / 2;
  EXPECT_DOUBLE_EQ(d.rate_bps(), rc);
  EXPECT_TRUE(d.limiting());
  // Each event halves the gap (50 Gb/s / 2^n): within 0.1% of the line
  // rate after the 9th, and the limiter is released.
  d.advance(at_us(55.0 * 8));
  EXPECT_TRUE(d.limiting());
  d.advance(at_us(55.0 * 9));
  EXPECT_FALSE(d.limiting());
  EXPECT_EQ(d.rate_bps(), kLine);
  EXPECT_EQ(d.next_send_time(at_us(600), 4188), at_us(600));
}

TEST(Dcqcn, AdditiveIncreaseRaisesTheTarget) {
  Dcqcn d(DcqcnConfig{}, ctx100());
  d.on_cnp(at_us(0));   // Rc 50, Rt 100
  d.on_cnp(at_us(10));  // Rc 25, Rt 50; timers restart at 10 us
  double rc = 25 * kG, rt = 50 * kG;
  for (int k = 1; k <= 6; ++k) {
    d.advance(at_us(10 + 55.0 * k));
    if (k >= 5) rt += 5 * kG;  // T stage >= F, byte stage 0 <= F: additive
    rc = (rt + rc) / 2;
    EXPECT_DOUBLE_EQ(d.target_bps(), rt) << k;
    EXPECT_DOUBLE_EQ(d.rate_bps(), rc) << k;
  }
  EXPECT_DOUBLE_EQ(rt, 60 * kG);
}

TEST(Dcqcn, ByteCounterEventsRecoverToo) {
  DcqcnConfig c;
  c.byte_counter_bytes = 1'000'000;
  c.rate_increase_period = Duration::ms(10);  // the timer stays out of the way
  c.min_rate_bps = 1'000'000'000ull;
  Dcqcn d(c, ctx100());
  for (int i = 0; i < 6; ++i) d.on_cnp(at_us(5.0 * i));  // Rc 100 / 2^6, Rt twice that
  double rc = kLine / 64, rt = kLine / 32;
  ASSERT_DOUBLE_EQ(d.rate_bps(), rc);
  // Each 1 MB sent is one byte-counter event: BC stage 1..4, fast recovery.
  for (int k = 1; k <= 4; ++k) {
    d.on_send(at_us(100), 1'000'000);
    rc = (rt + rc) / 2;
    EXPECT_EQ(d.byte_stage(), static_cast<uint32_t>(k));
    EXPECT_EQ(d.timer_stage(), 0u);
    EXPECT_DOUBLE_EQ(d.rate_bps(), rc) << k;
    EXPECT_DOUBLE_EQ(d.target_bps(), rt) << k;
  }
  // Half a counter's worth: no event.
  d.on_send(at_us(100), 500'000);
  EXPECT_EQ(d.byte_stage(), 4u);
}

TEST(Dcqcn, HyperIncreaseOnceBothStagesPassF) {
  DcqcnConfig c;
  c.byte_counter_bytes = 1'000'000;
  c.rate_ai_bps = 1'000'000'000ull;  // R_AI 1 Gb/s, so R_HAI 10 Gb/s
  Dcqcn h(c, ctx100());
  for (int i = 0; i < 3; ++i) h.on_cnp(at_us(5.0 * i));  // Rc 12.5, Rt 25; timers restart at 10 us
  double rc = 12.5 * kG, rt = 25 * kG;
  const Time t0 = at_us(10);
  for (int k = 1; k <= 6; ++k) {  // T stage 1..6, BC stage 0
    h.advance(t0 + Duration::us(55) * k);
    if (k >= 5) rt += 1 * kG;  // max(T, BC) >= F, min <= F: additive
    rc = (rt + rc) / 2;
    EXPECT_DOUBLE_EQ(h.rate_bps(), rc) << k;
  }
  const Time t1 = t0 + Duration::us(55 * 6) + Duration::us(1);
  for (int k = 1; k <= 6; ++k) {  // BC stage 1..6 with T stage 6
    h.on_send(t1, 1'000'000);
    if (k <= 5) rt += 1 * kG;   // min(6, k) <= F: additive
    else rt += 10 * kG;         // min(6, 6) = 6 > F: hyper, (6 - F) x R_HAI
    rc = (rt + rc) / 2;
    EXPECT_DOUBLE_EQ(h.target_bps(), rt) << k;
    EXPECT_DOUBLE_EQ(h.rate_bps(), rc) << k;
  }
  EXPECT_DOUBLE_EQ(rt, 42 * kG);
}

TEST(Dcqcn, CutsStopAtTheMinimumRate) {
  DcqcnConfig c;
  c.rate_reduce_period = Duration{};
  Dcqcn d(c, ctx100());
  for (int i = 0; i < 40; ++i) d.on_cnp(at_us(i));
  EXPECT_EQ(d.rate_bps(), 100e6);  // 0.1% of the line rate
}

TEST(Dcqcn, PacesAtTheCurrentRate) {
  Dcqcn d(DcqcnConfig{}, ctx100());
  d.on_cnp(at_us(0));  // 50 Gb/s
  // 5000 bytes at 50 Gb/s = 800 ns apart.
  EXPECT_EQ(d.next_send_time(at_us(1), 5000), at_us(1));
  d.on_send(at_us(1), 5000);
  EXPECT_EQ(d.next_send_time(at_us(1), 5000), at_us(1.8));
  EXPECT_EQ(d.next_send_time(at_us(1.5), 5000), at_us(1.8));
  EXPECT_EQ(d.next_send_time(at_us(2), 5000), at_us(2));
  d.on_send(at_us(1.8), 5000);
  EXPECT_EQ(d.next_send_time(at_us(1.8), 5000), at_us(2.6));
  // No credit builds up while idle: the gap starts at the send.
  d.on_send(at_us(10), 5000);
  EXPECT_EQ(d.next_send_time(at_us(10), 5000), at_us(10.8));
}

TEST(Dcqcn, ExplicitMaximumPacesFromTheStart) {
  DcqcnConfig c;
  c.max_rate_bps = 10'000'000'000ull;
  Dcqcn d(c, ctx100());
  EXPECT_EQ(d.rate_bps(), 10 * kG);
  EXPECT_FALSE(d.limiting());
  d.on_send(at_us(0), 1250);  // 1 us at 10 Gb/s
  EXPECT_EQ(d.next_send_time(at_us(0), 1250), at_us(1));
  // Recovery after a cut ends at the maximum, not the line rate.
  d.on_cnp(at_us(5));
  EXPECT_EQ(d.rate_bps(), 5 * kG);
  d.advance(at_us(5000));
  EXPECT_FALSE(d.limiting());
  EXPECT_EQ(d.rate_bps(), 10 * kG);
}

TEST(Dcqcn, LinkSpeedChanges) {
  Dcqcn d(DcqcnConfig{}, ctx100());
  d.on_link_speed(200'000'000'000ull);
  EXPECT_EQ(d.rate_bps(), 200 * kG);  // unthrottled: the new line rate
  EXPECT_EQ(d.params().rate_ai_bps, 10'000'000'000ull);
  d.on_cnp(at_us(0));
  EXPECT_EQ(d.rate_bps(), 100 * kG);
  d.on_link_speed(50'000'000'000ull);  // throttled: capped at the new maximum
  EXPECT_EQ(d.rate_bps(), 50 * kG);
  EXPECT_EQ(d.target_bps(), 50 * kG);
  d.on_link_speed(0);  // ignored
  EXPECT_EQ(d.params().line_bps, 50'000'000'000ull);
}

TEST(Dcqcn, BuiltFromItsProfile) {
  CcProfile p;
  p.algorithm = kCcDcqcn;
  std::string why;
  ASSERT_TRUE(p.validate(&why).ok()) << why;
  auto c = make_controller(p, ctx100());
  ASSERT_NE(dynamic_cast<Dcqcn*>(c.get()), nullptr);
  EXPECT_EQ(c->name(), kCcDcqcn);
}

TEST(Dcqcn, ProfileValidationNamesTheField) {
  struct Bad {
    const char* field;
    void (*set)(DcqcnConfig&);
  };
  const Bad bad[] = {
      {"g", [](DcqcnConfig& c) { c.g = 0; }},
      {"g", [](DcqcnConfig& c) { c.g = 1.5; }},
      {"initial_alpha", [](DcqcnConfig& c) { c.initial_alpha = 0; }},
      {"alpha_update_period", [](DcqcnConfig& c) { c.alpha_update_period = Duration{}; }},
      {"rate_increase_period", [](DcqcnConfig& c) { c.rate_increase_period = Duration::us(-1); }},
      {"rate_reduce_period", [](DcqcnConfig& c) { c.rate_reduce_period = Duration::us(-1); }},
      {"byte_counter_bytes", [](DcqcnConfig& c) { c.byte_counter_bytes = 0; }},
      {"fast_recovery_steps", [](DcqcnConfig& c) { c.fast_recovery_steps = 0; }},
      {"min_rate_bps", [](DcqcnConfig& c) {
         c.min_rate_bps = 20'000'000'000ull;
         c.max_rate_bps = 10'000'000'000ull;
       }},
  };
  for (const Bad& b : bad) {
    CcProfile p;
    p.algorithm = kCcDcqcn;
    b.set(p.dcqcn);
    std::string why;
    EXPECT_EQ(p.validate(&why), Errc::invalid_argument) << b.field;
    EXPECT_NE(why.find(std::string("cc_profile.dcqcn.") + b.field), std::string::npos) << why;
  }
  // The RoCE knobs of ProtocolConfig are checked with the endpoint.
  EndpointConfig e;
  std::string why;
  e.protocol.rc_ack_packets = 0;
  EXPECT_EQ(e.validate(&why), Errc::invalid_argument);
  EXPECT_NE(why.find("rc_ack_packets"), std::string::npos);
  e = EndpointConfig{};
  e.protocol.cnp_interval = Duration::us(-1);
  EXPECT_EQ(e.validate(&why), Errc::invalid_argument);
  EXPECT_NE(why.find("cnp_interval"), std::string::npos);
}

}  // namespace
}  // namespace mrc::core::cc
