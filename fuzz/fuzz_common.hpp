// SPDX-License-Identifier: BSD-2-Clause
// Shared checks for the libFuzzer targets.
//
// Every decoder target asserts the same two properties of the codecs:
//  - decode -> encode -> decode -> encode is a fixed point (the second
//    encoding equals the first), and
//  - encoding a decoded header sets no bit the input did not have (fields copy
//    bits, reserved bits are written as zero), so nothing is invented.
// A failed check prints what broke and aborts, which libFuzzer records as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "wire/headers.hpp"

#define MRC_FUZZ_CHECK(cond)                                                         \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

namespace mrc::fuzz {

/// True if every bit set in `out` is also set in `in` (both `n` bytes).
inline bool bits_subset(const uint8_t* out, const uint8_t* in, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if ((out[i] & static_cast<uint8_t>(~in[i])) != 0) return false;
  return true;
}

/// Checks decode<H> on `in`: a short input must be rejected as truncated; a
/// long-enough one must round-trip to a fixed point. Returns whether it
/// decoded; if so `enc1` holds the encoding.
template <class H>
bool check_header_roundtrip(std::span<const uint8_t> in, uint8_t (&enc1)[H::kSize]) {
  auto d1 = wire::decode<H>(in);
  if (!d1.ok()) {
    MRC_FUZZ_CHECK(d1.error() == Errc::truncated);
    MRC_FUZZ_CHECK(in.size() < H::kSize);
    return false;
  }
  MRC_FUZZ_CHECK(in.size() >= H::kSize);
  wire::encode(*d1, enc1);
  MRC_FUZZ_CHECK(bits_subset(enc1, in.data(), H::kSize));
  auto d2 = wire::decode<H>(std::span<const uint8_t>(enc1, H::kSize));
  MRC_FUZZ_CHECK(d2.ok());
  uint8_t enc2[H::kSize];
  wire::encode(*d2, enc2);
  MRC_FUZZ_CHECK(std::memcmp(enc1, enc2, H::kSize) == 0);
  return true;
}

}  // namespace mrc::fuzz
