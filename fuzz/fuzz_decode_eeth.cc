// SPDX-License-Identifier: BSD-2-Clause
// libFuzzer target: wire::decode<Eeth> on arbitrary bytes must either report
// truncation or round-trip to a fixed point (see fuzz_common.hpp).
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t enc[mrc::wire::Eeth::kSize];
  mrc::fuzz::check_header_roundtrip<mrc::wire::Eeth>({data, size}, enc);
  return 0;
}
