// SPDX-License-Identifier: BSD-2-Clause
#include "sim/workload/cluster.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "sim/engine/parallel.hpp"

namespace mrc::sim {

namespace {
constexpr uint64_t kMemBase = uint64_t{1} << 32;
constexpr uint64_t kMemSize = uint64_t{1} << 40;  // simulated: nothing is stored

[[noreturn]] void fatal(const char* what, Errc e) {
  std::fprintf(stderr, "mrc-sim: %s failed: %s\n", what, std::string(to_string(e)).c_str());
  std::abort();
}
}  // namespace

Cluster::Cluster(Simulator& sim, Fabric& fabric, const core::EndpointConfig& ep_cfg, const TransportSpec& t)
    : sim_(sim),
      sims_{&sim},
      post_delay_(std::max(fabric.config().link_delay, Duration::ps(1))),
      fabric_(fabric),
      spec_(t),
      ev_rng_(sim.rng_for(0xC1)) {
  init_hosts(sim, fabric, ep_cfg);
}

Cluster::Cluster(Simulator& sim, const HostPlacement& place, Fabric& fabric, const core::EndpointConfig& ep_cfg,
                 const TransportSpec& t)
    : sim_(sim),
      sims_(place.sims),
      host_part_(place.host),
      engine_(place.engine),
      post_delay_(place.post_delay),
      fabric_(fabric),
      spec_(t),
      ev_rng_(sim.rng_for(0xC1)) {
  if (sims_.empty() || (!host_part_.empty() && host_part_.size() != fabric.hosts())) {
    std::fprintf(stderr, "mrc-sim: internal error: a host placement for %zu hosts, the fabric has %u\n",
                 host_part_.size(), fabric.hosts());
    std::abort();
  }
  // Across processes, this rank builds the QPs of its own partitions' hosts alone.
  if (engine_)
    for (uint32_t h = 0; h < fabric.hosts(); ++h)
      if (!engine_->local(partition_of(h))) {
        remote_.resize(fabric.hosts(), 0);
        remote_[h] = 1;
      }
  init_hosts(sim, fabric, ep_cfg);
}

void Cluster::must_be_built(uint32_t h, const char* what) const {
  if (built(h)) return;
  std::fprintf(stderr, "mrc-sim: internal error: %s of host %u, which another process runs\n", what, h);
  std::abort();
}

void Cluster::init_hosts(Simulator& sim, Fabric& fabric, const core::EndpointConfig& ep_cfg) {
  posters_ = std::make_unique<RecvPoster[]>(fabric.hosts());
  ids_.resize(remote_.empty() ? 0 : fabric.hosts());
  for (uint32_t h = 0; h < fabric.hosts(); ++h) {
    core::EndpointConfig cfg = ep_cfg;
    cfg.seed = sim.rng_for(0x1000 + h).next_u64();
    posters_[h].c = this;
    posters_[h].host = h;
    if (!built(h)) {
      // Another rank's host: no NIC. Its entity id is taken as the NIC's
      // constructor takes it, and what its endpoint would give its peers
      // (memory keys, then a QPN and a PSN per QP) is drawn from the same
      // configuration (core::EndpointIds).
      (void)sim_of(h).new_entity();
      nics_.push_back(nullptr);
      ids_[h] = std::make_unique<core::EndpointIds>(cfg);
      auto mr = ids_[h]->reg_mr(kMemBase, kMemSize, core::access::kLocalWrite | core::access::kRemoteWrite, false);
      if (!mr) fatal("reg_mr", mr.error());
      mrs_.push_back(*mr);
      continue;
    }
    nics_.push_back(std::make_unique<Nic>(sim_of(h), fabric, h, cfg));
    Nic& n = *nics_.back();
    n.on_event_sink = [this](Nic& nic, const core::Event& e) { on_nic_event(nic, e); };
    n.on_completion_sink = [this](Nic& nic, const core::WorkCompletion& wc) { on_nic_completion(nic, wc); };
    auto mr = n.ep().reg_mr(kMemBase, kMemSize, core::access::kLocalWrite | core::access::kRemoteWrite, false);
    if (!mr) fatal("reg_mr", mr.error());
    mrs_.push_back(*mr);
    if (Status s = n.ep().set_cc_profile(1, spec_.cc); !s) fatal("set_cc_profile", s.error());
  }
  send_cb_.resize(fabric.hosts());
  next_wr_.assign(fabric.hosts(), 1);
}

Cluster::~Cluster() = default;

void Cluster::connect(uint32_t src, uint32_t dst, uint32_t lane) {
  lane %= std::max<uint32_t>(1, spec_.qps_per_peer);
  if (!qps_.count(Key{src, dst, lane})) (void)open(src, dst, lane);
}

const Cluster::QpInfo& Cluster::qp(uint32_t src, uint32_t dst, uint32_t lane) {
  auto it = qps_.find(Key{src, dst, lane});
  if (it != qps_.end()) return it->second;
  if (sims_.size() > 1) {
    // Opening touches both hosts, which may be running in two partitions
    // at once: the workload opens its QPs before the run (connect()).
    std::fprintf(stderr, "mrc-sim: internal error: a write from host %u to %u (lane %u) on a QP not opened before "
                 "a partitioned run\n", src, dst, lane);
    std::abort();
  }
  return open(src, dst, lane);
}

const Cluster::QpInfo& Cluster::open(uint32_t src, uint32_t dst, uint32_t lane) {
  const Key key{src, dst, lane};
  // Both directions of a connection: src's QP sends data, dst's QP answers
  // (and uses its own EV set, towards src, for control packets).
  using namespace core::qp_attr;
  auto make_profile = [&](core::Endpoint& e, uint32_t from, uint32_t to) {
    const core::EvProfile p = ev_profile_for(from, to, lane);
    const uint64_t id = next_profile_++;  // one EV profile per QP: its EV set is its own
    std::string why;
    if (Status s = e.set_ev_profile(id, p, &why); !s) {
      std::fprintf(stderr, "mrc-sim: EV profile rejected: %s\n", why.c_str());
      std::abort();
    }
    return id;
  };
  // Another rank's end (built()) is not made: its profile id is taken (so
  // the ids match that rank's), and its QPN and PSN are drawn as its
  // endpoint draws them (core::EndpointIds), for the local end.
  const bool full_a = built(src), full_b = built(dst);
  const uint64_t pa = full_a ? make_profile(nics_[src]->ep(), src, dst) : next_profile_++;
  const uint64_t pb = full_b ? make_profile(nics_[dst]->ep(), dst, src) : next_profile_++;
  auto create = [&](uint32_t h) {
    if (!built(h)) return ids_[h]->create_qp();
    core::QpInit init;
    init.transport = spec_.transport;
    init.send_cq = init.recv_cq = nics_[h]->cq();
    return nics_[h]->ep().create_qp(init).value();
  };
  auto psn = [&](uint32_t h) { return built(h) ? nics_[h]->ep().random_psn() : ids_[h]->random_psn(); };
  const uint32_t qa = create(src);
  const uint32_t qb = create(dst);
  auto bring_up = [&](core::Endpoint& e, uint32_t qpn, uint64_t prof, uint32_t peer, uint32_t peer_qpn,
                      uint32_t my_psn, uint32_t peer_psn) {
    core::QpAttr at;
    at.state = core::QpState::init;
    at.ev_profile_id = prof;
    at.cc_profile_id = 1;
    uint32_t init_mask = kState | kEvProfileId | kCcProfileId;
    if (spec_.qp_hints) {
      at.hint.qps_per_peer = spec_.qps_per_peer;
      at.hint.remote_recv_peers = peer < recv_peers_.size() ? recv_peers_[peer] : 0;
      init_mask |= kHint;
    }
    if (Status s = e.modify_qp(sim_of(src).now(), qpn, at, init_mask); !s)
      fatal("modify_qp(INIT)", s.error());
    at.state = core::QpState::rtr;
    at.dest_qpn = peer_qpn;
    at.rq_psn = peer_psn;
    at.peer = peer;
    at.mpr_dest = spec_.mpr;
    at.path_mtu = spec_.mtu;
    at.max_wimm_dest = 1024;
    if (Status s = e.modify_qp(sim_of(src).now(), qpn, at,
                               kState | kDestQpn | kRqPsn | kPeer | kPathMtu | kMaxWimmDest | kMprDest);
        !s)
      fatal("modify_qp(RTR)", s.error());
    at.state = core::QpState::rts;
    at.sq_psn = my_psn;
    at.mpr = spec_.mpr;
    at.max_wimm = 1024;
    at.timeout = spec_.timeout;
    at.retry_linear = spec_.retry_linear;
    at.retry_exp = spec_.retry_exp;
    if (Status s = e.modify_qp(sim_of(src).now(), qpn, at, kState | kSqPsn | kMaxWimm | kMpr | kRetryCnt | kTimeout); !s)
      fatal("modify_qp(RTS)", s.error());
  };
  const uint32_t psn_a = psn(src), psn_b = psn(dst);
  if (full_a) bring_up(nics_[src]->ep(), qa, pa, dst, qb, psn_a, psn_b);
  if (full_b) bring_up(nics_[dst]->ep(), qb, pb, src, qa, psn_b, psn_a);
  return qps_.emplace(key, QpInfo{qa, qb}).first->second;
}

core::EvProfile Cluster::ev_profile_for(uint32_t from, uint32_t to, uint32_t lane) {
  const HostCtl* hc = from < ctl_.size() && ctl_[from].ev_profile != 0 ? &ctl_[from] : nullptr;
  if (hc && !hc->auto_mode) {
    // EXP / GEN: the controller's array, as the core's controller hands it
    // to QPs (validated when the plan was applied).
    core::EvProfile p = hc->ctl->to_endpoint_profile(hc->ev_profile, core::EvProfile{}).value();
    p.policy = spec_.policy;
    if (spec_.pin_t0_uplink >= 0) pin(from, p.explicit_evs);
    return p;
  }
  uint32_t per_plane = spec_.evs_per_plane, active_per_plane = spec_.active_per_plane;
  if (hc && hc->count_per_qp != 0) {  // AUTO with a count: that many of the simulator's EVs
    per_plane = std::max<uint32_t>(1, hc->count_per_qp / fabric_.planes());
    active_per_plane = std::max<uint32_t>(1, per_plane / 2);
  }
  core::EvProfile p;
  p.policy = spec_.policy;
  // The QP's own stream, a function of (from, to, lane) alone: QPs are made
  // when a workload first writes on them, and one stream drawn in that order
  // would tie every EV set to the order events ran in.
  Prng rng = ev_rng_.derive((uint64_t{from} << 40) ^ (uint64_t{to} << 16) ^ lane);
  p.explicit_evs = fabric_.make_evs(from, to, per_plane, rng);
  if (spec_.pin_t0_uplink >= 0) pin(from, p.explicit_evs);
  if (spec_.transport == core::Transport::roce_rc) {
    // A RoCE QP lives on one NIC port: QP `lane` of a pair uses plane
    // lane % planes (one QP per port, as a collective library opens them),
    // and its single path within the plane is an ECMP-style hash pick.
    const uint8_t plane = static_cast<uint8_t>(lane % fabric_.planes());
    std::erase_if(p.explicit_evs, [plane](const core::EvEntry& ev) { return ev.port != plane; });
  }
  p.active_count =
      std::min<uint32_t>(active_per_plane * fabric_.planes(), static_cast<uint32_t>(p.explicit_evs.size()));
  p.ev_min_active = std::max<uint32_t>(1, p.active_count * spec_.ev_min_active_pct / 100);
  // AUTO: the device's own set with the profile's ev_min_active.
  if (hc) p = hc->ctl->to_endpoint_profile(hc->ev_profile, p).value();
  return p;
}

Status Cluster::use_controller(const ControllerPlan& plan, std::string* why) {
  ctl_.clear();
  ctl_.resize(nics_.size());
  for (uint32_t h = 0; h < nics_.size(); ++h) {
    // Another rank's host has no endpoint here, and its QPs' profiles are
    // that rank's to make: its controller is too.
    if (!plan.applies_to(h) || !built(h)) continue;
    HostCtl& hc = ctl_[h];
    hc.ctl = std::make_unique<core::ctl::Controller>(controller_limits(fabric_.planes()), sim_.rng_for(0x2000 + h));
    if (Status s = apply_controller_plan(*hc.ctl, plan, why); !s) return s;
    if (plan.ev_profile != 0) {
      using namespace core::ctl;
      EvProfileAttr q;
      if (Status s = hc.ctl->query_ev_profile(plan.ev_profile, q, ev_attr::kMode | ev_attr::kCount | ev_attr::kEventMask);
          !s)
        return s;
      hc.ev_profile = plan.ev_profile;
      hc.auto_mode = q.ev_mode == ev_mode::kAuto;
      hc.count_per_qp = hc.auto_mode ? q.ev_count : 0;
      hc.event_mask = q.event_mask;
      auto p = hc.ctl->to_endpoint_profile(plan.ev_profile, core::EvProfile{});
      if (!p) return p.error();
    }
    if (plan.cc_profile != 0) {
      auto cc = hc.ctl->to_endpoint_cc_profile(plan.cc_profile);
      if (!cc) return cc.error();
      if (Status s = nics_[h]->ep().set_cc_profile(1, *cc, why); !s) return s;
    }
  }
  return {};
}

bool Cluster::reported(uint32_t h, const core::EvEvent& e) const {
  if (h >= ctl_.size() || ctl_[h].ev_profile == 0) return true;
  // The controller's own DENY / allow is always recorded; the rest as the
  // profile's event mask (reference 4.10: GOOD, ASSUMED_BAD) selects. A
  // held demotion is an ASSUMED_BAD that did not happen.
  if (e.from == core::EvState::denied || e.to == core::EvState::denied) return true;
  const uint32_t bit = e.held || e.to == core::EvState::assumed_bad ? core::ctl::ev_state::kAssumedBad
                                                                     : core::ctl::ev_state::kGood;
  return (ctl_[h].event_mask & bit) != 0;
}

// TransportSpec::pin_t0_uplink: each plane's first active_per_plane EVs on
// the pinned uplink go first, or only the pinned EVs stay with pin_only.
void Cluster::pin(uint32_t src, std::vector<core::EvEntry>& evs) const {
  if (fabric_.config().routing != Routing::srv6) {
    std::fprintf(stderr, "mrc-sim: pin_t0_uplink needs SRv6 routing (ECMP paths are hashed)\n");
    std::abort();
  }
  if (static_cast<uint32_t>(spec_.pin_t0_uplink) >= fabric_.shape().t0_up) {
    std::fprintf(stderr, "mrc-sim: pin_t0_uplink %d out of range (the T0s have %u uplinks)\n",
                 spec_.pin_t0_uplink, fabric_.shape().t0_up);
    std::abort();
  }
  const uint32_t u = static_cast<uint32_t>(spec_.pin_t0_uplink);
  auto on_uplink = [&](const core::EvEntry& e) { return fabric_.ev_path(src, e.value).t0_uplink == u; };
  if (spec_.pin_only) {
    std::erase_if(evs, [&](const core::EvEntry& e) { return !on_uplink(e); });
    return;
  }
  // The policy groups EVs by port in list order: moving up to
  // active_per_plane pinned EVs of each plane to the front makes them that
  // plane's active set; everything else keeps make_evs() order (uplinks
  // interleaved) as the backups.
  std::vector<core::EvEntry> front, back;
  std::vector<uint32_t> taken(fabric_.planes(), 0);
  for (const core::EvEntry& e : evs) {
    if (on_uplink(e) && taken[e.port] < spec_.active_per_plane) {
      ++taken[e.port];
      front.push_back(e);
    } else {
      back.push_back(e);
    }
  }
  front.insert(front.end(), back.begin(), back.end());
  evs = std::move(front);
}

void Cluster::write(uint32_t src, uint32_t dst, uint64_t bytes, std::function<void(const Done&)> done,
                    uint32_t lane, const uint32_t* imm) {
  must_be_built(src, "a write");
  const QpInfo& q = qp(src, dst, lane % std::max<uint32_t>(1, spec_.qps_per_peer));
  Simulator& sim = sim_of(src);
  core::SendWr wr;
  wr.wr_id = next_wr_[src]++;
  wr.local_addr = kMemBase;
  wr.lkey = mrs_[src].lkey;
  wr.length = static_cast<uint32_t>(bytes);
  wr.remote_addr = kMemBase;
  wr.rkey = mrs_[dst].rkey;
  if (imm) {
    wr.opcode = core::WrOpcode::rdma_write_with_imm;
    wr.imm = *imm;
    // The receiver posts its receive itself: a post delay is under the
    // time any packet takes from src to dst (two links and a switch).
    post(src, dst, &posters_[dst], (uint64_t{q.remote} << 32) | *imm);
  }
  send_cb_[src][wr.wr_id] = std::move(done);
  if (Status s = nics_[src]->ep().post_send(sim.now(), q.local, wr); !s) fatal("post_send", s.error());
  nics_[src]->kick();
}

void Cluster::post(uint32_t src, uint32_t dst, Node* node, uint64_t tag) {
  const Time at = sim_of(src).now() + post_delay_;
  const uint64_t key = nics_[src]->next_key();
  const uint32_t from = partition_of(src), to = partition_of(dst);
  if (from == to || !engine_)
    sims_[to]->schedule(at, node, tag, key);
  else
    engine_->send(from, to, at, node, tag, key);
}

void Cluster::RecvPoster::on_event(Simulator&, uint64_t tag) {
  c->must_be_built(host, "a receive");
  const auto qpn = static_cast<uint32_t>(tag >> 32);
  (void)c->nics_[host]->ep().post_recv(qpn, core::RecvWr{tag});
}

void Cluster::on_nic_completion(Nic& nic, const core::WorkCompletion& wc) {
  const uint32_t h = nic.host();
  if (wc.opcode == core::WcOpcode::recv_rdma_with_imm) {
    if (wc.status != core::WcStatus::success) return;
    if (on_recv_imm) on_recv_imm(h, wc.imm, Done{sim_of(h).now(), wc.status});
    return;
  }
  auto it = send_cb_[h].find(wc.wr_id);
  if (it == send_cb_[h].end()) return;
  auto cb = std::move(it->second);
  send_cb_[h].erase(it);
  if (cb) cb(Done{sim_of(h).now(), wc.status});
}

void Cluster::on_nic_event(Nic& nic, const core::Event& e) {
  const uint32_t h = nic.host();
  const bool count = built(h);
  if (std::get_if<core::QpErrorEvent>(&e)) {
    if (count) qp_failures_.fetch_add(1, std::memory_order_relaxed);
  } else if (auto* ev = std::get_if<core::EvEvent>(&e)) {
    if (count && ev->to == core::EvState::assumed_bad) evs_retired_.fetch_add(1, std::memory_order_relaxed);
    if (count && ev->from == core::EvState::assumed_bad && ev->to == core::EvState::good)
      evs_resurrected_.fetch_add(1, std::memory_order_relaxed);
    if (on_ev_event && reported(h, *ev)) on_ev_event(h, *ev);
  } else if (auto* pe = std::get_if<core::PortEvent>(&e)) {
    if (on_port_event) on_port_event(h, *pe);
  }
}

}  // namespace mrc::sim
