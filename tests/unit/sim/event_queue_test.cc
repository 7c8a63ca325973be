// SPDX-License-Identifier: BSD-2-Clause
// Tests for sim/engine/event_queue.hpp: the timing wheel (with its heap for far
// events) pops events in (time, key) order, whatever order they were pushed
// in, exactly as a reference priority queue.
#include "sim/engine/event_queue.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "util/prng.hpp"

namespace mrc::sim {
namespace {

struct Ref {
  int64_t at;
  uint64_t key;
  uint64_t tag;
  bool operator>(const Ref& o) const { return std::tie(at, key) > std::tie(o.at, o.key); }
};

// A distinct key in random order: random high bits above a counter, as
// entities with random ids counting their own events would give.
uint64_t random_key(Prng& rng, uint64_t& seq) { return (rng.below(1u << 20) << 24) | seq++; }

// Pushes and pops 100k events with random times drawn from a small range (so
// many share a time) in random interleaving, comparing every pop.
TEST(EventQueue, MatchesReferenceOrderOn100kRandomEvents) {
  Prng rng(42);
  EventQueue q;
  std::priority_queue<Ref, std::vector<Ref>, std::greater<>> ref;
  uint64_t seq = 0;
  size_t pushed = 0, popped = 0;
  int64_t floor_ps = 0;  // a simulator never schedules before the last pop
  while (pushed < 100'000 || !ref.empty()) {
    const bool push = pushed < 100'000 && (ref.empty() || rng.below(100) < 55);
    if (push) {
      const int64_t at = floor_ps + static_cast<int64_t>(rng.below(64));
      const uint64_t key = random_key(rng, seq);
      q.push(Time::from_ps(at), nullptr, pushed, key);
      ref.push(Ref{at, key, pushed});
      ++pushed;
    } else {
      ASSERT_FALSE(q.empty());
      ASSERT_EQ(q.size(), ref.size());
      EXPECT_EQ(q.top().tag, ref.top().tag);
      const Event e = q.pop();
      ASSERT_EQ(e.tag, ref.top().tag) << "pop " << popped;
      ASSERT_EQ(e.at.ps(), ref.top().at);
      floor_ps = e.at.ps();
      ref.pop();
      ++popped;
    }
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(popped, 100'000u);
}

// Times spread from picoseconds to milliseconds ahead, some far beyond
// anything queued, with the queue often nearly empty: wheel buckets, wrap-around
// and the far-event heap are all used and refilled.
TEST(EventQueue, MatchesReferenceAcrossTimeScales) {
  Prng rng(7);
  EventQueue q;
  std::priority_queue<Ref, std::vector<Ref>, std::greater<>> ref;
  uint64_t seq = 0, tag = 0;
  int64_t floor_ps = 0;
  for (int round = 0; round < 200'000; ++round) {
    const uint64_t r = rng.below(100);
    if (r < 20 && !ref.empty()) {
      // Peeking (as run_until does) must not disturb later pushes.
      ASSERT_EQ(q.top().tag, ref.top().tag);
      continue;
    }
    if (r < 62 || ref.empty()) {
      static const int64_t kScale[] = {0, 1, 1'000, 100'000, 10'000'000, 1'000'000'000};
      const int64_t scale = kScale[rng.below(6)];
      const int64_t at = floor_ps + (scale ? static_cast<int64_t>(rng.below(static_cast<uint64_t>(scale))) : 0);
      const uint64_t key = random_key(rng, seq);
      q.push(Time::from_ps(at), nullptr, tag, key);
      ref.push(Ref{at, key, tag++});
    } else {
      const Event e = q.pop();
      ASSERT_EQ(e.tag, ref.top().tag) << "round " << round;
      ASSERT_EQ(e.at.ps(), ref.top().at);
      floor_ps = e.at.ps();
      ref.pop();
    }
  }
  while (!ref.empty()) {
    ASSERT_EQ(q.pop().tag, ref.top().tag);
    ref.pop();
  }
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, PushAfterPeekingAheadStillOrders) {
  EventQueue q;
  q.push(Time::from_ps(100), nullptr, 1, 1);
  q.push(Time::from_ps(1'000'000), nullptr, 2, 2);
  EXPECT_EQ(q.pop().tag, 1u);
  EXPECT_EQ(q.top().tag, 2u);  // looks ahead to 1 us
  q.push(Time::from_ps(500), nullptr, 3, 3);
  q.push(Time::from_ps(500), nullptr, 4, 4);
  q.push(Time::from_ps(200), nullptr, 5, 5);
  q.push(Time::from_ps(1'000'000), nullptr, 6, 6);
  std::vector<uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().tag);
  EXPECT_EQ(order, (std::vector<uint64_t>{5, 3, 4, 2, 6}));
}

// 1000 events at one time, pushed in reverse key order: a batch large
// enough for the radix sort, whose stable order by time alone the key must
// then override.
TEST(EventQueue, EqualTimesPopInKeyOrderNotInsertionOrder) {
  EventQueue q;
  for (uint64_t i = 0; i < 1000; ++i) q.push(Time::from_ps(7), nullptr, i, event_key(3, 999 - i));
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_EQ(q.pop().tag, 999 - i);
}

// One bucket holding runs of equal times from 1 to 200 events long, keys in
// random order: short runs are put in key order in place, long ones by a
// merge sort (a fabric's hosts all start at the same picosecond); both must
// give the reference order.
TEST(EventQueue, RunsOfEqualTimesLongAndShortPopInKeyOrder) {
  Prng rng(11);
  EventQueue q;
  std::priority_queue<Ref, std::vector<Ref>, std::greater<>> ref;
  uint64_t seq = 0, tag = 0;
  std::vector<Ref> all;
  for (int64_t at = 0; at < 40; ++at)
    for (uint64_t i = 0, n = 1 + rng.below(at % 4 == 0 ? 200 : 8); i < n; ++i)
      all.push_back(Ref{1'000'000 + at * 50, random_key(rng, seq), tag++});  // a wheel bucket, not the heap
  for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng.below(i)]);
  for (const Ref& r : all) {
    q.push(Time::from_ps(r.at), nullptr, r.tag, r.key);
    ref.push(r);
  }
  while (!ref.empty()) {
    const Event e = q.pop();
    ASSERT_EQ(e.tag, ref.top().tag);
    ref.pop();
  }
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, KeyBreaksTiesAcrossInterleavedTimes) {
  EventQueue q;
  q.push(Time::from_ps(5), nullptr, 1, event_key(2, 0));
  q.push(Time::from_ps(3), nullptr, 2, event_key(2, 1));
  q.push(Time::from_ps(5), nullptr, 3, event_key(1, 7));
  q.push(Time::from_ps(3), nullptr, 4, event_key(1, 8));
  std::vector<uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().tag);
  EXPECT_EQ(order, (std::vector<uint64_t>{4, 2, 3, 1}));
}

// Same-time events pushed into the batch being drained (push_slow) and into
// the far heap (timers) still come out in key order.
TEST(EventQueue, KeyOrdersTiesInTheDrainedBatchAndTheHeap) {
  EventQueue q;
  q.push(Time::from_ps(10), nullptr, 1, event_key(5, 0));
  q.push(Time::from_ps(10), nullptr, 2, event_key(9, 0));
  EXPECT_EQ(q.pop().tag, 1u);  // the batch of bucket 0 is being drained
  q.push(Time::from_ps(10), nullptr, 3, event_key(7, 0));
  q.push(Time::from_ps(10), nullptr, 4, event_key(6, 0));
  q.push(Time::from_ps(50'000'000), nullptr, 5, event_key(8, 0));  // beyond the wheel: the heap
  q.push(Time::from_ps(50'000'000), nullptr, 6, event_key(4, 0));
  std::vector<uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().tag);
  EXPECT_EQ(order, (std::vector<uint64_t>{4, 3, 2, 6, 5}));
}

TEST(EventQueue, EventKeyPacksEntityAboveItsCount) {
  EXPECT_LT(event_key(1, (uint64_t{1} << kEventSeqBits) - 1), event_key(2, 0));
  EXPECT_EQ(event_key(1, uint64_t{1} << kEventSeqBits), event_key(1, 0));  // the count wraps within the entity
  EventKeys k(42);
  EXPECT_EQ(k.next(), event_key(42, 0));
  EXPECT_EQ(k.next(), event_key(42, 1));
  EXPECT_EQ(k.entity(), 42u);
}

}  // namespace
}  // namespace mrc::sim
