// SPDX-License-Identifier: BSD-2-Clause
// Pinning as a setting: --pin-t0-uplink / --pin-only and the [run] keys
// pin_t0_uplink / pin_only reach every transport's TransportSpec under one
// rule, combinations the fabric cannot honour are refused before anything
// runs, and a pinned run really keeps its QPs on that uplink.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "mrc-sim/config_file.hpp"
#include "mrc-sim/options.hpp"
#include "sim_cli.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric.hpp"

namespace mrc::sim::tool {
namespace {


TEST(Pin, OffUnlessAsked) {
  const Parsed p = parse({});
  ASSERT_EQ(p.rc, -1) << p.error;
  EXPECT_EQ(p.o.pin_t0_uplink, kNoPin);
  EXPECT_FALSE(p.o.pin_only);
  std::string why;
  auto run = resolve(p.o, &why);
  ASSERT_TRUE(run) << why;
  for (const TransportSpec& t : run->transports) EXPECT_EQ(t.pin_t0_uplink, -1) << t.name;
  EXPECT_EQ(describe(p.o, *run).find("pinned"), std::string::npos);
}

TEST(Pin, FlagsReachEveryTransport) {
  const Parsed p = parse({"--pin-t0-uplink", "3", "--transports", "mrc,mrc-oblivious,roce"});
  ASSERT_EQ(p.rc, -1) << p.error;
  std::string why;
  auto run = resolve(p.o, &why);
  ASSERT_TRUE(run) << why;
  ASSERT_EQ(run->transports.size(), 3u);
  for (const TransportSpec& t : run->transports) {
    EXPECT_EQ(t.pin_t0_uplink, 3) << t.name;
    EXPECT_FALSE(t.pin_only) << t.name;
  }
  EXPECT_NE(describe(p.o, *run).find("mrc: MRC, 32 EVs/plane (16 active), EV management, uet-1.0-nscc, 1 QP/host "
                                     "pair, active EVs pinned to T0 uplink 3"),
            std::string::npos)
      << describe(p.o, *run);

  const Parsed q = parse({"--pin-t0-uplink", "0", "--pin-only"});
  ASSERT_EQ(q.rc, -1) << q.error;
  auto only = resolve(q.o, &why);
  ASSERT_TRUE(only) << why;
  for (const TransportSpec& t : only->transports) {
    EXPECT_EQ(t.pin_t0_uplink, 0) << t.name;
    EXPECT_TRUE(t.pin_only) << t.name;
  }
  EXPECT_NE(describe(q.o, *only).find(", only T0 uplink 0"), std::string::npos);
}

TEST(Pin, TheScenarioFileSetsTheSameFields) {
  SimOptions o;
  std::string why;
  ASSERT_TRUE(load_config_text("[run]\npin_t0_uplink = 5\npin_only = true\n", "t.toml", &o, &why)) << why;
  EXPECT_EQ(o.pin_t0_uplink, 5u);
  EXPECT_TRUE(o.pin_only);
  // The same rule as the flag, with the same words.
  SimOptions bad;
  EXPECT_FALSE(load_config_text("[run]\npin_t0_uplink = -1\n", "t.toml", &bad, &why));
  EXPECT_EQ(why, "t.toml:2: [run] pin_t0_uplink = -1 is out of range (an integer from 0 to 1023; left out = no "
                 "pinning)");
  const Parsed p = parse({"--pin-t0-uplink", "-1"});
  EXPECT_EQ(p.rc, 2);
  EXPECT_EQ(p.error.rfind("--pin-t0-uplink: -1 is out of range (an integer from 0 to 1023; left out = no pinning)", 0),
            0u)
      << p.error;
}

TEST(Pin, CombinationsTheFabricCannotHonourAreRefused) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--pin-only"}, "pin_only needs pin_t0_uplink"},
      {{"--pin-t0-uplink", "1", "--routing", "ecmp"}, "pin_t0_uplink needs srv6 routing"},
      {{"--pin-t0-uplink", "8"}, "pin_t0_uplink: 8 is not an uplink of the T0s (0 to 7)"},
      {{"--pin-t0-uplink", "2", "--pin-only", "--evs-per-plane", "4"},
       "pin_only: 4 EVs per plane name only 4 of the 8 T0 uplinks"},
  };
  for (const Case& c : cases) {
    const Parsed p = parse(c.args);
    ASSERT_EQ(p.rc, -1) << p.error;
    std::string why;
    EXPECT_FALSE(resolve(p.o, &why)) << c.message;
    EXPECT_EQ(why.rfind(c.message, 0), 0u) << why;
  }
  // The boundary values are accepted.
  for (const std::vector<std::string>& ok : {std::vector<std::string>{"--pin-t0-uplink", "7"},
                                             {"--pin-t0-uplink", "7", "--pin-only", "--evs-per-plane", "8"}}) {
    const Parsed p = parse(ok);
    ASSERT_EQ(p.rc, -1) << p.error;
    std::string why;
    EXPECT_TRUE(resolve(p.o, &why)) << why;
  }
}

/// A small permutation with pinning; counts, over every QP's EV set at the
/// end, the EVs and the packets sent on the pinned T0 uplink and elsewhere.
struct Placement {
  RunResult run;
  std::array<uint64_t, 2> evs{};      ///< [0]: on the pinned uplink, [1]: elsewhere
  std::array<uint64_t, 2> packets{};  ///< packets sent on those EVs
};

Placement pinned_run(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--hosts", "16", "--t0-down", "4", "--t0-up", "4", "--t1", "4", "--planes", "2",
                                   "--evs-per-plane", "8", "--workload", "permutation", "--bytes", "262144",
                                   "--transports", "mrc", "--no-default-failures", "--pin-t0-uplink", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  const Parsed p = parse(args);
  EXPECT_EQ(p.rc, -1) << p.error;
  std::string why;
  auto run = resolve(p.o, &why);
  EXPECT_TRUE(run) << why;
  Placement out;
  if (!run) return out;
  Simulator map_sim(1);
  const Fabric map(map_sim, run->scenario.topology);  // only for the EV -> uplink map
  run->scenario.at_end = [&](Time, const Cluster& c) {
    c.for_each_qp([&](uint32_t src, uint32_t, uint32_t, const core::Endpoint& ep, uint32_t qpn) {
      std::vector<core::EvInfo> evs(64);
      evs.resize(ep.query_evs(qpn, evs));
      for (const core::EvInfo& e : evs) {
        const size_t where = map.ev_path(src, e.value).t0_uplink == 1 ? 0 : 1;
        ++out.evs[where];
        out.packets[where] += e.packets_sent;
      }
    });
  };
  out.run = run_scenario(run->scenario, run->transports[0]);
  return out;
}

TEST(Pin, APinnedOnlyRunNeverLeavesItsUplink) {
  const Placement only = pinned_run({"--pin-only"});
  EXPECT_TRUE(only.run.completed);
  EXPECT_GT(only.evs[0], 0u);
  EXPECT_GT(only.packets[0], 0u);
  EXPECT_EQ(only.evs[1], 0u) << "pin_only drops the EVs of the other uplinks";
  EXPECT_EQ(only.packets[1], 0u);

  // Without pin_only the other uplinks' EVs stay, as backups.
  const Placement pinned = pinned_run({});
  EXPECT_TRUE(pinned.run.completed);
  EXPECT_GT(pinned.evs[0], 0u);
  EXPECT_GT(pinned.evs[1], pinned.evs[0]) << "3 of the 4 uplinks hold the backups";
}

}  // namespace
}  // namespace mrc::sim::tool
