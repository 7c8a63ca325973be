// SPDX-License-Identifier: BSD-2-Clause
#include "sim/fabric/switch.hpp"

#include <utility>

#include "sim/fabric/usid.hpp"

namespace mrc::sim {

void Switch::init(FabricContext* ctx, const TopologyShape* shape, SwitchRef ref, uint32_t pod, uint32_t pos,
                  PortSlot* ports, uint32_t nports, uint64_t salt) {
  ctx_ = ctx;
  shape_ = shape;
  ref_ = ref;
  pod_ = pod;
  pos_ = pos;
  ports_ = ports;
  nports_ = nports;
  salt_ = salt;
  plane_bits_ = ref.plane & 7u;
  upstream_.assign(nports, Upstream{});
  pfc_keys_ = ctx->sim->new_keys();
}

void Switch::set_srv6_table(uint16_t own_first, uint16_t own_count, const std::vector<FibEntry> (&table)[4],
                            const uint32_t (&base)[4]) {
  own_first_ = own_first;
  own_count_ = own_count;
  fib_.clear();
  for (int t = 0; t < 4; ++t) {
    // uSID indexes are 11-bit and tables hold at most a few thousand entries.
    fib_base_[t] = static_cast<uint16_t>(base[t]);
    fib_size_[t] = static_cast<uint16_t>(table[t].size());
    fib_off_[t] = static_cast<uint16_t>(fib_.size());
    fib_.insert(fib_.end(), table[t].begin(), table[t].end());
  }
  fib_data_ = fib_.data();
}

void Switch::set_ecmp_overrides(std::vector<int32_t> index, std::vector<std::vector<uint16_t>> sets) {
  ov_index_ = std::move(index);
  ov_sets_ = std::move(sets);
}

void Switch::receive(Packet* p, uint32_t in_port) {
  if (!up_) {
    // Unreachable while pipes into a dead switch are dead; kept as a guard.
    ++ctx_->stats.drops_link_down;
    ctx_->stats.count_drop(static_cast<uint8_t>(p->cls));
    ctx_->sim->free_packet(p);
    return;
  }
  const uint32_t out = p->srv6 ? route_srv6(*p) : route_ecmp(*p);
  if (out >= nports_) {
    ++ctx_->stats.drops_no_route;
    ctx_->stats.count_drop(static_cast<uint8_t>(p->cls));
    ctx_->sim->free_packet(p);
    return;
  }
  // The port and the pipe it feeds are both likely cold: load them in
  // parallel (enqueue reads the pipe through the port).
  __builtin_prefetch(&ports_[out].pipe);
  ports_[out].port.enqueue(p, in_port);
}

uint32_t Switch::route_srv6(Packet& p) const {
  const uint32_t pos = p.usid_pos;
  if (pos + 1 >= static_cast<uint32_t>(kMaxUsids)) return kNoPort;
  // uN: the active uSID must be ours; which of ours (one per lane) says
  // which parallel link to take.
  const uint32_t lane = static_cast<uint16_t>(p.usid[pos] - own_first_);
  if (lane >= own_count_) return kNoPort;
  // Shift, then the static lookup of the new active uSID.
  p.usid_pos = static_cast<uint8_t>(pos + 1);
  return lookup_srv6(p.usid[pos + 1], lane);
}

uint32_t Switch::peek_srv6(const Packet& p) const {
  const uint32_t pos = p.usid_pos;
  if (pos + 1 >= static_cast<uint32_t>(kMaxUsids)) return kNoPort;
  const uint32_t lane = static_cast<uint16_t>(p.usid[pos] - own_first_);
  if (lane >= own_count_) return kNoPort;
  return lookup_srv6(p.usid[pos + 1], lane);
}

uint32_t Switch::route_ecmp(const Packet& p) const {
  const TopologyShape& s = *shape_;
  const uint32_t d0 = p.dst / s.t0_down;
  const uint64_t h = mix64(p.flow_hash ^ salt_);
  if (!ov_index_.empty()) {
    const int32_t i = ov_index_[d0];
    if (i >= 0) {
      const auto& set = ov_sets_[static_cast<size_t>(i)];
      if (set.empty()) return kNoPort;
      return set[hash_pick(h, static_cast<uint32_t>(set.size()))];
    }
  }
  switch (ref_.tier) {
    case SwitchRef::Tier::t0:
      if (d0 == ref_.index) return p.dst - d0 * s.t0_down;
      return s.t0_down + hash_pick(h, s.t0_up);
    case SwitchRef::Tier::t1: {
      const uint32_t dpod = d0 / s.t0_per_pod;
      if (dpod == pod_) return (d0 - dpod * s.t0_per_pod) * s.lanes0 + hash_pick(h, s.lanes0);
      return s.t1_down + hash_pick(h, s.t1_up);
    }
    case SwitchRef::Tier::t2:
      return (d0 / s.t0_per_pod) * s.lanes1 + hash_pick(h, s.lanes1);
  }
  return kNoPort;
}

void Switch::pfc_signal(uint32_t in_port, bool pause) {
  if (in_port >= upstream_.size() || ctx_->closing) return;
  const Upstream& u = upstream_[in_port];
  // The frame crosses the link back to the sender (possibly in another
  // partition: the PFC delay is a link delay, at least the lookahead).
  const Time at = ctx_->sim->now() + ctx_->pfc_delay;
  if (u.port)
    ctx_->post(u.part, at, u.port, pause ? EgressPort::kTagPause : EgressPort::kTagResume, pfc_keys_.next());
  else if (u.remote_port != Upstream::kNone)
    ctx_->post(u.part, at, ctx_->pfc_host_sink, pfc_port_tag(u.remote_port, pause), pfc_keys_.next());
  else if (ctx_->pfc_host_sink)
    ctx_->post(u.part, at, ctx_->pfc_host_sink, pfc_host_tag(u.host, u.plane, pause), pfc_keys_.next());
}

}  // namespace mrc::sim
