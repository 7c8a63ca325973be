#include "platform/clock.hpp"

#include <time.h>

namespace mrc::platform {

Time monotonic_now() {
  timespec ts{};
  // CLOCK_MONOTONIC cannot fail with a valid pointer; ignore the return.
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Time::from_ps(static_cast<int64_t>(ts.tv_sec) * 1'000'000'000'000 +
                       static_cast<int64_t>(ts.tv_nsec) * 1'000);
}

MonotonicClock::MonotonicClock() : origin_(monotonic_now()) {}

}  // namespace mrc::platform
