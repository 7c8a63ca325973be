// SPDX-License-Identifier: BSD-2-Clause
// The controller's SRv6 profiles on a software device in SRv6 mode
// (MRC_SOFT_EV_SRV6), end to end through mrc.h / mrc_ctl.h and the
// kernel's SRv6 data plane (tests/unit/runtime/srv6_netns.hpp): an SRv6
// format profile (locator + two uSIDs) and a GEN EV profile whose one
// varying field picks the first uSID. The device generates the array, the
// controller expands each EV into its carrier once, the QP sprays over
// them, and the receiving namespace (which drops plain MRC datagrams)
// shows both carriers carried the data. An SRv6 probe names its whole
// path. The namespace tests need root, ip and nft, and skip without; the
// capability checks run anywhere (loopback 127.0.62.x).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "../unit/runtime/srv6_netns.hpp"
#include "api/objects.hpp"
#include "mrc.h"
#include "mrc_ctl.h"
#include "openmrc/mrc_soft.h"
#include "soft_node.hpp"

namespace {

/// A format profile configured in one call: state, mode and fields.
constexpr int kFmtConfigure = MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE | MRC_CTL_EV_FMT_PROFILE_OP;

using mrc::test_support::qpn_of;

using Clock = std::chrono::steady_clock;
using mrc::test_support::in_netns;
using mrc::test_support::Srv6Net;
constexpr size_t kBytes = 1 << 20;

// One device on one plane (`mode` says where its EVs go). Two tests that
// open on the same address run side by side under `ctest -j`, so each passes
// its own `ev_base`, below the kernel's ephemeral range (32768-60999) so that
// no other test's ephemeral socket can take it either.
struct Node : mrc::test_support::SoftNode {
  mrc_qp* qp = nullptr;
  void open(const char* plane, mrc_soft_ev_mode mode, uint16_t udp_port = 0, uint16_t ev_base = 0) {
    const char* planes[] = {plane};
    mrc_soft_device_attr a{};
    a.plane_addrs = planes;
    a.num_planes = 1;
    a.udp_port = udp_port;
    a.ev_port_base = ev_base;
    a.ev_mode = mode;
    a.evs_per_plane = 4;
    a.seed = 9;
    open_device(a);
  }
  void resources() {
    add_resources(kBytes, 256);
    qp = add_qp(16);
  }
  ibv_gid gid() const { return SoftNode::gid(0); }
};

using mrc::test_support::to_rts;

// Format profile 1: SRV6_GENERATED, a 32-bit prefix (the locator) and two
// uSIDs (16 + 16); the rest of the address is zero (end of carrier).
int make_srv6_format(mrc_context* ctx) {
  mrc_ctl_ev_fmt_field fields[2] = {{16, 1, 2}, {16, 0xd0, 0xd0}};
  mrc_ctl_ev_fmt_profile_attr f{};
  f.profile_state = MRC_CTL_PROFILE_OFFLINE;
  f.ev_fmt_mode = MRC_CTL_EV_FMT_MODE_SRV6_GENERATED;
  f.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_MODIFY_FIELDS;
  f.ev_fmt_op.modify_fmt_fields = {fields, 2, 32};
  if (int rc = mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, kFmtConfigure)) return rc;
  f = mrc_ctl_ev_fmt_profile_attr{};
  f.profile_state = MRC_CTL_PROFILE_ONLINE;
  return mrc_ctl_modify_ev_fmt_profile(ctx, 1, &f, MRC_CTL_EV_FMT_PROFILE_STATE);
}

// EV profile 1, SRV6_GENERATED over format 1: locator fc00:0000 (the
// prefix, from srv6_comp), first uSID 0x0001 or 0x0002, second uSID 0x00d0
// (the decapsulating one). Two EVs, so both paths.
int make_gen_profile(mrc_context* ctx, mrc_ctl_profile_state to) {
  mrc_ctl_ev_profile_attr p{};
  p.profile_state = to;
  p.ev_mode = MRC_CTL_EV_MODE_SRV6_GENERATED;
  p.ev_fmt_profile_id = 1;
  p.ev_count = 2;
  p.ev_min_active = 1;
  p.ev_event_mask = MRC_CTL_EV_GOOD | MRC_CTL_EV_ASSUMED_BAD;
  p.srv6_comp[0] = 0xfc;
  return mrc_ctl_modify_ev_profile(ctx, 1, &p,
                                   MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID |
                                       MRC_CTL_EV_PROFILE_COUNT | MRC_CTL_EV_PROFILE_MIN_ACTIVE |
                                       MRC_CTL_EV_PROFILE_EVENT_MASK | MRC_CTL_EV_PROFILE_SRV6_COMP);
}

TEST(CtlSrv6, UdpModeDevicesRefuseSrv6FormatsAndGeneratedArrays) {
  Node n;
  n.open("127.0.62.1", MRC_SOFT_EV_UDP, 24801, 25830);
  mrc_ctl_device_attr d{};
  int supported = 0;
  ASSERT_EQ(mrc_ctl_query_device_ex(n.dev, nullptr, &d, &supported), 0);
  EXPECT_EQ(d.ev.ev_fmt_mode_mask & (1u << MRC_CTL_EV_FMT_MODE_SRV6_GENERATED), 0u);
  EXPECT_EQ(d.ev.ev_mode_mask & (1u << MRC_CTL_EV_MODE_SRV6_GENERATED), 0u);
  EXPECT_EQ(d.opt_attr & MRC_CTL_OPT_CAP_SRV6_GENERATED, 0u);
  EXPECT_NE(make_srv6_format(n.ctx), 0);
  n.close();
}

// The generated array as OCP's API shows it (no network needed: nothing is
// sent): addresses built from the format's prefix and fields.
TEST(CtlSrv6, AGeneratedArrayHoldsTheFormatsAddresses) {
  Node n;
  n.open("::1", MRC_SOFT_EV_SRV6, 24803, 25810);
  if (!n.dev) GTEST_SKIP() << "no SRv6 device here (its raw socket needs CAP_NET_RAW)";
  ASSERT_EQ(make_srv6_format(n.ctx), 0);
  mrc_ctl_ev_fmt_profile_attr f{};
  f.profile_state = MRC_CTL_PROFILE_OFFLINE;
  EXPECT_EQ(make_gen_profile(n.ctx, MRC_CTL_PROFILE_OFFLINE), 0);
  mrc_ctl_ev_profile_attr srh{};
  srh.srv6_use_srh = 1;
  EXPECT_EQ(mrc_ctl_modify_ev_profile(n.ctx, 1, &srh, MRC_CTL_EV_PROFILE_SRV6_SRH), EINVAL) << "no SRH segment";
  mrc_ctl_ev_profile_attr q{};
  ASSERT_EQ(mrc_ctl_query_ev_profile(n.ctx, 1, &q,
                                     MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID | MRC_CTL_EV_PROFILE_SRV6_COMP |
                                         MRC_CTL_EV_PROFILE_COUNT),
            0);
  EXPECT_EQ(q.ev_mode, MRC_CTL_EV_MODE_SRV6_GENERATED);
  EXPECT_EQ(q.ev_fmt_profile_id, 1u);
  EXPECT_EQ(q.srv6_comp[0], 0xfc);
  EXPECT_EQ(q.ev_count, 2u);
  mrc_ctl_ev evs[2]{};
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_ARRAY;
  q.ev_op.query_ev_array.ev = evs;
  ASSERT_EQ(mrc_ctl_query_ev_profile(n.ctx, 1, &q, MRC_CTL_EV_PROFILE_EV_OP), 0);
  for (const mrc_ctl_ev& e : evs) {
    const uint8_t head[8] = {0xfc, 0, 0, 0, 0, e.val[5], 0, 0xd0};
    EXPECT_EQ(0, std::memcmp(e.val, head, 8)) << "fc00:0:" << int(e.val[5]) << ":d0:: expected";
    EXPECT_TRUE(e.val[5] == 1 || e.val[5] == 2) << int(e.val[5]);
    EXPECT_EQ(e.port, 1);
  }
  EXPECT_NE(evs[0].val[5], evs[1].val[5]);
  // An address names its EV: a state change reaches it; one not in the
  // array is ENOENT.
  q.ev_op.op = MRC_CTL_EV_OP_MODIFY_EV_STATE;
  q.ev_op.modify_ev_state.ev = evs[1];
  q.ev_op.modify_ev_state.state = MRC_CTL_EV_DENIED;
  ASSERT_EQ(mrc_ctl_modify_ev_profile(n.ctx, 1, &q, MRC_CTL_EV_PROFILE_EV_OP), 0);
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_STATE;
  q.ev_op.query_ev_state.ev = evs[1];
  ASSERT_EQ(mrc_ctl_query_ev_profile(n.ctx, 1, &q, MRC_CTL_EV_PROFILE_EV_OP), 0);
  EXPECT_EQ(q.ev_op.query_ev_state.state, MRC_CTL_EV_DENIED);
  q.ev_op.query_ev_state.ev = evs[0];
  ASSERT_EQ(mrc_ctl_query_ev_profile(n.ctx, 1, &q, MRC_CTL_EV_PROFILE_EV_OP), 0);
  EXPECT_EQ(q.ev_op.query_ev_state.state, MRC_CTL_EV_GOOD);
  q.ev_op.query_ev_state.ev.val[5] = 3;
  EXPECT_EQ(mrc_ctl_query_ev_profile(n.ctx, 1, &q, MRC_CTL_EV_PROFILE_EV_OP), ENOENT);
  // A generated array is the device's: REPLACE_EV is refused.
  q.ev_op.op = MRC_CTL_EV_OP_REPLACE_EV;
  q.ev_op.replace_ev = {evs[0], evs[1], 0};
  EXPECT_EQ(mrc_ctl_modify_ev_profile(n.ctx, 1, &q, MRC_CTL_EV_PROFILE_EV_OP), EINVAL);
  // The format's fields bound what the prefix and fields may hold.
  mrc_ctl_ev_fmt_field wide[2] = {{64, 0, 1}, {64, 0, 1}};
  f.ev_fmt_mode = MRC_CTL_EV_FMT_MODE_SRV6_GENERATED;
  f.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_MODIFY_FIELDS;
  f.ev_fmt_op.modify_fmt_fields = {wide, 2, 16};
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(n.ctx, 2, &f, kFmtConfigure), -E2BIG) << "144 bits in a 128-bit address";
  f.ev_fmt_op.modify_fmt_fields = {wide, 2, 0};
  EXPECT_EQ(mrc_ctl_modify_ev_fmt_profile(n.ctx, 2, &f, kFmtConfigure), 0) << "128 bits fit";
  n.close();
}

// SRV6_COMP_EXPLICIT: the controller names each EV by its compressed
// value, which srv6_comp's template and mask expand into the carrier.
TEST(CtlSrv6, ACompressedExplicitProfileExpandsItsEvsThroughTheTemplate) {
  Node n;
  n.open("::1", MRC_SOFT_EV_SRV6, 24804, 25820);
  if (!n.dev) GTEST_SKIP() << "no SRv6 device here (its raw socket needs CAP_NET_RAW)";
  mrc_ctl_attr d{};
  ASSERT_EQ(mrc_ctl_query_device(n.dev, &d), 0);
  EXPECT_NE(d.opt_attr & MRC_CTL_OPT_CAP_SRV6_COMP_EXPLICIT, 0u);
  ASSERT_EQ(make_srv6_format(n.ctx), 0);
  // Template fc00:0:0:d0::, mask 0x0003 on the first uSID: two compact bits.
  mrc_ctl_ev_profile_attr p{};
  p.profile_state = MRC_CTL_PROFILE_OFFLINE;
  p.ev_mode = MRC_CTL_EV_MODE_SRV6_COMP_EXPLICIT;
  p.ev_fmt_profile_id = 1;
  p.ev_count = 2;
  p.srv6_comp[0] = 0xfc;
  p.srv6_comp[7] = 0xd0;
  p.srv6_comp[16 + 5] = 0x03;
  constexpr int kConfigure = MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID |
                             MRC_CTL_EV_PROFILE_COUNT | MRC_CTL_EV_PROFILE_SRV6_COMP;
  ASSERT_EQ(mrc_ctl_modify_ev_profile(n.ctx, 1, &p, kConfigure), 0);
  auto value = [](uint32_t v) {
    mrc_ctl_ev e{};
    std::memcpy(e.val, &v, sizeof v);
    e.port = 1;
    return e;
  };
  mrc_ctl_ev_profile_attr r{};
  r.ev_op.op = MRC_CTL_EV_OP_REPLACE_EV;
  r.ev_op.replace_ev = {mrc_ctl_ev{}, value(4), 0};
  EXPECT_EQ(mrc_ctl_modify_ev_profile(n.ctx, 1, &r, MRC_CTL_EV_PROFILE_EV_OP), EINVAL) << "3 bits in a 2-bit EV";
  for (uint32_t v : {1u, 2u}) {
    r.ev_op.replace_ev = {mrc_ctl_ev{}, value(v), 0};
    ASSERT_EQ(mrc_ctl_modify_ev_profile(n.ctx, 1, &r, MRC_CTL_EV_PROFILE_EV_OP), 0) << v;
  }
  mrc_ctl_ev evs[2]{};
  mrc_ctl_ev_profile_attr q{};
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_ARRAY;
  q.ev_op.query_ev_array.ev = evs;
  ASSERT_EQ(mrc_ctl_query_ev_profile(n.ctx, 1, &q, MRC_CTL_EV_PROFILE_EV_OP), 0);
  EXPECT_EQ(0, std::memcmp(evs[0].val, value(1).val, sizeof evs[0].val));
  EXPECT_EQ(0, std::memcmp(evs[1].val, value(2).val, sizeof evs[1].val));
  // The carriers QPs use: fc00:0:1:d0:: and fc00:0:2:d0::.
  mrc_ctl_ev_profile_attr on{};
  on.profile_state = MRC_CTL_PROFILE_ONLINE;
  on.ev_min_active = 1;
  on.ev_event_mask = MRC_CTL_EV_GOOD;
  ASSERT_EQ(mrc_ctl_modify_ev_profile(n.ctx, 1, &on,
                                      MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MIN_ACTIVE |
                                          MRC_CTL_EV_PROFILE_EVENT_MASK),
            0);
  const auto wire = n.ctx->dev->ctl->wire_evs(1);
  ASSERT_EQ(wire.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const uint8_t want[16] = {0xfc, 0, 0, 0, 0, static_cast<uint8_t>(i + 1), 0, 0xd0};
    EXPECT_EQ(0, std::memcmp(wire[i].bytes.data(), want, 16)) << i;
  }
  n.close();
}

TEST(CtlSrv6, GeneratedSrv6ProfileSpraysOverEveryCarrierAndProbesNameTheirPath) {
  Srv6Net net({0x0001, 0x0002});
  if (!net.skip().empty()) GTEST_SKIP() << net.skip();
  Node a, b;
  ASSERT_TRUE(in_netns(net.a(), [&] { a.open("fd00:5::1", MRC_SOFT_EV_SRV6); }));
  ASSERT_TRUE(in_netns(net.b(), [&] { b.open("fd00:5::2", MRC_SOFT_EV_UDP); }));
  ASSERT_TRUE(a.dev && b.dev);

  mrc_ctl_device_attr d{};
  int supported = 0;
  ASSERT_EQ(mrc_ctl_query_device_ex(a.dev, nullptr, &d, &supported), 0);
  EXPECT_NE(d.ev.ev_fmt_mode_mask & (1u << MRC_CTL_EV_FMT_MODE_SRV6_GENERATED), 0u);
  EXPECT_NE(d.ev.ev_mode_mask & (1u << MRC_CTL_EV_MODE_SRV6_GENERATED), 0u);
  EXPECT_NE(d.opt_attr & MRC_CTL_OPT_CAP_SRV6_GENERATED, 0u);
  ASSERT_EQ(make_srv6_format(a.ctx), 0);
  ASSERT_EQ(make_gen_profile(a.ctx, MRC_CTL_PROFILE_OFFLINE), 0);

  // The generated array: the two addresses fc00:0:1:d0:: and fc00:0:2:d0::.
  mrc_ctl_ev evs[2]{};
  mrc_ctl_ev_profile_attr q{};
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_ARRAY;
  q.ev_op.query_ev_array.ev = evs;
  ASSERT_EQ(mrc_ctl_query_ev_profile(a.ctx, 1, &q, MRC_CTL_EV_PROFILE_EV_OP), 0);
  for (const mrc_ctl_ev& e : evs) {
    const uint8_t head[8] = {0xfc, 0, 0, 0, 0, e.val[5], 0, 0xd0};
    EXPECT_EQ(0, std::memcmp(e.val, head, 8));
    EXPECT_TRUE(e.val[5] == 1 || e.val[5] == 2) << int(e.val[5]);
    EXPECT_EQ(e.port, 1);
  }
  EXPECT_NE(evs[0].val[5], evs[1].val[5]);
  // An address names its EV: its state reads GOOD; one not in the array is ENOENT.
  mrc_ctl_ev_profile_attr qs{};
  qs.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_STATE;
  qs.ev_op.query_ev_state.ev = evs[1];
  ASSERT_EQ(mrc_ctl_query_ev_profile(a.ctx, 1, &qs, MRC_CTL_EV_PROFILE_EV_OP), 0);
  EXPECT_EQ(qs.ev_op.query_ev_state.state, MRC_CTL_EV_GOOD);
  qs.ev_op.query_ev_state.ev.val[5] = 3;
  EXPECT_EQ(mrc_ctl_query_ev_profile(a.ctx, 1, &qs, MRC_CTL_EV_PROFILE_EV_OP), ENOENT);

  mrc_ctl_ev_profile_attr on{};
  on.profile_state = MRC_CTL_PROFILE_ONLINE;
  ASSERT_EQ(mrc_ctl_modify_ev_profile(a.ctx, 1, &on, MRC_CTL_EV_PROFILE_STATE), 0);

  ASSERT_TRUE(in_netns(net.a(), [&] { a.resources(); }));
  ASSERT_TRUE(in_netns(net.b(), [&] { b.resources(); }));
  const ibv_gid ga = a.gid(), gb = b.gid();
  ASSERT_EQ(mrc_soft_set_peer(a.dev, &gb, &gb, 1), 0);
  ASSERT_EQ(mrc_soft_set_peer(b.dev, &ga, &ga, 1), 0);
  to_rts(a.qp, gb, qpn_of(b.qp), /*ev_profile=*/1);
  to_rts(b.qp, ga, qpn_of(a.qp));

  for (size_t i = 0; i < kBytes; ++i) a.mem[i] = static_cast<uint8_t>(i * 7 + 3);
  ibv_sge sge{reinterpret_cast<uint64_t>(a.mem.data()), static_cast<uint32_t>(kBytes), a.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(b.mem.data());
  wr.wr.rdma.rkey = b.mr->rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(mrc_post_send(a.qp, &wr, &bad), 0);
  ibv_wc wc{};
  int k = 0;
  const auto end = Clock::now() + std::chrono::seconds(30);
  while (k == 0 && Clock::now() < end) k = mrc_poll_cq(a.cq, 1, &wc);
  ASSERT_EQ(k, 1) << "the WRITE did not complete";
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(a.mem.data(), b.mem.data(), kBytes));

  // Every packet (256 of 4 KiB at least) came encapsulated, over both paths.
  auto c = net.counters();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_GT(c[0], 0u) << "carrier fc00:0:1:d0:: unused";
  EXPECT_GT(c[1], 0u) << "carrier fc00:0:2:d0:: unused";
  EXPECT_GE(c[0] + c[1], 256u);

  // An SRv6 probe names its whole path: one goes out through uSID 0x0002.
  mrc_ctl_ev_probe_req r{};
  r.probe_id = 41;
  r.dgid = gb;
  r.srv6.srv6_enable = 1;
  const auto carrier = mrc::test_support::srv6_test_carrier(0x0002);
  std::copy(carrier.begin(), carrier.end(), r.req_ev.val);
  r.req_ev.port = 1;
  mrc_ctl_ev_probe_rsp rsp{};
  int n_rsp = 0;
  const uint64_t before = c[1];
  ASSERT_EQ(mrc_ctl_probe_ev(a.ctx, 0, &r, 1, 2'000'000'000u, &rsp, &n_rsp), 0);
  ASSERT_EQ(n_rsp, 1);
  EXPECT_EQ(rsp.probe_id, 41);
  EXPECT_GT(rsp.rtt, 0u);
  c = net.counters();
  EXPECT_EQ(c[1], before + 1) << "the probe did not take its carrier";
  EXPECT_EQ(c[2], 0u) << "plain MRC datagrams reached the receiver";
  // An SRv6 probe on a non-SRv6 device is refused.
  r.dgid = ga;
  EXPECT_EQ(mrc_ctl_probe_ev(b.ctx, 0, &r, 1, 1000, &rsp, &n_rsp), EINVAL);

  a.close();
  b.close();
}

}  // namespace
