// SPDX-License-Identifier: BSD-2-Clause
// The C++ wrapper (mrc.hpp) end to end: many QPs at once and one 256 MiB
// WRITE, verified byte for byte; errors surface as std::system_error;
// connect() applies every attribute it is given; close() and destructors
// report destruction errors; channels, CQ and async events, hints, queries.
#include "openmrc/mrc.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void tune(mrc_soft_device_attr& a) {
  a.udp_port = 24793;
  a.ev_port_base = 30000;
  a.evs_per_plane = 8;
  a.burst = 8;  // burst mode keeps the big transfer quick
}

#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kBig = size_t{64} << 20;  // sanitizers are ~5x slower
#else
constexpr size_t kBig = size_t{256} << 20;
#endif

size_t drain(mrc::Cq& cq, size_t n, std::vector<ibv_wc>* out = nullptr) {
  size_t got = 0;
  const auto end = Clock::now() + std::chrono::seconds(60);
  ibv_wc wc[32];
  while (got < n && Clock::now() < end) {
    const int k = cq.poll(wc);
    EXPECT_GE(k, 0);
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS) << mrc_wc_status_str(wc[i].status);
      if (out) out->push_back(wc[i]);
    }
    got += static_cast<size_t>(k);
  }
  return got;
}

TEST(Raii, ManyQpsAndA256MiBWriteArriveIntact) {
  mrc::SoftDevice da({"127.0.3.1", "127.0.3.3"}, tune);
  mrc::SoftDevice db({"127.0.3.2", "127.0.3.4"}, tune);
  const std::vector<ibv_gid> ga{da.gid(0), da.gid(1)}, gb{db.gid(0), db.gid(1)};
  da.set_peer(gb);
  db.set_peer(ga);
  mrc::Context ca(da), cb(db);
  mrc::Pd pa(da), pb(db);
  std::vector<uint8_t> src(kBig), dst(kBig, 0);
  for (size_t i = 0; i < src.size(); i += 4096) src[i] = static_cast<uint8_t>(i >> 12);
  for (size_t i = 1; i < src.size(); i += 997) src[i] = static_cast<uint8_t>(i);
  mrc::Mr ma(pa, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
  mrc::Mr mb(pb, dst.data(), dst.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  mrc::Cq qa_cq(ca, 4096), qb_cq(cb, 4096);
  constexpr int kQps = 32;
  std::vector<std::unique_ptr<mrc::Qp>> qa, qb;
  for (int i = 0; i < kQps; ++i) {
    qa.push_back(std::make_unique<mrc::Qp>(ca, qa_cq, qa_cq, pa, 64));
    qb.push_back(std::make_unique<mrc::Qp>(cb, qb_cq, qb_cq, pb, 64));
  }
  for (int i = 0; i < kQps; ++i) {
    qa[static_cast<size_t>(i)]->connect(gb[0], qb[static_cast<size_t>(i)]->qpn(), 1000u + static_cast<uint32_t>(i), 77);
    qb[static_cast<size_t>(i)]->connect(ga[0], qa[static_cast<size_t>(i)]->qpn(), 77, 1000u + static_cast<uint32_t>(i));
  }
  // Every QP writes its own 1 MiB slice at once.
  for (int i = 0; i < kQps; ++i) {
    const uint64_t off = uint64_t{1} << 20 << 0;
    ibv_sge sge{reinterpret_cast<uint64_t>(src.data()) + static_cast<uint64_t>(i) * off, 1u << 20, ma.lkey()};
    ibv_send_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(dst.data()) + static_cast<uint64_t>(i) * off;
    wr.wr.rdma.rkey = mb.rkey();
    ASSERT_EQ(qa[static_cast<size_t>(i)]->post(wr), 0);
  }
  std::vector<ibv_wc> wcs;
  ASSERT_EQ(drain(qa_cq, kQps, &wcs), static_cast<size_t>(kQps));
  ASSERT_EQ(0, std::memcmp(src.data(), dst.data(), size_t{kQps} << 20));
  // One WRITE of the whole buffer on one QP.
  std::fill(dst.begin(), dst.end(), 0);
  ibv_sge sge{reinterpret_cast<uint64_t>(src.data()), static_cast<uint32_t>(kBig), ma.lkey()};
  ibv_send_wr wr{};
  wr.wr_id = 999;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  wr.wr.rdma.rkey = mb.rkey();
  ASSERT_EQ(qa[0]->post(wr), 0);
  ASSERT_EQ(drain(qa_cq, 1), 1u);
  EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), kBig));
  const mrc_soft_stats st = db.stats();
  EXPECT_EQ(st.rx_icrc_errors, 0u);
}

TEST(Raii, FailuresThrowWithTheCallAndErrno) {
  try {
    mrc::SoftDevice bad({"not-an-address"}, tune);
    FAIL() << "no exception";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("mrc_soft_open_device"), std::string::npos);
  }
  mrc::SoftDevice d({"127.0.3.9"}, tune);
  mrc::Context c(d);
  EXPECT_THROW(mrc::Cq(c, 0), std::system_error);
}

/// Two one-plane devices on loopback addresses `a` and `b`, with contexts,
/// PDs, buffers, a CQ each (on a channel at b) and one QP each, unconnected.
struct Pair {
  Pair(const char* a, const char* b)
      : da({a}, tune), db({b}, tune), ca(da), cb(db), pa(da), pb(db), src(4096, 7), dst(4096, 0),
        ma(pa, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE),
        mb(pb, dst.data(), dst.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), chb(cb), cqa(ca, 64),
        cqb(cb, 64, &chb, &dst), qa(ca, cqa, cqa, pa, 16), qb(cb, cqb, cqb, pb, 16) {}
  mrc::SoftDevice da, db;
  mrc::Context ca, cb;
  mrc::Pd pa, pb;
  std::vector<uint8_t> src, dst;
  mrc::Mr ma, mb;
  mrc::CompChannel chb;
  mrc::Cq cqa, cqb;
  mrc::Qp qa, qb;
};

TEST(Raii, ConnectAppliesTheProfilesHintAndVendorDataItIsGiven) {
  Pair p("127.0.3.21", "127.0.3.22");
  mrc_qp_attr m{};
  m.mpr.mpr = m.mpr.mpr_dest = 8;
  m.wimm.max_wimm = m.wimm.max_wimm_dest = 16;
  m.timeout = 14;
  m.retry.linear_cnt = 7;
  m.retry.exp_cnt = 7;
  m.profile.ev_profile_id = 7;  // no such EV profile: the C call refuses it
  try {
    p.qa.connect(p.db.gid(), p.qb.qpn(), 1, 1, IBV_MTU_4096, &m);
    FAIL() << "an unknown EV profile id was accepted";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("mrc_modify_qp"), std::string::npos);
  }
  EXPECT_EQ(p.qa.query(IBV_QP_STATE, 0).ibv.qp_state, IBV_QPS_RESET);
  m.profile.ev_profile_id = 0;
  m.vendor_cfg[5] = 1;  // no vendor data is defined: refused, not dropped
  EXPECT_THROW(p.qa.connect(p.db.gid(), p.qb.qpn(), 1, 1, IBV_MTU_4096, &m), std::system_error);
  ibv_qp_attr reset{};
  reset.qp_state = IBV_QPS_RESET;
  p.qa.modify(reset, IBV_QP_STATE);
  m.vendor_cfg[5] = 0;
  mrc_qp_hint_attr ha{};
  ha.num_remote_recv_peers = 4;
  mrc::QpHint hint(p.ca, ha);
  EXPECT_EQ(hint.query().num_remote_recv_peers, 4);
  ha.num_send_peers = 3;
  ha.num_remote_recv_peers = 5;
  hint.modify(ha, MRC_QP_HINT_NUM_SEND_PEERS);  // the send peers only
  EXPECT_EQ(hint.query().num_send_peers, 3);
  EXPECT_EQ(hint.query().num_remote_recv_peers, 4);
  ha.num_send_peers = -1;
  EXPECT_THROW(hint.modify(ha, MRC_QP_HINT_NUM_SEND_PEERS), std::system_error);
  m.qp_hint = hint.get();
  p.qa.connect(p.db.gid(), p.qb.qpn(), 1, 1, IBV_MTU_4096, &m);
  const mrc::QpAttrs q = p.qa.query(IBV_QP_STATE, MRC_QP_MPR | MRC_QP_HINT | MRC_QP_RETRY_CNT);
  EXPECT_EQ(q.ibv.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(q.mrc.mpr.mpr, 8);
  EXPECT_EQ(q.mrc.retry.exp_cnt, 7);
  EXPECT_EQ(q.mrc.qp_hint, hint.get());
  EXPECT_EQ(hint.close(), EBUSY);  // the QP holds it
  EXPECT_EQ(p.qa.close(), 0);
  EXPECT_EQ(hint.close(), 0);
  EXPECT_EQ(hint.close(), 0);  // closed already: nothing to do
}

TEST(Raii, CloseReturnsTheErrorAndKeepsTheObjectOpen) {
  mrc::SoftDevice d({"127.0.3.23"}, tune);
  mrc::Context c(d);
  mrc::Cq cq(c, 8);
  EXPECT_EQ(d.close(), EBUSY);  // a context is open on it
  EXPECT_EQ(c.close(), EBUSY);  // it owns a CQ
  EXPECT_NE(c.get(), nullptr);
  EXPECT_EQ(cq.close(), 0);
  EXPECT_EQ(c.close(), 0);
  EXPECT_EQ(c.get(), nullptr);
  EXPECT_EQ(d.close(), 0);
}

std::vector<std::pair<std::string, int>> g_destroy_errors;

TEST(Raii, ADestructorThatCannotDestroyReportsIt) {
  const mrc::DestroyErrorHandler old = mrc::set_destroy_error_handler(
      [](const char* call, int err) noexcept { g_destroy_errors.emplace_back(call, err); });
  g_destroy_errors.clear();
  mrc::SoftDevice d({"127.0.3.24"}, tune);
  std::unique_ptr<mrc::Cq> cq;
  mrc_context* leaked = nullptr;
  {
    mrc::Context c(d);
    leaked = c.get();
    cq = std::make_unique<mrc::Cq>(c, 8);
  }  // ~Context while its CQ lives: EBUSY, reported
  ASSERT_EQ(g_destroy_errors.size(), 1u);
  EXPECT_EQ(g_destroy_errors[0].first, "mrc_destroy_context");
  EXPECT_EQ(g_destroy_errors[0].second, EBUSY);
  EXPECT_EQ(cq->close(), 0);
  EXPECT_EQ(mrc_destroy_context(leaked), 0);  // clean up what the destructor had to leave
  mrc::set_destroy_error_handler(old);
}

TEST(Raii, ChannelsDeliverCqEventsAndQueriesAnswer) {
  Pair p("127.0.3.25", "127.0.3.26");
  const mrc_device_attr da = p.da.query();
  EXPECT_GE(da.wimm_attr.max_wimm, 16);
  EXPECT_THROW(mrc::Cq(p.ca, 8).arm(), std::system_error);  // no channel
  p.qa.connect(p.db.gid(), p.qb.qpn(), 5, 9);
  p.qb.connect(p.da.gid(), p.qa.qpn(), 9, 5);
  ibv_recv_wr rwr{};
  rwr.wr_id = 3;
  ASSERT_EQ(p.qb.post(rwr), 0);
  p.cqb.arm();
  ibv_sge sge{reinterpret_cast<uint64_t>(p.src.data()), 4096, p.ma.lkey()};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.dst.data());
  wr.wr.rdma.rkey = p.mb.rkey();
  ASSERT_EQ(p.qa.post(wr), 0);
  mrc::CqEvent ev;
  int rc;
  do {
    rc = p.chb.get_event(ev);  // blocking fd; a spurious wake-up returns EAGAIN
  } while (rc == EAGAIN);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(ev.cq, p.cqb.get());
  EXPECT_EQ(ev.cq_context, &p.dst);
  p.cqb.ack_events(1);
  EXPECT_EQ(drain(p.cqb, 1), 1u);
  EXPECT_EQ(drain(p.cqa, 1), 1u);
  EXPECT_EQ(p.src, p.dst);
  // No async event is pending: a non-blocking fd answers EAGAIN.
  const int fd = p.ca.async_fd();
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
  mrc::AsyncEvent aev;
  EXPECT_EQ(p.ca.get_async_event(aev), EAGAIN);
  mrc_async_event raw{};
  errno = 0;
  EXPECT_EQ(mrc_get_async_event(p.ca.get(), &raw), -1) << "-1 with errno, as ibv_get_async_event";
  EXPECT_EQ(errno, EAGAIN);
}

}  // namespace
