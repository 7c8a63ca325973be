// EventQueue: the simulator's pending events, popped in (time, insertion)
// order.
//
// A timing wheel of kSlots buckets of 2^kShift ps (1.024 ns; the wheel spans
// ~4.2 us, more than a hop's link + switch latency) with a binary heap for
// the events beyond it (timers). Wheel events live in a pooled slab, each
// bucket a FIFO list through it, so a push is a few stores into memory that
// was freed moments ago (the slab is as large as the most events ever
// pending, a few hundred KB). A pop drains a sorted batch: when it runs dry,
// the next non-empty bucket (a bitmap scan) and any heap events of that
// bucket are gathered and sorted by time. It relies on the simulator's clock
// never going back: nothing is pushed earlier than the last event popped.
//
// History (docs/performance.md): a 4-ary heap (62 % of the fabric
// benchmark's time in sift_down), then a radix heap (each event moved ~4
// times between buckets; 30 % of mrc-sim's instructions on the 128-host
// permutation), then this wheel.
//
// Ties break on insertion order, so a run is deterministic: the heap orders
// by (time, insertion); a bucket's heap events were all pushed before any of
// its wheel events (once a bucket is within the wheel's reach it stays so);
// a bucket's list is in insertion order; so heap events first, then the
// list, then a stable sort by time alone gives (time, insertion) order.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/time.hpp"

namespace mrc::sim {

class Node;

struct Event {
  Time at;
  uint64_t seq = 0;  ///< insertion order (set for events that went through the far heap only)
  Node* node = nullptr;
  uint64_t tag = 0;
};

class EventQueue {
 public:
  EventQueue() : head_of_(kSlots, kNil), tail_of_(kSlots, kNil) {}

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  /// The next event. The queue must not be empty.
  const Event& top() const {
    assert(size_ > 0);
    if (next_ == batch_.size()) refill();
    return batch_[next_];
  }

  /// Adds an event. `at` must not be earlier than the last event popped (it
  /// is clamped to it).
  void push(Time at, Node* node, uint64_t tag) {
    uint64_t key = key_of(at);
    assert(key >= popped_);
    if (key < popped_) key = popped_;
    const Time t = Time::from_ps(static_cast<int64_t>(key));
    ++size_;
    const uint64_t b = key >> kShift;
    if (b - cur_ - 1 < kSlots - 1) {  // cur_ < b < cur_ + kSlots: the wheel
      const uint32_t s = static_cast<uint32_t>(b & kMask);
      uint32_t n = free_;
      if (n != kNil) [[likely]] {
        free_ = slab_[n].next;
      } else {
        n = grow_slab();
      }
      Slot& x = slab_[n];
      x.at = t;
      x.node = node;
      x.tag = tag;
      x.next = kNil;
      if (head_of_[s] == kNil) {
        head_of_[s] = n;
        bits_[s >> 6] |= uint64_t{1} << (s & 63);
      } else {
        slab_[tail_of_[s]].next = n;
      }
      tail_of_[s] = n;
      return;
    }
    push_slow(t, node, tag);
  }

  Event pop() {
    top();
    const Event e = batch_[next_++];
    popped_ = key_of(e.at);
    --size_;
    return e;
  }

  void reserve(size_t n) { slab_.reserve(n); }

 private:
  static constexpr int kShift = 10;
  static constexpr uint64_t kSlots = 4096;
  static constexpr uint64_t kMask = kSlots - 1;
  static constexpr uint32_t kNil = 0xFFFFFFFFu;
  struct Slot {
    Time at;
    Node* node;
    uint64_t tag;
    uint32_t next;
  };

  static uint64_t key_of(Time t) { return t.ps() < 0 ? 0 : static_cast<uint64_t>(t.ps()); }
  // Heap order: the earliest (time, insertion) on top.
  static bool later(const Event& a, const Event& b) { return a.at > b.at || (a.at == b.at && a.seq > b.seq); }

  __attribute__((noinline)) uint32_t grow_slab() {
    slab_.push_back(Slot{});
    return static_cast<uint32_t>(slab_.size() - 1);
  }

  // Not the wheel: the batch being drained, or the heap.
  __attribute__((noinline)) void push_slow(Time t, Node* node, uint64_t tag) {
    const uint64_t b = key_of(t) >> kShift;
    if (b <= cur_ && next_ < batch_.size()) {
      // The bucket being drained (or, after top() looked ahead, an earlier
      // one): into the sorted batch, after every event at or before `key`.
      size_t i = batch_.size();
      while (i > next_ && batch_[i - 1].at > t) --i;
      batch_.insert(batch_.begin() + static_cast<std::ptrdiff_t>(i), Event{t, 0, node, tag});
      return;
    }
    // Beyond the wheel (or the current bucket with the batch drained): the
    // heap. refill() looks at its minimum every time.
    far_.push_back(Event{t, seq_++, node, tag});
    std::push_heap(far_.begin(), far_.end(), later);
  }

  // The next non-empty wheel bucket after cur_ (absolute), or UINT64_MAX.
  uint64_t next_wheel_bucket() const {
    const uint64_t start = (cur_ + 1) & kMask;
    uint64_t w = start >> 6;
    uint64_t word = bits_[w] & (~uint64_t{0} << (start & 63));
    for (uint64_t k = 0; k <= kSlots / 64; ++k) {
      if (word) {
        const uint64_t s = (w << 6) | static_cast<uint64_t>(__builtin_ctzll(word));
        return cur_ + ((s - cur_) & kMask);  // slot s holds bucket cur_ + [1, kSlots)
      }
      w = (w + 1) & (kSlots / 64 - 1);
      word = bits_[w];
    }
    return UINT64_MAX;
  }

  // The batch is drained: gather the earliest bucket from the heap and the
  // wheel, in (time, insertion) order.
  void refill() const {
    batch_.clear();
    next_ = 0;
    const uint64_t wb = next_wheel_bucket();
    const uint64_t fb = far_.empty() ? UINT64_MAX : key_of(far_.front().at) >> kShift;
    const uint64_t b = std::min(wb, fb);
    assert(b != UINT64_MAX);
    cur_ = b;
    while (!far_.empty() && (key_of(far_.front().at) >> kShift) == b) {
      batch_.push_back(far_.front());
      std::pop_heap(far_.begin(), far_.end(), later);
      far_.pop_back();
    }
    if (wb == b) {
      const uint32_t s = static_cast<uint32_t>(b & kMask);
      uint32_t n = head_of_[s];
      head_of_[s] = kNil;
      bits_[s >> 6] &= ~(uint64_t{1} << (s & 63));
      const uint32_t first = n;
      uint32_t last = n;
      while (n != kNil) {
        const Slot& x = slab_[n];
        batch_.push_back(Event{x.at, 0, x.node, x.tag});
        last = n;
        n = x.next;
      }
      // The whole list goes back to the free list at once.
      slab_[last].next = free_;
      free_ = first;
    }
    // Stable insertion sort by time: runs of one time (common: synchronized
    // senders) and nearly sorted lists cost one comparison per event.
    for (size_t i = 1; i < batch_.size(); ++i) {
      if (!(batch_[i].at < batch_[i - 1].at)) continue;
      const Event e = batch_[i];
      size_t j = i;
      for (; j > 0 && e.at < batch_[j - 1].at; --j) batch_[j] = batch_[j - 1];
      batch_[j] = e;
    }
  }

  // Refilling is logically const (top() does it); the structure is a cache
  // of the order.
  mutable std::vector<Event> batch_;  ///< bucket cur_ (and earlier pushes), sorted; [next_, end) pending
  mutable size_t next_ = 0;
  mutable uint64_t cur_ = 0;          ///< bucket (time >> kShift) of the batch
  mutable std::vector<uint32_t> head_of_;  ///< per slot: oldest event of its bucket, or kNil
  mutable std::vector<uint32_t> tail_of_;  ///< per slot: newest event (valid while head_of_ is not kNil)
  mutable uint64_t bits_[kSlots / 64] = {};  ///< slots with events
  mutable std::vector<Slot> slab_;
  mutable uint32_t free_ = kNil;
  mutable std::vector<Event> far_;    ///< heap: events beyond the wheel when pushed
  uint64_t popped_ = 0;               ///< time of the last event popped
  size_t size_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace mrc::sim
