// SPDX-License-Identifier: BSD-2-Clause
// mrc-sim's command line: every flag is checked by the same rule as its
// scenario-file key (settings.hpp); a bad value is a usage error (exit 2) whose
// message names the flag and what it accepts, never an abort later on.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "mrc-sim/config_file.hpp"
#include "mrc-sim/options.hpp"
#include "sim_cli.hpp"
#include "mrc-sim/settings.hpp"

namespace mrc::sim::tool {
namespace {


struct BadFlag {
  const char* flag;
  const char* value;
  const char* accepted;  ///< part of the message: what the flag accepts
};

// Every numeric flag negative, zero where zero is invalid, absurdly large and
// not a number; every enum flag an unknown name.
const BadFlag kBadFlags[] = {
    {"--planes", "-1", "an integer from 0 to 32"},
    {"--planes", "1.5", "an integer from 0 to 32"},
    {"--planes", "33", "an integer from 0 to 32"},
    {"--hosts", "-64", "an integer from 2 to 1048576"},
    {"--hosts", "0", "an integer from 2 to 1048576"},
    {"--hosts", "99999999999", "an integer from 2 to 1048576"},
    {"--hosts", "64.5", "an integer from 2 to 1048576"},
    {"--t0-down", "-8", "an integer from 1 to 1024"},
    {"--t0-down", "0", "an integer from 1 to 1024"},
    {"--t0-down", "5000", "an integer from 1 to 1024"},
    {"--t0-up", "-1", "an integer from 1 to 1024"},
    {"--t0-up", "0", "an integer from 1 to 1024"},
    {"--t0-up", "1025", "an integer from 1 to 1024"},
    {"--t1", "-1", "an integer from 1 to 1024"},
    {"--t1", "0", "an integer from 1 to 1024"},
    {"--t1", "70000", "an integer from 1 to 1024"},
    {"--pods", "-2", "an integer from 0 to 1024"},
    {"--pods", "2000", "an integer from 0 to 1024"},
    {"--t2", "-2", "an integer from 0 to 1048576"},
    {"--t2", "4294967296", "an integer from 0 to 1048576"},
    {"--rate-gbps", "-100", "a number > 0 and <= 100000"},
    {"--rate-gbps", "0", "a number > 0 and <= 100000"},
    {"--rate-gbps", "1e12", "a number > 0 and <= 100000"},
    {"--rate-gbps", "fast", "a number > 0 and <= 100000"},
    {"--rate-gbps", "inf", "a number > 0 and <= 100000"},
    {"--fabric-rate-gbps", "-1", "a number from 0 to 100000"},
    {"--fabric-rate-gbps", "1e9", "a number from 0 to 100000"},
    {"--link-delay-ns", "-5", "a number from 0 to 1000000000"},
    {"--link-delay-ns", "1e30", "a number from 0 to 1000000000"},
    {"--switch-latency-ns", "-5", "a number from 0 to 1000000000"},
    {"--switch-latency-ns", "nan", "a number from 0 to 1000000000"},
    {"--reconverge-ms", "-1", "a number from 0 to 10000000"},
    {"--reconverge-ms", "1e20", "a number from 0 to 10000000"},
    {"--bytes", "-5", "an integer from 1 to 2147483648"},
    {"--bytes", "0", "an integer from 1 to 2147483648"},
    {"--bytes", "1000000000000", "an integer from 1 to 2147483648"},
    {"--steps", "-1", "an integer from 1 to 100000"},
    {"--steps", "0", "an integer from 1 to 100000"},
    {"--steps", "100001", "an integer from 1 to 100000"},
    {"--compute-us", "-150", "a number from 0 to 10000000000"},
    {"--compute-us", "1e300", "a number from 0 to 10000000000"},
    {"--fan-in", "-8", "an integer from 1 to 1048575"},
    {"--fan-in", "0", "an integer from 1 to 1048575"},
    {"--fan-in", "5000000", "an integer from 1 to 1048575"},
    {"--qps-per-peer", "-1", "an integer from 0 to 256"},
    {"--qps-per-peer", "100000", "an integer from 0 to 256"},
    {"--evs-per-plane", "-32", "an integer from 0 to 4096"},
    {"--evs-per-plane", "5000", "an integer from 0 to 4096"},
    {"--seed", "-1", "an integer from 0 to 18446744073709551615"},
    {"--seed", "18446744073709551616", "an integer from 0 to 18446744073709551615"},
    {"--partitions", "0", "an integer from 1 to 4096"},
    {"--partitions", "2.5", "an integer from 1 to 4096"},
    {"--threads", "-1", "an integer from 0 to 4096"},
    {"--threads", "4097", "an integer from 0 to 4096"},
    {"--memory-limit-gb", "-1", "a number from 0 to 1000000000"},
    {"--memory-limit-gb", "1e12", "a number from 0 to 1000000000"},
    {"--time-limit-ms", "-1", "a number > 0 and <= 10000000"},
    {"--time-limit-ms", "0", "a number > 0 and <= 10000000"},
    {"--time-limit-ms", "1e9", "a number > 0 and <= 10000000"},
    {"--sample-us", "-20", "a number from 0.001 to 10000000000"},
    {"--sample-us", "0", "a number from 0.001 to 10000000000"},
    {"--sample-us", "1e20", "a number from 0.001 to 10000000000"},
    {"--mrc-qps-per-peer", "-1", "an integer from 0 to 256"},
    {"--mrc-qps-per-peer", "257", "an integer from 0 to 256"},
    {"--roce-qps-per-peer", "-1", "an integer from 0 to 256"},
    {"--roce-qps-per-peer", "1000", "an integer from 0 to 256"},
    {"--mrc-ack-timeout", "0", "an integer from 1 to 24"},
    {"--mrc-ack-timeout", "25", "an integer from 1 to 24"},
    {"--roce-ack-timeout", "-3", "an integer from 1 to 24"},
    {"--roce-ack-timeout", "0", "an integer from 1 to 24"},
    {"--roce-ack-timeout", "31", "an integer from 1 to 24"},
    {"--mrc-retry-count", "-1", "an integer from 0 to 32"},
    {"--mrc-retry-count", "33", "an integer from 0 to 32"},
    {"--roce-retry-count", "-1", "an integer from 0 to 32"},
    {"--roce-retry-count", "100", "an integer from 0 to 32"},
    {"--mrc-sack-bytes", "0", "an integer from 256 to 16777216"},
    {"--mrc-sack-bytes", "16777217", "an integer from 256 to 16777216"},
    {"--mrc-sack-ports", "left", "one of spread, arrival"},
    {"--mrc-sack-wait-max-us", "0.5", "a number from 1 to 1000"},
    {"--mrc-sack-wait-max-us", "2000", "a number from 1 to 1000"},
    {"--mrc-sack-wait-gaps", "-1", "an integer from 0 to 64"},
    {"--mrc-sack-wait-gaps", "65", "an integer from 0 to 64"},
    {"--mrc-port-arbiter", "fair", "one of balance, turns"},
    {"--mrc-hint-share", "0", "a number > 0 and <= 65536"},
    {"--mrc-hint-share", "-2", "a number > 0 and <= 65536"},
    {"--mrc-hint-share", "1e6", "a number > 0 and <= 65536"},
    {"--mrc-hint-share-cap", "0", "an integer from 1 to 65536"},
    {"--mrc-hint-share-cap", "70000", "an integer from 1 to 65536"},
    {"--roce-ack-packets", "0", "an integer from 1 to 4096"},
    {"--roce-ack-packets", "-2", "an integer from 1 to 4096"},
    {"--mtu", "0", "one of 256, 512, 1024, 2048, 4096"},
    {"--mtu", "-4096", "one of 256, 512, 1024, 2048, 4096"},
    {"--mtu", "1000", "one of 256, 512, 1024, 2048, 4096"},
    {"--mtu", "9000", "one of 256, 512, 1024, 2048, 4096"},
    {"--base-rtt-us", "-10", "a number from 0 to 1000000"},
    {"--base-rtt-us", "1e9", "a number from 0 to 1000000"},
    {"--plot-from-us", "-1", "a number from 0 to 10000000000"},
    {"--plot-from-us", "1e11", "a number from 0 to 10000000000"},
    {"--plot-to-us", "-5", "a number from 0 to 10000000000"},
    {"--plot-to-us", "nan", "a number from 0 to 10000000000"},
    {"--pcap-host", "-1", "an integer from 0 to 1048575"},
    {"--pcap-host", "1048576", "an integer from 0 to 1048575"},
    {"--pcap-max-packets", "0", "an integer from 1 to 100000000"},
    {"--pcap-max-packets", "many", "an integer from 1 to 100000000"},
    {"--pin-t0-uplink", "-1", "an integer from 0 to 1023"},
    {"--pin-t0-uplink", "1024", "an integer from 0 to 1023"},
    {"--pin-t0-uplink", "up", "an integer from 0 to 1023"},
    {"--topology", "clos", "one of clos2, fattree2, fattree3"},
    {"--routing", "bgp", "one of srv6, ecmp"},
    {"--workload", "ring", "one of train, allreduce, permutation, incast, alltoall, cm"},
    {"--transports", "mrc,rocee", "one of mrc, mrc-fixed"},
    {"--fail", "bogus", "expected kind:key=value"},
    {"--fail", "switch-down:tier=t9,plane=0,index=1,at=1ms", "tier"},
};

TEST(Flags, EveryBadValueIsAUsageErrorNamingTheFlagAndTheRange) {
  for (const BadFlag& b : kBadFlags) {
    const Parsed p = parse({b.flag, b.value});
    EXPECT_EQ(p.rc, 2) << b.flag << " " << b.value;
    EXPECT_EQ(p.error.rfind(std::string(b.flag) + ": ", 0), 0u) << b.flag << " " << b.value << ": " << p.error;
    EXPECT_NE(p.error.find(b.accepted), std::string::npos) << b.flag << " " << b.value << ": " << p.error;
  }
}

TEST(Flags, EveryNumericFlagHasARule) {
  // The table above covers each flag that takes a number: adding a flag
  // without a rule, or without a case here, fails.
  SimOptions o;
  for (const Setting& s : settings(o)) {
    if (!s.flag || std::holds_alternative<bool*>(s.target) || std::holds_alternative<std::string*>(s.target) ||
        std::holds_alternative<std::vector<std::string>*>(s.target))
      continue;
    bool covered = false;
    for (const BadFlag& b : kBadFlags) covered = covered || std::string(b.flag) == s.flag;
    EXPECT_TRUE(covered) << s.flag << " has no bad-value case";
    EXPECT_NE(accepted(s).rfind("any value", 0), 0u) << s.flag << " accepts anything";
  }
}

TEST(Flags, GoodValuesAreAccepted) {
  const Parsed p = parse({"--planes", "4", "--hosts", "32", "--t0-down", "4", "--t0-up", "4", "--t1", "4",
                          "--rate-gbps", "400.5", "--fabric-rate-gbps", "0", "--link-delay-ns", "0",
                          "--switch-latency-ns", "250", "--bytes", "2147483648", "--steps", "1", "--compute-us", "0",
                          "--fan-in", "31", "--qps-per-peer", "256", "--evs-per-plane", "1", "--seed",
                          "18446744073709551615", "--time-limit-ms", "0.5", "--sample-us", "0.001", "--workload",
                          "permutation", "--transports", "mrc,roce-pfc", "--fail",
                          "switch-down:tier=t1,plane=0,index=1,at=1ms"});
  ASSERT_EQ(p.rc, -1) << p.error;
  EXPECT_EQ(p.o.hosts, 32u);
  EXPECT_EQ(p.o.rate_gbps, 400.5);
  EXPECT_EQ(p.o.bytes, uint64_t{1} << 31);
  EXPECT_EQ(p.o.seed, 18446744073709551615ull);
  EXPECT_EQ(p.o.qps_per_peer, 256u);
  EXPECT_EQ(p.o.evs_per_plane, 1u);
  EXPECT_EQ(p.o.transports, (std::vector<std::string>{"mrc", "roce-pfc"}));
  std::string why;
  EXPECT_TRUE(resolve(p.o, &why)) << why;
}

TEST(Flags, TheScenarioFileUsesTheSameRule) {
  // The same bad values in the file: the same words after "[section] key = ".
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"[workload]\nbytes = -5\n", "t.toml:2: [workload] bytes = -5 is out of range (an integer from 1 to 2147483648)"},
      {"[run]\nevs_per_plane = 5000\n",
       "t.toml:2: [run] evs_per_plane = 5000 is out of range (an integer from 0 to 4096; 0 = for the routing: "
       "32 under srv6, 256 and recycling under ecmp)"},
      {"[topology]\nrate_gbps = -100\n",
       "t.toml:2: [topology] rate_gbps = -100 is out of range (a number > 0 and <= 100000)"},
      {"[run]\nsample_us = 0.0\n",
       "t.toml:2: [run] sample_us = 0 is out of range (a number from 0.001 to 10000000000)"},
      {"[topology.queue]\ntrimmed_weight_pct = 101\n",
       "t.toml:2: [topology.queue] trimmed_weight_pct = 101 is out of range (an integer from 0 to 100)"},
  };
  for (const auto& c : cases) {
    SimOptions o;
    std::string why;
    EXPECT_FALSE(load_config_text(c.text, "t.toml", &o, &why)) << c.text;
    EXPECT_EQ(why, c.message);
  }
  // And the flag's message carries the same text.
  EXPECT_EQ(parse({"--evs-per-plane", "5000"})
                .error.rfind("--evs-per-plane: 5000 is out of range (an integer from 0 to 4096; 0 = for the routing", 0),
            0u);
}

TEST(Flags, SettingsThatDoNotFitTogetherAreRefusedByResolve) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--evs-per-plane", "1024"}, "evs_per_plane: 1024 EVs per plane x 8 planes = 8192 EVs per QP; at most 4096"},
      {{"--plot-from-us", "500", "--plot-to-us", "100"}, "plot_to_us (100) must be above plot_from_us (500), or 0"},
      {{"--workload", "alltoall", "--qps-per-peer", "200"}, "qps_per_peer: mrc with 200 QPs per host pair"},
      {{"--workload", "alltoall", "--transports", "roce", "--hosts", "1024", "--t0-down", "32", "--t0-up", "32",
        "--t1", "32"},
       "qps_per_peer: roce with 8 QPs per host pair needs up to 16368 QPs"},
      {{"--base-rtt-us", "281"},
       "--mrc-ack-timeout 6 (65.5 us) is shorter than this fabric's base RTT of 281.0 us (--base-rtt-us): every "
       "packet would time out before its acknowledgement returns; use --mrc-ack-timeout 10 (1048.6 us) or more"},
      {{"--base-rtt-us", "281", "--mrc-ack-timeout", "10"}, "--roce-ack-timeout 6 (65.5 us) is shorter"},
  };
  for (const Case& c : cases) {
    const Parsed p = parse(c.args);
    ASSERT_EQ(p.rc, -1) << p.error;
    std::string why;
    EXPECT_FALSE(resolve(p.o, &why)) << c.message;
    EXPECT_EQ(why.rfind(c.message, 0), 0u) << why;
  }
}

}  // namespace
}  // namespace mrc::sim::tool

namespace mrc::sim::tool {
namespace {

TEST(Flags, TheDefaultFailuresFitTheTopology) {
  std::string why;
  // The default topology: T1 1 of plane 0 reboots, host 5's plane-3 link flaps.
  Parsed p = parse({});
  ASSERT_EQ(p.rc, -1) << p.error;
  auto r = resolve(p.o, &why);
  ASSERT_TRUE(r) << why;
  ASSERT_EQ(r->scenario.failures.size(), 2u);
  EXPECT_EQ(r->scenario.failures[0].sw.index, 1u);
  EXPECT_EQ(r->scenario.failures[1].link.plane, 3u);
  EXPECT_EQ(r->scenario.failures[1].link.a, 5u);
  // Fewer planes, hosts and T1s: the last ones of each, not an error.
  p = parse({"--hosts", "4", "--planes", "2", "--t0-down", "2", "--t0-up", "1", "--t1", "1"});
  ASSERT_EQ(p.rc, -1) << p.error;
  r = resolve(p.o, &why);
  ASSERT_TRUE(r) << why;
  ASSERT_EQ(r->scenario.failures.size(), 2u);
  EXPECT_EQ(r->scenario.failures[0].sw.index, 0u);
  EXPECT_EQ(r->scenario.failures[1].link.plane, 1u);
  EXPECT_EQ(r->scenario.failures[1].link.a, 3u);
  // An ACK timeout at or above the base RTT is accepted; only the
  // transports that run are checked.
  p = parse({"--base-rtt-us", "281", "--mrc-ack-timeout", "10", "--transports", "mrc"});
  ASSERT_EQ(p.rc, -1) << p.error;
  EXPECT_TRUE(resolve(p.o, &why)) << why;
  // --no-default-failures: none.
  p = parse({"--hosts", "16", "--planes", "2", "--no-default-failures"});
  ASSERT_EQ(p.rc, -1) << p.error;
  r = resolve(p.o, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_TRUE(r->scenario.failures.empty());
}

TEST(Flags, PcapSettingsAreCheckedAndNameTheirFiles) {
  std::string why;
  Parsed p = parse({"--pcap-host", "3"});
  ASSERT_EQ(p.rc, -1) << p.error;
  EXPECT_FALSE(resolve(p.o, &why));
  EXPECT_NE(why.find("need pcap"), std::string::npos) << why;
  p = parse({"--pcap", "x.pcap", "--pcap-host", "64"});
  ASSERT_EQ(p.rc, -1) << p.error;
  EXPECT_FALSE(resolve(p.o, &why));
  EXPECT_NE(why.find("pcap_host: 64 is not a host (0 to 63)"), std::string::npos) << why;
  // Two transports (the default): one file each.
  p = parse({"--pcap", "dir/x.pcap", "--pcap-host", "63", "--pcap-max-packets", "5"});
  ASSERT_EQ(p.rc, -1) << p.error;
  auto r = resolve(p.o, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(pcap_file_for(p.o, "mrc"), "dir/x.mrc.pcap");
  EXPECT_EQ(pcap_file_for(p.o, "roce"), "dir/x.roce.pcap");
  EXPECT_NE(describe(p.o, *r).find("capture     dir/x.mrc.pcap, dir/x.roce.pcap: packets leaving host 63's NIC, at "
                                   "most 5 per file"),
            std::string::npos)
      << describe(p.o, *r);
  p = parse({"--pcap", "y", "--transports", "mrc"});
  ASSERT_EQ(p.rc, -1) << p.error;
  EXPECT_EQ(pcap_file_for(p.o, "mrc"), "y");
}

}  // namespace
}  // namespace mrc::sim::tool

namespace mrc::sim::tool {
namespace {

SimOptions clos2_permutation(uint32_t hosts, uint32_t planes, uint32_t evs_per_plane) {
  SimOptions o;
  o.hosts = hosts;
  o.planes = planes;
  o.t0_down = 32;
  o.t0_up = 32;
  o.t1 = 32;
  o.workload = "permutation";
  o.bytes = 65536;
  o.transports = {"mrc"};
  o.evs_per_plane = evs_per_plane;
  o.default_failures = false;
  return o;
}

TEST(Memory, EstimateFollowsTheMeasuredPeaks) {
  // Peak RSS of release builds (/usr/bin/time -v), the model's calibration.
  const struct {
    uint32_t hosts, evs;
    double mb;
  } measured[] = {{1024, 2, 58.2}, {1024, 32, 81.2}, {1024, 64, 106.0}, {4096, 32, 308.7}};
  for (const auto& m : measured) {
    const double est = static_cast<double>(estimate_memory(clos2_permutation(m.hosts, 8, m.evs)).bytes) / 1e6;
    EXPECT_NEAR(est, m.mb, 0.1 * m.mb) << m.hosts << " hosts, " << m.evs << " EVs per plane";
  }
  // A fat tree has more switch ports per host-plane (5, against 3): 1,024
  // hosts, 8 planes of a k = 16 fattree3, took 95.8 MB.
  SimOptions ft3 = clos2_permutation(1024, 8, 32);
  ft3.topology = "fattree3";
  ft3.t0_down = ft3.t0_up = ft3.t1 = 8;
  EXPECT_NEAR(static_cast<double>(estimate_memory(ft3).bytes) / 1e6, 95.8, 0.05 * 95.8);
  // Packets in flight: 1 MiB flows on 51.2T switches (bench/scale.sh, 16
  // EVs per plane) took 477 and 962 MB at 4,096 and 8,192 hosts, where the
  // same fabrics with 64 KiB flows took 265 and 525 MB.
  SimOptions big = clos2_permutation(4096, 8, 16);
  big.t0_down = big.t0_up = big.t1 = 256;
  auto big_mb = [&big](uint32_t hosts, uint32_t bytes) {
    big.hosts = hosts;
    big.bytes = bytes;
    return static_cast<double>(estimate_memory(big).bytes) / 1e6;
  };
  for (const auto& [hosts, mb, small_mb] : {std::tuple{4096u, 477.0, 265.0}, std::tuple{8192u, 962.0, 525.0}}) {
    EXPECT_NEAR(big_mb(hosts, 1 << 20), mb, 0.1 * mb) << hosts << " hosts, 1 MiB";
    EXPECT_NEAR(big_mb(hosts, 65536), small_mb, 0.1 * small_mb) << hosts << " hosts";
  }
  // Run to completion: 786 MB with 512 KiB flows at 8,192 hosts; the
  // paper's fabric (8 planes x 131,072 hosts) took 8,122 MB with 64 KiB
  // flows and 12,551 MB with 512 KiB flows (and a T1 down).
  EXPECT_NEAR(big_mb(8192, 512 << 10), 786.0, 0.07 * 786.0);
  EXPECT_NEAR(big_mb(131072, 65536), 8122.0, 0.07 * 8122.0);
  EXPECT_NEAR(big_mb(131072, 512 << 10), 12551.0, 0.07 * 12551.0);
  // One plane: a host's own state is not spread over 8 of them. 116 MB at
  // 4,096 hosts with 64 KiB flows, 1,172 MB at 32,768 with 1 MiB flows.
  big.planes = 1;
  EXPECT_NEAR(big_mb(4096, 65536), 116.0, 0.07 * 116.0);
  EXPECT_NEAR(big_mb(32768, 1 << 20), 1172.0, 0.07 * 1172.0);
  // The paper's fabric (8 planes x 131,072 hosts) fits a 24 GB machine; 32
  // planes x 524,288 hosts does not.
  const uint64_t paper = estimate_memory(clos2_permutation(131072, 8, 32)).bytes;
  EXPECT_GT(paper, uint64_t{8'000'000'000});
  EXPECT_LT(paper, uint64_t{24'000'000'000});
  EXPECT_GT(estimate_memory(clos2_permutation(524288, 32, 32)).bytes, uint64_t{24'000'000'000});
  // Each QP of an all-to-all holds EVs: it grows with the square of the hosts.
  SimOptions a2a = clos2_permutation(1024, 8, 32);
  a2a.workload = "alltoall";
  EXPECT_GT(estimate_memory(a2a).bytes, 300 * estimate_memory(clos2_permutation(1024, 8, 32)).bytes);
}

TEST(Memory, ARunThatDoesNotFitIsRefusedBeforeItIsBuilt) {
  SimOptions o = clos2_permutation(4096, 8, 32);
  EXPECT_EQ(memory_refusal(o), "");  // no limit known
  o.memory_available_bytes = uint64_t{1} << 40;
  EXPECT_EQ(memory_refusal(o), "");
  o.memory_available_bytes = 100'000'000;
  std::string why = memory_refusal(o);
  EXPECT_NE(why.find("needs about 0.3 GB"), std::string::npos) << why;
  EXPECT_NE(why.find("more than the memory available (0.1 GB)"), std::string::npos) << why;
  for (const char* flag : {"--hosts", "--planes", "--evs-per-plane 16", "--memory-limit-gb"})
    EXPECT_NE(why.find(flag), std::string::npos) << flag << " in: " << why;
  // resolve() refuses it with that message (before it builds its probe
  // fabric, which a run too large for the machine could not).
  SimOptions limited = o;
  limited.memory_limit_gb = 0.2;
  EXPECT_FALSE(resolve(limited, &why));
  EXPECT_NE(why.find("more than --memory-limit-gb (0.2 GB)"), std::string::npos) << why;
  o.memory_limit_gb = 1;  // the flag wins over what the machine has
  EXPECT_EQ(memory_refusal(o), "");
  EXPECT_TRUE(resolve(o, &why)) << why;
}

TEST(Memory, UnderMpiTheEstimateAndTheLimitAreOneRanks) {
  // Each rank builds the switches, NICs, QPs, EVs and packets of its own
  // hosts and partitions: the figure and the limit are one rank's.
  SimOptions o = clos2_permutation(4096, 8, 32);
  const MemoryEstimate one = estimate_memory(o);
  o.ranks = 2;
  const MemoryEstimate two = estimate_memory(o);
  o.ranks = 4;
  const MemoryEstimate four = estimate_memory(o);
  EXPECT_EQ(one.bytes, one.total_bytes);
  EXPECT_EQ(two.total_bytes, one.bytes);
  EXPECT_LT(two.bytes, one.bytes);
  EXPECT_GT(two.bytes, one.bytes / 2);  // link records and the other hosts' stand-ins are on every rank
  EXPECT_LT(four.bytes, two.bytes);
  // 1,024 hosts, a 4 MiB permutation at 400 Gb/s (bench/partitions.sh's):
  // 171 MB per rank on 2 ranks, 652 MB at 4,096 hosts (the dev build).
  SimOptions bench = clos2_permutation(1024, 8, 32);
  bench.t0_down = bench.t0_up = bench.t1 = 8;
  bench.rate_gbps = 400;
  bench.bytes = 4 << 20;
  bench.ranks = 2;
  for (const auto& [hosts, mb] : {std::pair{1024u, 171.0}, std::pair{4096u, 652.0}}) {
    bench.hosts = hosts;
    EXPECT_NEAR(static_cast<double>(estimate_memory(bench).bytes) / 1048576.0, mb, 0.1 * mb) << hosts << " hosts";
  }
  o.ranks = 2;
  o.memory_limit_gb = static_cast<double>(two.bytes + one.bytes) / 2 / 1e9;  // between one rank's and the whole
  EXPECT_EQ(memory_refusal(o), "");
  o.memory_limit_gb = static_cast<double>(two.bytes) / 2 / 1e9;
  const std::string why = memory_refusal(o);
  EXPECT_NE(why.find(" per MPI rank (2 ranks; "), std::string::npos) << why;
  EXPECT_NE(why.find("more than --memory-limit-gb"), std::string::npos) << why;
  EXPECT_NE(why.find("run on more ranks (mpirun -np)"), std::string::npos) << why;
}

TEST(Flags, EvsPerPlaneZeroPicksTheEvSetForTheRouting) {
  // SRv6: each EV names its path, 32 per plane; ECMP: the switches hash the
  // EV, so 256 per plane, recycled (at most 4096 per QP over the planes).
  const auto resolved = [](const std::vector<std::string>& args) {
    std::vector<std::string> all = {"--transports", "mrc", "--no-default-failures"};
    all.insert(all.end(), args.begin(), args.end());
    const Parsed p = parse(all);
    EXPECT_EQ(p.rc, -1) << p.error;
    std::string why;
    auto r = resolve(p.o, &why);
    if (!r) {
      ADD_FAILURE() << why;
      return std::pair{0u, false};
    }
    return std::pair{r->transports.at(0).evs_per_plane, r->scenario.protocol.ev_recycle};
  };
  EXPECT_EQ(resolved({}), std::pair(32u, false));
  EXPECT_EQ(resolved({"--routing", "ecmp"}), std::pair(256u, true));
  EXPECT_EQ(resolved({"--routing", "ecmp", "--planes", "32"}), std::pair(128u, true));
  EXPECT_EQ(resolved({"--routing", "ecmp", "--evs-per-plane", "32"}), std::pair(32u, false));
  EXPECT_EQ(resolved({"--routing", "ecmp", "--evs-per-plane", "32", "--mrc-ev-recycle"}), std::pair(32u, true));
  EXPECT_EQ(resolved({"--evs-per-plane", "16"}), std::pair(16u, false));
}

}  // namespace
}  // namespace mrc::sim::tool
