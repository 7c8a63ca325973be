// SPDX-License-Identifier: BSD-2-Clause
// Tests for core/mr_table.hpp: registration, keys, and the rkey / lkey
// checks every WRITE goes through (reference 3.6).
#include "core/mr_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>

namespace mrc::core {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kRw = access::kRemoteWrite | access::kLocalWrite;

TEST(MrTable, RegisterGivesNonZeroDistinctKeys) {
  MrTable t(Prng(5));
  std::set<uint32_t> lkeys, rkeys;
  for (uint64_t i = 0; i < 200; ++i) {
    auto mr = t.reg(0x10000 + i * 0x1000, 0x1000, kRw);
    ASSERT_TRUE(mr.ok());
    EXPECT_EQ(mr->addr, 0x10000 + i * 0x1000);
    EXPECT_EQ(mr->length, 0x1000u);
    EXPECT_EQ(mr->access, kRw);
    EXPECT_TRUE(mr->backed);
    EXPECT_NE(mr->lkey, 0u);
    EXPECT_NE(mr->rkey, 0u);
    lkeys.insert(mr->lkey);
    rkeys.insert(mr->rkey);
  }
  EXPECT_EQ(lkeys.size(), 200u);
  EXPECT_EQ(rkeys.size(), 200u);
  EXPECT_EQ(t.size(), 200u);
}

TEST(MrTable, KeysAreDeterministicPerSeed) {
  MrTable a(Prng(9)), b(Prng(9)), c(Prng(10));
  auto ma = a.reg(0x1000, 0x100, kRw), mb = b.reg(0x1000, 0x100, kRw), mc = c.reg(0x1000, 0x100, kRw);
  ASSERT_TRUE(ma.ok() && mb.ok() && mc.ok());
  EXPECT_EQ(ma->lkey, mb->lkey);
  EXPECT_EQ(ma->rkey, mb->rkey);
  EXPECT_NE(ma->rkey, mc->rkey);
}

TEST(MrTable, RegisterRejectsEmptyAndWrappingRanges) {
  MrTable t(Prng(1));
  EXPECT_EQ(t.reg(0x1000, 0, kRw).error(), Errc::invalid_argument);
  EXPECT_EQ(t.reg(kMax - 10, 100, kRw).error(), Errc::invalid_argument);
  EXPECT_EQ(t.reg(1, kMax, kRw).error(), Errc::invalid_argument);
  EXPECT_EQ(t.size(), 0u);
  // A region that ends just below 2^64 can be registered.
  auto top = t.reg(kMax - 0xFF, 0xFF, kRw);
  ASSERT_TRUE(top.ok());
  EXPECT_NE(t.check_remote_write(kDefaultPd, top->rkey, kMax - 0xFF, 0xFF), nullptr);
}

TEST(MrTable, SimulatedMemoryIsNotBacked) {
  MrTable t(Prng(1));
  auto mr = t.reg(0x1000, 0x1000, kRw, /*backed=*/false);
  ASSERT_TRUE(mr.ok());
  EXPECT_FALSE(mr->backed);
  const MemoryRegion* r = t.check_remote_write(kDefaultPd, mr->rkey, 0x1000, 0x1000);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->backed);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, mr->rkey, 0x1800, 0x801), nullptr);  // bounds still enforced
}

TEST(MrTable, DeregRemovesBothKeys) {
  MrTable t(Prng(1));
  auto a = t.reg(0x1000, 0x1000, kRw);
  auto b = t.reg(0x4000, 0x1000, kRw);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(t.dereg(a->lkey).ok());
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, a->rkey, 0x1000, 16), nullptr);
  EXPECT_EQ(t.check_local(kDefaultPd, a->lkey, 0x1000, 16), nullptr);
  EXPECT_NE(t.check_remote_write(kDefaultPd, b->rkey, 0x4000, 16), nullptr);
  EXPECT_NE(t.check_local(kDefaultPd, b->lkey, 0x4000, 16), nullptr);
  EXPECT_EQ(t.dereg(a->lkey), Errc::not_found);  // twice
  EXPECT_EQ(t.dereg(b->rkey == b->lkey ? 0 : b->rkey), Errc::not_found);  // an rkey is not an lkey
  EXPECT_EQ(t.dereg(0), Errc::not_found);
}

TEST(MrTable, CheckRemoteWrite) {
  MrTable t(Prng(3));
  auto mr = t.reg(0x10000, 0x1000, kRw);
  auto ro = t.reg(0x20000, 0x1000, access::kLocalWrite);  // no remote write
  ASSERT_TRUE(mr.ok() && ro.ok());
  const uint32_t rk = mr->rkey;
  // Exact fit, sub-ranges, zero-length at either end.
  const MemoryRegion* r = t.check_remote_write(kDefaultPd, rk, 0x10000, 0x1000);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->rkey, rk);
  EXPECT_EQ(r->addr, 0x10000u);
  EXPECT_NE(t.check_remote_write(kDefaultPd, rk, 0x10000, 1), nullptr);
  EXPECT_NE(t.check_remote_write(kDefaultPd, rk, 0x10FFF, 1), nullptr);
  EXPECT_NE(t.check_remote_write(kDefaultPd, rk, 0x10800, 0x800), nullptr);
  EXPECT_NE(t.check_remote_write(kDefaultPd, rk, 0x11000, 0), nullptr);
  // Unknown key, an lkey used as rkey, no remote-write access.
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk ^ 0x5A5A5A5A, 0x10000, 16), nullptr);
  if (mr->lkey != rk) {
    EXPECT_EQ(t.check_remote_write(kDefaultPd, mr->lkey, 0x10000, 16), nullptr);
  }
  EXPECT_EQ(t.check_remote_write(kDefaultPd, 0, 0x10000, 16), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, ro->rkey, 0x20000, 16), nullptr);
  // Starts before / ends after / entirely outside.
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, 0xFFFF, 16), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, 0xFFFF, 1), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, 0x10FF1, 16), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, 0x10000, 0x1001), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, 0x11000, 1), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, 0x11001, 0), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, 0, 16), nullptr);
  // Integer overflow: va + len wraps around to inside the region.
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, 0x10010, kMax - 0xF), nullptr);  // va + len == 0x10000 (mod 2^64)
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, 0x10010, kMax), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, kMax - 4, 16), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, rk, kMax, 1), nullptr);
}

TEST(MrTable, CheckRemoteWriteNearTopOfAddressSpace) {
  MrTable t(Prng(3));
  const uint64_t base = kMax - 0x1000;  // [kMax-0x1000, kMax-0x800)
  auto mr = t.reg(base, 0x800, kRw);
  ASSERT_TRUE(mr.ok());
  EXPECT_NE(t.check_remote_write(kDefaultPd, mr->rkey, base, 0x800), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, mr->rkey, base, 0x801), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, mr->rkey, base + 0x10, kMax), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, mr->rkey, base + 0x10, 0x1001), nullptr);  // end wraps past 2^64
  EXPECT_EQ(t.check_remote_write(kDefaultPd, mr->rkey, kMax, 2), nullptr);
}

TEST(MrTable, CheckLocal) {
  MrTable t(Prng(4));
  auto mr = t.reg(0x10000, 0x1000, kRw);
  auto ro = t.reg(0x20000, 0x1000, access::kRemoteWrite);
  ASSERT_TRUE(mr.ok() && ro.ok());
  const uint32_t lk = mr->lkey;
  const MemoryRegion* r = t.check_local(kDefaultPd, lk, 0x10000, 0x1000);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->lkey, lk);
  EXPECT_NE(t.check_local(kDefaultPd, lk, 0x10FFF, 1), nullptr);
  EXPECT_NE(t.check_local(kDefaultPd, lk, 0x10400, 0x400), nullptr);
  // The source of a WRITE is only read, so local-write access is not needed.
  EXPECT_NE(t.check_local(kDefaultPd, ro->lkey, 0x20000, 0x1000), nullptr);
  EXPECT_EQ(t.check_local(kDefaultPd, lk ^ 0x5A5A5A5A, 0x10000, 16), nullptr);
  if (mr->rkey != lk) {
    EXPECT_EQ(t.check_local(kDefaultPd, mr->rkey, 0x10000, 16), nullptr);
  }
  EXPECT_EQ(t.check_local(kDefaultPd, 0, 0x10000, 16), nullptr);
  EXPECT_EQ(t.check_local(kDefaultPd, lk, 0xFFFF, 2), nullptr);
  EXPECT_EQ(t.check_local(kDefaultPd, lk, 0x10FF1, 16), nullptr);
  EXPECT_EQ(t.check_local(kDefaultPd, lk, 0x10000, 0x1001), nullptr);
  EXPECT_EQ(t.check_local(kDefaultPd, lk, 0x11000, 1), nullptr);
  EXPECT_EQ(t.check_local(kDefaultPd, lk, 0x10010, kMax - 0xF), nullptr);
  EXPECT_EQ(t.check_local(kDefaultPd, lk, kMax - 4, 16), nullptr);
  EXPECT_EQ(t.check_local(kDefaultPd, lk, 0x10000, kMax), nullptr);
  // A key from another region does not cover this one.
  EXPECT_EQ(t.check_local(kDefaultPd, ro->lkey, 0x10000, 16), nullptr);
}


TEST(MrTable, KeysOfAnotherProtectionDomainAreRefused) {
  MrTable t(Prng(3));
  auto a = t.reg(0x10000, 0x1000, kRw, true, /*pd=*/1);
  auto b = t.reg(0x20000, 0x1000, kRw, true, /*pd=*/2);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->pd, 1u);
  EXPECT_NE(t.check_remote_write(1, a->rkey, 0x10000, 16), nullptr);
  EXPECT_EQ(t.check_remote_write(2, a->rkey, 0x10000, 16), nullptr);
  EXPECT_EQ(t.check_remote_write(kDefaultPd, a->rkey, 0x10000, 16), nullptr);
  EXPECT_NE(t.check_local(2, b->lkey, 0x20000, 16), nullptr);
  EXPECT_EQ(t.check_local(1, b->lkey, 0x20000, 16), nullptr);
  // The one-entry rkey cache must not let a second PD through either.
  EXPECT_NE(t.check_remote_write(1, a->rkey, 0x10000, 16), nullptr);
  EXPECT_EQ(t.check_remote_write(2, a->rkey, 0x10000, 16), nullptr);
  EXPECT_EQ(t.count_in_pd(1), 1u);
  EXPECT_EQ(t.count_in_pd(3), 0u);
}

TEST(MrTable, AReferencedRegionCannotBeDeregistered) {
  MrTable t(Prng(4));
  auto a = t.reg(0x10000, 0x1000, kRw);
  ASSERT_TRUE(a.ok());
  t.acquire(a->lkey);
  t.acquire(a->lkey);
  EXPECT_EQ(t.refs(a->lkey), 2u);
  EXPECT_EQ(t.dereg(a->lkey).error(), Errc::busy);
  EXPECT_NE(t.check_local(kDefaultPd, a->lkey, 0x10000, 16), nullptr);  // still there
  t.release(a->lkey);
  EXPECT_EQ(t.dereg(a->lkey).error(), Errc::busy);
  t.release(a->lkey);
  EXPECT_TRUE(t.dereg(a->lkey).ok());
  EXPECT_EQ(t.refs(a->lkey), 0u);
}

TEST(MrTable, KeysComeFromTheInjectedSource) {
  uint64_t calls = 0;
  MrTable t(EntropySource([&calls] { return 0x1122334455667788ull + calls++; }));
  auto a = t.reg(0x10000, 0x1000, kRw);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->lkey, 0x55667788u);
  EXPECT_EQ(a->rkey, 0x11223344u);
  EXPECT_EQ(calls, 1u);
}

}  // namespace
}  // namespace mrc::core
