// SPDX-License-Identifier: BSD-2-Clause
#include "core/path/path_policy.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <math.h>  // lgamma_r
#include <utility>

namespace mrc::core::path {

// ---------------------------------------------------------------------------
// PathPolicy: the EV table, value lookup, reverse EVs.

PathPolicy::PathPolicy(std::vector<EvEntry> evs, uint32_t num_ports, const ProtocolConfig& proto,
                       Prng rng, std::vector<EvEvent>* events)
    : num_ports_(num_ports),
      port_mask_(num_ports >= 32 ? ~0u : ((1u << num_ports) - 1)),
      proto_(proto),
      rng_(rng),
      events_(events),
      by_port_(num_ports),
      control_(num_ports, std::vector<int>(std::max<uint32_t>(1, proto.reverse_evs_per_port), kNone)),
      control_pos_(num_ports, 0) {
  if (proto_.skip_max == Duration{}) proto_.skip_max = Duration::infinite();
  if (proto_.loss_confirm_wait == Duration{}) proto_.loss_confirm_wait = proto_.base_rtt * 3 / 2;
  slots_.reserve(evs.size());
  for (const EvEntry& e : evs) {
    EvSlot s;
    s.value = e.value;
    s.port = e.port;
    slots_.push_back(s);
    health_.add();
    by_port_[e.port].push_back(static_cast<uint16_t>(slots_.size() - 1));
  }
  // Open addressing with linear probing; load factor <= 1/2.
  const size_t cap = std::bit_ceil(std::max<size_t>(16, slots_.size() * 2));
  hash_shift_ = static_cast<unsigned>(64 - std::countr_zero(cap));
  hash_keys_.assign(cap, 0);
  hash_slots_.assign(cap, 0);
  for (size_t i = 0; i < slots_.size(); ++i) {
    size_t h = hash(slots_[i].value);
    while (hash_slots_[h] != 0) h = (h + 1) & (cap - 1);
    hash_keys_[h] = slots_[i].value;
    hash_slots_[h] = static_cast<uint16_t>(i + 1);
  }
}

// Fibonacci hashing on the high bits, so EV values that differ only in their
// high bits (plane fields, SRv6 layouts) spread as well as low-bit ones.
size_t PathPolicy::hash(uint32_t value) const {
  return static_cast<size_t>((uint64_t{value} * 0x9E3779B97F4A7C15ull) >> hash_shift_);
}

void PathPolicy::on_probe_sent(int slot, uint16_t ts, Time now) {
  EvHealth& h = health_[static_cast<size_t>(slot)];
  // A copy of a confirming probe (loss_confirm_copies) keeps the stamp of
  // the probe it copies: the window from that stamp to now holds the echo
  // of either, so whichever answer gets through counts. Restamped, the
  // first copy's answer failed the echo check whenever it came back after
  // the copy left, and only the last copy's round trip counted: under 1 %
  // loss on every host link (4 % per probe round trip) three such tries
  // failed in a row 2 times in one 64 MiB all-reduce, retiring working EVs.
  if (std::exchange(h.copy_next, false) && h.answer_expected) return;
  h.answer_expected = true;
  h.probe_ts = ts;
  h.probe_sent_at = now;
}

PathPolicy::ProbeAnswer PathPolicy::probe_answer(int slot, uint16_t echo, Time now, Duration tick) const {
  const EvHealth& h = health_[static_cast<size_t>(slot)];
  if (h.probe_sent_at == Time{} || !echo_plausible(h.probe_ts, h.probe_sent_at, echo, now, tick))
    return ProbeAnswer::foreign;
  return h.answer_expected ? ProbeAnswer::expected : ProbeAnswer::repeat;
}

int PathPolicy::find(uint32_t value) const {
  const size_t cap = hash_keys_.size();
  size_t h = hash(value);
  while (hash_slots_[h] != 0) {
    if (hash_keys_[h] == value) return hash_slots_[h] - 1;
    h = (h + 1) & (cap - 1);
  }
  return kNone;
}

uint32_t PathPolicy::count(EvState s) const {
  uint32_t n = 0;
  for (const EvSlot& e : slots_) n += e.state == s;
  return n;
}

uint32_t PathPolicy::usable_active() const {
  uint32_t n = 0;
  for (const EvSlot& e : slots_)
    n += e.active && (port_mask_ >> e.port & 1u) && (e.state == EvState::good || e.state == EvState::skip);
  return n;
}

void PathPolicy::emit(Time now, int slot, EvState from, EvState to, bool held) {
  EvSlot& s = slots_[static_cast<size_t>(slot)];
  EvEvent ev;
  ev.held = held;
  ev.at = now;
  ev.ev = s.value;
  ev.port = s.port;
  ev.from = from;
  ev.to = to;
  EvHealth& h = health_[static_cast<size_t>(slot)];
  ev.drop_count = h.drops;
  h.drops = 0;
  events_->push_back(ev);
}

Status PathPolicy::set_denied(Time now, uint32_t value, bool denied) {
  const int i = find(value);
  if (i == kNone) return Errc::not_found;
  EvSlot& s = slots_[static_cast<size_t>(i)];
  const EvState to = denied ? EvState::denied : EvState::good;
  if (s.state != to) {
    const EvState from = s.state;
    s.state = to;
    emit(now, i, from, to);
  }
  return {};
}

bool PathPolicy::control_usable(int slot) const {
  if (slot == kNone) return false;
  const EvSlot& s = slots_[static_cast<size_t>(slot)];
  return (s.state == EvState::good || s.state == EvState::skip) && !health_[static_cast<size_t>(slot)].suspect;
}

int PathPolicy::control_ev(uint8_t port) {
  if (port >= num_ports_) return kNone;
  std::vector<int>& set = control_[port];
  size_t& pos = control_pos_[port];
  pos = (pos + 1) % set.size();
  if (!control_usable(set[pos])) set[pos] = pick_control(port, set[pos]);
  return set[pos];
}

void PathPolicy::rotate_control_ev(uint8_t port) {
  if (port >= num_ports_) return;
  std::vector<int>& set = control_[port];
  const size_t pos = control_pos_[port];
  set[pos] = pick_control(port, set[pos]);
  // The answer to the duplicate that prompted this goes out on the new EV
  // (control_ev() advances first): the next EV of the set is no fresher
  // evidence than the one just replaced.
  control_pos_[port] = (pos + set.size() - 1) % set.size();
}

void PathPolicy::adopt_control_ev(int slot) {
  if (slot == kNone) return;
  const uint8_t port = slots_[static_cast<size_t>(slot)].port;
  std::vector<int>& set = control_[port];
  if (std::find(set.begin(), set.end(), slot) != set.end()) return;
  set[control_pos_[port]] = slot;
}

// A usable EV on `port` other than `avoid` and not already in the port's
// reverse set; starts at a random offset so QPs sharing a profile do not
// converge on the same reverse paths.
int PathPolicy::pick_control(uint8_t port, int avoid) {
  const std::vector<uint16_t>& all = by_port_[port];
  if (all.empty()) return kNone;
  const std::vector<int>& set = control_[port];
  const size_t start = rng_.below(all.size());
  int fallback = kNone;
  for (size_t k = 0; k < all.size(); ++k) {
    const int s = all[(start + k) % all.size()];
    if (s == avoid || !control_usable(s)) {
      if (fallback == kNone) fallback = s;
      continue;
    }
    if (std::find(set.begin(), set.end(), s) != set.end()) {
      fallback = s;
      continue;
    }
    return s;
  }
  return fallback;  // nothing better: keep something on this port
}

int PathPolicy::random_active(uint32_t port_mask) {
  const uint32_t ports = port_mask & port_mask_;
  if (ports == 0) return kNone;
  // Random port among `ports`, then random usable slot on it.
  const int nports = std::popcount(ports);
  int pick = static_cast<int>(rng_.below(static_cast<uint64_t>(nports)));
  uint32_t m = ports;
  while (pick-- > 0) m &= m - 1;
  const uint32_t port = static_cast<uint32_t>(std::countr_zero(m));
  const std::vector<uint16_t>& all = by_port_[port];
  if (all.empty()) return kNone;
  const size_t start = rng_.below(all.size());
  for (size_t k = 0; k < all.size(); ++k) {
    const int s = all[(start + k) % all.size()];
    if (control_usable(s)) return s;
  }
  return kNone;
}

namespace {

// ---------------------------------------------------------------------------
// MRC EV management (reference 4.4-4.6).

class MrcPathPolicy final : public PathPolicy {
 public:
  MrcPathPolicy(std::vector<EvEntry> evs, uint32_t num_ports, const ProtocolConfig& proto, Prng rng,
                std::vector<EvEvent>* events, const MrcPathOptions& opt)
      : PathPolicy(std::move(evs), num_ports, proto, rng, events), opt_(opt), rot_(num_ports),
        active_(num_ports), backup_(num_ports), recycled_(num_ports) {
    // Active set split equally across ports; the rest of each port's EVs are
    // its backups (reference 4.4, 4.9).
    const uint32_t per_port = std::max<uint32_t>(1, opt.active_count / std::max<uint32_t>(1, num_ports));
    target_active_ = per_port;
    for (uint32_t p = 0; p < num_ports; ++p) {
      for (uint16_t s : by_port_[p]) {
        if (active_[p].size() < per_port) {
          active_[p].push_back(s);
          slots_[s].active = true;
        } else {
          backup_[p].push_back(s);
        }
      }
      rot_[p].dirty = true;
      note_active(p);
    }
    if (proto_.ev_recycle)
      for (uint32_t p = 0; p < num_ports; ++p) recycled_[p].ring.assign(std::max<size_t>(1, by_port_[p].size()), 0);
  }

  int select(Time now, uint32_t port_mask, int avoid) override {
    const uint32_t ports = port_mask & sendable_ports();
    if (ports == 0) return kNone;
    // Round-robin over the candidate ports, starting after the last one used.
    // A port whose only choice is `avoid` is passed over while another port
    // has something else.
    int only_avoid_port = -1;
    for (uint32_t k = 0; k < num_ports_; ++k) {
      const uint32_t p = (rr_port_ + k) % num_ports_;
      if (!(ports >> p & 1u)) continue;
      // Recycled EVs first (ProtocolConfig::ev_recycle), then the rotation.
      int s = take_recycled(p, avoid);
      if (s == kNone) s = next_in_rotation(now, p, avoid);
      if (s == kNone) continue;
      if (s == avoid) {
        if (only_avoid_port < 0) only_avoid_port = static_cast<int>(p);
        continue;
      }
      rr_port_ = p + 1;
      return s;
    }
    if (only_avoid_port >= 0) {
      rr_port_ = static_cast<uint32_t>(only_avoid_port) + 1;
      return avoid;
    }
    return kNone;
  }

  uint32_t sendable_ports() const override { return active_mask_ & port_mask_; }

  // An ECN mark (SKIP_ONCE) passes the EV over once; marks in a row say
  // the path stays congested, and the EV trades places with a backup (see
  // swap_with_backup). An unmarked delivery ends the run.
  void on_delivered(Time now, int slot, wire::Mark mark) override {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    if (mark == wire::Mark::skip_once) {
      if (s.state == EvState::good) {
        s.state = EvState::skip;
        health_[static_cast<size_t>(slot)].skipped_at = now;
        ++stats_.skips;
      }
      if (s.marks_in_row < 255) ++s.marks_in_row;
      if (s.active && proto_.ev_swap_marks != 0 && s.marks_in_row >= proto_.ev_swap_marks &&
          singled_out(s.port, slot))
        (void)swap_with_backup(s.port, slot);
    } else if (mark == wire::Mark::always_skip) {
      retire(now, slot);
    } else {
      s.marks_in_row = 0;
      if (proto_.ev_recycle && s.active && s.state == EvState::good) recycle(s.port, slot);
    }
  }

  void on_acked(Time, int slot) override {
    const EvSlot& s = slots_[static_cast<size_t>(slot)];
    if (proto_.ev_recycle && s.active && s.state == EvState::good) recycle(s.port, slot);
  }

  void on_trimmed(Time now, int slot) override {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    if (s.state == EvState::good) {
      s.state = EvState::skip;
      health_[static_cast<size_t>(slot)].skipped_at = now;
      ++stats_.skips;
    }
  }

  void on_lost(Time now, int slot) override {
    EvHealth& h = health_[static_cast<size_t>(slot)];
    ++h.drops;
    ++h.packets_lost;
    if (h.window_lost < UINT16_MAX) ++h.window_lost;
    if (!proto_.loss_confirm) {
      if (!h.suspect) retire(now, slot);
      return;
    }
    // A path that loses far more than its siblings is faulty whatever its
    // probes say (a gray link passes most of them): out at once, and it
    // needs more answered probes to come back each time it does it again.
    if (slots_[static_cast<size_t>(slot)].state != EvState::assumed_bad && lossier_than_siblings(slot)) {
      h.gray_strikes = static_cast<uint8_t>(std::min(h.gray_strikes + 1, 4));
      if (h.suspect) confirm_failed(now, slot);
      else retire(now, slot);
      h.gray_retired = slots_[static_cast<size_t>(slot)].state == EvState::assumed_bad;
      return;
    }
    if (h.suspect) return;  // its confirming probe decides
    suspect(now, slot);
    // A path that keeps losing packets soon after probes vouched for it may
    // be lossy (a gray failure passes most probes): after gray_loss_vouches
    // such reprieves in a row, a probe answer no longer clears it. It is
    // on trial: retired when the confirmation wait ends, unless the loss
    // proves spurious first (the late packet arrives: a path that only
    // reorders). Never while the losses are congestion's (the
    // destination's last hop trims, or losses are everywhere).
    if (h.suspect && vouched_lately(now, h) && h.vouches >= proto_.gray_loss_vouches && !destination_congested(now) &&
        !losses_widespread(now, slots_[static_cast<size_t>(slot)].port) && !in_line_with_siblings(h))
      h.on_trial = true;
  }

  void on_trimmed_last_hop(Time now) override { last_hop_trim_ = now; }

  void on_overdue(Time now, int slot) override {
    if (proto_.loss_confirm && !health_[static_cast<size_t>(slot)].suspect) suspect(now, slot);
  }

  void on_false_loss(Time now, int slot) override {
    EvHealth& h = health_[static_cast<size_t>(slot)];
    if (h.drops > 0) --h.drops;
    if (h.packets_lost > 0) --h.packets_lost;
    if (h.suspect) clear_suspect(now, slot, true);
    else if (slots_[static_cast<size_t>(slot)].state == EvState::assumed_bad && !h.gray_retired)
      resurrect(now, slot, EvState::good, false);
    // The packet arrived: the path delivered it, late. That is no strike
    // against it, and no earlier probe's word is needed to excuse the next
    // loss either (a path that only reorders would otherwise be retired on
    // its second late packet: 17 EVs of a fault-free 1024-host run).
    h.cleared_at = Time::never();
    h.vouches = 0;
  }

  void on_probe_response(Time now, int slot, wire::Mark mark) override {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    note_probe_rtt(now - health_[static_cast<size_t>(slot)].probe_sent_at);
    health_[static_cast<size_t>(slot)].answer_expected = false;
    if (health_[static_cast<size_t>(slot)].suspect) {
      // The path works: the loss was congestion or reordering. On trial,
      // only the late packet itself clears it (on_false_loss).
      if (!health_[static_cast<size_t>(slot)].on_trial) clear_suspect(now, slot, false);
      return;
    }
    if (s.state != EvState::assumed_bad) {
      // A reverse-path probe (or a late answer): the path works both ways.
      if (mark == wire::Mark::none) adopt_control_ev(slot);
      return;
    }
    EvHealth& h = health_[static_cast<size_t>(slot)];
    h.probe_outstanding = false;
    ++h.good_probes;
    // A path retired for losing more than its siblings passes most probes
    // while it is still faulty: each strike doubles the streak it needs.
    if (h.good_probes >= proto_.probe_resurrect_count << h.gray_strikes) {
      resurrect(now, slot, mark == wire::Mark::none ? EvState::good : EvState::skip, true);
    } else {
      // Confirm quickly rather than after the backed-off interval.
      h.next_probe = now + proto_.probe_interval;
      probe_dirty_ = true;
    }
  }

  Time next_probe() const override {
    if (copies_pending_ > 0) return Time::zero();  // a copy is due now
    if (probe_dirty_) {
      Time t = Time::never();
      for (uint16_t s : probing_)
        if (port_mask_ >> slots_[s].port & 1u) t = min(t, health_[s].next_probe);
      next_probe_cache_ = t;
      probe_dirty_ = false;
    }
    return next_probe_cache_;
  }

  void on_timer(Time now) override {
    for (uint16_t si : probing_) {
      const EvHealth& h = health_[si];
      if (h.suspect && h.probe_outstanding && h.next_probe <= now) confirm_missed(now, si);
    }
  }

  int take_due_probe(Time now, uint32_t port_mask) override {
    const uint32_t ports = port_mask & port_mask_;
    if (copies_pending_ > 0) {
      // The rest of the confirming probes' copies (loss_confirm_copies),
      // while their suspects still wait for an answer and before the wait
      // ends; on a later poll for their port if this one is for another.
      for (uint16_t si : probing_) {
        EvHealth& h = health_[si];
        if (h.copies_due == 0) continue;
        if (!h.suspect || !h.probe_outstanding || now >= h.next_probe) {
          copies_pending_ -= h.copies_due;
          h.copies_due = 0;
        } else if (ports >> slots_[si].port & 1u) {
          --h.copies_due;
          --copies_pending_;
          h.copy_next = true;
          ++stats_.probes_sent;
          return si;
        }
      }
    }
    for (uint16_t si : probing_) {
      EvHealth& h = health_[si];
      if (h.next_probe > now || !(ports >> slots_[si].port & 1u)) continue;
      if (h.suspect) {
        if (h.probe_outstanding) {
          confirm_missed(now, si);  // asks again, or stays in probing_ as ASSUMED_BAD
          if (!h.suspect || h.probe_outstanding) continue;
        }
        h.probe_outstanding = true;
        h.next_probe = now + confirm_wait();
        probe_dirty_ = true;
        ++stats_.probes_sent;
        // No copies into a destination whose last hop trims (an incast):
        // its control queue is what drops probes there, and copies fill it.
        const uint32_t copies = destination_congested(now) ? 1 : proto_.loss_confirm_copies;
        copies_pending_ += copies - 1;
        copies_pending_ -= h.copies_due;
        h.copies_due = static_cast<uint8_t>(copies - 1);
        return si;
      }
      if (h.probe_outstanding) {
        // The previous probe went unanswered: start counting again and back off.
        h.good_probes = 0;
        h.probe_backoff = std::min(h.probe_backoff * 2, proto_.probe_interval_max);
      }
      h.probe_outstanding = true;
      h.next_probe = now + h.probe_backoff;
      probe_dirty_ = true;
      ++stats_.probes_sent;
      return si;
    }
    return kNone;
  }

  void on_port_mask_changed() override { probe_dirty_ = true; }

  Status set_denied(Time now, uint32_t value, bool denied) override {
    const int i = find(value);
    if (i == kNone) return Errc::not_found;
    EvSlot& s = slots_[static_cast<size_t>(i)];
    if (denied && s.state != EvState::denied) {
      const EvState from = s.state;
      leave_service(i);
      health_[static_cast<size_t>(i)].suspect = false;
      health_[static_cast<size_t>(i)].on_trial = false;
      s.state = EvState::denied;
      emit(now, i, from, EvState::denied);
    } else if (!denied && s.state == EvState::denied) {
      resurrect(now, i, EvState::good, false);
    }
    return {};
  }

 private:
  struct Rotation {
    std::vector<uint16_t> order;
    size_t pos = 0;
    bool dirty = true;
  };

  // Recycled EVs of one port (ProtocolConfig::ev_recycle): slots whose
  // packets came back unmarked, oldest first, in a ring as large as the
  // port's EV set (an EV queued twice carries two packets: it had two in
  // flight that both got through).
  struct Recycled {
    std::vector<uint16_t> ring;
    size_t head = 0, size = 0;
  };

  void recycle(uint32_t p, int slot) {
    Recycled& r = recycled_[p];
    const size_t cap = r.ring.size();
    if (r.size == cap) {  // full: the oldest gives way
      r.head = (r.head + 1) % cap;
      --r.size;
    }
    r.ring[(r.head + r.size) % cap] = static_cast<uint16_t>(slot);
    ++r.size;
  }

  // The oldest recycled EV of port p that may still carry data (active,
  // GOOD, not `avoid`), or kNone. Entries that no longer qualify (marked,
  // swapped out or out of service since) are dropped on the way.
  int take_recycled(uint32_t p, int avoid) {
    Recycled& r = recycled_[p];
    while (r.size != 0) {
      const int s = r.ring[r.head];
      r.head = (r.head + 1) % r.ring.size();
      --r.size;
      const EvSlot& e = slots_[static_cast<size_t>(s)];
      if (e.active && e.state == EvState::good && s != avoid) return s;
    }
    return kNone;
  }

  void reshuffle(uint32_t p) {
    Rotation& r = rot_[p];
    r.order = active_[p];
    for (size_t i = r.order.size(); i > 1; --i) std::swap(r.order[i - 1], r.order[rng_.below(i)]);
    r.pos = 0;
    r.dirty = false;
  }

  // Next EV of port p's rotation (reference 4.5 and 8 item 7: a SKIP EV is
  // passed over once, which ends its SKIP).
  //
  // When every active EV of the port is SKIP, skipping has nowhere to send
  // the traffic (UEC stops skipping then), yet the marks say the paths the
  // active set names are congested: the first marked EV trades places with
  // the oldest backup, which takes the packet (see swap_with_backup). With
  // a large active set this needs a mark on every active EV within one
  // rotation: widespread congestion, where the swap costs nothing.
  int next_in_rotation(Time now, uint32_t p, int avoid) {
    Rotation& r = rot_[p];
    if (r.dirty && r.pos >= r.order.size()) reshuffle(p);
    const size_t n = std::max<size_t>(r.order.size(), active_[p].size());
    int fallback = kNone;
    size_t skipped = 0;
    for (size_t tries = 0; tries < n + 1; ++tries) {
      if (r.pos >= r.order.size()) reshuffle(p);
      if (r.order.empty()) return kNone;
      const int s = r.order[r.pos++];
      EvSlot& e = slots_[static_cast<size_t>(s)];
      if (!e.active || e.port != p) continue;
      if (e.state == EvState::skip && proto_.skip_max != Duration::infinite() &&
          now - health_[static_cast<size_t>(s)].skipped_at >= proto_.skip_max) {
        // SKIP lapses after one rotation or skip_max, whichever comes first
        // (reference 8, item 7): a slow rotation must not keep an EV out of
        // service long after the congestion that marked it.
        e.state = EvState::good;
      }
      if (e.state == EvState::skip) {
        e.state = EvState::good;
        if (fallback == kNone) fallback = s;
        // A passed-over EV is GOOD again, so no EV counts twice here.
        if (++skipped == active_[p].size() && proto_.ev_swap_marks != 0) {
          const int b = swap_with_backup(p, fallback);
          if (b != kNone && b != avoid) return b;
        }
        continue;
      }
      if (e.state != EvState::good) continue;
      if (s == avoid) {
        fallback = s;
        continue;
      }
      return s;
    }
    // Everything on this port was skipped or is the one to avoid: use it
    // anyway rather than stall (UEC: no skipping when most EVs are marked).
    if (fallback != kNone) return fallback;
    for (uint16_t s : active_[p])
      if (slots_[s].state == EvState::good || slots_[s].state == EvState::skip) return s;
    return kNone;
  }

  // True if `t` (a time something happened) lies within the last 4 probe
  // intervals: how long the evidence below counts.
  bool recent(Time now, Time t) const { return !t.is_never() && now - t < proto_.probe_interval * 4; }

  // True if the destination's last hop trimmed one of our packets lately: it
  // is overloaded (an incast), and a loss on any path may be a trimmed header
  // its full queue dropped. Every path ends on that link, so such a loss
  // says nothing against the path it took.
  bool destination_congested(Time now) const { return recent(now, last_hop_trim_); }

  // True if a confirming probe cleared h lately.
  bool vouched_lately(Time now, const EvHealth& h) const { return recent(now, h.cleared_at); }

  // True if more than a quarter of port p's EVs lost packets lately (are
  // suspect now, or were cleared by a probe lately). A failing element of
  // the fabric (a link, a switch, a gray port) takes a share of the paths:
  // one T1 of eight. Losses on most paths at once are the destination's or
  // the sender's own congestion (127 senders into one host overflow the last
  // hop's trimmed-header queue in their first round trip, and the drops fall
  // on every EV): each such loss still takes its EV out of service until a
  // probe answers, but none puts it on trial. A whole port losing everything
  // fails its probes, and port status covers a dead link. Called only for a
  // loss soon after repeated vouchings (rare), so the scan of the port's EVs
  // costs nothing per packet.
  bool losses_widespread(Time now, uint32_t p) const {
    size_t lossy = 0;
    for (uint16_t s : by_port_[p]) lossy += health_[s].suspect || vouched_lately(now, health_[s]);
    return lossy * 4 > by_port_[p].size();
  }

  // True if `slot` lost significantly more of its packets lately than the
  // better half of the other EVs of its port in service
  // (ProtocolConfig::gray_loss_factor): more than factor x the losses their
  // pooled loss rate predicts plus two packets, at least four, and a count
  // that twice that rate makes rarer than 1e-7 (rare_under_poisson). The
  // better half (the siblings at or below the median rate), because a
  // failing element takes a share of the paths: on a fabric of two T1s
  // half of them, whose losses would otherwise set the norm; under uniform
  // loss the better half's rate is that much below the port's, hence
  // twice. Uniform random loss hits every EV alike and never qualifies: a
  // margin of three standard deviations instead of the tail retired 18
  // EVs in a 128 MiB all-reduce under 1 % loss, each an EV with 14-70
  // packets and 4-8 losses, where the test is asked on every loss of
  // every EV. A gray link that drops a fifth of what crosses it qualifies
  // within a few tens of packets. Windows count the packets since a mark in
  // EvSlot::packets_sent and halve past kGrayWindow packets, so old history
  // fades. Called on losses only: the scan of the port's EVs costs nothing
  // per packet.
  static constexpr uint32_t kGrayWindow = 8192;
  // False unless the last lossier_than_siblings() call could compare `h`'s
  // window with its siblings' and found a count chance gives more often
  // than once in 10^4 at their rate: then its losses are the port's common
  // lot (uniform random loss), and its next loss after vouching probes is
  // no trial. Under 1 % loss on every host link, a bound of twice the
  // siblings' rate plus two packets still put 2 working EVs of a 128 MiB
  // all-reduce on trial in 2 runs of 5 (and retired them); without a bound,
  // 2 in one run. A gray link's EVs lose several times their siblings'
  // rate, far out in that tail.
  bool in_line_with_siblings(const EvHealth& h) const {
    return sibling_expected_ >= 0 && !rare_under_poisson(h.window_lost, sibling_expected_, kLogTrialRarity);
  }
  // True if k or more losses are too rare to be chance where lambda are
  // expected (a Poisson tail below 1e-7): every loss of every EV asks, so
  // the test must hold across hundreds of thousands of asks. For k above
  // lambda the tail is at most its first term over 1 - lambda / (k + 1).
  static bool rare_under_poisson(uint32_t k, double lambda, double log_rarity = kLogGrayRarity) {
    const double kk = static_cast<double>(k);
    if (kk <= lambda + 1) return false;
    // lgamma_r, not std::lgamma: glibc's lgamma also writes the global
    // signgam, a data race when the simulator's partitions run QPs on
    // several threads.
    int sign = 0;
    const double log_first = -lambda + kk * std::log(lambda) - ::lgamma_r(kk + 1, &sign);
    return log_first - std::log1p(-lambda / (kk + 1)) < log_rarity;
  }
  static constexpr double kLogGrayRarity = -16.118;  // ln(1e-7)
  static constexpr double kLogTrialRarity = -9.210;  // ln(1e-4)
  bool lossier_than_siblings(int slot) {
    sibling_expected_ = -1;
    if (proto_.gray_loss_factor == 0) return false;
    const EvSlot& s = slots_[static_cast<size_t>(slot)];
    EvHealth& h = health_[static_cast<size_t>(slot)];
    uint32_t sent = static_cast<uint32_t>(s.packets_sent) - h.window_sent_base;
    if (sent > kGrayWindow) {
      h.window_sent_base = static_cast<uint32_t>(s.packets_sent) - sent / 2;
      h.window_lost = static_cast<uint16_t>(h.window_lost / 2);
      sent /= 2;
    }
    auto& sib = sibling_windows_;
    sib.clear();
    for (uint16_t o : by_port_[s.port]) {
      const EvSlot& x = slots_[o];
      if (o == slot || x.state == EvState::assumed_bad || x.state == EvState::denied) continue;
      const EvHealth& xh = health_.peek(o);
      const uint32_t xs = static_cast<uint32_t>(x.packets_sent) - xh.window_sent_base;
      if (xs != 0) sib.push_back({xs, xh.window_lost});
    }
    if (sib.size() < 2) return false;  // nothing to compare with
    const auto rate_less = [](const Window& a, const Window& b) {
      return uint64_t{a.lost} * b.sent < uint64_t{b.lost} * a.sent;
    };
    const size_t half = (sib.size() + 1) / 2;
    std::nth_element(sib.begin(), sib.begin() + static_cast<std::ptrdiff_t>(half - 1), sib.end(), rate_less);
    uint64_t others_sent = 0, others_lost = 0;
    for (size_t i = 0; i < half; ++i) {
      others_sent += sib[i].sent;
      others_lost += sib[i].lost;
    }
    if (others_sent < sent) return false;  // too few of their packets to judge by
    const double expected = static_cast<double>(sent) * static_cast<double>(others_lost + 1) /
                            static_cast<double>(others_sent);
    sibling_expected_ = expected;
    if (h.window_lost < 4) return false;
    const bool apart = h.window_lost > proto_.gray_loss_factor * expected + 2 && rare_under_poisson(h.window_lost, 2 * expected);
    if (!apart && sent >= kGrayWindow / 2) h.gray_strikes = 0;  // a window in line with the others
    return apart;
  }

  // True if few of port p's other active EVs are SKIP (marked since their last
  // turn): the marks single out some paths, and trading one of them for a
  // backup moves traffic off a congested path. When many are marked the
  // congestion is everywhere (even load over every path); a swap then only
  // reshuffles the active set onto paths no better, and the reshuffles make
  // the load uneven (8 flows rack to rack: 15,942 trims and 1.35x the ideal
  // FCT swapping on every run of 3 marks, against 838 trims and 1.02x).
  // Stops counting at the first EV past the quarter: under an incast, where
  // this is asked on every marked ACK, most of the set is marked.
  bool singled_out(uint32_t p, int slot) const {
    const auto& act = active_[p];
    size_t others_marked = 0;
    for (uint16_t a : act) {
      others_marked += a != slot && (slots_[a].state == EvState::skip || slots_[a].marks_in_row > 0);
      if (others_marked * 4 > act.size()) return false;
    }
    return true;
  }

  // Active `slot` of port p trades places with p's oldest backup, which is
  // returned (kNone, nothing changed, if p has no backup).
  //
  // SKIP alone cannot move traffic off a congested path when the active set
  // is small or names that path many times (a QP whose active EVs all cross
  // one link): each marked EV is passed over once and then used again, and
  // NSCC ends up cutting the window for what is single-path congestion.
  // Reference 5.6 wants a path switch there (ECN is a load-balancing
  // signal), and MRC keeps its other paths in the backup set (reference
  // 4.4), so persistent marks rotate the active set through the backups.
  // The demoted EV stays in service, GOOD, at the end of the backup queue;
  // no EV event, since neither EV changes state (reference 4.10); the size
  // of the active set is unchanged, so ev_min_active is not involved.
  int swap_with_backup(uint32_t p, int slot) {
    auto& act = active_[p];
    if (backup_[p].empty()) return kNone;
    const auto it = std::find(act.begin(), act.end(), static_cast<uint16_t>(slot));
    assert(it != act.end());
    const uint16_t b = take_oldest_backup(p);
    *it = b;
    EvSlot& out = slots_[static_cast<size_t>(slot)];
    out.active = false;
    out.marks_in_row = 0;
    if (out.state == EvState::skip) out.state = EvState::good;
    backup_[p].push_back(static_cast<uint16_t>(slot));
    ++stats_.congestion_swaps;
    return b;
  }

  // Port p's oldest backup (p has one), marked active with a fresh mark run;
  // the caller puts it in the active set.
  uint16_t take_oldest_backup(uint32_t p) {
    auto& bak = backup_[p];
    const uint16_t b = bak.front();
    bak.erase(bak.begin());
    slots_[b].active = true;
    slots_[b].marks_in_row = 0;
    rot_[p].dirty = true;
    return b;
  }

  // Removes slot from the active/backup sets; promotes a backup of the same
  // port if an active EV left (reference 4.6: replacement from the same plane).
  void leave_service(int slot) {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    auto& act = active_[s.port];
    auto& bak = backup_[s.port];
    if (s.active) {
      act.erase(std::find(act.begin(), act.end(), static_cast<uint16_t>(slot)));
      s.active = false;
      rot_[s.port].dirty = true;
      promote(s.port);
      note_active(s.port);
    } else {
      auto it = std::find(bak.begin(), bak.end(), static_cast<uint16_t>(slot));
      if (it != bak.end()) bak.erase(it);
    }
    auto pit = std::find(probing_.begin(), probing_.end(), static_cast<uint16_t>(slot));
    if (pit != probing_.end()) {
      probing_.erase(pit);
      probe_dirty_ = true;
      EvHealth& h = health_[static_cast<size_t>(slot)];
      copies_pending_ -= h.copies_due;
      h.copies_due = 0;
    }
  }

  void promote(uint8_t port) {
    auto& act = active_[port];
    while (act.size() < target_active_ && !backup_[port].empty()) {
      act.push_back(take_oldest_backup(port));
      ++stats_.promotions;
    }
    note_active(port);
  }

  void note_active(uint32_t port) {
    if (active_[port].empty()) active_mask_ &= ~(1u << port);
    else active_mask_ |= 1u << port;
  }

  // GOOD/SKIP -> ASSUMED_BAD unless that would leave fewer than ev_min_active
  // usable EVs, or none at all (reference 8, item 9). A backup of the same
  // port replaces a retired active EV, so that retirement costs nothing.
  void retire(Time now, int slot) {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    if (!may_leave_service(now, slot)) return;
    const EvState from = s.state;
    leave_service(slot);
    s.state = EvState::assumed_bad;
    start_probing(now, slot);
    ++stats_.retired;
    emit(now, slot, from, EvState::assumed_bad);
  }

  // GOOD/SKIP -> out of service, still GOOD/SKIP, with a confirming probe
  // due at once (ProtocolConfig::loss_confirm). The same ev_min_active rule
  // as retire() applies: traffic leaves the path just as fast.
  void suspect(Time now, int slot) {
    if (!may_leave_service(now, slot)) return;
    const EvSlot& s = slots_[static_cast<size_t>(slot)];
    const bool was_active = s.active;
    const size_t backups = backup_[s.port].size();
    leave_service(slot);
    EvHealth& h = health_[static_cast<size_t>(slot)];
    // leave_service promoted the oldest backup to the end of the active set.
    h.stand_in = was_active && backup_[s.port].size() < backups ? static_cast<int16_t>(active_[s.port].back()) : -1;
    start_probing(now, slot);
    h.suspect = true;
    h.confirm_misses = 0;
    h.next_probe = now;
    ++stats_.suspected;
  }

  // A confirming probe of a suspect went unanswered: ask again (the probe
  // or its answer may have met the same random loss as the data), or, after
  // loss_confirm_probes misses, the path failed.
  void confirm_missed(Time now, int slot) {
    EvHealth& h = health_[static_cast<size_t>(slot)];
    if (++h.confirm_misses < proto_.loss_confirm_probes) {
      h.probe_outstanding = false;
      h.next_probe = now;
      probe_dirty_ = true;
      return;
    }
    confirm_failed(now, slot);
  }

  // The confirming probes of a suspect went unanswered: the path failed.
  // ASSUMED_BAD now, reported with the losses seen, and probed as usual.
  void confirm_failed(Time now, int slot) {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    EvHealth& h = health_[static_cast<size_t>(slot)];
    h.suspect = false;
    h.on_trial = false;
    h.stand_in = -1;  // retired: its stand-in keeps the place
    h.probe_outstanding = false;
    h.good_probes = 0;
    h.probe_backoff = proto_.probe_interval;
    h.next_probe = now + proto_.probe_interval;
    probe_dirty_ = true;
    const EvState from = s.state;
    s.state = EvState::assumed_bad;
    ++stats_.retired;
    emit(now, slot, from, EvState::assumed_bad);
  }

  // A suspect's path works after all: back in service, with no event, since
  // its state never changed. When its lost packet arrived (`late`), the
  // loss was reordering and the suspect takes its active place back
  // (restore_from); when only a probe answered, the loss was real, so the
  // path rests as the newest backup (promoted if the active set lacks one):
  // put back at once under 1 % random loss, EVs lost again soon after their
  // probes vouched for them and went on trial (16 MiB all-reduce, seeds
  // 1-5: 382 retired, against none).
  void clear_suspect(Time now, int slot, bool late) {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    EvHealth& h = health_[static_cast<size_t>(slot)];
    h.vouches = vouched_lately(now, h) ? static_cast<uint8_t>(std::min(h.vouches + 1, 255)) : 1;
    h.cleared_at = now;
    leave_service(slot);  // out of probing_
    h.suspect = false;
    h.on_trial = false;
    h.probe_outstanding = false;
    h.drops = 0;
    h.next_probe = Time::never();
    const int stand_in = std::exchange(h.stand_in, int16_t{-1});
    if (!late || !restore_from(s.port, slot, stand_in)) {
      backup_[s.port].push_back(static_cast<uint16_t>(slot));
      promote(s.port);
    }
    ++stats_.cleared;
  }

  // A suspect proven late that was active takes its place back from the
  // backup promoted for it, which returns to the front of the backups, as
  // the oldest it was. Otherwise the stand-in's path would carry two shares of
  // the QP's traffic, and the suspect's none, for the rest of the transfer:
  // the active set is the reference's spread (4.4), and one late packet is
  // no reason to change it. (With one EV per T1 of a 16-T1 plane, a 16 MiB
  // permutation's eight spurious losses doubled eight QPs up on T1 links
  // and 196 packets were trimmed.) False if the stand-in is gone from the
  // active set (retired, rotated out by marks) or no longer GOOD.
  bool restore_from(uint8_t port, int slot, int stand_in) {
    if (stand_in < 0) return false;
    EvSlot& t = slots_[static_cast<size_t>(stand_in)];
    if (!t.active || t.port != port || t.state != EvState::good) return false;
    auto& act = active_[port];
    auto it = std::find(act.begin(), act.end(), static_cast<uint16_t>(stand_in));
    if (it == act.end()) return false;
    *it = static_cast<uint16_t>(slot);
    t.active = false;
    backup_[port].insert(backup_[port].begin(), static_cast<uint16_t>(stand_in));
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    s.active = true;
    s.marks_in_row = 0;
    rot_[port].dirty = true;
    note_active(port);
    return true;
  }

  // Out of service, probes due from probe_interval on; reverse EVs that
  // named it are replaced.
  void start_probing(Time now, int slot) {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    EvHealth& h = health_[static_cast<size_t>(slot)];
    h.hold_reported = false;
    h.good_probes = 0;
    h.probe_outstanding = false;
    h.probe_backoff = proto_.probe_interval;
    h.next_probe = now + proto_.probe_interval;
    probing_.push_back(static_cast<uint16_t>(slot));
    probe_dirty_ = true;
    for (int& c : control_[s.port])
      if (c == slot) c = pick_control(s.port, slot);
  }

  // False (and the controller told once) if taking GOOD/SKIP `slot` out of
  // service would leave fewer than ev_min_active usable EVs, or none.
  bool may_leave_service(Time now, int slot) {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    if (s.state != EvState::good && s.state != EvState::skip) return false;
    if (s.active && (port_mask_ >> s.port & 1u)) {
      const bool replaced = !backup_[s.port].empty();
      const uint32_t after = usable_active() - (replaced ? 0 : 1);
      if (after < opt_.ev_min_active || after == 0) {
        // Kept in service, and the controller is told once (reference 8,
        // item 9): an event with the state unchanged and `held` set, until
        // the EV does leave service.
        ++stats_.min_active_holds;
        EvHealth& hh = health_[static_cast<size_t>(slot)];
        if (!hh.hold_reported) {
          hh.hold_reported = true;
          emit(now, slot, s.state, s.state, true);
        }
        return false;
      }
    }
    return true;
  }

  void resurrect(Time now, int slot, EvState to, bool by_probe) {
    EvSlot& s = slots_[static_cast<size_t>(slot)];
    const EvState from = s.state;
    leave_service(slot);
    s.state = to;
    EvHealth& h = health_[static_cast<size_t>(slot)];
    h.good_probes = 0;
    h.probe_outstanding = false;
    h.hold_reported = false;
    h.skipped_at = now;
    // Back with a fresh window: its losses before are the old path's.
    h.gray_retired = false;
    h.window_lost = 0;
    h.window_sent_base = static_cast<uint32_t>(s.packets_sent);
    h.next_probe = Time::never();
    backup_[s.port].push_back(static_cast<uint16_t>(slot));
    promote(s.port);
    if (by_probe) ++stats_.resurrected;
    emit(now, slot, from, to);
  }

  MrcPathOptions opt_;
  /// lossier_than_siblings' scratch: the siblings' windows (no allocation
  /// per loss once it has grown to a port's EV count).
  struct Window {
    uint32_t sent;
    uint32_t lost;
  };
  std::vector<Window> sibling_windows_;
  Time last_hop_trim_ = Time::never();  ///< the latest TRIMMED_LASTHOP NACK
  uint32_t active_mask_ = 0;  ///< ports with a non-empty active set
  uint32_t target_active_ = 1;
  uint32_t rr_port_ = 0;
  std::vector<Rotation> rot_;
  std::vector<std::vector<uint16_t>> active_;
  std::vector<std::vector<uint16_t>> backup_;
  std::vector<Recycled> recycled_;  ///< per port (ProtocolConfig::ev_recycle)
  std::vector<uint16_t> probing_;
  mutable Time next_probe_cache_ = Time::never();
  mutable bool probe_dirty_ = true;
  double sibling_expected_ = -1;  ///< set by lossier_than_siblings(); -1 = not compared
  uint32_t copies_pending_ = 0;  ///< sum of EvHealth::copies_due over probing_
  /// The slowest probe answer lately (a max that decays by 1/8 per answer).
  /// Where probes share the data queues (a fabric without a control class:
  /// the kernel's shapers, a lossless plane), an answer takes as long as
  /// the queues are deep, and a confirmation that waited only
  /// loss_confirm_wait would retire working paths by the dozen.
  Duration probe_rtt_{};

  void note_probe_rtt(Duration sample) {
    if (sample <= Duration{}) return;
    probe_rtt_ = std::max(sample, probe_rtt_ - probe_rtt_ / 8);
  }
  /// How long a confirming probe may take: loss_confirm_wait, or one and a
  /// half times the slowest recent answer if that is longer.
  Duration confirm_wait() const { return std::max(proto_.loss_confirm_wait, probe_rtt_ * 3 / 2); }
};

// ---------------------------------------------------------------------------
// Oblivious spraying: a reshuffled rotation over every EV, no path signals.

class ObliviousPolicy final : public PathPolicy {
 public:
  using PathPolicy::PathPolicy;

  int select(Time, uint32_t port_mask, int) override {
    const uint32_t ports = port_mask & sendable_ports();
    if (ports == 0) return kNone;
    for (uint32_t k = 0; k < num_ports_; ++k) {
      const uint32_t p = (rr_port_ + k) % num_ports_;
      if (!(ports >> p & 1u) || by_port_[p].empty()) continue;
      rr_port_ = p + 1;
      if (pos_.size() < num_ports_) pos_.assign(num_ports_, 0);
      std::vector<uint16_t>& order = by_port_[p];
      // Path signals are ignored; a controller DENY is not a path signal.
      for (size_t tries = 0; tries < order.size(); ++tries) {
        if (pos_[p] >= order.size()) {
          for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng_.below(i)]);
          pos_[p] = 0;
        }
        const int s = order[pos_[p]++];
        if (slots_[static_cast<size_t>(s)].state != EvState::denied) return s;
      }
    }
    return kNone;
  }
  uint32_t sendable_ports() const override {
    uint32_t m = 0;
    for (uint32_t p = 0; p < num_ports_; ++p)
      if (!by_port_[p].empty()) m |= 1u << p;
    return m & port_mask_;
  }
  void on_delivered(Time, int, wire::Mark) override {}
  void on_trimmed(Time, int) override {}
  void on_lost(Time, int slot) override { ++health_[static_cast<size_t>(slot)].packets_lost; }
  void on_probe_response(Time, int slot, wire::Mark) override {
    health_[static_cast<size_t>(slot)].answer_expected = false;
  }

 private:
  uint32_t rr_port_ = 0;
  std::vector<size_t> pos_;
};

// ---------------------------------------------------------------------------
// Single path: the QP is pinned to one EV, like an RC QP hashed by ECMP.

class SinglePathPolicy final : public PathPolicy {
 public:
  SinglePathPolicy(std::vector<EvEntry> evs, uint32_t num_ports, const ProtocolConfig& proto, Prng rng,
                   std::vector<EvEvent>* events)
      : PathPolicy(std::move(evs), num_ports, proto, rng, events) {
    pinned_ = slots_.empty() ? kNone : static_cast<int>(rng_.below(slots_.size()));
  }
  int select(Time, uint32_t port_mask, int) override {
    if (pinned_ == kNone || slots_[static_cast<size_t>(pinned_)].state == EvState::denied) return kNone;
    return (port_mask & port_mask_) >> slots_[static_cast<size_t>(pinned_)].port & 1u ? pinned_ : kNone;
  }
  uint32_t sendable_ports() const override {
    return pinned_ == kNone ? 0 : (1u << slots_[static_cast<size_t>(pinned_)].port) & port_mask_;
  }
  int pinned() const override { return pinned_; }
  void on_delivered(Time, int, wire::Mark) override {}
  void on_trimmed(Time, int) override {}
  void on_lost(Time, int slot) override { ++health_[static_cast<size_t>(slot)].packets_lost; }
  void on_probe_response(Time, int slot, wire::Mark) override {
    health_[static_cast<size_t>(slot)].answer_expected = false;
  }

 private:
  int pinned_ = kNone;
};

// Draws `count` distinct values from [0, 2^bits) (GEN mode).
std::vector<EvEntry> generate_evs(const EvProfile& profile, uint32_t num_ports, Prng& rng) {
  std::vector<EvEntry> evs;
  const uint64_t space = uint64_t{1} << profile.entropy_bits;
  const uint32_t per_port = std::max<uint32_t>(1, profile.ev_count / num_ports);
  std::vector<uint32_t> seen;
  seen.reserve(per_port * num_ports);
  for (uint32_t p = 0; p < num_ports; ++p) {
    for (uint32_t i = 0; i < per_port; ++i) {
      uint32_t v;
      do v = static_cast<uint32_t>(rng.below(space));
      while (std::find(seen.begin(), seen.end(), v) != seen.end());
      seen.push_back(v);
      evs.push_back(EvEntry{v, static_cast<uint8_t>(p)});
    }
  }
  return evs;
}

}  // namespace

std::unique_ptr<PathPolicy> make_path_policy(const EvProfile& profile, uint32_t num_ports,
                                             const ProtocolConfig& proto, Prng rng,
                                             std::vector<EvEvent>* events) {
  std::vector<EvEntry> evs =
      profile.explicit_evs.empty() ? generate_evs(profile, num_ports, rng) : profile.explicit_evs;
  std::unique_ptr<PathPolicy> p;
  switch (profile.policy) {
    case PathPolicyKind::oblivious:
      p = std::make_unique<ObliviousPolicy>(std::move(evs), num_ports, proto, rng, events);
      break;
    case PathPolicyKind::single_path:
      p = std::make_unique<SinglePathPolicy>(std::move(evs), num_ports, proto, rng, events);
      break;
    case PathPolicyKind::mrc: {
      MrcPathOptions opt;
      opt.active_count = profile.active_count;
      opt.ev_min_active = profile.ev_min_active;
      p = std::make_unique<MrcPathPolicy>(std::move(evs), num_ports, proto, rng, events, opt);
      break;
    }
  }
  // Slots are built in the EV set's order, so the explicit list's wire EVs
  // line up with them.
  if (!profile.explicit_evs.empty()) p->set_wire_evs(profile.wire_evs);
  return p;
}

}  // namespace mrc::core::path
