// SPDX-License-Identifier: BSD-2-Clause
// libFuzzer target: a whole requester/responder pair of core::Endpoints
// (endpoint_pair.hpp) driven by records that interleave forged and mutated
// packets with the pair's own traffic, checking its invariants after every
// step: no write outside registered regions, no assert or sanitizer report,
// no silent hang, bounded queues, no QP failed by a forged fatal NACK, and
// completions that match the posted work.
//
// Input: one byte selecting the pair's configuration (MTU, initial PSN, CC,
// MPR, retries, secure QPs), then records (RecordOp). Seeds: fuzz_gen_corpus writes
// some from a clean transfer (fuzz/corpus/endpoint/), where the regress_*
// inputs, each a core issue the target once found, are committed by hand.
//
// MRC_FUZZ_ENDPOINT_TRACE=1 prints the records of an input as they run.
#include <cstdlib>
#include <cstring>

#include "endpoint_pair.hpp"

namespace {
std::FILE* g_trace = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // MRC_FUZZ_ENDPOINT_TRACE=1 prints every record as it is applied (to read a reproducer).
  const char* trace = std::getenv("MRC_FUZZ_ENDPOINT_TRACE");
  if (trace && *trace && std::strcmp(trace, "0") != 0) g_trace = stderr;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mrc;
  if (size == 0) return 0;
  fuzz::EndpointPair pair(fuzz::PairVariant::from_byte(data[0]));
  fuzz::RecordReader in(data + 1, size - 1);
  // Bounded work per input: a record stream longer than this is cut.
  for (int i = 0; i < 256 && fuzz::apply_record(pair, in, g_trace); ++i) {
  }
  pair.finish(Duration::ms(20));
  if (g_trace)
    std::fprintf(g_trace, "t=%.3f us  done: %llu rounds\n", pair.now().to_us(),
                 static_cast<unsigned long long>(pair.rounds()));
  return 0;
}
