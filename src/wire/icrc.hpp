// SPDX-License-Identifier: BSD-2-Clause
// Invariant CRC (ICRC) of RoCEv2 (IBTA vol. 1 9.8.2 as annex A17 applies it
// to IP/UDP): the CRC-32 of IEEE 802.3 over the packet from the IP header to
// the end of the payload, with every field a router or switch may change in
// flight masked to ones. Every MRC packet carries it as its last 4 bytes; a
// receiver drops a packet whose ICRC does not match (DESIGN.md "Software
// device").
//
// The CRC runs over, in order:
//  1. eight 0xFF bytes, standing in for the masked InfiniBand LRH;
//  2. the IP header the packet is delivered on, with its variant fields set
//     to ones: IPv4 type of service (DSCP+ECN), TTL and header checksum;
//     IPv6 traffic class, flow label and hop limit. In SRv6 encapsulation
//     this is the INNER IPv6 header: the outer one's destination is the uSID
//     carrier each switch shifts (wire/framing.hpp finds the right header);
//  3. the UDP header with its checksum set to ones;
//  4. BTH with its resv8a byte (byte 4, FECN/BECN in InfiniBand) set to ones;
//  5. the remaining transport headers, the payload and the pad bytes.
// The CRC is the reflected CRC-32 (polynomial 0xEDB88320, initial value
// 0xFFFFFFFF, final inversion) and goes on the wire least significant byte
// first (put_icrc), as Linux's soft-RoCE (rxe) and RoCE NICs append it.
//
// A trimmed packet's ICRC is not checked: the switch removed the bytes it
// covered (reference 3.9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "util/result.hpp"

namespace mrc::wire {

inline constexpr size_t kIcrcBytes = 4;

/// CRC-32 (reflected, polynomial 0xEDB88320) continuing from `crc`
/// (start with 0xFFFFFFFF, finish by inverting). `crc` is the raw register,
/// not a finished CRC: zlib's crc32(c, buf, len) equals
/// ~crc32_update(~c, buf). Runs on Intel ISA-L's carry-less-multiply code
/// when built with it (CMake MRC_WITH_ISAL), else on crc32_update_portable();
/// the two return the same value for every input.
uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> bytes);

/// The same function on compile-time slice-by-8 tables, whatever the build:
/// the fallback when ISA-L is absent, and the reference the tests hold
/// crc32_update() to.
uint32_t crc32_update_portable(uint32_t crc, std::span<const uint8_t> bytes);

/// Which code crc32_update() runs: "isa-l" or "slice-by-8".
const char* crc32_backend();

/// Copies `src` to `dst` (src.size() bytes; the two must not overlap) and
/// returns crc32_update(crc, src): one pass over the bytes instead of a copy
/// and a second read for the CRC. On x86-64 CPUs with AVX-512 and
/// VPCLMULQDQ (checked at run time) the copy and the carry-less-multiply
/// folding share each 64-byte load; elsewhere, and below 256 bytes, it is
/// std::memcpy followed by crc32_update(). Same result on every path.
uint32_t crc32_copy(uint8_t* dst, std::span<const uint8_t> src, uint32_t crc);

/// Which code crc32_copy() runs for long inputs: "avx512-vpclmulqdq" or
/// "memcpy+crc32_update".
const char* crc32_copy_backend();

/// The IBTA RoCEv2 ICRC of one packet, as it is on the wire (masking is done
/// here on a copy; nothing is modified).
///  - `ip_udp`: the covered IP header immediately followed by the UDP
///    header: 28 bytes starting with an IPv4 header without options
///    (version 4, IHL 5), or 48 bytes starting with an IPv6 header (version
///    6; in SRv6 mode the inner one);
///  - `transport`: BTH and the headers after it (at least a BTH);
///  - `payload`: everything after those up to the ICRC: payload and pad.
/// The split between `transport` and `payload` does not matter as long as
/// BTH is whole in `transport`.
///  - `payload_copy`: when not null, `payload` is also copied there
///    (payload.size() bytes, not overlapping it) in the same pass as its CRC
///    (crc32_copy): a sender staging a packet in a buffer of its own.
/// Errc::invalid_argument if `ip_udp` is not one of the two shapes above or
/// `transport` is shorter than a BTH; nothing is copied then.
Result<uint32_t> icrc(std::span<const uint8_t> ip_udp, std::span<const uint8_t> transport,
                      std::span<const uint8_t> payload, uint8_t* payload_copy = nullptr);

/// icrc() in two steps, for packets that share their IP and UDP headers
/// (the segments of one GSO burst or GRO datagram: one size, one socket,
/// one destination). icrc_prefix() is the CRC register after the covered
/// headers before the BTH (the masked LRH stand-in, IP and UDP), and
/// icrc_from_prefix() goes on from it: for every input icrc() accepts,
///   icrc(ip_udp, t, p, c) == icrc_from_prefix(*icrc_prefix(ip_udp), t, p, c).
/// A sender's headers (`transport` at most kMaxHeaderBytes, resv8a 0) are
/// read in place. Errors: icrc_prefix() as icrc() for `ip_udp`;
/// icrc_from_prefix() Errc::invalid_argument for a `transport` shorter than
/// a BTH (nothing copied).
Result<uint32_t> icrc_prefix(std::span<const uint8_t> ip_udp);
Result<uint32_t> icrc_from_prefix(uint32_t prefix, std::span<const uint8_t> transport, std::span<const uint8_t> payload,
                                  uint8_t* payload_copy = nullptr);

/// Writes `icrc` to `out[0..4)` in wire order (least significant byte first).
inline void put_icrc(uint32_t icrc, uint8_t* out) {
  for (size_t i = 0; i < kIcrcBytes; ++i) out[i] = static_cast<uint8_t>(icrc >> (8 * i));
}

/// Reads an ICRC written by put_icrc() from `in[0..4)`.
inline uint32_t get_icrc(const uint8_t* in) {
  uint32_t v = 0;
  for (size_t i = 0; i < kIcrcBytes; ++i) v |= uint32_t{in[i]} << (8 * i);
  return v;
}

}  // namespace mrc::wire
