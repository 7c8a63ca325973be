// SPDX-License-Identifier: BSD-2-Clause
#include "mrcctl/ctl_apply.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "mrc.h"
#include "mrc_ctl.h"

namespace mrcctl {

namespace {

std::string errno_text(int e) { return fmt::format("{} ({})", std::strerror(e), e); }

bool fail(std::string& why, std::string text) {
  why = std::move(text);
  return false;
}

}  // namespace

bool apply_ctl_file(mrc_context* ctx, const CtlFile& f, std::string& why, AppliedIds* applied) {
  AppliedIds ids;
  for (const auto& s : f.formats) {
    std::vector<mrc_ctl_ev_field> fields;
    for (uint32_t w : s.widths) fields.push_back(mrc_ctl_ev_field{w, 0, 0, 0, 0});
    mrc_ctl_ev_fmt_profile_attr a{};
    a.state = MRC_CTL_PROFILE_OFFLINE;
    a.mode = s.mode;
    a.fields_op = {MRC_CTL_MODIFY_FIELDS, fields.data(), static_cast<uint32_t>(fields.size())};
    constexpr int kConfigure = MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE | MRC_CTL_EV_FMT_PROFILE_OP;
    if (int rc = mrc_ctl_modify_ev_fmt_profile(ctx, s.id, &a, kConfigure))
      return fail(why, fmt::format("format {}: configuring: {}", s.id, errno_text(-rc)));  // a negative errno
    if (s.online) {
      a.state = MRC_CTL_PROFILE_ONLINE;
      if (int rc = mrc_ctl_modify_ev_fmt_profile(ctx, s.id, &a, MRC_CTL_EV_FMT_PROFILE_STATE))
        return fail(why, fmt::format("format {}: going online: {}", s.id, errno_text(-rc)));
    }
    ids.formats.push_back(s.id);
    if (applied) applied->formats = ids.formats;
  }
  for (const auto& s : f.ev_profiles) {
    std::vector<mrc_ctl_ev_field> fields;
    for (const auto& x : s.fields) fields.push_back(mrc_ctl_ev_field{x.width, x.init, x.min, x.max, x.mask});
    mrc_ctl_ev_profile_attr a{};
    a.state = MRC_CTL_PROFILE_OFFLINE;
    a.ev_mode = s.mode;
    a.ev_fmt_profile_id = s.format;
    a.ev_count = s.count;
    a.ev_fields_op = {MRC_CTL_MODIFY_FIELDS, fields.data(), static_cast<uint32_t>(fields.size())};
    int mask = MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE;
    if (s.mode != MRC_CTL_EV_MODE_AUTO)
      mask |= MRC_CTL_EV_PROFILE_FMT_ID | MRC_CTL_EV_PROFILE_COUNT | MRC_CTL_EV_PROFILE_EV_FIELDS_OP;
    if (int rc = mrc_ctl_modify_ev_profile(ctx, s.id, &a, mask))
      return fail(why, fmt::format("ev_profile {}: configuring: {}", s.id, errno_text(rc)));
    // An EXP array starts UNPOPULATED: each listed EV replaces one entry.
    const uint32_t bits = compact_bits(s.fields);
    for (const auto& e : s.evs) {
      mrc_ctl_ev_op_entry en{};
      encode_compact(e.value, bits, en.ev_new.val);
      en.ev_new.port = e.port;
      en.state = MRC_CTL_EV_GOOD;
      mrc_ctl_ev_profile_attr r{};
      r.ev_op = {MRC_CTL_EV_OP_REPLACE_EV, &en, 1};
      if (int rc = mrc_ctl_modify_ev_profile(ctx, s.id, &r, MRC_CTL_EV_PROFILE_EV_OP))
        return fail(why, fmt::format("ev_profile {}: EV {}:{}: {}", s.id, e.port, e.value, errno_text(rc)));
    }
    if (s.online) {
      a = mrc_ctl_ev_profile_attr{};
      a.state = MRC_CTL_PROFILE_ONLINE;
      a.ev_min_active = s.min_active;
      a.ev_event_mask = s.event_mask;
      if (int rc = mrc_ctl_modify_ev_profile(
              ctx, s.id, &a, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MIN_ACTIVE | MRC_CTL_EV_PROFILE_EVENT_MASK))
        return fail(why, fmt::format("ev_profile {}: going online: {}", s.id, errno_text(rc)));
    }
    ids.ev_profiles.push_back(s.id);
    if (applied) applied->ev_profiles = ids.ev_profiles;
  }
  for (const auto& s : f.cc_profiles) {
    mrc_ctl_nscc_config cfg{s.base_rtt_ns, s.target_qdelay_ns, s.max_cwnd_bytes, 0, 0};
    mrc_ctl_cc_profile_attr a{};
    a.state = MRC_CTL_PROFILE_OFFLINE;
    a.algorithm = s.nscc ? "uet-1.0-nscc" : nullptr;
    if (int rc = mrc_ctl_modify_cc_profile(ctx, s.id, &a, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM))
      return fail(why, fmt::format("cc_profile {}: configuring: {}", s.id, errno_text(rc)));
    if (s.online) {
      a.state = MRC_CTL_PROFILE_ONLINE;
      a.config = &cfg;
      const uint32_t m = MRC_CTL_CC_PROFILE_STATE | (s.nscc ? uint32_t{MRC_CTL_CC_PROFILE_CONFIG} : 0u);
      if (int rc = mrc_ctl_modify_cc_profile(ctx, s.id, &a, m))
        return fail(why, fmt::format("cc_profile {}: going online: {}", s.id, errno_text(rc)));
    }
    ids.cc_profiles.push_back(s.id);
    if (applied) applied->cc_profiles = ids.cc_profiles;
  }
  return true;
}

bool defines_ev_profile(const CtlFile& f, uint64_t id) {
  return id == 0 || std::any_of(f.ev_profiles.begin(), f.ev_profiles.end(),
                                [id](const EvProfileSpec& s) { return s.id == id; });
}

bool defines_cc_profile(const CtlFile& f, uint64_t id) {
  return id == 0 || std::any_of(f.cc_profiles.begin(), f.cc_profiles.end(),
                                [id](const CcProfileSpec& s) { return s.id == id; });
}

}  // namespace mrcctl
