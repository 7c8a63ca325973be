// SPDX-License-Identifier: BSD-2-Clause
// Tests for util/pool.hpp: acquire/release, reuse, live counts, and that
// constructors and destructors run exactly once per object.
#include "util/pool.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace mrc {
namespace {

struct Tracked {
  static inline int ctor = 0;
  static inline int dtor = 0;
  static void reset_counts() { ctor = dtor = 0; }
  explicit Tracked(int v = 0, std::string s = "") : value(v), text(std::move(s)) { ++ctor; }
  ~Tracked() { ++dtor; }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  int value;
  std::string text;  // non-trivial member: a missing destructor call leaks
};

TEST(ObjectPool, AcquireConstructsWithArguments) {
  Tracked::reset_counts();
  ObjectPool<Tracked> pool;
  EXPECT_EQ(pool.live(), 0u);
  Tracked* a = pool.acquire(7, std::string(100, 'x'));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->value, 7);
  EXPECT_EQ(a->text, std::string(100, 'x'));
  Tracked* b = pool.acquire();
  EXPECT_EQ(b->value, 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.live(), 2u);
  EXPECT_EQ(Tracked::ctor, 2);
  EXPECT_EQ(Tracked::dtor, 0);
  pool.release(a);
  EXPECT_EQ(pool.live(), 1u);
  EXPECT_EQ(Tracked::dtor, 1);
  pool.release(b);
  EXPECT_EQ(pool.live(), 0u);
  EXPECT_EQ(Tracked::ctor, 2);
  EXPECT_EQ(Tracked::dtor, 2);
}

TEST(ObjectPool, ManyObjectsAreDistinctAndIntact) {
  Tracked::reset_counts();
  ObjectPool<Tracked, 8> pool;
  std::vector<Tracked*> objs;
  for (int i = 0; i < 100; ++i) objs.push_back(pool.acquire(i));
  EXPECT_EQ(pool.live(), 100u);
  std::set<Tracked*> distinct(objs.begin(), objs.end());
  EXPECT_EQ(distinct.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(objs[i]->value, i);
  // Release every other one, reacquire, and check the survivors are untouched.
  for (int i = 0; i < 100; i += 2) pool.release(objs[i]);
  EXPECT_EQ(pool.live(), 50u);
  for (int i = 0; i < 100; i += 2) objs[i] = pool.acquire(1000 + i);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(objs[i]->value, i % 2 ? i : 1000 + i);
  for (Tracked* p : objs) pool.release(p);
  EXPECT_EQ(pool.live(), 0u);
  EXPECT_EQ(Tracked::ctor, 150);
  EXPECT_EQ(Tracked::dtor, 150);
}

#if !defined(MRC_POOL_HEAP_FALLBACK)
// Storage recycling is only observable when the pool is not in its
// AddressSanitizer new/delete mode.
TEST(ObjectPool, ReusesReleasedStorage) {
  ObjectPool<Tracked, 4> pool;
  EXPECT_EQ(pool.capacity(), 0u);
  Tracked* a = pool.acquire(1);
  EXPECT_EQ(pool.capacity(), 4u);
  pool.release(a);
  Tracked* b = pool.acquire(2);
  EXPECT_EQ(a, b);  // LIFO free list hands back the last released slot
  EXPECT_EQ(b->value, 2);
  pool.release(b);
  EXPECT_EQ(pool.capacity(), 4u);
}

TEST(ObjectPool, GrowsByChunks) {
  ObjectPool<Tracked, 4> pool;
  std::vector<Tracked*> v;
  for (int i = 0; i < 4; ++i) v.push_back(pool.acquire(i));
  EXPECT_EQ(pool.capacity(), 4u);
  v.push_back(pool.acquire(4));
  EXPECT_EQ(pool.capacity(), 8u);
  for (Tracked* p : v) pool.release(p);
  // Releasing does not shrink, and a steady state does not grow.
  for (int round = 0; round < 10; ++round) {
    v.clear();
    for (int i = 0; i < 8; ++i) v.push_back(pool.acquire(i));
    for (Tracked* p : v) pool.release(p);
  }
  EXPECT_EQ(pool.capacity(), 8u);
  EXPECT_EQ(pool.live(), 0u);
}
#endif

struct alignas(64) Wide {
  uint8_t bytes[100];
};

TEST(ObjectPool, RespectsAlignment) {
  ObjectPool<Wide, 3> pool;
  std::vector<Wide*> v;
  for (int i = 0; i < 10; ++i) {
    v.push_back(pool.acquire());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.back()) % 64, 0u);
  }
  for (Wide* p : v) pool.release(p);
}

TEST(ObjectPool, SmallTypes) {
  // T smaller than a pointer: the slot must still hold the free-list link.
  ObjectPool<uint8_t, 16> pool;
  std::vector<uint8_t*> v;
  for (int i = 0; i < 40; ++i) v.push_back(pool.acquire(static_cast<uint8_t>(i)));
  for (int i = 0; i < 40; ++i) EXPECT_EQ(*v[i], i);
  for (uint8_t* p : v) pool.release(p);
  EXPECT_EQ(pool.live(), 0u);
}

// Objects that travel: pool `b` releases what `a` handed out into a chain,
// and `a` takes the chain back whole; `a` then serves them again without
// growing, and each object was destroyed once, when released.
TEST(ObjectPool, ObjectsReleasedElsewhereGoHomeInOneChain) {
  Tracked::reset_counts();
  ObjectPool<Tracked, 8> a, b;
  std::vector<Tracked*> objs;
  for (int i = 0; i < 8; ++i) objs.push_back(a.acquire(i));
  const size_t capacity = a.capacity();
  ObjectPool<Tracked, 8>::Chain home;
  for (Tracked* t : objs) b.release_into(home, t);
  EXPECT_EQ(home.count, 8u);
  EXPECT_EQ(Tracked::dtor, 8);
  EXPECT_EQ(a.live(), 8u);  // until they are back
  a.take_back(home);
  EXPECT_EQ(a.live(), 0u);
  EXPECT_EQ(home.count, 0u);
  EXPECT_EQ(b.live(), 0u);
  for (int i = 0; i < 8; ++i) objs[static_cast<size_t>(i)] = a.acquire(i);
  EXPECT_EQ(a.capacity(), capacity);
  for (Tracked* t : objs) a.release(t);
  EXPECT_EQ(Tracked::ctor, 16);
  EXPECT_EQ(Tracked::dtor, 16);
}

}  // namespace
}  // namespace mrc
