// Ring<T, kInline>: a growable FIFO on one power-of-two array.
//
// Queues and pipes push and pop millions of entries per second. std::deque
// (libstdc++) frees and reallocates a block every few hundred entries as a
// steady FIFO walks through memory; this ring grows to the largest occupancy
// it ever sees and then never allocates again. The first kInline entries
// (a power of two, or 0) live inside the ring itself, next to its owner, so a
// short FIFO costs no extra cache miss.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace mrc::sim {

template <class T, size_t kInline = 0>
class Ring {
  static_assert((kInline & (kInline - 1)) == 0, "kInline must be a power of two");

 public:
  explicit Ring(size_t initial_capacity = 16) {
    if (kInline && initial_capacity <= kInline) {
      buf_ = inline_;
      mask_ = (kInline ? kInline : 1) - 1;
    } else {
      size_t cap = 1;
      while (cap < initial_capacity) cap <<= 1;
      heap_ = std::make_unique<T[]>(cap);
      buf_ = heap_.get();
      mask_ = cap - 1;
    }
  }
  // buf_ may point into the object itself.
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  size_t capacity() const { return mask_ + 1; }

  T& front() { assert(size_ > 0); return buf_[head_]; }
  const T& front() const { assert(size_ > 0); return buf_[head_]; }
  T& back() { assert(size_ > 0); return buf_[(head_ + size_ - 1) & mask_]; }
  /// The i-th entry from the front.
  T& operator[](size_t i) { assert(i < size_); return buf_[(head_ + i) & mask_]; }
  const T& operator[](size_t i) const { assert(i < size_); return buf_[(head_ + i) & mask_]; }

  void push_back(const T& v) {
    if (size_ == mask_ + 1) grow();
    buf_[(head_ + size_) & mask_] = v;
    ++size_;
  }
  T pop_front() {
    assert(size_ > 0);
    T v = std::move(buf_[head_]);
    head_ = (head_ + 1) & mask_;
    --size_;
    return v;
  }
  void clear() { head_ = size_ = 0; }

 private:
  void grow() {
    const size_t cap = mask_ + 1;
    auto bigger = std::make_unique<T[]>(cap * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(buf_[(head_ + i) & mask_]);
    heap_ = std::move(bigger);
    buf_ = heap_.get();
    mask_ = cap * 2 - 1;
    head_ = 0;
  }

  T* buf_ = nullptr;
  size_t mask_ = 0;
  size_t head_ = 0;
  size_t size_ = 0;
  std::unique_ptr<T[]> heap_;
  T inline_[kInline ? kInline : 1];
};

}  // namespace mrc::sim
