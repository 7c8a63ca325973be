// SPDX-License-Identifier: BSD-2-Clause
// mrc_soft.h: opening a software device, its GIDs and peers, PDs and MRs.
#include <arpa/inet.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <unordered_set>

#include "api/export.hpp"
#include "api/objects.hpp"
#include "api/translate.hpp"
#include "openmrc/mrc_soft.h"
#include "platform/os_error.hpp"

namespace mrc::api {

namespace {

// The registry of open devices: lets every entry point tell our contexts
// from anything else a caller passes (mrc_query_device reports "not MRC"
// for a foreign ibv_context instead of reading through it).
std::mutex& registry_mu() {
  static std::mutex m;
  return m;
}
std::set<ibv_context*>& registry() {
  static std::set<ibv_context*> r;
  return r;
}

}  // namespace

namespace {
std::mutex& handles_mu() {
  static std::mutex m;
  return m;
}
std::unordered_set<const void*>& handles() {
  static std::unordered_set<const void*> h;
  return h;
}
}  // namespace

void handle_add(const void* h) {
  std::lock_guard<std::mutex> g(handles_mu());
  handles().insert(h);
}

bool handle_take(const void* h) {
  std::lock_guard<std::mutex> g(handles_mu());
  return handles().erase(h) != 0;
}

SoftDevice* soft_device(ibv_context* ctx) {
  if (!ctx) return nullptr;
  std::lock_guard<std::mutex> g(registry_mu());
  return registry().count(ctx) ? reinterpret_cast<SoftDevice*>(ctx) : nullptr;
}

SoftDevice* soft_device_of(const ibv_device* dev) {
  if (!dev) return nullptr;
  std::lock_guard<std::mutex> g(registry_mu());
  for (ibv_context* c : registry()) {
    auto* d = reinterpret_cast<SoftDevice*>(c);
    if (&d->ibv_dev == dev) return d;
  }
  return nullptr;
}

platform::SockAddr gid_to_addr(const ibv_gid& gid) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(gid.raw, kMapped, 12) == 0)
    return platform::SockAddr::ipv4({gid.raw[12], gid.raw[13], gid.raw[14], gid.raw[15]}, 0);
  std::array<uint8_t, 16> a;
  std::memcpy(a.data(), gid.raw, 16);
  return platform::SockAddr::ipv6(a, 0);
}

ibv_gid addr_to_gid(const platform::SockAddr& a) {
  ibv_gid g{};
  const auto b = a.address_bytes();
  if (a.is_ipv4()) {
    g.raw[10] = g.raw[11] = 0xff;
    std::memcpy(g.raw + 12, b.data(), 4);
  } else {
    std::memcpy(g.raw, b.data(), 16);
  }
  return g;
}

int errno_of(Errc e) {
  switch (e) {
    case Errc::ok: return 0;
    case Errc::invalid_argument:
    case Errc::bad_state: return EINVAL;
    case Errc::not_found: return EINVAL;
    case Errc::busy: return EBUSY;
    case Errc::would_block: return EAGAIN;
    case Errc::too_big: return E2BIG;
    case Errc::not_supported: return EOPNOTSUPP;
    case Errc::no_memory: return ENOMEM;
    case Errc::permission: return EPERM;
    default: return EINVAL;
  }
}

}  // namespace mrc::api

using mrc::api::SoftDevice;
using mrc::api::soft_device;

extern "C" {

MRC_EXPORT ibv_context* mrc_soft_open_device(const mrc_soft_device_attr* attr) try {
  // The count is checked before the array is read: a count larger than
  // the array would read past it.
  if (!attr || !attr->plane_addrs || attr->num_planes < 1 || attr->num_planes > 32) {
    std::fprintf(stderr, "mrc_soft_open_device: plane_addrs: give 1..32 plane addresses\n");
    errno = EINVAL;
    return nullptr;
  }
  mrc::rt::DeviceConfig cfg;
  for (int i = 0; i < attr->num_planes; ++i) {
    if (!attr->plane_addrs[i]) {
      std::fprintf(stderr, "mrc_soft_open_device: plane_addrs[%d] is NULL\n", i);
      errno = EINVAL;
      return nullptr;
    }
    cfg.planes.emplace_back(attr->plane_addrs[i]);
  }
  if (attr->udp_port) cfg.udp_port = attr->udp_port;
  // The enums as the 32-bit values a C caller stores: any int can arrive,
  // and loading one outside an enum's range as that enum is undefined in C++.
  static_assert(sizeof(attr->ev_mode) == sizeof(int) && sizeof(attr->transport) == sizeof(int));
  int ev_mode, transport;
  std::memcpy(&ev_mode, &attr->ev_mode, sizeof ev_mode);
  std::memcpy(&transport, &attr->transport, sizeof transport);
  cfg.ev_mode = ev_mode == MRC_SOFT_EV_STEV   ? mrc::rt::EvWire::stev
                : ev_mode == MRC_SOFT_EV_SRV6 ? mrc::rt::EvWire::srv6
                                              : mrc::rt::EvWire::udp;
  if (ev_mode != MRC_SOFT_EV_UDP && ev_mode != MRC_SOFT_EV_STEV && ev_mode != MRC_SOFT_EV_SRV6) {
    std::fprintf(stderr,
                 "mrc_soft_open_device: ev_mode: must be MRC_SOFT_EV_UDP, MRC_SOFT_EV_STEV or MRC_SOFT_EV_SRV6\n");
    errno = EINVAL;
    return nullptr;
  }
  if (transport != MRC_SOFT_TRANSPORT_MRC && transport != MRC_SOFT_TRANSPORT_ROCE_RC) {
    std::fprintf(stderr,
                 "mrc_soft_open_device: transport: must be MRC_SOFT_TRANSPORT_MRC or MRC_SOFT_TRANSPORT_ROCE_RC\n");
    errno = EINVAL;
    return nullptr;
  }
  if (attr->ev_port_base) cfg.ev_port_base = attr->ev_port_base;
  if (attr->evs_per_plane) cfg.evs_per_plane = attr->evs_per_plane;
  if (attr->burst) cfg.burst = attr->burst;
  if (attr->num_engines) cfg.engines = attr->num_engines;
  cfg.busy_poll = attr->busy_poll != 0;
  cfg.app_progress = attr->engines_only == 0;
  cfg.seed = attr->seed;
  if (attr->socket_buffer_bytes) cfg.socket_buffer_bytes = attr->socket_buffer_bytes;
  if (attr->pcap_path) cfg.pcap_path = attr->pcap_path;
  cfg.watch_carrier = attr->no_carrier_watch == 0;
  if (attr->dscp_control < 0 || attr->dscp_control > 63) {
    std::fprintf(stderr, "mrc_soft_open_device: dscp_control: must be 0..63 (a DSCP, or 0 to mark nothing)\n");
    errno = EINVAL;
    return nullptr;
  }
  cfg.dscp_control = static_cast<uint8_t>(attr->dscp_control);
  if (attr->link_rate_bps != 0 && attr->link_rate_bps != UINT64_MAX && attr->link_rate_bps < 1000000) {
    std::fprintf(stderr,
                 "mrc_soft_open_device: link_rate_bps: must be at least 1000000 (1 Mbit/s), 0 to learn it from the "
                 "interface, or UINT64_MAX for no pacing\n");
    errno = EINVAL;
    return nullptr;
  }
  cfg.link_rate_bps = attr->link_rate_bps == UINT64_MAX ? mrc::rt::DeviceConfig::kUnpaced : attr->link_rate_bps;
  cfg.ecn = attr->no_ecn == 0;
  cfg.raw_send = attr->raw_send != 0;
  cfg.io_uring = attr->no_io_uring == 0;
  if (attr->channel_bulk_bytes_per_ms != 0)
    cfg.bulk_bytes_per_ms = attr->channel_bulk_bytes_per_ms > 0 ? static_cast<uint64_t>(attr->channel_bulk_bytes_per_ms) : 0;
  std::string why;
  auto rt = mrc::rt::Device::open(cfg, &why);
  if (!rt) {
    std::fprintf(stderr, "mrc_soft_open_device: %s\n", why.c_str());
    // The capture file's own errno (the writer records it) says more than
    // an address error would.
    if (why.rfind("pcap:", 0) == 0 && mrc::platform::last_error().errno_value != 0) {
      errno = mrc::platform::last_error().errno_value;
      return nullptr;
    }
    switch (rt.error()) {
      case mrc::Errc::busy: errno = EADDRINUSE; break;
      case mrc::Errc::not_found: errno = EADDRNOTAVAIL; break;
      case mrc::Errc::no_memory: errno = ENOMEM; break;
      default: errno = rt.error() == mrc::Errc::invalid_argument ? EINVAL : EADDRNOTAVAIL; break;
    }
    return nullptr;
  }
  auto* d = new SoftDevice;
  d->rt = std::move(*rt);
  d->transport = transport == MRC_SOFT_TRANSPORT_ROCE_RC ? mrc::core::Transport::roce_rc : mrc::core::Transport::mrc;
  std::snprintf(d->ibv_dev.name, sizeof d->ibv_dev.name, "mrc_soft");
  std::snprintf(d->ibv_dev.dev_name, sizeof d->ibv_dev.dev_name, "mrc_soft");
  d->ibv_dev.node_type = IBV_NODE_CA;
  d->ibv_dev.transport_type = IBV_TRANSPORT_IB;
  d->ibv.device = &d->ibv_dev;
  d->ibv.cmd_fd = -1;
  d->ibv.async_fd = -1;
  d->ibv.num_comp_vectors = 1;
  pthread_mutex_init(&d->ibv.mutex, nullptr);
  // Async events go to the context owning the object they name.
  d->rt->set_event_sink([d](const mrc::core::Event& e) { mrc::api::route_event(*d, e); });
  {
    std::lock_guard<std::mutex> g(mrc::api::registry_mu());
    mrc::api::registry().insert(&d->ibv);
  }
  return &d->ibv;
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

MRC_EXPORT int mrc_soft_close_device(ibv_context* ctx) {
  SoftDevice* d = soft_device(ctx);
  if (!d) return EINVAL;
  {
    std::lock_guard<std::mutex> g(d->mu);
    if (d->contexts || d->pds || d->mrs) return EBUSY;
  }
  {
    std::lock_guard<std::mutex> g(mrc::api::registry_mu());
    mrc::api::registry().erase(ctx);
  }
  d->rt.reset();  // stops the engine
  pthread_mutex_destroy(&d->ibv.mutex);
  delete d;
  return 0;
}

MRC_EXPORT int mrc_soft_query_gid(ibv_context* ctx, int plane, ibv_gid* gid) {
  SoftDevice* d = soft_device(ctx);
  if (!d || !gid || plane < 0 || static_cast<uint32_t>(plane) >= d->rt->num_planes()) return EINVAL;
  *gid = mrc::api::addr_to_gid(d->rt->plane_address(static_cast<uint32_t>(plane)));
  return 0;
}

MRC_EXPORT int mrc_soft_gid_to_str(const ibv_gid* gid, char* buf, size_t len) try {
  if (!gid || !buf) return EINVAL;
  const std::string s = mrc::api::gid_to_addr(*gid).host_string();
  if (s.size() + 1 > len) return EINVAL;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return 0;
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

MRC_EXPORT int mrc_soft_str_to_gid(const char* addr, ibv_gid* gid) {
  if (!addr || !gid) return EINVAL;
  auto a = mrc::platform::SockAddr::parse(addr);
  if (!a || a->port() != 0) return EINVAL;
  *gid = mrc::api::addr_to_gid(*a);
  return 0;
}

MRC_EXPORT int mrc_soft_set_peer(ibv_context* ctx, const ibv_gid* gid, const ibv_gid* plane_gids, int num_planes) try {
  SoftDevice* d = soft_device(ctx);
  if (!d || !gid || !plane_gids || num_planes < 1) return EINVAL;
  std::vector<mrc::platform::SockAddr> planes;
  for (int i = 0; i < num_planes; ++i) planes.push_back(mrc::api::gid_to_addr(plane_gids[i]));
  return mrc::api::errno_of(d->rt->set_peer(mrc::api::gid_to_addr(*gid), planes).error());
} catch (const std::bad_alloc&) {
  return ENOMEM;
}

MRC_EXPORT ibv_pd* mrc_soft_alloc_pd(ibv_context* ctx) try {
  SoftDevice* d = soft_device(ctx);
  if (!d) {
    errno = EINVAL;
    return nullptr;
  }
  auto pd = d->rt->alloc_pd();
  if (!pd) {
    errno = mrc::api::errno_of(pd.error());
    return nullptr;
  }
  auto* p = new mrc::api::SoftPd;
  p->dev = d;
  p->core_pd = *pd;
  p->ibv.context = ctx;
  p->ibv.handle = *pd;
  std::lock_guard<std::mutex> g(d->mu);
  ++d->pds;
  return &p->ibv;
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

MRC_EXPORT int mrc_soft_dealloc_pd(ibv_pd* pd) {
  if (!pd || !soft_device(pd->context)) return EINVAL;
  auto* p = reinterpret_cast<mrc::api::SoftPd*>(pd);
  if (mrc::Status s = p->dev->rt->dealloc_pd(p->core_pd); !s) return mrc::api::errno_of(s.error());
  {
    std::lock_guard<std::mutex> g(p->dev->mu);
    --p->dev->pds;
  }
  delete p;
  return 0;
}

MRC_EXPORT ibv_mr* mrc_soft_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) try {
  if (!pd || !soft_device(pd->context)) {
    errno = EINVAL;
    return nullptr;
  }
  // REMOTE_READ is accepted (RoCE applications ask for it out of habit; MRC
  // has no READ, so it grants nothing); other bits name features MRC lacks.
  constexpr int kKnown = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if ((access & ~kKnown) != 0) {
    errno = EINVAL;
    return nullptr;
  }
  auto* p = reinterpret_cast<mrc::api::SoftPd*>(pd);
  uint32_t acc = 0;
  if (access & IBV_ACCESS_LOCAL_WRITE) acc |= mrc::core::access::kLocalWrite;
  if (access & IBV_ACCESS_REMOTE_WRITE) acc |= mrc::core::access::kRemoteWrite;
  auto mr = p->dev->rt->reg_mr(addr, length, acc, p->core_pd);
  if (!mr) {
    errno = mrc::api::errno_of(mr.error());
    return nullptr;
  }
  auto* m = new mrc::api::SoftMr;
  m->dev = p->dev;
  m->ibv.context = pd->context;
  m->ibv.pd = pd;
  m->ibv.addr = addr;
  m->ibv.length = length;
  m->ibv.handle = mr->lkey;
  m->ibv.lkey = mr->lkey;
  m->ibv.rkey = mr->rkey;
  {
    std::lock_guard<std::mutex> g(p->dev->mu);
    ++p->dev->mrs;
  }
  mrc::api::handle_add(&m->ibv);
  return &m->ibv;
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

MRC_EXPORT int mrc_soft_dereg_mr(ibv_mr* mr) {
  if (!mr || !mrc::api::handle_take(mr)) return EINVAL;  // never registered, or deregistered already
  auto* m = reinterpret_cast<mrc::api::SoftMr*>(mr);
  if (mrc::Status s = m->dev->rt->dereg_mr(mr->lkey); !s) {
    mrc::api::handle_add(mr);
    return mrc::api::errno_of(s.error());
  }
  {
    std::lock_guard<std::mutex> g(m->dev->mu);
    --m->dev->mrs;
  }
  delete m;
  return 0;
}

MRC_EXPORT int mrc_soft_query_limits(ibv_context* ctx, mrc_soft_device_limits* out) {
  SoftDevice* d = soft_device(ctx);
  if (!d || !out) return EINVAL;
  const mrc::core::EndpointConfig& ec = d->rt->endpoint_config();
  *out = mrc_soft_device_limits{};
  out->max_qp = ec.max_qps;
  out->max_qp_wr = std::min(ec.max_send_wr, ec.max_recv_wr);
  out->max_sge = mrc::core::kMaxSge;
  out->max_inline_data = mrc::core::kMaxInlineData;
  out->max_cqe = mrc::core::Endpoint::kMaxCqe;
  out->max_msg_size = 1u << 31;
  out->num_planes = d->rt->num_planes();
  return 0;
}

MRC_EXPORT int mrc_soft_query_stats(ibv_context* ctx, mrc_soft_stats* out) {
  SoftDevice* d = soft_device(ctx);
  if (!d || !out) return EINVAL;
  const mrc::rt::DeviceStats s = d->rt->stats();
  *out = mrc_soft_stats{};
  out->tx_packets = s.tx_packets;
  out->tx_bytes = s.tx_bytes;
  out->tx_datagrams = s.tx_datagrams;
  out->tx_eagain = s.tx_eagain;
  out->tx_queue_drops = s.tx_queue_drops;
  out->tx_icmp_errors = s.tx_icmp_errors;
  out->losses_local = s.losses_local;
  out->tx_paced = s.tx_paced;
  out->tx_errors = s.tx_errors;
  out->tx_uring_submits = s.tx_uring_submits;
  out->rx_packets = s.rx_packets;
  out->rx_bytes = s.rx_bytes;
  out->rx_icrc_errors = s.rx_icrc_errors;
  out->rx_unknown_source = s.rx_unknown_source;
  out->rx_malformed = s.core.rx_malformed + s.rx_short;
  out->rx_dropped = s.core.rx_unknown_qp + s.core.rx_wrong_peer + s.core.rx_bad_state + s.core.rx_psn_out_of_window +
                    s.core.rx_bad_ack + s.core.rx_nak_unconfirmed + s.core.rx_ep_refused + s.core.rx_auth_failures +
                    s.core.rx_replays + s.core.rx_bad_key_id;
  out->rx_auth_failures = s.core.rx_auth_failures + s.core.rx_bad_key_id;
  out->rx_replays = s.core.rx_replays;
  out->rx_stale_acks = s.core.rx_stale_ack;
  out->rx_access_errors = s.core.rx_access_errors;
  out->retransmissions = s.retransmissions;
  out->carrier_downs = s.carrier_down;
  out->carrier_ups = s.carrier_up;
  out->carrier_watched_mask = s.carrier_watched;
  out->losses_rule = s.losses_rule;
  out->losses_timeout = s.losses_timeout;
  out->tail_probes = s.tail_probes;
  out->spurious_losses = s.spurious_losses;
  out->rx_duplicates = s.duplicates_received;
  return 0;
}

MRC_EXPORT int mrc_soft_query_qp_plane_packets(mrc_qp* qp, uint64_t* packets, int num_planes) try {
  if (!qp || !packets || num_planes < 1 || !qp->ctx || !qp->ctx->dev || soft_device(&qp->ctx->dev->ibv) != qp->ctx->dev)
    return -EINVAL;
  SoftDevice* d = qp->ctx->dev;
  std::fill(packets, packets + num_planes, uint64_t{0});
  std::vector<mrc::core::EvInfo> evs(64);
  for (;;) {
    const size_t n = d->rt->query_evs(qp->qpn, evs);
    if (n <= evs.size()) {
      evs.resize(n);
      break;
    }
    evs.resize(n);  // the set grew: ask again with room for all
  }
  for (const auto& e : evs)
    if (e.port < num_planes) packets[e.port] += e.packets_sent;
  return static_cast<int>(d->rt->num_planes());
} catch (const std::bad_alloc&) {
  return -EINVAL;
}

MRC_EXPORT int mrc_soft_query_qp_stats(mrc_qp* qp, mrc_soft_qp_stats* stats) {
  if (!qp || !stats || !qp->ctx || !qp->ctx->dev || soft_device(&qp->ctx->dev->ibv) != qp->ctx->dev) return -EINVAL;
  const std::optional<mrc::core::QpInfo> info = qp->ctx->dev->rt->query_qp(qp->qpn);
  if (!info) return -EINVAL;
  const mrc::core::QpStats& s = info->stats;
  *stats = mrc_soft_qp_stats{};
  stats->data_packets_sent = s.data_packets_sent;
  stats->retransmissions = s.retransmissions;
  stats->bytes_delivered = s.bytes_delivered;
  stats->bytes_completed = s.bytes_acked;
  stats->losses_rule = s.losses_rule;
  stats->losses_timeout = s.losses_timeout;
  stats->spurious_losses = s.spurious_losses;
  stats->ev_suspected = info->path.suspected;
  stats->ev_retired = info->path.retired;
  stats->ev_resurrected = info->path.resurrected;
  return 0;
}

MRC_EXPORT int mrc_soft_set_qp_secure(mrc_qp* qp, const mrc_soft_qp_secure* secure) {
  if (!qp || !secure || !qp->ctx || !qp->ctx->dev || soft_device(&qp->ctx->dev->ibv) != qp->ctx->dev) return EINVAL;
  mrc::api::SoftDevice& dev = *qp->ctx->dev;
  mrc::core::QpSecure s;
  switch (secure->mode) {
    case MRC_SOFT_SECURE_OFF: s.mode = mrc::core::SecureMode::off; break;
    case MRC_SOFT_SECURE_INTEGRITY: s.mode = mrc::core::SecureMode::integrity; break;
    case MRC_SOFT_SECURE_ENCRYPT: s.mode = mrc::core::SecureMode::encrypt; break;
    default: return EINVAL;
  }
  if (s.mode != mrc::core::SecureMode::off && dev.transport != mrc::core::Transport::mrc) return EOPNOTSUPP;
  const std::pair<const mrc_soft_secure_key*, mrc::core::SecureKey*> keys[] = {{&secure->send, &s.send},
                                                                              {&secure->recv, &s.recv}};
  for (const auto& [from, to] : keys) {
    if (from->key_len > sizeof from->key) return EINVAL;
    std::memcpy(to->key.data(), from->key, from->key_len);
    to->key_len = static_cast<uint8_t>(from->key_len);
    to->salt = from->salt;
    to->key_id = from->key_id;
  }
  const bool valid = mrc::core::validate_secure(s).ok();
  std::lock_guard<std::mutex> g(qp->post_mu);
  const auto cur = dev.rt->query_qp(qp->qpn);
  if (valid && cur && (cur->state == mrc::core::QpState::reset || cur->state == mrc::core::QpState::init)) {
    if (s.mode == mrc::core::SecureMode::off) mrc::api::erase_secure(qp->secure);
    else qp->secure = std::make_unique<mrc::core::QpSecure>(s);
  }
  mrc::api::erase_secure(s);
  if (!valid || !cur || (cur->state != mrc::core::QpState::reset && cur->state != mrc::core::QpState::init))
    return EINVAL;
  return 0;
}

}  // extern "C"
