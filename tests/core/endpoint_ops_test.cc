// SPDX-License-Identifier: BSD-2-Clause
// Endpoint operations in the harness, whose paths have known delays
// (reference 6.3.7): an EV probe measures the round trip of the path its EV
// takes, both ways, and only that path. A QP's counters read alone agree
// with a whole query.
#include <gtest/gtest.h>

#include <map>

#include "endpoint_pair.hpp"
#include "harness/fabric.hpp"

using namespace mrc;
using namespace mrc::harness;

TEST(EndpointOps, AnEvProbeMeasuresTheRoundTripOfThePathItsEvTakes) {
  FabricConfig fc;
  fc.planes = 1;
  fc.paths_per_plane = 4;
  fc.path_delay = Duration::us(2);
  fc.path_delay_step = Duration::us(3);  // path k: 2 + 3k us each way
  Fabric f(fc);
  (void)f.connect(0, 1);  // a QP makes each host a known peer of the other
  std::map<uint16_t, Duration> expected;
  std::map<int, int> per_path;
  uint16_t req = 1;
  for (uint32_t ev = 1000; ev < 1016; ++ev, ++req) {
    // Both directions of an EV take the same path index (the harness
    // hashes the sorted host pair), and the answer echoes the EV.
    const int k = f.path_of(0, 1, ev);
    ASSERT_EQ(k, f.path_of(1, 0, ev));
    ++per_path[k];
    expected[req] = (fc.path_delay + fc.path_delay_step * k) * 2;
    ASSERT_TRUE(f.ep(0).send_ev_probe(f.now(), req, /*peer=*/1, /*port=*/0, ev, Duration::ms(1)).ok());
  }
  ASSERT_GE(per_path.size(), 3u) << "the EVs should cover most paths";
  f.kick(0);
  std::map<uint16_t, core::ProbeResult> got;
  f.run_until([&] {
    for (const Event& e : f.events(0))
      if (auto* r = std::get_if<core::ProbeResult>(&e)) got[r->req_id] = *r;
    return got.size() == expected.size();
  }, Time::zero() + Duration::ms(2));
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [id, rtt] : expected) {
    const core::ProbeResult& r = got[id];
    EXPECT_TRUE(r.answered) << "probe " << id;
    EXPECT_EQ(r.rx_port, 0);
    // Propagation both ways, plus two serializations of a small packet at
    // 100 Gb/s and the probes queued ahead of it on the port (16 x ~10 ns).
    EXPECT_GE(r.rtt, rtt) << "probe " << id;
    EXPECT_LT(r.rtt, rtt + Duration::ns(500)) << "probe " << id << ": " << r.rtt.to_us() << " us vs " << rtt.to_us();
  }
}

TEST(EndpointOps, AQpsCountersAloneAgreeWithTheWholeQuery) {
  core::test_support::EndpointPair p;
  // Every fourth packet from A is lost once: retransmissions, losses and
  // suspected EVs to count.
  uint64_t n = 0;
  p.filter = [&n](const core::test_support::Sent& s) { return s.from != core::test_support::kHostA || ++n % 4 != 0; };
  ASSERT_TRUE(p.write(1, 256 * 1024).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(5)));
  for (auto [ep, qpn] : {std::pair{p.a.get(), p.qa}, std::pair{p.b.get(), p.qb}}) {
    const auto info = ep->query_qp(qpn);
    ASSERT_TRUE(info.has_value());
    core::QpStats st;
    core::PathStats ps;
    ASSERT_TRUE(ep->query_qp_counters(qpn, &st, &ps));
    EXPECT_EQ(st.data_packets_sent, info->stats.data_packets_sent);
    EXPECT_EQ(st.retransmissions, info->stats.retransmissions);
    EXPECT_EQ(st.data_packets_received, info->stats.data_packets_received);
    EXPECT_EQ(ps.suspected, info->path.suspected);
    EXPECT_EQ(ps.cleared, info->path.cleared);
  }
  EXPECT_GT(p.qp_a().stats().retransmissions, 0u);
  core::QpStats untouched;
  untouched.retransmissions = 77;
  EXPECT_FALSE(p.a->query_qp_counters(0xABCDEF, &untouched));
  EXPECT_EQ(untouched.retransmissions, 77u) << "nothing written for an unknown QPN";
}
