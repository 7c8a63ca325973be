// SPDX-License-Identifier: BSD-2-Clause
// libFuzzer target: wire::decode<Bth> on arbitrary bytes must either report
// truncation or round-trip to a fixed point (see fuzz_common.hpp).
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t enc[mrc::wire::Bth::kSize];
  mrc::fuzz::check_header_roundtrip<mrc::wire::Bth>({data, size}, enc);
  return 0;
}
