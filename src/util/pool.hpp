// SPDX-License-Identifier: BSD-2-Clause
// ObjectPool<T>: a free-list allocator for fixed-size objects with stable
// addresses.
//
// The simulator allocates and frees millions of packets; recycling them from
// chunks avoids the general-purpose allocator on the hot path. Objects are
// constructed on acquire() and destroyed on release(). Build with
// MRC_ENABLE_ASAN to let the sanitizer see every object as its own allocation
// (the pool then falls back to new/delete).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

// GCC announces AddressSanitizer with __SANITIZE_ADDRESS__; clang 14 does so
// only through __has_feature, so test both or a clang ASan build would keep
// recycling slots and hide use-after-release.
#if defined(__SANITIZE_ADDRESS__)
#define MRC_POOL_HEAP_FALLBACK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MRC_POOL_HEAP_FALLBACK 1
#endif
#endif

namespace mrc {

template <class T, size_t kChunk = 256>
class ObjectPool {
 public:
  ObjectPool() = default;
  ObjectPool(const ObjectPool&) = delete;
  ObjectPool& operator=(const ObjectPool&) = delete;
  ~ObjectPool() = default;  // chunks free their storage; live objects must be released first

  /// Constructs a T from `args` in pooled storage. Never returns null.
  template <class... Args>
  T* acquire(Args&&... args) {
#if defined(MRC_POOL_HEAP_FALLBACK)
    ++live_;
    return new T(std::forward<Args>(args)...);
#else
    if (!free_) grow();
    Slot* s = free_;
    free_ = s->next;
    ++live_;
    return ::new (static_cast<void*>(s->storage)) T(std::forward<Args>(args)...);
#endif
  }

  /// Destroys `p` and returns its storage to the pool. `p` must come from this pool.
  void release(T* p) {
#if defined(MRC_POOL_HEAP_FALLBACK)
    --live_;
    delete p;
#else
    p->~T();
    Slot* s = reinterpret_cast<Slot*>(p);
    s->next = free_;
    free_ = s;
    --live_;
#endif
  }

  /// Objects acquired and not yet released.
  size_t live() const { return live_; }

  /// Moves `other`'s free objects to this pool's free list, and the count of
  /// objects it released that this pool handed out (live() of each stays the
  /// number acquired from it minus those released to it, modulo 2^64 for a
  /// pool that only releases; the sum over both is what matters). For
  /// pools whose objects travel: one thread acquires, others release, and
  /// between phases the releases come back. `other` must outlive every
  /// object it moves (its chunks stay where they are).
  void take_free(ObjectPool& other) {
#if !defined(MRC_POOL_HEAP_FALLBACK)
    if (other.free_) {
      Slot* tail = other.free_;
      while (tail->next) tail = tail->next;
      tail->next = free_;
      free_ = other.free_;
      other.free_ = nullptr;
    }
#endif
    live_ += other.live_;
    other.live_ = 0;
  }
  /// Storage of released objects set aside for the pool they came from
  /// (release_into): a chain spliced back whole by take_back(), in O(1).
  struct Chain {
    void* head = nullptr;
    void* tail = nullptr;
    size_t count = 0;
  };
  /// Destroys `p`, which another pool handed out, and keeps its storage in
  /// `c` for that pool's take_back(): in a partitioned simulation a packet
  /// allocated by one partition ends in another, and goes home between
  /// windows instead of piling up where it ended.
  void release_into(Chain& c, T* p) {
#if defined(MRC_POOL_HEAP_FALLBACK)
    delete p;
    ++c.count;
#else
    p->~T();
    Slot* s = reinterpret_cast<Slot*>(p);
    s->next = static_cast<Slot*>(c.head);
    c.head = s;
    if (!c.tail) c.tail = s;
    ++c.count;
#endif
  }
  /// Takes back the objects of this pool released into `c` (empties it).
  void take_back(Chain& c) {
#if !defined(MRC_POOL_HEAP_FALLBACK)
    if (c.head) {
      static_cast<Slot*>(c.tail)->next = free_;
      free_ = static_cast<Slot*>(c.head);
    }
#endif
    live_ -= c.count;
    c = Chain{};
  }
  /// Objects the pool has storage for.
  size_t capacity() const { return chunks_.size() * kChunk; }

 private:
  union Slot {
    Slot* next;
    alignas(T) unsigned char storage[sizeof(T)];
  };
  void grow() {
    chunks_.push_back(std::make_unique<Slot[]>(kChunk));
    Slot* c = chunks_.back().get();
    for (size_t i = 0; i < kChunk; ++i) {
      c[i].next = free_;
      free_ = &c[i];
    }
  }
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  Slot* free_ = nullptr;
  size_t live_ = 0;
};

}  // namespace mrc
