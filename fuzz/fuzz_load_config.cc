// SPDX-License-Identifier: BSD-2-Clause
// libFuzzer target: mrc-sim's TOML scenario loader on arbitrary text must
// either accept it or reject it with a message naming the file and line,
// never crash, hang or leak.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mrc-sim/config_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mrc::sim::tool::SimOptions o;
  std::string why;
  const mrc::Status s = mrc::sim::tool::load_config_text(text, "fuzz.toml", &o, &why);
  if (!s && why.rfind("fuzz.toml", 0) != 0) {
    std::fprintf(stderr, "rejection does not name the file: '%s'\n", why.c_str());
    std::abort();
  }
  return 0;
}
