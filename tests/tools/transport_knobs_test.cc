// SPDX-License-Identifier: BSD-2-Clause
// Transport knobs: QPs per host pair, ACK timeout and retry count per
// transport family (mrc*, roce*), the path MTU, the base RTT (derived from
// the topology unless set) and ECN marking at dequeue; each a flag and a
// scenario-file key under the same rule.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mrc-sim/config_file.hpp"
#include "mrc-sim/options.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric.hpp"

namespace mrc::sim::tool {
namespace {

ResolvedRun resolved(std::vector<std::string> args) {
  args.insert(args.begin(), "mrc-sim");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  SimOptions o;
  std::string error;
  EXPECT_EQ(parse_command_line(static_cast<int>(argv.size()), argv.data(), &o, &error), -1) << error;
  std::string why;
  auto run = resolve(o, &why);
  EXPECT_TRUE(run) << why;
  return run ? *run : ResolvedRun{};
}

TEST(TransportKnobs, DefaultsAreTheTransportDefaults) {
  const ResolvedRun r = resolved({});
  ASSERT_EQ(r.transports.size(), 2u);
  const TransportSpec d;
  for (const TransportSpec& t : r.transports) {
    EXPECT_EQ(t.timeout, d.timeout);
    EXPECT_EQ(t.retry_linear, d.retry_linear);
    EXPECT_EQ(t.retry_exp, d.retry_exp);
    EXPECT_EQ(t.mtu, 4096u);
  }
  EXPECT_EQ(r.transports[0].qps_per_peer, 1u) << "mrc";
  EXPECT_EQ(r.transports[1].qps_per_peer, 8u) << "roce: one per plane";
}

TEST(TransportKnobs, EachFamilyGetsItsOwnKnobs) {
  const ResolvedRun r =
      resolved({"--transports", "mrc,roce,mrc-oblivious", "--mrc-qps-per-peer", "4", "--roce-qps-per-peer", "2",
                "--roce-ack-timeout", "10", "--roce-retry-count", "3", "--mrc-ack-timeout", "12",
                "--mrc-retry-count", "10", "--mtu", "1024"});
  ASSERT_EQ(r.transports.size(), 3u);
  const TransportSpec& mrc = r.transports[0];
  const TransportSpec& roce = r.transports[1];
  EXPECT_EQ(mrc.qps_per_peer, 4u);
  EXPECT_EQ(r.transports[2].qps_per_peer, 4u) << "mrc-oblivious is an mrc transport";
  EXPECT_EQ(roce.qps_per_peer, 2u);
  EXPECT_EQ(roce.timeout, 10u);
  EXPECT_EQ(roce.retry_linear + roce.retry_exp, 3) << "3 retries, then the QP fails";
  EXPECT_EQ(mrc.timeout, 12u);
  EXPECT_EQ(mrc.retry_linear, 7u);
  EXPECT_EQ(mrc.retry_exp, 3u);
  for (const TransportSpec& t : r.transports) EXPECT_EQ(t.mtu, 1024u);
  EXPECT_EQ(r.scenario.protocol.sack_bytes_threshold, 16384u) << "the reference's default";
  EXPECT_EQ(r.scenario.protocol.rc_ack_packets, 16u);
  EXPECT_TRUE(r.scenario.protocol.spread_sacks);
  EXPECT_EQ(r.scenario.protocol.sack_coalesce_max, Duration::us(16));
  EXPECT_EQ(r.scenario.protocol.sack_coalesce_gaps, 2u);
  EXPECT_TRUE(r.scenario.balance_peer_ports);
  const ResolvedRun a = resolved({"--mrc-sack-bytes", "65536", "--roce-ack-packets", "4", "--mrc-sack-ports", "arrival",
                                  "--mrc-sack-wait-max-us", "1", "--mrc-port-arbiter", "turns", "--mrc-sack-wait-gaps",
                                  "0"});
  EXPECT_EQ(a.scenario.protocol.sack_coalesce_gaps, 0u);
  EXPECT_FALSE(a.scenario.balance_peer_ports);
  EXPECT_EQ(a.scenario.protocol.sack_bytes_threshold, 65536u);
  EXPECT_EQ(a.scenario.protocol.rc_ack_packets, 4u);
  EXPECT_FALSE(a.scenario.protocol.spread_sacks);
  EXPECT_EQ(a.scenario.protocol.sack_coalesce_max, Duration::us(1));
  EXPECT_EQ(a.scenario.protocol.sack_coalesce_max, a.scenario.protocol.sack_coalesce_delay) << "the old fixed timer";
  // --qps-per-peer is the fallback of both families.
  const ResolvedRun q = resolved({"--qps-per-peer", "3", "--roce-qps-per-peer", "5"});
  EXPECT_EQ(q.transports[0].qps_per_peer, 3u);
  EXPECT_EQ(q.transports[1].qps_per_peer, 5u);
}

TEST(TransportKnobs, BaseRttIsDerivedFromTheTopologyUnlessSet) {
  const ResolvedRun r = resolved({"--link-delay-ns", "2000"});
  Simulator sim(1);
  Fabric f(sim, r.scenario.topology);
  EXPECT_EQ(r.scenario.topology.base_rtt, f.max_one_way_latency() * 2);
  EXPECT_GT(r.scenario.topology.base_rtt, Duration::us(10)) << "longer links, longer RTT than the old fixed 10 us";
  EXPECT_TRUE(r.scenario.derive_base_rtt) << "the runner derives the protocol's the same way";

  const ResolvedRun s = resolved({"--base-rtt-us", "25"});
  EXPECT_EQ(s.scenario.topology.base_rtt, Duration::us(25));
  EXPECT_FALSE(s.scenario.derive_base_rtt);
  EXPECT_EQ(s.scenario.protocol.base_rtt, Duration::us(25));
}

TEST(TransportKnobs, ScenarioFileKeys) {
  SimOptions o;
  std::string why;
  ASSERT_TRUE(load_config_text("[run]\nmtu = 2048\nroce_ack_timeout = 9\nroce_retry_count = 7\nmrc_qps_per_peer = 2\n"
                               "roce_qps_per_peer = 4\nmrc_ack_timeout = 5\nmrc_retry_count = 0\nbase_rtt_us = 8.5\n"
                               "mrc_sack_bytes = 32768\nroce_ack_packets = 8\nmrc_sack_ports = \"arrival\"\n"
                               "mrc_sack_wait_max_us = 2.5\nmrc_port_arbiter = \"turns\"\n"
                               "[topology.queue]\necn_at_dequeue = true\n",
                               "t.toml", &o, &why))
      << why;
  EXPECT_EQ(o.mtu, 2048u);
  EXPECT_EQ(o.roce_ack_timeout, 9u);
  EXPECT_EQ(o.roce_retry_count, 7u);
  EXPECT_EQ(o.mrc_qps_per_peer, 2u);
  EXPECT_EQ(o.roce_qps_per_peer, 4u);
  EXPECT_EQ(o.mrc_ack_timeout, 5u);
  EXPECT_EQ(o.mrc_retry_count, 0u);
  EXPECT_EQ(o.base_rtt_us, 8.5);
  EXPECT_EQ(o.mrc_sack_bytes, 32768u);
  EXPECT_EQ(o.roce_ack_packets, 8u);
  EXPECT_EQ(o.mrc_sack_ports, "arrival");
  EXPECT_EQ(o.mrc_sack_wait_max_us, 2.5);
  EXPECT_EQ(o.mrc_port_arbiter, "turns");
  EXPECT_TRUE(o.queue.ecn_at_dequeue);
  SimOptions p;
  EXPECT_FALSE(load_config_text("[run]\nmtu = 1500\n", "t.toml", &p, &why));
  EXPECT_EQ(why, "t.toml:2: [run] mtu = 1500 is out of range (one of 256, 512, 1024, 2048, 4096)");
}

// A small incast that builds a queue at the target's T0: marking at dequeue
// sees the queue each packet leaves behind, so it marks a different set.
RunResult incast(bool at_dequeue) {
  SimOptions o;
  o.hosts = 8;
  o.t0_down = 4;
  o.t0_up = 2;
  o.t1 = 2;
  o.planes = 1;
  o.workload = "incast";
  o.fan_in = 4;
  o.bytes = 256 * 1024;
  o.default_failures = false;
  o.queue.ecn_at_dequeue = at_dequeue;
  std::string why;
  auto run = resolve(o, &why);
  EXPECT_TRUE(run) << why;
  return run_scenario(run->scenario, run->transports[0]);
}

TEST(TransportKnobs, EcnAtDequeueMarksTheQueueLeftBehind) {
  const RunResult enq = incast(false);
  const RunResult deq = incast(true);
  EXPECT_TRUE(enq.completed);
  EXPECT_TRUE(deq.completed);
  EXPECT_GT(enq.fabric.ecn_marks, 0u);
  EXPECT_GT(deq.fabric.ecn_marks, 0u);
  EXPECT_NE(enq.fabric.ecn_marks, deq.fabric.ecn_marks);
}

TEST(TransportKnobs, SmallerMtuSendsMorePackets) {
  auto hops = [](uint32_t mtu) {
    SimOptions o;
    o.hosts = 8;
    o.t0_down = 4;
    o.t0_up = 2;
    o.t1 = 2;
    o.planes = 2;
    o.workload = "permutation";
    o.bytes = 64 * 1024;
    o.default_failures = false;
    o.transports = {"mrc"};
    o.mtu = mtu;
    std::string why;
    auto run = resolve(o, &why);
    EXPECT_TRUE(run) << why;
    const RunResult r = run_scenario(run->scenario, run->transports[0]);
    EXPECT_TRUE(r.completed);
    return r.fabric.packets_forwarded;
  };
  const uint64_t full = hops(4096), small = hops(1024);
  EXPECT_GT(small, full * 3) << "a quarter of the payload per packet";
}

}  // namespace
}  // namespace mrc::sim::tool
