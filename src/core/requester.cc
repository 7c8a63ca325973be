// SPDX-License-Identifier: BSD-2-Clause
// Requester: segmentation, spraying, SACK/NACK processing, loss recovery
// (reference 3.4, 3.5, 3.8, 3.11).
#include <algorithm>
#include <bit>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "wire/psn.hpp"

namespace mrc::core {

namespace {
// kLossFlight: in flight when the ACK timeout fired, but not itself older
// than the timeout; lost for recovery and CC, no evidence against its path.
// kLossSilent: expired under the ACK timeout, but nothing sent after it was
// unambiguously acknowledged either; equally no evidence against its path
// (below), only, if the peer acknowledged anything since, a reason to probe
// it.
// kLossProbe: resent as a tail loss probe, not known to be lost.
enum LossCause : uint8_t { kLossNone, kLossRule, kLossTimeout, kLossNack, kLossFlight, kLossSilent, kLossProbe, kLossLocal };
}

uint64_t Qp::window_psns() const {
  uint64_t mpr = attr_.mpr;
  // Dynamic MPR (reference 3.4): follow the responder's advertised window
  // when both sides enabled it.
  if ((attr_.cap & qp_cap::kDynamicMpr) && peer_mpr_ != 0) mpr = std::min<uint64_t>(mpr, peer_mpr_);
  const uint64_t w = mpr * kMprUnit;
  return oor_window_ ? std::min(w, oor_window_) : w;
}

size_t Qp::owner_of(uint64_t psn) const {
  for (size_t i = 0; i < sq_.size(); ++i)
    if (sq_[i].sent_pkts > 0 && psn >= sq_[i].first_psn && psn < sq_[i].first_psn + sq_[i].npkts) return i;
  return SIZE_MAX;
}

Qp::SendMsg* Qp::msg_by_msn(uint64_t msn) {
  if (sq_.empty() || msn < sq_.front().msn) return nullptr;
  const uint64_t i = msn - sq_.front().msn;
  return i < sq_.size() ? &sq_[i] : nullptr;
}

bool Qp::wants_data() const {
  if (state_ != QpState::rts) return false;
  if (roce()) return rc_resend_ < next_psn_ || sq_next_ < sq_.size();
  return probe_due_ || reverse_probe_due_ || !rtx_q_.empty() || sq_next_ < sq_.size();
}

void Qp::build_data(Time now, SendMsg& m, uint64_t psn, uint32_t index, bool rtx, int ev, uint8_t* hdr,
                    Transmit& tx) {
  const Segment seg = segment(m, index);
  const auto [first, last, imm, offset, len] = seg;
  const wire::Opcode op = wire::write_opcode(first, last, imm, false);

  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(op);
  h.bth.dest_qp = attr_.dest_qpn;
  h.bth.psn = wire::psn24(psn);
  h.bth.rtx = rtx;
  h.bth.ts = true;
  h.meth.msn = static_cast<uint16_t>(m.msn);
  h.meth.rqmsn = static_cast<uint16_t>(m.rqmsn);
  h.tseth.timestamp = ts_now(now);
  h.reth.va = m.wr.remote_addr + offset;
  h.reth.rkey = m.wr.rkey;
  h.reth.dma_length = m.wr.length;
  h.imm.imm = m.wr.imm;
  const size_t hlen = wire::header_size(h);
  const uint32_t nom = nominal(static_cast<uint32_t>(hlen), len);
  // Ask for an immediate SACK when this packet fills the window or ends the
  // queued work, so the responder does not wait for its byte trigger
  // (reference 5.1, AckReq).
  const int64_t room = static_cast<int64_t>(cc_->cwnd_bytes()) - cc_->inflight_bytes() - nom;
  const bool queue_ends = last && (sq_next_ + 1 >= sq_.size()) && rtx_q_.empty();
  h.bth.ack_req = room < static_cast<int64_t>(mtu_) || queue_ends || rtx;
  (void)wire::encode(h, std::span<uint8_t>(hdr, wire::kMaxHeaderBytes));

  const path::EvSlot& slot = path_->slot(ev);
  tx.port = slot.port;
  path_->stamp(tx, ev);
  tx.peer = peer_;
  tx.tc = rtx ? TrafficClass::data_rtx : TrafficClass::data;
  tx.trimmable = !(attr_.cap & qp_cap::kTrimNackDestUnsupported);
  tx.header_len = static_cast<uint16_t>(hlen);
  set_payload(m, offset, len, tx);

  SendRecord& r = rec_for_send(psn);
  if (!rtx) {
    r = SendRecord{};
    r.msn = m.msn;
    r.index = index;
    r.psn_tag = static_cast<uint16_t>(psn);
    if (ep_.cfg_.protocol.path_fifo_loss) {
      if (ev_last_psn_.size() <= static_cast<size_t>(ev)) ev_last_psn_.resize(path_->size(), 0);
      uint64_t& prev = ev_last_psn_[static_cast<size_t>(ev)];
      if (prev != 0 && psn - (prev - 1) <= UINT32_MAX) r.prev_on_ev = static_cast<uint32_t>(psn - (prev - 1));
      prev = psn + 1;
    }
  }
  r.tx_seq = ++tx_seq_;
  r.sent_at = now;
  last_send_ = now;
  r.nominal = static_cast<uint16_t>(nom);
  r.ev = static_cast<int16_t>(ev);
  r.prev_ts = r.ts;
  r.ts = h.tseth.timestamp;
  if (rtx && r.challenge == kChallengeQueued) r.challenge = kChallengeSent;
  ++r.tx_count;
  r.state = PktState::inflight;
  const bool was_empty = fifo_.empty();
  fifo_.push_back(FifoEntry{psn, r.tx_seq});
  cc_->on_send(now, nom);
  path_->on_sent(ev);
  if (was_empty) rearm_recovery(now);
}

Qp::SendResult Qp::poll_data(Time now, uint32_t port_mask, uint8_t* hdr, Transmit& tx) {
  if (state_ != QpState::rts) return SendResult::idle;
  if (roce()) return rc_poll_data(now, port_mask, hdr, tx);

  // 1. Reliability probes: ASSUMED_BAD EVs (reference 4.6) and reverse-path refresh (4.8).
  if (probe_due_ || reverse_probe_due_) {
    int s = path::PathPolicy::kNone;
    if (probe_due_) {
      s = path_->take_due_probe(now, port_mask);
      if (s == path::PathPolicy::kNone && path_->next_probe() > now) probe_due_ = false;
    }
    if (s == path::PathPolicy::kNone && reverse_probe_due_) {
      s = path_->random_active(port_mask);
      if (s != path::PathPolicy::kNone) reverse_probe_due_ = false;
    }
    if (s != path::PathPolicy::kNone) {
      wire::Headers h;
      h.bth.opcode = static_cast<uint8_t>(wire::Opcode::probe);
      h.bth.dest_qp = attr_.dest_qpn;
      h.bth.psn = wire::psn24(next_psn_);
      h.peth.probe_id = static_cast<uint16_t>(s);
      h.peth.src_conn = static_cast<uint16_t>(qpn_);
      h.peth.dst_conn = static_cast<uint16_t>(attr_.dest_qpn);
      h.peth.timestamp = ts_now(now);
      const size_t hlen = wire::encode(h, std::span<uint8_t>(hdr, wire::kMaxHeaderBytes)).value();
      const path::EvSlot& slot = path_->slot(s);
      path_->on_probe_sent(s, h.peth.timestamp, now);
      tx = Transmit{};
      tx.port = slot.port;
      path_->stamp(tx, s);
      tx.peer = peer_;
      // A probe asks whether the path works, not how long its data queue
      // is: it travels in the control class, so that congestion, which can
      // drop a data-class probe outright (it has no payload to trim), does
      // not read as a failed path.
      tx.tc = TrafficClass::control;
      tx.header_len = static_cast<uint16_t>(hlen);
      ++stats_.probes_sent;
      return SendResult::sent;
    }
  }

  if (path_->sendable_ports() == 0) {
    arm_stall_timer(now);
    return SendResult::blocked;
  }
  if ((path_->sendable_ports() & port_mask) == 0) return SendResult::ports_busy;

  // 2. Retransmissions, oldest first, each on an EV other than the one that lost it.
  size_t beyond_window = 0;
  while (!rtx_q_.empty()) {
    const uint64_t psn = rtx_q_.front();
    if (psn < snd_una_ || acked_.test(psn) || rec(psn).state != PktState::lost) {
      rtx_q_.pop_front();
      continue;
    }
    if (psn - snd_una_ >= window_psns()) {
      // Dynamic MPR shrank the responder's window below this PSN (reference
      // 3.4): it waits at the back until the window reaches it. The oldest
      // unacknowledged PSN is always inside, so something stays sendable or
      // in flight.
      if (++beyond_window > rtx_q_.size()) break;
      rtx_q_.pop_front();
      rtx_q_.push_back(psn);
      continue;
    }
    SendRecord& r = rec(psn);
    // The tail probe goes out whatever the window says (as TCP's loss
    // probe does): it is one packet, sent because nothing came back, and a
    // window that silence has closed would otherwise hold it until the ACK
    // timeout it exists to beat.
    const bool probe = psn == tail_probe_psn_;
    if (!probe && (!window_allows(r.nominal) || pace(now, r.nominal))) return SendResult::blocked;
    const int ev = path_->select(now, port_mask, r.ev);
    if (ev == path::PathPolicy::kNone) return SendResult::ports_busy;
    SendMsg* m = msg_by_msn(r.msn);
    rtx_q_.pop_front();
    if (!m) continue;  // cannot happen: unacked PSNs keep their message queued
    if (probe) tail_probe_psn_ = 0;
    build_data(now, *m, psn, r.index, true, ev, hdr, tx);
    ++stats_.retransmissions;
    return SendResult::sent;
  }

  // 3. New data, within the MPR window, the WIMM limit and the window.
  if (sq_next_ >= sq_.size()) return SendResult::idle;
  if (next_psn_ - snd_una_ >= window_psns()) return SendResult::blocked;
  SendMsg& m = sq_[sq_next_];
  const bool imm = m.wr.opcode == WrOpcode::rdma_write_with_imm;
  if (imm && !m.imm_counted && imm_inflight_ >= attr_.max_wimm) return SendResult::blocked;
  const uint64_t remaining = m.wr.length - uint64_t{m.sent_pkts} * mtu_;
  const uint32_t nom = nominal(40, static_cast<uint32_t>(std::min<uint64_t>(mtu_, remaining)));
  if (!window_allows(nom) || pace(now, nom)) return SendResult::blocked;
  int ev = path::PathPolicy::kNone;
  if (burst_left_ > 0 && path_->can_continue(burst_ev_, port_mask)) {
    ev = burst_ev_;
    --burst_left_;
  } else {
    ev = path_->select(now, port_mask, path::PathPolicy::kNone);
    if (ev == path::PathPolicy::kNone) return SendResult::ports_busy;
    burst_ev_ = ev;
    burst_left_ = burst_packets() - 1;
  }
  if (m.sent_pkts == 0) {
    m.first_psn = next_psn_;
    if (imm) {
      m.imm_counted = true;
      ++imm_inflight_;
      stats_.max_wimm_inflight = std::max<uint64_t>(stats_.max_wimm_inflight, imm_inflight_);
    }
  }
  const uint64_t psn = next_psn_++;
  const uint32_t index = m.sent_pkts++;
  if (m.sent_pkts == m.npkts) ++sq_next_;
  build_data(now, m, psn, index, false, ev, hdr, tx);
  tx.burst_more = burst_left_ > 0;
  ++stats_.data_packets_sent;
  stats_.max_psn_span = std::max(stats_.max_psn_span, next_psn_ - snd_una_);
  return SendResult::sent;
}

// ----------------------------------------------------------------- feedback

// Keeps the three largest transmission sequence numbers known to have been
// delivered, ascending (the loss rule's reference points).
void Qp::note_delivered_tx(uint64_t s) {
  auto& t = top_acked_tx_;
  if (s > t[2]) {
    t[0] = t[1];
    t[1] = t[2];
    t[2] = s;
  } else if (s > t[1]) {
    t[0] = t[1];
    t[1] = s;
  } else if (s > t[0]) {
    t[0] = s;
  }
}

void Qp::ack_psn(Time now, uint64_t psn) {
  if (!acked_.set(psn)) return;
  acked_bytes_ += rec(psn).nominal;
  last_acked_at_ = now;
  if (const SendMsg* m = msg_by_msn(rec(psn).msn)) stats_.bytes_delivered += segment(*m, rec(psn).index).len;
  // A new delivery proves the peer and a path alive: the retry counter, the
  // RTO backoff and the tail probe start over.
  retry_count_ = 0;
  timeout_streak_ = 0;
  tail_probes_sent_ = 0;
  SendRecord& r = rec(psn);
  // Only an unambiguous delivery (sent once) tells the loss rule which
  // transmission got through, and how long a healthy packet can take.
  if (r.tx_count == 1 && r.state == PktState::inflight) {
    note_delivered_tx(r.tx_seq);
    if (collect_fifo_evidence_ && r.prev_on_ev != 0) fifo_evidence_.push_back(psn);
    if (sack_trigger_ && *sack_trigger_ != psn && r.ev >= 0) path_->on_acked(now, r.ev);
    // How long it took to arrive, at least: the SACK before this one did
    // not report it yet. (Not now - sent_at: when SACKs are lost or late,
    // packets that arrived long ago are confirmed late, and their age says
    // nothing about the paths; taken at face value it inflated the loss age
    // past the ACK timeout on a lossy link.)
    if (prev_sack_at_ > r.sent_at) reorder_.on_delivery_age(now, prev_sack_at_ - r.sent_at);
  }
  // A retransmission not sent yet is skipped (its bytes were already taken
  // out of flight).
  if (spurious_loss(now, r)) on_spurious_loss(now, r);
  r.state = PktState::acked;
}

// True if acknowledging `r` now proves its last loss declaration wrong: the
// packet was declared lost by the loss rule or the ACK timeout, and either
// its retransmission has not left yet, or it left so recently that no
// path could have carried it there and its SACK back (three quarters of the
// smallest RTT seen), so what arrived was the original.
bool Qp::spurious_loss(Time now, const SendRecord& r) const {
  if (r.loss_cause != kLossRule && r.loss_cause != kLossTimeout) return false;
  if (r.state == PktState::lost) return true;
  return r.state == PktState::inflight && reorder_.min_rtt() > Duration{} &&
         now - r.sent_at < reorder_.min_rtt() * 3 / 4;
}

// Declared lost, yet the earlier copy arrived: the reordering was wider than
// the loss age allowed for (widen it), and neither the EV the loss was
// blamed on nor the window deserved their penalties (undo both).
void Qp::on_spurious_loss(Time now, SendRecord& r) {
  ++stats_.spurious_losses;
  if (r.loss_cause == kLossRule) reorder_.on_spurious(now);
  if (r.lost_ev != path::PathPolicy::kNone) path_->on_false_loss(now, r.lost_ev);
  cc_->on_spurious_loss(now, r.nominal);
  r.loss_cause = kLossNone;
  r.lost_ev = path::PathPolicy::kNone;
}

void Qp::advance_una(Time now) {
  (void)now;
  const uint64_t before = snd_una_;
  acked_.advance();
  snd_una_ = acked_.base();
  if (snd_una_ == before) return;
  complete_acked_messages();
}

void Qp::complete_acked_messages() {
  // Complete messages whose every PSN is below snd_una_, in order.
  while (!sq_.empty()) {
    SendMsg& m = sq_.front();
    if (m.sent_pkts < m.npkts || m.first_psn + m.npkts > snd_una_) break;
    if (m.imm_counted) --imm_inflight_;
    stats_.bytes_acked += m.wr.length;
    if (m.wr.signaled) {
      WorkCompletion wc;
      wc.wr_id = m.wr.wr_id;
      wc.cq = init_.send_cq;
      wc.qpn = qpn_;
      wc.opcode = WcOpcode::rdma_write;
      wc.byte_len = m.wr.length;
      complete(wc);
    }
    release_source(m);
    sq_.pop_front();
    --sq_next_;
  }
}

void Qp::on_sack(Time now, const RxMeta& meta, const wire::Headers& h) {
  (void)meta;
  if (state_ != QpState::rts) {
    ++ep_.stats_.rx_bad_state;
    return;
  }
  const wire::Seth& s = h.seth;
  const uint64_t cack = wire::unwrap_psn(snd_una_ - 1, s.cack_psn);
  if (cack + 1 > next_psn_ || cack + 1 + window_psns() < snd_una_) {
    ++ep_.stats_.rx_bad_ack;  // acknowledges PSNs never sent, or absurdly old
    return;
  }
  const wire::Mark mark = static_cast<wire::Mark>(s.mark & 3);

  // Before anything changes, the SACK must prove it answers something we
  // sent: a probe answer must match an outstanding probe (EV and
  // timestamp), and any other SACK must name as its trigger a PSN that is
  // outstanding, with a timestamp echo that a transmission of that PSN can
  // have produced (reference 3.3: the echo plus at most the responder's
  // service time). A blind forger has to hit the PSN window and the 16-bit
  // timestamp. A trigger already acknowledged is a late or reordered SACK:
  // everything it could tell was told by a newer one.
  const uint64_t trig = cack + static_cast<uint64_t>(static_cast<int64_t>(s.ack_psn_offset));
  int probe_slot = path::PathPolicy::kNone;
  bool stale = false;
  if (s.probe_response) {
    probe_slot = path_->find(s.entropy);
    using Answer = path::PathPolicy::ProbeAnswer;
    const Answer a = probe_slot == path::PathPolicy::kNone
                         ? Answer::foreign
                         : path_->probe_answer(probe_slot, h.cc.reflected_ts, now, ep_.cfg_.protocol.timestamp_tick);
    if (a != Answer::expected) {
      // The second copy's answer of a confirming probe comes back after the
      // first cleared the suspect: late, not bad.
      ++(a == Answer::repeat ? ep_.stats_.rx_stale_ack : ep_.stats_.rx_bad_ack);
      return;
    }
  } else if (trig >= next_psn_ || trig + window_psns() < snd_una_) {
    ++ep_.stats_.rx_bad_ack;
    return;
  } else if (trig < snd_una_ && rec(trig).psn_tag != static_cast<uint16_t>(trig)) {
    stale = true;  // its send record now holds a later PSN: nothing to check the echo against
  } else if (const SendRecord& r = rec(trig); !echo_plausible(r.ts, r.sent_at, h.cc.reflected_ts, now)) {
    // (A trigger already acknowledged still names its record: such a SACK
    // carries news, later PSNs in its bitmap; dropping it slowed the loss
    // rule on a failed T1, 803 packets into dead links against 701 in the
    // default scenario.)
    if (r.tx_count == 1) {
      ++ep_.stats_.rx_bad_ack;
      return;
    }
    stale = true;  // echoes an earlier transmission of a resent PSN
    // The responder answers a duplicate at once, echoing its stamp: an echo
    // of the copy before the last (at or after its stamp, before the
    // retransmission's) proves that copy arrived, so a loss declared for it
    // was spurious. Its age is how late a healthy packet can be: the loss
    // rule learns the spread it missed.
    SendRecord& w = rec(trig);
    const uint16_t gap = static_cast<uint16_t>(w.ts - w.prev_ts);
    const uint16_t ahead = static_cast<uint16_t>(h.cc.reflected_ts - w.prev_ts);
    if ((w.loss_cause == kLossRule || w.loss_cause == kLossTimeout) && ahead < gap) {
      reorder_.on_delivery_age(now, ep_.cfg_.protocol.timestamp_tick *
                                        static_cast<uint16_t>(ts_now(now) - w.prev_ts));
      on_spurious_loss(now, w);
    }
  }
  if (stale) {
    // A late SACK: the newer feedback already told its acknowledgements and
    // verdicts. Only its receive clock still counts, bounded by what has
    // been acknowledged, so the window's accounting stays whole.
    ++ep_.stats_.rx_stale_ack;
    credit_rcvd_clock(now, h);
    return;
  }
  ++stats_.sacks_received;
  if (s.mpr != 0) {
    peer_mpr_ = s.mpr;
    oor_window_ = 0;  // the responder said what its window is
  }

  // The triggering packet: its EV gets the path verdict, its timestamp the RTT.
  bool rtt_valid = false;
  Duration rtt;
  if (s.probe_response) {
    path_->on_probe_response(now, probe_slot, mark);
  } else {
    int slot = path::PathPolicy::kNone;
    if (trig >= snd_una_ && !acked_.test(trig)) {  // below snd_una_ the record may hold another PSN
      const SendRecord& r = rec(trig);
      if (r.ts == h.cc.reflected_ts) {
        // The echo names this transmission: exact RTT from the send record,
        // and an unambiguous delivery for the loss rule even when the packet
        // was resent (bitmap deliveries of resent packets are ambiguous; under
        // heavy retransmission they would starve the rule).
        slot = r.ev;
        rtt = now - r.sent_at;
        rtt_valid = true;
        note_delivered_tx(r.tx_seq);
      } else {
        // The responder folded its service time into the echo (reference 8,
        // item 11): timestamp arithmetic gives the RTT without it. It can
        // never exceed the time since the last transmission; a larger value
        // means the echo belongs to an earlier transmission (or wrapped), and
        // one bad small sample would shrink NSCC's base RTT for good.
        const uint16_t d = static_cast<uint16_t>(ts_now(now) - h.cc.reflected_ts);
        rtt = ep_.cfg_.protocol.timestamp_tick * d;
        rtt_valid = rtt <= now - r.sent_at + ep_.cfg_.protocol.timestamp_tick && rtt > Duration{};
      }
    }
    if (slot == path::PathPolicy::kNone) slot = path_->find(s.entropy);
    if (slot != path::PathPolicy::kNone) {
      path_->on_delivered(now, slot, mark);
      if (mark == wire::Mark::none) path_->adopt_control_ev(slot);
      last_delivery_ = now;
    }
  }

  // Cumulative part, then the bitmap (bits are cumulative knowledge: a 0 does
  // not mean "lost", reference 3.7).
  collect_fifo_evidence_ = ep_.cfg_.protocol.path_fifo_loss;
  if (ep_.cfg_.protocol.ev_recycle && !s.probe_response) sack_trigger_ = trig;
  for (uint64_t psn = snd_una_; psn <= cack; ++psn) ack_psn(now, psn);
  const uint64_t base = cack + static_cast<uint64_t>(static_cast<int64_t>(s.sack_offset));
  for (uint64_t bits = s.bitmap; bits != 0; bits &= bits - 1) {
    const uint64_t psn = base + static_cast<uint64_t>(std::countr_zero(bits));
    if (psn >= snd_una_ && psn < next_psn_) ack_psn(now, psn);
  }
  collect_fifo_evidence_ = false;
  sack_trigger_.reset();
  // The responder built the bitmap from its receive state when the SACK
  // left (reference 3.7): a 0 bit in it is a PSN not received by then.
  if (!fifo_evidence_.empty()) declare_path_fifo_losses(now, base, base + 64);
  advance_una(now);
  prev_sack_at_ = now;

  // Congestion control from the cumulative rcvd_bytes clock (reference 5.2).
  const uint64_t newly = take_rcvd_credit(h);
  cc::AckInfo ai;
  ai.now = now;
  ai.newly_rcvd_bytes = newly;
  ai.ecn_marked = mark != wire::Mark::none;
  ai.rtt_valid = rtt_valid && !s.probe_response;
  if (ai.rtt_valid) reorder_.on_rtt(rtt);
  ai.rtt = rtt;
  ai.rcv_cwnd_pen = h.cc.rcv_cwnd_pen;
  ai.restore_cwnd = h.cc.restore_cwnd;
  cc_->on_ack(ai);

  detect_losses(now);
  rearm_recovery(now);
}

// The peer's cumulative rcvd_bytes clock (reference 5.2), unwrapped, and the
// share of it not yet credited to the controller. The peer reports it; we
// know what was acknowledged. Credit never exceeds the bytes acknowledged
// so far (each PSN once, plus the clock's 256-byte rounding): a forged or
// corrupt clock would otherwise drive inflight far below zero, and a window
// that never limits again switches congestion control off. Credit held back
// is given once the acks arrive. (Clamping to inflight instead would lose
// the credit of a packet declared lost that arrives after all, and the
// window would leak shut.)
uint64_t Qp::take_rcvd_credit(const wire::Headers& h) {
  // Unwrap the 24-bit clock (256-byte units) around what has been
  // acknowledged, not around the last clock seen: one absurd value (forged
  // or corrupt) then cannot make every later genuine clock look old.
  const uint64_t ref = (acked_bytes_ + 255) / 256;
  const uint32_t clock = h.cc.rcvd_bytes & wire::kPsnMask;
  uint32_t ahead = (clock - static_cast<uint32_t>(ref)) & wire::kPsnMask;
  uint64_t units = ref;
  if (ahead < (1u << 23)) units += ahead;
  else if (const uint64_t back = (1u << 24) - ahead; back <= ref) units -= back;
  else units = 0;
  rcvd_reported_ = std::max(rcvd_reported_, units * 256);
  const uint64_t limit = std::min(rcvd_reported_, acked_bytes_ + 255);
  if (limit <= rcvd_credited_) return 0;
  const uint64_t credit = limit - rcvd_credited_;
  rcvd_credited_ = limit;
  return credit;
}

void Qp::credit_rcvd_clock(Time now, const wire::Headers& h) {
  cc::AckInfo ai;
  ai.now = now;
  ai.newly_rcvd_bytes = take_rcvd_credit(h);
  if (ai.newly_rcvd_bytes == 0) return;
  cc_->on_ack(ai);
}

void Qp::on_nack(Time now, const wire::Headers& h) {
  if (state_ != QpState::rts) {
    ++ep_.stats_.rx_bad_state;
    return;
  }
  const wire::Neth& n = h.neth;
  const auto code = static_cast<wire::NackCode>(n.reason);
  if (!wire::nack_code_known(code)) {
    // A reason this implementation does not know cannot be acted on safely
    // (retrying might repeat whatever the peer objected to; failing would
    // let any unknown byte kill the QP): drop it, counted as malformed.
    ++ep_.stats_.rx_malformed;
    return;
  }
  // A NACK, fatal or not, must name a PSN that is outstanding and echo the
  // timestamp of its latest transmission (the responder reflects TSETH
  // unchanged in NETH), or it changes nothing. A fatal one that fails this
  // is counted apart: on a live connection it is an attempt to kill it.
  const bool fatal = !wire::nack_is_retriable(code);
  uint64_t& bad = fatal ? ep_.stats_.rx_nak_unconfirmed : ep_.stats_.rx_bad_ack;
  uint64_t& stale = fatal ? ep_.stats_.rx_nak_unconfirmed : ep_.stats_.rx_stale_ack;
  const uint64_t psn = wire::unwrap_psn(snd_una_, n.nack_psn);
  if (psn + window_psns() < snd_una_ || psn >= next_psn_) {
    ++bad;
    return;
  }
  if (psn < snd_una_ || acked_.test(psn)) {
    ++stale;
    return;
  }
  SendRecord& r = rec(psn);
  if (r.ts != n.reflected_ts) {
    ++stale;  // names an older transmission (or a forger's guess)
    return;
  }
  ++stats_.nacks_received;
  if (fatal) {
    on_fatal_nack(now, psn, n.vendor);
    return;
  }
  if (r.state != PktState::inflight) return;  // already being recovered
  if (r.tx_count > 1 && retry_count_ >= attr_.retry_linear && !wire::nack_is_trim(code)) {
    // The responder refuses a resent packet again, and nothing has been
    // delivered through the linear retries: it cannot take this PSN now (a
    // resource that stays short, or a window stuck behind a hole that a
    // forged SACK covered). Resending each refusal at once would repeat it
    // every round trip for as long as that lasts, with retry_exp 25 forever.
    // The packet stays in flight instead and the ACK timeout resends it,
    // backing off as it does for silence. Trims are excepted: they are
    // congestion feedback on a packet that never arrived.
    ++stats_.nacks_deferred;
    (void)count_retry(now);
    return;
  }
  if (code == wire::NackCode::psn_oor_window) {
    // The responder's window ends at or below this PSN (a dynamic-MPR
    // shrink no SACK has told us of yet, or an MPR above its MPR_DEST).
    // Until a SACK says otherwise, stay below it, or this PSN and the ones
    // after it would be resent into the same refusal over and over.
    const uint64_t limit = std::max<uint64_t>(kMprUnit, (psn - snd_una_) / kMprUnit * kMprUnit);
    oor_window_ = oor_window_ ? std::min(oor_window_, limit) : limit;
  }
  if (code == wire::NackCode::trimmed && r.ev != path::PathPolicy::kNone) path_->on_trimmed(now, r.ev);
  if (code == wire::NackCode::trimmed_lasthop) path_->on_trimmed_last_hop(now);
  cc::NackInfo ni;
  ni.now = now;
  ni.nominal_bytes = r.nominal;
  ni.code = code;
  const uint16_t d = static_cast<uint16_t>(ts_now(now) - n.reflected_ts);
  ni.rtt = ep_.cfg_.protocol.timestamp_tick * d;
  ni.rtt_valid = r.tx_count == 1;
  cc_->on_nack(ni);
  r.state = PktState::lost;
  r.loss_cause = kLossNack;
  rtx_q_.push_back(psn);
  ++stats_.losses_nack;
  // Retriable NACKs draw on the QP's retry counter (reference 3.3).
  if (!count_retry(now)) return;
  rearm_recovery(now);
}

// The packet never left the host: the host's own queue is full, which is
// congestion at the first hop, not the path. Resent at once (as a trimmed
// packet would be, and congestion control hears of it the same way); its EV
// keeps its standing. Only the transmission just built qualifies: the
// record's stamp must be this header's.
void Qp::on_send_refused(Time now, uint32_t psn24, uint16_t ts) {
  if (state_ != QpState::rts || roce()) return;
  const uint64_t psn = wire::unwrap_psn(snd_una_, psn24);
  if (psn < snd_una_ || psn >= next_psn_ || acked_.test(psn)) return;
  SendRecord& r = rec(psn);
  if (r.state != PktState::inflight || r.ts != ts) return;
  cc::NackInfo ni;
  ni.now = now;
  ni.nominal_bytes = r.nominal;
  ni.code = wire::NackCode::trimmed;
  ni.rtt_valid = false;
  cc_->on_nack(ni);
  r.state = PktState::lost;
  r.loss_cause = kLossLocal;
  rtx_q_.push_back(psn);
  ++stats_.losses_local;
  rearm_recovery(now);
}

void Qp::on_aeth(Time now, const wire::Headers& h) {
  if (state_ != QpState::rts) {
    ++ep_.stats_.rx_bad_state;
    return;
  }
  if (wire::aeth::is_nak(h.aeth.syndrome)) {
    on_fatal_nak(now, wire::unwrap_psn(snd_una_, h.bth.psn), h.aeth.syndrome);
    return;
  }
  // Semantic ACK: every message up to MSN is placed, so all its PSNs
  // arrived, and the responder's cumulative PSN (BTH) has passed the
  // message's last packet. Both must name what we sent: a message whose
  // packets all left, and a PSN in [its last packet, next_psn_).
  if (sq_.empty()) {
    ++ep_.stats_.rx_stale_ack;
    return;
  }
  const uint32_t ahead = (h.aeth.msn - static_cast<uint32_t>(sq_.front().msn)) & 0xFFFFFF;
  if (ahead >= 0x800000) {
    // An MSN before the oldest message still queued: an ACK for messages
    // already completed (SACKs got there first), late, not bad.
    ++ep_.stats_.rx_stale_ack;
    return;
  }
  const uint64_t msn = sq_.front().msn + ahead;
  const SendMsg* m = msg_by_msn(msn);
  if (!m || m->sent_pkts < m->npkts) {
    ++ep_.stats_.rx_bad_ack;
    return;
  }
  const uint64_t last = m->first_psn + m->npkts - 1;
  const uint64_t cack = wire::unwrap_psn(snd_una_, h.bth.psn);
  if (cack < last || cack >= next_psn_) {
    ++ep_.stats_.rx_bad_ack;
    return;
  }
  for (uint64_t psn = snd_una_; psn <= last; ++psn) ack_psn(now, psn);
  advance_una(now);
  detect_losses(now);
  rearm_recovery(now);
}

namespace {
// The completion status of a fatal remote error, from the AETH syndrome
// (an AETH NAK's, or the one a confirming responder puts in NETH's vendor
// byte; anything else, e.g. a plain UNEXP_EVENT, is an operational error).
WcStatus fatal_status(uint8_t syndrome) {
  if (syndrome == wire::aeth::kNakRemoteAccess) return WcStatus::rem_access_err;
  if (syndrome == wire::aeth::kNakInvalidRequest) return WcStatus::rem_inv_req_err;
  return WcStatus::rem_op_err;
}
}  // namespace

void Qp::on_fatal_nak(Time now, uint64_t psn, uint8_t syndrome) {
  // An AETH NAK the requester cannot retry (access, invalid request, remote
  // operational error): the WR that owns the PSN fails, the rest flush.
  // It must name a PSN that is outstanding (AETH carries no timestamp, so
  // the PSN is all a forger has to guess: a 24-bit value inside the window).
  // An MRC QP that confirms fatal errors believes none: its peer refuses
  // with an echoing NACK instead (ProtocolConfig::confirm_fatal).
  const size_t failing = psn >= snd_una_ && psn < next_psn_ && !acked_.test(psn) ? owner_of(psn) : SIZE_MAX;
  if (failing == SIZE_MAX || (!roce() && ep_.cfg_.protocol.confirm_fatal)) {
    ++ep_.stats_.rx_nak_unconfirmed;  // forged, stale, or unverifiable: ignore
    return;
  }
  fail(now, fatal_status(syndrome), failing);
}

void Qp::on_fatal_nack(Time now, uint64_t psn, uint8_t syndrome) {
  SendRecord& r = rec(psn);
  if (!ep_.cfg_.protocol.confirm_fatal || r.challenge == kChallengeSent) {
    // The echo names a transmission sent after an earlier believed NACK (or
    // the reference mode believes the first): the peer confirmed.
    fail(now, fatal_status(syndrome), owner_of(psn));
    return;
  }
  if (r.challenge == kChallengeQueued) {
    ++ep_.stats_.rx_stale_ack;  // a copy of the NACK already being confirmed
    return;
  }
  // The challenge: resend the packet with a fresh stamp. The responder
  // refuses it again and echoes that stamp, which an attacker who cannot
  // see this transmission does not know; a forged NACK thus costs one
  // retransmission. Not a loss: no retry counter step, no path or window
  // verdict, only the packet's bytes leave the inflight count.
  r.challenge = kChallengeQueued;
  ++stats_.fatal_challenges;
  if (r.state != PktState::inflight) return;  // already queued for a resend: that one confirms
  cc::NackInfo ni;
  ni.now = now;
  ni.nominal_bytes = r.nominal;
  ni.code = wire::NackCode::unexp_event;
  cc_->on_nack(ni);
  r.state = PktState::lost;
  r.loss_cause = kLossNack;
  rtx_q_.push_back(psn);
  rearm_recovery(now);
}

// ----------------------------------------------------------------- loss recovery

// Probe timeout (RFC 8985's PTO): two smoothed RTTs, at least the unloaded
// loss age, and always well inside the ACK timeout it is meant to beat;
// doubled for each probe already sent in this silence.
Duration Qp::tail_probe_timeout() const {
  const ProtocolConfig& pc = ep_.cfg_.protocol;
  const Duration pto = std::max(reorder_.srtt() * 2, pc.base_rtt + pc.reorder_allowance);
  return std::min(pto, rto() / 2) * (int64_t{1} << std::min<uint32_t>(tail_probes_sent_, 16));
}

// Probes are due while packets are in flight and no delivery has been seen
// since, up to ProtocolConfig::tail_probes per silence. One fires only when
// nothing left for a probe timeout, which happens at the tail of a
// transfer, or when the window is full of packets that were all lost (a
// heavy incast drops the trimmed headers of a window's last packets), or
// when the SACKs are what got lost: each probe's duplicate makes the
// responder answer on a fresh reverse EV (reference 4.8), so more than one
// try makes a dead reverse set cost probe timeouts, not the ACK timeout.
bool Qp::tail_probe_due() const { return tail_probes_sent_ < ep_.cfg_.protocol.tail_probes && !fifo_.empty(); }

uint32_t Qp::burst_packets() const {
  const ProtocolConfig& pc = ep_.cfg_.protocol;
  if (pc.ev_burst <= 1 || pc.ev_burst_bytes == 0) return std::max<uint32_t>(1, pc.ev_burst);
  const uint32_t per_packet = mtu_ + static_cast<uint32_t>(wire::kMaxPlainHeaderBytes) + 4 /*ICRC*/;
  return std::clamp<uint32_t>(pc.ev_burst_bytes / per_packet, 1, pc.ev_burst);
}

bool Qp::retry_exhausted() const {
  if (attr_.retry_exp >= 25) return false;  // 25 = retry forever (reference 3.8)
  return retry_count_ > uint32_t{attr_.retry_linear} + attr_.retry_exp;
}

bool Qp::count_retry(Time now) {
  ++retry_count_;
  if (!retry_exhausted()) return true;
  fail(now, WcStatus::retry_exc_err, 0);
  return false;
}

void Qp::declare_lost(Time now, uint64_t psn, int why) {
  SendRecord& r = rec(psn);
  r.state = PktState::lost;
  r.loss_cause = static_cast<uint8_t>(why);
  r.lost_ev = why == kLossRule || why == kLossTimeout ? r.ev : path::PathPolicy::kNone;
  rtx_q_.push_back(psn);
  if (why == kLossRule) ++stats_.losses_rule;
  else ++stats_.losses_timeout;
  // Untrimmed loss: assume the path failed (reference 3.11).
  if (r.ev != path::PathPolicy::kNone && why != kLossFlight && why != kLossSilent) path_->on_lost(now, r.ev);
  cc_->on_inferred_loss(now, r.nominal);
}

uint64_t Qp::loss_rule_evidence() const {
  const uint32_t n = std::min<uint32_t>(3, std::max<uint32_t>(1, ep_.cfg_.protocol.reorder_packets));
  return top_acked_tx_[3 - n];
}

// The send-order FIFO makes both rules O(1) amortized: along it, transmission
// sequence numbers rise and ages fall, so once the front entry fails a rule
// every later entry fails it too.
void Qp::detect_losses(Time now) {
  const ProtocolConfig& pc = ep_.cfg_.protocol;
  const uint64_t third = loss_rule_evidence();
  const Duration age = loss_age(now);
  const Duration tail_age = tail_loss_age(age);
  while (!fifo_.empty()) {
    const FifoEntry e = fifo_.front();
    if (!in_flight(e)) {
      fifo_.pop_front();
      continue;
    }
    SendRecord& r = rec(e.psn);
    // Loss rule (reference 8, item 5): enough later-sent packets SACKed and
    // older than any plausible reordering. Near the tail of a transfer fewer
    // packets follow a hole, so a single later delivery also suffices once
    // the packet is twice as old (RACK-like), or half the ACK timeout if
    // that comes first, but never younger than the loss age itself (a
    // loaded 3-tier fabric's healthy packets outlive half a 65 us ACK
    // timeout: capped there, 1.9 % of the data was resent for nothing);
    // only a lost final packet is left to the ACK timeout. (The loss age
    // itself stays under the ACK timeout: Qp::loss_age.)
    const Duration in_flight = now - r.sent_at;
    if ((third != 0 && e.tx_seq < third && in_flight >= age) ||
        (e.tx_seq < top_acked_tx_[2] && in_flight >= tail_age)) {
      fifo_.pop_front();
      declare_lost(now, e.psn, kLossRule);
      continue;
    }
    break;
  }
  // When healthy packets outlive half the ACK timeout (a loaded fabric's
  // spread), the loss rule waits that long too; a packet that old is still
  // reason enough to stop using its path until a probe, which travels in
  // the control class and comes back in about a base RTT, vouches for it.
  // On a dead path the probe fails and every packet in flight on it is
  // declared lost at once (declare_dead_path_losses), well before the loss
  // age; on a congested one the EV is back a round trip later.
  if (pc.loss_confirm && tail_age > rto() / 2) flag_overdue(now, rto() / 2);
}

// Reports to the path policy, once each, the transmissions older than
// `overdue` with a packet sent after them delivered.
void Qp::flag_overdue(Time now, Duration overdue) {
  for (size_t i = fifo_index_after(overdue_cursor_); i < fifo_.size(); ++i) {
    const FifoEntry e = fifo_[i];
    if (e.tx_seq >= top_acked_tx_[2]) break;
    if (in_flight(e)) {
      const SendRecord& r = rec(e.psn);
      if (now - r.sent_at < overdue) break;
      if (r.ev != path::PathPolicy::kNone) path_->on_overdue(now, r.ev);
    }
    overdue_cursor_ = e.tx_seq;
  }
}

// Index of the first send-order FIFO entry sent after transmission `tx_seq`
// (tx_seq rises along the FIFO).
size_t Qp::fifo_index_after(uint64_t tx_seq) const {
  size_t lo = 0, hi = fifo_.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (fifo_[mid].tx_seq <= tx_seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// A confirming probe failed: every packet in flight on an EV that is now
// ASSUMED_BAD is lost, without waiting for the loss age.
void Qp::declare_dead_path_losses(Time now) {
  for (size_t i = 0; i < fifo_.size(); ++i) {
    const FifoEntry e = fifo_[i];
    if (!in_flight(e)) continue;
    const SendRecord& r = rec(e.psn);
    if (r.ev != path::PathPolicy::kNone && path_->slot(r.ev).state == EvState::assumed_bad)
      declare_lost(now, e.psn, kLossRule);
  }
  rearm_recovery(now);
}

// The per-path FIFO rule (ProtocolConfig::path_fifo_loss). Packets on one
// EV follow one path, and one path delivers a traffic class in order: when
// a first transmission is acknowledged, every first transmission sent
// before it on the same EV has either arrived or is lost. Those the SACK
// that carried the acknowledgement reports missing (a PSN in
// [covered_lo, covered_hi) whose bit was clear) are lost now, a round trip
// after they left, instead of a loss age later. Retransmissions travel in
// their own, higher-priority class and may overtake; they stay out of the
// chains. Each chain walk stops at the first packet that is no longer an
// unacknowledged first transmission on the EV, so a packet is visited O(1)
// times.
void Qp::declare_path_fifo_losses(Time now, uint64_t covered_lo, uint64_t covered_hi) {
  for (const uint64_t from : fifo_evidence_) {
    const SendRecord& first = rec(from);
    const int16_t ev = first.ev;
    uint64_t q = from;
    uint32_t back = first.prev_on_ev;
    while (back != 0 && back <= q) {
      q -= back;
      if (q < snd_una_ || q < covered_lo || q >= covered_hi || acked_.test(q)) break;
      SendRecord& r = rec(q);
      if (r.psn_tag != static_cast<uint16_t>(q) || r.ev != ev || r.tx_count != 1 || r.state != PktState::inflight)
        break;
      back = r.prev_on_ev;
      ++stats_.losses_path_fifo;
      declare_lost(now, q, kLossRule);
    }
  }
  fifo_evidence_.clear();
}

// Drops stale entries from the front of the send-order FIFO, so its front
// is the oldest transmission still in flight; true if there is one.
bool Qp::purge_fifo() {
  while (!fifo_.empty()) {
    if (in_flight(fifo_.front())) return true;
    fifo_.pop_front();
  }
  return false;
}

// The congestion window never holds back a QP that has nothing in flight:
// the controller's count comes from the peer's rounded receive clock, and
// when SACKs are lost, reordered or duplicated it can stay above zero with
// every packet accounted for. With nothing in flight no SACK will come to
// correct it and no timer runs, so one packet may always go (as TCP always
// lets one segment out); its SACK brings the clock up to date.
bool Qp::window_allows(uint32_t nominal) {
  return cc_->can_send(nominal) || !purge_fifo();
}

void Qp::rearm_recovery(Time now) {
  if (!purge_fifo()) {
    set_timer(QpTimer::recovery, Time::never());
    arm_stall_timer(now);
    return;
  }
  const FifoEntry e = fifo_.front();
  const SendRecord& r = rec(e.psn);
  Time t = r.sent_at + rto();
  const ProtocolConfig& pc = ep_.cfg_.protocol;
  const uint64_t third = loss_rule_evidence();
  const Duration age = loss_age(now);
  if (third != 0 && e.tx_seq < third) t = min(t, r.sent_at + age);
  else if (e.tx_seq < top_acked_tx_[2]) t = min(t, r.sent_at + tail_loss_age(age));
  if (pc.loss_confirm && top_acked_tx_[2] != 0) {
    // The next transmission that can become overdue (flag_overdue).
    const size_t i = fifo_index_after(overdue_cursor_);
    if (i < fifo_.size() && fifo_[i].tx_seq < top_acked_tx_[2] && in_flight(fifo_[i]))
      t = min(t, rec(fifo_[i].psn).sent_at + rto() / 2);
  }
  if (tail_probe_due()) t = min(t, last_send_ + tail_probe_timeout());
  set_timer(QpTimer::recovery, t);
}

// Work is queued but no EV can carry it (every path retired, or the peer's
// or our ports down) and nothing is in flight: no SACK, loss or probe will
// ever wake the QP, so the recovery timer stands in for the ACK timeout.
bool Qp::stalled() const {
  return state_ == QpState::rts && !roce() && fifo_.empty() && (sq_next_ < sq_.size() || !rtx_q_.empty()) &&
         path_ && path_->sendable_ports() == 0;
}

void Qp::arm_stall_timer(Time now) {
  if (stalled() && timer(QpTimer::recovery).is_never()) set_timer(QpTimer::recovery, now + rto());
}

// A timestamp echo `echo` can answer a transmission stamped `sent_ts` at
// `sent_at` only if it lies between the stamp and now: the responder echoes
// the stamp, possibly plus its service time (reference 8, item 11).
bool Qp::echo_plausible(uint16_t sent_ts, Time sent_at, uint16_t echo, Time now) const {
  return path::echo_plausible(sent_ts, sent_at, echo, now, ep_.cfg_.protocol.timestamp_tick);
}

void Qp::on_recovery_timer(Time now) {
  if (stalled()) {
    // A whole RTO with work and no usable path: one retry, as an ACK timeout
    // would count it, so a QP configured with a retry limit reaches it and
    // completes in error instead of waiting forever.
    ++stats_.stall_timeouts;
    ++timeout_streak_;
    if (!count_retry(now)) return;
    set_timer(QpTimer::recovery, now + rto());
    return;
  }
  detect_losses(now);
  // ACK timeout: every transmission older than the RTO is lost; the retry
  // counter steps once per expiry, not once per packet.
  const Duration limit = rto();
  bool expired = false;
  while (!fifo_.empty()) {
    const FifoEntry e = fifo_.front();
    if (!in_flight(e)) {
      fifo_.pop_front();
      continue;
    }
    if (now - rec(e.psn).sent_at < limit) break;
    fifo_.pop_front();
    // An expired packet is evidence against its EV only if a packet sent
    // after it was delivered: then the reverse path worked and this packet's
    // forward path did not. When nothing sent after it came back at all,
    // the silence is as likely the ACKs' path (or the peer) as this
    // packet's; retiring its healthy EV for lost SACKs would only shrink the
    // path set (a sprayed flight cannot have lost every forward EV at once).
    // But if the peer acknowledged anything after this packet left (a
    // retransmission, whose SACK cannot say which copy arrived), the peer
    // and some reverse path are alive, and the EV is asked: a confirming
    // probe travels in the control class and convicts only a path that
    // fails it. Without that, a plane that died both ways while every
    // delivery was ambiguous (each ACK timeout resends the whole flight)
    // stayed in service through every timeout of the transfer: a
    // CPU-starved loopback run resent 6,000 packets into a blackholed plane
    // and never retired one of its EVs.
    const bool silent = e.tx_seq >= top_acked_tx_[2];
    const SendRecord& r = rec(e.psn);
    if (silent && r.ev != path::PathPolicy::kNone && last_acked_at_ > r.sent_at) path_->on_overdue(now, r.ev);
    declare_lost(now, e.psn, silent ? kLossSilent : kLossTimeout);
    expired = true;
  }
  if (expired) {
    // The rest of the flight is presumed lost too (as RFC 8985 does on an
    // RTO): a timeout means nothing has come back for a whole RTO, so the
    // packets sent just after the expired ones are almost surely gone as
    // well. Waiting for each of them to expire under the backed-off timer
    // would recover one per doubling RTO, which under a heavy incast (the
    // trimmed headers of a burst dropped together) took milliseconds. Only
    // the expired packets count against their EVs.
    while (!fifo_.empty()) {
      const FifoEntry e = fifo_.front();
      fifo_.pop_front();
      if (in_flight(e)) declare_lost(now, e.psn, kLossFlight);
    }
  }
  if (!expired && tail_probe_due() && now >= last_send_ + tail_probe_timeout()) {
    // Tail loss probe: nothing new to send and nothing heard for two loss
    // ages. Resend the newest packet on another EV; its SACK (immediate,
    // since it is a retransmission) lets the loss rule find any holes before
    // it, instead of waiting for the ACK timeout. No EV penalty, since
    // nothing is known to be lost yet; the controller treats the probed
    // packet as an inferred loss (it leaves flight and the window shrinks).
    while (!fifo_.empty()) {
      const FifoEntry e = fifo_.back();
      if (in_flight(e)) {
        SendRecord& r = rec(e.psn);
        r.state = PktState::lost;
        r.loss_cause = kLossProbe;
        cc_->on_inferred_loss(now, r.nominal);
        rtx_q_.push_front(e.psn);  // first in line: it is what breaks the silence
        tail_probe_psn_ = e.psn;
        ++stats_.tail_probes;
        ++tail_probes_sent_;
        break;
      }
      fifo_.pop_back();
    }
  }
  if (expired) {
    ++stats_.timeouts;
    ++timeout_streak_;
    if (!count_retry(now)) return;
  }
  rearm_recovery(now);
}

}  // namespace mrc::core
