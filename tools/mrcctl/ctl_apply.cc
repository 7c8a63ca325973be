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

// The file describes formats and EV profiles as the controller model of
// reference 4.2 (format widths; EV fields with fixed bits, bounds and
// masks; compact EVs), mrc-sim's model. OCP's API keeps the bounds in the
// format (one byte each, no fixed bits inside a field) and names EXPLICIT
// EVs by their wire value; these turn the first into the second, or say
// why the file's profile has no OCP form.

// OCP format fields for format `f` from the "gen" EV profile of the file
// that uses it (if any): its leading fields without mask bits are the
// fixed prefix (their value in `prefix`, most significant bit first); each
// other field is a constant (no mask: min = max = init) or draws from
// [min, max] (init 0, mask the low bits max needs).
bool ocp_format(const CtlFile& file, const FormatSpec& f, std::vector<mrc_ctl_ev_fmt_field>& out, int& prefix_bits,
                std::string& why) {
  out.clear();
  prefix_bits = 0;
  const EvProfileSpec* gen = nullptr;
  for (const auto& p : file.ev_profiles)
    if (p.mode == MRC_CTL_EV_MODE_SRV6_GENERATED && p.format == f.id) gen = &p;
  if (!gen) {
    for (uint32_t w : f.widths) out.push_back(mrc_ctl_ev_fmt_field{static_cast<uint8_t>(w), 0, 0});
    return true;
  }
  size_t i = 0;
  for (; i < gen->fields.size() && gen->fields[i].mask == 0; ++i) prefix_bits += static_cast<int>(f.widths[i]);
  for (; i < gen->fields.size(); ++i) {
    const FieldSpec& x = gen->fields[i];
    const uint8_t w = static_cast<uint8_t>(f.widths[i]);
    if (x.mask == 0 && x.init <= 255) {
      out.push_back(mrc_ctl_ev_fmt_field{w, static_cast<uint8_t>(x.init), static_cast<uint8_t>(x.init)});
      continue;
    }
    const bool low_mask = (x.mask & (x.mask + 1)) == 0 && x.mask <= 255;
    if (x.init != 0 || !low_mask || x.max > 255)
      return fail(why, fmt::format("format {}: field {} of ev_profile {} (init {:#x}, mask {:#x}, max {}) has no form in "
                                   "OCP's format fields (values 0..255 in the low bits, no fixed bits in a field)",
                                   f.id, i, gen->id, x.init, x.mask, x.max));
    out.push_back(mrc_ctl_ev_fmt_field{w, static_cast<uint8_t>(x.min), static_cast<uint8_t>(x.max)});
  }
  for (; i < f.widths.size(); ++i) out.push_back(mrc_ctl_ev_fmt_field{static_cast<uint8_t>(f.widths[i]), 0, 0});
  return true;
}

// An "exp" profile over an SRv6 format as SRV6_COMP_EXPLICIT's srv6_comp:
// each field's init and mask, right-aligned in its format field, laid end
// to end into a 128-bit template and a 128-bit mask.
bool ocp_template(const FormatSpec& fm, const EvProfileSpec& p, uint8_t (&comp)[MRC_CTL_EV_MAX_BYTES], std::string& why) {
  std::fill(std::begin(comp), std::end(comp), uint8_t{0});
  uint32_t bit = 0;
  for (size_t i = 0; i < fm.widths.size(); ++i) {
    const FieldSpec x = i < p.fields.size() ? p.fields[i] : FieldSpec{};
    for (uint32_t b = fm.widths[i]; b-- > 0; ++bit) {
      if (bit >= 128) return fail(why, fmt::format("ev_profile {}: format {} is wider than an address", p.id, fm.id));
      if (x.init >> b & 1u) comp[bit / 8] |= static_cast<uint8_t>(0x80u >> (bit % 8));
      if (x.mask >> b & 1u) comp[16 + bit / 8] |= static_cast<uint8_t>(0x80u >> (bit % 8));
    }
  }
  return true;
}

// The prefix of a "gen" profile (its leading fields without mask bits,
// each right-aligned in its format field) as SRV6_COMP bytes.
void ocp_prefix(const CtlFile& file, const EvProfileSpec& p, uint8_t (&comp)[MRC_CTL_EV_MAX_BYTES]) {
  std::fill(std::begin(comp), std::end(comp), uint8_t{0});
  const auto fm = std::find_if(file.formats.begin(), file.formats.end(), [&](const FormatSpec& x) { return x.id == p.format; });
  if (fm == file.formats.end()) return;
  uint32_t bit = 0;
  for (size_t i = 0; i < p.fields.size() && i < fm->widths.size(); ++i) {
    const FieldSpec& x = p.fields[i];
    if (x.mask != 0) break;
    for (uint32_t b = fm->widths[i]; b-- > 0 && bit < 8 * MRC_CTL_EV_MAX_BYTES; ++bit)
      if (x.init >> b & 1u) comp[bit / 8] |= static_cast<uint8_t>(0x80u >> (bit % 8));
  }
}

}  // namespace

bool apply_ctl_file(mrc_context* ctx, const CtlFile& f, std::string& why, AppliedIds* applied) {
  AppliedIds ids;
  for (const auto& s : f.formats) {
    std::vector<mrc_ctl_ev_fmt_field> fields;
    int prefix = 0;
    if (!ocp_format(f, s, fields, prefix, why)) return false;
    mrc_ctl_ev_fmt_profile_attr a{};
    a.profile_state = MRC_CTL_PROFILE_OFFLINE;
    a.ev_fmt_mode = s.mode == kFmtSrv6 ? MRC_CTL_EV_FMT_MODE_SRV6_GENERATED : MRC_CTL_EV_FMT_MODE_GENERATED;
    a.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_MODIFY_FIELDS;
    a.ev_fmt_op.modify_fmt_fields = {fields.data(), static_cast<int>(fields.size()), prefix};
    constexpr int kConfigure = MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE | MRC_CTL_EV_FMT_PROFILE_OP;
    if (int rc = mrc_ctl_modify_ev_fmt_profile(ctx, s.id, &a, kConfigure))
      return fail(why, fmt::format("format {}: configuring: {}", s.id, errno_text(-rc)));  // a negative errno
    if (s.online) {
      a.profile_state = MRC_CTL_PROFILE_ONLINE;
      if (int rc = mrc_ctl_modify_ev_fmt_profile(ctx, s.id, &a, MRC_CTL_EV_FMT_PROFILE_STATE))
        return fail(why, fmt::format("format {}: going online: {}", s.id, errno_text(-rc)));
    }
    ids.formats.push_back(s.id);
    if (applied) applied->formats = ids.formats;
  }
  for (const auto& s : f.ev_profiles) {
    mrc_ctl_ev_profile_attr a{};
    a.profile_state = MRC_CTL_PROFILE_OFFLINE;
    a.ev_mode = static_cast<mrc_ctl_ev_mode>(s.mode);
    a.ev_fmt_profile_id = s.format;
    a.ev_count = s.count;
    int mask = MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE;
    if (s.mode != MRC_CTL_EV_MODE_AUTO) mask |= MRC_CTL_EV_PROFILE_COUNT;
    if (s.mode == MRC_CTL_EV_MODE_SRV6_GENERATED) {
      mask |= MRC_CTL_EV_PROFILE_FMT_ID | MRC_CTL_EV_PROFILE_SRV6_COMP;
      ocp_prefix(f, s, a.srv6_comp);
    }
    const auto fm = std::find_if(f.formats.begin(), f.formats.end(), [&](const FormatSpec& x) { return x.id == s.format; });
    if (s.mode == MRC_CTL_EV_MODE_EXPLICIT && fm != f.formats.end() && fm->mode == kFmtSrv6) {
      // An "exp" profile of SRv6 carriers: OpenMRC's SRV6_COMP_EXPLICIT, its
      // fields as an address template and mask (srv6_comp), its EVs compact.
      a.ev_mode = MRC_CTL_EV_MODE_SRV6_COMP_EXPLICIT;
      mask |= MRC_CTL_EV_PROFILE_FMT_ID | MRC_CTL_EV_PROFILE_SRV6_COMP;
      if (!ocp_template(*fm, s, a.srv6_comp, why)) return false;
    } else if (s.mode == MRC_CTL_EV_MODE_EXPLICIT) {
      // OCP's EXPLICIT EVs are wire values (the UDP source port): the
      // file's compact EVs are those only through one full-width field.
      const bool identity = fm != f.formats.end() && fm->mode != kFmtSrv6 && fm->widths.size() == 1 &&
                            s.fields.size() == 1 && s.fields[0].init == 0 && s.fields[0].width == fm->widths[0] &&
                            s.fields[0].mask == (uint64_t{1} << fm->widths[0]) - 1;
      if (!identity)
        return fail(why, fmt::format("ev_profile {}: an \"exp\" profile needs a \"udp\" or \"stev\" format of one field "
                                     "and one field of that width with a full mask and init 0 (its EVs are then the "
                                     "UDP source ports OCP's EXPLICIT mode names)",
                                     s.id));
    }
    if (int rc = mrc_ctl_modify_ev_profile(ctx, s.id, &a, mask))
      return fail(why, fmt::format("ev_profile {}: configuring: {}", s.id, errno_text(rc)));
    // An EXPLICIT array starts UNPOPULATED: each listed EV replaces one entry.
    for (const auto& e : s.evs) {
      mrc_ctl_ev_profile_attr r{};
      r.ev_op.op = MRC_CTL_EV_OP_REPLACE_EV;
      const auto v = static_cast<uint32_t>(e.value);
      std::memcpy(r.ev_op.replace_ev.new_ev.val, &v, sizeof v);
      r.ev_op.replace_ev.new_ev.port = e.port;
      if (int rc = mrc_ctl_modify_ev_profile(ctx, s.id, &r, MRC_CTL_EV_PROFILE_EV_OP))
        return fail(why, fmt::format("ev_profile {}: EV {}:{}: {}", s.id, e.port, e.value, errno_text(rc)));
    }
    if (s.online) {
      a = mrc_ctl_ev_profile_attr{};
      a.profile_state = MRC_CTL_PROFILE_ONLINE;
      a.ev_min_active = s.min_active;
      a.ev_event_mask = static_cast<int>(s.event_mask);
      if (int rc = mrc_ctl_modify_ev_profile(
              ctx, s.id, &a, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MIN_ACTIVE | MRC_CTL_EV_PROFILE_EVENT_MASK))
        return fail(why, fmt::format("ev_profile {}: going online: {}", s.id, errno_text(rc)));
    }
    ids.ev_profiles.push_back(s.id);
    if (applied) applied->ev_profiles = ids.ev_profiles;
  }
  for (const auto& s : f.cc_profiles) {
    mrc_ctl_cc_nscc_cfg cfg{};
    cfg.base_rtt = s.base_rtt_ns;
    cfg.target_delay = s.target_qdelay_ns;
    cfg.max_cwnd = s.max_cwnd_bytes;
    mrc_ctl_cc_profile_attr a{};
    a.profile_state = MRC_CTL_PROFILE_OFFLINE;
    a.cc_algorithm = s.nscc ? "uet-1.0-nscc" : nullptr;
    if (int rc = mrc_ctl_modify_cc_profile(ctx, s.id, &a, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM))
      return fail(why, fmt::format("cc_profile {}: configuring: {}", s.id, errno_text(rc)));
    if (s.online) {
      a.profile_state = MRC_CTL_PROFILE_ONLINE;
      a.cc_config = &cfg;
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
