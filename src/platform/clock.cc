// SPDX-License-Identifier: BSD-2-Clause
#include "platform/clock.hpp"

#include <time.h>

namespace mrc::platform {

namespace {
int64_t read_ps(clockid_t id) {
  timespec ts{};
  // These clocks cannot fail with a valid pointer; ignore the return.
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000'000 + static_cast<int64_t>(ts.tv_nsec) * 1'000;
}
}  // namespace

Time monotonic_now() { return Time::from_ps(read_ps(CLOCK_MONOTONIC)); }
Duration thread_cpu_time() { return Duration::ps(read_ps(CLOCK_THREAD_CPUTIME_ID)); }
Duration process_cpu_time() { return Duration::ps(read_ps(CLOCK_PROCESS_CPUTIME_ID)); }

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

MonotonicClock::MonotonicClock() : origin_(monotonic_now()) {}

}  // namespace mrc::platform
