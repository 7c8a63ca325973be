// SPDX-License-Identifier: BSD-2-Clause
// Deterministic test fabric: N MRC endpoints wired through P planes x K
// paths per plane, advanced in simulated time, with scripted impairments.
//
// This is a test and example harness, not the simulator (src/sim): it favours
// clarity over speed. Each endpoint is the real sans-I/O core. A packet leaves
// a NIC port (serialized at the port rate), takes path hash(EV) % K of its
// plane towards the destination (a FIFO with its own rate, delay and optional
// queue limit, ECN threshold and trimming), passes the impairment rules, and
// is handed to the destination endpoint on the same plane.
//
// Impairments are rules: a match (source, destination, plane, path, packet
// kind, time window) plus an action (drop, trim, trim at last hop, ECN mark,
// duplicate, corrupt a byte, extra delay) applied to all, the Nth, a bitmap of,
// or a seeded random fraction of the matching packets.
//
// Every packet is framed as the software device frames it in STEV mode
// (wire/framing.hpp): an IPv6 header from the source's port address to the
// destination's on that plane (fd00:0:0:<plane>::<host + 1>), the EV in the
// UDP source port and flow label, UDP to 4791. The sending NIC computes the
// IBTA ICRC over those headers and the packet; the receiving NIC checks it
// and drops a corrupt packet (FabricStats::icrc_drops). An ECN mark sets CE
// in the IPv6 header, a field the ICRC masks.
#pragma once

#include <array>

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "harness/events.hpp"
#include "util/prng.hpp"
#include "util/time.hpp"
#include "wire/framing.hpp"

namespace mrc::harness {

struct FabricConfig {
  uint32_t hosts = 2;
  uint32_t planes = 2;
  uint32_t paths_per_plane = 4;
  uint64_t port_rate_bps = 100'000'000'000ull;  ///< NIC port rate (per plane)
  uint64_t path_rate_bps = 0;                   ///< 0: same as the port rate
  Duration path_delay = Duration::us(2);        ///< one-way propagation per path
  /// Per-path one-way delay override: delay of path k = path_delay + k * path_delay_step.
  Duration path_delay_step = Duration{};
  uint64_t queue_limit_bytes = 0;   ///< 0 = unbounded path queues
  uint64_t ecn_threshold_bytes = 0; ///< 0 = never mark
  bool trim_on_overflow = false;    ///< overflowing data is trimmed, not dropped
  bool carry_payload = true;        ///< copy payload bytes (false: length only)
  uint64_t seed = 1;
  core::EndpointConfig endpoint;    ///< ports are set from planes/port_rate
};

enum class PacketKind : uint8_t { any, data, control, probe };

struct Match {
  int src = -1;       ///< -1 = any
  int dst = -1;
  int plane = -1;
  int path = -1;
  PacketKind kind = PacketKind::any;
  int opcode = -1;    ///< BTH opcode (wire::Opcode); -1 = any
  Time from = Time::zero();
  Time until = Time::never();
};

enum class Action : uint8_t { drop, trim, trim_lasthop, ecn, duplicate, corrupt, delay };

struct Rule {
  Match match;
  Action action = Action::drop;
  enum class Select : uint8_t { all, nth, bitmap, random } select = Select::all;
  uint64_t nth = 0;                 ///< 1-based index among matching packets
  std::vector<bool> bitmap;         ///< bit i: apply to the i-th (0-based) matching packet
  double probability = 0.0;
  Duration extra_delay;             ///< for Action::delay
  // Counters.
  uint64_t matched = 0;
  uint64_t applied = 0;
};

/// One packet in flight in the harness.
struct Packet {
  int src = 0;
  int dst = 0;
  uint8_t plane = 0;
  int path = 0;
  uint32_t entropy = 0;
  core::TrafficClass tc = core::TrafficClass::data;
  bool trimmable = false;
  bool ecn = false;
  core::TrimMark trim = core::TrimMark::none;
  uint16_t header_len = 0;
  uint32_t payload_len = 0;
  std::vector<uint8_t> bytes;       ///< header (+ payload if carried) + ICRC (unless trimmed)
  /// IPv6 + UDP headers in front of `bytes` (wire::build_frame), kept apart
  /// so `bytes` starts at BTH as the core produces and consumes it.
  std::array<uint8_t, wire::kMaxFrameHeaderBytes> net{};
  uint8_t net_len = 0;
  uint64_t id = 0;
  PacketKind kind() const;
};

struct FabricStats {
  uint64_t sent = 0;
  uint64_t refused = 0;  ///< packets a host refused to send (Fabric::refuse_send)
  uint64_t delivered = 0;
  uint64_t dropped = 0;
  uint64_t trimmed = 0;
  uint64_t ecn_marked = 0;
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t overflow_drops = 0;
  uint64_t icrc_drops = 0;       ///< corrupt packets the receiving NIC discarded
};

/// Options for Fabric::connect().
struct QpOptions {
  core::QpAttr attr;              ///< mpr, wimm, timeout, retries, mtu, cap
  uint64_t ev_profile = 0;
  uint64_t cc_profile = 0;
  core::QpInit init;              ///< create_qp() arguments on both hosts, incl. the transport
};
struct QpPair {
  uint32_t a = 0;  ///< QPN on host a
  uint32_t b = 0;  ///< QPN on host b
};

class Fabric {
 public:
  explicit Fabric(const FabricConfig& cfg);
  ~Fabric();

  core::Endpoint& ep(int host) { return *eps_[static_cast<size_t>(host)]; }
  Time now() const { return now_; }
  const FabricConfig& config() const { return cfg_; }
  const FabricStats& stats() const { return stats_; }

  // ---- setup helpers
  /// A registered buffer of real memory on `host` (remote-writable).
  struct Buffer {
    std::vector<uint8_t> mem;
    core::MemoryRegion mr;
    uint64_t addr() const { return reinterpret_cast<uint64_t>(mem.data()); }
  };
  Buffer& alloc(int host, size_t bytes);
  /// Creates (with opt.init: CQs, transport) and connects a QP pair between
  /// hosts a and b (RESET..RTS on both, random initial PSNs unless forced
  /// with `fixed_psn`). Aborts the test on failure.
  QpPair connect(int a, int b, const QpOptions& opt = QpOptions(), int64_t fixed_psn = -1);

  // ---- impairments
  /// Adds a rule; returns a reference valid for the fabric's lifetime.
  Rule& add_rule(const Rule& r);
  /// Path `path` of `plane` is down (both directions) during [from, until).
  Rule& path_down(int plane, int path, Time from, Time until = Time::never());
  /// Path index that EV `entropy` takes from src to dst (ECMP hash).
  int path_of(int src, int dst, uint32_t entropy) const;

  /// Called for every packet when it leaves a NIC port (before impairments).
  std::function<void(const Packet&, Time)> on_transmit;
  /// Asked for every packet a host's NIC is about to send: true makes the
  /// host refuse it (a full socket buffer or egress queue), reported to its
  /// endpoint with Endpoint::on_transmit_refused; the port stays free.
  std::function<bool(int host, const core::Transmit&, Time)> refuse_send;

  // ---- running
  /// Runs events until `t` (inclusive). Returns false if the run went idle
  /// before `t` (nothing left to do).
  bool run_until(Time t);
  /// Runs until `done()` is true or `limit` passes. True if done() held.
  bool run_until(const std::function<bool()>& done, Time limit);
  /// Kicks a host after posting work outside the event loop.
  void kick(int host);

  /// FNV-1a hash over every transmitted packet (time, ports, EV, header
  /// bytes with RETH's address masked, since buffers live at process
  /// addresses): equal seeds give equal hashes.
  uint64_t trace_hash() const { return trace_hash_; }
  /// Drains and returns all completions and events of `host` (including
  /// those that helpers such as write_and_wait() set aside while waiting).
  std::vector<Event> events(int host);
  /// The next completion (from the host's CQ) or event of `host`.
  std::optional<Event> next_event(int host) { return harness::next_event(ep(host), cq(host)); }
  /// Sets an event aside for events(); used by helpers that poll for
  /// completions and must not lose other events.
  void hold_event(int host, Event e) { held_[static_cast<size_t>(host)].push_back(std::move(e)); }
  /// The host's completion queue: connect() puts both sides of every QP on it.
  uint32_t cq(int host) const { return cqs_[static_cast<size_t>(host)]; }

 private:
  struct Ev {
    Time t;
    uint64_t seq;
    enum Kind : uint8_t { port_free, deliver, timer } kind;
    int host;
    int port;
    uint64_t gen;
    Packet* pkt;
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  void push(Ev e);
  void try_send(int host, int port);
  void transmit(int host, const core::Transmit& tx, const uint8_t* hdr);
  void route(Packet* p, Time at);
  bool apply_rules(Packet* p, Time at, Duration* extra);
  void deliver(Packet* p);
  void arm_timer(int host);
  void hash_packet(const Packet& p);

  FabricConfig cfg_;
  Time now_ = Time::zero();
  uint64_t seq_ = 0;
  uint64_t next_pkt_id_ = 0;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q_;
  std::vector<std::unique_ptr<core::Endpoint>> eps_;
  std::vector<std::vector<Time>> port_busy_;   ///< [host][port]
  std::vector<std::vector<Time>> path_busy_;   ///< [dst*planes+plane][path]
  std::vector<Time> timer_at_;
  std::vector<uint64_t> timer_gen_;
  std::vector<std::unique_ptr<Rule>> rules_;
  std::vector<Prng> rule_rng_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::vector<std::vector<Event>> held_;
  std::vector<uint32_t> cqs_;
  Prng rng_;
  FabricStats stats_;
  uint64_t trace_hash_ = 1469598103934665603ull;
};

/// Outcome of write_and_wait().
struct TransferResult {
  bool completed = false;          ///< a completion arrived before the limit
  core::WcStatus status = core::WcStatus::general_err;
  Time finish;                     ///< when the send completion was seen
  bool data_ok = false;            ///< destination bytes equal the source
  uint64_t retransmissions = 0;
};

/// Fills a source buffer on `a` with a seeded pattern, WRITEs `bytes` of it
/// into a fresh buffer on `b` through `qp` (one work request, or `chunk`-byte
/// WRs if non-zero, all signaled), and runs the fabric until every WR
/// completes or `limit` passes. Other hosts' events are left queued.
TransferResult write_and_wait(Fabric& f, const QpPair& qp, int a, int b, uint64_t bytes, Time limit,
                              uint64_t chunk = 0, uint64_t pattern_seed = 7);

/// Simple FNV-1a checksum of a byte range.
uint64_t checksum(const uint8_t* p, size_t n);

}  // namespace mrc::harness
