// SPDX-License-Identifier: BSD-2-Clause
// Applying mrcctl's controller file (ctl_file.hpp) to a device through
// <mrc_ctl.h>: what `mrcctl apply FILE` does, and what mrc_write_bw /
// mrc_write_lat do with --ctl FILE. A library of its own (mrc::ctl_apply)
// because it needs the C API (mrc::api), which the file reader (mrc::ctl_file,
// also used by the simulator) must not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mrcctl/ctl_file.hpp"

struct mrc_context;

namespace mrcctl {

/// The profile ids apply_ctl_file() configured, in the file's order.
struct AppliedIds {
  std::vector<uint64_t> formats;
  std::vector<uint64_t> ev_profiles;
  std::vector<uint64_t> cc_profiles;
};

/// Configures, on the device of `ctx` (not owned; must stay valid for the
/// call), every [[format]], then every [[ev_profile]] (mode, format, count,
/// fields, its EXP EVs each GOOD, then min_active and the event mask when
/// it goes online), then every [[cc_profile]] of `f`, in that order, with
/// mrc_ctl_modify_ev_fmt_profile / mrc_ctl_modify_ev_profile /
/// mrc_ctl_modify_cc_profile. A profile whose `state` is "offline" is
/// configured and left OFFLINE. Stops at the first refused call: returns
/// false with `why` = "<kind> <id>: <step>: <strerror> (<errno>)" (e.g.
/// "ev_profile 1: EV 2:49152: Invalid argument (22)"); what was applied
/// before it stays applied. `applied` (may be NULL) receives the ids that
/// were configured.
bool apply_ctl_file(mrc_context* ctx, const CtlFile& f, std::string& why, AppliedIds* applied = nullptr);

/// True if `id` is 0 (the device's default profile) or an [[ev_profile]] of `f`.
bool defines_ev_profile(const CtlFile& f, uint64_t id);
/// True if `id` is 0 (the device's default profile) or a [[cc_profile]] of `f`.
bool defines_cc_profile(const CtlFile& f, uint64_t id);

}  // namespace mrcctl
