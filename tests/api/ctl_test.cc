// SPDX-License-Identifier: BSD-2-Clause
// The controller API (mrc_ctl.h) over the software device: profile state
// machines and errno values through the C calls, QPs holding and using
// controller profiles (EBUSY, DENY reaching a running QP, a transfer over a
// controller EV set), CC profiles, and the EV event CQ with its channel.
// Loopback addresses 127.0.5.x (other test programs use other ranges).
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "api/objects.hpp"
#include "mrc.h"
#include "mrc_ctl.h"
#include "openmrc/mrc_soft.h"
#include "soft_node.hpp"

namespace {

/// A format profile configured in one call: state, mode and fields.
constexpr int kFmtConfigure = MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE | MRC_CTL_EV_FMT_PROFILE_OP;

using mrc::test_support::qpn_of;

constexpr uint16_t kUdpPort = 24795;
constexpr uint16_t kEvBase = 31000;
constexpr uint32_t kEvsPerPlane = 4;

struct Dev : mrc::test_support::SoftNode {
  void open(std::vector<const char*> planes) {
    mrc_soft_device_attr a{};
    a.plane_addrs = planes.data();
    a.num_planes = static_cast<int>(planes.size());
    a.udp_port = kUdpPort;
    a.ev_port_base = kEvBase;
    a.evs_per_plane = kEvsPerPlane;
    a.seed = 5;
    SoftNode::open(a, 1 << 16, 64);
  }
  mrc_qp* qp() const { return create_qp(16); }
};

// An EXPLICIT EV: the UDP source port as a host-order uint32_t in the
// first 4 bytes (OCP's mrc_ctl.h: the value is read with memcpy).
mrc_ctl_ev ev16(uint16_t v, uint8_t port) {
  mrc_ctl_ev e{};
  const uint32_t w = v;
  std::memcpy(e.val, &w, sizeof w);
  e.port = port;
  return e;
}

// Format 1: GENERATED, one 16-bit field, ONLINE.
void udp_format(mrc_context* ctx) {
  mrc_ctl_ev_fmt_field f{16, 0, 255};
  mrc_ctl_ev_fmt_profile_attr a{};
  a.profile_state = MRC_CTL_PROFILE_OFFLINE;
  a.ev_fmt_mode = MRC_CTL_EV_FMT_MODE_GENERATED;
  a.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_MODIFY_FIELDS;
  a.ev_fmt_op.modify_fmt_fields = {&f, 1, 0};
  ASSERT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &a, kFmtConfigure), 0);
  a.profile_state = MRC_CTL_PROFILE_ONLINE;
  ASSERT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &a, MRC_CTL_EV_FMT_PROFILE_STATE), 0);
}

// EV profile `id`: EXPLICIT, `count` entries, OFFLINE.
int exp_offline(mrc_context* ctx, uint64_t id, uint32_t count) {
  mrc_ctl_ev_profile_attr a{};
  a.profile_state = MRC_CTL_PROFILE_OFFLINE;
  a.ev_mode = MRC_CTL_EV_MODE_EXPLICIT;
  a.ev_count = count;
  return mrc_ctl_modify_ev_profile(ctx, id, &a,
                                   MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_COUNT);
}

int replace_ev(mrc_context* ctx, uint64_t id, mrc_ctl_ev cur, mrc_ctl_ev next, int all_copies = 0) {
  mrc_ctl_ev_profile_attr a{};
  a.ev_op.op = MRC_CTL_EV_OP_REPLACE_EV;
  a.ev_op.replace_ev = {cur, next, all_copies};
  return mrc_ctl_modify_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_EV_OP);
}

int set_ev_state(mrc_context* ctx, uint64_t id, mrc_ctl_ev ev, mrc_ctl_ev_state st) {
  mrc_ctl_ev_profile_attr a{};
  a.ev_op.op = MRC_CTL_EV_OP_MODIFY_EV_STATE;
  a.ev_op.modify_ev_state.ev = ev;
  a.ev_op.modify_ev_state.state = st;
  return mrc_ctl_modify_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_EV_OP);
}

// The state of `ev` (QUERY_EV_STATE), or 0 with the call's error in *rc.
uint32_t get_ev_state(mrc_context* ctx, uint64_t id, mrc_ctl_ev ev, int* rc = nullptr) {
  mrc_ctl_ev_profile_attr a{};
  a.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_STATE;
  a.ev_op.query_ev_state.ev = ev;
  const int r = mrc_ctl_query_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_EV_OP);
  if (rc) *rc = r;
  uint32_t st = 0;
  if (r == 0) std::memcpy(&st, &a.ev_op.query_ev_state.state, sizeof st);  // bit 31 is outside the C++ enum
  return st;
}

int ev_state(mrc_context* ctx, uint64_t id, mrc_ctl_profile_state st, uint32_t event_mask = MRC_CTL_EV_GOOD) {
  mrc_ctl_ev_profile_attr a{};
  a.profile_state = st;
  a.ev_min_active = 1;
  a.ev_event_mask = static_cast<int>(event_mask);
  uint32_t mask = MRC_CTL_EV_PROFILE_STATE;
  if (st == MRC_CTL_PROFILE_ONLINE) mask |= MRC_CTL_EV_PROFILE_MIN_ACTIVE | MRC_CTL_EV_PROFILE_EVENT_MASK;
  return mrc_ctl_modify_ev_profile(ctx, id, &a, mask);
}

int qp_init(mrc_qp* qp, uint64_t ev_id, uint64_t cc_id = 0) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  mrc_qp_attr m{};
  m.profile.ev_profile_id = ev_id;
  m.profile.cc_profile_id = cc_id;
  return mrc_modify_qp(qp, &a, IBV_QP_STATE, &m, MRC_EV_PROFILE_ID | MRC_CC_PROFILE_ID);
}

TEST(Ctl, DeviceReportsWhatTheControllerSupports) {
  Dev d;
  d.open({"127.0.5.1", "127.0.5.2"});
  // OCP's mrc_ctl_attr (the values of OCP's mrc_ctl.h 85562bc).
  static_assert(MRC_CTL_OPT_CAP_EV_EVENT == 1 << 2 && MRC_CTL_OPT_CAP_EV_EXPLICIT == 1 << 3 &&
                MRC_CTL_OPT_CAP_EV_PROBE == 1 << 6 && MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT == 1 << 7 &&
                MRC_CTL_OPT_CAP_SRV6_GENERATED == 1 << 9 && MRC_CTL_OPT_CAP_SRV6_SRH == 1 << 12);
  static_assert(MRC_CTL_EV_MODE_AUTO == 0 && MRC_CTL_EV_MODE_EXPLICIT == 1 && MRC_CTL_EV_MODE_GENERATED == 2 &&
                MRC_CTL_EV_MODE_SRV6_GENERATED == 4 && MRC_CTL_EV_MODE_SRV6_COMP_GENERATED == 6);
  static_assert(MRC_CTL_EV_PROFILE_COUNT == 1 << 3 && MRC_CTL_EV_PROFILE_MIN_ACTIVE == 1 << 4 &&
                MRC_CTL_EV_PROFILE_EVENT_MASK == 1 << 5 && MRC_CTL_EV_PROFILE_EV_OP == 1 << 6 &&
                MRC_CTL_EV_PROFILE_FMT_ID == 1 << 7 && MRC_CTL_EV_PROFILE_SRV6_SRH == 1 << 8 &&
                MRC_CTL_EV_PROFILE_SRV6_COMP == 1 << 9);
  constexpr uint32_t kOpts = MRC_CTL_OPT_CAP_EV_EVENT | MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT |
                             MRC_CTL_OPT_CAP_EV_PROBE | MRC_CTL_OPT_CAP_EV_EXPLICIT;
  mrc_ctl_attr o{};
  ASSERT_EQ(mrc_ctl_query_device(d.dev, &o), 0);
  EXPECT_EQ(o.mrc_ctl_version, uint32_t{MRC_CTL_VERSION_1});
  EXPECT_EQ(o.ev.ev_max_profiles, 16u);
  EXPECT_EQ(o.ev.ev_max_count_profile, 8u);
  EXPECT_EQ(o.ev.ev_free_count, 128u);
  EXPECT_EQ(o.ev.ev_max_bits, 16u);
  EXPECT_EQ(o.opt_attr, kOpts);
  EXPECT_EQ(o.port_mask, 0b110u);
  ASSERT_NE(o.cc.cc_algorithms, nullptr);
  EXPECT_STREQ(o.cc.cc_algorithms[0], "uet-1.0-nscc");
  EXPECT_EQ(o.cc.cc_algorithms[1], nullptr);
  mrc_ctl_device_attr a{};
  int supported = 0;
  ASSERT_EQ(mrc_ctl_query_device_ex(d.dev, nullptr, &a, &supported), 0);
  EXPECT_EQ(supported, 1);
  EXPECT_EQ(a.ev.ev_max_width, 16u);
  EXPECT_EQ(a.ev.ev_fmt_mode_mask, 1u << MRC_CTL_EV_FMT_MODE_GENERATED);
  EXPECT_EQ(a.ev.ev_mode_mask, (1u << MRC_CTL_EV_MODE_AUTO) | (1u << MRC_CTL_EV_MODE_EXPLICIT));
  EXPECT_EQ(a.opt_attr, kOpts);
  EXPECT_EQ(a.phy_port_mask, 0b110u);
  d.close();
}

TEST(Ctl, ProfileStateMachinesThroughTheCApi) {
  Dev d;
  d.open({"127.0.5.3", "127.0.5.4"});
  mrc_context* ctx = d.ctx;
  // Format: bad transitions, E2BIG with the count, EPERM while ONLINE.
  static_assert(MRC_CTL_EV_FMT_MODE_GENERATED == 1 && MRC_CTL_EV_FMT_MODE_SRV6_GENERATED == 2 &&
                MRC_CTL_EV_FMT_OP_MODIFY_FIELDS == 0 && MRC_CTL_EV_FMT_OP_QUERY_FIELDS == 1);
  mrc_ctl_ev_fmt_profile_attr f{};
  f.profile_state = MRC_CTL_PROFILE_ONLINE;
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, MRC_CTL_EV_FMT_PROFILE_STATE), -EINVAL);
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 0, &f, MRC_CTL_EV_FMT_PROFILE_STATE), -EINVAL);
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 17, &f, MRC_CTL_EV_FMT_PROFILE_STATE), -EINVAL)
      << "the device's own format of EXPLICIT profiles is out of reach";
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, 1 << 4), -EINVAL) << "an unknown mask bit";
  f.profile_state = MRC_CTL_PROFILE_OFFLINE;
  f.ev_fmt_mode = MRC_CTL_EV_FMT_MODE_SRV6_GENERATED;  // a UDP device has no SRv6 framing
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE),
            -EINVAL);
  mrc_ctl_ev_fmt_field wide[2] = {{16, 0, 0}, {16, 0, 0}};
  f.ev_fmt_mode = MRC_CTL_EV_FMT_MODE_GENERATED;
  f.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_MODIFY_FIELDS;
  f.ev_fmt_op.modify_fmt_fields = {wide, 2, 0};
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, kFmtConfigure), -E2BIG) << "32 bits in a 16-bit source port";
  f.ev_fmt_op.modify_fmt_fields = {wide, 1, 4};
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, kFmtConfigure), -E2BIG) << "the prefix counts";
  mrc_ctl_ev_fmt_field bad{4, 3, 2};
  f.ev_fmt_op.modify_fmt_fields = {&bad, 1, 0};
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, kFmtConfigure), -EINVAL) << "min_val > max_val";
  bad = {4, 0, 16};
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, kFmtConfigure), -EINVAL) << "max_val wider than the field";
  // Fields round-trip through modify and query.
  mrc_ctl_ev_fmt_field two[2] = {{8, 1, 200}, {4, 0, 15}};
  f.ev_fmt_op.modify_fmt_fields = {two, 2, 4};
  ASSERT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 2, &f, kFmtConfigure), 0);
  mrc_ctl_ev_fmt_profile_attr q{};
  int nf = -1, prefix = -1;
  q.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_QUERY_FIELDS;
  q.ev_fmt_op.query_fmt_fields = {nullptr, 0, &nf, &prefix};
  EXPECT_EQ(mrc_ctl_query_ev_fmt_profile(ctx, 2, &q, MRC_CTL_EV_FMT_PROFILE_OP), -E2BIG);
  EXPECT_EQ(nf, 2);
  mrc_ctl_ev_fmt_field got[2]{};
  q.ev_fmt_op.query_fmt_fields = {got, 2, &nf, &prefix};
  ASSERT_EQ(mrc_ctl_query_ev_fmt_profile(ctx, 2, &q,
                                         MRC_CTL_EV_FMT_PROFILE_OP | MRC_CTL_EV_FMT_PROFILE_STATE |
                                             MRC_CTL_EV_FMT_PROFILE_MODE),
            0);
  EXPECT_EQ(nf, 2);
  EXPECT_EQ(prefix, 4);
  EXPECT_EQ(got[0].width, 8);
  EXPECT_EQ(got[0].min_val, 1);
  EXPECT_EQ(got[0].max_val, 200);
  EXPECT_EQ(got[1].width, 4);
  EXPECT_EQ(got[1].max_val, 15);
  EXPECT_EQ(q.profile_state, MRC_CTL_PROFILE_OFFLINE);
  EXPECT_EQ(q.ev_fmt_mode, MRC_CTL_EV_FMT_MODE_GENERATED);
  q.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_MODIFY_FIELDS;
  EXPECT_EQ(mrc_ctl_query_ev_fmt_profile(ctx, 2, &q, MRC_CTL_EV_FMT_PROFILE_OP), -EINVAL) << "a query modifies nothing";
  udp_format(ctx);
  f.ev_fmt_mode = MRC_CTL_EV_FMT_MODE_GENERATED;
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, MRC_CTL_EV_FMT_PROFILE_MODE), -EPERM);

  // EV profile: generated arrays are not offered (nor SRH); EXPLICIT
  // starts unpopulated.
  mrc_ctl_ev_profile_attr g{};
  g.profile_state = MRC_CTL_PROFILE_OFFLINE;
  g.ev_mode = MRC_CTL_EV_MODE_SRV6_GENERATED;
  EXPECT_EQ(mrc_ctl_modify_ev_profile(ctx, 1, &g, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE), EINVAL);
  g.ev_mode = MRC_CTL_EV_MODE_GENERATED;
  EXPECT_EQ(mrc_ctl_modify_ev_profile(ctx, 1, &g, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE), EINVAL);
  g.ev_mode = MRC_CTL_EV_MODE_EXPLICIT;
  g.srv6_use_srh = 1;
  EXPECT_EQ(mrc_ctl_modify_ev_profile(ctx, 1, &g, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_SRV6_SRH), EINVAL);
  EXPECT_EQ(mrc_ctl_modify_ev_profile(ctx, 1, &g, 1 << 10), EINVAL) << "an unknown mask bit";
  EXPECT_EQ(mrc_ctl_modify_ev_profile(ctx, 0, &g, MRC_CTL_EV_PROFILE_STATE), EINVAL) << "id 0 is the default";
  EXPECT_EQ(mrc_ctl_modify_ev_profile(ctx, 17, &g, MRC_CTL_EV_PROFILE_STATE), EINVAL) << "ids are 1..16";
  EXPECT_EQ(mrc_ctl_query_ev_profile(ctx, 17, &g, MRC_CTL_EV_PROFILE_STATE), EINVAL);
  EXPECT_EQ(exp_offline(ctx, 1, 9), E2BIG) << "more than the device's 8 EVs per profile";
  ASSERT_EQ(exp_offline(ctx, 1, 2), 0);
  mrc_ctl_ev arr[2];
  std::memset(arr, 0xff, sizeof arr);
  mrc_ctl_ev_profile_attr qa{};
  qa.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_ARRAY;
  EXPECT_EQ(mrc_ctl_query_ev_profile(ctx, 1, &qa, MRC_CTL_EV_PROFILE_EV_OP), EINVAL) << "no array";
  qa.ev_op.query_ev_array.ev = arr;
  ASSERT_EQ(mrc_ctl_query_ev_profile(ctx, 1, &qa, MRC_CTL_EV_PROFILE_EV_OP), 0);
  const mrc_ctl_ev none{};
  EXPECT_EQ(0, std::memcmp(&arr[0], &none, sizeof none)) << "UNPOPULATED";
  EXPECT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_ONLINE), EINVAL) << "unpopulated entries";
  ASSERT_EQ(replace_ev(ctx, 1, none, ev16(kEvBase, 1)), 0);
  // 0x1234 has no socket on port 2: refused at ONLINE.
  ASSERT_EQ(replace_ev(ctx, 1, none, ev16(0x1234, 2)), 0);
  EXPECT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_ONLINE), EINVAL);
  // A value wider than the UDP source port is refused at once.
  mrc_ctl_ev wide_ev = ev16(0, 2);
  const uint32_t big = 0x10000;
  std::memcpy(wide_ev.val, &big, sizeof big);
  EXPECT_EQ(replace_ev(ctx, 1, ev16(0x1234, 2), wide_ev), EINVAL);
  // Port 2's first EV socket is plane 1's kEvBase + 4.
  EXPECT_EQ(replace_ev(ctx, 1, ev16(0x9999, 2), ev16(kEvBase + 4, 2)), ENOENT);
  ASSERT_EQ(replace_ev(ctx, 1, ev16(0x1234, 2), ev16(kEvBase + 4, 2)), 0);
  ASSERT_EQ(mrc_ctl_query_ev_profile(ctx, 1, &qa, MRC_CTL_EV_PROFILE_EV_OP), 0);
  const mrc_ctl_ev want[2] = {ev16(kEvBase, 1), ev16(kEvBase + 4, 2)};
  EXPECT_EQ(0, std::memcmp(arr[0].val, want[0].val, sizeof want[0].val));
  EXPECT_EQ(arr[0].port, 1);
  EXPECT_EQ(0, std::memcmp(arr[1].val, want[1].val, sizeof want[1].val));
  EXPECT_EQ(arr[1].port, 2);
  EXPECT_EQ(get_ev_state(ctx, 1, want[1]), MRC_CTL_EV_GOOD) << "a replaced EV starts GOOD";
  ASSERT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_ONLINE), 0);
  f.profile_state = MRC_CTL_PROFILE_OFFLINE;
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, MRC_CTL_EV_FMT_PROFILE_STATE), 0)
      << "EXPLICIT profiles use no format of the controller's";
  EXPECT_EQ(replace_ev(ctx, 1, ev16(kEvBase, 1), ev16(kEvBase + 1, 1)), EPERM);
  mrc_ctl_ev_profile_attr qs{};
  ASSERT_EQ(mrc_ctl_query_ev_profile(ctx, 1, &qs, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_COUNT |
                                                     MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_MIN_ACTIVE |
                                                     MRC_CTL_EV_PROFILE_EVENT_MASK | MRC_CTL_EV_PROFILE_SRV6_SRH),
            0);
  EXPECT_EQ(qs.profile_state, MRC_CTL_PROFILE_ONLINE);
  EXPECT_EQ(qs.cur_profile_state, MRC_CTL_PROFILE_ONLINE);
  EXPECT_EQ(qs.ev_count, 2u);
  EXPECT_EQ(qs.ev_mode, MRC_CTL_EV_MODE_EXPLICIT);
  EXPECT_EQ(qs.ev_min_active, 1u);
  EXPECT_EQ(qs.ev_event_mask, MRC_CTL_EV_GOOD);
  EXPECT_EQ(qs.srv6_use_srh, 0);

  // A QP holds the profile from INIT until destroyed.
  mrc_qp* qp = d.qp();
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp_init(qp, 2), EINVAL) << "profile 2 is not ONLINE";
  ASSERT_EQ(qp_init(qp, 1), 0);
  EXPECT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_OFFLINE), EBUSY);
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RESET;
  ASSERT_EQ(mrc_modify_qp(qp, &r, IBV_QP_STATE, nullptr, 0), 0);
  ASSERT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_OFFLINE), 0) << "RESET let go";
  ASSERT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_ONLINE), 0);
  ASSERT_EQ(qp_init(qp, 1), 0);
  EXPECT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_OFFLINE), EBUSY);
  ASSERT_EQ(mrc_destroy_qp(qp), 0);
  ASSERT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_OFFLINE), 0);
  ASSERT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_INIT), 0);

  // CC: NSCC with its configuration, which a query points to.
  mrc_ctl_cc_profile_attr c{};
  c.profile_state = MRC_CTL_PROFILE_OFFLINE;
  c.cc_algorithm = "reno";
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM), EINVAL);
  c.cc_algorithm = "uet-1.0-nscc";
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | (1 << 4)), EINVAL) << "an unknown mask bit";
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 17, &c, MRC_CTL_CC_PROFILE_STATE), EINVAL) << "ids are 1..16";
  ASSERT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM), 0);
  c.profile_state = MRC_CTL_PROFILE_ONLINE;
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE), EINVAL) << "needs CONFIG";
  mrc_ctl_cc_nscc_cfg n{};
  n.base_rtt = 20000;
  n.gamma = 1.5f;  // outside (0, 1]
  c.cc_config = &n;
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_CONFIG), EINVAL);
  n.gamma = 0.5f;
  n.qa_gate = 64;
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_CONFIG), EINVAL);
  n.qa_gate = 4;
  n.disable_qa = 1;
  n.adjust_bytes_threshold = 32768;
  n.adjust_period_threshold = 5000;
  n.eta = 600;
  n.fi = 20000;
  n.fi_scale = 0.5f;
  n.max_md_jump = 0.25f;
  n.max_cwnd = 1 << 20;
  n.qa_threshold = 40000;
  n.target_delay = 8000;
  c.cc_config = &n;
  ASSERT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_CONFIG), 0);
  mrc_ctl_cc_profile_attr cq{};
  ASSERT_EQ(mrc_ctl_query_cc_profile(ctx, 3, &cq,
                                     MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM | MRC_CTL_CC_PROFILE_CONFIG),
            0);
  EXPECT_EQ(cq.profile_state, MRC_CTL_PROFILE_ONLINE);
  EXPECT_STREQ(cq.cc_algorithm, "uet-1.0-nscc");
  ASSERT_NE(cq.cc_config, nullptr);
  EXPECT_EQ(0, std::memcmp(cq.cc_config, &n, sizeof n)) << "the configuration round-trips";
  // ... and every field reaches the core's NSCC parameters, as the
  // controller hands the profile to the device's QPs.
  auto cc = d.ctx->dev->ctl->to_endpoint_cc_profile(3);
  ASSERT_TRUE(cc);
  const mrc::core::NsccConfig& k = cc->nscc;
  EXPECT_TRUE(k.disable_qa);
  EXPECT_EQ(k.adjust_bytes_threshold, 32768u);
  EXPECT_EQ(k.adjust_period_threshold, mrc::Duration::ns(5000));
  EXPECT_EQ(k.base_rtt, mrc::Duration::ns(20000));
  EXPECT_EQ(k.eta, 600.0);
  EXPECT_EQ(k.fi, 20000.0);
  EXPECT_EQ(k.fi_scale, 0.5);
  EXPECT_EQ(k.gamma, 0.5);
  EXPECT_EQ(k.max_md_jump, 0.25);
  EXPECT_EQ(k.max_cwnd, 1u << 20);
  EXPECT_EQ(k.qa_gate, 4);
  EXPECT_EQ(k.qa_threshold, mrc::Duration::ns(40000));
  EXPECT_EQ(k.target_delay, mrc::Duration::ns(8000));
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_CONFIG), EPERM);
  mrc_qp* qp2 = d.qp();
  ASSERT_NE(qp2, nullptr);
  ASSERT_EQ(qp_init(qp2, 0, 3), 0);
  c.profile_state = MRC_CTL_PROFILE_OFFLINE;
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE), EBUSY);
  ASSERT_EQ(mrc_destroy_qp(qp2), 0);
  ASSERT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE), 0);
  d.close();
}

TEST(Ctl, EventCqDeliversControllerEventsAndNotifiesItsChannel) {
  Dev d;
  d.open({"127.0.5.5"});
  mrc_context* ctx = d.ctx;
  udp_format(ctx);
  ASSERT_EQ(exp_offline(ctx, 1, 2), 0);
  const mrc_ctl_ev a = ev16(kEvBase, 1), b = ev16(kEvBase + 1, 1);
  ASSERT_EQ(replace_ev(ctx, 1, mrc_ctl_ev{}, a), 0);
  ASSERT_EQ(replace_ev(ctx, 1, mrc_ctl_ev{}, b), 0);
  ASSERT_EQ(set_ev_state(ctx, 1, b, MRC_CTL_EV_DENIED), 0);
  EXPECT_EQ(get_ev_state(ctx, 1, b), MRC_CTL_EV_DENIED);
  ASSERT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_ONLINE, MRC_CTL_EV_GOOD), 0);
  mrc_comp_channel* ch = nullptr;
  ASSERT_EQ(mrc_create_comp_channel(ctx, &ch), 0);
  ASSERT_NE(ch, nullptr);
  int tag = 0;
  mrc_cq* ecq = mrc_ctl_create_ev_event_cq(ctx, 2, &tag, ch, 0);
  ASSERT_NE(ecq, nullptr);
  errno = 0;
  EXPECT_EQ(mrc_ctl_create_ev_event_cq(ctx, 2, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EBUSY);
  ibv_wc wc;
  EXPECT_EQ(mrc_poll_cq(ecq, 1, &wc), -1);
  EXPECT_EQ(mrc_ctl_poll_ev_event(d.cq, 1, nullptr), -EINVAL) << "not an EV event CQ";
  ASSERT_EQ(mrc_req_notify_cq(ecq, 0), 0);
  // DENIED -> GOOD is a GOOD event; GOOD -> DENIED is not selectable.
  ASSERT_EQ(set_ev_state(ctx, 1, b, MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(set_ev_state(ctx, 1, a, MRC_CTL_EV_DENIED), 0);
  mrc_cq* got = nullptr;
  void* got_ctx = nullptr;
  ASSERT_EQ(mrc_get_cq_event(ch, &got, &got_ctx), 0);
  EXPECT_EQ(got, ecq);
  EXPECT_EQ(got_ctx, &tag);
  mrc_ack_cq_events(ecq, 1);
  mrc_ctl_ev_event ev[4]{};
  ASSERT_EQ(mrc_ctl_poll_ev_event(ecq, 4, ev), 1);
  EXPECT_EQ(ev[0].profile_id, 1u);
  EXPECT_EQ(get_ev_state(ctx, 1, ev[0].ev), MRC_CTL_EV_GOOD);
  EXPECT_EQ(0, std::memcmp(ev[0].ev.val, b.val, sizeof b.val));
  EXPECT_EQ(ev[0].ev.port, 1);
  EXPECT_EQ(ev[0].drop_count, 0u);
  // Four changes into a CQ of two: two lost, reported on the next event.
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(set_ev_state(ctx, 1, i % 2 ? a : b, i < 2 ? MRC_CTL_EV_DENIED : MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(set_ev_state(ctx, 1, a, MRC_CTL_EV_DENIED), 0);
  ASSERT_EQ(set_ev_state(ctx, 1, a, MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(set_ev_state(ctx, 1, a, MRC_CTL_EV_DENIED), 0);
  ASSERT_EQ(set_ev_state(ctx, 1, a, MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(mrc_ctl_poll_ev_event(ecq, 4, ev), 2);
  EXPECT_EQ(ev[0].drop_count, 0u);
  EXPECT_EQ(ev[1].drop_count, 0u);
  ASSERT_EQ(set_ev_state(ctx, 1, a, MRC_CTL_EV_DENIED), 0);
  ASSERT_EQ(set_ev_state(ctx, 1, a, MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(mrc_ctl_poll_ev_event(ecq, 4, ev), 1);
  EXPECT_EQ(ev[0].drop_count, 2u);
  EXPECT_EQ(mrc_destroy_comp_channel(ch), EBUSY);
  ASSERT_EQ(mrc_destroy_cq(ecq), 0);
  ASSERT_EQ(mrc_destroy_comp_channel(ch), 0);
  // A new one can be created after the first is gone.
  ecq = mrc_ctl_create_ev_event_cq(ctx, 8, nullptr, nullptr, 0);
  ASSERT_NE(ecq, nullptr);
  ASSERT_EQ(mrc_destroy_cq(ecq), 0);
  d.close();
}

// The application's traffic hint (mrc_create_qp_hint) reaches the core
// with the QP on its way to INIT, where it sizes the first window
// (core::QpHint); giving NULL takes it back.
TEST(Ctl, AQpHintReachesTheCoreOnTheWayToInit) {
  Dev d;
  d.open({"127.0.5.6"});
  mrc_qp_hint_init_attr ha{};
  ha.attr.num_qps_per_peer = 2;
  ha.attr.num_remote_recv_peers = 31;
  mrc_qp_hint* hint = mrc_create_qp_hint(d.ctx, &ha);
  ASSERT_NE(hint, nullptr);
  mrc_qp* q = d.qp();
  ASSERT_NE(q, nullptr);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  mrc_qp_attr m{};
  m.qp_hint = hint;
  ASSERT_EQ(mrc_modify_qp(q, &a, IBV_QP_STATE, &m, MRC_QP_HINT), 0);
  auto info = d.ctx->dev->rt->query_qp(qpn_of(q));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->attr.hint.qps_per_peer, 2u);
  EXPECT_EQ(info->attr.hint.remote_recv_peers, 31u);
  EXPECT_EQ(info->attr.hint.send_peers, 0u) << "not given (0)";
  EXPECT_EQ(info->attr.hint.window_divisor(), 62u);
  errno = 0;
  EXPECT_EQ(mrc_destroy_qp_hint(hint), -1) << "a QP holds it";
  EXPECT_EQ(errno, EBUSY);
  m.qp_hint = nullptr;
  ASSERT_EQ(mrc_modify_qp(q, &a, IBV_QP_STATE, &m, MRC_QP_HINT), 0);
  info = d.ctx->dev->rt->query_qp(qpn_of(q));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->attr.hint.window_divisor(), 1u);
  EXPECT_EQ(mrc_destroy_qp_hint(hint), 0);
  EXPECT_EQ(mrc_destroy_qp(q), 0);
  d.close();
}

}  // namespace
