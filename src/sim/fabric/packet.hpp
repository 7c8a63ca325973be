// SPDX-License-Identifier: BSD-2-Clause
// Packet: one frame in the simulated fabric.
//
// It carries the real encoded MRC (or RoCE) header bytes the core produced,
// and the payload only as a length. Forwarding state travels beside it: the
// SRv6 uSID carrier (the outer destination address as a list of 16-bit uSIDs
// and the current position) for source-routed fabrics, or a flow hash for
// ECMP fabrics.
#pragma once

#include <cstdint>

#include "core/types.hpp"
#include "util/time.hpp"
#include "wire/packet.hpp"

namespace mrc::sim {

/// Bytes a packet adds on the wire beyond header + payload: Ethernet (14 +
/// 4 FCS + 8 preamble + 12 gap), IPv6 (40), UDP (8), ICRC (4).
inline constexpr uint32_t kWireOverhead = 38 + 40 + 8 + 4;
/// Extra outer IPv6 header in SRv6 (IPv6-in-IPv6) mode.
inline constexpr uint32_t kSrv6Overhead = 40;
// A trimmed packet keeps its transport headers (hdr_len; reference 8 item
// 12: UDP + BTH + METH + TSETH + RETH) and loses its payload.

/// Priority class at a switch egress (reference 3.9): control is served first,
/// trimmed headers next (weighted), data last.
enum class Class : uint8_t { control = 0, trimmed = 1, data = 2 };

inline constexpr int kMaxUsids = 8;

struct alignas(64) Packet {
  // What every hop reads and writes, in the first cache line.
  // SRv6 uSID carrier: usid[pos] is the active uSID; 0 ends the carrier.
  uint16_t usid[kMaxUsids] = {};
  uint8_t usid_pos = 0;
  bool srv6 = false;
  uint8_t hops = 0;
  // QoS and in-network marks.
  Class cls = Class::data;
  bool trimmable = false;
  bool ecn_capable = true;
  bool ecn_ce = false;
  core::TrimMark trim = core::TrimMark::none;
  // Sizes.
  uint16_t hdr_len = 0;
  uint32_t payload_len = 0;
  // Addressing (ECMP reads dst and flow_hash at every hop).
  uint32_t dst = 0;        ///< destination host
  uint64_t flow_hash = 0;  ///< ECMP key: hash of addresses, ports and EV
  // The pipe carrying the packet: the next packet in flight on it and when
  // that one reaches the far end (an intrusive FIFO: delivering the head
  // touches neither a queue entry nor the next packet).
  Packet* pipe_next = nullptr;
  Time pipe_next_at;
  // What the transport produced (read by the NICs only).
  uint8_t hdr[wire::kMaxHeaderBytes];
  uint32_t src = 0;        ///< source host
  uint8_t plane = 0;       ///< NIC port it left on = plane
  uint32_t entropy = 0;    ///< EV (UDP source port / flow label)
  // Bookkeeping.
  uint64_t id = 0;
  Time sent_at;

  uint32_t wire_bytes() const {
    return hdr_len + payload_len + kWireOverhead + (srv6 ? kSrv6Overhead : 0);
  }
  /// Removes the payload (switch trimming); marks where it happened.
  void trim_to_header(bool last_hop) {
    payload_len = 0;
    trim = last_hop ? core::TrimMark::trimmed_lasthop : core::TrimMark::trimmed;
    cls = Class::trimmed;
  }
};

}  // namespace mrc::sim
