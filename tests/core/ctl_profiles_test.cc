// SPDX-License-Identifier: BSD-2-Clause
// Tests of the controller model (src/core/ctl/profiles.hpp): the EV
// expansion of reference 4.2 with its worked examples, the format / EV / CC
// profile state machines of reference 6.3 with every error code, GEN and
// EXP arrays, EV operations, EV events and the hand-over to QPs.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "core/ctl/profiles.hpp"
#include "core/endpoint.hpp"

namespace mrc::core::ctl {
namespace {

CtlEv ev_of(uint64_t compact, uint32_t bits, uint8_t port) {
  CtlEv e;
  e.value = compact_from_uint(compact, bits);
  e.port = port;
  return e;
}

Field fmt_field(uint32_t w) { return Field{w, 0, 0, 0, 0}; }
Field ev_field(uint32_t w, uint64_t init, uint64_t mask, uint64_t min = 0, uint64_t max = 0) {
  return Field{w, init, min, max, mask};
}

// ------------------------------------------------------------------ expansion

TEST(CtlExpand, ReferenceSampleSixteenPlusSixteen) {
  // Reference 4.2's worked example: fmt 16+16, two fields init 0x1000 /
  // 0x2000 with mask 0x0F0F; compact 0x33 0x12 expands to 0x13032102.
  const std::vector<uint32_t> fmt = {16, 16};
  const std::vector<Field> f = {ev_field(16, 0x1000, 0x0F0F, 0, 0xFF), ev_field(16, 0x2000, 0x0F0F, 0, 0xFF)};
  std::array<uint8_t, 32> c{};
  c[0] = 0x33;
  c[1] = 0x12;
  auto w = expand(fmt, f, c);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->bits, 32);
  EXPECT_EQ(w->leading(32), 0x13032102u);
  EXPECT_EQ(w->bytes[0], 0x13);
  EXPECT_EQ(w->bytes[3], 0x02);
  EXPECT_EQ(w->bytes[4], 0x00);
}

TEST(CtlExpand, ReferenceSrv6LocatorAndFourUsids) {
  // Reference 4.2: locator field (w32, init 0xCAFECAFE, mask 0) consumes no
  // compact bits; four uSID fields (w16, mask 0xFFFF) take 64 bits; the
  // format's last two uSIDs stay zero: DA cafe:cafe:u1:u2:u3:u4::.
  const std::vector<uint32_t> fmt = {32, 16, 16, 16, 16, 16, 16};
  std::vector<Field> f = {ev_field(32, 0xCAFECAFE, 0)};
  for (int i = 0; i < 4; ++i) f.push_back(ev_field(16, 0, 0xFFFF, 0, 0xFFFF));
  auto w = expand(fmt, f, compact_from_uint(0x1111'2222'3333'4444ull, 64));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->bits, 128);
  const std::array<uint8_t, 16> da = {0xca, 0xfe, 0xca, 0xfe, 0x11, 0x11, 0x22, 0x22,
                                      0x33, 0x33, 0x44, 0x44, 0x00, 0x00, 0x00, 0x00};
  EXPECT_TRUE(std::equal(da.begin(), da.end(), w->bytes.begin()));
  EXPECT_TRUE(std::all_of(w->bytes.begin() + 16, w->bytes.end(), [](uint8_t b) { return b == 0; }));
}

TEST(CtlExpand, ScatterPutsFirstPulledBitInHighestMaskBit) {
  // mask 0b1010 over init 0b0101: compact bits "10" -> bit 3 = 1, bit 1 = 0.
  const std::vector<uint32_t> fmt = {4, 4};
  const std::vector<Field> f = {ev_field(4, 0b0101, 0b1010, 0, 3)};
  auto w = expand(fmt, f, compact_from_uint(0b10, 2));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->bits, 8);
  EXPECT_EQ(w->leading(8), 0b1101'0000u);  // second format field zero
  // "01": bit 3 = 0, bit 1 = 1 -> 0b0111.
  EXPECT_EQ(expand(fmt, f, compact_from_uint(0b01, 2))->leading(8), 0b0111'0000u);
}

TEST(CtlExpand, NarrowFieldIsRightAlignedInWiderFormatField) {
  const std::vector<uint32_t> fmt = {8, 4, 4};
  const std::vector<Field> f = {ev_field(4, 0, 0xF, 0, 15), ev_field(4, 0, 0xF, 0, 15), ev_field(4, 0xA, 0)};
  auto w = expand(fmt, f, compact_from_uint(0x5C, 8));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->leading(16), 0x05CAu);
}

TEST(CtlExpand, UnconsumedCompactBitsMustBeZero) {
  const std::vector<uint32_t> fmt = {16};
  const std::vector<Field> f = {ev_field(16, 0, 0x00FF, 0, 0xFF)};
  EXPECT_TRUE(expand(fmt, f, compact_from_uint(0xAB, 8)).ok());
  EXPECT_EQ(expand(fmt, f, compact_from_uint(0xAB8, 12)).error(), Errc::invalid_argument);
  std::array<uint8_t, 32> c{};
  c[31] = 1;  // the very last bit
  EXPECT_EQ(expand(fmt, f, c).error(), Errc::invalid_argument);
}

// ------------------------------------------------------------------ fixtures

struct CtlTest : ::testing::Test {
  Limits lim = [] {
    Limits l;
    l.num_ports = 2;
    l.max_fmt_profiles = 4;
    l.max_ev_profiles = 4;
    l.max_cc_profiles = 4;
    l.ev_max_count = 64;
    l.ev_max_count_profile = 32;
    return l;
  }();
  std::unique_ptr<Controller> c;

  void SetUp() override { make(); }
  void make(uint64_t seed = 7) {
    ASSERT_TRUE(lim.validate(nullptr).ok());
    c = std::make_unique<Controller>(lim, Prng(seed));
  }

  Status fmt(uint64_t id, ProfileState st, uint32_t mode, std::vector<uint32_t> widths, uint32_t mask) {
    FmtProfileAttr a;
    a.state = st;
    a.mode = mode;
    a.fields_op = FieldsOp::modify;
    for (uint32_t w : widths) a.fields.push_back(fmt_field(w));
    return c->modify_fmt_profile(id, a, mask);
  }
  // Format 1: STEV 16+16, ONLINE.
  void online_fmt_stev(uint64_t id = 1) {
    using namespace fmt_attr;
    ASSERT_TRUE(fmt(id, ProfileState::offline, fmt_mode::kStev, {16, 16}, kState | kMode | kOp).ok());
    ASSERT_TRUE(fmt(id, ProfileState::online, 0, {}, kState).ok());
  }
  ProfileState fmt_state(uint64_t id) {
    FmtProfileAttr a;
    EXPECT_TRUE(c->query_fmt_profile(id, a, fmt_attr::kState).ok());
    return a.state;
  }
  ProfileState ev_state_of(uint64_t id) {
    EvProfileAttr a;
    EXPECT_TRUE(c->query_ev_profile(id, a, ev_attr::kState).ok());
    return a.state;
  }

  // EV profile attributes for INIT -> OFFLINE: the reference sample fields.
  static EvProfileAttr ev_offline(uint32_t mode, uint32_t count, uint64_t fmt_id = 1) {
    EvProfileAttr a;
    a.state = ProfileState::offline;
    a.ev_mode = mode;
    a.fmt_id = fmt_id;
    a.ev_count = count;
    a.fields_op = FieldsOp::modify;
    a.fields = {ev_field(16, 0x1000, 0x0F0F, 0, 0xFF), ev_field(16, 0x2000, 0x0F0F, 0, 0xFF)};
    return a;
  }
  static constexpr uint32_t kOfflineMask =
      ev_attr::kState | ev_attr::kMode | ev_attr::kFmtId | ev_attr::kCount | ev_attr::kEvFieldsOp;

  Status ev_op(uint64_t id, EvOp op, std::vector<EvOpEntry> entries, uint32_t* done = nullptr) {
    EvProfileAttr a;
    a.ev_op = op;
    a.entries = std::move(entries);
    a.entry_count = static_cast<uint32_t>(a.entries.size());
    Status s = c->modify_ev_profile(id, a, ev_attr::kEvOp);
    if (done) *done = a.entry_count;
    return s;
  }
  Status replace(uint64_t id, const CtlEv& from, const CtlEv& to, uint32_t flags = 0, uint32_t state = 0) {
    return ev_op(id, EvOp::replace_ev, {EvOpEntry{from, to, state, flags}});
  }
  Status set_state(uint64_t id, const CtlEv& ev, uint32_t state) {
    return ev_op(id, EvOp::modify_ev_state, {EvOpEntry{ev, CtlEv{}, state, 0}});
  }
  std::vector<EvOpEntry> array(uint64_t id) {
    EvProfileAttr a;
    a.ev_op = EvOp::query_ev_array;
    a.entry_count = 0;
    Status s = c->query_ev_profile(id, a, ev_attr::kEvOp);
    if (s == Errc::too_big) {
      a.entries.resize(a.entry_count);
      s = c->query_ev_profile(id, a, ev_attr::kEvOp);
    }
    EXPECT_TRUE(s.ok());
    a.entries.resize(a.entry_count);
    return a.entries;
  }
  Status go_online(uint64_t id, uint32_t min_active = 1, uint32_t event_mask = ev_state::kGood | ev_state::kAssumedBad) {
    EvProfileAttr a;
    a.state = ProfileState::online;
    a.ev_min_active = min_active;
    a.event_mask = event_mask;
    return c->modify_ev_profile(id, a, ev_attr::kState | ev_attr::kMinActive | ev_attr::kEventMask);
  }
  Status set_ev_state_attr(uint64_t id, ProfileState st) {
    EvProfileAttr a;
    a.state = st;
    return c->modify_ev_profile(id, a, ev_attr::kState);
  }
  // EXP profile `id` on format 1 with EVs 0x0101.. on alternating ports, ONLINE.
  void online_exp(uint64_t id, uint32_t count) {
    auto a = ev_offline(ev_mode::kExp, count);
    ASSERT_TRUE(c->modify_ev_profile(id, a, kOfflineMask).ok());
    for (uint32_t i = 0; i < count; ++i)
      ASSERT_TRUE(replace(id, CtlEv{}, ev_of(0x0101 + i, 16, static_cast<uint8_t>(i % 2 + 1))).ok());
    ASSERT_TRUE(go_online(id).ok());
  }
};

// ------------------------------------------------------------------ format profiles

TEST_F(CtlTest, FmtStateMachineEdgesAndErrors) {
  using namespace fmt_attr;
  EXPECT_EQ(fmt_state(1), ProfileState::init);
  // INIT -> ONLINE does not exist; INIT -> OFFLINE needs MODE.
  EXPECT_EQ(fmt(1, ProfileState::online, fmt_mode::kStev, {16}, kState | kMode | kOp), Errc::invalid_argument);
  EXPECT_EQ(fmt(1, ProfileState::offline, 0, {16}, kState | kOp), Errc::invalid_argument);
  // INIT permits nothing but going OFFLINE.
  EXPECT_EQ(fmt(1, ProfileState::init, fmt_mode::kStev, {}, kMode), Errc::permission);
  EXPECT_EQ(fmt_state(1), ProfileState::init);
  // -> OFFLINE with MODE only; ONLINE then needs fields.
  ASSERT_TRUE(fmt(1, ProfileState::offline, fmt_mode::kStev, {}, kState | kMode).ok());
  EXPECT_EQ(fmt_state(1), ProfileState::offline);
  EXPECT_EQ(fmt(1, ProfileState::online, 0, {}, kState), Errc::invalid_argument);
  ASSERT_TRUE(fmt(1, ProfileState::offline, 0, {16, 16}, kOp).ok());
  // OFFLINE -> OFFLINE is fine; a CUR_STATE that is not current is not.
  ASSERT_TRUE(fmt(1, ProfileState::offline, 0, {}, kState).ok());
  FmtProfileAttr cs;
  cs.cur_state = ProfileState::online;
  cs.state = ProfileState::online;
  EXPECT_EQ(c->modify_fmt_profile(1, cs, kState | kCurState), Errc::invalid_argument);
  cs.cur_state = ProfileState::offline;
  ASSERT_TRUE(c->modify_fmt_profile(1, cs, kState | kCurState).ok());
  EXPECT_EQ(fmt_state(1), ProfileState::online);
  // ONLINE: only -> OFFLINE and field queries; no edge to INIT.
  EXPECT_EQ(fmt(1, ProfileState::online, fmt_mode::kUdp, {}, kMode), Errc::permission);
  EXPECT_EQ(fmt(1, ProfileState::online, 0, {8, 8}, kOp), Errc::permission);
  EXPECT_EQ(fmt(1, ProfileState::init, 0, {}, kState), Errc::invalid_argument);
  FmtProfileAttr q;
  q.fields_op = FieldsOp::query;
  q.fields_count = 1;
  EXPECT_EQ(c->modify_fmt_profile(1, q, kOp), Errc::too_big);
  EXPECT_EQ(q.fields_count, 2u);
  ASSERT_TRUE(c->modify_fmt_profile(1, q, kOp).ok());
  ASSERT_EQ(q.fields.size(), 2u);
  EXPECT_EQ(q.fields[1].width, 16u);
  // Query: MODIFY_FIELDS is not a query; too small an array is E2BIG.
  FmtProfileAttr qq;
  qq.fields_op = FieldsOp::modify;
  EXPECT_EQ(c->query_fmt_profile(1, qq, kOp), Errc::invalid_argument);
  qq.fields_op = FieldsOp::query;
  qq.fields_count = 0;
  EXPECT_EQ(c->query_fmt_profile(1, qq, kOp | kMode), Errc::too_big);
  EXPECT_EQ(qq.fields_count, 2u);
  qq.fields_count = 2;
  ASSERT_TRUE(c->query_fmt_profile(1, qq, kOp | kMode | kCurState).ok());
  EXPECT_EQ(qq.mode, fmt_mode::kStev);
  EXPECT_EQ(qq.cur_state, ProfileState::online);
  // Back down: ONLINE -> OFFLINE -> INIT forgets everything.
  ASSERT_TRUE(fmt(1, ProfileState::offline, 0, {}, kState).ok());
  ASSERT_TRUE(fmt(1, ProfileState::init, 0, {}, kState).ok());
  FmtProfileAttr gone;
  gone.fields_op = FieldsOp::query;
  ASSERT_TRUE(c->query_fmt_profile(1, gone, kState | kMode | kOp).ok());
  EXPECT_EQ(gone.state, ProfileState::init);
  EXPECT_EQ(gone.mode, 0u);
  EXPECT_EQ(gone.fields_count, 0u);
}

TEST_F(CtlTest, FmtArgumentChecks) {
  using namespace fmt_attr;
  const uint32_t m = kState | kMode | kOp;
  EXPECT_EQ(fmt(0, ProfileState::offline, fmt_mode::kStev, {16}, m), Errc::invalid_argument);  // id 0: device default
  EXPECT_EQ(fmt(5, ProfileState::offline, fmt_mode::kStev, {16}, m), Errc::invalid_argument);  // > max_fmt_profiles
  EXPECT_EQ(fmt(1, ProfileState::offline, fmt_mode::kStev, {16}, m | kVendor), Errc::invalid_argument);
  EXPECT_EQ(fmt(1, ProfileState::offline, fmt_mode::kStev | fmt_mode::kUdp, {16}, m), Errc::invalid_argument);
  EXPECT_EQ(fmt(1, ProfileState::offline, 1u << 5, {16}, m), Errc::invalid_argument);
  EXPECT_EQ(fmt(1, ProfileState::offline, fmt_mode::kStev, {16, 0}, m), Errc::invalid_argument);
  EXPECT_EQ(fmt(1, ProfileState::offline, fmt_mode::kStev, {65}, m), Errc::invalid_argument);
  EXPECT_EQ(fmt(1, ProfileState::offline, fmt_mode::kStev, {}, m), Errc::invalid_argument);
  // Wider than the mode holds (UDP 16, STEV 32), or too many fields: E2BIG.
  EXPECT_EQ(fmt(1, ProfileState::offline, fmt_mode::kUdp, {16, 1}, m), Errc::too_big);
  EXPECT_EQ(fmt(1, ProfileState::offline, fmt_mode::kStev, {16, 16, 1}, m), Errc::too_big);
  EXPECT_EQ(fmt(1, ProfileState::offline, fmt_mode::kSrv6, std::vector<uint32_t>(17, 8), m), Errc::too_big);
  ASSERT_TRUE(fmt(1, ProfileState::offline, fmt_mode::kSrv6, {32, 16, 16, 16, 16, 16, 16, 32, 16, 16, 16, 16, 16}, m).ok());
  // Switching an OFFLINE profile to a mode its fields do not fit: E2BIG.
  EXPECT_EQ(fmt(1, ProfileState::offline, fmt_mode::kStev, {}, kMode), Errc::too_big);
  FmtProfileAttr q;
  ASSERT_TRUE(c->query_fmt_profile(1, q, kMode).ok());
  EXPECT_EQ(q.mode, fmt_mode::kSrv6);
}

TEST_F(CtlTest, FmtBusyWhileAnOnlineEvProfileUsesIt) {
  using namespace fmt_attr;
  online_fmt_stev(1);
  online_exp(2, 2);
  EXPECT_EQ(fmt(1, ProfileState::offline, 0, {}, kState), Errc::busy);
  EXPECT_EQ(fmt_state(1), ProfileState::online);
  ASSERT_TRUE(set_ev_state_attr(2, ProfileState::offline).ok());
  ASSERT_TRUE(fmt(1, ProfileState::offline, 0, {}, kState).ok());
  // An EV profile cannot go ONLINE on an OFFLINE format.
  EXPECT_EQ(go_online(2), Errc::invalid_argument);
  EXPECT_EQ(ev_state_of(2), ProfileState::offline);
}

// ------------------------------------------------------------------ EV profiles

TEST_F(CtlTest, EvInitToOfflineRequirements) {
  online_fmt_stev(1);
  using namespace ev_attr;
  // INIT -> ONLINE does not exist; INIT permits nothing else.
  EXPECT_EQ(go_online(1), Errc::invalid_argument);
  EvProfileAttr m;
  m.ev_min_active = 1;
  EXPECT_EQ(c->modify_ev_profile(1, m, kMinActive), Errc::permission);
  // Each of MODE, FMT_ID, COUNT, MODIFY_FIELDS is needed for EXP/GEN.
  for (uint32_t missing : {kMode, kFmtId, kCount, kEvFieldsOp}) {
    auto a = ev_offline(ev_mode::kExp, 4);
    EXPECT_EQ(c->modify_ev_profile(1, a, kOfflineMask & ~missing), Errc::invalid_argument) << missing;
    EXPECT_EQ(ev_state_of(1), ProfileState::init);
  }
  // The format must exist (not INIT); the fields must fit it.
  {
    auto a = ev_offline(ev_mode::kExp, 4, 3);
    EXPECT_EQ(c->modify_ev_profile(1, a, kOfflineMask), Errc::invalid_argument);
    a = ev_offline(ev_mode::kExp, 4);
    a.fields.push_back(ev_field(4, 0, 0xF, 0, 15));  // three fields on a two-field format
    EXPECT_EQ(c->modify_ev_profile(1, a, kOfflineMask), Errc::invalid_argument);
  }
  // Field rules of reference 4.2.
  auto with_field = [&](Field f) {
    auto a = ev_offline(ev_mode::kExp, 4);
    a.fields = {f};
    return c->modify_ev_profile(1, a, kOfflineMask);
  };
  EXPECT_EQ(with_field(ev_field(0, 0, 0)), Errc::invalid_argument);            // width 0
  EXPECT_EQ(with_field(ev_field(33, 0, 1, 0, 1)), Errc::invalid_argument);     // > 32 bits
  EXPECT_EQ(with_field(ev_field(8, 0x100, 0xFF, 0, 1)), Errc::invalid_argument);  // init_val too wide
  EXPECT_EQ(with_field(ev_field(8, 0, 0x1FF, 0, 1)), Errc::invalid_argument);     // mask outside width
  EXPECT_EQ(with_field(ev_field(8, 0, 0x0F, 0, 16)), Errc::invalid_argument);     // max > 2^popcount - 1
  EXPECT_EQ(with_field(ev_field(8, 0, 0x0F, 5, 4)), Errc::invalid_argument);      // min > max
  // Count: 0 is invalid, above the per-profile maximum E2BIG.
  {
    auto a = ev_offline(ev_mode::kExp, 0);
    EXPECT_EQ(c->modify_ev_profile(1, a, kOfflineMask), Errc::invalid_argument);
    a = ev_offline(ev_mode::kExp, 33);
    EXPECT_EQ(c->modify_ev_profile(1, a, kOfflineMask), Errc::too_big);
  }
  // A mode the device does not list.
  {
    make();
    lim.ev_mode_mask = ev_mode::kExp;
    make();
    online_fmt_stev(1);
    auto a = ev_offline(ev_mode::kGen, 4);
    EXPECT_EQ(c->modify_ev_profile(1, a, kOfflineMask), Errc::invalid_argument);
    a = ev_offline(ev_mode::kExp | ev_mode::kGen, 4);
    EXPECT_EQ(c->modify_ev_profile(1, a, kOfflineMask), Errc::invalid_argument);
  }
  // AUTO needs only MODE and has no array.
  EvProfileAttr au;
  au.state = ProfileState::offline;
  au.ev_mode = ev_mode::kAuto;
  lim.ev_mode_mask = ev_mode::kAuto | ev_mode::kExp;
  make();
  ASSERT_TRUE(c->modify_ev_profile(1, au, kState | kMode).ok());
  EXPECT_TRUE(array(1).empty());
  ASSERT_TRUE(go_online(1, 3).ok());
  EvProfile def;
  def.active_count = 10;
  auto ep = c->to_endpoint_profile(1, def);
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->active_count, 10u);
  EXPECT_EQ(ep->ev_min_active, 3u);
  EXPECT_TRUE(ep->explicit_evs.empty());
}

TEST_F(CtlTest, ExpArrayStartsUnpopulatedAndMustBeFilledBeforeOnline) {
  online_fmt_stev(1);
  auto a = ev_offline(ev_mode::kExp, 3);
  ASSERT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
  auto arr = array(1);
  ASSERT_EQ(arr.size(), 3u);
  for (const auto& e : arr) {
    EXPECT_FALSE(e.ev.populated());
    EXPECT_EQ(e.state, ev_state::kUnknown);
  }
  // ONLINE needs MIN_ACTIVE and EVENT_MASK, and every entry replaced.
  EXPECT_EQ(set_ev_state_attr(1, ProfileState::online), Errc::invalid_argument);
  EXPECT_EQ(go_online(1), Errc::invalid_argument);  // unpopulated entries
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x3312, 16, 1)).ok());
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x4455, 16, 2)).ok());
  EXPECT_EQ(go_online(1), Errc::invalid_argument);
  EXPECT_EQ(ev_state_of(1), ProfileState::offline);
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x0001, 16, 1)).ok());
  EXPECT_EQ(go_online(1, 4), Errc::invalid_argument);  // ev_min_active > ev_count
  ASSERT_TRUE(go_online(1, 2).ok());
  EXPECT_EQ(ev_state_of(1), ProfileState::online);
  // The set QPs get: the wire EVs (STEV), ports 0-based.
  auto ep = c->to_endpoint_profile(1, EvProfile{});
  ASSERT_TRUE(ep.ok());
  ASSERT_EQ(ep->explicit_evs.size(), 3u);
  EXPECT_EQ(ep->explicit_evs[0].value, 0x13032102u);
  EXPECT_EQ(ep->explicit_evs[0].port, 0);
  EXPECT_EQ(ep->explicit_evs[1].value, 0x14042505u);
  EXPECT_EQ(ep->explicit_evs[1].port, 1);
  EXPECT_EQ(ep->explicit_evs[2].value, 0x10002001u);
  EXPECT_EQ(ep->ev_min_active, 2u);
  EXPECT_TRUE(ep->validate(2, nullptr).ok());
  auto wire = c->wire_evs(1);
  ASSERT_EQ(wire.size(), 3u);
  EXPECT_EQ(wire[0].leading(32), 0x13032102u);
}

TEST_F(CtlTest, ReplaceEvOneCopyOrAllCopies) {
  online_fmt_stev(1);
  auto a = ev_offline(ev_mode::kExp, 4);
  ASSERT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
  const CtlEv x = ev_of(0x1111, 16, 1), y = ev_of(0x2222, 16, 2);
  ASSERT_TRUE(replace(1, CtlEv{}, x).ok());  // one of the four
  auto arr = array(1);
  EXPECT_EQ(std::count_if(arr.begin(), arr.end(), [&](const EvOpEntry& e) { return e.ev == x; }), 1);
  ASSERT_TRUE(replace(1, CtlEv{}, x, kEvOpAllCopies).ok());  // the other three
  arr = array(1);
  EXPECT_EQ(std::count_if(arr.begin(), arr.end(), [&](const EvOpEntry& e) { return e.ev == x; }), 4);
  ASSERT_TRUE(replace(1, x, y).ok());
  arr = array(1);
  EXPECT_EQ(std::count_if(arr.begin(), arr.end(), [&](const EvOpEntry& e) { return e.ev == y; }), 1);
  ASSERT_TRUE(replace(1, x, y, kEvOpAllCopies, ev_state::kDenied).ok());
  arr = array(1);
  EXPECT_EQ(std::count_if(arr.begin(), arr.end(), [&](const EvOpEntry& e) { return e.ev == y; }), 4);
  EXPECT_EQ(std::count_if(arr.begin(), arr.end(), [](const EvOpEntry& e) { return e.state == ev_state::kDenied; }), 3);
  // Errors: absent EV, bad new EV, bad state, bad flags.
  EXPECT_EQ(replace(1, x, y), Errc::not_found);
  EXPECT_EQ(replace(1, y, ev_of(0x1, 16, 0)), Errc::invalid_argument);     // port 0
  EXPECT_EQ(replace(1, y, ev_of(0x1, 16, 3)), Errc::invalid_argument);     // no port 3
  EXPECT_EQ(replace(1, y, CtlEv{}), Errc::invalid_argument);               // UNPOPULATED
  EXPECT_EQ(replace(1, y, ev_of(0x10001, 17, 1)), Errc::invalid_argument); // bit past the 16 compact bits
  EXPECT_EQ(replace(1, y, x, 0, ev_state::kAssumedBad), Errc::invalid_argument);
  EXPECT_EQ(replace(1, y, x, 1u << 4), Errc::invalid_argument);
  // A batch stops at the first failure; what came before it stays.
  const CtlEv z = ev_of(0x3333, 16, 1), w = ev_of(0x4444, 16, 2);
  uint32_t done = 99;
  EXPECT_EQ(ev_op(1, EvOp::replace_ev, {EvOpEntry{y, z, 0, 0}, EvOpEntry{x, w, 0, 0}, EvOpEntry{y, w, 0, 0}}, &done),
            Errc::not_found);
  EXPECT_EQ(done, 1u);
  arr = array(1);
  EXPECT_EQ(std::count_if(arr.begin(), arr.end(), [&](const EvOpEntry& e) { return e.ev == z; }), 1);
  EXPECT_EQ(std::count_if(arr.begin(), arr.end(), [&](const EvOpEntry& e) { return e.ev == w; }), 0);
}

TEST_F(CtlTest, OnlinePermissionsAndBusy) {
  online_fmt_stev(1);
  online_exp(1, 4);
  using namespace ev_attr;
  EvProfileAttr a;
  a.ev_count = 8;
  EXPECT_EQ(c->modify_ev_profile(1, a, kCount), Errc::permission);
  a.ev_mode = ev_mode::kGen;
  EXPECT_EQ(c->modify_ev_profile(1, a, kMode), Errc::permission);
  a.fmt_id = 1;
  EXPECT_EQ(c->modify_ev_profile(1, a, kFmtId), Errc::permission);
  EXPECT_EQ(c->modify_ev_profile(1, a, kMinActive), Errc::permission);
  a.event_mask = ev_state::kGood;
  EXPECT_EQ(c->modify_ev_profile(1, a, kEventMask), Errc::permission);  // no EV_PROFILE_MODIFY_ONLINE
  EXPECT_EQ(replace(1, ev_of(0x0101, 16, 1), ev_of(0x0F0F, 16, 1)), Errc::permission);
  a.fields_op = FieldsOp::modify;
  a.fields = {ev_field(16, 0, 0xFFFF, 0, 0xFFFF)};
  EXPECT_EQ(c->modify_ev_profile(1, a, kEvFieldsOp), Errc::permission);
  // Allowed while ONLINE: state ops, queries.
  EXPECT_TRUE(set_state(1, ev_of(0x0101, 16, 1), ev_state::kDenied).ok());
  a.fields_op = FieldsOp::query;
  a.fields_count = 2;
  ASSERT_TRUE(c->modify_ev_profile(1, a, kEvFieldsOp).ok());
  EXPECT_EQ(a.fields[0].init_val, 0x1000u);
  // EV_OP and EV_FIELDS_OP together are invalid.
  a.ev_op = EvOp::query_ev_array;
  a.entry_count = 8;
  EXPECT_EQ(c->modify_ev_profile(1, a, kEvOp | kEvFieldsOp), Errc::invalid_argument);
  EXPECT_EQ(c->query_ev_profile(1, a, kEvOp | kEvFieldsOp), Errc::invalid_argument);
  // ONLINE -> INIT does not exist.
  EXPECT_EQ(set_ev_state_attr(1, ProfileState::init), Errc::invalid_argument);
  // QPs using it keep it ONLINE.
  ASSERT_TRUE(c->attach_qp(1, 0).ok());
  ASSERT_TRUE(c->attach_qp(1, 0).ok());
  EXPECT_EQ(c->ev_profile_users(1), 2u);
  EXPECT_EQ(set_ev_state_attr(1, ProfileState::offline), Errc::busy);
  c->detach_qp(1, 0);
  EXPECT_EQ(set_ev_state_attr(1, ProfileState::offline), Errc::busy);
  c->detach_qp(1, 0);
  ASSERT_TRUE(set_ev_state_attr(1, ProfileState::offline).ok());
  EXPECT_EQ(c->attach_qp(1, 0), Errc::invalid_argument);  // not ONLINE
  EXPECT_EQ(c->to_endpoint_profile(1, EvProfile{}).error(), Errc::invalid_argument);
  // OFFLINE -> INIT forgets the profile and frees its EVs.
  EXPECT_EQ(c->ev_free_count(), 60u);
  ASSERT_TRUE(set_ev_state_attr(1, ProfileState::init).ok());
  EXPECT_EQ(ev_state_of(1), ProfileState::init);
  EXPECT_EQ(c->ev_free_count(), 64u);
  EXPECT_TRUE(array(1).empty());
}

TEST_F(CtlTest, ModifyOnlineWhenTheDeviceSupportsIt) {
  lim.ev_profile_modify_online = true;
  make();
  online_fmt_stev(1);
  online_exp(1, 2);
  EvProfileAttr a;
  a.event_mask = ev_state::kAssumedBad;
  ASSERT_TRUE(c->modify_ev_profile(1, a, ev_attr::kEventMask).ok());
  ASSERT_TRUE(replace(1, ev_of(0x0101, 16, 1), ev_of(0x0F0F, 16, 1)).ok());
  auto ep = c->to_endpoint_profile(1, EvProfile{});
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->explicit_evs[0].value, 0x100F200Fu);
}

TEST_F(CtlTest, ModifyAndQueryEvState) {
  online_fmt_stev(1);
  online_exp(1, 4);
  const CtlEv e = ev_of(0x0102, 16, 2);
  auto query = [&](const CtlEv& ev) {
    EvProfileAttr a;
    a.ev_op = EvOp::query_ev_state;
    a.entries = {EvOpEntry{ev, CtlEv{}, 0, 0}};
    a.entry_count = 1;
    Status s = c->query_ev_profile(1, a, ev_attr::kEvOp);
    return s.ok() ? a.entries[0].state : 0u;
  };
  EXPECT_EQ(query(e), ev_state::kGood);
  ASSERT_TRUE(set_state(1, e, ev_state::kDenied).ok());
  EXPECT_EQ(query(e), ev_state::kDenied);
  EXPECT_EQ(set_state(1, e, ev_state::kAssumedBad), Errc::invalid_argument);  // only the NIC decides that
  EXPECT_EQ(set_state(1, e, 0), Errc::invalid_argument);
  EXPECT_EQ(set_state(1, ev_of(0x0102, 16, 1), ev_state::kGood), Errc::not_found);  // same value, other port
  EXPECT_EQ(set_state(1, CtlEv{}, ev_state::kGood), Errc::not_found);
  EXPECT_EQ(query(ev_of(0x9999, 16, 1)), 0u);
  ASSERT_TRUE(set_state(1, e, ev_state::kGood).ok());
  EXPECT_EQ(query(e), ev_state::kGood);
  // QUERY_EV_ARRAY reports the needed size when the array is short.
  EvProfileAttr a;
  a.ev_op = EvOp::query_ev_array;
  a.entry_count = 3;
  EXPECT_EQ(c->query_ev_profile(1, a, ev_attr::kEvOp), Errc::too_big);
  EXPECT_EQ(a.entry_count, 4u);
  // Replace and modify are not queries.
  a.ev_op = EvOp::replace_ev;
  EXPECT_EQ(c->query_ev_profile(1, a, ev_attr::kEvOp), Errc::invalid_argument);
}

TEST_F(CtlTest, CountIsAlignedAndBudgeted) {
  lim.ev_count_align = 4;
  make();
  online_fmt_stev(1);
  auto a = ev_offline(ev_mode::kExp, 6);
  ASSERT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
  EvProfileAttr q;
  ASSERT_TRUE(c->query_ev_profile(1, q, ev_attr::kCount).ok());
  EXPECT_EQ(q.ev_count, 8u);
  EXPECT_EQ(array(1).size(), 8u);
  EXPECT_EQ(c->ev_free_count(), 56u);
  // 30 rounds to 32 = the per-profile maximum; 29 + 32 + 8 exceeds 64.
  a = ev_offline(ev_mode::kExp, 30);
  ASSERT_TRUE(c->modify_ev_profile(2, a, kOfflineMask).ok());
  a = ev_offline(ev_mode::kExp, 29);
  EXPECT_EQ(c->modify_ev_profile(3, a, kOfflineMask), Errc::too_big);
  a = ev_offline(ev_mode::kExp, 24);
  ASSERT_TRUE(c->modify_ev_profile(3, a, kOfflineMask).ok());
  EXPECT_EQ(c->ev_free_count(), 0u);
  // Resizing an OFFLINE EXP array keeps the entries that remain.
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x0A0A, 16, 1)).ok());
  EvProfileAttr grow;
  grow.ev_count = 4;
  ASSERT_TRUE(c->modify_ev_profile(1, grow, ev_attr::kCount).ok());
  auto arr = array(1);
  ASSERT_EQ(arr.size(), 4u);
  EXPECT_EQ(arr[0].ev, ev_of(0x0A0A, 16, 1));
  EXPECT_FALSE(arr[1].ev.populated());
}

TEST_F(CtlTest, GenArraysRespectRangesAlignmentAndPorts) {
  lim.ev_count_align = 2;
  make();
  // Format: T0 8 bits, T1 4 bits, T2 4 bits (reference 4.2's example).
  ASSERT_TRUE(fmt(1, ProfileState::offline, fmt_mode::kStev, {8, 4, 4}, fmt_attr::kState | fmt_attr::kMode | fmt_attr::kOp).ok());
  ASSERT_TRUE(fmt(1, ProfileState::online, 0, {}, fmt_attr::kState).ok());
  EvProfileAttr a;
  a.state = ProfileState::offline;
  a.ev_mode = ev_mode::kGen;
  a.fmt_id = 1;
  a.ev_count = 21;  // aligned to 22
  a.fields_op = FieldsOp::modify;
  // T0 in [10, 20], T1 in [0, 1], T2 fixed 0x5: 11 x 2 = 22 combinations (dense).
  a.fields = {ev_field(8, 0, 0xFF, 10, 20), ev_field(4, 0, 0xF, 0, 1), ev_field(4, 0x5, 0)};
  ASSERT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
  auto arr = array(1);
  ASSERT_EQ(arr.size(), 22u);
  std::set<std::pair<uint64_t, uint64_t>> seen;
  int per_port[3] = {0, 0, 0};
  for (const auto& e : arr) {
    const uint64_t v = compact_to_uint(e.ev.value, 12);
    const uint64_t t0 = v >> 4, t1 = v & 0xF;
    EXPECT_GE(t0, 10u);
    EXPECT_LE(t0, 20u);
    EXPECT_LE(t1, 1u);
    EXPECT_EQ(compact_to_uint(e.ev.value, 64) & 0xFFFFFFFFFFFFFull, 0u) << "bits past 12 are zero";
    EXPECT_TRUE(seen.insert({t0, t1}).second) << "distinct";
    ASSERT_GE(e.ev.port, 1);
    ASSERT_LE(e.ev.port, 2);
    ++per_port[e.ev.port];
    EXPECT_EQ(e.state, ev_state::kGood);
  }
  EXPECT_EQ(per_port[1], 11);
  EXPECT_EQ(per_port[2], 11);
  // More EVs than the ranges allow: invalid.
  EvProfileAttr more;
  more.ev_count = 24;
  EXPECT_EQ(c->modify_ev_profile(1, more, ev_attr::kCount), Errc::invalid_argument);
  // A GEN array needs no filling: ONLINE at once; its wire EVs carry T2 = 5.
  ASSERT_TRUE(go_online(1, 4).ok());
  auto ep = c->to_endpoint_profile(1, EvProfile{});
  ASSERT_TRUE(ep.ok());
  ASSERT_EQ(ep->explicit_evs.size(), 22u);
  for (const EvEntry& e : ep->explicit_evs) {
    EXPECT_EQ(e.value & 0xF, 0x5u);
    EXPECT_GE(e.value >> 8, 10u);
    EXPECT_LE(e.value >> 8, 20u);
  }
  EXPECT_TRUE(ep->validate(2, nullptr).ok());
}

TEST_F(CtlTest, GenSparseSpaceIsDistinctAndDeterministic) {
  online_fmt_stev(1);
  auto gen = [&](uint64_t seed) {
    make(seed);
    online_fmt_stev(1);
    EvProfileAttr a;
    a.state = ProfileState::offline;
    a.ev_mode = ev_mode::kGen;
    a.fmt_id = 1;
    a.ev_count = 32;
    a.fields_op = FieldsOp::modify;
    a.fields = {ev_field(16, 0, 0xFFFF, 1000, 60000)};
    EXPECT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
    std::vector<uint64_t> v;
    for (const auto& e : array(1)) v.push_back(compact_to_uint(e.ev.value, 16));
    return v;
  };
  auto a = gen(1), b = gen(1), d = gen(2);
  ASSERT_EQ(a.size(), 32u);
  EXPECT_EQ(a, b) << "same seed, same array";
  EXPECT_NE(a, d) << "another seed, another array";
  EXPECT_EQ(std::set<uint64_t>(a.begin(), a.end()).size(), 32u);
  for (uint64_t v : a) {
    EXPECT_GE(v, 1000u);
    EXPECT_LE(v, 60000u);
  }
}

TEST_F(CtlTest, Srv6ProfileGivesCompactValuesAndAddressWireEvs) {
  lim.ev_max_width = 32;
  make();
  ASSERT_TRUE(fmt(1, ProfileState::offline, fmt_mode::kSrv6, {32, 16, 16, 16, 16, 16, 16},
                  fmt_attr::kState | fmt_attr::kMode | fmt_attr::kOp).ok());
  ASSERT_TRUE(fmt(1, ProfileState::online, 0, {}, fmt_attr::kState).ok());
  EvProfileAttr a;
  a.state = ProfileState::offline;
  a.ev_mode = ev_mode::kExp;
  a.fmt_id = 1;
  a.ev_count = 1;
  a.fields_op = FieldsOp::modify;
  a.fields = {ev_field(32, 0xCAFECAFE, 0), ev_field(16, 0, 0xFFFF, 0, 0xFFFF), ev_field(16, 0, 0xFFFF, 0, 0xFFFF)};
  ASSERT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0xAAAA5555, 32, 2)).ok());
  ASSERT_TRUE(go_online(1).ok());
  auto ep = c->to_endpoint_profile(1, EvProfile{});
  ASSERT_TRUE(ep.ok());
  ASSERT_EQ(ep->explicit_evs.size(), 1u);
  EXPECT_EQ(ep->explicit_evs[0].value, 0xAAAA5555u);  // compact: what sport / flow label carry
  EXPECT_EQ(ep->explicit_evs[0].port, 1);
  auto w = c->wire_evs(1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].bits, 128);
  EXPECT_EQ(w[0].leading(64), 0xCAFECAFEAAAA5555ull);
  // The QPs' profile carries the same wire EVs, computed once and shared.
  ASSERT_TRUE(ep->wire_evs);
  ASSERT_EQ(ep->wire_evs->size(), 1u);
  EXPECT_EQ((*ep->wire_evs)[0], w[0]);
  // More compact bits than ev_max_width: E2BIG.
  a.fields.push_back(ev_field(16, 0, 0xFFFF, 0, 0xFFFF));
  EXPECT_EQ(c->modify_ev_profile(2, a, kOfflineMask), Errc::too_big);
}

TEST_F(CtlTest, EndpointProfileMergesCopiesAndRefusesOneValueOnTwoPorts) {
  online_fmt_stev(1);
  auto a = ev_offline(ev_mode::kExp, 3);
  ASSERT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x0102, 16, 1), kEvOpAllCopies).ok());
  ASSERT_TRUE(go_online(1, 1).ok());
  auto ep = c->to_endpoint_profile(1, EvProfile{});
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->explicit_evs.size(), 1u);
  ASSERT_TRUE(set_ev_state_attr(1, ProfileState::offline).ok());
  ASSERT_TRUE(replace(1, ev_of(0x0102, 16, 1), ev_of(0x0102, 16, 2)).ok());
  ASSERT_TRUE(go_online(1, 1).ok());
  EXPECT_EQ(c->to_endpoint_profile(1, EvProfile{}).error(), Errc::not_supported);
}

TEST_F(CtlTest, EndpointTakesTheProfileAndQpsGetItsEvs) {
  online_fmt_stev(1);
  online_exp(1, 4);
  ASSERT_TRUE(set_state(1, ev_of(0x0103, 16, 1), ev_state::kDenied).ok());
  auto evp = c->to_endpoint_profile(1, EvProfile{});
  ASSERT_TRUE(evp.ok());
  auto denied = c->denied_evs(1);
  ASSERT_EQ(denied.size(), 1u);
  EXPECT_EQ(denied[0].value, 0x10012003u);
  EXPECT_EQ(denied[0].port, 0);

  EndpointConfig cfg;
  cfg.ports.assign(2, PortConfig{});
  auto ep = Endpoint::create(cfg);
  ASSERT_TRUE(ep.ok());
  ASSERT_TRUE((*ep)->set_ev_profile(1, *evp).ok());
  ASSERT_TRUE((*ep)->create_cq(16).ok());
  auto qpn = (*ep)->create_qp(QpInit{0, 0, false});
  ASSERT_TRUE(qpn.ok());
  const Time now = Time::zero();
  QpAttr init;
  init.state = QpState::init;
  init.ev_profile_id = 1;
  ASSERT_TRUE((*ep)->modify_qp(now, *qpn, init, qp_attr::kState | qp_attr::kEvProfileId).ok());
  QpAttr rtr;
  rtr.state = QpState::rtr;
  rtr.dest_qpn = 0x345;
  rtr.peer = 9;
  rtr.path_mtu = 1024;
  rtr.max_wimm_dest = 16;
  rtr.mpr_dest = 4;
  using namespace qp_attr;
  ASSERT_TRUE((*ep)->modify_qp(now, *qpn, rtr, kState | kDestQpn | kRqPsn | kPeer | kPathMtu | kMaxWimmDest | kMprDest).ok());
  for (const EvEntry& d : denied) ASSERT_TRUE((*ep)->set_ev_denied(now, *qpn, d.value, true).ok());
  std::vector<EvInfo> evs(8);
  ASSERT_EQ((*ep)->query_evs(*qpn, evs), 4u);
  std::set<std::pair<uint32_t, uint8_t>> got;
  for (size_t i = 0; i < 4; ++i) {
    got.insert({evs[i].value, evs[i].port});
    EXPECT_EQ(evs[i].state == EvState::denied, evs[i].value == 0x10012003u);
  }
  const std::set<std::pair<uint32_t, uint8_t>> want = {
      {0x10012001u, 0}, {0x10012002u, 1}, {0x10012003u, 0}, {0x10012004u, 1}};
  // compact 0x01nn -> fields 0x01, 0xnn -> wire 0x1001 20nn.
  EXPECT_EQ(got.size(), 4u);
  for (const auto& w : want) EXPECT_TRUE(got.count(w)) << std::hex << w.first;
}

TEST_F(CtlTest, DenyHookReportsChangesOfOnlineProfiles) {
  online_fmt_stev(1);
  auto a = ev_offline(ev_mode::kExp, 2);
  ASSERT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
  std::vector<std::tuple<uint64_t, uint32_t, uint8_t, bool>> calls;
  c->set_deny_hook([&](uint64_t id, const EvEntry& e, bool d) { calls.emplace_back(id, e.value, e.port, d); });
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x0101, 16, 1)).ok());
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x0202, 16, 2)).ok());
  ASSERT_TRUE(set_state(1, ev_of(0x0101, 16, 1), ev_state::kDenied).ok());
  EXPECT_TRUE(calls.empty()) << "OFFLINE: no QP uses the profile";
  ASSERT_TRUE(go_online(1).ok());
  ASSERT_TRUE(set_state(1, ev_of(0x0202, 16, 2), ev_state::kDenied).ok());
  ASSERT_TRUE(set_state(1, ev_of(0x0202, 16, 2), ev_state::kDenied).ok());  // no change, no call
  ASSERT_TRUE(set_state(1, ev_of(0x0101, 16, 1), ev_state::kGood).ok());
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], std::make_tuple(uint64_t{1}, 0x10022002u, uint8_t{1}, true));
  EXPECT_EQ(calls[1], std::make_tuple(uint64_t{1}, 0x10012001u, uint8_t{0}, false));
}

TEST_F(CtlTest, OnlineHooksInstallOrRefuse) {
  online_fmt_stev(1);
  auto a = ev_offline(ev_mode::kExp, 2);
  ASSERT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x0101, 16, 1)).ok());
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x0202, 16, 2)).ok());
  std::vector<EvEntry> seen;
  Status answer = Errc::invalid_argument;
  c->set_ev_online_hook([&](uint64_t id, const EvProfile& p) {
    EXPECT_EQ(id, 1u);
    seen = p.explicit_evs;
    return answer;
  });
  EXPECT_EQ(go_online(1, 2), Errc::invalid_argument);
  EXPECT_EQ(ev_state_of(1), ProfileState::offline) << "a refused install refuses the transition";
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].value, 0x10022002u);
  EXPECT_EQ(seen[1].port, 1);
  answer = Status{};
  ASSERT_TRUE(go_online(1, 2).ok());
  EXPECT_EQ(ev_state_of(1), ProfileState::online);

  int cc_calls = 0;
  c->set_cc_online_hook([&](uint64_t, const CcProfile& p) {
    ++cc_calls;
    EXPECT_EQ(p.algorithm, kCcNscc);
    return Status(Errc::busy);
  });
  CcProfileAttr cc;
  cc.state = ProfileState::offline;
  cc.algorithm = kCcNscc;
  ASSERT_TRUE(c->modify_cc_profile(1, cc, cc_attr::kState | cc_attr::kAlgorithm | cc_attr::kConfig).ok());
  cc.state = ProfileState::online;
  EXPECT_EQ(c->modify_cc_profile(1, cc, cc_attr::kState), Errc::busy);
  EXPECT_EQ(cc_calls, 1);
  CcProfileAttr q;
  ASSERT_TRUE(c->query_cc_profile(1, q, cc_attr::kState).ok());
  EXPECT_EQ(q.state, ProfileState::offline);
}

// ------------------------------------------------------------------ events

struct CtlEventTest : CtlTest {
  EvEvent qp_event(uint32_t value, uint8_t port0, EvState from, EvState to) {
    EvEvent e;
    e.ev_profile_id = 1;
    e.ev = value;
    e.port = port0;
    e.from = from;
    e.to = to;
    return e;
  }
  std::vector<CtlEvEvent> drain() {
    std::vector<CtlEvEvent> out(64);
    out.resize(c->poll_events(out));
    return out;
  }
};

TEST_F(CtlEventTest, OneEventPerMatchingTransition) {
  online_fmt_stev(1);
  online_exp(1, 2);  // EV 0x0101 on port 1 = wire 0x10012001 on port 0
  ASSERT_TRUE(c->create_event_queue(16).ok());
  EXPECT_EQ(c->create_event_queue(16), Errc::busy);
  const uint32_t v = 0x10012001;
  EXPECT_TRUE(c->on_qp_ev_event(qp_event(v, 0, EvState::good, EvState::assumed_bad)));
  // The same state again (another QP, or a hold) is no transition.
  EXPECT_FALSE(c->on_qp_ev_event(qp_event(v, 0, EvState::skip, EvState::assumed_bad)));
  EXPECT_FALSE(c->on_qp_ev_event(qp_event(v, 0, EvState::assumed_bad, EvState::assumed_bad)));
  EXPECT_TRUE(c->on_qp_ev_event(qp_event(v, 0, EvState::assumed_bad, EvState::skip)));  // SKIP counts as GOOD
  EXPECT_FALSE(c->on_qp_ev_event(qp_event(v, 0, EvState::skip, EvState::good)));
  // Unknown EVs, ports and profiles, and DENY echoes, are not events.
  EXPECT_FALSE(c->on_qp_ev_event(qp_event(v, 1, EvState::good, EvState::assumed_bad)));
  EXPECT_FALSE(c->on_qp_ev_event(qp_event(0x1234, 0, EvState::good, EvState::assumed_bad)));
  EXPECT_FALSE(c->on_qp_ev_event(qp_event(v, 0, EvState::good, EvState::denied)));
  EvEvent other = qp_event(v, 0, EvState::good, EvState::assumed_bad);
  other.ev_profile_id = 2;
  EXPECT_FALSE(c->on_qp_ev_event(other));
  auto ev = drain();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].profile_id, 1u);
  EXPECT_EQ(ev[0].ev, ev_of(0x0101, 16, 1));
  EXPECT_EQ(ev[0].state, ev_state::kAssumedBad);
  EXPECT_EQ(ev[0].drop_count, 0u);
  EXPECT_EQ(ev[1].state, ev_state::kGood);
  // The array follows the NIC's reports.
  EvProfileAttr q;
  q.ev_op = EvOp::query_ev_state;
  q.entries = {EvOpEntry{ev_of(0x0101, 16, 1), CtlEv{}, 0, 0}};
  q.entry_count = 1;
  ASSERT_TRUE(c->on_qp_ev_event(qp_event(v, 0, EvState::good, EvState::assumed_bad)));
  ASSERT_TRUE(c->query_ev_profile(1, q, ev_attr::kEvOp).ok());
  EXPECT_EQ(q.entries[0].state, ev_state::kAssumedBad);
  // The controller's own transitions: DENIED -> GOOD is a GOOD event,
  // -> DENIED is not selectable; a DENIED EV ignores the NIC's reports.
  drain();
  ASSERT_TRUE(set_state(1, ev_of(0x0101, 16, 1), ev_state::kDenied).ok());
  EXPECT_FALSE(c->on_qp_ev_event(qp_event(v, 0, EvState::assumed_bad, EvState::good)));
  EXPECT_TRUE(drain().empty());
  ASSERT_TRUE(set_state(1, ev_of(0x0101, 16, 1), ev_state::kGood).ok());
  ev = drain();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].state, ev_state::kGood);
}

TEST_F(CtlEventTest, EventMaskSelects) {
  online_fmt_stev(1);
  auto a = ev_offline(ev_mode::kExp, 2);
  ASSERT_TRUE(c->modify_ev_profile(1, a, kOfflineMask).ok());
  ASSERT_TRUE(replace(1, CtlEv{}, ev_of(0x0101, 16, 1), kEvOpAllCopies).ok());
  ASSERT_TRUE(go_online(1, 1, ev_state::kAssumedBad).ok());
  ASSERT_TRUE(c->create_event_queue(4).ok());
  const uint32_t v = 0x10012001;
  EXPECT_TRUE(c->on_qp_ev_event(qp_event(v, 0, EvState::good, EvState::assumed_bad)));
  EXPECT_FALSE(c->on_qp_ev_event(qp_event(v, 0, EvState::assumed_bad, EvState::good)));
  EXPECT_TRUE(c->on_qp_ev_event(qp_event(v, 0, EvState::good, EvState::assumed_bad)));
  auto ev = drain();
  ASSERT_EQ(ev.size(), 2u) << "one event per ASSUMED_BAD transition, none for GOOD, copies report once";
  EXPECT_EQ(ev[0].state, ev_state::kAssumedBad);
  // An event mask with other bits is invalid.
  EvProfileAttr m;
  m.state = ProfileState::online;
  m.ev_min_active = 1;
  m.event_mask = ev_state::kDenied;
  ASSERT_TRUE(set_ev_state_attr(1, ProfileState::offline).ok());
  EXPECT_EQ(c->modify_ev_profile(1, m, ev_attr::kEventMask), Errc::invalid_argument);
}

TEST_F(CtlEventTest, OverflowDropsAreCountedExactly) {
  online_fmt_stev(1);
  online_exp(1, 2);
  EXPECT_EQ(c->create_event_queue(0), Errc::invalid_argument);
  ASSERT_TRUE(c->create_event_queue(2).ok());
  const uint32_t v = 0x10012001;
  // Seven transitions into a queue of two: five lost.
  for (int i = 0; i < 7; ++i)
    EXPECT_TRUE(c->on_qp_ev_event(qp_event(v, 0, i % 2 ? EvState::assumed_bad : EvState::good,
                                           i % 2 ? EvState::good : EvState::assumed_bad)));
  EXPECT_EQ(c->queued_events(), 2u);
  EXPECT_EQ(c->pending_drops(), 5u);
  auto ev = drain();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].drop_count, 0u);
  EXPECT_EQ(ev[1].drop_count, 0u);
  // The next event that fits carries the count, once.
  ASSERT_TRUE(c->on_qp_ev_event(qp_event(v, 0, EvState::assumed_bad, EvState::good)));
  ASSERT_TRUE(c->on_qp_ev_event(qp_event(v, 0, EvState::good, EvState::assumed_bad)));
  ev = drain();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].drop_count, 5u);
  EXPECT_EQ(ev[0].state, ev_state::kGood);
  EXPECT_EQ(ev[1].drop_count, 0u);
  EXPECT_EQ(c->pending_drops(), 0u);
  // Without a queue nothing is kept or counted.
  ASSERT_TRUE(c->destroy_event_queue().ok());
  EXPECT_EQ(c->destroy_event_queue(), Errc::not_found);
  EXPECT_FALSE(c->on_qp_ev_event(qp_event(v, 0, EvState::assumed_bad, EvState::good)));
  EXPECT_EQ(c->pending_drops(), 0u);
}

// ------------------------------------------------------------------ CC profiles

TEST_F(CtlTest, CcStateMachine) {
  using namespace cc_attr;
  CcProfileAttr a;
  a.state = ProfileState::offline;
  // INIT -> OFFLINE needs ALGORITHM; INIT -> ONLINE does not exist.
  EXPECT_EQ(c->modify_cc_profile(1, a, kState), Errc::invalid_argument);
  a.state = ProfileState::online;
  a.algorithm = kCcNscc;
  EXPECT_EQ(c->modify_cc_profile(1, a, kState | kAlgorithm), Errc::invalid_argument);
  a.state = ProfileState::offline;
  a.algorithm = "dcqcn";
  EXPECT_EQ(c->modify_cc_profile(1, a, kState | kAlgorithm), Errc::invalid_argument);  // not in the list
  a.algorithm = kCcNscc;
  ASSERT_TRUE(c->modify_cc_profile(1, a, kState | kAlgorithm).ok());
  // ONLINE needs CONFIG; a bad configuration is invalid.
  a.state = ProfileState::online;
  EXPECT_EQ(c->modify_cc_profile(1, a, kState), Errc::invalid_argument);
  a.nscc.gamma = 2.0;
  EXPECT_EQ(c->modify_cc_profile(1, a, kState | kConfig), Errc::invalid_argument);
  a.nscc.gamma = 0;
  a.nscc.base_rtt = Duration::us(8);
  ASSERT_TRUE(c->modify_cc_profile(1, a, kState | kConfig).ok());
  CcProfileAttr q;
  ASSERT_TRUE(c->query_cc_profile(1, q, kState | kAlgorithm | kConfig).ok());
  EXPECT_EQ(q.state, ProfileState::online);
  ASSERT_TRUE(q.algorithm.has_value());
  EXPECT_EQ(*q.algorithm, kCcNscc);
  EXPECT_EQ(q.nscc.base_rtt, Duration::us(8));
  auto cp = c->to_endpoint_cc_profile(1);
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(cp->algorithm, kCcNscc);
  EXPECT_EQ(cp->nscc.base_rtt, Duration::us(8));
  // ONLINE: no algorithm or config changes (no CC_PROFILE_MODIFY_ONLINE).
  EXPECT_EQ(c->modify_cc_profile(1, a, kConfig), Errc::permission);
  EXPECT_EQ(c->modify_cc_profile(1, a, kAlgorithm), Errc::permission);
  a.state = ProfileState::init;
  EXPECT_EQ(c->modify_cc_profile(1, a, kState), Errc::invalid_argument);
  // QPs keep it ONLINE.
  ASSERT_TRUE(c->attach_qp(0, 1).ok());
  EXPECT_EQ(c->cc_profile_users(1), 1u);
  a.state = ProfileState::offline;
  EXPECT_EQ(c->modify_cc_profile(1, a, kState), Errc::busy);
  c->detach_qp(0, 1);
  ASSERT_TRUE(c->modify_cc_profile(1, a, kState).ok());
  // CC disabled: ONLINE without CONFIG; CONFIG with no algorithm is invalid.
  CcProfileAttr none;
  none.state = ProfileState::offline;
  none.algorithm = std::nullopt;
  ASSERT_TRUE(c->modify_cc_profile(2, none, kState | kAlgorithm).ok());
  EXPECT_EQ(c->modify_cc_profile(2, none, kConfig), Errc::invalid_argument);
  none.state = ProfileState::online;
  ASSERT_TRUE(c->modify_cc_profile(2, none, kState).ok());
  auto off = c->to_endpoint_cc_profile(2);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->algorithm, kCcFixed);
  EXPECT_EQ(c->to_endpoint_cc_profile(1).error(), Errc::invalid_argument);  // OFFLINE
  // attach_qp needs both profiles ONLINE and changes nothing otherwise.
  EXPECT_EQ(c->attach_qp(3, 2), Errc::invalid_argument);
  EXPECT_EQ(c->cc_profile_users(2), 0u);
}

TEST_F(CtlTest, CcConfigOnlineWhenSupported) {
  lim.cc_profile_modify_online = true;
  make();
  using namespace cc_attr;
  CcProfileAttr a;
  a.state = ProfileState::offline;
  a.algorithm = kCcNscc;
  ASSERT_TRUE(c->modify_cc_profile(1, a, kState | kAlgorithm | kConfig).ok());
  a.state = ProfileState::online;
  ASSERT_TRUE(c->modify_cc_profile(1, a, kState).ok());
  a.nscc.max_cwnd = 123456;
  ASSERT_TRUE(c->modify_cc_profile(1, a, kConfig).ok());
  EXPECT_EQ(c->to_endpoint_cc_profile(1)->nscc.max_cwnd, 123456u);
  EXPECT_EQ(c->modify_cc_profile(1, a, kAlgorithm), Errc::permission);
}

TEST(CtlLimits, Validate) {
  Limits l;
  EXPECT_TRUE(l.validate(nullptr).ok());
  l.ev_max_count_profile = 5000;
  std::string why;
  EXPECT_EQ(l.validate(&why), Errc::invalid_argument);
  EXPECT_NE(why.find("ev_max_count_profile"), std::string::npos);
  l = Limits{};
  l.cc_algorithms = {"fixed"};
  EXPECT_EQ(l.validate(nullptr), Errc::invalid_argument);
}

}  // namespace
}  // namespace mrc::core::ctl
