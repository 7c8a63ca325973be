// SPDX-License-Identifier: BSD-2-Clause
// Test support, header-only, for the C API tests (ctl_test.cc,
// ctl_ops_test.cc, ctl_srv6_test.cc): one software device with a context,
// a PD, a CQ, a registered buffer and QPs, and connecting a QP; each call a
// test failure when it fails.
#pragma once

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "mrc.h"
#include "openmrc/mrc_soft.h"

namespace mrc::test_support {

struct SoftNode {
  ibv_context* dev = nullptr;
  mrc_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  mrc_cq* cq = nullptr;
  std::vector<uint8_t> mem;
  ibv_mr* mr = nullptr;
  std::vector<mrc_qp*> qps;  ///< add_qp()'s, destroyed by close()

  /// Opens the device `a` describes and a context on it.
  void open_device(const mrc_soft_device_attr& a) {
    dev = mrc_soft_open_device(&a);
    ASSERT_NE(dev, nullptr) << std::strerror(errno);
    ctx = mrc_create_context(dev, nullptr);
    ASSERT_NE(ctx, nullptr);
  }
  /// A PD, a CQ of `cqe` entries and a zeroed buffer of `bytes` registered
  /// for local and remote write.
  void add_resources(size_t bytes, int cqe) {
    pd = mrc_soft_alloc_pd(dev);
    ASSERT_NE(pd, nullptr);
    cq = mrc_create_cq(ctx, cqe, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    mem.assign(bytes, 0);
    mr = mrc_soft_reg_mr(pd, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ASSERT_NE(mr, nullptr);
  }
  /// Both of the above.
  void open(const mrc_soft_device_attr& a, size_t bytes, int cqe) {
    open_device(a);
    if (!::testing::Test::HasFatalFailure()) add_resources(bytes, cqe);
  }
  /// A QP on the CQ (`wrs` send and receive WRs, one SGE); the caller
  /// destroys it.
  mrc_qp* create_qp(uint32_t wrs) const {
    mrc_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.pd = pd;
    ia.cap.max_send_wr = wrs;
    ia.cap.max_recv_wr = wrs;
    ia.cap.max_send_sge = 1;
    return mrc_create_qp(ctx, &ia);
  }
  /// The same, destroyed by close().
  mrc_qp* add_qp(uint32_t wrs = 64) {
    mrc_qp* q = create_qp(wrs);
    EXPECT_NE(q, nullptr);
    if (q) qps.push_back(q);
    return q;
  }
  /// Destroys what exists, QPs first, and closes the device.
  void close() {
    for (mrc_qp* q : qps) EXPECT_EQ(mrc_destroy_qp(q), 0);
    qps.clear();
    if (mr) {
      EXPECT_EQ(mrc_soft_dereg_mr(mr), 0);
    }
    if (cq) {
      EXPECT_EQ(mrc_destroy_cq(cq), 0);
    }
    if (pd) {
      EXPECT_EQ(mrc_soft_dealloc_pd(pd), 0);
    }
    if (ctx) {
      EXPECT_EQ(mrc_destroy_context(ctx), 0);
    }
    if (dev) {
      EXPECT_EQ(mrc_soft_close_device(dev), 0);
    }
    mr = nullptr;
    cq = nullptr;
    pd = nullptr;
    ctx = nullptr;
    dev = nullptr;
  }
  ibv_gid gid(int plane) const {
    ibv_gid g;
    EXPECT_EQ(mrc_soft_query_gid(dev, plane, &g), 0);
    return g;
  }
};

/// The QP number of `q` (mrc_get_qpn), a test failure if the call fails.
inline uint32_t qpn_of(mrc_qp* q) {
  uint32_t n = 0;
  EXPECT_EQ(mrc_get_qpn(q, &n), 0);
  return n;
}

/// Takes `q` through INIT (on EV profile `ev_profile`, 0 = the device's),
/// RTR (to `peer_qpn` at `peer`, path MTU 4096) and RTS, with the PSNs 77
/// both ways, 64 WriteIMMs and an MPR of 8 each way, retrying forever at an
/// ACK timeout of 1.024 us x 2^14.
inline void to_rts(mrc_qp* q, const ibv_gid& peer, uint32_t peer_qpn, uint64_t ev_profile = 0) {
  mrc_qp_attr m{};
  m.wimm.max_wimm = m.wimm.max_wimm_dest = 64;
  m.mpr.mpr = m.mpr.mpr_dest = 8;
  m.retry.linear_cnt = 7;
  m.retry.exp_cnt = MRC_QP_RETRY_EXP_INFINITE;
  m.timeout = 14;
  m.profile.ev_profile_id = ev_profile;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  ASSERT_EQ(mrc_modify_qp(q, &a, IBV_QP_STATE, &m, ev_profile ? MRC_EV_PROFILE_ID : 0), 0);
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = peer;
  a.dest_qp_num = peer_qpn;
  a.rq_psn = 77;
  a.path_mtu = IBV_MTU_4096;
  ASSERT_EQ(mrc_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU, &m,
                          MRC_QP_MAX_WIMM_DEST | MRC_QP_MPR_DEST),
            0);
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 77;
  ASSERT_EQ(mrc_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, &m,
                          MRC_QP_MAX_WIMM | MRC_QP_MPR | MRC_QP_RETRY_CNT | MRC_QP_TIMEOUT),
            0);
}

}  // namespace mrc::test_support
