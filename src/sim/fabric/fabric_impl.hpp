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

/// One bidirectional link. Across processes a direction whose two ends are
/// both another process's has no pipe here (null); the rest is kept for
/// every link, so that every process computes the same routes.
struct LinkRec {
  Pipe* to_upper = nullptr;  ///< lower end to upper end: a port slot's pipe, or a lone pipe
  Pipe* to_lower = nullptr;  ///< upper end to lower end
  Switch* lower = nullptr;  ///< null: a host link (the lower end is a NIC port); may be a placeholder
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
  FabricContext* ctx_of(const Switch* sw) { return ctx_of(id_of(sw)); }
  uint32_t id_of(const Switch* sw) const { return static_cast<uint32_t>(sw - switches.get()); }
  /// Whether this process builds partition p's elements (across processes,
  /// only the partitions it runs: ParallelEngine::local), switch `id`, and
  /// host h's NIC side.
  bool part_here(uint32_t p) const { return part_built.empty() || part_built[p]; }
  bool sw_built(uint32_t id) const { return sw_part.empty() || part_here(sw_part[id]); }
  bool host_built(uint32_t h) const { return host_part.empty() || part_here(host_part[h]); }
  /// Partition of the sender (`upward`: the lower end) or of the receiver of
  /// one direction of `link`; a pipe crosses partitions when they differ.
  uint32_t end_part(const LinkRec& r, bool lower_end) const {
    if (!lower_end) return sw_part.empty() ? 0 : sw_part[id_of(r.upper)];
    if (r.lower) return sw_part.empty() ? 0 : sw_part[id_of(r.lower)];
    return host_part.empty() ? 0 : host_part[r.lower_port];
  }
  bool cut(const LinkRec& r) const { return end_part(r, true) != end_part(r, false); }
  /// Switch `id`'s port `port` (an element this process built), or a
  /// message naming the element and `what` and an abort: across processes
  /// another process's element is not built here, and reading it is a bug.
  EgressPort& port_of(uint32_t id, uint32_t port, const char* what);
  /// The switch holding global port q.
  uint32_t switch_of_port(uint32_t q) const;
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
  /// A direction of `link` (an element this process built: else a message
  /// naming the link and an abort).
  Pipe& up_pipe(uint32_t link) {
    Pipe* p = links[link].to_upper;
    if (!p) [[unlikely]] not_built(link, true);
    return *p;
  }
  Pipe& down_pipe(uint32_t link) {
    Pipe* p = links[link].to_lower;
    if (!p) [[unlikely]] not_built(link, false);
    return *p;
  }
  const Pipe& up_pipe(uint32_t link) const { return const_cast<Impl*>(this)->up_pipe(link); }
  const Pipe& down_pipe(uint32_t link) const { return const_cast<Impl*>(this)->down_pipe(link); }
  [[noreturn]] void not_built(uint32_t link, bool upward) const;
  uint32_t nports() const { return port_base[nswitches]; }
  /// Link id of a reference, or a message.
  Result<uint32_t> resolve(const LinkRef& l, std::string* why = nullptr) const;
  Result<uint32_t> resolve(const SwitchRef& s, std::string* why = nullptr) const;
  std::string switch_name(const Switch& sw) const;
  std::string port_name(uint32_t global_port) const;

  // ---- build (fabric_build.cc)
  void build();
  /// Calls f(link, lower, lower_port, upper, upper_port, host, plane, bps)
  /// for every link, in link-id order within each stage of the build (the
  /// order entity ids are taken in): lower is null for a host link.
  template <class F>
  void for_each_wire(F&& f);
  void wire(uint32_t link, Switch* lower, uint32_t lower_port, Switch* upper, uint32_t upper_port,
            uint32_t host, uint32_t plane, uint64_t bps);
  /// A lone pipe for a direction this process receives on but whose sender
  /// it does not build (or a host's uplink).
  Pipe* new_lone_pipe() { return &lone_pipes[nlone++]; }
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
  std::vector<uint8_t> part_built;  ///< per partition, 1: built here (empty: all)
  EvLayout ev;
  uint32_t nswitches = 0;
  /// Every switch; another process's (across processes) is a placeholder
  /// with its identity and up state alone (Switch::built() false).
  std::unique_ptr<Switch[]> switches;
  /// Switch id -> global index of its first port (size nswitches + 1):
  /// ports are numbered over every switch, built here or not.
  std::vector<uint32_t> port_base;
  /// The ports of the switches built here, switch by switch: egress queues
  /// and outgoing pipe (a switch's slots are Switch::slot()).
  std::unique_ptr<PortSlot[]> ports;
  uint32_t nslots = 0;
  std::vector<uint32_t> port_link;  ///< global port -> link id
  std::vector<LinkRec> links;
  /// Pipes outside the slots: every host's uplink (NIC to T0) built here,
  /// and the receiving side of a direction whose sender is not built here.
  std::unique_ptr<Pipe[]> lone_pipes;
  uint64_t nlone = 0;
  std::vector<Node*> nics;
  std::vector<uint32_t> host_paused;  ///< PAUSEs in force per host * planes + plane
  std::deque<NetState> pending_routes;  ///< ECMP reconvergences scheduled, oldest first
  EventKeys keys;  ///< the fabric's own events (reconvergence)
};

}  // namespace mrc::sim
