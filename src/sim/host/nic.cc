// SPDX-License-Identifier: BSD-2-Clause
#include "sim/host/nic.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim/fabric/pipe.hpp"

namespace mrc::sim {

namespace {
Class class_of(core::TrafficClass tc) {
  return tc == core::TrafficClass::control ? Class::control : Class::data;
}
}  // namespace

Nic::Nic(Simulator& sim, Fabric& fabric, uint32_t host, core::EndpointConfig cfg)
    : sim_(sim), fabric_(fabric), host_(host), keys_(sim.new_keys()) {
  cfg.ports.clear();
  for (uint32_t p = 0; p < fabric.planes(); ++p)
    cfg.ports.push_back(core::PortConfig{fabric.host_port_bps(host, p)});
  std::string why;
  auto ep = core::Endpoint::create(cfg, &why);
  if (!ep) {
    // The simulator validates its configuration before building NICs; an
    // error here is a programming error, not a user error.
    std::fprintf(stderr, "mrc-sim: endpoint configuration rejected: %s\n", why.c_str());
    std::abort();
  }
  ep_ = std::move(ep.value());
  // One CQ for every QP on this NIC, drained after every call into the core
  // (drain_events), so it never holds more than one call's completions.
  cq_ = ep_->create_cq(core::Endpoint::kMaxCqe).value();
  in_flight_.assign(fabric.planes(), nullptr);
  for (uint32_t p = 0; p < fabric.planes(); ++p) uplinks_.push_back(fabric.host_uplink(host, p));
  pause_counts_ = fabric.host_pause_counts(host);
  tx_payload_.assign(fabric.planes(), 0);
  rx_by_plane_.assign(fabric.planes(), 0);
  fabric.attach(host, this);
}

Nic::~Nic() {
  for (Packet* p : in_flight_)
    if (p) sim_.free_packet(p);
}

void Nic::kick() {
  if (ep_->has_pending_transmit()) send_on_idle_ports();
  arm_timer();
  drain_events();
}

uint32_t Nic::idle_ports() const {
  uint32_t mask = 0;
  for (uint32_t p = 0; p < in_flight_.size(); ++p)
    if (!in_flight_[p] && pause_counts_[p] == 0) mask |= 1u << p;
  return mask;
}

void Nic::carrier_changed(uint32_t plane) {
  ep_->set_port_up(sim_.now(), static_cast<uint8_t>(plane), fabric_.host_port_up(host_, plane) && port_enabled(plane));
  kick();
}

void Nic::set_port_admin(uint32_t plane, bool enabled) {
  if (plane >= in_flight_.size()) return;
  if (enabled) admin_down_ &= ~(1u << plane);
  else admin_down_ |= 1u << plane;
  carrier_changed(plane);  // the core's port state: carrier and administrative state
}

void Nic::send_on_idle_ports() {
  // All idle ports at once, not one port at a time in index order: a QP
  // whose window allows one packet would otherwise always be offered port 0
  // first and put all its traffic on plane 0. (PFC-paused ports are woken by
  // the fabric.)
  for (uint32_t mask = idle_ports(); mask != 0; mask = idle_ports()) {
    auto tx = ep_->poll_transmit(sim_.now(), mask, hdr_);
    if (!tx) return;
    Packet* p = sim_.new_packet();
    std::memcpy(p->hdr, hdr_, tx->header_len);
    p->hdr_len = tx->header_len;
    p->payload_len = tx->payload_len;
    p->src = host_;
    p->dst = static_cast<uint32_t>(tx->peer);
    p->plane = tx->port;
    p->entropy = tx->entropy;
    p->cls = class_of(tx->tc);
    p->trimmable = tx->trimmable;
    p->ecn_capable = true;
    p->ecn_ce = false;
    p->trim = core::TrimMark::none;
    p->hops = 0;
    p->id = (uint64_t{host_} << 40) | next_packet_id_++;
    p->sent_at = sim_.now();
    fabric_.set_route(*p);
    in_flight_[tx->port] = p;
    tx_payload_[tx->port] += tx->payload_len;
    sim_.schedule(sim_.now() + uplinks_[tx->port]->serialization(p->wire_bytes()), this, tx->port, keys_.next());
  }
}

void Nic::arm_timer() {
  // Lazy re-arming: the core moves its deadline later on nearly every packet
  // (the retransmission timer restarts on each send and acknowledgement), so
  // an event is scheduled only when the deadline moves earlier than the one
  // pending. A pending event that turns out early re-arms for the current
  // deadline when it fires (on_event).
  const Time t = ep_->next_timeout();
  if (t.is_never() || t >= timer_at_) return;
  timer_at_ = t;
  ++timer_gen_;
  sim_.schedule(t, this, kTimerTag | (timer_gen_ & 0xFFFFFFFF), keys_.next());
}

void Nic::drain_events() {
  // The buffer is a member: a local array of WorkCompletions (default member
  // initializers) was zeroed, 1 KiB, on every call, which is after every
  // packet the NIC sends or receives.
  while (size_t n = ep_->poll_cq(cq_, wcs_)) {
    for (size_t i = 0; i < n; ++i)
      if (on_completion_sink) on_completion_sink(*this, wcs_[i]);
  }
  while (auto e = ep_->poll_event()) {
    if (on_event_sink) on_event_sink(*this, *e);
  }
}

void Nic::on_event(Simulator& sim, uint64_t tag) {
  if (tag & kTimerTag) {
    if ((tag & 0xFFFFFFFF) != (timer_gen_ & 0xFFFFFFFF)) return;  // superseded
    timer_at_ = Time::never();
    if (ep_->next_timeout() > sim.now()) {  // the deadline moved later meanwhile
      arm_timer();
      return;
    }
    ep_->handle_timeout(sim.now());
    kick();
    return;
  }
  if (tag & kUnpauseTag) {
    kick();
    return;
  }
  // A port finished serializing its packet: it is on the wire now.
  const uint32_t port = static_cast<uint32_t>(tag);
  Packet* p = in_flight_[port];
  in_flight_[port] = nullptr;
  if (p) {
    if (on_transmit) on_transmit(*this, *p);
    fabric_.inject(p);
  }
  // Nothing for the core to send (a sender waiting for its window, a
  // receiver between ACKs: most ports that free up): nothing in the core
  // changed since the call that sent p, after which the timer was armed and
  // the events drained, so asking again would return nothing and re-arm and
  // drain nothing (poll_transmit changes no state when it has nothing).
  if (!ep_->has_pending_transmit()) return;
  send_on_idle_ports();
  arm_timer();
  drain_events();
}

void Nic::receive(Simulator& sim, Packet* p, int in_port) {
  if (!port_enabled(static_cast<uint32_t>(in_port))) {
    // A disabled port is down (reference 4.9): what the peers sent before
    // they heard of it is lost, as on a port whose link went down.
    ++rx_admin_drops_;
    sim.free_packet(p);
    return;
  }
  core::RxMeta m;
  m.port = static_cast<uint8_t>(in_port);
  m.peer = p->src;
  m.entropy = p->entropy;
  m.ecn_ce = p->ecn_ce;
  m.trim = p->trim;
  m.phantom_payload = p->payload_len;
  rx_payload_ += p->payload_len;
  const auto plane = static_cast<uint32_t>(in_port);
  if (plane < rx_by_plane_.size()) rx_by_plane_[plane] += p->payload_len;
  if (p->src < rx_by_src_.size()) rx_by_src_[p->src] += p->payload_len;
  ep_->handle_datagram(sim.now(), m, std::span<const uint8_t>(p->hdr, p->hdr_len));
  sim.free_packet(p);
  kick();
}

}  // namespace mrc::sim
