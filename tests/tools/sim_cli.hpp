// SPDX-License-Identifier: BSD-2-Clause
// Test support, header-only, for the mrc-sim command-line tests
// (flags_test.cc, pin_test.cc): parse an argument list as mrc-sim would.
#pragma once

#include <string>
#include <vector>

#include "mrc-sim/options.hpp"

namespace mrc::sim::tool {

struct Parsed {
  int rc;             ///< parse_command_line's result (-1: run)
  std::string error;  ///< its message
  SimOptions o;
};

/// parse_command_line over "mrc-sim" followed by `args`.
inline Parsed parse(std::vector<std::string> args) {
  args.insert(args.begin(), "mrc-sim");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  Parsed p;
  p.rc = parse_command_line(static_cast<int>(argv.size()), argv.data(), &p.o, &p.error);
  return p;
}

}  // namespace mrc::sim::tool
