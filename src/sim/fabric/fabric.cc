// SPDX-License-Identifier: BSD-2-Clause
// Fabric: the public surface over Fabric::Impl; failures, PFC towards NICs,
// and observation.
#include "sim/fabric/fabric.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "sim/engine/parallel.hpp"
#include "sim/fabric/fabric_impl.hpp"

namespace mrc::sim {

namespace {
[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "mrc-sim: %s\n", what.c_str());
  std::abort();
}
std::string str(uint64_t v) { return std::to_string(v); }

// Names are built by appending: GCC 12 at -O3 warns (-Wrestrict, a false
// positive) on chains of "literal" + std::string.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}
const char* tier_name(SwitchRef::Tier t) {
  static const char* const kTier[] = {"t0", "t1", "t2"};
  return kTier[static_cast<int>(t)];
}
}  // namespace

// ---------------------------------------------------------------- context

void FabricStats::add(const FabricStats& o) {
  packets_forwarded += o.packets_forwarded;
  delivered += o.delivered;
  drops_queue += o.drops_queue;
  drops_link_down += o.drops_link_down;
  drops_random += o.drops_random;
  drops_no_route += o.drops_no_route;
  trims += o.trims;
  trims_last_hop += o.trims_last_hop;
  ecn_marks += o.ecn_marks;
  pfc_pauses += o.pfc_pauses;
  peak_queue_bytes = std::max(peak_queue_bytes, o.peak_queue_bytes);
  for (int c = 0; c < 3; ++c) drops_by_class[c] += o.drops_by_class[c];
}

void FabricContext::post(uint32_t dst, Time at, Node* node, uint64_t tag, uint64_t key) {
  if (dst == part || !engine)
    sim->schedule(at, node, tag, key);
  else
    engine->send(part, dst, at, node, tag, key);
}

// ---------------------------------------------------------------- Impl

Result<uint32_t> Fabric::Impl::resolve(const LinkRef& l, std::string* why) const {
  const TopologyShape& s = shape;
  auto bad = [&](const std::string& m) -> Result<uint32_t> {
    if (why) *why = cat({"link: ", m});
    return Errc::invalid_argument;
  };
  if (l.plane >= s.planes) return bad("plane " + str(l.plane) + " does not exist (planes: " + str(s.planes) + ")");
  switch (l.tier) {
    case LinkRef::Tier::host_t0:
      if (l.a >= s.hosts) return bad("host " + str(l.a) + " does not exist (hosts: " + str(s.hosts) + ")");
      if (l.lane != 0) return bad("a host has one link per plane (lane must be 0)");
      return host_link(l.plane, l.a);
    case LinkRef::Tier::t0_t1: {
      if (l.a >= s.t0_count) return bad("t0 " + str(l.a) + " does not exist (T0s per plane: " + str(s.t0_count) + ")");
      if (l.b >= s.t1_count) return bad("t1 " + str(l.b) + " does not exist (T1s per plane: " + str(s.t1_count) + ")");
      const uint32_t pod = l.a / s.t0_per_pod;
      if (l.b / s.t1_per_pod != pod)
        return bad("t0 " + str(l.a) + " (pod " + str(pod) + ") has no link to t1 " + str(l.b) + " (pod " +
                   str(l.b / s.t1_per_pod) + ")");
      if (l.lane >= s.lanes0) return bad("lane " + str(l.lane) + " (parallel links: " + str(s.lanes0) + ")");
      return t0t1_link(l.plane, l.a, (l.b % s.t1_per_pod) * s.lanes0 + l.lane);
    }
    case LinkRef::Tier::t1_t2: {
      if (!s.three_tier) return bad("t1-t2 links exist only in fattree3");
      if (l.a >= s.t1_count) return bad("t1 " + str(l.a) + " does not exist (T1s: " + str(s.t1_count) + ")");
      if (l.b >= s.t2_count) return bad("t2 " + str(l.b) + " does not exist (T2s: " + str(s.t2_count) + ")");
      const uint32_t j = l.a % s.t1_per_pod;
      if (l.b / s.t2_per_group != j)
        return bad("t1 " + str(l.a) + " connects only to T2s " + str(j * s.t2_per_group) + ".." +
                   str((j + 1) * s.t2_per_group - 1));
      if (l.lane >= s.lanes1) return bad("lane " + str(l.lane) + " (parallel links: " + str(s.lanes1) + ")");
      return t1t2_link(l.plane, l.a, (l.b % s.t2_per_group) * s.lanes1 + l.lane);
    }
  }
  return bad("unknown tier");
}

Result<uint32_t> Fabric::Impl::resolve(const SwitchRef& r, std::string* why) const {
  const TopologyShape& s = shape;
  auto bad = [&](const std::string& m) -> Result<uint32_t> {
    if (why) *why = cat({"switch: ", m});
    return Errc::invalid_argument;
  };
  if (r.plane >= s.planes) return bad("plane " + str(r.plane) + " does not exist (planes: " + str(s.planes) + ")");
  uint32_t n = 0;
  switch (r.tier) {
    case SwitchRef::Tier::t0: n = s.t0_count; break;
    case SwitchRef::Tier::t1: n = s.t1_count; break;
    case SwitchRef::Tier::t2: n = s.t2_count; break;
  }
  if (r.index >= n) return bad("index " + str(r.index) + " out of range (this tier has " + str(n) + ")");
  return switch_id(r.plane, r.tier, r.index);
}

uint32_t Fabric::Impl::switch_of_port(uint32_t q) const {
  return static_cast<uint32_t>(std::upper_bound(port_base.begin(), port_base.end(), q) - port_base.begin()) - 1;
}

EgressPort& Fabric::Impl::port_of(uint32_t id, uint32_t port, const char* what) {
  if (!switches[id].built())
    fatal(cat({"internal error: ", what, " reads ", switch_name(switches[id]),
               ", which another process runs (its elements are not built here)"}));
  return switches[id].port(port);
}

void Fabric::Impl::not_built(uint32_t link, bool upward) const {
  const LinkRec& r = links[link];
  const std::string lower = r.lower ? switch_name(*r.lower) : cat({"h[", str(r.lower_port), "]"});
  fatal(cat({"internal error: the link ", lower, "-", switch_name(*r.upper), upward ? " upwards" : " downwards",
             " is read in a process that does not build it (another process runs both of its ends)"}));
}

std::string Fabric::Impl::switch_name(const Switch& sw) const {
  const SwitchRef& r = sw.ref();
  return cat({"p", str(r.plane), ":", tier_name(r.tier), "[", str(r.index), "]"});
}

std::string Fabric::Impl::port_name(uint32_t global_port) const {
  const uint32_t id = switch_of_port(global_port);
  const Switch& sw = switches[id];
  const LinkRec& r = links[port_link[global_port]];
  std::string peer;
  if (r.upper != &sw)
    peer = switch_name(*r.upper);
  else if (r.lower)
    peer = switch_name(*r.lower);
  else
    peer = cat({"h[", str(r.lower_port), "]"});
  // Peers are in the same plane: drop their "pN:" prefix.
  const size_t colon = peer.find(':');
  if (colon != std::string::npos) peer = peer.substr(colon + 1);
  return cat({switch_name(sw), "->", peer});
}

void Fabric::Impl::refresh_link(uint32_t link) {
  // Across processes, only the directions and ports built here: the
  // process that built the others does the same to them.
  const LinkRec& r = links[link];
  const bool alive = r.up && (!r.lower || r.lower->up()) && r.upper->up();
  for (Pipe* p : {r.to_upper, r.to_lower})
    if (p && alive) p->set_alive(true);
  if (alive) return;
  // A dead link loses what is on the wire and what waits to go onto it.
  if (Pipe* up = r.to_upper; up && up->alive()) {
    up->set_alive(false);
    up->flush();
    if (r.lower && r.lower->built()) r.lower->port(r.lower_port).flush();
  }
  if (Pipe* down = r.to_lower; down && down->alive()) {
    down->set_alive(false);
    down->flush();
    if (r.upper->built()) r.upper->port(r.upper_port).flush();
  }
}

void Fabric::Impl::state_changed() {
  if (cfg.routing != Routing::ecmp || cfg.reconverge_after <= Duration{}) return;
  pending_routes.push_back(snapshot());
  sim.schedule(sim.now() + cfg.reconverge_after, this, kReconvergeTag, keys.next());
}

void Fabric::Impl::on_event(Simulator& s, uint64_t tag) {
  if ((tag >> 60) == (kPfcHostTagKind >> 60)) {
    const bool pause = (tag >> 48) & 1;
    const uint32_t host = static_cast<uint32_t>((tag >> 8) & 0xFFFFFFFFull);
    const uint32_t plane = static_cast<uint32_t>(tag & 0xFF);
    if (host >= shape.hosts || plane >= shape.planes) return;
    uint32_t& n = host_paused[size_t{host} * shape.planes + plane];
    if (pause) {
      ++n;
    } else if (n > 0 && --n == 0 && nics[host]) {
      nics[host]->on_event(s, kUnpauseTag | plane);
    }
    return;
  }
  if ((tag >> 60) == (kPfcPortTagKind >> 60)) {
    // A PFC frame from another process's switch to a port of this one's.
    const uint32_t q = static_cast<uint32_t>(tag & 0xFFFFFFFFull);
    if (q >= nports()) return;
    const uint32_t id = switch_of_port(q);
    port_of(id, q - port_base[id], "a PFC frame")
        .on_event(s, (tag >> 48) & 1 ? EgressPort::kTagPause : EgressPort::kTagResume);
    return;
  }
  if (tag == kReconvergeTag && !pending_routes.empty()) {
    reconverge(pending_routes.front());
    pending_routes.pop_front();
  }
}

void Fabric::Impl::receive(Simulator&, Packet*, int) { fatal("internal error: Fabric::Impl::receive called"); }

// ---------------------------------------------------------------- Fabric

Fabric::Fabric(Simulator& sim, const TopologyConfig& cfg) {
  std::string why;
  if (!cfg.validate(&why)) fatal("invalid topology: " + why);
  impl_ = std::make_unique<Impl>(sim, cfg);
}

Fabric::Fabric(Simulator& sim, const TopologyConfig& cfg, const FabricPartitions& parts) {
  std::string why;
  if (!cfg.validate(&why)) fatal("invalid topology: " + why);
  impl_ = std::make_unique<Impl>(sim, cfg, &parts);
}

Fabric::Fabric(Simulator& sim, const TopologyConfig& cfg, LayoutOnly) {
  std::string why;
  if (!cfg.validate(&why)) fatal("invalid topology: " + why);
  impl_ = std::make_unique<Impl>(sim, cfg, nullptr, false);
}

Fabric::~Fabric() = default;

Result<std::unique_ptr<Fabric>> Fabric::create(Simulator& sim, const TopologyConfig& cfg, std::string* why) {
  if (Status s = cfg.validate(why); !s) return s.error();
  return std::make_unique<Fabric>(sim, cfg);
}

const TopologyConfig& Fabric::config() const { return impl_->cfg; }
const TopologyShape& Fabric::shape() const { return impl_->shape; }
uint32_t Fabric::hosts() const { return impl_->shape.hosts; }
uint32_t Fabric::planes() const { return impl_->shape.planes; }
uint32_t Fabric::switch_count() const { return impl_->nswitches; }
uint64_t Fabric::link_count() const { return impl_->links.size(); }

void Fabric::attach(uint32_t host, Node* nic) {
  Impl& m = *impl_;
  if (host >= m.shape.hosts) fatal("attach: host " + str(host) + " does not exist");
  m.nics[host] = nic;
  // Across processes, a host whose NIC side and T0 are both another
  // process's has no pipe here (its NIC is never run here).
  for (uint32_t p = 0; p < m.shape.planes; ++p)
    if (Pipe* down = m.links[m.host_link(p, host)].to_lower) down->attach_nic(nic);
}

uint64_t Fabric::host_port_bps(uint32_t host, uint32_t plane) const {
  const Impl& m = *impl_;
  if (host >= m.shape.hosts || plane >= m.shape.planes) return 0;
  // A host this process does not build (across processes): the link's
  // configured rate, which only sizes the ports of an endpoint never run here.
  if (!m.host_built(host)) return m.shape.host_bps;
  return m.up_pipe(m.host_link(plane, host)).rate_bps();
}

bool Fabric::host_port_up(uint32_t host, uint32_t plane) const {
  const Impl& m = *impl_;
  if (host >= m.shape.hosts || plane >= m.shape.planes) return false;
  return m.up_pipe(m.host_link(plane, host)).alive();
}

bool Fabric::host_port_paused(uint32_t host, uint32_t plane) const {
  const Impl& m = *impl_;
  if (host >= m.shape.hosts || plane >= m.shape.planes) return false;
  return m.host_paused[size_t{host} * m.shape.planes + plane] > 0;
}

const Pipe* Fabric::host_uplink(uint32_t host, uint32_t plane) const {
  const Impl& m = *impl_;
  if (host >= m.shape.hosts || plane >= m.shape.planes || !m.host_built(host)) return nullptr;
  return &m.up_pipe(m.host_link(plane, host));
}

const uint32_t* Fabric::host_pause_counts(uint32_t host) const {
  const Impl& m = *impl_;
  return host < m.shape.hosts ? &m.host_paused[size_t{host} * m.shape.planes] : nullptr;
}

void Fabric::set_route(Packet& p) const { impl_->set_route(p); }

void Fabric::inject(Packet* p) {
  Impl& m = *impl_;
  FabricContext& c = p->src < m.shape.hosts ? *m.host_ctx(p->src) : m.ctx;
  if (p->src >= m.shape.hosts || p->dst >= m.shape.hosts || p->plane >= m.shape.planes) {
    ++c.stats.drops_no_route;
    c.stats.count_drop(static_cast<uint8_t>(p->cls));
    c.sim->free_packet(p);
    return;
  }
  m.up_pipe(m.host_link(p->plane, p->src)).send(p, c.sim->now());
}

std::vector<core::EvEntry> Fabric::make_evs(uint32_t, uint32_t, uint32_t per_plane, Prng& rng) const {
  // The EV names the path from the source's T0 up and over; the destination
  // is in the carrier, not the EV, so one construction serves every pair.
  return impl_->make_evs(per_plane, rng);
}

EvPath Fabric::ev_path(uint32_t src, uint32_t ev) const { return impl_->ev_path(src, ev); }

Duration Fabric::max_one_way_latency() const {
  const Impl& m = *impl_;
  const TopologyShape& s = m.shape;
  const uint32_t bytes = 4096 + static_cast<uint32_t>(wire::kMaxPlainHeaderBytes) + kWireOverhead +
                         (m.cfg.routing == Routing::srv6 ? kSrv6Overhead : 0);
  // Fabric links on the longest path: up and down through T1 (and T2).
  uint32_t fabric_links = 0;
  if (s.t0_count > 1) fabric_links = (s.three_tier && s.pods > 1) ? 4 : 2;
  const Duration ser_h = Duration::serialization(bytes, s.host_bps);
  const Duration ser_f = Duration::serialization(bytes, s.fabric_bps);
  return ser_h * 2 + ser_f * fabric_links + m.cfg.link_delay * (2 + fabric_links) +
         m.cfg.switch_latency * (1 + fabric_links);
}

Status Fabric::check(const LinkRef& l, std::string* why) const {
  auto r = impl_->resolve(l, why);
  return r ? Status{} : Status{r.error()};
}

Status Fabric::check(const SwitchRef& s, std::string* why) const {
  auto r = impl_->resolve(s, why);
  return r ? Status{} : Status{r.error()};
}

namespace {
template <class Ref>
uint32_t must_resolve(const Fabric::Impl& m, const Ref& ref) {
  std::string why;
  auto r = m.resolve(ref, &why);
  if (!r) fatal(why);
  return *r;
}
}  // namespace

void Fabric::set_link_up(const LinkRef& l, bool up) {
  Impl& m = *impl_;
  const uint32_t id = must_resolve(m, l);
  if (m.links[id].up == up) return;
  m.links[id].up = up;
  m.refresh_link(id);
  m.state_changed();
}

void Fabric::set_link_loss(const LinkRef& l, double p) {
  Impl& m = *impl_;
  const uint32_t id = must_resolve(m, l);
  const double q = p < 0 ? 0 : (p > 1 ? 1 : p);
  // Across processes, the directions built here (the other process's own).
  for (Pipe* pipe : {m.links[id].to_upper, m.links[id].to_lower})
    if (pipe) pipe->set_loss(q);
}

void Fabric::set_link_rate(const LinkRef& l, uint64_t bps) {
  Impl& m = *impl_;
  const uint32_t id = must_resolve(m, l);
  if (bps == 0) fatal("set_link_rate: rate must be > 0 (take the link down instead)");
  for (Pipe* pipe : {m.links[id].to_upper, m.links[id].to_lower})
    if (pipe) pipe->set_rate(bps);
}

void Fabric::set_switch_up(const SwitchRef& s, bool up) {
  Impl& m = *impl_;
  const uint32_t id = must_resolve(m, s);
  Switch& sw = m.switches[id];
  if (sw.up() == up) return;
  sw.set_up(up);
  for (uint32_t q = m.port_base[id]; q < m.port_base[id + 1]; ++q) m.refresh_link(m.port_link[q]);
  m.state_changed();
}

std::string Fabric::name(const LinkRef& l) const {
  const TopologyShape& s = impl_->shape;
  const std::string p = str(l.plane);
  const std::string lane = str(l.lane);
  switch (l.tier) {
    case LinkRef::Tier::host_t0:
      return cat({"p", p, ":h[", str(l.a), "]-t0[", str(s.t0_down ? l.a / s.t0_down : 0), "]"});
    case LinkRef::Tier::t0_t1:
      return cat({"p", p, ":t0[", str(l.a), "]-t1[", str(l.b), "]", s.lanes0 > 1 ? "#" : "", s.lanes0 > 1 ? lane : ""});
    case LinkRef::Tier::t1_t2:
      return cat({"p", p, ":t1[", str(l.a), "]-t2[", str(l.b), "]", s.lanes1 > 1 ? "#" : "", s.lanes1 > 1 ? lane : ""});
  }
  return cat({"p", p, ":?"});
}

std::string Fabric::name(const SwitchRef& s) const {
  return cat({"p", str(s.plane), ":", tier_name(s.tier), "[", str(s.index), "]"});
}

FabricStats Fabric::stats() const {
  FabricStats s;
  impl_->for_each_ctx([&](const FabricContext& c) { s.add(c.stats); });
  return s;
}

FabricStats Fabric::partition_stats(uint32_t p) const {
  return p == 0 ? impl_->ctx.stats : impl_->pctx.at(p - 1)->stats;
}

void Fabric::for_each_message_target(const std::function<void(Node*)>& f) {
  // The same sequence on every process: an element not built here is a
  // null, which keeps its index.
  Impl& m = *impl_;
  f(&m);
  for (uint32_t id = 0; id < m.nswitches; ++id) {
    Switch& sw = m.switches[id];
    for (uint32_t i = 0; i < m.port_base[id + 1] - m.port_base[id]; ++i) f(sw.built() ? &sw.port(i) : nullptr);
  }
  for (const LinkRec& l : m.links)
    if (m.cut(l))
      for (Pipe* p : {l.to_upper, l.to_lower}) f(p);
}

Fabric::Elements Fabric::elements_built() const {
  const Impl& m = *impl_;
  Elements e;
  for (uint32_t id = 0; id < m.nswitches; ++id) e.switches += m.switches[id].built();
  e.ports = m.nslots;
  e.lone_pipes = m.nlone;
  return e;
}

void Fabric::Impl::catch_up_ports() {
  // Partitioned: called between windows, where every partition's clock
  // reads the same, except across processes, where only the partitions
  // this process runs move (the others' ports never hold a packet here):
  // each port goes to its own partition's clock.
  for (uint32_t s = 0; s < nswitches; ++s) {
    Switch& sw = switches[s];
    if (!sw.built()) continue;  // another process's: it catches up its own
    const Time now = ctx_of(s)->sim->now();
    for (uint32_t i = 0; i < sw.nports(); ++i) sw.port(i).catch_up(now);
  }
}

uint64_t Fabric::max_queue_bytes(std::string* where) {
  impl_->catch_up_ports();
  Impl& m = *impl_;
  if (!m.part_built.empty())
    fatal("internal error: max_queue_bytes reads every switch; across processes a process builds its own alone");
  uint64_t best = 0;
  uint32_t at = 0;
  for (uint32_t id = 0; id < m.nswitches; ++id)
    for (uint32_t i = 0; i < m.switches[id].nports(); ++i) {
      const uint64_t b = m.switches[id].port(i).queued_bytes(Class::data);
      if (b > best) {
        best = b;
        at = m.port_base[id] + i;
      }
    }
  if (where) *where = best ? m.port_name(at) : std::string();
  return best;
}

uint64_t Fabric::total_queued_bytes() {
  impl_->catch_up_ports();
  uint64_t n = 0;
  impl_->for_each_ctx([&](const FabricContext& c) { n += c.queued_bytes; });
  return n;
}

LinkCounters Fabric::link_counters(const LinkRef& l, bool upward) {
  impl_->catch_up_ports();
  Impl& m = *impl_;
  const uint32_t id = must_resolve(m, l);
  const LinkRec& r = m.links[id];
  const Pipe& p = upward ? m.up_pipe(id) : m.down_pipe(id);
  LinkCounters c{p.packets(), p.bytes(), 0, false};
  const EgressPort* feeder = upward ? (r.lower ? &m.port_of(m.id_of(r.lower), r.lower_port, "link_counters") : nullptr)
                                    : &m.port_of(m.id_of(r.upper), r.upper_port, "link_counters");
  if (feeder) {
    c.queued_bytes = feeder->queued_bytes();
    c.paused = feeder->paused();
  }
  return c;
}

}  // namespace mrc::sim
