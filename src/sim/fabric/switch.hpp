// SPDX-License-Identifier: BSD-2-Clause
// Switch: forwarding between its ports; the queues are its EgressPorts.
//
// SRv6 (uN, reference 2.3): the active uSID (usid[usid_pos]) must be one the
// switch owns, else the packet has no route. The switch shifts (usid_pos++)
// and looks the next uSID up in a static table the topology builder filled:
// per uSID tier, a vector indexed by the uSID index (minus a base) gives the
// egress port. Where parallel links join two switches, the uSID that matched
// (one per lane) picks the lane: port = entry.port + lane * entry.lane_stride.
// Nothing changes these tables after the build: a route over a dead link
// loses its packets.
//
// ECMP: the switch hashes the packet's flow key (src, dst, plane, EV) with
// its own salt and picks one of the equal-cost next hops towards the
// destination T0. Optionally (reconverge_after) the fabric later installs
// per-destination overrides that leave dead next hops out.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/fabric/egress_port.hpp"
#include "sim/fabric/fabric_stats.hpp"
#include "sim/fabric/pipe.hpp"
#include "sim/fabric/topology.hpp"
#include "sim/fabric/usid.hpp"

namespace mrc::sim {

/// No port: the route does not exist.
inline constexpr uint16_t kNoPort = 0xFFFF;

/// A switch port's egress side: its queues and the link direction they feed,
/// side by side in memory (a transmission touches both).
struct PortSlot {
  EgressPort port;
  Pipe pipe;
};

/// One SRv6 table entry: where the next uSID leads.
struct FibEntry {
  uint16_t port = kNoPort;
  uint16_t lane_stride = 0;  ///< ports between parallel links to that next hop (0: one link)
};

class alignas(64) Switch final : public PfcPeer {
 public:
  /// The sender behind an ingress port, for PFC: a neighbour's egress port,
  /// or (port == nullptr) egress port `remote_port` (global numbering) of a
  /// neighbour this process did not build, or else NIC port `plane` of `host`.
  struct Upstream {
    EgressPort* port = nullptr;
    uint32_t host = 0;
    uint32_t plane = 0;
    uint32_t part = 0;  ///< partition of the sender (FabricContext::part)
    uint32_t remote_port = kNone;
    static constexpr uint32_t kNone = 0xFFFFFFFFu;
  };

  Switch() = default;

  /// `pod` and `pos` place the switch for ECMP: T0: pod; T1: pod and its
  /// index j within the pod; T2: its group j. `index` is SwitchRef::index.
  /// Takes an entity id for the keys of the PFC frames it sends.
  void init(FabricContext* ctx, const TopologyShape* shape, SwitchRef ref, uint32_t pod, uint32_t pos,
            PortSlot* ports, uint32_t nports, uint64_t salt);
  /// SRv6: the switch owns uSIDs [own_first, own_first + own_count); table[t]
  /// maps next-uSID index (index - base[t]) of tier t to an entry.
  void set_srv6_table(uint16_t own_first, uint16_t own_count, const std::vector<FibEntry> (&table)[4],
                      const uint32_t (&base)[4]);
  /// ECMP: next-hop port sets per destination T0 (index[d] into sets, -1 =
  /// the default equal-cost set; an empty set withdraws the route). Empty
  /// `index` removes every override.
  void set_ecmp_overrides(std::vector<int32_t> index, std::vector<std::vector<uint16_t>> sets);
  void set_upstream(uint32_t port, Upstream u) { upstream_.at(port) = u; }
  /// Another process's switch (across processes): its identity and up
  /// state alone, which names and routes read; it has no ports here.
  void init_placeholder(SwitchRef ref) { ref_ = ref; }
  /// init() was called: this process built the switch and its ports.
  bool built() const { return ctx_ != nullptr; }

  bool up() const { return up_; }
  void set_up(bool up) { up_ = up; }
  const SwitchRef& ref() const { return ref_; }
  uint32_t nports() const { return nports_; }
  EgressPort& port(uint32_t i) { return ports_[i].port; }
  const EgressPort& port(uint32_t i) const { return ports_[i].port; }
  Pipe& out_pipe(uint32_t i) { return ports_[i].pipe; }
  PortSlot& slot(uint32_t i) { return ports_[i]; }
  uint16_t own_usid() const { return own_first_; }

  /// A packet arrived on `in_port`: route it to an egress port or drop it.
  void receive(Packet* p, uint32_t in_port);
  /// The egress port `p` would take (advancing its uSID carrier in SRv6
  /// mode), or kNoPort.
  uint32_t route(Packet& p) const { return p.srv6 ? route_srv6(p) : route_ecmp(p); }

  void pfc_signal(uint32_t in_port, bool pause) override;

  /// Prefetches the egress port and pipe receive(p) will use (routing
  /// without changing `p`; a hint only).
  void prefetch_route(const Packet& p) const {
    if (!up_) return;
    const uint32_t out = p.srv6 ? peek_srv6(p) : route_ecmp(p);
    if (out >= nports_) return;
    // All of the port (its queues are in its later lines), the pipe's first two.
    const char* port = reinterpret_cast<const char*>(&ports_[out].port);
    for (size_t i = 0; i < sizeof(EgressPort); i += 64) __builtin_prefetch(port + i);
    const char* pipe = reinterpret_cast<const char*>(&ports_[out].pipe);
    __builtin_prefetch(pipe);
    __builtin_prefetch(pipe + 64);
  }

 private:
  uint32_t route_srv6(Packet& p) const;
  /// route_srv6 without the shift.
  uint32_t peek_srv6(const Packet& p) const;
  /// The egress port towards uSID `next` (the one after ours), on `lane`.
  uint32_t lookup_srv6(uint16_t next, uint32_t lane) const {
    if (usid::plane_bits(next) != plane_bits_) return kNoPort;
    const uint32_t t = static_cast<uint32_t>(usid::tier(next));
    const uint32_t rel = usid::index(next) - fib_base_[t];  // wraps for an empty uSID or a foreign range
    if (rel >= fib_size_[t]) return kNoPort;
    const FibEntry e = fib_data_[fib_off_[t] + rel];
    if (e.port == kNoPort) return kNoPort;
    return e.port + lane * e.lane_stride;
  }
  uint32_t route_ecmp(const Packet& p) const;

  // First cache line: what forwarding a packet reads.
  FabricContext* ctx_ = nullptr;
  PortSlot* ports_ = nullptr;
  const FibEntry* fib_data_ = nullptr;
  uint32_t nports_ = 0;
  uint32_t plane_bits_ = 0;
  uint16_t own_first_ = 0;
  uint16_t own_count_ = 0;
  uint16_t fib_base_[4] = {0, 0, 0, 0};
  uint16_t fib_size_[4] = {0, 0, 0, 0};
  uint16_t fib_off_[4] = {0, 0, 0, 0};
  bool up_ = true;
  // ECMP.
  const TopologyShape* shape_ = nullptr;
  uint64_t salt_ = 0;
  SwitchRef ref_;
  uint32_t pod_ = 0;
  uint32_t pos_ = 0;
  std::vector<int32_t> ov_index_;
  std::vector<std::vector<uint16_t>> ov_sets_;
  // Cold.
  std::vector<FibEntry> fib_;
  std::vector<Upstream> upstream_;  ///< PFC
  EventKeys pfc_keys_;              ///< PFC frames sent
};

/// 64-bit mixer (MurmurHash3 finalizer): ECMP hashing.
constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/// Maps a hash to [0, n) without division (Lemire).
constexpr uint32_t hash_pick(uint64_t h, uint32_t n) {
  return static_cast<uint32_t>(((h >> 32) * n) >> 32);
}

}  // namespace mrc::sim
