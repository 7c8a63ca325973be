// SPDX-License-Identifier: BSD-2-Clause
// Nic: a simulated NIC hosting one real protocol core (core::Endpoint).
//
// It owns the endpoint's ports: when a port is idle it asks the core for the
// next packet (the core picks the EV and the port at send time), serializes
// it at the port rate, and hands it to the fabric. Packets the fabric
// delivers go straight into Endpoint::handle_datagram. The core's timers are
// one pending simulator event. Completions and events go to a sink the
// workload installs. No protocol logic lives here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/endpoint.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric.hpp"

namespace mrc::sim {

class Nic final : public Node {
 public:
  /// `cfg.ports` is replaced by the fabric's planes and port rates.
  Nic(Simulator& sim, Fabric& fabric, uint32_t host, core::EndpointConfig cfg);
  ~Nic() override;

  uint32_t host() const { return host_; }
  core::Endpoint& ep() { return *ep_; }
  const core::Endpoint& ep() const { return *ep_; }

  /// Called for every work completion, in order.
  std::function<void(Nic&, const core::WorkCompletion&)> on_completion_sink;
  /// Called for every other event the core produces, in order.
  std::function<void(Nic&, const core::Event&)> on_event_sink;
  /// Called for every packet as its last bit leaves the NIC (before the
  /// fabric sees it), for captures (sim/host/capture.hpp). Must not change
  /// the simulation; the packet is only valid during the call.
  std::function<void(const Nic&, const Packet&)> on_transmit;
  /// The NIC's completion queue: every QP on it names this CQ.
  uint32_t cq() const { return cq_; }

  /// Wakes idle ports and re-arms the timer; call after posting work or
  /// changing the endpoint outside a Nic callback.
  void kick();
  /// The NIC-T0 link of `plane` changed state (carrier up/down): tells the core.
  void carrier_changed(uint32_t plane);
  /// The controller enables or disables port `plane` administratively
  /// (reference 4.7, 6.3.2: mrc_ctl_modify_port). A disabled port is down
  /// for the core whatever its carrier (core::Endpoint::set_port_up: its
  /// EVs leave service on every QP and the peers are told with
  /// PORT_STATUS_UPDATE), sends nothing, and drops what still arrives on it
  /// (rx_admin_drops). Enabling restores the carrier's state. Idempotent;
  /// a plane the NIC does not have is ignored.
  void set_port_admin(uint32_t plane, bool enabled);
  /// True unless the controller disabled port `plane`.
  bool port_enabled(uint32_t plane) const { return plane >= 32 || !(admin_down_ >> plane & 1u); }
  /// Packets that arrived on an administratively disabled port and were dropped.
  uint64_t rx_admin_drops() const { return rx_admin_drops_; }

  void on_event(Simulator& sim, uint64_t tag) override;
  void receive(Simulator& sim, Packet* p, int in_port) override;
  /// A key for an event the host's software (the cluster, the workload)
  /// schedules or sends to another host: the NIC's own count, so it
  /// depends on this host's events alone.
  uint64_t next_key() { return keys_.next(); }

  /// Data bytes (payload) this NIC has put on the wire, per plane.
  const std::vector<uint64_t>& tx_payload_bytes() const { return tx_payload_; }
  /// Payload bytes delivered to this NIC (untrimmed data packets).
  uint64_t rx_payload_bytes() const { return rx_payload_; }
  /// Payload the endpoint placed: rx_payload_bytes() less duplicates,
  /// packets a go-back-N receiver dropped, and refused ones.
  uint64_t rx_placed_bytes() const { return ep_->stats().rx_placed_bytes; }
  /// The same per plane (the port it arrived on).
  const std::vector<uint64_t>& rx_payload_by_plane() const { return rx_by_plane_; }
  /// Starts counting delivered payload per source host as well (a counter
  /// per host, so only when asked: per-flow series).
  void count_rx_by_source(uint32_t hosts) { rx_by_src_.assign(hosts, 0); }
  /// Payload bytes delivered to this NIC from host `src` (0 unless counted).
  uint64_t rx_payload_from(uint32_t src) const { return src < rx_by_src_.size() ? rx_by_src_[src] : 0; }

 private:
  static constexpr uint64_t kTimerTag = uint64_t{1} << 62;
  /// Ports neither serializing a packet nor paused by PFC (bit i = port i).
  uint32_t idle_ports() const;
  /// Fills idle ports with packets from the core, letting it choose the
  /// port of each (its EV rotation spreads them over the planes).
  void send_on_idle_ports();
  void arm_timer();
  void drain_events();

  Simulator& sim_;
  Fabric& fabric_;
  uint32_t cq_ = 0;
  uint32_t host_;
  std::unique_ptr<core::Endpoint> ep_;
  std::vector<Packet*> in_flight_;   ///< per port: packet being serialized
  std::vector<const Pipe*> uplinks_; ///< per port: the link it transmits into
  const uint32_t* pause_counts_ = nullptr;  ///< per port: PFC PAUSEs in force
  std::vector<uint64_t> tx_payload_;
  uint64_t rx_payload_ = 0;
  std::vector<uint64_t> rx_by_plane_;
  std::vector<uint64_t> rx_by_src_;  ///< empty unless count_rx_by_source()
  Time timer_at_ = Time::never();  ///< the pending timer event (never: none)
  uint64_t timer_gen_ = 0;
  uint8_t hdr_[wire::kMaxHeaderBytes];
  core::WorkCompletion wcs_[32];  ///< drain_events' buffer
  uint64_t next_packet_id_ = 0;
  EventKeys keys_;  ///< the NIC's own events (serialization, timer)
  uint32_t admin_down_ = 0;  ///< bit p: port p disabled by the controller
  uint64_t rx_admin_drops_ = 0;
};

}  // namespace mrc::sim
