// SPDX-License-Identifier: BSD-2-Clause
// A mutex that spins briefly before it sleeps, for locks held for well
// under a microsecond by threads that usually run on other cores.
//
// The software device's engine lock is taken by the engine thread and by
// application threads posting work; each holder keeps it for one core call.
// A plain std::mutex puts a contending thread to sleep in the kernel and the
// holder pays a futex wake-up on unlock: on 2 cores a 1 MiB write_bw client
// did that about 8,000 times a second, each time preempting the peer
// process. Spinning for about as long as such a section lasts first turns
// almost all of those into a few hundred nanoseconds of waiting (glibc's
// PTHREAD_MUTEX_ADAPTIVE_NP does the same; std::mutex cannot ask for it).
#pragma once

#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mrc {

class SpinThenBlockMutex {
 public:
  void lock() {
    for (int i = 0; i < kSpins; ++i) {
      if (m_.try_lock()) return;
      relax();
    }
    m_.lock();
  }
  bool try_lock() { return m_.try_lock(); }
  void unlock() { m_.unlock(); }

 private:
  // About a microsecond of pause instructions on current x86 cores.
  static constexpr int kSpins = 64;
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  std::mutex m_;
};

}  // namespace mrc
