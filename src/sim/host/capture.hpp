// SPDX-License-Identifier: BSD-2-Clause
// Serializes simulated packets into the bytes a real NIC would send, for
// packet captures (mrc-sim --pcap; docs/mrc-sim.md "Packet capture").
//
// A simulated packet carries the real MRC header bytes the core encoded and
// only the LENGTH of its payload (sim/fabric/packet.hpp). frame_packet()
// wraps them with wire::build_frame() — the codec the software device uses,
// never a second encoder — into a whole IPv6 packet:
//  - addresses: host h's port on plane p is fd00:p::h (capture_address());
//  - ECMP fabrics: one IPv6 header, the EV split as in STEV mode (EV[15:0]
//    in the UDP source port, EV[31:16] in the flow label; wire::StevSplit
//    defaults), UDP destination port 4791;
//  - SRv6 fabrics: an outer IPv6 header to the uSID carrier (locator
//    fcbb:bb00::/32, then the packet's uSIDs from the current one, at most
//    six), IPv6-in-IPv6, the inner header and UDP as above;
//  - traffic class: DSCP 46 for control packets, 4 for trimmable data, 0 for
//    other data (the example values of reference 3.9), ECN ECT(0), or CE if
//    marked;
//  - payload: zero bytes of the packet's payload length (the simulator has
//    no payload bytes), then the ICRC computed over them, and the UDP
//    checksum.
// Stateless; allocation only in the caller's vector.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/fabric/packet.hpp"
#include "util/result.hpp"
#include "wire/framing.hpp"

namespace mrc::sim {

/// uSID locator block of captured SRv6 carriers: fcbb:bb00::/32.
inline constexpr uint8_t kCaptureUsidLocator[4] = {0xfc, 0xbb, 0xbb, 0x00};

/// The address captures give host `host`'s NIC port on `plane`:
/// fd00:<plane>::<host> (plane in bits 16..31, host in the last 32 bits).
wire::IpAddress capture_address(uint32_t host, uint32_t plane);

/// Replaces `out` with the whole IPv6 packet `p` stands for (see the file
/// comment). Errc::invalid_argument if its header bytes are shorter than a
/// BTH, Errc::too_big if the packet exceeds 65535 bytes of IP payload.
Status frame_packet(const Packet& p, std::vector<uint8_t>& out);

}  // namespace mrc::sim
