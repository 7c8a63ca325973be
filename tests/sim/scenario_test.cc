// SPDX-License-Identifier: BSD-2-Clause
// Simulator scenario tests (issue 3): small, fast runs of mrc-sim's runner
// with the real core on every NIC, each asserting a claim with bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "core/qp.hpp"

#include "sim/scenario/runner.hpp"
#include "sim_test_util.hpp"

namespace mrc::sim {
namespace {

using testing::clos;
using testing::transport;

double max_slowdown(const RunResult& r) {
  double m = 0;
  for (const auto& f : r.flows) m = std::max(m, f.done ? f.slowdown() : 1e9);
  return m;
}

TEST(Scenario, PermutationOnANonBlockingClosIsNearIdealWithMrc) {
  Scenario sc;
  sc.topology = clos(1, 32, 8);
  sc.workload = WorkloadKind::permutation;
  sc.bytes = 4 << 20;
  sc.seed = 3;
  const RunResult mrc = run_scenario(sc, transport("mrc", 1));
  ASSERT_TRUE(mrc.completed);
  const RunResult ecmp = run_scenario(sc, transport("mrc-single-path", 1));
  ASSERT_TRUE(ecmp.completed);
  std::printf("[ info ] permutation slowest flow: MRC %.3f x ideal, single ECMP path %.3f x ideal\n",
              max_slowdown(mrc), max_slowdown(ecmp));
  EXPECT_LE(max_slowdown(mrc), 1.15);
  EXPECT_GE(max_slowdown(ecmp), 1.5) << "flow collisions on ECMP-hashed paths";
  EXPECT_EQ(mrc.qp_failures, 0u);
}

double max_fct_us(const RunResult& r) {
  double m = 0;
  for (const auto& f : r.flows) m = std::max(m, f.done ? f.fct().to_us() : 1e9);
  return m;
}

TEST(Scenario, EvRecyclingEvensOutAnEcmpHashedPermutation) {
  // Switches hash the EV (ECMP), so a QP's EVs land on the T1s unevenly and
  // some links carry more than their share. With EV recycling
  // (ProtocolConfig::ev_recycle) a QP keeps sending on the EVs whose packets
  // came back unmarked (inferred from SACKs: a marked packet triggers its
  // own) and drops the marked ones, so the slowest flow finishes sooner.
  Scenario sc;
  sc.topology = clos(1, 32, 8);
  sc.topology.routing = Routing::ecmp;
  sc.topology.host_link_bps = 400'000'000'000ull;
  sc.workload = WorkloadKind::permutation;
  sc.bytes = 2 << 20;
  sc.seed = 1;
  const TransportSpec t = transport_by_name("mrc", 256, 1).value();
  const RunResult plain = run_scenario(sc, t);
  sc.protocol.ev_recycle = true;
  const RunResult recycled = run_scenario(sc, t);
  ASSERT_TRUE(plain.completed);
  ASSERT_TRUE(recycled.completed);
  std::printf("[ info ] ECMP permutation, slowest flow: %.2f us plain, %.2f us with EV recycling\n",
              max_fct_us(plain), max_fct_us(recycled));
  EXPECT_LT(max_fct_us(recycled), max_fct_us(plain) * 0.97);
  EXPECT_EQ(recycled.qp_failures, 0u);
}

TEST(Scenario, T1FailureMidTransferLosesNoQp) {
  // One seed's slowest flow sits anywhere from 1.2x to 1.35x ideal (the
  // flows that lose most are the ones whose packets happened to be on the
  // T1), so the claim is checked over eight seeds: none loses a QP, the
  // median dip stays under 1.35x and the worst under 1.55x. (The loss rule
  // waits for the slowest delivery seen lately, and no longer fires below
  // that age at half the ACK timeout, before it declares a loss
  // (ReorderWindow): in exchange for no EV retired and spurious
  // retransmissions under 0.1 % on fault-free runs, a failure under load is
  // recovered later. Over seeds 1-32 the mean dip went from 1.28x to 1.35x
  // and the worst from 1.35x to 1.49x.)
  Scenario sc;
  sc.topology = clos(4, 16, 4);
  sc.workload = WorkloadKind::permutation;
  sc.bytes = 8 << 20;
  std::string why;
  sc.failures.push_back(parse_failure("switch-down:tier=t1,plane=1,index=2,at=40us", &why).value());
  std::vector<double> slowdowns;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    sc.seed = seed;
    const RunResult r = run_scenario(sc, transport("mrc"));
    ASSERT_TRUE(r.completed) << "seed " << seed;
    EXPECT_EQ(r.qp_failures, 0u) << "seed " << seed;
    EXPECT_GT(r.fabric.drops_link_down, 0u) << "the failure must have hit traffic";
    EXPECT_GT(r.evs_retired, 0u);
    std::printf("[ info ] seed %llu, T1 down: slowest flow %.3f x ideal, %llu packets lost on it, %llu EVs retired, "
                "%llu retransmissions, %llu ACK timeouts, %llu trims\n",
                static_cast<unsigned long long>(seed), max_slowdown(r),
                static_cast<unsigned long long>(r.fabric.drops_link_down),
                static_cast<unsigned long long>(r.evs_retired), static_cast<unsigned long long>(r.retransmissions),
                static_cast<unsigned long long>(r.timeouts), static_cast<unsigned long long>(r.fabric.trims));
    slowdowns.push_back(max_slowdown(r));
  }
  std::sort(slowdowns.begin(), slowdowns.end());
  EXPECT_LE((slowdowns[3] + slowdowns[4]) / 2, 1.35) << "the dip is bounded and recovers on the remaining paths";
  EXPECT_LE(slowdowns.back(), 1.55);
}

TEST(Scenario, NicPortDownContinuesAtTheRemainingPlanesRate) {
  Scenario sc;
  sc.topology = clos(4, 8, 4);
  sc.workload = WorkloadKind::matrix;
  sc.flows = {FlowSpec{0, 5, 32 << 20, Time::zero()}};
  sc.seed = 5;
  std::string why;
  sc.failures.push_back(parse_failure("link-down:tier=host,plane=2,a=0,at=20us", &why).value());
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  ASSERT_EQ(r.flows.size(), 1u);
  // 20 us at 4 planes, the rest at 3: 3/4 of the rate.
  const Duration ideal4 = r.flows[0].ideal;
  const double expected = 20.0 + (ideal4.to_us() - 20.0) * 4.0 / 3.0;
  std::printf("[ info ] NIC port down: FCT %.1f us, 3-plane expectation %.1f us\n", r.flows[0].fct().to_us(), expected);
  EXPECT_LE(r.flows[0].fct().to_us(), expected * 1.1);
  EXPECT_GE(r.flows[0].fct().to_us(), ideal4.to_us() * 1.2) << "it cannot have kept 4 planes";
  EXPECT_EQ(r.qp_failures, 0u);
}

// A gray failure: 20 % loss on one T0-T1 link. The EVs that cross it lose
// packets; MRC takes them out of service and the QP keeps line rate. With
// confirming probes (the default) a probe may get through the lossy link,
// and the EV is only demoted to the end of the backups (a second loss soon
// after retires it); with plain retirement (loss_confirm = false, reference
// 3.11) each is ASSUMED_BAD at its first loss.
TEST(Scenario, LossyLinkEvsLeaveServiceAndTheQpKeepsLineRate) {
  Scenario sc;
  sc.topology = clos(4, 8, 4);
  sc.workload = WorkloadKind::matrix;
  sc.flows = {FlowSpec{0, 5, 32 << 20, Time::zero()}};  // host 0 (T0 0) -> host 5 (T0 1): crosses T1s
  sc.seed = 6;
  std::string why;
  sc.failures.push_back(parse_failure("loss:tier=t0t1,plane=1,a=0,b=2,p=0.2,at=10us", &why).value());
  for (const bool confirm : {true, false}) {
    sc.protocol.loss_confirm = confirm;
    const RunResult r = run_scenario(sc, transport("mrc"));
    ASSERT_TRUE(r.completed);
    EXPECT_GT(r.fabric.drops_random, 0u);
    std::printf("[ info ] 20%% loss on one T0-T1 link, loss_confirm %d: FCT %.3f x ideal, %llu lost, %llu EVs retired\n",
                confirm, r.flows[0].slowdown(), static_cast<unsigned long long>(r.fabric.drops_random),
                static_cast<unsigned long long>(r.evs_retired));
    if (!confirm) {
      EXPECT_GT(r.evs_retired, 0u);
    }
    EXPECT_LE(r.flows[0].slowdown(), 1.1);
    EXPECT_LE(r.fabric.drops_random, 60u) << "a few losses per EV on that link, then none";
  }
}

TEST(Scenario, TrainingStepsBarelyNoticeAT1RebootAndALinkFlap) {
  Scenario sc;
  sc.topology = clos(4, 16, 4);
  sc.workload = WorkloadKind::train;
  sc.bytes = 4 << 20;
  sc.steps = 6;
  sc.compute = Duration::us(50);
  sc.seed = 7;
  std::string why;
  sc.failures.push_back(parse_failure("switch-down:tier=t1,plane=0,index=1,at=300us,for=200us", &why).value());
  sc.failures.push_back(
      parse_failure("link-flap:tier=host,plane=3,a=5,at=400us,until=700us,period=100us,duty=0.5", &why).value());
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.qp_failures, 0u);
  const auto [mn, mx] = std::minmax_element(r.steps.begin(), r.steps.end());
  std::printf("[ info ] training steps: min %.1f us, max %.1f us\n", mn->to_us(), mx->to_us());
  EXPECT_LE(mx->to_us(), mn->to_us() * 1.5);
}

// Nothing fails and nothing is lost: MRC's ring all-reduce keeps pace with
// RoCE's, whose QPs each own a plane. MRC carries more header bytes (RETH,
// METH and TSETH in every packet: +24 B per 4 KiB, about 0.45 % of a ring
// step) and larger acknowledgements, and nothing else may cost it time.
// With SACKs on the plane their trigger arrived on, a regular spray put
// every byte-triggered SACK of a QP on the same two planes, which finished
// their share of each step later (1 QP: 2.3 % behind); with a fixed
// coalescing timer, a QP whose packets come a few hundred ns apart SACKed
// twice as often (8 QPs: 1.1 % behind).
TEST(Scenario, LosslessRingAllReduceKeepsPaceWithRoce) {
  Scenario sc;
  sc.topology = clos(8, 8, 8);
  sc.workload = WorkloadKind::allreduce;
  sc.bytes = 4 << 20;
  sc.steps = 1;
  const RunResult roce = run_scenario(sc, transport("roce", 8));
  ASSERT_TRUE(roce.completed);
  ASSERT_EQ(roce.collectives.size(), 1u);
  for (uint32_t qps : {1u, 8u}) {
    const RunResult mrc = run_scenario(sc, transport("mrc", qps));
    ASSERT_TRUE(mrc.completed);
    ASSERT_EQ(mrc.collectives.size(), 1u);
    EXPECT_EQ(mrc.retransmissions, 0u);
    const double ratio = mrc.collectives[0].to_us() / roce.collectives[0].to_us();
    std::printf("[ info ] all-reduce, %u QP(s) per peer: MRC %.2f us, RoCE (8 QPs) %.2f us, ratio %.4f\n", qps,
                mrc.collectives[0].to_us(), roce.collectives[0].to_us(), ratio);
    EXPECT_LE(ratio, 1.009) << qps << " QPs per peer";
  }
}

// 127 -> 1: every sender's first round trip leaves before any feedback. At
// line rate (MaxWnd each) it overflows even the target's last-hop queue for
// trimmed headers; with the application's QP hint (127 senders at the
// target, core::QpHint) NSCC starts each at its share and nothing is lost
// but payloads trimmed away (issue 13).
TEST(Scenario, AHintedIncastLosesNoTrimmedHeaderAndTimesNothingOut) {
  Scenario sc;
  sc.topology = clos(8, 128, 8);
  sc.workload = WorkloadKind::incast;
  sc.fan_in = 127;
  sc.bytes = 1 << 20;
  sc.seed = 1;
  for (const bool hints : {true, false}) {
    TransportSpec t = transport("mrc");
    t.qp_hints = hints;
    const RunResult r = run_scenario(sc, t);
    ASSERT_TRUE(r.completed);
    std::printf("[ info ] 127 -> 1, QP hints %d: %llu trimmed headers dropped, %llu ACK timeouts, %llu EVs retired\n",
                hints, static_cast<unsigned long long>(r.fabric.drops_by_class[static_cast<size_t>(Class::trimmed)]),
                static_cast<unsigned long long>(r.timeouts), static_cast<unsigned long long>(r.evs_retired));
    EXPECT_EQ(r.evs_retired, 0u) << "congestion retired a path";
    EXPECT_EQ(r.qp_failures, 0u);
    if (hints) {
      EXPECT_EQ(r.fabric.drops_by_class[static_cast<size_t>(Class::trimmed)], 0u);
      EXPECT_EQ(r.timeouts, 0u);
    } else {
      EXPECT_GT(r.fabric.drops_by_class[static_cast<size_t>(Class::trimmed)], 1000u) << "the blind first round trip no longer overflows: "
                                                         "this test no longer shows what the hint is for";
    }
  }
}

TEST(Scenario, HeavyIncastCompletesWithoutStallingAndSparesTheVictim) {
  // 15 -> 1 incast with trimming: many packets are trimmed and resent, so
  // nearly every delivery is of a retransmission. The loss rule must still
  // find holes (a regression: it once starved and the QPs stalled on an
  // ACK timeout that NACKs had backed off to seconds).
  Scenario sc = testing::incast15_with_victim();
  sc.time_limit = Duration::ms(20);
  for (const char* name : {"mrc", "mrc-fixed"}) {
    const RunResult r = run_scenario(sc, transport(name));
    ASSERT_TRUE(r.completed) << name;
    EXPECT_EQ(r.timeouts, 0u) << name;
    EXPECT_EQ(r.qp_failures, 0u) << name;
    double worst = 0;
    for (size_t i = 0; i + 1 < r.flows.size(); ++i) worst = std::max(worst, r.flows[i].fct().to_us());
    // 15 x 4 MiB through one 400 Gb/s NIC takes at least 1.26 ms.
    std::printf("[ info ] %s: incast done at %.0f us (1258 us at line rate), victim %.2f x ideal\n", name, worst,
                r.flows.back().slowdown());
    EXPECT_LT(worst, 2500.0) << name;
    // The victim shares the target's T0 but not its downlink: MRC with NSCC
    // keeps it near its own line rate (issue 3, incast with a victim flow).
    // A constant window does not back off, so its trimmed headers crowd the
    // shared T0's queues; only NSCC is held to this.
    if (std::string(name) == "mrc") {
      EXPECT_LE(r.flows.back().slowdown(), 1.15) << name;
    }
  }
}

// Two flows pinned to one path: ECN moves one of them away; both stay near
// line rate (issue 3; reference 4.6 and 5.6: without delay, a mark is a
// load-balancing signal that moves traffic off the marked EV).
//
// One plane, two T0s of four hosts each. Hosts 0 and 1 (under T0 0) each
// send 8 MiB to hosts 4 and 5 (under T0 1), starting together. Each QP's two
// active EVs both leave T0 0 on uplink 0 (TransportSpec::pin_t0_uplink); its
// 14 backups are spread over all four uplinks. Two 100 Gb/s flows into one
// 100 Gb/s uplink: its egress queue builds and ECN-marks (mid-fabric
// marking; last hops do not mark), and MRC must move traffic onto other
// EVs. The control run pins the same way with nowhere else to go (pin_only,
// single path: an ECMP collision), so both flows share the uplink to the end.
struct PinnedPair {
  RunResult run;
  uint64_t skips = 0, swaps = 0;
  uint64_t sent[2] = {0, 0};         ///< data packets flow i sent
  uint64_t sent_pinned[2] = {0, 0};  ///< ... of which on T0 0's uplink 0

  double pinned_share(int i) const { return static_cast<double>(sent_pinned[i]) / static_cast<double>(sent[i]); }
};

PinnedPair run_pinned_pair(const char* name, bool pin_only, uint32_t swap_marks = core::ProtocolConfig{}.ev_swap_marks) {
  Scenario sc;
  sc.topology = clos(1, 8, 4);
  sc.workload = WorkloadKind::matrix;
  sc.flows = {FlowSpec{0, 4, 8 << 20, Time::zero()}, FlowSpec{1, 5, 8 << 20, Time::zero()}};
  sc.seed = 9;
  sc.time_limit = Duration::ms(5);
  sc.protocol.ev_swap_marks = swap_marks;
  TransportSpec t = transport(name);
  t.evs_per_plane = 16;  // 4 EVs per uplink
  t.active_per_plane = 2;
  t.pin_t0_uplink = 0;
  t.pin_only = pin_only;
  PinnedPair out;
  Simulator map_sim(1);
  const Fabric map(map_sim, sc.topology);  // only for the EV -> uplink map
  sc.at_end = [&](Time, const Cluster& c) {
    c.for_each_qp([&](uint32_t src, uint32_t, uint32_t, const core::Endpoint& ep, uint32_t qpn) {
      const core::Qp* q = ep.qp(qpn);  // the path policy's internals
      const core::path::PathPolicy* p = q ? q->path() : nullptr;
      if (p == nullptr || src > 1) return;
      out.skips += p->stats().skips;
      out.swaps += p->stats().congestion_swaps;
      for (size_t i = 0; i < p->size(); ++i) {
        const core::path::EvSlot& slot = p->slot(static_cast<int>(i));
        out.sent[src] += slot.packets_sent;
        if (map.ev_path(src, slot.value).t0_uplink == 0) out.sent_pinned[src] += slot.packets_sent;
      }
    });
  };
  out.run = run_scenario(sc, t);
  return out;
}

void print_pinned(const char* what, const PinnedPair& r) {
  std::printf("[ info ] %s: slowdowns %.3f %.3f, %llu ECN marks, %llu SKIPs, %llu swaps, on the shared uplink "
              "%.0f%% and %.0f%% of each flow's packets\n",
              what, r.run.flows[0].slowdown(), r.run.flows[1].slowdown(),
              static_cast<unsigned long long>(r.run.fabric.ecn_marks), static_cast<unsigned long long>(r.skips),
              static_cast<unsigned long long>(r.swaps), 100 * r.pinned_share(0), 100 * r.pinned_share(1));
}

TEST(Scenario, TwoFlowsPinnedToOnePathEcnMovesOneAwayBothNearLineRate) {
  const PinnedPair mrc = run_pinned_pair("mrc", false);
  const PinnedPair stuck = run_pinned_pair("mrc-single-path", true);
  const PinnedPair skip_only = run_pinned_pair("mrc", false, 0);
  ASSERT_TRUE(mrc.run.completed);
  ASSERT_TRUE(stuck.run.completed);
  ASSERT_TRUE(skip_only.run.completed);
  ASSERT_EQ(mrc.run.flows.size(), 2u);
  print_pinned("MRC", mrc);
  print_pinned("pinned single path", stuck);
  print_pinned("MRC with SKIP only (ev_swap_marks = 0)", skip_only);

  // The control shares the uplink to the end: about half the rate each.
  EXPECT_EQ(stuck.sent_pinned[0], stuck.sent[0]);
  EXPECT_EQ(stuck.sent_pinned[1], stuck.sent[1]);
  EXPECT_GE(max_slowdown(stuck.run), 1.8);

  // MRC: the marks moved traffic (SKIPs, and active EVs traded for
  // backups), not failures (no EV retired, no QP lost) ...
  EXPECT_GT(mrc.run.fabric.ecn_marks, 0u);
  EXPECT_GT(mrc.skips, 0u);
  EXPECT_GE(mrc.swaps, 1u);
  EXPECT_EQ(mrc.run.evs_retired, 0u);
  EXPECT_EQ(mrc.run.qp_failures, 0u);
  // ... off the shared uplink, which carried about one flow's worth (it
  // runs full, not overloaded): either one flow left it or, as here since
  // swaps need the marks to single a path out (ProtocolConfig::
  // ev_swap_marks), each moved about half its data off it ...
  EXPECT_LE(std::min(mrc.pinned_share(0), mrc.pinned_share(1)), 0.6);
  EXPECT_LE(static_cast<double>(mrc.sent_pinned[0] + mrc.sent_pinned[1]) /
                static_cast<double>(mrc.sent[0] + mrc.sent[1]),
            0.55);
  // ... so both flows ran near line rate, about twice as fast as the control.
  EXPECT_LE(max_slowdown(mrc.run), 1.15);
  EXPECT_GE(max_slowdown(stuck.run), 1.6 * max_slowdown(mrc.run));
}

TEST(Scenario, SameSeedSameResult) {
  Scenario sc;
  sc.topology = clos(2, 8, 4);
  sc.workload = WorkloadKind::permutation;
  sc.bytes = 1 << 20;
  std::string why;
  sc.failures.push_back(parse_failure("loss:tier=t0t1,plane=0,a=0,b=1,p=0.1,at=5us", &why).value());
  const RunResult a = run_scenario(sc, transport("mrc"));
  const RunResult b = run_scenario(sc, transport("mrc"));
  ASSERT_EQ(a.flows.size(), b.flows.size());
  for (size_t i = 0; i < a.flows.size(); ++i) EXPECT_EQ(a.flows[i].finish, b.flows[i].finish);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.fabric.drops_random, b.fabric.drops_random);
}

// RunResult::spurious_retransmissions counts the data packets a responder
// received twice. An ACK timeout (2 us) well below the round trip (about
// 9 us) makes the senders retransmit packets that are still on their way, so
// duplicates must reach the responders, with either transport (the sum
// used to run over the senders' QPs, which receive no data, and was always 0).
TEST(Scenario, SpuriousRetransmissionsAreCountedWhereTheDuplicatesArrive) {
  Scenario sc;
  sc.topology = clos(2, 8, 4);
  sc.workload = WorkloadKind::permutation;
  sc.bytes = 256 << 10;
  for (const char* name : {"mrc", "roce"}) {
    TransportSpec t = transport(name);
    t.timeout = 1;  // 1.024 us x 2
    const RunResult r = run_scenario(sc, t);
    ASSERT_TRUE(r.completed) << name;
    EXPECT_GT(r.timeouts, 0u) << name;
    EXPECT_GT(r.spurious_retransmissions, 0u) << name;
    EXPECT_LE(r.spurious_retransmissions, r.retransmissions) << name << ": only retransmissions duplicate";
  }
}

TEST(Scenario, MultiPlaneFatTreeSpraysOverEveryPlaneAndRidesOutACoreSwitchDown) {
  // fattree3 with 2 planes: 32 hosts, 2 per T0, 2 T0s and 2 T1s per pod (8
  // pods), 4 T2s, each plane its own copy with its own core.
  Scenario sc;
  sc.topology.kind = TopologyKind::fattree3;
  sc.topology.planes = 2;
  sc.topology.hosts = 32;
  sc.topology.t0_down = 2;
  sc.topology.t0_up = 2;
  sc.topology.t1_count = 2;
  sc.topology.host_link_bps = 100'000'000'000ull;
  std::string why;
  ASSERT_TRUE(sc.topology.validate(&why).ok()) << why;
  const TopologyShape s = sc.topology.shape();
  EXPECT_EQ(s.planes, 2u);
  EXPECT_EQ(s.switches(), 2u * (16 + 16 + 4));
  EXPECT_EQ(s.links(), uint64_t{2} * (32 + 16 * 2 + 16 * 2));
  sc.workload = WorkloadKind::permutation;
  sc.bytes = 1 << 20;
  sc.seed = 5;
  sc.sample_every = Duration::us(5);
  sc.series_planes = true;
  // T2 1 of plane 1 goes down early and stays down: plane 1's core loses a
  // quarter of its switches, plane 0 none.
  sc.failures.push_back(parse_failure("switch-down:tier=t2,plane=1,index=1,at=3us", &why).value());
  const RunResult r = run_scenario(sc, transport("mrc", 1));
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.qp_failures, 0u);
  EXPECT_GT(r.fabric.drops_link_down, 0u) << "packets on the dead T2 are lost";
  // The slowest flow takes 1.18x its ideal time without the failure and
  // 2.0x with it (losses on the dead T2 are found and its EVs retired).
  EXPECT_LE(max_slowdown(r), 2.5);
  ASSERT_EQ(r.plane_series.size(), r.series.size());
  double per_plane[2] = {0, 0};
  for (const auto& row : r.plane_series) {
    ASSERT_EQ(row.size(), 2u);
    per_plane[0] += row[0];
    per_plane[1] += row[1];
  }
  std::printf("[ info ] fattree3 x 2 planes, T2 down in plane 1: slowest flow %.3f x ideal, goodput %.0f / %.0f "
              "(plane 0 / 1, summed samples), %llu dropped on it\n",
              max_slowdown(r), per_plane[0], per_plane[1],
              static_cast<unsigned long long>(r.fabric.drops_link_down));
  EXPECT_GT(per_plane[0], 0.3 * (per_plane[0] + per_plane[1]));
  EXPECT_GT(per_plane[1], 0.3 * (per_plane[0] + per_plane[1]));
  // Failures name the plane of a core switch or link; a plane that does not
  // exist is refused by name.
  Simulator probe(1);
  const Fabric fabric(probe, sc.topology);
  EXPECT_TRUE(validate_failures({parse_failure("link-down:tier=t1t2,plane=1,a=3,b=2,at=3us", &why).value()},
                                fabric, &why))
      << why;
  EXPECT_FALSE(validate_failures({parse_failure("switch-down:tier=t2,plane=2,index=0,at=3us", &why).value()},
                                 fabric, &why));
  EXPECT_NE(why.find("plane 2 does not exist"), std::string::npos) << why;
}

TEST(Failures, ParseErrorsNameTheProblem) {
  std::string why;
  EXPECT_FALSE(parse_failure("switch-down:tier=t1,index=2", &why));
  EXPECT_NE(why.find("at="), std::string::npos) << why;
  EXPECT_FALSE(parse_failure("link-down:tier=t0t1,plane=0,a=1,b=2,at=5xs", &why));
  EXPECT_FALSE(parse_failure("meteor:at=1ms", &why));
  EXPECT_NE(why.find("unknown kind"), std::string::npos) << why;
  EXPECT_FALSE(parse_failure("loss:tier=host,plane=0,a=1,p=2,at=1ms", &why));
  EXPECT_NE(why.find("p must be"), std::string::npos) << why;
  EXPECT_FALSE(parse_failure("switch-down:tier=t1,index=2,at=1ms,colour=red", &why));
  EXPECT_NE(why.find("colour"), std::string::npos) << why;
  EXPECT_TRUE(parse_failure("link-flap:tier=host,plane=3,a=5,at=1ms,until=2ms,period=100us", &why)) << why;
}

}  // namespace
}  // namespace mrc::sim
