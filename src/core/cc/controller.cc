// SPDX-License-Identifier: BSD-2-Clause
#include "core/cc/controller.hpp"

#include "core/cc/dcqcn.hpp"
#include "core/cc/fixed_window.hpp"
#include "core/cc/nscc.hpp"

namespace mrc::core::cc {

std::unique_ptr<Controller> make_controller(const CcProfile& profile, const CcContext& ctx) {
  // validate() admits only the algorithms built here.
  if (profile.algorithm == kCcFixed) return std::make_unique<FixedWindow>(profile.fixed, ctx);
  if (profile.algorithm == kCcDcqcn) return std::make_unique<Dcqcn>(profile.dcqcn, ctx);
  return std::make_unique<Nscc>(profile.nscc, ctx);
}

}  // namespace mrc::core::cc
