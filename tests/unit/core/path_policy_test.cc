// SPDX-License-Identifier: BSD-2-Clause
// Tests for core/path/path_policy.hpp: EV set construction (GEN and EXP),
// per-packet EV choice, SKIP / ASSUMED_BAD / DENIED transitions, backups,
// ev_min_active, probe scheduling and resurrection, port masks, reverse
// (control) EVs, and the two comparison policies (reference 4.4-4.6, 4.8, 8).
#include "core/path/path_policy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace mrc::core::path {
namespace {

constexpr int kNone = PathPolicy::kNone;
const Time t0 = Time::zero() + Duration::ms(1);

struct PolicyTest : ::testing::Test {
  std::vector<EvEvent> events;
  ProtocolConfig proto = plain_retirement();

  // Most tests here are about what retirement does (reference 3.11: a loss
  // makes the EV ASSUMED_BAD at once); the confirming probe in front of it
  // (ProtocolConfig::loss_confirm, on by default) has its own tests below.
  static ProtocolConfig plain_retirement() {
    ProtocolConfig p;
    p.loss_confirm = false;
    return p;
  }

  std::unique_ptr<PathPolicy> make(const EvProfile& p, uint32_t ports, uint64_t seed = 1) {
    std::string why;
    EXPECT_TRUE(p.validate(ports, &why).ok()) << why;
    return make_path_policy(p, ports, proto, Prng(seed), &events);
  }

  // 2 ports, 16 EVs (8 per port), 8 active (4 per port), 8 backups.
  static EvProfile small_profile() {
    EvProfile p;
    p.ev_count = 16;
    p.active_count = 8;
    p.ev_min_active = 2;
    return p;
  }

  // 1 port: EVs 10 and 11 active, 20 and 21 backups, in that order.
  static EvProfile two_active_two_backups() {
    EvProfile p;
    p.explicit_evs = {{10, 0}, {11, 0}, {20, 0}, {21, 0}};
    p.active_count = 2;
    p.ev_min_active = 1;
    return p;
  }

  static std::vector<int> active_on(const PathPolicy& pp, uint8_t port) {
    std::vector<int> v;
    for (int i = 0; i < static_cast<int>(pp.size()); ++i)
      if (pp.slot(i).port == port && pp.slot(i).active) v.push_back(i);
    return v;
  }
  static std::vector<int> backups_on(const PathPolicy& pp, uint8_t port) {
    std::vector<int> v;
    for (int i = 0; i < static_cast<int>(pp.size()); ++i)
      if (pp.slot(i).port == port && !pp.slot(i).active && pp.slot(i).state == EvState::good)
        v.push_back(i);
    return v;
  }
};

// ------------------------------------------------------------------ GEN mode

TEST_F(PolicyTest, StampPutsTheSlotsCompactAndWireEvOnThePacket) {
  EvProfile p = two_active_two_backups();
  auto wires = std::make_shared<std::vector<WireEv>>(4);
  for (size_t i = 0; i < 4; ++i) {
    (*wires)[i].bits = 128;
    (*wires)[i].bytes[15] = static_cast<uint8_t>(0xA0 + i);
  }
  p.wire_evs = wires;
  auto pp = make(p, 1);
  for (int i = 0; i < 4; ++i) {
    Transmit tx;
    pp->stamp(tx, i);
    EXPECT_EQ(tx.entropy, pp->slot(i).value);
    ASSERT_NE(tx.wire_ev, nullptr);
    EXPECT_EQ(tx.wire_ev, &(*wires)[static_cast<size_t>(i)]) << "shared, not copied";
  }
  // Without wire EVs (UDP / STEV profiles) a packet carries none.
  auto plain = make(two_active_two_backups(), 1);
  Transmit tx;
  plain->stamp(tx, 1);
  EXPECT_EQ(tx.entropy, 11u);
  EXPECT_EQ(tx.wire_ev, nullptr);
  // One wire EV per explicit EV, or the profile is refused.
  p.wire_evs = std::make_shared<std::vector<WireEv>>(3);
  std::string why;
  EXPECT_FALSE(p.validate(1, &why).ok());
  EXPECT_NE(why.find("wire_evs"), std::string::npos) << why;
}

TEST_F(PolicyTest, GenSplitsEvsAndActiveSetEquallyAcrossPorts) {
  EvProfile p;
  p.ev_count = 64;
  p.active_count = 32;
  p.ev_min_active = 8;
  auto pp = make(p, 4);
  ASSERT_EQ(pp->size(), 64u);
  std::set<uint32_t> values;
  std::map<uint8_t, int> per_port, active_per_port;
  for (int i = 0; i < 64; ++i) {
    const EvSlot& s = pp->slot(i);
    values.insert(s.value);
    EXPECT_LT(s.value, 1u << 16);
    ASSERT_LT(s.port, 4);
    ++per_port[s.port];
    if (s.active) ++active_per_port[s.port];
    EXPECT_EQ(s.state, EvState::good);
    EXPECT_EQ(pp->find(s.value), i);
  }
  EXPECT_EQ(values.size(), 64u);  // distinct
  for (uint8_t port = 0; port < 4; ++port) {
    EXPECT_EQ(per_port[port], 16) << "port " << int{port};
    EXPECT_EQ(active_per_port[port], 8) << "port " << int{port};
  }
  EXPECT_EQ(pp->count(EvState::good), 64u);
  EXPECT_EQ(pp->usable_active(), 32u);
  EXPECT_EQ(pp->sendable_ports(), 0xFu);
  EXPECT_EQ(pp->port_mask(), 0xFu);
  EXPECT_TRUE(events.empty());
}

TEST_F(PolicyTest, GenIsDeterministicPerSeed) {
  auto a = make(small_profile(), 2, 77);
  auto b = make(small_profile(), 2, 77);
  auto c = make(small_profile(), 2, 78);
  bool differs = false;
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(a->slot(i).value, b->slot(i).value);
    differs |= a->slot(i).value != c->slot(i).value;
  }
  EXPECT_TRUE(differs);
}

TEST_F(PolicyTest, GenRespectsEntropyBits) {
  EvProfile p;
  p.ev_count = 8;
  p.active_count = 8;
  p.ev_min_active = 1;
  p.entropy_bits = 4;  // 16 values for 8 EVs
  auto pp = make(p, 2);
  std::set<uint32_t> values;
  for (int i = 0; i < 8; ++i) {
    EXPECT_LT(pp->slot(i).value, 16u);
    values.insert(pp->slot(i).value);
  }
  EXPECT_EQ(values.size(), 8u);
}

// ------------------------------------------------------------------ select

TEST_F(PolicyTest, SelectOnlyUsesPortsInMask) {
  auto pp = make(small_profile(), 2);
  for (int k = 0; k < 50; ++k) {
    const int s = pp->select(t0, 0b10, kNone);
    ASSERT_NE(s, kNone);
    EXPECT_EQ(pp->slot(s).port, 1);
    EXPECT_TRUE(pp->slot(s).active);
  }
  for (int k = 0; k < 50; ++k) {
    const int s = pp->select(t0, 0b01, kNone);
    ASSERT_NE(s, kNone);
    EXPECT_EQ(pp->slot(s).port, 0);
  }
  EXPECT_EQ(pp->select(t0, 0, kNone), kNone);
  EXPECT_EQ(pp->select(t0, 0b100, kNone), kNone);  // no such port
}

TEST_F(PolicyTest, SelectRoundRobinsAcrossPorts) {
  auto pp = make(small_profile(), 2);
  std::vector<uint8_t> ports;
  for (int k = 0; k < 12; ++k) ports.push_back(pp->slot(pp->select(t0, 0b11, kNone)).port);
  for (int k = 0; k < 12; ++k) EXPECT_EQ(ports[static_cast<size_t>(k)], k % 2) << "selection " << k;
}

TEST_F(PolicyTest, SelectVisitsEveryActiveEvOncePerPass) {
  auto pp = make(small_profile(), 2);
  const std::vector<int> act0 = active_on(*pp, 0);
  ASSERT_EQ(act0.size(), 4u);
  for (int pass = 0; pass < 5; ++pass) {
    std::multiset<int> seen;
    for (size_t k = 0; k < act0.size(); ++k) seen.insert(pp->select(t0, 0b01, kNone));
    EXPECT_EQ(seen, std::multiset<int>(act0.begin(), act0.end())) << "pass " << pass;
  }
  // Both ports: 8 selections cover all 8 active EVs exactly once.
  auto pq = make(small_profile(), 2, 9);
  std::vector<int> all = active_on(*pq, 0);
  for (int s : active_on(*pq, 1)) all.push_back(s);
  for (int pass = 0; pass < 3; ++pass) {
    std::multiset<int> seen;
    for (int k = 0; k < 8; ++k) seen.insert(pq->select(t0, 0b11, kNone));
    EXPECT_EQ(seen, std::multiset<int>(all.begin(), all.end())) << "pass " << pass;
  }
}

TEST_F(PolicyTest, SelectNeverReturnsInactiveOrNonGoodSlots) {
  auto pp = make(small_profile(), 2);
  // Retire one EV, deny another, mark a third SKIP.
  const std::vector<int> act0 = active_on(*pp, 0), act1 = active_on(*pp, 1);
  pp->on_lost(t0, act0[0]);
  ASSERT_TRUE(pp->set_denied(t0, pp->slot(act1[0]).value, true).ok());
  pp->on_delivered(t0, act1[1], wire::Mark::skip_once);
  for (int k = 0; k < 200; ++k) {
    const int s = pp->select(t0, 0b11, kNone);
    ASSERT_NE(s, kNone);
    EXPECT_TRUE(pp->slot(s).active);
    EXPECT_EQ(pp->slot(s).state, EvState::good);
    EXPECT_NE(s, act0[0]);
    EXPECT_NE(s, act1[0]);
  }
}

TEST_F(PolicyTest, SelectAvoidsSlotWhenAnotherChoiceExistsOnThePort) {
  auto pp = make(small_profile(), 2);
  const std::vector<int> act0 = active_on(*pp, 0);
  for (int k = 0; k < 40; ++k) {
    const int s = pp->select(t0, 0b01, act0[1]);
    ASSERT_NE(s, kNone);
    EXPECT_NE(s, act0[1]);
  }
  // With a single usable EV the avoided one is still returned (no stall).
  EvProfile one;
  one.explicit_evs = {{10, 0}};
  one.active_count = 1;
  one.ev_min_active = 1;
  auto ps = make(one, 1);
  EXPECT_EQ(ps->select(t0, 0b1, 0), 0);
  EXPECT_EQ(ps->select(t0, 0b1, 0), 0);
}

TEST_F(PolicyTest, SelectAvoidsSlotWhenAnotherChoiceExistsOnAnotherPort) {
  // Regression (fixed): src/core/path/path_policy.cc MrcPathPolicy::select() (line 192)
  // takes the first port in round-robin order whose next_in_rotation() returns
  // anything, and next_in_rotation() falls back to `avoid` when it is the only
  // usable EV of that port. So with one EV on port 0 and one on port 1,
  // select(mask=both, avoid=port-0 EV) returns the avoided EV although port 1
  // offers another choice, contradicting path_policy.hpp ("avoiding slot
  // `avoid` if any other choice exists"): a retransmission goes out on the
  // very EV that just lost the packet. Expected: try the other ports before
  // falling back to `avoid`.
  EvProfile p;
  p.explicit_evs = {{10, 0}, {20, 1}};
  p.active_count = 2;
  p.ev_min_active = 1;
  auto pp = make(p, 2);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(pp->select(t0, 0b11, 0), 1) << "selection " << k;
    EXPECT_EQ(pp->select(t0, 0b11, 1), 0) << "selection " << k;
  }
}

// ------------------------------------------------------------------ SKIP

TEST_F(PolicyTest, SkipOnceIsPassedOverOnceThenGood) {
  proto.ev_swap_marks = 0;  // SKIP alone (the swap on marks in a row is tested below)
  auto pp = make(small_profile(), 2);
  const std::vector<int> act0 = active_on(*pp, 0);
  // Finish one pass so the next selection starts a fresh rotation.
  for (size_t k = 0; k < act0.size(); ++k) (void)pp->select(t0, 0b01, kNone);
  const int victim = act0[2];
  pp->on_delivered(t0, victim, wire::Mark::skip_once);
  EXPECT_EQ(pp->slot(victim).state, EvState::skip);
  EXPECT_EQ(pp->stats().skips, 1u);
  EXPECT_TRUE(pp->slot(victim).active);
  EXPECT_EQ(pp->usable_active(), 8u);  // SKIP still counts as usable
  EXPECT_TRUE(events.empty());         // no event for SKIP (reference 4.10)
  // A second SKIP_ONCE while in SKIP does not count again.
  pp->on_delivered(t0, victim, wire::Mark::skip_once);
  EXPECT_EQ(pp->stats().skips, 1u);

  std::set<int> first;
  for (int k = 0; k < 3; ++k) first.insert(pp->select(t0, 0b01, kNone));
  std::set<int> others(act0.begin(), act0.end());
  others.erase(victim);
  EXPECT_EQ(first, others);  // the rotation passed over the SKIP EV
  (void)pp->select(t0, 0b01, kNone);
  EXPECT_EQ(pp->slot(victim).state, EvState::good);  // one rotation ended the SKIP
  int uses = 0;
  for (int k = 0; k < 8; ++k) uses += pp->select(t0, 0b01, kNone) == victim;
  EXPECT_GE(uses, 1);
  EXPECT_EQ(pp->stats().skips, 1u);
  EXPECT_EQ(pp->stats().retired, 0u);
}

TEST_F(PolicyTest, DeliveredWithoutMarkChangesNothingAndTrimSkips) {
  auto pp = make(small_profile(), 2);
  const int s = active_on(*pp, 1)[0];
  pp->on_delivered(t0, s, wire::Mark::none);
  EXPECT_EQ(pp->slot(s).state, EvState::good);
  EXPECT_EQ(pp->stats().skips, 0u);
  pp->on_trimmed(t0, s);
  EXPECT_EQ(pp->slot(s).state, EvState::skip);
  EXPECT_EQ(pp->stats().skips, 1u);
}

TEST_F(PolicyTest, AlwaysSkipRetires) {
  auto pp = make(small_profile(), 2);
  const int s = active_on(*pp, 1)[0];
  pp->on_delivered(t0, s, wire::Mark::always_skip);
  EXPECT_EQ(pp->slot(s).state, EvState::assumed_bad);
  EXPECT_FALSE(pp->slot(s).active);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].to, EvState::assumed_bad);
  EXPECT_EQ(events[0].drop_count, 0u);  // a mark, not a loss
}

// ------------------------------------------------------------------ recycling (ProtocolConfig::ev_recycle)

TEST_F(PolicyTest, RecycledEvsGoAheadOfTheRotationAndMarkedOnesDoNot) {
  proto.ev_swap_marks = 0;
  proto.ev_recycle = true;
  auto pp = make(small_profile(), 2);
  const std::vector<int> act0 = active_on(*pp, 0);
  ASSERT_EQ(act0.size(), 4u);
  // Unmarked deliveries, inferred (on_acked) or a SACK's verdict, queue their
  // EVs; they carry the port's next packets, oldest first.
  pp->on_acked(t0, act0[3]);
  pp->on_delivered(t0, act0[1], wire::Mark::none);
  pp->on_acked(t0, act0[3]);  // two packets on it got through: two turns
  EXPECT_EQ(pp->select(t0, 0b01, kNone), act0[3]);
  EXPECT_EQ(pp->select(t0, 0b01, kNone), act0[1]);
  EXPECT_EQ(pp->select(t0, 0b01, kNone), act0[3]);
  // A marked EV is not queued, and one queued before its mark came back is
  // passed over; so is the one to avoid (a retransmission's old EV).
  pp->on_delivered(t0, act0[0], wire::Mark::skip_once);
  pp->on_acked(t0, act0[2]);
  pp->on_delivered(t0, act0[2], wire::Mark::skip_once);
  pp->on_acked(t0, act0[1]);
  pp->on_acked(t0, act0[3]);
  EXPECT_EQ(pp->select(t0, 0b01, act0[1]), act0[3]);
  // Recycled EVs stay on their port: port 1 has none queued.
  const std::vector<int> act1 = active_on(*pp, 1);
  const int s1 = pp->select(t0, 0b10, kNone);
  EXPECT_NE(std::find(act1.begin(), act1.end(), s1), act1.end());
}

TEST_F(PolicyTest, WithoutRecyclingDeliveriesLeaveTheRotationAlone) {
  proto.ev_swap_marks = 0;
  auto plain = make(small_profile(), 2);
  auto told = make(small_profile(), 2);
  const std::vector<int> act0 = active_on(*told, 0);
  told->on_acked(t0, act0[3]);
  told->on_delivered(t0, act0[3], wire::Mark::none);
  for (int k = 0; k < 12; ++k) EXPECT_EQ(told->select(t0, 0b01, kNone), plain->select(t0, 0b01, kNone)) << k;
}

// ------------------------------------------------------------------ marks -> swap with a backup

TEST_F(PolicyTest, MarksInARowSwapAnActiveEvForTheOldestBackup) {
  // An unmarked delivery ends a run of marks; ev_swap_marks marks in a row
  // trade the EV for a backup (3 here: the mechanism, not the default).
  proto.ev_swap_marks = 3;
  auto pp = make(small_profile(), 2);
  const std::vector<int> act0 = active_on(*pp, 0), act1 = active_on(*pp, 1);
  const std::vector<int> bak0 = backups_on(*pp, 0);
  ASSERT_EQ(bak0.size(), 4u);
  const int victim = act0[1];
  pp->on_delivered(t0, victim, wire::Mark::skip_once);
  pp->on_delivered(t0, victim, wire::Mark::skip_once);
  pp->on_delivered(t0, victim, wire::Mark::none);
  pp->on_delivered(t0, victim, wire::Mark::skip_once);
  pp->on_delivered(t0, victim, wire::Mark::skip_once);
  EXPECT_TRUE(pp->slot(victim).active) << "the unmarked delivery ended the run";
  EXPECT_EQ(pp->stats().congestion_swaps, 0u);
  pp->on_delivered(t0, victim, wire::Mark::skip_once);
  EXPECT_EQ(pp->stats().congestion_swaps, 1u);
  const EvSlot& v = pp->slot(victim);
  EXPECT_FALSE(v.active);
  EXPECT_EQ(v.state, EvState::good) << "still in service, now a backup";
  std::vector<int> now0 = active_on(*pp, 0);
  ASSERT_EQ(now0.size(), 4u);
  EXPECT_EQ(std::count(now0.begin(), now0.end(), victim), 0);
  // The oldest backup (first of the port's backups in set order) took its place.
  EXPECT_EQ(std::count(now0.begin(), now0.end(), bak0[0]), 1);
  EXPECT_EQ(pp->slot(bak0[0]).marks_in_row, 0u);
  EXPECT_EQ(active_on(*pp, 1), act1);  // other port untouched
  const std::vector<int> nb = backups_on(*pp, 0);
  EXPECT_EQ(std::count(nb.begin(), nb.end(), victim), 1);
  // Not a state change, not a promotion; the active set keeps its size.
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(pp->stats().promotions, 0u);
  EXPECT_EQ(pp->stats().retired, 0u);
  EXPECT_EQ(pp->usable_active(), 8u);
  for (int k = 0; k < 12; ++k) EXPECT_NE(pp->select(t0, 0b01, kNone), victim);
  // Late marks for packets sent before the swap do not swap a backup.
  for (int k = 0; k < 3; ++k) pp->on_delivered(t0, victim, wire::Mark::skip_once);
  EXPECT_EQ(pp->stats().congestion_swaps, 1u);
  EXPECT_FALSE(pp->slot(victim).active);
}

TEST_F(PolicyTest, PersistentMarksMoveASmallActiveSetOffItsPath) {
  // One port; the two active EVs (10, 11) name one congested path, the two
  // backups (20, 21) others. Marks keep coming on whatever crosses the
  // congested path: the active set moves onto the backups.
  proto.ev_swap_marks = 3;
  auto pp = make(two_active_two_backups(), 1);
  auto congested = [&](int s) { return pp->slot(s).value < 20; };
  int on_congested = 0;
  for (int k = 0; k < 40; ++k) {
    const int s = pp->select(t0, 0b1, kNone);
    ASSERT_NE(s, kNone);
    on_congested += congested(s);
    pp->on_delivered(t0, s, congested(s) ? wire::Mark::skip_once : wire::Mark::none);
  }
  EXPECT_LE(on_congested, 4);
  EXPECT_EQ(pp->stats().congestion_swaps, 2u);
  for (int s : active_on(*pp, 0)) EXPECT_FALSE(congested(s));
  EXPECT_TRUE(events.empty());
}

TEST_F(PolicyTest, WholeActiveSetMarkedSwapsWhenTheRotationNeedsAnEv) {
  // Each active EV marked once (below ev_swap_marks): every one is SKIP, so
  // the rotation has nothing to skip to; the oldest backup takes the packet.
  auto pp = make(two_active_two_backups(), 1);
  (void)pp->select(t0, 0b1, kNone);
  (void)pp->select(t0, 0b1, kNone);  // one full pass
  pp->on_delivered(t0, 0, wire::Mark::skip_once);
  pp->on_delivered(t0, 1, wire::Mark::skip_once);
  EXPECT_EQ(pp->stats().congestion_swaps, 0u);
  EXPECT_EQ(pp->select(t0, 0b1, kNone), 2);
  EXPECT_EQ(pp->stats().congestion_swaps, 1u);
  EXPECT_TRUE(pp->slot(2).active);
  EXPECT_EQ(active_on(*pp, 0).size(), 2u);
  // One marked EV was demoted; the other, passed over, is GOOD and active.
  EXPECT_EQ(pp->slot(0).active + pp->slot(1).active, 1);
  EXPECT_EQ(pp->count(EvState::skip), 0u);
}

TEST_F(PolicyTest, NoSwapWithoutBackupsOrWhenDisabled) {
  EvProfile p;
  p.explicit_evs = {{10, 0}, {11, 0}};
  p.active_count = 2;
  p.ev_min_active = 1;
  {
    auto pp = make(p, 1);  // no backups: marks only SKIP
    for (int k = 0; k < 8; ++k) {
      const int s = pp->select(t0, 0b1, kNone);
      ASSERT_NE(s, kNone);
      pp->on_delivered(t0, s, wire::Mark::skip_once);
    }
    EXPECT_EQ(pp->stats().congestion_swaps, 0u);
    EXPECT_EQ(active_on(*pp, 0).size(), 2u);
  }
  proto.ev_swap_marks = 0;
  p.explicit_evs.push_back({20, 0});
  auto pp = make(p, 1);  // a backup, but swapping is off: SKIP only
  for (int k = 0; k < 8; ++k) {
    const int s = pp->select(t0, 0b1, kNone);
    ASSERT_TRUE(s == 0 || s == 1) << s;
    pp->on_delivered(t0, s, wire::Mark::skip_once);
  }
  EXPECT_EQ(pp->stats().congestion_swaps, 0u);
  EXPECT_FALSE(pp->slot(2).active);
}

TEST_F(PolicyTest, ObliviousAndSinglePathIgnoreMarks) {
  for (PathPolicyKind kind : {PathPolicyKind::oblivious, PathPolicyKind::single_path}) {
    EvProfile p = small_profile();
    p.policy = kind;
    auto pp = make(p, 2);
    for (int k = 0; k < 4; ++k) pp->on_delivered(t0, 3, wire::Mark::skip_once);
    EXPECT_EQ(pp->slot(3).state, EvState::good);
    EXPECT_EQ(pp->stats().congestion_swaps, 0u);
    EXPECT_EQ(pp->stats().skips, 0u);
  }
}

// ------------------------------------------------------------------ loss -> ASSUMED_BAD

// ------------------------------------------------------------------ loss -> confirming probe

TEST_F(PolicyTest, ALossTakesTheEvOutAtOnceAndAnAnsweredProbeBringsItBackSilently) {
  proto.loss_confirm = true;  // the default
  auto pp = make(small_profile(), 2);
  const int victim = active_on(*pp, 0)[1];
  const Time at = t0 + Duration::us(3);
  pp->on_lost(at, victim);

  // Out of service at once, a backup in its place, but not ASSUMED_BAD.
  EXPECT_FALSE(pp->slot(victim).active);
  EXPECT_EQ(pp->slot(victim).state, EvState::good);
  EXPECT_TRUE(pp->health(victim).suspect);
  EXPECT_EQ(active_on(*pp, 0).size(), 4u);
  EXPECT_EQ(pp->stats().promotions, 1u);
  EXPECT_EQ(pp->stats().suspected, 1u);
  EXPECT_TRUE(events.empty());
  for (int k = 0; k < 40; ++k) EXPECT_NE(pp->select(at, 0b01, kNone), victim);
  for (int k = 0; k < 8; ++k) EXPECT_NE(pp->control_ev(0), victim);

  // Its probe is due now, and it goes out with one copy (loss_confirm_copies).
  EXPECT_EQ(pp->next_probe(), at);
  ASSERT_EQ(pp->take_due_probe(at, 0b11), victim);
  EXPECT_EQ(pp->next_probe(), Time::zero()) << "the copy is due at once";
  ASSERT_EQ(pp->take_due_probe(at, 0b11), victim);
  EXPECT_EQ(pp->take_due_probe(at, 0b11), kNone);
  pp->on_probe_sent(victim, 100, at);
  const Time answer = at + Duration::us(12);
  ASSERT_TRUE(pp->probe_answer(victim, 100, answer, Duration::ns(128)) == PathPolicy::ProbeAnswer::expected);
  pp->on_probe_response(answer, victim, wire::Mark::none);

  // Back in service as a backup, with no event: its state never changed.
  EXPECT_FALSE(pp->health(victim).suspect);
  EXPECT_EQ(pp->slot(victim).state, EvState::good);
  const std::vector<int> b = backups_on(*pp, 0);
  EXPECT_EQ(std::count(b.begin(), b.end(), victim), 1);
  EXPECT_EQ(pp->next_probe(), Time::never());
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(pp->stats().retired, 0u);
  EXPECT_EQ(pp->stats().cleared, 1u);
  EXPECT_EQ(pp->health(victim).packets_lost, 1u);
}

TEST_F(PolicyTest, AnAnswerToEitherCopyOfAConfirmingProbeClearsTheSuspect) {
  // The copy leaves after the first probe, stamped later. Each copy's answer
  // must pass the echo check, or the copy is worth nothing whenever the
  // other copy's answer is the one lost.
  proto.loss_confirm = true;
  for (const uint16_t echo : {uint16_t{100}, uint16_t{108}}) {
    SCOPED_TRACE(echo);
    auto pp = make(small_profile(), 2);
    const int victim = active_on(*pp, 0)[1];
    const Time at = t0 + Duration::us(3);
    pp->on_lost(at, victim);
    ASSERT_EQ(pp->take_due_probe(at, 0b11), victim);
    pp->on_probe_sent(victim, 100, at);
    const Time copy_at = at + Duration::ns(1024);
    ASSERT_EQ(pp->take_due_probe(copy_at, 0b11), victim);  // its copy
    pp->on_probe_sent(victim, 108, copy_at);
    const Time answer = at + Duration::us(12);
    ASSERT_TRUE(pp->probe_answer(victim, echo, answer, Duration::ns(128)) == PathPolicy::ProbeAnswer::expected);
    pp->on_probe_response(answer, victim, wire::Mark::none);
    EXPECT_FALSE(pp->health(victim).suspect);
    EXPECT_EQ(pp->stats().cleared, 1u);
    // One answer is all it takes: the other copy's is no longer expected,
    // but it is a repeat (late news), not a forgery.
    EXPECT_FALSE(pp->probe_answer(victim, echo == 100 ? 108 : 100, answer, Duration::ns(128)) == PathPolicy::ProbeAnswer::expected);
    EXPECT_EQ(pp->probe_answer(victim, echo == 100 ? 108 : 100, answer, Duration::ns(128)),
              PathPolicy::ProbeAnswer::repeat);
    EXPECT_EQ(pp->probe_answer(victim, 60000, answer, Duration::ns(128)), PathPolicy::ProbeAnswer::foreign)
        << "an echo no probe of this EV can have produced";
    EXPECT_EQ(pp->probe_answer(active_on(*pp, 1)[0], 100, answer, Duration::ns(128)),
              PathPolicy::ProbeAnswer::foreign)
        << "an EV never probed";
  }
}

TEST_F(PolicyTest, AnUnansweredConfirmingProbeRetiresTheEvWithItsLosses) {
  proto.loss_confirm = true;
  proto.loss_confirm_probes = 1;  // one unanswered probe retires (the step timing below)
  proto.loss_confirm_wait = Duration::us(40);
  auto pp = make(small_profile(), 2);
  const int victim = active_on(*pp, 1)[0];
  const Time at = t0 + Duration::us(3);
  pp->on_lost(at, victim);
  pp->on_lost(at + Duration::us(1), victim);  // another packet of the same path
  ASSERT_EQ(pp->take_due_probe(at + Duration::us(1), 0b11), victim);
  pp->on_probe_sent(victim, 7, at + Duration::us(1));
  ASSERT_EQ(pp->take_due_probe(at + Duration::us(1), 0b11), victim);  // its copy
  pp->on_probe_sent(victim, 7, at + Duration::us(1));
  EXPECT_EQ(pp->next_probe(), at + Duration::us(41));
  EXPECT_EQ(pp->take_due_probe(at + Duration::us(40), 0b11), kNone);
  EXPECT_TRUE(events.empty());

  // The wait is over: ASSUMED_BAD, reported with both losses, probed as usual.
  EXPECT_EQ(pp->take_due_probe(at + Duration::us(41), 0b11), kNone);
  EXPECT_EQ(pp->slot(victim).state, EvState::assumed_bad);
  EXPECT_FALSE(pp->health(victim).suspect);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].at, at + Duration::us(41));
  EXPECT_EQ(events[0].from, EvState::good);
  EXPECT_EQ(events[0].to, EvState::assumed_bad);
  EXPECT_EQ(events[0].drop_count, 2u);
  EXPECT_EQ(pp->stats().retired, 1u);
  EXPECT_EQ(pp->next_probe(), at + Duration::us(41) + proto.probe_interval);
  EXPECT_EQ(pp->take_due_probe(at + Duration::us(41) + proto.probe_interval, 0b11), victim);
}

TEST_F(PolicyTest, ASpuriousLossPutsItsSuspectBackWithoutAProbe) {
  proto.loss_confirm = true;
  auto pp = make(small_profile(), 2);
  const int victim = active_on(*pp, 0)[2];
  pp->on_lost(t0, victim);
  ASSERT_TRUE(pp->health(victim).suspect);
  pp->on_false_loss(t0 + Duration::us(5), victim);
  EXPECT_FALSE(pp->health(victim).suspect);
  EXPECT_EQ(pp->health(victim).packets_lost, 0u);
  EXPECT_EQ(pp->next_probe(), Time::never());
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(pp->stats().cleared, 1u);
  // With plain retirement a spurious loss resurrects the EV (two events).
  proto.loss_confirm = false;
  auto plain = make(small_profile(), 2);
  plain->on_lost(t0, victim);
  plain->on_false_loss(t0 + Duration::us(5), victim);
  EXPECT_EQ(plain->slot(victim).state, EvState::good);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].from, EvState::assumed_bad);
  EXPECT_EQ(events[1].to, EvState::good);
}

// A suspect whose lost packet turns up late takes its active place back
// from the backup that stood in for it, and that backup is again the first
// in line; a suspect that only a probe cleared rests at the back of the
// backups, and its stand-in keeps the place.
TEST_F(PolicyTest, ASuspectProvenLateTakesItsActivePlaceBackFromItsStandIn) {
  proto.loss_confirm = true;
  auto pp = make(two_active_two_backups(), 1);  // active 0, 1; backups 2, 3
  ASSERT_EQ(active_on(*pp, 0), (std::vector<int>{0, 1}));
  pp->on_lost(t0, 0);
  ASSERT_TRUE(pp->health(0).suspect);
  EXPECT_EQ(active_on(*pp, 0), (std::vector<int>{1, 2})) << "the oldest backup stands in";
  pp->on_false_loss(t0 + Duration::us(5), 0);
  EXPECT_FALSE(pp->health(0).suspect);
  EXPECT_EQ(active_on(*pp, 0), (std::vector<int>{0, 1})) << "the late packet restores the set";
  EXPECT_EQ(backups_on(*pp, 0), (std::vector<int>{2, 3}));
  EXPECT_TRUE(events.empty());
  // The stand-in went back to the front: it stands in again.
  pp->on_lost(t0 + Duration::us(10), 1);
  EXPECT_EQ(active_on(*pp, 0), (std::vector<int>{0, 2}));
  // Cleared by its probe (a real loss on a working path): to the back.
  ASSERT_EQ(pp->take_due_probe(t0 + Duration::us(10), 0b1), 1);
  pp->on_probe_sent(1, 1, t0 + Duration::us(10));
  pp->on_probe_response(t0 + Duration::us(15), 1, wire::Mark::none);
  EXPECT_FALSE(pp->health(1).suspect);
  EXPECT_EQ(active_on(*pp, 0), (std::vector<int>{0, 2})) << "the stand-in keeps the place";
  // ... and the next stand-in is the older backup (3), not the cleared EV.
  pp->on_lost(t0 + Duration::us(20), 2);
  EXPECT_EQ(active_on(*pp, 0), (std::vector<int>{0, 3}));
  EXPECT_EQ(pp->stats().cleared, 2u);
  EXPECT_TRUE(events.empty());
}

// One loss on `slot` at `at`, its confirming probe answered 5 us later: a
// probe vouches for the path.
static void lose_and_vouch(PathPolicy& pp, int slot, Time at) {
  pp.on_lost(at, slot);
  ASSERT_TRUE(pp.health(slot).suspect);
  ASSERT_EQ(pp.take_due_probe(at, 0b11), slot);
  pp.on_probe_sent(slot, 1, at);
  pp.on_probe_response(at + Duration::us(5), slot, wire::Mark::none);
  ASSERT_FALSE(pp.health(slot).suspect);
}

TEST_F(PolicyTest, AGrayPathThatKeepsLosingAfterProbesVouchedIsRetiredWhenItsTrialEnds) {
  proto.loss_confirm = true;
  proto.loss_confirm_probes = 1;  // one unanswered probe retires (the step timing below)
  proto.loss_confirm_wait = Duration::us(40);
  ASSERT_EQ(proto.gray_loss_vouches, 2u);  // the default
  auto pp = make(small_profile(), 2);
  const int victim = active_on(*pp, 0)[0];
  lose_and_vouch(*pp, victim, t0);
  EXPECT_EQ(pp->health(victim).vouches, 1);
  // A second loss soon after one vouching: still the benefit of the doubt
  // (a path that only reorders gets the loss rule's false verdict now and then).
  lose_and_vouch(*pp, victim, t0 + Duration::us(100));
  EXPECT_EQ(pp->health(victim).vouches, 2);
  EXPECT_EQ(pp->stats().retired, 0u);

  // A third, soon after the second vouching: on trial. The probe that gets
  // through (a gray link passes most) no longer clears it.
  const Time at = t0 + Duration::us(200);
  pp->on_lost(at, victim);
  EXPECT_TRUE(pp->health(victim).suspect);
  EXPECT_TRUE(pp->health(victim).on_trial);
  ASSERT_EQ(pp->take_due_probe(at, 0b11), victim);
  pp->on_probe_sent(victim, 9, at);
  pp->on_probe_response(at + Duration::us(5), victim, wire::Mark::none);
  EXPECT_TRUE(pp->health(victim).suspect);
  EXPECT_TRUE(events.empty());

  // No proof that the loss was spurious by the end of the wait: ASSUMED_BAD.
  EXPECT_EQ(pp->take_due_probe(at + Duration::us(41), 0b11), kNone);
  EXPECT_EQ(pp->slot(victim).state, EvState::assumed_bad);
  EXPECT_FALSE(pp->health(victim).on_trial);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].to, EvState::assumed_bad);
  EXPECT_EQ(pp->stats().retired, 1u);
}

TEST_F(PolicyTest, VouchingsFarApartOrALossProvenSpuriousStartTheCountAgain) {
  proto.loss_confirm = true;
  auto pp = make(small_profile(), 2);
  const int victim = active_on(*pp, 0)[1];
  lose_and_vouch(*pp, victim, t0);
  // More than 4 probe intervals later: a fresh count.
  lose_and_vouch(*pp, victim, t0 + proto.probe_interval * 5);
  EXPECT_EQ(pp->health(victim).vouches, 1);
  lose_and_vouch(*pp, victim, t0 + proto.probe_interval * 6);
  EXPECT_EQ(pp->health(victim).vouches, 2);
  // The packet of that last loss arrives after all: no strike against the path.
  pp->on_false_loss(t0 + proto.probe_interval * 6 + Duration::us(20), victim);
  EXPECT_EQ(pp->health(victim).vouches, 0);
  pp->on_lost(t0 + proto.probe_interval * 7, victim);
  EXPECT_TRUE(pp->health(victim).suspect);
  EXPECT_FALSE(pp->health(victim).on_trial);
}

TEST_F(PolicyTest, AnEvOnTrialIsClearedByProofThatItsLossWasSpurious) {
  proto.loss_confirm = true;
  auto pp = make(small_profile(), 2);
  const int victim = active_on(*pp, 1)[0];
  lose_and_vouch(*pp, victim, t0);
  lose_and_vouch(*pp, victim, t0 + Duration::us(50));
  pp->on_lost(t0 + Duration::us(100), victim);
  ASSERT_TRUE(pp->health(victim).on_trial);
  ASSERT_EQ(pp->take_due_probe(t0 + Duration::us(100), 0b11), victim);
  pp->on_probe_sent(victim, 3, t0 + Duration::us(100));
  // The late packet arrives: a path that reorders, not one that loses.
  pp->on_false_loss(t0 + Duration::us(110), victim);
  EXPECT_FALSE(pp->health(victim).suspect);
  EXPECT_FALSE(pp->health(victim).on_trial);
  EXPECT_EQ(pp->health(victim).vouches, 0);
  EXPECT_EQ(pp->take_due_probe(t0 + Duration::ms(1), 0b11), kNone);
  EXPECT_EQ(pp->slot(victim).state, EvState::good);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(pp->stats().retired, 0u);
}

TEST_F(PolicyTest, LossesWhileTheDestinationsLastHopTrimsNeverPutAnEvOnTrial) {
  // An incast: the last hop's trimmed-header queue overflows and drops
  // headers of every path alike. Every path ends on that link.
  proto.loss_confirm = true;
  auto pp = make(small_profile(), 2);
  const int victim = active_on(*pp, 0)[2];
  lose_and_vouch(*pp, victim, t0);
  lose_and_vouch(*pp, victim, t0 + Duration::us(50));
  pp->on_trimmed_last_hop(t0 + Duration::us(60));
  pp->on_lost(t0 + Duration::us(100), victim);
  EXPECT_TRUE(pp->health(victim).suspect);
  EXPECT_FALSE(pp->health(victim).on_trial);
  // The trims are long over (4 probe intervals): the rule applies again.
  lose_and_vouch(*pp, victim, t0 + Duration::us(100));
  pp->on_lost(t0 + Duration::us(60) + proto.probe_interval * 4, victim);
  EXPECT_TRUE(pp->health(victim).on_trial);
}

TEST_F(PolicyTest, LossesOnMoreThanAQuarterOfThePortsEvsNeverPutAnEvOnTrial) {
  proto.loss_confirm = true;
  auto pp = make(small_profile(), 2);  // 8 EVs on port 0
  const std::vector<int> act = active_on(*pp, 0);
  const int victim = act[0];
  lose_and_vouch(*pp, victim, t0);
  lose_and_vouch(*pp, victim, t0 + Duration::us(50));
  // Two more of the port's paths lose packets: 3 of 8 lost lately.
  pp->on_lost(t0 + Duration::us(60), act[1]);
  pp->on_lost(t0 + Duration::us(60), act[2]);
  pp->on_lost(t0 + Duration::us(100), victim);
  EXPECT_TRUE(pp->health(victim).suspect);
  EXPECT_FALSE(pp->health(victim).on_trial) << "congestion everywhere, not this path";
  // Losses on the other port do not count.
  auto pp2 = make(small_profile(), 2);
  const std::vector<int> other = active_on(*pp2, 1);
  lose_and_vouch(*pp2, victim, t0);
  lose_and_vouch(*pp2, victim, t0 + Duration::us(50));
  pp2->on_lost(t0 + Duration::us(60), other[0]);
  pp2->on_lost(t0 + Duration::us(60), other[1]);
  pp2->on_lost(t0 + Duration::us(100), victim);
  EXPECT_TRUE(pp2->health(victim).on_trial);
}

TEST_F(PolicyTest, LossRetiresAndPromotesBackupOfSamePort) {
  auto pp = make(small_profile(), 2);
  const std::vector<int> act0 = active_on(*pp, 0), act1 = active_on(*pp, 1);
  const std::vector<int> bak0 = backups_on(*pp, 0);
  ASSERT_EQ(bak0.size(), 4u);
  const int victim = act0[1];
  const Time at = t0 + Duration::us(3);
  pp->on_lost(at, victim);

  const EvSlot& v = pp->slot(victim);
  EXPECT_EQ(v.state, EvState::assumed_bad);
  EXPECT_FALSE(v.active);
  EXPECT_EQ(pp->health(victim).packets_lost, 1u);
  ASSERT_EQ(events.size(), 1u);
  const EvEvent& e = events[0];
  EXPECT_EQ(e.at, at);
  EXPECT_EQ(e.ev, v.value);
  EXPECT_EQ(e.port, 0);
  EXPECT_EQ(e.from, EvState::good);
  EXPECT_EQ(e.to, EvState::assumed_bad);
  EXPECT_EQ(e.drop_count, 1u);
  EXPECT_EQ(pp->health(victim).drops, 0u);  // reported with the event

  EXPECT_EQ(pp->stats().retired, 1u);
  EXPECT_EQ(pp->stats().promotions, 1u);
  EXPECT_EQ(active_on(*pp, 0).size(), 4u);
  EXPECT_EQ(active_on(*pp, 1), act1);  // other port untouched
  EXPECT_EQ(backups_on(*pp, 0).size(), 3u);
  EXPECT_EQ(backups_on(*pp, 1).size(), 4u);
  // The promoted EV is a former backup of port 0.
  std::vector<int> now0 = active_on(*pp, 0);
  int promoted = kNone;
  for (int s : now0)
    if (std::find(act0.begin(), act0.end(), s) == act0.end()) promoted = s;
  ASSERT_NE(promoted, kNone);
  EXPECT_NE(std::find(bak0.begin(), bak0.end(), promoted), bak0.end());
  EXPECT_EQ(pp->usable_active(), 8u);
  EXPECT_EQ(pp->count(EvState::assumed_bad), 1u);

  bool promoted_used = false;
  for (int k = 0; k < 400; ++k) {
    const int s = pp->select(at, 0b11, kNone);
    ASSERT_NE(s, victim);
    promoted_used |= s == promoted;
  }
  EXPECT_TRUE(promoted_used);
  // A further loss on an ASSUMED_BAD EV changes nothing.
  pp->on_lost(at, victim);
  EXPECT_EQ(pp->stats().retired, 1u);
  EXPECT_EQ(events.size(), 1u);
}

TEST_F(PolicyTest, LossFromSkipReportsFromSkip) {
  auto pp = make(small_profile(), 2);
  const int s = active_on(*pp, 0)[0];
  pp->on_trimmed(t0, s);
  pp->on_lost(t0, s);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].from, EvState::skip);
  EXPECT_EQ(events[0].to, EvState::assumed_bad);
}

TEST_F(PolicyTest, BackupsRunOutThenActiveSetShrinks) {
  auto pp = make(small_profile(), 2);
  // Port 0 has 4 active + 4 backups. Retiring 6 of its EVs leaves 2 active.
  for (int k = 0; k < 6; ++k) pp->on_lost(t0, active_on(*pp, 0)[0]);
  EXPECT_EQ(pp->stats().retired, 6u);
  EXPECT_EQ(pp->stats().promotions, 4u);
  EXPECT_EQ(active_on(*pp, 0).size(), 2u);
  EXPECT_EQ(active_on(*pp, 1).size(), 4u);
  EXPECT_EQ(pp->usable_active(), 6u);
  // Round-robin still alternates ports.
  for (int k = 0; k < 8; ++k) EXPECT_EQ(pp->slot(pp->select(t0, 0b11, kNone)).port, k % 2);
}

// ------------------------------------------------------------------ ev_min_active

TEST_F(PolicyTest, EvMinActiveStopsRetiring) {
  EvProfile p;
  p.ev_count = 8;
  p.active_count = 8;  // no backups
  p.ev_min_active = 6;
  auto pp = make(p, 2);
  ASSERT_EQ(pp->usable_active(), 8u);
  std::vector<int> all;
  for (int i = 0; i < 8; ++i) all.push_back(i);
  for (int s : all) pp->on_lost(t0, s);
  EXPECT_EQ(pp->usable_active(), 6u);
  EXPECT_EQ(pp->stats().retired, 2u);
  EXPECT_EQ(pp->stats().min_active_holds, 6u);
  EXPECT_EQ(pp->stats().promotions, 0u);
  EXPECT_EQ(pp->count(EvState::assumed_bad), 2u);
  EXPECT_EQ(pp->count(EvState::good), 6u);
  // Two retirements, and one held event for each of the six EVs kept in
  // service (reference 8, item 9: keep it GOOD and raise an event).
  ASSERT_EQ(events.size(), 8u);
  for (size_t i = 0; i < 2; ++i) EXPECT_FALSE(events[i].held);
  for (size_t i = 2; i < 8; ++i) {
    EXPECT_TRUE(events[i].held);
    EXPECT_EQ(events[i].from, EvState::good);
    EXPECT_EQ(events[i].to, EvState::good);
    EXPECT_EQ(events[i].ev, pp->slot(static_cast<int>(i)).value);
  }
  // The first two were retired; the rest stay GOOD and active.
  EXPECT_EQ(pp->slot(0).state, EvState::assumed_bad);
  EXPECT_EQ(pp->slot(1).state, EvState::assumed_bad);
  for (int i = 2; i < 8; ++i) {
    EXPECT_EQ(pp->slot(i).state, EvState::good) << i;
    EXPECT_TRUE(pp->slot(i).active) << i;
  }
  // Another loss on a held EV is refused again, and not reported twice.
  pp->on_lost(t0, 5);
  EXPECT_EQ(pp->stats().min_active_holds, 7u);
  EXPECT_EQ(pp->usable_active(), 6u);
  EXPECT_EQ(events.size(), 8u);
}

TEST_F(PolicyTest, SkipLapsesAfterOneRotationOrSkipMax) {
  EvProfile p;
  p.ev_count = 8;
  p.active_count = 8;
  p.ev_min_active = 1;
  // Default: no time cap, one rotation.
  {
    auto pp = make(p, 1);
    const int s = pp->select(t0, 0b1, kNone);
    pp->on_delivered(t0, s, wire::Mark::skip_once);
    ASSERT_EQ(pp->slot(s).state, EvState::skip);
    std::vector<int> picks;
    for (int k = 0; k < 16; ++k) picks.push_back(pp->select(t0 + Duration::ms(1), 0b1, kNone));
    // Passed over once however late, then used again.
    EXPECT_EQ(std::count(picks.begin(), picks.end(), s), 1);
  }
  // With skip_max, a SKIP older than it is used at its turn.
  proto.skip_max = Duration::us(5);
  {
    auto pp = make(p, 1);
    const int s = pp->select(t0, 0b1, kNone);
    pp->on_delivered(t0, s, wire::Mark::skip_once);
    std::vector<int> picks;
    for (int k = 0; k < 16; ++k) picks.push_back(pp->select(t0 + Duration::us(6), 0b1, kNone));
    EXPECT_EQ(std::count(picks.begin(), picks.end(), s), 2);
    // A fresh mark within skip_max is still passed over.
    pp->on_delivered(t0 + Duration::us(6), s, wire::Mark::skip_once);
    picks.clear();
    for (int k = 0; k < 8; ++k) picks.push_back(pp->select(t0 + Duration::us(7), 0b1, kNone));
    EXPECT_EQ(std::count(picks.begin(), picks.end(), s), 0);
  }
}

TEST_F(PolicyTest, EvMinActiveCountsOnlyUsablePorts) {
  EvProfile p;
  p.ev_count = 8;
  p.active_count = 8;
  p.ev_min_active = 3;
  auto pp = make(p, 2);
  pp->set_port_mask(0b01);  // port 1 out of service: 4 usable
  ASSERT_EQ(pp->usable_active(), 4u);
  const std::vector<int> act0 = active_on(*pp, 0);
  pp->on_lost(t0, act0[0]);  // 4 -> 3
  pp->on_lost(t0, act0[1]);  // would leave 2: refused
  EXPECT_EQ(pp->stats().retired, 1u);
  EXPECT_EQ(pp->stats().min_active_holds, 1u);
  EXPECT_EQ(pp->usable_active(), 3u);
}

TEST_F(PolicyTest, EvMinActiveDoesNotBlockRetirementThatABackupReplaces) {
  // Regression (fixed): src/core/path/path_policy.cc MrcPathPolicy::retire() (line 393)
  // refuses whenever usable_active() <= ev_min_active, without noticing that
  // leave_service() will promote a backup of the same port. A retirement
  // with a backup available leaves usable_active() unchanged, so it can never
  // go below ev_min_active (reference 4.4 / 8 item 9: refuse only if demotion
  // "would leave fewer than ev_min_active usable EVs"). With
  // active_count == ev_min_active (here 4 + 4 backups) no EV can ever be
  // retired and a failed path stays in the active set for good.
  EvProfile p;
  p.ev_count = 8;
  p.active_count = 4;
  p.ev_min_active = 4;
  auto pp = make(p, 2);
  const int victim = active_on(*pp, 0)[0];
  pp->on_lost(t0, victim);
  EXPECT_EQ(pp->slot(victim).state, EvState::assumed_bad);
  EXPECT_EQ(pp->usable_active(), 4u);
  EXPECT_EQ(pp->stats().min_active_holds, 0u);
}

TEST_F(PolicyTest, NeverRetiresTheLastEv) {
  // Regression (fixed): src/core/path/path_policy.cc MrcPathPolicy::retire() (line 393):
  // with ev_min_active = 0 (accepted by EvProfile::validate) every EV of the
  // QP can be retired, after which select() returns kNone and the QP can
  // only send again after a probe resurrects an EV. Reference 8 item 9:
  // "never let a QP have zero EVs". Expected: refuse to retire the last
  // usable active EV regardless of ev_min_active (or validate ev_min_active >= 1).
  EvProfile p;
  p.ev_count = 2;
  p.active_count = 2;
  p.ev_min_active = 0;
  auto pp = make(p, 1);
  pp->on_lost(t0, 0);
  pp->on_lost(t0, 1);
  EXPECT_GE(pp->usable_active(), 1u);
  EXPECT_NE(pp->select(t0, 0b1, kNone), kNone);
}

// ------------------------------------------------------------------ probes

TEST_F(PolicyTest, ProbeScheduleBackoffAndResurrection) {
  proto.probe_interval = Duration::us(100);
  proto.probe_interval_max = Duration::us(500);
  proto.probe_resurrect_count = 2;
  auto pp = make(small_profile(), 2);
  EXPECT_EQ(pp->next_probe(), Time::never());
  const int a = active_on(*pp, 1)[0];
  pp->on_lost(t0, a);
  events.clear();
  EXPECT_EQ(pp->next_probe(), t0 + Duration::us(100));
  EXPECT_EQ(pp->take_due_probe(t0 + Duration::us(99), 0b11), kNone);
  EXPECT_EQ(pp->take_due_probe(t0 + Duration::us(100), 0b01), kNone);  // port 1 not in mask
  EXPECT_EQ(pp->stats().probes_sent, 0u);

  // Unanswered probes back off: 100, 200, 400, then capped at 500.
  Time t = t0 + Duration::us(100);
  const int64_t expect_gap_us[] = {100, 200, 400, 500, 500};
  for (int64_t gap : expect_gap_us) {
    EXPECT_EQ(pp->take_due_probe(t, 0b11), a);
    EXPECT_EQ(pp->take_due_probe(t, 0b11), kNone);  // one probe per due time
    EXPECT_EQ(pp->next_probe(), t + Duration::us(gap));
    EXPECT_EQ(pp->take_due_probe(t + Duration::us(gap) - Duration::ps(1), 0b11), kNone);
    t = t + Duration::us(gap);
  }
  EXPECT_EQ(pp->stats().probes_sent, 5u);
  EXPECT_EQ(pp->slot(a).state, EvState::assumed_bad);

  // Probe answered (count 1): re-probe after probe_interval, not the backoff.
  EXPECT_EQ(pp->take_due_probe(t, 0b11), a);
  pp->on_probe_response(t + Duration::us(10), a, wire::Mark::none);
  EXPECT_EQ(pp->slot(a).state, EvState::assumed_bad);
  EXPECT_TRUE(events.empty());
  t = t + Duration::us(10);
  EXPECT_EQ(pp->next_probe(), t + Duration::us(100));
  t = t + Duration::us(100);
  EXPECT_EQ(pp->take_due_probe(t, 0b11), a);
  pp->on_probe_response(t + Duration::us(10), a, wire::Mark::none);  // count 2
  EXPECT_EQ(pp->slot(a).state, EvState::good);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].ev, pp->slot(a).value);
  EXPECT_EQ(events[0].port, 1);
  EXPECT_EQ(events[0].from, EvState::assumed_bad);
  EXPECT_EQ(events[0].to, EvState::good);
  EXPECT_EQ(events[0].at, t + Duration::us(10));
  EXPECT_EQ(pp->stats().resurrected, 1u);
  EXPECT_EQ(pp->next_probe(), Time::never());
  EXPECT_EQ(pp->take_due_probe(Time::zero() + Duration::s(1), 0b11), kNone);
  // Back in service as a backup (a backup replaced it); 4 active per port still.
  EXPECT_EQ(active_on(*pp, 1).size(), 4u);
  EXPECT_EQ(backups_on(*pp, 1).size(), 4u);
}

TEST_F(PolicyTest, UnansweredProbeResetsResurrectionCount) {
  proto.probe_interval = Duration::us(100);
  proto.probe_interval_max = Duration::ms(10);
  proto.probe_resurrect_count = 2;
  auto pp = make(small_profile(), 2);
  const int b = active_on(*pp, 0)[2];
  pp->on_lost(t0, b);
  events.clear();
  Time t = t0 + Duration::us(100);
  ASSERT_EQ(pp->take_due_probe(t, 0b11), b);
  pp->on_probe_response(t, b, wire::Mark::none);  // 1 good
  t = t + Duration::us(100);
  ASSERT_EQ(pp->next_probe(), t);
  ASSERT_EQ(pp->take_due_probe(t, 0b11), b);  // this one goes unanswered
  t = pp->next_probe();
  EXPECT_EQ(t, t0 + Duration::us(300));
  ASSERT_EQ(pp->take_due_probe(t, 0b11), b);  // finds the previous unanswered: count reset
  EXPECT_EQ(pp->next_probe(), t + Duration::us(200));  // and backoff doubled
  pp->on_probe_response(t, b, wire::Mark::none);       // 1 good again, not 2
  EXPECT_EQ(pp->slot(b).state, EvState::assumed_bad);
  EXPECT_TRUE(events.empty());
  t = t + Duration::us(100);
  ASSERT_EQ(pp->take_due_probe(t, 0b11), b);
  pp->on_probe_response(t, b, wire::Mark::none);  // 2 consecutive
  EXPECT_EQ(pp->slot(b).state, EvState::good);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].to, EvState::good);
}

TEST_F(PolicyTest, ProbeAnsweredWithSkipOnceResurrectsToSkip) {
  proto.probe_resurrect_count = 1;
  auto pp = make(small_profile(), 2);
  const int a = active_on(*pp, 0)[0];
  pp->on_lost(t0, a);
  events.clear();
  const Time t = t0 + proto.probe_interval;
  ASSERT_EQ(pp->take_due_probe(t, 0b11), a);
  pp->on_probe_response(t, a, wire::Mark::skip_once);
  EXPECT_EQ(pp->slot(a).state, EvState::skip);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].to, EvState::skip);
}

TEST_F(PolicyTest, ProbesOfMaskedOutPortsAreNotTaken) {
  auto pp = make(small_profile(), 2);
  const int a = active_on(*pp, 1)[0];
  pp->on_lost(t0, a);
  pp->set_port_mask(0b01);
  EXPECT_EQ(pp->take_due_probe(t0 + Duration::ms(5), 0b11), kNone);
  pp->set_port_mask(0b11);
  EXPECT_EQ(pp->take_due_probe(t0 + Duration::ms(5), 0b10), a);
}

TEST_F(PolicyTest, NextProbeFollowsPortMask) {
  // Regression (fixed): src/core/path/path_policy.cc MrcPathPolicy::next_probe() (line 260)
  // caches its answer until probe_dirty_ is set, and next_probe() filters by
  // port_mask_, but MrcPathPolicy does not override on_port_mask_changed()
  // to set probe_dirty_. So after set_port_mask() next_probe() returns the
  // value computed under the old mask: an EV retired on a port that then
  // goes down (cache -> never) is never probed again once the port comes
  // back up, because Qp::next_timeout() (qp.cc:332) never arms a probe
  // timer; the EV stays ASSUMED_BAD until some unrelated retire/probe
  // dirties the cache. (The other direction returns a due time for a port
  // that is down.) Expected: on_port_mask_changed() { probe_dirty_ = true; }.
  auto pp = make(small_profile(), 2);
  const int a = active_on(*pp, 1)[0];
  pp->on_lost(t0, a);
  pp->set_port_mask(0b01);
  EXPECT_EQ(pp->next_probe(), Time::never());
  pp->set_port_mask(0b11);
  EXPECT_EQ(pp->next_probe(), t0 + proto.probe_interval);
  pp->set_port_mask(0b01);
  EXPECT_EQ(pp->next_probe(), Time::never());
}

// ------------------------------------------------------------------ DENIED

TEST_F(PolicyTest, DenyAndRestore) {
  auto pp = make(small_profile(), 2);
  const int d = active_on(*pp, 0)[3];
  const uint32_t value = pp->slot(d).value;
  ASSERT_TRUE(pp->set_denied(t0, value, true).ok());
  EXPECT_EQ(pp->slot(d).state, EvState::denied);
  EXPECT_FALSE(pp->slot(d).active);
  EXPECT_EQ(active_on(*pp, 0).size(), 4u);  // a backup took its place
  EXPECT_EQ(pp->stats().promotions, 1u);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].from, EvState::good);
  EXPECT_EQ(events[0].to, EvState::denied);
  EXPECT_EQ(events[0].ev, value);
  // Denying twice is a no-op.
  ASSERT_TRUE(pp->set_denied(t0, value, true).ok());
  EXPECT_EQ(events.size(), 1u);
  for (int k = 0; k < 200; ++k) EXPECT_NE(pp->select(t0, 0b11, kNone), d);
  // Losses and probes do not touch a DENIED EV.
  pp->on_lost(t0, d);
  EXPECT_EQ(pp->slot(d).state, EvState::denied);
  EXPECT_EQ(pp->next_probe(), Time::never());

  ASSERT_TRUE(pp->set_denied(t0 + Duration::us(1), value, false).ok());
  EXPECT_EQ(pp->slot(d).state, EvState::good);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].from, EvState::denied);
  EXPECT_EQ(events[1].to, EvState::good);
  EXPECT_EQ(active_on(*pp, 0).size(), 4u);
  EXPECT_EQ(backups_on(*pp, 0).size(), 4u);  // back as a backup
  // Un-denying a GOOD EV is a no-op.
  ASSERT_TRUE(pp->set_denied(t0, value, false).ok());
  EXPECT_EQ(events.size(), 2u);
}

TEST_F(PolicyTest, DenyAssumedBadStopsProbing) {
  auto pp = make(small_profile(), 2);
  const int a = active_on(*pp, 0)[0];
  pp->on_lost(t0, a);
  ASSERT_NE(pp->next_probe(), Time::never());
  ASSERT_TRUE(pp->set_denied(t0, pp->slot(a).value, true).ok());
  EXPECT_EQ(pp->next_probe(), Time::never());
  EXPECT_EQ(pp->take_due_probe(t0 + Duration::s(1), 0b11), kNone);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].from, EvState::assumed_bad);
  EXPECT_EQ(events[1].to, EvState::denied);
}

TEST_F(PolicyTest, DenyUnknownValueIsNotFound) {
  auto pp = make(small_profile(), 2);
  EXPECT_EQ(pp->set_denied(t0, 1u << 20, true), Errc::not_found);
  EXPECT_EQ(pp->set_denied(t0, 1u << 20, false), Errc::not_found);
  EXPECT_TRUE(events.empty());
}

// ------------------------------------------------------------------ port mask

TEST_F(PolicyTest, PortMaskTakesPortOutOfServiceAndBack) {
  auto pp = make(small_profile(), 2);
  pp->set_port_mask(0b10);
  EXPECT_EQ(pp->port_mask(), 0b10u);
  EXPECT_EQ(pp->sendable_ports(), 0b10u);
  EXPECT_EQ(pp->usable_active(), 4u);
  for (int k = 0; k < 40; ++k) EXPECT_EQ(pp->slot(pp->select(t0, 0b11, kNone)).port, 1);
  EXPECT_EQ(pp->select(t0, 0b01, kNone), kNone);
  pp->set_port_mask(0);
  EXPECT_EQ(pp->sendable_ports(), 0u);
  EXPECT_EQ(pp->select(t0, 0b11, kNone), kNone);
  pp->set_port_mask(0b11);
  EXPECT_EQ(pp->sendable_ports(), 0b11u);
  EXPECT_EQ(pp->usable_active(), 8u);
  std::set<uint8_t> ports;
  for (int k = 0; k < 4; ++k) ports.insert(pp->slot(pp->select(t0, 0b11, kNone)).port);
  EXPECT_EQ(ports, (std::set<uint8_t>{0, 1}));
  EXPECT_TRUE(events.empty());  // a port change is not an EV state change
}

// ------------------------------------------------------------------ reverse (control) EVs

TEST_F(PolicyTest, SingleReverseEvPerPort) {
  proto.reverse_evs_per_port = 1;
  auto pp = make(small_profile(), 2);
  for (uint8_t port = 0; port < 2; ++port) {
    const int c = pp->control_ev(port);
    ASSERT_NE(c, kNone);
    EXPECT_EQ(pp->slot(c).port, port);
    EXPECT_EQ(pp->control_ev(port), c);  // stable until something happens
    pp->rotate_control_ev(port);
    const int c2 = pp->control_ev(port);
    ASSERT_NE(c2, kNone);
    EXPECT_NE(c2, c);
    EXPECT_EQ(pp->slot(c2).port, port);
    EXPECT_EQ(pp->control_ev(port), c2);
  }
  EXPECT_EQ(pp->control_ev(2), kNone);  // no such port
  // adopt_control_ev sets the port's reverse EV (a backup is fine).
  const int b = backups_on(*pp, 1)[2];
  pp->adopt_control_ev(b);
  EXPECT_EQ(pp->control_ev(1), b);
  EXPECT_EQ(pp->control_ev(1), b);
  // Retiring the control EV moves the port to another usable one.
  const int victim = active_on(*pp, 0)[0];
  pp->adopt_control_ev(victim);
  ASSERT_EQ(pp->control_ev(0), victim);
  pp->on_lost(t0, victim);
  ASSERT_EQ(pp->slot(victim).state, EvState::assumed_bad);
  const int after = pp->control_ev(0);
  ASSERT_NE(after, kNone);
  EXPECT_NE(after, victim);
  EXPECT_EQ(pp->slot(after).port, 0);
  EXPECT_EQ(pp->slot(after).state, EvState::good);
  EXPECT_EQ(pp->control_ev(0), after);
}

TEST_F(PolicyTest, ReverseEvSetRotates) {
  proto.reverse_evs_per_port = 4;
  auto pp = make(small_profile(), 2);
  auto cycle = [&](uint8_t port) {
    std::vector<int> v;
    for (int k = 0; k < 4; ++k) v.push_back(pp->control_ev(port));
    return v;
  };
  for (uint8_t port = 0; port < 2; ++port) {
    const std::vector<int> first = cycle(port);
    EXPECT_EQ(std::set<int>(first.begin(), first.end()).size(), 4u);  // 4 distinct EVs
    for (int s : first) {
      ASSERT_NE(s, kNone);
      EXPECT_EQ(pp->slot(s).port, port);
      EXPECT_EQ(pp->slot(s).state, EvState::good);
    }
    EXPECT_EQ(cycle(port), first);  // period 4
  }
  // rotate_control_ev replaces the EV used last, and the replacement is
  // the next one used (the answer to the duplicate that prompted it); the
  // others stay, in their order.
  std::vector<int> before = cycle(0);
  const int last = before.back();
  pp->rotate_control_ev(0);
  std::vector<int> now = cycle(0);
  EXPECT_EQ(std::count(now.begin(), now.end(), last), 0);
  for (size_t k = 0; k + 1 < 4; ++k) EXPECT_EQ(now[k + 1], before[k]);
  EXPECT_EQ(pp->slot(now[0]).port, 0);
  EXPECT_EQ(cycle(0), now);  // still period 4
  // adopt_control_ev puts an EV into the set (once).
  int outsider = kNone;
  for (int s : backups_on(*pp, 0))
    if (std::count(now.begin(), now.end(), s) == 0) outsider = s;
  ASSERT_NE(outsider, kNone);
  pp->adopt_control_ev(outsider);
  std::vector<int> adopted = cycle(0);
  EXPECT_EQ(std::count(adopted.begin(), adopted.end(), outsider), 1);
  pp->adopt_control_ev(outsider);  // already in the set: no change
  EXPECT_EQ(cycle(0), adopted);
  // A retired member leaves the set at once.
  const int victim = active_on(*pp, 0)[0];
  pp->adopt_control_ev(victim);
  std::vector<int> with = cycle(0);
  ASSERT_EQ(std::count(with.begin(), with.end(), victim), 1);
  pp->on_lost(t0, victim);
  std::vector<int> without = cycle(0);
  EXPECT_EQ(std::count(without.begin(), without.end(), victim), 0);
  for (int s : without) EXPECT_EQ(pp->slot(s).state, EvState::good);
}

TEST_F(PolicyTest, ControlEvSkipsDeniedEv) {
  auto pp = make(small_profile(), 2);
  const int c = pp->control_ev(1);
  ASSERT_TRUE(pp->set_denied(t0, pp->slot(c).value, true).ok());
  const int c2 = pp->control_ev(1);
  ASSERT_NE(c2, kNone);
  EXPECT_NE(c2, c);
  EXPECT_EQ(pp->slot(c2).port, 1);
}

TEST_F(PolicyTest, RandomActiveReturnsUsableEvOnMaskedPorts) {
  auto pp = make(small_profile(), 2);
  for (int k = 0; k < 50; ++k) {
    const int s = pp->random_active(0b10);
    ASSERT_NE(s, kNone);
    EXPECT_EQ(pp->slot(s).port, 1);
  }
  EXPECT_EQ(pp->random_active(0), kNone);
}

// ------------------------------------------------------------------ comparison policies

TEST_F(PolicyTest, ObliviousIgnoresLoss) {
  EvProfile p = small_profile();
  p.policy = PathPolicyKind::oblivious;
  auto pp = make(p, 2);
  const int s = 3;
  pp->on_lost(t0, s);
  pp->on_delivered(t0, s, wire::Mark::always_skip);
  pp->on_trimmed(t0, s);
  EXPECT_EQ(pp->slot(s).state, EvState::good);
  EXPECT_EQ(pp->health(s).packets_lost, 1u);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(pp->stats().retired, 0u);
  EXPECT_EQ(pp->next_probe(), Time::never());
  // Sprays over every EV (all 16, not only an active set), including the lossy one.
  std::multiset<int> seen;
  for (int k = 0; k < 16; ++k) seen.insert(pp->select(t0, 0b11, kNone));
  std::multiset<int> all;
  for (int i = 0; i < 16; ++i) all.insert(i);
  EXPECT_EQ(seen, all);
  int uses = 0;
  for (int k = 0; k < 64; ++k) uses += pp->select(t0, 0b11, kNone) == s;
  EXPECT_EQ(uses, 4);
}

TEST_F(PolicyTest, ObliviousDoesNotUseDeniedEv) {
  // Regression (fixed): src/core/path/path_policy.cc ObliviousPolicy::select() (line 444)
  // and SinglePathPolicy::select() ignore EV state, while the base
  // PathPolicy::set_denied() they inherit accepts the DENY and reports the EV
  // as DENIED (state + EvEvent). A controller-DENIED EV therefore keeps
  // carrying data (reference 4.6: DENIED is never used for data). Ignoring
  // path *signals* is the point of the ablation; ignoring the controller's
  // deny list is not. Expected: skip DENIED slots (or reject set_denied with
  // not_supported).
  EvProfile p = small_profile();
  p.policy = PathPolicyKind::oblivious;
  auto pp = make(p, 2);
  ASSERT_TRUE(pp->set_denied(t0, pp->slot(3).value, true).ok());
  for (int k = 0; k < 64; ++k) EXPECT_NE(pp->select(t0, 0b11, kNone), 3);
}

TEST_F(PolicyTest, SinglePathAlwaysSameSlot) {
  EvProfile p = small_profile();
  p.policy = PathPolicyKind::single_path;
  auto pp = make(p, 2);
  const int s = pp->select(t0, 0b11, kNone);
  ASSERT_NE(s, kNone);
  for (int k = 0; k < 100; ++k) EXPECT_EQ(pp->select(t0, 0b11, s), s);
  pp->on_lost(t0, s);
  EXPECT_EQ(pp->slot(s).state, EvState::good);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(pp->select(t0, 0b11, kNone), s);
  const uint8_t port = pp->slot(s).port;
  EXPECT_EQ(pp->sendable_ports(), 1u << port);
  EXPECT_EQ(pp->select(t0, 1u << (1 - port), kNone), kNone);
  pp->set_port_mask(1u << (1 - port));
  EXPECT_EQ(pp->select(t0, 0b11, kNone), kNone);
  EXPECT_EQ(pp->sendable_ports(), 0u);
}

// ------------------------------------------------------------------ EXP mode

TEST_F(PolicyTest, ExplicitEvsAreUsedExactly) {
  EvProfile p;
  // Values chosen so several collide in the value->slot hash (same low bits).
  p.explicit_evs = {{0, 0},   {16, 1},    {32, 0},     {48, 1},         {7, 0},
                    {65535, 1}, {1u << 20, 0}, {0xFFFFFFFF, 1}, {4096, 0}, {4112, 1}};
  p.active_count = 4;
  p.ev_min_active = 1;
  auto pp = make(p, 2);
  ASSERT_EQ(pp->size(), p.explicit_evs.size());
  for (size_t i = 0; i < p.explicit_evs.size(); ++i) {
    const int si = static_cast<int>(i);
    EXPECT_EQ(pp->slot(si).value, p.explicit_evs[i].value);
    EXPECT_EQ(pp->slot(si).port, p.explicit_evs[i].port);
    EXPECT_EQ(pp->find(p.explicit_evs[i].value), si);
  }
  for (uint32_t absent : {1u, 64u, 80u, 4128u, 0xFFFFFFFEu, 65534u})
    EXPECT_EQ(pp->find(absent), kNone) << absent;
  // active_count 4 over 2 ports: the first two listed EVs of each port.
  EXPECT_EQ(active_on(*pp, 0), (std::vector<int>{0, 2}));
  EXPECT_EQ(active_on(*pp, 1), (std::vector<int>{1, 3}));
  // Selection only ever returns those.
  std::set<int> seen;
  for (int k = 0; k < 40; ++k) seen.insert(pp->select(t0, 0b11, kNone));
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2, 3}));
}

TEST_F(PolicyTest, ExplicitEvsManyEntriesAllFound) {
  EvProfile p;
  for (uint32_t i = 0; i < 4096; ++i)
    p.explicit_evs.push_back(EvEntry{i * 4096u, static_cast<uint8_t>(i % 4)});
  p.active_count = 64;
  p.ev_min_active = 16;
  auto pp = make(p, 4);
  ASSERT_EQ(pp->size(), 4096u);
  for (uint32_t i = 0; i < 4096; ++i) ASSERT_EQ(pp->find(i * 4096u), static_cast<int>(i));
  EXPECT_EQ(pp->find(1), kNone);
  EXPECT_EQ(pp->find(4096u * 4096u), kNone);
  EXPECT_EQ(pp->usable_active(), 64u);
}

}  // namespace
}  // namespace mrc::core::path
