// SPDX-License-Identifier: BSD-2-Clause
// The controller's port administration and endpoint operations (mrc_ctl.h,
// reference 6.3.2 and 6.3.7) over real software devices on loopback: a
// disabled port reads DOWN, carries nothing from either side (the peer is
// told by a port-status update, on every engine), and comes back when
// enabled. Which plane carried a QP's packets is read from the QP's EVs
// (the core's per-EV packet counts). Loopback addresses 127.0.6.x (other
// test programs use other ranges).
#include <gtest/gtest.h>

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "api/objects.hpp"
#include "mrc.h"
#include "mrc_ctl.h"
#include "openmrc/mrc_soft.h"
#include "soft_node.hpp"

namespace {

using mrc::test_support::qpn_of;

using Clock = std::chrono::steady_clock;
constexpr uint16_t kUdpPort = 24796;
constexpr uint16_t kEvBase = 31200;
constexpr uint32_t kEvsPerPlane = 4;
constexpr size_t kBytes = 1 << 20;

/// One device with a context, a PD, a CQ, a registered buffer and QPs.
struct Node : mrc::test_support::SoftNode {
  void open(std::vector<const char*> planes, uint32_t engines = 1) {
    mrc_soft_device_attr a{};
    a.plane_addrs = planes.data();
    a.num_planes = static_cast<int>(planes.size());
    a.udp_port = kUdpPort;
    a.ev_port_base = kEvBase;
    a.evs_per_plane = kEvsPerPlane;
    a.num_engines = engines;
    a.seed = 6;
    SoftNode::open(a, 2 * kBytes, 1024);
  }
  mrc::rt::Device& rt() const { return *mrc::api::soft_device(dev)->rt; }
  /// Packets QP `q` has sent on EVs of plane `plane` (0-based).
  uint64_t sent_on(const mrc_qp* q, uint32_t plane) const {
    std::vector<mrc::core::EvInfo> evs(64);
    const size_t n = rt().query_evs(q->qpn, evs);
    uint64_t s = 0;
    for (size_t i = 0; i < n && i < evs.size(); ++i)
      if (evs[i].port == plane) s += evs[i].packets_sent;
    return s;
  }
};

void declare_peers(Node& a, Node& b, int planes) {
  std::vector<ibv_gid> ga, gb;
  for (int p = 0; p < planes; ++p) {
    ga.push_back(a.gid(p));
    gb.push_back(b.gid(p));
  }
  ASSERT_EQ(mrc_soft_set_peer(a.dev, &gb[0], gb.data(), planes), 0);
  ASSERT_EQ(mrc_soft_set_peer(b.dev, &ga[0], ga.data(), planes), 0);
}

using mrc::test_support::to_rts;

void connect(Node& a, mrc_qp* qa, Node& b, mrc_qp* qb) {
  to_rts(qa, b.gid(0), qpn_of(qb));
  to_rts(qb, a.gid(0), qpn_of(qa));
}

/// WRITEs `len` bytes at `off` from one node's buffer to the same place in
/// the other's and waits for the completion.
void write_and_wait(Node& from, mrc_qp* q, Node& to, size_t off, size_t len, uint8_t fill) {
  std::memset(from.mem.data() + off, fill, len);
  ibv_sge sge{reinterpret_cast<uint64_t>(from.mem.data() + off), static_cast<uint32_t>(len), from.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = fill;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(to.mem.data() + off);
  wr.wr.rdma.rkey = to.mr->rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(mrc_post_send(q, &wr, &bad), 0);
  ibv_wc wc{};
  const auto end = Clock::now() + std::chrono::seconds(20);
  int k = 0;
  while (k == 0 && Clock::now() < end) k = mrc_poll_cq(from.cq, 1, &wc);
  ASSERT_EQ(k, 1) << "no completion";
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, fill);
  for (size_t i = 0; i < len; i += 4093) ASSERT_EQ(to.mem[off + i], fill) << "byte " << i;
}

/// Waits until `pred` holds (up to 5 s).
template <class F>
bool eventually(F pred) {
  const auto end = Clock::now() + std::chrono::seconds(5);
  while (!pred()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

mrc_ctl_port_attr admin(mrc_ctl_port_admin_state s) {
  mrc_ctl_port_attr a{};
  a.admin_state = s;
  return a;
}

/// The async events waiting on a context, as (port, event type).
std::vector<std::pair<int, ibv_event_type>> port_events(mrc_context* ctx) {
  std::vector<std::pair<int, ibv_event_type>> out;
  pollfd p{mrc_get_async_fd(ctx), POLLIN, 0};
  while (::poll(&p, 1, 0) == 1) {
    mrc_async_event ev{};
    if (mrc_get_async_event(ctx, &ev) != 0) break;
    out.emplace_back(ev.element.port_num, ev.event_type);
    mrc_ack_async_event(&ev);
  }
  return out;
}

TEST(CtlPorts, ArgumentsAreChecked) {
  Node a;
  a.open({"127.0.6.1", "127.0.6.2"});
  mrc_ctl_port_attr pa = admin(MRC_CTL_PORT_ADMIN_DISABLED);
  EXPECT_EQ(mrc_ctl_modify_port(nullptr, 1, &pa, MRC_CTL_PORT_ADMIN_STATE), EINVAL);
  EXPECT_EQ(mrc_ctl_modify_port(a.ctx, 0, &pa, MRC_CTL_PORT_ADMIN_STATE), EINVAL) << "ports are 1-based";
  EXPECT_EQ(mrc_ctl_modify_port(a.ctx, 3, &pa, MRC_CTL_PORT_ADMIN_STATE), EINVAL);
  EXPECT_EQ(mrc_ctl_modify_port(a.ctx, 1, nullptr, MRC_CTL_PORT_ADMIN_STATE), EINVAL);
  EXPECT_EQ(mrc_ctl_modify_port(a.ctx, 1, &pa, 1u << 1), EINVAL) << "unknown mask bit";
  const uint32_t bad_state = 7;  // what a C caller can pass
  std::memcpy(&pa.admin_state, &bad_state, sizeof bad_state);
  EXPECT_EQ(mrc_ctl_modify_port(a.ctx, 1, &pa, MRC_CTL_PORT_ADMIN_STATE), EINVAL);
  pa = admin(MRC_CTL_PORT_ADMIN_DISABLED);
  EXPECT_EQ(mrc_ctl_modify_port(a.ctx, 1, &pa, 0), 0) << "an empty mask changes nothing";
  mrc_ctl_port_attr q{};
  ASSERT_EQ(mrc_ctl_query_port(a.ctx, 1, &q), 0);
  EXPECT_EQ(q.admin_state, MRC_CTL_PORT_ADMIN_ENABLED);
  EXPECT_EQ(q.state, IBV_PORT_ACTIVE);

  ASSERT_EQ(mrc_ctl_modify_port(a.ctx, 2, &pa, MRC_CTL_PORT_ADMIN_STATE), 0);
  ASSERT_EQ(mrc_ctl_query_port(a.ctx, 2, &q), 0);
  EXPECT_EQ(q.admin_state, MRC_CTL_PORT_ADMIN_DISABLED);
  EXPECT_EQ(q.state, IBV_PORT_DOWN);
  ASSERT_EQ(mrc_ctl_query_port(a.ctx, 1, &q), 0);
  EXPECT_EQ(q.state, IBV_PORT_ACTIVE) << "only the named port goes down";
  // The applications hear it: one event per port, port 2 in error.
  std::vector<std::pair<int, ibv_event_type>> evs;
  ASSERT_TRUE(eventually([&] {
    for (auto e : port_events(a.ctx)) evs.push_back(e);
    return evs.size() >= 2;
  }));
  EXPECT_EQ(evs, (std::vector<std::pair<int, ibv_event_type>>{{1, IBV_EVENT_PORT_ACTIVE}, {2, IBV_EVENT_PORT_ERR}}));
  EXPECT_EQ(mrc_ctl_modify_port(a.ctx, 2, &pa, MRC_CTL_PORT_ADMIN_STATE), 0) << "again: nothing changes";
  pa = admin(MRC_CTL_PORT_ADMIN_ENABLED);
  ASSERT_EQ(mrc_ctl_modify_port(a.ctx, 2, &pa, MRC_CTL_PORT_ADMIN_STATE), 0);
  ASSERT_EQ(mrc_ctl_query_port(a.ctx, 2, &q), 0);
  EXPECT_EQ(q.admin_state, MRC_CTL_PORT_ADMIN_ENABLED);
  EXPECT_EQ(q.state, IBV_PORT_ACTIVE);
  a.close();
}

// A disables its port 2: A stops sending on plane 1 at once, B hears the
// port-status update and stops sending into it too (data and
// acknowledgements), transfers both ways still complete on plane 0; A
// enables it again and both sides use it again.
TEST(CtlPorts, ADisabledPortCarriesNothingFromEitherSideUntilEnabled) {
  Node a, b;
  a.open({"127.0.6.3", "127.0.6.4"});
  b.open({"127.0.6.5", "127.0.6.6"});
  declare_peers(a, b, 2);
  mrc_qp* qa = a.add_qp();
  mrc_qp* qb = b.add_qp();
  connect(a, qa, b, qb);
  write_and_wait(a, qa, b, 0, kBytes, 1);
  write_and_wait(b, qb, a, kBytes, kBytes, 2);
  ASSERT_GT(a.sent_on(qa, 1), 0u) << "both planes in use before";
  ASSERT_GT(b.sent_on(qb, 1), 0u);

  const uint64_t heard = b.rt().stats().core.ep_requests;
  mrc_ctl_port_attr pa = admin(MRC_CTL_PORT_ADMIN_DISABLED);
  ASSERT_EQ(mrc_ctl_modify_port(a.ctx, 2, &pa, MRC_CTL_PORT_ADMIN_STATE), 0);
  ASSERT_TRUE(eventually([&] { return b.rt().stats().core.ep_requests > heard; })) << "B was told";
  EXPECT_EQ(b.rt().stats().core.rx_ep_refused, 0u);
  // Packets B had already put on the wire may still arrive; after a quiet
  // moment nothing more does.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t a1 = a.sent_on(qa, 1), b1 = b.sent_on(qb, 1);
  const uint64_t a0 = a.sent_on(qa, 0), b0 = b.sent_on(qb, 0);
  const uint64_t dropped = a.rt().stats().rx_port_down;
  write_and_wait(a, qa, b, 0, kBytes, 3);
  write_and_wait(b, qb, a, kBytes, kBytes, 4);
  EXPECT_EQ(a.sent_on(qa, 1), a1) << "A sent on its disabled port";
  EXPECT_EQ(b.sent_on(qb, 1), b1) << "B kept sending into A's disabled plane";
  EXPECT_GT(a.sent_on(qa, 0), a0);
  EXPECT_GT(b.sent_on(qb, 0), b0);
  EXPECT_EQ(a.rt().stats().rx_port_down, dropped);

  const uint64_t heard2 = b.rt().stats().core.ep_requests;
  pa = admin(MRC_CTL_PORT_ADMIN_ENABLED);
  ASSERT_EQ(mrc_ctl_modify_port(a.ctx, 2, &pa, MRC_CTL_PORT_ADMIN_STATE), 0);
  ASSERT_TRUE(eventually([&] { return b.rt().stats().core.ep_requests > heard2; }));
  write_and_wait(a, qa, b, 0, kBytes, 5);
  write_and_wait(b, qb, a, kBytes, kBytes, 6);
  EXPECT_GT(a.sent_on(qa, 1), a1) << "A uses the port again";
  EXPECT_GT(b.sent_on(qb, 1), b1) << "B uses the plane again";
  a.close();
  b.close();
}

// B runs two engines with a QP on each; QP 2 traffic (the port-status
// update) reaches only one of them, and both QPs must stop sending into
// the plane A disabled.
TEST(CtlPorts, EveryEngineOfAPeerLearnsThePortStatus) {
  Node a, b;
  a.open({"127.0.6.7", "127.0.6.8"});
  b.open({"127.0.6.9", "127.0.6.10"}, 2);
  declare_peers(a, b, 2);
  mrc_qp* qa[2] = {a.add_qp(), a.add_qp()};
  mrc_qp* qb[2] = {b.add_qp(), b.add_qp()};
  ASSERT_NE(qpn_of(qb[0]) & 1u, qpn_of(qb[1]) & 1u) << "one QP per engine";
  for (int i = 0; i < 2; ++i) connect(a, qa[i], b, qb[i]);
  for (int i = 0; i < 2; ++i) write_and_wait(b, qb[i], a, static_cast<size_t>(i) * kBytes, kBytes, 1);

  const uint64_t heard = b.rt().stats().core.ep_requests;
  mrc_ctl_port_attr pa = admin(MRC_CTL_PORT_ADMIN_DISABLED);
  ASSERT_EQ(mrc_ctl_modify_port(a.ctx, 2, &pa, MRC_CTL_PORT_ADMIN_STATE), 0);
  ASSERT_TRUE(eventually([&] { return b.rt().stats().core.ep_requests > heard; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  uint64_t before[2];
  for (int i = 0; i < 2; ++i) before[i] = b.sent_on(qb[i], 1);
  for (int i = 0; i < 2; ++i) {
    write_and_wait(b, qb[i], a, static_cast<size_t>(i) * kBytes, kBytes, static_cast<uint8_t>(2 + i));
    EXPECT_EQ(b.sent_on(qb[i], 1), before[i]) << "B's QP on engine " << (qpn_of(qb[i]) & 1u)
                                               << " kept sending into A's disabled plane";
  }
  a.close();
  b.close();
}

}  // namespace

// ------------------------------------------------------------- endpoint operations

namespace ep {

mrc_ctl_ev_probe_req request(uint16_t id, const Node& from, const ibv_gid& dgid, uint8_t port, uint16_t ev) {
  mrc_ctl_ev_probe_req r{};
  r.probe_id = id;
  r.sgid = from.gid(port - 1);
  r.dgid = dgid;
  const uint32_t v = ev;  // the UDP source port, a host-order uint32_t
  std::memcpy(r.req_ev.val, &v, sizeof v);
  r.req_ev.port = port;
  return r;
}

mrc_ctl_port_status_req update(uint16_t id, const Node& from, const ibv_gid& dgid, uint8_t port, uint16_t ev,
                               uint32_t port_status) {
  const mrc_ctl_ev_probe_req p = request(id, from, dgid, port, ev);
  return mrc_ctl_port_status_req{id, p.sgid, p.dgid, p.req_ev, port_status};
}

/// EV i of port `port` (1-based): its source port.
uint16_t ev_of(uint8_t port, uint32_t i) { return static_cast<uint16_t>(kEvBase + (port - 1u) * kEvsPerPlane + i); }

}  // namespace ep

TEST(CtlEpOps, ProbesToALivePeerReturnPlausibleRtts) {
  Node a, b;
  a.open({"127.0.6.11", "127.0.6.12"});
  b.open({"127.0.6.13", "127.0.6.14"});
  declare_peers(a, b, 2);  // a device answers only sources it knows
  std::vector<mrc_ctl_ev_probe_req> reqs;
  for (uint8_t port = 1; port <= 2; ++port)
    for (uint32_t i = 0; i < kEvsPerPlane; ++i)
      reqs.push_back(ep::request(static_cast<uint16_t>(100 + reqs.size()), a, b.gid(0), port, ep::ev_of(port, i)));
  std::vector<mrc_ctl_ev_probe_rsp> rsps(reqs.size());
  int n = 0;
  const auto t0 = Clock::now();
  ASSERT_EQ(mrc_ctl_probe_ev(a.ctx, 0, reqs.data(), static_cast<int>(reqs.size()), 2'000'000'000u, rsps.data(), &n),
            0);
  const uint64_t wall_ns =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  ASSERT_EQ(n, static_cast<int>(reqs.size()));
  std::vector<bool> seen(reqs.size());
  for (int i = 0; i < n; ++i) {
    const size_t k = rsps[i].probe_id - 100u;
    ASSERT_LT(k, reqs.size());
    EXPECT_FALSE(seen[k]) << "answered twice";
    seen[k] = true;
    EXPECT_GT(rsps[i].rtt, 0u);
    EXPECT_LE(rsps[i].rtt, wall_ns) << "an RTT longer than the call itself";
    EXPECT_EQ(rsps[i].adj_svc_time, 0);
  }
  EXPECT_EQ(b.rt().stats().core.ep_requests, reqs.size());
  // The ids are free again: the same batch works twice.
  ASSERT_EQ(mrc_ctl_probe_ev(a.ctx, 0, reqs.data(), static_cast<int>(reqs.size()), 2'000'000'000u, rsps.data(), &n),
            0);
  EXPECT_EQ(n, static_cast<int>(reqs.size()));
  a.close();
  b.close();
}

TEST(CtlEpOps, ProbesNobodyAnswersTimeOutWithTheAnsweredOnesReported) {
  Node a, b;
  a.open({"127.0.6.15", "127.0.6.16"});
  b.open({"127.0.6.17", "127.0.6.18"});
  declare_peers(a, b, 2);
  // B's port 2 is down: whatever arrives on that plane is dropped.
  mrc_ctl_port_attr pa = admin(MRC_CTL_PORT_ADMIN_DISABLED);
  ASSERT_EQ(mrc_ctl_modify_port(b.ctx, 2, &pa, MRC_CTL_PORT_ADMIN_STATE), 0);
  mrc_ctl_ev_probe_req reqs[4] = {ep::request(1, a, b.gid(0), 1, ep::ev_of(1, 0)), ep::request(2, a, b.gid(0), 2, ep::ev_of(2, 0)),
                            ep::request(3, a, b.gid(0), 1, ep::ev_of(1, 3)), ep::request(4, a, b.gid(0), 2, ep::ev_of(2, 1))};
  mrc_ctl_ev_probe_rsp rsps[4]{};
  int n = 99;
  const auto t0 = Clock::now();
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, reqs, 4, 50'000'000u, rsps, &n), ETIMEDOUT);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(50)) << "it waits the whole timeout";
  ASSERT_EQ(n, 2);
  std::vector<uint16_t> ids = {rsps[0].probe_id, rsps[1].probe_id};
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint16_t>{1, 3})) << "the port-1 probes are answered";

  // A destination where no device listens.
  ibv_gid nobody;
  ASSERT_EQ(mrc_soft_str_to_gid("127.0.6.99", &nobody), 0);
  mrc_ctl_ev_probe_req lost = ep::request(9, a, nobody, 1, ep::ev_of(1, 2));
  n = 99;
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, &lost, 1, 20'000'000u, rsps, &n), ETIMEDOUT);
  EXPECT_EQ(n, 0);

  // Requests the device cannot send: refused before anything is sent.
  const uint64_t sent = b.rt().stats().core.ep_requests;
  mrc_ctl_ev_probe_req bad = ep::request(5, a, b.gid(0), 1, ep::ev_of(2, 0));
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, &bad, 1, 1'000'000, rsps, &n), EINVAL) << "an EV of another port";
  bad = ep::request(5, a, b.gid(0), 1, ep::ev_of(1, 0));
  bad.req_ev.val[5] = 1;
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, &bad, 1, 1'000'000, rsps, &n), EINVAL) << "EV bits beyond the value";
  bad = ep::request(5, a, b.gid(0), 1, ep::ev_of(1, 0));
  bad.srv6.srv6_enable = 1;
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, &bad, 1, 1'000'000, rsps, &n), EINVAL) << "not an SRv6 device";
  bad = ep::request(5, a, b.gid(0), 1, ep::ev_of(1, 0));
  bad.srv6.srv6_use_srh = 1;
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, &bad, 1, 1'000'000, rsps, &n), ENOTSUP) << "no SRH segment";
  bad = ep::request(5, a, b.gid(0), 1, ep::ev_of(1, 0));
  bad.rsp_ev[3] = 1;
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, &bad, 1, 1'000'000, rsps, &n), ENOTSUP) << "MRC carries no response EV";
  bad = ep::request(5, a, b.gid(0), 1, ep::ev_of(1, 0));
  bad.sgid = a.gid(1);
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, &bad, 1, 1'000'000, rsps, &n), EINVAL) << "an sgid of another port";
  mrc_ctl_ev_probe_req twice[2] = {ep::request(6, a, b.gid(0), 1, ep::ev_of(1, 0)),
                                   ep::request(6, a, b.gid(0), 1, ep::ev_of(1, 1))};
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, twice, 2, 1'000'000, rsps, &n), EINVAL);
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 64, twice, 1, 1'000'000, rsps, &n), EINVAL) << "req_tc is a DSCP";
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, twice, -1, 1'000'000, rsps, &n), EINVAL);
  EXPECT_EQ(mrc_ctl_probe_ev(a.ctx, 0, twice, 1, 1'000'000, rsps, nullptr), EINVAL);
  mrc_ctl_port_status_req psu = ep::update(7, a, b.gid(0), 1, ep::ev_of(1, 0), 1u << 3);  // port 3: A has two
  EXPECT_EQ(mrc_ctl_port_status_update(a.ctx, 0, &psu, 1, 1'000'000, rsps, &n), EINVAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(b.rt().stats().core.ep_requests, sent) << "a refused batch sends nothing";
  a.close();
  b.close();
}

// A controller tells B that A's port 2 is down (it is not): B is told,
// answers, and stops sending into that plane; then that both are up again.
TEST(CtlEpOps, APortStatusUpdateIsAnsweredAndMovesThePeerOffThePlane) {
  Node a, b;
  a.open({"127.0.6.19", "127.0.6.20"});
  b.open({"127.0.6.21", "127.0.6.22"});
  declare_peers(a, b, 2);
  mrc_qp* qa = a.add_qp();
  mrc_qp* qb = b.add_qp();
  connect(a, qa, b, qb);
  write_and_wait(b, qb, a, 0, kBytes, 1);
  ASSERT_GT(b.sent_on(qb, 1), 0u);

  mrc_ctl_port_status_req psu = ep::update(40, a, b.gid(0), 1, ep::ev_of(1, 1), 1u << 1);  // only port 1 up
  mrc_ctl_ev_probe_rsp rsp{};
  int n = 0;
  ASSERT_EQ(mrc_ctl_port_status_update(a.ctx, 0, &psu, 1, 2'000'000'000u, &rsp, &n), 0);
  ASSERT_EQ(n, 1);
  EXPECT_EQ(rsp.probe_id, 40);
  EXPECT_GT(rsp.rtt, 0u);
  // B applied it before answering: from now on it avoids plane 1 (port 2).
  const uint64_t b1 = b.sent_on(qb, 1);
  write_and_wait(b, qb, a, 0, kBytes, 2);
  EXPECT_EQ(b.sent_on(qb, 1), b1) << "B kept sending into the plane A reported down";

  psu.req_id = 41;
  psu.port_status = 0b110;  // both up
  ASSERT_EQ(mrc_ctl_port_status_update(a.ctx, 0, &psu, 1, 2'000'000'000u, &rsp, &n), 0);
  write_and_wait(b, qb, a, 0, kBytes, 3);
  EXPECT_GT(b.sent_on(qb, 1), b1) << "B uses the plane again";
  a.close();
  b.close();
}
