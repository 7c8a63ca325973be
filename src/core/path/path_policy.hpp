// SPDX-License-Identifier: BSD-2-Clause
// Path (EV) management interface and its three policies (reference 4).
//
// A QP owns one PathPolicy. It holds the QP's EV set (value + port for each
// slot), chooses the EV of every data packet at send time among the ports
// that have room (reference 4.5, GetSendParams), takes the feedback SACKs,
// NACKs and the loss rule produce, schedules reliability probes for paths it
// took out of service, and keeps one reverse (control) EV per port for the
// QP's SACK/NACK/ACK traffic (reference 4.8).
//
// Policies:
//  - MrcPathPolicy: MRC's EV management (GOOD/SKIP/ASSUMED_BAD/DENIED,
//    per-plane active and backup sets, probes with backoff, ev_min_active,
//    active EVs traded for backups on persistent ECN marks);
//  - ObliviousPolicy: sprays over every EV and ignores all path signals
//    (the "spraying without EV management" ablation);
//  - SinglePathPolicy: one EV for the whole QP (ECMP-pinned comparison).
//
// make_path_policy() builds the one an EV profile names.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/config.hpp"
#include "core/types.hpp"
#include "util/prng.hpp"
#include "util/time.hpp"
#include "wire/headers.hpp"

namespace mrc::core::path {

/// One EV of a QP: what sending and acknowledging a packet read and write
/// (16 bytes, so a QP's whole set of hundreds of EVs stays in a few dozen
/// cache lines; the rest is in EvHealth).
struct EvSlot {
  uint32_t value = 0;
  uint8_t port = 0;
  EvState state = EvState::good;
  bool active = false;          ///< in the active set (else backup or out of service)
  uint8_t marks_in_row = 0;     ///< ECN-marked deliveries since the last unmarked one
  uint64_t packets_sent = 0;
};
static_assert(sizeof(EvSlot) == 16, "EvSlot holds only what every packet touches");

/// One EV's losses and probing: touched only when it loses a packet or is
/// out of service.
struct EvHealth {
  uint8_t good_probes = 0;      ///< consecutive answered probes while ASSUMED_BAD
  bool probe_outstanding = false;
  bool answer_expected = false; ///< a probe left on this EV and was not answered yet
  uint8_t copies_due = 0;       ///< copies of its confirming probe still to send (loss_confirm_copies)
  bool copy_next = false;       ///< the next probe sent on it is such a copy
  uint16_t probe_ts = 0;        ///< its TSETH-resolution timestamp
  bool hold_reported = false;   ///< an ev_min_active hold was reported (until it leaves service)
  /// Out of service on a loss, its confirming probe not answered yet
  /// (ProtocolConfig::loss_confirm); its state is still GOOD or SKIP.
  bool suspect = false;
  /// Confirming probes of this suspicion that went unanswered so far
  /// (ProtocolConfig::loss_confirm_probes).
  uint8_t confirm_misses = 0;
  /// Times in a row its loss rate set it apart from its siblings
  /// (ProtocolConfig::gray_loss_factor); each doubles the answered probes
  /// that bring it back. Cleared when it carries a window without standing out.
  uint8_t gray_strikes = 0;
  /// Losses in its current window (halved with the window), and
  /// EvSlot::packets_sent's low 32 bits when the window began.
  uint16_t window_lost = 0;
  uint32_t window_sent_base = 0;
  /// When a confirming probe last vouched for it (never if not yet): a
  /// second loss soon after is a path that loses packets, not chance.
  Time cleared_at = Time::never();
  /// Confirming probes that vouched for it in a row, each within 4 probe
  /// intervals of the one before (ProtocolConfig::gray_loss_vouches).
  uint8_t vouches = 0;
  /// A suspect that probes vouched for too often lately: only proof that
  /// its loss was spurious clears it (ProtocolConfig::gray_loss_vouches).
  bool on_trial = false;
  /// ASSUMED_BAD for losing more than its siblings (gray_strikes): a late
  /// packet proving one loss spurious does not bring it back, probes do.
  bool gray_retired = false;
  /// The backup promoted into the active set when this EV left it as a
  /// suspect (-1: none). Cleared, the suspect takes its place back.
  int16_t stand_in = -1;
  Time probe_sent_at;
  Time skipped_at;              ///< when it last went to SKIP
  uint32_t drops = 0;           ///< losses since the last event for this EV
  Duration probe_backoff;
  Time next_probe = Time::never();
  uint64_t packets_lost = 0;
};

/// The EvHealth of a QP's EVs, kept only for those that needed one: an EV
/// that never lost a packet, went to SKIP or was probed reads as a default
/// EvHealth and costs a null pointer (8 bytes instead of 72; most of a
/// fabric's EVs never have trouble, and at the paper's scale the EV sets
/// are most of a run's memory). Writing through the non-const index gives
/// the EV its own record, which stays at one address for the QP's life, so
/// a reference taken to one EV's record survives another's creation.
class EvHealthTable {
 public:
  void add() { rows_.emplace_back(); }
  /// Read-only: the EV's record, or a default one if it has none.
  const EvHealth& operator[](size_t i) const { return rows_[i] ? *rows_[i] : idle(); }
  /// For writing: the EV's record, created on first use.
  EvHealth& operator[](size_t i) {
    if (!rows_[i]) rows_[i] = std::make_unique<EvHealth>();
    return *rows_[i];
  }
  /// Read-only access from a non-const context, without creating a record.
  const EvHealth& peek(size_t i) const { return (*this)[i]; }

 private:
  static const EvHealth& idle() {
    static const EvHealth kIdle{};
    return kIdle;
  }
  std::vector<std::unique_ptr<EvHealth>> rows_;
};

/// True if a timestamp echo `echo` can answer a transmission stamped
/// `sent_ts` (TSETH ticks of `tick`) at `sent_at`: it lies between the stamp
/// and now, as the peer echoes the stamp plus at most its service time
/// (reference 3.3, 8 item 11). A blind forger must hit that window of the
/// 16-bit timestamp.
inline bool echo_plausible(uint16_t sent_ts, Time sent_at, uint16_t echo, Time now, Duration tick) {
  const uint16_t ahead = static_cast<uint16_t>(echo - sent_ts);
  return ahead <= (now - sent_at) / tick + 1;
}

/// Counters a policy keeps (core::PathStats, types.hpp).
using PathStats = core::PathStats;


class PathPolicy {
 public:
  static constexpr int kNone = -1;

  /// `evs` is the QP's EV set; `events` receives state changes (the QP fills
  /// in its QPN and profile id). Neither pointer may be null; `events`
  /// outlives the policy.
  PathPolicy(std::vector<EvEntry> evs, uint32_t num_ports, const ProtocolConfig& proto, Prng rng,
             std::vector<EvEvent>* events);
  virtual ~PathPolicy() = default;
  PathPolicy(const PathPolicy&) = delete;
  PathPolicy& operator=(const PathPolicy&) = delete;

  // --- the EV set ---
  size_t size() const { return slots_.size(); }
  const EvSlot& slot(int i) const { return slots_[static_cast<size_t>(i)]; }
  /// Puts slot i's EV on a packet: its compact value and, when the profile
  /// expanded it, its wire EV (Transmit::wire_ev).
  void stamp(Transmit& tx, int i) const {
    tx.entropy = slots_[static_cast<size_t>(i)].value;
    tx.wire_ev = wire_ ? &(*wire_)[static_cast<size_t>(i)] : nullptr;
  }
  /// Gives the slots their wire EVs (index-parallel to the EV set the
  /// policy was built with; null for none).
  void set_wire_evs(std::shared_ptr<const std::vector<WireEv>> w) { wire_ = std::move(w); }
  /// Slot i's losses and probe state.
  const EvHealth& health(int i) const { return health_[static_cast<size_t>(i)]; }
  /// Slot holding EV `value`, or kNone.
  int find(uint32_t value) const;
  /// Number of slots in each state, over the whole set.
  uint32_t count(EvState s) const;
  /// Active slots that are GOOD or SKIP on usable ports.
  uint32_t usable_active() const;
  const PathStats& stats() const { return stats_; }

  // --- sending ---
  /// The EV for the next data packet on one of `port_mask`'s ports, avoiding
  /// slot `avoid` if any other choice exists (retransmissions). kNone if no
  /// usable EV is on those ports.
  virtual int select(Time now, uint32_t port_mask, int avoid) = 0;
  /// Ports on which select() can return an EV.
  virtual uint32_t sendable_ports() const = 0;
  /// True if slot `slot` may carry the next packet of a burst on one of
  /// `port_mask`'s ports: active, GOOD, on a usable port in the mask.
  bool can_continue(int slot, uint32_t port_mask) const {
    const EvSlot& e = slots_[static_cast<size_t>(slot)];
    return e.active && e.state == EvState::good && ((port_mask & port_mask_) >> e.port & 1u);
  }
  /// The one slot a single-path policy uses for the QP's life (whatever the
  /// port state); kNone for policies that spray.
  virtual int pinned() const { return kNone; }
  /// Records that a packet went out on `slot`.
  void on_sent(int slot) { ++slots_[static_cast<size_t>(slot)].packets_sent; }

  // --- feedback ---
  /// A SACK confirmed delivery of a packet sent on `slot`; `mark` is the SACK's
  /// path verdict (set only for the triggering packet).
  virtual void on_delivered(Time now, int slot, wire::Mark mark) = 0;
  /// A SACK newly acknowledged a packet sent once on `slot` that was not
  /// its trigger, so it arrived unmarked (a CE-marked packet triggers a SACK
  /// of its own). Called only with ProtocolConfig::ev_recycle.
  virtual void on_acked(Time now, int slot) { (void)now, (void)slot; }
  /// A mid-fabric trim NACK for a packet sent on `slot`.
  virtual void on_trimmed(Time now, int slot) = 0;
  /// A TRIMMED_LASTHOP NACK arrived: the destination's last hop is
  /// overloaded. No EV is to blame (every path ends on that link, reference
  /// 5.6), but losses while it lasts may be trimmed headers it dropped.
  virtual void on_trimmed_last_hop(Time now) { (void)now; }
  /// An untrimmed loss (loss rule or timeout) of a packet sent on `slot`.
  virtual void on_lost(Time now, int slot) = 0;
  /// A packet sent on `slot` is overdue: older than half the ACK timeout
  /// with a later packet delivered, but not yet old enough for the loss
  /// rule; or expired under the ACK timeout with nothing later delivered
  /// (no evidence against the path, but a question for it). With
  /// ProtocolConfig::loss_confirm the EV leaves service until a confirming
  /// probe answers.
  virtual void on_overdue(Time now, int slot) { (void)now, (void)slot; }
  /// A loss blamed on `slot` (on_lost) proved spurious: the packet arrived.
  virtual void on_false_loss(Time now, int slot) { (void)now, (void)slot; }
  /// A reliability probe left on `slot` stamped `ts` (TSETH ticks) at `now`.
  void on_probe_sent(int slot, uint16_t ts, Time now);
  /// What an answer echoing `echo` on `slot` is. `expected`: it can belong
  /// to the last probe sent there (the echo lies between its stamp and now,
  /// reference 3.3) and that probe is still unanswered; only such answers
  /// may count, or a forged answer would bring a dead path back. `repeat`:
  /// it can belong to that probe, which was answered already (the answer to
  /// its other copy, ProtocolConfig::loss_confirm_copies, or a duplicate):
  /// late news, not an attack. `foreign`: neither.
  enum class ProbeAnswer : uint8_t { expected, repeat, foreign };
  ProbeAnswer probe_answer(int slot, uint16_t echo, Time now, Duration tick) const;
  /// A reliability probe sent on `slot` was answered (after
  /// probe_answer() found it `expected`).
  virtual void on_probe_response(Time now, int slot, wire::Mark mark) = 0;

  // --- probes ---
  /// Earliest time a probe is due, or never.
  virtual Time next_probe() const { return Time::never(); }
  /// A slot whose probe is due at `now` on one of `port_mask`'s ports, or kNone.
  virtual int take_due_probe(Time, uint32_t) { return kNone; }
  /// Timer work due at `now`: suspects whose confirming probe went
  /// unanswered become ASSUMED_BAD (ProtocolConfig::loss_confirm). Call
  /// when next_probe() has passed, before take_due_probe().
  virtual void on_timer(Time) {}

  // --- control ---
  /// Controller DENY (or un-deny) of EV `value`. Errc::not_found if absent.
  virtual Status set_denied(Time now, uint32_t value, bool denied);
  /// Ports (bit i = port i) on which both ends are up. EVs on other ports are
  /// out of service until the port returns.
  void set_port_mask(uint32_t mask) { port_mask_ = mask; on_port_mask_changed(); }
  uint32_t port_mask() const { return port_mask_; }

  // --- reverse path (reference 4.8) ---
  // Each port keeps a small reverse set (ProtocolConfig::reverse_evs_per_port)
  // that control packets rotate through, so one dead reverse path costs a
  // fraction of the SACKs (which are cumulative) rather than all of them.
  /// The EV for this QP's next control packet on `port`; kNone if the port has no EV.
  int control_ev(uint8_t port);
  /// Evidence a control EV on `port` failed (a duplicate arrived): replace
  /// the most recently used one.
  void rotate_control_ev(uint8_t port);
  /// A delivery on `slot` was confirmed: it is a good reverse EV for its port.
  void adopt_control_ev(int slot);
  /// A random active EV on a usable port, for reverse-path probing; kNone if none.
  int random_active(uint32_t port_mask);

 protected:
  virtual void on_port_mask_changed() {}
  void emit(Time now, int slot, EvState from, EvState to, bool held = false);
  bool control_usable(int slot) const;
  int pick_control(uint8_t port, int avoid);

  std::vector<EvSlot> slots_;
  EvHealthTable health_;          ///< parallel to slots_
  std::shared_ptr<const std::vector<WireEv>> wire_;  ///< parallel to slots_, or null
  uint32_t num_ports_;
  uint32_t port_mask_;
  ProtocolConfig proto_;
  Prng rng_;
  std::vector<EvEvent>* events_;
  PathStats stats_;
  std::vector<std::vector<uint16_t>> by_port_;  ///< every slot of each port
  std::vector<std::vector<int>> control_;       ///< reverse EV set per port
  std::vector<size_t> control_pos_;             ///< next entry of each reverse set

 private:
  size_t hash(uint32_t value) const;
  std::vector<uint32_t> hash_keys_;   ///< open-addressing value -> slot+1
  std::vector<uint16_t> hash_slots_;
  unsigned hash_shift_ = 60;
};

/// Options that shape MRC's EV management.
struct MrcPathOptions {
  uint32_t active_count = 128;
  uint32_t ev_min_active = 64;
};

/// Builds the EV set an EV profile describes (GEN draws distinct random
/// values; EXP copies the explicit list) and the policy it names.
std::unique_ptr<PathPolicy> make_path_policy(const EvProfile& profile, uint32_t num_ports,
                                             const ProtocolConfig& proto, Prng rng,
                                             std::vector<EvEvent>* events);

}  // namespace mrc::core::path
