// SPDX-License-Identifier: BSD-2-Clause
// Claims: the same seed reproduces the same packet trace bit for bit, and
// PSNs wrap around 2^24 without a hiccup (issue 2).
#include <gtest/gtest.h>

#include "core/test_fabric.hpp"

namespace mrc {
namespace {

using harness::Action;
using harness::Fabric;
using harness::Rule;
using testing::at_ms;

struct Trace {
  uint64_t hash;
  Time finish;
  uint64_t events;
};

Trace lossy_run(uint64_t seed) {
  Fabric f(testing::small_fabric(seed));
  Rule drop;
  drop.select = Rule::Select::random;
  drop.probability = 0.01;
  f.add_rule(drop);
  Rule delay;
  delay.action = Action::delay;
  delay.select = Rule::Select::random;
  delay.probability = 0.2;
  delay.extra_delay = Duration::us(2);
  f.add_rule(delay);
  f.path_down(2, 1, Time::zero() + Duration::us(50));
  const auto qp = f.connect(0, 1, testing::default_qp());
  const auto res = harness::write_and_wait(f, qp, 0, 1, 8 << 20, at_ms(20));
  EXPECT_TRUE(res.completed);
  return Trace{f.trace_hash(), res.finish, f.stats().sent};
}

TEST(Determinism, SameSeedSameTrace) {
  const Trace a = lossy_run(77);
  const Trace b = lossy_run(77);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.finish, b.finish);
  EXPECT_EQ(a.events, b.events);
  const Trace c = lossy_run(78);
  EXPECT_NE(a.hash, c.hash);
}

TEST(PsnWrap, TransferAcrossTheWrapUnderLoss) {
  for (int64_t start : {0xFFFFFF, 0xFFFF00, 0xFFFC00}) {
    Fabric f(testing::small_fabric(static_cast<uint64_t>(start)));
    Rule drop;
    drop.select = Rule::Select::random;
    drop.probability = 0.01;
    f.add_rule(drop);
    const auto qp = f.connect(0, 1, testing::default_qp(), start);
    const auto res = harness::write_and_wait(f, qp, 0, 1, 8 << 20, at_ms(20));
    EXPECT_TRUE(res.completed) << start;
    EXPECT_TRUE(res.data_ok) << start;
  }
}

}  // namespace
}  // namespace mrc
