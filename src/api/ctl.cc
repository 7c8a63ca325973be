// mrc_ctl.h: the controller API. Queries work; the profile, event,
// endpoint-operation and port-modify calls check their arguments and return
// EOPNOTSUPP until the controller issue fills them in (the header says so).
#include <cerrno>

#include "api/objects.hpp"
#include "api/translate.hpp"
#include "mrc/mrc_ctl.h"

namespace {

bool ctx_ok(mrc_context* ctx) { return ctx && ctx->dev && mrc::api::soft_device(&ctx->dev->ibv) == ctx->dev; }

const char* const kAlgorithms[] = {"uet-1.0-nscc", nullptr};

}  // namespace

extern "C" {

int mrc_ctl_query_version(mrc_ctl_version* ver) {
  if (!ver) return EINVAL;
  ver->current = MRC_CTL_API_VERSION_CURRENT;
  ver->oldest = MRC_API_VERSION(0, 0, 0);
  ver->vendor = MRC_API_VERSION(1, 0, 0);
  ver->oldest_vendor = MRC_API_VERSION(1, 0, 0);
  return 0;
}

int mrc_ctl_query_device(ibv_context* ibv_ctx, mrc_ctl_device_attr* attr) {
  mrc::api::SoftDevice* d = mrc::api::soft_device(ibv_ctx);
  if (!d || !attr) return EINVAL;
  const mrc::core::EndpointConfig& ec = d->rt->endpoint_config();
  *attr = mrc_ctl_device_attr{};
  attr->protocol_versions = MRC_PROTOCOL_VERSION_1;
  attr->ev.ev_max_profiles = 1;
  attr->ev.ev_max_count_profile = d->rt->num_planes() * d->rt->config().evs_per_plane;
  attr->ev.ev_max_count = attr->ev.ev_max_count_profile;
  attr->ev.ev_count_align = 1;
  attr->ev.ev_max_width = 16;
  attr->ev.ev_fmt_mode_mask = MRC_CTL_EV_FMT_UDP | MRC_CTL_EV_FMT_STEV;
  attr->ev.ev_mode_mask = MRC_CTL_EV_MODE_EXP;
  attr->cc.cc_max_profiles = 1;
  attr->cc.algorithms = kAlgorithms;
  attr->phy_port_mask = ((d->rt->num_planes() >= 31 ? 0u : (1u << (d->rt->num_planes() + 1))) - 1u) & ~1u;
  attr->opt_attr = 0;  // no optional feature is implemented in the controller yet
  (void)ec;
  return 0;
}

int mrc_ctl_query_device_ex(ibv_context* ibv_ctx, mrc_context* ctx, mrc_ctl_device_attr* attr, int* supported) {
  if (!supported || !attr || (ctx && !ctx_ok(ctx))) return EINVAL;
  *supported = mrc::api::soft_device(ibv_ctx) != nullptr;
  return *supported ? mrc_ctl_query_device(ibv_ctx, attr) : 0;
}

int mrc_ctl_query_port(mrc_context* ctx, uint8_t port_num, mrc_ctl_port_attr* attr) {
  if (!ctx_ok(ctx) || !attr || port_num < 1 || port_num > ctx->dev->rt->num_planes()) return EINVAL;
  attr->admin_state = MRC_CTL_PORT_ADMIN_ENABLED;
  attr->state = IBV_PORT_ACTIVE;
  return 0;
}

int mrc_ctl_modify_port(mrc_context* ctx, uint8_t port_num, mrc_ctl_port_attr* attr, uint32_t mask) {
  if (!ctx_ok(ctx) || !attr || port_num < 1 || port_num > ctx->dev->rt->num_planes() ||
      (mask & ~uint32_t{MRC_CTL_PORT_ADMIN_STATE}))
    return EINVAL;
  return EOPNOTSUPP;
}

int mrc_ctl_modify_ev_fmt_profile(mrc_context* ctx, uint64_t, mrc_ctl_ev_fmt_profile_attr* attr, uint32_t) {
  return ctx_ok(ctx) && attr ? EOPNOTSUPP : EINVAL;
}
int mrc_ctl_query_ev_fmt_profile(mrc_context* ctx, uint64_t, mrc_ctl_ev_fmt_profile_attr* attr, uint32_t) {
  return ctx_ok(ctx) && attr ? EOPNOTSUPP : EINVAL;
}
int mrc_ctl_modify_ev_profile(mrc_context* ctx, uint64_t, mrc_ctl_ev_profile_attr* attr, uint32_t) {
  return ctx_ok(ctx) && attr ? EOPNOTSUPP : EINVAL;
}
int mrc_ctl_query_ev_profile(mrc_context* ctx, uint64_t, mrc_ctl_ev_profile_attr* attr, uint32_t) {
  return ctx_ok(ctx) && attr ? EOPNOTSUPP : EINVAL;
}
int mrc_ctl_modify_cc_profile(mrc_context* ctx, uint64_t, mrc_ctl_cc_profile_attr* attr, uint32_t) {
  return ctx_ok(ctx) && attr ? EOPNOTSUPP : EINVAL;
}
int mrc_ctl_query_cc_profile(mrc_context* ctx, uint64_t, mrc_ctl_cc_profile_attr* attr, uint32_t) {
  return ctx_ok(ctx) && attr ? EOPNOTSUPP : EINVAL;
}

mrc_cq* mrc_ctl_create_ev_event_cq(mrc_context* ctx, int, void*, mrc_comp_channel*, int) {
  errno = ctx_ok(ctx) ? EOPNOTSUPP : EINVAL;
  return nullptr;
}

int mrc_ctl_poll_ev_event(mrc_cq* cq, int num_events, mrc_ctl_ev_event* events) {
  if (!cq || num_events < 0 || (num_events > 0 && !events)) return -EINVAL;
  return -EOPNOTSUPP;
}

int mrc_ctl_ep_batch_send_wait(mrc_context* ctx, uint8_t, mrc_ctl_ep_op_type, const mrc_ctl_ep_req* reqs, uint32_t n,
                               uint64_t, mrc_ctl_ep_rsp* rsps, uint32_t* n_rsp) {
  if (!ctx_ok(ctx) || (n > 0 && (!reqs || !rsps)) || !n_rsp) return EINVAL;
  *n_rsp = 0;
  return EOPNOTSUPP;
}

}  // extern "C"
