// SPDX-License-Identifier: BSD-2-Clause
// SRv6 uSID encoding of the simulated fabrics (reference 2.3, 4.3).
//
// A uSID is 16 bits, one per switch on the path (uN behaviour, "F3216"):
//
//   [plane:3][tier:2][index+1:11]
//
//   plane  the plane modulo 8. Planes are disjoint networks, so the bits only
//          make addresses readable; with more than 8 planes the 32-bit
//          locator (not modelled: each plane is its own network) tells plane
//          groups apart.
//   tier   0 = T0, 1 = T1, 2 = T2, 3 = host downlink (a uA at the last T0:
//          "out of downlink port <index>").
//   index  + 1, so that no uSID is 0, the end-of-carrier marker; index is
//          at most kMaxIndex.
//
// Indexes per tier (per plane):
//   T0        the T0's index in its plane.
//   T1        pod * t0_up + u, u the T0 uplink that reaches the T1: T1 j of a
//             pod owns the uSIDs of uplinks [j*lanes0, (j+1)*lanes0), one per
//             parallel link, so the uSID that brought a packet in also names
//             the parallel link it takes down to the destination T0.
//   T2        j * t1_up + k, k the uplink of T1 index j that reaches the T2;
//             T2 m of group j owns [m*lanes1, (m+1)*lanes1) of its group.
//   downlink  the host's port on its T0 (host % t0_down).
//
// The carrier of a cross-T1 packet in a 2-tier plane is
//   srcT0 | T1(uplink u) | dstT0 | downlink | 0...
// same-T0 traffic is srcT0 | downlink; in a 3-tier fat tree a cross-pod path
// is srcT0 | T1 | T2 | T1 | dstT0 | downlink.
#pragma once

#include <cstdint>

namespace mrc::sim::usid {

enum class Tier : uint8_t { t0 = 0, t1 = 1, t2 = 2, downlink = 3 };

/// Largest index a uSID can carry (11 bits hold index + 1).
inline constexpr uint32_t kMaxIndex = 2046;

constexpr uint16_t make(uint32_t plane, Tier tier, uint32_t index) {
  return static_cast<uint16_t>(((plane & 7u) << 13) | (static_cast<uint32_t>(tier) << 11) | ((index + 1) & 0x7FFu));
}
constexpr uint32_t plane_bits(uint16_t u) { return u >> 13; }
constexpr Tier tier(uint16_t u) { return static_cast<Tier>((u >> 11) & 3u); }
/// The index a uSID names; 0xFFFFFFFF for the empty uSID.
constexpr uint32_t index(uint16_t u) { return (u & 0x7FFu) - 1u; }

}  // namespace mrc::sim::usid
