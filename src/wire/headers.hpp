// SPDX-License-Identifier: BSD-2-Clause
// MRC header structs and their bit layouts (protocol reference section 3.3).
//
// Each header is a plain struct plus a static `fields()` table that lists
// (bit offset, width, member) in network order. encode()/decode() walk that
// table, so a layout correction is a one-line change here and every user,
// test and fuzzer follows. Offsets count from the MSB of the header's first
// byte. The layouts are the provisional reconstruction the reference adopts
// (reference section 8, item 1); PETH, ERTH and EETH follow the public
// implementations field by field (docs/architecture.md, "PETH, ERTH, EETH").
// Reserved bits are written as zero and ignored on decode.
//
// decode() never reads past the bytes it is given: a short buffer yields
// Errc::truncated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "util/result.hpp"
#include "wire/bits.hpp"

namespace mrc::wire {

/// Default UDP destination port (RoCEv2's 4791; reference section 8, item 2).
inline constexpr uint16_t kDefaultUdpPort = 4791;

/// Base Transport Header, 12 bytes. IBTA layout; MRC reuses the AckReq byte
/// for the A (ack request), rtx (retransmission) and ts (TSETH present) flags.
struct Bth {
  static constexpr size_t kSize = 12;
  uint8_t opcode = 0;
  bool solicited = false;
  bool mig_req = false;
  uint8_t pad_count = 0;   ///< 2 bits
  uint8_t tver = 0;        ///< 4 bits
  uint16_t pkey = 0xffff;
  uint32_t dest_qp = 0;    ///< 24 bits
  bool ack_req = false;    ///< A: ask the responder for an immediate SACK
  bool rtx = false;        ///< this transmission is a retransmission
  bool ts = false;         ///< a TSETH follows METH
  /// OpenMRC secure QPs (docs/security.md): a SECETH follows BTH, before
  /// every other extension header. Reserved (0) in plain MRC.
  bool sec = false;
  uint32_t psn = 0;        ///< 24 bits

  // Inlined into encode/decode on every packet: at 12 fields GCC stopped
  // inlining it on its own, which cost the responder 10 ns a packet
  // (bench_core, docs/performance.md).
  template <class V, class S>
  MRC_WIRE_INLINE static void fields(V&& v, S& s) {
    v(0, 8, s.opcode);
    v(8, 1, s.solicited);
    v(9, 1, s.mig_req);
    v(10, 2, s.pad_count);
    v(12, 4, s.tver);
    v(16, 16, s.pkey);
    v(40, 24, s.dest_qp);
    v(64, 1, s.ack_req);
    v(66, 1, s.rtx);
    v(67, 1, s.ts);
    v(68, 1, s.sec);
    v(72, 24, s.psn);
  }
};

/// Security Extended Transport Header, 24 bytes (OpenMRC secure QPs,
/// docs/security.md "Secure QPs"): present when BTH.sec is set, right after
/// BTH. The AES-GCM tag rides here rather than after the payload, so a
/// sealed packet is laid out as a plain one (headers, payload, ICRC) and no
/// driver's scatter-gather or GSO layout changes.
///   0: key id;  1: flags (bit 7: E, payload encrypted; others 0);
///   2-7: transmission counter (48 bits);  8-23: GCM tag (128 bits).
struct Seceth {
  static constexpr size_t kSize = 24;
  /// Offset of the tag in the header: the additional data skips it.
  static constexpr size_t kTagOffset = 8;
  static constexpr size_t kTagBytes = 16;
  uint8_t key_id = 0;
  bool encrypted = false;
  uint64_t counter = 0;    ///< 48 bits
  uint64_t tag_hi = 0;     ///< tag bytes 0-7
  uint64_t tag_lo = 0;     ///< tag bytes 8-15

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 8, s.key_id);
    v(8, 1, s.encrypted);
    v(16, 48, s.counter);
    v(64, 64, s.tag_hi);
    v(128, 64, s.tag_lo);
  }
};

/// MRC Extended Transport Header, 4 bytes: RQMSN then MSN.
struct Meth {
  static constexpr size_t kSize = 4;
  uint16_t rqmsn = 0;  ///< WriteIMM message number (receive-queue MSN)
  uint16_t msn = 0;    ///< requester message sequence number

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 16, s.rqmsn);
    v(16, 16, s.msn);
  }
};

/// Timestamp Extended Header, 4 bytes (optional; BTH.ts says it is present).
struct Tseth {
  static constexpr size_t kSize = 4;
  uint16_t timestamp = 0;        ///< transmit time in resolution ticks, wraps
  bool alt_resolution = false;   ///< 0: default 128 ns ticks; 1: implementation-defined
  uint8_t format = 1;            ///< 4 bits, format type (1)

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 16, s.timestamp);
    v(16, 1, s.alt_resolution);
    v(28, 4, s.format);
  }
};

/// RDMA Extended Transport Header, 16 bytes; carried by every data packet.
struct Reth {
  static constexpr size_t kSize = 16;
  uint64_t va = 0;          ///< remote address of this packet's first payload byte
  uint32_t rkey = 0;
  uint32_t dma_length = 0;  ///< length of the whole WRITE operation

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 64, s.va);
    v(64, 32, s.rkey);
    v(96, 32, s.dma_length);
  }
};

/// Immediate data, 4 bytes (WRITE_*_WITH_IMM).
struct ImmDt {
  static constexpr size_t kSize = 4;
  uint32_t imm = 0;
  template <class V, class S>
  static void fields(V&& v, S& s) { v(0, 32, s.imm); }
};

/// ACK Extended Transport Header, 4 bytes: syndrome then 24-bit MSN.
struct Aeth {
  static constexpr size_t kSize = 4;
  uint8_t syndrome = 0;
  uint32_t msn = 0;  ///< 24 bits
  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 8, s.syndrome);
    v(8, 24, s.msn);
  }
};

/// AETH syndromes (IBTA 9.7.5.1). MRC advertises "no credit" (0x1F) on ACKs.
namespace aeth {
inline constexpr uint8_t kAckNoCredit = 0x1F;          ///< ACK, credit field invalid
inline constexpr uint8_t kNakPsnSeqError = 0x60;       ///< NAK code 0
inline constexpr uint8_t kNakInvalidRequest = 0x61;    ///< NAK code 1
inline constexpr uint8_t kNakRemoteAccess = 0x62;      ///< NAK code 2
inline constexpr uint8_t kNakRemoteOperational = 0x63; ///< NAK code 3
constexpr bool is_nak(uint8_t syndrome) { return (syndrome & 0xE0) == 0x60; }
}  // namespace aeth

/// SACK path verdict carried in SETH.M (reference 3.7, 3.11).
enum class Mark : uint8_t { none = 0, skip_once = 1, always_skip = 2 };

/// Selective ACK header (SETH), 28 bytes.
struct Seth {
  static constexpr size_t kSize = 28;
  uint8_t type = 0;            ///< 4 bits
  uint8_t next_header = 0;     ///< 5 bits
  uint8_t mark = 0;            ///< 2 bits, a Mark
  bool probe_response = false; ///< PR: this SACK answers a reliability probe
  int16_t ack_psn_offset = 0;  ///< PSN of the triggering packet minus cack_psn
  uint32_t entropy = 0;        ///< reflected EV of the triggering packet
  uint16_t src_conn = 0;       ///< sender's connection id (low 16 bits of its QPN)
  uint16_t dst_conn = 0;       ///< receiver's connection id (low 16 bits of its QPN)
  uint32_t cack_psn = 0;       ///< 24 bits: every PSN <= cack_psn has arrived
  uint8_t cc_type = 0;         ///< 4 bits
  uint8_t cc_flags = 0;        ///< 4 bits
  uint8_t mpr = 0;             ///< responder's MPR (128-PSN units); 0 unless dynamic MPR
  int16_t sack_offset = 0;     ///< bitmap base = cack_psn + sack_offset
  uint64_t bitmap = 0;         ///< bit i set: PSN (base + i) has arrived

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 4, s.type);
    v(4, 5, s.next_header);
    v(9, 2, s.mark);
    v(14, 1, s.probe_response);
    v(16, 16, s.ack_psn_offset);
    v(32, 32, s.entropy);
    v(64, 16, s.src_conn);
    v(80, 16, s.dst_conn);
    v(104, 24, s.cack_psn);
    v(128, 4, s.cc_type);
    v(132, 4, s.cc_flags);
    v(136, 8, s.mpr);
    v(144, 16, s.sack_offset);
    v(160, 64, s.bitmap);
  }
};

/// Congestion-control state that follows SETH, 8 bytes.
struct CcState {
  static constexpr size_t kSize = 8;
  uint16_t reflected_ts = 0;  ///< TSETH timestamp of the triggering packet (+ service time)
  uint16_t ooo_count = 0;     ///< 15 bits: packets that arrived out of order
  bool restore_cwnd = false;  ///< rc: receiver lifts its window penalty
  uint8_t rcv_cwnd_pen = 0;   ///< 7 bits, 0..127
  uint32_t rcvd_bytes = 0;    ///< 24 bits, cumulative, 256-byte units, wraps

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 16, s.reflected_ts);
    v(17, 15, s.ooo_count);
    v(32, 1, s.restore_cwnd);
    v(33, 7, s.rcv_cwnd_pen);
    v(40, 24, s.rcvd_bytes);
  }
};

/// NACK reason codes (reference 3.3).
enum class NackCode : uint8_t {
  trimmed = 0x01,
  trimmed_lasthop = 0x02,
  no_bitmap = 0x06,
  no_pkt_buffer = 0x07,
  no_resource = 0x0A,
  psn_oor_window = 0x0B,
  unexp_event = 0x19,
};
/// True for the codes above (reference 3.3); a requester drops any other.
constexpr bool nack_code_known(NackCode c) {
  switch (c) {
    case NackCode::trimmed:
    case NackCode::trimmed_lasthop:
    case NackCode::no_bitmap:
    case NackCode::no_pkt_buffer:
    case NackCode::no_resource:
    case NackCode::psn_oor_window:
    case NackCode::unexp_event: return true;
  }
  return false;
}
/// True for codes the requester retransmits after (everything but UNEXP_EVENT).
constexpr bool nack_is_retriable(NackCode c) { return c != NackCode::unexp_event; }
/// True for codes that implicate the path the packet took (mid-fabric trim).
constexpr bool nack_implicates_path(NackCode c) { return c == NackCode::trimmed; }
/// True for the trims (mid-fabric or at the last hop): congestion feedback
/// on a packet that never arrived, not a refusal by the responder.
constexpr bool nack_is_trim(NackCode c) { return c == NackCode::trimmed || c == NackCode::trimmed_lasthop; }

/// NACK header (NETH), 20 bytes.
struct Neth {
  static constexpr size_t kSize = 20;
  uint8_t type = 0;
  uint8_t next_header = 0;
  uint8_t reason = 0;        ///< a NackCode
  uint8_t vendor = 0;
  uint32_t entropy = 0;      ///< reflected EV of the NACKed packet
  uint16_t src_conn = 0;
  uint16_t dst_conn = 0;
  uint32_t nack_psn = 0;     ///< 24 bits
  uint8_t cc_type = 0;       ///< 4 bits
  uint8_t cc_flags = 0;      ///< 4 bits
  uint16_t reflected_ts = 0;

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 4, s.type);
    v(4, 5, s.next_header);
    v(16, 8, s.reason);
    v(24, 8, s.vendor);
    v(32, 32, s.entropy);
    v(64, 16, s.src_conn);
    v(80, 16, s.dst_conn);
    v(104, 24, s.nack_psn);
    v(128, 4, s.cc_type);
    v(132, 4, s.cc_flags);
    v(144, 16, s.reflected_ts);
  }
};

/// Reliability probe header (PETH), 16 bytes. Consumes no PSN.
///
/// Layout (byte: field), as both public implementations encode it
/// (anichol67/MRC-Client core/mrc_headers.py, HanGuTalker/uet-simulator
/// src/mrc/model/mrc-header.cc; docs/architecture.md "PETH, ERTH, EETH"):
///   0-1: type (4) | next_header (5) | reserved (7);  2: reserved;  3: vendor;
///   4-5: probe_id;  6-7: reserved;  8-9: src_conn;  10-11: dst_conn;
///   12-13: timestamp;  14-15: alt_resolution (bit 15) | reserved (11) | format (4, low bits of byte 15).
struct Peth {
  static constexpr size_t kSize = 16;
  uint8_t type = 0;
  uint8_t next_header = 0;
  uint8_t vendor = 0;
  uint16_t probe_id = 0;
  uint16_t src_conn = 0;
  uint16_t dst_conn = 0;
  uint16_t timestamp = 0;
  bool alt_resolution = false;
  uint8_t format = 1;  ///< 4 bits

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 4, s.type);
    v(4, 5, s.next_header);
    v(24, 8, s.vendor);
    v(32, 16, s.probe_id);
    v(64, 16, s.src_conn);
    v(80, 16, s.dst_conn);
    v(96, 16, s.timestamp);
    v(112, 1, s.alt_resolution);
    v(124, 4, s.format);
  }
};

/// Endpoint-request operation as carried on the wire (ERTH.op). Numbered
/// differently from the controller API enum on purpose (reference 6.4).
enum class EpWireOp : uint8_t { port_status_update = 0, ev_probe = 1 };

/// Endpoint request header (ERTH), 16 bytes; sent to QP 0x2, request id in BTH PSN[15:0].
///
/// Layout, as the one public implementation with an ERTH encodes it
/// (anichol67/MRC-Client core/mrc_headers.py):
///   0-1: type (4) | next_header (5) | reserved (5) | op (2, bits 1:0 of byte 1);
///   2: reserved;  3: vendor;  4-7: port_status_mask;  8-11: reserved;
///   12-13: timestamp;  14-15: alt_resolution (bit 15) | reserved (11) | format (4).
struct Erth {
  static constexpr size_t kSize = 16;
  uint8_t type = 0;
  uint8_t next_header = 0;
  uint8_t op = 0;                ///< 2 bits, an EpWireOp
  uint8_t vendor = 0;
  uint32_t port_status_mask = 0; ///< bit N-1 set: local port N is up (1-based ports)
  uint16_t timestamp = 0;
  bool alt_resolution = false;
  uint8_t format = 1;            ///< 4 bits

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 4, s.type);
    v(4, 5, s.next_header);
    v(14, 2, s.op);
    v(24, 8, s.vendor);
    v(32, 32, s.port_status_mask);
    v(96, 16, s.timestamp);
    v(112, 1, s.alt_resolution);
    v(124, 4, s.format);
  }
};

/// Endpoint response header (EETH), 36 bytes.
///
/// Layout. From anichol67/MRC-Client core/mrc_headers.py (the one public
/// implementation with an EETH): type (4) | next_header (5) in bytes 0-1, op
/// in bits 5:4 of byte 1, the reflected timestamp in bytes 28-29; everything
/// else is reserved there. The fields below marked "OpenMRC" have no home in
/// that layout and sit in its reserved bytes (a peer following it writes
/// zeros, which decode as "unknown"):
///   3: vendor (byte 3, as in ERTH, PETH and NETH);
///   4-7: entropy (OpenMRC; where SETH and NETH carry the reflected EV);
///   8: rx_port (OpenMRC);  9 bit 7: svc_time_adjusted (OpenMRC);
///   28-29: reflected_ts.
struct Eeth {
  static constexpr size_t kSize = 36;
  uint8_t type = 0;
  uint8_t next_header = 0;
  uint8_t op = 0;                ///< 2 bits, echoes the request's EpWireOp
  bool svc_time_adjusted = false;///< OpenMRC: reflected_ts already includes the responder's service time
  uint8_t vendor = 0;
  uint8_t rx_port = 0;           ///< OpenMRC: 1-based port the request arrived on (0: not reported)
  uint16_t reflected_ts = 0;     ///< the request's ERTH timestamp
  uint32_t entropy = 0;          ///< OpenMRC: reflected EV of the request (0: not reported)

  template <class V, class S>
  static void fields(V&& v, S& s) {
    v(0, 4, s.type);
    v(4, 5, s.next_header);
    v(10, 2, s.op);
    v(24, 8, s.vendor);
    v(32, 32, s.entropy);
    v(64, 8, s.rx_port);
    v(72, 1, s.svc_time_adjusted);
    v(224, 16, s.reflected_ts);
  }
};

/// RoCEv2 CNP payload (IBTA annex A17.9.3), 16 bytes: all reserved. Written
/// as zero, ignored on decode; it exists so the CNP's length is checked.
struct Cnp {
  static constexpr size_t kSize = 16;
  template <class V, class S>
  static void fields(V&&, S&) {}
};

/// Writes `h` into `out[0, H::kSize)`. `out` must hold H::kSize bytes.
template <class H>
inline void encode(const H& h, uint8_t* out) {
  std::memset(out, 0, H::kSize);
  H::fields(detail::Writer{out}, h);
}

/// Reads an H from the front of `in`. Errc::truncated if `in` is too short.
template <class H>
inline Result<H> decode(std::span<const uint8_t> in) {
  if (in.size() < H::kSize) return Errc::truncated;
  H h{};
  H::fields(detail::Reader{in.data()}, h);
  return h;
}

}  // namespace mrc::wire
