// SPDX-License-Identifier: BSD-2-Clause
// Tests for the QP state machine and posting rules, driven through Endpoint
// (reference 3.2, 6.2; the required/allowed attribute sets per transition are
// those of Qp::check_transition in src/core/qp.cc).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "harness/events.hpp"

namespace mrc::core {
namespace {

using namespace qp_attr;

constexpr uint32_t kToRtrRequired = kDestQpn | kRqPsn | kPeer | kPathMtu | kMaxWimmDest | kMprDest;
constexpr uint32_t kToRtsRequired = kSqPsn | kMaxWimm | kMpr | kRetryCnt | kTimeout;
const Time t0 = Time::zero() + Duration::us(5);

struct QpStateTest : ::testing::Test {
  EndpointConfig cfg;
  std::unique_ptr<Endpoint> ep;
  uint32_t qpn = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(8192, 0x5A);
  MemoryRegion mr;

  void SetUp() override {
    cfg.ports.assign(2, PortConfig{});
    cfg.max_mpr = 16;
    cfg.max_wimm = 256;
    build();
  }
  void build() {
    auto e = Endpoint::create(cfg);
    ASSERT_TRUE(e.ok());
    ep = std::move(*e);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(ep->create_cq(64).ok());  // CQs 0, 1, 2
    auto q = ep->create_qp(QpInit{1, 2, false});
    ASSERT_TRUE(q.ok());
    qpn = *q;
    auto m = ep->reg_mr(reinterpret_cast<uint64_t>(buf.data()), buf.size(),
                        access::kLocalWrite | access::kRemoteWrite);
    ASSERT_TRUE(m.ok());
    mr = *m;
  }

  static QpAttr rtr_attr() {
    QpAttr a;
    a.state = QpState::rtr;
    a.dest_qpn = 0x345;
    a.rq_psn = 100;
    a.peer = 9;
    a.path_mtu = 1024;
    a.max_wimm_dest = 64;
    a.mpr_dest = 4;
    return a;
  }
  static QpAttr rts_attr() {
    QpAttr a;
    a.state = QpState::rts;
    a.sq_psn = 200;
    a.max_wimm = 64;
    a.mpr = 4;
    a.retry_linear = 3;
    a.retry_exp = 5;
    a.timeout = 6;
    return a;
  }
  Status modify(const QpAttr& a, uint32_t mask) { return ep->modify_qp(t0, qpn, a, mask); }
  QpState state() const { return ep->qp(qpn)->state(); }

  void to_init() {
    ASSERT_EQ(state(), QpState::reset) << "the to_*() helpers start from RESET";
    QpAttr a;
    a.state = QpState::init;
    ASSERT_TRUE(modify(a, kState).ok());
    ASSERT_EQ(state(), QpState::init);
  }
  void to_rtr() {
    to_init();
    ASSERT_TRUE(modify(rtr_attr(), kState | kToRtrRequired).ok());
    ASSERT_EQ(state(), QpState::rtr);
  }
  void to_rts() {
    to_rtr();
    ASSERT_TRUE(modify(rts_attr(), kState | kToRtsRequired).ok());
    ASSERT_EQ(state(), QpState::rts);
  }
  void to_error() {
    QpAttr a;
    a.state = QpState::error;
    ASSERT_TRUE(modify(a, kState).ok());
    ASSERT_EQ(state(), QpState::error);
  }
  void to(QpState s) {
    switch (s) {
      case QpState::reset: break;
      case QpState::init: to_init(); break;
      case QpState::rtr: to_rtr(); break;
      case QpState::rts: to_rts(); break;
      case QpState::error: to_error(); break;
    }
  }

  /// Completions of the send CQ, then of the receive CQ, then events.
  std::vector<harness::Event> drain() {
    std::vector<harness::Event> v;
    WorkCompletion wc;
    for (uint32_t cq : {1u, 2u})
      while (ep->poll_cq(cq, {&wc, 1})) v.push_back(wc);
    while (auto e = harness::next_event(*ep, 0)) v.push_back(*e);
    return v;
  }
  SendWr wr(uint64_t id, uint32_t len = 512) const {
    SendWr w;
    w.wr_id = id;
    w.local_addr = mr.addr;
    w.lkey = mr.lkey;
    w.length = len;
    w.remote_addr = 0x1000;
    w.rkey = 0x1234;
    return w;
  }
};

const QpState kAllStates[] = {QpState::reset, QpState::init, QpState::rtr, QpState::rts, QpState::error};

// ------------------------------------------------------------------ legal path

TEST_F(QpStateTest, LegalPathAppliesAttributes) {
  EXPECT_EQ(state(), QpState::reset);
  EXPECT_EQ(ep->qp(qpn)->path(), nullptr);
  QpAttr init;
  init.state = QpState::init;
  init.ev_profile_id = 0;
  init.cc_profile_id = 0;
  ASSERT_TRUE(modify(init, kState | kCurState | kEvProfileId | kCcProfileId).ok());
  EXPECT_EQ(state(), QpState::init);
  // INIT -> INIT is allowed (change profiles).
  ASSERT_TRUE(modify(init, kState).ok());
  QpAttr rtr = rtr_attr();
  rtr.cap = qp_cap::kDynamicMpr;
  ASSERT_TRUE(modify(rtr, kState | kToRtrRequired | kCap).ok());
  EXPECT_EQ(state(), QpState::rtr);
  const Qp* q = ep->qp(qpn);
  EXPECT_EQ(q->peer(), 9u);
  EXPECT_EQ(q->attr().dest_qpn, 0x345u);
  EXPECT_EQ(q->attr().rq_psn, 100u);
  EXPECT_EQ(q->attr().path_mtu, 1024u);
  EXPECT_EQ(q->attr().mpr_dest, 4);
  EXPECT_EQ(q->attr().max_wimm_dest, 64);
  EXPECT_EQ(q->attr().cap, qp_cap::kDynamicMpr);
  ASSERT_NE(q->path(), nullptr);
  EXPECT_EQ(q->path()->size(), 256u);  // default EV profile
  ASSERT_TRUE(modify(rts_attr(), kState | kToRtsRequired).ok());
  EXPECT_EQ(state(), QpState::rts);
  EXPECT_EQ(q->attr().sq_psn, 200u);
  EXPECT_EQ(q->attr().mpr, 4);
  EXPECT_EQ(q->attr().timeout, 6);
  EXPECT_EQ(q->attr().retry_linear, 3);
  EXPECT_EQ(q->attr().retry_exp, 5);
  EXPECT_EQ(q->attr().state, QpState::rts);
  EXPECT_NE(q->controller(), nullptr);
  // RTS -> RTS and no-transition changes: timeout / retry only.
  QpAttr t = rts_attr();
  t.timeout = 10;
  ASSERT_TRUE(modify(t, kState | kTimeout).ok());
  EXPECT_EQ(q->attr().timeout, 10);
  t.timeout = 12;
  t.retry_linear = 7;
  t.retry_exp = 25;
  ASSERT_TRUE(modify(t, kTimeout | kRetryCnt).ok());
  EXPECT_EQ(q->attr().timeout, 12);
  EXPECT_EQ(q->attr().retry_exp, 25);
  EXPECT_EQ(state(), QpState::rts);
  EXPECT_TRUE(drain().empty());
}

TEST_F(QpStateTest, ModifyUnknownQpIsNotFound) {
  QpAttr a;
  a.state = QpState::init;
  EXPECT_EQ(ep->modify_qp(t0, qpn + 1, a, kState), Errc::not_found);
  EXPECT_EQ(ep->modify_qp(t0, 0, a, kState), Errc::not_found);
}

// ------------------------------------------------------------------ required / allowed

TEST_F(QpStateTest, EachRequiredRtrAttributeMissingIsRejected) {
  to_init();
  for (uint32_t bit : {kDestQpn, kRqPsn, kPeer, kPathMtu, kMaxWimmDest, kMprDest}) {
    EXPECT_EQ(modify(rtr_attr(), (kState | kToRtrRequired) & ~bit), Errc::invalid_argument) << "bit " << bit;
    EXPECT_EQ(state(), QpState::init);
  }
}

TEST_F(QpStateTest, EachRequiredRtsAttributeMissingIsRejected) {
  to_rtr();
  for (uint32_t bit : {kSqPsn, kMaxWimm, kMpr, kRetryCnt, kTimeout}) {
    EXPECT_EQ(modify(rts_attr(), (kState | kToRtsRequired) & ~bit), Errc::invalid_argument) << "bit " << bit;
    EXPECT_EQ(state(), QpState::rtr);
  }
}

TEST_F(QpStateTest, AttributeNotAllowedInTransitionIsRejected) {
  // RESET -> INIT: only profiles.
  QpAttr init;
  init.state = QpState::init;
  for (uint32_t bit : {kDestQpn, kRqPsn, kSqPsn, kPathMtu, kPeer, kMaxWimm, kMaxWimmDest, kMpr, kMprDest,
                       kTimeout, kRetryCnt, kCap}) {
    EXPECT_EQ(modify(init, kState | bit), Errc::invalid_argument) << "bit " << bit;
    EXPECT_EQ(state(), QpState::reset);
  }
  to_init();
  ASSERT_EQ(state(), QpState::init);
  // INIT -> RTR: no requester attributes.
  for (uint32_t bit : {kSqPsn, kMaxWimm, kMpr, kTimeout, kRetryCnt, kHint}) {
    EXPECT_EQ(modify(rtr_attr(), kState | kToRtrRequired | bit), Errc::invalid_argument) << "bit " << bit;
    EXPECT_EQ(state(), QpState::init);
  }
  ASSERT_TRUE(modify(rtr_attr(), kState | kToRtrRequired).ok());
  // RTR -> RTS: no responder / connection attributes, no profiles.
  for (uint32_t bit :
       {kDestQpn, kRqPsn, kPathMtu, kPeer, kMaxWimmDest, kMprDest, kEvProfileId, kCcProfileId, kHint}) {
    EXPECT_EQ(modify(rts_attr(), kState | kToRtsRequired | bit), Errc::invalid_argument) << "bit " << bit;
    EXPECT_EQ(state(), QpState::rtr);
  }
  // An undefined mask bit.
  EXPECT_EQ(modify(rts_attr(), kState | kToRtsRequired | (1u << 7)), Errc::invalid_argument);
  EXPECT_EQ(modify(rts_attr(), kState | kToRtsRequired | (1u << 31)), Errc::invalid_argument);
  ASSERT_TRUE(modify(rts_attr(), kState | kToRtsRequired).ok());
  // RTS -> RTS and no-transition: only timeout / retry.
  for (uint32_t bit : {kSqPsn, kMpr, kMaxWimm, kDestQpn, kPathMtu, kCap, kEvProfileId}) {
    EXPECT_EQ(modify(rts_attr(), kState | bit), Errc::invalid_argument) << "bit " << bit;
    EXPECT_EQ(modify(rts_attr(), bit), Errc::invalid_argument) << "bit " << bit;
    EXPECT_EQ(state(), QpState::rts);
  }
  // -> ERROR / -> RESET take no attributes.
  QpAttr err;
  err.state = QpState::error;
  EXPECT_EQ(modify(err, kState | kTimeout), Errc::invalid_argument);
  err.state = QpState::reset;
  EXPECT_EQ(modify(err, kState | kDestQpn), Errc::invalid_argument);
  EXPECT_EQ(state(), QpState::rts);
}

TEST_F(QpStateTest, AttributeChangeWithoutTransitionOnlyInRts) {
  QpAttr a;
  a.timeout = 3;
  for (QpState s : {QpState::reset, QpState::init, QpState::rtr}) {
    SCOPED_TRACE(to_string(s));
    build();
    to(s);
    EXPECT_EQ(modify(a, kTimeout), Errc::invalid_argument);
    EXPECT_EQ(modify(a, 0), Errc::invalid_argument);
    EXPECT_EQ(state(), s);
  }
}

// ------------------------------------------------------------------ illegal transitions

TEST_F(QpStateTest, IllegalTransitionsAreRejected) {
  struct Case {
    QpState from, to;
  };
  const Case cases[] = {{QpState::reset, QpState::rtr}, {QpState::reset, QpState::rts},
                        {QpState::init, QpState::rts},  {QpState::rts, QpState::rtr},
                        {QpState::error, QpState::rts}, {QpState::error, QpState::init},
                        {QpState::error, QpState::rtr}, {QpState::rtr, QpState::init},
                        {QpState::rts, QpState::init},  {QpState::rtr, QpState::rtr}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.from)) + " -> " + to_string(c.to));
    build();
    to(c.from);
    QpAttr a = c.to == QpState::rts ? rts_attr() : rtr_attr();
    a.state = c.to;
    const uint32_t extra = c.to == QpState::rts ? kToRtsRequired : c.to == QpState::rtr ? kToRtrRequired : 0;
    EXPECT_EQ(modify(a, kState | extra), Errc::invalid_argument);
    EXPECT_EQ(modify(a, kState), Errc::invalid_argument);
    EXPECT_EQ(state(), c.from);
  }
}

TEST_F(QpStateTest, CurStateMismatchIsRejected) {
  for (QpState s : kAllStates) {
    SCOPED_TRACE(to_string(s));
    build();
    to(s);
    for (QpState claimed : kAllStates) {
      if (claimed == s) continue;
      QpAttr a;
      a.state = QpState::error;
      a.cur_state = claimed;
      EXPECT_EQ(modify(a, kState | kCurState), Errc::invalid_argument) << to_string(claimed);
      EXPECT_EQ(state(), s);
    }
    QpAttr a;
    a.state = QpState::error;
    a.cur_state = s;
    EXPECT_TRUE(modify(a, kState | kCurState).ok());
    EXPECT_EQ(state(), QpState::error);
  }
}

TEST_F(QpStateTest, AnyStateToErrorAndToReset) {
  for (QpState s : kAllStates) {
    SCOPED_TRACE(to_string(s));
    build();
    to(s);
    QpAttr a;
    a.state = QpState::error;
    ASSERT_TRUE(modify(a, kState).ok());
    EXPECT_EQ(state(), QpState::error);
    (void)drain();
    build();
    to(s);
    a.state = QpState::reset;
    ASSERT_TRUE(modify(a, kState).ok());
    EXPECT_EQ(state(), QpState::reset);
    EXPECT_EQ(ep->qp(qpn)->path(), nullptr);
    EXPECT_EQ(ep->qp(qpn)->attr().dest_qpn, 0u);  // attributes cleared
  }
  // From RESET again to RTS after an ERROR -> RESET cycle.
  build();
  to_rts();
  to_error();
  QpAttr r;
  r.state = QpState::reset;
  ASSERT_TRUE(modify(r, kState).ok());
  to_rts();
}

TEST_F(QpStateTest, EnteringErrorFromRtsReportsQpErrorEvent) {
  to_rts();
  ASSERT_TRUE(ep->post_send(t0, qpn, wr(1)).ok());
  to_error();
  const std::vector<harness::Event> ev = drain();
  ASSERT_EQ(ev.size(), 2u);
  const auto* wc = std::get_if<WorkCompletion>(&ev[0]);
  ASSERT_NE(wc, nullptr);
  EXPECT_EQ(wc->wr_id, 1u);
  EXPECT_EQ(wc->status, WcStatus::wr_flush_err);
  EXPECT_EQ(wc->cq, 1u);
  const auto* qe = std::get_if<QpErrorEvent>(&ev[1]);
  ASSERT_NE(qe, nullptr);
  EXPECT_EQ(qe->qpn, qpn);
}

// ------------------------------------------------------------------ ranges

TEST_F(QpStateTest, OutOfRangeRtrValuesAreRejected) {
  to_init();
  auto bad = [&](auto mutate, const char* what) {
    QpAttr a = rtr_attr();
    mutate(a);
    EXPECT_EQ(modify(a, kState | kToRtrRequired | kCap), Errc::invalid_argument) << what;
    EXPECT_EQ(state(), QpState::init) << what;
  };
  bad([](QpAttr& a) { a.path_mtu = 100; }, "path_mtu 100");
  bad([](QpAttr& a) { a.path_mtu = 3000; }, "path_mtu 3000");
  bad([](QpAttr& a) { a.path_mtu = 8192; }, "path_mtu 8192");
  bad([](QpAttr& a) { a.path_mtu = 128; }, "path_mtu 128");
  bad([](QpAttr& a) { a.path_mtu = 0; }, "path_mtu 0");
  bad([](QpAttr& a) { a.mpr_dest = 0; }, "mpr_dest 0");
  bad([](QpAttr& a) { a.mpr_dest = 17; }, "mpr_dest > max_mpr");
  bad([](QpAttr& a) { a.max_wimm_dest = 257; }, "max_wimm_dest > max_wimm");
  bad([](QpAttr& a) { a.dest_qpn = 0; }, "dest_qpn 0");
  bad([](QpAttr& a) { a.dest_qpn = 1; }, "dest_qpn 1");
  bad([](QpAttr& a) { a.dest_qpn = 2; }, "dest_qpn 2");
  bad([](QpAttr& a) { a.dest_qpn = 0x1000000; }, "dest_qpn 2^24");
  bad([](QpAttr& a) { a.rq_psn = 0x1000000; }, "rq_psn 2^24");
  bad([](QpAttr& a) { a.cap = 1u << 3; }, "unknown cap bit");
  bad([](QpAttr& a) { a.cap = 1u << 31; }, "unknown cap bit 31");
  // Valid boundaries.
  for (uint32_t mtu : {256u, 512u, 2048u, 4096u}) {
    QpAttr a = rtr_attr();
    a.path_mtu = mtu;
    a.dest_qpn = 3;
    a.rq_psn = 0xFFFFFF;
    a.mpr_dest = 16;
    a.max_wimm_dest = 256;
    a.cap = qp_cap::kTrimNackDestUnsupported | qp_cap::kDynamicMpr | qp_cap::kSvcTimeDestUnsupported;
    build();
    to_init();
    EXPECT_TRUE(modify(a, kState | kToRtrRequired | kCap).ok()) << mtu;
  }
  QpAttr top = rtr_attr();
  top.dest_qpn = 0xFFFFFF;
  build();
  to_init();
  EXPECT_TRUE(modify(top, kState | kToRtrRequired).ok());
}

TEST_F(QpStateTest, OutOfRangeRtsValuesAreRejected) {
  to_rtr();
  auto bad = [&](auto mutate, const char* what) {
    QpAttr a = rts_attr();
    mutate(a);
    EXPECT_EQ(modify(a, kState | kToRtsRequired | kCap), Errc::invalid_argument) << what;
    EXPECT_EQ(state(), QpState::rtr) << what;
  };
  bad([](QpAttr& a) { a.mpr = 0; }, "mpr 0");
  bad([](QpAttr& a) { a.mpr = 17; }, "mpr > max_mpr");
  bad([](QpAttr& a) { a.timeout = 25; }, "timeout 25");
  bad([](QpAttr& a) { a.retry_linear = 8; }, "retry_linear 8");
  bad([](QpAttr& a) { a.retry_exp = 26; }, "retry_exp 26");
  bad([](QpAttr& a) { a.sq_psn = 0x1000000; }, "sq_psn 2^24");
  bad([](QpAttr& a) { a.max_wimm = 257; }, "max_wimm > device max");
  bad([](QpAttr& a) { a.cap = 1u << 4; }, "unknown cap bit");
  QpAttr ok = rts_attr();
  ok.mpr = 16;
  ok.timeout = 24;
  ok.retry_linear = 7;
  ok.retry_exp = 25;
  ok.sq_psn = 0xFFFFFF;
  ok.max_wimm = 256;
  EXPECT_TRUE(modify(ok, kState | kToRtsRequired).ok());
  // Also in RTS -> RTS.
  QpAttr t = ok;
  t.timeout = 25;
  EXPECT_EQ(modify(t, kTimeout), Errc::invalid_argument);
  t = ok;
  t.retry_exp = 26;
  EXPECT_EQ(modify(t, kState | kRetryCnt), Errc::invalid_argument);
  EXPECT_EQ(ep->qp(qpn)->attr().timeout, 24);
}

TEST_F(QpStateTest, DynamicMprCapNeedsDeviceSupport) {
  cfg.cap_dynamic_mpr = false;
  build();
  to_init();
  QpAttr a = rtr_attr();
  a.cap = qp_cap::kDynamicMpr;
  EXPECT_EQ(modify(a, kState | kToRtrRequired | kCap), Errc::invalid_argument);
  a.cap = qp_cap::kTrimNackDestUnsupported;
  EXPECT_TRUE(modify(a, kState | kToRtrRequired | kCap).ok());
}

TEST_F(QpStateTest, UnknownProfileIdsAreRejected) {
  QpAttr a;
  a.state = QpState::init;
  a.ev_profile_id = 7;
  EXPECT_EQ(modify(a, kState | kEvProfileId), Errc::invalid_argument);
  a.ev_profile_id = 0;
  a.cc_profile_id = 7;
  EXPECT_EQ(modify(a, kState | kCcProfileId), Errc::invalid_argument);
  EXPECT_EQ(state(), QpState::reset);
  // Once installed they are accepted.
  ASSERT_TRUE(ep->set_ev_profile(7, EvProfile{}).ok());
  ASSERT_TRUE(ep->set_cc_profile(7, CcProfile{}).ok());
  a.ev_profile_id = 7;
  EXPECT_TRUE(modify(a, kState | kEvProfileId | kCcProfileId).ok());
  // INIT -> RTR may also name a profile; an unknown one is rejected.
  QpAttr r = rtr_attr();
  r.ev_profile_id = 8;
  EXPECT_EQ(modify(r, kState | kToRtrRequired | kEvProfileId), Errc::invalid_argument);
  r.ev_profile_id = 0;
  r.cc_profile_id = 8;
  EXPECT_EQ(modify(r, kState | kToRtrRequired | kCcProfileId), Errc::invalid_argument);
  EXPECT_EQ(state(), QpState::init);
  // A profile in use by a QP past RESET cannot be replaced.
  std::string why;
  EXPECT_EQ(ep->set_ev_profile(7, EvProfile{}, &why), Errc::busy);
  EXPECT_EQ(ep->set_cc_profile(7, CcProfile{}, &why), Errc::busy);
}

// ------------------------------------------------------------------ posting

TEST_F(QpStateTest, PostSendBeforeRtsIsInvalid) {
  for (QpState s : {QpState::reset, QpState::init, QpState::rtr}) {
    SCOPED_TRACE(to_string(s));
    build();
    to(s);
    EXPECT_EQ(ep->post_send(t0, qpn, wr(1)), Errc::invalid_argument);
    EXPECT_TRUE(drain().empty());
    EXPECT_EQ(state(), s);
  }
  EXPECT_EQ(ep->post_send(t0, qpn + 100, wr(1)), Errc::not_found);
}

TEST_F(QpStateTest, PostSendTooLongIsInvalid) {
  to_rts();
  SendWr w = wr(1);
  w.length = (1u << 31) + 1;
  EXPECT_EQ(ep->post_send(t0, qpn, w), Errc::invalid_argument);
  EXPECT_TRUE(drain().empty());
  EXPECT_EQ(state(), QpState::rts);
}

TEST_F(QpStateTest, PostSendInErrorIsFlushed) {
  to_error();
  (void)drain();
  ASSERT_TRUE(ep->post_send(t0, qpn, wr(77)).ok());
  const std::vector<harness::Event> ev = drain();
  ASSERT_EQ(ev.size(), 1u);
  const auto* wc = std::get_if<WorkCompletion>(&ev[0]);
  ASSERT_NE(wc, nullptr);
  EXPECT_EQ(wc->wr_id, 77u);
  EXPECT_EQ(wc->status, WcStatus::wr_flush_err);
  EXPECT_EQ(wc->qpn, qpn);
  EXPECT_EQ(wc->cq, 1u);
  EXPECT_EQ(wc->opcode, WcOpcode::rdma_write);
}

void expect_local_protection_failure(QpStateTest& t, const SendWr& bad) {
  t.to_rts();
  ASSERT_TRUE(t.ep->post_send(t0, t.qpn, t.wr(1)).ok());  // queued, never sent
  ASSERT_TRUE(t.ep->post_send(t0, t.qpn, bad).ok());      // reported as a completion
  EXPECT_EQ(t.state(), QpState::error);
  std::vector<harness::Event> ev = t.drain();
  ASSERT_EQ(ev.size(), 3u);
  const auto* w1 = std::get_if<WorkCompletion>(&ev[0]);
  const auto* w2 = std::get_if<WorkCompletion>(&ev[1]);
  const auto* qe = std::get_if<QpErrorEvent>(&ev[2]);
  ASSERT_TRUE(w1 && w2 && qe);
  EXPECT_EQ(w1->wr_id, 1u);
  EXPECT_EQ(w1->status, WcStatus::wr_flush_err);
  EXPECT_EQ(w2->wr_id, bad.wr_id);
  EXPECT_EQ(w2->status, WcStatus::loc_prot_err);
  EXPECT_EQ(w2->qpn, t.qpn);
  EXPECT_EQ(qe->qpn, t.qpn);
  EXPECT_EQ(qe->cause, WcStatus::loc_prot_err);
  // Later WRs are flushed.
  ASSERT_TRUE(t.ep->post_send(t0, t.qpn, t.wr(3)).ok());
  ev = t.drain();
  ASSERT_EQ(ev.size(), 1u);
  const auto* w3 = std::get_if<WorkCompletion>(&ev[0]);
  ASSERT_NE(w3, nullptr);
  EXPECT_EQ(w3->wr_id, 3u);
  EXPECT_EQ(w3->status, WcStatus::wr_flush_err);
  // Nothing is transmitted.
  std::vector<uint8_t> hdr(64);
  EXPECT_EQ(t.ep->poll_transmit(t0, 0b11, hdr).error(), Errc::done);
}

TEST_F(QpStateTest, PostSendBadLkeyIsLocalProtectionError) {
  SendWr bad = wr(2);
  bad.lkey = mr.lkey ^ 0x10101;
  expect_local_protection_failure(*this, bad);
}

TEST_F(QpStateTest, PostSendOutOfBoundsLocalRangeIsLocalProtectionError) {
  SendWr bad = wr(2, 4096);
  bad.local_addr = mr.addr + buf.size() - 100;  // runs 3996 bytes past the region
  expect_local_protection_failure(*this, bad);
}

TEST_F(QpStateTest, PostSendLocalRangeStartingBeforeRegionIsLocalProtectionError) {
  SendWr bad = wr(2, 16);
  bad.local_addr = mr.addr - 1;
  expect_local_protection_failure(*this, bad);
}

TEST_F(QpStateTest, SendQueueFullIsNoMemory) {
  cfg.max_send_wr = 2;
  build();
  to_rts();
  ASSERT_TRUE(ep->post_send(t0, qpn, wr(1)).ok());
  ASSERT_TRUE(ep->post_send(t0, qpn, wr(2)).ok());
  EXPECT_EQ(ep->post_send(t0, qpn, wr(3)), Errc::no_memory);
  EXPECT_EQ(state(), QpState::rts);
  EXPECT_TRUE(drain().empty());
}

TEST_F(QpStateTest, PostRecvRules) {
  EXPECT_EQ(ep->post_recv(qpn, RecvWr{1}), Errc::invalid_argument);  // RESET
  cfg.max_recv_wr = 1;
  build();
  to_init();
  EXPECT_TRUE(ep->post_recv(qpn, RecvWr{1}).ok());
  EXPECT_EQ(ep->post_recv(qpn, RecvWr{2}), Errc::no_memory);
  EXPECT_EQ(ep->post_recv(qpn + 50, RecvWr{2}), Errc::not_found);
}

// ------------------------------------------------------------------ lifecycle

TEST_F(QpStateTest, DestroyQp) {
  to_rts();
  ASSERT_TRUE(ep->destroy_qp(qpn).ok());
  EXPECT_EQ(ep->qp(qpn), nullptr);
  EXPECT_EQ(ep->destroy_qp(qpn), Errc::not_found);
  EXPECT_EQ(ep->post_send(t0, qpn, wr(1)), Errc::not_found);
  QpAttr a;
  a.state = QpState::error;
  EXPECT_EQ(ep->modify_qp(t0, qpn, a, kState), Errc::not_found);
  EXPECT_EQ(ep->destroy_qp(0), Errc::not_found);
  EXPECT_EQ(ep->destroy_qp(Endpoint::kFirstQpn + 1000), Errc::not_found);
  // The slot is reused under a new random QPN, so a late packet for the old
  // QP never reaches the new one; the new QP starts in RESET.
  auto q = ep->create_qp(QpInit{});
  ASSERT_TRUE(q.ok());
  EXPECT_NE(*q, qpn);
  EXPECT_EQ(ep->qp(qpn), nullptr);
  EXPECT_EQ(ep->qp(*q)->state(), QpState::reset);
}

TEST_F(QpStateTest, CreateQpStopsAtMaxQps) {
  cfg.max_qps = 3;
  build();  // one QP created
  std::set<uint32_t> qpns{qpn};
  for (int i = 0; i < 2; ++i) {
    auto q = ep->create_qp(QpInit{});
    ASSERT_TRUE(q.ok());
    EXPECT_GE(*q, Endpoint::kFirstQpn);
    qpns.insert(*q);
  }
  EXPECT_EQ(qpns.size(), 3u);
  EXPECT_EQ(ep->create_qp(QpInit{}).error(), Errc::no_memory);
}

TEST_F(QpStateTest, RandomPsnIs24BitAndDeterministic) {
  auto a = Endpoint::create(cfg), b = Endpoint::create(cfg);
  EndpointConfig other = cfg;
  other.seed = cfg.seed + 1;
  auto c = Endpoint::create(other);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool differs = false;
  uint32_t high_bits_seen = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint32_t x = (*a)->random_psn();
    EXPECT_LT(x, 1u << 24);
    EXPECT_EQ(x, (*b)->random_psn());
    differs |= x != (*c)->random_psn();
    high_bits_seen |= x;
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(high_bits_seen, 0xFFFFFFu);  // all 24 bits used
}

}  // namespace
}  // namespace mrc::core
