// SPDX-License-Identifier: BSD-2-Clause
// Tests for sim/fabric/pipe.hpp: arrival times, FIFO order with one pending
// event, dead pipes, flushing, gray loss, serialization.
#include "sim/fabric/pipe.hpp"

#include <gtest/gtest.h>

#include "sim_test_util.hpp"

namespace mrc::sim {
namespace {

constexpr uint64_t k100G = 100'000'000'000ull;

struct PipeRig {
  Simulator sim{1};
  FabricContext ctx;
  Pipe pipe;
  test::Sink sink;
  explicit PipeRig(Duration delay = Duration::ns(500), uint64_t bps = k100G) {
    ctx.sim = &sim;
    pipe.init(&ctx, bps, delay, 7);
    pipe.connect_to_host(3, 2);
    pipe.attach_nic(&sink);
  }
};

TEST(Pipe, DeliversAtDonePlusDelayInOrderWithOnePendingEvent) {
  PipeRig r;
  for (int i = 0; i < 100; ++i)
    r.pipe.send(test::make_packet(r.sim, 0, 3, 1000), Time::zero() + Duration::ns(10) * i);
  EXPECT_EQ(r.sim.pending_events(), 1u);
  EXPECT_EQ(r.pipe.in_flight(), 100u);
  r.sim.run_until(Time::never());
  ASSERT_EQ(r.sink.rx.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(r.sink.rx[i].at, Time::zero() + Duration::ns(10) * i + Duration::ns(500));
    EXPECT_EQ(r.sink.rx[i].port, 2);  // the plane the NIC sees it on
    EXPECT_EQ(r.sink.rx[i].hops, 1);
    if (i) {
      EXPECT_GT(r.sink.rx[i].id, r.sink.rx[i - 1].id);
    }
  }
  EXPECT_EQ(r.ctx.stats.packets_forwarded, 100u);
  EXPECT_EQ(r.ctx.stats.delivered, 100u);
  EXPECT_EQ(r.pipe.packets(), 100u);
  EXPECT_EQ(r.pipe.bytes(), 100u * (1000 + 48 + kWireOverhead));
  // Every event processed delivered at least one packet: one event per packet here.
  EXPECT_EQ(r.sim.events_processed(), 100u);
}

TEST(Pipe, PacketsArrivingTogetherShareOneEvent) {
  PipeRig r;
  for (int i = 0; i < 5; ++i) r.pipe.send(test::make_packet(r.sim, 0, 3, 10), Time::zero());
  r.sim.run_until(Time::never());
  EXPECT_EQ(r.sink.rx.size(), 5u);
  EXPECT_EQ(r.sim.events_processed(), 1u);
}

TEST(Pipe, DeadPipeLosesWhatIsSentIntoIt) {
  PipeRig r;
  r.pipe.set_alive(false);
  r.pipe.send(test::make_packet(r.sim, 0, 3, 10), Time::zero());
  EXPECT_EQ(r.ctx.stats.drops_link_down, 1u);
  EXPECT_EQ(r.sim.live_packets(), 0u);
  EXPECT_EQ(r.sim.pending_events(), 0u);
}

TEST(Pipe, FlushLosesInFlightAndThePipeCarriesOnAfterwards) {
  PipeRig r;
  for (int i = 0; i < 4; ++i) r.pipe.send(test::make_packet(r.sim, 0, 3, 10), Time::zero() + Duration::ns(i));
  EXPECT_EQ(r.pipe.flush(), 4u);
  EXPECT_EQ(r.ctx.stats.drops_link_down, 4u);
  EXPECT_EQ(r.sim.live_packets(), 0u);
  r.pipe.send(test::make_packet(r.sim, 0, 3, 10), Time::zero() + Duration::ns(100));
  r.sim.run_until(Time::never());
  ASSERT_EQ(r.sink.rx.size(), 1u);
  EXPECT_EQ(r.sink.rx[0].at, Time::zero() + Duration::ns(600));
}

TEST(Pipe, GrayLossRateAndDeterminism) {
  auto run = [](uint64_t* delivered) {
    PipeRig r(Duration::ns(1));
    r.pipe.set_loss(0.25);
    for (int i = 0; i < 20000; ++i) r.pipe.send(test::make_packet(r.sim, 0, 3, 10), Time::zero() + Duration::ns(i));
    r.sim.run_until(Time::never());
    *delivered = r.sink.rx.size();
    EXPECT_EQ(r.ctx.stats.drops_random + r.sink.rx.size(), 20000u);
    return r.ctx.stats.drops_random;
  };
  uint64_t d1 = 0, d2 = 0;
  const uint64_t lost = run(&d1);
  EXPECT_NEAR(static_cast<double>(lost) / 20000.0, 0.25, 0.015);
  EXPECT_EQ(run(&d2), lost);  // same seed, same losses
  EXPECT_EQ(d1, d2);
}

TEST(Pipe, SerializationMatchesDurationSerialization) {
  PipeRig r;
  for (uint64_t bps : {k100G, uint64_t{400'000'000'000}, uint64_t{37'000'000'000}, uint64_t{25'000'000'000},
                       uint64_t{1'000'000'007}}) {
    r.pipe.set_rate(bps);
    for (uint32_t bytes : {1u, 64u, 138u, 4234u, 9000u})
      EXPECT_EQ(r.pipe.serialization(bytes), Duration::serialization(bytes, bps)) << bps << " " << bytes;
  }
}

}  // namespace
}  // namespace mrc::sim
