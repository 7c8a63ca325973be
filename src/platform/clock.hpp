// SPDX-License-Identifier: BSD-2-Clause
// Monotonic clock in integer picoseconds.
//
// The core never reads a clock; the runtime reads one of these and passes
// `Time now` in. CLOCK_MONOTONIC never jumps (NTP slews it, never steps it)
// and does not count suspend time.
#pragma once

#include <cstdint>

#include "util/time.hpp"

namespace mrc::platform {

/// CLOCK_MONOTONIC now, as picoseconds since the kernel's monotonic epoch
/// (roughly boot). Never fails on Linux. Resolution is 1 ns; cost is a vDSO
/// call (~20 ns).
Time monotonic_now();

/// CLOCK_REALTIME now, as nanoseconds since the Unix epoch (wall-clock
/// time, which may jump; for timestamps people read, such as capture files,
/// never for protocol timing). Never fails on Linux.
uint64_t realtime_ns();

/// CPU time consumed so far by the calling thread (CLOCK_THREAD_CPUTIME_ID),
/// user + system. For benchmarks and per-thread load reports.
Duration thread_cpu_time();

/// CPU time consumed so far by the whole process (CLOCK_PROCESS_CPUTIME_ID).
Duration process_cpu_time();

/// A monotonic clock whose time 0 is the moment it was constructed (for the
/// runtime: when the device opened), so core times stay small and readable
/// in logs. Copyable; copies share the same origin.
class MonotonicClock {
 public:
  /// Rebases at construction: `now()` returns Time::zero() at this instant.
  MonotonicClock();
  /// Time since construction, >= 0 and non-decreasing across calls.
  Time now() const { return Time::zero() + (monotonic_now() - origin_); }
  /// The raw `monotonic_now()` value that maps to time 0.
  Time origin() const { return origin_; }
  /// Converts a raw `monotonic_now()` reading (e.g. a kernel timestamp) to this clock.
  Time from_raw(Time raw) const { return Time::zero() + (raw - origin_); }
  /// Converts a time of this clock back to a raw `monotonic_now()` value.
  Time to_raw(Time t) const { return origin_ + (t - Time::zero()); }

 private:
  Time origin_;
};

}  // namespace mrc::platform
