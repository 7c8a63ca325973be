// SPDX-License-Identifier: BSD-2-Clause
// Claims about ports that fail and are repaired (reference 4.7): a repaired
// port comes back into use on both sides, in any repair order, whatever is
// lost while it comes back. Port-status updates are re-sent until the peer
// answers them, and a sender re-checks with a probe a plane its peer
// reports down. Each test also runs the reference's behaviour (updates sent
// a fixed number of times, no re-check) to show what the mechanism buys.
#include <gtest/gtest.h>

#include <array>

#include "core/test_fabric.hpp"
#include "wire/packet.hpp"

namespace mrc {
namespace {

using harness::Action;
using harness::Fabric;
using harness::Packet;
using harness::PacketKind;
using harness::Rule;
using testing::at_ms;
using testing::at_us;

constexpr int kPlane = 3;

// 2 hosts, 4 planes at 5 Gb/s: a 64 MiB WRITE each way lasts ~27 ms, long
// enough to watch a plane fail and come back.
harness::FabricConfig slow_fabric(uint64_t seed, Duration max_interval, Duration recheck) {
  harness::FabricConfig fc = testing::small_fabric(seed);
  fc.port_rate_bps = 5'000'000'000ull;
  fc.carry_payload = false;
  fc.endpoint.protocol.port_status_max_interval = max_interval;
  fc.endpoint.protocol.peer_port_recheck = recheck;
  return fc;
}

// Data packets each host sends on kPlane after `from`, and when it first
// does.
struct PlaneUse {
  std::array<uint64_t, 2> after{};
  Time from;
  Time first[2] = {Time::never(), Time::never()};
};

// Starts a 64 MiB WRITE each way and counts data packets on kPlane.
void start_traffic(Fabric& f, PlaneUse& use) {
  const auto qp = f.connect(0, 1, testing::default_qp());
  const auto back = f.connect(1, 0, testing::default_qp());
  constexpr size_t kBytes = 64 << 20;
  for (auto [host, peer, qpn] : {std::tuple{0, 1, qp.a}, std::tuple{1, 0, back.a}}) {
    auto& src = f.alloc(host, kBytes);
    auto& dst = f.alloc(peer, kBytes);
    core::SendWr wr;
    wr.local_addr = src.addr();
    wr.lkey = src.mr.lkey;
    wr.length = kBytes;
    wr.remote_addr = dst.addr();
    wr.rkey = dst.mr.rkey;
    ASSERT_TRUE(f.ep(host).post_send(f.now(), qpn, wr).ok());
    f.kick(host);
  }
  f.on_transmit = [&use](const Packet& p, Time t) {
    if (p.kind() != PacketKind::data || p.plane != kPlane || t < use.from) return;
    ++use.after[static_cast<size_t>(p.src)];
    if (use.first[p.src] == Time::never()) use.first[p.src] = t;
  };
}

// Drops endpoint requests from `src` (all planes) during [from, until).
void drop_requests(Fabric& f, int src, Time from, Time until) {
  Rule r;
  r.match.src = src;
  r.match.opcode = static_cast<int>(wire::Opcode::endpoint_request);
  r.match.from = from;
  r.match.until = until;
  f.add_rule(r);
}

// Host 1's port 3 fails at 1 ms (its updates arrive) and is repaired at
// 3 ms; every port-status update host 1 sends in [3 ms, 6 ms) is lost.
// Returns when host 0 first sends data on the plane again after the repair.
Time lost_update_case(Duration max_interval) {
  Fabric f(slow_fabric(41, max_interval, Duration{}));
  PlaneUse use;
  use.from = at_ms(3);
  start_traffic(f, use);
  drop_requests(f, 1, at_ms(3), at_ms(6));
  f.run_until(at_ms(1));
  f.ep(1).set_port_up(f.now(), kPlane, false);
  f.kick(1);
  f.run_until(at_ms(3));
  f.ep(1).set_port_up(f.now(), kPlane, true);
  f.kick(1);
  f.run_until(at_ms(20));
  return use.first[0];
}

TEST(PortRepair, AnUpdateLostOnTheWayIsResentUntilThePeerAnswers) {
  // Re-sent at 50 us x 3, then 100, 200, ... 1600 us: the send at about
  // 6.2 ms is the first after the loss ends.
  const Time back = lost_update_case(Duration::ms(10));
  EXPECT_GE(back, at_ms(6));
  EXPECT_LE(back, at_us(6400)) << "the re-sent update puts the plane back in use";
  // The reference's three unanswered sends are all lost: the plane stays
  // out of use toward host 1 although it works.
  EXPECT_EQ(lost_update_case(Duration{}), Time::never());
}

// Host 1's port 3 fails and is repaired, but none of its port-status
// updates reach host 0 after the failure was reported: only host 0's
// re-check probe can find the plane working again.
Time unheard_repair_case(Duration recheck, core::EndpointStats* st0 = nullptr) {
  Fabric f(slow_fabric(42, Duration::ms(10), recheck));
  PlaneUse use;
  use.from = at_ms(3);
  start_traffic(f, use);
  drop_requests(f, 1, at_us(1500), Time::never());
  f.run_until(at_ms(1));
  f.ep(1).set_port_up(f.now(), kPlane, false);
  f.kick(1);
  f.run_until(at_ms(3));
  f.ep(1).set_port_up(f.now(), kPlane, true);
  f.kick(1);
  f.run_until(at_ms(20));
  if (st0 != nullptr) *st0 = f.ep(0).stats();
  return use.first[0];
}

TEST(PortRepair, APlaneThePeerReportsDownIsRecheckedWithAProbe) {
  core::EndpointStats st;
  const Time back = unheard_repair_case(Duration::ms(1), &st);
  // Re-checks every 1 ms from the report at ~1 ms: the one at ~3 ms may
  // just miss the repair; the next answers.
  EXPECT_LE(back, at_us(4100));
  EXPECT_EQ(st.peer_ports_restored, 1u);
  EXPECT_GE(st.peer_port_rechecks, 2u) << "probes while the port was down went unanswered";
  EXPECT_EQ(unheard_repair_case(Duration{}), Time::never()) << "without re-checks the plane never returns";
}

// The whole plane fails (both hosts' port 3 and every path of plane 3),
// then both ports are repaired, `first` 200 us before the other. Every
// endpoint operation (updates, probes, answers) is lost until 3.5 ms, half
// of them until 5 ms. first = -1: nothing fails (the reference run).
PlaneUse whole_plane_case(int first) {
  Fabric f(slow_fabric(43, Duration::ms(10), Duration::ms(1)));
  PlaneUse use;
  use.from = at_ms(6);
  start_traffic(f, use);
  if (first >= 0) {
    Rule dark;
    dark.match.plane = kPlane;
    dark.match.from = at_ms(1);
    dark.match.until = at_ms(3);
    f.add_rule(dark);
    for (auto op : {wire::Opcode::endpoint_request, wire::Opcode::endpoint_response}) {
      Rule lost;  // every update the repairs send at once
      lost.match.opcode = static_cast<int>(op);
      lost.match.from = at_us(2900);
      lost.match.until = at_us(3500);
      f.add_rule(lost);
      Rule lossy = lost;
      lossy.match.from = lost.match.until;
      lossy.match.until = at_ms(5);
      lossy.select = Rule::Select::random;
      lossy.probability = 0.5;
      f.add_rule(lossy);
    }
  }
  f.run_until(at_ms(1));
  if (first >= 0) {
    for (int h : {0, 1}) {
      f.ep(h).set_port_up(f.now(), kPlane, false);
      f.kick(h);
    }
    f.run_until(at_ms(3));
    f.ep(first).set_port_up(f.now(), kPlane, true);
    f.kick(first);
    f.run_until(at_us(3200));
    f.ep(1 - first).set_port_up(f.now(), kPlane, true);
    f.kick(1 - first);
  }
  f.run_until(at_ms(25));
  return use;
}

TEST(PortRepair, AWholePlaneComesBackInEitherRepairOrderDespiteLoss) {
  const PlaneUse healthy = whole_plane_case(-1);
  for (int first : {0, 1}) {
    SCOPED_TRACE(first == 0 ? "host 0 repaired first" : "host 1 repaired first");
    const PlaneUse use = whole_plane_case(first);
    // From 6 ms (a re-send or re-check interval after the lossy window)
    // both directions give the plane its full share, as if nothing failed.
    for (size_t h : {0u, 1u}) {
      EXPECT_LE(use.first[h], at_us(6100)) << "host " << h;
      EXPECT_GE(use.after[h], healthy.after[h] * 9 / 10) << "host " << h;
    }
  }
}

TEST(PortRepair, SettingsAreCheckedUpFront) {
  core::EndpointConfig ec;
  ec.ports.assign(2, core::PortConfig{100'000'000'000ull});
  std::string why;
  ec.protocol.port_status_max_interval = Duration::us(10);  // below the 50 us interval
  EXPECT_FALSE(core::Endpoint::create(ec, &why).ok());
  EXPECT_NE(why.find("port_status_max_interval"), std::string::npos) << why;
  ec.protocol.port_status_max_interval = Duration::ms(10);
  ec.protocol.peer_port_recheck = Duration::us(-1);
  EXPECT_FALSE(core::Endpoint::create(ec, &why).ok());
  EXPECT_NE(why.find("peer_port_recheck"), std::string::npos) << why;
}

}  // namespace
}  // namespace mrc
