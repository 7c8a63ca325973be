// SPDX-License-Identifier: BSD-2-Clause
// SpscRing: a bounded single-producer / single-consumer ring, lock-free.
//
// The progress engine produces (completions), an application thread
// consumes (mrc_poll_cq). Several application threads may poll one CQ, so
// CompletionQueue serializes consumers with a mutex around pop(); the
// producer side never takes a lock.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace mrc::rt {

template <class T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>, "entries are copied between threads");

 public:
  /// Holds at least `capacity` entries (rounded up to a power of two).
  explicit SpscRing(size_t capacity)
      : buf_(std::bit_ceil(capacity < 1 ? size_t{1} : capacity)), mask_(buf_.size() - 1) {}

  size_t capacity() const { return buf_.size(); }

  /// Producer: appends `v`; false if the ring is full (nothing written).
  bool push(const T& v) {
    const uint64_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) == buf_.size()) return false;
    buf_[t & mask_] = v;
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }

  /// Consumer: moves up to out.size() entries into `out`, oldest first.
  size_t pop(std::span<T> out) {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    const uint64_t avail = tail_.load(std::memory_order_acquire) - h;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(avail, out.size()));
    for (size_t i = 0; i < n; ++i) out[i] = buf_[(h + i) & mask_];
    head_.store(h + n, std::memory_order_release);
    return n;
  }

  /// Entries held now (exact for the consumer, a snapshot for others).
  size_t size() const {
    return static_cast<size_t>(tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire));
  }

 private:
  std::vector<T> buf_;
  const size_t mask_;
  // Producer and consumer indices on their own cache lines: each side writes
  // only its own.
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace mrc::rt
