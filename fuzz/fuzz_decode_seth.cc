// SPDX-License-Identifier: BSD-2-Clause
// libFuzzer target: a SACK's SETH followed by its CC_STATE. Each must either
// report truncation or round-trip to a fixed point (see fuzz_common.hpp).
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using mrc::wire::CcState;
  using mrc::wire::Seth;
  const std::span<const uint8_t> in(data, size);
  uint8_t seth[Seth::kSize];
  if (!mrc::fuzz::check_header_roundtrip<Seth>(in, seth)) return 0;
  uint8_t cc[CcState::kSize];
  mrc::fuzz::check_header_roundtrip<CcState>(in.subspan(Seth::kSize), cc);
  return 0;
}
