// SPDX-License-Identifier: BSD-2-Clause
// The configuration mrc-sim prints before running: what the run will really
// do once resolved (workload sizes and flow counts, each transport's QPs,
// paths and congestion control), not the settings as given.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mrc-sim/options.hpp"

namespace mrc::sim::tool {
namespace {

/// describe() of the command line `args` (after resolution).
std::string echo(std::vector<std::string> args) {
  args.insert(args.begin(), "mrc-sim");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  SimOptions o;
  std::string error;
  EXPECT_EQ(parse_command_line(static_cast<int>(argv.size()), argv.data(), &o, &error), -1) << error;
  std::string why;
  auto run = resolve(o, &why);
  EXPECT_TRUE(run) << why;
  return run ? describe(o, *run) : std::string();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Describe, DefaultScenarioShowsTheRingAndEachTransport) {
  const std::string e = echo({});
  EXPECT_TRUE(has(e, "  workload    8 training steps: 150 us compute + ring all-reduce of 32 MiB over 64 hosts "
                     "(2 x 63 ring steps of 512 KiB per host)\n"))
      << e;
  EXPECT_TRUE(has(e, "  transports  mrc: MRC, 32 EVs/plane (16 active), EV management, uet-1.0-nscc, 1 QP/host pair\n"))
      << e;
  EXPECT_TRUE(has(e, "              roce: RoCEv2 RC go-back-N, 1 ECMP path per QP, 1 plane per QP, dcqcn, "
                     "8 QPs/host pair (1 per plane)\n"))
      << e;
}

TEST(Describe, AllReduceIsACollectiveNotFlows) {
  const std::string e = echo({"--workload", "allreduce", "--bytes", "1048576", "--hosts", "16"});
  EXPECT_TRUE(has(e, "workload    one ring all-reduce of 1 MiB over 16 hosts (2 x 15 ring steps of 64 KiB per host)"))
      << e;
  EXPECT_FALSE(has(e, "per flow")) << e;
}

TEST(Describe, FlowWorkloadsCountTheFlowsTheRunStarts) {
  EXPECT_TRUE(has(echo({"--workload", "permutation", "--bytes", "1000", "--hosts", "16"}),
                  "workload    permutation: 16 flows of 1000 B (each host sends to one other), 16000 B in all"));
  EXPECT_TRUE(has(echo({"--workload", "alltoall", "--bytes", "4096", "--hosts", "16"}),
                  "workload    alltoall: 240 flows of 4 KiB (every host to every other), 960 KiB in all"));
  // More senders asked for than there are hosts: the echo says what runs.
  const std::string e = echo({"--workload", "incast", "--fan-in", "100", "--hosts", "16", "--victim"});
  EXPECT_TRUE(has(e, "workload    incast: 14 flows of 32 MiB (13 senders to host 0, and a victim flow to its T0 "
                     "neighbour; fan_in 100 capped at the 13 hosts free to send), 448 MiB in all"))
      << e;
}

TEST(Describe, TransportsShowTheirResolvedQpsAndPaths) {
  const std::string e = echo({"--transports", "mrc-oblivious,mrc-single-path,roce-pfc", "--qps-per-peer", "2",
                              "--evs-per-plane", "8", "--planes", "4"});
  EXPECT_TRUE(has(e, "  transports  mrc-oblivious: MRC, 8 EVs/plane (4 active), no EV management, uet-1.0-nscc, "
                     "2 QPs/host pair\n"))
      << e;
  EXPECT_TRUE(has(e, "              mrc-single-path: MRC, 1 ECMP path per QP, uet-1.0-nscc, 2 QPs/host pair\n")) << e;
  EXPECT_TRUE(has(e, "              roce-pfc: RoCEv2 RC go-back-N, 1 ECMP path per QP, 1 plane per QP, dcqcn, "
                     "2 QPs/host pair, PFC\n"))
      << e;
}

// Acknowledgement knobs away from their defaults are named on the MRC
// transports they apply to, and only there.
TEST(Describe, NonDefaultSackSettingsAreShownOnMrcOnly) {
  const std::string e = echo({"--transports", "mrc,roce", "--mrc-sack-bytes", "65536", "--mrc-sack-ports", "arrival",
                              "--mrc-sack-wait-max-us", "1"});
  EXPECT_TRUE(has(e, ", SACK every 65536 B, SACKs on the arrival plane, SACK wait at most 1 us\n")) << e;
  EXPECT_FALSE(has(e.substr(e.find("roce:")), "SACK")) << e;
  EXPECT_FALSE(has(echo({}), "SACK")) << "defaults are not repeated";
}

// A hinted-share boost away from its defaults is named on the NSCC
// transports, not on RoCE's DCQCN nor on mrc-fixed, nor without hints.
TEST(Describe, ANonDefaultHintShareIsShownWhereNsccReadsIt) {
  const std::string e = echo({"--transports", "mrc,mrc-fixed,roce", "--mrc-hint-share", "4"});
  const size_t fixed = e.find("mrc-fixed:");
  ASSERT_NE(fixed, std::string::npos) << e;
  EXPECT_TRUE(has(e.substr(0, fixed), ", small hinted shares x 4 up to 8 packets\n")) << e;
  EXPECT_FALSE(has(e.substr(fixed), "hinted shares")) << e;
  EXPECT_TRUE(has(echo({"--mrc-hint-share-cap", "3"}), ", small hinted shares x 2 up to 3 packets\n"));
  EXPECT_FALSE(has(echo({"--mrc-hint-share", "4", "--no-qp-hints"}), "hinted shares")) << "no hint, no share";
  EXPECT_FALSE(has(echo({}), "hinted shares")) << "defaults are not repeated";
}

}  // namespace
}  // namespace mrc::sim::tool
