// SPDX-License-Identifier: BSD-2-Clause
// How long a sprayed packet may take before later deliveries prove it lost
// (the loss rule's age, reference 3.8 and 8 item 5), in the spirit of
// RACK-TLP (RFC 8985): time-based, learning the fabric's reordering from the
// packets themselves, and widening when it was wrong.
//
// A sprayed QP reorders by design: its packets take hundreds of paths whose
// queues differ, so a packet can be confirmed well after packets sent after
// it without being lost. A loss rule tuned to the average path (the smoothed
// RTT plus a few deviations) declares the slow tail of that spread lost:
// every such declaration is a needless retransmission and, worse, retires a
// healthy EV, which loads the remaining paths and makes the spread wider.
//
// So the loss age follows the spread actually seen:
//  - every packet delivered on its first transmission reports its *delivery
//    age*, the time from its transmission to the SACK that first confirmed
//    it (bitmap or cumulative, so the slow packets count, not only SACK
//    triggers); the largest over a recent window (two buckets of about four
//    smoothed RTTs) is how old a healthy packet gets;
//  - the loss age is the largest of: that maximum; the smoothed RTT plus
//    four deviations; the base RTT until the first RTT sample (or always,
//    with floor_from_rtt off); each plus a margin. The margin is the
//    reordering allowance times a multiplier, less half a step on the
//    maximum and on the smoothed RTT (the floor before RTT samples keeps
//    the whole margin): the maximum is an age already observed, so it needs
//    only a cushion for the jitter it has not seen yet: each spurious loss (a packet declared lost that
//    turns out to have arrived, and the age it arrived at is a delivery
//    age too) raises it, at most once per smoothed RTT, and it decays one
//    step per `decay` without one;
//  - a new QP starts a step wider (initial_multiplier) until a whole
//    window of delivery ages, with no spurious loss, is calm (none older
//    than the fastest round trip plus an allowance): then the extra step
//    is dropped. A window whose ages spread wider (queues still building,
//    a job's start) keeps it.
// So a fault on an idle QP is still detected within tens of microseconds,
// and on a loaded one a few microseconds after the slowest healthy packet.
#pragma once

#include <algorithm>
#include <cstdint>

#include "util/time.hpp"

namespace mrc::core {

struct ReorderWindowConfig {
  Duration base_rtt = Duration::us(10);         ///< unloaded RTT of the longest path
  Duration allowance = Duration::us(5);         ///< margin per multiplier step
  uint32_t max_multiplier = 8;                  ///< cap of the margin multiplier (>= 1)
  uint32_t initial_multiplier = 2;              ///< the multiplier of a new QP (1..max)
  Duration decay = Duration::ms(1);             ///< one step back per this long without a spurious loss
  bool floor_from_rtt = true;                   ///< base_rtt is the floor only until the first RTT sample
};

class ReorderWindow {
 public:
  // A new QP has seen no delivery ages yet, and its first round trips are
  // when every QP of a job starts at once and queues grow fastest: it starts
  // one step wider (a 1024-host 3-tier permutation of 2 MiB flows: 868
  // spurious retransmissions starting at 1, 19 at 2). The extra step is
  // provisional: it goes once a calm window of ages has shown the spread
  // small, not a millisecond later as a learned step would, since a random
  // loss costs a ring all-reduce step the whole margin (a 4 MiB all-reduce
  // under 0.1 % loss lasts 0.45 ms, all of it at the wider margin before).
  // Dropped after any window instead, the 400G 64-host permutation's
  // slowest flow fell from 95.4 % to 92.5 % of line rate: its queues were
  // still building.
  explicit ReorderWindow(const ReorderWindowConfig& cfg)
      : cfg_(cfg), multiplier_(std::clamp<uint32_t>(cfg.initial_multiplier, 1, std::max<uint32_t>(1, cfg.max_multiplier))) {}

  /// An RTT sample from a timestamp echo (for the smoothed RTT and its
  /// deviation, RFC 6298 gains, and the minimum).
  void on_rtt(Duration rtt) {
    if (srtt_ == Duration{}) {
      srtt_ = rtt;
      rttvar_ = rtt / 2;
      min_rtt_ = rtt;
      return;
    }
    const Duration err = rtt > srtt_ ? rtt - srtt_ : srtt_ - rtt;
    rttvar_ = (rttvar_ * 3 + err) / 4;
    srtt_ = (srtt_ * 7 + rtt) / 8;
    min_rtt_ = std::min(min_rtt_, rtt);
  }

  /// A packet sent once was first confirmed at `now`, `age` after it left.
  void on_delivery_age(Time now, Duration age) {
    roll(now);
    cur_max_ = std::max(cur_max_, age);
  }

  /// A loss the rule declared proved spurious at `now`: the reordering is
  /// wider than the margin allowed for.
  void on_spurious(Time now) {
    ++spurious_;
    provisional_ = 0;  // the lesson is learned now, and decays as learned
    decay_to(now);
    last_spurious_ = now;
    // Once per round trip: the spurious losses of one burst of reordering
    // are one lesson, not many.
    if (multiplier_ < cfg_.max_multiplier && (!widened_ || now - last_widen_ >= std::max(srtt_, cfg_.base_rtt))) {
      ++multiplier_;
      last_widen_ = now;
      widened_ = true;
    }
  }

  /// The age past which a packet with later deliveries is lost.
  Duration loss_age(Time now) {
    roll(now);
    decay_to(now);
    const Duration margin = cfg_.allowance * static_cast<int64_t>(multiplier_);
    const Duration smoothed_margin = margin - cfg_.allowance / 2;
    // The configured base RTT is the longest path's: once RTT samples come
    // in, the QP's own smoothed RTT (the term below) takes its place, or
    // a QP between neighbours would wait out a far path's round trip.
    const Duration floor = (cfg_.floor_from_rtt && srtt_ > Duration{} ? Duration{} : cfg_.base_rtt) + margin;
    const Duration smoothed = srtt_ + std::max(smoothed_margin, rttvar_ * 4);
    const Duration seen = std::max(cur_max_, prev_max_) + smoothed_margin;
    return std::max({floor, smoothed, seen});
  }

  Duration srtt() const { return srtt_; }
  Duration rttvar() const { return rttvar_; }
  /// Smallest RTT sampled (0 before the first sample).
  Duration min_rtt() const { return min_rtt_; }
  uint32_t multiplier() const { return multiplier_; }
  uint64_t spurious() const { return spurious_; }

 private:
  // The delivery-age maximum covers the last one to two windows of about
  // four smoothed RTTs: long enough to hold a congestion episode's spread,
  // short enough to forget it a few round trips after the queues drain.
  void roll(Time now) {
    const Duration window = std::max(srtt_, cfg_.base_rtt) * 4;
    if (now - bucket_start_ < window) return;
    // A closing bucket of calm deliveries (and no spurious loss, which
    // clears provisional_) ends a new QP's provisional steps.
    if (provisional_ > 0 && cur_max_ > Duration{} && cur_max_ <= min_rtt_ + cfg_.allowance) {
      multiplier_ = std::max<uint32_t>(1, multiplier_ - provisional_);
      provisional_ = 0;
    }
    prev_max_ = now - bucket_start_ < window * 2 ? cur_max_ : Duration{};
    cur_max_ = Duration{};
    bucket_start_ = now;
  }

  void decay_to(Time now) {
    if (multiplier_ <= 1 || cfg_.decay <= Duration{}) return;
    const Time since = max(last_spurious_, last_decay_);
    if (now - since < cfg_.decay) return;
    const int64_t steps = (now - since) / cfg_.decay;
    multiplier_ = static_cast<uint32_t>(std::max<int64_t>(1, int64_t{multiplier_} - steps));
    last_decay_ = now;
  }

  ReorderWindowConfig cfg_;
  Duration srtt_{};
  Duration rttvar_{};
  Duration min_rtt_{};
  Duration cur_max_{};
  Duration prev_max_{};
  Time bucket_start_{};
  uint32_t multiplier_;
  bool widened_ = false;
  Time last_widen_{};
  Time last_spurious_{};
  Time last_decay_{};
  uint64_t spurious_ = 0;
  uint32_t provisional_ = multiplier_ - 1;  ///< initial steps not yet confirmed by a window of ages
};

}  // namespace mrc::core
