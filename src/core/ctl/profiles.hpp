// SPDX-License-Identifier: BSD-2-Clause
// The controller model (reference 4.2, 4.10, 6.3): EV format profiles, EV
// profiles, CC profiles and the EV event queue of one node's controller.
//
// This is the state a privileged controller configures and applications'
// QPs consume by profile id. It is part of the sans-I/O core so the
// simulator and the software device share it: no clock, no OS, randomness
// (GEN-mode EV arrays) only from the Prng the owner seeds.
//
// Shape. Every profile kind has the state machine INIT -> OFFLINE -> ONLINE
// -> OFFLINE -> INIT. modify_*() takes an attribute struct and a mask of
// the attributes to apply, as the C API does (include/mrc_ctl.h); the
// mask bit values are the C API's. query_*() fills what the mask names.
// Profile ids are 1..Limits::max_*_profiles; id 0 names the device's own
// default profile (what a QP gets when it names none), which the
// controller does not manage.
//
// Errors, one rule each (Errc -> errno in src/api):
//  - invalid_argument (EINVAL): unknown mask bits, a value out of range, a
//    transition the state machine does not have (INIT -> ONLINE, ONLINE ->
//    INIT), a CUR_STATE that is not the current state, a transition whose
//    requirements are not met (listed at each modify call), EV_OP together
//    with EV_FIELDS_OP, an unknown id;
//  - permission (EPERM): an attribute or operation the profile's current
//    state does not allow (MODE while ONLINE, REPLACE_EV while ONLINE
//    without Limits::ev_profile_modify_online, anything but -> OFFLINE in
//    INIT, ...). Each state's permissions are listed at its modify call;
//  - busy (EBUSY): a format profile leaving ONLINE while an ONLINE EV
//    profile uses it; an EV or CC profile leaving ONLINE while QPs use it
//    (attach_qp());
//  - too_big (E2BIG): a query array too small (the count field then holds
//    the count needed); a field set the device cannot hold (too many
//    fields, wider than the mode or Limits allow); an EV count above
//    Limits::ev_max_count_profile or the device's free EVs;
//  - not_found (ENOENT): an EV operation names an EV the array does not hold.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/types.hpp"
#include "util/prng.hpp"
#include "util/result.hpp"

namespace mrc::core::ctl {

/// Profile state (reference 6.3.3-6.3.5); values are the C API's.
enum class ProfileState : uint8_t { init = 0, offline = 1, online = 2 };
const char* to_string(ProfileState s);

/// EV format modes (one bit each, as enum mrc_ctl_ev_fmt_mode).
namespace fmt_mode {
inline constexpr uint32_t kStev = 1u << 0;
inline constexpr uint32_t kSrv6 = 1u << 1;
inline constexpr uint32_t kUdp = 1u << 2;
}  // namespace fmt_mode

/// EV profile modes (one bit each, as enum mrc_ctl_ev_mode).
namespace ev_mode {
inline constexpr uint32_t kAuto = 1u << 0;  ///< the device chooses the EVs (its default profile)
inline constexpr uint32_t kExp = 1u << 1;   ///< an explicit array the controller fills
inline constexpr uint32_t kGen = 1u << 2;   ///< an array the device generates from the fields
}  // namespace ev_mode

/// EV states as the controller sees them (bits as enum mrc_ctl_ev_state).
/// SKIP, a QP's one-rotation pass-over, is GOOD here.
namespace ev_state {
inline constexpr uint32_t kGood = 1u << 0;
inline constexpr uint32_t kAssumedBad = 1u << 1;
inline constexpr uint32_t kDenied = 1u << 2;
inline constexpr uint32_t kUnknown = 1u << 31;  ///< query result for an UNPOPULATED entry
}  // namespace ev_state

/// Widest wire EV: an SRv6 destination address plus one SRH segment.
inline constexpr uint32_t kMaxWireEvBits = 256;
/// Widest field of a format profile (its values are 64-bit).
inline constexpr uint32_t kMaxFmtFieldBits = 64;
/// Widest field of an EV profile (reference 4.2: "<= 32-bit each").
inline constexpr uint32_t kMaxEvFieldBits = 32;
/// Widest wire EV per format mode (reference 4.1): the UDP source port; the
/// source port and flow label; an SRv6 address plus an SRH segment.
uint32_t mode_max_bits(uint32_t fmt_mode_bit);

/// One field of a format profile (only `width` is read) or of an EV
/// profile (reference 4.2).
struct Field {
  uint32_t width = 0;
  uint64_t init_val = 0;
  uint64_t min_val = 0;
  uint64_t max_val = 0;
  uint64_t mask = 0;
  friend bool operator==(const Field&, const Field&) = default;
};

/// An EV as the controller names it: the compact EV, a bit string read
/// MSB-first from bit 7 of byte 0, and a 1-based port (plane). An all-zero
/// value with port 0 is UNPOPULATED (an EXP array slot not filled yet).
struct CtlEv {
  std::array<uint8_t, 32> value{};
  uint8_t port = 0;
  bool populated() const;
  friend bool operator==(const CtlEv&, const CtlEv&) = default;
};

/// A compact EV of at most 64 bits as a CtlEv value (MSB-first, `bits` wide).
std::array<uint8_t, 32> compact_from_uint(uint64_t v, uint32_t bits);
/// The first `bits` (<= 64) bits of a compact EV value as an integer.
uint64_t compact_to_uint(const std::array<uint8_t, 32>& value, uint32_t bits);

/// Bits of the compact EV an EV profile's fields consume: the sum of
/// popcount(mask) over the fields.
uint32_t compact_bits(std::span<const Field> ev_fields);

/// Reference 4.2's expansion of compact EV `compact` through EV profile
/// fields `ev_fields` into the format `fmt_widths` (the format profile's
/// field widths, in order). Per field i: the next popcount(mask_i) compact
/// bits, pulled MSB-first, are scattered into mask_i's set bits (the first
/// bit pulled into the highest mask bit) over init_val_i with mask_i's bits
/// cleared; the result is emitted right-aligned in fmt_widths[i] bits.
/// Format fields beyond the EV profile's fields are zero. The fields must
/// have passed validation against the format (no more fields, each no
/// wider than its format field). Errc::invalid_argument if a compact bit
/// past the consumed ones is set.
Result<WireEv> expand(std::span<const uint32_t> fmt_widths, std::span<const Field> ev_fields,
                      const std::array<uint8_t, 32>& compact);

/// What the device supports (mrc_ctl_query_device reports these).
struct Limits {
  uint32_t num_ports = 1;                 ///< EV ports are 1..num_ports
  uint32_t max_fmt_profiles = 16;         ///< format profile ids are 1..this
  uint32_t max_ev_profiles = 16;          ///< EV profile ids are 1..this
  uint32_t max_cc_profiles = 16;          ///< CC profile ids are 1..this
  uint32_t max_fields = 16;               ///< fields per format or EV profile
  uint32_t ev_max_count = 16384;          ///< EVs over all EXP/GEN profiles not in INIT
  uint32_t ev_max_count_profile = 4096;   ///< EVs per profile (after alignment)
  uint32_t ev_count_align = 1;            ///< EXP/GEN array sizes are multiples of this
  /// Widest compact EV (sum of the EV fields' mask popcounts). QPs carry
  /// compact EVs of at most 32 bits (EvEntry::value); a model used only
  /// for expansion may allow up to kMaxWireEvBits.
  uint32_t ev_max_width = 32;
  /// Widest wire EV (format total) the device can put on the wire, on top
  /// of the mode's own limit (mode_max_bits).
  uint32_t wire_max_width = kMaxWireEvBits;
  uint32_t fmt_mode_mask = fmt_mode::kStev | fmt_mode::kSrv6 | fmt_mode::kUdp;
  uint32_t ev_mode_mask = ev_mode::kAuto | ev_mode::kExp | ev_mode::kGen;
  /// Optional features (reference 6.3.1): EVENT_MASK, REPLACE_EV and
  /// MODIFY_FIELDS on an ONLINE EV profile; CONFIG on an ONLINE CC profile.
  bool ev_profile_modify_online = false;
  bool cc_profile_modify_online = false;
  /// Algorithm names a CC profile accepts (none = CC disabled is always accepted).
  std::vector<std::string> cc_algorithms = {kCcNscc};
  /// Checks the limits themselves; `why` names the field.
  Status validate(std::string* why) const;
};

// ------------------------------------------------------------------ format profiles

/// Mask bits of modify/query_fmt_profile (as enum mrc_ctl_ev_fmt_attr_mask).
namespace fmt_attr {
inline constexpr uint32_t kState = 1u << 0;
inline constexpr uint32_t kCurState = 1u << 1;
inline constexpr uint32_t kMode = 1u << 2;
inline constexpr uint32_t kOp = 1u << 3;
inline constexpr uint32_t kVendor = 1u << 31;
}  // namespace fmt_attr

enum class FieldsOp : uint8_t { modify = 0, query = 1 };

struct FmtProfileAttr {
  ProfileState state = ProfileState::init;      ///< kState: the target state
  ProfileState cur_state = ProfileState::init;  ///< kCurState: asserted (modify) / current (query)
  uint32_t mode = 0;                            ///< kMode: one fmt_mode bit
  FieldsOp fields_op = FieldsOp::modify;        ///< kOp
  /// kOp modify: the fields (widths). kOp query: filled with the fields.
  std::vector<Field> fields;
  /// kOp query: in, how many fields the caller can take; out, how many
  /// there are (also on too_big).
  uint32_t fields_count = 0;
};

// ------------------------------------------------------------------ EV profiles

/// Mask bits of modify/query_ev_profile (as enum mrc_ctl_ev_profile_attr_mask).
namespace ev_attr {
inline constexpr uint32_t kState = 1u << 0;
inline constexpr uint32_t kCurState = 1u << 1;
inline constexpr uint32_t kMode = 1u << 2;
inline constexpr uint32_t kFmtId = 1u << 3;
inline constexpr uint32_t kCount = 1u << 4;
inline constexpr uint32_t kMinActive = 1u << 5;
inline constexpr uint32_t kEventMask = 1u << 6;
inline constexpr uint32_t kEvOp = 1u << 7;
inline constexpr uint32_t kEvFieldsOp = 1u << 8;
inline constexpr uint32_t kVendor = 1u << 31;
}  // namespace ev_attr

/// EV operations (as enum mrc_ctl_ev_op).
enum class EvOp : uint8_t { replace_ev = 0, modify_ev_state = 1, query_ev_state = 2, query_ev_array = 3 };
/// EV operation flag: REPLACE_EV / MODIFY_EV_STATE act on every copy of the EV.
inline constexpr uint32_t kEvOpAllCopies = 1u << 0;

struct EvOpEntry {
  CtlEv ev;            ///< the EV acted on (QUERY_EV_ARRAY: filled)
  CtlEv ev_new;        ///< REPLACE_EV: its replacement
  /// REPLACE_EV: the new EV's state (GOOD or DENIED; 0 = GOOD).
  /// MODIFY_EV_STATE: GOOD or DENIED. Queries: filled.
  uint32_t state = 0;
  uint32_t flags = 0;  ///< kEvOpAllCopies
};

struct EvProfileAttr {
  ProfileState state = ProfileState::init;      ///< kState
  ProfileState cur_state = ProfileState::init;  ///< kCurState
  uint32_t ev_mode = 0;                         ///< kMode: one ev_mode bit
  uint64_t fmt_id = 0;                          ///< kFmtId
  /// kCount: EVs in the array; a query returns it rounded up to
  /// Limits::ev_count_align (the array's real size).
  uint32_t ev_count = 0;
  uint32_t ev_min_active = 0;                   ///< kMinActive: <= ev_count
  uint32_t event_mask = 0;                      ///< kEventMask: ev_state GOOD / ASSUMED_BAD bits
  EvOp ev_op = EvOp::query_ev_array;            ///< kEvOp
  /// kEvOp: the entries (QUERY_EV_ARRAY: filled). entry_count: in, entries
  /// to process (QUERY_EV_ARRAY: room); out, entries processed (too_big on
  /// QUERY_EV_ARRAY: the array size).
  std::vector<EvOpEntry> entries;
  uint32_t entry_count = 0;
  FieldsOp fields_op = FieldsOp::modify;        ///< kEvFieldsOp
  std::vector<Field> fields;                    ///< as FmtProfileAttr
  uint32_t fields_count = 0;
};

// ------------------------------------------------------------------ CC profiles

/// Mask bits of modify/query_cc_profile (as enum mrc_ctl_cc_attr_mask).
namespace cc_attr {
inline constexpr uint32_t kState = 1u << 0;
inline constexpr uint32_t kCurState = 1u << 1;
inline constexpr uint32_t kAlgorithm = 1u << 2;
inline constexpr uint32_t kConfig = 1u << 3;
inline constexpr uint32_t kVendor = 1u << 31;
}  // namespace cc_attr

struct CcProfileAttr {
  ProfileState state = ProfileState::init;      ///< kState
  ProfileState cur_state = ProfileState::init;  ///< kCurState
  /// kAlgorithm: a Limits::cc_algorithms name; nullopt disables CC.
  std::optional<std::string> algorithm;
  /// kConfig: the algorithm's configuration ("uet-1.0-nscc": NSCC, whose
  /// zero fields are derived per reference 5.5).
  NsccConfig nscc;
};

// ------------------------------------------------------------------ events

/// One EV event (reference 4.10): EV `ev` of profile `profile_id` changed to
/// `state`; `drop_count` events were lost before this one because the
/// queue was full (exact: the queue counts every one).
struct CtlEvEvent {
  uint64_t profile_id = 0;
  CtlEv ev;
  uint32_t drop_count = 0;
  uint32_t state = 0;  ///< ev_state bit
};

// ------------------------------------------------------------------ the controller

class Controller {
 public:
  /// `limits` must pass Limits::validate(); `rng` draws GEN-mode arrays.
  Controller(const Limits& limits, Prng rng);

  const Limits& limits() const { return limits_; }

  /// EV format profile `id` (reference 6.3.3).
  /// Transitions: INIT -> OFFLINE needs kMode; OFFLINE -> ONLINE needs the
  /// fields set (kOp modify, in this call or an earlier one); OFFLINE ->
  /// INIT forgets the mode and fields; ONLINE -> OFFLINE is busy while an
  /// ONLINE EV profile uses the format. OFFLINE -> OFFLINE is allowed.
  /// Permissions: INIT only -> OFFLINE (with kMode, kOp modify); OFFLINE
  /// everything; ONLINE only -> OFFLINE and kOp query (permission
  /// otherwise). Fields: 1..max_fields (too_big beyond), widths 1..64,
  /// total no wider than the mode and Limits::wire_max_width allow
  /// (too_big). kOp query fills a.fields as query_fmt_profile() does.
  /// kVendor is invalid_argument (no vendor attributes).
  Status modify_fmt_profile(uint64_t id, FmtProfileAttr& a, uint32_t mask);
  /// Fills a.cur_state and a.state (kState / kCurState), a.mode (kMode) and,
  /// with kOp query, the fields (too_big with the count if short). kOp
  /// modify is invalid_argument here.
  Status query_fmt_profile(uint64_t id, FmtProfileAttr& a, uint32_t mask) const;

  /// EV profile `id` (reference 6.3.4).
  /// Transitions: INIT -> OFFLINE needs kMode and, for EXP and GEN, kFmtId
  /// (a format profile not in INIT), kCount and kEvFieldsOp modify. It
  /// creates the array: EXP entries UNPOPULATED, GEN entries generated
  /// (count rounded up to ev_count_align, every field's value within its
  /// [min_val, max_val], all distinct, ports assigned in turn so each port
  /// gets an equal share). OFFLINE -> ONLINE needs ev_min_active and the
  /// event mask set (in this call or earlier), the format profile ONLINE
  /// and the fields valid against it, and for EXP every entry replaced.
  /// ONLINE -> OFFLINE is busy while QPs use the profile. OFFLINE -> INIT
  /// forgets everything.
  /// Permissions: INIT only -> OFFLINE with its attributes; OFFLINE
  /// everything (changing mode, count or fields rebuilds the array: EXP
  /// keeps the entries that still fit, GEN generates anew); ONLINE ->
  /// OFFLINE, MODIFY_EV_STATE, the queries, and with
  /// Limits::ev_profile_modify_online also kEventMask, REPLACE_EV and
  /// MODIFY_FIELDS. kEvOp with kEvFieldsOp is invalid_argument.
  /// EV operations run entry by entry and stop at the first failure: the
  /// attributes and the entries before it take effect (unless the profile
  /// is in INIT, where nothing does), the state transition does not, and
  /// a.entry_count says how many entries were done. A refused transition
  /// changes nothing (a.entry_count 0). REPLACE_EV replaces the first occurrence of ev (every one with
  /// kEvOpAllCopies) by ev_new in state GOOD or DENIED; not_found if ev is
  /// absent; invalid_argument if ev_new is UNPOPULATED, names no port, or
  /// sets compact bits past the fields' width. MODIFY_EV_STATE sets GOOD or
  /// DENIED (invalid_argument for other states) on the first occurrence
  /// (every one with kEvOpAllCopies). QUERY_EV_STATE fills each entry's
  /// state. QUERY_EV_ARRAY fills a.entries with the array (UNPOPULATED
  /// entries report ev_state::kUnknown).
  Status modify_ev_profile(uint64_t id, EvProfileAttr& a, uint32_t mask);
  /// Fills what the mask names; kEvOp only QUERY_EV_STATE / QUERY_EV_ARRAY
  /// and kEvFieldsOp only QUERY_FIELDS (invalid_argument otherwise).
  Status query_ev_profile(uint64_t id, EvProfileAttr& a, uint32_t mask) const;

  /// CC profile `id` (reference 6.3.5). INIT -> OFFLINE needs kAlgorithm;
  /// OFFLINE -> ONLINE needs kConfig set (in this call or earlier) unless
  /// CC is disabled; ONLINE -> OFFLINE is busy while QPs use it. kConfig
  /// without an algorithm is invalid_argument, as is an NSCC configuration
  /// CcProfile::validate() rejects. ONLINE allows only -> OFFLINE, and
  /// kConfig with Limits::cc_profile_modify_online.
  /// kVendor is invalid_argument here as everywhere (no vendor attributes).
  Status modify_cc_profile(uint64_t id, const CcProfileAttr& a, uint32_t mask);
  Status query_cc_profile(uint64_t id, CcProfileAttr& a, uint32_t mask) const;

  /// EVs still free for new EXP/GEN arrays (Limits::ev_max_count minus
  /// the arrays of profiles not in INIT).
  uint32_t ev_free_count() const;

  // ---- what QPs use

  /// A QP takes its EV set from EV profile `ev_id` and its congestion
  /// control from CC profile `cc_id` (id 0: the device default, always
  /// available). invalid_argument if a profile is not ONLINE. Each success
  /// must be matched by one detach_qp() with the same ids.
  Status attach_qp(uint64_t ev_id, uint64_t cc_id);
  void detach_qp(uint64_t ev_id, uint64_t cc_id);
  /// QPs attached to a profile.
  uint32_t ev_profile_users(uint64_t id) const;
  uint32_t cc_profile_users(uint64_t id) const;

  /// The EV set QPs naming ONLINE EV profile `id` use: every populated
  /// entry once (copies merged), port made 0-based, ev_min_active and the
  /// event mask carried over, every EV active. An entry's value is what
  /// the EV framing puts in the UDP source port / flow label (reference
  /// 4.1): the expanded wire EV in UDP and STEV modes, the compact EV in
  /// SRv6 mode, where the wire EV is the destination address and the
  /// profile carries it too (EvProfile::wire_evs, as wire_evs() lists them).
  /// DENIED entries are included: a driver denies them on each QP
  /// (denied_evs()), so that allowing one again reaches every QP. AUTO
  /// profiles return `auto_default` with their ev_min_active and event
  /// mask. invalid_argument unless ONLINE; not_supported if a value is
  /// wider than 32 bits or one value sits on two ports (a QP's EV set is
  /// keyed by value).
  Result<EvProfile> to_endpoint_profile(uint64_t id, const EvProfile& auto_default) const;
  /// Wire EVs of ONLINE EV profile `id`, parallel to to_endpoint_profile()'s
  /// explicit_evs; empty for AUTO or not ONLINE.
  std::vector<WireEv> wire_evs(uint64_t id) const;
  /// The DENIED EVs of EV profile `id`, as to_endpoint_profile() entries.
  std::vector<EvEntry> denied_evs(uint64_t id) const;
  /// The core CC profile of ONLINE CC profile `id` ("uet-1.0-nscc" with its
  /// NSCC config; CC disabled is the fixed window at its default size, the
  /// "no CC" baseline). invalid_argument unless ONLINE.
  Result<CcProfile> to_endpoint_cc_profile(uint64_t id) const;

  /// Called after every committed change of an EV's DENIED status in an
  /// ONLINE profile (MODIFY_EV_STATE, REPLACE_EV), with the profile id,
  /// the EV as to_endpoint_profile() lists it, and whether it is now
  /// denied: the driver applies it to the QPs attached to the profile.
  void set_deny_hook(std::function<void(uint64_t, const EvEntry&, bool)> hook) { deny_hook_ = std::move(hook); }

  /// Called before an EV profile's OFFLINE -> ONLINE transition commits,
  /// with the EvProfile its QPs will use (as to_endpoint_profile() gives
  /// it; for AUTO, explicit_evs is empty and the driver's own set applies
  /// with this ev_min_active): the driver installs it where its QPs find it
  /// or refuses, and then the transition fails with the hook's error. With
  /// a hook set, a profile to_endpoint_profile() cannot express fails with
  /// not_supported. Changes made while ONLINE (ev_profile_modify_online)
  /// do not call it: they reach QPs created after the next ONLINE.
  void set_ev_online_hook(std::function<Status(uint64_t, const EvProfile&)> hook) {
    ev_online_hook_ = std::move(hook);
  }
  /// The same for a CC profile going ONLINE, with to_endpoint_cc_profile().
  void set_cc_online_hook(std::function<Status(uint64_t, const CcProfile&)> hook) {
    cc_online_hook_ = std::move(hook);
  }

  // ---- EV events (reference 4.10, 6.3.6)

  /// Creates the controller's event queue holding up to `capacity` events.
  /// invalid_argument for 0 or above kMaxEventQueue; busy if it exists.
  Status create_event_queue(uint32_t capacity);
  /// Destroys it and the events it holds. not_found if there is none.
  Status destroy_event_queue();
  bool has_event_queue() const { return events_.has_value(); }
  /// Moves up to out.size() events, oldest first; returns how many.
  size_t poll_events(std::span<CtlEvEvent> out);
  /// Events lost since the last one queued (they are reported on the next).
  uint64_t pending_drops() const { return events_ ? events_->drops : 0; }
  /// Events waiting.
  size_t queued_events() const { return events_ ? events_->q.size() : 0; }
  /// A QP's path manager changed an EV's state (core::EvEvent from
  /// Endpoint::poll_event). SKIP counts as GOOD and DENIED belongs to the
  /// controller, so the entry's state changes only between GOOD and
  /// ASSUMED_BAD (a DENIED entry stays DENIED); each change that the
  /// profile's event mask selects queues exactly one event. Events of
  /// profiles the controller does not hold, or of EVs not in the array,
  /// are ignored. Returns true if an event was queued or dropped.
  bool on_qp_ev_event(const EvEvent& e);

  static constexpr uint32_t kMaxEventQueue = 1u << 20;

 private:
  struct Fmt {
    ProfileState state = ProfileState::init;
    uint32_t mode = 0;
    std::vector<uint32_t> widths;
  };
  struct Entry {
    CtlEv ev;
    uint32_t state = ev_state::kGood;  ///< kGood, kAssumedBad or kDenied (ignored while UNPOPULATED)
  };
  struct EvProf {
    ProfileState state = ProfileState::init;
    uint32_t mode = 0;
    uint64_t fmt_id = 0;
    uint32_t count = 0;             ///< aligned
    uint32_t min_active = 0;
    uint32_t event_mask = 0;
    bool min_active_set = false;
    bool event_mask_set = false;
    std::vector<Field> fields;
    std::vector<Entry> array;
    uint32_t users = 0;
    /// ONLINE only: each entry's endpoint value (index-parallel to array;
    /// kNoValue for UNPOPULATED entries and values wider than 64 bits).
    std::vector<uint64_t> values;
  };
  struct Cc {
    ProfileState state = ProfileState::init;
    std::optional<std::string> algorithm;
    NsccConfig nscc;
    bool config_set = false;
    uint32_t users = 0;
  };
  struct EventQueue {
    // Members initialised here, not with default member initialisers: a
    // nested class's are not usable inside the enclosing class, and clang
    // then finds std::optional<EventQueue> not default-constructible.
    EventQueue() : capacity(0), drops(0) {}
    uint32_t capacity;
    std::deque<CtlEvEvent> q;
    uint64_t drops;
  };

  Status check_fmt_fields(uint32_t mode, std::span<const Field> fields) const;
  Status check_ev_fields(std::span<const Field> fields) const;
  Status check_ev_against_fmt(std::span<const Field> fields, const Fmt& fmt) const;
  struct StateChange {
    CtlEv ev;
    uint32_t from = 0;
    uint32_t to = 0;
  };
  static constexpr uint64_t kNoValue = ~uint64_t{0};
  Status build_array(uint64_t id, EvProf& p, bool keep_entries);
  Status generate(EvProf& p);
  Status apply_ev_op(EvProf& p, EvProfileAttr& a, std::vector<StateChange>& changes) const;
  Status query_ev_op(const EvProf& p, EvProfileAttr& a) const;
  Status check_ev_new(const EvProf& p, const CtlEv& ev) const;
  uint64_t endpoint_value(const EvProf& p, const CtlEv& ev) const;
  /// The wire EVs of p's populated entries, copies merged (values filled).
  std::vector<WireEv> wire_evs_of(const EvProf& p) const;
  /// p must be ONLINE-ready (values filled).
  Result<EvProfile> endpoint_profile_of(const EvProf& p, const EvProfile& auto_default) const;
  static CcProfile endpoint_cc_of(const Cc& c);
  uint32_t arrays_total(uint64_t except_id) const;
  void post_event(uint64_t id, const CtlEv& ev, uint32_t state);
  bool id_ok(uint64_t id, uint32_t max) const { return id >= 1 && id <= max; }

  Limits limits_;
  Prng rng_;
  std::map<uint64_t, Fmt> fmts_;
  std::map<uint64_t, EvProf> evs_;
  std::map<uint64_t, Cc> ccs_;
  std::optional<EventQueue> events_;
  std::function<void(uint64_t, const EvEntry&, bool)> deny_hook_;
  std::function<Status(uint64_t, const EvProfile&)> ev_online_hook_;
  std::function<Status(uint64_t, const CcProfile&)> cc_online_hook_;
};

}  // namespace mrc::core::ctl
