// SPDX-License-Identifier: BSD-2-Clause
// Ring: a double-ended FIFO of trivially copyable values in one growable
// power-of-two array.
//
// Per-packet queues (a QP's transmissions in send order, its pending control
// packets and retransmissions, the endpoint's lists of QPs with work, a
// simulated switch port's class queues) push at the back and pop at the
// front once per packet. std::deque (libstdc++) does that through fixed
// blocks it allocates and frees as the queue moves, so a steady queue keeps
// writing into freshly allocated, cold memory. A ring reuses the same few
// cache lines: it allocates on first use and when it has to grow (doubling,
// so its storage settles at the queue's high-water mark), and never shrinks.
#pragma once

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace mrc {

template <class T>
class Ring {
  static_assert(std::is_trivially_copyable_v<T>, "Ring moves values with plain copies");

 public:
  Ring() = default;
  Ring(const Ring& o) { *this = o; }
  Ring& operator=(const Ring& o) {
    if (this == &o) return *this;
    clear();
    for (size_t i = 0; i < o.size(); ++i) push_back(o[i]);
    return *this;
  }
  Ring(Ring&&) noexcept = default;
  Ring& operator=(Ring&&) noexcept = default;

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  /// Slots allocated (0, or a power of two).
  size_t capacity() const { return mask_ + (buf_ ? 1 : 0); }

  /// The i-th value from the front; i < size().
  T& operator[](size_t i) {
    assert(i < size_);
    return buf_[(head_ + i) & mask_];
  }
  const T& operator[](size_t i) const {
    assert(i < size_);
    return buf_[(head_ + i) & mask_];
  }
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  void push_back(const T& v) {
    if (size_ == capacity()) grow();
    buf_[(head_ + size_) & mask_] = v;
    ++size_;
  }
  void push_front(const T& v) {
    if (size_ == capacity()) grow();
    head_ = (head_ - 1) & mask_;
    buf_[head_] = v;
    ++size_;
  }
  /// Removes and returns the front value.
  T pop_front() {
    assert(size_ > 0);
    const T v = buf_[head_];
    head_ = (head_ + 1) & mask_;
    --size_;
    return v;
  }
  void pop_back() {
    assert(size_ > 0);
    --size_;
  }
  /// Empties the ring; keeps its storage.
  void clear() {
    head_ = 0;
    size_ = 0;
  }

  /// Removes the i-th value, keeping the others in order (moves the shorter
  /// side). O(min(i, size() - i)).
  void erase_at(size_t i) {
    assert(i < size_);
    if (i < size_ / 2) {
      for (size_t k = i; k > 0; --k) (*this)[k] = (*this)[k - 1];
      pop_front();
    } else {
      for (size_t k = i; k + 1 < size_; ++k) (*this)[k] = (*this)[k + 1];
      pop_back();
    }
  }
  /// Removes every value equal to `v`, keeping the others in order. Returns
  /// how many went.
  size_t erase(const T& v) {
    size_t out = 0;
    const size_t n = size_;
    for (size_t i = 0; i < n; ++i) {
      const T x = (*this)[i];
      if (x == v) continue;
      (*this)[out++] = x;
    }
    size_ = out;
    return n - out;
  }

 private:
  void grow() {
    const size_t cap = capacity() ? capacity() * 2 : kMinCapacity;
    std::unique_ptr<T[]> next(new T[cap]);
    for (size_t i = 0; i < size_; ++i) next[i] = (*this)[i];
    buf_ = std::move(next);
    mask_ = cap - 1;
    head_ = 0;
  }

  static constexpr size_t kMinCapacity = 8;
  std::unique_ptr<T[]> buf_;
  size_t mask_ = 0;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace mrc
