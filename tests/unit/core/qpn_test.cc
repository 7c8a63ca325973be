// SPDX-License-Identifier: BSD-2-Clause
// QP numbers: 24 bits, all random but the shard's, found by a table keyed
// by the number (core/qpn_table.hpp), never by bits that give a slot away.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "core/qpn_table.hpp"
#include "util/prng.hpp"

namespace mrc::core {
namespace {

// Every bit above the shard's is set in about half of 2,000 QPNs (a bit
// stuck at 0 or 1, a slot index or a counter in some bits, fails: the
// bounds are 9 standard deviations wide, so a correct draw never does),
// and a number comes back only as rarely as random draws collide (a live
// one never: the endpoint would not know which QP a packet is for).
void expect_spread(uint32_t shard_bits, uint32_t shard) {
  EndpointConfig c;
  c.seed = 99 + shard_bits;
  c.qpn_shard_bits = shard_bits;
  c.qpn_shard = shard;
  auto ep = Endpoint::create(c);
  ASSERT_TRUE(ep.ok());
  auto cq = (*ep)->create_cq(16);
  ASSERT_TRUE(cq.ok());
  QpInit init;
  init.send_cq = init.recv_cq = *cq;
  constexpr int kQps = 2000;
  std::array<int, 24> ones{};
  std::set<uint32_t> seen;
  for (int i = 0; i < kQps; ++i) {
    auto q = (*ep)->create_qp(init);
    ASSERT_TRUE(q.ok());
    ASSERT_LT(*q, 1u << 24);
    ASSERT_GE(*q, Endpoint::kFirstQpn);
    ASSERT_EQ(*q & ((1u << shard_bits) - 1), shard);
    seen.insert(*q);
    for (uint32_t b = 0; b < 24; ++b) ones[b] += (*q >> b) & 1;
    // Half of them destroyed again: slots are reused under fresh numbers.
    if (i % 2) {
      ASSERT_TRUE((*ep)->destroy_qp(*q).ok());
    }
  }
  // 2,000 draws from 2^20 values (4 shard bits) collide about twice.
  EXPECT_GE(seen.size(), static_cast<size_t>(kQps - 10)) << "numbers repeat";
  for (uint32_t b = shard_bits; b < 24; ++b) {
    EXPECT_GT(ones[b], kQps * 4 / 10) << "bit " << b << " is rarely set";
    EXPECT_LT(ones[b], kQps * 6 / 10) << "bit " << b << " is nearly always set";
  }
}

TEST(Qpn, EveryBitAboveTheShardIsRandom) {
  expect_spread(0, 0);
  expect_spread(2, 3);
  expect_spread(4, 9);
}

TEST(Qpn, PacketsFindTheirQpAndOnlyIt) {
  EndpointConfig c;
  c.seed = 5;
  auto ep = Endpoint::create(c);
  ASSERT_TRUE(ep.ok());
  auto cq = (*ep)->create_cq(16);
  QpInit init;
  init.send_cq = init.recv_cq = *cq;
  std::vector<uint32_t> live;
  for (int i = 0; i < 300; ++i) live.push_back(*(*ep)->create_qp(init));
  for (size_t i = 0; i < live.size(); i += 3) ASSERT_TRUE((*ep)->destroy_qp(live[i]).ok());
  for (size_t i = 0; i < live.size(); ++i) {
    const Qp* q = (*ep)->qp(live[i]);
    if (i % 3 == 0) {
      EXPECT_EQ(q, nullptr);
    } else {
      ASSERT_NE(q, nullptr);
      EXPECT_EQ(q->qpn(), live[i]);
    }
    EXPECT_EQ((*ep)->qp(live[i] ^ 0x800000u), nullptr) << "a near miss finds nothing";
  }
}

TEST(QpnTable, MatchesAMapThroughChurn) {
  QpnTable t;
  std::unordered_map<uint32_t, uint32_t> ref;
  Prng r(17);
  for (int i = 0; i < 200'000; ++i) {
    // A small key space so that inserts, hits and erases collide often.
    const uint32_t k = 0x100 + static_cast<uint32_t>(r.next_u64() % 3000);
    const auto it = ref.find(k);
    if (it == ref.end()) {
      if (r.next_u64() % 3) {
        t.insert(k, static_cast<uint32_t>(i));
        ref.emplace(k, static_cast<uint32_t>(i));
      }
    } else if (r.next_u64() % 2) {
      t.erase(k);
      ref.erase(it);
    }
    ASSERT_EQ(t.find(k), ref.count(k) ? ref.at(k) : QpnTable::kNone);
  }
  EXPECT_EQ(t.size(), ref.size());
  for (const auto& [k, v] : ref) ASSERT_EQ(t.find(k), v);
}

}  // namespace
}  // namespace mrc::core
