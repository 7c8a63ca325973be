// SPDX-License-Identifier: BSD-2-Clause
// Group failure specs ("*" for a plane, a link end or a switch index: every
// link of a host, of a tier in a plane, a T1 position in every plane), from
// the flag and the scenario file; and the host of every EV event in the
// outputs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "mrc-sim/config_file.hpp"
#include "mrc-sim/options.hpp"
#include "mrc-sim/output.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric.hpp"
#include "sim/scenario/failures.hpp"

namespace mrc::sim::tool {
namespace {

// 16 hosts, 4 planes, 4 T0s of 4 hosts with 4 uplinks over 2 T1s (2 lanes).
SimOptions small() {
  SimOptions o;
  o.planes = 4;
  o.hosts = 16;
  o.t0_down = 4;
  o.t0_up = 4;
  o.t1 = 2;
  o.workload = "permutation";
  o.bytes = 256 * 1024;
  o.transports = {"mrc"};
  o.default_failures = false;
  return o;
}

FailureSpec spec(const std::string& text) {
  std::string why;
  auto f = parse_failure(text, &why);
  EXPECT_TRUE(f) << why;
  return f ? *f : FailureSpec{};
}

TEST(FailureGroups, StarsExpandToEveryMatchingLinkOrSwitch) {
  SimOptions o = small();
  std::string why;
  auto run = resolve(o, &why);
  ASSERT_TRUE(run) << why;
  Simulator sim(1);
  Fabric f(sim, run->scenario.topology);

  // Every link of host 5: one per plane.
  const auto host5 = failure_links(spec("link-down:tier=host,plane=*,a=5,at=1ms"), f);
  ASSERT_EQ(host5.size(), 4u);
  for (uint32_t p = 0; p < 4; ++p) {
    EXPECT_EQ(host5[p].a, 5u);
    EXPECT_EQ(host5[p].plane, p);
  }
  // Every T0-T1 link of plane 2: 4 T0s x 2 T1s x 2 parallel lanes.
  const auto plane2 = failure_links(spec("loss:tier=t0t1,plane=2,a=*,b=*,p=0.1,at=0us"), f);
  EXPECT_EQ(plane2.size(), 16u);
  for (const LinkRef& l : plane2) EXPECT_EQ(l.plane, 2u);
  // Every host link of the fabric.
  EXPECT_EQ(failure_links(spec("rate:tier=host,plane=*,a=*,gbps=10,at=0us"), f).size(), 64u);
  // T1 1 of every plane.
  const auto t1s = failure_switches(spec("switch-down:tier=t1,plane=*,index=1,at=1ms,for=1ms"), f);
  ASSERT_EQ(t1s.size(), 4u);
  for (const SwitchRef& s : t1s) EXPECT_EQ(s.index, 1u);
  // Not a group: the one link, as before.
  EXPECT_EQ(failure_links(spec("link-down:tier=host,plane=1,a=3,at=1ms"), f).size(), 1u);
}

TEST(FailureGroups, AGroupMatchingNothingIsRefused) {
  SimOptions o = small();
  o.failures = {"link-down:tier=host,plane=*,a=99,at=1ms"};
  std::string why;
  EXPECT_FALSE(resolve(o, &why));
  EXPECT_EQ(why, "failure 'link-down:tier=host,plane=*,a=99,at=1ms': the group matches no link of this fabric");
  o.failures = {"switch-down:tier=t1,plane=*,index=7,at=1ms"};
  EXPECT_FALSE(resolve(o, &why));
  EXPECT_NE(why.find("matches no switch"), std::string::npos) << why;
  // deny takes a host, not a group.
  EXPECT_FALSE(parse_failure("deny:host=*,ev=1,at=1ms", &why));
}

TEST(FailureGroups, FlagAndScenarioFileTakeStars) {
  const char* argv[] = {"mrc-sim", "--fail", "link-down:tier=t0t1,plane=0,a=*,b=*,at=10us"};
  SimOptions o;
  std::string error;
  ASSERT_EQ(parse_command_line(3, argv, &o, &error), -1) << error;
  EXPECT_EQ(o.failures, (std::vector<std::string>{"link-down:tier=t0t1,plane=0,a=*,b=*,at=10us"}));

  SimOptions p;
  std::string why;
  ASSERT_TRUE(load_config_text(
      "[[failure]]\nkind = \"link-down\"\ntier = \"host\"\nplane = \"*\"\na = 5\nat = \"1ms\"\n", "t.toml", &p, &why))
      << why;
  EXPECT_EQ(p.failures, (std::vector<std::string>{"link-down:tier=host,plane=*,a=5,at=1ms"}));
  SimOptions q;
  EXPECT_FALSE(
      load_config_text("[[failure]]\nkind = \"deny\"\nhost = \"*\"\nev = 1\nat = \"1ms\"\n", "t.toml", &q, &why));
  EXPECT_NE(why.find("'host' must be an integer >= 0, not a string"), std::string::npos) << why;
}

TEST(FailureGroups, AWholePlaneDownIsOneActionAndTheOtherPlanesCarryTheLoad) {
  SimOptions o = small();
  o.failures = {"link-down:tier=t0t1,plane=0,a=*,b=*,at=5us"};
  std::string why;
  auto run = resolve(o, &why);
  ASSERT_TRUE(run) << why;
  // The 256 KiB flows finish within three confirming probes of the failure:
  // with the reference's single probe plane 0's EVs are retired, and reported.
  run->scenario.protocol.loss_confirm_probes = 1;
  const RunResult r = run_scenario(run->scenario, run->transports[0]);
  EXPECT_TRUE(r.completed);
  EXPECT_GT(r.fabric.drops_link_down, 0u) << "plane 0 lost packets on its dead uplinks";
  ASSERT_EQ(r.failure_log.size(), 1u) << "one action for the whole group";
  EXPECT_EQ(r.failure_log[0].second, "link-down:tier=t0t1,plane=0,a=*,b=*,at=5us");

  // EV events (plane 0's EVs retire) carry the host whose QP reported them.
  ASSERT_FALSE(r.ev_events.empty());
  ASSERT_EQ(r.ev_event_hosts.size(), r.ev_events.size());
  for (uint32_t h : r.ev_event_hosts) EXPECT_LT(h, 16u);
  const auto j = nlohmann::json::parse(results_json({r}, 1));
  const auto& evs = j["runs"][0]["ev_events"];
  ASSERT_EQ(evs.size(), r.ev_events.size());
  for (size_t i = 0; i < evs.size(); ++i) EXPECT_EQ(evs[i]["host"], r.ev_event_hosts[i]);
}

TEST(FailureGroups, FailuresTimedFromATrainingStep) {
  SimOptions o = small();
  o.workload = "train";
  o.steps = 3;
  o.compute_us = 20;
  o.bytes = 1 << 20;
  o.failures = {"switch-down:tier=t1,plane=*,index=0,at=step1+10us,for=30us"};
  std::string why;
  auto run = resolve(o, &why);
  ASSERT_TRUE(run) << why;
  const RunResult r = run_scenario(run->scenario, run->transports[0]);
  ASSERT_TRUE(r.completed);
  ASSERT_EQ(r.steps.size(), 3u);
  ASSERT_EQ(r.failure_log.size(), 2u);
  // Step 1 starts when step 0 ends.
  EXPECT_EQ(r.failure_log[0].first, Time::zero() + r.steps[0] + Duration::us(10));
  EXPECT_EQ(r.failure_log[1].first, r.failure_log[0].first + Duration::us(30));
  EXPECT_EQ(r.failure_log[1].second, "end of switch-down:tier=t1,plane=*,index=0,at=step1+10us,for=30us");

  // A step that never starts, or a flow workload, is refused.
  o.failures = {"link-down:tier=host,plane=0,a=1,at=step3"};
  EXPECT_FALSE(resolve(o, &why));
  EXPECT_EQ(why, "failure 'link-down:tier=host,plane=0,a=1,at=step3': step 3 never starts (steps 0 to 2)");
  o.workload = "permutation";
  o.failures = {"link-down:tier=host,plane=0,a=1,at=step0"};
  EXPECT_FALSE(resolve(o, &why));
  EXPECT_NE(why.find("at=step<K> needs the train or allreduce workload"), std::string::npos) << why;
  EXPECT_FALSE(parse_failure("link-down:tier=host,plane=0,a=1,at=stepx", &why));
  EXPECT_NE(why.find("needs a step number K"), std::string::npos) << why;
}

// Controller actions from the scenario file: a port disabled and enabled
// again on a host, and an EV denied and allowed; the JSON lists the actions
// and the port events they cause.
TEST(FailureGroups, ControllerActionsFromTheFileAppearInTheJson) {
  SimOptions o = small();
  o.bytes = 4 << 20;  // about 90 us: every action happens while the flows run
  std::string why;
  ASSERT_TRUE(load_config_text("[[failure]]\nkind = \"port-disable\"\nhost = 5\nport = 2\nat = \"20us\"\n"
                               "for = \"30us\"\n"
                               "[[failure]]\nspec = \"deny:host=1,ev=3,at=10us\"\n"
                               "[[failure]]\nkind = \"allow\"\nhost = 1\nev = 3\nat = \"40us\"\n",
                               "t.toml", &o, &why))
      << why;
  EXPECT_EQ(o.failures, (std::vector<std::string>{"port-disable:host=5,port=2,at=20us,for=30us",
                                                  "deny:host=1,ev=3,at=10us", "allow:host=1,ev=3,at=40us"}));
  auto run = resolve(o, &why);
  ASSERT_TRUE(run) << why;
  const RunResult r = run_scenario(run->scenario, run->transports[0]);
  ASSERT_TRUE(r.completed);
  const auto j = nlohmann::json::parse(results_json({r}, 1));
  const auto& run0 = j["runs"][0];
  std::vector<std::string> actions;
  for (const auto& a : run0["failures"]) actions.push_back(a["action"]);
  EXPECT_EQ(actions, (std::vector<std::string>{"deny:host=1,ev=3,at=10us", "port-disable:host=5,port=2,at=20us,for=30us",
                                               "allow:host=1,ev=3,at=40us",
                                               "end of port-disable:host=5,port=2,at=20us,for=30us"}));
  // Host 5 itself: plane 2 down at 20 us, up again at 50 us.
  std::vector<nlohmann::json> local;
  for (const auto& p : run0["port_events"])
    if (p["host"] == 5 && p.contains("local")) local.push_back(p);
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(local[0]["t_us"], 20.0);
  EXPECT_EQ(local[0]["planes_up"], nlohmann::json::array({0, 1, 3}));
  EXPECT_EQ(local[1]["t_us"], 50.0);
  EXPECT_EQ(local[1]["planes_up"], nlohmann::json::array({0, 1, 2, 3}));
  // Its peers hear it from host 5.
  bool heard = false;
  for (const auto& p : run0["port_events"])
    heard = heard || (p.contains("peer") && p["peer"] == 5 && p["planes_up"] == nlohmann::json::array({0, 1, 3}));
  EXPECT_TRUE(heard);

  // A port the NIC does not have, and a group, are refused.
  o.failures = {"port-enable:host=5,port=4,at=1us"};
  EXPECT_FALSE(resolve(o, &why));
  EXPECT_EQ(why, "failure 'port-enable:host=5,port=4,at=1us': port=4: the NIC has ports 0..3 (one per plane)");
  SimOptions q;
  EXPECT_FALSE(load_config_text("[[failure]]\nkind = \"port-disable\"\nhost = 1\nport = \"*\"\nat = \"1ms\"\n",
                                "t.toml", &q, &why));
  EXPECT_EQ(why, "t.toml:4: [[failure]] 1: 'port' must be an integer >= 0, not a string (e.g. port = 1)");
}

}  // namespace
}  // namespace mrc::sim::tool
