// SPDX-License-Identifier: BSD-2-Clause
// mrc-sim --partitions: a run split over 1, 2 and 4 partitions (threads of
// the parallel engine) writes the same JSON, but for the two fields that
// measure the engine rather than the model (wall_s; events, which the
// partitioning adds to: a port feeding a link across partitions schedules
// its own transmissions). A training run with a T1 reboot and a flapping
// host link (MRC, and RoCE with PFC, whose frames cross partitions too),
// a permutation with a dead T0-T1 link and a lossy host, an incast under
// PFC, and an all-to-all whose port-status records, made in every
// partition, must merge into one order. The hosts are split over the
// partitions with their T0s (PartitionPlan::host).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "mrc-sim/config_file.hpp"
#include "mrc-sim/options.hpp"
#include "mrc-sim/output.hpp"

namespace mrc::sim::tool {
namespace {

// 32 hosts, 4 planes, 4 T0s of 8 hosts with 4 uplinks over 2 T1s.
SimOptions small() {
  SimOptions o;
  o.planes = 4;
  o.hosts = 32;
  o.t0_down = 8;
  o.t0_up = 4;
  o.t1 = 2;
  o.default_failures = false;
  return o;
}

struct Runs {
  std::string json;  ///< without wall_s and events
  uint64_t windows = 0, messages = 0;
  double busiest = 0;  ///< the busiest partition's share of the events (the last transport's run)
};

Runs run(SimOptions o, uint32_t partitions, uint32_t threads = 0) {
  o.partitions = partitions;
  o.threads = threads;
  std::string why;
  auto resolved = resolve(o, &why);
  EXPECT_TRUE(resolved) << why;
  Runs out;
  if (!resolved) return out;
  std::vector<RunResult> results;
  for (const TransportSpec& t : resolved->transports) {
    results.push_back(run_scenario(resolved->scenario, t));
    EXPECT_TRUE(results.back().completed) << t.name << " on " << partitions << " partitions";
    out.windows += results.back().windows;
    out.messages += results.back().messages;
    uint64_t sum = 0, most = 0;
    for (uint64_t e : results.back().partition_events) {
      sum += e;
      most = std::max(most, e);
    }
    out.busiest = sum ? static_cast<double>(most) / static_cast<double>(sum) : 0;
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(results_json(results, o.seed));
  for (auto& r : j["runs"]) {
    r.erase("wall_s");
    r.erase("events");
  }
  out.json = j.dump(1);
  return out;
}

void expect_same_on_2_and_4(const SimOptions& o, uint64_t min_messages = 1000) {
  const Runs one = run(o, 1);
  ASSERT_FALSE(one.json.empty());
  EXPECT_EQ(one.messages, 0u);
  for (uint32_t p : {2u, 4u}) {
    const Runs par = run(o, p);
    EXPECT_EQ(par.json, one.json) << p << " partitions";
    // The partitions did exchange packets, over many windows.
    EXPECT_GT(par.windows, 100u) << p << " partitions";
    EXPECT_GT(par.messages, min_messages) << p << " partitions";
  }
}

TEST(Partitions, TrainingWithAT1RebootAndALinkFlapIsTheSameOn1To4) {
  SimOptions o = small();
  o.workload = "train";
  o.bytes = 1 << 20;
  o.steps = 2;
  o.transports = {"mrc", "roce-pfc"};
  o.failures = {"switch-down:tier=t1,plane=0,index=1,at=100us,for=150us",
                "link-flap:tier=host,plane=3,a=5,at=120us,until=300us,period=60us,duty=0.5"};
  expect_same_on_2_and_4(o);
}

TEST(Partitions, FewerThreadsThanPartitionsGiveTheSameRun) {
  // 4 partitions on 1 thread (one after another in each window) and on 3
  // (thread 0 runs partitions 0 and 3): the results of 1 partition, with
  // global events (a switch down and back) between windows.
  SimOptions o = small();
  o.workload = "train";
  o.bytes = 1 << 20;
  o.steps = 1;
  o.transports = {"mrc"};
  o.failures = {"switch-down:tier=t1,plane=0,index=1,at=100us,for=150us"};
  const Runs one = run(o, 1);
  ASSERT_FALSE(one.json.empty());
  for (uint32_t threads : {1u, 3u}) {
    const Runs par = run(o, 4, threads);
    EXPECT_EQ(par.json, one.json) << "4 partitions on " << threads << " threads";
    EXPECT_GT(par.messages, 1000u) << threads << " threads";
  }
}

TEST(Partitions, PermutationWithADeadLinkAndLossIsTheSameOn1To4) {
  SimOptions o = small();
  o.workload = "permutation";
  o.bytes = 2 << 20;
  o.transports = {"mrc"};
  o.failures = {"link-down:tier=t0t1,plane=1,a=0,b=1,at=20us", "loss:tier=host,plane=*,a=3,p=0.01,at=0us"};
  expect_same_on_2_and_4(o);
  // The hosts run in their partitions: the work is shared about evenly (with
  // every host in partition 0 it took 65 % of the events on 2).
  EXPECT_LT(run(o, 2).busiest, 0.55);
  EXPECT_LT(run(o, 4).busiest, 0.30);
}

// RoCE with PFC under a 12-to-1 incast: the T0s PAUSE NICs and their
// neighbours, in their own partitions and across the cut.
TEST(Partitions, IncastWithPfcIsTheSameOn1To4) {
  SimOptions o = small();
  o.workload = "incast";
  o.fan_in = 12;
  o.bytes = 256 * 1024;
  o.transports = {"roce-pfc"};
  SimOptions probe = o;
  std::string why;
  auto resolved = resolve(probe, &why);
  ASSERT_TRUE(resolved) << why;
  EXPECT_GT(run_scenario(resolved->scenario, resolved->transports[0]).fabric.pfc_pauses, 10u);
  expect_same_on_2_and_4(o, 500);
}

// An all-to-all where a host's port is disabled and a T0 goes down: the
// port-status changes of many hosts (recorded in their partitions, or by
// the global events), dozens of them at the same picosecond as another,
// come out in the sequential run's order.
TEST(Partitions, PortEventsOfHostsInSeveralPartitionsKeepTheSequentialOrder) {
  SimOptions o = small();
  o.workload = "alltoall";
  o.bytes = 64 * 1024;
  o.transports = {"mrc"};
  o.failures = {"port-disable:host=5,port=1,at=10us,for=30us", "switch-down:tier=t0,plane=2,index=1,at=15us,for=20us"};
  expect_same_on_2_and_4(o);
}

// The run ends after the window in which its last flow completes, so the
// windows must end at the same times however the model is split, although
// the first event of a window may differ (a port feeding a cut link
// schedules transmissions an uncut one does silently). They used to run
// for one lookahead from that event: here, with a controller's EV profile,
// a deny and a disabled port (examples/scenarios/controller.toml), 2
// partitions ran one packet-hop more than 1, after the last completion.
TEST(Partitions, TheRunEndsAtTheSamePointOn1To4) {
  SimOptions o;
  std::string why;
  ASSERT_TRUE(load_config_text(R"(
[topology]
kind = "clos2"
planes = 4
hosts = 16
t0_down = 4
t0_up = 4
t1 = 4
[workload]
kind = "permutation"
bytes = 16777216
[[ev_profile]]
id = 1
mode = "auto"
count = 64
min_active = 16
events = ["good", "assumed_bad"]
[[cc_profile]]
id = 1
algorithm = "uet-1.0-nscc"
[controller]
ev_profile = 1
cc_profile = 1
[[failure]]
spec = "port-disable:host=5,port=3,at=100us,for=200us"
[[failure]]
spec = "deny:host=0,ev=1,at=50us,for=100us"
[run]
transports = ["mrc"]
default_failures = false
)",
                               "controller.toml", &o, &why))
      << why;
  expect_same_on_2_and_4(o);
}

TEST(Partitions, ACountThePlanCannotUseIsRefusedNamingTheFlag) {
  SimOptions o = small();
  o.partitions = 64;  // 4 planes x 4 T0s at most
  std::string why;
  EXPECT_FALSE(resolve(o, &why));
  EXPECT_EQ(why.rfind("--partitions 64 ", 0), 0u) << why;
  EXPECT_NE(why.find("use at most 16"), std::string::npos) << why;
  o.partitions = 2;
  o.link_delay_ns = 0;
  EXPECT_FALSE(resolve(o, &why));
  EXPECT_NE(why.find("--link-delay-ns"), std::string::npos) << why;
}

}  // namespace
}  // namespace mrc::sim::tool
