// SPDX-License-Identifier: BSD-2-Clause
// Tests for core/cc/nscc.hpp: every NSCC rule of reference 5.4, 5.5 and 5.7,
// with the expected windows worked out by hand in the comments.
//
// Most rule tests run at the UEC reference point, 100 Gb/s x 12 us base RTT
// with a 4096-byte MTU: BDP = 150,000 B, so scaling_a = 1 and the defaults
// are round numbers (reference 5.5):
//   target = 0.75 x 12 us = 9 us, scaling_b = 9/12 = 0.75,
//   alpha  = 4 x 4096 x 1 x 0.75 / 9 us = 1,365,333,333 B/s
//            (so alpha x n x (target - d) = 16384 x n x (target - d) / 12 us),
//   fi = 5 x 4096 = 20,480 B, fi_scale = 0.25, eta = 0.15 x 4096 = 614.4 B,
//   MaxWnd = 1.5 x 150,000 = 225,000 B, adjust every 8 x 4096 = 32,768 B
//   or 12 us, quick adapt gate MaxWnd >> 3 = 28,125 B.
// The window starts at MaxWnd; tests that watch an increase first lower it
// with an inferred loss (window -= nominal) and send the same bytes again so
// inflight stays as it was. The controller's clocks start at the first call,
// t = 0.
#include "core/cc/nscc.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/types.hpp"
#include "util/prng.hpp"

namespace mrc::core::cc {
namespace {

using wire::NackCode;

constexpr uint32_t kMtu = 4096;

Time at_us(double us) { return Time::from_ps(std::llround(us * 1e6)); }

CcContext context(uint64_t gbps, Duration base_rtt, bool trimming = true) {
  CcContext c;
  c.mtu_bytes = kMtu;
  c.link_bps = gbps * 1'000'000'000ull;
  c.base_rtt = base_rtt;
  c.trimming = trimming;
  return c;
}
/// The UEC reference point: 100 Gb/s x 12 us (scaling_a = 1).
CcContext ref_context() { return context(100, Duration::us(12)); }

AckInfo ack(Time now, uint64_t newly, std::optional<Duration> rtt, bool marked = false, uint8_t pen = 0,
            bool restore = false) {
  AckInfo a;
  a.now = now;
  a.newly_rcvd_bytes = newly;
  a.ecn_marked = marked;
  a.rtt_valid = rtt.has_value();
  if (rtt) a.rtt = *rtt;
  a.rcv_cwnd_pen = pen;
  a.restore_cwnd = restore;
  return a;
}

NackInfo nack(Time now, uint32_t bytes, NackCode code, std::optional<Duration> rtt = std::nullopt) {
  NackInfo n;
  n.now = now;
  n.nominal_bytes = bytes;
  n.code = code;
  n.rtt_valid = rtt.has_value();
  if (rtt) n.rtt = *rtt;
  return n;
}

/// Lowers the window to `to` at t = 0 without changing inflight.
void shrink(Nscc& cc, uint64_t to) {
  const auto d = static_cast<uint32_t>(cc.cwnd_bytes() - to);
  cc.on_inferred_loss(Time::zero(), d);
  cc.on_send(Time::zero(), d);
  ASSERT_EQ(cc.cwnd_bytes(), to);
}

/// The delay EWMA after n equal samples from 0 (kNsccAvgDelayGain).
double ewma_us(double sample_us, int n) { return sample_us * (1 - std::pow(1 - kNsccAvgDelayGain, n)); }

// ----------------------------------------------------------------- defaults (5.5)

struct DefaultRow {
  uint64_t gbps;
  double bdp, scaling_a, alpha, fi, fi_scale, eta;
  uint64_t max_cwnd;
};

TEST(NsccDefaults, DerivedFromLinkSpeedAtBaseRtt10us) {
  // BDP = rate/8 x 10 us; scaling_a = BDP / 150,000; target = 7.5 us,
  // scaling_b = 0.625; alpha = 4 x 4096 x scaling_a x 0.625 / 7.5 us;
  // fi = 5 x 4096 x scaling_a; fi_scale = 0.25 x scaling_a;
  // eta = 0.15 x 4096 x scaling_a; MaxWnd = 1.5 x BDP.
  const std::vector<DefaultRow> rows = {
      {100, 125'000, 0.833333, 1.137778e9, 17'066.67, 0.208333, 512, 187'500},
      {200, 250'000, 1.666667, 2.275556e9, 34'133.33, 0.416667, 1024, 375'000},
      {400, 500'000, 3.333333, 4.551111e9, 68'266.67, 0.833333, 2048, 750'000},
      {800, 1'000'000, 6.666667, 9.102222e9, 136'533.33, 1.666667, 4096, 1'500'000},
  };
  for (const DefaultRow& r : rows) {
    SCOPED_TRACE(r.gbps);
    const CcContext ctx = context(r.gbps, Duration::us(10));
    const NsccParams p = derive_nscc_params(NsccConfig{}, ctx);
    EXPECT_EQ(p.link_bps, r.gbps * 1'000'000'000ull);
    EXPECT_EQ(p.mtu_bytes, kMtu);
    EXPECT_EQ(p.base_rtt, Duration::us(10));
    EXPECT_DOUBLE_EQ(p.bdp_bytes, r.bdp);
    EXPECT_NEAR(p.scaling_a, r.scaling_a, 1e-6);
    EXPECT_EQ(p.target_delay, Duration::ns(7500));
    EXPECT_DOUBLE_EQ(p.scaling_b, 0.625);
    EXPECT_NEAR(p.alpha, r.alpha, r.alpha * 1e-6);
    EXPECT_NEAR(p.fi, r.fi, 0.01);
    EXPECT_NEAR(p.fi_scale, r.fi_scale, 1e-6);
    EXPECT_NEAR(p.eta, r.eta, 1e-9);
    EXPECT_DOUBLE_EQ(p.gamma, 0.8);
    EXPECT_DOUBLE_EQ(p.max_md_jump, 0.5);
    EXPECT_EQ(p.max_cwnd, r.max_cwnd);
    EXPECT_EQ(p.qa_gate, 3);
    EXPECT_EQ(p.qa_threshold, Duration::infinite());  // trimming: delay never triggers QA
    EXPECT_FALSE(p.disable_qa);
    EXPECT_EQ(p.adjust_bytes_threshold, 8u * kMtu);
    EXPECT_EQ(p.adjust_period_threshold, Duration::us(10));

    Nscc cc(NsccConfig{}, ctx);
    EXPECT_EQ(cc.name(), "uet-1.0-nscc");
    EXPECT_EQ(cc.cwnd_bytes(), r.max_cwnd);  // new flows start at line rate
    EXPECT_EQ(cc.max_cwnd(), r.max_cwnd);
    EXPECT_EQ(cc.inflight_bytes(), 0);
    EXPECT_EQ(cc.base_rtt(), Duration::us(10));
    EXPECT_EQ(cc.avg_delay(), Duration{});
    EXPECT_EQ(cc.saved_cwnd(), 0u);
  }
}

TEST(NsccDefaults, AHintedQpStartsAtItsShareOfTheTargetNotAtLineRate) {
  // core::QpHint: 8 senders at the target, 2 QPs per peer -> 1/16 of MaxWnd.
  QpHint h;
  EXPECT_EQ(h.window_divisor(), 1u);
  h.remote_recv_peers = 8;
  EXPECT_EQ(h.window_divisor(), 8u);
  h.qps_per_peer = 2;
  EXPECT_EQ(h.window_divisor(), 16u);
  h.send_peers = 5;  // sizes nothing here
  EXPECT_EQ(h.window_divisor(), 16u);
  h.remote_recv_peers = 1u << 20;
  EXPECT_EQ(h.window_divisor(), 65536u) << "capped";

  CcContext ctx = context(800, Duration::us(10));
  ctx.window_divisor = 16;
  Nscc cc(NsccConfig{}, ctx);
  EXPECT_EQ(cc.max_cwnd(), 1'500'000u) << "the ceiling is the QP's line rate still";
  EXPECT_EQ(cc.cwnd_bytes(), 1'500'000u / 16) << "a share of 22 packets is not boosted";
  // A share of a few packets is doubled (NsccConfig::hint_share), up to 8
  // packets (hint_share_cap): 1.5 MB / 500 = 3,000 B -> 6,000 B.
  ctx.window_divisor = 500;
  EXPECT_EQ(Nscc(NsccConfig{}, ctx).cwnd_bytes(), 6'000u);
  ctx.window_divisor = 160;  // 9,375 B -> 18,750 B
  EXPECT_EQ(Nscc(NsccConfig{}, ctx).cwnd_bytes(), 18'750u);
  ctx.window_divisor = 64;  // 23,437 B -> capped at 8 x 4096 = 32,768 B
  EXPECT_EQ(Nscc(NsccConfig{}, ctx).cwnd_bytes(), 8u * kMtu);
  ctx.window_divisor = 32;  // 46,875 B: above the cap, left as it is
  EXPECT_EQ(Nscc(NsccConfig{}, ctx).cwnd_bytes(), 46'875u);
  NsccConfig c;
  c.hint_share = 1.0;
  ctx.window_divisor = 500;
  EXPECT_EQ(Nscc(c, ctx).cwnd_bytes(), kMtu) << "1.0: the bare share (3,000 B), at least one MTU";
  ctx.window_divisor = 160;
  EXPECT_EQ(Nscc(c, ctx).cwnd_bytes(), 9'375u) << "1.0: the bare share";
  c.hint_share = 1000.0;
  c.hint_share_cap = 1000;
  ctx.window_divisor = 2;
  EXPECT_EQ(Nscc(c, ctx).cwnd_bytes(), 1'500'000u) << "never above MaxWnd";
  ctx.window_divisor = 1;
  EXPECT_EQ(Nscc(c, ctx).cwnd_bytes(), 1'500'000u) << "no hint: line rate";
  ctx.window_divisor = 65536;
  Nscc tiny(NsccConfig{}, ctx);
  EXPECT_EQ(tiny.cwnd_bytes(), kMtu) << "never below one MTU";
}

TEST(NsccDefaults, BadHintShareFieldsAreRejected) {
  CcProfile p;
  std::string why;
  p.nscc.hint_share = -1;
  EXPECT_FALSE(p.validate(&why));
  EXPECT_NE(why.find("cc_profile.nscc.hint_share"), std::string::npos) << why;
  p.nscc.hint_share = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(p.validate(&why));
  p.nscc.hint_share = 4;
  EXPECT_TRUE(p.validate(&why)) << why;
  p.nscc.hint_share_cap = 70000;
  EXPECT_FALSE(p.validate(&why));
  EXPECT_NE(why.find("cc_profile.nscc.hint_share_cap"), std::string::npos) << why;
}

TEST(NsccDefaults, WithoutTrimmingTargetIsBaseRttAndQaThresholdFourTargets) {
  // 100 Gb/s x 12 us, no trimming: target = 1.0 x 12 us, qa_threshold = 48 us,
  // scaling_b = 1, alpha = 4 x 4096 / 12 us (unchanged: target cancels).
  const NsccParams p = derive_nscc_params(NsccConfig{}, context(100, Duration::us(12), false));
  EXPECT_EQ(p.target_delay, Duration::us(12));
  EXPECT_EQ(p.qa_threshold, Duration::us(48));
  EXPECT_DOUBLE_EQ(p.scaling_b, 1.0);
  EXPECT_NEAR(p.alpha, 16384 / 12e-6, 1);
}

TEST(NsccDefaults, ExplicitFieldsOverrideAndBaseRttOverridesContext) {
  NsccConfig c;
  c.base_rtt = Duration::us(12);  // overrides the context's 10 us
  c.target_delay = Duration::us(6);
  c.fi = 1000;
  c.fi_scale = 0.5;
  c.eta = 100;
  c.gamma = 0.5;
  c.max_md_jump = 0.25;
  c.max_cwnd = 50'000;
  c.qa_gate = 2;
  c.qa_threshold = Duration::us(30);
  c.adjust_bytes_threshold = 10'000;
  c.adjust_period_threshold = Duration::us(3);
  c.disable_qa = true;
  const NsccParams p = derive_nscc_params(c, context(100, Duration::us(10)));
  EXPECT_EQ(p.base_rtt, Duration::us(12));
  EXPECT_DOUBLE_EQ(p.bdp_bytes, 150'000);  // from the overriding base RTT
  EXPECT_DOUBLE_EQ(p.scaling_a, 1.0);
  EXPECT_EQ(p.target_delay, Duration::us(6));
  EXPECT_DOUBLE_EQ(p.scaling_b, 0.5);
  EXPECT_NEAR(p.alpha, 4.0 * 4096 * 0.5 / 6e-6, 1);
  EXPECT_DOUBLE_EQ(p.fi, 1000);
  EXPECT_DOUBLE_EQ(p.fi_scale, 0.5);
  EXPECT_DOUBLE_EQ(p.eta, 100);
  EXPECT_DOUBLE_EQ(p.gamma, 0.5);
  EXPECT_DOUBLE_EQ(p.max_md_jump, 0.25);
  EXPECT_EQ(p.max_cwnd, 50'000u);
  EXPECT_EQ(p.qa_gate, 2);
  EXPECT_EQ(p.qa_threshold, Duration::us(30));
  EXPECT_EQ(p.adjust_bytes_threshold, 10'000u);
  EXPECT_EQ(p.adjust_period_threshold, Duration::us(3));
  EXPECT_TRUE(p.disable_qa);
  // A max_cwnd below one MTU is raised to the minimum window.
  c.max_cwnd = 100;
  EXPECT_EQ(derive_nscc_params(c, context(100, Duration::us(10))).max_cwnd, kMtu);
}

// ----------------------------------------------------------------- quadrants (5.4 step 5)

TEST(NsccQuadrant, FairIncreaseWhenUnmarkedAtOrAboveTarget) {
  Nscc cc(NsccConfig{}, ref_context());
  shrink(cc, 100'000);
  // RTT 22 us -> delay 10 us >= target 9 us, unmarked: fair increase,
  // inc_bytes += fi x 4096 = 20,480 x 4096 = 83,886,080 per SACK.
  // Fulfill once received_bytes > 32,768: 8 SACKs (32,768) are not enough.
  for (int i = 1; i <= 8; ++i) cc.on_ack(ack(at_us(i), 4096, Duration::us(22)));
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u);
  // 9th: inc = 9 x 83,886,080 = 754,974,720; cwnd += 754,974,720 / 100,000
  // = 7,549.7 -> 107,549 (t = 9 us < 12 us: no eta).
  cc.on_ack(ack(at_us(9), 4096, Duration::us(22)));
  EXPECT_EQ(cc.cwnd_bytes(), 107'549u);
  // Delay exactly at target is still "fair": 9 more SACKs at RTT 21 us add
  // 754,974,720 / 107,549 = 7,019.8 -> 114,568.
  for (int i = 0; i < 9; ++i) cc.on_ack(ack(at_us(10), 4096, Duration::us(21)));
  EXPECT_EQ(cc.cwnd_bytes(), 114'568u);
}

TEST(NsccQuadrant, ProportionalIncreaseBelowTarget) {
  // Delay 0: inc += alpha x 4096 x (9 us - 0) = 16384 x 4096 x 0.75
  // = 50,331,648 per SACK (fi_count 9 x 4096 = 36,864 < cwnd: no fast
  // increase). 9 SACKs: 452,984,832 / 100,000 = 4,529.8 -> 104,529.
  {
    Nscc cc(NsccConfig{}, ref_context());
    shrink(cc, 100'000);
    for (int i = 1; i <= 9; ++i) cc.on_ack(ack(at_us(i), 4096, Duration::us(12)));
    EXPECT_EQ(cc.cwnd_bytes(), 104'529u);
    EXPECT_FALSE(cc.in_fast_increase());
  }
  // Delay 3 us (RTT 15 us): inc += 16384 x 4096 x (6/12) = 33,554,432 per
  // SACK; 9 SACKs: 301,989,888 / 100,000 = 3,019.9 -> 103,019.
  {
    Nscc cc(NsccConfig{}, ref_context());
    shrink(cc, 100'000);
    for (int i = 1; i <= 9; ++i) cc.on_ack(ack(at_us(i), 4096, Duration::us(15)));
    EXPECT_EQ(cc.cwnd_bytes(), 103'019u);
  }
}

TEST(NsccQuadrant, FastIncreaseEntryAndExit) {
  Nscc cc(NsccConfig{}, ref_context());
  shrink(cc, 100'000);
  // 1: 64 KiB at delay 0. fi_count = 65,536 <= cwnd: proportional,
  //    inc = 16384 x 65,536 x 0.75 = 805,306,368; received > 32,768 ->
  //    fulfill: 100,000 + 8,053.1 -> 108,053.
  cc.on_ack(ack(at_us(1), 65536, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 108'053u);
  EXPECT_FALSE(cc.in_fast_increase());
  // 2: fi_count = 131,072 > 108,053: a whole window at zero delay -> fast
  //    increase, cwnd += 65,536 x fi_scale 0.25 = 16,384 -> 124,437.
  cc.on_ack(ack(at_us(2), 65536, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 124'437u);
  EXPECT_TRUE(cc.in_fast_increase());
  // 3: delay 0.5 us is within the 1 us tolerance: stays, += 1,024 -> 125,461.
  cc.on_ack(ack(at_us(3), 4096, Duration::ns(12'500)));
  EXPECT_EQ(cc.cwnd_bytes(), 125'461u);
  EXPECT_TRUE(cc.in_fast_increase());
  // 4: delay 2 us leaves the mode and resets fi_count; proportional
  //    inc = 16384 x 4096 x 7/12 = 39,146,837 (no fulfill yet: 8,192 bytes).
  cc.on_ack(ack(at_us(4), 4096, Duration::us(14)));
  EXPECT_EQ(cc.cwnd_bytes(), 125'461u);
  EXPECT_FALSE(cc.in_fast_increase());
  // 5: delay 0 again, but fi_count = 4,096 <= cwnd: proportional,
  //    inc += 50,331,648.
  cc.on_ack(ack(at_us(5), 4096, Duration::us(12)));
  EXPECT_FALSE(cc.in_fast_increase());
  // 6: fi_count = 69,632 <= cwnd: proportional, inc += 805,306,368; total
  //    894,784,853 / 125,461 = 7,131.9 -> 132,592.
  cc.on_ack(ack(at_us(6), 65536, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 132'592u);
  EXPECT_FALSE(cc.in_fast_increase());
  // 7: fi_count = 135,168 > 132,592: fast again, += 16,384 -> 148,976.
  cc.on_ack(ack(at_us(7), 65536, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 148'976u);
  EXPECT_TRUE(cc.in_fast_increase());
  // 8: a marked SACK at delay >= target runs the decrease rule, which leaves
  //    fast mode (the average delay is still far below target: no cut).
  cc.on_ack(ack(at_us(8), 0, Duration::us(22), true));
  EXPECT_FALSE(cc.in_fast_increase());
  EXPECT_EQ(cc.cwnd_bytes(), 148'976u);
}

TEST(NsccQuadrant, FastIncreaseIsClampedToMaxWnd) {
  Nscc cc(NsccConfig{}, ref_context());
  shrink(cc, 200'000);
  // 256 KiB at delay 0 > cwnd: fast, 200,000 + 65,536 -> clamped to 225,000.
  cc.on_ack(ack(at_us(1), 262'144, Duration::us(12)));
  EXPECT_TRUE(cc.in_fast_increase());
  EXPECT_EQ(cc.cwnd_bytes(), 225'000u);
}

TEST(NsccQuadrant, MultiplicativeDecreaseOncePerBaseRttFromAverageDelay) {
  NsccConfig cfg;
  cfg.adjust_period_threshold = Duration::s(1);  // keep eta out of the arithmetic
  Nscc cc(cfg, ref_context());
  shrink(cc, 100'000);
  // A marked SACK at delay 18 us >= target, but the average is still
  // 0.0125 x 18 = 0.225 us < target: no decrease (the rule reads avg_delay).
  cc.on_ack(ack(at_us(1), 0, Duration::us(30), true));
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u);
  // 98 more at t = 1 us: the average passes target after ~56 samples, but
  // now - last_dec_time (t = 0) = 1 us is not > base RTT 12 us: no decrease.
  for (int i = 0; i < 98; ++i) cc.on_ack(ack(at_us(1), 0, Duration::us(30), true));
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u);
  // t = 13 us, sample 100: avg = 18 x (1 - 0.9875^100) = 12.8834 us;
  // factor = 1 - 0.8 x (12.8834 - 9) / 12.8834 = 0.758859 (> max_md_jump
  // 0.5); cwnd = floor(100,000 x 0.758859) = 75,885.
  cc.on_ack(ack(at_us(13), 0, Duration::us(30), true));
  const double avg100 = ewma_us(18, 100);
  EXPECT_NEAR(cc.avg_delay().to_us(), avg100, 1e-6);
  const double f1 = 1 - 0.8 * (avg100 - 9) / avg100;
  EXPECT_EQ(cc.cwnd_bytes(), static_cast<uint64_t>(std::floor(100'000 * f1)));
  EXPECT_EQ(cc.cwnd_bytes(), 75'885u);
  // t = 20 us and t = 25 us (exactly one base RTT later): no decrease.
  cc.on_ack(ack(at_us(20), 0, Duration::us(30), true));
  cc.on_ack(ack(at_us(25), 0, Duration::us(30), true));
  EXPECT_EQ(cc.cwnd_bytes(), 75'885u);
  // t = 25.001 us (> 12 us after the last decrease), sample 103:
  // avg = 13.0729 us, factor = 0.750759, cwnd = floor(75,885 x 0.750759) = 56,971.
  cc.on_ack(ack(at_us(25.001), 0, Duration::us(30), true));
  const double avg103 = ewma_us(18, 103);
  EXPECT_EQ(cc.cwnd_bytes(), static_cast<uint64_t>(std::floor(75'885 * (1 - 0.8 * (avg103 - 9) / avg103))));
  EXPECT_EQ(cc.cwnd_bytes(), 56'971u);
}

TEST(NsccQuadrant, MultiplicativeDecreaseClampedByMaxMdJump) {
  // Samples at delay 48 us: avg after 100 = 48 x (1 - 0.9875^100) = 34.356 us;
  // 1 - 0.8 x (34.356 - 9) / 34.356 = 0.4096 < max_md_jump -> factor 0.5:
  // 100,000 -> 50,000. With max_md_jump 0.7 -> 70,000.
  for (const double jump : {0.0, 0.7}) {
    NsccConfig cfg;
    cfg.adjust_period_threshold = Duration::s(1);
    cfg.max_md_jump = jump;
    Nscc cc(cfg, ref_context());
    shrink(cc, 100'000);
    for (int i = 0; i < 99; ++i) cc.on_ack(ack(at_us(1), 0, Duration::us(60), true));
    cc.on_ack(ack(at_us(13), 0, Duration::us(60), true));
    EXPECT_NEAR(1 - 0.8 * (ewma_us(48, 100) - 9) / ewma_us(48, 100), 0.4096, 1e-4);
    EXPECT_EQ(cc.cwnd_bytes(), jump == 0.0 ? 50'000u : 70'000u);
  }
}

TEST(NsccQuadrant, MultiplicativeDecreaseNeverBelowOneMtu) {
  NsccConfig cfg;
  cfg.adjust_period_threshold = Duration::s(1);
  Nscc cc(cfg, ref_context());
  shrink(cc, 6000);
  for (int i = 0; i < 99; ++i) cc.on_ack(ack(at_us(1), 0, Duration::us(60), true));
  cc.on_ack(ack(at_us(13), 0, Duration::us(60), true));  // 6,000 x 0.5 = 3,000 -> MTU
  EXPECT_EQ(cc.cwnd_bytes(), kMtu);
}

TEST(NsccQuadrant, MarkBelowTargetChangesNothing) {
  Nscc cc(NsccConfig{}, ref_context());
  shrink(cc, 100'000);
  // Marked at delay 3 us < target: the EV moves to SKIP, the window stays.
  // 9 SACKs pass the byte threshold: fulfill runs with inc_bytes = 0.
  for (int i = 1; i <= 9; ++i) cc.on_ack(ack(at_us(i), 4096, Duration::us(15), true));
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u);
  EXPECT_EQ(cc.inflight_bytes(), -9 * 4096);
  // The same SACKs unmarked would have grown it (103,019, see Proportional).
  for (int i = 1; i <= 9; ++i) cc.on_ack(ack(at_us(10), 4096, Duration::us(15)));
  EXPECT_EQ(cc.cwnd_bytes(), 103'019u);
}

TEST(NsccQuadrant, RttInvalidOnlyAccountsBytes) {
  Nscc cc(NsccConfig{}, ref_context());
  shrink(cc, 100'000);
  cc.on_send(Time::zero(), 100'000);
  // No valid RTT (retransmitted packet, probe): step 3 stops before any rule.
  // An RTT of 0 (timestamp tick coarser than the path) counts as invalid.
  for (int i = 1; i <= 20; ++i) cc.on_ack(ack(at_us(i), 4096, std::nullopt));
  cc.on_ack(ack(at_us(21), 4096, Duration{}));
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u);
  EXPECT_EQ(cc.inflight_bytes(), 100'000 - 21 * 4096);
  EXPECT_EQ(cc.base_rtt(), Duration::us(12));
  EXPECT_EQ(cc.avg_delay(), Duration{});
}

// ----------------------------------------------------------------- fulfill (5.4 step 6)

TEST(NsccFulfill, EtaAddedOncePerAdjustPeriod) {
  Nscc cc(NsccConfig{}, ref_context());
  shrink(cc, 100'000);  // last_adjust_time = 0
  // t = 12 us: one fair SACK (inc = 83,886,080), only 4,096 bytes, but a
  // full adjust period (12 us) passed: cwnd = floor(100,000 + 838.9 + eta
  // 614.4) = 101,453.
  cc.on_ack(ack(at_us(12), 4096, Duration::us(22)));
  EXPECT_EQ(cc.cwnd_bytes(), 101'453u);
  // t = 13 us: 1 us since the last adjust, 4,096 bytes: accumulate only.
  cc.on_ack(ack(at_us(13), 4096, Duration::us(22)));
  EXPECT_EQ(cc.cwnd_bytes(), 101'453u);
  // t = 24 us: period again: inc = 2 x 83,886,080 = 167,772,160;
  // 101,453 + 1,653.7 + 614.4 -> 103,721.
  cc.on_ack(ack(at_us(24), 4096, Duration::us(22)));
  EXPECT_EQ(cc.cwnd_bytes(), 103'721u);
}

TEST(NsccFulfill, ByteThresholdWithoutEtaAndCustomThresholds) {
  NsccConfig cfg;
  cfg.adjust_bytes_threshold = 4096;  // fulfill on every second 4 KiB SACK
  cfg.eta = 1000;
  cfg.adjust_period_threshold = Duration::us(5);
  Nscc cc(cfg, ref_context());
  shrink(cc, 100'000);
  // t = 1: 4,096 is not > 4,096: accumulate (inc 83,886,080).
  cc.on_ack(ack(at_us(1), 4096, Duration::us(22)));
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u);
  // t = 2: 8,192 > 4,096 -> fulfill without eta (2 us < 5 us):
  // 167,772,160 / 100,000 = 1,677.7 -> 101,677.
  cc.on_ack(ack(at_us(2), 4096, Duration::us(22)));
  EXPECT_EQ(cc.cwnd_bytes(), 101'677u);
  // t = 5: period of 5 us since t = 0: fulfill with eta 1,000:
  // 101,677 + 83,886,080 / 101,677 (825.0) + 1,000 -> 103,502.
  cc.on_ack(ack(at_us(5), 4096, Duration::us(22)));
  EXPECT_EQ(cc.cwnd_bytes(), 103'502u);
}

TEST(NsccFulfill, ClampedToMaxWnd) {
  Nscc cc(NsccConfig{}, ref_context());
  shrink(cc, 224'000);
  for (int i = 1; i <= 100; ++i) cc.on_ack(ack(at_us(i), 4096, Duration::us(22)));
  EXPECT_EQ(cc.cwnd_bytes(), 225'000u);
}

TEST(NsccFulfill, OneUpdateAtMostDoublesTheWindowByDefault) {
  // A one-packet window (the MTU floor) and 9 SACKs of 4096 B at RTT 22 us:
  // the fair increase accumulates 9 x 20,480 x 4096 = 754,974,720, which the
  // reference's rule would add as / 4096 = 184,320 bytes (45 times the
  // window). max_fulfill_growth 1.0 caps it at doubling: 4096 -> 8192.
  {
    Nscc cc(NsccConfig{}, ref_context());
    shrink(cc, 4096);
    for (int i = 1; i <= 9; ++i) cc.on_ack(ack(at_us(i), 4096, Duration::us(22)));
    EXPECT_EQ(cc.cwnd_bytes(), 8192u);
  }
  // A huge cap restores the uncapped rule (clamped to MaxWnd, 225,000).
  {
    NsccConfig cfg;
    cfg.max_fulfill_growth = 1e9;
    Nscc cc(cfg, ref_context());
    shrink(cc, 4096);
    for (int i = 1; i <= 9; ++i) cc.on_ack(ack(at_us(i), 4096, Duration::us(22)));
    EXPECT_EQ(cc.cwnd_bytes(), 4096u + 184'320u);
  }
}

// ----------------------------------------------------------------- quick adapt (5.4)

TEST(NsccQuickAdapt, TrimNackTriggersAtWindowEndThenIgnoresInflight) {
  Nscc cc(NsccConfig{}, ref_context());
  for (int i = 0; i < 40; ++i) cc.on_send(Time::zero(), 4096);  // inflight 163,840
  // t = 1: first valid RTT opens the QA window [1, 1 + 12 + 9 = 22 us).
  cc.on_ack(ack(at_us(1), 4096, Duration::us(12)));
  cc.on_ack(ack(at_us(5), 4096, Duration::us(12)));  // achieved 4,096
  EXPECT_EQ(cc.cwnd_bytes(), 225'000u);
  // t = 10: trim NACK. trigger_qa is set, but the window has not ended:
  // quick adapt does not act, so cwnd -= 4,096 -> 220,904.
  cc.on_nack(nack(at_us(10), 4096, NackCode::trimmed, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 220'904u);
  EXPECT_EQ(cc.inflight_bytes(), 163'840 - 3 * 4096);
  // t = 22: window end. achieved = 4,096 + 8,192 = 12,288 < MaxWnd >> 3 =
  // 28,125 and trigger_qa: cwnd = achieved = 12,288; bytes_to_ignore =
  // inflight = 143,360.
  cc.on_ack(ack(at_us(22), 8192, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 12'288u);
  EXPECT_EQ(cc.inflight_bytes(), 143'360);
  // t = 23: another trim while the old window's packets drain (4,096 of
  // 143,360 ignored): suppressed, the window stays.
  cc.on_nack(nack(at_us(23), 4096, NackCode::trimmed, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 12'288u);
  // t = 30: the rest drains (ignored = 4,096 + 139,264 = 143,360): marked
  // below target, so no window rule; fulfill (bytes and a 12 us period since
  // t = 0) adds only eta: floor(12,288 + 614.4) = 12,902.
  cc.on_ack(ack(at_us(30), 139'264, Duration::us(15), true));
  EXPECT_EQ(cc.cwnd_bytes(), 12'902u);
  // t = 31: ignore window over, QA window [22, 43) still open: a trim costs
  // its size again, 12,902 - 4,096 = 8,806.
  cc.on_send(at_us(30), 4096);
  cc.on_nack(nack(at_us(31), 4096, NackCode::trimmed, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 8'806u);
}

TEST(NsccQuickAdapt, GateBlocksWhenEnoughWasDeliveredTriggerPersists) {
  Nscc cc(NsccConfig{}, ref_context());
  for (int i = 0; i < 40; ++i) cc.on_send(Time::zero(), 4096);
  cc.on_ack(ack(at_us(1), 4096, Duration::us(12)));
  cc.on_ack(ack(at_us(5), 4096, Duration::us(12)));
  cc.on_nack(nack(at_us(10), 4096, NackCode::trimmed, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 220'904u);
  // t = 22: achieved = 4,096 + 32,768 = 36,864 >= 28,125: the gate holds, no
  // quick adapt. Proportional increase instead: inc = 2 x 50,331,648 +
  // 16384 x 32,768 x 0.75 = 503,316,480; received 40,960 > 32,768 and a
  // full period: 220,904 + 2,278.4 + 614.4 -> 223,796.
  cc.on_ack(ack(at_us(22), 32768, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 223'796u);
  // t = 43: next window end, trigger_qa still set, achieved 4,096 < 28,125:
  // cwnd = max(4,096, MTU) = 4,096.
  cc.on_ack(ack(at_us(43), 4096, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 4096u);
}

TEST(NsccQuickAdapt, DelayAboveQaThresholdTriggers) {
  NsccConfig cfg;
  cfg.qa_threshold = Duration::us(20);
  for (const int delay_us : {15, 25}) {
    SCOPED_TRACE(delay_us);
    Nscc cc(cfg, ref_context());
    for (int i = 0; i < 40; ++i) cc.on_send(Time::zero(), 4096);
    cc.on_ack(ack(at_us(1), 4096, Duration::us(12)));  // window [1, 22)
    // Fair increase at delay >= target, clamped at MaxWnd.
    cc.on_ack(ack(at_us(5), 4096, Duration::us(12 + delay_us)));
    EXPECT_EQ(cc.cwnd_bytes(), 225'000u);
    // t = 22: achieved 8,192 < 28,125. Delay 25 us > 20 us: cwnd = 8,192.
    // Delay 15 us: no trigger, fair increase stays clamped.
    cc.on_ack(ack(at_us(22), 4096, Duration::us(12 + delay_us)));
    EXPECT_EQ(cc.cwnd_bytes(), delay_us > 20 ? 8192u : 225'000u);
  }
}

TEST(NsccQuickAdapt, DelayTriggerByDefaultOnlyWithoutTrimming) {
  // No trimming: qa_threshold = 4 x 12 us = 48 us (100 Gb/s x 12 us).
  // With trimming the same 60 us delay never triggers.
  for (const bool trimming : {false, true}) {
    SCOPED_TRACE(trimming);
    Nscc cc(NsccConfig{}, context(100, Duration::us(12), trimming));
    cc.on_ack(ack(at_us(1), 4096, Duration::us(12)));  // window ends at 1 + 12 + target
    const double end = 1 + 12 + cc.params().target_delay.to_us();
    cc.on_ack(ack(at_us(end), 4096, Duration::us(72)));  // delay 60 us
    EXPECT_EQ(cc.cwnd_bytes(), trimming ? 225'000u : 4096u);
  }
}

TEST(NsccQuickAdapt, DisabledQaOnlySubtractsTrims) {
  NsccConfig cfg;
  cfg.disable_qa = true;
  Nscc cc(cfg, ref_context());
  for (int i = 0; i < 40; ++i) cc.on_send(Time::zero(), 4096);
  cc.on_ack(ack(at_us(1), 4096, Duration::us(12)));
  cc.on_nack(nack(at_us(10), 4096, NackCode::trimmed, Duration::us(12)));
  cc.on_nack(nack(at_us(11), 4096, NackCode::trimmed, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 225'000u - 2 * 4096);
  cc.on_ack(ack(at_us(22), 4096, Duration::us(12)));  // would have quick-adapted
  EXPECT_GT(cc.cwnd_bytes(), 200'000u);
}

// ----------------------------------------------------------------- NACKs (5.4, 3.11)

TEST(NsccNack, TrimmedAndLastHopTrimmedBothReduceTheWindow) {
  for (const NackCode code : {NackCode::trimmed, NackCode::trimmed_lasthop}) {
    SCOPED_TRACE(static_cast<int>(code));
    Nscc cc(NsccConfig{}, ref_context());
    cc.on_send(Time::zero(), 8192);
    // First trim opens the QA window (nothing to compare yet): no quick
    // adapt, cwnd 225,000 - 4,096 = 220,904. The delay average takes the
    // config base RTT as a full-queue sample: 0.0125 x 12 us = 150 ns.
    cc.on_nack(nack(at_us(1), 4096, code, Duration::us(12)));
    EXPECT_EQ(cc.cwnd_bytes(), 220'904u);
    EXPECT_EQ(cc.inflight_bytes(), 4096);
    EXPECT_EQ(cc.avg_delay(), Duration::ns(150));
    // Second one inside the window: 220,904 - 4,096 = 216,808;
    // avg = 150 + 0.0125 x (12,000 - 150) = 298.125 ns.
    cc.on_nack(nack(at_us(2), 4096, code, std::nullopt));
    EXPECT_EQ(cc.cwnd_bytes(), 216'808u);
    EXPECT_EQ(cc.inflight_bytes(), 0);
    EXPECT_EQ(cc.avg_delay(), Duration::ps(298'125));
  }
}

TEST(NsccNack, TrimNackRttUpdatesBaseRtt) {
  Nscc cc(NsccConfig{}, ref_context());
  // 8 us < 12 us: base_rtt 8 us, MaxWnd = 1.5 x 12.5 GB/s x 8 us = 150,000.
  cc.on_nack(nack(at_us(1), 4096, NackCode::trimmed, Duration::us(8)));
  EXPECT_EQ(cc.base_rtt(), Duration::us(8));
  EXPECT_EQ(cc.max_cwnd(), 150'000u);
  EXPECT_EQ(cc.cwnd_bytes(), 150'000u - 4096);
}

TEST(NsccNack, OtherRetriableCodesOnlyAdjustInflight) {
  for (const NackCode code :
       {NackCode::no_bitmap, NackCode::no_pkt_buffer, NackCode::no_resource, NackCode::psn_oor_window}) {
    SCOPED_TRACE(static_cast<int>(code));
    Nscc cc(NsccConfig{}, ref_context());
    cc.on_send(Time::zero(), 4096);
    cc.on_nack(nack(at_us(1), 4096, code, Duration::us(5)));
    EXPECT_EQ(cc.cwnd_bytes(), 225'000u);
    EXPECT_EQ(cc.inflight_bytes(), 0);
    EXPECT_EQ(cc.avg_delay(), Duration{});
    EXPECT_EQ(cc.base_rtt(), Duration::us(12));
  }
}

TEST(NsccLoss, InferredLossTakesPacketOffWindowAndInflight) {
  Nscc cc(NsccConfig{}, ref_context());
  cc.on_send(Time::zero(), 3 * 4096);
  cc.on_inferred_loss(at_us(100), 4096);  // 225,000 - 4,096
  EXPECT_EQ(cc.cwnd_bytes(), 220'904u);
  EXPECT_EQ(cc.inflight_bytes(), 2 * 4096);
  shrink(cc, 6000);
  cc.on_inferred_loss(at_us(101), 4096);  // 6,000 - 4,096 = 1,904 -> MTU
  EXPECT_EQ(cc.cwnd_bytes(), kMtu);
  cc.on_inferred_loss(at_us(102), 4096);  // stays at MTU
  cc.on_inferred_loss(at_us(103), 4096);  // inflight may go below 0 (signed)
  EXPECT_EQ(cc.cwnd_bytes(), kMtu);
  EXPECT_EQ(cc.inflight_bytes(), -4096);
}

TEST(NsccLoss, ASpuriousLossGivesItsWindowPenaltyBack) {
  Nscc cc(NsccConfig{}, ref_context());
  shrink(cc, 100'000);
  cc.on_send(Time::zero(), 3 * 4096);
  cc.on_inferred_loss(at_us(100), 4096);
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u - 4096);
  const int64_t inflight = cc.inflight_bytes();
  cc.on_spurious_loss(at_us(110), 4096);  // the packet was only late
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u);
  EXPECT_EQ(cc.inflight_bytes(), inflight) << "the acknowledgement accounts for the bytes";
  // Never above MaxWnd.
  Nscc full(NsccConfig{}, ref_context());
  full.on_spurious_loss(at_us(1), 4096);
  EXPECT_EQ(full.cwnd_bytes(), full.max_cwnd());
}

// ----------------------------------------------------------------- receiver window (5.7)

TEST(NsccReceiverPenalty, PenaltyShrinksAndRestoreReturnsSavedWindow) {
  Nscc cc(NsccConfig{}, ref_context());
  shrink(cc, 100'000);
  for (int i = 0; i < 30; ++i) cc.on_send(Time::zero(), 4096);  // inflight 122,880
  // pen 64, 8,192 newly: inflight 114,688; saved = 100,000;
  // decrease = 64 x 8,192 >> 7 = 4,096; cwnd = min(100,000, 114,688) - 4,096.
  cc.on_ack(ack(at_us(1), 8192, std::nullopt, false, 64));
  EXPECT_EQ(cc.saved_cwnd(), 100'000u);
  EXPECT_EQ(cc.cwnd_bytes(), 95'904u);
  // Again: inflight 106,496; saved kept; 95,904 - 4,096 = 91,808.
  cc.on_ack(ack(at_us(2), 8192, std::nullopt, false, 64));
  EXPECT_EQ(cc.saved_cwnd(), 100'000u);
  EXPECT_EQ(cc.cwnd_bytes(), 91'808u);
  // pen 127, 16,384 newly: inflight 90,112 < cwnd, so the window first drops
  // to inflight; decrease 127 x 16,384 >> 7 = 16,256: 90,112 - 16,256 = 73,856.
  cc.on_ack(ack(at_us(3), 16384, std::nullopt, false, 127));
  EXPECT_EQ(cc.cwnd_bytes(), 73'856u);
  // While penalised no fair/proportional increase: a fair SACK (delay 10 us)
  // with pen 1 costs 4,096 >> 7 = 32 and adds nothing; the byte threshold
  // fulfill (36,864 received) finds inc_bytes = 0: 73,824.
  cc.on_ack(ack(at_us(4), 4096, Duration::us(22), false, 1));
  EXPECT_EQ(cc.cwnd_bytes(), 73'824u);
  // pen 0 without restore: stays penalised, the window does not come back.
  cc.on_ack(ack(at_us(5), 0, std::nullopt));
  EXPECT_EQ(cc.cwnd_bytes(), 73'824u);
  EXPECT_EQ(cc.saved_cwnd(), 100'000u);
  // pen 0 with restore: back to the saved 100,000.
  cc.on_ack(ack(at_us(6), 0, std::nullopt, false, 0, true));
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u);
  EXPECT_EQ(cc.saved_cwnd(), 0u);
  // Restore with nothing saved is a no-op.
  cc.on_ack(ack(at_us(7), 0, std::nullopt, false, 0, true));
  EXPECT_EQ(cc.cwnd_bytes(), 100'000u);
}

TEST(NsccReceiverPenalty, NeverBelowOneMtuEvenWithNegativeInflight) {
  Nscc cc(NsccConfig{}, ref_context());
  // Nothing in flight: the window drops to min(cwnd, inflight < 0) -> MTU.
  cc.on_ack(ack(at_us(1), 4096, std::nullopt, false, 127));
  EXPECT_EQ(cc.inflight_bytes(), -4096);
  EXPECT_EQ(cc.cwnd_bytes(), kMtu);
  EXPECT_EQ(cc.saved_cwnd(), 225'000u);
  cc.on_ack(ack(at_us(2), 0, std::nullopt, false, 0, true));
  EXPECT_EQ(cc.cwnd_bytes(), 225'000u);
}

// ----------------------------------------------------------------- base RTT and link speed

TEST(NsccBaseRtt, ShrinkRescalesMaxWnd) {
  Nscc cc(NsccConfig{}, ref_context());
  EXPECT_EQ(cc.max_cwnd(), 225'000u);
  // RTT 8 us < 12 us: base_rtt = 8 us, MaxWnd = 1.5 x 12.5e9 B/s x 8 us =
  // 150,000 and the window is clamped to it. The configured parameters stay.
  cc.on_ack(ack(at_us(1), 4096, Duration::us(8)));
  EXPECT_EQ(cc.base_rtt(), Duration::us(8));
  EXPECT_EQ(cc.max_cwnd(), 150'000u);
  EXPECT_EQ(cc.cwnd_bytes(), 150'000u);
  EXPECT_EQ(cc.params().max_cwnd, 225'000u);
  EXPECT_EQ(cc.params().target_delay, Duration::us(9));
  // A larger sample never raises it; delay is measured from the new base:
  // RTT 10 us -> delay 2 us, avg = 0.0125 x 2 us = 25 ns.
  cc.on_ack(ack(at_us(2), 4096, Duration::us(10)));
  EXPECT_EQ(cc.base_rtt(), Duration::us(8));
  EXPECT_EQ(cc.max_cwnd(), 150'000u);
  EXPECT_EQ(cc.avg_delay(), Duration::ns(25));
}

TEST(NsccBaseRtt, ExplicitMaxCwndIsNotRescaled) {
  NsccConfig cfg;
  cfg.max_cwnd = 300'000;
  Nscc cc(cfg, ref_context());
  EXPECT_EQ(cc.cwnd_bytes(), 300'000u);
  cc.on_ack(ack(at_us(1), 4096, Duration::us(8)));
  EXPECT_EQ(cc.base_rtt(), Duration::us(8));
  EXPECT_EQ(cc.max_cwnd(), 300'000u);
  cc.on_link_speed(50'000'000'000ull);
  EXPECT_EQ(cc.max_cwnd(), 300'000u);
}

TEST(NsccLinkSpeed, PortLossFrom800To700Gbps) {
  // 8 x 100G at 10 us: BDP 1,000,000, MaxWnd 1,500,000, scaling_a 6.667,
  // fi 136,533, fi_scale 1.667, eta 4,096. One port down -> 700 Gb/s:
  // BDP 875,000, MaxWnd 1,312,500, scaling_a 5.8333, fi = 5 x 4096 x 5.8333
  // = 119,467, fi_scale 1.4583, eta = 0.15 x 4096 x 5.8333 = 3,584,
  // alpha = 4 x 4096 x 5.8333 x 0.625 / 7.5 us = 7.9644e9 B/s. The target and
  // the adjust thresholds do not depend on the link speed.
  NsccConfig cfg;
  cfg.gamma = 0.9;  // explicit: kept
  Nscc cc(cfg, context(800, Duration::us(10)));
  EXPECT_EQ(cc.cwnd_bytes(), 1'500'000u);
  cc.on_link_speed(700'000'000'000ull);
  const NsccParams& p = cc.params();
  EXPECT_EQ(p.link_bps, 700'000'000'000ull);
  EXPECT_DOUBLE_EQ(p.bdp_bytes, 875'000);
  EXPECT_NEAR(p.scaling_a, 5.833333, 1e-6);
  EXPECT_NEAR(p.fi, 119'466.67, 0.01);
  EXPECT_NEAR(p.fi_scale, 1.458333, 1e-6);
  EXPECT_NEAR(p.eta, 3584, 1e-6);
  EXPECT_NEAR(p.alpha, 7.964444e9, 1e3);
  EXPECT_EQ(p.max_cwnd, 1'312'500u);
  EXPECT_EQ(p.target_delay, Duration::ns(7500));
  EXPECT_EQ(p.adjust_bytes_threshold, 32'768u);
  EXPECT_EQ(p.adjust_period_threshold, Duration::us(10));
  EXPECT_DOUBLE_EQ(p.gamma, 0.9);
  EXPECT_EQ(cc.max_cwnd(), 1'312'500u);
  EXPECT_EQ(cc.cwnd_bytes(), 1'312'500u);  // clamped to the new MaxWnd
  // The port comes back: MaxWnd grows again, the window does not jump.
  cc.on_link_speed(800'000'000'000ull);
  EXPECT_EQ(cc.max_cwnd(), 1'500'000u);
  EXPECT_EQ(cc.cwnd_bytes(), 1'312'500u);
  cc.on_link_speed(0);  // ignored
  EXPECT_EQ(cc.max_cwnd(), 1'500'000u);
}

TEST(NsccLinkSpeed, ExplicitFiKeptAndMeasuredBaseRttUsed) {
  NsccConfig cfg;
  cfg.fi = 50'000;
  Nscc cc(cfg, context(800, Duration::us(10)));
  // Measured base RTT 8 us: MaxWnd = 1.5 x 100e9 x 8 us = 1,200,000.
  cc.on_ack(ack(at_us(1), 4096, Duration::us(8)));
  EXPECT_EQ(cc.max_cwnd(), 1'200'000u);
  // 700 Gb/s: MaxWnd from the measured base RTT, 1.5 x 87.5e9 x 8 us =
  // 1,050,000; the derived params keep the config base RTT (1,312,500).
  cc.on_link_speed(700'000'000'000ull);
  EXPECT_EQ(cc.max_cwnd(), 1'050'000u);
  EXPECT_EQ(cc.cwnd_bytes(), 1'050'000u);
  EXPECT_EQ(cc.params().max_cwnd, 1'312'500u);
  EXPECT_DOUBLE_EQ(cc.params().fi, 50'000);
}

// ----------------------------------------------------------------- 800 Gb/s, 64-bit

TEST(Nscc800G, LargeByteCountsDoNotOverflow) {
  // 800 Gb/s x 10 us: fi = 136,533.3, alpha = 9.1022e9 B/s, target 7.5 us.
  Nscc cc(NsccConfig{}, context(800, Duration::us(10)));
  shrink(cc, 500'000);
  cc.on_send(Time::zero(), 2'000'000);
  // One coalesced SACK for 1 MB at delay 8 us >= target (fair):
  // inc = 136,533.3 x 1,000,000 = 1.365e11 (far above 2^32);
  // cwnd += 1.365e11 / 500,000 = 273,066.7 -> 773,066.
  cc.on_ack(ack(at_us(1), 1'000'000, Duration::us(18)));
  EXPECT_EQ(cc.cwnd_bytes(), 773'066u);
  // Proportional at delay 2 us: inc = 9.1022e9 x 1,000,000 x 5.5 us
  // = 5.006e10; 773,066 + 64,758.6 -> 837,824.
  cc.on_ack(ack(at_us(2), 1'000'000, Duration::us(12)));
  EXPECT_EQ(cc.cwnd_bytes(), 837'824u);
  // 5,000 rounds of 1 MB sent and acknowledged (5e9 bytes > 2^32) at
  // delay 0.5 us: fast increase to MaxWnd and no drift in the accounting.
  for (int i = 0; i < 5000; ++i) {
    cc.on_send(at_us(3 + i), 1'000'000);
    cc.on_ack(ack(at_us(3 + i), 1'000'000, Duration::ns(10'500)));
  }
  EXPECT_EQ(cc.cwnd_bytes(), 1'500'000u);
  EXPECT_EQ(cc.inflight_bytes(), 0);
  // A penalty on a 3 GB SACK: 127 x 3e9 >> 7 needs 64 bits; floor at MTU.
  cc.on_send(at_us(6000), 1'000'000);
  cc.on_ack(ack(at_us(6000), 3'000'000'000ull, std::nullopt, false, 127));
  EXPECT_EQ(cc.cwnd_bytes(), kMtu);
  EXPECT_EQ(cc.inflight_bytes(), 1'000'000 - 3'000'000'000ll);
}

// ----------------------------------------------------------------- property

TEST(NsccProperty, RandomEventsKeepWindowWithinMtuAndMaxWnd) {
  struct Variant {
    const char* name;
    NsccConfig cfg;
    bool trimming;
    bool hostile_rtt;  ///< RTT samples anywhere in 0..80 us (base RTT collapses)
  };
  NsccConfig no_qa;
  no_qa.disable_qa = true;
  NsccConfig aggressive;
  aggressive.gamma = 1.0;
  aggressive.max_md_jump = 0.01;
  aggressive.qa_threshold = Duration::us(1);
  aggressive.fi_scale = 8;
  const std::vector<Variant> variants = {
      {"default", NsccConfig{}, true, false},
      {"no-trim", NsccConfig{}, false, false},
      {"no-qa", no_qa, true, false},
      {"aggressive", aggressive, true, false},
      {"hostile-rtt", NsccConfig{}, true, true},
  };
  const uint64_t speeds_gbps[] = {100, 200, 400, 700, 800};
  const NackCode codes[] = {NackCode::trimmed, NackCode::trimmed_lasthop, NackCode::no_bitmap,
                            NackCode::no_pkt_buffer, NackCode::no_resource, NackCode::psn_oor_window};
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    Prng rng(20260501);
    Nscc cc(v.cfg, context(800, Duration::us(10), v.trimming));
    Time now = Time::zero();
    int64_t model_inflight = 0;
    uint64_t ups = 0, downs = 0, at_floor = 0, at_ceiling = 0;
    for (int i = 0; i < 100'000; ++i) {
      const uint64_t before = cc.cwnd_bytes();
      now += Duration::ps(static_cast<int64_t>(rng.below(3'000'000)));  // 0..3 us
      const uint64_t kind = rng.below(100);
      if (kind < 45) {
        const auto n = static_cast<uint32_t>(64 + rng.below(4096 + 40 - 64 + 1));
        cc.on_send(now, n);
        model_inflight += n;
      } else if (kind < 85) {
        // Mostly SACKs for what is in flight, in 256-byte units; sometimes a
        // huge or early one (the clock may run ahead of the nominal sizes).
        AckInfo a;
        a.now = now;
        const uint64_t owed = model_inflight > 0 ? static_cast<uint64_t>(model_inflight) : 0;
        a.newly_rcvd_bytes = rng.chance(0.02) ? rng.below(4'000'000) : std::min<uint64_t>(owed, 256 * rng.below(129));
        a.ecn_marked = rng.chance(0.2);
        a.rtt_valid = rng.chance(0.9);
        // Delay mostly below target, sometimes above; rarely a sample below
        // the configured base RTT (down to 9 us), which shrinks MaxWnd.
        const uint64_t r = rng.below(100);
        const int64_t base_ps = Duration::us(10).count_ps();
        a.rtt = v.hostile_rtt ? Duration::ps(static_cast<int64_t>(rng.below(80'000'001)))
                : r < 70      ? Duration::ps(base_ps + static_cast<int64_t>(rng.below(7'500'000)))
                : r < 98      ? Duration::ps(base_ps + static_cast<int64_t>(rng.below(40'000'000)))
                              : Duration::ps(base_ps - static_cast<int64_t>(rng.below(1'000'001)));
        a.rcv_cwnd_pen = rng.chance(0.01) ? static_cast<uint8_t>(rng.below(256)) : 0;
        a.restore_cwnd = rng.chance(0.05);
        cc.on_ack(a);
        model_inflight -= static_cast<int64_t>(a.newly_rcvd_bytes);
      } else if (kind < 93) {
        NackInfo n;
        n.now = now;
        n.nominal_bytes = static_cast<uint32_t>(64 + rng.below(4096));
        n.code = codes[rng.below(6)];
        n.rtt_valid = rng.chance(0.5);
        n.rtt = v.hostile_rtt ? Duration::ps(static_cast<int64_t>(rng.below(40'000'001)))
                              : Duration::us(10) + Duration::ps(static_cast<int64_t>(rng.below(30'000'001)));
        cc.on_nack(n);
        model_inflight -= n.nominal_bytes;
      } else if (kind < 99) {
        const auto n = static_cast<uint32_t>(64 + rng.below(4096));
        cc.on_inferred_loss(now, n);
        model_inflight -= n;
      } else {
        cc.on_link_speed(speeds_gbps[rng.below(5)] * 1'000'000'000ull);
      }
      ASSERT_GE(cc.cwnd_bytes(), kMtu) << "event " << i;
      ASSERT_LE(cc.cwnd_bytes(), cc.max_cwnd()) << "event " << i;
      ASSERT_LE(cc.max_cwnd(), cc.params().max_cwnd) << "event " << i;
      ASSERT_EQ(cc.inflight_bytes(), model_inflight) << "event " << i;
      ASSERT_GE(cc.avg_delay(), Duration{}) << "event " << i;
      ups += cc.cwnd_bytes() > before;
      downs += cc.cwnd_bytes() < before;
      at_floor += cc.cwnd_bytes() == kMtu;
      at_ceiling += cc.cwnd_bytes() == cc.max_cwnd();
    }
    // The walk must exercise both directions, the floor and the ceiling, or
    // it proves little (hostile RTTs collapse MaxWnd to one MTU by design).
    if (v.hostile_rtt) continue;
    const std::string stats = std::to_string(ups) + " increases, " + std::to_string(downs) + " decreases, " +
                              std::to_string(at_floor) + " at MTU, " + std::to_string(at_ceiling) + " at MaxWnd";
    EXPECT_GT(ups, 1000u) << stats;
    EXPECT_GT(downs, 1000u) << stats;
    EXPECT_GT(at_floor, 0u) << stats;
    EXPECT_GT(at_ceiling, 0u) << stats;
    EXPECT_LT(at_floor + at_ceiling, 90'000u) << stats;  // mostly in between
  }
}

// ----------------------------------------------------------------- profile and factory

TEST(NsccProfile, NsccIsTheDefaultAndValidates) {
  CcProfile p;
  EXPECT_EQ(p.algorithm, "uet-1.0-nscc");
  std::string why;
  EXPECT_TRUE(p.validate(&why).ok()) << why;
  p.nscc.gamma = 1.0;
  p.nscc.max_md_jump = 0.99;
  p.nscc.qa_gate = 63;
  p.nscc.eta = 1;
  EXPECT_TRUE(p.validate(&why).ok()) << why;
}

TEST(NsccProfile, ValidateRejectsEachBadFieldByName) {
  struct Bad {
    const char* field;
    void (*mutate)(NsccConfig&);
  };
  const std::vector<Bad> cases = {
      {"gamma", [](NsccConfig& c) { c.gamma = 1.01; }},
      {"gamma", [](NsccConfig& c) { c.gamma = -0.1; }},
      {"gamma", [](NsccConfig& c) { c.gamma = std::nan(""); }},
      {"max_md_jump", [](NsccConfig& c) { c.max_md_jump = 1.0; }},
      {"max_md_jump", [](NsccConfig& c) { c.max_md_jump = -0.5; }},
      {"eta", [](NsccConfig& c) { c.eta = -1; }},
      {"eta", [](NsccConfig& c) { c.eta = HUGE_VAL; }},
      {"fi", [](NsccConfig& c) { c.fi = -1; }},
      {"fi_scale", [](NsccConfig& c) { c.fi_scale = -0.25; }},
      {"qa_gate", [](NsccConfig& c) { c.qa_gate = 64; }},
      {"adjust_period_threshold", [](NsccConfig& c) { c.adjust_period_threshold = Duration::ns(-1); }},
      {"base_rtt", [](NsccConfig& c) { c.base_rtt = Duration::us(-10); }},
      {"qa_threshold", [](NsccConfig& c) { c.qa_threshold = Duration::ns(-5); }},
      {"target_delay", [](NsccConfig& c) { c.target_delay = Duration::ns(-5); }},
      {"max_fulfill_growth", [](NsccConfig& c) { c.max_fulfill_growth = -1; }},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    CcProfile p;
    p.algorithm = kCcNscc;
    cases[i].mutate(p.nscc);
    std::string why;
    EXPECT_EQ(p.validate(&why), Errc::invalid_argument) << "case " << i;
    EXPECT_NE(why.find(std::string("nscc.") + cases[i].field), std::string::npos)
        << "case " << i << ": '" << why << "'";
  }
}

TEST(NsccProfile, MakeControllerBuildsNscc) {
  CcProfile p;
  p.algorithm = kCcNscc;
  p.nscc.max_cwnd = 64'000;
  auto c = make_controller(p, context(400, Duration::us(10)));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name(), "uet-1.0-nscc");
  EXPECT_EQ(c->cwnd_bytes(), 64'000u);
  EXPECT_TRUE(c->can_send(4136));
  EXPECT_EQ(make_controller(CcProfile{}, context(400, Duration::us(10)))->name(), "uet-1.0-nscc");
  CcProfile fixed;
  fixed.algorithm = kCcFixed;
  EXPECT_EQ(make_controller(fixed, context(400, Duration::us(10)))->name(), "fixed");
}

}  // namespace
}  // namespace mrc::core::cc
