// SPDX-License-Identifier: BSD-2-Clause
// Claim: transfers from 1 B to 64 MiB arrive intact under every impairment
// the harness can apply (issue 2, "Deterministic harness").
#include <gtest/gtest.h>

#include "core/test_fabric.hpp"

namespace mrc {
namespace {

using harness::Action;
using harness::Fabric;
using harness::PacketKind;
using harness::Rule;
using testing::at_ms;

struct Impairment {
  const char* name;
  std::function<void(Fabric&)> apply;
};

Rule random_rule(Action a, double p, PacketKind k = PacketKind::any) {
  Rule r;
  r.action = a;
  r.select = Rule::Select::random;
  r.probability = p;
  r.match.kind = k;
  return r;
}

std::vector<Impairment> impairments() {
  return {
      {"none", [](Fabric&) {}},
      {"drop_nth", [](Fabric& f) {
         Rule r;
         r.select = Rule::Select::nth;
         r.nth = 3;
         r.match.kind = PacketKind::data;
         f.add_rule(r);
       }},
      {"drop_bitmap", [](Fabric& f) {
         Rule r;
         r.select = Rule::Select::bitmap;
         r.match.kind = PacketKind::data;
         r.bitmap.assign(200, false);
         for (size_t i = 0; i < r.bitmap.size(); i += 7) r.bitmap[i] = true;
         f.add_rule(r);
       }},
      {"path_down", [](Fabric& f) { f.path_down(1, 2, Time::zero() + Duration::us(5)); }},
      {"random_loss_2pct", [](Fabric& f) { f.add_rule(random_rule(Action::drop, 0.02)); }},
      {"control_loss_5pct", [](Fabric& f) { f.add_rule(random_rule(Action::drop, 0.05, PacketKind::control)); }},
      {"reorder", [](Fabric& f) {
         Rule r = random_rule(Action::delay, 0.3);
         r.extra_delay = Duration::us(3);
         f.add_rule(r);
       }},
      {"duplicate", [](Fabric& f) { f.add_rule(random_rule(Action::duplicate, 0.05)); }},
      {"corrupt", [](Fabric& f) { f.add_rule(random_rule(Action::corrupt, 0.02)); }},
      {"trim_midfabric", [](Fabric& f) { f.add_rule(random_rule(Action::trim, 0.05, PacketKind::data)); }},
      {"trim_lasthop", [](Fabric& f) { f.add_rule(random_rule(Action::trim_lasthop, 0.05, PacketKind::data)); }},
      {"ecn", [](Fabric& f) { f.add_rule(random_rule(Action::ecn, 0.2, PacketKind::data)); }},
  };
}

class TransferUnderImpairment : public ::testing::TestWithParam<std::tuple<uint64_t, int>> {};

TEST_P(TransferUnderImpairment, ArrivesIntact) {
  const auto [bytes, which] = GetParam();
  const Impairment imp = impairments()[static_cast<size_t>(which)];
  Fabric f(testing::small_fabric(bytes * 31 + static_cast<uint64_t>(which)));
  imp.apply(f);
  const auto qp = f.connect(0, 1, testing::default_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, bytes, at_ms(200));
  EXPECT_TRUE(res.completed) << imp.name << " status " << core::to_string(res.status);
  EXPECT_TRUE(res.data_ok) << imp.name;
  EXPECT_EQ(f.ep(0).qp(qp.a)->state(), core::QpState::rts) << imp.name;
  // Every payload byte counted delivered once, however often its packet
  // was sent, SACKed or acknowledged again.
  EXPECT_EQ(f.ep(0).query_qp(qp.a)->stats.bytes_delivered, bytes) << imp.name;
}

std::string name_of(const ::testing::TestParamInfo<std::tuple<uint64_t, int>>& info) {
  return std::string(impairments()[static_cast<size_t>(std::get<1>(info.param))].name) + "_" +
         std::to_string(std::get<0>(info.param)) + "B";
}

INSTANTIATE_TEST_SUITE_P(Sizes, TransferUnderImpairment,
                         ::testing::Combine(::testing::Values(uint64_t{1}, uint64_t{4095}, uint64_t{4097},
                                                              uint64_t{1} << 20, uint64_t{64} << 20),
                                            ::testing::Range(0, 12)),
                         name_of);

// The receiving NIC checks the IBTA ICRC over the IPv6/UDP framing and the
// packet: every corrupted packet is dropped before the core sees it (a flip
// of BTH byte 4, the one byte the ICRC masks, would pass, so the harness
// never flips it), and the transfer still completes intact.
TEST(Transfer, CorruptPacketsAreDroppedByTheIcrcCheck) {
  Fabric f(testing::small_fabric(17));
  f.add_rule(random_rule(Action::corrupt, 0.05));
  const auto qp = f.connect(0, 1, testing::default_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, 1 << 20, at_ms(50));
  EXPECT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
  f.run_until(f.now() + Duration::ms(1));  // deliver what is still in flight
  EXPECT_GT(f.stats().corrupted, 10u);
  EXPECT_EQ(f.stats().icrc_drops, f.stats().corrupted);
}

// ECN marks set CE in the IPv6 traffic class, a field the ICRC masks: no
// marked packet may fail the check.
TEST(Transfer, EcnMarksInTheIpHeaderKeepTheIcrcValid) {
  Fabric f(testing::small_fabric(18));
  f.add_rule(random_rule(Action::ecn, 0.5, PacketKind::data));
  const auto qp = f.connect(0, 1, testing::default_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, 1 << 20, at_ms(50));
  EXPECT_TRUE(res.completed);
  EXPECT_GT(f.stats().ecn_marked, 10u);
  EXPECT_EQ(f.stats().icrc_drops, 0u);
}

TEST(Transfer, ZeroLengthWriteCompletes) {
  Fabric f(testing::small_fabric());
  const auto qp = f.connect(0, 1, testing::default_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, 0, at_ms(1));
  EXPECT_TRUE(res.completed);
}

TEST(Transfer, ManySmallWritesInOrder) {
  Fabric f(testing::small_fabric(5));
  f.add_rule(random_rule(Action::drop, 0.01));
  const auto qp = f.connect(0, 1, testing::default_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, 1 << 20, at_ms(50), 3000);
  EXPECT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
}

TEST(Transfer, OneGibibyteWithSimulatedMemory) {
  // 1 GiB in one WRITE: payload travels as a length (phantom bytes) into
  // simulated (unbacked) memory; the protocol path is the same.
  auto fc = testing::small_fabric(9);
  fc.carry_payload = false;
  Fabric f(fc);
  const auto qp = f.connect(0, 1, testing::default_qp());
  const uint64_t len = uint64_t{1} << 30;
  auto src = f.ep(0).reg_mr(0x1000, len, core::access::kLocalWrite, false);
  auto dst = f.ep(1).reg_mr(0x10000000, len, core::access::kRemoteWrite, false);
  ASSERT_TRUE(src.ok() && dst.ok());
  core::SendWr wr;
  wr.local_addr = 0x1000;
  wr.lkey = src->lkey;
  wr.length = static_cast<uint32_t>(len);
  wr.remote_addr = 0x10000000;
  wr.rkey = dst->rkey;
  ASSERT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  f.kick(0);
  bool done = false;
  f.run_until([&] {
    while (auto e = f.next_event(0))
      if (auto* w = std::get_if<core::WorkCompletion>(&*e)) done = w->status == core::WcStatus::success;
    return done;
  }, at_ms(100));
  ASSERT_TRUE(done);
  // 1 GiB over 4 x 100 Gb/s takes at least 21.5 ms.
  EXPECT_GT(f.now(), at_ms(21));
  EXPECT_EQ(f.ep(1).qp(qp.b)->stats().data_packets_received, len / 4096);
}

}  // namespace
}  // namespace mrc
