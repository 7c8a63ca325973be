// SPDX-License-Identifier: BSD-2-Clause
// RoCEv2 RC baseline transport (QpInit::transport = Transport::roce_rc): the
// reliable connection the simulator compares MRC against, run on the same
// QP state machine, memory checks, completions, retry counter and timers as
// MRC (qp.cc, requester.cc, responder.cc) but with IBTA RC semantics:
//
// Requester
//  - one EV for the QP's life (single-path policy, chosen in enter_rtr): one
//    plane, one ECMP path; a dead path stalls the QP until the retry counter
//    runs out;
//  - packets leave in PSN order with RC opcodes (RETH on FIRST/ONLY only);
//    at most mpr x 128 PSNs and max_wimm WRITE_WITH_IMMs outstanding;
//  - go-back-N: a NAK "PSN sequence error" for PSN e acknowledges everything
//    before e and rewinds the send cursor to e; the ACK timeout rewinds to
//    the oldest unacknowledged PSN. Rewound packets are resent in order
//    before any new data. Timeouts and sequence NAKs step the retry counter
//    (IBTA 9.7.5.1.3); any progress resets it; running out fails the QP with
//    retry_exc_err and flushes the rest, as for MRC;
//  - the ACK timer runs while anything is outstanding and restarts on every
//    ACK that makes progress and on every rewind (IBTA's transport timer),
//    with MRC's linear + exponential backoff (Qp::rto());
//  - cumulative ACKs (AETH ACK, BTH PSN = last PSN received in order)
//    complete messages; CNPs go to the congestion controller (DCQCN).
//
// Responder
//  - accepts only the expected PSN (rc_epsn_): checks it against the RETH
//    kept from the message's FIRST/ONLY (VA advancing by the MTU), places it
//    and advances;
//  - a PSN ahead of it: one NAK sequence error per gap, then silent drops
//    until the expected PSN arrives (IBTA 9.7.5.2.2);
//  - a PSN behind it (a duplicate): an immediate re-ACK, unless one is
//    already queued (IBTA 9.7.5.2.1);
//  - ACK coalescing: an ACK at once when a packet carries AckReq (the
//    requester sets it on each message's last packet, when its PSN window
//    is full and when it has nothing more to send) or rc_ack_packets
//    in-order packets are unacknowledged, else rc_ack_delay after the first
//    unacknowledged one; an ACK carries the state when it leaves, so one
//    queued ACK covers every packet until then;
//  - WRITE_WITH_IMM completes (consuming a receive WQE) when its LAST is
//    placed, which is in order by construction; no WQE is fatal, as in MRC
//    (no RNR);
//  - rkey/bounds failures NAK "remote access error", length or opcode
//    sequence errors NAK "invalid request", as MRC's AETH NAKs, and nothing
//    is written;
//  - ECN: a CE-marked data packet triggers a CNP to the requester, at most
//    one per QP per cnp_interval (DCQCN's notification point). A trimmed
//    packet (RoCE fabrics do not trim) is a loss: dropped silently.
#include <algorithm>
#include <cstring>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "wire/psn.hpp"

namespace mrc::core {

// ================================================================= requester

uint32_t Qp::rc_header_len(const SendMsg& m, uint32_t index) const {
  const bool first = index == 0;
  const bool last = index + 1 == m.npkts;
  const bool imm = m.wr.opcode == WrOpcode::rdma_write_with_imm;
  return static_cast<uint32_t>(wire::Bth::kSize + (first ? wire::Reth::kSize : 0) +
                               (last && imm ? wire::ImmDt::kSize : 0));
}

Qp::SendResult Qp::rc_poll_data(Time now, uint32_t port_mask, uint8_t* hdr, Transmit& tx) {
  // The QP's one port is down (here or at the peer): the QP waits, and only
  // the ACK timeout and the retry counter end the wait.
  const uint32_t sendable = path_->sendable_ports();
  if (sendable == 0) return SendResult::blocked;
  if ((sendable & port_mask) == 0) return SendResult::ports_busy;

  // Go-back-N retransmissions first, in PSN order, then new data.
  const bool rtx = rc_resend_ < next_psn_;
  SendMsg* m = nullptr;
  uint64_t psn = 0;
  uint32_t index = 0;
  if (rtx) {
    psn = rc_resend_;
    const SendRecord& r = rec(psn);
    m = msg_by_msn(r.msn);
    index = r.index;
    if (!m) {  // cannot happen: an unacknowledged PSN keeps its message queued
      rc_resend_ = next_psn_;
      return SendResult::idle;
    }
  } else {
    if (sq_next_ >= sq_.size()) return SendResult::idle;
    if (next_psn_ - snd_una_ >= window_psns()) return SendResult::blocked;
    m = &sq_[sq_next_];
    const bool imm = m->wr.opcode == WrOpcode::rdma_write_with_imm;
    if (imm && !m->imm_counted && imm_inflight_ >= attr_.max_wimm) return SendResult::blocked;
    psn = next_psn_;
    index = m->sent_pkts;
  }
  const uint64_t offset = uint64_t{index} * mtu_;
  const auto len = static_cast<uint32_t>(std::min<uint64_t>(mtu_, m->wr.length - offset));
  const uint32_t nom = nominal(rc_header_len(*m, index), len);
  if (!cc_->can_send(nom) || pace(now, nom)) return SendResult::blocked;
  const int ev = path_->select(now, port_mask, path::PathPolicy::kNone);
  if (ev == path::PathPolicy::kNone) return SendResult::ports_busy;

  if (rtx) {
    ++rc_resend_;
    ++stats_.retransmissions;
  } else {
    if (m->sent_pkts == 0) {
      m->first_psn = next_psn_;
      if (m->wr.opcode == WrOpcode::rdma_write_with_imm) {
        m->imm_counted = true;
        ++imm_inflight_;
        stats_.max_wimm_inflight = std::max<uint64_t>(stats_.max_wimm_inflight, imm_inflight_);
      }
    }
    ++next_psn_;
    rc_resend_ = next_psn_;
    if (++m->sent_pkts == m->npkts) ++sq_next_;
    ++stats_.data_packets_sent;
    stats_.max_psn_span = std::max(stats_.max_psn_span, next_psn_ - snd_una_);
  }
  rc_build_data(now, *m, psn, index, rtx, ev, hdr, tx);
  return SendResult::sent;
}

void Qp::rc_build_data(Time now, SendMsg& m, uint64_t psn, uint32_t index, bool rtx, int ev, uint8_t* hdr,
                       Transmit& tx) {
  const Segment seg = segment(m, index);
  const auto [first, last, imm, offset, len] = seg;
  const wire::Opcode op = wire::write_opcode(first, last, imm, true);

  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(op);
  h.bth.dest_qp = attr_.dest_qpn;
  h.bth.psn = wire::psn24(psn);
  // AckReq on each message's last packet, when the PSN window is full and
  // when nothing more is queued, so the responder does not wait for its
  // coalescing timer when the requester waits for the ACK.
  const bool nothing_more = rc_resend_ >= next_psn_ && sq_next_ >= sq_.size();
  h.bth.ack_req = last || psn + 1 - snd_una_ >= window_psns() || nothing_more;
  if (first) {
    h.reth.va = m.wr.remote_addr;
    h.reth.rkey = m.wr.rkey;
    h.reth.dma_length = m.wr.length;
  }
  h.imm.imm = m.wr.imm;
  const size_t hlen = wire::encode(h, std::span<uint8_t>(hdr, wire::kMaxHeaderBytes)).value();
  const uint32_t nom = nominal(static_cast<uint32_t>(hlen), len);

  const path::EvSlot& slot = path_->slot(ev);
  tx = Transmit{};
  tx.port = slot.port;
  path_->stamp(tx, ev);
  tx.peer = peer_;
  tx.tc = TrafficClass::data;  // RoCE has one data class, retransmissions included
  tx.trimmable = false;
  tx.header_len = static_cast<uint16_t>(hlen);
  set_payload(m, offset, len, tx);

  SendRecord& r = rec_for_send(psn);
  if (!rtx) {
    r = SendRecord{};
    r.msn = m.msn;
    r.index = index;
  }
  r.sent_at = now;
  r.nominal = static_cast<uint16_t>(nom);
  r.ev = static_cast<int16_t>(ev);
  ++r.tx_count;
  r.state = PktState::inflight;
  cc_->on_send(now, nom);
  path_->on_sent(ev);
  if (timer(QpTimer::recovery).is_never()) set_timer(QpTimer::recovery, now + rto());
}

void Qp::rc_on_aeth(Time now, const wire::Headers& h) {
  if (state_ != QpState::rts) {
    ++ep_.stats_.rx_bad_state;
    return;
  }
  const uint8_t syndrome = h.aeth.syndrome;
  const uint64_t psn = wire::unwrap_psn(snd_una_, h.bth.psn);
  if (!wire::aeth::is_nak(syndrome)) {
    // ACK: every PSN up to and including BTH.PSN arrived in order.
    if (psn + 1 > next_psn_) {
      ++ep_.stats_.rx_bad_ack;  // acknowledges PSNs never sent
      return;
    }
    if (psn + 1 > snd_una_) rc_ack_to(now, psn + 1);
    return;  // an older ACK (answering a duplicate, or reordered) says nothing new
  }
  if (syndrome != wire::aeth::kNakPsnSeqError) {
    on_fatal_nak(now, psn, syndrome);
    return;
  }
  // NAK sequence error: the responder expects `psn`, so everything before
  // it arrived. It only NAKs after a later PSN arrived, so psn < next_psn_.
  if (psn >= next_psn_) {
    ++ep_.stats_.rx_bad_ack;
    return;
  }
  if (psn < snd_una_) return;  // stale: later ACKs already went past it
  ++stats_.nacks_received;
  if (psn > snd_una_) rc_ack_to(now, psn);
  // A rewind (after a timeout) already covers it: resending again would
  // only duplicate the packets on their way.
  if (rc_resend_ <= psn) return;
  rc_rewind(now, psn, false);
  (void)count_retry(now);
}

void Qp::rc_ack_to(Time now, uint64_t una) {
  uint64_t newly = 0;
  for (uint64_t psn = snd_una_; psn < una; ++psn) {
    SendRecord& r = rec(psn);
    if (r.state == PktState::inflight) newly += r.nominal;
    if (r.state != PktState::acked)
      if (const SendMsg* m = msg_by_msn(r.msn)) stats_.bytes_delivered += segment(*m, r.index).len;
    r.state = PktState::acked;
  }
  // RTT from the newest PSN acknowledged, unless it was sent more than once.
  const SendRecord& newest = rec(una - 1);
  cc::AckInfo ai;
  ai.now = now;
  ai.newly_rcvd_bytes = newly;
  ai.rtt_valid = newest.tx_count == 1;
  ai.rtt = now - newest.sent_at;
  snd_una_ = una;
  rc_resend_ = std::max(rc_resend_, una);
  retry_count_ = timeout_streak_ = 0;  // progress resets the retry counter and the RTO
  complete_acked_messages();
  cc_->on_ack(ai);
  set_timer(QpTimer::recovery, snd_una_ < next_psn_ ? now + rto() : Time::never());
}

void Qp::rc_rewind(Time now, uint64_t from, bool timeout) {
  // Go-back-N: every packet from `from` on is sent again, in order. Those
  // still counted in flight leave the controller's inflight now and return
  // when resent.
  uint64_t n = 0;
  for (uint64_t psn = from; psn < next_psn_; ++psn) {
    SendRecord& r = rec(psn);
    if (r.state != PktState::inflight) continue;
    r.state = PktState::lost;
    cc_->on_inferred_loss(now, r.nominal);
    ++n;
  }
  if (timeout) stats_.losses_timeout += n;
  else stats_.losses_nack += n;
  ++stats_.rewinds;
  rc_resend_ = from;
  set_timer(QpTimer::recovery, now + rto());
}

void Qp::rc_on_recovery_timer(Time now) {
  set_timer(QpTimer::recovery, Time::never());
  if (snd_una_ >= next_psn_) return;
  ++stats_.timeouts;
  ++timeout_streak_;
  if (!count_retry(now)) return;
  rc_rewind(now, snd_una_, true);
}

void Qp::rc_on_cnp(Time now) {
  if (state_ != QpState::rts) {
    ++ep_.stats_.rx_bad_state;
    return;
  }
  ++stats_.cnps_received;
  cc_->on_cnp(now);
}

// ================================================================= responder

void Qp::rc_on_data(Time now, const RxMeta& meta, const wire::Parsed& p, const uint8_t* payload) {
  if (state_ != QpState::rtr && state_ != QpState::rts) {
    ++ep_.stats_.rx_bad_state;
    ++stats_.rx_rejected;
    return;
  }
  if (meta.trim != TrimMark::none) {
    // RoCE fabrics do not trim; the payload is gone, so this is a loss.
    ++stats_.trims_received;
    return;
  }
  last_rx_port_ = meta.port;
  // DCQCN notification point: congestion on the path, whatever the PSN.
  if (meta.ecn_ce) rc_maybe_cnp(now);

  const wire::Headers& h = p.h;
  const wire::OpcodeInfo& info = h.info();
  const uint64_t psn = wire::unwrap_psn(rc_epsn_, h.bth.psn);
  if (psn < rc_epsn_) {
    // Duplicate: our ACK was lost or the requester went back. Re-ACK.
    ++stats_.duplicates_received;
    rc_want_ack(now, true);
    return;
  }
  if (psn > rc_epsn_) {
    // A gap: one NAK per gap, then silence until the expected PSN arrives.
    ++stats_.ooo_received;
    if (!rc_nak_sent_) {
      rc_push_nak(wire::aeth::kNakPsnSeqError, rc_epsn_);
      ++stats_.seq_naks_sent;
    }
    return;
  }

  // The expected PSN. Opcode sequence: FIRST/ONLY start a message, MIDDLE/
  // LAST continue the open one (IBTA 9.7.5.2.3).
  const bool seq_ok = info.first != rc_rx_.open;
  const uint64_t va = info.first ? h.reth.va : rc_rx_.va;
  const uint32_t rkey = info.first ? h.reth.rkey : rc_rx_.rkey;
  const uint64_t remaining = info.first ? h.reth.dma_length : rc_rx_.remaining;
  const uint64_t len = p.payload_len + meta.phantom_payload;
  // Memory check before a single byte moves (reference 3.6), then the
  // length rules: a packet that does not end the message is exactly one
  // MTU, the last one carries exactly what remains.
  const MemoryRegion* mr = seq_ok && len <= mtu_ ? ep_.mrs_.check_remote_write(init_.pd, rkey, va, len) : nullptr;
  const bool len_ok = info.last ? len == remaining : (len == mtu_ && remaining > mtu_);
  if (!mr || !len_ok) {
    ++ep_.stats_.rx_access_errors;
    ++stats_.rx_rejected;
    rc_push_nak(mr || !seq_ok ? wire::aeth::kNakInvalidRequest : wire::aeth::kNakRemoteAccess, rc_epsn_);
    return;
  }

  if (mr->backed && meta.phantom_payload == 0 && p.payload_len > 0)
    std::memcpy(reinterpret_cast<void*>(va), payload, p.payload_len);
  ep_.stats_.rx_placed_bytes += len;
  if (info.first) {
    rc_rx_.open = true;
    rc_rx_.rkey = rkey;
    rc_rx_.dma_length = h.reth.dma_length;
  }
  rc_rx_.va = va + len;
  rc_rx_.remaining = remaining - len;
  ++rc_epsn_;
  rc_nak_sent_ = false;
  ++stats_.data_packets_received;
  rcvd_bytes_total_ += nominal(static_cast<uint32_t>(p.header_len), static_cast<uint32_t>(len));
  if (info.last) {
    rc_rx_.open = false;
    ++msgs_completed_;
    if (info.imm && !complete_recv_imm(rc_rx_.dma_length, h.imm.imm)) {
      // No receive WQE: no RNR in this model either (as MRC, reference 3.1).
      // NAK the LAST's PSN so the requester fails that WR with rem_op_err.
      fail(now, WcStatus::rem_op_err, SIZE_MAX);
      rc_push_nak(wire::aeth::kNakRemoteOperational, rc_epsn_ - 1);  // after fail(), which empties the queue
      return;
    }
  }
  ++rc_unacked_;
  rc_want_ack(now, h.bth.ack_req || rc_unacked_ >= ep_.cfg_.protocol.rc_ack_packets);
}

void Qp::rc_want_ack(Time now, bool immediate) {
  if (immediate) {
    rc_queue_ack();
    return;
  }
  // A queued ACK will carry this packet too; otherwise start the timer.
  if (!sack_pending_ && !aeth_queued_) {
    sack_pending_ = true;
    set_timer(QpTimer::sack, now + ep_.cfg_.protocol.rc_ack_delay);
  }
}

void Qp::rc_queue_ack() {
  sack_pending_ = false;
  set_timer(QpTimer::sack, Time::never());
  if (aeth_queued_) return;
  aeth_queued_ = true;
  PendingCtrl a;
  a.kind = PendingCtrl::ack;
  a.port = rc_ctrl_port();
  push_ctrl(a);
}

void Qp::rc_push_nak(uint8_t syndrome, uint64_t psn) {
  PendingCtrl n;
  n.kind = PendingCtrl::nak;
  n.syndrome = syndrome;
  n.psn = psn;
  n.port = rc_ctrl_port();
  push_ctrl(n);
  rc_nak_sent_ = true;
}

void Qp::rc_maybe_cnp(Time now) {
  if (cnp_sent_ && now - last_cnp_ < ep_.cfg_.protocol.cnp_interval) return;
  cnp_sent_ = true;
  last_cnp_ = now;
  PendingCtrl c;
  c.kind = PendingCtrl::cnp;
  c.port = rc_ctrl_port();
  push_ctrl(c);
  ++stats_.cnps_sent;
}

uint8_t Qp::rc_ctrl_port() const {
  const int pin = path_ ? path_->pinned() : path::PathPolicy::kNone;
  return pin == path::PathPolicy::kNone ? last_rx_port_ : path_->slot(pin).port;
}

void Qp::rc_build_control(const PendingCtrl& c, wire::Headers& h) {
  switch (c.kind) {
    case PendingCtrl::nak:
      h.bth.opcode = static_cast<uint8_t>(wire::Opcode::rc_ack);
      h.bth.psn = wire::psn24(c.psn);
      h.aeth.syndrome = c.syndrome;
      h.aeth.msn = static_cast<uint32_t>(msgs_completed_) & wire::kPsnMask;
      return;
    case PendingCtrl::cnp:
      h.bth.opcode = static_cast<uint8_t>(wire::Opcode::cnp);
      h.bth.psn = 0;
      return;
    case PendingCtrl::ack:
    case PendingCtrl::sack:  // MRC kinds: never queued by a RoCE QP
    case PendingCtrl::nack:
    case PendingCtrl::probe_sack:
      break;
  }
  // Cumulative ACK with the state as it leaves: it covers every packet
  // placed until now, so the coalescing timer and counter restart.
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::rc_ack);
  h.bth.psn = wire::psn24(rc_epsn_ - 1);
  h.aeth.syndrome = wire::aeth::kAckNoCredit;
  h.aeth.msn = static_cast<uint32_t>(msgs_completed_) & wire::kPsnMask;
  aeth_queued_ = false;
  aeth_sent_msn_ = msgs_completed_;
  rc_unacked_ = 0;
  sack_pending_ = false;
  set_timer(QpTimer::sack, Time::never());
}

}  // namespace mrc::core
