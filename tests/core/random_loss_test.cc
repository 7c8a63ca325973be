// SPDX-License-Identifier: BSD-2-Clause
// Claims about loss that is not a path failure (issue 35): a random loss is
// found about a round trip after it happened, not a far path's loss age
// later; one path is a FIFO, so a later packet on the same EV proves an
// earlier one lost; and a confirming probe lost to the same random loss
// does not retire a working EV.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "core/test_fabric.hpp"
#include "wire/packet.hpp"

namespace mrc {
namespace {

using harness::Fabric;
using harness::Packet;
using harness::PacketKind;
using harness::Rule;
using testing::at_ms;

struct DataTx {
  uint32_t psn;
  uint32_t entropy;
  bool rtx;
  Time at;
};

uint32_t psn_of(const Packet& p) { return wire::decode<wire::Bth>(p.bytes).value().psn; }
bool rtx_of(const Packet& p) { return wire::decode<wire::Bth>(p.bytes).value().rtx; }

// Runs a 1 MiB WRITE from host 0 to host 1 with the `nth` data packet
// dropped, and returns how long its retransmission left after the original
// (nullopt if it was never resent) together with the requester's stats.
struct LossRun {
  std::optional<Duration> recovery;
  core::QpStats stats;
  bool data_ok = false;
};
LossRun run_one_loss(harness::FabricConfig fc, uint64_t nth, const core::EvProfile* profile = nullptr) {
  Fabric f(fc);
  Rule r;
  r.match.kind = PacketKind::data;
  r.select = Rule::Select::nth;
  r.nth = nth;
  f.add_rule(r);
  std::vector<DataTx> data;
  f.on_transmit = [&](const Packet& p, Time t) {
    if (p.src == 0 && p.kind() == PacketKind::data) data.push_back({psn_of(p), p.entropy, rtx_of(p), t});
  };
  harness::QpOptions opt = testing::default_qp();
  if (profile) {
    for (int h = 0; h < 2; ++h) EXPECT_TRUE(f.ep(h).set_ev_profile(5, *profile).ok());
    opt.ev_profile = 5;
  }
  const auto qp = f.connect(0, 1, opt);
  const auto res = harness::write_and_wait(f, qp, 0, 1, 1 << 20, at_ms(20));
  LossRun out;
  out.data_ok = res.completed && res.data_ok;
  out.stats = f.ep(0).qp(qp.a)->stats();
  const DataTx& lost = data.at(nth - 1);
  for (const DataTx& d : data)
    if (d.rtx && d.psn == lost.psn) {
      out.recovery = d.at - lost.at;
      break;
    }
  return out;
}

// The harness's paths take 1 us each way; the QP is told its longest path
// takes 100 us (a far path of a big fabric), with a small margin. The loss
// age must come from the RTT the QP measures, not from that figure.
harness::FabricConfig far_base_rtt_fabric() {
  harness::FabricConfig fc = testing::small_fabric(5);
  fc.endpoint.protocol.base_rtt = Duration::us(100);
  fc.endpoint.protocol.reorder_allowance = Duration::us(1);
  fc.endpoint.protocol.path_fifo_loss = false;  // the loss rule alone
  return fc;
}

TEST(RandomLoss, LossAgeFollowsTheMeasuredRttNotTheLongestPath) {
  const LossRun run = run_one_loss(far_base_rtt_fabric(), 100);
  ASSERT_TRUE(run.data_ok);
  ASSERT_TRUE(run.recovery.has_value());
  EXPECT_LT(*run.recovery, Duration::us(30)) << "the loss waited for the configured base RTT";
  EXPECT_EQ(run.stats.losses_rule, 1u);
  EXPECT_EQ(run.stats.spurious_losses, 0u);
}

TEST(RandomLoss, ReferenceFloorKeepsTheBaseRttWhenAsked) {
  harness::FabricConfig fc = far_base_rtt_fabric();
  fc.endpoint.protocol.loss_age_floor_from_rtt = false;
  const LossRun run = run_one_loss(fc, 100);
  ASSERT_TRUE(run.data_ok);
  ASSERT_TRUE(run.recovery.has_value());
  // The base RTT, capped at three quarters of the 65.5 us ACK timeout.
  EXPECT_GE(*run.recovery, Duration::us(45));
}

// Four EVs, one per plane, so each carries every fourth packet or so: the
// packets after a dropped one on its EV arrive, and their SACK proves it
// lost a round trip after it left, while the loss rule's margin (60 us,
// a half step less once settled, capped under the ACK timeout) has not passed.
harness::FabricConfig fifo_fabric(bool fifo) {
  harness::FabricConfig fc = testing::small_fabric(9);
  fc.endpoint.protocol.reorder_allowance = Duration::us(60);
  fc.endpoint.protocol.path_fifo_loss = fifo;
  return fc;
}
core::EvProfile four_evs() {
  core::EvProfile p;
  p.ev_count = 4;
  p.active_count = 4;
  p.ev_min_active = 1;
  return p;
}

TEST(RandomLoss, ALaterPacketOnTheSameEvProvesAnEarlierOneLost) {
  const core::EvProfile evs = four_evs();
  const LossRun run = run_one_loss(fifo_fabric(true), 45, &evs);
  ASSERT_TRUE(run.data_ok);
  ASSERT_TRUE(run.recovery.has_value());
  EXPECT_EQ(run.stats.losses_path_fifo, 1u);
  EXPECT_EQ(run.stats.losses_rule, 1u);
  EXPECT_EQ(run.stats.spurious_losses, 0u);
  EXPECT_LT(*run.recovery, Duration::us(20)) << "found by the loss rule's age, not the path's order";

  const LossRun plain = run_one_loss(fifo_fabric(false), 45, &evs);
  ASSERT_TRUE(plain.data_ok);
  ASSERT_TRUE(plain.recovery.has_value());
  EXPECT_EQ(plain.stats.losses_path_fifo, 0u);
  EXPECT_GT(*plain.recovery, Duration::us(40)) << "the margin this test relies on is gone";
}

// No spurious verdicts from the FIFO rule where nothing is lost but paths
// differ in delay (a later packet on another EV overtakes; on the same EV
// it never does).
TEST(RandomLoss, PathFifoRuleIsSilentWithoutLoss) {
  harness::FabricConfig fc = fifo_fabric(true);
  fc.path_delay_step = Duration::us(3);
  Fabric f(fc);
  const core::EvProfile evs = four_evs();
  for (int h = 0; h < 2; ++h) ASSERT_TRUE(f.ep(h).set_ev_profile(5, evs).ok());
  harness::QpOptions opt = testing::default_qp();
  opt.ev_profile = 5;
  const auto qp = f.connect(0, 1, opt);
  const auto res = harness::write_and_wait(f, qp, 0, 1, 4 << 20, at_ms(20));
  ASSERT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
  EXPECT_EQ(res.retransmissions, 0u);
  EXPECT_EQ(f.ep(0).qp(qp.a)->stats().losses_path_fifo, 0u);
}

// A data loss makes its EV a suspect; the confirming probe is lost too (the
// same random loss can take it). With three tries the EV comes back without
// an ASSUMED_BAD event; with the reference's single try it is retired.
uint64_t retired_after_lost_probe(uint32_t confirm_probes, uint32_t copies = 1) {
  harness::FabricConfig fc = testing::small_fabric(3);
  fc.endpoint.protocol.loss_confirm_probes = confirm_probes;
  fc.endpoint.protocol.loss_confirm_copies = copies;
  Fabric f(fc);
  Rule data;
  data.match.kind = PacketKind::data;
  data.select = Rule::Select::nth;
  data.nth = 50;
  f.add_rule(data);
  Rule probe;
  probe.match.kind = PacketKind::probe;
  probe.select = Rule::Select::nth;
  probe.nth = 1;
  f.add_rule(probe);
  const auto qp = f.connect(0, 1, testing::default_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, 1 << 20, at_ms(20));
  EXPECT_TRUE(res.completed && res.data_ok);
  f.run_until(f.now() + Duration::us(500));  // the confirming probes outlast the transfer
  const auto& ps = f.ep(0).qp(qp.a)->path()->stats();
  EXPECT_EQ(ps.suspected, 1u);
  EXPECT_GE(ps.probes_sent, std::min<uint64_t>(confirm_probes, 2));  // the lost one, then the answered one
  return ps.retired;
}

TEST(RandomLoss, ALostConfirmingProbeDoesNotRetireAWorkingEv) {
  EXPECT_EQ(retired_after_lost_probe(3), 0u);
  EXPECT_EQ(retired_after_lost_probe(1), 1u);
  // A copy sent with the lost probe answers for it: one try suffices.
  EXPECT_EQ(retired_after_lost_probe(1, 2), 0u);
}

// A gray link: one of plane 0's two paths loses a fifth of what crosses it,
// both ways, probes included (most of which therefore pass). The EVs hashed
// through it lose far more than their siblings and are held out; no EV of
// any other path or plane is retired. Returns what the run saw.
struct GrayRun {
  uint64_t retired_on = 0;   ///< ASSUMED_BAD events of EVs through the gray path
  uint64_t retired_off = 0;  ///< ... of every other EV
  uint64_t late_on = 0;      ///< plane-0 data packets on the gray path in the second half
  uint64_t late_plane = 0;   ///< plane-0 data packets in the second half
  uint64_t lost = 0;         ///< packets the gray path dropped
};

GrayRun gray_run(double factor, double gray_p, double everywhere_p) {
  harness::FabricConfig fc = testing::small_fabric(5);
  fc.paths_per_plane = 2;
  fc.port_rate_bps = 10'000'000'000ull;
  fc.carry_payload = false;
  fc.endpoint.protocol.gray_loss_factor = factor;
  Fabric f(fc);
  Rule g;
  g.match.plane = 0;
  g.match.path = 0;
  g.select = Rule::Select::random;
  g.probability = gray_p;
  const Rule& gray = f.add_rule(g);
  Rule all;
  all.select = Rule::Select::random;
  all.probability = everywhere_p;
  f.add_rule(all);
  GrayRun run;
  const Time half = at_ms(12);
  f.on_transmit = [&](const Packet& p, Time t) {
    if (p.src != 0 || p.kind() != PacketKind::data || p.plane != 0 || t < half) return;
    ++run.late_plane;
    run.late_on += p.path == 0;
  };
  // The software device's EV set: 16 per plane, every one active, so no
  // pool of backups quietly replaces the EVs that lose packets.
  core::EvProfile evs;
  evs.ev_count = evs.active_count = 16 * fc.planes;
  evs.ev_min_active = 1;
  for (int h = 0; h < 2; ++h) EXPECT_TRUE(f.ep(h).set_ev_profile(1, evs).ok());
  harness::QpOptions o = testing::default_qp();
  o.ev_profile = 1;
  const auto qp = f.connect(0, 1, o);
  const auto res = harness::write_and_wait(f, qp, 0, 1, 128 << 20, at_ms(500));
  EXPECT_TRUE(res.completed);
  for (auto& e : f.events(0))
    if (auto* ev = std::get_if<core::EvEvent>(&e); ev && ev->to == core::EvState::assumed_bad) {
      const bool on = ev->port == 0 && f.path_of(0, 1, ev->ev) == 0;
      (on ? run.retired_on : run.retired_off) += 1;
    }
  run.lost = gray.applied;
  std::printf("[ info ] factor %.0f, gray %.0f %%, everywhere %.1f %%: retired %llu on the gray path, %llu elsewhere; "
              "second half: %llu of plane 0's %llu data packets on it; %llu dropped there; finish %.2f ms\n",
              factor, gray_p * 100, everywhere_p * 100, static_cast<unsigned long long>(run.retired_on),
              static_cast<unsigned long long>(run.retired_off), static_cast<unsigned long long>(run.late_on),
              static_cast<unsigned long long>(run.late_plane), static_cast<unsigned long long>(run.lost),
              res.finish.to_us() / 1000);
  return run;
}

TEST(GrayLoss, APathLosingAFifthIsHeldOutAndNoOtherIsRetired) {
  const GrayRun run = gray_run(3.0, 0.2, 0.0);
  EXPECT_GT(run.retired_on, 0u);
  EXPECT_EQ(run.retired_off, 0u);
  // Held out: the gray path carries little of plane 0 later on (a fair
  // share is half; 6 % measured: with two copies per confirming probe, its
  // suspects pass confirmation more often, and the gray rule alone holds
  // the path out).
  EXPECT_LT(run.late_on * 10, run.late_plane);
  // Without the rule the confirming probes mostly pass, and the path keeps
  // a large share.
  const GrayRun ref = gray_run(0.0, 0.2, 0.0);
  EXPECT_GT(ref.late_on * 10, ref.late_plane);
}

TEST(GrayLoss, UniformRandomLossRetiresNothing) {
  const GrayRun run = gray_run(3.0, 0.0, 0.01);
  EXPECT_EQ(run.retired_on + run.retired_off, 0u);
}

}  // namespace
}  // namespace mrc
