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
#include <bit>
#include <cassert>
#include <climits>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "api/export.hpp"
#include "api/objects.hpp"
#include "api/translate.hpp"
#include "mrc_ctl.h"

// OCP's mrc_ctl.h layouts on LP64 (x86-64, arm64): a program built against
// OCP's header and linked with this library shares these structs.
#if UINTPTR_MAX == UINT64_MAX
static_assert(sizeof(mrc_ctl_ev_fmt_field) == 3);
static_assert(sizeof(mrc_ctl_ev) == 33 && offsetof(mrc_ctl_ev, port) == 32);
static_assert(offsetof(mrc_ctl_ev_fmt_profile_attr, ev_fmt_mode) == 8 &&
              offsetof(mrc_ctl_ev_fmt_profile_attr, ev_fmt_op) == 16 &&
              offsetof(mrc_ctl_ev_fmt_profile_attr, ev_fmt_op.modify_fmt_fields.fixed_field_width) == 36 &&
              offsetof(mrc_ctl_ev_fmt_profile_attr, ev_fmt_op.query_fmt_fields.fixed_field_width) == 48 &&
              sizeof(mrc_ctl_ev_fmt_profile_attr) == 56);
static_assert(offsetof(mrc_ctl_ev_profile_attr, ev_event_mask) == 20 &&
              offsetof(mrc_ctl_ev_profile_attr, ev_fmt_profile_id) == 24 &&
              offsetof(mrc_ctl_ev_profile_attr, srv6_use_srh) == 32 && offsetof(mrc_ctl_ev_profile_attr, srv6_comp) == 33 &&
              offsetof(mrc_ctl_ev_profile_attr, ev_op) == 72 &&
              offsetof(mrc_ctl_ev_profile_attr, ev_op.replace_ev.all_copies) == 148 &&
              sizeof(mrc_ctl_ev_profile_attr) == 152);
static_assert(offsetof(mrc_ctl_cc_profile_attr, cc_algorithm) == 8 && offsetof(mrc_ctl_cc_profile_attr, cc_config) == 16 &&
              sizeof(mrc_ctl_cc_profile_attr) == 24);
static_assert(offsetof(mrc_ctl_cc_nscc_cfg, adjust_bytes_threshold) == 4 && offsetof(mrc_ctl_cc_nscc_cfg, eta) == 16 &&
              offsetof(mrc_ctl_cc_nscc_cfg, max_cwnd) == 36 && offsetof(mrc_ctl_cc_nscc_cfg, qa_gate) == 40 &&
              offsetof(mrc_ctl_cc_nscc_cfg, target_delay) == 48 && sizeof(mrc_ctl_cc_nscc_cfg) == 52);
static_assert(offsetof(mrc_ctl_ev_event, ev) == 8 && offsetof(mrc_ctl_ev_event, drop_count) == 44 &&
              sizeof(mrc_ctl_ev_event) == 48);
static_assert(offsetof(mrc_ctl_ev_probe_req, sgid) == 8 && offsetof(mrc_ctl_ev_probe_req, srv6) == 40 &&
              offsetof(mrc_ctl_ev_probe_req, req_ev) == 42 && offsetof(mrc_ctl_ev_probe_req, rsp_ev) == 75 &&
              sizeof(mrc_ctl_ev_probe_req) == 112);
static_assert(offsetof(mrc_ctl_ev_probe_rsp, rtt) == 4 && offsetof(mrc_ctl_ev_probe_rsp, adj_svc_time) == 8 &&
              sizeof(mrc_ctl_ev_probe_rsp) == 12);
#endif

namespace mrc::api {

namespace ctl = core::ctl;

namespace {

bool ctx_ok(mrc_context* ctx) { return ctx && ctx->dev && soft_device(&ctx->dev->ibv) == ctx->dev; }

const char* const kAlgorithms[] = {"uet-1.0-nscc", nullptr};
// The same for mrc_ctl_attr.cc_algorithms, whose OCP type is const char **.
const char* kOcpAlgorithms[] = {"uet-1.0-nscc", nullptr};

// The core's EV modes (bits) as OCP's (enum values): the software device
// generates SRv6 arrays only.
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
  l.max_ev_profiles = l.max_cc_profiles = kMaxProfiles;
  l.max_fmt_profiles = kMaxProfiles + 1;  // and the device's own format of EXPLICIT profiles (controller())
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
  // OCP's EXPLICIT profiles name no format: theirs is this one, out of the
  // controller's reach (ids above kMaxProfiles are EINVAL), one 16-bit
  // field, the UDP source port.
  ctl::FmtProfileAttr f;
  f.state = ctl::ProfileState::offline;
  f.mode = rd.config().ev_mode == rt::EvWire::stev ? ctl::fmt_mode::kStev : ctl::fmt_mode::kUdp;
  f.fields = {ctl::Field{16, 0, 0, 0, 0}};
  Status s = dev.ctl->modify_fmt_profile(kMaxProfiles + 1, f, ctl::fmt_attr::kState | ctl::fmt_attr::kMode | ctl::fmt_attr::kOp);
  f.state = ctl::ProfileState::online;
  if (s) s = dev.ctl->modify_fmt_profile(kMaxProfiles + 1, f, ctl::fmt_attr::kState);
  assert(s.ok());
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

// MRC_CTL_EV_UNKNOWN (bit 31) is outside the C++ range of enum
// mrc_ctl_ev_state (its enumerators need 3 bits), so states are stored as
// the 32-bit value a C caller reads rather than converted to the enum.
static_assert(sizeof(mrc_ctl_ev_state) == sizeof(uint32_t), "EV states are 32-bit in the C ABI");
void put_ev_state(mrc_ctl_ev_state* dst, uint32_t v) { std::memcpy(dst, &v, sizeof v); }

// Enumerations arrive as the C caller's 32-bit value: any int can, and
// values outside the enumerators are outside the C++ enum's range.
template <class E>
uint32_t enum_value(const E* src) {
  static_assert(sizeof(E) == sizeof(uint32_t), "enumerations are 32-bit in the C ABI");
  uint32_t v;
  std::memcpy(&v, src, sizeof v);
  return v;
}

bool state_from_c(const mrc_ctl_profile_state* s, ctl::ProfileState* out) {
  const uint32_t v = enum_value(s);
  if (v > MRC_CTL_PROFILE_ONLINE) return false;
  *out = static_cast<ctl::ProfileState>(v);
  return true;
}

mrc_ctl_profile_state state_to_c(ctl::ProfileState s) { return static_cast<mrc_ctl_profile_state>(s); }

// ---- EV formats

// The core's field widths for an OCP format: the fixed prefix and every
// field, each cut into pieces of at most 32 bits (the core's EV fields,
// which must match the format's one to one, hold 32 bits at most): a wide
// prefix in 32-bit pieces from the top, a field wider than 32 as its
// leading zero bits and then 32.
std::vector<uint32_t> core_widths(const FmtShape& f) {
  std::vector<uint32_t> w;
  for (uint32_t left = f.fixed_width; left > 0;) {
    const uint32_t piece = left % 32 ? left % 32 : 32;
    w.push_back(piece);
    left -= piece;
  }
  for (const mrc_ctl_ev_fmt_field& x : f.fields) {
    if (x.width > 32) w.push_back(x.width - 32u);
    w.push_back(std::min<uint32_t>(x.width, 32));
  }
  return w;
}

// The core's format mode: SRV6_GENERATED is an SRv6 address; GENERATED the
// EV in the UDP source port, with the flow label on an STEV device.
uint32_t fmt_mode_to_core(uint32_t mode, const rt::Device& d) {
  if (mode == MRC_CTL_EV_FMT_MODE_SRV6_GENERATED) return ctl::fmt_mode::kSrv6;
  return d.config().ev_mode == rt::EvWire::stev ? ctl::fmt_mode::kStev : ctl::fmt_mode::kUdp;
}

// The format profile calls return 0 or a negative errno (OCP's sign for them).
int fmt_call(mrc_context* ctx, uint64_t id, mrc_ctl_ev_fmt_profile_attr* attr, uint32_t mask, bool modify) try {
  constexpr uint32_t kKnown = MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_CUR_STATE |
                              MRC_CTL_EV_FMT_PROFILE_MODE | MRC_CTL_EV_FMT_PROFILE_OP;
  // Id kMaxProfiles + 1 is the device's own format of EXPLICIT profiles.
  if (!ctx_ok(ctx) || !attr || (mask & ~kKnown) || id == 0 || id > kMaxProfiles) return -EINVAL;
  SoftDevice& dev = *ctx->dev;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  ctl::Controller& c = controller(dev);
  ctl::FmtProfileAttr a;
  const bool op = mask & MRC_CTL_EV_FMT_PROFILE_OP;
  const uint32_t op_kind = enum_value(&attr->ev_fmt_op.op);
  if (op && op_kind != MRC_CTL_EV_FMT_OP_MODIFY_FIELDS && op_kind != MRC_CTL_EV_FMT_OP_QUERY_FIELDS) return -EINVAL;
  const bool query_fields = op && op_kind == MRC_CTL_EV_FMT_OP_QUERY_FIELDS;
  if (query_fields) {
    const auto& q = attr->ev_fmt_op.query_fmt_fields;
    if (q.fmt_field_count < 0 || (q.fmt_field_count > 0 && !q.fmt_fields) || !q.cur_fmt_field_count) return -EINVAL;
  }
  FmtShape next = dev.fmt_shapes.count(id) ? dev.fmt_shapes[id] : FmtShape{};
  uint32_t core_mask = mask & (MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_CUR_STATE);
  if (modify) {
    if ((mask & MRC_CTL_EV_FMT_PROFILE_STATE) && !state_from_c(&attr->profile_state, &a.state)) return -EINVAL;
    if ((mask & MRC_CTL_EV_FMT_PROFILE_CUR_STATE) && !state_from_c(&attr->cur_profile_state, &a.cur_state))
      return -EINVAL;
    if (mask & MRC_CTL_EV_FMT_PROFILE_MODE) {
      const uint32_t m = enum_value(&attr->ev_fmt_mode);
      if (m != MRC_CTL_EV_FMT_MODE_GENERATED && m != MRC_CTL_EV_FMT_MODE_SRV6_GENERATED) return -EINVAL;
      next.mode = m;
      core_mask |= ctl::fmt_attr::kMode;
    }
    if (op && !query_fields) {
      const auto& f = attr->ev_fmt_op.modify_fmt_fields;
      if (f.fmt_field_count < 0 || (f.fmt_field_count > 0 && !f.fmt_fields) || f.fixed_field_width < 0 ||
          f.fixed_field_width > 256)
        return -EINVAL;
      if (f.fmt_field_count == 0) return -EINVAL;
      if (static_cast<uint32_t>(f.fmt_field_count) > c.limits().max_fields) return -E2BIG;
      next.fields.assign(f.fmt_fields, f.fmt_fields + f.fmt_field_count);
      for (const mrc_ctl_ev_fmt_field& x : next.fields)
        if (x.width == 0 || x.width > ctl::kMaxFmtFieldBits || x.min_val > x.max_val ||
            (x.width < 8 && x.max_val >> x.width))
          return -EINVAL;
      next.fixed_width = static_cast<uint32_t>(f.fixed_field_width);
      core_mask |= ctl::fmt_attr::kOp;
    }
    // The core sees the mode with the fields (its width check depends on both).
    if (core_mask & (ctl::fmt_attr::kMode | ctl::fmt_attr::kOp)) {
      if (next.mode == 0 && !(core_mask & ctl::fmt_attr::kMode)) {
        // Fields before any mode: the core checks them at INIT -> OFFLINE.
      } else {
        core_mask |= ctl::fmt_attr::kMode;
      }
      a.mode = fmt_mode_to_core(next.mode, *dev.rt);
      if (core_mask & ctl::fmt_attr::kOp || !next.fields.empty()) {
        core_mask |= ctl::fmt_attr::kOp;
        a.fields_op = ctl::FieldsOp::modify;
        for (uint32_t w : core_widths(next)) a.fields.push_back(ctl::Field{w, 0, 0, 0, 0});
      }
    }
    if (Status s = c.modify_fmt_profile(id, a, core_mask); !s) return -to_errno(s.error());
    ctl::FmtProfileAttr now;
    (void)c.query_fmt_profile(id, now, ctl::fmt_attr::kState);
    if (now.state == ctl::ProfileState::init) dev.fmt_shapes.erase(id);
    else dev.fmt_shapes[id] = next;
  } else {
    if (op && !query_fields) return -EINVAL;
    if (Status s = c.query_fmt_profile(id, a, core_mask); !s) return -to_errno(s.error());
    if (core_mask) attr->profile_state = attr->cur_profile_state = state_to_c(a.state);
    if (mask & MRC_CTL_EV_FMT_PROFILE_MODE) {
      const uint32_t m = next.mode;
      std::memcpy(&attr->ev_fmt_mode, &m, sizeof m);  // 0 (no mode) is outside the enumerators
    }
  }
  if (query_fields) {
    auto& q = attr->ev_fmt_op.query_fmt_fields;
    const int n = static_cast<int>(next.fields.size());
    *q.cur_fmt_field_count = n;
    if (q.fixed_field_width) *q.fixed_field_width = static_cast<int>(next.fixed_width);
    if (q.fmt_field_count < n) return -E2BIG;
    std::copy(next.fields.begin(), next.fields.end(), q.fmt_fields);
  }
  return 0;
} catch (const std::bad_alloc&) {
  return -ENOMEM;
}

// ---- EV profiles

constexpr uint64_t kExplicitFmtId = kMaxProfiles + 1;
// An EXPLICIT EV is the UDP source port itself: one 16-bit field over the
// device's own 16-bit format, so the compact EV is the wire EV.
constexpr ctl::Field kPortField{16, 0, 0, 0xFFFF, 0xFFFF};

// The core's EV fields of an SRV6_GENERATED profile over format `f`,
// matching core_widths(f): the prefix pieces are constants read from
// `prefix` (most significant bit first); a field with min_val == max_val
// is that constant; another draws from [min_val, max_val] through a mask
// of the bits max_val needs.
std::vector<ctl::Field> generated_fields(const FmtShape& f, const std::array<uint8_t, 32>& prefix) {
  std::vector<ctl::Field> out;
  uint32_t bit = 0;
  for (uint32_t w : core_widths(FmtShape{f.mode, {}, f.fixed_width})) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < w; ++i, ++bit) v = v << 1 | ((prefix[bit / 8] >> (7 - bit % 8)) & 1u);
    out.push_back(ctl::Field{w, v, 0, 0, 0});
  }
  for (const mrc_ctl_ev_fmt_field& x : f.fields) {
    if (x.width > 32) out.push_back(ctl::Field{x.width - 32u, 0, 0, 0, 0});
    const uint32_t w = std::min<uint32_t>(x.width, 32);
    if (x.min_val == x.max_val) {
      out.push_back(ctl::Field{w, x.min_val, 0, 0, 0});
    } else {
      const uint64_t mask = (uint64_t{1} << std::bit_width(unsigned{x.max_val})) - 1;
      out.push_back(ctl::Field{w, 0, x.min_val, x.max_val, mask});
    }
  }
  return out;
}

// The core's EV fields of an SRV6_COMP_EXPLICIT profile (OpenMRC's
// compression, reference 4.2): `comp` holds a 128-bit address template and
// then a 128-bit mask; a compressed EV's bits, most significant first, go
// into the mask's set bits, most significant first, over the template.
// Cut into the format's pieces (`widths`), that is one field per piece.
std::vector<ctl::Field> compressed_fields(const std::vector<uint32_t>& widths, const std::array<uint8_t, 32>& comp) {
  std::vector<ctl::Field> out;
  uint32_t bit = 0;
  for (uint32_t w : widths) {
    ctl::Field f{w, 0, 0, 0, 0};
    for (uint32_t i = 0; i < w; ++i, ++bit) {
      const bool t = bit < 128 && (comp[bit / 8] >> (7 - bit % 8) & 1u);
      const bool m = bit < 128 && (comp[16 + bit / 8] >> (7 - bit % 8) & 1u);
      f.init_val = f.init_val << 1 | (t && !m);
      f.mask = f.mask << 1 | m;
    }
    f.max_val = (uint64_t{1} << std::popcount(f.mask)) - 1;
    out.push_back(f);
  }
  return out;
}

bool is_unpopulated(const mrc_ctl_ev& e) {
  return e.port == 0 && std::all_of(std::begin(e.val), std::end(e.val), [](uint8_t b) { return b == 0; });
}

// An OCP EV held as a value (a host-order uint32_t of at most `bits`
// bits: the UDP source port of an EXPLICIT profile, the compressed EV of an
// SRV6_COMP_EXPLICIT one) as the core's compact EV. False for a value wider.
bool explicit_from_c(const mrc_ctl_ev& e, ctl::CtlEv* out, uint32_t bits = 16) {
  *out = ctl::CtlEv{};
  if (is_unpopulated(e)) return true;
  uint32_t v;
  std::memcpy(&v, e.val, sizeof v);
  if ((bits < 32 && v >> bits) || !std::all_of(e.val + 4, std::end(e.val), [](uint8_t b) { return b == 0; }))
    return false;
  out->value = ctl::compact_from_uint(v, bits);
  out->port = e.port;
  return true;
}

// Bits of the compact EV of a profile whose EVs are values.
uint32_t value_bits(const EvShape& shape) { return ctl::compact_bits(shape.fields); }

// The core's entry of EV profile `shape` as OCP's EV: the generated
// address (SRV6_GENERATED) or the value (EXPLICIT, SRV6_COMP_EXPLICIT).
mrc_ctl_ev ev_to_c(const EvShape& shape, const ctl::CtlEv& e) {
  mrc_ctl_ev r{};
  if (!e.populated()) return r;
  r.port = e.port;
  if (shape.mode == MRC_CTL_EV_MODE_SRV6_GENERATED) {
    auto w = ctl::expand(shape.widths, shape.fields, e.value);
    if (w) std::copy_n(w->bytes.begin(), 16, r.val);
  } else {
    const auto v = static_cast<uint32_t>(ctl::compact_to_uint(e.value, value_bits(shape)));
    std::memcpy(r.val, &v, sizeof v);
  }
  return r;
}

// OCP's EV as the core's entry of EV profile `id`: converted (a value),
// or found in the generated array by its address and port. nullopt with
// the errno to return.
Result<ctl::CtlEv> ev_from_c(const ctl::Controller& c, uint64_t id, const EvShape& shape, const mrc_ctl_ev& e) {
  ctl::CtlEv r;
  if (shape.mode != MRC_CTL_EV_MODE_SRV6_GENERATED) {
    if (!explicit_from_c(e, &r, value_bits(shape))) return Errc::invalid_argument;
    return r;
  }
  if (is_unpopulated(e)) return r;
  ctl::EvProfileAttr q;
  if (Status s = c.query_ev_profile(id, q, ctl::ev_attr::kCount); !s) return s.error();
  q.ev_op = ctl::EvOp::query_ev_array;
  q.entry_count = q.ev_count;
  if (Status s = c.query_ev_profile(id, q, ctl::ev_attr::kEvOp); !s) return s.error();
  for (const ctl::EvOpEntry& x : q.entries) {
    const mrc_ctl_ev y = ev_to_c(shape, x.ev);
    if (y.port == e.port && std::equal(std::begin(y.val), std::end(y.val), e.val)) return x.ev;
  }
  return Errc::not_found;
}

uint32_t ev_mode_to_core(uint32_t m, const rt::Device& d) {
  switch (m) {
    case MRC_CTL_EV_MODE_AUTO: return ctl::ev_mode::kAuto;
    case MRC_CTL_EV_MODE_EXPLICIT: return ctl::ev_mode::kExp;
    case MRC_CTL_EV_MODE_SRV6_GENERATED:
      return d.config().ev_mode == rt::EvWire::srv6 ? ctl::ev_mode::kGen : UINT32_MAX;
    case MRC_CTL_EV_MODE_SRV6_COMP_EXPLICIT:
      return d.config().ev_mode == rt::EvWire::srv6 ? ctl::ev_mode::kExp : UINT32_MAX;
    default: return UINT32_MAX;
  }
}

// OCP's EV profile mask bits that map one to one onto the core's.
constexpr struct {
  uint32_t api, core;
} kEvBits[] = {
    {MRC_CTL_EV_PROFILE_STATE, ctl::ev_attr::kState},
    {MRC_CTL_EV_PROFILE_CUR_STATE, ctl::ev_attr::kCurState},
    {MRC_CTL_EV_PROFILE_MODE, ctl::ev_attr::kMode},
    {MRC_CTL_EV_PROFILE_COUNT, ctl::ev_attr::kCount},
    {MRC_CTL_EV_PROFILE_MIN_ACTIVE, ctl::ev_attr::kMinActive},
    {MRC_CTL_EV_PROFILE_EVENT_MASK, ctl::ev_attr::kEventMask},
    {MRC_CTL_EV_PROFILE_EV_OP, ctl::ev_attr::kEvOp},
};

int ev_call(mrc_context* ctx, uint64_t id, mrc_ctl_ev_profile_attr* attr, int api_mask, bool modify) try {
  const auto m = static_cast<uint32_t>(api_mask);
  constexpr uint32_t kShapeBits = MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID | MRC_CTL_EV_PROFILE_SRV6_COMP;
  constexpr uint32_t kKnown = kShapeBits | MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_CUR_STATE |
                              MRC_CTL_EV_PROFILE_COUNT | MRC_CTL_EV_PROFILE_MIN_ACTIVE |
                              MRC_CTL_EV_PROFILE_EVENT_MASK | MRC_CTL_EV_PROFILE_EV_OP | MRC_CTL_EV_PROFILE_SRV6_SRH;
  if (!ctx_ok(ctx) || !attr || (m & ~kKnown)) return EINVAL;
  uint32_t core_mask = 0;
  for (const auto& b : kEvBits)
    if (m & b.api) core_mask |= b.core;
  const bool has_op = m & MRC_CTL_EV_PROFILE_EV_OP;
  const uint32_t op = enum_value(&attr->ev_op.op);
  if (has_op && op > MRC_CTL_EV_OP_QUERY_EV_ARRAY) return EINVAL;
  if (has_op && !modify && op != MRC_CTL_EV_OP_QUERY_EV_STATE && op != MRC_CTL_EV_OP_QUERY_EV_ARRAY) return EINVAL;
  if (has_op && op == MRC_CTL_EV_OP_QUERY_EV_ARRAY && !attr->ev_op.query_ev_array.ev) return EINVAL;
  SoftDevice& dev = *ctx->dev;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  ctl::Controller& c = controller(dev);
  if (id == 0 || id > c.limits().max_ev_profiles) return EINVAL;
  EvShape next = dev.ev_shapes.count(id) ? dev.ev_shapes[id] : EvShape{};
  ctl::EvProfileAttr a;
  if (modify) {
    if ((m & MRC_CTL_EV_PROFILE_SRV6_SRH) && attr->srv6_use_srh != 0) return EINVAL;  // no SRH segment
    if (has_op && (m & kShapeBits)) return EINVAL;
    if ((m & MRC_CTL_EV_PROFILE_STATE) && !state_from_c(&attr->profile_state, &a.state)) return EINVAL;
    if ((m & MRC_CTL_EV_PROFILE_CUR_STATE) && !state_from_c(&attr->cur_profile_state, &a.cur_state)) return EINVAL;
    if (m & MRC_CTL_EV_PROFILE_MODE) {
      next.mode = enum_value(&attr->ev_mode);
      if (ev_mode_to_core(next.mode, *dev.rt) == UINT32_MAX) return EINVAL;
    }
    if (m & MRC_CTL_EV_PROFILE_FMT_ID) next.fmt_id = attr->ev_fmt_profile_id;
    if (m & MRC_CTL_EV_PROFILE_SRV6_COMP) std::copy(std::begin(attr->srv6_comp), std::end(attr->srv6_comp), next.comp.begin());
    a.ev_mode = ev_mode_to_core(next.mode, *dev.rt);
    a.ev_count = attr->ev_count;
    a.ev_min_active = attr->ev_min_active;
    a.event_mask = static_cast<uint32_t>(attr->ev_event_mask);
    // A new shape hands the core the format and fields it implies.
    if ((m & kShapeBits) && next.mode != MRC_CTL_EV_MODE_AUTO) {
      core_mask |= ctl::ev_attr::kMode | ctl::ev_attr::kFmtId | ctl::ev_attr::kEvFieldsOp;
      a.fields_op = ctl::FieldsOp::modify;
      if (next.mode == MRC_CTL_EV_MODE_EXPLICIT) {
        a.fmt_id = kExplicitFmtId;
        next.widths = {16};
        next.fields = {kPortField};
      } else {
        auto f = dev.fmt_shapes.find(next.fmt_id);
        if (f == dev.fmt_shapes.end() || f->second.mode != MRC_CTL_EV_FMT_MODE_SRV6_GENERATED) return EINVAL;
        a.fmt_id = next.fmt_id;
        next.widths = core_widths(f->second);
        next.fields = next.mode == MRC_CTL_EV_MODE_SRV6_GENERATED ? generated_fields(f->second, next.comp)
                                                                  : compressed_fields(next.widths, next.comp);
      }
      a.fields = next.fields;
    }
    if (has_op) {
      a.ev_op = static_cast<ctl::EvOp>(op);
      a.entry_count = 1;
      auto& o = attr->ev_op;
      ctl::EvOpEntry e;
      if (op == MRC_CTL_EV_OP_REPLACE_EV) {
        auto cur = ev_from_c(c, id, next, o.replace_ev.cur_ev);
        if (!cur) return to_errno(cur.error());
        if (next.mode == MRC_CTL_EV_MODE_SRV6_GENERATED) return EINVAL;  // generated arrays are the device's
        if (!explicit_from_c(o.replace_ev.new_ev, &e.ev_new, value_bits(next))) return EINVAL;
        e.ev = *cur;
        e.state = ctl::ev_state::kGood;
        e.flags = o.replace_ev.all_copies ? ctl::kEvOpAllCopies : 0;
      } else if (op == MRC_CTL_EV_OP_MODIFY_EV_STATE || op == MRC_CTL_EV_OP_QUERY_EV_STATE) {
        const mrc_ctl_ev& which = op == MRC_CTL_EV_OP_MODIFY_EV_STATE ? o.modify_ev_state.ev : o.query_ev_state.ev;
        auto cur = ev_from_c(c, id, next, which);
        if (!cur) return to_errno(cur.error());
        e.ev = *cur;
        if (op == MRC_CTL_EV_OP_MODIFY_EV_STATE) e.state = enum_value(&o.modify_ev_state.state);
      }
      if (op == MRC_CTL_EV_OP_QUERY_EV_ARRAY) {
        ctl::EvProfileAttr q;
        if (Status s = c.query_ev_profile(id, q, ctl::ev_attr::kCount); !s) return to_errno(s.error());
        a.entry_count = q.ev_count;
      } else {
        a.entries = {e};
      }
    }
  } else if (has_op) {
    a.ev_op = static_cast<ctl::EvOp>(op);
    ctl::EvProfileAttr q;
    if (Status s = c.query_ev_profile(id, q, ctl::ev_attr::kCount); !s) return to_errno(s.error());
    a.entry_count = q.ev_count;
    if (op == MRC_CTL_EV_OP_QUERY_EV_STATE) {
      auto cur = ev_from_c(c, id, next, attr->ev_op.query_ev_state.ev);
      if (!cur) return to_errno(cur.error());
      a.entries = {ctl::EvOpEntry{*cur, {}, 0, 0}};
      a.entry_count = 1;
    }
  }

  const Status s = modify ? c.modify_ev_profile(id, a, core_mask) : c.query_ev_profile(id, a, core_mask);
  if (modify) notify_ev_cq(dev);  // a DENIED -> GOOD change may have queued an event
  if (!s.ok()) return to_errno(s.error());
  if (modify) {
    ctl::EvProfileAttr now;
    (void)c.query_ev_profile(id, now, ctl::ev_attr::kState);
    if (now.state == ctl::ProfileState::init) dev.ev_shapes.erase(id);
    else dev.ev_shapes[id] = next;
  }
  if (has_op && op == MRC_CTL_EV_OP_QUERY_EV_STATE) put_ev_state(&attr->ev_op.query_ev_state.state, a.entries[0].state);
  if (has_op && op == MRC_CTL_EV_OP_QUERY_EV_ARRAY)
    for (uint32_t i = 0; i < a.entry_count && i < a.entries.size(); ++i)
      attr->ev_op.query_ev_array.ev[i] = ev_to_c(next, a.entries[i].ev);
  if (!modify) {
    if (m & (MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_CUR_STATE))
      attr->profile_state = attr->cur_profile_state = state_to_c(a.state);
    if (m & MRC_CTL_EV_PROFILE_MODE) attr->ev_mode = static_cast<mrc_ctl_ev_mode>(next.mode);
    if (m & MRC_CTL_EV_PROFILE_FMT_ID) attr->ev_fmt_profile_id = next.fmt_id;
    if (m & MRC_CTL_EV_PROFILE_COUNT) attr->ev_count = a.ev_count;
    if (m & MRC_CTL_EV_PROFILE_MIN_ACTIVE) attr->ev_min_active = a.ev_min_active;
    if (m & MRC_CTL_EV_PROFILE_EVENT_MASK) attr->ev_event_mask = static_cast<int>(a.event_mask);
    if (m & MRC_CTL_EV_PROFILE_SRV6_SRH) attr->srv6_use_srh = 0;
    if (m & MRC_CTL_EV_PROFILE_SRV6_COMP) std::copy(next.comp.begin(), next.comp.end(), attr->srv6_comp);
  }
  return 0;
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

// ---- endpoint operations

// One request of mrc_ctl_probe_ev or mrc_ctl_port_status_update.
struct EpIn {
  uint16_t id = 0;
  ibv_gid sgid{};
  ibv_gid dgid{};
  mrc_ctl_ev ev{};
  bool srv6 = false;           ///< ev.val is the SRv6 destination address
  uint32_t port_status = 0;    ///< port-status updates: bit N = port N up
};

// Checks every request, sends them, and waits for the answers (the engine
// thread hands them over through ctl_on_ep_result). 0, ETIMEDOUT, or the
// errno of a request nothing was sent for.
int ep_send_wait(mrc_context& ctx, uint8_t req_tc, bool port_status, const std::vector<EpIn>& in, uint32_t timeout_ns,
                 mrc_ctl_ev_probe_rsp* rsps, int* n_rsp) {
  if (req_tc > 63 || in.size() > core::Endpoint::kMaxOutstandingProbes) return EINVAL;
  if (in.empty()) return 0;
  SoftDevice& dev = *ctx.dev;
  rt::Device& rd = *dev.rt;
  const uint32_t planes = rd.num_planes();
  const uint32_t phy_mask = ((planes >= 31 ? 0u : (1u << (planes + 1))) - 1u) & ~1u;

  // Every request is checked before any is sent.
  std::vector<rt::Device::EpRequest> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const EpIn& q = in[i];
    for (size_t j = 0; j < i; ++j)
      if (in[j].id == q.id) return EINVAL;  // answers could not be told apart
    if (q.ev.port < 1 || q.ev.port > planes) return EINVAL;
    std::optional<core::WireEv> wire_ev;
    uint32_t ev;
    if (q.srv6) {
      // The wire EV is the SRv6 destination address (the first 16 bytes;
      // this device sends no SRH segment, so the rest is zero). The inner
      // source port is the plane's first EV.
      if (rd.config().ev_mode != rt::EvWire::srv6) return EINVAL;
      if (std::any_of(q.ev.val + 16, std::end(q.ev.val), [](uint8_t b) { return b != 0; })) return EINVAL;
      core::WireEv w;
      std::copy_n(q.ev.val, 16, w.bytes.begin());
      w.bits = 128;
      wire_ev = w;
      ev = rd.config().ev_port_base + (q.ev.port - 1u) * rd.config().evs_per_plane;
    } else {
      // The wire EV is the UDP source port, as an EXPLICIT profile's EVs.
      ctl::CtlEv c;
      if (!explicit_from_c(q.ev, &c) || !c.populated()) return EINVAL;
      ev = static_cast<uint32_t>(ctl::compact_to_uint(c.value, 16));
      if (!rd.ev_sendable(q.ev.port - 1u, ev)) return EINVAL;
    }
    // The source GID, if given, must be the address of the port it leaves from.
    static constexpr ibv_gid kZero{};
    if (std::memcmp(q.sgid.raw, kZero.raw, sizeof kZero.raw) != 0 &&
        !(gid_to_addr(q.sgid) == rd.plane_address(q.ev.port - 1u)))
      return EINVAL;
    auto peer = rd.peer_id(gid_to_addr(q.dgid));
    if (!peer) return EINVAL;
    if (port_status && (q.port_status & ~phy_mask)) return EINVAL;
    out[i] = rt::Device::EpRequest{port_status, q.id, *peer, q.ev.port - 1u, ev, q.port_status >> 1, wire_ev};
  }

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
    const size_t n = std::min(w.rsps.size(), in.size());
    std::copy_n(w.rsps.begin(), n, rsps);
    *n_rsp = static_cast<int>(n);
    w.pending.clear();
    w.rsps.clear();
    return rc == 0 && n < in.size() ? ETIMEDOUT : rc;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  for (const rt::Device::EpRequest& r : out) {
    const Status s = rd.send_ep_request(r, Duration::ns(timeout_ns));
    // busy: that id is still outstanding from an earlier call (reference
    // 6.3.7: do not reuse an id while its answer may arrive) -- try later.
    if (!s) return finish(s == Errc::busy ? EAGAIN : to_errno(s.error()));
  }
  std::unique_lock<std::mutex> lk(w.mu);
  w.cv.wait_until(lk, deadline, [&] { return w.pending.empty(); });
  lk.unlock();
  return finish(0);
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
  mrc_ctl_ev_probe_rsp rsp{};
  rsp.probe_id = r.req_id;
  rsp.rtt = static_cast<unsigned>(std::clamp<int64_t>(r.rtt.count_ps() / 1000, 0, UINT_MAX));
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
  if (d.rt->config().ev_mode == rt::EvWire::srv6) o |= MRC_CTL_OPT_CAP_SRV6_GENERATED | MRC_CTL_OPT_CAP_SRV6_COMP_EXPLICIT;
  return o;
}
uint64_t port_mask_of(const SoftDevice& d) { return ((uint64_t{1} << d.rt->num_planes()) - 1) << 1; }
// The EV limits both device queries report (their ev structs share these
// fields; OCP's names the width ev_max_bits, OpenMRC's ev_max_width).
template <class Ev>
void fill_ev_limits(Ev& ev, const ctl::Controller& c) {
  const ctl::Limits& l = c.limits();
  ev.ev_max_fmt_profiles = api::kMaxProfiles;  // not the device's own format (controller())
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
  attr->ev.ev_fmt_mode_mask = 1u << MRC_CTL_EV_FMT_MODE_GENERATED;
  if (l.fmt_mode_mask & ctl::fmt_mode::kSrv6) attr->ev.ev_fmt_mode_mask |= 1u << MRC_CTL_EV_FMT_MODE_SRV6_GENERATED;
  for (uint32_t bit : {ctl::ev_mode::kAuto, ctl::ev_mode::kExp, ctl::ev_mode::kGen})
    if (l.ev_mode_mask & bit) attr->ev.ev_mode_mask |= 1u << api::ev_mode_from_core(bit);
  if (l.ev_mode_mask & ctl::ev_mode::kGen) attr->ev.ev_mode_mask |= 1u << MRC_CTL_EV_MODE_SRV6_COMP_EXPLICIT;
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
  if ((mask & MRC_CTL_CC_PROFILE_STATE) && !api::state_from_c(&attr->profile_state, &a.state)) return EINVAL;
  if ((mask & MRC_CTL_CC_PROFILE_CUR_STATE) && !api::state_from_c(&attr->cur_profile_state, &a.cur_state))
    return EINVAL;
  if ((mask & MRC_CTL_CC_PROFILE_ALGORITHM) && attr->cc_algorithm) a.algorithm = std::string(attr->cc_algorithm);
  mrc_ctl_cc_nscc_cfg cfg{};
  if (mask & MRC_CTL_CC_PROFILE_CONFIG) {
    if (!attr->cc_config) return EINVAL;
    cfg = *static_cast<const mrc_ctl_cc_nscc_cfg*>(attr->cc_config);
    // Every OCP field is one of the core's NSCC parameters (0 = derived).
    core::NsccConfig& n = a.nscc;
    n.disable_qa = cfg.disable_qa != 0;
    n.adjust_bytes_threshold = cfg.adjust_bytes_threshold;
    n.adjust_period_threshold = Duration::ns(cfg.adjust_period_threshold);
    n.base_rtt = Duration::ns(cfg.base_rtt);
    n.eta = cfg.eta;
    n.fi = cfg.fi;
    n.fi_scale = cfg.fi_scale;
    n.gamma = cfg.gamma;
    n.max_md_jump = cfg.max_md_jump;
    n.max_cwnd = cfg.max_cwnd;
    if (cfg.qa_gate > 63) return EINVAL;
    n.qa_gate = cfg.qa_gate;
    n.qa_threshold = Duration::ns(cfg.qa_threshold);
    n.target_delay = Duration::ns(cfg.target_delay);
  }
  SoftDevice& dev = *ctx->dev;
  std::lock_guard<std::mutex> g(dev.ctl_mu);
  ctl::Controller& c = api::controller(dev);
  // An ALGORITHM change forgets the configuration (it belongs to the old
  // algorithm), so a query points at nothing until CONFIG is given again.
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
    attr->profile_state = attr->cur_profile_state = api::state_to_c(a.state);
  if (mask & MRC_CTL_CC_PROFILE_ALGORITHM) attr->cc_algorithm = a.algorithm ? api::kAlgorithms[0] : nullptr;
  if (mask & MRC_CTL_CC_PROFILE_CONFIG) {
    auto it = dev.cc_configs.find(id);
    attr->cc_config = it == dev.cc_configs.end() ? nullptr : &it->second;
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
      auto shape = dev.ev_shapes.find(buf[i].profile_id);
      e.ev = api::ev_to_c(shape == dev.ev_shapes.end() ? api::EvShape{} : shape->second, buf[i].ev);
      e.drop_count = buf[i].drop_count;
    }
    if (n < want) break;
  }
  return done;
} catch (const std::bad_alloc&) {
  return -ENOMEM;
}

MRC_EXPORT int mrc_ctl_probe_ev(mrc_context* ctx, uint8_t req_tc, mrc_ctl_ev_probe_req* req, int num_req,
                                uint32_t rsp_timeout, mrc_ctl_ev_probe_rsp* rsp, int* num_rsp) try {
  if (!api::ctx_ok(ctx) || num_req < 0 || (num_req > 0 && (!req || !rsp)) || !num_rsp) return EINVAL;
  *num_rsp = 0;
  std::vector<api::EpIn> in(static_cast<size_t>(num_req));
  for (int i = 0; i < num_req; ++i) {
    const mrc_ctl_ev_probe_req& q = req[i];
    if (q.srv6.srv6_use_srh || std::any_of(std::begin(q.rsp_ev), std::end(q.rsp_ev), [](uint8_t b) { return b != 0; }))
      return ENOTSUP;
    in[static_cast<size_t>(i)] = api::EpIn{q.probe_id, q.sgid, q.dgid, q.req_ev, q.srv6.srv6_enable != 0, 0};
  }
  return api::ep_send_wait(*ctx, req_tc, false, in, rsp_timeout, rsp, num_rsp);
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

MRC_EXPORT int mrc_ctl_port_status_update(mrc_context* ctx, uint8_t req_tc, const mrc_ctl_port_status_req* req,
                                          int num_req, uint32_t rsp_timeout, mrc_ctl_ev_probe_rsp* rsp,
                                          int* num_rsp) try {
  if (!api::ctx_ok(ctx) || num_req < 0 || (num_req > 0 && (!req || !rsp)) || !num_rsp) return EINVAL;
  *num_rsp = 0;
  std::vector<api::EpIn> in(static_cast<size_t>(num_req));
  for (int i = 0; i < num_req; ++i) {
    const mrc_ctl_port_status_req& q = req[i];
    in[static_cast<size_t>(i)] = api::EpIn{q.req_id, q.sgid, q.dgid, q.req_ev, false, q.port_status};
  }
  return api::ep_send_wait(*ctx, req_tc, true, in, rsp_timeout, rsp, num_rsp);
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

}  // extern "C"
