// SPDX-License-Identifier: BSD-2-Clause
// Tests for sim/engine/simulator.hpp: run_until, stop, scheduling in the
// past, random streams.
#include "sim/engine/simulator.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "sim_test_util.hpp"

namespace mrc::sim {
namespace {

class Recorder final : public Node {
 public:
  std::vector<std::pair<Time, uint64_t>> seen;
  Simulator* stop_on = nullptr;
  uint64_t stop_tag = ~uint64_t{0};
  void on_event(Simulator& sim, uint64_t tag) override {
    seen.emplace_back(sim.now(), tag);
    if (tag == stop_tag) sim.stop();
  }
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }
};

TEST(Simulator, RunUntilProcessesUpToAndIncludingEnd) {
  Simulator sim(1);
  Recorder r;
  sim.schedule(Time::from_ps(10), &r, 1, event_key(1, 1));
  sim.schedule(Time::from_ps(20), &r, 2, event_key(1, 2));
  sim.schedule(Time::from_ps(30), &r, 3, event_key(1, 3));
  EXPECT_TRUE(sim.run_until(Time::from_ps(20)));
  ASSERT_EQ(r.seen.size(), 2u);
  EXPECT_EQ(sim.now(), Time::from_ps(20));
  EXPECT_FALSE(sim.run_until(Time::from_ps(100)));
  EXPECT_EQ(r.seen.size(), 3u);
  EXPECT_EQ(sim.now(), Time::from_ps(100));
  EXPECT_EQ(sim.events_processed(), 3u);
}

TEST(Simulator, PastEventsRunNowAndStopHalts) {
  Simulator sim(1);
  Recorder r;
  sim.schedule(Time::from_ps(50), &r, 1, event_key(1, 1));
  sim.run_until(Time::from_ps(50));
  sim.schedule(Time::from_ps(10), &r, 2, event_key(1, 2));  // in the past: runs at now
  r.stop_tag = 2;
  sim.schedule(Time::from_ps(60), &r, 3, event_key(1, 3));
  EXPECT_TRUE(sim.run_until(Time::never()));
  ASSERT_EQ(r.seen.size(), 2u);
  EXPECT_EQ(r.seen[1].first, Time::from_ps(50));
  EXPECT_TRUE(sim.stopped());
}

// Events at the same time run in key order, not in the order they were
// scheduled in.
TEST(Simulator, SameTimeEventsRunInKeyOrder) {
  Simulator sim(1);
  Recorder r;
  EventKeys a = sim.new_keys(), b = sim.new_keys();
  EXPECT_LT(a.entity(), b.entity());
  sim.schedule(Time::from_ps(10), &r, 1, b.next());
  sim.schedule(Time::from_ps(10), &r, 2, a.next());
  sim.schedule(Time::from_ps(10), &r, 3, a.next());
  sim.run_until(Time::never());
  ASSERT_EQ(r.seen.size(), 3u);
  EXPECT_EQ(r.seen[0].second, 2u);
  EXPECT_EQ(r.seen[1].second, 3u);
  EXPECT_EQ(r.seen[2].second, 1u);
}

TEST(Simulator, RandomStreamsAreReproducibleAndIndependent) {
  Simulator a(7), b(7);
  Prng x = a.rng_for(3), y = b.rng_for(3), z = a.rng_for(4);
  const uint64_t vx = x.next_u64();
  EXPECT_EQ(vx, y.next_u64());
  EXPECT_NE(vx, z.next_u64());
}

TEST(Simulator, PacketPoolCountsLivePackets) {
  Simulator sim(1);
  Packet* p = test::make_packet(sim, 0, 1, 100);
  EXPECT_EQ(sim.live_packets(), 1u);
  sim.free_packet(p);
  EXPECT_EQ(sim.live_packets(), 0u);
}

}  // namespace
}  // namespace mrc::sim
