// SPDX-License-Identifier: BSD-2-Clause
// The profile tables of mrcctl's controller file ([[format]], [[ev_profile]],
// [[cc_profile]], ctl_file.hpp) read out of a TOML document another tool
// has parsed: mrc-sim's scenario files describe the simulated NICs'
// controller profiles in the same shape, with the same checks and
// messages.
#pragma once

#include <string>
#include <toml++/toml.h>

#include "mrcctl/ctl_file.hpp"

namespace mrcctl {

/// Reads the [[format]], [[ev_profile]] and [[cc_profile]] tables of `root`
/// (other keys are the caller's business) into `out`, checked as
/// parse_ctl_file() checks them. False with "<name>:<line>: <field>: <what
/// is wrong>" in `why`.
bool read_ctl_tables(const toml::table& root, const std::string& name, CtlFile& out, std::string& why);

}  // namespace mrcctl
