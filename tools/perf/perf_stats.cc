// SPDX-License-Identifier: BSD-2-Clause
// Data patterns (written and verified), and the statistics of a size's
// bandwidth and latency samples.

#include "perf/perf_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace mrc::perf {

// ------------------------------------------------------------------ data

namespace {

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t pattern_word(uint32_t salt, uint64_t index) { return mix64((uint64_t{salt} << 40) ^ index); }

}  // namespace

void fill_pattern(uint8_t* buf, size_t len, uint32_t salt) {
  const size_t words = len / 8;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t w = pattern_word(salt, i);
    std::memcpy(buf + i * 8, &w, 8);
  }
  if (const size_t tail = len % 8; tail != 0) {
    const uint64_t w = pattern_word(salt, words);
    std::memcpy(buf + words * 8, &w, tail);
  }
}

std::optional<size_t> check_pattern(const uint8_t* buf, size_t len, uint32_t salt) {
  const size_t words = (len + 7) / 8;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t w = pattern_word(salt, i);
    uint8_t want[8];
    std::memcpy(want, &w, 8);
    const size_t n = std::min<size_t>(8, len - i * 8);
    if (std::memcmp(buf + i * 8, want, n) != 0) {
      for (size_t j = 0; j < n; ++j)
        if (buf[i * 8 + j] != want[j]) return i * 8 + j;
    }
  }
  return std::nullopt;
}

uint32_t salt_for(uint64_t size, size_t index) {
  return static_cast<uint32_t>(mix64(size ^ (uint64_t{index} << 32)) | 1u);
}

// ------------------------------------------------------------------ statistics

double peak_rate(const std::vector<RateSample>& s) {
  if (s.size() < 2) return 0;
  const auto rate = [](const RateSample& a, const RateSample& b) {
    const int64_t dt = b.t_ns - a.t_ns;
    return dt > 0 ? static_cast<double>(b.bytes - a.bytes) * 1e9 / static_cast<double>(dt) : 0.0;
  };
  double best = rate(s.front(), s.back());
  const size_t k = std::max<size_t>(1, (s.size() - 1) / 20);
  for (size_t i = 0; i + k < s.size(); ++i) best = std::max(best, rate(s[i], s[i + k]));
  return best;
}

LatRow lat_stats(uint64_t bytes, std::vector<double>& v) {
  LatRow r;
  r.bytes = bytes;
  r.iters = v.size();
  if (v.empty()) return r;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  r.t_min = v.front();
  r.t_max = v.back();
  r.t_typical = v[n / 2];
  double sum = 0;
  for (double x : v) sum += x;
  r.t_avg = sum / static_cast<double>(n);
  double sq = 0;
  for (double x : v) sq += (x - r.t_avg) * (x - r.t_avg);
  r.t_stdev = std::sqrt(sq / static_cast<double>(n));
  const auto rank = [&](double p) {
    const auto idx = static_cast<size_t>(std::ceil(p * static_cast<double>(n)));
    return v[std::clamp<size_t>(idx, 1, n) - 1];
  };
  r.p99 = rank(0.99);
  r.p999 = rank(0.999);
  return r;
}

std::vector<double> bw_values(const BwRow& r) { return {r.bw_peak, r.bw_avg, r.msg_rate}; }

BwRow bw_row_from(const SizeEnd& e) {
  BwRow r;
  r.bytes = e.size;
  r.iters = e.iters;
  if (e.values.size() >= 3) {
    r.bw_peak = e.values[0];
    r.bw_avg = e.values[1];
    r.msg_rate = e.values[2];
  }
  return r;
}

std::vector<double> lat_values(const LatRow& r) {
  return {r.t_min, r.t_max, r.t_typical, r.t_avg, r.t_stdev, r.p99, r.p999};
}

LatRow lat_row_from(const SizeEnd& e) {
  LatRow r;
  r.bytes = e.size;
  r.iters = e.iters;
  if (e.values.size() >= 7) {
    r.t_min = e.values[0];
    r.t_max = e.values[1];
    r.t_typical = e.values[2];
    r.t_avg = e.values[3];
    r.t_stdev = e.values[4];
    r.p99 = e.values[5];
    r.p999 = e.values[6];
  }
  return r;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace mrc::perf
