// SPDX-License-Identifier: BSD-2-Clause
// QP lifecycle, posting, timers and control-packet output. The requester's
// data path is in requester.cc, the responder's in responder.cc.
#include "core/qp.hpp"

#include <algorithm>
#include <bit>

#include "core/endpoint.hpp"
#include "wire/psn.hpp"

namespace mrc::core {

namespace {
// Unwrapped sequence numbers start at 2^24 + the wire value so that
// "one before the first PSN" is still a valid positive number.
constexpr uint64_t kSeqBase = uint64_t{1} << 24;
// Initial size of the send-record and receive-slot rings (they grow on demand).
constexpr uint64_t kInitialRing = 16;
constexpr uint32_t kMaxMessageBytes = 1u << 31;
// A QP's queue depth: what it asked for (QpInit), within the device's.
uint32_t queue_cap(uint32_t asked, uint32_t device) { return asked == 0 ? device : std::min(asked, device); }

}  // namespace

Qp::Qp(Endpoint& ep, uint32_t qpn, const QpInit& init, uint64_t stream)
    : ep_(ep), qpn_(qpn), init_(init), stream_(stream) {
  timers_.fill(Time::never());
}

Qp::~Qp() { drop_send_queue(); }

// Every queued WR holds a reference on its source region (post_send), so
// the region cannot be deregistered while a (re)transmission may read it.
void Qp::drop_send_queue() {
  for (size_t i = 0; i < sq_.size(); ++i) release_source(sq_[i]);
  sq_.clear();
  sq_next_ = 0;
}

// ----------------------------------------------------------------- state machine

Status Qp::check_transition(const QpAttr& a, uint32_t mask) const {
  using namespace qp_attr;
  if ((mask & kCurState) && a.cur_state != state_) return Errc::invalid_argument;
  uint32_t required = 0;
  uint32_t allowed = kState | kCurState;
  if (!(mask & kState)) {
    // Attribute changes without a transition: only RTS timers and retries.
    if (state_ != QpState::rts) return Errc::invalid_argument;
    allowed |= kTimeout | kRetryCnt;
  } else {
    const QpState from = state_, to = a.state;
    if (to == QpState::reset || to == QpState::error) {
      // Always allowed, no attributes.
    } else if ((from == QpState::reset || from == QpState::init) && to == QpState::init) {
      allowed |= kEvProfileId | kCcProfileId | kHint;
    } else if (from == QpState::init && to == QpState::rtr) {
      required = kDestQpn | kRqPsn | kPeer | kPathMtu | kMaxWimmDest | kMprDest;
      allowed |= required | kCap | kEvProfileId | kCcProfileId | kSecure;
    } else if (from == QpState::rtr && to == QpState::rts) {
      required = kSqPsn | kMaxWimm | kMpr | kRetryCnt | kTimeout;
      allowed |= required | kCap;
    } else if (from == QpState::rts && to == QpState::rts) {
      allowed |= kTimeout | kRetryCnt;
    } else {
      return Errc::invalid_argument;  // e.g. RESET -> RTS, ERROR -> RTS
    }
  }
  if ((mask & required) != required) return Errc::invalid_argument;
  if (mask & ~allowed) return Errc::invalid_argument;

  // Ranges (reference 6.2).
  const EndpointConfig& dev = ep_.cfg_;
  if ((mask & kDestQpn) && (a.dest_qpn <= kEndpointOpsQpn || a.dest_qpn > wire::kPsnMask))
    return Errc::invalid_argument;
  if ((mask & kRqPsn) && a.rq_psn > wire::kPsnMask) return Errc::invalid_argument;
  if ((mask & kSqPsn) && a.sq_psn > wire::kPsnMask) return Errc::invalid_argument;
  if ((mask & kPathMtu) && (a.path_mtu < 256 || a.path_mtu > 4096 || !std::has_single_bit(a.path_mtu)))
    return Errc::invalid_argument;
  if ((mask & kMpr) && (a.mpr == 0 || a.mpr > dev.max_mpr)) return Errc::invalid_argument;
  if ((mask & kMprDest) && (a.mpr_dest == 0 || a.mpr_dest > dev.max_mpr)) return Errc::invalid_argument;
  if ((mask & kMaxWimm) && a.max_wimm > dev.max_wimm) return Errc::invalid_argument;
  if ((mask & kMaxWimmDest) && a.max_wimm_dest > dev.max_wimm) return Errc::invalid_argument;
  if ((mask & kTimeout) && a.timeout > 24) return Errc::invalid_argument;
  if ((mask & kRetryCnt) && (a.retry_linear > 7 || a.retry_exp > 25)) return Errc::invalid_argument;
  if ((mask & kEvProfileId) && !ep_.ev_profiles_.count(a.ev_profile_id)) return Errc::invalid_argument;
  if ((mask & kCcProfileId) && !ep_.cc_profiles_.count(a.cc_profile_id)) return Errc::invalid_argument;
  if (mask & kSecure) {
    if (!validate_secure(a.secure)) return Errc::invalid_argument;
    // The RoCEv2 baseline stays the reference's RC: no secure mode.
    if (roce() && a.secure.mode != SecureMode::off) return Errc::not_supported;
  }
  if (mask & kCap) {
    constexpr uint32_t known =
        qp_cap::kTrimNackDestUnsupported | qp_cap::kDynamicMpr | qp_cap::kSvcTimeDestUnsupported;
    if (a.cap & ~known) return Errc::invalid_argument;
    if ((a.cap & qp_cap::kDynamicMpr) && !dev.cap_dynamic_mpr) return Errc::invalid_argument;
  }
  return {};
}

Status Qp::modify(Time now, const QpAttr& a, uint32_t mask) {
  using namespace qp_attr;
  if (Status s = check_transition(a, mask); !s) return s;
  // Keyed before anything changes: a driver without a cipher refuses here.
  std::unique_ptr<SecureQp> secure;
  if ((mask & kSecure) && a.secure.mode != SecureMode::off)
    if (Status s = make_secure_qp(ep_.cfg_.make_aead, a.secure, secure); !s) return s;
  auto take = [&](uint32_t bit, auto field) {
    if (mask & bit) attr_.*field = a.*field;
  };
  take(kDestQpn, &QpAttr::dest_qpn);
  take(kRqPsn, &QpAttr::rq_psn);
  take(kSqPsn, &QpAttr::sq_psn);
  take(kPathMtu, &QpAttr::path_mtu);
  take(kPeer, &QpAttr::peer);
  take(kMaxWimm, &QpAttr::max_wimm);
  take(kMaxWimmDest, &QpAttr::max_wimm_dest);
  take(kMpr, &QpAttr::mpr);
  take(kMprDest, &QpAttr::mpr_dest);
  take(kTimeout, &QpAttr::timeout);
  take(kEvProfileId, &QpAttr::ev_profile_id);
  take(kCcProfileId, &QpAttr::cc_profile_id);
  take(kHint, &QpAttr::hint);
  if (mask & kSecure) {
    secure_ = std::move(secure);
    // Kept for query_qp: the mode and key ids, never the keys.
    attr_.secure = QpSecure{};
    attr_.secure.mode = a.secure.mode;
    attr_.secure.send.key_len = a.secure.send.key_len;
    attr_.secure.send.key_id = a.secure.send.key_id;
    attr_.secure.recv.key_len = a.secure.recv.key_len;
    attr_.secure.recv.key_id = a.secure.recv.key_id;
  }
  if (mask & kCap) attr_.cap = a.cap;
  if (mask & kRetryCnt) {
    attr_.retry_linear = a.retry_linear;
    attr_.retry_exp = a.retry_exp;
  }
  if (!(mask & kState)) return {};
  const QpState to = a.state;
  if (to == QpState::reset) {
    reset_state();
    attr_ = QpAttr{};
    secure_.reset();
  } else if (to == QpState::error) {
    if (state_ != QpState::error) fail(now, WcStatus::wr_flush_err, SIZE_MAX);
  } else if (to == QpState::rtr) {
    enter_rtr(now);
  } else if (to == QpState::rts && state_ == QpState::rtr) {
    enter_rts(now);
  }
  state_ = to;
  attr_.state = to;
  return {};
}

void Qp::enter_rtr(Time) {
  peer_ = attr_.peer;
  mtu_ = attr_.path_mtu;
  const EvProfile& profile = ep_.ev_profiles_.at(attr_.ev_profile_id);
  if (roce()) {
    // RoCEv2: the QP's 5-tuple, hence its ECMP path and plane, is fixed for
    // its life: one EV drawn from the profile's set, whatever policy the
    // profile names.
    EvProfile evp = profile;
    evp.policy = PathPolicyKind::single_path;
    path_ = path::make_path_policy(evp, ep_.num_ports(), ep_.cfg_.protocol, ep_.rng_.derive(stream_), &ev_events_);
    rc_epsn_ = kSeqBase + attr_.rq_psn;
    rc_nak_sent_ = false;
    rc_unacked_ = 0;
    rc_rx_ = RcRxMsg{};
    cnp_sent_ = false;
  } else {
    path_ = path::make_path_policy(profile, ep_.num_ports(), ep_.cfg_.protocol, ep_.rng_.derive(stream_), &ev_events_);
  }
  path_->set_port_mask(ep_.local_up_ & ep_.peer_port_mask(peer_));
  // Responder: PSN tracking window of MPR_DEST x 128 PSNs (reference 3.4).
  mpr_dest_cur_ = attr_.mpr_dest;
  const uint64_t window = uint64_t{attr_.mpr_dest} * kMprUnit;
  rx_.reset(window, kSeqBase + attr_.rq_psn);
  // The slot ring grows with the PSNs actually placed ahead of the base
  // (rx_slot_for), up to bit_ceil(rx_.capacity()).
  rx_slots_.assign(std::min<uint64_t>(kInitialRing, std::bit_ceil(rx_.capacity())), RxSlot{});
  rx_slot_mask_ = rx_slots_.size() - 1;
}

void Qp::grow_rx_slots(uint64_t psn) {
  const uint64_t base = rx_.base();
  const uint64_t size = std::bit_ceil(psn - base + 1);
  std::vector<RxSlot> bigger(size);
  const uint64_t mask = size - 1;
  // Only PSNs in [base, base + old size) can hold a slot: every other slot is clear.
  for (uint64_t q = base; q < base + rx_slots_.size(); ++q) bigger[q & mask] = rx_slots_[q & rx_slot_mask_];
  rx_slots_ = std::move(bigger);
  rx_slot_mask_ = mask;
}

void Qp::grow_records(uint64_t psn) {
  const uint64_t size = std::bit_ceil(psn - snd_una_ + 1);
  std::vector<SendRecord> bigger(size);
  const uint64_t mask = size - 1;
  // Records are read only for PSNs in [snd_una_, next_psn_).
  const uint64_t end = std::min(next_psn_, snd_una_ + records_.size());
  for (uint64_t q = snd_una_; q < end; ++q) bigger[q & mask] = records_[q & rec_mask_];
  records_ = std::move(bigger);
  rec_mask_ = mask;
}

void Qp::enter_rts(Time now) {
  const uint64_t window = uint64_t{attr_.mpr} * kMprUnit;
  // The record ring grows with the PSNs in flight (rec_for_send), up to
  // bit_ceil(window).
  records_.assign(std::min<uint64_t>(kInitialRing, std::bit_ceil(window)), SendRecord{});
  rec_mask_ = records_.size() - 1;
  next_psn_ = snd_una_ = kSeqBase + attr_.sq_psn;
  acked_.reset(window, snd_una_);
  const ProtocolConfig& pc = ep_.cfg_.protocol;
  reorder_ = ReorderWindow(ReorderWindowConfig{pc.base_rtt, pc.reorder_allowance, pc.reorder_max_multiplier,
                                               pc.reorder_initial_multiplier, pc.reorder_decay,
                                               pc.loss_age_floor_from_rtt});
  cc::CcContext ctx;
  ctx.mtu_bytes = mtu_;
  ctx.window_divisor = attr_.hint.window_divisor();
  ctx.base_rtt = ep_.cfg_.protocol.base_rtt;
  ctx.trimming = !(attr_.cap & qp_cap::kTrimNackDestUnsupported);
  ctx.link_bps = 0;
  if (roce()) {
    // One port carries the whole QP: its rate is the QP's line rate.
    ctx.trimming = false;
    const int pin = path_->pinned();
    if (pin != path::PathPolicy::kNone) ctx.link_bps = ep_.cfg_.ports[path_->slot(pin).port].rate_bps;
  } else {
    const uint32_t usable = path_->port_mask();
    for (uint32_t p = 0; p < ep_.num_ports(); ++p)
      if (usable >> p & 1u) ctx.link_bps += ep_.cfg_.ports[p].rate_bps;
  }
  if (ctx.link_bps == 0) ctx.link_bps = ep_.cfg_.ports[0].rate_bps;
  cc_ = cc::make_controller(ep_.cc_profiles_.at(attr_.cc_profile_id), ctx);
  last_delivery_ = last_reverse_probe_ = now;
  rc_resend_ = next_psn_;
}

void Qp::reset_state() {
  drop_send_queue();
  burst_left_ = 0;
  fifo_.clear();
  rtx_q_.clear();
  recv_q_.clear();
  clear_ctrl();
  records_.clear();
  ev_last_psn_.clear();
  fifo_evidence_.clear();
  rx_slots_.clear();
  path_.reset();
  cc_.reset();
  ev_events_.clear();
  timers_.fill(Time::never());
  top_acked_tx_ = {};
  overdue_cursor_ = 0;
  prev_sack_at_ = last_acked_at_ = Time{};
  retry_count_ = timeout_streak_ = imm_inflight_ = wimm_stash_ = 0;
  next_msn_ = 1;
  next_rqmsn_ = 0;
  msgs_completed_ = aeth_sent_msn_ = 0;
  aeth_queued_ = false;
  rcvd_bytes_total_ = 0;
  ooo_count_ = bytes_since_sack_ = 0;
  rcvd_reported_ = rcvd_credited_ = acked_bytes_ = 0;
  tail_probe_psn_ = 0;
  oor_window_ = 0;
  peer_mpr_ = 0;
  answer_fatal_ = false;
  sack_pending_ = probe_due_ = reverse_probe_due_ = false;
  rc_resend_ = rc_epsn_ = 0;
  rc_nak_sent_ = false;
  rc_unacked_ = 0;
  rc_rx_ = RcRxMsg{};
  cnp_sent_ = false;
}

// The failing WR (if any) completes with `cause`; every other outstanding
// WR and receive WQE is flushed (ibverbs: flushed WRs always complete).
void Qp::flush_queues(WcStatus cause, size_t failing_msg) {
  for (size_t i = 0; i < sq_.size(); ++i) {
    WorkCompletion wc;
    wc.wr_id = sq_[i].wr.wr_id;
    wc.cq = init_.send_cq;
    wc.qpn = qpn_;
    wc.opcode = WcOpcode::rdma_write;
    wc.status = i == failing_msg ? cause : WcStatus::wr_flush_err;
    complete(wc);
  }
  for (size_t i = 0; i < recv_q_.size(); ++i) {
    WorkCompletion wc;
    wc.wr_id = recv_q_[i].wr_id;
    wc.cq = init_.recv_cq;
    wc.qpn = qpn_;
    wc.opcode = WcOpcode::recv_rdma_with_imm;
    wc.status = WcStatus::wr_flush_err;
    complete(wc);
  }
  drop_send_queue();
  recv_q_.clear();
}

QpInfo Qp::info() const {
  QpInfo i;
  i.qpn = qpn_;
  i.transport = init_.transport;
  i.state = state_;
  i.attr = attr_;
  i.init = init_;
  i.peer = peer_;
  i.stats = stats_;
  i.send_queued = static_cast<uint32_t>(sq_.size());
  i.recv_queued = static_cast<uint32_t>(recv_q_.size());
  if (path_) {
    i.evs = static_cast<uint32_t>(path_->size());
    i.evs_good = path_->count(EvState::good);
    i.evs_assumed_bad = path_->count(EvState::assumed_bad);
    i.evs_denied = path_->count(EvState::denied);
    i.path = path_->stats();
  }
  if (cc_) {
    i.cwnd_bytes = cc_->cwnd_bytes();
    i.inflight_bytes = cc_->inflight_bytes();
  }
  i.srtt = reorder_.srtt();
  return i;
}

void Qp::flush_for_destroy() { flush_queues(WcStatus::wr_flush_err, SIZE_MAX); }

void Qp::fail(Time now, WcStatus cause, size_t failing_msg) {
  (void)now;
  flush_queues(cause, failing_msg);
  fifo_.clear();
  rtx_q_.clear();
  clear_ctrl();
  timers_.fill(Time::never());
  probe_due_ = reverse_probe_due_ = sack_pending_ = false;
  state_ = QpState::error;
  attr_.state = QpState::error;
  ep_.push_event(QpErrorEvent{qpn_, cause});
}

void Qp::complete(const WorkCompletion& wc) { ep_.push_completion(wc); }

// ----------------------------------------------------------------- posting

Status Qp::post_send(Time now, const SendWr& wr) {
  if (state_ != QpState::rts && state_ != QpState::error) return Errc::invalid_argument;
  if (sq_.size() >= queue_cap(init_.max_send_wr, ep_.cfg_.max_send_wr)) return Errc::no_memory;
  if (state_ == QpState::error) {
    complete(WorkCompletion{wr.wr_id, init_.send_cq, qpn_, WcStatus::wr_flush_err, WcOpcode::rdma_write});
    return {};
  }
  SendMsg m;
  if (Status st = stage_source(wr, m); !st) {
    if (st.error() != Errc::permission) return st;
    // Local protection error: reported on the CQ, QP to ERROR (ibverbs).
    sq_.push_back(m);
    fail(now, WcStatus::loc_prot_err, sq_.size() - 1);
    return {};
  }
  m.wr.signaled = wr.signaled || init_.sq_sig_all;
  m.msn = next_msn_++;
  if (wr.opcode == WrOpcode::rdma_write_with_imm) m.rqmsn = next_rqmsn_++;
  m.npkts = m.wr.length == 0 ? 1 : (m.wr.length + mtu_ - 1) / mtu_;
  sq_.push_back(m);
  if (!roce()) arm_stall_timer(now);
  return {};
}

// Checks the WR's source and copies what must outlive the call (the gather
// list, the inline bytes) into a side block. On success `m` holds the WR
// with its spans cleared and wr.length set to the whole message. Returns
// invalid_argument for a malformed WR (nothing queued, no completion) and
// permission_denied for a local protection failure (the caller reports it
// as a loc_prot_err completion); either way nothing is held.
Status Qp::stage_source(const SendWr& wr, SendMsg& m) {
  m.wr = wr;
  m.wr.sg_list = {};
  m.wr.inline_data = {};
  const bool one_buffer = wr.local_addr != 0 || wr.lkey != 0 || wr.length != 0;
  const int forms = int{one_buffer} + int{!wr.sg_list.empty()} + int{!wr.inline_data.empty()};
  if (forms > 1) return Errc::invalid_argument;
  if (!wr.inline_data.empty()) {
    if (wr.inline_data.size() > kMaxInlineData) return Errc::invalid_argument;
    m.source = Source::inline_data;
  } else if (!wr.sg_list.empty()) {
    if (wr.sg_list.size() > kMaxSge) return Errc::invalid_argument;
    uint64_t total = 0;
    for (const Sge& e : wr.sg_list) total += e.length;
    if (total > kMaxMessageBytes) return Errc::invalid_argument;
    m.source = Source::gather;
    m.wr.length = static_cast<uint32_t>(total);
  } else if (wr.length > kMaxMessageBytes) {
    return Errc::invalid_argument;
  }
  // Every element is checked before any reference is taken, so a failure
  // leaves nothing to undo.
  if (m.source == Source::gather) {
    for (const Sge& e : wr.sg_list)
      if (e.length > 0 && !ep_.mrs_.check_local(init_.pd, e.lkey, e.addr, e.length))
        return Errc::permission;
  } else if (m.source == Source::buffer && wr.length > 0 &&
             !ep_.mrs_.check_local(init_.pd, wr.lkey, wr.local_addr, wr.length)) {
    return Errc::permission;
  }
  if (m.source == Source::buffer) {
    if (wr.length > 0) {
      ep_.mrs_.acquire(wr.lkey);
      m.holds_mr = true;
    }
    return {};
  }
  if (free_blocks_.empty()) {
    free_blocks_.push_back(static_cast<uint32_t>(blocks_.size()));
    blocks_.push_back(std::make_unique<WrBlock>());
  }
  m.block = free_blocks_.back();
  free_blocks_.pop_back();
  WrBlock& b = *blocks_[m.block];
  if (m.source == Source::inline_data) {
    std::copy(wr.inline_data.begin(), wr.inline_data.end(), b.bytes.begin());
    m.wr.length = static_cast<uint32_t>(wr.inline_data.size());
    return {};
  }
  m.num_sge = static_cast<uint16_t>(wr.sg_list.size());
  std::copy(wr.sg_list.begin(), wr.sg_list.end(), b.sge.begin());
  for (const Sge& e : wr.sg_list)
    if (e.length > 0) ep_.mrs_.acquire(e.lkey);
  m.holds_mr = true;
  return {};
}

// Drops what a message holds: its region references and its side block.
// Called once per message, when it completes or is flushed.
void Qp::release_source(SendMsg& m) {
  if (m.source != Source::buffer) {
    if (m.holds_mr) {
      const WrBlock& b = *blocks_[m.block];
      for (uint16_t i = 0; i < m.num_sge; ++i)
        if (b.sge[i].length > 0) ep_.mrs_.release(b.sge[i].lkey);
    }
    free_blocks_.push_back(m.block);
  } else if (m.holds_mr) {
    ep_.mrs_.release(m.wr.lkey);
  }
  m.holds_mr = false;
  m.source = Source::buffer;
}

// Points `tx` at payload bytes [offset, offset+len) of message `m`: directly
// when they are contiguous (one buffer, inline, or inside one gather
// element), else through the gather list.
void Qp::set_payload(const SendMsg& m, uint64_t offset, uint32_t len, Transmit& tx) const {
  tx.payload_len = len;
  tx.payload = nullptr;
  tx.gather = nullptr;
  tx.gather_count = 0;
  tx.gather_offset = 0;
  if (len == 0) return;
  switch (m.source) {
    case Source::buffer:
      tx.payload = reinterpret_cast<const uint8_t*>(m.wr.local_addr + offset);
      return;
    case Source::inline_data:
      tx.payload = blocks_[m.block]->bytes.data() + offset;
      return;
    case Source::gather: break;
  }
  const WrBlock& b = *blocks_[m.block];
  uint64_t at = offset;
  for (uint16_t i = 0; i < m.num_sge; ++i) {
    const Sge& e = b.sge[i];
    if (at >= e.length) {
      at -= e.length;
      continue;
    }
    if (at + len <= e.length) {
      tx.payload = reinterpret_cast<const uint8_t*>(e.addr + at);
      return;
    }
    break;
  }
  tx.gather = b.sge.data();
  tx.gather_count = m.num_sge;
  tx.gather_offset = static_cast<uint32_t>(offset);
}

Status Qp::post_recv(const RecvWr& wr) {
  if (state_ == QpState::reset) return Errc::invalid_argument;
  if (recv_q_.size() >= queue_cap(init_.max_recv_wr, ep_.cfg_.max_recv_wr)) return Errc::no_memory;
  if (state_ == QpState::error) {
    complete(WorkCompletion{wr.wr_id, init_.recv_cq, qpn_, WcStatus::wr_flush_err,
                            WcOpcode::recv_rdma_with_imm});
    return {};
  }
  recv_q_.push_back(wr);
  return {};
}

Status Qp::set_mpr_dest(uint8_t mpr) {
  if (state_ != QpState::rtr && state_ != QpState::rts) return Errc::invalid_argument;
  if (!(attr_.cap & qp_cap::kDynamicMpr)) return Errc::invalid_argument;
  if (mpr == 0 || mpr > attr_.mpr_dest) return Errc::invalid_argument;
  mpr_dest_cur_ = mpr;
  return {};
}

Status Qp::set_ev_denied(Time now, uint32_t value, bool denied) {
  if (!path_) return Errc::invalid_argument;
  return path_->set_denied(now, value, denied);
}

void Qp::on_port_mask(Time now, uint32_t mask) {
  if (!path_) return;
  path_->set_port_mask(mask);
  arm_stall_timer(now);
  if (cc_) {
    uint64_t bps = 0;
    if (roce()) {
      // The QP's one port is up or it is not; its rate does not change.
      const int pin = path_->pinned();
      if (pin != path::PathPolicy::kNone && (mask >> path_->slot(pin).port & 1u))
        bps = ep_.cfg_.ports[path_->slot(pin).port].rate_bps;
    } else {
      for (uint32_t p = 0; p < ep_.num_ports(); ++p)
        if (mask >> p & 1u) bps += ep_.cfg_.ports[p].rate_bps;
    }
    if (bps) cc_->on_link_speed(bps);
  }
}

// ----------------------------------------------------------------- dispatch

void Qp::on_packet(Time now, const RxMeta& meta, const wire::Parsed& p, const uint8_t* payload) {
  const wire::OpcodeInfo& info = p.h.info();
  if (info.rc != roce()) {
    // An opcode of the other transport family: malformed for this QP.
    ++ep_.stats_.rx_malformed;
    return;
  }
  if (roce()) {
    if (info.data) rc_on_data(now, meta, p, payload);
    else if (p.h.opcode() == wire::Opcode::rc_ack) rc_on_aeth(now, p.h);
    else if (p.h.opcode() == wire::Opcode::cnp) rc_on_cnp(now);
  } else if (info.data) {
    on_data(now, meta, p, payload);
  } else {
    switch (p.h.opcode()) {
      case wire::Opcode::sack: on_sack(now, meta, p.h); break;
      case wire::Opcode::nack: on_nack(now, p.h); break;
      case wire::Opcode::ack: on_aeth(now, p.h); break;
      case wire::Opcode::probe: on_probe(now, meta, p.h); break;
      default: break;  // endpoint operations never reach a QP
    }
  }
}

void Qp::flush_ev_events() {
  if (ev_events_.empty()) return;
  // EV events collected by the path policy go to the endpoint's queue,
  // filtered by the profile's event mask (reference 4.10).
  const EvProfile& evp = ep_.ev_profiles_.at(attr_.ev_profile_id);
  for (EvEvent& e : ev_events_) {
    const bool wanted = (e.held && evp.event_on_assumed_bad) || (e.to == EvState::good && evp.event_on_good) ||
                        (e.to == EvState::assumed_bad && evp.event_on_assumed_bad) ||
                        e.to == EvState::denied || e.from == EvState::denied;
    if (!wanted) continue;
    e.qpn = qpn_;
    e.ev_profile_id = attr_.ev_profile_id;
    ep_.push_event(e);
  }
  ev_events_.clear();
}

// ----------------------------------------------------------------- timers

uint16_t Qp::ts_now(Time now) const {
  return static_cast<uint16_t>(now.ps() / ep_.cfg_.protocol.timestamp_tick.count_ps());
}

Duration Qp::rto() const {
  // 1.024 us x 2^timeout (reference 3.8); linear retries use it as is, then it
  // doubles per retry, capped at 2^24 x 1.024 us (reference 8, item 6).
  // Only ACK timeouts back it off: retriable NACKs prove the peer and a path
  // alive, and under a heavy incast they are routine congestion feedback, so
  // counting them here would push the timer out to seconds just when the
  // last packets in flight are the ones that get lost.
  const uint32_t base_exp = attr_.timeout;
  uint32_t exp = base_exp;
  if (timeout_streak_ > attr_.retry_linear) exp += timeout_streak_ - attr_.retry_linear;
  exp = std::min<uint32_t>(exp, 24);
  return Duration::ps(int64_t{1'024'000} << exp);
}

Time Qp::next_timeout() const {
  Time t = std::min({timer(QpTimer::recovery), timer(QpTimer::sack), timer(QpTimer::pacing)});
  if (path_ && state_ == QpState::rts && !probe_due_) t = min(t, path_->next_probe());
  return t;
}

bool Qp::pace(Time now, uint32_t nominal) {
  // A rate-based controller holds the packet back: wake up when it may go.
  const Time at = cc_->next_send_time(now, nominal);
  if (at <= now) return false;
  set_timer(QpTimer::pacing, at);
  return true;
}

void Qp::on_timeout(Time now) {
  if (timer(QpTimer::sack) <= now) {
    set_timer(QpTimer::sack, Time::never());
    if (sack_pending_) {
      sack_pending_ = false;
      if (roce()) rc_queue_ack();
      else push_ctrl(pending_sack_);
    }
  }
  // Pacing: nothing to do but let the endpoint poll the QP's data again.
  if (timer(QpTimer::pacing) <= now) set_timer(QpTimer::pacing, Time::never());
  if (state_ != QpState::rts) return;
  if (roce()) {
    if (timer(QpTimer::recovery) <= now) rc_on_recovery_timer(now);
    return;  // no probes: a RoCE QP has one path and no EV management
  }
  if (timer(QpTimer::recovery) <= now) on_recovery_timer(now);
  if (state_ != QpState::rts) return;
  if (path_->next_probe() <= now) {
    const uint64_t retired = path_->stats().retired;
    path_->on_timer(now);
    // A confirming probe went unanswered: its path is dead, and so is
    // every packet still in flight on it.
    if (path_->stats().retired != retired) declare_dead_path_losses(now);
    if (state_ != QpState::rts) return;
    if (path_->next_probe() <= now) probe_due_ = true;
  }
}

// ----------------------------------------------------------------- control output

void Qp::push_ctrl(const PendingCtrl& c) {
  // Caps and coalescing (qp.hpp, kMaxCtrl): every rule is O(1), so a flood
  // of packets that each ask for an answer costs constant work per packet
  // and a bounded queue.
  bool shed = ctrl_q_.size() >= kMaxCtrl;
  switch (c.kind) {
    case PendingCtrl::nack:
      if (ctrl_nacks_ >= kMaxCtrlNacks) shed = true;
      if (c.code == wire::NackCode::psn_oor_window && oor_nack_queued_) shed = true;
      if (!ctrl_q_.empty() && ctrl_q_.back().kind == PendingCtrl::nack && ctrl_q_.back().code == c.code &&
          ctrl_q_.back().psn == c.psn)
        shed = true;
      break;
    case PendingCtrl::nak: shed |= nak_queued_; break;
    case PendingCtrl::probe_sack: shed |= probe_answers_queued_ >= kMaxCtrlProbeAnswers; break;
    default: break;
  }
  if (shed) {
    ++stats_.ctrl_shed;
    ++ep_.stats_.ctrl_shed;
    return;
  }
  switch (c.kind) {
    case PendingCtrl::nack:
      ++ctrl_nacks_;
      if (c.code == wire::NackCode::psn_oor_window) oor_nack_queued_ = true;
      break;
    case PendingCtrl::nak: nak_queued_ = true; break;
    case PendingCtrl::probe_sack: ++probe_answers_queued_; break;
    default: break;
  }
  ctrl_q_.push_back(c);
}

Qp::PendingCtrl Qp::pop_ctrl_at(size_t i) {
  const PendingCtrl c = ctrl_q_[i];
  ctrl_q_.erase_at(i);
  switch (c.kind) {
    case PendingCtrl::nack:
      --ctrl_nacks_;
      if (c.code == wire::NackCode::psn_oor_window) oor_nack_queued_ = false;
      break;
    case PendingCtrl::nak: nak_queued_ = false; break;
    case PendingCtrl::probe_sack: --probe_answers_queued_; break;
    default: break;
  }
  return c;
}

void Qp::clear_ctrl() {
  ctrl_q_.clear();
  ctrl_nacks_ = 0;
  oor_nack_queued_ = nak_queued_ = aeth_queued_ = false;
  probe_answers_queued_ = 0;
}

uint32_t Qp::sendable_ports() const { return path_ ? path_->sendable_ports() : 0; }

uint8_t Qp::pick_port(uint8_t preferred, uint32_t port_mask) const {
  // Control answers on the plane the data came in on (its reverse EVs are
  // that plane's); if that port is up but busy, wait for it (control goes
  // first there, so the wait is at most one packet). Only a port that is
  // down, or unusable towards the peer, sends control elsewhere.
  const uint32_t usable = ep_.local_up_ & (path_ ? path_->port_mask() : ep_.local_up_);
  if (usable >> preferred & 1u) return (port_mask >> preferred & 1u) ? preferred : 0xFF;
  const uint32_t up = port_mask & usable;
  if (up == 0) return 0xFF;
  return static_cast<uint8_t>(std::countr_zero(up));
}

uint8_t Qp::pick_sack_port(uint32_t port_mask) const {
  // A SACK is cumulative: any plane may carry it. The next usable port after
  // the last SACK's that is free now, so the SACKs even out over the ports
  // (and a busy one is passed over rather than waited for).
  const uint32_t usable = ep_.local_up_ & (path_ ? path_->port_mask() : ep_.local_up_) & port_mask;
  if (usable == 0) return 0xFF;
  const uint32_t after = last_sack_port_ >= 31 ? 0 : usable & (~0u << (last_sack_port_ + 1));
  return static_cast<uint8_t>(std::countr_zero(after != 0 ? after : usable));
}

bool Qp::poll_control(Time now, uint32_t port_mask, uint8_t* hdr, Transmit& tx) {
  // The first queued control packet that may leave on one of these ports
  // (looking a bounded distance into the queue, so one busy port does not
  // hold up answers due on another).
  constexpr size_t kLookahead = 32;
  const size_t n = std::min(ctrl_q_.size(), kLookahead);
  for (size_t i = 0; i < n; ++i) {
    // A RoCE QP answers on its one path (rc_ctrl_port()), like its data.
    // An MRC SACK may take any plane (spread_sacks); other answers leave
    // on the plane their trigger arrived on.
    const PendingCtrl& q = ctrl_q_[i];
    uint8_t port;
    if (roce()) {
      port = pick_port(rc_ctrl_port(), port_mask);
    } else if (q.kind == PendingCtrl::sack && ep_.cfg_.protocol.spread_sacks) {
      port = pick_sack_port(port_mask);
    } else {
      port = pick_port(q.port, port_mask);
    }
    if (port == 0xFF) continue;
    const PendingCtrl c = pop_ctrl_at(i);
    build_control(now, c, port, hdr, tx);
    ++stats_.control_sent;
    return true;
  }
  return false;
}

}  // namespace mrc::core
