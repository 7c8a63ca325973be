// SPDX-License-Identifier: BSD-2-Clause
// EventQueue: the simulator's pending events, popped in (time, key) order.
//
// A timing wheel of kSlots buckets of 2^kShift ps (4.096 ns; the wheel spans
// ~16.8 us, more than a hop's link + switch latency) with a binary heap for
// the events beyond it (timers). Each bucket is a FIFO list of chunks of 15
// events from a pooled slab, so a push is a store into a chunk that is warm
// (the bucket's tail, or one freed moments ago) and draining a bucket reads
// whole cache lines in sequence, the next chunk prefetched while one is
// copied (a list of single events cost one dependent cache miss per event: a
// busy fabric puts hundreds of events in a 4 ns bucket, pushed ~100 ns of
// simulated time, thousands of events, earlier). A pop drains a sorted batch:
// when it runs dry, the next non-empty bucket (a bitmap scan) and any heap
// events of that bucket are gathered and sorted by time (a radix sort on the
// offset within the bucket when the batch is large). It relies on the
// simulator's clock never going back: nothing is pushed earlier than the last
// event popped.
//
// History (docs/performance.md): a 4-ary heap (62 % of the fabric
// benchmark's time in sift_down), then a radix heap (each event moved ~4
// times between buckets; 30 % of mrc-sim's instructions on the 128-host
// permutation), then this wheel (one list entry per event, then chunks).
//
// Ties break on the event's key (event_key(): the entity that scheduled it
// and that entity's own count), not on insertion order: a partitioned run
// inserts the same events in another order (its cross-partition events
// arrive at window boundaries), and the key is what both runs agree on. The
// heap orders by (time, key); a drained bucket is sorted by time (stably,
// radix or insertion) and then runs of equal times by key, which costs one
// comparison per event when times are distinct.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/time.hpp"

namespace mrc::sim {

class Node;

/// Bits of an event key that count an entity's events (the rest name it).
inline constexpr int kEventSeqBits = 36;

/// The tie-break key of an event: `entity` (an id the simulator handed out,
/// Simulator::new_entity, < 2^28) and `seq`, that entity's own count of the
/// events it keyed (modulo 2^36: a wrap only changes which of two events at
/// the same picosecond goes first, still the same in every run). Events at
/// the same time run in key order.
constexpr uint64_t event_key(uint32_t entity, uint64_t seq) {
  return (uint64_t{entity} << kEventSeqBits) | (seq & ((uint64_t{1} << kEventSeqBits) - 1));
}

/// The keys one entity gives the events it schedules: its id and a count of
/// its own (event_key). An entity owns one (or several, for streams of
/// events that must stay countable on their own, such as frames another
/// partition may send it) and calls next() once per event it schedules.
class EventKeys {
 public:
  EventKeys() = default;
  explicit EventKeys(uint32_t entity) : base_(event_key(entity, 0)) {}
  /// The key of the next event.
  uint64_t next() { return base_ | (seq_++ & ((uint64_t{1} << kEventSeqBits) - 1)); }
  uint32_t entity() const { return static_cast<uint32_t>(base_ >> kEventSeqBits); }

 private:
  uint64_t base_ = 0;
  uint64_t seq_ = 0;
};

struct Event {
  Time at;
  uint64_t key = 0;  ///< tie-break among events at the same time (event_key)
  Node* node = nullptr;
  uint64_t tag = 0;
};

/// Event order: time, then key.
inline bool event_before(const Event& a, const Event& b) {
  return a.at < b.at || (a.at == b.at && a.key < b.key);
}

class EventQueue {
 public:
  EventQueue() : head_of_(kSlots, kNil), tail_of_(kSlots, kNil) {}

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  /// The next event. The queue must not be empty.
  const Event& top() const {
    assert(size_ > 0);
    if (next_ == end_) refill();
    return batch_[next_];
  }

  /// Adds an event with tie-break `key` (event_key). `at` must not be
  /// earlier than the last event popped (it is clamped to it).
  void push(Time at, Node* node, uint64_t tag, uint64_t key) {
    uint64_t ps = key_of(at);
    assert(ps >= popped_);
    if (ps < popped_) ps = popped_;
    const Time t = Time::from_ps(static_cast<int64_t>(ps));
    ++size_;
    const uint64_t b = ps >> kShift;
    if (b - cur_ - 1 < kSlots - 1) {  // cur_ < b < cur_ + kSlots: the wheel
      const uint32_t s = static_cast<uint32_t>(b & kMask);
      uint32_t c = tail_of_[s];
      if (head_of_[s] == kNil) {
        c = new_chunk();
        head_of_[s] = c;
        tail_of_[s] = c;
        bits_[s >> 6] |= uint64_t{1} << (s & 63);
      } else if (chunks_[c].n == kChunkEvents) [[unlikely]] {
        const uint32_t nc = new_chunk();
        chunks_[c].next = nc;
        tail_of_[s] = nc;
        c = nc;
      }
      Chunk& ch = chunks_[c];
      ch.ev[ch.n++] = Event{t, key, node, tag};
      if (b < next_bucket_) next_bucket_ = b;
      return;
    }
    push_slow(Event{t, key, node, tag});
  }

  /// The event after top(), if it is already known cheaply (in the sorted
  /// batch), else null: for prefetching.
  const Event* peek_second() const { return next_ + 1 < end_ ? &batch_[next_ + 1] : nullptr; }

  Event pop() {
    top();
    const Event e = batch_[next_++];
    popped_ = key_of(e.at);
    --size_;
    return e;
  }

  void reserve(size_t n) { chunks_.reserve(n / kChunkEvents + 1); }

  /// Calls f(const Event&) for every pending event, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = next_; i < end_; ++i) f(batch_[i]);
    for (uint64_t s = 0; s < kSlots; ++s)
      for (uint32_t c = head_of_[s]; c != kNil; c = chunks_[c].next)
        for (uint32_t k = 0; k < chunks_[c].n; ++k) f(chunks_[c].ev[k]);
    for (const Event& e : far_) f(e);
  }

 private:
  // 4.096 ns buckets: at 1 ns most buckets held one or two events and
  // finding and draining each cost more than sorting a few more per bucket
  // (the 127 -> 1 incast's instructions -2.6 %); at 16 ns the busy
  // one-path-per-flow permutation sorts more than that saves (+5.5 %).
  static constexpr int kShift = 12;
  static constexpr uint64_t kSlots = 4096;
  static constexpr uint64_t kMask = kSlots - 1;
  static constexpr uint32_t kNil = 0xFFFFFFFFu;
  // A bucket is a list of chunks of events, in insertion order: draining it
  // reads whole cache lines in sequence (one dependent miss per chunk, and
  // the next chunk is prefetched while one is copied) where a list of single
  // events took one dependent miss per event.
  static constexpr uint32_t kChunkEvents = 15;  // 488 of a chunk's 512 bytes
  static constexpr size_t kSmallBatch = 24;
  struct alignas(64) Chunk {
    uint32_t next;
    uint32_t n;
    Event ev[kChunkEvents];
  };
  static void prefetch_chunk(const Chunk* c) {
    const char* p = reinterpret_cast<const char*>(c);
    for (size_t i = 0; i < sizeof(Chunk); i += 64) __builtin_prefetch(p + i);
  }

  static uint64_t key_of(Time t) { return t.ps() < 0 ? 0 : static_cast<uint64_t>(t.ps()); }
  // Heap order: the earliest (time, key) on top.
  static bool later(const Event& a, const Event& b) { return event_before(b, a); }

  uint32_t new_chunk() {
    uint32_t c = free_;
    if (c != kNil) [[likely]] {
      free_ = chunks_[c].next;
    } else {
      c = grow_chunks();
    }
    chunks_[c].next = kNil;
    chunks_[c].n = 0;
    return c;
  }
  __attribute__((noinline)) uint32_t grow_chunks() {
    chunks_.push_back(Chunk{});
    return static_cast<uint32_t>(chunks_.size() - 1);
  }

  // Not the wheel: the batch being drained, or the heap.
  __attribute__((noinline)) void push_slow(const Event& e) {
    const uint64_t b = key_of(e.at) >> kShift;
    if (b <= cur_ && next_ < end_) {
      // The bucket being drained (or, after top() looked ahead, an earlier
      // one): into the sorted batch, after every event that goes before it.
      reserve_batch(end_ + 1);
      size_t i = end_++;
      for (; i > next_ && event_before(e, batch_[i - 1]); --i) batch_[i] = batch_[i - 1];
      batch_[i] = e;
      return;
    }
    // Beyond the wheel (or the current bucket with the batch drained): the
    // heap. refill() looks at its minimum every time.
    far_.push_back(e);
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
  // wheel, in (time, key) order.
  void refill() const {
    end_ = 0;
    next_ = 0;
    const uint64_t wb = next_bucket_;
    assert(wb == next_wheel_bucket());
    const uint64_t fb = far_.empty() ? UINT64_MAX : key_of(far_.front().at) >> kShift;
    const uint64_t b = std::min(wb, fb);
    assert(b != UINT64_MAX);
    cur_ = b;
    while (!far_.empty() && (key_of(far_.front().at) >> kShift) == b) {
      reserve_batch(end_ + 1);
      batch_[end_++] = far_.front();
      std::pop_heap(far_.begin(), far_.end(), later);
      far_.pop_back();
    }
    if (wb == b) {
      const uint32_t s = static_cast<uint32_t>(b & kMask);
      uint32_t c = head_of_[s];
      head_of_[s] = kNil;
      bits_[s >> 6] &= ~(uint64_t{1} << (s & 63));
      const uint32_t first = c;
      uint32_t last = c;
      while (c != kNil) {
        const Chunk& ch = chunks_[c];
        if (ch.next != kNil) prefetch_chunk(&chunks_[ch.next]);
        reserve_batch(end_ + ch.n);
        // Most buckets hold one or two events: an element loop, not a
        // memmove call.
        Event* out = batch_.data() + end_;
        for (uint32_t k = 0; k < ch.n; ++k) out[k] = ch.ev[k];
        end_ += ch.n;
        last = c;
        c = ch.next;
      }
      // The whole list goes back to the free list at once.
      chunks_[last].next = free_;
      free_ = first;
      // The next bucket is drained after this batch: start loading its head.
      // (Pushes keep next_bucket_ up to date from here until the next refill:
      // one bitmap scan per bucket drained.)
      const uint64_t nb = next_wheel_bucket();
      next_bucket_ = nb;
      // Its first two lines (the list link and the first events: most
      // buckets hold one or two).
      if (nb != UINT64_MAX) {
        const char* h = reinterpret_cast<const char*>(&chunks_[head_of_[nb & kMask]]);
        __builtin_prefetch(h);
        __builtin_prefetch(h + 64);
      }
    }
    sort_batch(b);
  }

  // Sorts the batch by (time, key). Every event in it lies in bucket b, so
  // the time is the kShift-bit offset within the bucket. A small or nearly
  // sorted batch takes an insertion sort (one comparison per event when
  // sorted); a large one (a busy fabric puts over a hundred events in a 1 ns
  // bucket, in no particular order) first a two-pass radix sort on the
  // offset, after which only runs of equal times may be out of key order,
  // which the insertion pass puts right.
  void sort_batch(uint64_t b) const {
    const size_t n = end_;
    size_t i = 1;
    while (i < n && !event_before(batch_[i], batch_[i - 1])) ++i;
    if (i >= n) return;
    if (n > kSmallBatch) {
      radix_sort_by_time(b);
      sort_equal_times_by_key();
      return;
    }
    for (; i < n; ++i) {
      if (!event_before(batch_[i], batch_[i - 1])) continue;
      const Event e = batch_[i];
      size_t j = i;
      for (; j > 0 && event_before(e, batch_[j - 1]); --j) batch_[j] = batch_[j - 1];
      batch_[j] = e;
    }
  }

  // After the radix sort by time: puts each run of equal times in key order,
  // stably (the order an insertion sort gives). A long run takes a merge
  // sort: a fabric of a million host-planes starts every QP at the same
  // picosecond, and an insertion sort of that run moved ~n^2/4 events (47 %
  // of the CPU before the first packet at 16,384 x 8 hosts).
  void sort_equal_times_by_key() const {
    const size_t n = end_;
    auto by_key = [](const Event& a, const Event& b) { return a.key < b.key; };
    for (size_t r = 0; r < n;) {
      size_t e = r + 1;
      while (e < n && batch_[e].at == batch_[r].at) ++e;
      if (e - r > kSmallBatch) {
        std::stable_sort(batch_.begin() + static_cast<ptrdiff_t>(r), batch_.begin() + static_cast<ptrdiff_t>(e),
                         by_key);
      } else {
        for (size_t i = r + 1; i < e; ++i) {
          if (!by_key(batch_[i], batch_[i - 1])) continue;
          const Event ev = batch_[i];
          size_t j = i;
          for (; j > r && by_key(ev, batch_[j - 1]); --j) batch_[j] = batch_[j - 1];
          batch_[j] = ev;
        }
      }
      r = e;
    }
  }

  // Stable sort of the batch (all in bucket b) by time alone: two radix
  // passes over the offset within the bucket, kRadixBits each.
  void radix_sort_by_time(uint64_t b) const {
    const size_t n = end_;
    constexpr int kRadixBits = (kShift + 1) / 2;
    constexpr uint32_t kRadix = 1u << kRadixBits;
    const uint64_t base = b << kShift;
    uint32_t lo[kRadix + 1] = {}, hi[kRadix + 1] = {};
    order_.resize(n);
    tmp_.resize(n);
    for (size_t k = 0; k < n; ++k) {
      const uint32_t off = static_cast<uint32_t>(key_of(batch_[k].at) - base);
      assert(off < (1u << kShift));
      ++lo[(off & (kRadix - 1)) + 1];
      ++hi[(off >> kRadixBits) + 1];
    }
    for (uint32_t d = 0; d < kRadix; ++d) {
      lo[d + 1] += lo[d];
      hi[d + 1] += hi[d];
    }
    for (size_t k = 0; k < n; ++k) {
      const uint32_t off = static_cast<uint32_t>(key_of(batch_[k].at) - base);
      tmp_[lo[off & (kRadix - 1)]++] = static_cast<uint32_t>(k);
    }
    for (size_t k = 0; k < n; ++k) {
      const uint32_t idx = tmp_[k];
      const uint32_t off = static_cast<uint32_t>(key_of(batch_[idx].at) - base);
      order_[hi[off >> kRadixBits]++] = idx;
    }
    sorted_.resize(batch_.size());
    for (size_t k = 0; k < n; ++k) sorted_[k] = batch_[order_[k]];
    batch_.swap(sorted_);
  }

  // Makes room for n events in the batch. Its vector only grows (its size is
  // the capacity; end_ marks the events): filling it is a copy, never a
  // vector insert.
  void reserve_batch(size_t n) const {
    if (n > batch_.size()) [[unlikely]]
      grow_batch(n);
  }
  __attribute__((noinline)) void grow_batch(size_t n) const { batch_.resize(std::max(n, 2 * batch_.size() + 64)); }

  // Refilling is logically const (top() does it); the structure is a cache
  // of the order.
  mutable std::vector<Event> batch_;  ///< bucket cur_ (and earlier pushes), sorted; [next_, end_) pending
  mutable size_t next_ = 0;
  mutable size_t end_ = 0;
  mutable uint64_t next_bucket_ = UINT64_MAX;  ///< the earliest non-empty wheel bucket after cur_, or UINT64_MAX
  mutable uint64_t cur_ = 0;          ///< bucket (time >> kShift) of the batch
  mutable std::vector<uint32_t> head_of_;  ///< per slot: oldest chunk of its bucket, or kNil
  mutable std::vector<uint32_t> tail_of_;  ///< per slot: newest chunk (valid while head_of_ is not kNil)
  mutable uint64_t bits_[kSlots / 64] = {};  ///< slots with events
  mutable std::vector<Chunk> chunks_;
  mutable uint32_t free_ = kNil;  ///< free chunks, linked by next
  mutable std::vector<Event> sorted_;   ///< sort_batch() scratch
  mutable std::vector<uint32_t> order_;  ///< sort_batch() scratch
  mutable std::vector<uint32_t> tmp_;    ///< sort_batch() scratch
  mutable std::vector<Event> far_;    ///< heap: events beyond the wheel when pushed
  uint64_t popped_ = 0;               ///< time of the last event popped
  size_t size_ = 0;
};

}  // namespace mrc::sim
