// SPDX-License-Identifier: BSD-2-Clause
// 24-bit PSN and 16-bit MSN serial-number arithmetic.
//
// On the wire PSNs are 24 bits and wrap. Inside the core every sequence
// number is kept unwrapped in 64 bits, so comparisons never wrap; these helpers
// convert at the wire boundary. unwrap() picks the 64-bit value nearest to a
// reference, which is correct while the two are less than 2^23 apart (the MPR
// window is at most 32,640 PSNs).
#pragma once

#include <cstdint>

namespace mrc::wire {

inline constexpr uint32_t kPsnBits = 24;
inline constexpr uint32_t kPsnMask = (1u << kPsnBits) - 1;

/// Low 24 bits of an unwrapped PSN, as carried in BTH.
constexpr uint32_t psn24(uint64_t psn) { return static_cast<uint32_t>(psn) & kPsnMask; }

/// Signed distance a - b in 24-bit serial arithmetic, in [-2^23, 2^23).
constexpr int32_t psn_diff(uint32_t a, uint32_t b) {
  const uint32_t d = (a - b) & kPsnMask;
  return d >= (1u << 23) ? static_cast<int32_t>(d) - (1 << 24) : static_cast<int32_t>(d);
}

/// The unwrapped 64-bit PSN whose low 24 bits are `wire` and that lies
/// nearest to `ref`. Never returns a value below zero.
constexpr uint64_t unwrap_psn(uint64_t ref, uint32_t wire) {
  const int64_t d = psn_diff(wire & kPsnMask, psn24(ref));
  const int64_t r = static_cast<int64_t>(ref) + d;
  return r < 0 ? static_cast<uint64_t>(r + (int64_t{1} << 24)) : static_cast<uint64_t>(r);
}

/// Same for 16-bit sequence numbers (METH MSN/RQMSN).
constexpr uint64_t unwrap16(uint64_t ref, uint16_t wire) {
  const int32_t d = static_cast<int16_t>(static_cast<uint16_t>(wire - static_cast<uint16_t>(ref)));
  const int64_t r = static_cast<int64_t>(ref) + d;
  return r < 0 ? static_cast<uint64_t>(r + 65536) : static_cast<uint64_t>(r);
}

}  // namespace mrc::wire
