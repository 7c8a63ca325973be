// SPDX-License-Identifier: BSD-2-Clause
// Time and Duration: signed 64-bit integer picoseconds.
//
// Every clock value in OpenMRC is one of these two types. The core never reads
// a clock: drivers pass `Time now` in. Picoseconds keep per-byte serialization
// times exact (one byte at 800 Gb/s is 10 ps) and 2^63 ps is 106 days of
// simulated time, far beyond any run.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>

namespace mrc {

/// A span of time in integer picoseconds. Arithmetic is plain integer math.
class Duration {
  // __extension__ keeps -Wpedantic (and so -Werror builds) quiet about __int128.
  __extension__ using U128 = unsigned __int128;

 public:
  constexpr Duration() = default;
  /// Builds a duration from a raw picosecond count.
  static constexpr Duration ps(int64_t v) { return Duration(v); }
  static constexpr Duration ns(int64_t v) { return Duration(v * 1'000); }
  static constexpr Duration us(int64_t v) { return Duration(v * 1'000'000); }
  static constexpr Duration ms(int64_t v) { return Duration(v * 1'000'000'000); }
  static constexpr Duration s(int64_t v) { return Duration(v * 1'000'000'000'000); }
  /// The largest representable duration; used as "never".
  static constexpr Duration infinite() { return Duration(std::numeric_limits<int64_t>::max()); }
  /// Time to serialize `bytes` at `bits_per_second` (rounded up to whole picoseconds).
  static constexpr Duration serialization(uint64_t bytes, uint64_t bits_per_second) {
    // bytes*8e12/bps in 128 bits, so large byte counts cannot overflow.
    const U128 num = static_cast<U128>(bytes) * 8u * 1'000'000'000'000u;
    return Duration(static_cast<int64_t>((num + bits_per_second - 1) / bits_per_second));
  }

  constexpr int64_t count_ps() const { return v_; }
  constexpr double to_ns() const { return static_cast<double>(v_) / 1e3; }
  constexpr double to_us() const { return static_cast<double>(v_) / 1e6; }
  constexpr double to_ms() const { return static_cast<double>(v_) / 1e9; }
  constexpr double to_s() const { return static_cast<double>(v_) / 1e12; }

  constexpr auto operator<=>(const Duration&) const = default;
  constexpr Duration operator+(Duration o) const { return Duration(v_ + o.v_); }
  constexpr Duration operator-(Duration o) const { return Duration(v_ - o.v_); }
  constexpr Duration operator-() const { return Duration(-v_); }
  constexpr Duration operator*(int64_t k) const { return Duration(v_ * k); }
  constexpr Duration operator/(int64_t k) const { return Duration(v_ / k); }
  constexpr int64_t operator/(Duration o) const { return v_ / o.v_; }
  constexpr Duration& operator+=(Duration o) { v_ += o.v_; return *this; }
  constexpr Duration& operator-=(Duration o) { v_ -= o.v_; return *this; }

 private:
  constexpr explicit Duration(int64_t v) : v_(v) {}
  int64_t v_ = 0;
};

/// A point in time: picoseconds since an arbitrary epoch chosen by the driver
/// (simulation start, or CLOCK_MONOTONIC's epoch in the UDP runtime).
class Time {
 public:
  constexpr Time() = default;
  static constexpr Time from_ps(int64_t v) { return Time(v); }
  static constexpr Time zero() { return Time(0); }
  /// A time later than any real event; "no deadline".
  static constexpr Time never() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ps() const { return v_; }
  constexpr double to_us() const { return static_cast<double>(v_) / 1e6; }
  constexpr double to_s() const { return static_cast<double>(v_) / 1e12; }
  constexpr bool is_never() const { return v_ == std::numeric_limits<int64_t>::max(); }

  constexpr auto operator<=>(const Time&) const = default;
  /// Adding to never() saturates at never().
  constexpr Time operator+(Duration d) const {
    if (is_never() || (d.count_ps() > 0 && v_ > std::numeric_limits<int64_t>::max() - d.count_ps()))
      return never();
    return Time(v_ + d.count_ps());
  }
  constexpr Time operator-(Duration d) const { return Time(v_ - d.count_ps()); }
  constexpr Duration operator-(Time o) const { return Duration::ps(v_ - o.v_); }
  constexpr Time& operator+=(Duration d) { *this = *this + d; return *this; }

 private:
  constexpr explicit Time(int64_t v) : v_(v) {}
  int64_t v_ = 0;
};

constexpr Time min(Time a, Time b) { return a < b ? a : b; }
constexpr Time max(Time a, Time b) { return a < b ? b : a; }

}  // namespace mrc
