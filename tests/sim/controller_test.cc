// SPDX-License-Identifier: BSD-2-Clause
// The controller in the simulator (issue 11): scheduled controller actions
// (port-disable / port-enable, deny / allow) and controller profiles
// (controller_plan.hpp) taking effect on the QPs of a seeded run.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/endpoint.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric.hpp"
#include "sim/scenario/controller_plan.hpp"
#include "sim/scenario/runner.hpp"
#include "sim_test_util.hpp"

namespace mrc::sim {
namespace {

using testing::clos;
using testing::transport;

/// One 32 MiB flow from host 0 to host 5 (different T0s) on 4 planes of
/// 100 Gb/s: about 670 us at line rate.
Scenario one_flow(uint64_t seed) {
  Scenario sc;
  sc.topology = clos(4, 8, 4);
  sc.workload = WorkloadKind::matrix;
  sc.flows = {FlowSpec{0, 5, 32 << 20, Time::zero()}};
  sc.seed = seed;
  sc.sample_every = Duration::us(1);
  return sc;
}

FailureSpec action(const std::string& text) {
  std::string why;
  auto f = parse_failure(text, &why);
  EXPECT_TRUE(f) << why;
  return f ? *f : FailureSpec{};
}

Duration base_rtt(const Scenario& sc) {
  Simulator sim(sc.seed);
  Fabric f(sim, sc.topology);
  return f.max_one_way_latency() * 2;  // as the runner derives it
}

/// (time, value) samples of something read from the cluster at every sample.
using Series = std::vector<std::pair<Time, uint64_t>>;

/// The value of the last sample at or before `t`.
uint64_t at(const Series& s, Time t) {
  uint64_t v = 0;
  for (const auto& [when, x] : s)
    if (when <= t) v = x;
  return v;
}

// A port disabled by the controller reports down: the NIC tells its peers
// with PORT_STATUS_UPDATE and they stop sending into that plane towards it
// within one RTT (reference 4.7, 4.9); enabling it brings the plane back.
TEST(SimController, PortDisableStopsTrafficIntoThePlaneWithinOneRttAndEnableResumesIt) {
  Scenario sc = one_flow(11);
  const Time off = Time::zero() + Duration::us(50), on = Time::zero() + Duration::us(250);
  sc.failures = {action("port-disable:host=5,port=2,at=50us"), action("port-enable:host=5,port=2,at=250us")};
  const Duration rtt = base_rtt(sc);
  Series plane2;  // payload host 0 put on plane 2
  sc.on_sample = [&](Time now, const Cluster& c) { plane2.emplace_back(now, c.nic(0).tx_payload_bytes()[2]); };
  uint64_t admin_drops = 0;
  sc.at_end = [&](Time, const Cluster& c) { admin_drops = c.nic(5).rx_admin_drops(); };
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.qp_failures, 0u);

  EXPECT_GT(at(plane2, off), 0u) << "plane 2 carried the flow before";
  const uint64_t stopped = at(plane2, off + rtt);
  EXPECT_EQ(at(plane2, on), stopped) << "nothing sent into plane 2 from one RTT after the disable to the enable";
  EXPECT_GT(at(plane2, on + rtt + Duration::us(50)), stopped) << "plane 2 is used again after the enable";
  std::printf("[ info ] port-disable: %.1f KiB sent on plane 2 between the disable and one RTT (%.2f us) later; "
              "%llu packets dropped at the disabled port\n",
              static_cast<double>(stopped - at(plane2, off)) / 1024, rtt.to_us(),
              static_cast<unsigned long long>(admin_drops));

  // The events: host 5 reports its own port down and up; host 0 hears it
  // from host 5 within one RTT of each action.
  auto find = [&](uint32_t host, bool local, uint32_t mask, Time from) -> const RunResult::PortRecord* {
    for (const auto& p : r.port_events)
      if (p.host == host && p.local == local && p.up_mask == mask && p.at >= from && (local || p.peer == 5)) return &p;
    return nullptr;
  };
  const auto* down5 = find(5, true, 0b1011, off);
  const auto* down0 = find(0, false, 0b1011, off);
  const auto* up5 = find(5, true, 0b1111, on);
  const auto* up0 = find(0, false, 0b1111, on);
  ASSERT_TRUE(down5 && down0 && up5 && up0);
  EXPECT_EQ(down5->at, off);
  EXPECT_LE(down0->at, off + rtt);
  EXPECT_EQ(up5->at, on);
  EXPECT_LE(up0->at, on + rtt);
  ASSERT_EQ(r.failure_log.size(), 2u);
  EXPECT_EQ(r.failure_log[0].second, "port-disable:host=5,port=2,at=50us");
  EXPECT_EQ(r.failure_log[1].first, on);
}

TEST(SimController, PortDisableWithForEnablesTheportAtTheEnd) {
  Scenario sc = one_flow(12);
  sc.failures = {action("port-disable:host=5,port=1,at=40us,for=100us")};
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  ASSERT_EQ(r.failure_log.size(), 2u);
  EXPECT_EQ(r.failure_log[1].second, "end of port-disable:host=5,port=1,at=40us,for=100us");
  EXPECT_EQ(r.failure_log[1].first, Time::zero() + Duration::us(140));
  ASSERT_FALSE(r.port_events.empty());
  const auto& last = *std::find_if(r.port_events.rbegin(), r.port_events.rend(),
                                   [](const auto& p) { return p.host == 5 && p.local; });
  EXPECT_EQ(last.up_mask, 0b1111u);
}

/// Packets host 0's QP has sent on EV `ev`.
uint64_t ev_packets(const Cluster& c, uint32_t ev) {
  uint64_t n = 0;
  c.for_each_qp([&](uint32_t src, uint32_t, uint32_t, const core::Endpoint& e, uint32_t qpn) {
    if (src != 0) return;
    std::vector<core::EvInfo> evs(e.query_evs(qpn, {}));
    e.query_evs(qpn, evs);
    for (const auto& x : evs)
      if (x.value == ev) n += x.packets_sent;
  });
  return n;
}

// DENY takes an EV out of service on the host's QPs at once; allowing it
// again (or the end of a deny with for=) brings it back into use. Every EV
// of the set is active here (no backups): with backups, one of them takes
// the denied EV's place, and the allowed EV joins the backups, GOOD but
// unused until an active EV leaves.
TEST(SimController, AllowAfterDenyBringsTheEvBackIntoUse) {
  TransportSpec t = transport("mrc");
  t.active_per_plane = t.evs_per_plane;
  // The EV: one host 0's QP used in the first 50 us of an undisturbed run
  // (same seed, same EV set).
  Scenario sc = one_flow(13);
  uint32_t ev = 0;
  {
    Scenario probe = sc;
    probe.time_limit = Duration::us(50);
    probe.at_end = [&](Time, const Cluster& c) {
      c.for_each_qp([&](uint32_t src, uint32_t, uint32_t, const core::Endpoint& e, uint32_t qpn) {
        if (src != 0) return;
        std::vector<core::EvInfo> evs(e.query_evs(qpn, {}));
        e.query_evs(qpn, evs);
        for (const auto& x : evs)
          if (x.active && x.packets_sent > 0 && ev == 0) ev = x.value;
      });
    };
    (void)run_scenario(probe, t);
  }
  ASSERT_NE(ev, 0u);
  const Time deny = Time::zero() + Duration::us(60), allow = Time::zero() + Duration::us(200);
  const std::string v = std::to_string(ev);
  for (const bool with_for : {false, true}) {
    SCOPED_TRACE(with_for ? "deny with for=" : "deny, then allow");
    sc.failures = {action("deny:host=0,ev=" + v + ",at=60us" + (with_for ? ",for=140us" : ""))};
    if (!with_for) sc.failures.push_back(action("allow:host=0,ev=" + v + ",at=200us"));
    Series sent;
    sc.on_sample = [&](Time now, const Cluster& c) { sent.emplace_back(now, ev_packets(c, ev)); };
    const RunResult r = run_scenario(sc, t);
    ASSERT_TRUE(r.completed);
    EXPECT_GT(at(sent, deny), 0u);
    EXPECT_EQ(at(sent, allow), at(sent, deny + Duration::us(1))) << "a DENIED EV carries nothing";
    EXPECT_GT(at(sent, allow + Duration::us(100)), at(sent, allow)) << "allowed again, it is used again";
    // The EV events: to DENIED at the deny, from DENIED to GOOD at the allow.
    int denied = 0, restored = 0;
    for (size_t i = 0; i < r.ev_events.size(); ++i) {
      const auto& [when, e] = r.ev_events[i];
      if (r.ev_event_hosts[i] != 0 || e.ev != ev) continue;
      if (e.to == core::EvState::denied && when == deny) ++denied;
      if (e.from == core::EvState::denied && e.to == core::EvState::good && when == allow) ++restored;
    }
    EXPECT_EQ(denied, 1);
    EXPECT_EQ(restored, 1);
  }
}

// ---------------------------------------------------------------- profiles

/// A plan whose EV profile 1 (AUTO) is used by every host.
ControllerPlan auto_plan(uint32_t count, uint32_t event_mask) {
  ControllerPlan plan;
  CtlEvProfileSpec p;
  p.id = 1;
  p.mode = core::ctl::ev_mode::kAuto;
  p.count = count;
  p.min_active = 1;
  p.event_mask = event_mask;
  plan.ev_profiles.push_back(p);
  plan.ev_profile = 1;
  return plan;
}

/// EVs of host 0's QP.
std::vector<core::EvInfo> host0_evs(const Cluster& c) {
  std::vector<core::EvInfo> out;
  c.for_each_qp([&](uint32_t src, uint32_t, uint32_t, const core::Endpoint& e, uint32_t qpn) {
    if (src != 0) return;
    out.resize(e.query_evs(qpn, {}));
    e.query_evs(qpn, out);
  });
  return out;
}

TEST(SimController, AnAutoProfilesCountLimitsTheEvsOfEveryQp) {
  Scenario sc = one_flow(14);
  std::vector<core::EvInfo> evs;
  sc.at_end = [&](Time, const Cluster& c) { evs = host0_evs(c); };
  const RunResult plain = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(plain.completed);
  EXPECT_EQ(evs.size(), 64u) << "16 EVs per plane without a profile";
  sc.controller = auto_plan(8, core::ctl::ev_state::kGood | core::ctl::ev_state::kAssumedBad);
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  ASSERT_EQ(evs.size(), 8u);
  for (uint32_t p = 0; p < 4; ++p)
    EXPECT_EQ(std::count_if(evs.begin(), evs.end(), [&](const core::EvInfo& e) { return e.port == p; }), 2)
        << "split equally over the planes";
  // RoCE QPs take nothing from the MRC profiles.
  const RunResult roce = run_scenario(sc, transport("roce", 4));
  ASSERT_TRUE(roce.completed);
}

TEST(SimController, AnExplicitProfileKeepsTheQpsOnItsPlanes) {
  // SRv6 format (the compact EV is the simulator's EV); 8 EVs on ports 1
  // and 2 (planes 0 and 1), each naming a different T0 uplink.
  ControllerPlan plan;
  plan.formats.push_back(CtlFormatSpec{1, core::ctl::fmt_mode::kSrv6, {32, 16}, true});
  CtlEvProfileSpec p;
  p.id = 2;
  p.mode = core::ctl::ev_mode::kExp;
  p.format = 1;
  p.count = 8;
  p.min_active = 2;
  p.fields = {core::ctl::Field{32, 0xCAFE0000, 0, 0, 0}, core::ctl::Field{16, 0, 0, 0xFFFF, 0xFFFF}};
  for (uint64_t i = 0; i < 8; ++i) p.evs.emplace_back(static_cast<uint8_t>(1 + i / 4), 0x100 * (i / 4) + i % 4);
  plan.ev_profiles.push_back(p);
  plan.ev_profile = 2;
  std::string why;
  ASSERT_TRUE(validate_controller_plan(plan, 4, 8, &why)) << why;

  Scenario sc = one_flow(15);
  sc.controller = plan;
  std::vector<uint64_t> tx;
  std::vector<core::EvInfo> evs;
  sc.at_end = [&](Time, const Cluster& c) {
    tx = c.nic(0).tx_payload_bytes();
    evs = host0_evs(c);
  };
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.qp_failures, 0u);
  ASSERT_EQ(tx.size(), 4u);
  EXPECT_GT(tx[0], 0u);
  EXPECT_GT(tx[1], 0u);
  EXPECT_EQ(tx[2], 0u) << "no EV of the profile is on plane 2";
  EXPECT_EQ(tx[3], 0u);
  ASSERT_EQ(evs.size(), 8u);
  EXPECT_EQ(evs[5].value, 0x101u);
  EXPECT_EQ(evs[5].port, 1u);
  // Two planes of four: about half the rate.
  ASSERT_EQ(r.flows.size(), 1u);
  EXPECT_GE(r.flows[0].slowdown(), 1.8);
}

// A GEN profile: the core's controller generates the array (values within
// the fields' min/max, distinct, ports in turn) and the QPs use it.
TEST(SimController, AGeneratedProfileGivesEveryQpTheControllersArray) {
  ControllerPlan plan;
  plan.formats.push_back(CtlFormatSpec{1, core::ctl::fmt_mode::kSrv6, {32, 16}, true});
  CtlEvProfileSpec g;
  g.id = 4;
  g.mode = core::ctl::ev_mode::kGen;
  g.format = 1;
  g.count = 12;
  g.min_active = 4;
  g.fields = {core::ctl::Field{32, 0xCAFE0000, 0, 0, 0}, core::ctl::Field{16, 0, 0, 255, 0xFF}};
  plan.ev_profiles.push_back(g);
  plan.ev_profile = 4;
  Scenario sc = one_flow(17);
  sc.controller = plan;
  std::vector<core::EvInfo> evs;
  std::vector<uint64_t> tx;
  sc.at_end = [&](Time, const Cluster& c) {
    evs = host0_evs(c);
    tx = c.nic(0).tx_payload_bytes();
  };
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  ASSERT_EQ(evs.size(), 12u);
  for (uint32_t p = 0; p < 4; ++p) {
    EXPECT_EQ(std::count_if(evs.begin(), evs.end(), [&](const core::EvInfo& e) { return e.port == p; }), 3);
    EXPECT_GT(tx[p], 0u);
  }
  for (const auto& e : evs) EXPECT_LE(e.value, 255u) << "within the field's min/max";
}

// The profile's event mask chooses the EV events recorded: with a lossy
// link EVs retire (the counter says so) but only a mask with ASSUMED_BAD
// shows them.
TEST(SimController, TheEventMaskChoosesTheEventsRecorded) {
  Scenario sc = one_flow(6);
  sc.sample_every = Duration::us(20);
  sc.protocol.loss_confirm = false;  // a loss retires the EV at once
  sc.failures = {action("loss:tier=t0t1,plane=1,a=0,b=2,p=0.2,at=10us")};
  auto retired_events = [](const RunResult& r) {
    return std::count_if(r.ev_events.begin(), r.ev_events.end(),
                         [](const auto& x) { return x.second.to == core::EvState::assumed_bad; });
  };
  sc.controller = auto_plan(0, core::ctl::ev_state::kAssumedBad);
  const RunResult bad = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(bad.completed);
  EXPECT_GT(bad.evs_retired, 0u);
  EXPECT_GT(retired_events(bad), 0);
  sc.controller = auto_plan(0, core::ctl::ev_state::kGood);
  const RunResult good = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(good.completed);
  EXPECT_EQ(good.evs_retired, bad.evs_retired) << "the same run: the mask changes only what is reported";
  EXPECT_EQ(retired_events(good), 0);
}

TEST(SimController, ACcProfileReplacesTheTransportsCongestionControl) {
  // NSCC with its window capped at 64 KiB: well under the 4-plane
  // bandwidth-delay product, so the flow is window-limited.
  ControllerPlan plan;
  CtlCcProfileSpec c;
  c.id = 3;
  c.config.max_cwnd = 64 << 10;
  plan.cc_profiles.push_back(c);
  plan.cc_profile = 3;
  Scenario sc = one_flow(16);
  sc.sample_every = Duration::us(5);
  uint64_t max_cwnd = 0;
  sc.on_sample = [&](Time, const Cluster& cl) {
    cl.for_each_qp([&](uint32_t src, uint32_t, uint32_t, const core::Endpoint& e, uint32_t qpn) {
      if (src == 0) max_cwnd = std::max(max_cwnd, e.query_qp(qpn)->cwnd_bytes);
    });
  };
  const RunResult plain = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(plain.completed);
  EXPECT_GT(max_cwnd, uint64_t{64} << 10);
  max_cwnd = 0;
  sc.controller = plan;
  const RunResult r = run_scenario(sc, transport("mrc"));
  ASSERT_TRUE(r.completed);
  EXPECT_LE(max_cwnd, uint64_t{64} << 10);
  EXPECT_GE(r.flows[0].slowdown(), 2 * plain.flows[0].slowdown());
}

TEST(SimController, ABadPlanIsRefusedNamingTheProfileAndField) {
  std::string why;
  // More EVs than a profile may hold: the core controller's E2BIG.
  EXPECT_FALSE(validate_controller_plan(auto_plan(5000, 0), 4, 8, &why));
  EXPECT_EQ(why, "ev_profile 1: going offline (mode, count): refused (E2BIG: too_big)");
  // ev_min_active above the array's size: EINVAL from the controller.
  ControllerPlan plan;
  plan.formats.push_back(CtlFormatSpec{1, core::ctl::fmt_mode::kSrv6, {16}, true});
  CtlEvProfileSpec g;
  g.id = 1;
  g.mode = core::ctl::ev_mode::kGen;
  g.format = 1;
  g.count = 4;
  g.min_active = 9;
  g.fields = {core::ctl::Field{16, 0, 0, 15, 0xF}};
  plan.ev_profiles.push_back(g);
  EXPECT_FALSE(validate_controller_plan(plan, 4, 8, &why));
  EXPECT_EQ(why, "ev_profile 1: going online (min_active, events): refused (EINVAL: invalid_argument)");
  plan.ev_profiles[0].min_active = 1;
  ASSERT_TRUE(validate_controller_plan(plan, 4, 8, &why)) << why;
  // The binding: a profile the plan does not define, a host that does not exist.
  plan.ev_profile = 2;
  EXPECT_FALSE(validate_controller_plan(plan, 4, 8, &why));
  EXPECT_NE(why.find("controller.ev_profile: 2 is not an online EV profile"), std::string::npos) << why;
  plan.ev_profile = 1;
  plan.hosts = {3, 8};
  EXPECT_FALSE(validate_controller_plan(plan, 4, 8, &why));
  EXPECT_EQ(why, "controller.hosts: host 8 does not exist (8 hosts)");
}

TEST(SimController, ParseErrorsOfTheActionsNameTheKey) {
  std::string why;
  EXPECT_TRUE(parse_failure("allow:host=1,ev=7,at=1ms", &why)) << why;
  EXPECT_FALSE(parse_failure("allow:host=1,at=1ms", &why));
  EXPECT_NE(why.find("allow needs ev=V"), std::string::npos) << why;
  EXPECT_FALSE(parse_failure("allow:host=1,ev=7,at=1ms,for=1ms", &why));
  EXPECT_NE(why.find("allow takes no for="), std::string::npos) << why;
  EXPECT_FALSE(parse_failure("port-disable:host=1,at=1ms", &why));
  EXPECT_NE(why.find("port-disable needs port=P"), std::string::npos) << why;
  EXPECT_FALSE(parse_failure("port-disable:host=1,port=*,at=1ms", &why));
  EXPECT_FALSE(parse_failure("port-enable:port=1,at=1ms", &why));
  EXPECT_NE(why.find("port-enable needs host=H"), std::string::npos) << why;
  EXPECT_FALSE(parse_failure("port-enable:host=1,port=1,at=1ms,for=2ms", &why));
  EXPECT_NE(why.find("port-enable takes no for="), std::string::npos) << why;
  EXPECT_FALSE(parse_failure("port-disable:host=1,port=1,plane=2,at=1ms", &why));
  EXPECT_NE(why.find("unknown key 'plane'"), std::string::npos) << why;

  Simulator sim(1);
  Fabric f(sim, clos(4, 8, 4));
  EXPECT_FALSE(validate_failures({action("port-disable:host=1,port=4,at=1ms")}, f, &why));
  EXPECT_EQ(why, "failure 'port-disable:host=1,port=4,at=1ms': port=4: the NIC has ports 0..3 (one per plane)");
  EXPECT_FALSE(validate_failures({action("allow:host=8,ev=1,at=1ms")}, f, &why));
  EXPECT_EQ(why, "failure 'allow:host=8,ev=1,at=1ms': host=8: the host does not exist (8 hosts)");
  EXPECT_TRUE(validate_failures({action("port-enable:host=7,port=3,at=1ms")}, f, &why)) << why;
}

}  // namespace
}  // namespace mrc::sim
