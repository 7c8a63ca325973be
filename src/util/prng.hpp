// SPDX-License-Identifier: BSD-2-Clause
// Seeded pseudo-random number generator (xoshiro256**, seeded by splitmix64).
//
// Randomness is an input to the core: every endpoint, and every simulator
// stream, owns a Prng derived from one user seed, so a run with the same seed
// reproduces bit for bit. Never use a global or time-seeded generator.
#pragma once

#include <cstdint>

namespace mrc {

class Prng {
 public:
  /// Seeds the four state words from `seed` through splitmix64 (any seed,
  /// including 0, gives a valid non-zero state).
  explicit Prng(uint64_t seed = 0x6d72632d73656564ull) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s_) w = splitmix64(x);
  }

  /// A child generator for an independent stream `stream_id`: same parent
  /// seed and id always give the same child, and the parent is not advanced.
  Prng derive(uint64_t stream_id) const {
    uint64_t x = s_[0] ^ (s_[3] * 0x9e3779b97f4a7c15ull) ^ splitmix_const(stream_id);
    return Prng(splitmix64(x));
  }

  /// Next 64 random bits.
  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  uint32_t next_u32() { return static_cast<uint32_t>(next_u64() >> 32); }

  /// Uniform integer in [0, bound) without modulo bias (Lemire's method).
  /// `bound` must be > 0.
  uint64_t below(uint64_t bound) {
    U128 m = static_cast<U128>(next_u64()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<U128>(next_u64()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  /// Uniform double in [0, 1).
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  /// True with probability p.
  bool chance(double p) { return uniform() < p; }

 private:
  // __extension__ keeps -Wpedantic (and so -Werror builds) quiet about __int128.
  __extension__ using U128 = unsigned __int128;
  static constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static constexpr uint64_t splitmix_const(uint64_t v) {
    v += 0x9e3779b97f4a7c15ull;
    v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
    v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
    return v ^ (v >> 31);
  }
  static uint64_t splitmix64(uint64_t& x) {
    x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

}  // namespace mrc
