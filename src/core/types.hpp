// SPDX-License-Identifier: BSD-2-Clause
// Plain types shared by the core's public surface: QP states, attributes,
// work requests, completions, events and packet descriptors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "core/wire_ev.hpp"
#include "util/time.hpp"
#include "wire/headers.hpp"

namespace mrc::core {

/// Largest number of NIC ports (planes) an endpoint may have: a port-status
/// mask is 32 bits (reference 3.3, ERTH).
inline constexpr uint32_t kMaxPorts = 32;
/// Reserved QPNs (reference 3.2): 0 and 1 unused, 2 = endpoint operations.
inline constexpr uint32_t kEndpointOpsQpn = 2;
/// PSNs per MPR unit (reference 3.4).
inline constexpr uint32_t kMprUnit = 128;

/// Reliable transport a QP runs, fixed at creation (QpInit::transport).
///  - mrc: MRC (reference 3): spraying over many EVs, SACK/NACK, selective
///    retransmission, MRC opcodes.
///  - roce_rc: the RoCEv2 RC baseline the simulator compares MRC against: one
///    EV (one plane, one path) for the QP's life, IBTA RC opcodes, packets in
///    PSN order, go-back-N on a NAK sequence error or the ACK timeout,
///    cumulative AETH ACKs, CNPs for ECN-marked data (DCQCN's signal), no
///    trimming, no probes, no EV management.
enum class Transport : uint8_t { mrc, roce_rc };
const char* to_string(Transport t);

/// QP states (reference 3.2). SQD/SQE are not part of MRC.
enum class QpState : uint8_t { reset, init, rtr, rts, error };
const char* to_string(QpState s);

/// Capability bits of mrc_qp_attr.cap (reference 6.2).
namespace qp_cap {
inline constexpr uint32_t kTrimNackDestUnsupported = 1u << 0;
inline constexpr uint32_t kDynamicMpr = 1u << 1;
inline constexpr uint32_t kSvcTimeDestUnsupported = 1u << 2;
}  // namespace qp_cap

/// Attribute mask bits for Endpoint::modify_qp. The first group mirrors the
/// ibverbs attributes an MRC QP takes; the second mirrors mrc_qp_attr_mask.
namespace qp_attr {
inline constexpr uint32_t kState = 1u << 0;
inline constexpr uint32_t kCurState = 1u << 1;
inline constexpr uint32_t kDestQpn = 1u << 2;   ///< RTR: peer QPN
inline constexpr uint32_t kRqPsn = 1u << 3;     ///< RTR: first PSN expected from the peer
inline constexpr uint32_t kSqPsn = 1u << 4;     ///< RTS: first PSN this QP sends
inline constexpr uint32_t kPathMtu = 1u << 5;   ///< RTR: payload bytes per packet
inline constexpr uint32_t kPeer = 1u << 6;      ///< RTR: opaque peer address (the driver's AV)
inline constexpr uint32_t kMaxWimm = 1u << 8;
inline constexpr uint32_t kMaxWimmDest = 1u << 9;
inline constexpr uint32_t kMpr = 1u << 10;
inline constexpr uint32_t kMprDest = 1u << 11;
inline constexpr uint32_t kTimeout = 1u << 12;
inline constexpr uint32_t kEvProfileId = 1u << 13;
inline constexpr uint32_t kCcProfileId = 1u << 14;
inline constexpr uint32_t kRetryCnt = 1u << 15;
inline constexpr uint32_t kCap = 1u << 16;
inline constexpr uint32_t kHint = 1u << 17;     ///< ->INIT: traffic hint (QpHint)
inline constexpr uint32_t kSecure = 1u << 18;   ///< ->RTR: secure QP mode and keys (QpSecure, OpenMRC)
}  // namespace qp_attr

/// What a secure QP protects (QpAttr::secure; core/secure.hpp, an OpenMRC
/// extension both peers must enable).
enum class SecureMode : uint8_t {
  off = 0,        ///< plain MRC
  integrity = 1,  ///< every packet tagged (AES-GCM as GMAC), payload in clear
  encrypt = 2,    ///< every packet tagged, payload encrypted (AES-GCM)
};

/// One direction's AES-GCM key.
struct SecureKey {
  std::array<uint8_t, 32> key{};
  uint8_t key_len = 0;   ///< 16 (AES-128) or 32 (AES-256)
  uint32_t salt = 0;     ///< the nonce's first 32 bits
  uint8_t key_id = 0;    ///< carried in SECETH; a packet with another id is refused
};

/// QpAttr::secure (qp_attr::kSecure, on the way to RTR): the mode and the
/// two keys. `send` seals what this QP sends; `recv` opens what its peer
/// sends, so it is the peer's `send` (and `send` the peer's `recv`). The
/// two must differ: both directions' counters start at 0, and one key used
/// both ways would repeat nonces. A key must never be given to a QP again
/// once used (its counter restarts with it): take fresh keys for every
/// connection. query_qp reports the mode and key ids, never the keys.
struct QpSecure {
  SecureMode mode = SecureMode::off;
  SecureKey send;
  SecureKey recv;
};

/// The application's traffic hint for a QP (the OCP API's mrc_qp_hint,
/// reference 6.2); 0 = not given. The core uses it to size the QP's first
/// window: NSCC starts at MaxWnd / (remote_recv_peers x qps_per_peer), the
/// share of the target's line rate this QP will have, instead of at line
/// rate (cc/nscc.hpp). An incast's first round trip is sent before any
/// feedback can arrive: 127 senders at MaxWnd each overflow even the
/// last hop's trimmed-header queue.
struct QpHint {
  uint32_t qps_per_peer = 0;       ///< QPs this application opens to each peer
  uint32_t send_peers = 0;         ///< peers this QP's side sends to at once
  uint32_t remote_recv_peers = 0;  ///< senders the target receives from at once (incast degree)
  /// The divisor of the first window: 1 without a hint.
  uint32_t window_divisor() const {
    const uint64_t d = uint64_t{remote_recv_peers ? remote_recv_peers : 1} * (qps_per_peer ? qps_per_peer : 1);
    return d > 65536 ? 65536u : static_cast<uint32_t>(d);
  }
};

/// Attributes for modify_qp; only the members named in the mask are read.
struct QpAttr {
  QpState state = QpState::reset;
  QpState cur_state = QpState::reset;
  uint32_t dest_qpn = 0;
  uint32_t rq_psn = 0;         ///< 24 bits
  uint32_t sq_psn = 0;         ///< 24 bits
  uint32_t path_mtu = 4096;    ///< 256, 512, 1024, 2048 or 4096
  uint64_t peer = 0;
  uint16_t max_wimm = 128;
  uint16_t max_wimm_dest = 128;
  uint8_t mpr = 8;             ///< 128-PSN units, >= 1
  uint8_t mpr_dest = 8;        ///< 128-PSN units, >= 1
  uint8_t timeout = 8;         ///< ACK timeout 1.024 us * 2^timeout, <= 24
  uint8_t retry_linear = 7;    ///< <= 7
  uint8_t retry_exp = 25;      ///< <= 25; 25 = retry forever
  uint64_t ev_profile_id = 0;
  uint64_t cc_profile_id = 0;
  uint32_t cap = 0;            ///< qp_cap bits
  QpHint hint;                 ///< kHint, on the way to INIT
  QpSecure secure;             ///< kSecure, on the way to RTR (OpenMRC secure QPs)
};

/// Per-QP counters.
struct QpStats {
  uint64_t data_packets_sent = 0;      ///< first transmissions
  uint64_t retransmissions = 0;
  uint64_t probes_sent = 0;
  uint64_t control_sent = 0;           ///< SACK/NACK/ACK
  uint64_t bytes_acked = 0;            ///< payload bytes of completed WRITEs
  /// Payload bytes of data packets the peer acknowledged (SACKed or
  /// cumulatively), each counted once: what the responder has placed, as
  /// the requester learns it, without a message's quantisation.
  uint64_t bytes_delivered = 0;
  uint64_t losses_rule = 0;            ///< declared by the SACK loss rule (path FIFO included)
  uint64_t losses_path_fifo = 0;       ///< ... of which by the per-path FIFO rule (ProtocolConfig::path_fifo_loss)
  uint64_t losses_timeout = 0;         ///< declared by the ACK timeout
  uint64_t losses_nack = 0;            ///< retransmitted after a NACK
  /// Refusals (NACKs other than trims) of a packet already resent, with
  /// nothing delivered through the linear retries: not resent at once, left
  /// to the ACK timeout and its backoff (see Qp::on_nack).
  uint64_t nacks_deferred = 0;
  /// Data packets the local host refused to send (a full socket buffer or
  /// egress queue: Endpoint::on_transmit_refused), resent without blaming
  /// their EV and taken as congestion.
  uint64_t losses_local = 0;
  uint64_t timeouts = 0;               ///< ACK-timeout events (retry counter steps)
  uint64_t tail_probes = 0;            ///< newest packet resent after a silent tail
  uint64_t stall_timeouts = 0;         ///< work queued but no usable path for a whole RTO
  uint64_t sacks_received = 0;
  uint64_t nacks_received = 0;
  /// Requester: packets resent to confirm a fatal NACK before failing
  /// (ProtocolConfig::confirm_fatal): one per believed NACK, of which a
  /// forged one costs no more.
  uint64_t fatal_challenges = 0;
  uint64_t spurious_losses = 0;        ///< declared lost, then SACKed before the retransmission left
  uint64_t data_packets_received = 0;
  uint64_t duplicates_received = 0;
  uint64_t ooo_received = 0;
  uint64_t trims_received = 0;
  uint64_t rx_rejected = 0;            ///< data packets refused (window, access, state)
  uint64_t access_errors = 0;          ///< responder: rkey/PD/access/bounds violations
  uint64_t ctrl_shed = 0;              ///< control packets not queued (duplicate or over a cap)
  uint64_t max_psn_span = 0;           ///< largest next_psn - snd_una seen (MPR check)
  uint64_t max_wimm_inflight = 0;      ///< largest WriteIMMs in flight seen (WIMM check)
  // RoCE RC only.
  uint64_t rewinds = 0;                ///< go-back-N rewinds (NAK sequence error or ACK timeout)
  uint64_t seq_naks_sent = 0;          ///< responder: NAK sequence errors sent (one per gap)
  uint64_t cnps_sent = 0;              ///< responder: CNPs generated for ECN-CE data
  uint64_t cnps_received = 0;          ///< requester: CNPs passed to the controller
};

/// Counters a QP's path policy keeps (QpInfo::path; core/path/path_policy.hpp).
struct PathStats {
  uint64_t retired = 0;        ///< GOOD/SKIP -> ASSUMED_BAD
  uint64_t resurrected = 0;    ///< ASSUMED_BAD -> GOOD/SKIP after probes (not un-denials)
  uint64_t skips = 0;          ///< -> SKIP
  uint64_t promotions = 0;     ///< backup -> active, replacing an EV out of service
  /// Active EV traded for a backup of its port on ECN marks
  /// (ProtocolConfig::ev_swap_marks); not counted as a promotion.
  uint64_t congestion_swaps = 0;
  uint64_t min_active_holds = 0;  ///< demotions refused by ev_min_active
  /// Taken out of service on a loss pending a confirming probe
  /// (ProtocolConfig::loss_confirm) ...
  uint64_t suspected = 0;
  /// ... and put back, the probe answered or the loss proved spurious, with
  /// no event (those that were not became `retired`).
  uint64_t cleared = 0;
  uint64_t probes_sent = 0;
};

/// Protection domain 0 always exists: it is what QPs and regions use when
/// the driver names none (the simulator, the test harness).
inline constexpr uint32_t kDefaultPd = 0;

/// create_qp() arguments.
struct QpInit {
  uint32_t send_cq = 0;      ///< CQ id (Endpoint::create_cq) for send completions
  uint32_t recv_cq = 0;      ///< CQ id for receive (WRITE_WITH_IMM) completions
  bool sq_sig_all = false;
  /// MRC, or the RoCEv2 RC baseline (types.hpp). Fixed for the QP's life.
  Transport transport = Transport::mrc;
  uint32_t pd = kDefaultPd;  ///< protection domain (Endpoint::alloc_pd)
  /// Send / receive queue depth: post_send / post_recv return no_memory
  /// past it. 0 = the endpoint's max_send_wr / max_recv_wr; larger values
  /// are clamped to them.
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
};

/// Work-request opcodes MRC supports (reference 3.1).
enum class WrOpcode : uint8_t { rdma_write, rdma_write_with_imm };

/// Gather elements one work request may name (ibverbs max_send_sge).
inline constexpr uint32_t kMaxSge = 16;
/// Largest inline payload of one work request (ibverbs max_inline_data).
inline constexpr uint32_t kMaxInlineData = 256;

/// One gather element: `length` bytes at `addr`, inside the region `lkey`.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

/// A WRITE or WRITE_WITH_IMM work request.
///
/// The source is given in exactly one of three forms:
///  - one buffer: `local_addr`, `lkey`, `length` (sg_list and inline_data
///    empty) -- what the simulator and most tests use;
///  - a gather list: `sg_list`, up to kMaxSge elements read in order, each
///    inside a region of the QP's protection domain (local_addr, lkey and
///    length must be 0); the message is their concatenation;
///  - inline: `inline_data`, up to kMaxInlineData bytes copied when the WR
///    is posted, so the buffer may be reused at once and needs no region
///    (local_addr, lkey, length and sg_list must be empty).
/// The spans only need to live for the post_send() call.
struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::rdma_write;
  uint64_t local_addr = 0;   ///< one-buffer form: source (inside an MR of this endpoint)
  uint32_t lkey = 0;
  uint32_t length = 0;       ///< one-buffer form: bytes, 0 .. 2^31
  std::span<const Sge> sg_list;           ///< gather form
  std::span<const uint8_t> inline_data;   ///< inline form
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;          ///< immediate data (host order)
  bool signaled = true;      ///< produce a completion on success
};

/// A receive WQE; consumed by an incoming WRITE_WITH_IMM.
struct RecvWr {
  uint64_t wr_id = 0;
};

/// Completion status (maps 1:1 onto ibv_wc_status in the C API).
enum class WcStatus : uint8_t {
  success,
  loc_len_err,
  loc_qp_op_err,
  loc_prot_err,
  wr_flush_err,
  rem_inv_req_err,
  rem_access_err,
  rem_op_err,
  retry_exc_err,
  general_err,
};
const char* to_string(WcStatus s);

enum class WcOpcode : uint8_t { rdma_write, recv_rdma_with_imm };

/// A work completion. `cq` is the CQ id given at QP creation for that side.
struct WorkCompletion {
  uint64_t wr_id = 0;
  uint32_t cq = 0;
  uint32_t qpn = 0;
  WcStatus status = WcStatus::success;
  WcOpcode opcode = WcOpcode::rdma_write;
  uint32_t byte_len = 0;
  uint32_t imm = 0;
  bool with_imm = false;
};

/// A QP entered ERROR (IBV_EVENT_QP_FATAL / access error in the C API).
struct QpErrorEvent {
  uint32_t qpn = 0;
  WcStatus cause = WcStatus::general_err;
};

/// A completion queue overflowed (IBV_EVENT_CQ_ERR): a completion found it
/// full. Reported once per CQ; the completions that did not fit are counted
/// in CqInfo::overflows and lost, so the CQ no longer tells the whole story.
struct CqErrorEvent {
  uint32_t cq = 0;
};

/// EV states (reference 4.6).
enum class EvState : uint8_t { good, skip, assumed_bad, denied };
const char* to_string(EvState s);

/// An EV changed state (reference 4.10).
struct EvEvent {
  Time at;
  uint32_t qpn = 0;
  uint64_t ev_profile_id = 0;
  uint32_t ev = 0;          ///< compact EV value
  uint8_t port = 0;         ///< 0-based port (plane)
  EvState from = EvState::good;
  EvState to = EvState::good;
  uint32_t drop_count = 0;  ///< losses attributed to this EV since its last event
  /// A demotion to ASSUMED_BAD was refused because it would leave fewer
  /// than ev_min_active usable EVs (reference 8, item 9): `from` == `to`,
  /// the EV stays in service. Reported once until the EV leaves service,
  /// when the profile asks for ASSUMED_BAD events.
  bool held = false;
};

/// A peer reported its port status (reference 4.7), or a local port changed.
struct PortEvent {
  uint64_t peer = 0;  ///< the reporting peer; 0 for a local port change
  uint32_t up_mask = 0;
  /// A local port change (Endpoint::set_port_up), not a peer's report: a
  /// driver whose peer addresses include 0 tells the two apart here.
  bool local = false;
};

/// An endpoint EV probe (Endpoint::send_ev_probe) or a controller's
/// port-status update (Endpoint::send_port_status) was answered or timed
/// out (controller API, reference 6.3.7).
struct ProbeResult {
  uint16_t req_id = 0;
  bool answered = false;
  uint8_t rx_port = 0;     ///< 0-based port the response arrived on
  Duration rtt;
  bool port_status = false;  ///< the request was a port-status update
};

/// Everything Endpoint::poll_event() reports. Work completions are not
/// events: they go to the completion queue each QP names (Endpoint::poll_cq).
using Event = std::variant<QpErrorEvent, CqErrorEvent, EvEvent, PortEvent, ProbeResult>;

/// Whether a packet was trimmed by a switch (from the IP DSCP the driver read).
enum class TrimMark : uint8_t { none, trimmed, trimmed_lasthop };

/// Traffic class a packet must be sent in (reference 3.9).
enum class TrafficClass : uint8_t { control, data, data_rtx };

/// What the driver tells the core about a received packet beyond its bytes.
struct RxMeta {
  uint8_t port = 0;        ///< 0-based local port (plane) it arrived on
  uint64_t peer = 0;       ///< source address, as the same opaque id QPs use
  uint32_t entropy = 0;    ///< EV from UDP source port / flow label
  bool ecn_ce = false;     ///< IP ECN was Congestion Experienced
  TrimMark trim = TrimMark::none;
  /// Payload bytes the packet carries beyond the bytes given (simulator:
  /// payload travels as a length only). If non-zero, no payload is written.
  uint32_t phantom_payload = 0;
};

/// A contiguous piece of a packet's payload.
struct PayloadSegment {
  const uint8_t* data = nullptr;
  uint32_t len = 0;
};

/// A packet the core wants sent. The header bytes are in the caller's buffer.
///
/// The payload is contiguous at `payload` (payload_len bytes), unless the
/// packet straddles elements of a gather list: then `payload` is null,
/// `gather` names the message's elements and payload_segments() lists the
/// pieces. Pointers stay valid until the WR completes; `gather` only until
/// the next call into the endpoint.
struct Transmit {
  uint8_t port = 0;          ///< 0-based port (plane) to send on
  uint32_t entropy = 0;      ///< EV to put in UDP source port / flow label
  /// The expanded wire EV of `entropy` (SRv6: the outer destination
  /// address) when the QP's EV profile has one (EvProfile::wire_evs), else
  /// null. Not owned: valid while the QP exists.
  const WireEv* wire_ev = nullptr;
  uint64_t peer = 0;         ///< destination address id
  TrafficClass tc = TrafficClass::data;
  bool trimmable = false;
  /// New data whose EV burst (ProtocolConfig::ev_burst) goes on: the QP's
  /// next new packet takes this EV too. A driver that batches packets
  /// stops its batch where this is false, so a burst is not cut in two.
  bool burst_more = false;
  uint16_t header_len = 0;   ///< bytes written to the header buffer
  const uint8_t* payload = nullptr;  ///< local payload address (never owned)
  uint32_t payload_len = 0;
  /// The local QP whose data packet this is (0 for control packets), for
  /// Endpoint::on_transmit_refused.
  uint32_t qpn = 0;
  const Sge* gather = nullptr;       ///< the message's gather list (see above)
  uint16_t gather_count = 0;
  uint32_t gather_offset = 0;        ///< payload offset within the message
};

/// The payload of `tx` as contiguous segments, in order: one for a
/// contiguous payload, several for one that straddles gather elements, none
/// for an empty one. Returns the number written to `out` (at most kMaxSge;
/// `out` must hold that many).
size_t payload_segments(const Transmit& tx, std::span<PayloadSegment> out);

}  // namespace mrc::core
