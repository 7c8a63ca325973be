// SPDX-License-Identifier: BSD-2-Clause
#include "core/endpoint.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdio>
#include <cstdlib>

#include "core/qp.hpp"
#include "wire/psn.hpp"

namespace mrc::core {

Result<std::unique_ptr<Endpoint>> Endpoint::create(const EndpointConfig& cfg, std::string* why) {
  if (Status s = cfg.validate(why); !s) return s.error();
  return std::unique_ptr<Endpoint>(new Endpoint(cfg));
}

// ----------------------------------------------------------------- draws

uint32_t EndpointDraw::psn(const EntropySource& entropy, Prng& seeded) {
  // Without an injected source the seeded stream keeps runs reproducible.
  const uint64_t r = entropy ? entropy() : seeded.next_u32();
  return static_cast<uint32_t>(r) & wire::kPsnMask;
}

uint32_t EndpointDraw::qpn(uint32_t shard_bits, uint32_t shard, const EntropySource& secret,
                          const QpnTable& taken) {
  // 24 bits, the low shard_bits the shard's, every other bit random (from
  // the entropy source: unguessable on a device), so a spoofer must guess
  // 24 - shard_bits bits. 0..0xFF are reserved; a value in use is drawn
  // again (config.cc keeps the table at most half the space).
  const uint32_t shard_mask = (1u << shard_bits) - 1;
  uint32_t qpn;
  do qpn = (static_cast<uint32_t>(secret()) & wire::kPsnMask & ~shard_mask) | shard;
  while (qpn < Endpoint::kFirstQpn || taken.find(qpn) != QpnTable::kNone);
  return qpn;
}

EndpointIds::EndpointIds(const EndpointConfig& cfg)
    : shard_bits_(cfg.qpn_shard_bits),
      shard_(cfg.qpn_shard),
      rng_(EndpointDraw::seeded(cfg.seed)),
      secrets_(EndpointDraw::secrets(rng_)),
      mrs_(EntropySource([this] { return secrets_.next_u64(); })) {
  if (cfg.entropy) {
    std::fprintf(stderr, "mrc: internal error: EndpointIds cannot replay an EndpointConfig::entropy source\n");
    std::abort();
  }
}

uint32_t EndpointIds::create_qp() {
  const uint32_t qpn = EndpointDraw::qpn(shard_bits_, shard_, [this] { return secrets_.next_u64(); }, qpns_);
  qpns_.insert(qpn, static_cast<uint32_t>(qpns_.size()));
  return qpn;
}

// ----------------------------------------------------------------- endpoint

Endpoint::Endpoint(const EndpointConfig& cfg)
    : cfg_(cfg),
      rng_(EndpointDraw::seeded(cfg.seed)),
      secret_rng_(EndpointDraw::secrets(rng_)),
      mrs_(EntropySource([this] { return secret(); })) {
  reply_tokens_ = cfg.protocol.ep_reply_burst;
  ev_profiles_.emplace(0, EvProfile{});
  cc_profiles_.emplace(0, CcProfile{});
  const uint32_t n = num_ports();
  local_up_ = n >= 32 ? ~0u : ((1u << n) - 1);
  IncastGuardConfig ig = cfg.protocol.incast_guard;
  if (ig.interval == Duration{}) ig.interval = cfg.protocol.base_rtt;
  incast_.configure(ig);
}


Endpoint::~Endpoint() = default;

// ----------------------------------------------------------------- profiles

Status Endpoint::set_ev_profile(uint64_t id, const EvProfile& p, std::string* why) {
  if (Status s = p.validate(num_ports(), why); !s) return s;
  for (const auto& q : qps_)
    if (q && q->state() != QpState::reset && q->attr().ev_profile_id == id) {
      if (why) *why = "EV profile is in use by a QP that is not in RESET";
      return Errc::busy;
    }
  ev_profiles_[id] = p;
  return {};
}

Status Endpoint::set_cc_profile(uint64_t id, const CcProfile& p, std::string* why) {
  if (Status s = p.validate(why); !s) return s;
  for (const auto& q : qps_)
    if (q && q->state() != QpState::reset && q->attr().cc_profile_id == id) {
      if (why) *why = "CC profile is in use by a QP that is not in RESET";
      return Errc::busy;
    }
  cc_profiles_[id] = p;
  return {};
}

// ----------------------------------------------------------------- memory

uint64_t Endpoint::secret() { return EndpointDraw::secret(cfg_.entropy, secret_rng_); }

Result<uint32_t> Endpoint::alloc_pd() {
  if (pds_.size() >= kMaxPds) return Errc::no_memory;
  while (next_pd_ == kDefaultPd || std::find(pds_.begin(), pds_.end(), next_pd_) != pds_.end()) ++next_pd_;
  pds_.push_back(next_pd_);
  return next_pd_++;
}

bool Endpoint::pd_in_use(uint32_t pd) const {
  if (mrs_.count_in_pd(pd) > 0) return true;
  for (const auto& q : qps_)
    if (q && q->pd() == pd) return true;
  return false;
}

Status Endpoint::dealloc_pd(uint32_t pd) {
  if (pd == kDefaultPd) return Errc::invalid_argument;
  auto it = std::find(pds_.begin(), pds_.end(), pd);
  if (it == pds_.end()) return Errc::not_found;
  if (pd_in_use(pd)) return Errc::busy;
  pds_.erase(it);
  return {};
}

Result<MemoryRegion> Endpoint::reg_mr(uint64_t addr, uint64_t length, uint32_t acc, bool backed, uint32_t pd) {
  if (pd != kDefaultPd && std::find(pds_.begin(), pds_.end(), pd) == pds_.end()) return Errc::not_found;
  return mrs_.reg(addr, length, acc, backed, pd);
}

Result<MemoryRegion> Endpoint::reg_mr_as(const MemoryRegion& like) {
  if (like.pd != kDefaultPd && std::find(pds_.begin(), pds_.end(), like.pd) == pds_.end()) return Errc::not_found;
  return mrs_.reg_with_keys(like);
}

Status Endpoint::dereg_mr(uint32_t lkey) { return mrs_.dereg(lkey); }

// ----------------------------------------------------------------- CQs

Result<uint32_t> Endpoint::create_cq(uint32_t capacity) {
  if (capacity == 0 || capacity > kMaxCqe) return Errc::invalid_argument;
  uint32_t id;
  if (!free_cqs_.empty()) {
    id = free_cqs_.back();
    free_cqs_.pop_back();
  } else {
    if (cqs_.size() >= kMaxCqs) return Errc::no_memory;
    id = static_cast<uint32_t>(cqs_.size());
    cqs_.emplace_back();
  }
  cqs_[id] = std::make_unique<Cq>();
  cqs_[id]->capacity = capacity;
  return id;
}

Endpoint::Cq* Endpoint::find_cq(uint32_t cq) { return cq < cqs_.size() ? cqs_[cq].get() : nullptr; }

Status Endpoint::destroy_cq(uint32_t cq) {
  Cq* c = find_cq(cq);
  if (!c) return Errc::not_found;
  if (c->users > 0) return Errc::busy;
  cqs_[cq].reset();
  free_cqs_.push_back(cq);
  return {};
}

size_t Endpoint::poll_cq(uint32_t cq, std::span<WorkCompletion> out) {
  Cq* c = find_cq(cq);
  if (!c) return 0;
  size_t n = 0;
  while (n < out.size() && !c->ring.empty()) {
    out[n++] = c->ring.front();
    c->ring.pop_front();
  }
  return n;
}

std::optional<Endpoint::CqInfo> Endpoint::cq_info(uint32_t cq) const {
  const Cq* c = const_cast<Endpoint*>(this)->find_cq(cq);
  if (!c) return std::nullopt;
  return CqInfo{c->capacity, static_cast<uint32_t>(c->ring.size()), c->overflows, c->users};
}

// A full CQ loses the completion (ibverbs: CQ overrun); the owner hears of
// it once, through IBV_EVENT_CQ_ERR, since the queue no longer accounts
// for every WR.
void Endpoint::push_completion(const WorkCompletion& wc) {
  Cq* c = find_cq(wc.cq);
  assert(c && "a QP's CQs outlive it (destroy_cq refuses while used)");
  if (c->ring.size() >= c->capacity) {
    if (c->overflows++ == 0) push_event(CqErrorEvent{wc.cq});
    return;
  }
  c->ring.push_back(wc);
}

// ----------------------------------------------------------------- QPs

Result<uint32_t> Endpoint::create_qp(const QpInit& init) {
  if (init.pd != kDefaultPd && std::find(pds_.begin(), pds_.end(), init.pd) == pds_.end())
    return Errc::not_found;
  Cq* scq = find_cq(init.send_cq);
  Cq* rcq = find_cq(init.recv_cq);
  if (!scq || !rcq) return Errc::not_found;
  uint32_t idx;
  if (!free_qp_slots_.empty()) {
    idx = free_qp_slots_.back();
    free_qp_slots_.pop_back();
  } else {
    if (qps_.size() >= cfg_.max_qps) return Errc::no_memory;
    idx = static_cast<uint32_t>(qps_.size());
    qps_.emplace_back();
  }
  // The slot is found through qpn_slots_, never from the number.
  const uint32_t qpn = EndpointDraw::qpn(cfg_.qpn_shard_bits, cfg_.qpn_shard, [this] { return secret(); }, qpn_slots_);
  qpn_slots_.insert(qpn, idx);
  // The QP's PRNG stream is keyed by its slot, not its (random) number, so a
  // seeded run chooses the same paths whatever the entropy source returns.
  qps_[idx] = std::make_unique<Qp>(*this, qpn, init, kFirstQpn + idx);
  ++scq->users;
  ++rcq->users;
  return qpn;
}

Qp* Endpoint::find_qp(uint32_t qpn) {
  // Consecutive packets are mostly for one QP: the last answer first.
  if (qpn == last_qpn_ && last_qp_) return last_qp_;
  const uint32_t idx = qpn_slots_.find(qpn);
  if (idx == QpnTable::kNone) return nullptr;
  last_qpn_ = qpn;
  last_qp_ = qps_[idx].get();
  return last_qp_;
}

std::vector<uint32_t> Endpoint::qp_numbers() const {
  std::vector<uint32_t> out;
  for (const auto& q : qps_)
    if (q) out.push_back(q->qpn());
  return out;
}

const Qp* Endpoint::qp(uint32_t qpn) const { return const_cast<Endpoint*>(this)->find_qp(qpn); }

std::optional<QpInfo> Endpoint::query_qp(uint32_t qpn) const {
  const Qp* q = qp(qpn);
  if (!q) return std::nullopt;
  return q->info();
}

bool Endpoint::query_qp_counters(uint32_t qpn, QpStats* stats, PathStats* path) const {
  const Qp* q = qp(qpn);
  if (!q) return false;
  if (stats) *stats = q->stats();
  if (path) *path = q->path() ? q->path()->stats() : PathStats{};
  return true;
}

size_t Endpoint::query_evs(uint32_t qpn, std::span<EvInfo> out) const {
  const Qp* q = qp(qpn);
  if (!q || !q->path()) return 0;
  const path::PathPolicy& p = *q->path();
  for (size_t i = 0; i < p.size() && i < out.size(); ++i) {
    const path::EvSlot& e = p.slot(static_cast<int>(i));
    out[i] = EvInfo{e.value, e.port, e.state, e.active, e.packets_sent};
  }
  return p.size();
}

Status Endpoint::destroy_qp(uint32_t qpn) {
  Qp* q = find_qp(qpn);
  if (!q) return Errc::not_found;
  q->flush_for_destroy();
  ctrl_list_.erase(q);
  data_list_.erase(q);
  heap_remove(*q);
  const uint64_t peer = q->peer();
  const uint32_t idx = qpn_slots_.find(qpn);
  qpn_slots_.erase(qpn);
  last_qp_ = nullptr;
  --find_cq(q->send_cq())->users;
  --find_cq(q->recv_cq())->users;
  qps_[idx].reset();
  free_qp_slots_.push_back(idx);
  forget_peer_if_unused(peer);
  return {};
}

Status Endpoint::modify_qp(Time now, uint32_t qpn, const QpAttr& attr, uint32_t mask) {
  Qp* q = find_qp(qpn);
  if (!q) return Errc::not_found;
  const uint64_t peer = q->peer();
  Status s = q->modify(now, attr, mask);
  refresh(*q);
  if (q->state() == QpState::reset || q->state() == QpState::error) forget_peer_if_unused(peer);
  return s;
}

uint32_t Endpoint::random_psn() { return EndpointDraw::psn(cfg_.entropy, rng_); }

Status Endpoint::post_send(Time now, uint32_t qpn, const SendWr& wr) {
  Qp* q = find_qp(qpn);
  if (!q) return Errc::not_found;
  Status s = q->post_send(now, wr);
  refresh(*q);
  return s;
}

Status Endpoint::post_recv(uint32_t qpn, const RecvWr& wr) {
  Qp* q = find_qp(qpn);
  if (!q) return Errc::not_found;
  return q->post_recv(wr);
}

Status Endpoint::set_ev_denied(Time now, uint32_t qpn, uint32_t value, bool denied) {
  Qp* q = find_qp(qpn);
  if (!q) return Errc::not_found;
  Status s = q->set_ev_denied(now, value, denied);
  refresh(*q);
  return s;
}

Status Endpoint::set_mpr_dest(uint32_t qpn, uint8_t mpr) {
  Qp* q = find_qp(qpn);
  if (!q) return Errc::not_found;
  return q->set_mpr_dest(mpr);
}

// ----------------------------------------------------------------- scheduling

void Endpoint::refresh(Qp& q) {
  q.flush_ev_events();
  if (q.has_control() && !q.in_ctrl_list_) {
    q.in_ctrl_list_ = true;
    ctrl_list_.push_back(&q);
  }
  if (q.wants_data() && !q.in_data_list_) {
    q.in_data_list_ = true;
    data_list_.push_back(&q);
  }
  heap_update(q);
}

// An indexed binary min-heap of QPs by earliest timer: next_timeout() is
// O(1) and a QP's timer change is O(log n).
void Endpoint::heap_update(Qp& q) {
  const Time t = q.next_timeout();
  if (q.heap_index_ == SIZE_MAX) {
    if (t.is_never()) return;
    q.heap_deadline_ = t;
    q.heap_index_ = heap_.size();
    heap_.push_back(&q);
    heap_sift_up(q.heap_index_);
    return;
  }
  if (t.is_never()) {
    heap_remove(q);
    return;
  }
  const Time old = q.heap_deadline_;
  q.heap_deadline_ = t;
  if (t < old) heap_sift_up(q.heap_index_);
  else if (t > old) heap_sift_down(q.heap_index_);
}

void Endpoint::heap_remove(Qp& q) {
  const size_t i = q.heap_index_;
  if (i == SIZE_MAX) return;
  q.heap_index_ = SIZE_MAX;
  Qp* last = heap_.back();
  heap_.pop_back();
  if (last == &q) return;
  heap_[i] = last;
  last->heap_index_ = i;
  heap_sift_up(i);
  heap_sift_down(last->heap_index_);
}

void Endpoint::heap_sift_up(size_t i) {
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (heap_[parent]->heap_deadline_ <= heap_[i]->heap_deadline_) break;
    std::swap(heap_[parent], heap_[i]);
    heap_[parent]->heap_index_ = parent;
    heap_[i]->heap_index_ = i;
    i = parent;
  }
}

void Endpoint::heap_sift_down(size_t i) {
  const size_t n = heap_.size();
  for (;;) {
    size_t m = i;
    const size_t l = 2 * i + 1, r = l + 1;
    if (l < n && heap_[l]->heap_deadline_ < heap_[m]->heap_deadline_) m = l;
    if (r < n && heap_[r]->heap_deadline_ < heap_[m]->heap_deadline_) m = r;
    if (m == i) return;
    std::swap(heap_[m], heap_[i]);
    heap_[m]->heap_index_ = m;
    heap_[i]->heap_index_ = i;
    i = m;
  }
}

Time Endpoint::next_timeout() const {
  Time t = heap_.empty() ? Time::never() : heap_.front()->heap_deadline_;
  t = min(t, advert_next_);
  t = min(t, recheck_next_);
  for (const PendingProbe& p : probes_) t = min(t, p.deadline);
  return t;
}

void Endpoint::handle_timeout(Time now) {
  // Collect first: a QP's handler may re-arm a timer at `now` (it will run on
  // the next call), so each QP runs once per call.
  std::vector<Qp*> due;
  while (!heap_.empty() && heap_.front()->heap_deadline_ <= now) {
    Qp* q = heap_.front();
    heap_remove(*q);
    due.push_back(q);
  }
  for (Qp* q : due) {
    q->on_timeout(now);
    refresh(*q);
  }
  if (advert_next_ <= now) run_adverts(now);
  if (recheck_next_ <= now) run_rechecks(now);
  for (auto it = probes_.begin(); it != probes_.end();) {
    if (it->deadline <= now) {
      push_event(ProbeResult{it->req_id, false, 0, Duration{}, it->port_status});
      it = probes_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<Event> Endpoint::poll_event() {
  if (events_.empty()) return std::nullopt;
  Event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

// ----------------------------------------------------------------- I/O

void Endpoint::handle_datagram(Time now, const RxMeta& meta, std::span<const uint8_t> bytes) {
  ++stats_.rx_packets;
  wire::Parsed& p = rx_parsed_;
  if (!wire::parse_into(bytes, p)) {
    ++stats_.rx_malformed;
    return;
  }
  if (meta.port >= num_ports()) {
    ++stats_.rx_malformed;
    return;
  }
  if (p.h.bth.dest_qp == kEndpointOpsQpn) {
    if (p.h.bth.sec) ++stats_.rx_malformed;  // endpoint operations are never sealed
    else if (p.h.opcode() == wire::Opcode::endpoint_request) on_endpoint_request(now, meta, p);
    else if (p.h.opcode() == wire::Opcode::endpoint_response) on_endpoint_response(now, meta, p);
    else ++stats_.rx_malformed;
    return;
  }
  Qp* q = find_qp(p.h.bth.dest_qp);
  if (!q) {
    ++stats_.rx_unknown_qp;
    return;
  }
  if (q->state() == QpState::reset || q->state() == QpState::init) {
    ++stats_.rx_bad_state;
    return;
  }
  if (q->peer() != meta.peer) {
    ++stats_.rx_wrong_peer;
    return;
  }
  const uint8_t* payload = bytes.data() + p.header_len;
  if (q->secure() != nullptr || p.h.bth.sec) {
    // Secure QPs: tag, key id and replay window before anything else.
    payload = open_secure(*q, meta, p, bytes);
    if (payload == nullptr) return;
  }
  q->on_packet(now, meta, p, payload);
  refresh(*q);
}

Result<Transmit> Endpoint::poll_transmit(Time now, uint32_t port_mask, std::span<uint8_t> hdr,
                                         std::span<uint8_t> payload_buf) {
  if (hdr.size() < wire::kMaxPlainHeaderBytes) return Errc::invalid_argument;
  Transmit tx;
  Qp* from = nullptr;
  if (!next_transmit(now, port_mask, hdr, tx, from)) return Errc::done;
  if (from != nullptr && from->secure() != nullptr) [[unlikely]]
    if (!sealed_transmit(now, port_mask, hdr, payload_buf, from, tx)) return Errc::done;
  return tx;
}

// Out of poll_transmit's line: plain QPs pay one test for secure ones.
bool Endpoint::sealed_transmit(Time now, uint32_t port_mask, std::span<uint8_t> hdr, std::span<uint8_t> payload_buf,
                               Qp* from, Transmit& tx) {
  for (;;) {
    if (seal_transmit(*from, hdr, tx, payload_buf)) return true;
    --stats_.tx_packets;  // not sent after all; the next one may be
    from = nullptr;
    tx = Transmit{};
    if (!next_transmit(now, port_mask, hdr, tx, from)) return false;
    if (from == nullptr || from->secure() == nullptr) return true;
  }
}

// Inlined into poll_transmit (where it was before secure QPs split it off).
// Fills `tx`, fresh (false: nothing to send), and names the QP it came from.
[[gnu::always_inline]] inline bool Endpoint::next_transmit(Time now, uint32_t port_mask, std::span<uint8_t> hdr,
                                                           Transmit& tx, Qp*& from) {
  port_mask &= local_up_;
  if (port_mask == 0) return false;
  // Control first (reference 3.9: the control class outranks data).
  if (build_ep_ctrl(now, port_mask, hdr.data(), tx)) {
    ++stats_.tx_packets;
    return true;
  }
  for (size_t n = ctrl_list_.size(); n > 0; --n) {
    Qp* q = ctrl_list_.front();
    ctrl_list_.pop_front();
    if (!q->has_control()) {
      q->in_ctrl_list_ = false;
      continue;
    }
    const bool sent = q->poll_control(now, port_mask, hdr.data(), tx);
    q->flush_ev_events();
    if (q->has_control()) ctrl_list_.push_back(q);
    else q->in_ctrl_list_ = false;
    if (sent) {
      ++stats_.tx_packets;
      from = q;
      return true;
    }
  }
  // Data: the QPs with something to send take turns. A QP that cannot use
  // the offered ports keeps its place: a NIC's port arbiters serve the QPs
  // that can use their port, and a QP pinned to one plane (RoCE) must not
  // lose its turn each time another port frees.
  Qp* ahead[kArbiterScan];
  size_t n_ahead = 0;
  auto put_back = [&] {
    while (n_ahead > 0) data_list_.push_front(ahead[--n_ahead]);
  };
  // Balancing matters where QPs compete for the ports; a QP alone spreads
  // its own packets (and counts nothing, which keeps this path lean).
  const bool balance = cfg_.balance_peer_ports && cfg_.protocol.ev_burst <= 1 && data_list_.size() > 1;
  if (balance && std::popcount(port_mask) == 1) {
    // One port free: the first QP in turn (within kArbiterScan) for which it
    // is one of its peer's least used goes first, else turns as usual.
    const size_t scan = std::min(data_list_.size(), kArbiterScan);
    for (size_t i = 0; i < scan; ++i) {
      Qp* q = data_list_[i];
      if (!q->wants_data() || least_used_ports(*q, port_mask) == 0) continue;
      for (size_t k = 0; k < i; ++k) {
        ahead[n_ahead++] = data_list_.front();
        data_list_.pop_front();
      }
      data_list_.pop_front();
      // Taken out of its place, the QPs before it keep theirs. (No burst
      // goes on here: balance needs ev_burst <= 1.)
      const DataTurn t = data_turn(now, q, port_mask, hdr.data(), tx, true);
      if (t == DataTurn::ports_busy) data_list_.push_front(q);
      put_back();
      if (t == DataTurn::sent) {
        from = q;
        return true;
      }
      break;
    }
  }
  for (size_t n = data_list_.size(); n > 0; --n) {
    Qp* q = data_list_.front();
    data_list_.pop_front();
    const DataTurn t = data_turn(now, q, port_mask, hdr.data(), tx, balance);
    if (t == DataTurn::sent) {
      // The QPs that could not use these ports go back in front of the
      // rest, but behind a QP whose burst goes on (data_turn put it first).
      const bool first = tx.burst_more && q->wants_data();
      if (first) data_list_.pop_front();
      put_back();
      if (first) data_list_.push_front(q);
      from = q;
      return true;
    }
    if (t == DataTurn::ports_busy) {
      if (n_ahead < kArbiterScan) ahead[n_ahead++] = q;
      else data_list_.push_back(q);
    }
  }
  put_back();
  return false;
}

void Endpoint::on_transmit_refused(Time now, const Transmit& tx, std::span<const uint8_t> hdr) {
  if (tx.qpn == 0 || tx.tc == TrafficClass::control) return;
  Qp* q = find_qp(tx.qpn);
  if (!q) return;
  // An MRC data header (a secure QP's with a SECETH): the PSN and the
  // TSETH stamp the record keeps.
  hdr = hdr.first(std::min<size_t>(hdr.size(), tx.header_len));
  wire::Parsed p;
  if (!wire::parse_into(hdr, p) || !p.h.info().data || !p.h.bth.ts) return;
  q->on_send_refused(now, p.h.bth.psn, p.h.tseth.timestamp);
  refresh(*q);
}

// Inlined into poll_transmit's two loops (as a call, BM_CorePair measured
// about 10 ns per packet slower).
[[gnu::always_inline]] inline Endpoint::DataTurn Endpoint::data_turn(Time now, Qp* q, uint32_t port_mask,
                                                                     uint8_t* hdr, Transmit& tx, bool balance) {
  if (!q->wants_data()) {
    q->in_data_list_ = false;
    return DataTurn::left;
  }
  const Qp::SendResult r = q->poll_data(now, port_mask, hdr, tx);
  q->flush_ev_events();
  if (r == Qp::SendResult::sent) {
    tx.qpn = q->qpn();
    if (balance) {
      std::array<uint32_t, 32>& sent = peer_port_sent(*q);
      if (++sent[tx.port] >= (1u << 30)) {
        const uint32_t low = *std::min_element(sent.begin(), sent.end());
        for (uint32_t& v : sent) v -= std::min(v, low);
      }
    }
    // A QP whose EV burst goes on keeps its turn, so the burst leaves as
    // one run (a driver makes it one GSO super-packet) without the driver
    // regrouping packets, which would reorder the QP's own sends.
    if (!q->wants_data()) q->in_data_list_ = false;
    else if (tx.burst_more) data_list_.push_front(q);
    else data_list_.push_back(q);
    heap_update(*q);
    ++stats_.tx_packets;
    return DataTurn::sent;
  }
  if (r == Qp::SendResult::ports_busy) return DataTurn::ports_busy;
  q->in_data_list_ = false;
  heap_update(*q);
  return DataTurn::left;
}

std::array<uint32_t, 32>& Endpoint::peer_port_sent(Qp& q) {
  // Map nodes never move or go, so the QP keeps a pointer to its peer's.
  if (q.peer_port_sent_ == nullptr || q.peer_port_sent_of_ != q.peer()) {
    q.peer_port_sent_ = &peer_port_sent_[q.peer()];
    q.peer_port_sent_of_ = q.peer();
  }
  return *q.peer_port_sent_;
}

uint32_t Endpoint::least_used_ports(Qp& q, uint32_t port_mask) {
  const uint32_t usable = q.sendable_ports();
  if (std::popcount(usable) < 2 || (usable & port_mask) == 0) return usable & port_mask;
  const std::array<uint32_t, 32>& sent = peer_port_sent(q);
  uint32_t fewest = UINT32_MAX, least = 0;
  for (uint32_t u = usable; u != 0; u &= u - 1) {
    const int p = std::countr_zero(u);
    if (sent[p] < fewest) {
      fewest = sent[p];
      least = 0;
    }
    if (sent[p] == fewest) least |= 1u << p;
  }
  return least & port_mask;
}

// ----------------------------------------------------------------- ports and endpoint operations

uint32_t Endpoint::peer_port_mask(uint64_t peer) const {
  auto it = peer_up_.find(peer);
  return it == peer_up_.end() ? ~0u : it->second;
}

void Endpoint::set_port_up(Time now, uint8_t port, bool up) {
  if (port >= num_ports()) return;
  const uint32_t before = local_up_;
  if (up) local_up_ |= 1u << port;
  else local_up_ &= ~(1u << port);
  if (local_up_ == before) return;
  for (auto& q : qps_) {
    if (!q || (q->state() != QpState::rtr && q->state() != QpState::rts)) continue;
    q->on_port_mask(now, local_up_ & peer_port_mask(q->peer()));
    refresh(*q);
  }
  push_event(PortEvent{0, local_up_, true});
  // Every connected peer is owed the new mask, replacing any update not yet
  // answered (an older mask must not be re-sent after this one).
  for (const auto& q : qps_)
    if (q && (q->state() == QpState::rtr || q->state() == QpState::rts)) {
      PortAdvert& a = adverts_[q->peer()];
      a = PortAdvert{};
      a.mask = local_up_;
      a.next = now;
    }
  run_adverts(now);
  // A port back up here may be one a peer reports down: re-check it soon.
  if (up) run_rechecks(now);
}

uint16_t Endpoint::ep_timestamp(Time now) const {
  return static_cast<uint16_t>(now.ps() / cfg_.protocol.timestamp_tick.count_ps());
}

void Endpoint::run_adverts(Time now) {
  const ProtocolConfig& pc = cfg_.protocol;
  advert_next_ = Time::never();
  const bool resend = pc.port_status_max_interval > Duration{};
  for (auto it = adverts_.begin(); it != adverts_.end();) {
    PortAdvert& a = it->second;
    // (Without re-sends an advert leaves right after its last send, below.)
    if (!peer_connected(it->first)) {
      it = adverts_.erase(it);
      continue;
    }
    if (a.next <= now) {
      EpCtrl c{};
      c.op = wire::EpWireOp::port_status_update;
      c.response = false;
      c.peer = it->first;
      // Round robin over the ports that are up (build_ep_ctrl takes another
      // if that one is busy): a send lost on one plane is followed by one
      // on the next.
      const int ups = std::popcount(local_up_);
      uint32_t m = local_up_;
      for (int k = ups > 0 ? static_cast<int>(a.sends % static_cast<uint32_t>(ups)) : 0; k > 0; --k) m &= m - 1;
      c.port = static_cast<uint8_t>(m != 0 ? std::countr_zero(m) : 0);
      c.entropy = rng_.next_u32() & 0xFFFF;
      c.ts = ep_timestamp(now);
      if (a.sends == 0) {
        a.first_req = ep_req_id_;
        a.first_ts = c.ts;
      }
      c.req_id = static_cast<uint16_t>(a.first_req + a.sends % 64);
      c.mask = a.mask;
      ep_ctrl_.push_back(c);
      ++stats_.port_status_sent;
      ++a.sends;
      if (a.sends == 1) ep_req_id_ = static_cast<uint16_t>(ep_req_id_ + 64);  // ids for the re-sends
      Duration gap = pc.port_status_interval;
      if (a.sends >= pc.port_status_repeats) {
        if (!resend) {
          it = adverts_.erase(it);
          continue;
        }
        for (uint32_t k = pc.port_status_repeats; k <= a.sends && gap < pc.port_status_max_interval; ++k) gap = gap * 2;
        gap = std::min(gap, pc.port_status_max_interval);
      }
      a.next = now + gap;
    }
    advert_next_ = min(advert_next_, a.next);
    ++it;
  }
}

// The answer to one of the sends of the update owed to `meta.peer`: its
// request id is one of theirs and it echoes a timestamp no older than the
// first. An answer means the peer holds the mask (or a newer one).
bool Endpoint::take_advert_answer(const RxMeta& meta, const wire::Parsed& p) {
  auto it = adverts_.find(meta.peer);
  if (it == adverts_.end()) return false;
  const PortAdvert& a = it->second;
  const uint16_t id = static_cast<uint16_t>(p.h.bth.psn);
  if (static_cast<uint16_t>(id - a.first_req) >= std::min<uint32_t>(a.sends, 64)) return false;
  if (static_cast<uint16_t>(p.h.eeth.reflected_ts - a.first_ts) > 0x7FFF) return false;
  adverts_.erase(it);
  ++stats_.port_status_answered;
  return true;
}

void Endpoint::run_rechecks(Time now) {
  const Duration iv = cfg_.protocol.peer_port_recheck;
  recheck_next_ = Time::never();
  if (iv <= Duration{}) return;
  std::erase_if(rechecks_, [&](const PortRecheck& r) { return r.deadline <= now; });
  bool pending = false;
  for (const auto& entry : peer_up_) {
    // Named copies, not structured bindings: clang (the fuzz preset)
    // refuses to capture a structured binding in the lambda below.
    const uint64_t peer = entry.first;
    uint32_t missing = local_up_ & ~entry.second;
    if (missing == 0) continue;
    pending = true;
    for (; missing != 0; missing &= missing - 1) {
      const auto port = static_cast<uint8_t>(std::countr_zero(missing));
      if (std::any_of(rechecks_.begin(), rechecks_.end(),
                      [&](const PortRecheck& r) { return r.peer == peer && r.port == port; }))
        continue;
      EpCtrl c{};
      c.op = wire::EpWireOp::ev_probe;
      c.response = false;
      c.peer = peer;
      c.port = port;
      c.entropy = rng_.next_u32() & 0xFFFF;
      c.req_id = ep_req_id_++;
      c.ts = ep_timestamp(now);
      ep_ctrl_.push_back(c);
      rechecks_.push_back(PortRecheck{peer, port, c.req_id, c.ts, now + iv});
      ++stats_.peer_port_rechecks;
    }
  }
  if (pending) recheck_next_ = now + iv;
}

// The answer to a re-check probe: the peer received on that port and
// answered, so the plane carries traffic to it whatever it last reported.
bool Endpoint::take_recheck_answer(Time now, const RxMeta& meta, const wire::Parsed& p) {
  const uint16_t id = static_cast<uint16_t>(p.h.bth.psn);
  for (auto it = rechecks_.begin(); it != rechecks_.end(); ++it) {
    if (it->peer != meta.peer || it->req_id != id || it->ts != p.h.eeth.reflected_ts) continue;
    const uint8_t port = it->port;
    rechecks_.erase(it);
    if (apply_peer_port_status(now, meta.peer, peer_port_mask(meta.peer) | 1u << port)) ++stats_.peer_ports_restored;
    return true;
  }
  return false;
}

Status Endpoint::send_ev_probe(Time now, uint16_t req_id, uint64_t peer, uint8_t port, uint32_t entropy,
                               Duration timeout) {
  return send_ep_request(now, wire::EpWireOp::ev_probe, req_id, peer, port, entropy, 0, timeout);
}

Status Endpoint::send_port_status(Time now, uint16_t req_id, uint64_t peer, uint8_t port, uint32_t entropy,
                                  uint32_t mask, Duration timeout) {
  return send_ep_request(now, wire::EpWireOp::port_status_update, req_id, peer, port, entropy, mask, timeout);
}

// One endpoint-operation request on QP 2, answered (or timed out) like a
// probe: request ids are shared by both operations.
Status Endpoint::send_ep_request(Time now, wire::EpWireOp op, uint16_t req_id, uint64_t peer, uint8_t port,
                                 uint32_t entropy, uint32_t mask, Duration timeout) {
  if (port >= num_ports()) return Errc::invalid_argument;
  for (const PendingProbe& p : probes_)
    if (p.req_id == req_id) return Errc::busy;
  if (probes_.size() >= kMaxOutstandingProbes) return Errc::no_memory;
  EpCtrl c{};
  c.op = op;
  c.response = false;
  c.peer = peer;
  c.port = port;
  c.entropy = entropy;
  c.req_id = req_id;
  c.ts = static_cast<uint16_t>(now.ps() / cfg_.protocol.timestamp_tick.count_ps());
  c.mask = mask;
  ep_ctrl_.push_back(c);
  const bool port_status = op == wire::EpWireOp::port_status_update;
  probes_.push_back(PendingProbe{port_status, req_id, peer, entropy, c.ts, now, now + timeout});
  return {};
}

bool Endpoint::build_ep_ctrl(Time now, uint32_t port_mask, uint8_t* hdr, Transmit& tx) {
  (void)now;
  if (ep_ctrl_.empty()) return false;
  const EpCtrl c = ep_ctrl_.front();
  // An EV probe must leave on the port it tests; other operations take any port.
  uint8_t port = c.port;
  if (!(port_mask >> port & 1u)) {
    if (c.op == wire::EpWireOp::ev_probe && !c.response) {
      if (local_up_ >> port & 1u) return false;  // it waits for its port
      // Its port went down: it can never leave (a controller's probe then
      // times out), and must not hold up the queue.
      ep_ctrl_.pop_front();
      return build_ep_ctrl(now, port_mask, hdr, tx);
    }
    port = static_cast<uint8_t>(std::countr_zero(port_mask));
  }
  ep_ctrl_.pop_front();
  if (c.response) --replies_queued_;
  wire::Headers h;
  h.bth.dest_qp = kEndpointOpsQpn;
  h.bth.psn = c.req_id;
  if (c.response) {
    h.bth.opcode = static_cast<uint8_t>(wire::Opcode::endpoint_response);
    h.eeth.op = static_cast<uint8_t>(c.op);
    h.eeth.rx_port = static_cast<uint8_t>(c.rx_port + 1);
    h.eeth.reflected_ts = c.ts;
    h.eeth.entropy = c.entropy;
  } else {
    h.bth.opcode = static_cast<uint8_t>(wire::Opcode::endpoint_request);
    h.erth.op = static_cast<uint8_t>(c.op);
    h.erth.port_status_mask = c.mask;
    h.erth.timestamp = c.ts;
  }
  const size_t hlen = wire::encode(h, std::span<uint8_t>(hdr, wire::kMaxHeaderBytes)).value();
  tx = Transmit{};
  tx.port = port;
  tx.entropy = c.entropy;
  tx.peer = c.peer;
  tx.tc = TrafficClass::control;
  tx.header_len = static_cast<uint16_t>(hlen);
  return true;
}

bool Endpoint::peer_connected(uint64_t peer) const {
  for (const auto& q : qps_)
    if (q && q->peer() == peer && (q->state() == QpState::rtr || q->state() == QpState::rts)) return true;
  return false;
}

void Endpoint::forget_peer_if_unused(uint64_t peer) {
  auto it = peer_up_.find(peer);
  if (peer_connected(peer)) return;
  if (it != peer_up_.end()) peer_up_.erase(it);
  adverts_.erase(peer);
  std::erase_if(rechecks_, [&](const PortRecheck& r) { return r.peer == peer; });
}

// Token bucket for endpoint-operation replies (ProtocolConfig::ep_reply_*).
bool Endpoint::take_reply_token(Time now) {
  const ProtocolConfig& pc = cfg_.protocol;
  if (replies_queued_ >= kMaxQueuedReplies) return false;
  if (pc.ep_reply_interval > Duration{} && now > reply_refill_) {
    reply_tokens_ = std::min<double>(pc.ep_reply_burst, reply_tokens_ + static_cast<double>((now - reply_refill_).count_ps()) /
                                                                       static_cast<double>(pc.ep_reply_interval.count_ps()));
  } else if (pc.ep_reply_interval == Duration{}) {
    reply_tokens_ = pc.ep_reply_burst;
  }
  reply_refill_ = max(reply_refill_, now);
  if (reply_tokens_ < 1.0) return false;
  reply_tokens_ -= 1.0;
  return true;
}

// Per-source byte credit for endpoint-operation replies
// (ProtocolConfig::ep_reply_source_*): a reply is sent only if the source's
// requests (and a slow refill) have paid for its bytes.
bool Endpoint::take_source_credit(Time now, uint64_t source, uint32_t request_bytes) {
  const ProtocolConfig& pc = cfg_.protocol;
  // The MRC headers either way (IP, UDP and ICRC are the same on both).
  constexpr int64_t kReply = static_cast<int64_t>(wire::Bth::kSize + wire::Eeth::kSize);
  const int64_t cap = int64_t{pc.ep_reply_source_burst} * kReply;
  const bool refills = pc.ep_reply_source_interval > Duration{};
  auto it = reply_credit_.find(source);
  if (it == reply_credit_.end()) {
    if (reply_credit_.size() >= kMaxReplySources && refills &&
        now - reply_credit_swept_ >= pc.ep_reply_source_interval * pc.ep_reply_source_burst) {
      reply_credit_swept_ = now;
      const Duration full = pc.ep_reply_source_interval * pc.ep_reply_source_burst;
      std::erase_if(reply_credit_, [&](const auto& kv) { return now - kv.second.at >= full; });
    }
    if (reply_credit_.size() >= kMaxReplySources) return false;
    it = reply_credit_.emplace(source, ReplyCredit{cap, now}).first;
  }
  ReplyCredit& c = it->second;
  int64_t add = request_bytes;
  if (refills && now > c.at) {
    const int64_t ps = (now - c.at).count_ps();
    const int64_t per = pc.ep_reply_source_interval.count_ps();
    // Whole replies' worth only, keeping the remainder of the interval.
    const int64_t n = std::min<int64_t>(ps / per, pc.ep_reply_source_burst);
    add += n * kReply;
    c.at = n == pc.ep_reply_source_burst ? now : c.at + pc.ep_reply_source_interval * n;
  }
  c.bytes = std::min(cap, c.bytes + add);
  if (c.bytes < kReply) return false;
  c.bytes -= kReply;
  return true;
}

bool Endpoint::apply_peer_port_status(Time now, uint64_t peer, uint32_t mask) {
  // An unauthenticated packet must not be able to stop a connection, and
  // the table must stay bounded: only a peer with a connected QP here gets
  // an entry (at most one per connected peer).
  if (!peer_connected(peer)) return false;
  const uint32_t all = num_ports() >= 32 ? ~0u : ((1u << num_ports()) - 1);
  mask &= all;
  const uint32_t before = peer_port_mask(peer) & all;
  peer_up_[peer] = mask;
  // A plane the peer reports down while it is up here gets re-checked.
  if ((local_up_ & ~mask) != 0 && recheck_next_ == Time::never() && cfg_.protocol.peer_port_recheck > Duration{})
    recheck_next_ = now + cfg_.protocol.peer_port_recheck;
  if (mask == before) return true;
  for (auto& q : qps_) {
    if (!q || q->peer() != peer) continue;
    if (q->state() != QpState::rtr && q->state() != QpState::rts) continue;
    q->on_port_mask(now, local_up_ & mask);
    refresh(*q);
  }
  push_event(PortEvent{peer, mask});
  return true;
}

void Endpoint::on_endpoint_request(Time now, const RxMeta& meta, const wire::Parsed& p) {
  ++stats_.ep_requests;
  const auto op = static_cast<wire::EpWireOp>(p.h.erth.op);
  // A port out of service here answers nothing: an answer would tell the
  // peer (a re-check probe, reference 4.7's sender) that the plane works.
  if (!(local_up_ >> meta.port & 1u)) {
    ++stats_.rx_ep_refused;
    return;
  }
  if (op == wire::EpWireOp::port_status_update) {
    // Reference 4.7. A mask that names only ports that do not exist, leaves
    // no plane usable, or leaves out the plane it arrived on (a peer cannot
    // send on a plane it reports down) is nonsense: refused, unanswered.
    const uint32_t all = num_ports() >= 32 ? ~0u : ((1u << num_ports()) - 1);
    const uint32_t mask = p.h.erth.port_status_mask & all;
    if ((mask & local_up_) == 0 || !(mask >> meta.port & 1u)) {
      ++stats_.rx_ep_refused;
      return;
    }
    // A sane update from a source with no connected QP here changes nothing
    // (refused, counted) but is still answered: the answer only confirms
    // receipt, at the rate probes are answered to anyone, and a device
    // that shards its QPs over several endpoints applies the update in the
    // others (apply_peer_port_status), so the sender must hear back.
    if (!apply_peer_port_status(now, meta.peer, mask)) ++stats_.rx_ep_refused;
  } else if (op != wire::EpWireOp::ev_probe) {
    ++stats_.rx_malformed;
    return;
  }
  if (!take_source_credit(now, meta.peer, static_cast<uint32_t>(p.header_len + p.payload_len))) {
    ++stats_.ep_replies_shed;
    ++stats_.ep_replies_shed_source;
    return;
  }
  if (!take_reply_token(now)) {
    ++stats_.ep_replies_shed;
    return;
  }
  EpCtrl c{};
  c.op = op;
  c.response = true;
  c.peer = meta.peer;
  c.port = meta.port;
  c.entropy = meta.entropy;
  c.req_id = static_cast<uint16_t>(p.h.bth.psn);
  c.ts = p.h.erth.timestamp;
  c.rx_port = meta.port;
  ep_ctrl_.push_back(c);
  ++replies_queued_;
}

void Endpoint::on_endpoint_response(Time now, const RxMeta& meta, const wire::Parsed& p) {
  ++stats_.ep_responses;
  const auto op = static_cast<wire::EpWireOp>(p.h.eeth.op);
  if (op != wire::EpWireOp::ev_probe && op != wire::EpWireOp::port_status_update) return;
  const bool port_status = op == wire::EpWireOp::port_status_update;
  const uint16_t id = static_cast<uint16_t>(p.h.bth.psn);
  for (auto it = probes_.begin(); it != probes_.end(); ++it) {
    if (it->req_id != id || it->port_status != port_status) continue;
    // The answer must come from the peer asked and echo the request's EV and
    // timestamp: anything else is forged or belongs to an older request.
    if (it->peer != meta.peer || it->entropy != p.h.eeth.entropy || it->ts != p.h.eeth.reflected_ts) break;
    push_event(ProbeResult{id, true, meta.port, now - it->sent_at, port_status});
    probes_.erase(it);
    return;
  }
  if (port_status ? take_advert_answer(meta, p) : take_recheck_answer(now, meta, p)) return;
  // A late answer to an update already answered, or to a replaced one.
  if (port_status) return;
  ++stats_.rx_bad_ack;
}

}  // namespace mrc::core
