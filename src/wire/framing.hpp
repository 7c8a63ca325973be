// SPDX-License-Identifier: BSD-2-Clause
// UDP / IPv4 / IPv6 / SRv6 framing: the headers in front of BTH, and where
// the entropy value (EV) rides in them (reference 3.3, 4.1).
//
// Three EV modes (reference 4.1; `EvMode`):
//  - udp:  one IPv4 or IPv6 header, then UDP. The EV is the UDP source port
//          (16 bits).
//  - stev: one IPv6 header, then UDP. The EV (up to 32 bits) is split over
//          the UDP source port and the low bits of the IPv6 flow label
//          (`StevSplit`; reference default: EV[15:0] -> source port,
//          EV[31:16] -> flow label[15:0], reference 8 item 3).
//  - srv6: an outer IPv6 header whose destination is the uSID carrier
//          (locator + uSIDs, which each switch shifts), next header 41, the
//          inner IPv6 header with the real host addresses, then UDP. The
//          compact EV is still carried, split as in stev mode over the UDP
//          source port and the INNER flow label (copied to the outer flow
//          label too), so the responder can reflect it: the carrier address
//          changes hop by hop and cannot be echoed (reference 3.3, 4.1).
//
// The ICRC (wire/icrc.hpp) covers the IP header the packet is delivered on
// and never rewritten in flight: the only header in udp/stev mode, the inner
// one in srv6 mode. build_frame() computes it; frame_icrc() and
// verify_icrc() compute it for a frame built or parsed here.
//
// UDP checksum (`UdpChecksumMode`):
//  - computed (the default in every mode): the RFC 768 checksum with the
//    pseudo-header of the IP header UDP sits in. In srv6 mode that is the
//    inner header, whose addresses never change, so the checksum still holds
//    after every uSID shift (one computed over the carrier address would not:
//    DESIGN.md "Software device"). It is the default because it is what any
//    receiving stack accepts: RFC 8200 makes an IPv6 UDP checksum mandatory
//    and a zero one acceptable only where the receiver has opted in
//    (RFC 6935, 6936).
//  - zero: no checksum (field 0), the ICRC being the end-to-end check. Allowed
//    over IPv4 (udp mode), and in srv6 mode as the RFC 6935/6936 tunnel
//    exception for receivers configured to take it; refused for a plain IPv6
//    header (udp/stev over IPv6), where RFC 8200 forbids it. It saves the
//    sender a pass over the payload.
//
// Everything here is stateless and allocation-free; the builder writes into
// a caller buffer and the parser never reads outside the span it is given.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "util/result.hpp"
#include "wire/headers.hpp"
#include "wire/icrc.hpp"

namespace mrc::wire {

inline constexpr size_t kIpv4HeaderBytes = 20;  ///< no options (this module never sends or accepts any)
inline constexpr size_t kIpv6HeaderBytes = 40;
inline constexpr size_t kUdpHeaderBytes = 8;
/// Longest header run build_frame() writes: SRv6 outer + inner IPv6 + UDP.
inline constexpr size_t kMaxFrameHeaderBytes = 2 * kIpv6HeaderBytes + kUdpHeaderBytes;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr uint8_t kIpProtoIpv6 = 41;  ///< IPv6-in-IPv6 (RFC 2473)

/// Where the EV rides (reference 4.1).
enum class EvMode : uint8_t { udp, stev, srv6 };

/// IP version of the header UDP sits in (the inner one in srv6 mode).
enum class IpVersion : uint8_t { v4 = 4, v6 = 6 };

/// UDP checksum policy of the sender (see the file comment).
enum class UdpChecksumMode : uint8_t { computed, zero };

/// What the parser found in the UDP checksum field.
enum class UdpChecksumState : uint8_t {
  zero,       ///< the field is 0: no checksum was sent
  valid,      ///< computed and verified over the pseudo-header of the IP header UDP sits in
  invalid,    ///< computed, and the datagram does not match it
  unchecked,  ///< the datagram was cut short in flight (trimmed), so it cannot be verified
};

/// How an EV of up to 32 bits is split over the UDP source port and the IPv6
/// flow label in stev and srv6 modes (reference 4.1; reference 8 item 3).
/// The defaults are the reference's: EV[15:0] -> source port, EV[31:16] ->
/// flow label[15:0].
struct StevSplit {
  uint8_t sport_bits = 16;       ///< EV bits in the source port's low bits, 0..16
  uint8_t flow_label_bits = 16;  ///< EV bits in the flow label's low bits, 0..20
  /// true: the EV's low `sport_bits` bits go to the source port and the next
  /// `flow_label_bits` to the flow label (S5, the reference default).
  /// false: the EV is read as source-port bits ‖ flow-label bits, the port
  /// taking the high part (the order S6 describes).
  bool sport_takes_low_bits = true;
};

/// A 16-byte address; an IPv4 address occupies bytes 0..3 (the parser
/// zero-fills the rest, the builder ignores it).
using IpAddress = std::array<uint8_t, 16>;

/// Framing configuration shared by a sender and its receivers.
struct FrameFormat {
  EvMode mode = EvMode::udp;
  IpVersion ip = IpVersion::v6;  ///< udp mode only; stev and srv6 are IPv6 by definition
  StevSplit stev;                ///< stev and srv6 modes
  uint16_t udp_dport = kDefaultUdpPort;
  UdpChecksumMode checksum = UdpChecksumMode::computed;  ///< sender side only
};

/// Per-packet fields of a frame to build.
struct FrameFields {
  IpAddress src{};           ///< the sending NIC port's address (outer and inner source in srv6)
  IpAddress dst{};           ///< the destination NIC's address (the inner destination in srv6)
  IpAddress srv6_carrier{};  ///< srv6 only: outer destination, locator + uSIDs (reference 2.3, 4.3)
  uint32_t ev = 0;           ///< the compact EV (must fit the mode: 16 bits in udp mode)
  uint8_t traffic_class = 0; ///< DSCP << 2 | ECN (IPv4 TOS byte), written in every IP header
  uint8_t hop_limit = 64;    ///< IPv6 hop limit / IPv4 TTL (the inner header's too in srv6)
};

/// What build_frame() produced.
struct BuiltFrame {
  size_t header_len = 0;  ///< bytes written: the IP header(s) and the UDP header; BTH goes next
  uint32_t icrc = 0;      ///< the packet's ICRC; append it with put_icrc() after the payload
};

/// Writes the IP header(s) and UDP header of a packet whose UDP payload will
/// be `transport` (BTH and the headers after it) ‖ `payload` (payload and
/// pad) ‖ the 4-byte ICRC, into `out`; computes the ICRC and, if the format
/// asks for it, the UDP checksum (which covers the ICRC bytes). Nothing is
/// kept: the caller sends out[0, header_len) ‖ transport ‖ payload ‖ ICRC.
/// Fails, writing nothing useful, with:
///  - Errc::too_big: `out` is shorter than the header run (28 bytes for IPv4,
///    48 for IPv6, 88 for srv6), or the datagram exceeds 65535 bytes of IP
///    payload;
///  - Errc::invalid_argument: `transport` is shorter than a BTH; the EV does
///    not fit the mode (more than 16 bits in udp mode, more than the split's
///    bits in stev/srv6); a split wider than 16 / 20 bits; stev or srv6 mode
///    with `ip` = v4; a zero checksum asked for a plain IPv6 header.
Result<BuiltFrame> build_frame(const FrameFormat& fmt, const FrameFields& f,
                               std::span<const uint8_t> transport, std::span<const uint8_t> payload,
                               std::span<uint8_t> out);

/// The ICRC of a udp- or stev-mode packet whose IP and UDP headers the
/// sender's kernel writes (a UDP socket), computed over the headers
/// build_frame() would write for `f`. They equal the kernel's in every field
/// the ICRC covers except the IPv4 identification, which a receiving socket
/// cannot see: this ICRC takes it as 0 (with DF, RFC 6864), and so does the
/// software device's receiver, which recomputes it from the datagram's
/// addresses and ports. Exact for IPv6. Errc::invalid_argument in srv6 mode
/// (encapsulation needs the headers built here) or for a `transport`
/// shorter than a BTH; otherwise build_frame()'s errors.
/// `payload_copy`, when not null, receives a copy of `payload` made in the
/// same pass as its CRC (icrc()): a sender staging the packet.
Result<uint32_t> datagram_icrc(const FrameFormat& fmt, const FrameFields& f, std::span<const uint8_t> transport,
                               std::span<const uint8_t> payload, uint8_t* payload_copy = nullptr);

/// datagram_icrc() in two steps, for a GSO burst's or GRO datagram's
/// segments, which share `fmt`, `f` and (all but the last, possibly) their
/// size: the ICRC register after the covered IP and UDP headers of a
/// datagram whose UDP payload is `udp_payload_len` bytes (transport,
/// payload and ICRC), to pass to icrc_from_prefix() (wire/icrc.hpp) with
/// each segment's transport headers and payload. For every input,
///   datagram_icrc(fmt, f, t, p, c) == icrc_from_prefix(
///       *datagram_icrc_prefix(fmt, f, t.size() + p.size() + kIcrcBytes), t, p, c).
/// Errors as datagram_icrc() (but for the transport's length, which
/// icrc_from_prefix() checks).
Result<uint32_t> datagram_icrc_prefix(const FrameFormat& fmt, const FrameFields& f, size_t udp_payload_len);

/// The ICRCs of one datagram's segments (a GSO burst being sent, a GRO
/// datagram received): datagram_icrc() with the register after the covered
/// IP and UDP headers computed once per segment size and kept. Holds
/// references to `fmt` and `f`: they must outlive it and stay unchanged
/// while it is used; a datagram with other headers takes a new one.
class SegmentIcrc {
 public:
  SegmentIcrc(const FrameFormat& fmt, const FrameFields& f) : fmt_(fmt), f_(f) {}

  /// datagram_icrc(fmt, f, transport, payload, payload_copy), same result
  /// and errors.
  Result<uint32_t> operator()(std::span<const uint8_t> transport, std::span<const uint8_t> payload = {},
                              uint8_t* payload_copy = nullptr) {
    const size_t udp_len = transport.size() + payload.size() + kIcrcBytes;
    if (udp_len != udp_len_) {
      prefix_ = datagram_icrc_prefix(fmt_, f_, udp_len);
      udp_len_ = udp_len;
    }
    if (!prefix_) return prefix_.error();
    return icrc_from_prefix(*prefix_, transport, payload, payload_copy);
  }

 private:
  const FrameFormat& fmt_;
  const FrameFields& f_;
  Result<uint32_t> prefix_ = Errc::invalid_argument;
  size_t udp_len_ = 0;  ///< the size prefix_ is for; 0: none yet
};

/// A received frame, as parse_frame() found it.
struct ParsedFrame {
  EvMode mode = EvMode::udp;     ///< as configured (srv6 is also what the bytes show)
  IpVersion ip = IpVersion::v6;  ///< version of the header UDP sits in
  size_t covered_ip_offset = 0;  ///< that header's offset: 0, or 40 in srv6 mode (the ICRC covers it)
  size_t udp_offset = 0;
  size_t bth_offset = 0;         ///< where BTH starts: the header run's length
  size_t frame_len = 0;          ///< bytes of the frame the outer IP header declares (<= input size)
  size_t udp_payload_len = 0;    ///< UDP payload present: BTH through ICRC (less if trimmed)
  bool trimmed = false;          ///< UDP length exceeds what the IP header declares (cut in flight)
  IpAddress src{};               ///< source host (the inner source in srv6)
  IpAddress dst{};               ///< destination host (the inner destination in srv6)
  IpAddress srv6_carrier{};      ///< srv6: outer destination as received (shifted by the switches)
  uint16_t udp_sport = 0;
  uint16_t udp_dport = 0;
  uint32_t flow_label = 0;       ///< 20 bits of the header UDP sits in (0 for IPv4)
  uint32_t ev = 0;               ///< the compact EV recovered per the mode and split
  uint8_t traffic_class = 0;     ///< of the OUTERMOST header, where switches mark ECN and remark DSCP
  uint8_t hop_limit = 0;         ///< of the outermost header
  UdpChecksumState checksum = UdpChecksumState::zero;
};

/// Parses the headers of a frame that starts at its (outer) IP header and
/// holds the whole datagram (bytes past the IP-declared length, such as
/// Ethernet padding, are ignored). `fmt.mode`, `fmt.stev` and
/// `fmt.udp_dport` are used; `fmt.ip` and `fmt.checksum` are not (udp mode
/// accepts IPv4 and IPv6). Validates the IP version (4 or 6 in udp mode, 6
/// otherwise), IPv4 IHL, header checksum and fragmentation, the next
/// header chain (UDP; 41 then UDP in srv6), every length against the bytes
/// present and against each other, and the UDP destination port; recovers the
/// EV and checks the UDP checksum. A frame whose UDP length exceeds its IP
/// length was trimmed by a switch that fixed only the IP header (reference
/// 3.9): it parses with `trimmed` set and the checksum `unchecked`.
/// Fails with:
///  - Errc::truncated: the bytes end inside a header, before the IP-declared
///    length, or before a whole BTH;
///  - Errc::length_mismatch: the lengths disagree: UDP length below 8 or
///    below the IP payload length, an IP payload too short for UDP (or, in
///    srv6, for the inner header), an outer length beyond the inner one's;
///  - Errc::not_supported: IPv4 options or fragments, IPv6 extension headers
///    (including an SRH) other than the srv6 mode's IPv6-in-IPv6;
///  - Errc::malformed: wrong IP version for the mode, bad IPv4 header
///    checksum, next header not UDP (or not 41 in srv6 mode), UDP destination
///    port other than `fmt.udp_dport`.
/// The checksum verdict is reported, not enforced: drop an `invalid` frame
/// (and a `zero` one over plain IPv6 unless zero checksums are accepted).
Result<ParsedFrame> parse_frame(const FrameFormat& fmt, std::span<const uint8_t> frame);

/// ICRC of a frame built by build_frame(): `net` is its header run
/// (out[0, header_len)), `transport` BTH onwards, `payload` the rest before
/// the ICRC. Finds the covered IP header (the inner one after an IPv6 header
/// with next header 41). Errc::invalid_argument if `net` is not one IPv4 or
/// IPv6 header (or IPv6 + IPv6) followed by UDP, or `transport` is shorter
/// than a BTH.
Result<uint32_t> frame_icrc(std::span<const uint8_t> net, std::span<const uint8_t> transport,
                            std::span<const uint8_t> payload);

/// True if the last 4 bytes of the parsed frame's UDP payload are the ICRC
/// of the rest (IBTA RoCEv2, wire/icrc.hpp). False if they are not, or the
/// frame was trimmed or carries less than BTH + ICRC. `frame` and `p` must
/// come from the same successful parse_frame() call.
bool verify_icrc(std::span<const uint8_t> frame, const ParsedFrame& p);

/// The source port and flow label that carry `ev` under `split` (the inverse
/// of ev_from_fields). Errc::invalid_argument if the split is wider than
/// 16 / 20 bits or `ev` has bits beyond sport_bits + flow_label_bits.
struct EvFields {
  uint16_t udp_sport = 0;
  uint32_t flow_label = 0;
};
Result<EvFields> ev_to_fields(uint32_t ev, const StevSplit& split);

/// The EV that `udp_sport` and `flow_label` carry under `split`; bits outside
/// the split's fields are ignored.
uint32_t ev_from_fields(uint16_t udp_sport, uint32_t flow_label, const StevSplit& split);

}  // namespace mrc::wire
