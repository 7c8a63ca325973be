// Invariant CRC (ICRC, IBTA 9.8.2 as RoCEv2 applies it): CRC-32 (IEEE
// 802.3 polynomial) over the transport headers and payload, with the fields
// that change in flight masked to ones. Every MRC packet carries it as the
// last 4 bytes; a receiver drops a packet whose ICRC does not match.
//
// What is covered here: eight 0xFF bytes standing in for the masked
// network-layer fields (so the value does not depend on an address an SRv6
// switch rewrites; DESIGN.md "Software device"), then BTH with its reserved
// byte masked, the remaining headers and the payload. A trimmed packet's
// ICRC is not checked (the switch removed the bytes it covered).
#pragma once

#include <cstdint>
#include <span>

namespace mrc::wire {

inline constexpr size_t kIcrcBytes = 4;

/// CRC-32 (reflected, polynomial 0xEDB88320) continuing from `crc`
/// (start with 0xFFFFFFFF, finish by inverting).
uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> bytes);

/// ICRC of a packet given as header chain + payload (either may be empty).
uint32_t icrc(std::span<const uint8_t> headers, std::span<const uint8_t> payload);

}  // namespace mrc::wire
