// SPDX-License-Identifier: BSD-2-Clause
#include "sim/host/capture.hpp"

#include <algorithm>

#include "wire/icrc.hpp"

namespace mrc::sim {

namespace {
// Example DSCP values of reference 3.9 (deployment-defined, not normative).
constexpr uint8_t kDscpControl = 46;
constexpr uint8_t kDscpTrimmable = 4;
constexpr uint8_t kEcnEct0 = 0b10;
constexpr uint8_t kEcnCe = 0b11;
// 128 bits of carrier: a 32-bit locator and six 16-bit uSIDs.
constexpr int kCarrierUsids = 6;
}  // namespace

wire::IpAddress capture_address(uint32_t host, uint32_t plane) {
  wire::IpAddress a{};
  a[0] = 0xfd;
  a[2] = static_cast<uint8_t>(plane >> 8);
  a[3] = static_cast<uint8_t>(plane);
  for (int i = 0; i < 4; ++i) a[12 + i] = static_cast<uint8_t>(host >> (24 - 8 * i));
  return a;
}

Status frame_packet(const Packet& p, std::vector<uint8_t>& out) {
  wire::FrameFormat fmt;
  fmt.mode = p.srv6 ? wire::EvMode::srv6 : wire::EvMode::stev;
  fmt.ip = wire::IpVersion::v6;
  wire::FrameFields f;
  f.src = capture_address(p.src, p.plane);
  f.dst = capture_address(p.dst, p.plane);
  f.ev = p.entropy;
  const uint8_t dscp = p.cls == Class::control ? kDscpControl : p.trimmable ? kDscpTrimmable : 0;
  f.traffic_class = static_cast<uint8_t>(dscp << 2 | (p.ecn_ce ? kEcnCe : p.ecn_capable ? kEcnEct0 : 0));
  if (p.srv6) {
    std::copy(std::begin(kCaptureUsidLocator), std::end(kCaptureUsidLocator), f.srv6_carrier.begin());
    for (int i = 0; i < kCarrierUsids && p.usid_pos + i < kMaxUsids; ++i) {
      const uint16_t u = p.usid[p.usid_pos + i];
      if (u == 0) break;
      f.srv6_carrier[4 + 2 * i] = static_cast<uint8_t>(u >> 8);
      f.srv6_carrier[5 + 2 * i] = static_cast<uint8_t>(u);
    }
  }
  const std::span<const uint8_t> transport(p.hdr, p.hdr_len);
  out.assign(wire::kMaxFrameHeaderBytes + p.hdr_len + p.payload_len + wire::kIcrcBytes, 0);
  const std::span<const uint8_t> payload(out.data() + wire::kMaxFrameHeaderBytes + p.hdr_len, p.payload_len);
  auto built = wire::build_frame(fmt, f, transport, payload, std::span<uint8_t>(out.data(), wire::kMaxFrameHeaderBytes));
  if (!built) return built.error();
  // The buffer is [header run | unused | transport | zero payload | ICRC]:
  // put the transport bytes in, close the unused gap, append the ICRC.
  std::copy(p.hdr, p.hdr + p.hdr_len, out.begin() + static_cast<ptrdiff_t>(wire::kMaxFrameHeaderBytes));
  out.erase(out.begin() + static_cast<ptrdiff_t>(built->header_len),
            out.begin() + static_cast<ptrdiff_t>(wire::kMaxFrameHeaderBytes));
  wire::put_icrc(built->icrc, out.data() + out.size() - wire::kIcrcBytes);
  return {};
}

}  // namespace mrc::sim
