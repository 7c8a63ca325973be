// SPDX-License-Identifier: BSD-2-Clause
// Tests for util/result.hpp: Result<T>, Status, errno mapping and names.
#include "util/result.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

namespace mrc {
namespace {

TEST(Result, HoldsValue) {
  Result<int> r = 42;
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.error(), Errc::ok);
  EXPECT_EQ(r.value(), 42);
  EXPECT_EQ(*r, 42);
  *r = 7;
  EXPECT_EQ(r.value(), 7);
}

TEST(Result, HoldsError) {
  Result<int> r = Errc::truncated;
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.error(), Errc::truncated);
  Result<int> d = Errc::done;
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.error(), Errc::done);
}

TEST(Result, ArrowAndConstAccess) {
  struct P { int a; int b; };
  Result<P> r = P{1, 2};
  EXPECT_EQ(r->a, 1);
  r->b = 5;
  const Result<P>& cr = r;
  EXPECT_EQ(cr->b, 5);
  EXPECT_EQ((*cr).a, 1);
  EXPECT_EQ(cr.value().b, 5);
}

TEST(Result, MoveOnlyValue) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(9);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 9);
}

TEST(Result, StringValue) {
  Result<std::string> r = std::string("abc");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 3u);
}

TEST(Status, DefaultOkAndErrors) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(static_cast<bool>(s));
  EXPECT_EQ(s.error(), Errc::ok);
  EXPECT_TRUE(s == Errc::ok);
  Status e = Errc::would_block;
  EXPECT_FALSE(e.ok());
  EXPECT_FALSE(static_cast<bool>(e));
  EXPECT_EQ(e.error(), Errc::would_block);
  EXPECT_TRUE(e == Errc::would_block);
  EXPECT_FALSE(e == Errc::busy);
}

TEST(Errc, NumericRangesAreStable) {
  // The ranges are part of the contract (usage 1..99, protocol 100..199, resource 200..).
  EXPECT_EQ(static_cast<int>(Errc::ok), 0);
  EXPECT_EQ(static_cast<int>(Errc::done), 1);
  EXPECT_EQ(static_cast<int>(Errc::invalid_argument), 10);
  EXPECT_EQ(static_cast<int>(Errc::bad_state), 18);
  EXPECT_EQ(static_cast<int>(Errc::truncated), 100);
  EXPECT_EQ(static_cast<int>(Errc::length_mismatch), 103);
  EXPECT_EQ(static_cast<int>(Errc::io), 200);
  EXPECT_EQ(static_cast<int>(Errc::timed_out), 201);
}

struct ErrcCase {
  Errc e;
  int err;
  const char* name;
};

constexpr ErrcCase kAll[] = {
    {Errc::ok, 0, "ok"},
    {Errc::done, 0, "done"},
    {Errc::invalid_argument, EINVAL, "invalid_argument"},
    {Errc::not_found, ENOENT, "not_found"},
    {Errc::busy, EBUSY, "busy"},
    {Errc::would_block, EAGAIN, "would_block"},
    {Errc::too_big, E2BIG, "too_big"},
    {Errc::not_supported, EOPNOTSUPP, "not_supported"},
    {Errc::no_memory, ENOMEM, "no_memory"},
    {Errc::permission, EPERM, "permission"},
    {Errc::bad_state, EINVAL, "bad_state"},
    {Errc::truncated, EBADMSG, "truncated"},
    {Errc::malformed, EBADMSG, "malformed"},
    {Errc::unknown_opcode, EBADMSG, "unknown_opcode"},
    {Errc::length_mismatch, EBADMSG, "length_mismatch"},
    {Errc::io, EIO, "io"},
    {Errc::timed_out, ETIMEDOUT, "timed_out"},
};

TEST(Errc, ToErrnoAndToString) {
  for (const auto& c : kAll) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(to_errno(c.e), c.err);
    EXPECT_EQ(to_string(c.e), c.name);
  }
  static_assert(to_errno(Errc::would_block) == EAGAIN);
}

TEST(Errc, OutOfRangeValues) {
  const auto bogus = static_cast<Errc>(9999);
  EXPECT_EQ(to_errno(bogus), EIO);
  EXPECT_EQ(to_string(bogus), "unknown");
}

}  // namespace
}  // namespace mrc
