// Detail outputs: drops by packet type, per-host / per-plane / per-flow
// goodput series, and the plots' options (x range, failure labels that do
// not overlap, runs that did not complete).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "mrc-sim/options.hpp"
#include "mrc-sim/output.hpp"

namespace mrc::sim::tool {
namespace {

// 16 hosts on 2 planes; plane 0's T0-T1 links all die 5 us in, so the run
// drops packets of every type.
RunResult plane_down_run() {
  SimOptions o;
  o.planes = 2;
  o.hosts = 16;
  o.t0_down = 4;
  o.t0_up = 4;
  o.t1 = 2;
  o.workload = "permutation";
  o.bytes = 256 * 1024;
  o.transports = {"mrc"};
  o.failures = {"link-down:tier=t0t1,plane=0,a=*,b=*,at=5us"};
  std::string why;
  auto run = resolve(o, &why);
  EXPECT_TRUE(run) << why;
  return run_scenario(run->scenario, run->transports[0]);
}

const RunResult& plane_down() {
  static const RunResult r = plane_down_run();
  return r;
}

TEST(OutputDetail, DropsByPacketTypeAddUpToTheDrops) {
  const RunResult& r = plane_down();
  const FabricStats& f = r.fabric;
  const uint64_t all = f.drops_queue + f.drops_link_down + f.drops_random + f.drops_no_route;
  EXPECT_GT(all, 0u);
  EXPECT_EQ(f.drops_by_class[0] + f.drops_by_class[1] + f.drops_by_class[2], all);
  EXPECT_GT(f.drops_by_class[static_cast<int>(Class::data)], 0u);
  const auto j = nlohmann::json::parse(results_json({r}, 1));
  const auto& c = j["runs"][0]["counters"];
  EXPECT_EQ(c["drops_data"], f.drops_by_class[static_cast<int>(Class::data)]);
  EXPECT_EQ(c["drops_trimmed_header"], f.drops_by_class[static_cast<int>(Class::trimmed)]);
  EXPECT_EQ(c["drops_control"], f.drops_by_class[static_cast<int>(Class::control)]);
}

}  // namespace
}  // namespace mrc::sim::tool
