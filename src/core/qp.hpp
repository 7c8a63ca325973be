// SPDX-License-Identifier: BSD-2-Clause
// One MRC queue pair: requester and responder halves of a reliable
// connection (reference 3). Internal to the core; drivers use Endpoint.
//
// The requester segments WRITEs into PSN-numbered packets, sprays them over
// the EVs its PathPolicy picks at send time, and recovers losses selectively
// from SACKs, NACKs, the loss rule and the ACK timeout. The responder checks
// and places every packet on arrival, tracks PSNs in an MPR-sized bitmap,
// generates SACKs/NACKs/ACKs, and delivers WRITE_WITH_IMM completions in
// message order.
//
// A QP created with Transport::roce_rc runs the RoCEv2 RC baseline instead
// (rc.cc): one EV for its life, packets in PSN order with IBTA RC opcodes,
// go-back-N recovery, an in-order responder with coalesced cumulative ACKs,
// one NAK per sequence gap, and CNPs for ECN-marked data. Both transports
// share the QP state machine, memory checks, completions, retry counter,
// flush and timer table.
//
// Sequence numbers are unwrapped to 64 bits inside (wire/psn.hpp): the
// first PSN maps to 2^24 + its 24-bit value so arithmetic never goes below 0.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/cc/controller.hpp"
#include "core/config.hpp"
#include "core/endpoint.hpp"
#include "core/path/path_policy.hpp"
#include "core/reorder_window.hpp"
#include "core/secure.hpp"
#include "core/types.hpp"
#include "util/ring.hpp"
#include "util/sack_bitmap.hpp"
#include "wire/packet.hpp"

namespace mrc::core {

class Endpoint;


/// Fixed per-QP timer table (aesthetics convention 4). `sack` is the
/// responder's feedback-coalescing timer (SACK, or RC ACK); `pacing` wakes a
/// QP its rate-based controller held back (cc::Controller::next_send_time).
/// (EV probes run on the path policy's own clock, PathPolicy::next_probe;
/// the reverse-path probe needs no timer, see Qp::on_data.)
enum class QpTimer : uint8_t { recovery, sack, pacing, count };


class Qp {
 public:
  /// Endpoint::on_transmit_refused for this QP's data packet of 24-bit PSN
  /// `psn24` stamped `ts`.
  void on_send_refused(Time now, uint32_t psn24, uint16_t ts);
  /// `stream` keys the QP's PRNG stream (its slot, so seeded runs do not
  /// depend on the random QPN).
  Qp(Endpoint& ep, uint32_t qpn, const QpInit& init, uint64_t stream);

  /// Caps of the control queue (SACK, NACK, AETH ACK/NAK, probe answers),
  /// each O(1) to enforce; what they refuse is counted in QpStats::ctrl_shed
  /// and EndpointStats::ctrl_shed:
  ///  - at most kMaxCtrl entries in all; a SACK over it is shed (the next
  ///    one carries the same cumulative state, computed when it leaves);
  ///  - at most kMaxCtrlNacks NACKs, so SACKs always have room;
  ///  - one pending PSN_OOR_WINDOW NACK and one pending AETH NAK: a flood
  ///    of out-of-window or bad-key packets costs one queued answer;
  ///  - at most kMaxCtrlProbeAnswers pending probe answers: a flood of
  ///    probes costs that many, while a requester that probes several paths
  ///    at once (one per suspect EV, ProtocolConfig::loss_confirm) gets every
  ///    answer (with one, all but the first were shed and read as dead paths);
  ///  - a NACK identical (reason and PSN) to the one queued last is dropped.
  static constexpr size_t kMaxCtrl = 256;
  static constexpr size_t kMaxCtrlNacks = 128;
  static constexpr uint32_t kMaxCtrlProbeAnswers = 128;
  ~Qp();
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;

  uint32_t qpn() const { return qpn_; }
  Transport transport() const { return init_.transport; }
  QpState state() const { return state_; }
  uint64_t peer() const { return peer_; }
  /// Ports this QP could send data on now (its path policy's view).
  uint32_t sendable_ports() const;
  uint32_t pd() const { return init_.pd; }
  uint32_t send_cq() const { return init_.send_cq; }
  uint32_t recv_cq() const { return init_.recv_cq; }
  const QpStats& stats() const { return stats_; }
  const path::PathPolicy* path() const { return path_.get(); }
  const cc::Controller* controller() const { return cc_.get(); }
  /// Attributes as last set (query); secure.send/recv hold no key bytes.
  const QpAttr& attr() const { return attr_; }
  /// The secure QP state (keys, counter, replay window), or null for a
  /// plain QP (core/secure.hpp).
  SecureQp* secure() { return secure_.get(); }
  const SecureQp* secure() const { return secure_.get(); }
  /// Everything Endpoint::query_qp reports.
  QpInfo info() const;

  Status modify(Time now, const QpAttr& attr, uint32_t mask);
  Status post_send(Time now, const SendWr& wr);
  Status post_recv(const RecvWr& wr);
  /// Before destruction: completes every posted send and receive WR with
  /// wr_flush_err (no QP error event: the owner asked for it).
  void flush_for_destroy();
  Status set_mpr_dest(uint8_t mpr);
  Status set_ev_denied(Time now, uint32_t value, bool denied);

  // --- driven by Endpoint ---
  void on_packet(Time now, const RxMeta& meta, const wire::Parsed& p, const uint8_t* payload);
  void on_port_mask(Time now, uint32_t mask);
  enum class SendResult : uint8_t { sent, idle, blocked, ports_busy };
  bool poll_control(Time now, uint32_t port_mask, uint8_t* hdr, Transmit& tx);
  SendResult poll_data(Time now, uint32_t port_mask, uint8_t* hdr, Transmit& tx);
  bool has_control() const { return !ctrl_q_.empty(); }
  /// Control packets queued now (<= kMaxCtrl).
  size_t control_queued() const { return ctrl_q_.size(); }
  /// Hands the EV events the path policy produced to the endpoint's queue,
  /// filtered by the profile's event mask (reference 4.10). The endpoint
  /// calls it after every call into the QP, so events leave when they happen.
  void flush_ev_events();
  /// True if the QP has posted work it has not finished sending or
  /// recovering (for invariant checks: such a QP always has a timer armed
  /// or a packet to send).
  bool has_outstanding_work() const { return !sq_.empty() || !fifo_.empty() || !rtx_q_.empty(); }
  bool wants_data() const;
  Time next_timeout() const;
  void on_timeout(Time now);

  // Endpoint bookkeeping.
  bool in_ctrl_list_ = false;
  bool in_data_list_ = false;
  /// The endpoint's count of data packets to this QP's peer per port
  /// (EndpointConfig::balance_peer_ports), and the peer it was looked up
  /// for: the lookup is a hash-map find, kept off the per-packet path.
  std::array<uint32_t, 32>* peer_port_sent_ = nullptr;
  uint64_t peer_port_sent_of_ = 0;
  size_t heap_index_ = SIZE_MAX;
  Time heap_deadline_ = Time::never();

 private:
  // ---- shared ----
  struct PendingCtrl {
    enum Kind : uint8_t { sack, nack, ack, nak, probe_sack, cnp } kind = sack;
    uint8_t port = 0;
    wire::Mark mark = wire::Mark::none;
    wire::NackCode code = wire::NackCode::trimmed;
    uint8_t syndrome = 0;
    uint16_t ts = 0;
    uint32_t entropy = 0;
    uint64_t psn = 0;  ///< trigger / NACKed PSN (unwrapped)
    Time arrival;
  };
  Status check_transition(const QpAttr& a, uint32_t mask) const;
  void enter_rtr(Time now);
  void enter_rts(Time now);
  void reset_state();
  void fail(Time now, WcStatus cause, size_t failing_msg);
  void flush_queues(WcStatus cause, size_t failing_msg);
  void push_ctrl(const PendingCtrl& c);
  PendingCtrl pop_ctrl_at(size_t i);
  void clear_ctrl();
  void drop_send_queue();
  bool stalled() const;
  void arm_stall_timer(Time now);
  bool echo_plausible(uint16_t sent_ts, Time sent_at, uint16_t echo, Time now) const;
  void complete(const WorkCompletion& wc);
  uint16_t ts_now(Time now) const;
  Duration rto() const;
  void rearm_recovery(Time now);
  bool purge_fifo();
  bool window_allows(uint32_t nominal);
  void set_timer(QpTimer t, Time at) { timers_[static_cast<size_t>(t)] = at; }
  Time timer(QpTimer t) const { return timers_[static_cast<size_t>(t)]; }
  uint32_t nominal(uint32_t header_len, uint32_t payload_len) const {
    return header_len + payload_len + 4 /*ICRC*/ + 8 /*UDP*/ + 40;
  }
  uint8_t pick_port(uint8_t preferred, uint32_t port_mask) const;
  uint8_t pick_sack_port(uint32_t port_mask) const;
  bool roce() const { return init_.transport == Transport::roce_rc; }
  bool pace(Time now, uint32_t nominal);
  void complete_acked_messages();
  void on_fatal_nak(Time now, uint64_t psn, uint8_t syndrome);
  /// A refused WRITE's answer: an AETH NAK (reference), or with
  /// ProtocolConfig::confirm_fatal a NACK UNEXP_EVENT echoing the packet's
  /// PSN and stamp, the syndrome in NETH's vendor byte.
  void push_refusal(const PendingCtrl& trigger, uint8_t syndrome);
  bool complete_recv_imm(uint32_t byte_len, uint32_t imm);

  // ---- requester ----
  /// Where a message's payload comes from (SendWr's three source forms).
  enum class Source : uint8_t { buffer, gather, inline_data };
  struct SendMsg {
    SendWr wr;               ///< spans cleared; wr.length = the whole message
    uint64_t msn = 0;
    uint64_t rqmsn = 0;
    uint64_t first_psn = 0;
    uint32_t npkts = 1;
    uint32_t sent_pkts = 0;  ///< packets given a PSN so far
    bool imm_counted = false;
    bool holds_mr = false;   ///< holds references on its source region(s)
    Source source = Source::buffer;
    uint16_t num_sge = 0;    ///< gather form: elements in the block
    uint32_t block = 0;      ///< gather/inline form: index into blocks_
  };
  /// Side storage of a gather list or inline bytes, one per message that
  /// needs it, recycled through free_blocks_ (so the steady state does not
  /// allocate) and at a fixed address for the message's life (Transmit
  /// points into it).
  struct WrBlock {
    std::array<Sge, kMaxSge> sge;
    std::array<uint8_t, kMaxInlineData> bytes;
  };
  Status stage_source(const SendWr& wr, SendMsg& m);
  void release_source(SendMsg& m);
  void set_payload(const SendMsg& m, uint64_t offset, uint32_t len, Transmit& tx) const;
  enum class PktState : uint8_t { inflight, lost, acked };
  static constexpr uint8_t kChallengeQueued = 1;
  static constexpr uint8_t kChallengeSent = 2;
  struct SendRecord {
    uint64_t tx_seq = 0;
    Time sent_at;
    uint64_t msn = 0;
    uint32_t index = 0;      ///< packet index within the message
    uint16_t nominal = 0;    ///< nominal size (payload + headers + 40 B; under 64 KiB)
    /// Why the last transmission was declared lost (LossCause in
    /// requester.cc), kept so that a loss proved spurious undoes what its
    /// cause did.
    uint8_t loss_cause = 0;
    int16_t ev = path::PathPolicy::kNone;
    /// EV of the transmission last declared lost (its penalty is what a
    /// spurious loss undoes; `ev` then names the retransmission's).
    int16_t lost_ev = path::PathPolicy::kNone;
    uint16_t ts = 0;
    /// TSETH stamp of the transmission before the last (a resent packet):
    /// a SACK echoing it proves that earlier copy arrived.
    uint16_t prev_ts = 0;
    uint8_t tx_count = 0;
    /// Confirmation of a fatal NACK (ProtocolConfig::confirm_fatal): 0 none,
    /// kChallengeQueued once one was believed (the packet is to be resent),
    /// kChallengeSent once a transmission left after it: only a NACK echoing
    /// such a transmission fails the QP.
    uint8_t challenge = 0;
    PktState state = PktState::inflight;
    /// Low 16 bits of the PSN this record belongs to: below snd_una_ a slot
    /// may have been reused by a later PSN (the ring holds at most 32768,
    /// and PSNs that far apart are never both in reach), so the tag tells
    /// whether the record still describes the PSN a late SACK names.
    uint16_t psn_tag = 0;
    /// A first transmission: how many PSNs back the previous first
    /// transmission on the same EV lies (0 = none, or too far), the chain
    /// the per-path FIFO rule walks (ProtocolConfig::path_fifo_loss).
    uint32_t prev_on_ev = 0;
  };
  struct FifoEntry {
    uint64_t psn;
    uint64_t tx_seq;
  };
  SendRecord& rec(uint64_t psn) { return records_[psn & rec_mask_]; }
  /// rec(psn) for a PSN about to be (re)sent: grows the ring first if psn is
  /// further than it reaches from snd_una_. The ring starts small and grows
  /// (doubling, at most to the MPR window) with the PSNs actually in flight,
  /// so a QP that never sends, or sends little, costs little memory.
  SendRecord& rec_for_send(uint64_t psn) {
    if (psn - snd_una_ > rec_mask_) grow_records(psn);
    return rec(psn);
  }
  void grow_records(uint64_t psn);
  /// Where packet `index` of message `m` sits: its position flags, the
  /// payload offset and length (shared by the MRC and RC packet builders).
  struct Segment {
    bool first, last, imm;
    uint64_t offset;
    uint32_t len;
  };
  Segment segment(const SendMsg& m, uint32_t index) const {
    const uint64_t offset = uint64_t{index} * mtu_;
    return Segment{index == 0, index + 1 == m.npkts, m.wr.opcode == WrOpcode::rdma_write_with_imm, offset,
                   static_cast<uint32_t>(std::min<uint64_t>(mtu_, m.wr.length - offset))};
  }
  uint64_t window_psns() const;
  void build_data(Time now, SendMsg& m, uint64_t psn, uint32_t index, bool rtx, int ev, uint8_t* hdr,
                  Transmit& tx);
  SendMsg* msg_by_msn(uint64_t msn);
  /// Index in sq_ of the sent message that owns `psn`, or SIZE_MAX.
  size_t owner_of(uint64_t psn) const;
  /// A send-order FIFO entry still names a transmission in flight.
  bool in_flight(const FifoEntry& e) const {
    if (e.psn < snd_una_ || acked_.test(e.psn)) return false;
    const SendRecord& r = records_[e.psn & rec_mask_];
    return r.tx_seq == e.tx_seq && r.state == PktState::inflight;
  }
  void on_sack(Time now, const RxMeta& meta, const wire::Headers& h);
  void on_nack(Time now, const wire::Headers& h);
  /// A believed fatal NACK for `psn` (outstanding, echo of its latest
  /// transmission): fails the QP, or first resends the packet to confirm
  /// (ProtocolConfig::confirm_fatal).
  void on_fatal_nack(Time now, uint64_t psn, uint8_t syndrome);
  uint64_t take_rcvd_credit(const wire::Headers& h);
  void credit_rcvd_clock(Time now, const wire::Headers& h);
  void on_aeth(Time now, const wire::Headers& h);
  void ack_psn(Time now, uint64_t psn);
  void note_delivered_tx(uint64_t tx_seq);
  void advance_una(Time now);
  void declare_lost(Time now, uint64_t psn, int why);
  bool tail_probe_due() const;
  Duration tail_probe_timeout() const;
  /// The loss rule's age now: ReorderWindow's, but at most three quarters
  /// of the ACK timeout. A rule that waits as long as the timeout is no
  /// rule: where queueing makes healthy RTTs swing by milliseconds (the
  /// software device behind a forwarding thread) the learned age outgrew
  /// the timeout, every loss became an ACK timeout, and each timeout resent
  /// the whole flight (18x the packets of the capped rule).
  Duration loss_age(Time now) { return std::min(reorder_.loss_age(now), rto() * 3 / 4); }
  /// The age at which a single later delivery proves a loss (the loss rule
  /// near a transfer's tail): twice the loss age, or half the ACK timeout
  /// if that comes first, never below the loss age itself.
  Duration tail_loss_age(Duration age) const { return std::max(age, std::min(age * 2, rto() / 2)); }
  /// The tx_seq below which a packet has enough later-sent deliveries for
  /// the loss rule (ProtocolConfig::reorder_packets of them); 0 if none yet.
  uint64_t loss_rule_evidence() const;
  bool spurious_loss(Time now, const SendRecord& r) const;
  void on_spurious_loss(Time now, SendRecord& r);
  void detect_losses(Time now);
  void declare_dead_path_losses(Time now);
  void declare_path_fifo_losses(Time now, uint64_t covered_lo, uint64_t covered_hi);
  void flag_overdue(Time now, Duration overdue);
  size_t fifo_index_after(uint64_t tx_seq) const;
  void on_recovery_timer(Time now);
  bool retry_exhausted() const;
  /// Steps the retry counter (reference 3.3: timeouts and retriable NACKs
  /// draw on it); false, with the QP failed (RETRY_EXC_ERR), if that
  /// exhausted it.
  bool count_retry(Time now);
  /// Packets of one EV burst: ProtocolConfig::ev_burst, fewer if that
  /// many would exceed ev_burst_bytes at this QP's MTU.
  uint32_t burst_packets() const;

  // ---- responder ----
  struct RxSlot {
    uint8_t flags = 0;  ///< kRxLast | kRxImm
    uint32_t imm = 0;
    uint32_t len = 0;
  };
  static constexpr uint8_t kRxLast = 1;
  static constexpr uint8_t kRxImm = 2;
  void on_data(Time now, const RxMeta& meta, const wire::Parsed& p, const uint8_t* payload);
  void on_probe(Time now, const RxMeta& meta, const wire::Headers& h);
  void deliver_completions(Time now, uint64_t from, uint64_t to, const PendingCtrl& trig);
  void want_sack(Time now, const PendingCtrl& trigger, bool immediate);
  /// The slot of a PSN about to be placed: grows the slot ring (doubling, at
  /// most to the tracking window) if psn is further than it reaches from the
  /// window base.
  RxSlot& rx_slot_for(uint64_t psn) {
    if (psn - rx_.base() > rx_slot_mask_) grow_rx_slots(psn);
    return rx_slots_[psn & rx_slot_mask_];
  }
  void grow_rx_slots(uint64_t psn);
  void build_control(Time now, const PendingCtrl& c, uint8_t port, uint8_t* hdr, Transmit& tx);

  // ---- RoCEv2 RC baseline (rc.cc) ----
  SendResult rc_poll_data(Time now, uint32_t port_mask, uint8_t* hdr, Transmit& tx);
  void rc_build_data(Time now, SendMsg& m, uint64_t psn, uint32_t index, bool rtx, int ev, uint8_t* hdr,
                     Transmit& tx);
  uint32_t rc_header_len(const SendMsg& m, uint32_t index) const;
  void rc_on_aeth(Time now, const wire::Headers& h);
  void rc_ack_to(Time now, uint64_t una);
  void rc_rewind(Time now, uint64_t from, bool timeout);
  void rc_on_recovery_timer(Time now);
  void rc_on_cnp(Time now);
  void rc_on_data(Time now, const RxMeta& meta, const wire::Parsed& p, const uint8_t* payload);
  void rc_want_ack(Time now, bool immediate);
  void rc_queue_ack();
  void rc_push_nak(uint8_t syndrome, uint64_t psn);
  void rc_maybe_cnp(Time now);
  uint8_t rc_ctrl_port() const;
  void rc_build_control(const PendingCtrl& c, wire::Headers& h);

  Endpoint& ep_;
  const uint32_t qpn_;
  const QpInit init_;
  const uint64_t stream_;
  QpState state_ = QpState::reset;
  QpAttr attr_;
  std::unique_ptr<SecureQp> secure_;  ///< set on the way to RTR (qp_attr::kSecure), dropped at RESET
  uint64_t peer_ = 0;
  uint32_t mtu_ = 4096;
  QpStats stats_;
  std::array<Time, static_cast<size_t>(QpTimer::count)> timers_;
  Ring<PendingCtrl> ctrl_q_;
  uint32_t ctrl_nacks_ = 0;        ///< NACKs in ctrl_q_
  bool oor_nack_queued_ = false;   ///< a PSN_OOR_WINDOW NACK is in ctrl_q_
  bool nak_queued_ = false;        ///< an AETH NAK is in ctrl_q_
  uint32_t probe_answers_queued_ = 0;  ///< probe answers in ctrl_q_
  std::unique_ptr<path::PathPolicy> path_;
  std::unique_ptr<cc::Controller> cc_;
  std::vector<EvEvent> ev_events_;

  // requester
  std::vector<std::unique_ptr<WrBlock>> blocks_;
  std::vector<uint32_t> free_blocks_;
  Ring<SendMsg> sq_;  ///< (references into it last until the next post_send)
  size_t sq_next_ = 0;           ///< first message with unsent packets
  uint64_t next_psn_ = 0;
  uint64_t snd_una_ = 0;
  uint64_t next_msn_ = 1;
  uint64_t next_rqmsn_ = 0;
  uint64_t tx_seq_ = 0;
  int burst_ev_ = path::PathPolicy::kNone;  ///< EV of the burst in progress (ProtocolConfig::ev_burst)
  uint32_t burst_left_ = 0;                 ///< packets the burst may still send on it
  std::vector<SendRecord> records_;
  uint64_t rec_mask_ = 0;
  /// Per EV slot: PSN + 1 of the last first transmission sent on it (0 =
  /// none), for SendRecord::prev_on_ev.
  std::vector<uint64_t> ev_last_psn_;
  /// First transmissions an on_sack call acknowledged unambiguously: the
  /// evidence the per-path FIFO rule starts from (empty between calls).
  std::vector<uint64_t> fifo_evidence_;
  bool collect_fifo_evidence_ = false;
  /// While a SACK's acknowledgements are applied (ProtocolConfig::ev_recycle
  /// only): its triggering PSN. Every other packet it newly acknowledges
  /// came back unmarked (a CE-marked packet triggers a SACK of its own at
  /// once, reference 3.7), which the path policy hears. None otherwise.
  std::optional<uint64_t> sack_trigger_;
  SackBitmap acked_;
  Ring<FifoEntry> fifo_;  ///< transmissions in send order
  Ring<uint64_t> rtx_q_;  ///< PSNs declared lost, awaiting retransmission
  Time prev_sack_at_;            ///< arrival of the last SACK processed (delivery-age lower bound)
  Time last_acked_at_;           ///< when the peer last acknowledged a PSN (any transmission of it)
  uint64_t overdue_cursor_ = 0;  ///< transmissions up to this tx_seq were checked by flag_overdue
  std::array<uint64_t, 3> top_acked_tx_{};  ///< three largest unambiguous SACKed tx_seq (+1)
  uint32_t retry_count_ = 0;     ///< timeouts + retriable NACKs since the last delivery
  uint32_t timeout_streak_ = 0;  ///< ACK timeouts since the last delivery (RTO backoff)
  Time last_send_;               ///< last data transmission
  uint32_t tail_probes_sent_ = 0; ///< tail probes in this silence (cleared on progress)
  uint64_t tail_probe_psn_ = 0;  ///< PSN of a tail probe not sent yet (0: none)
  ReorderWindow reorder_{ReorderWindowConfig{}};  ///< RTT estimates and the loss rule's age
  uint32_t imm_inflight_ = 0;
  uint64_t rcvd_reported_ = 0;   ///< the peer's rcvd_bytes clock, unwrapped, in bytes
  uint64_t rcvd_credited_ = 0;   ///< ... of which credited to the controller
  uint64_t acked_bytes_ = 0;     ///< nominal bytes of every PSN acknowledged
  uint8_t peer_mpr_ = 0;         ///< dynamic MPR last advertised (0 = none)
  uint64_t oor_window_ = 0;      ///< window (PSNs) a PSN_OOR_WINDOW NACK implied (0 = none)
  bool probe_due_ = false;
  bool reverse_probe_due_ = false;
  Time last_delivery_;           ///< last SACK that confirmed one of our EVs
  Time last_reverse_probe_;      ///< when the last reverse-path probe was asked for

  // responder
  SackBitmap rx_;
  std::vector<RxSlot> rx_slots_;
  uint64_t rx_slot_mask_ = 0;
  uint8_t mpr_dest_cur_ = 0;
  uint64_t rcvd_bytes_total_ = 0;
  IncastGuardQp incast_;         ///< arrivals counted by the endpoint's incast guard
  uint32_t ooo_count_ = 0;
  uint32_t bytes_since_sack_ = 0;
  uint64_t msgs_completed_ = 0;  ///< messages fully placed (AETH MSN)
  uint64_t aeth_sent_msn_ = 0;
  bool aeth_queued_ = false;
  uint8_t last_rx_port_ = 0;
  uint8_t last_sack_port_ = 0;   ///< port the last SACK left on
  uint32_t wimm_stash_ = 0;
  /// This QP failed on a fatal event of its own as a responder (WriteIMM
  /// overflow, no receive WQE): with ProtocolConfig::confirm_fatal it
  /// answers later data with NACK UNEXP_EVENT, confirming the error to a
  /// requester that challenges it.
  bool answer_fatal_ = false;
  Ring<RecvWr> recv_q_;
  bool sack_pending_ = false;
  PendingCtrl pending_sack_;
  Time sack_since_;              ///< first arrival the pending SACK covers
  Time last_arrival_ = Time::never();  ///< the last data arrival that coalesced (want_sack)
  Duration arrival_gap_{};       ///< average gap between those arrivals (1/8 weight)

  // RoCE RC requester: PSNs in [rc_resend_, next_psn_) were sent and are
  // queued for go-back-N retransmission, in order, before any new data.
  uint64_t rc_resend_ = 0;
  // RoCE RC responder.
  struct RcRxMsg {
    bool open = false;       ///< a FIRST arrived, its LAST not yet
    uint64_t va = 0;         ///< where the next packet's payload goes
    uint32_t rkey = 0;
    uint32_t dma_length = 0; ///< the whole message (completion byte_len)
    uint64_t remaining = 0;  ///< bytes still to come
  };
  uint64_t rc_epsn_ = 0;     ///< the one PSN the responder accepts next
  bool rc_nak_sent_ = false; ///< a NAK for rc_epsn_ went out: drop silently until it arrives
  uint32_t rc_unacked_ = 0;  ///< in-order packets since the last ACK left
  RcRxMsg rc_rx_;
  bool cnp_sent_ = false;
  Time last_cnp_;
};

}  // namespace mrc::core
