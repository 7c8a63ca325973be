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
constexpr uint16_t kEvBase = 43000;
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

mrc_ctl_ev ev16(uint16_t v, uint8_t port) {
  mrc_ctl_ev e{};
  e.val[0] = static_cast<uint8_t>(v >> 8);
  e.val[1] = static_cast<uint8_t>(v);
  e.port = port;
  return e;
}

// Format 1: UDP, one 16-bit field, ONLINE.
void udp_format(mrc_context* ctx) {
  mrc_ctl_ev_field f{16, 0, 0, 0, 0};
  mrc_ctl_ev_fmt_profile_attr a{};
  a.state = MRC_CTL_PROFILE_OFFLINE;
  a.mode = MRC_CTL_EV_FMT_UDP;
  a.fields_op = {MRC_CTL_MODIFY_FIELDS, &f, 1};
  ASSERT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &a, kFmtConfigure), 0);
  a.state = MRC_CTL_PROFILE_ONLINE;
  ASSERT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &a, MRC_CTL_EV_FMT_PROFILE_STATE), 0);
}

// EV profile `id`: EXP on format 1, the compact EV is the source port.
int exp_offline(mrc_context* ctx, uint64_t id, uint32_t count) {
  mrc_ctl_ev_field f{16, 0, 0, 0xFFFF, 0xFFFF};
  mrc_ctl_ev_profile_attr a{};
  a.state = MRC_CTL_PROFILE_OFFLINE;
  a.ev_mode = MRC_CTL_EV_MODE_EXPLICIT;
  a.ev_fmt_profile_id = 1;
  a.ev_count = count;
  a.ev_fields_op = {MRC_CTL_MODIFY_FIELDS, &f, 1};
  return mrc_ctl_modify_ev_profile(ctx, id, &a,
                                   MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID |
                                       MRC_CTL_EV_PROFILE_COUNT | MRC_CTL_EV_PROFILE_EV_FIELDS_OP);
}

int ev_op(mrc_context* ctx, uint64_t id, mrc_ctl_ev_op op, mrc_ctl_ev ev, mrc_ctl_ev ev_new, mrc_ctl_ev_state st,
          uint32_t flags = 0) {
  mrc_ctl_ev_op_entry e{ev, ev_new, st, flags};
  mrc_ctl_ev_profile_attr a{};
  a.ev_op = {op, &e, 1};
  return mrc_ctl_modify_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_EV_OP);
}

int ev_state(mrc_context* ctx, uint64_t id, mrc_ctl_profile_state st, uint32_t event_mask = MRC_CTL_EV_GOOD) {
  mrc_ctl_ev_profile_attr a{};
  a.state = st;
  a.ev_min_active = 1;
  a.ev_event_mask = event_mask;
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
  EXPECT_EQ(a.ev.ev_fmt_mode_mask, uint32_t{MRC_CTL_EV_FMT_UDP | MRC_CTL_EV_FMT_STEV});
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
  mrc_ctl_ev_fmt_profile_attr f{};
  f.state = MRC_CTL_PROFILE_ONLINE;
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, MRC_CTL_EV_FMT_PROFILE_STATE), -EINVAL);
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 0, &f, MRC_CTL_EV_FMT_PROFILE_STATE), -EINVAL);
  f.state = MRC_CTL_PROFILE_OFFLINE;
  f.mode = MRC_CTL_EV_FMT_SRV6;  // the software device has no SRv6 framing
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE),
            -EINVAL);
  mrc_ctl_ev_field wide[2] = {{16, 0, 0, 0, 0}, {16, 0, 0, 0, 0}};
  f.mode = MRC_CTL_EV_FMT_UDP;
  f.fields_op = {MRC_CTL_MODIFY_FIELDS, wide, 2};
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, kFmtConfigure),
            -E2BIG);
  udp_format(ctx);
  mrc_ctl_ev_fmt_profile_attr q{};
  q.fields_op = {MRC_CTL_QUERY_FIELDS, nullptr, 0};
  EXPECT_EQ(mrc_ctl_query_ev_fmt_profile(ctx, 1, &q, MRC_CTL_EV_FMT_PROFILE_OP | MRC_CTL_EV_FMT_PROFILE_STATE), -E2BIG);
  EXPECT_EQ(q.fields_op.count, 1u);
  mrc_ctl_ev_field got{};
  q.fields_op = {MRC_CTL_QUERY_FIELDS, &got, 1};
  ASSERT_EQ(mrc_ctl_query_ev_fmt_profile(ctx, 1, &q,
                                         MRC_CTL_EV_FMT_PROFILE_OP | MRC_CTL_EV_FMT_PROFILE_STATE |
                                             MRC_CTL_EV_FMT_PROFILE_MODE),
            0);
  EXPECT_EQ(got.width, 16u);
  EXPECT_EQ(q.state, MRC_CTL_PROFILE_ONLINE);
  EXPECT_EQ(q.mode, uint32_t{MRC_CTL_EV_FMT_UDP});
  f.mode = MRC_CTL_EV_FMT_STEV;
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, MRC_CTL_EV_FMT_PROFILE_MODE), -EPERM);

  // EV profile: generated arrays are not offered (nor SRH bits); EXPLICIT
  // starts unpopulated.
  mrc_ctl_ev_profile_attr g{};
  g.state = MRC_CTL_PROFILE_OFFLINE;
  g.ev_mode = MRC_CTL_EV_MODE_SRV6_GENERATED;
  EXPECT_EQ(mrc_ctl_modify_ev_profile(ctx, 1, &g, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE), EINVAL);
  g.ev_mode = MRC_CTL_EV_MODE_GENERATED;
  EXPECT_EQ(mrc_ctl_modify_ev_profile(ctx, 1, &g, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE), EINVAL);
  g.ev_mode = MRC_CTL_EV_MODE_EXPLICIT;
  EXPECT_EQ(mrc_ctl_modify_ev_profile(ctx, 1, &g, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_SRV6_SRH), EINVAL);
  EXPECT_EQ(exp_offline(ctx, 1, 9), E2BIG) << "more than the device's 8 EVs per profile";
  ASSERT_EQ(exp_offline(ctx, 1, 2), 0);
  mrc_ctl_ev_op_entry arr[4]{};
  mrc_ctl_ev_profile_attr qa{};
  qa.ev_op = {MRC_CTL_EV_OP_QUERY_EV_ARRAY, arr, 1};
  EXPECT_EQ(mrc_ctl_query_ev_profile(ctx, 1, &qa, MRC_CTL_EV_PROFILE_EV_OP), E2BIG);
  EXPECT_EQ(qa.ev_op.entry_count, 2u);
  qa.ev_op.entry_count = 4;
  ASSERT_EQ(mrc_ctl_query_ev_profile(ctx, 1, &qa, MRC_CTL_EV_PROFILE_EV_OP), 0);
  ASSERT_EQ(qa.ev_op.entry_count, 2u);
  uint32_t st;
  std::memcpy(&st, &arr[0].state, sizeof st);  // bit 31 is outside the C++ enum's range
  EXPECT_EQ(st, MRC_CTL_EV_UNKNOWN);
  EXPECT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_ONLINE), EINVAL) << "unpopulated entries";
  const mrc_ctl_ev none{};
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_REPLACE_EV, none, ev16(kEvBase, 1), MRC_CTL_EV_GOOD), 0);
  // 0x1234 has no socket on port 2: refused at ONLINE.
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_REPLACE_EV, none, ev16(0x1234, 2), MRC_CTL_EV_GOOD), 0);
  EXPECT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_ONLINE), EINVAL);
  // Port 2's first EV socket is plane 1's kEvBase + 4.
  EXPECT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_REPLACE_EV, ev16(0x9999, 2), ev16(kEvBase + 4, 2), MRC_CTL_EV_GOOD),
            ENOENT);
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_REPLACE_EV, ev16(0x1234, 2), ev16(kEvBase + 4, 2), MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(ev_state(ctx, 1, MRC_CTL_PROFILE_ONLINE), 0);
  f.state = MRC_CTL_PROFILE_OFFLINE;
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, MRC_CTL_EV_FMT_PROFILE_STATE), -EBUSY)
      << "EV profile 1 is ONLINE on it";
  EXPECT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_REPLACE_EV, ev16(kEvBase, 1), ev16(kEvBase + 1, 1), MRC_CTL_EV_GOOD),
            EPERM);
  mrc_ctl_ev_profile_attr qs{};
  ASSERT_EQ(mrc_ctl_query_ev_profile(ctx, 1, &qs, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_COUNT |
                                                     MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID),
            0);
  EXPECT_EQ(qs.state, MRC_CTL_PROFILE_ONLINE);
  EXPECT_EQ(qs.ev_count, 2u);
  EXPECT_EQ(qs.ev_mode, uint32_t{MRC_CTL_EV_MODE_EXPLICIT});
  EXPECT_EQ(qs.ev_fmt_profile_id, 1u);

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
  c.state = MRC_CTL_PROFILE_OFFLINE;
  c.algorithm = "reno";
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM), EINVAL);
  c.algorithm = "uet-1.0-nscc";
  ASSERT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM), 0);
  c.state = MRC_CTL_PROFILE_ONLINE;
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE), EINVAL) << "needs CONFIG";
  mrc_ctl_nscc_config n{};
  n.base_rtt_ns = 20000;
  n.min_cwnd_bytes = 4096;
  c.config = &n;
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_CONFIG), EINVAL);
  n.min_cwnd_bytes = 0;
  ASSERT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_CONFIG), 0);
  mrc_ctl_cc_profile_attr cq{};
  ASSERT_EQ(mrc_ctl_query_cc_profile(ctx, 3, &cq,
                                     MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM | MRC_CTL_CC_PROFILE_CONFIG),
            0);
  EXPECT_EQ(cq.state, MRC_CTL_PROFILE_ONLINE);
  EXPECT_STREQ(cq.algorithm, "uet-1.0-nscc");
  ASSERT_NE(cq.config, nullptr);
  EXPECT_EQ(static_cast<const mrc_ctl_nscc_config*>(cq.config)->base_rtt_ns, 20000u);
  EXPECT_EQ(mrc_ctl_modify_cc_profile(ctx, 3, &c, MRC_CTL_CC_PROFILE_CONFIG), EPERM);
  mrc_qp* qp2 = d.qp();
  ASSERT_NE(qp2, nullptr);
  ASSERT_EQ(qp_init(qp2, 0, 3), 0);
  c.state = MRC_CTL_PROFILE_OFFLINE;
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
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_REPLACE_EV, mrc_ctl_ev{}, a, MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_REPLACE_EV, mrc_ctl_ev{}, b, MRC_CTL_EV_DENIED), 0);
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
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_MODIFY_EV_STATE, b, mrc_ctl_ev{}, MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_MODIFY_EV_STATE, a, mrc_ctl_ev{}, MRC_CTL_EV_DENIED), 0);
  mrc_cq* got = nullptr;
  void* got_ctx = nullptr;
  ASSERT_EQ(mrc_get_cq_event(ch, &got, &got_ctx), 0);
  EXPECT_EQ(got, ecq);
  EXPECT_EQ(got_ctx, &tag);
  mrc_ack_cq_events(ecq, 1);
  mrc_ctl_ev_event ev[4]{};
  ASSERT_EQ(mrc_ctl_poll_ev_event(ecq, 4, ev), 1);
  EXPECT_EQ(ev[0].profile_id, 1u);
  EXPECT_EQ(ev[0].state, MRC_CTL_EV_GOOD);
  EXPECT_EQ(0, std::memcmp(ev[0].ev.val, b.val, sizeof b.val));
  EXPECT_EQ(ev[0].ev.port, 1);
  EXPECT_EQ(ev[0].drop_count, 0u);
  // Four changes into a CQ of two: two lost, reported on the next event.
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_MODIFY_EV_STATE, i % 2 ? a : b, mrc_ctl_ev{},
                    i < 2 ? MRC_CTL_EV_DENIED : MRC_CTL_EV_GOOD),
              0);
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_MODIFY_EV_STATE, a, mrc_ctl_ev{}, MRC_CTL_EV_DENIED), 0);
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_MODIFY_EV_STATE, a, mrc_ctl_ev{}, MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_MODIFY_EV_STATE, a, mrc_ctl_ev{}, MRC_CTL_EV_DENIED), 0);
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_MODIFY_EV_STATE, a, mrc_ctl_ev{}, MRC_CTL_EV_GOOD), 0);
  ASSERT_EQ(mrc_ctl_poll_ev_event(ecq, 4, ev), 2);
  EXPECT_EQ(ev[0].drop_count, 0u);
  EXPECT_EQ(ev[1].drop_count, 0u);
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_MODIFY_EV_STATE, a, mrc_ctl_ev{}, MRC_CTL_EV_DENIED), 0);
  ASSERT_EQ(ev_op(ctx, 1, MRC_CTL_EV_OP_MODIFY_EV_STATE, a, mrc_ctl_ev{}, MRC_CTL_EV_GOOD), 0);
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
