// SPDX-License-Identifier: BSD-2-Clause
// Claims about the RoCEv2 RC baseline transport (QpInit::transport =
// Transport::roce_rc), the one the simulator compares MRC against: transfers
// arrive intact with and without loss or reordering; go-back-N resends more
// than was lost; every packet of a QP takes one EV (one plane, one path); a
// dead path stalls a RoCE QP until the retry limit fails it while MRC routes
// around it; WRITE_WITH_IMM completes in order; the responder follows IBTA's
// PSN rules (one NAK per gap, re-ACK of duplicates, coalesced ACKs); CNPs are
// rate-limited per QP; DCQCN cuts the rate on CNPs and its pacing holds.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "core/cc/dcqcn.hpp"
#include "core/test_fabric.hpp"
#include "wire/packet.hpp"
#include "wire/psn.hpp"

namespace mrc {
namespace {

using harness::Action;
using harness::Fabric;
using harness::Packet;
using harness::PacketKind;
using harness::Rule;
using testing::at_ms;
using testing::at_us;

harness::QpOptions roce_qp() {
  harness::QpOptions o = testing::default_qp();
  o.init.transport = core::Transport::roce_rc;
  return o;
}

uint32_t dest_qp_of(const Packet& p) { return wire::decode<wire::Bth>(p.bytes).value().dest_qp; }
uint8_t opcode_of(const Packet& p) { return p.bytes.empty() ? 0 : p.bytes[0]; }

// Ideal time to move `bytes` of 4 KiB RC packets over one 100 Gb/s port
// (BTH, RETH on the first packet only, + 52 B of UDP/IP/ICRC).
Duration ideal_one_port(uint64_t bytes) {
  const uint64_t pkts = (bytes + 4095) / 4096;
  return Duration::serialization(bytes + pkts * (12 + 52) + 16, 100'000'000'000ull);
}

Rule random_rule(Action a, double p, PacketKind k) {
  Rule r;
  r.action = a;
  r.select = Rule::Select::random;
  r.probability = p;
  r.match.kind = k;
  return r;
}

// ------------------------------------------------------------------ transfers

TEST(RoceTransfer, SizesArriveIntactWithoutLoss) {
  for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{4096}, uint64_t{4097},
                         uint64_t{65539}, uint64_t{1} << 20, uint64_t{16} << 20}) {
    SCOPED_TRACE(bytes);
    Fabric f(testing::small_fabric(31));
    const auto qp = f.connect(0, 1, roce_qp());
    const auto res = harness::write_and_wait(f, qp, 0, 1, bytes, at_ms(20));
    ASSERT_TRUE(res.completed);
    EXPECT_TRUE(res.data_ok);
    EXPECT_EQ(res.retransmissions, 0u);
    const auto& st = f.ep(0).qp(qp.a)->stats();
    EXPECT_EQ(st.rewinds, 0u);
    EXPECT_EQ(st.timeouts, 0u);
    EXPECT_EQ(f.ep(1).qp(qp.b)->stats().seq_naks_sent, 0u);
    EXPECT_EQ(f.ep(1).qp(qp.b)->stats().duplicates_received, 0u);
    if (bytes == uint64_t{16} << 20) {
      // One port carries it all, at its line rate: MRC would use all four.
      const Duration took = res.finish - Time::zero();
      std::printf("[ info ] RoCE 16 MiB: %.1f us, one-port ideal %.1f us\n", took.to_us(),
                  ideal_one_port(bytes).to_us());
      EXPECT_GT(took, ideal_one_port(bytes));
      EXPECT_LT(took, ideal_one_port(bytes) * 105 / 100 + Duration::us(20));
    }
  }
}

TEST(RoceTransfer, RandomLossIsRecoveredByGoBackN) {
  Fabric f(testing::small_fabric(32));
  Rule& loss = f.add_rule(random_rule(Action::drop, 0.01, PacketKind::data));
  const auto qp = f.connect(0, 1, roce_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, 8 << 20, at_ms(50));
  ASSERT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
  const auto& st = f.ep(0).qp(qp.a)->stats();
  std::printf("[ info ] 1%% loss: %llu data packets lost, %llu retransmitted, %llu rewinds (%llu timeouts)\n",
              static_cast<unsigned long long>(loss.applied), static_cast<unsigned long long>(res.retransmissions),
              static_cast<unsigned long long>(st.rewinds), static_cast<unsigned long long>(st.timeouts));
  ASSERT_GT(loss.applied, 10u);
  // Go-back-N resends everything after each hole, not just the hole.
  EXPECT_GT(res.retransmissions, 2 * loss.applied);
  EXPECT_GT(st.nacks_received, 0u);
  EXPECT_GT(f.ep(1).qp(qp.b)->stats().seq_naks_sent, 0u);
}

TEST(RoceTransfer, RandomLossInBothDirectionsAnd16MiB) {
  Fabric f(testing::small_fabric(33));
  f.add_rule(random_rule(Action::drop, 0.01, PacketKind::any));
  const auto qp = f.connect(0, 1, roce_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, 16 << 20, at_ms(200));
  ASSERT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
}

TEST(RoceTransfer, ReorderingForcesGoBackNWithoutAnyLoss) {
  Fabric f(testing::small_fabric(34));
  Rule r = random_rule(Action::delay, 0.02, PacketKind::data);
  r.extra_delay = Duration::us(3);
  Rule& delayed = f.add_rule(r);
  const auto qp = f.connect(0, 1, roce_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, 4 << 20, at_ms(50));
  ASSERT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
  EXPECT_EQ(f.stats().dropped, 0u);
  const auto& rx = f.ep(1).qp(qp.b)->stats();
  std::printf("[ info ] reordering: %llu packets delayed, %llu NAKs, %llu retransmissions, 0 losses\n",
              static_cast<unsigned long long>(delayed.applied), static_cast<unsigned long long>(rx.seq_naks_sent),
              static_cast<unsigned long long>(res.retransmissions));
  // Nothing was lost, yet every overtaken packet cost a NAK and a rewind.
  EXPECT_GT(rx.seq_naks_sent, 0u);
  EXPECT_GT(res.retransmissions, 0u);
  EXPECT_GT(rx.duplicates_received, 0u);  // the delayed originals, and resends of placed packets
}

TEST(RoceTransfer, AcrossThePsnWrapUnderLoss) {
  Fabric f(testing::small_fabric(35));
  f.add_rule(random_rule(Action::drop, 0.01, PacketKind::data));
  const auto qp = f.connect(0, 1, roce_qp(), 0xFFFF80);
  const auto res = harness::write_and_wait(f, qp, 0, 1, 4 << 20, at_ms(50));
  ASSERT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
}

TEST(RoceTransfer, SameSeedSameTrace) {
  auto run = [](uint64_t seed) {
    Fabric f(testing::small_fabric(seed));
    f.add_rule(random_rule(Action::drop, 0.01, PacketKind::any));
    const auto qp = f.connect(0, 1, roce_qp());
    const auto res = harness::write_and_wait(f, qp, 0, 1, 2 << 20, at_ms(50));
    EXPECT_TRUE(res.completed);
    return std::make_pair(f.trace_hash(), res.finish);
  };
  EXPECT_EQ(run(36), run(36));
  EXPECT_NE(run(36).first, run(37).first);
}

// ------------------------------------------------------------------ one path per QP

// Posts one `bytes` WRITE on each QP (0 -> 1) and runs until all complete.
bool write_all(Fabric& f, const std::vector<harness::QpPair>& qps, uint64_t bytes, Time limit) {
  for (size_t i = 0; i < qps.size(); ++i) {
    auto& src = f.alloc(0, bytes);
    auto& dst = f.alloc(1, bytes);
    core::SendWr wr;
    wr.wr_id = i;
    wr.local_addr = src.addr();
    wr.lkey = src.mr.lkey;
    wr.length = static_cast<uint32_t>(bytes);
    wr.remote_addr = dst.addr();
    wr.rkey = dst.mr.rkey;
    EXPECT_TRUE(f.ep(0).post_send(f.now(), qps[i].a, wr).ok());
  }
  f.kick(0);
  size_t done = 0;
  return f.run_until(
      [&] {
        while (auto e = f.next_event(0))
          if (auto* w = std::get_if<core::WorkCompletion>(&*e); w && w->status == core::WcStatus::success) ++done;
        return done == qps.size();
      },
      limit);
}

TEST(RocePath, EveryPacketOfAQpTakesOneEv) {
  Fabric f(testing::small_fabric(41));
  std::vector<harness::QpPair> qps;
  for (int i = 0; i < 8; ++i) qps.push_back(f.connect(0, 1, roce_qp()));
  // (source host, destination QPN) -> every (plane, EV, path) it used.
  std::map<std::pair<int, uint32_t>, std::set<std::tuple<int, uint32_t, int>>> used;
  f.on_transmit = [&](const Packet& p, Time) {
    used[{p.src, dest_qp_of(p)}].insert({p.plane, p.entropy, p.path});
  };
  ASSERT_TRUE(write_all(f, qps, 1 << 20, at_ms(20)));
  std::set<int> planes;
  for (const auto& q : qps) {
    const auto& data = used[{0, q.b}];   // data: host 0 -> QP b
    const auto& ctrl = used[{1, q.a}];   // ACKs: host 1 -> QP a
    ASSERT_EQ(data.size(), 1u) << "a RoCE QP's data took more than one EV";
    ASSERT_EQ(ctrl.size(), 1u) << "a RoCE QP's ACKs took more than one EV";
    const core::path::PathPolicy* pp = f.ep(0).qp(q.a)->path();
    const auto& slot = pp->slot(pp->pinned());
    EXPECT_EQ(std::get<0>(*data.begin()), slot.port);
    EXPECT_EQ(std::get<1>(*data.begin()), slot.value);
    planes.insert(std::get<0>(*data.begin()));
  }
  // QPs hash independently: eight of them do not all land on one plane.
  EXPECT_GT(planes.size(), 1u);

  // Contrast: one MRC QP sprays over many EVs on every plane.
  Fabric g(testing::small_fabric(41));
  std::set<std::pair<int, uint32_t>> mrc_evs;
  g.on_transmit = [&](const Packet& p, Time) {
    if (p.src == 0 && p.kind() == PacketKind::data) mrc_evs.insert({p.plane, p.entropy});
  };
  const auto mq = g.connect(0, 1, testing::default_qp());
  ASSERT_TRUE(harness::write_and_wait(g, mq, 0, 1, 1 << 20, at_ms(20)).completed);
  EXPECT_GT(mrc_evs.size(), 100u);
}

TEST(RocePath, ProfilePolicyIsOverriddenBySinglePath) {
  Fabric f(testing::small_fabric(42));
  core::EvProfile spray;
  spray.policy = core::PathPolicyKind::oblivious;
  spray.ev_count = 64;
  spray.active_count = 64;
  spray.ev_min_active = 1;
  for (int h = 0; h < 2; ++h) ASSERT_TRUE(f.ep(h).set_ev_profile(5, spray).ok());
  auto opt = roce_qp();
  opt.ev_profile = 5;
  const auto qp = f.connect(0, 1, opt);
  std::set<uint32_t> evs;
  f.on_transmit = [&](const Packet& p, Time) {
    if (p.src == 0) evs.insert(p.entropy);
  };
  ASSERT_TRUE(harness::write_and_wait(f, qp, 0, 1, 1 << 20, at_ms(20)).completed);
  EXPECT_EQ(evs.size(), 1u);
  EXPECT_NE(f.ep(0).qp(qp.a)->path()->pinned(), core::path::PathPolicy::kNone);
}

TEST(RocePath, DeadPathStallsTheQpUntilTheRetryLimitFailsIt) {
  Fabric f(testing::small_fabric(43));
  auto opt = roce_qp();
  opt.attr.retry_exp = 1;  // 7 linear + 1 exponential retries
  const auto qp = f.connect(0, 1, opt);
  const core::path::PathPolicy* pp = f.ep(0).qp(qp.a)->path();
  const auto& slot = pp->slot(pp->pinned());
  const int plane = slot.port, path = f.path_of(0, 1, slot.value);
  f.path_down(plane, path, at_us(20));
  uint64_t other_planes = 0;
  f.on_transmit = [&](const Packet& p, Time) {
    if (p.src == 0 && p.kind() == PacketKind::data && p.plane != plane) ++other_planes;
  };
  const auto res = harness::write_and_wait(f, qp, 0, 1, 16 << 20, at_ms(20));
  EXPECT_FALSE(res.completed);
  EXPECT_EQ(res.status, core::WcStatus::retry_exc_err);
  EXPECT_EQ(f.ep(0).qp(qp.a)->state(), core::QpState::error);
  EXPECT_EQ(other_planes, 0u) << "a RoCE QP never leaves its path";
  const auto& st = f.ep(0).qp(qp.a)->stats();
  EXPECT_EQ(st.timeouts, 9u);  // the 9th expiry exceeds 7 + 1 retries
  bool fatal = false;
  for (auto& e : f.events(0))
    if (auto* q = std::get_if<core::QpErrorEvent>(&e)) fatal = q->cause == core::WcStatus::retry_exc_err;
  EXPECT_TRUE(fatal);
  std::printf("[ info ] RoCE QP on a dead path failed at %.0f us after %llu timeouts\n", res.finish.to_us(),
              static_cast<unsigned long long>(st.timeouts));

  // Contrast: an MRC QP loses the same path and finishes.
  Fabric g(testing::small_fabric(43));
  g.path_down(plane, path, at_us(20));
  const auto mq = g.connect(0, 1, testing::default_qp());
  const auto mres = harness::write_and_wait(g, mq, 0, 1, 16 << 20, at_ms(20));
  EXPECT_TRUE(mres.completed);
  EXPECT_TRUE(mres.data_ok);
}

TEST(RocePath, ALocalPortDownStallsTheQpButTheOthersRun) {
  Fabric f(testing::small_fabric(44));
  std::vector<harness::QpPair> qps;
  for (int i = 0; i < 4; ++i) qps.push_back(f.connect(0, 1, roce_qp()));
  const core::path::PathPolicy* pp = f.ep(0).qp(qps[0].a)->path();
  const uint8_t port = pp->slot(pp->pinned()).port;
  f.ep(0).set_port_up(f.now(), port, false);
  std::vector<harness::QpPair> others;
  for (const auto& q : qps) {
    const core::path::PathPolicy* p = f.ep(0).qp(q.a)->path();
    if (p->slot(p->pinned()).port != port) others.push_back(q);
  }
  ASSERT_FALSE(others.empty());
  EXPECT_TRUE(write_all(f, others, 256 << 10, at_ms(5)));
  // The QP on the dead port sends nothing at all.
  uint64_t sent_on_dead = 0;
  f.on_transmit = [&](const Packet& p, Time) { sent_on_dead += p.src == 0 && p.plane == port; };
  EXPECT_FALSE(write_all(f, {qps[0]}, 64 << 10, f.now() + Duration::us(500)));
  EXPECT_EQ(sent_on_dead, 0u);
}

// ------------------------------------------------------------------ WRITE_WITH_IMM

TEST(RoceOrdering, WriteImmCompletesInOrderUnderLossAndReordering) {
  Fabric f(testing::small_fabric(51));
  f.add_rule(random_rule(Action::drop, 0.02, PacketKind::any));
  Rule delay = random_rule(Action::delay, 0.1, PacketKind::data);
  delay.extra_delay = Duration::us(3);
  f.add_rule(delay);
  const auto qp = f.connect(0, 1, roce_qp());
  constexpr int kCount = 100;
  constexpr uint32_t kSize = 9000;
  auto& src = f.alloc(0, size_t{kSize} * kCount);
  auto& dst = f.alloc(1, size_t{kSize} * kCount);
  Prng fill(5);
  for (auto& b : src.mem) b = static_cast<uint8_t>(fill.next_u32());
  for (int i = 0; i < kCount; ++i)
    ASSERT_TRUE(f.ep(1).post_recv(qp.b, core::RecvWr{1000u + static_cast<uint64_t>(i)}).ok());
  for (int i = 0; i < kCount; ++i) {
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(i);
    wr.opcode = core::WrOpcode::rdma_write_with_imm;
    wr.local_addr = src.addr() + size_t{kSize} * static_cast<size_t>(i);
    wr.lkey = src.mr.lkey;
    wr.length = kSize;
    wr.remote_addr = dst.addr() + size_t{kSize} * static_cast<size_t>(i);
    wr.rkey = dst.mr.rkey;
    wr.imm = static_cast<uint32_t>(i);
    ASSERT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  }
  f.kick(0);
  std::vector<uint32_t> order;
  size_t sent = 0;
  bool placed_first = true;
  f.run_until(
      [&] {
        while (auto e = f.next_event(1)) {
          auto* w = std::get_if<core::WorkCompletion>(&*e);
          if (!w || w->status != core::WcStatus::success) continue;
          EXPECT_TRUE(w->with_imm);
          EXPECT_EQ(w->byte_len, kSize);
          EXPECT_EQ(w->wr_id, 1000u + w->imm);
          order.push_back(w->imm);
          if (std::memcmp(src.mem.data(), dst.mem.data(), size_t{kSize} * (w->imm + 1)) != 0) placed_first = false;
        }
        while (auto e = f.next_event(0))
          if (auto* w = std::get_if<core::WorkCompletion>(&*e); w && w->status == core::WcStatus::success) ++sent;
        return order.size() == kCount && sent == kCount;
      },
      at_ms(50));
  ASSERT_EQ(order.size(), static_cast<size_t>(kCount));
  for (uint32_t i = 0; i < kCount; ++i) EXPECT_EQ(order[i], i);
  EXPECT_TRUE(placed_first);
  EXPECT_EQ(sent, static_cast<size_t>(kCount));
}

TEST(RoceOrdering, MissingReceiveWqeIsFatal) {
  Fabric f(testing::small_fabric(52));
  const auto qp = f.connect(0, 1, roce_qp());
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
  f.run_until(at_ms(1));
  EXPECT_EQ(f.ep(1).qp(qp.b)->state(), core::QpState::error);
  EXPECT_EQ(f.ep(0).qp(qp.a)->state(), core::QpState::error);
  core::WcStatus st = core::WcStatus::success;
  for (auto& e : f.events(0))
    if (auto* w = std::get_if<core::WorkCompletion>(&e)) st = w->status;
  EXPECT_EQ(st, core::WcStatus::rem_op_err);
}

TEST(RoceOrdering, RequesterHonoursMpr) {
  // A 40 us RTT holds ~120 packets at 100 Gb/s: a 128-PSN window binds.
  auto fc = testing::small_fabric(53);
  fc.path_delay = Duration::us(20);
  Fabric f(fc);
  core::CcProfile big;
  big.algorithm = core::kCcFixed;
  big.fixed.window_bytes = 64 << 20;
  for (int h = 0; h < 2; ++h) ASSERT_TRUE(f.ep(h).set_cc_profile(1, big).ok());
  auto opt = roce_qp();
  opt.cc_profile = 1;
  opt.attr.mpr = 1;  // 128 PSNs
  opt.attr.timeout = 10;
  const auto qp = f.connect(0, 1, opt);
  ASSERT_TRUE(harness::write_and_wait(f, qp, 0, 1, 4 << 20, at_ms(20)).completed);
  EXPECT_LE(f.ep(0).qp(qp.a)->stats().max_psn_span, 128u);
  EXPECT_GT(f.ep(0).qp(qp.a)->stats().max_psn_span, 64u);
}

// ------------------------------------------------------------------ CNPs

struct CnpRun {
  std::vector<Time> cnps;  // transmit times of CNPs from host 1
  Time finish;
  uint64_t sent = 0, received = 0;
};

CnpRun run_marked(core::Transport t, Duration interval, const std::string& cc = core::kCcFixed) {
  auto fc = testing::small_fabric(61);
  fc.endpoint.protocol.cnp_interval = interval;
  Fabric f(fc);
  f.add_rule(random_rule(Action::ecn, 1.0, PacketKind::data));
  CnpRun run;
  f.on_transmit = [&](const Packet& p, Time at) {
    if (opcode_of(p) == static_cast<uint8_t>(wire::Opcode::cnp)) {
      EXPECT_EQ(p.src, 1);
      EXPECT_EQ(p.tc, core::TrafficClass::control);
      run.cnps.push_back(at);
    }
  };
  core::CcProfile prof;
  prof.algorithm = cc;
  for (int h = 0; h < 2; ++h) EXPECT_TRUE(f.ep(h).set_cc_profile(1, prof).ok());
  auto opt = roce_qp();
  opt.init.transport = t;
  opt.cc_profile = 1;
  const auto qp = f.connect(0, 1, opt);
  const auto res = harness::write_and_wait(f, qp, 0, 1, 4 << 20, at_ms(50));
  EXPECT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
  run.finish = res.finish;
  run.sent = f.ep(1).qp(qp.b)->stats().cnps_sent;
  run.received = f.ep(0).qp(qp.a)->stats().cnps_received;
  return run;
}

TEST(RoceCnp, AtMostOnePerIntervalPerQp) {
  const CnpRun r = run_marked(core::Transport::roce_rc, Duration::us(50));
  ASSERT_GE(r.cnps.size(), 3u);
  for (size_t i = 1; i < r.cnps.size(); ++i)
    EXPECT_GE(r.cnps[i] - r.cnps[i - 1], Duration::us(50) - Duration::ns(500)) << i;
  // Every marked packet wants one; the interval lets through one per 50 us.
  EXPECT_LE(r.cnps.size(), static_cast<size_t>((r.finish - Time::zero()) / Duration::us(50)) + 1);
  EXPECT_EQ(r.sent, r.cnps.size());
  EXPECT_EQ(r.received, r.cnps.size());
  // A shorter interval: proportionally more CNPs.
  const CnpRun fast = run_marked(core::Transport::roce_rc, Duration::us(10));
  EXPECT_GT(fast.cnps.size(), 3 * r.cnps.size());
  // MRC answers marks in its SACKs, never with CNPs.
  EXPECT_TRUE(run_marked(core::Transport::mrc, Duration::us(50)).cnps.empty());
}

struct DcqcnRun {
  std::unique_ptr<Fabric> f;
  harness::QpPair qp;
  Duration took;
  const core::cc::Dcqcn* cc() const {
    return dynamic_cast<const core::cc::Dcqcn*>(f->ep(0).qp(qp.a)->controller());
  }
};

// A RoCE DCQCN QP moving 16 MiB; every data packet is ECN-marked before
// `mark_until` (Time::zero(): never).
DcqcnRun dcqcn_run(Time mark_until) {
  DcqcnRun r;
  r.f = std::make_unique<Fabric>(testing::small_fabric(62));
  if (mark_until > Time::zero()) {
    Rule m = random_rule(Action::ecn, 1.0, PacketKind::data);
    m.match.until = mark_until;
    r.f->add_rule(m);
  }
  core::CcProfile prof;
  prof.algorithm = core::kCcDcqcn;
  for (int h = 0; h < 2; ++h) EXPECT_TRUE(r.f->ep(h).set_cc_profile(1, prof).ok());
  auto opt = roce_qp();
  opt.cc_profile = 1;
  r.qp = r.f->connect(0, 1, opt);
  const auto res = harness::write_and_wait(*r.f, r.qp, 0, 1, 16 << 20, at_ms(50));
  EXPECT_TRUE(res.completed);
  EXPECT_TRUE(res.data_ok);
  r.took = res.finish - Time::zero();
  return r;
}

TEST(RoceDcqcn, CnpsCutTheRateAndItRecovers) {
  DcqcnRun marked = dcqcn_run(at_us(100));
  DcqcnRun clean = dcqcn_run(Time::zero());
  ASSERT_NE(marked.cc(), nullptr);
  ASSERT_NE(clean.cc(), nullptr);
  std::printf("[ info ] DCQCN 16 MiB: %.0f us with CNPs in the first 100 us, %.0f us without (%llu cuts)\n",
              marked.took.to_us(), clean.took.to_us(), static_cast<unsigned long long>(marked.cc()->cuts()));
  EXPECT_GE(marked.cc()->cuts(), 2u);
  EXPECT_EQ(clean.cc()->cuts(), 0u);
  EXPECT_EQ(marked.f->ep(0).qp(marked.qp.a)->stats().cnps_received, marked.cc()->cuts() + marked.cc()->cnps_ignored());
  EXPECT_GT(marked.took, clean.took + Duration::us(20));
  // A transfer long after the last CNP runs at the line rate again.
  marked.f->run_until(at_ms(8));
  const auto again = harness::write_and_wait(*marked.f, marked.qp, 0, 1, 1 << 20, at_ms(20));
  ASSERT_TRUE(again.completed);
  EXPECT_FALSE(marked.cc()->limiting());
  EXPECT_EQ(marked.cc()->rate_bps(), 100e9);
  EXPECT_LT(again.finish - at_ms(8), ideal_one_port(1 << 20) * 105 / 100 + Duration::us(10));
}

TEST(RoceDcqcn, PacingHoldsTheConfiguredRate) {
  for (core::Transport t : {core::Transport::roce_rc, core::Transport::mrc}) {
    SCOPED_TRACE(core::to_string(t));
    Fabric f(testing::small_fabric(63));
    core::CcProfile prof;
    prof.algorithm = core::kCcDcqcn;
    prof.dcqcn.max_rate_bps = 10'000'000'000ull;  // 10 Gb/s on 100 Gb/s ports
    for (int h = 0; h < 2; ++h) ASSERT_TRUE(f.ep(h).set_cc_profile(1, prof).ok());
    auto opt = roce_qp();
    opt.init.transport = t;
    opt.cc_profile = 1;
    const auto qp = f.connect(0, 1, opt);
    const uint64_t bytes = 2 << 20;
    const auto res = harness::write_and_wait(f, qp, 0, 1, bytes, at_ms(20));
    ASSERT_TRUE(res.completed);
    EXPECT_TRUE(res.data_ok);
    const Duration took = res.finish - Time::zero();
    const Duration at_rate = Duration::serialization(bytes, 10'000'000'000ull);
    std::printf("[ info ] %s paced at 10 Gb/s: 2 MiB in %.0f us (size/rate %.0f us)\n", core::to_string(t),
                took.to_us(), at_rate.to_us());
    EXPECT_GE(took, at_rate);
    EXPECT_LT(took, at_rate * 106 / 100 + Duration::us(20));  // headers + one RTT
  }
}

// ------------------------------------------------------------------ responder rules, packet by packet

constexpr uint64_t kPeer = 7;
constexpr uint32_t kReqQpn = 0x321;
constexpr uint32_t kMtu = 1024;
constexpr uint32_t kFirstPsn = 0xFFFFFE;  // crosses the 24-bit wrap

struct RoceResponder : ::testing::Test {
  std::unique_ptr<core::Endpoint> ep;
  uint32_t qpn = 0;
  std::vector<uint8_t> mem = std::vector<uint8_t>(16 * kMtu, 0xAB);
  core::MemoryRegion mr;
  std::vector<uint8_t> hdr = std::vector<uint8_t>(64);
  Time now = Time::zero() + Duration::us(10);

  void SetUp() override {
    core::EndpointConfig cfg;
    cfg.ports.assign(2, core::PortConfig{});
    ep = std::move(core::Endpoint::create(cfg).value());
    mr = ep->reg_mr(reinterpret_cast<uint64_t>(mem.data()), mem.size(),
                    core::access::kRemoteWrite | core::access::kLocalWrite)
             .value();
    core::QpInit init;
    init.transport = core::Transport::roce_rc;
    init.send_cq = init.recv_cq = ep->create_cq(64).value();
    qpn = ep->create_qp(init).value();
    namespace qa = core::qp_attr;
    core::QpAttr a;
    a.state = core::QpState::init;
    ASSERT_TRUE(ep->modify_qp(now, qpn, a, qa::kState).ok());
    a.state = core::QpState::rtr;
    a.dest_qpn = kReqQpn;
    a.rq_psn = kFirstPsn;
    a.peer = kPeer;
    a.path_mtu = kMtu;
    ASSERT_TRUE(ep->modify_qp(now, qpn, a,
                              qa::kState | qa::kDestQpn | qa::kRqPsn | qa::kPeer | qa::kPathMtu | qa::kMaxWimmDest |
                                  qa::kMprDest)
                    .ok());
    a.state = core::QpState::rts;
    ASSERT_TRUE(
        ep->modify_qp(now, qpn, a, qa::kState | qa::kSqPsn | qa::kMaxWimm | qa::kMpr | qa::kRetryCnt | qa::kTimeout)
            .ok());
  }

  // An RC WRITE packet: `index` of a message of `npkts` MTU-sized packets at mem[0].
  std::vector<uint8_t> pkt(uint32_t psn_off, uint32_t index, uint32_t npkts, bool ack_req = false,
                           uint32_t rkey = 0) const {
    using wire::Opcode;
    wire::Headers h;
    const bool first = index == 0, last = index + 1 == npkts;
    h.bth.opcode = static_cast<uint8_t>(first && last ? Opcode::rc_write_only
                                        : first       ? Opcode::rc_write_first
                                        : last        ? Opcode::rc_write_last
                                                      : Opcode::rc_write_middle);
    h.bth.dest_qp = qpn;
    h.bth.psn = (kFirstPsn + psn_off) & wire::kPsnMask;
    h.bth.ack_req = ack_req;
    h.reth.va = mr.addr;
    h.reth.rkey = rkey ? rkey : mr.rkey;
    h.reth.dma_length = npkts * kMtu;
    std::vector<uint8_t> b(64);
    b.resize(wire::encode(h, b).value());
    for (uint32_t i = 0; i < kMtu; ++i) b.push_back(static_cast<uint8_t>(index + 1));
    return b;
  }
  void deliver(const std::vector<uint8_t>& b, bool ce = false, core::TrimMark trim = core::TrimMark::none) {
    core::RxMeta m;
    m.port = 0;
    m.peer = kPeer;
    m.ecn_ce = ce;
    m.trim = trim;
    ep->handle_datagram(now, m, b);
  }
  std::vector<wire::Parsed> drain() {
    std::vector<wire::Parsed> out;
    while (auto tx = ep->poll_transmit(now, 0b11, hdr)) {
      auto p = wire::parse(std::span<const uint8_t>(hdr.data(), tx->header_len));
      EXPECT_TRUE(p.ok());
      EXPECT_EQ(tx->tc, core::TrafficClass::control);
      EXPECT_EQ(p->h.bth.dest_qp, kReqQpn);
      out.push_back(*p);
    }
    return out;
  }
  static bool is_ack(const wire::Parsed& p, uint32_t last_psn_off) {
    return p.h.opcode() == wire::Opcode::rc_ack && p.h.aeth.syndrome == wire::aeth::kAckNoCredit &&
           p.h.bth.psn == ((kFirstPsn + last_psn_off) & wire::kPsnMask);
  }
  static bool is_nak(const wire::Parsed& p, uint8_t syndrome, uint32_t psn_off) {
    return p.h.opcode() == wire::Opcode::rc_ack && p.h.aeth.syndrome == syndrome &&
           p.h.bth.psn == ((kFirstPsn + psn_off) & wire::kPsnMask);
  }
};

TEST_F(RoceResponder, OneNakPerGapThenSilenceUntilTheExpectedPsn) {
  deliver(pkt(0, 0, 8));
  EXPECT_TRUE(drain().empty());  // coalescing: no ACK yet
  // PSNs 2, 3, 4 arrive; 1 is missing: one NAK for 1, nothing else.
  for (uint32_t i = 2; i <= 4; ++i) deliver(pkt(i, i, 8));
  auto out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_nak(out[0], wire::aeth::kNakPsnSeqError, 1));
  EXPECT_EQ(ep->qp(qpn)->stats().seq_naks_sent, 1u);
  // PSN 1 arrives: placed; then 3 (a new gap at 2): a new NAK.
  deliver(pkt(1, 1, 8));
  deliver(pkt(3, 3, 8));
  out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_nak(out[0], wire::aeth::kNakPsnSeqError, 2));
  // Only PSNs 0 and 1 were written.
  for (size_t i = 0; i < mem.size(); ++i) {
    const uint8_t want = i < kMtu ? 1 : i < 2 * kMtu ? 2 : 0xAB;
    ASSERT_EQ(mem[i], want) << i;
  }
}

TEST_F(RoceResponder, CoalescedAcksAndAnImmediateReAckOfDuplicates) {
  const uint32_t n = ep->config().protocol.rc_ack_packets;
  ASSERT_LE(n, 16u);
  for (uint32_t i = 0; i + 1 < n; ++i) deliver(pkt(i, i, 16));
  EXPECT_TRUE(drain().empty());
  deliver(pkt(n - 1, n - 1, 16));  // the n-th in-order packet
  auto out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_ack(out[0], n - 1));
  // A duplicate gets the current cumulative ACK at once.
  deliver(pkt(3, 3, 16));
  out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_ack(out[0], n - 1));
  EXPECT_EQ(ep->qp(qpn)->stats().duplicates_received, 1u);
}

TEST_F(RoceResponder, AckTimerSendsThePendingAck) {
  deliver(pkt(0, 0, 4));
  deliver(pkt(1, 1, 4));
  EXPECT_TRUE(drain().empty());
  const Time t = ep->next_timeout();
  EXPECT_EQ(t, now + ep->config().protocol.rc_ack_delay);
  now = t;
  ep->handle_timeout(now);
  auto out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_ack(out[0], 1));
  deliver(pkt(2, 2, 4));
  deliver(pkt(3, 3, 4, /*ack_req=*/true));
  out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_ack(out[0], 3));
  EXPECT_EQ(out[0].h.aeth.msn, 1u);  // one message complete
}

TEST_F(RoceResponder, AccessAndSequenceErrorsNakAndWriteNothing) {
  const auto before = ep->stats();
  deliver(pkt(0, 0, 1, true, mr.rkey ^ 0x55));  // bad rkey
  auto out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_nak(out[0], wire::aeth::kNakRemoteAccess, 0));
  EXPECT_EQ(ep->stats().rx_access_errors, before.rx_access_errors + 1);
  deliver(pkt(0, 1, 4));  // a MIDDLE with no message open
  out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_nak(out[0], wire::aeth::kNakInvalidRequest, 0));
  auto b = pkt(0, 0, 1);
  b.resize(b.size() - 1);  // ONLY shorter than its DMA length
  deliver(b);
  out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_nak(out[0], wire::aeth::kNakInvalidRequest, 0));
  for (uint8_t x : mem) ASSERT_EQ(x, 0xAB);
}

TEST_F(RoceResponder, OtherFamilyAndTrimmedPacketsAreDropped) {
  const auto before = ep->stats();
  // An MRC WRITE_ONLY to a RoCE QP.
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_only);
  h.bth.dest_qp = qpn;
  h.bth.psn = kFirstPsn;
  h.reth.va = mr.addr;
  h.reth.rkey = mr.rkey;
  h.reth.dma_length = 16;
  std::vector<uint8_t> b(64);
  b.resize(wire::encode(h, b).value());
  b.resize(b.size() + 16, 0x11);
  deliver(b);
  EXPECT_EQ(ep->stats().rx_malformed, before.rx_malformed + 1);
  // A trimmed RC packet: a loss, silently.
  auto t = pkt(0, 0, 1, true);
  t.resize(wire::Bth::kSize + wire::Reth::kSize);
  deliver(t, false, core::TrimMark::trimmed);
  EXPECT_TRUE(drain().empty());
  EXPECT_EQ(ep->qp(qpn)->stats().trims_received, 1u);
  for (uint8_t x : mem) ASSERT_EQ(x, 0xAB);
}

TEST_F(RoceResponder, CeMarksProduceRateLimitedCnps) {
  const Duration iv = ep->config().protocol.cnp_interval;
  deliver(pkt(0, 0, 8), /*ce=*/true);
  auto out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].h.opcode(), wire::Opcode::cnp);
  EXPECT_EQ(out[0].header_len, 28u);
  // More marks within the interval (in order, duplicate or ahead): no CNP.
  now = now + iv - Duration::ns(1);
  deliver(pkt(1, 1, 8), true);
  deliver(pkt(1, 1, 8), true);
  deliver(pkt(5, 5, 8), true);
  for (const auto& p : drain()) EXPECT_NE(p.h.opcode(), wire::Opcode::cnp);
  now = now + Duration::ns(1);
  deliver(pkt(2, 2, 8), true);
  out = drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].h.opcode(), wire::Opcode::cnp);
  EXPECT_EQ(ep->qp(qpn)->stats().cnps_sent, 2u);
}

}  // namespace
}  // namespace mrc
