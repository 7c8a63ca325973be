// SPDX-License-Identifier: BSD-2-Clause
// Controller profiles of a simulation (issue 11, "scenario files can
// configure profiles"): the EV format, EV and CC profiles each host's
// controller sets up before the run, and which of them the QPs of the MRC
// transports use.
//
// Every host runs its own core::ctl::Controller (one privileged controller
// per node, reference 6.3), with Limits for the simulated NIC
// (controller_limits()). The plan is applied to it exactly as a controller
// would: each profile INIT -> OFFLINE with its attributes, EXP entries
// replaced, then -> ONLINE unless it stays offline. So the core's state
// machines, limits and errors decide what is valid; nothing is checked
// twice here.
//
// What a QP of an `mrc*` transport takes from the profiles (RoCE QPs take
// nothing: the profiles are MRC's):
//  - EV profile, AUTO: the simulator's own EV set (Fabric::make_evs: SRv6
//    paths spread over the T0 uplinks, or random entropy under ECMP), with
//    `count` EVs per QP split equally over the planes (0 = evs_per_plane
//    per plane) and half of each plane's active, and the profile's
//    ev_min_active (Controller::to_endpoint_profile).
//  - EV profile, EXP or GEN: exactly the controller's array
//    (Controller::to_endpoint_profile): every EV active, the profile's
//    ev_min_active; each entry's value is what the simulator's fabric
//    reads as the EV (the compact EV in SRv6 format mode, the expanded wire
//    EV in UDP and STEV modes; under SRv6 routing its low bits pick the T0
//    uplink, fabric.hpp), its 1-based port the plane. Listing EVs on some
//    ports only keeps the QPs off the other planes.
//  - The event mask: EV events into GOOD or ASSUMED_BAD (and held
//    demotions, as ASSUMED_BAD) of the host's QPs are recorded only if the
//    profile's mask selects them; the controller's own DENIED changes
//    always are.
//  - CC profile: Controller::to_endpoint_cc_profile ("uet-1.0-nscc" with
//    its NSCC settings, "none" = a fixed window) replaces the transport's
//    congestion control on those hosts.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/ctl/profiles.hpp"
#include "util/result.hpp"

namespace mrc::sim {

/// An EV format profile: id, one fmt_mode bit, field widths.
struct CtlFormatSpec {
  uint64_t id = 0;
  uint32_t mode = 0;
  std::vector<uint32_t> widths;
  bool online = true;  ///< false: left OFFLINE
};

/// An EV profile as the controller configures it (reference 6.3.4).
struct CtlEvProfileSpec {
  uint64_t id = 0;
  uint32_t mode = 0;           ///< one ev_mode bit
  uint64_t format = 0;         ///< format profile id (EXP, GEN)
  uint32_t count = 0;          ///< EVs in the array (EXP, GEN); AUTO: EVs per QP, 0 = the simulator's
  uint32_t min_active = 1;     ///< ev_min_active
  uint32_t event_mask = 0;     ///< ev_state kGood / kAssumedBad bits
  std::vector<core::ctl::Field> fields;
  /// EXP: the EVs, (1-based port, compact EV as an integer of the bits the
  /// fields' masks select).
  std::vector<std::pair<uint8_t, uint64_t>> evs;
  bool online = true;
};

/// A CC profile (reference 6.3.5).
struct CtlCcProfileSpec {
  uint64_t id = 0;
  bool nscc = true;            ///< "uet-1.0-nscc"; false: "none" (no congestion control)
  core::NsccConfig config;     ///< zero fields derived (reference 5.5)
  bool online = true;
};

struct ControllerPlan {
  std::vector<CtlFormatSpec> formats;
  std::vector<CtlEvProfileSpec> ev_profiles;
  std::vector<CtlCcProfileSpec> cc_profiles;
  /// The EV profile the MRC QPs of the chosen hosts use; 0 = none (the
  /// transport's own EV set, as without a plan).
  uint64_t ev_profile = 0;
  /// The CC profile they use; 0 = the transport's congestion control.
  uint64_t cc_profile = 0;
  /// Hosts whose QPs use the profiles; empty = every host.
  std::vector<uint32_t> hosts;

  /// Nothing configured: the run is as without a plan.
  bool empty() const { return formats.empty() && ev_profiles.empty() && cc_profiles.empty(); }
  /// True if host `h`'s QPs use the plan's profiles.
  bool applies_to(uint32_t h) const;
};

/// The controller limits of a simulated NIC with `planes` ports: the
/// core's defaults (16 profiles of each kind, 4096 EVs per profile,
/// compact EVs of at most 32 bits) with one EV port per plane.
core::ctl::Limits controller_limits(uint32_t planes);

/// Configures `plan`'s profiles on `ctl`, in order: formats, EV profiles,
/// CC profiles, each INIT -> OFFLINE -> (EXP: REPLACE_EV of every entry)
/// -> ONLINE. A refusal leaves `ctl` partly configured and returns the
/// controller's error; `why` names the profile, the step and the fields it
/// set, e.g. "ev_profile 2: going offline (mode, format, count, fields):
/// refused (E2BIG: too big)".
Status apply_controller_plan(core::ctl::Controller& ctl, const ControllerPlan& plan, std::string* why);

/// Checks a plan for a fabric of `planes` planes and `hosts` hosts before
/// anything runs: applies it to a fresh controller (apply_controller_plan),
/// checks that ev_profile / cc_profile name ONLINE profiles of the plan and
/// that the EV profile is one QPs can use (Controller::to_endpoint_profile:
/// values of at most 32 bits, each value on one port), and that the hosts
/// exist. `why` names the key at fault ("controller.ev_profile: ...").
Status validate_controller_plan(const ControllerPlan& plan, uint32_t planes, uint32_t hosts, std::string* why);

}  // namespace mrc::sim
