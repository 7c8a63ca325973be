// SPDX-License-Identifier: BSD-2-Clause
// mrc.h: the OCP application API over the software device.
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "api/export.hpp"
#include "api/objects.hpp"
#include "api/translate.hpp"
#include "mrc.h"

namespace mrc::api {

namespace {

ibv_wc_status wc_status(core::WcStatus s) {
  switch (s) {
    case core::WcStatus::success: return IBV_WC_SUCCESS;
    case core::WcStatus::loc_len_err: return IBV_WC_LOC_LEN_ERR;
    case core::WcStatus::loc_qp_op_err: return IBV_WC_LOC_QP_OP_ERR;
    case core::WcStatus::loc_prot_err: return IBV_WC_LOC_PROT_ERR;
    case core::WcStatus::wr_flush_err: return IBV_WC_WR_FLUSH_ERR;
    case core::WcStatus::rem_inv_req_err: return IBV_WC_REM_INV_REQ_ERR;
    case core::WcStatus::rem_access_err: return IBV_WC_REM_ACCESS_ERR;
    case core::WcStatus::rem_op_err: return IBV_WC_REM_OP_ERR;
    case core::WcStatus::retry_exc_err: return IBV_WC_RETRY_EXC_ERR;
    case core::WcStatus::general_err: return IBV_WC_GENERAL_ERR;
  }
  return IBV_WC_GENERAL_ERR;
}

core::QpState core_state(ibv_qp_state s, bool* ok) {
  *ok = true;
  switch (s) {
    case IBV_QPS_RESET: return core::QpState::reset;
    case IBV_QPS_INIT: return core::QpState::init;
    case IBV_QPS_RTR: return core::QpState::rtr;
    case IBV_QPS_RTS: return core::QpState::rts;
    case IBV_QPS_ERR: return core::QpState::error;
    default: *ok = false; return core::QpState::reset;  // SQD, SQE: not MRC states
  }
}

ibv_qp_state ibv_state(core::QpState s) {
  switch (s) {
    case core::QpState::reset: return IBV_QPS_RESET;
    case core::QpState::init: return IBV_QPS_INIT;
    case core::QpState::rtr: return IBV_QPS_RTR;
    case core::QpState::rts: return IBV_QPS_RTS;
    case core::QpState::error: return IBV_QPS_ERR;
  }
  return IBV_QPS_ERR;
}

uint32_t mtu_bytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

ibv_mtu mtu_enum(uint32_t b) {
  switch (b) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default: return IBV_MTU_4096;
  }
}

bool context_ok(mrc_context* ctx) { return ctx && ctx->dev && soft_device(&ctx->dev->ibv) == ctx->dev; }

void fill_device_attr(const SoftDevice& d, mrc_device_attr* a) {
  const core::EndpointConfig& ec = d.rt->endpoint_config();
  *a = mrc_device_attr{};
  a->mrc_protocol_version = MRC_PROTOCOL_VERSION_1;
  a->wimm_attr.max_wimm = ec.max_wimm;
  a->wimm_attr.max_wimm_dest = ec.max_wimm;
  a->mpr_attr.max_mpr = ec.max_mpr;
  a->mpr_attr.mpr_resolution = 1;
  a->mpr_attr.dynamic_mpr = ec.cap_dynamic_mpr ? 1 : 0;
  a->qp_attr.max_qp_hint = 1024;
  a->cap = (ec.cap_trim_nack ? MRC_DEVICE_CAP_TRIM_NACK : 0) | (ec.cap_dynamic_mpr ? MRC_DEVICE_CAP_DYNAMIC_MPR : 0) |
           (ec.cap_svc_time ? MRC_DEVICE_CAP_SVC_TIME : 0);
}

void push_async(mrc_context* ctx, const mrc_async_event& ev) { ctx->async.push(ev); }

// The acknowledgement count of the QP or CQ an async event names (none for
// port events).
PendingAcks* acks_of(const mrc_async_event& e) {
  switch (e.event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_ACCESS_ERR: return &e.element.qp->acks;
    case IBV_EVENT_CQ_ERR: return &e.element.cq->acks;
    default: return nullptr;
  }
}

// Takes one event count for a get (mrc_get_cq_event, mrc_get_async_event):
// 0 with a count taken; EAGAIN when the application's fd is non-blocking
// and nothing is queued; EIO if the kernel fails. A socket among what is
// ready (q.sockets) is a packet no engine thread was waiting for: this
// thread runs the engines (`dev`), which queue the event if the packet
// completed something on an armed CQ of this channel. Non-blocking, that
// is one look and at most one turn of the engines.
template <class T>
int wait_event(EventQueue<T>& q, rt::Device* dev) {
  using Q = EventQueue<T>;
  bool drove = false;
  int block = -1;  // unknown yet: one fcntl, only when there is nothing to take
  for (;;) {
    platform::EpollEvent ready[4];
    auto r = q.ep.wait(ready, block == 1 ? Duration::ps(-1) : Duration{});
    if (!r) return EIO;
    bool count = false, socket = false;
    for (size_t i = 0; i < *r; ++i) (ready[i].user_data == Q::kCountTag ? count : socket) = true;
    if (count && q.count.drain()) return 0;
    if (socket && dev != nullptr && !(drove && block == 0)) {
      Q::getter = &q;
      Q::held = 0;
      dev->drive_from_channel();
      Q::getter = nullptr;
      drove = true;
      if (Q::held > 0) {
        if (Q::held > 1) (void)q.count.signal(Q::held - 1);
        return 0;
      }
      continue;
    }
    if (block < 0) {
      const int fl = ::fcntl(q.fd(), F_GETFL);
      block = fl >= 0 && !(fl & O_NONBLOCK) ? 1 : 0;
    }
    if (block == 0) return EAGAIN;
  }
}

// Removes queued, not yet obtained async events that match (their object is
// being destroyed), with their counts.
template <class Pred>
void drop_queued_events(mrc_context* ctx, Pred pred) {
  ctx->async.drop(pred);
}

}  // namespace

void route_event(SoftDevice& dev, const core::Event& e) {
  if (auto* ev = std::get_if<core::EvEvent>(&e)) {
    ctl_on_ev_event(dev, *ev);  // the controller's (takes ctl_mu, never with mu held)
    return;
  }
  if (auto* r = std::get_if<core::ProbeResult>(&e)) {
    ctl_on_ep_result(dev, *r);  // the controller's endpoint operations
    return;
  }
  std::lock_guard<std::mutex> g(dev.mu);
  if (auto* q = std::get_if<core::QpErrorEvent>(&e)) {
    auto it = dev.qps.find(q->qpn);
    if (it == dev.qps.end()) return;
    mrc_qp* qp = it->second;
    mrc_async_event ev{};
    ev.element.qp = qp;
    ev.event_type = IBV_EVENT_QP_FATAL;
    push_async(qp->ctx, ev);
  } else if (auto* c = std::get_if<core::CqErrorEvent>(&e)) {
    auto it = dev.cqs.find(c->cq);
    if (it == dev.cqs.end()) return;
    mrc_cq* cq = it->second;
    mrc_async_event ev{};
    ev.element.cq = cq;
    ev.event_type = IBV_EVENT_CQ_ERR;
    push_async(cq->ctx, ev);
  } else if (auto* p = std::get_if<core::PortEvent>(&e)) {
    if (!p->local) return;  // a peer's planes: the controller's business
    for (mrc_context* ctx : dev.ctxs)
      for (uint32_t port = 0; port < dev.rt->num_planes(); ++port) {
        mrc_async_event ev{};
        ev.element.port_num = static_cast<int>(port + 1);
        ev.event_type = (p->up_mask >> port & 1u) ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
        push_async(ctx, ev);
      }
  }
}

}  // namespace mrc::api

using namespace mrc;
using api::SoftDevice;

extern "C" {

// The calls OCP's mrc.h documents as "0, or -1 with errno" (and the event
// calls, which answer as ibv_get_cq_event / ibv_get_async_event do).
static int fail_errno(int e) {
  errno = e;
  return -1;
}

MRC_EXPORT int mrc_query_version(mrc_version* ver) {
  if (!ver) return EINVAL;
  ver->current = MRC_API_CURRENT_VERSION;
  ver->oldest = MRC_API_LAST_SUPPORTED_VERSION;
  ver->vendor = MRC_VENDOR_API_CURRENT_VERSION;
  ver->oldest_vendor = MRC_VENDOR_API_LAST_SUPPORTED_VERSION;
  return 0;
}

MRC_EXPORT int mrc_query_device(ibv_context* ibv_ctx, mrc_device_attr* attr, int* supported) {
  if (!ibv_ctx || !attr || !supported) return fail_errno(EINVAL);
  SoftDevice* d = api::soft_device(ibv_ctx);
  *supported = d != nullptr;
  if (d) api::fill_device_attr(*d, attr);
  return 0;
}

MRC_EXPORT int mrc_query_device_ex(ibv_context* ibv_ctx, mrc_context* ctx, mrc_device_attr* attr, int* supported) {
  if (ctx && (!api::context_ok(ctx) || &ctx->dev->ibv != ibv_ctx)) return fail_errno(EINVAL);
  return mrc_query_device(ibv_ctx, attr, supported);
}

MRC_EXPORT mrc_context* mrc_create_context(ibv_context* ibv_ctx, mrc_context_attr* attr) try {
  SoftDevice* d = api::soft_device(ibv_ctx);
  uint32_t v = attr ? attr->mrc_api_version_used : MRC_API_CURRENT_VERSION;
  if (v == MRC_API_VER_LATEST) v = MRC_API_CURRENT_VERSION;
  // MRC_API_LAST_SUPPORTED_VERSION is 0.0.0: every version up to the current one is served.
  if (!d || v > MRC_API_CURRENT_VERSION) {
    errno = EINVAL;
    return nullptr;
  }
  auto ctx = std::make_unique<mrc_context>();
  if (!ctx->async.open()) {
    errno = EMFILE;
    return nullptr;
  }
  ctx->dev = d;
  ctx->api_version = v;
  std::lock_guard<std::mutex> g(d->mu);
  ++d->contexts;
  d->ctxs.push_back(ctx.get());
  return ctx.release();
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

MRC_EXPORT int mrc_destroy_context(mrc_context* ctx) {
  if (!api::context_ok(ctx)) return fail_errno(EINVAL);
  {
    std::lock_guard<std::mutex> g(ctx->mu);
    if (ctx->cqs || ctx->qps || ctx->channels || ctx->hints) return fail_errno(EBUSY);
  }
  {
    std::lock_guard<std::mutex> g(ctx->dev->mu);
    --ctx->dev->contexts;
    std::erase(ctx->dev->ctxs, ctx);
  }
  delete ctx;
  return 0;
}

// ------------------------------------------------------------------ channels

static mrc_comp_channel* new_channel(mrc_context* ctx) try {
  if (!api::context_ok(ctx)) {
    errno = EINVAL;
    return nullptr;
  }
  auto ch = std::make_unique<mrc_comp_channel>();
  if (!ch->events.open()) {
    errno = EMFILE;
    return nullptr;
  }
  // With application progress the channel watches the sockets too: an
  // application asleep on it is woken by the packet itself and runs the
  // engines (wait_event), one wake-up per message where an engine thread
  // and then the application made two (docs/software-device.md, blocking latency).
  if (ctx->dev->rt->config().app_progress && ctx->dev->rt->config().bulk_bytes_per_ms > 0) {
    if (!ctx->dev->rt->watch_sockets(ch->events.ep, api::EventQueue<mrc_cq*>::kSocketTag)) {
      errno = EMFILE;
      return nullptr;
    }
    ch->events.sockets = true;
  }
  ch->ctx = ctx;
  std::lock_guard<std::mutex> g(ctx->mu);
  ++ctx->channels;
  return ch.release();
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

MRC_EXPORT int mrc_create_comp_channel(mrc_context* ctx, mrc_comp_channel** channel) {
  if (!channel) {
    errno = EINVAL;
    return -1;
  }
  *channel = new_channel(ctx);
  return *channel ? 0 : -1;
}

MRC_EXPORT int mrc_get_comp_channel_fd(mrc_comp_channel* ch, int* fd) {
  if (!ch || !fd) {
    errno = EINVAL;
    return -1;
  }
  *fd = ch->events.fd();
  return 0;
}

MRC_EXPORT int mrc_destroy_comp_channel(mrc_comp_channel* ch) {
  if (!ch) return EINVAL;
  if (ch->cqs.load() > 0) return EBUSY;
  if (ch->events.sockets) ch->ctx->dev->rt->unwatch_sockets(ch->events.ep);
  {
    std::lock_guard<std::mutex> g(ch->ctx->mu);
    --ch->ctx->channels;
  }
  delete ch;
  return 0;
}


// ------------------------------------------------------------------ CQs

MRC_EXPORT mrc_cq* mrc_create_cq(mrc_context* ctx, int cqe, void* cq_context, mrc_comp_channel* channel,
                                 int comp_vector) try {
  if (!api::context_ok(ctx) || cqe < 1 || static_cast<uint32_t>(cqe) > core::Endpoint::kMaxCqe || comp_vector != 0 ||
      (channel && channel->ctx != ctx)) {
    errno = EINVAL;
    return nullptr;
  }
  auto rcq = ctx->dev->rt->create_cq(static_cast<uint32_t>(cqe));
  if (!rcq) {
    errno = api::errno_of(rcq.error());
    return nullptr;
  }
  auto* cq = new mrc_cq;
  cq->ctx = ctx;
  cq->rcq = *rcq;
  cq->cq_context = cq_context;
  cq->channel = channel;
  cq->cqe = cqe;
  if (channel) {
    ++channel->cqs;
    cq->rcq->set_notify([cq] { cq->channel->events.push(cq); });
    cq->rcq->set_channel_watches_sockets(channel->events.sockets);
  }
  {
    std::lock_guard<std::mutex> g(ctx->dev->mu);
    ctx->dev->cqs[cq->rcq->core_id()] = cq;
  }
  {
    std::lock_guard<std::mutex> g(ctx->mu);
    ++ctx->cqs;
  }
  api::handle_add(cq);
  return cq;
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

namespace {
int destroy_cq_taken(mrc_cq* cq);
int destroy_qp_taken(mrc_qp* qp);
}  // namespace

// A destroy claims its handle before reading it (api::handle_take): a
// second destroy of the same handle is EINVAL, not a use after free. A
// destroy refused (EBUSY) gives the handle back.
MRC_EXPORT int mrc_destroy_cq(mrc_cq* cq) {
  if (!cq || !api::handle_take(cq)) return EINVAL;
  const int rc = destroy_cq_taken(cq);
  if (rc != 0) api::handle_add(cq);
  return rc;
}

MRC_EXPORT int mrc_destroy_qp(mrc_qp* qp) {
  if (!qp || !api::handle_take(qp)) return EINVAL;
  const int rc = destroy_qp_taken(qp);
  if (rc != 0) api::handle_add(qp);
  return rc;
}

namespace {

int destroy_cq_taken(mrc_cq* cq) {
  if (cq->ev_events) return api::ctl_destroy_event_cq(cq);
  if (cq->qps.load() > 0) return EBUSY;
  // verbs: wait until every event obtained for this CQ is acknowledged.
  cq->acks.wait_zero();
  mrc_context* ctx = cq->ctx;
  {
    std::lock_guard<std::mutex> g(ctx->dev->mu);
    ctx->dev->cqs.erase(cq->rcq->core_id());
  }
  if (Status s = ctx->dev->rt->destroy_cq(cq->rcq); !s) return api::errno_of(s.error());
  api::drop_queued_events(
      ctx, [cq](const mrc_async_event& e) { return e.event_type == IBV_EVENT_CQ_ERR && e.element.cq == cq; });
  if (cq->channel) {
    // Drop queued (not yet obtained) events naming it.
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

}  // namespace

MRC_EXPORT int mrc_poll_cq(mrc_cq* cq, int num_entries, ibv_wc* wc) {
  if (!cq || cq->ev_events || num_entries < 0 || (num_entries > 0 && !wc)) {
    errno = EINVAL;
    return -1;
  }
  core::WorkCompletion buf[32];
  int done = 0;
  while (done < num_entries) {
    const size_t want = std::min<size_t>(std::size(buf), static_cast<size_t>(num_entries - done));
    const size_t n = cq->rcq->poll({buf, want});
    for (size_t i = 0; i < n; ++i) {
      const core::WorkCompletion& c = buf[i];
      ibv_wc& w = wc[done++];
      w = ibv_wc{};
      w.wr_id = c.wr_id;
      w.status = api::wc_status(c.status);
      w.opcode = c.opcode == core::WcOpcode::rdma_write ? IBV_WC_RDMA_WRITE : IBV_WC_RECV_RDMA_WITH_IMM;
      w.byte_len = c.byte_len;
      w.qp_num = c.qpn;
      if (c.with_imm) {
        w.wc_flags = IBV_WC_WITH_IMM;
        w.imm_data = htonl(c.imm);
      }
    }
    if (n < want) break;
  }
  return done;
}

MRC_EXPORT const char* mrc_wc_status_str(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_LOC_LEN_ERR: return "local length error";
    case IBV_WC_LOC_QP_OP_ERR: return "local QP operation error";
    case IBV_WC_LOC_PROT_ERR: return "local protection error (lkey or range outside the region)";
    case IBV_WC_WR_FLUSH_ERR: return "work request flushed (the QP is in ERROR or was destroyed)";
    case IBV_WC_REM_INV_REQ_ERR: return "remote invalid request error";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error (rkey, rights or range refused by the peer)";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded (the peer did not answer)";
    case IBV_WC_GENERAL_ERR: return "general error";
    default: return "unknown completion status";
  }
}

MRC_EXPORT int mrc_req_notify_cq(mrc_cq* cq, int solicited_only) {
  (void)solicited_only;
  if (!cq || !cq->channel) return EINVAL;
  if (cq->ev_events) {
    cq->ev_armed.store(true);  // the next EV event notifies the channel
    return 0;
  }
  cq->rcq->arm();
  return 0;
}

MRC_EXPORT int mrc_get_cq_event(mrc_comp_channel* ch, mrc_cq** cq, void** cq_context) {
  if (!ch || !cq || !cq_context) return fail_errno(EINVAL);
  if (int e = api::wait_event(ch->events, ch->events.sockets ? ch->ctx->dev->rt.get() : nullptr); e != 0)
    return fail_errno(e);
  mrc_cq* c;
  {
    std::lock_guard<std::mutex> g(ch->events.mu);
    if (ch->events.q.empty()) return fail_errno(EAGAIN);  // its CQ was destroyed meanwhile
    c = ch->events.q.front();
    ch->events.q.pop_front();
  }
  c->acks.add();
  *cq = c;
  *cq_context = c->cq_context;
  return 0;
}

MRC_EXPORT void mrc_ack_cq_events(mrc_cq* cq, unsigned int nevents) {
  if (cq) cq->acks.ack(nevents);
}

// ------------------------------------------------------------------ hints

// Every field of an mrc_qp_hint_attr, as a mask.
static constexpr uint32_t kHintAll = MRC_QP_HINT_NUM_QPS_PER_PEER | MRC_QP_HINT_NUM_SEND_PEERS |
                                     MRC_QP_HINT_NUM_REMOTE_RECV_PEERS | MRC_QP_HINT_VENDOR_CFG;

// The fields of `a` named in `mask` hold values a hint may have: counts of
// at least 0 (0: not given) and no vendor data (none is defined).
static bool hint_valid(const mrc_qp_hint_attr* a, uint32_t mask) {
  if (!a || (mask & ~kHintAll)) return false;
  if ((mask & MRC_QP_HINT_NUM_QPS_PER_PEER) && a->num_qps_per_peer < 0) return false;
  if ((mask & MRC_QP_HINT_NUM_SEND_PEERS) && a->num_send_peers < 0) return false;
  if ((mask & MRC_QP_HINT_NUM_REMOTE_RECV_PEERS) && a->num_remote_recv_peers < 0) return false;
  if (mask & MRC_QP_HINT_VENDOR_CFG)
    for (uint8_t b : a->vendor_cfg)
      if (b != 0) return false;
  return true;
}

MRC_EXPORT mrc_qp_hint* mrc_create_qp_hint(mrc_context* ctx, mrc_qp_hint_init_attr* init_attr) try {
  const mrc_qp_hint_attr* attr = init_attr ? &init_attr->attr : nullptr;
  if (!api::context_ok(ctx) || !hint_valid(attr, kHintAll)) {
    errno = EINVAL;
    return nullptr;
  }
  std::lock_guard<std::mutex> g(ctx->mu);
  if (ctx->hints >= 1024) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* h = new mrc_qp_hint;
  h->ctx = ctx;
  h->attr = *attr;
  ++ctx->hints;
  return h;
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

MRC_EXPORT int mrc_destroy_qp_hint(mrc_qp_hint* h) {
  if (!h || h->qps.load() > 0) {
    errno = h ? EBUSY : EINVAL;
    return -1;
  }
  {
    std::lock_guard<std::mutex> g(h->ctx->mu);
    --h->ctx->hints;
  }
  delete h;
  return 0;
}

MRC_EXPORT int mrc_query_qp_hint(mrc_qp_hint* h, mrc_qp_hint_attr* attr, int mask) {
  const auto m = static_cast<uint32_t>(mask);
  if (!h || !attr || (m & ~kHintAll)) {
    errno = EINVAL;
    return -1;
  }
  if (m & MRC_QP_HINT_NUM_QPS_PER_PEER) attr->num_qps_per_peer = h->attr.num_qps_per_peer;
  if (m & MRC_QP_HINT_NUM_SEND_PEERS) attr->num_send_peers = h->attr.num_send_peers;
  if (m & MRC_QP_HINT_NUM_REMOTE_RECV_PEERS) attr->num_remote_recv_peers = h->attr.num_remote_recv_peers;
  if (m & MRC_QP_HINT_VENDOR_CFG) std::memcpy(attr->vendor_cfg, h->attr.vendor_cfg, sizeof attr->vendor_cfg);
  return 0;
}

MRC_EXPORT int mrc_modify_qp_hint(mrc_qp_hint* h, mrc_qp_hint_attr* attr, int mask) {
  const auto m = static_cast<uint32_t>(mask);
  if (!h || !hint_valid(attr, m)) {
    errno = EINVAL;
    return -1;
  }
  if (m & MRC_QP_HINT_NUM_QPS_PER_PEER) h->attr.num_qps_per_peer = attr->num_qps_per_peer;
  if (m & MRC_QP_HINT_NUM_SEND_PEERS) h->attr.num_send_peers = attr->num_send_peers;
  if (m & MRC_QP_HINT_NUM_REMOTE_RECV_PEERS) h->attr.num_remote_recv_peers = attr->num_remote_recv_peers;
  return 0;
}

// ------------------------------------------------------------------ QPs

MRC_EXPORT mrc_qp* mrc_create_qp(mrc_context* ctx, mrc_qp_init_attr* ia) try {
  if (!api::context_ok(ctx) || !ia || !ia->send_cq || !ia->recv_cq || !ia->pd || ia->send_cq->ctx != ctx ||
      ia->recv_cq->ctx != ctx || ia->send_cq->ev_events || ia->recv_cq->ev_events ||
      api::soft_device(ia->pd->context) != ctx->dev) {
    errno = EINVAL;
    return nullptr;
  }
  const core::EndpointConfig& ec = ctx->dev->rt->endpoint_config();
  const ibv_qp_cap& cap = ia->cap;
  constexpr uint64_t kOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
  if (cap.max_send_wr < 1 || cap.max_send_wr > ec.max_send_wr || cap.max_recv_wr > ec.max_recv_wr ||
      cap.max_send_sge > core::kMaxSge || cap.max_inline_data > core::kMaxInlineData ||
      (ia->send_ops_flags & ~kOps) != 0 ||
      (ia->protocol_version != 0 && ia->protocol_version != MRC_PROTOCOL_VERSION_1)) {
    errno = EINVAL;
    return nullptr;
  }
  core::QpInit init;
  init.send_cq = ia->send_cq->rcq->core_id();
  init.recv_cq = ia->recv_cq->rcq->core_id();
  init.sq_sig_all = ia->sq_sig_all != 0;
  init.transport = ctx->dev->transport;
  init.pd = reinterpret_cast<api::SoftPd*>(ia->pd)->core_pd;
  init.max_send_wr = cap.max_send_wr;
  init.max_recv_wr = std::max<uint32_t>(1, cap.max_recv_wr);
  auto qpn = ctx->dev->rt->create_qp(init);
  if (!qpn) {
    errno = api::errno_of(qpn.error());
    return nullptr;
  }
  auto* qp = new mrc_qp;
  qp->ctx = ctx;
  qp->qpn = *qpn;
  qp->init = *ia;
  qp->init.cap.max_recv_sge = 0;  // receives carry no data
  if (qp->init.send_ops_flags == 0) qp->init.send_ops_flags = kOps;
  qp->pd = reinterpret_cast<api::SoftPd*>(ia->pd);
  ia->cap = qp->init.cap;  // what was granted
  ++ia->send_cq->qps;
  if (ia->recv_cq != ia->send_cq) ++ia->recv_cq->qps;
  {
    std::lock_guard<std::mutex> g(ctx->dev->mu);
    ctx->dev->qps[qp->qpn] = qp;
  }
  {
    std::lock_guard<std::mutex> g(ctx->mu);
    ++ctx->qps;
  }
  api::handle_add(qp);
  return qp;
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

namespace {

int destroy_qp_taken(mrc_qp* qp) {
  qp->acks.wait_zero();
  mrc_context* ctx = qp->ctx;
  if (Status s = ctx->dev->rt->destroy_qp(qp->qpn); !s) return api::errno_of(s.error());
  {
    std::lock_guard<std::mutex> g(ctx->dev->mu);
    ctx->dev->qps.erase(qp->qpn);
  }
  api::drop_queued_events(ctx, [qp](const mrc_async_event& e) {
    return (e.event_type == IBV_EVENT_QP_FATAL || e.event_type == IBV_EVENT_QP_ACCESS_ERR) && e.element.qp == qp;
  });
  --qp->init.send_cq->qps;
  if (qp->init.recv_cq != qp->init.send_cq) --qp->init.recv_cq->qps;
  if (qp->hint) --qp->hint->qps;
  api::ctl_detach_qp(*ctx->dev, qp->ctl_ev, qp->ctl_cc);
  {
    std::lock_guard<std::mutex> g(ctx->mu);
    --ctx->qps;
  }
  delete qp;
  return 0;
}

}  // namespace

MRC_EXPORT int mrc_get_qpn(mrc_qp* qp, uint32_t* qpn) {
  if (!qp || !qpn) {
    errno = EINVAL;
    return -1;
  }
  *qpn = qp->qpn;
  return 0;
}

MRC_EXPORT void* mrc_get_qp_context(mrc_qp* qp) { return qp ? qp->init.qp_context : nullptr; }

namespace {

// OCP's mrc_qp_cap bits to the core's (MRC_QP_TRIM_NACK_DEST is the
// core's kTrimNackDestUnsupported inverted), and back. False for a bit
// unknown or one the device does not advertise.
bool core_qp_cap(const core::EndpointConfig& ec, uint32_t cap, uint32_t* out) {
  constexpr uint32_t kKnown = MRC_QP_TRIM_NACK_DEST | MRC_QP_DYNAMIC_MPR | MRC_QP_CAP_SVC_TIME_DEST_UNSUPPORTED;
  if (cap & ~kKnown) return false;
  if ((cap & MRC_QP_TRIM_NACK_DEST) && !ec.cap_trim_nack) return false;
  if ((cap & MRC_QP_DYNAMIC_MPR) && !ec.cap_dynamic_mpr) return false;
  *out = (cap & MRC_QP_TRIM_NACK_DEST ? 0 : core::qp_cap::kTrimNackDestUnsupported) |
         (cap & MRC_QP_DYNAMIC_MPR ? core::qp_cap::kDynamicMpr : 0) |
         (cap & MRC_QP_CAP_SVC_TIME_DEST_UNSUPPORTED ? core::qp_cap::kSvcTimeDestUnsupported : 0);
  return true;
}

uint32_t ocp_qp_cap(const core::EndpointConfig& ec, uint32_t core_cap) {
  constexpr uint32_t kTrim = MRC_QP_TRIM_NACK_DEST, kDynamic = MRC_QP_DYNAMIC_MPR,
                     kSvc = MRC_QP_CAP_SVC_TIME_DEST_UNSUPPORTED;
  return (!(core_cap & core::qp_cap::kTrimNackDestUnsupported) && ec.cap_trim_nack ? kTrim : 0u) |
         (core_cap & core::qp_cap::kDynamicMpr ? kDynamic : 0u) |
         (core_cap & core::qp_cap::kSvcTimeDestUnsupported ? kSvc : 0u);
}

// An InfiniBand local ACK timeout (4.096 us * 2^t, 0 = none) as MRC's
// exponent (1.024 us * 2^t, at most 24): the same time, two steps up.
uint8_t mrc_timeout_of_ib(uint8_t ib) {
  if (ib == 0) return core::QpAttr{}.timeout;
  return static_cast<uint8_t>(std::min(ib + 2, 24));
}

}  // namespace

MRC_EXPORT int mrc_modify_qp(mrc_qp* qp, ibv_qp_attr* ia, int ibv_mask, mrc_qp_attr* ma, int mrc_attr_mask) {
  const auto mrc_mask = static_cast<uint32_t>(mrc_attr_mask);  // bit 31 (MRC_QP_VENDOR_CFG) included
  if (!qp || (ibv_mask && !ia) || (mrc_mask && !ma)) return EINVAL;
  // What an RC program sets on its way to RTS: translated (IBV_QP_TIMEOUT,
  // IBV_QP_RETRY_CNT), checked (IBV_QP_PORT) or, for what MRC has no use
  // for, accepted and ignored (no RNR: a WRITE WITH IMMEDIATE that finds no
  // receive waits in the responder's WIMM stash; no reads or atomics).
  constexpr int kIgnored = IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER |
                           IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC;
  constexpr int kAccepted = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_SQ_PSN | IBV_QP_PATH_MTU | IBV_QP_PORT | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            kIgnored;
  constexpr uint32_t kMrcKnown = MRC_QP_MAX_WIMM | MRC_QP_MAX_WIMM_DEST | MRC_QP_MPR | MRC_QP_MPR_DEST |
                                 MRC_QP_TIMEOUT | MRC_EV_PROFILE_ID | MRC_CC_PROFILE_ID | MRC_QP_HINT |
                                 MRC_QP_RETRY_CNT | MRC_QP_CAP;
  // Refused: MRC_QP_VENDOR_CFG (no vendor data is defined) and
  // MRC_QP_DYNAMIC_MPR_DEST (dynamic MPR is asked for with MRC_QP_CAP);
  // IBV_QP_ALT_PATH and IBV_QP_PATH_MIG_STATE (MRC migrates by itself).
  if ((ibv_mask & ~kAccepted) || (mrc_mask & ~kMrcKnown)) return EINVAL;
  if (!(ibv_mask & IBV_QP_STATE)) return EINVAL;
  api::SoftDevice& dev = *qp->ctx->dev;
  const core::EndpointConfig& ec = dev.rt->endpoint_config();
  // Every port (plane) carries every QP: a port number is only checked.
  if ((ibv_mask & IBV_QP_PORT) && (ia->port_num < 1 || ia->port_num > dev.rt->num_planes())) return EINVAL;
  using namespace core::qp_attr;
  core::QpAttr a;
  uint32_t mask = kState;
  bool ok = true;
  a.state = api::core_state(ia->qp_state, &ok);
  if (!ok) return EINVAL;
  if (ibv_mask & IBV_QP_CUR_STATE) {
    a.cur_state = api::core_state(ia->cur_qp_state, &ok);
    if (!ok) return EINVAL;
    mask |= kCurState;
  }
  if (ibv_mask & IBV_QP_AV) {
    const platform::SockAddr gid = api::gid_to_addr(ia->ah_attr.grh.dgid);
    // A configured device declares a peer it meets first here by its rule
    // (redeclaring the same planes changes nothing).
    if (dev.peer_planes)
      if (auto planes = dev.peer_planes(gid); !planes.empty()) (void)dev.rt->set_peer(gid, planes);
    auto peer = dev.rt->peer_id(gid);
    if (!peer) return EINVAL;
    a.peer = *peer;
    mask |= kPeer;
  }
  if (ibv_mask & IBV_QP_DEST_QPN) a.dest_qpn = ia->dest_qp_num, mask |= kDestQpn;
  if (ibv_mask & IBV_QP_RQ_PSN) a.rq_psn = ia->rq_psn, mask |= kRqPsn;
  if (ibv_mask & IBV_QP_SQ_PSN) a.sq_psn = ia->sq_psn, mask |= kSqPsn;
  if (ibv_mask & IBV_QP_PATH_MTU) {
    a.path_mtu = api::mtu_bytes(ia->path_mtu);
    if (a.path_mtu == 0) return EINVAL;
    mask |= kPathMtu;
  }
  if (mrc_mask & MRC_QP_MAX_WIMM) a.max_wimm = ma->wimm.max_wimm, mask |= kMaxWimm;
  if (mrc_mask & MRC_QP_MAX_WIMM_DEST) a.max_wimm_dest = ma->wimm.max_wimm_dest, mask |= kMaxWimmDest;
  if (mrc_mask & MRC_QP_MPR) a.mpr = ma->mpr.mpr, mask |= kMpr;
  if (mrc_mask & MRC_QP_MPR_DEST) a.mpr_dest = ma->mpr.mpr_dest, mask |= kMprDest;
  if (mrc_mask & MRC_QP_TIMEOUT) a.timeout = ma->timeout, mask |= kTimeout;
  if (mrc_mask & MRC_EV_PROFILE_ID) a.ev_profile_id = ma->profile.ev_profile_id, mask |= kEvProfileId;
  if (mrc_mask & MRC_CC_PROFILE_ID) a.cc_profile_id = ma->profile.cc_profile_id, mask |= kCcProfileId;
  if (mrc_mask & MRC_QP_RETRY_CNT) {
    a.retry_linear = ma->retry.linear_cnt;
    a.retry_exp = ma->retry.exp_cnt;
    mask |= kRetryCnt;
  }
  if (mrc_mask & MRC_QP_CAP) {
    if (!core_qp_cap(ec, ma->cap, &a.cap)) return EINVAL;
    mask |= kCap;
  }
  // The MRC attributes a transition needs and the program did not name
  // take their defaults (core::QpAttr's), or the ibverbs value they stand
  // for: a program written for RC (OCP's own benchmark) names none.
  auto cur = dev.rt->query_qp(qp->qpn);
  if (!cur) return EINVAL;
  const bool to_rts = a.state == core::QpState::rts && (cur->state == core::QpState::rtr ||
                                                         cur->state == core::QpState::rts);
  if (a.state == core::QpState::rtr && cur->state == core::QpState::init) {
    mask |= kMaxWimmDest | kMprDest;  // a.max_wimm_dest, a.mpr_dest: given or default
  }
  if (to_rts) {
    if ((ibv_mask & IBV_QP_TIMEOUT) && !(mrc_mask & MRC_QP_TIMEOUT))
      a.timeout = mrc_timeout_of_ib(ia->timeout), mask |= kTimeout;
    if ((ibv_mask & IBV_QP_RETRY_CNT) && !(mrc_mask & MRC_QP_RETRY_CNT))
      a.retry_linear = static_cast<uint8_t>(std::min<unsigned>(ia->retry_cnt, 7)), mask |= kRetryCnt;
  }
  if (a.state == core::QpState::rts && cur->state == core::QpState::rtr) mask |= kMaxWimm | kMpr | kRetryCnt | kTimeout;
  mrc_qp_hint* hint = nullptr;
  if (mrc_mask & MRC_QP_HINT) {
    // A hint is given on the way to INIT (reference 6.2), from this context.
    if (a.state != core::QpState::init || (ma->qp_hint && ma->qp_hint->ctx != qp->ctx)) return EINVAL;
    hint = ma->qp_hint;
    // The core sizes the QP's first window from it (core::QpHint); NULL
    // takes a hint back. Read when the QP is given it: a later
    // mrc_modify_qp_hint reaches QPs given the hint after the change.
    if (hint) {
      // A count of 0 is "not given", as the core's 0.
      const mrc_qp_hint_attr& h = hint->attr;
      a.hint.qps_per_peer = static_cast<uint32_t>(h.num_qps_per_peer);
      a.hint.send_peers = static_cast<uint32_t>(h.num_send_peers);
      a.hint.remote_recv_peers = static_cast<uint32_t>(h.num_remote_recv_peers);
    }
    mask |= kHint;
  }
  std::lock_guard<std::mutex> g(qp->post_mu);
  // A QP holds the controller profiles it names from INIT until RESET (or
  // destroy): the controller refuses to take them OFFLINE meanwhile.
  uint64_t ev_id = qp->ctl_ev, cc_id = qp->ctl_cc;
  if (mask & kEvProfileId) ev_id = a.ev_profile_id;
  if (mask & kCcProfileId) cc_id = a.cc_profile_id;
  if (a.state == core::QpState::reset) ev_id = cc_id = 0;
  const bool moves = ev_id != qp->ctl_ev || cc_id != qp->ctl_cc;
  if (moves)
    if (int e = api::ctl_attach_qp(dev, ev_id, cc_id); e != 0) return e;
  // Keys given by mrc_soft_set_qp_secure go with the transition to RTR;
  // none stays here after it (nor after a RESET).
  const bool secure_now = qp->secure && a.state == core::QpState::rtr && cur->state == core::QpState::init;
  if (secure_now) {
    a.secure = *qp->secure;
    mask |= kSecure;
  }
  const Status modified = dev.rt->modify_qp(qp->qpn, a, mask);
  api::erase_secure(a.secure);
  if (modified.ok() && (secure_now || a.state == core::QpState::reset)) api::erase_secure(qp->secure);
  if (!modified.ok()) {
    if (moves) api::ctl_detach_qp(dev, ev_id, cc_id);
    return api::errno_of(modified.error());
  }
  if (moves) api::ctl_set_qp_profiles(dev, qp, ev_id, cc_id);  // drops the old hold
  if (a.state == core::QpState::rtr) api::ctl_apply_denials(dev, qp);
  if (mask & kPeer) qp->dgid = ia->ah_attr.grh.dgid;
  if (mrc_mask & MRC_QP_HINT) {
    if (qp->hint) --qp->hint->qps;
    qp->hint = hint;
    if (hint) ++hint->qps;
  }
  return 0;
}

MRC_EXPORT int mrc_query_qp(mrc_qp* qp, ibv_qp_attr* ia, int ibv_mask, mrc_qp_attr* ma, int mrc_mask,
                            mrc_qp_init_attr* init) {
  (void)ibv_mask;
  (void)mrc_mask;
  if (!qp) return EINVAL;
  auto info = qp->ctx->dev->rt->query_qp(qp->qpn);
  if (!info) return EINVAL;
  if (ia) {
    *ia = ibv_qp_attr{};
    ia->qp_state = api::ibv_state(info->state);
    ia->cur_qp_state = ia->qp_state;
    ia->path_mtu = api::mtu_enum(info->attr.path_mtu);
    ia->dest_qp_num = info->attr.dest_qpn;
    ia->rq_psn = info->attr.rq_psn;
    ia->sq_psn = info->attr.sq_psn;
    ia->ah_attr.is_global = 1;
    ia->ah_attr.grh.dgid = qp->dgid;
    ia->ah_attr.port_num = 1;
    ia->cap = qp->init.cap;
    ia->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  }
  if (ma) {
    *ma = mrc_qp_attr{};
    ma->mpr.mpr = info->attr.mpr;
    ma->mpr.mpr_dest = info->attr.mpr_dest;
    ma->wimm.max_wimm = info->attr.max_wimm;
    ma->wimm.max_wimm_dest = info->attr.max_wimm_dest;
    ma->timeout = info->attr.timeout;
    ma->profile.ev_profile_id = info->attr.ev_profile_id;
    ma->profile.cc_profile_id = info->attr.cc_profile_id;
    ma->retry.linear_cnt = info->attr.retry_linear;
    ma->retry.exp_cnt = info->attr.retry_exp;
    ma->qp_hint = qp->hint;
    ma->cap = ocp_qp_cap(qp->ctx->dev->rt->endpoint_config(), info->attr.cap);
  }
  if (init) *init = qp->init;
  return 0;
}

MRC_EXPORT int mrc_post_send(mrc_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  if (bad_wr) *bad_wr = nullptr;
  if (!qp) return EINVAL;
  constexpr unsigned kFlags = IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_FENCE | IBV_SEND_SOLICITED;
  std::lock_guard<std::mutex> g(qp->post_mu);
  for (ibv_send_wr* w = wr; w; w = w->next) {
    auto fail = [&](int e) {
      if (bad_wr) *bad_wr = w;
      return e;
    };
    const bool imm = w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    if ((w->opcode != IBV_WR_RDMA_WRITE && !imm) || (w->send_flags & ~kFlags) || w->num_sge < 0 ||
        static_cast<uint32_t>(w->num_sge) > std::max<uint32_t>(1, qp->init.cap.max_send_sge) ||
        (w->num_sge > 0 && !w->sg_list))
      return fail(EINVAL);
    core::SendWr c;
    c.wr_id = w->wr_id;
    c.opcode = imm ? core::WrOpcode::rdma_write_with_imm : core::WrOpcode::rdma_write;
    c.remote_addr = w->wr.rdma.remote_addr;
    c.rkey = w->wr.rdma.rkey;
    c.imm = imm ? ntohl(w->imm_data) : 0;
    c.signaled = (w->send_flags & IBV_SEND_SIGNALED) != 0;
    uint8_t inline_buf[core::kMaxInlineData];
    core::Sge sges[core::kMaxSge];
    if (w->send_flags & IBV_SEND_INLINE) {
      size_t total = 0;
      for (int i = 0; i < w->num_sge; ++i) total += w->sg_list[i].length;
      if (total > qp->init.cap.max_inline_data) return fail(EINVAL);
      size_t at = 0;
      for (int i = 0; i < w->num_sge; ++i) {
        std::memcpy(inline_buf + at, reinterpret_cast<const void*>(w->sg_list[i].addr), w->sg_list[i].length);
        at += w->sg_list[i].length;
      }
      c.inline_data = {inline_buf, total};
    } else if (w->num_sge == 1) {
      c.local_addr = w->sg_list[0].addr;
      c.lkey = w->sg_list[0].lkey;
      c.length = w->sg_list[0].length;
    } else if (w->num_sge > 1) {
      for (int i = 0; i < w->num_sge; ++i)
        sges[i] = core::Sge{w->sg_list[i].addr, w->sg_list[i].length, w->sg_list[i].lkey};
      c.sg_list = {sges, static_cast<size_t>(w->num_sge)};
    }
    if (Status s = qp->ctx->dev->rt->post_send(qp->qpn, c); !s) return fail(api::errno_of(s.error()));
  }
  return 0;
}

MRC_EXPORT int mrc_post_recv(mrc_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  if (bad_wr) *bad_wr = nullptr;
  if (!qp) return EINVAL;
  std::lock_guard<std::mutex> g(qp->post_mu);
  for (ibv_recv_wr* w = wr; w; w = w->next) {
    if (Status s = qp->ctx->dev->rt->post_recv(qp->qpn, core::RecvWr{w->wr_id}); !s) {
      if (bad_wr) *bad_wr = w;
      return api::errno_of(s.error());
    }
  }
  return 0;
}

// ------------------------------------------------------------------ async events

MRC_EXPORT int mrc_get_async_event(mrc_context* ctx, mrc_async_event* event) {
  if (!api::context_ok(ctx) || !event) return fail_errno(EINVAL);
  if (int e = api::wait_event(ctx->async, nullptr); e != 0) return fail_errno(e);
  {
    std::lock_guard<std::mutex> g(ctx->async.mu);
    if (ctx->async.q.empty()) return fail_errno(EAGAIN);
    *event = ctx->async.q.front();
    ctx->async.q.pop_front();
  }
  // Obtained and not yet acknowledged: destroying its QP or CQ waits.
  if (api::PendingAcks* a = api::acks_of(*event)) a->add();
  return 0;
}

MRC_EXPORT int mrc_get_async_fd(mrc_context* ctx) {
  if (!api::context_ok(ctx)) {
    errno = EINVAL;
    return -1;
  }
  return ctx->async.fd();
}

MRC_EXPORT void mrc_ack_async_event(mrc_async_event* event) {
  if (!event) return;
  if (api::PendingAcks* a = api::acks_of(*event)) a->ack();
}

}  // extern "C"
