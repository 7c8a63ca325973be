// SPDX-License-Identifier: BSD-2-Clause
// The wire EV: what an EV becomes on the wire once its EV profile expands it
// (reference 4.1, 4.2). The core keeps two views of every EV of a QP:
//  - the compact EV (EvSlot::value, 32 bits): what the UDP source port and
//    flow label carry, what SACKs and NACKs echo, what the path policy keys
//    its state by; touched by every packet;
//  - the wire EV (this struct, up to 256 bits): in SRv6 mode the outer
//    destination address (locator + uSIDs) and optionally an SRH segment.
//    Computed once, when the profile goes ONLINE, and shared read-only by
//    every QP using the profile (EvProfile::wire_evs); a packet only carries
//    a pointer to it (Transmit::wire_ev), so EvSlot stays 16 bytes.
// In UDP and STEV modes the compact EV already is the wire EV and profiles
// carry no wire EVs.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace mrc::core {

/// A wire EV: `bits` bits, MSB-first from bit 7 of byte 0, the rest of
/// `bytes` zero. In SRv6 mode bytes [0, 16) are the outer destination
/// address and bytes [16, 32) an SRH segment (when bits > 128).
struct WireEv {
  std::array<uint8_t, 32> bytes{};
  uint16_t bits = 0;
  /// The first `n` (<= 64) bits as an unsigned integer: the whole EV when
  /// bits <= 64 (e.g. 0x13032102 for a 32-bit STEV EV).
  uint64_t leading(uint32_t n) const {
    n = std::min<uint32_t>(n, 64);
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; ++i) v = (v << 1) | ((bytes[i / 8] >> (7 - i % 8)) & 1u);
    return v;
  }
  friend bool operator==(const WireEv&, const WireEv&) = default;
};

}  // namespace mrc::core
