// SPDX-License-Identifier: BSD-2-Clause
// Whole-packet codec: the opcode table and the header chain after BTH.
//
// A packet here is what follows the UDP header: BTH, the headers its opcode
// calls for, then payload. (The UDP datapath adds ICRC; the simulator carries
// payload as a length only.) parse() validates the chain against the bytes
// present and never over-reads; encode() writes the chain the opcode calls for.
//
// Two opcode families share the table:
//  - MRC (0xC6..0xDE, reference 3.3): every data packet carries METH, an
//    optional TSETH (BTH.ts) and RETH;
//  - IBTA RC / RoCEv2 (0x06..0x0B, 0x11, 0x81), for the RoCEv2 baseline
//    transport: no METH or TSETH, RETH only on FIRST/ONLY, ImmDt on the
//    *_WITH_IMM opcodes, AETH on ACKNOWLEDGE, 16 reserved bytes on CNP. BTH.ts
//    and BTH.rtx are reserved bits there: ignored on parse, and the core
//    writes them as zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "util/result.hpp"
#include "wire/headers.hpp"

namespace mrc::wire {

/// MRC opcodes (reference 3.3): the 0xC0 manufacturer range plus RC's low bits.
enum class Opcode : uint8_t {
  write_first = 0xC6,
  write_middle = 0xC7,
  write_last = 0xC8,
  write_last_imm = 0xC9,
  write_only = 0xCA,
  write_only_imm = 0xCB,
  ack = 0xD1,
  endpoint_request = 0xD8,
  endpoint_response = 0xD9,
  sack = 0xDC,
  nack = 0xDD,
  probe = 0xDE,
  // IBTA RC opcodes (IBTA vol. 1, 9.2; RoCEv2 annex A17), RoCEv2 baseline only.
  rc_write_first = 0x06,
  rc_write_middle = 0x07,
  rc_write_last = 0x08,
  rc_write_last_imm = 0x09,
  rc_write_only = 0x0A,
  rc_write_only_imm = 0x0B,
  rc_ack = 0x11,
  /// RoCEv2 Congestion Notification Packet (annex A17.9.3): BTH + 16 reserved
  /// bytes, addressed to the QP whose data was ECN-marked.
  cnp = 0x81,
};

/// The WRITE opcode for a packet at this position of a message: MRC's
/// (0xC6..0xCB) or, with `rc`, IBTA RC's (0x06..0x0B), which differ only by
/// the 0xC0 manufacturer range.
constexpr Opcode write_opcode(bool first, bool last, bool imm, bool rc) {
  const uint8_t base = rc ? 0x06 : 0xC6;  // FIRST
  uint8_t off;
  if (first && last) off = imm ? 5 : 4;   // ONLY / ONLY_WITH_IMM
  else if (first) off = 0;                // FIRST
  else if (last) off = imm ? 3 : 2;       // LAST / LAST_WITH_IMM
  else off = 1;                           // MIDDLE
  return static_cast<Opcode>(base + off);
}

/// Which extension header follows BTH for a non-data opcode.
enum class ExtHeader : uint8_t { none, aeth, seth, neth, peth, erth, eeth, cnp };

/// One row of the opcode table.
struct OpcodeInfo {
  bool valid = false;
  bool data = false;    ///< a WRITE packet: carries payload (headers per meth/reth/imm)
  bool first = false;   ///< first packet of a message (FIRST or ONLY)
  bool last = false;    ///< last packet of a message (LAST or ONLY)
  bool imm = false;     ///< carries ImmDt
  ExtHeader ext = ExtHeader::none;
  std::string_view name;
  bool rc = false;      ///< IBTA RC / RoCEv2 family (false: MRC)
  bool meth = false;    ///< METH (and, if BTH.ts, TSETH) follow BTH: MRC data only
  bool reth = false;    ///< RETH follows: every MRC data packet, RC FIRST/ONLY
};

/// The table row for `opcode`; `.valid` is false for anything neither MRC nor
/// the RC baseline defines.
const OpcodeInfo& opcode_info(uint8_t opcode);

/// Largest header chain a plain packet carries (MRC BTH+METH+TSETH+RETH+ImmDt
/// = 40, BTH+SETH+CC_STATE = 48, BTH+EETH = 48; RC at most BTH+RETH+ImmDt =
/// 32), rounded up. Sizes of simulated packets are reckoned with it.
inline constexpr size_t kMaxPlainHeaderBytes = 64;
/// Largest header chain any packet carries: a plain one and a SECETH (secure
/// QPs). Header buffers given to the core hold this many bytes.
inline constexpr size_t kMaxHeaderBytes = kMaxPlainHeaderBytes + Seceth::kSize;

/// The decoded header chain of one packet. Only the members the opcode (and,
/// for TSETH, BTH.ts) calls for are meaningful.
struct Headers {
  Bth bth;
  Seceth sec;   ///< when bth.sec
  Meth meth;
  Tseth tseth;
  Reth reth;
  ImmDt imm;
  Aeth aeth;
  Seth seth;
  CcState cc;
  Neth neth;
  Peth peth;
  Erth erth;
  Eeth eeth;
  Cnp cnp;

  Opcode opcode() const { return static_cast<Opcode>(bth.opcode); }
  const OpcodeInfo& info() const { return opcode_info(bth.opcode); }
};

/// Size of the header chain `h` describes (depends on the opcode and, for MRC
/// data, BTH.ts). Zero if the opcode is in neither family.
size_t header_size(const Headers& h);

/// Encodes the chain into `out`. Returns the number of bytes written, or
/// Errc::unknown_opcode / Errc::too_big if `out` is smaller than header_size().
Result<size_t> encode(const Headers& h, std::span<uint8_t> out);

/// A parsed packet: headers plus where the payload lies in the input.
struct Parsed {
  Headers h;
  size_t header_len = 0;   ///< bytes of header chain
  size_t payload_len = 0;  ///< payload bytes present after the chain (pad removed)
};

/// Parses a packet (UDP payload, no ICRC). With BTH.sec set, a SECETH is
/// taken after BTH (its checks are the secure QP's, not the parser's).
/// Fails with:
///  - Errc::truncated if the bytes end inside a header the opcode requires;
///  - Errc::unknown_opcode for an opcode outside the table;
///  - Errc::length_mismatch if a control packet has trailing bytes, a data
///    packet is shorter than its pad count, or its payload exceeds the DMA
///    length of the RETH it carries (RC MIDDLE/LAST carry none: the responder
///    bounds them against the message);
///  - Errc::malformed for reserved QPN use by a data packet or an invalid TVer.
Result<Parsed> parse(std::span<const uint8_t> in);

/// Same as parse(), decoding into `out` in place (the hot path: no copy, and
/// `out` can be reused across packets). Only the headers the opcode calls for
/// are written; the others keep whatever they held. On error `out` is
/// partially written and must not be used.
Status parse_into(std::span<const uint8_t> in, Parsed& out);

}  // namespace mrc::wire
