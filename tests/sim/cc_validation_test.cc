// SPDX-License-Identifier: BSD-2-Clause
// Congestion-control validation in the simulator (issue 4): a 64-to-1
// incast, a permutation at full load, a victim flow beside an incast, and a
// long flow's window recovering after bursts. Each runs MRC with its default
// congestion control (NSCC) and asserts a claim with bounds; the measured
// figures are printed as [ info ] lines and quoted in docs/congestion-control.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "sim/scenario/runner.hpp"
#include "sim_test_util.hpp"

namespace mrc::sim {
namespace {

using testing::clos;
using testing::transport;

/// Payload share of a full-MTU data packet on the wire: the most goodput a
/// link can carry (4096 B of payload in BTH+METH+TSETH + ICRC + UDP/IP).
constexpr double kPayloadEfficiency = 4096.0 / (4096 + 36 + 4 + 8 + 40);

/// Jain's fairness index of the flows' average rates (bytes / FCT).
double jain(const std::vector<FlowRecord>& flows) {
  double sum = 0, sum2 = 0;
  size_t n = 0;
  for (const auto& f : flows) {
    if (!f.done) continue;
    const double rate = static_cast<double>(f.spec.bytes) / f.fct().to_us();
    sum += rate;
    sum2 += rate * rate;
    ++n;
  }
  return n ? sum * sum / (static_cast<double>(n) * sum2) : 0;
}

/// Mean of the delivered-goodput samples in [from, to), Gb/s.
double mean_goodput(const RunResult& r, Time from, Time to) {
  double sum = 0;
  size_t n = 0;
  for (const Sample& s : r.series)
    if (s.at > from && s.at <= to) {
      sum += s.goodput_gbps;
      ++n;
    }
  return n ? sum / static_cast<double>(n) : 0;
}

TEST(CcValidation, Incast64To1IsFairLossFreeAndKeepsTheBottleneckBusy) {
  // 64 senders, 2 MiB each, into one NIC of 4 x 100 Gb/s. Every sender
  // starts at line rate (NSCC's initial window), so the first RTT trims most
  // of their packets; the claim is about what NSCC and the responder's
  // incast guard make of it.
  Scenario sc;
  sc.topology = clos(4, 80, 16);
  sc.workload = WorkloadKind::incast;
  sc.fan_in = 64;
  sc.bytes = 2 << 20;
  sc.seed = 1;
  sc.time_limit = Duration::ms(20);
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  Time first = Time::never(), last = Time::zero();
  uint64_t bytes = 0;
  for (const auto& f : r.flows) {
    first = min(first, f.finish);
    last = max(last, f.finish);
    bytes += f.spec.bytes;
  }
  const double capacity = 400 * kPayloadEfficiency;
  // Steady state: from 20 base RTTs in until the first sender finishes.
  const double steady = mean_goodput(r, Time::zero() + Duration::us(200), first);
  const double overall = static_cast<double>(bytes) * 8 / (last.to_us() * 1e3);
  std::printf("[ info ] 64->1 incast: finish %.0f..%.0f us (%.0f at line rate), Jain %.3f, goodput steady %.1f / "
              "overall %.1f Gb/s of %.1f, trims %llu, drops %llu, timeouts %llu, peak queue %llu B\n",
              first.to_us(), last.to_us(), static_cast<double>(bytes) * 8 / (capacity * 1e3), jain(r.flows), steady,
              overall, capacity, static_cast<unsigned long long>(r.fabric.trims),
              static_cast<unsigned long long>(r.fabric.drops_queue), static_cast<unsigned long long>(r.timeouts),
              static_cast<unsigned long long>(r.fabric.peak_queue_bytes));
  // Bounded queue: nothing, not even a trimmed header, overflowed a buffer.
  EXPECT_EQ(r.fabric.drops_queue, 0u);
  EXPECT_EQ(r.timeouts, 0u);
  EXPECT_EQ(r.qp_failures, 0u);
  EXPECT_GE(jain(r.flows), 0.95);
  EXPECT_GE(steady, 0.95 * capacity);
  EXPECT_GE(overall, 0.90 * capacity);
  // Trimming is the feedback, but it must not be the steady state: without
  // the incast guard and the capped window update, every packet was trimmed
  // more than twice.
  EXPECT_LT(r.fabric.trims, 64u * 512u);
}

TEST(CcValidation, PermutationAtFullLoadRunsEveryFlowNearLineRate) {
  Scenario sc;
  sc.topology = clos(4, 64, 8);
  sc.workload = WorkloadKind::permutation;
  sc.bytes = 8 << 20;
  sc.seed = 2;
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  double worst = 0;
  for (const auto& f : r.flows) worst = std::max(worst, f.slowdown());
  std::printf("[ info ] permutation, 64 hosts x 400 Gb/s: slowest flow at %.1f%% of line rate, trims %llu, ECN %llu\n",
              100.0 / worst, static_cast<unsigned long long>(r.fabric.trims),
              static_cast<unsigned long long>(r.fabric.ecn_marks));
  EXPECT_LE(worst, 1.0 / 0.95) << "every flow at >= 95% of its line rate";
  EXPECT_EQ(r.timeouts, 0u);
}

TEST(CcValidation, VictimKeepsItsRateBesideAnIncast) {
  Scenario sc = testing::incast15_with_victim();
  sc.time_limit = Duration::ms(40);
  const RunResult mrc = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(mrc.completed);
  const RunResult roce = run_scenario(sc, transport("roce", 4));
  const double v_mrc = mrc.flows.back().slowdown();
  const double v_roce = roce.flows.back().done ? roce.flows.back().slowdown() : 0;
  std::printf("[ info ] victim beside a 15->1 incast: MRC+NSCC at %.1f%% of its rate; RoCEv2+DCQCN at %.1f%% "
              "(%llu drops, %llu timeouts)\n",
              100.0 / v_mrc, v_roce > 0 ? 100.0 / v_roce : 0.0,
              static_cast<unsigned long long>(roce.fabric.drops_queue), static_cast<unsigned long long>(roce.timeouts));
  EXPECT_LE(v_mrc, 1.0 / 0.90) << "the victim keeps >= 90% of its rate";
  EXPECT_EQ(mrc.timeouts, 0u);
}

TEST(CcValidation, LongFlowWindowRecoversWithinAFewRttsAfterBursts) {
  // A long flow 0 -> 1 shares host 1's downlinks with a burst of 8 senders
  // (256 KiB each) at 100 us. Once the burst has drained, the long flow must
  // be back at line rate within a few RTTs: its window was cut during the
  // burst, and NSCC's increase rules have to bring it back.
  Scenario sc;
  sc.topology = clos(4, 16, 8);
  sc.workload = WorkloadKind::matrix;
  sc.flows.push_back(FlowSpec{0, 1, 24 << 20, Time::zero()});
  for (uint32_t h = 2; h < 10; ++h) sc.flows.push_back(FlowSpec{h, 1, 256 << 10, Time::zero() + Duration::us(100)});
  sc.seed = 4;
  sc.sample_every = Duration::us(1);
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  Time burst_end = Time::zero();
  for (size_t i = 1; i < r.flows.size(); ++i) burst_end = max(burst_end, r.flows[i].finish);
  const double line = 400 * kPayloadEfficiency;
  // First time after the burst that goodput averages >= 90% of line rate
  // over the next 10 us (1 us samples hold only a dozen packets each).
  Time back = Time::never();
  for (size_t i = 0; i + 10 <= r.series.size(); ++i) {
    if (r.series[i].at <= burst_end) continue;
    double sum = 0;
    for (size_t k = i; k < i + 10; ++k) sum += r.series[k].goodput_gbps;
    if (sum / 10 >= 0.9 * line) {
      back = r.series[i].at;
      break;
    }
  }
  ASSERT_NE(back, Time::never()) << "the long flow never got back to line rate";
  const double before = mean_goodput(r, Time::zero() + Duration::us(20), Time::zero() + Duration::us(100));
  const double recovery_us = (back - burst_end).to_us();
  std::printf("[ info ] long flow + burst: %.1f Gb/s before, burst over at %.1f us, back at >= 90%% of line rate "
              "%.1f us later\n",
              before, burst_end.to_us(), recovery_us);
  EXPECT_GE(before, 0.95 * line);
  // A few RTTs: the base RTT of this fabric is ~9 us.
  EXPECT_LE(recovery_us, 50.0);
  EXPECT_EQ(r.timeouts, 0u);
}

}  // namespace
}  // namespace mrc::sim
