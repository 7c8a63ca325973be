// SPDX-License-Identifier: BSD-2-Clause
// What placing a received payload costs with the device's fault guard
// (platform::guarded_copy: a sigsetjmp around the memcpy, so that a region
// the application unmapped fails the WRITE instead of the process) against
// a plain memcpy, per 4 KiB packet into a 64 MiB region walked in order
// (the destination leaves the cache, as a large WRITE's does).
//
//   build/dev/bench/bench_place --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "platform/memory_guard.hpp"

namespace {

constexpr size_t kPacket = 4096;
constexpr size_t kRegion = 64u << 20;

template <bool kGuarded>
void BM_Place(benchmark::State& st) {
  mrc::platform::install_fault_guard();
  std::vector<uint8_t> src(kPacket, 0x5a);
  std::vector<uint8_t> region(kRegion, 0);
  size_t off = 0;
  for (auto _ : st) {
    if constexpr (kGuarded) {
      benchmark::DoNotOptimize(mrc::platform::guarded_copy(region.data() + off, src.data(), kPacket));
    } else {
      std::memcpy(region.data() + off, src.data(), kPacket);
    }
    benchmark::ClobberMemory();
    off = (off + kPacket) % kRegion;
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * kPacket));
}
BENCHMARK(BM_Place<false>)->Name("BM_PlaceMemcpy");
BENCHMARK(BM_Place<true>)->Name("BM_PlaceGuarded");

}  // namespace

BENCHMARK_MAIN();
