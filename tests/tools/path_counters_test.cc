// SPDX-License-Identifier: BSD-2-Clause
// The path policy's counters in mrc-sim's outputs: ECN path swaps, EVs
// suspected on a loss and cleared again (core::path::PathStats), summed over
// the cluster into RunResult, shown in the summary table under "EVs
// resurrected" and written as the JSON / CSV counters ev_congestion_swaps,
// ev_suspected and ev_cleared.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "mrc-sim/options.hpp"
#include "mrc-sim/output.hpp"

namespace mrc::sim::tool {
namespace {

/// A 16-host permutation on 2 planes with 4 uplinks per T0; every run is a
/// few milliseconds of wall time.
std::vector<RunResult> runs(std::vector<std::string> transports, uint32_t pin, std::vector<std::string> failures) {
  SimOptions o;
  o.hosts = 16;
  o.t0_down = 4;
  o.t0_up = 4;
  o.t1 = 4;
  o.planes = 2;
  o.evs_per_plane = 8;
  o.workload = "permutation";
  o.bytes = 1 << 20;
  o.transports = std::move(transports);
  o.pin_t0_uplink = pin;
  o.failures = std::move(failures);
  o.default_failures = false;
  std::string why;
  auto run = resolve(o, &why);
  EXPECT_TRUE(run) << why;
  std::vector<RunResult> out;
  if (!run) return out;
  for (const TransportSpec& t : run->transports) out.push_back(run_scenario(run->scenario, t));
  return out;
}

uint64_t counter(const nlohmann::json& run, const char* name) {
  EXPECT_TRUE(run["counters"].contains(name)) << name;
  return run["counters"].value(name, uint64_t{0});
}

TEST(PathCounters, APinnedRunSwapsOffTheSharedUplinkOnEcn) {
  // Every QP starts with its active EVs on uplink 0 of its T0: the uplink
  // congests, ECN marks come back, and MRC trades the marked EVs for backups
  // on other uplinks. mrc-oblivious manages no EVs and never swaps.
  const std::vector<RunResult> r = runs({"mrc", "mrc-oblivious"}, 0, {});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].completed);
  EXPECT_GT(r[0].fabric.ecn_marks, 0u);
  EXPECT_GT(r[0].ev_congestion_swaps, 0u);
  EXPECT_EQ(r[1].ev_congestion_swaps, 0u);
  EXPECT_EQ(r[1].evs_suspected, 0u);
  EXPECT_LE(r[0].evs_cleared, r[0].evs_suspected);

  const auto j = nlohmann::json::parse(results_json(r, 1));
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(counter(j["runs"][i], "ev_congestion_swaps"), r[i].ev_congestion_swaps);
    EXPECT_EQ(counter(j["runs"][i], "ev_suspected"), r[i].evs_suspected);
    EXPECT_EQ(counter(j["runs"][i], "ev_cleared"), r[i].evs_cleared);
  }
  // The CSV lists the same counters.
  for (const CsvFile& f : csv_files(r)) {
    if (f.name != "counters.csv") continue;
    EXPECT_NE(f.text.find("mrc,ev_congestion_swaps," + std::to_string(r[0].ev_congestion_swaps) + "\n"),
              std::string::npos)
        << f.text;
    EXPECT_NE(f.text.find("mrc-oblivious,ev_congestion_swaps,0\n"), std::string::npos);
  }

  // The table has the rows right under "EVs resurrected", one column per run.
  const std::string table = summary_table(r);
  const size_t resurrected = table.find("EVs resurrected");
  const size_t swaps = table.find("ECN path swaps");
  const size_t suspected = table.find("EVs suspected");
  const size_t cleared = table.find("  cleared");
  ASSERT_NE(resurrected, std::string::npos) << table;
  ASSERT_NE(swaps, std::string::npos) << table;
  EXPECT_LT(resurrected, swaps);
  EXPECT_LT(swaps, suspected);
  EXPECT_LT(suspected, cleared);
  EXPECT_EQ(table.find('\n', resurrected) + 1, swaps) << "the next row";
  const std::string swap_row = table.substr(swaps, table.find('\n', swaps) - swaps);
  EXPECT_NE(swap_row.find(" " + std::to_string(r[0].ev_congestion_swaps) + " "), std::string::npos) << swap_row;
}

TEST(PathCounters, ALossyLinkSuspectsEvsAndClearsSomeOfThem) {
  // 20 % loss on one T0-T1 link: each loss on it takes its EV out of service
  // pending a probe; the probes that get through put EVs back.
  const std::vector<RunResult> r = runs({"mrc"}, kNoPin, {"loss:tier=t0t1,plane=1,a=0,b=2,p=0.2,at=10us"});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].completed);
  EXPECT_GT(r[0].fabric.drops_random, 0u);
  EXPECT_GT(r[0].evs_suspected, 0u);
  EXPECT_LE(r[0].evs_cleared, r[0].evs_suspected) << "only a suspected EV can be cleared";
}

}  // namespace
}  // namespace mrc::sim::tool
