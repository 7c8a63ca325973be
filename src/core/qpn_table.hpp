// SPDX-License-Identifier: BSD-2-Clause
// QPN -> QP slot: the lookup every received packet makes.
//
// QPNs are random (Endpoint::create_qp), so they cannot index the QP array
// themselves, and the index must not be visible in them (a QPN that told
// its slot would give away all but a few of its bits). The table is open
// addressing with linear probing over a power-of-two array kept at most
// half full (it doubles as QPs are created: an endpoint of the simulator's
// large fabrics has a handful), keyed by a multiplicative hash: one or two
// probes per lookup. Deletion shifts the following entries back (no
// tombstones), so lookups never slow down with churn.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mrc::core {

class QpnTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  QpnTable() { resize(16); }

  /// The slot of `qpn`, or kNone.
  uint32_t find(uint32_t qpn) const {
    for (uint32_t i = home(qpn);; i = (i + 1) & mask_) {
      if (keys_[i] == qpn) return vals_[i];
      if (keys_[i] == kEmpty) return kNone;
    }
  }
  /// Adds `qpn` (a 24-bit value not present) with `slot`.
  void insert(uint32_t qpn, uint32_t slot) {
    if (2 * (size_ + 1) > keys_.size()) resize(2 * static_cast<uint32_t>(keys_.size()));
    ++size_;
    place(qpn, slot);
  }
  size_t size() const { return size_; }
  /// Removes `qpn` if present.
  void erase(uint32_t qpn) {
    uint32_t i = home(qpn);
    while (keys_[i] != qpn) {
      if (keys_[i] == kEmpty) return;
      i = (i + 1) & mask_;
    }
    --size_;
    // Backward shift: move up every later entry of the run whose home is
    // not between the hole and it (cyclically), so no probe sequence breaks.
    for (uint32_t j = (i + 1) & mask_; keys_[j] != kEmpty; j = (j + 1) & mask_) {
      const uint32_t h = home(keys_[j]);
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        keys_[i] = keys_[j];
        vals_[i] = vals_[j];
        i = j;
      }
    }
    keys_[i] = kEmpty;
  }

 private:
  // QPNs are 24 bits: this value is never one.
  static constexpr uint32_t kEmpty = UINT32_MAX;
  uint32_t home(uint32_t qpn) const { return (qpn * 0x9E3779B1u) >> shift_; }
  void place(uint32_t qpn, uint32_t slot) {
    uint32_t i = home(qpn);
    while (keys_[i] != kEmpty) i = (i + 1) & mask_;
    keys_[i] = qpn;
    vals_[i] = slot;
  }
  void resize(uint32_t capacity) {
    std::vector<uint32_t> old_keys = std::move(keys_), old_vals = std::move(vals_);
    keys_.assign(capacity, kEmpty);
    vals_.assign(capacity, 0);
    mask_ = capacity - 1;
    shift_ = 32 - static_cast<uint32_t>(std::countr_zero(capacity));
    for (size_t i = 0; i < old_keys.size(); ++i)
      if (old_keys[i] != kEmpty) place(old_keys[i], old_vals[i]);
  }
  uint32_t mask_ = 0;
  uint32_t shift_ = 0;
  size_t size_ = 0;
  std::vector<uint32_t> keys_;
  std::vector<uint32_t> vals_;
};

}  // namespace mrc::core
