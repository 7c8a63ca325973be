// SPDX-License-Identifier: BSD-2-Clause
// libFuzzer target: wire::parse_frame on arbitrary bytes (a frame from its IP
// header on). The first input byte picks the receiver's configuration (EV
// mode, STEV split order); the rest is the frame.
//
// A frame that parses must describe bytes inside the input, with offsets
// that agree with its IP version and mode. If it carries at least BTH + ICRC
// and was not trimmed, the fields recovered from it are rebuilt with
// wire::build_frame around the same UDP payload, and the rebuilt frame must
// parse to the same addresses, ports, EV and lengths, with a valid UDP
// checksum and ICRC.
#include <array>
#include <vector>

#include "fuzz_common.hpp"
#include "wire/framing.hpp"
#include "wire/icrc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mrc;
  if (size < 1) return 0;
  wire::FrameFormat fmt;
  fmt.mode = static_cast<wire::EvMode>(data[0] % 3);
  fmt.stev.sport_takes_low_bits = (data[0] & 0x10) == 0;
  const std::span<const uint8_t> in(data + 1, size - 1);
  auto p = wire::parse_frame(fmt, in);
  if (!p.ok()) return 0;

  const size_t ip_len = p->ip == wire::IpVersion::v4 ? wire::kIpv4HeaderBytes : wire::kIpv6HeaderBytes;
  MRC_FUZZ_CHECK(p->frame_len <= in.size());
  MRC_FUZZ_CHECK(p->covered_ip_offset == (fmt.mode == wire::EvMode::srv6 ? wire::kIpv6HeaderBytes : 0));
  MRC_FUZZ_CHECK(p->udp_offset == p->covered_ip_offset + ip_len);
  MRC_FUZZ_CHECK(p->bth_offset == p->udp_offset + wire::kUdpHeaderBytes);
  MRC_FUZZ_CHECK(p->bth_offset + p->udp_payload_len <= p->frame_len);
  MRC_FUZZ_CHECK(p->udp_payload_len >= wire::Bth::kSize);
  MRC_FUZZ_CHECK(p->udp_dport == fmt.udp_dport);
  MRC_FUZZ_CHECK(fmt.mode != wire::EvMode::stev || p->ip == wire::IpVersion::v6);
  if (p->trimmed) MRC_FUZZ_CHECK(p->checksum != wire::UdpChecksumState::valid);
  const bool icrc_ok = wire::verify_icrc(in, *p);
  if (p->trimmed || p->udp_payload_len < wire::Bth::kSize + wire::kIcrcBytes) {
    MRC_FUZZ_CHECK(!icrc_ok);
    return 0;
  }

  // Rebuild around the same transport bytes (everything before the ICRC).
  wire::FrameFormat out_fmt = fmt;
  out_fmt.ip = p->ip;
  out_fmt.checksum = wire::UdpChecksumMode::computed;
  wire::FrameFields f;
  f.src = p->src;
  f.dst = p->dst;
  f.srv6_carrier = p->srv6_carrier;
  f.ev = p->ev;
  f.traffic_class = p->traffic_class;
  f.hop_limit = p->hop_limit;
  const auto transport = in.subspan(p->bth_offset, p->udp_payload_len - wire::kIcrcBytes);
  std::array<uint8_t, wire::kMaxFrameHeaderBytes> hdr{};
  auto b = wire::build_frame(out_fmt, f, transport, {}, hdr);
  MRC_FUZZ_CHECK(b.ok());
  MRC_FUZZ_CHECK(b->header_len == p->bth_offset);
  std::vector<uint8_t> again(hdr.begin(), hdr.begin() + static_cast<long>(b->header_len));
  again.insert(again.end(), transport.begin(), transport.end());
  uint8_t crc[wire::kIcrcBytes];
  wire::put_icrc(b->icrc, crc);
  again.insert(again.end(), crc, crc + wire::kIcrcBytes);
  // Over IPv6 the ICRC of the input, if it verified, is the one rebuilt:
  // the rebuild changes only fields the ICRC masks (flow label bits outside
  // the EV, hop limits, checksums). Over IPv4 it may also change the
  // identification and flags, which the ICRC covers.
  if (icrc_ok && p->ip == wire::IpVersion::v6) MRC_FUZZ_CHECK(wire::get_icrc(in.data() + p->bth_offset + transport.size()) == b->icrc);

  auto q = wire::parse_frame(fmt, again);
  MRC_FUZZ_CHECK(q.ok());
  MRC_FUZZ_CHECK(q->ip == p->ip);
  MRC_FUZZ_CHECK(q->bth_offset == p->bth_offset);
  MRC_FUZZ_CHECK(q->udp_payload_len == p->udp_payload_len);
  MRC_FUZZ_CHECK(q->frame_len == again.size());
  MRC_FUZZ_CHECK(q->src == p->src && q->dst == p->dst && q->srv6_carrier == p->srv6_carrier);
  MRC_FUZZ_CHECK(q->udp_sport == p->udp_sport || fmt.mode != wire::EvMode::udp);
  MRC_FUZZ_CHECK(q->ev == p->ev);
  MRC_FUZZ_CHECK(q->traffic_class == p->traffic_class && q->hop_limit == p->hop_limit);
  MRC_FUZZ_CHECK(!q->trimmed);
  MRC_FUZZ_CHECK(q->checksum == wire::UdpChecksumState::valid);
  MRC_FUZZ_CHECK(wire::verify_icrc(again, *q));
  return 0;
}
