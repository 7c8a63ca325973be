// SPDX-License-Identifier: BSD-2-Clause
#include "sim/fabric/egress_port.hpp"

#include <cstdio>
#include <cstdlib>

#include "sim/fabric/pipe.hpp"

namespace mrc::sim {

namespace {
// Bytes per WDRR round per percent of weight: a round hands out 10,000 bytes,
// more than two full-size packets, so the loop in select() turns at most a
// few times per packet.
constexpr int64_t kQuantumPerPct = 100;
}  // namespace

PortParams PortParams::resolve(const QueueConfig& q, uint64_t rate_bps, Duration base_rtt, bool faces_host) {
  __extension__ using U128 = unsigned __int128;
  PortParams p;
  const uint64_t bdp = static_cast<uint64_t>(static_cast<U128>(rate_bps) *
                                             static_cast<uint64_t>(base_rtt.count_ps()) / 8'000'000'000'000ull);
  p.data_bytes = q.data_bytes ? q.data_bytes : bdp;
  p.trimmed_bytes = q.trimmed_bytes;
  p.control_bytes = q.control_bytes;
  p.ecn = !faces_host || q.ecn_last_hop;
  p.ecn_kmin_bytes = q.ecn_kmin_bytes ? q.ecn_kmin_bytes : p.data_bytes * 20 / 100;
  p.ecn_kmax_bytes = q.ecn_kmax_bytes ? q.ecn_kmax_bytes : p.data_bytes * 80 / 100;
  p.ecn_at_dequeue = q.ecn_at_dequeue;
  p.trimming = q.trimming;
  p.last_hop = faces_host;
  p.trimmed_weight_pct = q.trimmed_weight_pct;
  p.pfc = q.pfc;
  p.pfc_xoff_bytes = q.pfc_xoff_bytes ? q.pfc_xoff_bytes : p.data_bytes * 70 / 100;
  p.pfc_xon_bytes = q.pfc_xon_bytes ? q.pfc_xon_bytes : p.data_bytes * 50 / 100;
  return p;
}

void EgressPort::init(FabricContext* ctx, Pipe* out, const PortParams& prm, uint64_t rng_stream,
                      PfcPeer* pfc_peer, uint32_t radix) {
  ctx_ = ctx;
  out_ = out;
  prm_ = prm;
  pfc_ = prm.pfc;
  lazy_ = !prm.pfc;
  if (lazy_) out->set_feeder(this);
  ecn_ = prm.ecn;
  trimming_ = prm.trimming;
  last_hop_ = prm.last_hop;
  ecn_kmin_ = prm.ecn_kmin_bytes;
  ecn_kmax_ = prm.ecn_kmax_bytes;
  cap_[kControl] = prm.control_bytes;
  cap_[kTrimmed] = prm.trimmed_bytes;
  cap_[kData] = prm.data_bytes;
  const int64_t pct = prm.trimmed_weight_pct > 100 ? 100 : prm.trimmed_weight_pct;
  quantum_[0] = pct * kQuantumPerPct;
  quantum_[1] = (100 - pct) * kQuantumPerPct;
  rng_ = ctx->sim->rng_for(rng_stream);
  keys_ = ctx->sim->new_keys();
  ecn_inv_range_ = prm.ecn_kmax_bytes > prm.ecn_kmin_bytes
                       ? 1.0 / static_cast<double>(prm.ecn_kmax_bytes - prm.ecn_kmin_bytes)
                       : 0.0;
  pfc_peer_ = pfc_peer;
  if (prm.pfc) paused_in_.assign((radix + 63) / 64, 0);
}

void EgressPort::drop(Packet* p, uint64_t& counter) {
  ++counter;
  ctx_->stats.count_drop(static_cast<uint8_t>(p->cls));
  ctx_->sim->free_packet(p);
}

void EgressPort::maybe_mark(Packet* p) {
  const uint64_t q = bytes_[kData];
  if (q <= ecn_kmin_ && q < ecn_kmax_) return;  // the common case: a short queue
  if (!ecn_ || !p->ecn_capable || p->ecn_ce) return;
  if (q < ecn_kmax_ && rng_.uniform() >= static_cast<double>(q - ecn_kmin_) * ecn_inv_range_) return;
  p->ecn_ce = true;
  ++ctx_->stats.ecn_marks;
}

void EgressPort::enqueue(Packet* p, uint32_t in_port) {
  FabricStats& st = ctx_->stats;
  const Time now = ctx_->sim->now();
  if (packets_ != 0) catch_up(now);  // admission and marking see the queue as of now
  if (!out_->alive()) return drop(p, st.drops_link_down);
  uint32_t bytes = p->wire_bytes();
  int c = static_cast<int>(p->cls);
  if (c == kData) {
    if (!pfc_ && bytes_[kData] + bytes > cap_[kData]) {
      if (!trimming_ || !p->trimmable) return drop(p, st.drops_queue);
      p->trim_to_header(last_hop_);
      ++st.trims;
      if (last_hop_) ++st.trims_last_hop;
      c = kTrimmed;
      bytes = p->wire_bytes();
    } else if (!prm_.ecn_at_dequeue) {
      maybe_mark(p);
    }
  }
  if (c != kData && bytes_[c] + bytes > cap_[c]) return drop(p, st.drops_queue);

  // Idle port, nothing waiting: straight onto the wire, no event.
  if (packets_ == 0 && busy_until_ <= now && (c != kData || paused_ == 0)) {
    transmit(p, bytes, now);
    return;
  }
  q_[c].push_back(Queued{p, bytes});
  ++packets_;
  bytes_[c] += bytes;
  ctx_->queued_bytes += bytes;
  if (c == kData) {
    if (bytes_[kData] > st.peak_queue_bytes) st.peak_queue_bytes = bytes_[kData];
    if (pfc_) pfc_on_enqueue(in_port);
  }
  if (lazy_) {
    if (packets_ == 1) out_->set_feeder_next(&q_[c].front());
    if (!driven_) schedule_send();
  } else if (!ev_pending_) {
    kick();
  }
}

void EgressPort::catch_up(Time now) {
  if (!lazy_) return;
  while (packets_ != 0 && busy_until_ <= now) {
    const Queued q = select();
    if (!q.p) break;
    transmit(q.p, q.bytes, busy_until_);
  }
  if (packets_ != 0) {
    out_->set_feeder_next(reinterpret_cast<const void*>(send_tag()));
    if (!driven_) schedule_send();
  }
}

void EgressPort::schedule_send() {
  if (ev_pending_) return;
  ev_pending_ = true;
  ctx_->sim->schedule(busy_until_, this, send_tag(), keys_.next());
}

void EgressPort::kick() {
  if (ev_pending_ || !eligible()) return;
  if (busy_until_ > ctx_->sim->now()) {
    schedule_send();
    return;
  }
  send_next();
}

void EgressPort::send_next() {
  const Queued q = select();
  if (!q.p) return;
  transmit(q.p, q.bytes, ctx_->sim->now());
  if (eligible()) schedule_send();
}

void EgressPort::transmit(Packet* p, uint32_t bytes, Time start) {
  busy_until_ = start + out_->serialization(bytes);
  driven_ = out_->send(p, busy_until_);
}

EgressPort::Queued EgressPort::pop(int c) {
  const Queued q = q_[c].pop_front();
  --packets_;
  bytes_[c] -= q.bytes;
  ctx_->queued_bytes -= q.bytes;
  if (c == kData && prm_.ecn_at_dequeue) maybe_mark(q.p);  // against the queue it leaves behind
  if (c == kData && xoff_ && bytes_[kData] <= prm_.pfc_xon_bytes) pfc_resume_all();
  return q;
}

EgressPort::Queued EgressPort::select() {
  if (!q_[kControl].empty()) return pop(kControl);
  const bool t = !q_[kTrimmed].empty();
  const bool d = !q_[kData].empty() && paused_ == 0;
  if (!t && !d) return Queued{};
  // One class backlogged: serve it; the idle one keeps no credit (DRR).
  if (!d) {
    deficit_[1] = 0;
    return pop(kTrimmed);
  }
  if (!t) {
    deficit_[0] = 0;
    return pop(kData);
  }
  // Both backlogged: deficit round robin, quantum proportional to the weight.
  for (;;) {
    const int cls = turn_ == 0 ? kTrimmed : kData;
    const int64_t size = q_[cls].front().bytes;
    if (deficit_[turn_] >= size) {
      deficit_[turn_] -= size;
      return pop(cls);
    }
    turn_ ^= 1;
    deficit_[turn_] += quantum_[turn_];
  }
}

void EgressPort::pfc_on_enqueue(uint32_t in_port) {
  if (!xoff_) {
    if (bytes_[kData] <= prm_.pfc_xoff_bytes) return;
    xoff_ = true;
  }
  // Above XOFF: PAUSE every sender that adds data, once.
  const size_t w = in_port >> 6;
  if (w >= paused_in_.size()) return;
  const uint64_t bit = uint64_t{1} << (in_port & 63);
  if (paused_in_[w] & bit) return;
  paused_in_[w] |= bit;
  ++ctx_->stats.pfc_pauses;
  if (pfc_peer_) pfc_peer_->pfc_signal(in_port, true);
}

void EgressPort::pfc_resume_all() {
  xoff_ = false;
  for (size_t w = 0; w < paused_in_.size(); ++w) {
    uint64_t bits = paused_in_[w];
    paused_in_[w] = 0;
    while (bits) {
      const uint32_t in = static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
      bits &= bits - 1;
      if (pfc_peer_) pfc_peer_->pfc_signal(in, false);
    }
  }
}

uint64_t EgressPort::flush() {
  uint64_t n = 0;
  for (auto& q : q_) {
    while (!q.empty()) {
      Packet* p = q.pop_front().p;
      ctx_->stats.count_drop(static_cast<uint8_t>(p->cls));
      ctx_->sim->free_packet(p);
      ++n;
    }
  }
  ctx_->queued_bytes -= queued_bytes();
  bytes_[0] = bytes_[1] = bytes_[2] = 0;
  packets_ = 0;
  deficit_[0] = deficit_[1] = 0;
  ctx_->stats.drops_link_down += n;
  if (xoff_) pfc_resume_all();
  // The packet on the wire, if any, is lost with the link: nothing more
  // arrives from this port to drive it.
  driven_ = false;
  return n;
}

uint64_t EgressPort::send_tag() const {
  // The queue entry the next transmission most likely pops (entries are
  // 16-byte aligned, so the tag never reads as kTagPause or kTagResume).
  const Ring<Queued>* q = !q_[kControl].empty() ? &q_[kControl] : !q_[kData].empty() ? &q_[kData] : &q_[kTrimmed];
  if (q->empty()) return kTagSend;
  static_assert(alignof(Queued) >= 4);
  return reinterpret_cast<uintptr_t>(&q->front());
}

void EgressPort::on_event(Simulator&, uint64_t tag) {
  switch (tag) {
    case kTagPause:
      ++paused_;
      break;
    case kTagResume:
      if (paused_ > 0) --paused_;
      if (paused_ == 0) kick();
      break;
    default:  // kTagSend, or a send with a prefetch hint
      ev_pending_ = false;
      if (lazy_)
        catch_up(ctx_->sim->now());
      else
        kick();
      break;
  }
}

void EgressPort::prefetch(uint64_t tag) const {
  if (tag == kTagPause || tag == kTagResume) return;
  __builtin_prefetch(out_);
  __builtin_prefetch(reinterpret_cast<const char*>(out_) + 64);
}

void EgressPort::receive(Simulator&, Packet*, int) {
  // Ports are fed through enqueue(); nothing calls a port as a Node.
  std::fprintf(stderr, "mrc-sim: internal error: EgressPort::receive called\n");
  std::abort();
}

}  // namespace mrc::sim
