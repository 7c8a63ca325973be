// SPDX-License-Identifier: BSD-2-Clause
// Claims about message semantics and in-flight limits (issue 2):
// WRITE_WITH_IMM completions in MSN order and only once every earlier byte is
// placed; MPR and WIMM limits hold; dynamic MPR is followed; exceeding the
// responder's WIMM is fatal.
#include <gtest/gtest.h>

#include <cstring>

#include "core/test_fabric.hpp"

namespace mrc {
namespace {

using harness::Action;
using harness::Fabric;
using harness::PacketKind;
using harness::Rule;
using testing::at_ms;

struct ImmRun {
  std::vector<uint32_t> imm_order;
  bool placed_before_completion = true;
  size_t send_completions = 0;
  std::vector<core::WcStatus> statuses;
  uint64_t max_wimm_inflight = 0;
};

// Posts `count` WRITE_WITH_IMM of `size` bytes (imm = index) and collects the
// receive completions, checking at each one that every message up to it is
// already in place.
ImmRun run_imms(Fabric& f, const harness::QpPair& qp, int count, uint32_t size, Time limit) {
  ImmRun run;
  auto& src = f.alloc(0, size_t{size} * static_cast<size_t>(count));
  auto& dst = f.alloc(1, size_t{size} * static_cast<size_t>(count));
  Prng fill(3);
  for (auto& b : src.mem) b = static_cast<uint8_t>(fill.next_u32());
  for (int i = 0; i < count; ++i) EXPECT_TRUE(f.ep(1).post_recv(qp.b, core::RecvWr{1000u + static_cast<uint64_t>(i)}).ok());
  for (int i = 0; i < count; ++i) {
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(i);
    wr.opcode = core::WrOpcode::rdma_write_with_imm;
    wr.local_addr = src.addr() + size_t{size} * static_cast<size_t>(i);
    wr.lkey = src.mr.lkey;
    wr.length = size;
    wr.remote_addr = dst.addr() + size_t{size} * static_cast<size_t>(i);
    wr.rkey = dst.mr.rkey;
    wr.imm = static_cast<uint32_t>(i);
    EXPECT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  }
  f.kick(0);
  f.run_until(
      [&] {
        while (auto e = f.next_event(1)) {
          auto* w = std::get_if<core::WorkCompletion>(&*e);
          if (!w) continue;
          run.statuses.push_back(w->status);
          if (w->status != core::WcStatus::success) continue;
          EXPECT_TRUE(w->with_imm);
          EXPECT_EQ(w->byte_len, size);
          EXPECT_EQ(w->wr_id, 1000u + w->imm) << "receive WQEs are consumed in order";
          run.imm_order.push_back(w->imm);
          const size_t upto = size_t{size} * (w->imm + 1);
          if (std::memcmp(src.mem.data(), dst.mem.data(), upto) != 0) run.placed_before_completion = false;
        }
        while (auto e = f.next_event(0)) {
          auto* w = std::get_if<core::WorkCompletion>(&*e);
          if (w && w->status == core::WcStatus::success) ++run.send_completions;
          else f.hold_event(0, std::move(*e));  // keep errors for the test to inspect
        }
        return run.imm_order.size() == static_cast<size_t>(count) &&
               run.send_completions == static_cast<size_t>(count);
      },
      limit);
  run.max_wimm_inflight = f.ep(0).qp(qp.a)->stats().max_wimm_inflight;
  return run;
}

TEST(WriteImm, CompletionsInMsnOrderUnderLossAndReordering) {
  Fabric f(testing::small_fabric(21));
  Rule drop;
  drop.select = Rule::Select::random;
  drop.probability = 0.02;
  f.add_rule(drop);
  Rule delay;
  delay.action = Action::delay;
  delay.select = Rule::Select::random;
  delay.probability = 0.3;
  delay.extra_delay = Duration::us(4);
  f.add_rule(delay);
  const auto qp = f.connect(0, 1, testing::default_qp());
  const auto run = run_imms(f, qp, 300, 9000, at_ms(50));
  ASSERT_EQ(run.imm_order.size(), 300u);
  for (uint32_t i = 0; i < 300; ++i) EXPECT_EQ(run.imm_order[i], i);
  EXPECT_TRUE(run.placed_before_completion);
  EXPECT_EQ(run.send_completions, 300u);
}

TEST(WriteImm, RequesterHonoursMaxWimm) {
  Fabric f(testing::small_fabric(22));
  auto opt = testing::default_qp();
  opt.attr.max_wimm = 2;
  const auto qp = f.connect(0, 1, opt);
  const auto run = run_imms(f, qp, 50, 20000, at_ms(20));
  ASSERT_EQ(run.imm_order.size(), 50u);
  EXPECT_EQ(run.max_wimm_inflight, 2u);
}

TEST(WriteImm, ExceedingTheResponderStashIsFatal) {
  Fabric f(testing::small_fabric(23));
  // The requester believes 16 WriteIMMs may be in flight; the responder
  // advertised 1. Losing an early packet makes later messages wait.
  auto opt = testing::default_qp();
  opt.attr.max_wimm = 16;
  opt.attr.max_wimm_dest = 1;
  Rule r;
  r.select = Rule::Select::nth;
  r.nth = 1;
  r.match.kind = PacketKind::data;
  f.add_rule(r);
  const auto qp = f.connect(0, 1, opt);
  run_imms(f, qp, 8, 4096, at_ms(5));
  EXPECT_EQ(f.ep(1).qp(qp.b)->state(), core::QpState::error);
  EXPECT_EQ(f.ep(0).qp(qp.a)->state(), core::QpState::error);
  bool rem_op = false;
  for (auto& e : f.events(0))
    if (auto* q = std::get_if<core::QpErrorEvent>(&e)) rem_op = q->cause == core::WcStatus::rem_op_err;
  EXPECT_TRUE(rem_op);
}

TEST(WriteImm, MissingReceiveWqeIsFatal) {
  Fabric f(testing::small_fabric(24));
  const auto qp = f.connect(0, 1, testing::default_qp());
  auto& src = f.alloc(0, 4096);
  auto& dst = f.alloc(1, 4096);
  core::SendWr wr;
  wr.opcode = core::WrOpcode::rdma_write_with_imm;
  wr.local_addr = src.addr();
  wr.lkey = src.mr.lkey;
  wr.length = 4096;
  wr.remote_addr = dst.addr();
  wr.rkey = dst.mr.rkey;
  ASSERT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  f.kick(0);
  f.run_until(at_ms(2));
  EXPECT_EQ(f.ep(1).qp(qp.b)->state(), core::QpState::error);
  EXPECT_EQ(f.ep(0).qp(qp.a)->state(), core::QpState::error);
}

// A long fabric (40 us RTT) and a big fixed window, so the PSN window binds.
harness::FabricConfig long_fabric(uint64_t seed) {
  auto fc = testing::small_fabric(seed);
  fc.path_delay = Duration::us(20);
  fc.endpoint.protocol.base_rtt = Duration::us(42);
  return fc;
}

Duration run_with_mpr(uint8_t mpr, bool dynamic, uint8_t dyn_mpr, uint64_t* max_span, uint64_t* oor) {
  Fabric f(long_fabric(25));
  core::CcProfile big;
  big.algorithm = core::kCcFixed;
  big.fixed.window_bytes = 16 << 20;
  for (int h = 0; h < 2; ++h) EXPECT_TRUE(f.ep(h).set_cc_profile(1, big).ok());
  auto opt = testing::default_qp();
  opt.cc_profile = 1;
  opt.attr.mpr = mpr;
  opt.attr.mpr_dest = 8;
  if (dynamic) opt.attr.cap = core::qp_cap::kDynamicMpr;
  const auto qp = f.connect(0, 1, opt);
  if (dynamic) {
    EXPECT_TRUE(f.ep(1).set_mpr_dest(qp.b, dyn_mpr).ok());
  }
  const auto res = harness::write_and_wait(f, qp, 0, 1, 16 << 20, at_ms(50));
  EXPECT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
  *max_span = f.ep(0).qp(qp.a)->stats().max_psn_span;
  *oor = f.ep(1).stats().rx_psn_out_of_window;
  return res.finish - Time::zero();
}

TEST(Mpr, RequesterNeverExceedsTheWindow) {
  uint64_t span = 0, oor = 0;
  const Duration t1 = run_with_mpr(1, false, 0, &span, &oor);
  EXPECT_LE(span, 128u);
  EXPECT_EQ(oor, 0u);
  const Duration t8 = run_with_mpr(8, false, 0, &span, &oor);
  EXPECT_LE(span, 1024u);
  EXPECT_GT(span, 128u);
  // 128 PSNs per 42 us RTT is ~100 Gb/s; 1024 PSNs fill 400 Gb/s.
  std::printf("[ info ] 16 MiB over a 42 us RTT: MPR 1 %.0f us, MPR 8 %.0f us\n", t1.to_us(), t8.to_us());
  EXPECT_GT(t1, t8 * 5 / 2);
}

TEST(Mpr, DynamicMprIsFollowedWhenBothSidesEnableIt) {
  uint64_t span = 0, oor = 0;
  const Duration t_dyn = run_with_mpr(8, true, 1, &span, &oor);
  EXPECT_EQ(oor, 0u);
  uint64_t span8 = 0;
  const Duration t_static = run_with_mpr(8, false, 0, &span8, &oor);
  std::printf("[ info ] dynamic MPR 1 (of 8): %.0f us, static MPR 8: %.0f us\n", t_dyn.to_us(), t_static.to_us());
  EXPECT_GT(t_dyn, t_static * 5 / 2);
}

TEST(Mpr, SetMprDestNeedsTheCapability) {
  Fabric f(testing::small_fabric(26));
  const auto qp = f.connect(0, 1, testing::default_qp());
  EXPECT_EQ(f.ep(1).set_mpr_dest(qp.b, 1), Errc::invalid_argument);
}

}  // namespace
}  // namespace mrc
