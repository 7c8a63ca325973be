// SPDX-License-Identifier: BSD-2-Clause
#include "sim/scenario/controller_plan.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mrc::sim {

namespace {

using namespace core::ctl;

/// "E2BIG: ..." for a controller refusal: the errno the C API would return.
std::string refusal(Errc e) {
  const char* name = "EIO";
  switch (to_errno(e)) {
    case EINVAL: name = "EINVAL"; break;
    case EBUSY: name = "EBUSY"; break;
    case E2BIG: name = "E2BIG"; break;
    case ENOENT: name = "ENOENT"; break;
    case EPERM: name = "EPERM"; break;
    case EOPNOTSUPP: name = "EOPNOTSUPP"; break;
    default: break;
  }
  return std::string("refused (") + name + ": " + std::string(to_string(e)) + ")";
}

Status failed(std::string* why, const std::string& what, const char* step, const char* fields, Errc e) {
  if (why) *why = what + ": " + step + " (" + fields + "): " + refusal(e);
  return e;
}

/// What an INIT -> OFFLINE call of an EV profile sets, for the message.
const char* ev_offline_fields(uint32_t mode) {
  return mode == ev_mode::kAuto ? "mode, count" : "mode, format, count, fields";
}

}  // namespace

bool ControllerPlan::applies_to(uint32_t h) const {
  return hosts.empty() || std::find(hosts.begin(), hosts.end(), h) != hosts.end();
}

Limits controller_limits(uint32_t planes) {
  Limits l;
  l.num_ports = planes;
  return l;
}

Status apply_controller_plan(Controller& ctl, const ControllerPlan& plan, std::string* why) {
  for (const CtlFormatSpec& f : plan.formats) {
    const std::string what = "format " + std::to_string(f.id);
    FmtProfileAttr a;
    a.state = ProfileState::offline;
    a.mode = f.mode;
    a.fields_op = FieldsOp::modify;
    for (uint32_t w : f.widths) a.fields.push_back(Field{w, 0, 0, 0, 0});
    if (Status s = ctl.modify_fmt_profile(f.id, a, fmt_attr::kState | fmt_attr::kMode | fmt_attr::kOp); !s)
      return failed(why, what, "going offline", "mode, fields", s.error());
    if (!f.online) continue;
    FmtProfileAttr on;
    on.state = ProfileState::online;
    if (Status s = ctl.modify_fmt_profile(f.id, on, fmt_attr::kState); !s)
      return failed(why, what, "going online", "state", s.error());
  }
  for (const CtlEvProfileSpec& p : plan.ev_profiles) {
    const std::string what = "ev_profile " + std::to_string(p.id);
    EvProfileAttr a;
    a.state = ProfileState::offline;
    a.ev_mode = p.mode;
    uint32_t mask = ev_attr::kState | ev_attr::kMode;
    if (p.mode != ev_mode::kAuto) {
      a.fmt_id = p.format;
      a.fields_op = FieldsOp::modify;
      a.fields = p.fields;
      mask |= ev_attr::kFmtId | ev_attr::kEvFieldsOp;
    }
    if (p.count != 0 || p.mode != ev_mode::kAuto) {
      a.ev_count = p.count;
      mask |= ev_attr::kCount;
    }
    if (Status s = ctl.modify_ev_profile(p.id, a, mask); !s)
      return failed(why, what, "going offline", ev_offline_fields(p.mode), s.error());
    if (!p.evs.empty()) {
      // EXP: every UNPOPULATED entry replaced by one of the listed EVs.
      const uint32_t bits = compact_bits(p.fields);
      EvProfileAttr r;
      r.ev_op = EvOp::replace_ev;
      for (const auto& [port, value] : p.evs) {
        EvOpEntry e;  // e.ev: UNPOPULATED, the slot to fill
        e.ev_new.value = compact_from_uint(value, bits);
        e.ev_new.port = port;
        e.state = ev_state::kGood;
        r.entries.push_back(e);
      }
      r.entry_count = static_cast<uint32_t>(r.entries.size());
      if (Status s = ctl.modify_ev_profile(p.id, r, ev_attr::kEvOp); !s)
        return failed(why, what + " EV " + std::to_string(r.entry_count), "replacing the EVs", "evs", s.error());
    }
    EvProfileAttr m;
    m.ev_min_active = p.min_active;
    m.event_mask = p.event_mask;
    m.state = ProfileState::online;
    const uint32_t attrs = ev_attr::kMinActive | ev_attr::kEventMask;
    if (Status s = ctl.modify_ev_profile(p.id, m, attrs | (p.online ? ev_attr::kState : 0)); !s)
      return failed(why, what, p.online ? "going online" : "setting", "min_active, events", s.error());
  }
  for (const CtlCcProfileSpec& c : plan.cc_profiles) {
    const std::string what = "cc_profile " + std::to_string(c.id);
    CcProfileAttr a;
    a.state = ProfileState::offline;
    if (c.nscc) a.algorithm = std::string(core::kCcNscc);
    if (Status s = ctl.modify_cc_profile(c.id, a, cc_attr::kState | cc_attr::kAlgorithm); !s)
      return failed(why, what, "going offline", "algorithm", s.error());
    CcProfileAttr on;
    on.state = ProfileState::online;
    on.algorithm = a.algorithm;
    on.nscc = c.config;
    const uint32_t config = c.nscc ? cc_attr::kConfig : 0;
    if (Status s = ctl.modify_cc_profile(c.id, on, config | (c.online ? cc_attr::kState : 0)); !s)
      return failed(why, what, c.online ? "going online" : "setting", "base_rtt_ns, target_qdelay_ns, max_cwnd_bytes",
                    s.error());
  }
  return {};
}

Status validate_controller_plan(const ControllerPlan& plan, uint32_t planes, uint32_t hosts, std::string* why) {
  auto fail = [&](const std::string& msg) {
    if (why) *why = msg;
    return Errc::invalid_argument;
  };
  Controller ctl(controller_limits(planes), Prng(1));
  if (Status s = apply_controller_plan(ctl, plan, why); !s) return s;
  if (plan.ev_profile != 0) {
    EvProfileAttr q;
    if (!ctl.query_ev_profile(plan.ev_profile, q, ev_attr::kCurState) || q.cur_state != ProfileState::online)
      return fail("controller.ev_profile: " + std::to_string(plan.ev_profile) +
                  " is not an online EV profile of the file (define it in [[ev_profile]] with state = \"online\")");
    if (auto p = ctl.to_endpoint_profile(plan.ev_profile, core::EvProfile{}); !p)
      return fail("controller.ev_profile: EV profile " + std::to_string(plan.ev_profile) +
                  " cannot be a QP's EV set: " + refusal(p.error()) +
                  " (its EVs must be at most 32 bits and each value on one port)");
  }
  if (plan.cc_profile != 0) {
    CcProfileAttr q;
    if (!ctl.query_cc_profile(plan.cc_profile, q, cc_attr::kCurState) || q.cur_state != ProfileState::online)
      return fail("controller.cc_profile: " + std::to_string(plan.cc_profile) +
                  " is not an online CC profile of the file (define it in [[cc_profile]] with state = \"online\")");
  }
  for (uint32_t h : plan.hosts)
    if (h >= hosts)
      return fail("controller.hosts: host " + std::to_string(h) + " does not exist (" + std::to_string(hosts) +
                  " hosts)");
  if (!plan.hosts.empty() && plan.ev_profile == 0 && plan.cc_profile == 0)
    return fail("controller.hosts: names hosts, but neither ev_profile nor cc_profile says what they use");
  return {};
}

}  // namespace mrc::sim
