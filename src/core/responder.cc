// SPDX-License-Identifier: BSD-2-Clause
// Responder: checks and places every data packet on arrival, tracks PSNs,
// generates SACK/NACK/ACK, delivers WRITE_WITH_IMM completions in order
// (reference 3.5, 3.6, 3.7).
#include <algorithm>
#include <bit>
#include <cstring>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "wire/psn.hpp"

namespace mrc::core {

namespace {

// The WRITE a packet belongs to is [va0, va0 + dma_length), every packet but
// the last a full MTU, so this packet's [va, va + len) sits k MTUs into it,
// k = 0 for FIRST/ONLY, k >= 1 otherwise. Checks that RETH's dma_length
// agrees with this packet's kind and length and that the whole operation
// fits `mr` (the packet's own range is already inside it): a WRITE whose
// length the packets contradict, or which would run past the region, is
// refused before any of its bytes are placed. Returns 0 if consistent, else
// the AETH syndrome to refuse with. `mtu` is a power of two (modify_qp
// checks), so the arithmetic per MTU is shifts, not divisions: this runs
// for every data packet.
uint8_t check_dma_length(const wire::OpcodeInfo& info, uint64_t va, uint64_t len, uint64_t dma, uint64_t mtu,
                         const MemoryRegion& mr) {
  const uint64_t end = mr.addr + mr.length;
  const int sh = std::countr_zero(mtu);
  if (info.first && info.last) return dma == len ? 0 : wire::aeth::kNakInvalidRequest;
  if (dma <= len || dma > mr.length) return dma <= len ? wire::aeth::kNakInvalidRequest : wire::aeth::kNakRemoteAccess;
  if (info.first) return dma <= end - va ? 0 : wire::aeth::kNakRemoteAccess;  // [va, va + dma) inside
  if (info.last) {
    if (((dma - len) & (mtu - 1)) != 0) return wire::aeth::kNakInvalidRequest;
    return va + len - mr.addr >= dma ? 0 : wire::aeth::kNakRemoteAccess;  // va0 = va + len - dma >= addr
  }
  // MIDDLE: some k >= 1 with va0 = va - k*mtu >= addr, va0 + dma <= end, and
  // at least one byte of the operation after this packet (its LAST).
  const uint64_t k_hi = std::min((va - mr.addr) >> sh, (dma - len - 1) >> sh);
  const uint64_t k_lo = va + dma > end ? (va + dma - end + mtu - 1) >> sh : 0;
  return std::max<uint64_t>(k_lo, 1) <= k_hi ? 0 : wire::aeth::kNakRemoteAccess;
}

}  // namespace

void Qp::push_refusal(const PendingCtrl& trigger, uint8_t syndrome) {
  PendingCtrl n = trigger;
  n.syndrome = syndrome;
  if (ep_.cfg_.protocol.confirm_fatal) {
    n.kind = PendingCtrl::nack;
    n.code = wire::NackCode::unexp_event;
  } else {
    n.kind = PendingCtrl::nak;
  }
  push_ctrl(n);
}

void Qp::on_data(Time now, const RxMeta& meta, const wire::Parsed& p, const uint8_t* payload) {
  const wire::Headers& h = p.h;
  const wire::OpcodeInfo& info = h.info();
  if (state_ != QpState::rtr && state_ != QpState::rts) {
    ++ep_.stats_.rx_bad_state;
    ++stats_.rx_rejected;
    if (answer_fatal_ && state_ == QpState::error && ep_.cfg_.protocol.confirm_fatal) {
      // Failed on an event of our own: the requester resends to confirm the
      // NACK it got, and this is the answer (each echoes the packet it
      // answers, as the first did; push_ctrl caps them).
      PendingCtrl n;
      n.kind = PendingCtrl::nack;
      n.code = wire::NackCode::unexp_event;
      n.port = meta.port;
      n.entropy = meta.entropy;
      n.psn = wire::unwrap_psn(rx_.base(), h.bth.psn);
      n.ts = h.bth.ts ? h.tseth.timestamp : 0;
      n.arrival = now;
      push_ctrl(n);
    }
    return;
  }
  const uint64_t psn = wire::unwrap_psn(rx_.base(), h.bth.psn);
  last_rx_port_ = meta.port;
  // Receiving, but none of our own EVs confirmed for an interval (we send no
  // data, or none of it is getting through): probe one for a fresh reverse
  // EV, at most once an interval (reference 4.8). The arrival is the moment
  // to look: the condition needs data coming in, so a periodic timer would
  // only add wake-ups, one an interval for as long as data flows, each of
  // which costs a sleeping software device a context switch.
  const Duration iv = ep_.cfg_.protocol.reverse_probe_interval;
  if (now - last_delivery_ >= iv && now - last_reverse_probe_ >= iv) {
    reverse_probe_due_ = true;
    last_reverse_probe_ = now;
  }

  PendingCtrl trig;
  trig.port = meta.port;
  trig.entropy = meta.entropy;
  trig.psn = psn;
  trig.ts = h.bth.ts ? h.tseth.timestamp : 0;
  trig.mark = meta.ecn_ce ? wire::Mark::skip_once : wire::Mark::none;
  trig.arrival = now;

  // Already placed: a retransmission of something we have, so our SACK was
  // lost or late. Answer at once on a different reverse EV (reference 4.8).
  if (psn < rx_.base() || rx_.test(psn)) {
    ++stats_.duplicates_received;
    path_->rotate_control_ev(meta.port);
    // The SACK that went missing most likely left on the port of the last
    // one sent (byte-triggered SACKs follow the trigger's plane, which a
    // regular spray makes the same plane every time): refresh that port's
    // reverse EV too.
    if (last_sack_port_ != meta.port) path_->rotate_control_ev(last_sack_port_);
    want_sack(now, trig, true);
    return;
  }
  const uint64_t window = uint64_t{mpr_dest_cur_} * kMprUnit;
  if (psn - rx_.base() >= std::min<uint64_t>(window, rx_.capacity())) {
    ++ep_.stats_.rx_psn_out_of_window;
    ++stats_.rx_rejected;
    PendingCtrl n = trig;
    n.kind = PendingCtrl::nack;
    n.code = wire::NackCode::psn_oor_window;
    push_ctrl(n);
    return;
  }
  if (meta.ecn_ce || meta.trim != TrimMark::none) ep_.rx_congested_until_ = now + ep_.cfg_.protocol.base_rtt * 16;
  if (meta.trim != TrimMark::none) {
    // Trimmed by a switch: payload gone, headers intact. NACK at once so the
    // requester retransmits without waiting (reference 3.7, 3.9).
    ++stats_.trims_received;
    ep_.incast_.on_arrival(now, incast_, meta.trim == TrimMark::trimmed_lasthop);
    if (ep_.cfg_.cap_trim_nack) {
      PendingCtrl n = trig;
      n.kind = PendingCtrl::nack;
      n.code = meta.trim == TrimMark::trimmed ? wire::NackCode::trimmed : wire::NackCode::trimmed_lasthop;
      push_ctrl(n);
    }
    return;
  }

  // Memory check before a single byte moves (reference 3.6): rkey, access,
  // bounds, and a payload no larger than the path MTU.
  const uint64_t len = p.payload_len + meta.phantom_payload;
  const MemoryRegion* mr =
      len <= mtu_ ? ep_.mrs_.check_remote_write(init_.pd, h.reth.rkey, h.reth.va, len) : nullptr;
  const bool short_middle = !info.last && len != mtu_;
  // A refused WRITE: nothing placed, no state changed, a refusal queued.
  auto refuse = [&](uint8_t syndrome) {
    ++ep_.stats_.rx_access_errors;
    ++stats_.access_errors;
    ++stats_.rx_rejected;
    push_refusal(trig, syndrome);
  };
  if (!mr || short_middle) {
    refuse(mr ? wire::aeth::kNakInvalidRequest : wire::aeth::kNakRemoteAccess);
    return;
  }
  if (const uint8_t why = check_dma_length(info, h.reth.va, len, h.reth.dma_length, mtu_, *mr); why != 0) {
    refuse(why);
    return;
  }
  if (info.imm && wimm_stash_ >= attr_.max_wimm_dest) {
    // More WriteIMMs in flight than advertised: fatal (reference 3.5, 8 item
    // 22). This QP fails with the peer's invalid request as its cause (what
    // verbs reports for one); on the wire the requester is told with NACK
    // UNEXP_EVENT, the code MRC gives a fatal responder event (reference
    // 3.3), not with an AETH NAK.
    PendingCtrl n = trig;
    n.kind = PendingCtrl::nack;
    n.code = wire::NackCode::unexp_event;
    fail(now, WcStatus::rem_inv_req_err, SIZE_MAX);
    answer_fatal_ = true;
    push_ctrl(n);  // after fail(), which empties the control queue
    return;
  }

  // Place (duplicates never reach here; placement is idempotent anyway).
  // A region the application unmapped while registered cannot take the
  // bytes: refused like a bad rkey, before any state changes.
  if (mr->backed && meta.phantom_payload == 0 && p.payload_len > 0) {
    void* dst = reinterpret_cast<void*>(h.reth.va);
    if (!ep_.cfg_.place) {
      std::memcpy(dst, payload, p.payload_len);
    } else if (!ep_.cfg_.place(dst, payload, p.payload_len)) {
      ++ep_.stats_.rx_place_faults;
      refuse(wire::aeth::kNakRemoteAccess);
      return;
    }
  }
  ep_.stats_.rx_placed_bytes += len;
  rx_.set(psn);
  RxSlot& slot = rx_slot_for(psn);
  slot.flags = static_cast<uint8_t>((info.last ? kRxLast : 0) | (info.imm ? kRxImm : 0));
  slot.imm = h.imm.imm;
  slot.len = h.reth.dma_length;
  if (info.imm) ++wimm_stash_;
  ++stats_.data_packets_received;
  const uint32_t nom = nominal(static_cast<uint32_t>(p.header_len), static_cast<uint32_t>(len));
  rcvd_bytes_total_ += nom;
  ep_.incast_.on_arrival(now, incast_, false);
  if (psn != rx_.base()) {
    ++ooo_count_;
    ++stats_.ooo_received;
  }
  const uint64_t before = rx_.base();
  rx_.advance();
  if (rx_.base() != before) deliver_completions(now, before, rx_.base(), trig);
  if (state_ == QpState::error) return;

  // SACK at once on ECN-CE, a retransmission or an ack request; otherwise
  // every sack_bytes_threshold bytes, or after the coalescing delay
  // (reference 3.7, 8 item 4).
  bytes_since_sack_ += nom;
  const bool immediate = meta.ecn_ce || h.bth.rtx || h.bth.ack_req ||
                         bytes_since_sack_ >= ep_.cfg_.protocol.sack_bytes_threshold;
  want_sack(now, trig, immediate);
}

void Qp::want_sack(Time now, const PendingCtrl& trigger, bool immediate) {
  PendingCtrl c = trigger;
  c.kind = PendingCtrl::sack;
  if (immediate) {
    bytes_since_sack_ = 0;
    sack_pending_ = false;
    set_timer(QpTimer::sack, Time::never());
    push_ctrl(c);
    return;
  }
  // Coalesce: remember the latest trigger, send once data stops. The wait
  // restarts on every arrival: a timer fixed at the first one fires in the
  // middle of a sprayed message whose packets come a few hundred ns apart
  // (many QPs share the ports), doubling the SACKs the byte threshold sends.
  // sack_coalesce_max bounds it for a trickle that never reaches the
  // threshold.
  pending_sack_ = c;
  if (!sack_pending_) {
    sack_pending_ = true;
    sack_since_ = now;
  }
  // The wait for data to stop scales with this QP's own arrival gaps
  // (ProtocolConfig::sack_coalesce_gaps): a QP that gets a packet every
  // few microseconds has not stopped after one. Not while this host's
  // receive path is congested (a trimmed or ECN-marked arrival at any of
  // its QPs within 16 base RTTs): the senders' recovery then needs their
  // SACKs promptly (a 127->1 incast with the longer wait resent 0.54 % of
  // its packets for nothing, 0.06 % without).
  const ProtocolConfig& pc = ep_.cfg_.protocol;
  if (!last_arrival_.is_never()) {
    const Duration gap = now - last_arrival_;
    arrival_gap_ = arrival_gap_ == Duration{} ? gap : (arrival_gap_ * 7 + gap) / 8;
  }
  last_arrival_ = now;
  const Duration quiet = now < ep_.rx_congested_until_
                             ? pc.sack_coalesce_delay
                             : std::max(pc.sack_coalesce_delay, arrival_gap_ * pc.sack_coalesce_gaps);
  set_timer(QpTimer::sack, std::min(now + quiet, sack_since_ + pc.sack_coalesce_max));
}

void Qp::deliver_completions(Time now, uint64_t from, uint64_t to, const PendingCtrl& trig) {
  (void)now;
  // Every PSN in [from, to) is now placed, and so is everything before it:
  // a message whose LAST packet lies here is complete, in MSN order.
  bool any = false;
  for (uint64_t psn = from; psn < to; ++psn) {
    RxSlot& s = rx_slots_[psn & rx_slot_mask_];
    if (!(s.flags & kRxLast)) {
      s.flags = 0;
      continue;
    }
    ++msgs_completed_;
    any = true;
    if (s.flags & kRxImm) {
      --wimm_stash_;
      if (!complete_recv_imm(s.len, s.imm)) {
        // No receive WQE: MRC has no RNR (reference 3.1), so this is fatal.
        // The NACK names the packet that just arrived (its PSN and
        // timestamp), not the message's last PSN: that one may already have
        // been SACKed, and the requester only believes a NACK for a PSN it
        // still has outstanding, with the echo of its transmission.
        PendingCtrl n = trig;
        n.kind = PendingCtrl::nack;
        n.code = wire::NackCode::unexp_event;
        fail(now, WcStatus::rem_op_err, SIZE_MAX);
        answer_fatal_ = true;
        push_ctrl(n);
        return;
      }
    }
    s.flags = 0;
  }
  if (any && !aeth_queued_) {
    // One semantic ACK (AETH) per batch of completed messages (reference 8,
    // item 16); its MSN is filled in when it leaves, so one queued ACK covers
    // every completion until then.
    PendingCtrl a;
    a.kind = PendingCtrl::ack;
    a.port = last_rx_port_;
    aeth_queued_ = true;
    push_ctrl(a);
  }
}

bool Qp::complete_recv_imm(uint32_t byte_len, uint32_t imm) {
  // A WRITE_WITH_IMM consumes the oldest receive WQE; false if none is posted.
  if (recv_q_.empty()) return false;
  WorkCompletion wc;
  wc.wr_id = recv_q_.front().wr_id;
  recv_q_.pop_front();
  wc.cq = init_.recv_cq;
  wc.qpn = qpn_;
  wc.opcode = WcOpcode::recv_rdma_with_imm;
  wc.byte_len = byte_len;
  wc.imm = imm;
  wc.with_imm = true;
  complete(wc);
  return true;
}

void Qp::on_probe(Time now, const RxMeta& meta, const wire::Headers& h) {
  (void)now;
  if (state_ != QpState::rtr && state_ != QpState::rts) {
    ++ep_.stats_.rx_bad_state;
    return;
  }
  // Answer with a SACK carrying PR and the probe's EV (reference 3.3, PETH).
  PendingCtrl c;
  c.kind = PendingCtrl::probe_sack;
  c.port = meta.port;
  c.entropy = meta.entropy;
  c.ts = h.peth.timestamp;
  c.mark = meta.ecn_ce ? wire::Mark::skip_once : wire::Mark::none;
  c.psn = rx_.base() - 1;
  c.arrival = now;
  push_ctrl(c);
}

void Qp::build_control(Time now, const PendingCtrl& c, uint8_t port, uint8_t* hdr, Transmit& tx) {
  wire::Headers h;
  h.bth.dest_qp = attr_.dest_qpn;
  const uint64_t cack = rx_.base() - 1;
  if (roce()) {
    rc_build_control(c, h);
    const size_t hlen = wire::encode(h, std::span<uint8_t>(hdr, wire::kMaxHeaderBytes)).value();
    tx = Transmit{};
    tx.port = port;
    // The QP's one EV when it leaves on the QP's own port; a reverse EV of
    // the port otherwise (the QP's port is down).
    const int pin = path_ ? path_->pinned() : path::PathPolicy::kNone;
    int ev = pin;
    if (pin == path::PathPolicy::kNone || path_->slot(pin).port != port)
      ev = path_ ? path_->control_ev(port) : path::PathPolicy::kNone;
    if (ev != path::PathPolicy::kNone) path_->stamp(tx, ev);
    tx.peer = peer_;
    tx.tc = TrafficClass::control;
    tx.header_len = static_cast<uint16_t>(hlen);
    return;
  }
  switch (c.kind) {
    case PendingCtrl::sack:
    case PendingCtrl::probe_sack: {
      h.bth.opcode = static_cast<uint8_t>(wire::Opcode::sack);
      h.bth.psn = wire::psn24(cack);
      wire::Seth& s = h.seth;
      s.mark = static_cast<uint8_t>(c.mark);
      s.probe_response = c.kind == PendingCtrl::probe_sack;
      const int64_t off = static_cast<int64_t>(c.psn) - static_cast<int64_t>(cack);
      s.ack_psn_offset = static_cast<int16_t>(std::clamp<int64_t>(off, INT16_MIN, INT16_MAX));
      s.entropy = c.entropy;
      s.src_conn = static_cast<uint16_t>(qpn_);
      s.dst_conn = static_cast<uint16_t>(attr_.dest_qpn);
      s.cack_psn = wire::psn24(cack);
      s.cc_type = 0;
      s.mpr = (attr_.cap & qp_cap::kDynamicMpr) ? mpr_dest_cur_ : 0;
      // Bitmap right after cack, or moved up to cover the trigger when the
      // gap is wider than 64 (reference 3.7).
      uint64_t base = cack + 1;
      if (c.psn > cack + 64) base = c.psn - 63;
      s.sack_offset = static_cast<int16_t>(std::min<uint64_t>(base - cack, INT16_MAX));
      s.bitmap = rx_.extract64(cack + static_cast<uint64_t>(s.sack_offset));
      uint16_t ts = c.ts;
      if (ep_.cfg_.cap_svc_time && now > c.arrival) {
        // Service time folded into the reflected timestamp (reference 8, item 11).
        ts = static_cast<uint16_t>(ts + (now - c.arrival) / ep_.cfg_.protocol.timestamp_tick);
      }
      h.cc.reflected_ts = ts;
      h.cc.ooo_count = static_cast<uint16_t>(ooo_count_ & 0x7FFF);
      h.cc.rcvd_bytes = static_cast<uint32_t>(((rcvd_bytes_total_ + 255) / 256) & wire::kPsnMask);
      h.cc.rcv_cwnd_pen = ep_.incast_.penalty(now, incast_);
      break;
    }
    case PendingCtrl::nack: {
      h.bth.opcode = static_cast<uint8_t>(wire::Opcode::nack);
      h.bth.psn = wire::psn24(c.psn);
      h.neth.reason = static_cast<uint8_t>(c.code);
      h.neth.entropy = c.entropy;
      h.neth.src_conn = static_cast<uint16_t>(qpn_);
      h.neth.dst_conn = static_cast<uint16_t>(attr_.dest_qpn);
      h.neth.nack_psn = wire::psn24(c.psn);
      h.neth.reflected_ts = c.ts;
      h.neth.vendor = c.syndrome;  // a refused WRITE's AETH syndrome (confirm_fatal), else 0
      break;
    }
    case PendingCtrl::ack: {
      h.bth.opcode = static_cast<uint8_t>(wire::Opcode::ack);
      h.bth.psn = wire::psn24(cack);
      h.aeth.syndrome = wire::aeth::kAckNoCredit;
      h.aeth.msn = static_cast<uint32_t>(msgs_completed_) & 0xFFFFFF;
      aeth_sent_msn_ = msgs_completed_;
      aeth_queued_ = false;
      break;
    }
    case PendingCtrl::nak: {
      h.bth.opcode = static_cast<uint8_t>(wire::Opcode::ack);
      h.bth.psn = wire::psn24(c.psn);
      h.aeth.syndrome = c.syndrome;
      h.aeth.msn = static_cast<uint32_t>(msgs_completed_) & 0xFFFFFF;
      break;
    }
    case PendingCtrl::cnp: break;  // RoCE only (rc_build_control)
  }
  const size_t hlen = wire::encode(h, std::span<uint8_t>(hdr, wire::kMaxHeaderBytes)).value();
  tx = Transmit{};
  tx.port = port;
  const int ev = path_ ? path_->control_ev(port) : path::PathPolicy::kNone;
  if (ev != path::PathPolicy::kNone) path_->stamp(tx, ev);
  tx.peer = peer_;
  tx.tc = TrafficClass::control;
  tx.trimmable = false;
  if (c.kind == PendingCtrl::sack) last_sack_port_ = port;
  tx.header_len = static_cast<uint16_t>(hlen);
}

}  // namespace mrc::core
