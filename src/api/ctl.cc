// SPDX-License-Identifier: BSD-2-Clause
// mrc_ctl.h: the controller API over the core's controller model
// (core/ctl/profiles.hpp). Controller errors map through mrc::to_errno
// (ENOENT for an absent EV, EPERM, E2BIG), not the verbs-style errno_of,
// which folds not_found into EINVAL for the application API. One Controller per software device, created on
// the first controller call: this file translates the C attribute structs,
// installs ONLINE profiles in the device's endpoints so QPs can name them,
// keeps QPs' holds on profiles, and runs the EV event CQ. Port
// administration goes to the device (rt::Device::set_port_admin); endpoint
// operations are sent by the device's core and their answers come back as
// core::ProbeResult events (ctl_on_ep_result) to the one waiting call.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

#include "api/export.hpp"
#include "api/objects.hpp"
#include "api/translate.hpp"
#include "mrc_ctl.h"

namespace mrc::api {

namespace ctl = core::ctl;

namespace {

bool ctx_ok(mrc_context* ctx) { return ctx && ctx->dev && soft_device(&ctx->dev->ibv) == ctx->dev; }

const char* const kAlgorithms[] = {"uet-1.0-nscc", nullptr};
// The same for mrc_ctl_attr.cc_algorithms, whose OCP type is const char **.
const char* kOcpAlgorithms[] = {"uet-1.0-nscc", nullptr};

// OCP's EV profile mask bits to the core's (ctl::ev_attr, OpenMRC's
// earlier order). False for a bit the device does not take (SRV6_SRH,
// SRV6_COMP and any unknown one but the vendor bit, which the core refuses).
bool ev_mask_to_core(int api_mask, uint32_t* out) {
  const auto m = static_cast<uint32_t>(api_mask);
  static constexpr struct {
    uint32_t api, core;
  } kBits[] = {
      {MRC_CTL_EV_PROFILE_STATE, ctl::ev_attr::kState},
      {MRC_CTL_EV_PROFILE_CUR_STATE, ctl::ev_attr::kCurState},
      {MRC_CTL_EV_PROFILE_MODE, ctl::ev_attr::kMode},
      {MRC_CTL_EV_PROFILE_COUNT, ctl::ev_attr::kCount},
      {MRC_CTL_EV_PROFILE_MIN_ACTIVE, ctl::ev_attr::kMinActive},
      {MRC_CTL_EV_PROFILE_EVENT_MASK, ctl::ev_attr::kEventMask},
      {MRC_CTL_EV_PROFILE_EV_OP, ctl::ev_attr::kEvOp},
      {MRC_CTL_EV_PROFILE_FMT_ID, ctl::ev_attr::kFmtId},
      {MRC_CTL_EV_PROFILE_EV_FIELDS_OP, ctl::ev_attr::kEvFieldsOp},
      {MRC_CTL_EV_PROFILE_VENDOR, ctl::ev_attr::kVendor},
  };
  uint32_t known = 0, core = 0;
  for (const auto& b : kBits) {
    known |= b.api;
    if (m & b.api) core |= b.core;
  }
  if (m & ~known) return false;
  *out = core;
  return true;
}

// OCP's EV modes (enum values) to the core's (bits) and back: the
// software device generates SRv6 arrays only, so the core's generated mode
// is MRC_CTL_EV_MODE_SRV6_GENERATED. UINT32_MAX for a mode it lacks.
uint32_t ev_mode_to_core(uint32_t m) {
  switch (m) {
    case MRC_CTL_EV_MODE_AUTO: return ctl::ev_mode::kAuto;
    case MRC_CTL_EV_MODE_EXPLICIT: return ctl::ev_mode::kExp;
    case MRC_CTL_EV_MODE_SRV6_GENERATED: return ctl::ev_mode::kGen;
    default: return UINT32_MAX;
  }
}
uint32_t ev_mode_from_core(uint32_t m) {
  return m == ctl::ev_mode::kExp   ? MRC_CTL_EV_MODE_EXPLICIT
         : m == ctl::ev_mode::kGen ? MRC_CTL_EV_MODE_SRV6_GENERATED
                                   : MRC_CTL_EV_MODE_AUTO;
}

constexpr uint32_t kMaxProfiles = 16;

// What the software device supports: it puts the EV in the UDP source port
// (16 bits, STEV adds only the kernel's flow-label hash of it). In udp and
// stev modes it sends every EV from a socket bound at open, and so cannot
// generate arrays (GEN EVs would have no socket). In srv6 mode a profile of
// an SRv6 format sends through the raw socket, so any 16-bit compact EV
// works and GEN arrays too; its wire EV is the outer destination address
// (128 bits: no SRH segment).
ctl::Limits device_limits(const rt::Device& d) {
  ctl::Limits l;
  l.num_ports = d.num_planes();
  l.max_fmt_profiles = l.max_ev_profiles = l.max_cc_profiles = kMaxProfiles;
  l.max_fields = 16;
  l.ev_max_count_profile = std::min<uint32_t>(4096, d.num_planes() * d.config().evs_per_plane);
  l.ev_max_count = l.ev_max_count_profile * kMaxProfiles;
  l.ev_count_align = 1;
  l.ev_max_width = 16;
  l.wire_max_width = 16;
  l.fmt_mode_mask = ctl::fmt_mode::kUdp | ctl::fmt_mode::kStev;
  l.ev_mode_mask = ctl::ev_mode::kAuto | ctl::ev_mode::kExp;
  l.cc_algorithms = {core::kCcNscc};
  if (d.config().ev_mode == rt::EvWire::srv6) {
    l.fmt_mode_mask |= ctl::fmt_mode::kSrv6;
    l.ev_mode_mask |= ctl::ev_mode::kGen;
    l.wire_max_width = 128;
    l.ev_max_count_profile = 4096;
    l.ev_max_count = l.ev_max_count_profile * kMaxProfiles;
  }
  return l;
}

// Called with dev.ctl_mu held.
void notify_ev_cq(SoftDevice& dev) {
  mrc_cq* cq = dev.ev_cq;
  if (cq && cq->channel && dev.ctl->queued_events() > 0 && cq->ev_armed.exchange(false)) cq->channel->events.push(cq);
}

// The device's controller; created with its hooks on first use. Called with
// dev.ctl_mu held.
ctl::Controller& controller(SoftDevice& dev) {
  if (dev.ctl) return *dev.ctl;
  rt::Device& rd = *dev.rt;
  dev.ctl = std::make_unique<ctl::Controller>(device_limits(rd), Prng(rd.endpoint_config().seed).derive(0xc7));
  SoftDevice* d = &dev;
  dev.ctl->set_ev_online_hook([d](uint64_t id, const core::EvProfile& p) -> Status {
    core::EvProfile q = p;
    if (p.explicit_evs.empty()) {
      // AUTO: the device's own set with the controller's ev_min_active.
      q = d->rt->default_ev_profile();
      q.ev_min_active = std::min(p.ev_min_active, q.active_count);
      q.event_on_good = q.event_on_assumed_bad = true;
    } else if (p.wire_evs) {
      // SRv6: sent through the raw socket, the compact EV in the inner
      // source port (ev_max_width keeps it to 16 bits).
      for (const core::EvEntry& e : p.explicit_evs)
        if (e.value > 0xFFFF) return Errc::invalid_argument;
    } else {
      for (const core::EvEntry& e : p.explicit_evs)
        if (e.value > 0xFFFF || !d->rt->ev_sendable(e.port, e.value)) return Errc::invalid_argument;
    }
    return d->rt->set_ev_profile(id, q);
  });
  dev.ctl->set_cc_online_hook([d](uint64_t id, const core::CcProfile& p) { return d->rt->set_cc_profile(id, p); });
  dev.ctl->set_deny_hook([d](uint64_t id, const core::EvEntry& e, bool denied) {
    std::vector<uint32_t> qpns;
    {
      std::lock_guard<std::mutex> g(d->mu);
      for (const auto& [qpn, qp] : d->qps)
        if (qp->ctl_ev == id) qpns.push_back(qpn);
    }
    // A QP not in RTR yet has no EV set: it takes the denials at RTR.
    for (uint32_t qpn : qpns) (void)d->rt->set_ev_denied(qpn, e.value, denied);
  });
  return *dev.ctl;
}

ctl::CtlEv from_c(const mrc_ctl_ev& e) {
  ctl::CtlEv r;
  std::copy(std::begin(e.val), std::end(e.val), r.value.begin());
  r.port = e.port;
  return r;
}

mrc_ctl_ev to_c(const ctl::CtlEv& e) {
  mrc_ctl_ev r{};
  std::copy(e.value.begin(), e.value.end(), r.val);
  r.port = e.port;
  return r;
}

// MRC_CTL_EV_UNKNOWN (bit 31) is outside the C++ range of enum
// mrc_ctl_ev_state (its enumerators need 3 bits), so states are stored as
// the 32-bit value a C caller reads rather than converted to the enum.
static_assert(sizeof(mrc_ctl_ev_state) == sizeof(uint32_t), "EV states are 32-bit in the C ABI");
void put_ev_state(mrc_ctl_ev_state* dst, uint32_t v) { std::memcpy(dst, &v, sizeof v); }
uint32_t get_ev_state(const mrc_ctl_ev_state* src) {
  uint32_t v;
  std::memcpy(&v, src, sizeof v);
  return v;
}

bool state_from_c(mrc_ctl_profile_state s, ctl::ProfileState* out) {
  if (s < MRC_CTL_PROFILE_INIT || s > MRC_CTL_PROFILE_ONLINE) return false;
  *out = static_cast<ctl::ProfileState>(s);
  return true;
}

mrc_ctl_profile_state state_to_c(ctl::ProfileState s) { return static_cast<mrc_ctl_profile_state>(s); }

// Reads a fields op: MODIFY copies the caller's fields in; QUERY takes the
// capacity. EINVAL for a NULL array with a count or an unknown op.
bool fields_from_c(const mrc_ctl_fields_op_attr& f, ctl::FieldsOp* op, std::vector<ctl::Field>* fields,
                   uint32_t* count) {
  if (f.op != MRC_CTL_MODIFY_FIELDS && f.op != MRC_CTL_QUERY_FIELDS) return false;
  if (f.count > 0 && !f.fields) return false;
  *op = f.op == MRC_CTL_MODIFY_FIELDS ? ctl::FieldsOp::modify : ctl::FieldsOp::query;
  *count = f.count;
  fields->clear();
  if (*op == ctl::FieldsOp::modify)
    for (uint32_t i = 0; i < f.count; ++i)
      fields->push_back(ctl::Field{f.fields[i].width, f.fields[i].init_val, f.fields[i].min_val,
                                   f.fields[i].max_val, f.fields[i].mask});
  return true;
}

// Writes query results back: the count always (E2BIG: the count needed),
// the fields when they were filled.
void fields_to_c(bool query, bool filled, const std::vector<ctl::Field>& fields, uint32_t count,
                 mrc_ctl_fields_op_attr& f) {
  if (!query) return;
  if (filled)
    for (size_t i = 0; i < fields.size() && i < f.count; ++i)
      f.fields[i] = mrc_ctl_ev_field{fields[i].width, fields[i].init_val, fields[i].min_val, fields[i].max_val,
                                     fields[i].mask};
  f.count = count;
}

// The format profile calls return 0 or a negative errno (OCP's sign for them).
int fmt_call(mrc_context* ctx, uint64_t id, mrc_ctl_ev_fmt_profile_attr* attr, uint32_t mask, bool modify) try {
  if (!ctx_ok(ctx) || !attr) return -EINVAL;
  ctl::FmtProfileAttr a;
  if ((mask & MRC_CTL_EV_FMT_PROFILE_STATE) && modify && !state_from_c(attr->state, &a.state)) return -EINVAL;
  if ((mask & MRC_CTL_EV_FMT_PROFILE_CUR_STATE) && modify && !state_from_c(attr->cur_state, &a.cur_state))
    return -EINVAL;
  a.mode = attr->mode;
  const bool op = mask & MRC_CTL_EV_FMT_PROFILE_OP;
  if (op && !fields_from_c(attr->fields_op, &a.fields_op, &a.fields, &a.fields_count)) return -EINVAL;
  SoftDevice& dev = *ctx->dev;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  ctl::Controller& c = controller(dev);
  const Status s = modify ? c.modify_fmt_profile(id, a, mask) : c.query_fmt_profile(id, a, mask);
  const bool query = op && a.fields_op == ctl::FieldsOp::query;
  if (s.ok() || s == Errc::too_big) fields_to_c(query, s.ok(), a.fields, a.fields_count, attr->fields_op);
  if (!s.ok()) return -to_errno(s.error());
  if (!modify) {
    if (mask & (MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_CUR_STATE))
      attr->state = attr->cur_state = state_to_c(a.state);
    if (mask & MRC_CTL_EV_FMT_PROFILE_MODE) attr->mode = a.mode;
  }
  return 0;
} catch (const std::bad_alloc&) {
  return -ENOMEM;
}

int ev_call(mrc_context* ctx, uint64_t id, mrc_ctl_ev_profile_attr* attr, int api_mask, bool modify) try {
  uint32_t mask = 0;
  if (!ctx_ok(ctx) || !attr || !ev_mask_to_core(api_mask, &mask)) return EINVAL;
  ctl::EvProfileAttr a;
  if ((mask & ctl::ev_attr::kState) && modify && !state_from_c(attr->state, &a.state)) return EINVAL;
  if ((mask & ctl::ev_attr::kCurState) && modify && !state_from_c(attr->cur_state, &a.cur_state)) return EINVAL;
  a.ev_mode = ev_mode_to_core(attr->ev_mode);
  if ((mask & ctl::ev_attr::kMode) && modify && a.ev_mode == UINT32_MAX) return EINVAL;
  a.fmt_id = attr->ev_fmt_profile_id;
  a.ev_count = attr->ev_count;
  a.ev_min_active = attr->ev_min_active;
  a.event_mask = attr->ev_event_mask;
  const bool has_op = mask & ctl::ev_attr::kEvOp;
  if (has_op) {
    const mrc_ctl_ev_op_attr& o = attr->ev_op;
    if (o.op < MRC_CTL_EV_OP_REPLACE_EV || o.op > MRC_CTL_EV_OP_QUERY_EV_ARRAY) return EINVAL;
    if (o.entry_count > 0 && !o.entries) return EINVAL;
    a.ev_op = static_cast<ctl::EvOp>(o.op);
    a.entry_count = o.entry_count;
    if (a.ev_op != ctl::EvOp::query_ev_array) {
      a.entries.resize(o.entry_count);
      for (uint32_t i = 0; i < o.entry_count; ++i)
        a.entries[i] = ctl::EvOpEntry{from_c(o.entries[i].ev), from_c(o.entries[i].ev_new),
                                      get_ev_state(&o.entries[i].state), o.entries[i].flags};
    }
  }
  const bool has_fields = mask & ctl::ev_attr::kEvFieldsOp;
  if (has_fields && !fields_from_c(attr->ev_fields_op, &a.fields_op, &a.fields, &a.fields_count)) return EINVAL;

  SoftDevice& dev = *ctx->dev;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  ctl::Controller& c = controller(dev);
  const Status s = modify ? c.modify_ev_profile(id, a, mask) : c.query_ev_profile(id, a, mask);
  if (modify) notify_ev_cq(dev);  // a DENIED -> GOOD change may have queued an event

  if (has_op) {
    mrc_ctl_ev_op_attr& o = attr->ev_op;
    if (a.ev_op == ctl::EvOp::query_ev_array) {
      if (s.ok())
        for (uint32_t i = 0; i < a.entry_count; ++i) {
          o.entries[i].ev = to_c(a.entries[i].ev);
          put_ev_state(&o.entries[i].state, a.entries[i].state);
        }
      if (s.ok() || s == Errc::too_big) o.entry_count = a.entry_count;
    } else {
      for (uint32_t i = 0; i < a.entry_count && a.ev_op == ctl::EvOp::query_ev_state; ++i)
        put_ev_state(&o.entries[i].state, a.entries[i].state);
      o.entry_count = a.entry_count;  // entries processed
    }
  }
  if (has_fields && (s.ok() || s == Errc::too_big))
    fields_to_c(a.fields_op == ctl::FieldsOp::query, s.ok(), a.fields, a.fields_count, attr->ev_fields_op);
  if (!s.ok()) return to_errno(s.error());
  if (!modify) {
    if (mask & (ctl::ev_attr::kState | ctl::ev_attr::kCurState)) attr->state = attr->cur_state = state_to_c(a.state);
    if (mask & ctl::ev_attr::kMode) attr->ev_mode = ev_mode_from_core(a.ev_mode);
    if (mask & ctl::ev_attr::kFmtId) attr->ev_fmt_profile_id = a.fmt_id;
    if (mask & ctl::ev_attr::kCount) attr->ev_count = a.ev_count;
    if (mask & ctl::ev_attr::kMinActive) attr->ev_min_active = a.ev_min_active;
    if (mask & ctl::ev_attr::kEventMask) attr->ev_event_mask = a.event_mask;
  }
  return 0;
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

}  // namespace

// ------------------------------------------------------------------ QPs and the event CQ (translate.hpp)

int ctl_attach_qp(SoftDevice& dev, uint64_t ev, uint64_t cc) {
  if (ev == 0 && cc == 0) return 0;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  return to_errno(controller(dev).attach_qp(ev, cc).error());
}

void ctl_detach_qp(SoftDevice& dev, uint64_t ev, uint64_t cc) {
  if (ev == 0 && cc == 0) return;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  if (dev.ctl) dev.ctl->detach_qp(ev, cc);
}

void ctl_set_qp_profiles(SoftDevice& dev, mrc_qp* qp, uint64_t ev, uint64_t cc) {
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  if (dev.ctl) dev.ctl->detach_qp(qp->ctl_ev, qp->ctl_cc);
  qp->ctl_ev = ev;
  qp->ctl_cc = cc;
}

void ctl_apply_denials(SoftDevice& dev, mrc_qp* qp) {
  std::vector<core::EvEntry> denied;
  {
    std::lock_guard<std::mutex> g(dev.ctl_mu);
    if (!dev.ctl || qp->ctl_ev == 0) return;
    denied = dev.ctl->denied_evs(qp->ctl_ev);
  }
  for (const core::EvEntry& e : denied) (void)dev.rt->set_ev_denied(qp->qpn, e.value, true);
}

void ctl_on_ev_event(SoftDevice& dev, const core::EvEvent& e) {
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  if (dev.ctl && dev.ctl->on_qp_ev_event(e)) notify_ev_cq(dev);
}

void ctl_on_ep_result(SoftDevice& dev, const core::ProbeResult& r) {
  // Timeouts are the waiting call's own business (its deadline); answers
  // nobody waits for (a call that gave up) are dropped: the API buffers
  // nothing across calls.
  if (!r.answered) return;
  SoftDevice::EpWait& w = dev.ep_wait;
  std::lock_guard<std::mutex> g(w.mu);
  if (!w.active || w.port_status != r.port_status) return;
  auto it = std::find(w.pending.begin(), w.pending.end(), r.req_id);
  if (it == w.pending.end()) return;
  w.pending.erase(it);
  mrc_ctl_ep_rsp rsp{};
  rsp.req_id = r.req_id;
  rsp.port = static_cast<uint8_t>(r.rx_port + 1);
  rsp.rtt_ns = static_cast<uint64_t>(std::max<int64_t>(0, r.rtt.count_ps() / 1000));
  rsp.adj_svc_time = 0;  // the software device reports no service time (cap_svc_time off)
  w.rsps.push_back(rsp);
  if (w.pending.empty()) w.cv.notify_all();
}

int ctl_destroy_event_cq(mrc_cq* cq) {
  cq->acks.wait_zero();
  mrc_context* ctx = cq->ctx;
  SoftDevice& dev = *ctx->dev;
  {
    std::lock_guard<std::mutex> g(dev.ctl_mu);
    if (dev.ctl) (void)dev.ctl->destroy_event_queue();
    dev.ev_cq = nullptr;
  }
  if (cq->channel) {
    cq->channel->events.drop([cq](const mrc_cq* c) { return c == cq; });
    --cq->channel->cqs;
  }
  {
    std::lock_guard<std::mutex> g(ctx->mu);
    --ctx->cqs;
  }
  delete cq;
  return 0;
}

}  // namespace mrc::api

using namespace mrc;
using api::SoftDevice;
namespace ctl = mrc::core::ctl;

namespace {

// The controller's limits and features (ctl_mu held by the caller).
uint32_t opt_attr_of(const SoftDevice& d) {
  uint32_t o = MRC_CTL_OPT_CAP_EV_EVENT | MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT | MRC_CTL_OPT_CAP_EV_PROBE |
               MRC_CTL_OPT_CAP_EV_EXPLICIT;
  if (d.rt->config().ev_mode == rt::EvWire::srv6) o |= MRC_CTL_OPT_CAP_SRV6_GENERATED;
  return o;
}
uint64_t port_mask_of(const SoftDevice& d) { return ((uint64_t{1} << d.rt->num_planes()) - 1) << 1; }
// The EV limits both device queries report (their ev structs share these
// fields; OCP's names the width ev_max_bits, OpenMRC's ev_max_width).
template <class Ev>
void fill_ev_limits(Ev& ev, const ctl::Controller& c) {
  const ctl::Limits& l = c.limits();
  ev.ev_max_fmt_profiles = l.max_fmt_profiles;
  ev.ev_max_profiles = l.max_ev_profiles;
  ev.ev_max_count = l.ev_max_count;
  ev.ev_free_count = c.ev_free_count();
  ev.ev_max_count_profile = l.ev_max_count_profile;
  ev.ev_count_align = l.ev_count_align;
}

}  // namespace

extern "C" {

MRC_EXPORT int mrc_ctl_query_version(mrc_ctl_api_version* ver) {
  if (!ver) return EINVAL;
  ver->current = MRC_CTL_API_CURRENT_VERSION;
  ver->oldest = MRC_API_VER(0u, 0u, 0u);
  ver->vendor = MRC_VENDOR_API_CURRENT_VERSION;
  ver->oldest_vendor = MRC_VENDOR_API_LAST_SUPPORTED_VERSION;
  return 0;
}


MRC_EXPORT int mrc_ctl_query_device(ibv_context* ibv_ctx, mrc_ctl_attr* attr) try {
  SoftDevice* d = api::soft_device(ibv_ctx);
  if (!d || !attr) return EINVAL;
  std::lock_guard<std::mutex> g(d->ctl_mu);
  const ctl::Controller& c = api::controller(*d);
  const ctl::Limits& l = c.limits();
  *attr = mrc_ctl_attr{};
  attr->mrc_ctl_version = MRC_CTL_VERSION_1;
  fill_ev_limits(attr->ev, c);
  attr->ev.ev_max_bits = l.ev_max_width;
  attr->cc.cc_max_profiles = l.max_cc_profiles;
  attr->cc.cc_algorithms = api::kOcpAlgorithms;
  attr->port_mask = port_mask_of(*d);
  attr->opt_attr = opt_attr_of(*d);
  return 0;
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

MRC_EXPORT int mrc_ctl_query_device_ex(ibv_context* ibv_ctx, mrc_context* ctx, mrc_ctl_device_attr* attr,
                                       int* supported) try {
  if (!supported || !attr || (ctx && !api::ctx_ok(ctx))) return EINVAL;
  SoftDevice* d = api::soft_device(ibv_ctx);
  *supported = d != nullptr;
  if (!d) return 0;
  std::lock_guard<std::mutex> g(d->ctl_mu);
  const ctl::Controller& c = api::controller(*d);
  const ctl::Limits& l = c.limits();
  *attr = mrc_ctl_device_attr{};
  attr->protocol_versions = MRC_PROTOCOL_VERSION_1;
  fill_ev_limits(attr->ev, c);
  attr->ev.ev_max_width = l.ev_max_width;
  attr->ev.ev_fmt_mode_mask = l.fmt_mode_mask;
  for (uint32_t bit : {ctl::ev_mode::kAuto, ctl::ev_mode::kExp, ctl::ev_mode::kGen})
    if (l.ev_mode_mask & bit) attr->ev.ev_mode_mask |= 1u << api::ev_mode_from_core(bit);
  attr->ev.ev_op_max_entries = 0;  // no cap
  attr->cc.cc_max_profiles = l.max_cc_profiles;
  attr->cc.algorithms = api::kAlgorithms;
  attr->phy_port_mask = static_cast<uint32_t>(port_mask_of(*d));
  attr->opt_attr = opt_attr_of(*d);
  return 0;
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

MRC_EXPORT int mrc_ctl_query_port(mrc_context* ctx, uint8_t port_num, mrc_ctl_port_attr* attr) {
  if (!api::ctx_ok(ctx) || !attr || port_num < 1 || port_num > ctx->dev->rt->num_planes()) return EINVAL;
  // The state is DOWN while the port is disabled (reference 6.3.2) or its
  // interface has no carrier (rt::DeviceConfig::watch_carrier).
  const bool enabled = ctx->dev->rt->port_admin_mask() >> (port_num - 1) & 1u;
  const bool up = ctx->dev->rt->port_up_mask() >> (port_num - 1) & 1u;
  attr->admin_state = enabled ? MRC_CTL_PORT_ADMIN_ENABLED : MRC_CTL_PORT_ADMIN_DISABLED;
  attr->state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  return 0;
}

MRC_EXPORT int mrc_ctl_modify_port(mrc_context* ctx, uint8_t port_num, mrc_ctl_port_attr* attr, uint32_t mask) {
  if (!api::ctx_ok(ctx) || !attr || port_num < 1 || port_num > ctx->dev->rt->num_planes() ||
      (mask & ~uint32_t{MRC_CTL_PORT_ADMIN_STATE}))
    return EINVAL;
  if (!(mask & MRC_CTL_PORT_ADMIN_STATE)) return 0;
  // Read as the C caller's 32-bit value: any int can arrive, and values
  // outside the enumerators are outside the C++ enum's range.
  static_assert(sizeof(mrc_ctl_port_admin_state) == sizeof(uint32_t), "admin states are 32-bit in the C ABI");
  uint32_t st;
  std::memcpy(&st, &attr->admin_state, sizeof st);
  if (st != MRC_CTL_PORT_ADMIN_DISABLED && st != MRC_CTL_PORT_ADMIN_ENABLED) return EINVAL;
  const Status s = ctx->dev->rt->set_port_admin(port_num - 1u, st == MRC_CTL_PORT_ADMIN_ENABLED);
  return s ? 0 : to_errno(s.error());
}

MRC_EXPORT int mrc_ctl_modify_ev_fmt_profile(mrc_context* ctx, uint64_t id, mrc_ctl_ev_fmt_profile_attr* attr,
                                             int mask) {
  return api::fmt_call(ctx, id, attr, static_cast<uint32_t>(mask), true);
}

MRC_EXPORT int mrc_ctl_query_ev_fmt_profile(mrc_context* ctx, uint64_t id, mrc_ctl_ev_fmt_profile_attr* attr,
                                            int mask) {
  return api::fmt_call(ctx, id, attr, static_cast<uint32_t>(mask), false);
}

MRC_EXPORT int mrc_ctl_modify_ev_profile(mrc_context* ctx, uint64_t id, mrc_ctl_ev_profile_attr* attr, int mask) {
  return api::ev_call(ctx, id, attr, mask, true);
}

MRC_EXPORT int mrc_ctl_query_ev_profile(mrc_context* ctx, uint64_t id, mrc_ctl_ev_profile_attr* attr, int mask) {
  return api::ev_call(ctx, id, attr, mask, false);
}

MRC_EXPORT int mrc_ctl_modify_cc_profile(mrc_context* ctx, uint64_t id, mrc_ctl_cc_profile_attr* attr,
                                         int api_mask) try {
  const auto mask = static_cast<uint32_t>(api_mask);
  if (!api::ctx_ok(ctx) || !attr) return EINVAL;
  ctl::CcProfileAttr a;
  if ((mask & MRC_CTL_CC_PROFILE_STATE) && !api::state_from_c(attr->state, &a.state)) return EINVAL;
  if ((mask & MRC_CTL_CC_PROFILE_CUR_STATE) && !api::state_from_c(attr->cur_state, &a.cur_state)) return EINVAL;
  if ((mask & MRC_CTL_CC_PROFILE_ALGORITHM) && attr->algorithm) a.algorithm = std::string(attr->algorithm);
  mrc_ctl_nscc_config cfg{};
  if (mask & MRC_CTL_CC_PROFILE_CONFIG) {
    if (!attr->config) return EINVAL;
    cfg = *static_cast<const mrc_ctl_nscc_config*>(attr->config);
    // The window floor is the path MTU and the segment size the QP's MTU:
    // neither is configurable here (0 = derived).
    if (cfg.min_cwnd_bytes != 0 || cfg.mss_bytes != 0) return EINVAL;
    a.nscc.base_rtt = Duration::ns(cfg.base_rtt_ns);
    a.nscc.target_delay = Duration::ns(cfg.target_qdelay_ns);
    a.nscc.max_cwnd = cfg.max_cwnd_bytes;
  }
  SoftDevice& dev = *ctx->dev;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  ctl::Controller& c = api::controller(dev);
  // An ALGORITHM change forgets the configuration (it belongs to the old
  // algorithm), so a query points at zeros until CONFIG is given again.
  ctl::CcProfileAttr before;
  (void)c.query_cc_profile(id, before, MRC_CTL_CC_PROFILE_ALGORITHM);
  if (Status s = c.modify_cc_profile(id, a, mask); !s) return to_errno(s.error());
  ctl::CcProfileAttr after;
  (void)c.query_cc_profile(id, after, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM);
  if (after.state == ctl::ProfileState::init || before.algorithm != after.algorithm) dev.cc_configs.erase(id);
  if (mask & MRC_CTL_CC_PROFILE_CONFIG) dev.cc_configs[id] = cfg;
  return 0;
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

MRC_EXPORT int mrc_ctl_query_cc_profile(mrc_context* ctx, uint64_t id, mrc_ctl_cc_profile_attr* attr,
                                        int api_mask) try {
  const auto mask = static_cast<uint32_t>(api_mask);
  if (!api::ctx_ok(ctx) || !attr) return EINVAL;
  SoftDevice& dev = *ctx->dev;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  ctl::CcProfileAttr a;
  if (Status s = api::controller(dev).query_cc_profile(id, a, mask); !s) return to_errno(s.error());
  if (mask & (MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_CUR_STATE))
    attr->state = attr->cur_state = api::state_to_c(a.state);
  if (mask & MRC_CTL_CC_PROFILE_ALGORITHM) attr->algorithm = a.algorithm ? api::kAlgorithms[0] : nullptr;
  if (mask & MRC_CTL_CC_PROFILE_CONFIG) {
    auto it = dev.cc_configs.find(id);
    attr->config = it == dev.cc_configs.end() ? nullptr : &it->second;
  }
  return 0;
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

MRC_EXPORT mrc_cq* mrc_ctl_create_ev_event_cq(mrc_context* ctx, int cqe, void* cq_context, mrc_comp_channel* channel,
                                              int comp_vector) try {
  if (!api::ctx_ok(ctx) || cqe < 1 || static_cast<uint32_t>(cqe) > ctl::Controller::kMaxEventQueue ||
      comp_vector != 0 || (channel && channel->ctx != ctx)) {
    errno = EINVAL;
    return nullptr;
  }
  SoftDevice& dev = *ctx->dev;
  auto* cq = new mrc_cq;
  cq->ctx = ctx;
  cq->cq_context = cq_context;
  cq->channel = channel;
  cq->cqe = cqe;
  cq->ev_events = true;
  {
    std::lock_guard<std::mutex> g(dev.ctl_mu);
    if (Status s = api::controller(dev).create_event_queue(static_cast<uint32_t>(cqe)); !s) {
      delete cq;
      errno = to_errno(s.error());
      return nullptr;
    }
    dev.ev_cq = cq;
  }
  if (channel) ++channel->cqs;
  {
    std::lock_guard<std::mutex> g(ctx->mu);
    ++ctx->cqs;
  }
  api::handle_add(cq);  // mrc_destroy_cq claims it
  return cq;
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

MRC_EXPORT int mrc_ctl_poll_ev_event(mrc_cq* cq, int num_events, mrc_ctl_ev_event* events) try {
  if (!cq || !cq->ev_events || num_events < 0 || (num_events > 0 && !events)) return -EINVAL;
  if (num_events == 0) return 0;
  SoftDevice& dev = *cq->ctx->dev;
  std::vector<ctl::CtlEvEvent> buf(static_cast<size_t>(std::min(num_events, 256)));
  int done = 0;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  while (done < num_events) {
    const size_t want = std::min<size_t>(buf.size(), static_cast<size_t>(num_events - done));
    const size_t n = dev.ctl->poll_events({buf.data(), want});
    for (size_t i = 0; i < n; ++i) {
      mrc_ctl_ev_event& e = events[done++];
      e = mrc_ctl_ev_event{};
      e.profile_id = buf[i].profile_id;
      e.ev = api::to_c(buf[i].ev);
      e.drop_count = buf[i].drop_count;
      api::put_ev_state(&e.state, buf[i].state);
    }
    if (n < want) break;
  }
  return done;
} catch (const std::bad_alloc&) {
  return -ENOMEM;
}

MRC_EXPORT int mrc_ctl_ep_batch_send_wait(mrc_context* ctx, uint8_t req_tc, mrc_ctl_ep_op_type op_type,
                                          const mrc_ctl_ep_req* reqs, uint32_t n, uint64_t rsp_timeout_ns,
                                          mrc_ctl_ep_rsp* rsps, uint32_t* n_rsp) try {
  if (!api::ctx_ok(ctx) || (n > 0 && (!reqs || !rsps)) || !n_rsp) return EINVAL;
  *n_rsp = 0;
  // The op type as the C caller's 32-bit value (any int can arrive).
  static_assert(sizeof(mrc_ctl_ep_op_type) == sizeof(uint32_t), "op types are 32-bit in the C ABI");
  uint32_t op;
  std::memcpy(&op, &op_type, sizeof op);
  if (op != MRC_CTL_EP_OP_EV_PROBE && op != MRC_CTL_EP_OP_PORT_STATUS_UPDATE) return EINVAL;
  if (req_tc > 63 || n > core::Endpoint::kMaxOutstandingProbes) return EINVAL;
  if (n == 0) return 0;
  const bool port_status = op == MRC_CTL_EP_OP_PORT_STATUS_UPDATE;
  SoftDevice& dev = *ctx->dev;
  rt::Device& rd = *dev.rt;
  const uint32_t planes = rd.num_planes();
  const uint32_t phy_mask = ((planes >= 31 ? 0u : (1u << (planes + 1))) - 1u) & ~1u;

  // Every request is checked before any is sent.
  std::vector<rt::Device::EpRequest> out(n);
  for (uint32_t i = 0; i < n; ++i) {
    const mrc_ctl_ep_req& q = reqs[i];
    for (uint32_t j = 0; j < i; ++j)
      if (reqs[j].req_id == q.req_id) return EINVAL;  // answers could not be told apart
    if (q.req_ev.port < 1 || q.req_ev.port > planes) return EINVAL;
    std::optional<core::WireEv> wire_ev;
    uint32_t ev;
    if (q.ev_fmt_mode == MRC_CTL_EV_FMT_SRV6) {
      // The wire EV is the SRv6 destination address (the first 16 bytes;
      // this device sends no SRH segment, so the rest is zero). The inner
      // source port is the plane's first EV.
      if (rd.config().ev_mode != rt::EvWire::srv6) return EINVAL;
      for (size_t b = 16; b < sizeof q.req_ev.val; ++b)
        if (q.req_ev.val[b] != 0) return EINVAL;
      core::WireEv w;
      std::copy_n(q.req_ev.val, 16, w.bytes.begin());
      w.bits = 128;
      wire_ev = w;
      ev = rd.config().ev_port_base + (q.req_ev.port - 1u) * rd.config().evs_per_plane;
    } else {
      if (q.ev_fmt_mode != MRC_CTL_EV_FMT_UDP && q.ev_fmt_mode != MRC_CTL_EV_FMT_STEV) return EINVAL;
      // The wire EV is the UDP source port: the first 16 bits, the rest zero.
      for (size_t b = 2; b < sizeof q.req_ev.val; ++b)
        if (q.req_ev.val[b] != 0) return EINVAL;
      ev = uint32_t{q.req_ev.val[0]} << 8 | q.req_ev.val[1];
      if (!rd.ev_sendable(q.req_ev.port - 1u, ev)) return EINVAL;
    }
    // The source GID, if given, must be the address of the port it leaves from.
    static constexpr ibv_gid kZero{};
    if (std::memcmp(q.sgid.raw, kZero.raw, sizeof kZero.raw) != 0 &&
        !(api::gid_to_addr(q.sgid) == rd.plane_address(q.req_ev.port - 1u)))
      return EINVAL;
    auto peer = rd.peer_id(api::gid_to_addr(q.dgid));
    if (!peer) return EINVAL;
    if (port_status && (q.port_status_update.port_status & ~phy_mask)) return EINVAL;
    out[i] = rt::Device::EpRequest{port_status, q.req_id,     *peer, q.req_ev.port - 1u, ev,
                                   q.port_status_update.port_status >> 1, wire_ev};
  }

  // Long enough for any real answer; keeps the deadline arithmetic finite.
  constexpr uint64_t kMaxTimeoutNs = 3600ull * 1'000'000'000ull;
  const uint64_t timeout_ns = std::min(rsp_timeout_ns, kMaxTimeoutNs);
  std::lock_guard<std::mutex> call(dev.ep_call_mu);
  SoftDevice::EpWait& w = dev.ep_wait;
  {
    std::lock_guard<std::mutex> g(w.mu);
    w.active = true;
    w.port_status = port_status;
    w.pending.clear();
    w.rsps.clear();
    for (const rt::Device::EpRequest& r : out) w.pending.push_back(r.req_id);
  }
  auto finish = [&](int rc) {
    std::lock_guard<std::mutex> g(w.mu);
    w.active = false;
    *n_rsp = static_cast<uint32_t>(std::min<size_t>(w.rsps.size(), n));
    std::copy_n(w.rsps.begin(), *n_rsp, rsps);
    w.pending.clear();
    w.rsps.clear();
    return rc == 0 && *n_rsp < n ? ETIMEDOUT : rc;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  for (const rt::Device::EpRequest& r : out) {
    const Status s = rd.send_ep_request(r, Duration::ns(static_cast<int64_t>(timeout_ns)));
    // busy: that id is still outstanding from an earlier call (reference
    // 6.3.7: do not reuse an id while its answer may arrive) -- try later.
    if (!s) return finish(s == Errc::busy ? EAGAIN : to_errno(s.error()));
  }
  std::unique_lock<std::mutex> lk(w.mu);
  w.cv.wait_until(lk, deadline, [&] { return w.pending.empty(); });
  lk.unlock();
  return finish(0);
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

}  // extern "C"
