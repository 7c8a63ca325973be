// SPDX-License-Identifier: BSD-2-Clause
// SackBitmap: a sliding window of received/acknowledged flags over an
// unwrapped 64-bit sequence space.
//
// The responder uses it as its PSN tracking window (MPR), the requester as
// its record of which PSNs the peer has SACKed. Bit `base()` is the first
// sequence number not yet known to be set; everything below it is set by
// definition. Storage is a power-of-two ring of 64-bit words, so advancing the
// window never moves memory and scanning for the next hole is a word at a time.
#pragma once

#include <bit>
#include <cassert>
#include <cstdint>
#include <vector>

namespace mrc {

class SackBitmap {
 public:
  SackBitmap() = default;
  /// A window of at least `capacity_bits` flags starting at sequence `base`.
  explicit SackBitmap(uint64_t capacity_bits, uint64_t base = 0) { reset(capacity_bits, base); }

  /// Clears every flag and restarts the window at `base`. Capacity is rounded
  /// up to a power of two number of 64-bit words.
  void reset(uint64_t capacity_bits, uint64_t base = 0) {
    uint64_t words = std::bit_ceil((capacity_bits + 63) / 64 + 1);
    words_.assign(words, 0);
    mask_ = words - 1;
    // Usable span keeps one spare word so the base word and the last word
    // never alias in the ring.
    capacity_ = (words - 1) * 64;
    base_ = base;
    count_ = 0;
  }

  /// First sequence number not known to be set.
  uint64_t base() const { return base_; }
  /// Number of flags the window can track beyond base().
  uint64_t capacity() const { return capacity_; }
  /// One past the last sequence number set() accepts.
  uint64_t limit() const { return base_ + capacity_; }
  /// Number of set flags at or above base().
  uint64_t count() const { return count_; }

  /// True if `seq` lies in [base(), limit()).
  bool in_window(uint64_t seq) const { return seq >= base_ && seq - base_ < capacity_; }

  /// Whether `seq` is set. Below base() is always set; beyond the window is not.
  bool test(uint64_t seq) const {
    if (seq < base_) return true;
    if (seq - base_ >= capacity_) return false;
    return (words_[(seq >> 6) & mask_] >> (seq & 63)) & 1u;
  }

  /// Sets `seq`. Returns false (and changes nothing) if it was already set or
  /// is outside the window.
  bool set(uint64_t seq) {
    if (!in_window(seq)) return false;
    uint64_t& w = words_[(seq >> 6) & mask_];
    const uint64_t bit = uint64_t{1} << (seq & 63);
    if (w & bit) return false;
    w |= bit;
    ++count_;
    return true;
  }

  /// Moves base() over every contiguous set flag starting at base(), clearing
  /// them. Returns how many it moved.
  uint64_t advance() {
    uint64_t moved = 0;
    while (count_ > 0) {
      uint64_t& w = words_[(base_ >> 6) & mask_];
      const unsigned off = static_cast<unsigned>(base_ & 63);
      const uint64_t run = static_cast<uint64_t>(std::countr_one(w >> off));
      const uint64_t avail = 64 - off;
      const uint64_t n = run < avail ? run : avail;
      if (n == 0) break;
      // Clear the run.
      const uint64_t run_mask = (n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << off;
      w &= ~run_mask;
      base_ += n;
      count_ -= n;
      moved += n;
      if (n < avail) break;
    }
    return moved;
  }

  /// Moves base() to `new_base` (>= base()) regardless of flags, clearing the
  /// flags passed over. Used when the peer acknowledges cumulatively.
  void advance_to(uint64_t new_base) {
    while (base_ < new_base) {
      if (count_ == 0) {
        base_ = new_base;
        return;
      }
      uint64_t& w = words_[(base_ >> 6) & mask_];
      const unsigned off = static_cast<unsigned>(base_ & 63);
      const uint64_t avail = 64 - off;
      const uint64_t n = (new_base - base_) < avail ? (new_base - base_) : avail;
      const uint64_t run_mask = (n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << off;
      count_ -= static_cast<uint64_t>(std::popcount(w & run_mask));
      w &= ~run_mask;
      base_ += n;
    }
  }

  /// 64 flags starting at `start` (bit i = flag of start+i). Flags below
  /// base() read as 1, beyond the window as 0.
  uint64_t extract64(uint64_t start) const {
    if (start >= base_ && start + 64 <= limit()) {
      // Fast path: two ring words, shifted into place.
      const unsigned off = static_cast<unsigned>(start & 63);
      const uint64_t lo = words_[(start >> 6) & mask_];
      if (off == 0) return lo;
      const uint64_t hi = words_[((start >> 6) + 1) & mask_];
      return (lo >> off) | (hi << (64 - off));
    }
    uint64_t out = 0;
    for (unsigned i = 0; i < 64; ++i)
      if (test(start + i)) out |= uint64_t{1} << i;
    return out;
  }

  /// Lowest unset sequence number >= `from` inside the window, or limit().
  uint64_t next_unset(uint64_t from) const {
    uint64_t seq = from < base_ ? base_ : from;
    while (seq < limit()) {
      const uint64_t w = words_[(seq >> 6) & mask_] >> (seq & 63);
      const unsigned ones = static_cast<unsigned>(std::countr_one(w));
      const unsigned avail = 64 - static_cast<unsigned>(seq & 63);
      if (ones < avail) {
        seq += ones;
        return seq < limit() ? seq : limit();
      }
      seq += avail;
    }
    return limit();
  }

 private:
  std::vector<uint64_t> words_;
  uint64_t mask_ = 0;
  uint64_t capacity_ = 0;
  uint64_t base_ = 0;
  uint64_t count_ = 0;
};

}  // namespace mrc
