// SPDX-License-Identifier: BSD-2-Clause
// Device: peers and their plane addresses, port state (the controller's
// enable and the carrier), the carrier watch over rtnetlink, and endpoint
// requests (probes, port-status updates).

#include "runtime/device.hpp"

#include <algorithm>
#include <cstdio>

#include "platform/os_error.hpp"
#include "runtime/device_internal.hpp"

namespace mrc::rt {

using namespace detail;

namespace {

/// A busy engine 0 (it never sleeps in epoll) still reads link changes this
/// often: a nonblocking recvmsg that finds nothing, ~1 us per millisecond.
constexpr Duration kCarrierPoll = Duration::ms(1);

/// 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104: a loopback address has no
/// carrier of its own to watch.
bool loopback_address(const platform::SockAddr& a) {
  const auto b = a.address_bytes();
  if (a.is_ipv4()) return b[0] == 127;
  static constexpr uint8_t kOne[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(b.begin(), b.end(), kOne) || (std::equal(kMapped, kMapped + 12, b.begin()) && b[12] == 127);
}

}  // namespace

// ----------------------------------------------------------------- peers

uint64_t Device::add_peer_locked(const platform::SockAddr& gid, std::vector<platform::SockAddr> planes) {
  Peer p;
  p.gid = without_port(gid);
  for (platform::SockAddr& a : planes) {
    a.set_port(cfg_.udp_port);
    p.ips.push_back(ip_of(a));
  }
  p.planes = std::move(planes);
  peers_.push_back(std::move(p));
  const uint64_t id = peers_.size();
  for (const platform::SockAddr& a : peers_.back().planes) peer_by_addr_[without_port(a)] = id;
  peer_by_addr_[peers_.back().gid] = id;
  return id;
}

// True if a QP on any engine is connected (RTR/RTS) to `peer`.
bool Device::peer_connected_locked(uint64_t peer) {
  for (auto& e : engines_) {
    std::lock_guard g(e->mu);
    for (uint32_t qpn : e->ep->qp_numbers()) {
      auto q = e->ep->query_qp(qpn);
      if (q && q->peer == peer && (q->state == core::QpState::rtr || q->state == core::QpState::rts)) return true;
    }
  }
  return false;
}

Status Device::set_peer(const platform::SockAddr& gid, std::span<const platform::SockAddr> planes) {
  if (planes.size() != planes_.size()) return Errc::invalid_argument;
  for (const auto& a : planes)
    if (a.family() != planes_[0].addr.family()) return Errc::invalid_argument;
  if (gid.family() != planes_[0].addr.family()) return Errc::invalid_argument;
  std::unique_lock<std::shared_mutex> g(peers_mu_);
  auto it = peer_by_addr_.find(without_port(gid));
  if (it == peer_by_addr_.end()) {
    add_peer_locked(gid, std::vector<platform::SockAddr>(planes.begin(), planes.end()));
    return {};
  }
  // Redeclaring a peer: the same addresses are a no-op; new ones are
  // refused while a QP talks to it (its packets would change destination
  // mid-connection).
  const uint64_t id = it->second;
  Peer& p = peers_[id - 1];
  bool same = true;
  for (size_t i = 0; i < planes.size(); ++i) same = same && without_port(p.planes[i]) == without_port(planes[i]);
  if (same) return {};
  if (peer_connected_locked(id)) return Errc::busy;
  for (const auto& a : p.planes) peer_by_addr_.erase(without_port(a));
  p.planes.assign(planes.begin(), planes.end());
  p.ips.clear();
  for (auto& a : p.planes) {
    a.set_port(cfg_.udp_port);
    p.ips.push_back(ip_of(a));
    peer_by_addr_[without_port(a)] = id;
  }
  peer_by_addr_[p.gid] = id;
  return {};
}

Result<uint64_t> Device::peer_id(const platform::SockAddr& gid) {
  if (gid.family() != planes_[0].addr.family()) return Errc::invalid_argument;
  std::unique_lock<std::shared_mutex> g(peers_mu_);
  auto it = peer_by_addr_.find(without_port(gid));
  if (it != peer_by_addr_.end()) return it->second;
  return add_peer_locked(gid, std::vector<platform::SockAddr>(planes_.size(), without_port(gid)));
}

std::optional<platform::SockAddr> Device::peer_gid(uint64_t peer) const {
  std::shared_lock<std::shared_mutex> g(const_cast<std::shared_mutex&>(peers_mu_));
  if (peer == 0 || peer > peers_.size()) return std::nullopt;
  return peers_[peer - 1].gid;
}

Status Device::set_port_admin(uint32_t plane, bool up) {
  if (plane >= num_planes()) return Errc::invalid_argument;
  std::lock_guard<std::mutex> a(port_admin_mu_);
  const uint32_t bit = 1u << plane;
  const uint32_t before = admin_up_.load(std::memory_order_acquire);
  if (((before & bit) != 0) == up) return {};
  admin_up_.store(up ? before | bit : before & ~bit, std::memory_order_release);
  apply_port_locked(plane);
  return {};
}

void Device::set_port_carrier(uint32_t plane, bool up) {
  std::lock_guard<std::mutex> a(port_admin_mu_);
  const uint32_t bit = 1u << plane;
  const uint32_t before = carrier_up_.load(std::memory_order_acquire);
  if (((before & bit) != 0) == up) return;
  carrier_up_.store(up ? before | bit : before & ~bit, std::memory_order_release);
  (up ? carrier_ups_ : carrier_downs_).fetch_add(1, std::memory_order_relaxed);
  apply_port_locked(plane);
}

void Device::apply_port_locked(uint32_t plane) {
  const uint32_t bit = 1u << plane;
  const bool up = (admin_up_.load(std::memory_order_acquire) & carrier_up_.load(std::memory_order_acquire) & bit) != 0;
  const uint32_t before = port_up_.load(std::memory_order_acquire);
  if (((before & bit) != 0) == up) return;
  port_up_.store(up ? before | bit : before & ~bit, std::memory_order_release);
  // One engine at a time: each core takes its plane out (or back), and
  // queues the port-status updates to its own peers.
  for (auto& e : engines_) {
    {
      std::lock_guard g(e->mu);
      e->ep->set_port_up(clock_.now(), static_cast<uint8_t>(plane), up);
    }
    kick(*e);
  }
}

// ----------------------------------------------------------------- carrier

void Device::open_carrier_watch() {
  auto fail = [this](const std::string& what) {
    // Once per device: the device works, its ports follow the controller.
    std::fprintf(stderr,
                 "mrc: software device: not watching the planes' carrier (%s); a plane whose link dies leaves "
                 "service only when its paths time out\n",
                 what.c_str());
    carrier_failed_ = true;
    carrier_.reset();
  };
  auto c = std::make_unique<CarrierWatch>();
  c->watched.assign(num_planes(), false);
  c->ifindex.assign(num_planes(), 0);
  bool any = false;
  for (uint32_t p = 0; p < num_planes(); ++p) {
    if (loopback_address(planes_[p].addr)) continue;
    auto idx = platform::interface_of(planes_[p].addr);
    if (!idx) {
      // Bound, yet on no interface (a non-local bind): nothing to watch.
      if (idx.error() == Errc::not_found) continue;
      return fail("plane " + std::to_string(p) + " (" + planes_[p].addr.host_string() +
                  "): " + platform::last_error_message());
    }
    c->watched[p] = true;
    c->ifindex[p] = *idx;
    any = true;
  }
  if (!any) return;  // every plane on loopback: no socket needed
  auto mon = platform::LinkMonitor::open();
  if (!mon) return fail("netlink: " + platform::last_error_message());
  c->mon = std::move(*mon);
  if (Status s = c->mon.dump(c->buf, Duration::s(1)); !s) return fail("netlink dump: " + platform::last_error_message());
  // A loopback interface has no carrier to lose, whatever its address.
  for (const platform::LinkStatus& l : c->buf)
    for (uint32_t p = 0; p < num_planes(); ++p)
      if (c->watched[p] && c->ifindex[p] == l.ifindex && (l.flags & platform::link_flags::kLoopback))
        c->watched[p] = false;
  uint32_t mask = 0;
  for (uint32_t p = 0; p < num_planes(); ++p)
    if (c->watched[p]) mask |= 1u << p;
  if (mask == 0) return;
  Engine& e0 = *engines_[0];
  if (!e0.epoll.add(c->mon.fd(), platform::events::kReadable, kLinkTag) ||
      !e0.quiet_epoll.add(c->mon.fd(), platform::events::kReadable, kLinkTag))
    return fail("epoll: " + platform::last_error_message());
  carrier_watched_.store(mask, std::memory_order_release);
  std::vector<platform::LinkStatus> initial;
  initial.swap(c->buf);
  carrier_ = std::move(c);
  for (const platform::LinkStatus& l : initial)
    for (uint32_t p = 0; p < num_planes(); ++p)
      if (carrier_->watched[p] && carrier_->ifindex[p] == l.ifindex) set_port_carrier(p, l.carrier_up);
  carrier_->next_poll = clock_.now() + kCarrierPoll;
}

void Device::poll_carrier() {
  CarrierWatch& c = *carrier_;
  c.readable = false;
  c.next_poll = clock_.now() + kCarrierPoll;
  c.buf.clear();
  // An error leaves the states as they are; the next poll tries again.
  (void)c.mon.read(c.buf);
  if (c.mon.take_addr_changed()) resolve_carrier_planes();
  for (const platform::LinkStatus& l : c.buf)
    for (uint32_t p = 0; p < num_planes(); ++p)
      if (c.watched[p] && c.ifindex[p] == l.ifindex) set_port_carrier(p, l.carrier_up);
  netlink_malformed_.store(c.mon.malformed(), std::memory_order_relaxed);
  netlink_overruns_.store(c.mon.overruns(), std::memory_order_relaxed);
}

// Addresses changed somewhere: a plane's address may have moved to another
// interface, gone, or come back. Rare, so a lookup per watched plane; a
// plane whose interface changed takes that interface's state from a dump.
void Device::resolve_carrier_planes() {
  CarrierWatch& c = *carrier_;
  bool dump = false;
  for (uint32_t p = 0; p < num_planes(); ++p) {
    if (!c.watched[p]) continue;
    auto idx = platform::interface_of(planes_[p].addr, Duration::ms(100));
    if (!idx && idx.error() != Errc::not_found) continue;  // no answer: keep what we know
    const int32_t now_on = idx ? *idx : 0;
    if (now_on == c.ifindex[p]) continue;
    c.ifindex[p] = now_on;
    if (now_on == 0) set_port_carrier(p, false);  // the address is on no interface: nothing can carry the plane
    else dump = true;
  }
  if (dump) (void)c.mon.request_dump();
}

Status Device::send_ep_request(const EpRequest& r, Duration timeout) {
  if (r.plane >= num_planes()) return Errc::invalid_argument;
  if (r.wire_ev ? (cfg_.ev_mode != EvWire::srv6 || r.ev > 0xFFFF) : !ev_sendable(r.plane, r.ev))
    return Errc::invalid_argument;
  // Answers come to QP 2, which the receive steering maps to this engine.
  Engine& e = engine_of(core::kEndpointOpsQpn);
  Status s;
  {
    std::lock_guard g(e.mu);
    const Time now = clock_.now();
    const auto port = static_cast<uint8_t>(r.plane);
    s = r.port_status ? e.ep->send_port_status(now, r.req_id, r.peer, port, r.ev, r.up_mask, timeout)
                      : e.ep->send_ev_probe(now, r.req_id, r.peer, port, r.ev, timeout);
    if (s && r.wire_ev) e.ep_wire[r.req_id] = *r.wire_ev;
  }
  kick(e);
  return s;
}

}  // namespace mrc::rt
