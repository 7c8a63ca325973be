// Plain types shared by the core's public surface: QP states, attributes,
// work requests, completions, events and packet descriptors.
#pragma once

#include <cstdint>
#include <span>
#include <variant>

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
}  // namespace qp_attr

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
};

/// Work-request opcodes MRC supports (reference 3.1).
enum class WrOpcode : uint8_t { rdma_write, rdma_write_with_imm };

/// A WRITE or WRITE_WITH_IMM work request.
struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::rdma_write;
  uint64_t local_addr = 0;   ///< source buffer (inside an MR of this endpoint)
  uint32_t lkey = 0;
  uint32_t length = 0;       ///< bytes, 0 .. 2^31
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
  uint64_t peer = 0;  ///< 0 for a local port change
  uint32_t up_mask = 0;
};

/// An endpoint EV probe completed (controller API, reference 6.3.7).
struct ProbeResult {
  uint16_t req_id = 0;
  bool answered = false;
  uint8_t rx_port = 0;     ///< 0-based port the response arrived on
  Duration rtt;
};

using Event = std::variant<WorkCompletion, QpErrorEvent, EvEvent, PortEvent, ProbeResult>;

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

/// A packet the core wants sent. The header bytes are in the caller's buffer.
struct Transmit {
  uint8_t port = 0;          ///< 0-based port (plane) to send on
  uint32_t entropy = 0;      ///< EV to put in UDP source port / flow label
  uint64_t peer = 0;         ///< destination address id
  TrafficClass tc = TrafficClass::data;
  bool trimmable = false;
  uint16_t header_len = 0;   ///< bytes written to the header buffer
  const uint8_t* payload = nullptr;  ///< local payload address (never owned)
  uint32_t payload_len = 0;
};

}  // namespace mrc::core
