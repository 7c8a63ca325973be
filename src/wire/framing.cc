// SPDX-License-Identifier: BSD-2-Clause
#include "wire/framing.hpp"

#include <algorithm>
#include <cstring>

#include "wire/bits.hpp"
#include "wire/icrc.hpp"

namespace mrc::wire {
namespace {

using detail::load_be;
using detail::store_be;

constexpr uint32_t low_bits(unsigned n) { return n >= 32 ? ~uint32_t{0} : (uint32_t{1} << n) - 1; }

// One's-complement sum of big-endian 16-bit words (RFC 1071) over byte runs
// of any length: a run that ends on an odd byte leaves the next run starting
// with the low half of a word. Eight bytes at a time as two 32-bit words is
// the same sum, since 2^16 = 1 modulo 0xFFFF.
class OnesSum {
 public:
  void add(std::span<const uint8_t> b) {
    const uint8_t* p = b.data();
    size_t n = b.size();
    if (n == 0) return;
    if (odd_) {
      sum_ += *p++;
      --n;
      odd_ = false;
    }
    while (n >= 8) {
      const uint64_t w = load_be<uint64_t>(p);
      sum_ += (w >> 32) + (w & 0xFFFFFFFFu);
      p += 8;
      n -= 8;
    }
    while (n >= 2) {
      sum_ += load_be<uint16_t>(p);
      p += 2;
      n -= 2;
    }
    if (n) {
      sum_ += uint64_t{*p} << 8;
      odd_ = true;
    }
  }
  uint16_t folded() const {
    uint64_t s = sum_;
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return static_cast<uint16_t>(s);
  }

 private:
  uint64_t sum_ = 0;
  bool odd_ = false;
};

// The UDP pseudo-header (RFC 768 for IPv4, RFC 8200 8.1 for IPv6) of the IP
// header at `ip`, for a UDP datagram of `udp_len` bytes.
void add_pseudo_header(OnesSum& s, const uint8_t* ip, bool v4, size_t udp_len) {
  if (v4) {
    s.add(std::span<const uint8_t>(ip + 12, 8));  // source, destination
    const uint8_t rest[4] = {0, kIpProtoUdp, static_cast<uint8_t>(udp_len >> 8),
                             static_cast<uint8_t>(udp_len)};
    s.add(rest);
  } else {
    s.add(std::span<const uint8_t>(ip + 8, 32));  // source, destination
    const uint8_t rest[8] = {0, 0, static_cast<uint8_t>(udp_len >> 8), static_cast<uint8_t>(udp_len),
                             0, 0, 0, kIpProtoUdp};
    s.add(rest);
  }
}

void write_ipv6(uint8_t* p, uint8_t tc, uint32_t flow_label, size_t payload_len, uint8_t next_header,
                uint8_t hop_limit, const IpAddress& src, const IpAddress& dst) {
  store_be<uint32_t>(p, (uint32_t{6} << 28) | (uint32_t{tc} << 20) | (flow_label & 0xFFFFFu));
  store_be<uint16_t>(p + 4, static_cast<uint16_t>(payload_len));
  p[6] = next_header;
  p[7] = hop_limit;
  std::memcpy(p + 8, src.data(), 16);
  std::memcpy(p + 24, dst.data(), 16);
}

void write_ipv4(uint8_t* p, uint8_t tos, size_t total_len, uint8_t ttl, const IpAddress& src,
                const IpAddress& dst, bool checksum) {
  p[0] = 0x45;  // version 4, IHL 5: no options
  p[1] = tos;
  store_be<uint16_t>(p + 2, static_cast<uint16_t>(total_len));
  store_be<uint16_t>(p + 4, 0);       // identification: unused with DF (RFC 6864)
  store_be<uint16_t>(p + 6, 0x4000);  // DF: RoCEv2 never fragments
  p[8] = ttl;
  p[9] = kIpProtoUdp;
  store_be<uint16_t>(p + 10, 0);
  std::memcpy(p + 12, src.data(), 4);
  std::memcpy(p + 16, dst.data(), 4);
  if (!checksum) return;
  OnesSum s;
  s.add(std::span<const uint8_t>(p, kIpv4HeaderBytes));
  store_be<uint16_t>(p + 10, static_cast<uint16_t>(~s.folded()));
}

// IPv6 next-header values that are extension headers (RFC 8200 4, IANA):
// hop-by-hop, routing (incl. the SRH), fragment, ESP, AH, destination
// options, mobility, HIP, shim6, experimental.
constexpr bool is_ipv6_extension(uint8_t nh) {
  switch (nh) {
    case 0: case 43: case 44: case 50: case 51: case 60: case 135: case 139: case 140: case 253:
    case 254:
      return true;
    default:
      return false;
  }
}

IpAddress address_at(const uint8_t* p, size_t n) {
  IpAddress a{};
  std::memcpy(a.data(), p, n);
  return a;
}

}  // namespace

Result<EvFields> ev_to_fields(uint32_t ev, const StevSplit& split) {
  const unsigned s = split.sport_bits, f = split.flow_label_bits;
  if (s > 16 || f > 20) return Errc::invalid_argument;
  if (s + f < 32 && (ev >> (s + f)) != 0) return Errc::invalid_argument;
  EvFields out;
  if (split.sport_takes_low_bits) {
    out.udp_sport = static_cast<uint16_t>(ev & low_bits(s));
    out.flow_label = s >= 32 ? 0 : (ev >> s) & low_bits(f);
  } else {
    out.udp_sport = static_cast<uint16_t>((f >= 32 ? 0 : ev >> f) & low_bits(s));
    out.flow_label = ev & low_bits(f);
  }
  return out;
}

uint32_t ev_from_fields(uint16_t udp_sport, uint32_t flow_label, const StevSplit& split) {
  const unsigned s = std::min<unsigned>(split.sport_bits, 16);
  const unsigned f = std::min<unsigned>(split.flow_label_bits, 20);
  const uint64_t sp = udp_sport & low_bits(s);
  const uint64_t fl = flow_label & low_bits(f);
  const uint64_t ev = split.sport_takes_low_bits ? (sp | fl << s) : (sp << f | fl);
  return static_cast<uint32_t>(ev);
}

namespace {

/// Where write_headers() put things.
struct HeaderRun {
  size_t header_len = 0;  ///< outer (srv6) + covered IP header + UDP
  size_t ip_offset = 0;   ///< the covered IP header (the inner one in srv6)
  size_t ip_len = 0;
};

// Writes the IP header(s) and UDP header (checksum 0) of a datagram whose
// UDP payload is `udp_payload_len` bytes (BTH through ICRC). Shared by
// build_frame() and datagram_icrc(); errors as build_frame() documents.
// `ip_checksum` false leaves the IPv4 header checksum 0: headers built only
// for the ICRC, which masks it.
Result<HeaderRun> write_headers(const FrameFormat& fmt, const FrameFields& f, size_t udp_payload_len,
                                std::span<uint8_t> out, bool ip_checksum = true) {
  const bool srv6 = fmt.mode == EvMode::srv6;
  const bool v4 = fmt.ip == IpVersion::v4;
  if (v4 && fmt.mode != EvMode::udp) return Errc::invalid_argument;  // flow label needs IPv6
  uint16_t sport = 0;
  uint32_t flow_label = 0;
  if (fmt.mode == EvMode::udp) {
    if (f.ev > 0xFFFF) return Errc::invalid_argument;  // reference 4.1: 16 bits in UDP mode
    sport = static_cast<uint16_t>(f.ev);
  } else {
    auto e = ev_to_fields(f.ev, fmt.stev);
    if (!e) return e.error();
    sport = e->udp_sport;
    flow_label = e->flow_label;
  }
  HeaderRun run;
  run.ip_len = v4 ? kIpv4HeaderBytes : kIpv6HeaderBytes;
  run.ip_offset = srv6 ? kIpv6HeaderBytes : 0;
  run.header_len = run.ip_offset + run.ip_len + kUdpHeaderBytes;
  if (out.size() < run.header_len) return Errc::too_big;
  const size_t udp_len = kUdpHeaderBytes + udp_payload_len;
  // The largest length field: IPv4 total length, or the outermost IPv6
  // payload length (which holds the inner header in srv6).
  if ((v4 ? kIpv4HeaderBytes : run.ip_offset) + udp_len > 0xFFFF) return Errc::too_big;

  uint8_t* ip = out.data() + run.ip_offset;
  if (srv6) {
    // Outer header: to the carrier. Its flow label repeats the inner one so
    // a fabric that hashes it sees one flow per EV (RFC 6437 lets the
    // encapsulator choose it).
    write_ipv6(out.data(), f.traffic_class, flow_label, kIpv6HeaderBytes + udp_len, kIpProtoIpv6, f.hop_limit,
               f.src, f.srv6_carrier);
  }
  if (v4)
    write_ipv4(ip, f.traffic_class, kIpv4HeaderBytes + udp_len, f.hop_limit, f.src, f.dst, ip_checksum);
  else
    write_ipv6(ip, f.traffic_class, flow_label, udp_len, kIpProtoUdp, f.hop_limit, f.src, f.dst);
  uint8_t* udp = ip + run.ip_len;
  store_be<uint16_t>(udp, sport);
  store_be<uint16_t>(udp + 2, fmt.udp_dport);
  store_be<uint16_t>(udp + 4, static_cast<uint16_t>(udp_len));
  store_be<uint16_t>(udp + 6, 0);
  return run;
}

}  // namespace

Result<uint32_t> datagram_icrc_prefix(const FrameFormat& fmt, const FrameFields& f, size_t udp_payload_len) {
  if (fmt.mode == EvMode::srv6) return Errc::invalid_argument;
  uint8_t buf[kMaxFrameHeaderBytes];
  auto run = write_headers(fmt, f, udp_payload_len, buf, /*ip_checksum=*/false);
  if (!run) return run.error();
  return icrc_prefix(std::span<const uint8_t>(buf + run->ip_offset, run->ip_len + kUdpHeaderBytes));
}

Result<uint32_t> datagram_icrc(const FrameFormat& fmt, const FrameFields& f, std::span<const uint8_t> transport,
                               std::span<const uint8_t> payload, uint8_t* payload_copy) {
  if (transport.size() < Bth::kSize || fmt.mode == EvMode::srv6) return Errc::invalid_argument;
  uint8_t buf[kMaxFrameHeaderBytes];
  auto run = write_headers(fmt, f, transport.size() + payload.size() + kIcrcBytes, buf, /*ip_checksum=*/false);
  if (!run) return run.error();
  return icrc(std::span<const uint8_t>(buf + run->ip_offset, run->ip_len + kUdpHeaderBytes), transport, payload,
              payload_copy);
}

Result<BuiltFrame> build_frame(const FrameFormat& fmt, const FrameFields& f,
                               std::span<const uint8_t> transport, std::span<const uint8_t> payload,
                               std::span<uint8_t> out) {
  if (transport.size() < Bth::kSize) return Errc::invalid_argument;
  const bool srv6 = fmt.mode == EvMode::srv6;
  const bool v4 = fmt.ip == IpVersion::v4;
  // RFC 8200 8.1: a zero UDP checksum over IPv6 only as the tunnel exception
  // (RFC 6935), i.e. in srv6 mode.
  if (fmt.checksum == UdpChecksumMode::zero && !v4 && !srv6) return Errc::invalid_argument;
  const size_t udp_len = kUdpHeaderBytes + transport.size() + payload.size() + kIcrcBytes;
  auto run = write_headers(fmt, f, udp_len - kUdpHeaderBytes, out);
  if (!run) return run.error();
  const size_t header_len = run->header_len;
  const size_t ip_len = run->ip_len;
  uint8_t* ip = out.data() + run->ip_offset;
  uint8_t* udp = ip + ip_len;

  // The ICRC masks the UDP checksum, so it comes first; the checksum then
  // covers the ICRC bytes like the rest of the UDP payload.
  auto crc = icrc(std::span<const uint8_t>(ip, ip_len + kUdpHeaderBytes), transport, payload);
  if (!crc) return crc.error();
  if (fmt.checksum == UdpChecksumMode::computed) {
    uint8_t trailer[kIcrcBytes];
    put_icrc(*crc, trailer);
    OnesSum s;
    add_pseudo_header(s, ip, v4, udp_len);  // the inner header's in srv6: never rewritten
    s.add(std::span<const uint8_t>(udp, kUdpHeaderBytes));
    s.add(transport);
    s.add(payload);
    s.add(trailer);
    uint16_t c = static_cast<uint16_t>(~s.folded());
    if (c == 0) c = 0xFFFF;  // RFC 768: a computed zero is sent as all ones
    store_be<uint16_t>(udp + 6, c);
  }
  return BuiltFrame{header_len, *crc};
}

Result<ParsedFrame> parse_frame(const FrameFormat& fmt, std::span<const uint8_t> frame) {
  ParsedFrame r;
  r.mode = fmt.mode;
  const uint8_t* b = frame.data();
  const size_t n = frame.size();
  if (n < 1) return Errc::truncated;

  size_t ip_off = 0;   // the header UDP sits in
  size_t end = 0;      // end of the frame as the outermost IP header declares it
  size_t declared = 0; // IP payload length the covered header declares
  bool v4 = false;
  const uint8_t version = b[0] >> 4;

  if (fmt.mode == EvMode::srv6) {
    if (version != 6) return Errc::malformed;
    if (n < kIpv6HeaderBytes) return Errc::truncated;
    const uint8_t nh = b[6];
    if (nh != kIpProtoIpv6) return is_ipv6_extension(nh) ? Errc::not_supported : Errc::malformed;
    end = kIpv6HeaderBytes + load_be<uint16_t>(b + 4);
    if (n < end) return Errc::truncated;
    r.traffic_class = static_cast<uint8_t>(load_be<uint32_t>(b) >> 20);
    r.hop_limit = b[7];
    r.srv6_carrier = address_at(b + 24, 16);
    ip_off = kIpv6HeaderBytes;
    if (n < ip_off + 1) return Errc::truncated;
    if ((b[ip_off] >> 4) != 6) return Errc::malformed;
  } else if (version == 4) {
    if (fmt.mode != EvMode::udp) return Errc::malformed;  // stev needs a flow label
    v4 = true;
  } else if (version != 6) {
    return Errc::malformed;
  }

  const uint8_t* ip = b + ip_off;
  size_t ip_len = 0;
  if (v4) {
    if (n < kIpv4HeaderBytes) return Errc::truncated;
    const unsigned ihl = ip[0] & 0x0F;
    if (ihl < 5) return Errc::malformed;
    if (ihl > 5) return Errc::not_supported;  // options: the ICRC is defined over 20 bytes
    OnesSum s;
    s.add(std::span<const uint8_t>(ip, kIpv4HeaderBytes));
    if (s.folded() != 0xFFFF) return Errc::malformed;
    const size_t total = load_be<uint16_t>(ip + 2);
    if (total < kIpv4HeaderBytes) return Errc::length_mismatch;
    if (n < total) return Errc::truncated;
    if ((load_be<uint16_t>(ip + 6) & 0x3FFF) != 0) return Errc::not_supported;  // MF or offset
    if (ip[9] != kIpProtoUdp) return Errc::malformed;
    ip_len = kIpv4HeaderBytes;
    declared = total - kIpv4HeaderBytes;
    end = total;
    r.traffic_class = ip[1];
    r.hop_limit = ip[8];
    r.src = address_at(ip + 12, 4);
    r.dst = address_at(ip + 16, 4);
    r.ip = IpVersion::v4;
  } else {
    if (n < ip_off + kIpv6HeaderBytes) return Errc::truncated;
    const uint8_t nh = ip[6];
    if (nh != kIpProtoUdp) return is_ipv6_extension(nh) ? Errc::not_supported : Errc::malformed;
    ip_len = kIpv6HeaderBytes;
    declared = load_be<uint16_t>(ip + 4);
    const uint32_t word0 = load_be<uint32_t>(ip);
    r.flow_label = word0 & 0xFFFFFu;
    if (fmt.mode != EvMode::srv6) {
      end = kIpv6HeaderBytes + declared;
      if (n < end) return Errc::truncated;
      r.traffic_class = static_cast<uint8_t>(word0 >> 20);
      r.hop_limit = ip[7];
    } else if (end < ip_off + kIpv6HeaderBytes) {
      return Errc::length_mismatch;  // the outer payload cannot hold the inner header
    }
    r.src = address_at(ip + 8, 16);
    r.dst = address_at(ip + 24, 16);
    r.ip = IpVersion::v6;
  }
  r.covered_ip_offset = ip_off;
  r.udp_offset = ip_off + ip_len;
  r.frame_len = end;

  // `present`: bytes of the UDP datagram inside the outermost declared
  // length. A switch that trims (reference 3.9) shortens the packet and fixes
  // the length of the header it routes on (the outer one in srv6), not the
  // UDP length: so a UDP length beyond what is present means "trimmed".
  const size_t present = end - r.udp_offset;
  if (present > declared) return Errc::length_mismatch;  // srv6: outer longer than inner
  if (present < kUdpHeaderBytes) return Errc::length_mismatch;
  const uint8_t* udp = b + r.udp_offset;
  const size_t udp_len = load_be<uint16_t>(udp + 4);
  if (udp_len < kUdpHeaderBytes || udp_len < declared) return Errc::length_mismatch;
  r.trimmed = udp_len > present;
  r.bth_offset = r.udp_offset + kUdpHeaderBytes;
  r.udp_payload_len = std::min(udp_len, present) - kUdpHeaderBytes;
  if (r.udp_payload_len < Bth::kSize) return Errc::truncated;

  r.udp_sport = load_be<uint16_t>(udp);
  r.udp_dport = load_be<uint16_t>(udp + 2);
  if (r.udp_dport != fmt.udp_dport) return Errc::malformed;
  r.ev = fmt.mode == EvMode::udp ? r.udp_sport : ev_from_fields(r.udp_sport, r.flow_label, fmt.stev);

  if (load_be<uint16_t>(udp + 6) == 0) {
    r.checksum = UdpChecksumState::zero;
  } else if (r.trimmed) {
    r.checksum = UdpChecksumState::unchecked;
  } else {
    OnesSum s;
    add_pseudo_header(s, ip, v4, udp_len);
    s.add(std::span<const uint8_t>(udp, udp_len));
    r.checksum = s.folded() == 0xFFFF ? UdpChecksumState::valid : UdpChecksumState::invalid;
  }
  return r;
}

Result<uint32_t> frame_icrc(std::span<const uint8_t> net, std::span<const uint8_t> transport,
                            std::span<const uint8_t> payload) {
  // SRv6: skip the outer header; the ICRC covers the inner one.
  if (net.size() == kMaxFrameHeaderBytes && (net[0] >> 4) == 6 && net[6] == kIpProtoIpv6)
    net = net.subspan(kIpv6HeaderBytes);
  if (net.size() == kIpv6HeaderBytes + kUdpHeaderBytes && net[6] != kIpProtoUdp)
    return Errc::invalid_argument;
  if (net.size() == kIpv4HeaderBytes + kUdpHeaderBytes && net[9] != kIpProtoUdp)
    return Errc::invalid_argument;
  return icrc(net, transport, payload);
}

bool verify_icrc(std::span<const uint8_t> frame, const ParsedFrame& p) {
  if (p.trimmed || p.udp_payload_len < Bth::kSize + kIcrcBytes) return false;
  if (p.bth_offset + p.udp_payload_len > frame.size()) return false;
  const auto ip_udp = frame.subspan(p.covered_ip_offset, p.bth_offset - p.covered_ip_offset);
  const auto transport = frame.subspan(p.bth_offset, p.udp_payload_len - kIcrcBytes);
  auto c = icrc(ip_udp, transport, {});
  return c.ok() && *c == get_icrc(frame.data() + p.bth_offset + p.udp_payload_len - kIcrcBytes);
}

}  // namespace mrc::wire
