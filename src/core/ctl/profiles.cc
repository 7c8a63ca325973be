// SPDX-License-Identifier: BSD-2-Clause
#include "core/ctl/profiles.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <set>
#include <unordered_set>

namespace mrc::core::ctl {

namespace {

// Bit strings are MSB-first from bit 7 of byte 0 (reference 4.2), for the
// compact EV the controller writes and the wire EV the expansion emits.
bool get_bit(const std::array<uint8_t, 32>& a, uint32_t i) { return (a[i / 8] >> (7 - i % 8)) & 1u; }
void set_bit(std::array<uint8_t, 32>& a, uint32_t i) { a[i / 8] = static_cast<uint8_t>(a[i / 8] | (0x80u >> (i % 8))); }

uint64_t read_bits(const std::array<uint8_t, 32>& a, uint32_t at, uint32_t n) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < n; ++i) v = (v << 1) | (get_bit(a, at + i) ? 1u : 0u);
  return v;
}

void write_bits(std::array<uint8_t, 32>& a, uint32_t at, uint64_t v, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    if ((v >> (n - 1 - i)) & 1u) set_bit(a, at + i);
}

// PDEP: the low bits of `x`, in order, into the set bits of `mask` from the
// lowest up, so the first compact bit pulled lands in the highest mask bit.
uint64_t deposit(uint64_t x, uint64_t mask) {
  uint64_t v = 0;
  for (uint64_t m = mask, j = 0; m; m &= m - 1, ++j)
    if ((x >> j) & 1u) v |= m & (~m + 1);
  return v;
}

uint64_t low_mask(uint32_t bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

bool one_bit_of(uint32_t v, uint32_t allowed) { return std::has_single_bit(v) && (v & allowed); }

uint32_t align_up(uint32_t n, uint32_t align) {
  const uint64_t a = (uint64_t{n} + align - 1) / align * align;
  return a > std::numeric_limits<uint32_t>::max() ? std::numeric_limits<uint32_t>::max() : static_cast<uint32_t>(a);
}

bool usable_state(uint32_t s) { return s == ev_state::kGood || s == ev_state::kDenied; }

}  // namespace

const char* to_string(ProfileState s) {
  switch (s) {
    case ProfileState::init: return "INIT";
    case ProfileState::offline: return "OFFLINE";
    case ProfileState::online: return "ONLINE";
  }
  return "?";
}

uint32_t mode_max_bits(uint32_t m) {
  switch (m) {
    case fmt_mode::kUdp: return 16;
    case fmt_mode::kStev: return 32;
    case fmt_mode::kSrv6: return kMaxWireEvBits;
    default: return 0;
  }
}

bool CtlEv::populated() const {
  return port != 0 || std::any_of(value.begin(), value.end(), [](uint8_t b) { return b != 0; });
}

std::array<uint8_t, 32> compact_from_uint(uint64_t v, uint32_t bits) {
  std::array<uint8_t, 32> a{};
  write_bits(a, 0, v, std::min<uint32_t>(bits, 64));
  return a;
}

uint64_t compact_to_uint(const std::array<uint8_t, 32>& value, uint32_t bits) {
  return read_bits(value, 0, std::min<uint32_t>(bits, 64));
}

uint32_t compact_bits(std::span<const Field> ev_fields) {
  uint32_t n = 0;
  for (const Field& f : ev_fields) n += static_cast<uint32_t>(std::popcount(f.mask));
  return n;
}

Result<WireEv> expand(std::span<const uint32_t> fmt_widths, std::span<const Field> ev_fields,
                      const std::array<uint8_t, 32>& compact) {
  uint32_t total = 0;
  for (uint32_t w : fmt_widths) {
    if (w == 0 || w > kMaxFmtFieldBits) return Errc::invalid_argument;
    total += w;
  }
  if (total > kMaxWireEvBits || ev_fields.size() > fmt_widths.size()) return Errc::invalid_argument;
  WireEv out;
  out.bits = static_cast<uint16_t>(total);
  uint32_t rd = 0, wr = 0;
  for (size_t i = 0; i < fmt_widths.size(); ++i) {
    uint64_t v = 0;
    if (i < ev_fields.size()) {
      const Field& f = ev_fields[i];
      const auto k = static_cast<uint32_t>(std::popcount(f.mask));
      if (rd + k > kMaxWireEvBits) return Errc::invalid_argument;
      v = (f.init_val & ~f.mask) | deposit(read_bits(compact, rd, k), f.mask);
      rd += k;
    }
    // Right-aligned in the format field; validation keeps v inside it.
    if (v & ~low_mask(fmt_widths[i])) return Errc::invalid_argument;
    write_bits(out.bytes, wr, v, fmt_widths[i]);
    wr += fmt_widths[i];
  }
  for (uint32_t i = rd; i < kMaxWireEvBits; ++i)
    if (get_bit(compact, i)) return Errc::invalid_argument;  // bits no field consumes
  return out;
}

Status Limits::validate(std::string* why) const {
  auto bad = [&](const char* msg) {
    if (why) *why = msg;
    return Status(Errc::invalid_argument);
  };
  if (num_ports == 0 || num_ports > 32) return bad("limits.num_ports: must be 1..32");
  if (max_fmt_profiles == 0 || max_ev_profiles == 0 || max_cc_profiles == 0)
    return bad("limits.max_*_profiles: must be >= 1");
  if (max_fields == 0 || max_fields > 64) return bad("limits.max_fields: must be 1..64");
  if (ev_count_align == 0) return bad("limits.ev_count_align: must be >= 1");
  if (ev_max_count_profile == 0 || ev_max_count_profile > 4096)
    return bad("limits.ev_max_count_profile: must be 1..4096 (a QP holds at most 4096 EVs)");
  if (ev_max_count < ev_max_count_profile) return bad("limits.ev_max_count: must be >= ev_max_count_profile");
  if (ev_max_width == 0 || ev_max_width > kMaxWireEvBits) return bad("limits.ev_max_width: must be 1..256");
  if (wire_max_width == 0 || wire_max_width > kMaxWireEvBits) return bad("limits.wire_max_width: must be 1..256");
  constexpr uint32_t all_fmt = fmt_mode::kStev | fmt_mode::kSrv6 | fmt_mode::kUdp;
  constexpr uint32_t all_ev = ev_mode::kAuto | ev_mode::kExp | ev_mode::kGen;
  if (fmt_mode_mask == 0 || (fmt_mode_mask & ~all_fmt)) return bad("limits.fmt_mode_mask: fmt_mode bits, at least one");
  if (ev_mode_mask == 0 || (ev_mode_mask & ~all_ev)) return bad("limits.ev_mode_mask: ev_mode bits, at least one");
  for (const std::string& a : cc_algorithms)
    if (a != kCcNscc) return bad("limits.cc_algorithms: only \"uet-1.0-nscc\" has a configuration here");
  return {};
}

// =================================================================== controller

Controller::Controller(const Limits& limits, Prng rng) : limits_(limits), rng_(rng) {}

// ------------------------------------------------------------------ format profiles

Status Controller::check_fmt_fields(uint32_t mode, std::span<const Field> fields) const {
  if (fields.empty()) return Errc::invalid_argument;
  if (fields.size() > limits_.max_fields) return Errc::too_big;
  uint32_t total = 0;
  for (const Field& f : fields) {
    if (f.width == 0 || f.width > kMaxFmtFieldBits) return Errc::invalid_argument;
    total += f.width;
  }
  if (mode != 0 && (total > mode_max_bits(mode) || total > limits_.wire_max_width)) return Errc::too_big;
  return {};
}

Status Controller::modify_fmt_profile(uint64_t id, FmtProfileAttr& a, uint32_t mask) {
  using namespace fmt_attr;
  if (!id_ok(id, limits_.max_fmt_profiles) || (mask & ~(kState | kCurState | kMode | kOp)))
    return Errc::invalid_argument;
  auto it = fmts_.find(id);
  const Fmt cur = it == fmts_.end() ? Fmt{} : it->second;
  if ((mask & kCurState) && a.cur_state != cur.state) return Errc::invalid_argument;
  const ProfileState to = (mask & kState) ? a.state : cur.state;
  if (to > ProfileState::online) return Errc::invalid_argument;
  const bool op_modify = (mask & kOp) && a.fields_op == FieldsOp::modify;
  const bool op_query = (mask & kOp) && a.fields_op == FieldsOp::query;
  if ((mask & kOp) && !op_modify && !op_query) return Errc::invalid_argument;

  // The state machine has no INIT <-> ONLINE edge.
  if ((cur.state == ProfileState::init && to == ProfileState::online) ||
      (cur.state == ProfileState::online && to == ProfileState::init))
    return Errc::invalid_argument;
  // What the current state permits.
  if (cur.state == ProfileState::init && to != ProfileState::offline && ((mask & kMode) || (mask & kOp)))
    return Errc::permission;
  if (cur.state == ProfileState::online && ((mask & kMode) || op_modify)) return Errc::permission;

  Fmt next = cur;
  if (mask & kMode) {
    if (!one_bit_of(a.mode, limits_.fmt_mode_mask)) return Errc::invalid_argument;
    next.mode = a.mode;
  }
  if (op_modify) {
    if (Status s = check_fmt_fields(next.mode, a.fields); !s) return s;
    next.widths.clear();
    for (const Field& f : a.fields) next.widths.push_back(f.width);
  } else if ((mask & kMode) && !next.widths.empty()) {
    // A new mode must still hold the fields.
    std::vector<Field> fs;
    for (uint32_t w : next.widths) fs.push_back(Field{w, 0, 0, 0, 0});
    if (Status s = check_fmt_fields(next.mode, fs); !s) return s;
  }
  if (op_query && a.fields_count < next.widths.size()) {
    a.fields_count = static_cast<uint32_t>(next.widths.size());
    return Errc::too_big;
  }

  if (cur.state == ProfileState::init && to == ProfileState::offline && !(mask & kMode))
    return Errc::invalid_argument;
  if (cur.state == ProfileState::offline && to == ProfileState::online && next.widths.empty())
    return Errc::invalid_argument;
  if (cur.state == ProfileState::online && to == ProfileState::offline)
    for (const auto& [eid, p] : evs_)
      if (p.state == ProfileState::online && p.mode != ev_mode::kAuto && p.fmt_id == id) return Errc::busy;

  if (to == ProfileState::init) {
    fmts_.erase(id);
    next = Fmt{};
  } else {
    next.state = to;
    fmts_[id] = next;
  }
  if (op_query) {
    a.fields.assign(next.widths.size(), Field{});
    for (size_t i = 0; i < next.widths.size(); ++i) a.fields[i].width = next.widths[i];
    a.fields_count = static_cast<uint32_t>(next.widths.size());
  }
  return {};
}

Status Controller::query_fmt_profile(uint64_t id, FmtProfileAttr& a, uint32_t mask) const {
  using namespace fmt_attr;
  if (!id_ok(id, limits_.max_fmt_profiles) || (mask & ~(kState | kCurState | kMode | kOp)))
    return Errc::invalid_argument;
  if ((mask & kOp) && a.fields_op != FieldsOp::query) return Errc::invalid_argument;
  auto it = fmts_.find(id);
  const Fmt cur = it == fmts_.end() ? Fmt{} : it->second;
  if (mask & kOp) {
    if (a.fields_count < cur.widths.size()) {
      a.fields_count = static_cast<uint32_t>(cur.widths.size());
      return Errc::too_big;
    }
    a.fields.assign(cur.widths.size(), Field{});
    for (size_t i = 0; i < cur.widths.size(); ++i) a.fields[i].width = cur.widths[i];
    a.fields_count = static_cast<uint32_t>(cur.widths.size());
  }
  if (mask & (kState | kCurState)) a.state = a.cur_state = cur.state;
  if (mask & kMode) a.mode = cur.mode;
  return {};
}

// ------------------------------------------------------------------ EV profiles

Status Controller::check_ev_fields(std::span<const Field> fields) const {
  if (fields.empty()) return Errc::invalid_argument;
  if (fields.size() > limits_.max_fields) return Errc::too_big;
  for (const Field& f : fields) {
    if (f.width == 0 || f.width > kMaxEvFieldBits) return Errc::invalid_argument;
    if ((f.init_val | f.mask) & ~low_mask(f.width)) return Errc::invalid_argument;
    if (f.max_val > low_mask(static_cast<uint32_t>(std::popcount(f.mask))) || f.min_val > f.max_val)
      return Errc::invalid_argument;
  }
  if (compact_bits(fields) > limits_.ev_max_width) return Errc::too_big;
  return {};
}

Status Controller::check_ev_against_fmt(std::span<const Field> fields, const Fmt& fmt) const {
  // Each field is emitted into its format field (reference 4.2 step 3), so
  // it must fit there; that also keeps the sum within the format's total.
  if (fields.size() > fmt.widths.size()) return Errc::invalid_argument;
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].width > fmt.widths[i]) return Errc::invalid_argument;
  return {};
}

Status Controller::check_ev_new(const EvProf& p, const CtlEv& ev) const {
  if (!ev.populated() || ev.port == 0 || ev.port > limits_.num_ports) return Errc::invalid_argument;
  const uint32_t used = compact_bits(p.fields);
  for (uint32_t i = used; i < kMaxWireEvBits; ++i)
    if (get_bit(ev.value, i)) return Errc::invalid_argument;
  return {};
}

uint32_t Controller::arrays_total(uint64_t except_id) const {
  uint64_t n = 0;
  for (const auto& [id, p] : evs_)
    if (id != except_id) n += p.array.size();
  return static_cast<uint32_t>(std::min<uint64_t>(n, std::numeric_limits<uint32_t>::max()));
}

uint32_t Controller::ev_free_count() const {
  const uint32_t used = arrays_total(0);
  return used >= limits_.ev_max_count ? 0 : limits_.ev_max_count - used;
}

Status Controller::generate(EvProf& p) {
  // Each EV picks every field's value within [min_val, max_val]; the EVs are
  // distinct. Dense spaces (fewer than twice the count) are sampled exactly
  // (Floyd's algorithm over the mixed-radix index); sparse ones by drawing
  // fields independently and skipping repeats, which needs < 2 draws per EV.
  const size_t nf = p.fields.size();
  std::vector<uint64_t> radix(nf);
  uint64_t space = 1;
  bool saturated = false;
  for (size_t i = 0; i < nf; ++i) {
    radix[i] = p.fields[i].max_val - p.fields[i].min_val + 1;  // >= 1; a full 64-bit range cannot occur (<= 32 bits)
    if (space > std::numeric_limits<uint64_t>::max() / radix[i]) saturated = true;
    else space *= radix[i];
  }
  if (!saturated && space < p.count) return Errc::invalid_argument;
  const uint32_t cbits = compact_bits(p.fields);
  auto compose = [&](const std::vector<uint64_t>& vals) {
    CtlEv ev;
    uint32_t at = 0;
    for (size_t i = 0; i < nf; ++i) {
      const auto k = static_cast<uint32_t>(std::popcount(p.fields[i].mask));
      write_bits(ev.value, at, vals[i], k);
      at += k;
    }
    (void)cbits;
    return ev;
  };
  std::vector<CtlEv> out;
  out.reserve(p.count);
  std::vector<uint64_t> vals(nf);
  if (!saturated && space < 2 * uint64_t{p.count}) {
    std::unordered_set<uint64_t> chosen;
    std::vector<uint64_t> order;
    for (uint64_t j = space - p.count; j < space; ++j) {
      const uint64_t t = rng_.below(j + 1);
      const uint64_t pick = chosen.count(t) ? j : t;
      chosen.insert(pick);
      order.push_back(pick);
    }
    for (uint64_t idx : order) {
      for (size_t i = nf; i-- > 0;) {
        vals[i] = p.fields[i].min_val + idx % radix[i];
        idx /= radix[i];
      }
      out.push_back(compose(vals));
    }
  } else {
    std::set<std::array<uint8_t, 32>> seen;
    while (out.size() < p.count) {
      for (size_t i = 0; i < nf; ++i) vals[i] = p.fields[i].min_val + rng_.below(radix[i]);
      CtlEv ev = compose(vals);
      if (seen.insert(ev.value).second) out.push_back(ev);
    }
  }
  // Random order (Floyd's picks come out biased towards the top), then the
  // ports in turn so every port holds an equal share.
  for (size_t i = out.size(); i > 1; --i) std::swap(out[i - 1], out[rng_.below(i)]);
  p.array.clear();
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].port = static_cast<uint8_t>(i % limits_.num_ports + 1);
    p.array.push_back(Entry{out[i], ev_state::kGood});
  }
  return {};
}

Status Controller::build_array(uint64_t id, EvProf& p, bool keep_entries) {
  if (uint64_t{arrays_total(id)} + p.count > limits_.ev_max_count) return Errc::too_big;
  if (p.mode == ev_mode::kGen) return generate(p);
  // EXP: new slots are UNPOPULATED; kept entries must still fit the fields.
  std::vector<Entry> old = keep_entries ? std::move(p.array) : std::vector<Entry>{};
  p.array.assign(p.count, Entry{});
  for (size_t i = 0; i < old.size() && i < p.count; ++i)
    if (old[i].ev.populated() && check_ev_new(p, old[i].ev).ok()) p.array[i] = old[i];
  return {};
}

uint64_t Controller::endpoint_value(const EvProf& p, const CtlEv& ev) const {
  if (!ev.populated()) return kNoValue;
  auto f = fmts_.find(p.fmt_id);
  if (f == fmts_.end()) return kNoValue;
  if (f->second.mode == fmt_mode::kSrv6) {
    // The wire EV is the destination address; the UDP source port / flow
    // label carry the compact EV so the responder can reflect it (4.1).
    const uint32_t cbits = compact_bits(p.fields);
    return cbits > 64 ? kNoValue : compact_to_uint(ev.value, cbits);
  }
  auto w = expand(f->second.widths, p.fields, ev.value);
  return w ? w->leading(w->bits) : kNoValue;
}

Status Controller::apply_ev_op(EvProf& p, EvProfileAttr& a, std::vector<StateChange>& changes) const {
  if (a.entry_count > a.entries.size()) return Errc::invalid_argument;
  const uint32_t n = a.entry_count;
  a.entry_count = 0;
  for (uint32_t i = 0; i < n; ++i) {
    EvOpEntry& e = a.entries[i];
    if (e.flags & ~kEvOpAllCopies) return Errc::invalid_argument;
    const bool all = e.flags & kEvOpAllCopies;
    if (a.ev_op == EvOp::replace_ev) {
      const uint32_t st = e.state == 0 ? ev_state::kGood : e.state;
      if (!usable_state(st)) return Errc::invalid_argument;
      if (Status s = check_ev_new(p, e.ev_new); !s) return s;
      bool found = false;
      for (Entry& x : p.array) {
        if (!(x.ev == e.ev)) continue;
        found = true;
        x = Entry{e.ev_new, st};
        if (!all) break;
      }
      if (!found) return Errc::not_found;
    } else if (a.ev_op == EvOp::modify_ev_state) {
      if (!usable_state(e.state)) return Errc::invalid_argument;
      if (!e.ev.populated()) return Errc::not_found;
      bool found = false;
      for (Entry& x : p.array) {
        if (!(x.ev == e.ev)) continue;
        found = true;
        if (x.state != e.state) {
          changes.push_back(StateChange{x.ev, x.state, e.state});
          x.state = e.state;
        }
        if (!all) break;
      }
      if (!found) return Errc::not_found;
    } else if (a.ev_op == EvOp::query_ev_state) {
      auto x = std::find_if(p.array.begin(), p.array.end(), [&](const Entry& y) { return y.ev == e.ev; });
      if (!e.ev.populated() || x == p.array.end()) return Errc::not_found;
      e.state = x->state;
    } else {
      return Errc::invalid_argument;  // QUERY_EV_ARRAY is handled by query_ev_op
    }
    a.entry_count = i + 1;
  }
  return {};
}

Status Controller::query_ev_op(const EvProf& p, EvProfileAttr& a) const {
  if (a.ev_op == EvOp::query_ev_array) {
    if (a.entry_count < p.array.size()) {
      a.entry_count = static_cast<uint32_t>(p.array.size());
      return Errc::too_big;
    }
    if (a.entries.size() < p.array.size()) a.entries.resize(p.array.size());
    for (size_t i = 0; i < p.array.size(); ++i) {
      a.entries[i].ev = p.array[i].ev;
      a.entries[i].state = p.array[i].ev.populated() ? p.array[i].state : ev_state::kUnknown;
    }
    a.entry_count = static_cast<uint32_t>(p.array.size());
    return {};
  }
  if (a.ev_op != EvOp::query_ev_state) return Errc::invalid_argument;
  EvProf copy = p;  // query_ev_state does not change the array
  std::vector<StateChange> none;
  return apply_ev_op(copy, a, none);
}

Status Controller::modify_ev_profile(uint64_t id, EvProfileAttr& a, uint32_t mask) {
  using namespace ev_attr;
  constexpr uint32_t known =
      kState | kCurState | kMode | kFmtId | kCount | kMinActive | kEventMask | kEvOp | kEvFieldsOp;
  if (!id_ok(id, limits_.max_ev_profiles) || (mask & ~known)) return Errc::invalid_argument;
  if ((mask & kEvOp) && (mask & kEvFieldsOp)) return Errc::invalid_argument;
  auto it = evs_.find(id);
  const EvProf cur = it == evs_.end() ? EvProf{} : it->second;
  if ((mask & kCurState) && a.cur_state != cur.state) return Errc::invalid_argument;
  const ProfileState to = (mask & kState) ? a.state : cur.state;
  if (to > ProfileState::online) return Errc::invalid_argument;
  if ((cur.state == ProfileState::init && to == ProfileState::online) ||
      (cur.state == ProfileState::online && to == ProfileState::init))
    return Errc::invalid_argument;
  if ((mask & kEvOp) && a.ev_op > EvOp::query_ev_array) return Errc::invalid_argument;
  if ((mask & kEvFieldsOp) && a.fields_op > FieldsOp::query) return Errc::invalid_argument;
  const bool op_query = (mask & kEvOp) && (a.ev_op == EvOp::query_ev_state || a.ev_op == EvOp::query_ev_array);
  const bool fields_modify = (mask & kEvFieldsOp) && a.fields_op == FieldsOp::modify;
  const bool fields_query = (mask & kEvFieldsOp) && a.fields_op == FieldsOp::query;

  // What the current state permits.
  constexpr uint32_t config = kMode | kFmtId | kCount | kMinActive | kEventMask | kEvOp | kEvFieldsOp;
  if (cur.state == ProfileState::init && to != ProfileState::offline && (mask & config)) return Errc::permission;
  if (cur.state == ProfileState::online) {
    const bool online_mod = limits_.ev_profile_modify_online;
    if (mask & (kMode | kFmtId | kCount | kMinActive)) return Errc::permission;
    if ((mask & kEventMask) && !online_mod) return Errc::permission;
    if ((mask & kEvOp) && a.ev_op == EvOp::replace_ev && !online_mod) return Errc::permission;
    if (fields_modify && !online_mod) return Errc::permission;
  }

  EvProf next = cur;
  bool rebuild = false, keep = true;
  if (mask & kMode) {
    if (!one_bit_of(a.ev_mode, limits_.ev_mode_mask)) return Errc::invalid_argument;
    if (a.ev_mode != next.mode) rebuild = true, keep = false;
    next.mode = a.ev_mode;
  }
  if (mask & kFmtId) {
    auto f = fmts_.find(a.fmt_id);
    if (!id_ok(a.fmt_id, limits_.max_fmt_profiles) || f == fmts_.end()) return Errc::invalid_argument;
    if (a.fmt_id != next.fmt_id) rebuild = true;  // values expand differently; EXP entries are re-checked
    next.fmt_id = a.fmt_id;
  }
  if (mask & kCount) {
    if (a.ev_count == 0) return Errc::invalid_argument;
    const uint32_t aligned = align_up(a.ev_count, limits_.ev_count_align);
    if (aligned > limits_.ev_max_count_profile) return Errc::too_big;
    if (aligned != next.count) rebuild = true;
    next.count = aligned;
  }
  if (mask & kMinActive) {
    next.min_active = a.ev_min_active;
    next.min_active_set = true;
  }
  if (mask & kEventMask) {
    if (a.event_mask & ~(ev_state::kGood | ev_state::kAssumedBad)) return Errc::invalid_argument;
    next.event_mask = a.event_mask;
    next.event_mask_set = true;
  }
  if (fields_modify) {
    if (Status s = check_ev_fields(a.fields); !s) return s;
    next.fields = a.fields;
    rebuild = true;
  }
  if (cur.state == ProfileState::init && to == ProfileState::offline) {
    if (!(mask & kMode)) return Errc::invalid_argument;
    if (next.mode != ev_mode::kAuto && (!(mask & kFmtId) || !(mask & kCount) || !fields_modify))
      return Errc::invalid_argument;
    rebuild = true, keep = false;
  }
  const bool arrayed = next.mode == ev_mode::kExp || next.mode == ev_mode::kGen;
  if (arrayed && !next.fields.empty()) {
    auto f = fmts_.find(next.fmt_id);
    if (f != fmts_.end() && !f->second.widths.empty())
      if (Status s = check_ev_against_fmt(next.fields, f->second); !s) return s;
  }
  if (arrayed && next.min_active_set && next.min_active > next.count) return Errc::invalid_argument;
  if (rebuild && to != ProfileState::init) {
    if (arrayed) {
      if (Status s = build_array(id, next, keep); !s) return s;
    } else {
      next.array.clear();
    }
  }

  // Queries and EV operations, on the staged profile. An operation that
  // fails part way commits what came before it but not the transition.
  std::vector<StateChange> changes;
  Status op_status;
  ProfileState to_commit = to;
  if (op_query) {
    op_status = query_ev_op(next, a);
  } else if (mask & kEvOp) {
    op_status = apply_ev_op(next, a, changes);
  } else if (fields_query) {
    if (a.fields_count < next.fields.size()) {
      a.fields_count = static_cast<uint32_t>(next.fields.size());
      op_status = Errc::too_big;
    } else {
      a.fields = next.fields;
      a.fields_count = static_cast<uint32_t>(next.fields.size());
    }
  }

  Status tr;
  if (op_status.ok() && cur.state == ProfileState::offline && to == ProfileState::online) {
    if (!next.min_active_set || !next.event_mask_set) tr = Errc::invalid_argument;
    if (tr.ok() && arrayed) {
      auto f = fmts_.find(next.fmt_id);
      if (f == fmts_.end() || f->second.state != ProfileState::online) tr = Errc::invalid_argument;
      else tr = check_ev_against_fmt(next.fields, f->second);
      if (tr.ok() && next.mode == ev_mode::kExp)
        for (const Entry& x : next.array)
          if (!x.ev.populated()) tr = Errc::invalid_argument;  // EXP arrays are filled before ONLINE
    }
  }
  if (op_status.ok() && cur.state == ProfileState::online && to == ProfileState::offline && cur.users > 0)
    tr = Errc::busy;
  if (op_status.ok() && tr.ok() && cur.state == ProfileState::offline && to == ProfileState::online &&
      ev_online_hook_) {
    next.values.clear();
    for (const Entry& x : next.array) next.values.push_back(endpoint_value(next, x.ev));
    auto ep = endpoint_profile_of(next, EvProfile{});
    tr = ep ? ev_online_hook_(id, *ep) : Status(ep.error());
  }
  if (!op_status.ok()) {
    // Partial success: the attributes and the entries before the failing
    // one stay, the transition does not happen. A profile in INIT has
    // nothing to keep, so there the call changes nothing.
    if (cur.state == ProfileState::init) {
      if ((mask & kEvOp) && !op_query) a.entry_count = 0;
      return op_status;
    }
    to_commit = cur.state;
  } else if (!tr.ok()) {
    // A refused transition changes nothing.
    if ((mask & kEvOp) && !op_query) a.entry_count = 0;
    return tr;
  }
  if (to_commit == ProfileState::init) {
    evs_.erase(id);
    return {};
  }
  const ProfileState final_state = to_commit;
  next.state = final_state;
  next.values.clear();
  if (final_state == ProfileState::online)
    for (const Entry& x : next.array) next.values.push_back(endpoint_value(next, x.ev));
  EvProf& stored = evs_[id];
  stored = std::move(next);

  // Changes of a committed profile reach QPs (DENY) and the event queue.
  for (const StateChange& c : changes) {
    if (stored.state == ProfileState::online && deny_hook_ &&
        (c.from == ev_state::kDenied || c.to == ev_state::kDenied)) {
      const uint64_t v = endpoint_value(stored, c.ev);
      if (v <= std::numeric_limits<uint32_t>::max())
        deny_hook_(id, EvEntry{static_cast<uint32_t>(v), static_cast<uint8_t>(c.ev.port - 1)},
                   c.to == ev_state::kDenied);
    }
    if (c.to & stored.event_mask) post_event(id, c.ev, c.to);
  }
  return op_status;
}

Status Controller::query_ev_profile(uint64_t id, EvProfileAttr& a, uint32_t mask) const {
  using namespace ev_attr;
  constexpr uint32_t known =
      kState | kCurState | kMode | kFmtId | kCount | kMinActive | kEventMask | kEvOp | kEvFieldsOp;
  if (!id_ok(id, limits_.max_ev_profiles) || (mask & ~known)) return Errc::invalid_argument;
  if ((mask & kEvOp) && (mask & kEvFieldsOp)) return Errc::invalid_argument;
  if ((mask & kEvOp) && a.ev_op != EvOp::query_ev_state && a.ev_op != EvOp::query_ev_array)
    return Errc::invalid_argument;
  if ((mask & kEvFieldsOp) && a.fields_op != FieldsOp::query) return Errc::invalid_argument;
  auto it = evs_.find(id);
  const EvProf empty;
  const EvProf& p = it == evs_.end() ? empty : it->second;
  if (mask & kEvOp)
    if (Status s = query_ev_op(p, a); !s) return s;
  if (mask & kEvFieldsOp) {
    if (a.fields_count < p.fields.size()) {
      a.fields_count = static_cast<uint32_t>(p.fields.size());
      return Errc::too_big;
    }
    a.fields = p.fields;
    a.fields_count = static_cast<uint32_t>(p.fields.size());
  }
  if (mask & (kState | kCurState)) a.state = a.cur_state = p.state;
  if (mask & kMode) a.ev_mode = p.mode;
  if (mask & kFmtId) a.fmt_id = p.fmt_id;
  if (mask & kCount) a.ev_count = p.count;
  if (mask & kMinActive) a.ev_min_active = p.min_active;
  if (mask & kEventMask) a.event_mask = p.event_mask;
  return {};
}

// ------------------------------------------------------------------ CC profiles

Status Controller::modify_cc_profile(uint64_t id, const CcProfileAttr& a, uint32_t mask) {
  using namespace cc_attr;
  if (!id_ok(id, limits_.max_cc_profiles) || (mask & ~(kState | kCurState | kAlgorithm | kConfig)))
    return Errc::invalid_argument;
  auto it = ccs_.find(id);
  const Cc cur = it == ccs_.end() ? Cc{} : it->second;
  if ((mask & kCurState) && a.cur_state != cur.state) return Errc::invalid_argument;
  const ProfileState to = (mask & kState) ? a.state : cur.state;
  if (to > ProfileState::online) return Errc::invalid_argument;
  if ((cur.state == ProfileState::init && to == ProfileState::online) ||
      (cur.state == ProfileState::online && to == ProfileState::init))
    return Errc::invalid_argument;
  if (cur.state == ProfileState::init && to != ProfileState::offline && (mask & (kAlgorithm | kConfig)))
    return Errc::permission;
  if (cur.state == ProfileState::online &&
      ((mask & kAlgorithm) || ((mask & kConfig) && !limits_.cc_profile_modify_online)))
    return Errc::permission;

  Cc next = cur;
  if (mask & kAlgorithm) {
    if (a.algorithm &&
        std::find(limits_.cc_algorithms.begin(), limits_.cc_algorithms.end(), *a.algorithm) ==
            limits_.cc_algorithms.end())
      return Errc::invalid_argument;
    if (next.algorithm != a.algorithm) next.config_set = false;  // a configuration belongs to its algorithm
    next.algorithm = a.algorithm;
  }
  if (mask & kConfig) {
    if (!next.algorithm) return Errc::invalid_argument;
    CcProfile check;
    check.algorithm = *next.algorithm;
    check.nscc = a.nscc;
    if (Status s = check.validate(nullptr); !s) return Errc::invalid_argument;
    next.nscc = a.nscc;
    next.config_set = true;
  }
  if (cur.state == ProfileState::init && to == ProfileState::offline && !(mask & kAlgorithm))
    return Errc::invalid_argument;
  if (cur.state == ProfileState::offline && to == ProfileState::online && next.algorithm && !next.config_set)
    return Errc::invalid_argument;
  if (cur.state == ProfileState::online && to == ProfileState::offline && cur.users > 0) return Errc::busy;
  if (cur.state == ProfileState::offline && to == ProfileState::online && cc_online_hook_)
    if (Status s = cc_online_hook_(id, endpoint_cc_of(next)); !s) return s;
  if (to == ProfileState::init) {
    ccs_.erase(id);
    return {};
  }
  next.state = to;
  ccs_[id] = next;
  return {};
}

Status Controller::query_cc_profile(uint64_t id, CcProfileAttr& a, uint32_t mask) const {
  using namespace cc_attr;
  if (!id_ok(id, limits_.max_cc_profiles) || (mask & ~(kState | kCurState | kAlgorithm | kConfig)))
    return Errc::invalid_argument;
  auto it = ccs_.find(id);
  const Cc cur = it == ccs_.end() ? Cc{} : it->second;
  if (mask & (kState | kCurState)) a.state = a.cur_state = cur.state;
  if (mask & kAlgorithm) a.algorithm = cur.algorithm;
  if (mask & kConfig) a.nscc = cur.nscc;
  return {};
}

// ------------------------------------------------------------------ QPs

Status Controller::attach_qp(uint64_t ev_id, uint64_t cc_id) {
  auto e = evs_.find(ev_id);
  auto c = ccs_.find(cc_id);
  if (ev_id != 0 && (e == evs_.end() || e->second.state != ProfileState::online)) return Errc::invalid_argument;
  if (cc_id != 0 && (c == ccs_.end() || c->second.state != ProfileState::online)) return Errc::invalid_argument;
  if (ev_id != 0) ++e->second.users;
  if (cc_id != 0) ++c->second.users;
  return {};
}

void Controller::detach_qp(uint64_t ev_id, uint64_t cc_id) {
  if (auto e = evs_.find(ev_id); ev_id != 0 && e != evs_.end() && e->second.users > 0) --e->second.users;
  if (auto c = ccs_.find(cc_id); cc_id != 0 && c != ccs_.end() && c->second.users > 0) --c->second.users;
}

uint32_t Controller::ev_profile_users(uint64_t id) const {
  auto e = evs_.find(id);
  return e == evs_.end() ? 0 : e->second.users;
}

uint32_t Controller::cc_profile_users(uint64_t id) const {
  auto c = ccs_.find(id);
  return c == ccs_.end() ? 0 : c->second.users;
}

Result<EvProfile> Controller::to_endpoint_profile(uint64_t id, const EvProfile& auto_default) const {
  auto it = evs_.find(id);
  if (it == evs_.end() || it->second.state != ProfileState::online) return Errc::invalid_argument;
  return endpoint_profile_of(it->second, auto_default);
}

Result<EvProfile> Controller::endpoint_profile_of(const EvProf& p, const EvProfile& auto_default) const {
  EvProfile r;
  if (p.mode == ev_mode::kAuto) {
    r = auto_default;
    r.ev_min_active = std::min(p.min_active, r.active_count);
  } else {
    std::vector<std::pair<uint32_t, uint8_t>> seen;  // small: at most ev_max_count_profile
    for (size_t i = 0; i < p.array.size(); ++i) {
      if (!p.array[i].ev.populated()) continue;
      if (p.values[i] > std::numeric_limits<uint32_t>::max()) return Errc::not_supported;
      const auto v = static_cast<uint32_t>(p.values[i]);
      const auto port = static_cast<uint8_t>(p.array[i].ev.port - 1);
      auto s = std::find_if(seen.begin(), seen.end(), [&](const auto& x) { return x.first == v; });
      if (s != seen.end()) {
        if (s->second != port) return Errc::not_supported;
        continue;  // a copy: one slot in the QP's set
      }
      seen.emplace_back(v, port);
      r.explicit_evs.push_back(EvEntry{v, port});
    }
    // In SRv6 mode the entry's value is the compact EV and the wire EV (the
    // destination address) travels with it, computed here once.
    auto f = fmts_.find(p.fmt_id);
    if (f != fmts_.end() && f->second.mode == fmt_mode::kSrv6)
      r.wire_evs = std::make_shared<const std::vector<WireEv>>(wire_evs_of(p));
    r.policy = PathPolicyKind::mrc;
    r.ev_count = static_cast<uint32_t>(r.explicit_evs.size());
    r.active_count = r.ev_count;
    r.ev_min_active = std::min(p.min_active, r.ev_count);
  }
  // The controller filters EV events by its own mask (on_qp_ev_event), so
  // QPs report every change; the mask may also change while ONLINE.
  r.event_on_good = true;
  r.event_on_assumed_bad = true;
  return r;
}

std::vector<WireEv> Controller::wire_evs(uint64_t id) const {
  auto it = evs_.find(id);
  if (it == evs_.end() || it->second.state != ProfileState::online) return {};
  return wire_evs_of(it->second);
}

std::vector<WireEv> Controller::wire_evs_of(const EvProf& p) const {
  std::vector<WireEv> out;
  if (p.mode == ev_mode::kAuto) return out;
  auto f = fmts_.find(p.fmt_id);
  if (f == fmts_.end()) return out;
  std::vector<uint64_t> seen;
  for (size_t i = 0; i < p.array.size(); ++i) {
    if (!p.array[i].ev.populated() || std::find(seen.begin(), seen.end(), p.values[i]) != seen.end()) continue;
    seen.push_back(p.values[i]);
    auto w = expand(f->second.widths, p.fields, p.array[i].ev.value);
    out.push_back(w ? *w : WireEv{});
  }
  return out;
}

std::vector<EvEntry> Controller::denied_evs(uint64_t id) const {
  std::vector<EvEntry> out;
  auto it = evs_.find(id);
  if (it == evs_.end() || it->second.state != ProfileState::online) return out;
  const EvProf& p = it->second;
  for (size_t i = 0; i < p.array.size(); ++i) {
    const Entry& x = p.array[i];
    if (!x.ev.populated() || x.state != ev_state::kDenied || p.values[i] > std::numeric_limits<uint32_t>::max())
      continue;
    const EvEntry e{static_cast<uint32_t>(p.values[i]), static_cast<uint8_t>(x.ev.port - 1)};
    if (std::none_of(out.begin(), out.end(), [&](const EvEntry& y) { return y.value == e.value; })) out.push_back(e);
  }
  return out;
}

Result<CcProfile> Controller::to_endpoint_cc_profile(uint64_t id) const {
  auto it = ccs_.find(id);
  if (it == ccs_.end() || it->second.state != ProfileState::online) return Errc::invalid_argument;
  return endpoint_cc_of(it->second);
}

CcProfile Controller::endpoint_cc_of(const Cc& c) {
  CcProfile r;
  if (!c.algorithm) {
    r.algorithm = kCcFixed;  // CC disabled: a constant window (FixedWindowConfig's default size)
  } else {
    r.algorithm = *c.algorithm;
    r.nscc = c.nscc;
  }
  return r;
}

// ------------------------------------------------------------------ events

Status Controller::create_event_queue(uint32_t capacity) {
  if (capacity == 0 || capacity > kMaxEventQueue) return Errc::invalid_argument;
  if (events_) return Errc::busy;
  events_.emplace();
  events_->capacity = capacity;
  return {};
}

Status Controller::destroy_event_queue() {
  if (!events_) return Errc::not_found;
  events_.reset();
  return {};
}

size_t Controller::poll_events(std::span<CtlEvEvent> out) {
  if (!events_) return 0;
  size_t n = 0;
  while (n < out.size() && !events_->q.empty()) {
    out[n++] = events_->q.front();
    events_->q.pop_front();
  }
  return n;
}

void Controller::post_event(uint64_t id, const CtlEv& ev, uint32_t state) {
  if (!events_) return;  // nobody listens: nothing to lose
  if (events_->q.size() >= events_->capacity) {
    ++events_->drops;
    return;
  }
  CtlEvEvent e;
  e.profile_id = id;
  e.ev = ev;
  e.state = state;
  e.drop_count = static_cast<uint32_t>(std::min<uint64_t>(events_->drops, std::numeric_limits<uint32_t>::max()));
  events_->drops = 0;
  events_->q.push_back(e);
}

bool Controller::on_qp_ev_event(const EvEvent& e) {
  auto it = evs_.find(e.ev_profile_id);
  if (it == evs_.end() || it->second.state != ProfileState::online || it->second.mode == ev_mode::kAuto) return false;
  if (e.from == EvState::denied || e.to == EvState::denied) return false;  // the controller's own DENY
  EvProf& p = it->second;
  const uint32_t to = e.to == EvState::assumed_bad ? ev_state::kAssumedBad : ev_state::kGood;
  const CtlEv* ev = nullptr;
  bool changed = false;
  for (size_t i = 0; i < p.array.size(); ++i) {
    Entry& x = p.array[i];
    if (p.values[i] != e.ev || !x.ev.populated() || x.ev.port != e.port + 1u) continue;
    ev = &x.ev;
    if (x.state == ev_state::kDenied || x.state == to) continue;
    x.state = to;  // every copy: a QP holds one slot for all of them
    changed = true;
  }
  if (!ev || !changed || !(p.event_mask & to) || !events_) return false;
  post_event(e.ev_profile_id, *ev, to);
  return true;
}

}  // namespace mrc::core::ctl
