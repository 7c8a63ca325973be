// SPDX-License-Identifier: BSD-2-Clause
// Fabric::Impl construction: switches, ports, pipes, wiring and the static
// SRv6 tables, for every TopologyKind (wiring described in topology.hpp).
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "sim/engine/parallel.hpp"
#include "sim/fabric/fabric_impl.hpp"
#include "sim/fabric/usid.hpp"

namespace mrc::sim {

namespace {
// Random-stream ids (sim.rng_for) of the fabric's elements.
constexpr uint64_t kStreamPipe = uint64_t{0xFAB1} << 40;
constexpr uint64_t kStreamPort = uint64_t{0xFAB2} << 40;
constexpr uint64_t kStreamSwitch = uint64_t{0xFAB3} << 40;

uint32_t bits_for(uint32_t n) { return n <= 1 ? 0u : static_cast<uint32_t>(std::bit_width(n - 1)); }
}  // namespace

Fabric::Impl::Impl(Simulator& s, const TopologyConfig& c, const FabricPartitions* parts, bool elements)
    : sim(s), cfg(c), shape(c.shape()) {
  ctx.sim = &sim;
  ctx.pfc_host_sink = this;
  ctx.pfc_delay = cfg.link_delay;
  if (parts) {
    if (parts->sims.empty() || parts->sw.size() != shape.switches()) {
      std::fprintf(stderr, "mrc-sim: internal error: a partition plan for %zu switches, the fabric has %u\n",
                   parts->sw.size(), shape.switches());
      std::abort();
    }
    for (uint32_t p : parts->sw)
      if (p >= parts->sims.size()) {
        std::fprintf(stderr, "mrc-sim: internal error: a switch in partition %u of %zu\n", p, parts->sims.size());
        std::abort();
      }
    if (!parts->host.empty()) {
      if (parts->host.size() != shape.hosts) {
        std::fprintf(stderr, "mrc-sim: internal error: a partition plan for %zu hosts, the fabric has %u\n",
                     parts->host.size(), shape.hosts);
        std::abort();
      }
      for (uint32_t p : parts->host)
        if (p >= parts->sims.size()) {
          std::fprintf(stderr, "mrc-sim: internal error: a host in partition %u of %zu\n", p, parts->sims.size());
          std::abort();
        }
    }
    sw_part = parts->sw;
    host_part = parts->host;
    // Across processes, the elements of the partitions other processes run
    // are not built here (their entity ids and message-target indexes are
    // taken all the same).
    if (parts->engine && parts->engine->ranks()) {
      part_built.assign(parts->sims.size(), 0);
      for (uint32_t p = 0; p < parts->sims.size(); ++p) part_built[p] = parts->engine->local(p);
    }
    ctx.sim = parts->sims[0];
    ctx.engine = parts->engine;
    for (uint32_t p = 1; p < parts->sims.size(); ++p) {
      auto pc = std::make_unique<FabricContext>();
      pc->sim = parts->sims[p];
      pc->engine = parts->engine;
      pc->part = p;
      pc->pfc_host_sink = this;
      pc->pfc_delay = cfg.link_delay;
      pctx.push_back(std::move(pc));
    }
  }
  keys = sim.new_keys();
  ev.w0 = bits_for(shape.t0_up);
  ev.w1 = shape.three_tier ? bits_for(shape.t1_up) : 0;
  ev.t0_up = shape.t0_up;
  ev.t1_up = shape.three_tier ? shape.t1_up : 1;
  if (elements) build();
}

Fabric::Impl::~Impl() {
  if (!switches) return;  // a layout only: nothing was built
  // Packets still in flight or queued go back to the simulator's pool (which
  // must outlive the fabric); no PFC frames are sent on the way out.
  for_each_ctx([](FabricContext& c) { c.closing = true; });
  for (uint64_t i = 0; i < nlone; ++i) lone_pipes[i].flush();
  for (uint32_t i = 0; i < nslots; ++i) {
    ports[i].pipe.flush();
    ports[i].port.flush();
  }
  // A partitioned run: the packets on cut links are events of the receiving
  // partition, which flush() marks lost but cannot reach. (Other pending
  // events may name nodes already gone: only the pipes' are looked at.)
  if (!pctx.empty()) {
    std::unordered_set<const Node*> cut;
    for (uint64_t i = 0; i < nlone; ++i)
      if (lone_pipes[i].cut()) cut.insert(&lone_pipes[i]);
    for (uint32_t i = 0; i < nslots; ++i)
      if (ports[i].pipe.cut()) cut.insert(&ports[i].pipe);
    for_each_ctx([&cut](FabricContext& c) {
      c.sim->for_each_pending([&](const Event& e) {
        if (cut.count(e.node)) c.sim->free_packet(reinterpret_cast<Packet*>(e.tag));
      });
    });
  }
}

template <class F>
void Fabric::Impl::for_each_wire(F&& f) {
  const TopologyShape& s = shape;
  for (uint32_t plane = 0; plane < s.planes; ++plane) {
    // Host h, downlink h % t0_down of T0 h / t0_down.
    for (uint32_t h = 0; h < s.hosts; ++h) {
      Switch* t0 = &switches[switch_id(plane, SwitchRef::Tier::t0, h / s.t0_down)];
      f(host_link(plane, h), nullptr, h, t0, h % s.t0_down, h, plane, s.host_bps);
    }
    // T0 t uplink u -> T1 u / lanes0 of t's pod, its down port (t % t0_per_pod) * lanes0 + lane.
    for (uint32_t t = 0; t < s.t0_count; ++t) {
      const uint32_t pod = t / s.t0_per_pod;
      Switch* t0 = &switches[switch_id(plane, SwitchRef::Tier::t0, t)];
      for (uint32_t u = 0; u < s.t0_up; ++u) {
        const uint32_t x = pod * s.t1_per_pod + u / s.lanes0;
        Switch* t1 = &switches[switch_id(plane, SwitchRef::Tier::t1, x)];
        f(t0t1_link(plane, t, u), t0, s.t0_down + u, t1, (t % s.t0_per_pod) * s.lanes0 + u % s.lanes0, 0, plane,
          s.fabric_bps);
      }
    }
  }
  // T1 x (pod P, index j) uplink k -> T2 j * g + k / lanes1 of the same
  // plane, its port P * lanes1 + lane.
  for (uint32_t plane = 0; s.three_tier && plane < s.planes; ++plane) {
    for (uint32_t x = 0; x < s.t1_count; ++x) {
      const uint32_t pod = x / s.t1_per_pod, j = x % s.t1_per_pod;
      Switch* t1 = &switches[switch_id(plane, SwitchRef::Tier::t1, x)];
      for (uint32_t k = 0; k < s.t1_up; ++k) {
        const uint32_t z = j * s.t2_per_group + k / s.lanes1;
        Switch* t2 = &switches[switch_id(plane, SwitchRef::Tier::t2, z)];
        f(t1t2_link(plane, x, k), t1, s.t1_down + k, t2, pod * s.lanes1 + k % s.lanes1, 0, plane, s.fabric_bps);
      }
    }
  }
}

void Fabric::Impl::build() {
  const TopologyShape& s = shape;
  nswitches = s.switches();
  switches = std::make_unique<Switch[]>(nswitches);
  port_base.assign(nswitches + 1, 0);
  for (uint32_t plane = 0; plane < s.planes; ++plane) {
    for (uint32_t t = 0; t < s.t0_count; ++t)
      port_base[switch_id(plane, SwitchRef::Tier::t0, t) + 1] = s.t0_down + s.t0_up;
    for (uint32_t x = 0; x < s.t1_count; ++x)
      port_base[switch_id(plane, SwitchRef::Tier::t1, x) + 1] = s.t1_down + s.t1_up;
    for (uint32_t z = 0; z < s.t2_count; ++z) port_base[switch_id(plane, SwitchRef::Tier::t2, z) + 1] = s.t2_ports;
  }
  nslots = 0;
  for (uint32_t i = 0; i < nswitches; ++i) {
    if (sw_built(i)) nslots += port_base[i + 1];
    port_base[i + 1] += port_base[i];
  }
  ports = std::make_unique<PortSlot[]>(nslots);
  port_link.assign(port_base[nswitches], 0);

  links.assign(s.links(), LinkRec{});
  nics.assign(s.hosts, nullptr);
  host_paused.assign(size_t{s.hosts} * s.planes, 0);
  // Lone pipes: a host's uplink where its NIC or its T0 is built here, and
  // the receiving side of a direction whose sender is another process's.
  uint64_t lone = 0;
  for_each_wire([&](uint32_t, Switch* lower, uint32_t, Switch* upper, uint32_t, uint32_t host, uint32_t, uint64_t) {
    const bool lo = lower ? sw_built(id_of(lower)) : host_built(host), up = sw_built(id_of(upper));
    lone += (!lower && (lo || up)) + (lower && !lo && up) + (!up && lo);
  });
  lone_pipes = std::make_unique<Pipe[]>(lone);
  nlone = 0;

  // Every switch takes its entity id, built here or not.
  uint32_t slot = 0;
  auto init_switch = [&](uint32_t id, SwitchRef ref, uint32_t pod, uint32_t pos) {
    if (!sw_built(id)) {
      switches[id].init_placeholder(ref);
      (void)sim.new_entity();
      return;
    }
    const uint32_t n = port_base[id + 1] - port_base[id];
    switches[id].init(ctx_of(id), &shape, ref, pod, pos, &ports[slot], n, sim.rng_for(kStreamSwitch + id).next_u64());
    slot += n;
  };
  for (uint32_t plane = 0; plane < s.planes; ++plane) {
    for (uint32_t t = 0; t < s.t0_count; ++t)
      init_switch(switch_id(plane, SwitchRef::Tier::t0, t), SwitchRef{SwitchRef::Tier::t0, plane, t},
                  t / s.t0_per_pod, t);
    for (uint32_t x = 0; x < s.t1_count; ++x)
      init_switch(switch_id(plane, SwitchRef::Tier::t1, x), SwitchRef{SwitchRef::Tier::t1, plane, x},
                  x / s.t1_per_pod, x % s.t1_per_pod);
    for (uint32_t z = 0; z < s.t2_count; ++z)
      init_switch(switch_id(plane, SwitchRef::Tier::t2, z), SwitchRef{SwitchRef::Tier::t2, plane, z}, 0,
                  z / s.t2_per_group);
  }
  for_each_wire([this](uint32_t link, Switch* lower, uint32_t lower_port, Switch* upper, uint32_t upper_port,
                       uint32_t host, uint32_t plane, uint64_t bps) {
    wire(link, lower, lower_port, upper, upper_port, host, plane, bps);
  });
  build_srv6_tables();
}

void Fabric::Impl::wire(uint32_t link, Switch* lower, uint32_t lower_port, Switch* upper, uint32_t upper_port,
                        uint32_t host, uint32_t plane, uint64_t bps) {
  LinkRec& r = links[link];
  r.lower = lower;
  r.upper = upper;
  r.lower_port = lower ? lower_port : host;
  r.upper_port = upper_port;
  r.plane = plane;
  const uint32_t upper_id = id_of(upper);
  const bool lower_here = lower ? sw_built(id_of(lower)) : host_built(host);
  const bool upper_here = sw_built(upper_id);
  const Duration into_switch = cfg.link_delay + cfg.switch_latency;
  // A direction is built where its sender or its receiver is (the sender's
  // slot, else a lone pipe); one that neither end builds still takes its
  // entity id, as every element below does, so that ids match everywhere.
  if (lower && lower_here)
    r.to_upper = &lower->out_pipe(lower_port);
  else if (lower_here || upper_here)
    r.to_upper = new_lone_pipe();
  if (upper_here)
    r.to_lower = &upper->out_pipe(upper_port);
  else if (lower_here)
    r.to_lower = new_lone_pipe();
  // Each pipe runs its deliveries in the receiver's partition and is fed
  // from the sender's (a NIC's side is its host's).
  FabricContext* upper_ctx = ctx_of(upper);
  FabricContext* lower_ctx = lower ? ctx_of(lower) : host_ctx(host);
  if (Pipe* up = r.to_upper) {
    up->init(upper_ctx, bps, into_switch, kStreamPipe + 2 * uint64_t{link});
    up->set_sender(lower_ctx);
    up->connect_to_switch(upper, upper_port);
  } else {
    (void)sim.new_entity();
  }
  if (Pipe* down = r.to_lower) {
    down->init(lower_ctx, bps, lower ? into_switch : cfg.link_delay, kStreamPipe + 2 * uint64_t{link} + 1);
    down->set_sender(upper_ctx);
    if (lower)
      down->connect_to_switch(lower, lower_port);
    else
      down->connect_to_host(host, plane);
  } else {
    (void)sim.new_entity();
  }

  const uint32_t upper_global = port_base[upper_id] + upper_port;
  const uint32_t lower_global = lower ? port_base[id_of(lower)] + lower_port : 0;
  port_link[upper_global] = link;
  if (upper_here)
    upper->port(upper_port).init(upper_ctx, r.to_lower,
                                 PortParams::resolve(cfg.queue, bps, cfg.base_rtt, lower == nullptr),
                                 kStreamPort + upper_global, upper, upper->nports());
  else
    (void)sim.new_entity();
  if (!lower) {
    if (upper_here) upper->set_upstream(upper_port, Switch::Upstream{nullptr, host, plane, lower_ctx->part});
    return;
  }
  port_link[lower_global] = link;
  if (lower_here)
    lower->port(lower_port).init(lower_ctx, r.to_upper, PortParams::resolve(cfg.queue, bps, cfg.base_rtt, false),
                                 kStreamPort + lower_global, lower, lower->nports());
  else
    (void)sim.new_entity();
  // PFC frames go to the egress port behind an ingress; one this process
  // did not build is reached through the fabric's node (pfc_port_tag).
  auto upstream = [&](Switch* sw, uint32_t port, uint32_t global, FabricContext* c) {
    Switch::Upstream u{nullptr, 0, 0, c->part};
    if (sw_built(id_of(sw)))
      u.port = &sw->port(port);
    else
      u.remote_port = global;
    return u;
  };
  if (upper_here) upper->set_upstream(upper_port, upstream(lower, lower_port, lower_global, lower_ctx));
  if (lower_here) lower->set_upstream(lower_port, upstream(upper, upper_port, upper_global, upper_ctx));
}

void Fabric::Impl::build_srv6_tables() {
  const TopologyShape& s = shape;
  using usid::Tier;
  constexpr auto kT0 = static_cast<size_t>(Tier::t0), kT1 = static_cast<size_t>(Tier::t1),
                 kT2 = static_cast<size_t>(Tier::t2), kDown = static_cast<size_t>(Tier::downlink);
  auto u16 = [](uint32_t v) { return static_cast<uint16_t>(v); };
  // Only switches built here have tables (routing runs where a switch is).
  auto set_table = [this](uint32_t id, uint16_t own, uint16_t count, const std::vector<FibEntry>(&table)[4],
                          const uint32_t(&base)[4]) {
    if (sw_built(id)) switches[id].set_srv6_table(own, count, table, base);
  };
  for (uint32_t plane = 0; plane < s.planes; ++plane) {
    // T0: next uSID is a host downlink (last hop) or a T1 of its pod (up).
    for (uint32_t t = 0; t < s.t0_count; ++t) {
      const uint32_t pod = t / s.t0_per_pod;
      std::vector<FibEntry> table[4];
      uint32_t base[4] = {0, 0, 0, 0};
      for (uint32_t d = 0; d < s.t0_down; ++d) table[kDown].push_back(FibEntry{u16(d), 0});
      base[kT1] = pod * s.t0_up;
      for (uint32_t u = 0; u < s.t0_up; ++u) table[kT1].push_back(FibEntry{u16(s.t0_down + u), 0});
      set_table(switch_id(plane, SwitchRef::Tier::t0, t), usid::make(plane, Tier::t0, t), 1, table, base);
    }
    // T1 (pod P, j): owns one uSID per lane; next is a T0 of its pod (down,
    // on the lane the packet came up) or a T2 of its group (up).
    for (uint32_t x = 0; x < s.t1_count; ++x) {
      const uint32_t pod = x / s.t1_per_pod, j = x % s.t1_per_pod;
      std::vector<FibEntry> table[4];
      uint32_t base[4] = {0, 0, 0, 0};
      base[kT0] = pod * s.t0_per_pod;
      for (uint32_t l = 0; l < s.t0_per_pod; ++l) table[kT0].push_back(FibEntry{u16(l * s.lanes0), 1});
      if (s.three_tier) {
        base[kT2] = j * s.t1_up;
        for (uint32_t k = 0; k < s.t1_up; ++k) table[kT2].push_back(FibEntry{u16(s.t1_down + k), 0});
      }
      set_table(switch_id(plane, SwitchRef::Tier::t1, x), usid::make(plane, Tier::t1, pod * s.t0_up + j * s.lanes0),
                u16(s.lanes0), table, base);
    }
  }
  // T2 z (group j): owns one uSID per lane; next is T1 j of some pod (down).
  for (uint32_t plane = 0; plane < s.planes; ++plane) {
    for (uint32_t z = 0; z < s.t2_count; ++z) {
      const uint32_t j = z / s.t2_per_group;
      std::vector<FibEntry> table[4];
      uint32_t base[4] = {0, 0, 0, 0};
      for (uint32_t i = 0; i < s.pods * s.t0_up; ++i) {
        const uint32_t pod = i / s.t0_up, jj = (i % s.t0_up) / s.lanes0;
        table[kT1].push_back(jj == j ? FibEntry{u16(pod * s.lanes1), 1} : FibEntry{});
      }
      set_table(switch_id(plane, SwitchRef::Tier::t2, z), usid::make(plane, Tier::t2, z * s.lanes1), u16(s.lanes1),
                table, base);
    }
  }
}

}  // namespace mrc::sim
