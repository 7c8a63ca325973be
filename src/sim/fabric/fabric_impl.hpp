// SPDX-License-Identifier: BSD-2-Clause
// Fabric::Impl: the fabric's elements and the bookkeeping around them.
// Internal to sim/fabric (fabric.cc, fabric_build.cc, routing.cc) and its tests.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "sim/fabric/egress_port.hpp"
#include "sim/fabric/fabric.hpp"
#include "sim/fabric/pipe.hpp"
#include "sim/fabric/switch.hpp"

namespace mrc::sim {

/// One bidirectional link.
struct LinkRec {
  Pipe* to_upper = nullptr;  ///< lower end to upper end: a port slot's pipe, or a host's uplink
  Pipe* to_lower = nullptr;  ///< upper end to lower end
  Switch* lower = nullptr;  ///< null: a host link (the lower end is a NIC port)
  Switch* upper = nullptr;
  uint32_t lower_port = 0;  ///< lower switch's port; the host index for host links
  uint32_t upper_port = 0;
  uint32_t plane = 0;
  bool up = true;
};

/// Field widths of an SRv6 EV value (layout in fabric.hpp).
struct EvLayout {
  static constexpr uint32_t kPlaneShift = 27;
  uint32_t w0 = 0;
  uint32_t w1 = 0;
  uint32_t t0_up = 1;
  uint32_t t1_up = 1;

  uint32_t copy_bits() const { return kPlaneShift - w0 - w1; }
  uint32_t encode(uint32_t plane, uint32_t copy, uint32_t u0, uint32_t u1) const {
    return (plane << kPlaneShift) | (copy << (w0 + w1)) | (u1 << w0) | u0;
  }
  uint32_t u0(uint32_t ev) const {
    const uint32_t x = ev & ((1u << w0) - 1u);
    return x < t0_up ? x : x % t0_up;
  }
  uint32_t u1(uint32_t ev) const {
    const uint32_t x = (ev >> w0) & ((1u << w1) - 1u);
    return x < t1_up ? x : x % t1_up;
  }
};

struct Fabric::Impl final : Node {
  /// Without `elements`, only the shape and addressing (Fabric::LayoutOnly).
  Impl(Simulator& sim, const TopologyConfig& cfg, const FabricPartitions* parts = nullptr, bool elements = true);
  /// The context of switch `id`'s partition.
  FabricContext* ctx_of(uint32_t switch_id) {
    return sw_part.empty() || sw_part[switch_id] == 0 ? &ctx : pctx[sw_part[switch_id] - 1].get();
  }
  FabricContext* ctx_of(const Switch* sw) { return ctx_of(static_cast<uint32_t>(sw - switches.get())); }
  /// The context of host `h`'s partition (its NIC side).
  FabricContext* host_ctx(uint32_t h) {
    return host_part.empty() || host_part[h] == 0 ? &ctx : pctx[host_part[h] - 1].get();
  }
  /// Calls f(FabricContext&) for every partition's context.
  template <class F>
  void for_each_ctx(F&& f) {
    f(ctx);
    for (auto& c : pctx) f(*c);
  }
  template <class F>
  void for_each_ctx(F&& f) const {
    f(ctx);
    for (const auto& c : pctx) f(*c);
  }
  ~Impl() override;

  // ---- identity and indexing
  uint32_t switch_id(uint32_t plane, SwitchRef::Tier tier, uint32_t index) const {
    const uint32_t base = plane * shape.switches_per_plane();
    switch (tier) {
      case SwitchRef::Tier::t0: return base + index;
      case SwitchRef::Tier::t1: return base + shape.t0_count + index;
      case SwitchRef::Tier::t2: return base + shape.t0_count + shape.t1_count + index;
    }
    return 0;
  }
  uint32_t host_link(uint32_t plane, uint32_t host) const { return plane * shape.hosts + host; }
  uint32_t t0t1_link(uint32_t plane, uint32_t t0, uint32_t uplink) const {
    return shape.planes * shape.hosts + (plane * shape.t0_count + t0) * shape.t0_up + uplink;
  }
  uint32_t t1t2_link(uint32_t plane, uint32_t t1, uint32_t uplink) const {
    return shape.planes * shape.hosts + shape.planes * shape.t0_count * shape.t0_up +
           (plane * shape.t1_count + t1) * shape.t1_up + uplink;
  }
  Pipe& up_pipe(uint32_t link) { return *links[link].to_upper; }
  Pipe& down_pipe(uint32_t link) { return *links[link].to_lower; }
  const Pipe& up_pipe(uint32_t link) const { return *links[link].to_upper; }
  const Pipe& down_pipe(uint32_t link) const { return *links[link].to_lower; }
  uint32_t nports() const { return port_base[nswitches]; }
  /// Link id of a reference, or a message.
  Result<uint32_t> resolve(const LinkRef& l, std::string* why = nullptr) const;
  Result<uint32_t> resolve(const SwitchRef& s, std::string* why = nullptr) const;
  std::string switch_name(const Switch& sw) const;
  std::string port_name(uint32_t global_port) const;

  // ---- build (fabric_build.cc)
  void build();
  void wire(uint32_t link, Switch* lower, uint32_t lower_port, Switch* upper, uint32_t upper_port,
            uint32_t host, uint32_t plane, uint64_t bps);
  void build_srv6_tables();

  // ---- routing (routing.cc)
  void set_route(Packet& p) const;
  std::vector<core::EvEntry> make_evs(uint32_t per_plane, Prng& rng) const;
  EvPath ev_path(uint32_t src, uint32_t ev) const;
  /// Network state a reconvergence computes routes from.
  struct NetState {
    std::vector<uint8_t> link_up;
    std::vector<uint8_t> switch_up;
  };
  NetState snapshot() const;
  void reconverge(const NetState& st);

  // ---- failures (fabric.cc)
  void refresh_link(uint32_t link);
  /// Lets every switch port catch up to now (EgressPort::catch_up), before
  /// the fabric reads queue state.
  void catch_up_ports();
  void state_changed();

  void on_event(Simulator& sim, uint64_t tag) override;
  void receive(Simulator& sim, Packet* p, int in_port) override;

  static constexpr uint64_t kReconvergeTag = uint64_t{2} << 60;

  Simulator& sim;  ///< the fabric's own events (and, not partitioned, everything)
  TopologyConfig cfg;
  TopologyShape shape;
  FabricContext ctx;  ///< partition 0's, and every element's when not partitioned
  std::vector<std::unique_ptr<FabricContext>> pctx;  ///< partitions 1.. of a parallel run
  std::vector<uint32_t> sw_part;  ///< partition of each switch (empty: all 0)
  std::vector<uint32_t> host_part;  ///< partition of each host (empty: all 0)
  EvLayout ev;
  uint32_t nswitches = 0;
  std::unique_ptr<Switch[]> switches;
  std::vector<uint32_t> port_base;  ///< switch id -> index of its first port in `ports` (size nswitches + 1)
  std::unique_ptr<PortSlot[]> ports;   ///< every switch port: egress queues and outgoing pipe
  std::vector<uint32_t> port_link;  ///< global port -> link id
  std::vector<LinkRec> links;
  std::unique_ptr<Pipe[]> host_pipes;  ///< NIC to T0, per host link
  std::vector<Node*> nics;
  std::vector<uint32_t> host_paused;  ///< PAUSEs in force per host * planes + plane
  std::deque<NetState> pending_routes;  ///< ECMP reconvergences scheduled, oldest first
  EventKeys keys;  ///< the fabric's own events (reconvergence)
};

}  // namespace mrc::sim
