// SPDX-License-Identifier: BSD-2-Clause
// A connected requester/responder pair of real core::Endpoints, driven by a
// record stream: the engine behind fuzz_endpoint, shared with the seed
// generator (gen_corpus.cc) so its seeds come from the same setup.
//
// Host 0 (the requester) has one MRC QP in RTS towards host 1 (the
// responder), WRITE and WRITE_WITH_IMM work posted into the responder's
// registered regions; the responder has receives posted. Between the
// records, the pair runs the protocol on its own: every packet either side
// polls is delivered to the other after a latency that depends on its port
// and EV (so packets reorder), timers fire, events are drained. Records
// advance time, inject raw packets, inject mutations of packets the pair
// really sent, post more work, and drop or delay packets in flight.
//
// After every step the invariants are checked; a violation prints what broke
// and aborts (a libFuzzer crash):
//  1. nothing is written outside the responder's remote-writable regions:
//     the buffers sit inside larger allocations whose guard zones (and the
//     requester's whole source buffer, and a region registered without
//     remote write, and the memory behind an unbacked region) are compared
//     with a shadow copy;
//  2. no crash and no assert (the fuzz preset keeps assertions on);
//  3. no silent hang: a QP in RTS with outstanding work
//     (Qp::has_outstanding_work(): posted work not yet sent, acknowledged
//     or recovered) has a timer armed (Endpoint::next_timeout()) or
//     something to send (has_pending_transmit()); a requester WR not yet
//     completed is such work. A packet still in flight may yet rescue a QP
//     without either, but nothing guarantees its delivery: one loss and it
//     waits forever, so the state itself is the bug;
//  4. bounded queues and work: every QP's control queue holds at most
//     Qp::kMaxCtrl packets, an endpoint holds at most one port-status
//     report per QP (one per connected peer), the events drained and the
//     packets polled in one step stay under caps, time advances (no timer
//     re-arming at the same instant forever), and one input takes at most
//     kMaxRounds deliveries and timer expiries (no packet storm);
//  5. a fatal NACK (UNEXP_EVENT) or AETH NAK the fuzzer forges for a PSN the
//     requester never sent does not fail the QP, and (ProtocolConfig::
//     confirm_fatal, the default) no AETH NAK fails it at all;
//  6. every completion matches a posted WR, once; without injected, dropped
//     or delayed packets every WR completes successfully;
//  7. with secure QPs (the first byte's bit 7), an injected packet to a
//     QP that is not a copy of one the peer sent (nor trimmed, a loss hint)
//     is refused: one of the receiver's drop counters grows. (Endpoint
//     operations, QP 2, are not sealed.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>
#include <vector>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "crypto/aes_gcm.hpp"
#include "wire/packet.hpp"

namespace mrc::fuzz {

/// Record opcodes (first byte of a record, modulo kRecordOps). The first byte
/// of an input selects the pair's configuration (PairVariant).
enum class RecordOp : uint8_t {
  advance = 0,       ///< [dt]: run (dt + 1) x 200 ns
  advance_long = 1,  ///< [dt]: run (dt + 1) x 20 us (ACK timeouts, probes)
  inject = 2,        ///< [flags, len, bytes...]: a raw packet
  mutate = 3,        ///< [flags, idx, n, (off, val) x n]: a captured packet, changed
  post = 4,          ///< [hi, lo, how]: one more WRITE / WRITE_WITH_IMM on the requester
  drop = 5,          ///< [idx]: lose a packet in flight
  delay = 6,         ///< [idx, dt]: hold a packet in flight (dt + 1) x 500 ns longer
  post_recv = 7,     ///< [n]: (n % 8) + 1 more receives on the responder
};
inline constexpr uint8_t kRecordOps = 8;

/// Flags byte of inject / mutate records.
namespace rec_flag {
inline constexpr uint8_t kToRequester = 1u << 0;  ///< else to the responder
inline constexpr uint8_t kPort1 = 1u << 1;        ///< arrives on port 1 (else 0)
inline constexpr uint8_t kEcn = 1u << 2;          ///< ECN-CE marked
inline constexpr uint8_t kTrimShift = 3;          ///< 2 bits: 1 trimmed, 2 trimmed at last hop
inline constexpr uint8_t kTruncate = 1u << 5;     ///< mutate: cut to the length byte after the pairs
}  // namespace rec_flag

// A violated invariant: says which and why, then aborts (a libFuzzer crash).
#define MRC_PAIR_FAIL(...)                                       \
  do {                                                           \
    std::fprintf(stderr, "fuzz_endpoint: invariant violated: "); \
    std::fprintf(stderr, __VA_ARGS__);                           \
    std::fprintf(stderr, "\n");                                  \
    std::abort();                                                \
  } while (0)
#define MRC_PAIR_CHECK(cond, ...)        \
  do {                                   \
    if (!(cond)) MRC_PAIR_FAIL(__VA_ARGS__); \
  } while (0)

/// What the first input byte selects.
struct PairVariant {
  uint32_t mtu = 4096;
  uint32_t first_psn = 0x1000;
  bool fixed_cc = false;     ///< fixed window instead of NSCC
  bool tiny_mpr = false;     ///< MPR 1 both ways: the PSN window is 128 packets
  bool finite_retry = false; ///< retry_exp 3 (else 25 = forever)
  core::SecureMode secure = core::SecureMode::off;  ///< bit 7 set: secure QPs; bit 6 then: encrypt
  static PairVariant from_byte(uint8_t b) {
    static constexpr uint32_t kMtus[4] = {256, 1024, 4096, 4096};
    PairVariant v;
    v.mtu = kMtus[b & 3];
    v.first_psn = (b >> 2 & 1) ? 0xFFFFF0 : 0x1000;  // 0xFFFFF0: the PSN wraps mid-transfer
    v.fixed_cc = b >> 3 & 1;
    v.tiny_mpr = b >> 4 & 1;
    v.finite_retry = b >> 5 & 1;
    // Bit 7 (clear in every seed before secure QPs, so they keep their
    // meaning): secure QPs, bit 6 saying whether they encrypt.
    if (b & 0x80) v.secure = (b & 0x40) ? core::SecureMode::encrypt : core::SecureMode::integrity;
    return v;
  }
};

class EndpointPair {
 public:
  static constexpr int kRequester = 0;
  static constexpr int kResponder = 1;
  static constexpr uint32_t kPorts = 2;
  static constexpr uint32_t kSendCq = 1;
  static constexpr uint32_t kRecvCq = 2;

  // Memory: a guard zone around every buffer, all in one allocation per host.
  static constexpr size_t kGuard = 512;
  static constexpr size_t kSrcBytes = 32 * 1024;       ///< requester source buffer
  static constexpr size_t kRegionBytes = 16 * 1024;    ///< each remote-writable responder region
  static constexpr size_t kSmallRegionBytes = 4096;    ///< the read-only and the unbacked region
  // Responder layout: guard | R0 | guard | R1 | guard | RO | guard | UB | guard
  // R0, R1: remote-writable; RO: local write only; UB: registered unbacked
  // (remote-writable, but placement must write nothing there).
  static constexpr size_t kR0 = kGuard;
  static constexpr size_t kR1 = kR0 + kRegionBytes + kGuard;
  static constexpr size_t kRo = kR1 + kRegionBytes + kGuard;
  static constexpr size_t kUb = kRo + kSmallRegionBytes + kGuard;
  static constexpr size_t kRspBytes = kUb + kSmallRegionBytes + kGuard;
  static constexpr size_t kReqBytes = kGuard + kSrcBytes + kGuard;

  // Caps for invariant 4. The queues the core caps itself (a QP's control
  // queue, Qp::kMaxCtrl; the peers' port-status reports, one per connected
  // peer) are checked against its own bounds in check_queue_caps(). What one
  // step yields besides has no stated cap (data is bounded by the CC and PSN
  // windows, events by the posted work and the EVs' transitions), so these
  // two sit well above anything a correct step produces and only catch a
  // runaway.
  static constexpr size_t kMaxEventsPerStep = 4096;
  static constexpr size_t kMaxTransmitsPerStep = 8192;
  static constexpr uint32_t kMaxSpinsAtOneInstant = 10000;
  /// Rounds (passes delivering the packets and firing the timers due at one
  /// instant) per input. Exceeding it is a violation (a packet or timer storm), not a cut:
  /// a correct core stays far below. A round serves every packet due at one
  /// instant, and an instant's transmissions land on at most 16 latencies;
  /// clean transfers take tens of rounds, 48 WRs of 16 KiB at MTU 256 a few
  /// hundred. What recurs without new input backs off: EV probes to 10 ms,
  /// the ACK timeout from 262 us (timeout 8); over the longest run (256
  /// records of 5.12 ms, 1.3 s) the 16 EVs' probes and their answers make
  /// some 6300 rounds. The cap also bounds one input's work, so a storm is
  /// reported as a crash with its input instead of running into libFuzzer's
  /// timeout.
  static constexpr uint64_t kMaxRounds = 50000;
  static constexpr size_t kMaxPosts = 48;   ///< < kInitialRecvs: IMMs never lack a receive
  static constexpr size_t kInitialRecvs = 64;
  static constexpr size_t kCaptured = 32;   ///< packets remembered per sender

  struct Captured {
    std::vector<uint8_t> bytes;
    uint8_t port = 0;
    uint32_t entropy = 0;
  };

  explicit EndpointPair(const PairVariant& v) : v_(v) {
    init_memory();
    core::EndpointConfig ec;
    ec.ports.assign(kPorts, core::PortConfig{});
    ec.max_qps = 4;
    ec.max_send_wr = 64;
    ec.max_recv_wr = 256;
    ec.make_aead = &crypto::make_aes_gcm;
    for (int h = 0; h < 2; ++h) {
      ec.seed = 0x5eed0000u + static_cast<uint64_t>(h);
      std::string why;
      auto ep = core::Endpoint::create(ec, &why);
      MRC_PAIR_CHECK(ep.ok(), "endpoint config rejected: %s", why.c_str());
      ep_[h] = std::move(ep.value());
      // CQs 0 (unused), kSendCq and kRecvCq, each large enough for every WR
      // that can be outstanding: an overflow is a finding (CqErrorEvent).
      for (uint32_t c = 0; c <= kRecvCq; ++c)
        MRC_PAIR_CHECK(ep_[h]->create_cq(ec.max_send_wr + ec.max_recv_wr).value() == c, "CQ ids are 0, 1, 2");
      core::EvProfile evp;
      evp.ev_count = 16;
      evp.active_count = 8;
      evp.ev_min_active = 2;
      MRC_PAIR_CHECK(ep_[h]->set_ev_profile(1, evp, &why).ok(), "EV profile: %s", why.c_str());
      core::CcProfile ccp;
      if (v_.fixed_cc) ccp.algorithm = core::kCcFixed;
      MRC_PAIR_CHECK(ep_[h]->set_cc_profile(1, ccp, &why).ok(), "CC profile: %s", why.c_str());
    }
    src_mr_ = reg(kRequester, req_base() + kGuard, kSrcBytes, core::access::kLocalWrite, true);
    for (int i = 0; i < 2; ++i)
      dst_mr_[i] = reg(kResponder, rsp_base() + (i ? kR1 : kR0), kRegionBytes,
                       core::access::kLocalWrite | core::access::kRemoteWrite, true);
    ro_mr_ = reg(kResponder, rsp_base() + kRo, kSmallRegionBytes, core::access::kLocalWrite, true);
    ub_mr_ = reg(kResponder, rsp_base() + kUb, kSmallRegionBytes,
                 core::access::kLocalWrite | core::access::kRemoteWrite, false);
    connect();
    for (size_t i = 0; i < kInitialRecvs; ++i) post_recv_one();
    // The initial work: a multi-packet WRITE, a one-byte WRITE_WITH_IMM, a
    // zero-length WRITE, and a WRITE_WITH_IMM into the unbacked region.
    post_write(0, 10000, 0, 0, false);
    post_write(1, 1, 1, 5, true);
    post_write(7, 0, 0, 0, false);
    post_write(100, 3000, 2, 64, true);
  }

  core::Endpoint& ep(int h) { return *ep_[h]; }
  Time now() const { return now_; }
  uint32_t qpn(int h) const { return qpn_[h]; }
  const std::deque<Captured>& captured(int sender) const { return captured_[sender]; }
  bool interfered() const { return interfered_; }
  uint64_t rounds() const { return rounds_; }
  size_t outstanding() const { return outstanding_.size(); }

  // ------------------------------------------------------------------ records
  /// Runs the protocol for `d`.
  void advance(Duration d) { run_until(now_ + d); }

  /// Delivers `bytes` to host `dst` now, as if from its peer, then lets the
  /// pair react.
  void inject(int dst, std::span<const uint8_t> bytes, uint8_t flags, uint32_t entropy) {
    interfered_ = true;
    core::RxMeta meta;
    meta.port = (flags & rec_flag::kPort1) ? 1 : 0;
    meta.peer = static_cast<uint64_t>(1 - dst);
    meta.entropy = entropy;
    meta.ecn_ce = flags & rec_flag::kEcn;
    const uint8_t trim = flags >> rec_flag::kTrimShift & 3;
    meta.trim = trim == 1 ? core::TrimMark::trimmed : trim == 2 ? core::TrimMark::trimmed_lasthop
                                                                : core::TrimMark::none;
    const core::QpState before = state(kRequester);
    const std::optional<uint32_t> fatal_psn = dst == kRequester ? fatal_nack_psn(bytes) : std::nullopt;
    const uint64_t refused_before = refused(dst);
    ep(dst).handle_datagram(now_, meta, bytes);
    // Invariant 7.
    const bool endpoint_op = bytes.size() >= wire::Bth::kSize &&
                             wire::decode<wire::Bth>(bytes).value().dest_qp == core::kEndpointOpsQpn;
    if (v_.secure != core::SecureMode::off && meta.trim == core::TrimMark::none && !endpoint_op &&
        refused(dst) == refused_before) {
      const std::deque<Captured>& sent = captured_[1 - dst];
      const bool copy = std::any_of(sent.begin(), sent.end(), [&](const Captured& c) {
        return c.bytes.size() == bytes.size() && std::equal(bytes.begin(), bytes.end(), c.bytes.begin());
      });
      MRC_PAIR_CHECK(copy, "a secure QP took an injected packet of %zu bytes that its peer never sent", bytes.size());
    }
    // Invariant 5.
    if (fatal_psn && before == core::QpState::rts && state(kRequester) == core::QpState::error) {
      MRC_PAIR_CHECK(sent_psns_.count(*fatal_psn), "a forged fatal NACK/NAK for PSN 0x%06x, which the "
                     "requester never sent, failed its QP", *fatal_psn);
      MRC_PAIR_CHECK(!ep(kRequester).config().protocol.confirm_fatal || bytes[0] != uint8_t(wire::Opcode::ack),
                     "a forged AETH NAK for PSN 0x%06x failed the QP although fatal errors are confirmed",
                     *fatal_psn);
    }
    settle();
  }

  /// Posts one more WRITE (or WRITE_WITH_IMM) on the requester: `len` bytes
  /// into region `region` (0, 1: backed, 2: unbacked) at `dst_off`, from the
  /// same offset of the source buffer, both clamped to stay valid.
  void post_write(uint64_t wr_id, uint32_t len, int region, uint32_t dst_off, bool imm) {
    if (posts_ >= kMaxPosts) return;
    const core::MemoryRegion& dst = region == 2 ? ub_mr_ : dst_mr_[region & 1];
    len = std::min<uint32_t>(len, static_cast<uint32_t>(dst.length));
    dst_off %= static_cast<uint32_t>(dst.length - len + 1);
    core::SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = imm ? core::WrOpcode::rdma_write_with_imm : core::WrOpcode::rdma_write;
    wr.local_addr = src_mr_.addr + (dst_off % (kSrcBytes - len + 1));
    wr.lkey = src_mr_.lkey;
    wr.length = len;
    wr.remote_addr = dst.addr + dst_off;
    wr.rkey = dst.rkey;
    wr.imm = 0xC0DE0000u | static_cast<uint32_t>(wr_id & 0xFFFF);
    // wr_id must be unique among outstanding WRs for invariant 6.
    while (outstanding_.count(wr.wr_id)) wr.wr_id += 1000;
    if (ep(kRequester).post_send(now_, qpn_[kRequester], wr).ok()) {
      outstanding_.insert(wr.wr_id);
      ++posts_;
    }
    settle();
  }

  void post_recv_one() {
    if (ep(kResponder).post_recv(qpn_[kResponder], core::RecvWr{recvs_posted_}).ok()) ++recvs_posted_;
  }

  /// Removes packet `idx` (modulo the count) from the network.
  void drop(size_t idx) {
    if (flight_.empty()) return;
    interfered_ = true;
    flight_.erase(std::next(flight_.begin(), static_cast<long>(idx % flight_.size())));
  }

  /// Holds packet `idx` in flight `d` longer.
  void delay(size_t idx, Duration d) {
    if (flight_.empty()) return;
    interfered_ = true;
    auto it = std::next(flight_.begin(), static_cast<long>(idx % flight_.size()));
    InFlight p = std::move(it->second);
    flight_.erase(it);
    p.at += d;
    enqueue(std::move(p));
  }

  /// Runs the pair on its own for up to `limit`, or until no WR is
  /// outstanding and nothing is in flight; then checks invariant 6 and the
  /// whole of invariant 1.
  void finish(Duration limit) {
    const Time end = now_ + limit;
    while (now_ < end && (!outstanding_.empty() || !flight_.empty())) {
      const Time before = now_;
      run_until(std::min(end, now_ + Duration::us(100)));
      if (now_ == before) break;
    }
    if (!interfered_ && state(kRequester) == core::QpState::rts)
      MRC_PAIR_CHECK(outstanding_.empty(), "%zu WR(s) did not complete within %.0f us of clean traffic",
                     outstanding_.size(), limit.to_us());
    MRC_PAIR_CHECK(!failed_without_interference_, "a WR failed (status %s) although no packet was forged, "
                   "dropped or delayed", core::to_string(first_failure_));
    check_memory(true);
  }

  /// Invariant 1: guard zones (and read-only memory) unchanged. `full` also
  /// compares the requester's source buffer, which nothing may write.
  void check_memory(bool full) const {
    auto same = [](const uint8_t* a, const uint8_t* b, size_t off, size_t n, const char* what) {
      if (std::memcmp(a + off, b + off, n) == 0) return;
      size_t i = off;
      while (a[i] == b[i]) ++i;
      MRC_PAIR_FAIL("%s changed at byte %zu (0x%02x, was 0x%02x)", what, i, a[i], b[i]);
    };
    const Memory& m = mem();
    same(m.req.get(), m.req_shadow.get(), 0, kGuard, "requester guard before the source buffer");
    same(m.req.get(), m.req_shadow.get(), kGuard + kSrcBytes, kGuard, "requester guard after the source buffer");
    if (full) same(m.req.get(), m.req_shadow.get(), kGuard, kSrcBytes, "requester source buffer (not remote-writable)");
    same(m.rsp.get(), m.rsp_shadow.get(), 0, kGuard, "responder guard before region 0");
    same(m.rsp.get(), m.rsp_shadow.get(), kR0 + kRegionBytes, kGuard, "responder guard after region 0");
    same(m.rsp.get(), m.rsp_shadow.get(), kR1 + kRegionBytes, kGuard, "responder guard after region 1");
    same(m.rsp.get(), m.rsp_shadow.get(), kRo, kSmallRegionBytes, "responder region registered without remote write");
    same(m.rsp.get(), m.rsp_shadow.get(), kRo + kSmallRegionBytes, kGuard, "responder guard after the read-only region");
    same(m.rsp.get(), m.rsp_shadow.get(), kUb, kSmallRegionBytes, "memory behind the unbacked region");
    same(m.rsp.get(), m.rsp_shadow.get(), kUb + kSmallRegionBytes, kGuard, "responder guard after the unbacked region");
  }

 private:
  struct InFlight {
    Time at;
    uint64_t seq = 0;
    int dst = 0;
    core::RxMeta meta;
    std::vector<uint8_t> bytes;
  };
  // One allocation per host, reused by every run (the fuzzer runs millions):
  // reset from the shadow copy when a pair is built.
  struct Memory {
    std::unique_ptr<uint8_t[]> req, req_shadow, rsp, rsp_shadow;
  };
  static Memory& mem() {
    static Memory m = [] {
      Memory x;
      x.req = std::make_unique<uint8_t[]>(kReqBytes);
      x.req_shadow = std::make_unique<uint8_t[]>(kReqBytes);
      x.rsp = std::make_unique<uint8_t[]>(kRspBytes);
      x.rsp_shadow = std::make_unique<uint8_t[]>(kRspBytes);
      // Distinct patterns: a byte copied from the source into a guard, or
      // from one guard to another, shows.
      for (size_t i = 0; i < kReqBytes; ++i) x.req_shadow[i] = static_cast<uint8_t>(0x5A ^ (i * 131) ^ (i >> 8));
      for (size_t i = 0; i < kRspBytes; ++i) x.rsp_shadow[i] = static_cast<uint8_t>(0xA5 ^ (i * 197) ^ (i >> 9));
      return x;
    }();
    return m;
  }
  static void init_memory() {
    Memory& m = mem();
    std::memcpy(m.req.get(), m.req_shadow.get(), kReqBytes);
    std::memcpy(m.rsp.get(), m.rsp_shadow.get(), kRspBytes);
  }
  static uint64_t req_base() { return reinterpret_cast<uint64_t>(mem().req.get()); }
  static uint64_t rsp_base() { return reinterpret_cast<uint64_t>(mem().rsp.get()); }

  core::MemoryRegion reg(int h, uint64_t addr, uint64_t len, uint32_t acc, bool backed) {
    auto mr = ep(h).reg_mr(addr, len, acc, backed);
    MRC_PAIR_CHECK(mr.ok(), "reg_mr failed on host %d", h);
    return *mr;
  }

  void connect() {
    using namespace core::qp_attr;
    core::QpInit init;
    init.send_cq = kSendCq;
    init.recv_cq = kRecvCq;
    for (int h = 0; h < 2; ++h) {
      auto q = ep(h).create_qp(init);
      MRC_PAIR_CHECK(q.ok(), "create_qp failed on host %d", h);
      qpn_[h] = *q;
    }
    for (int h = 0; h < 2; ++h) {
      core::QpAttr at;
      at.state = core::QpState::init;
      at.ev_profile_id = 1;
      at.cc_profile_id = 1;
      MRC_PAIR_CHECK(ep(h).modify_qp(now_, qpn_[h], at, kState | kEvProfileId | kCcProfileId).ok(), "INIT");
      at.state = core::QpState::rtr;
      at.dest_qpn = qpn_[1 - h];
      at.rq_psn = v_.first_psn;
      at.peer = static_cast<uint64_t>(1 - h);
      at.path_mtu = v_.mtu;
      at.mpr_dest = v_.tiny_mpr ? 1 : 8;
      // Secure QPs: host h sends under key h, its peer's under 1 - h.
      at.secure.mode = v_.secure;
      for (int k = 0; k < 2; ++k) {
        core::SecureKey& key = k == 0 ? at.secure.send : at.secure.recv;
        const int owner = k == 0 ? h : 1 - h;
        key.key.fill(static_cast<uint8_t>(0x40 + owner));
        key.key_len = 16;
        key.salt = static_cast<uint32_t>(owner);
        key.key_id = static_cast<uint8_t>(owner);
      }
      MRC_PAIR_CHECK(ep(h).modify_qp(now_, qpn_[h], at,
                                     kState | kDestQpn | kRqPsn | kPeer | kPathMtu | kMaxWimmDest | kMprDest | kSecure)
                         .ok(),
                     "RTR");
      at.state = core::QpState::rts;
      at.sq_psn = v_.first_psn;
      at.mpr = v_.tiny_mpr ? 1 : 8;
      at.timeout = 8;
      at.retry_exp = v_.finite_retry ? 3 : 25;
      MRC_PAIR_CHECK(ep(h).modify_qp(now_, qpn_[h], at, kState | kSqPsn | kMaxWimm | kMpr | kRetryCnt | kTimeout)
                         .ok(),
                     "RTS");
    }
  }

  core::QpState state(int h) const {
    const core::Qp* q = ep_[h]->qp(qpn_[h]);
    return q ? q->state() : core::QpState::reset;
  }

  /// The PSN a fatal NACK (UNEXP_EVENT) or an AETH NAK addressed to the
  /// requester's QP names, if `bytes` is one.
  std::optional<uint32_t> fatal_nack_psn(std::span<const uint8_t> bytes) const {
    auto p = wire::parse(bytes);
    if (!p.ok() || p->h.bth.dest_qp != qpn_[kRequester]) return std::nullopt;
    if (p->h.opcode() == wire::Opcode::nack &&
        !wire::nack_is_retriable(static_cast<wire::NackCode>(p->h.neth.reason)))
      return p->h.neth.nack_psn;
    if (p->h.opcode() == wire::Opcode::ack && wire::aeth::is_nak(p->h.aeth.syndrome)) return p->h.bth.psn;
    return std::nullopt;
  }

  void enqueue(InFlight p) {
    p.seq = next_seq_++;
    const FlightKey key{p.at.ps(), p.seq};
    flight_.emplace(key, std::move(p));
  }

  /// Polls every packet both sides have now, drains their events and checks
  /// invariants 3, 4 and 6.
  void settle() {
    // Before polling: polling empties the control queues, so this is where
    // they hold the most (everything one instant's deliveries and timers
    // queued).
    check_queue_caps();
    for (int h = 0; h < 2; ++h) {
      size_t n = 0;
      uint8_t hdr[wire::kMaxHeaderBytes];
      for (;;) {
        auto tx = ep(h).poll_transmit(now_, (1u << kPorts) - 1, std::span<uint8_t>(hdr, sizeof hdr));
        if (!tx) break;
        MRC_PAIR_CHECK(++n <= kMaxTransmitsPerStep, "host %d produced more than %zu packets at one instant", h,
                       kMaxTransmitsPerStep);
        MRC_PAIR_CHECK(tx->port < kPorts, "host %d sends on port %u", h, tx->port);
        MRC_PAIR_CHECK(tx->header_len <= wire::kMaxHeaderBytes, "header of %u bytes", tx->header_len);
        InFlight p;
        p.dst = static_cast<int>(tx->peer);
        MRC_PAIR_CHECK(p.dst == 1 - h, "host %d sends to peer %llu", h, static_cast<unsigned long long>(tx->peer));
        p.bytes.assign(hdr, hdr + tx->header_len);
        if (tx->payload && tx->payload_len) p.bytes.insert(p.bytes.end(), tx->payload, tx->payload + tx->payload_len);
        p.meta.port = tx->port;
        p.meta.peer = static_cast<uint64_t>(h);
        p.meta.entropy = tx->entropy;
        note_sent(h, p.bytes, tx->port, tx->entropy);
        // Latency: a base, plus a per-plane and a per-EV part, so packets
        // sprayed over several EVs arrive out of order.
        p.at = now_ + Duration::us(2) + Duration::ns(300) * tx->port + Duration::ns(100) * (tx->entropy % 8);
        enqueue(std::move(p));
      }
    }
    drain_events();
    check_no_silent_hang();
  }

  /// Invariant 4, the queues the core caps: a QP's control queue, and the
  /// port-status reports an endpoint holds (one per connected peer, so no
  /// more than it has QPs).
  void check_queue_caps() const {
    for (int h = 0; h < 2; ++h) {
      const core::Endpoint& e = *ep_[h];
      const std::vector<uint32_t> qps = e.qp_numbers();
      MRC_PAIR_CHECK(e.peer_status_entries() <= qps.size(),
                     "host %d holds %zu peer port-status entries with %zu QP(s)", h, e.peer_status_entries(),
                     qps.size());
      for (uint32_t n : qps) {
        const size_t queued = e.qp(n)->control_queued();
        MRC_PAIR_CHECK(queued <= core::Qp::kMaxCtrl, "host %d QP 0x%x has %zu control packets queued (cap %zu)", h,
                       n, queued, core::Qp::kMaxCtrl);
      }
    }
  }

  /// Invariant 3: a QP in RTS with outstanding work has a timer armed or
  /// something to send; and a requester WR not yet completed counts as such
  /// work (else the core forgot it and the first check cannot see the hang).
  void check_no_silent_hang() const {
    if (!outstanding_.empty() && state(kRequester) == core::QpState::rts)
      MRC_PAIR_CHECK(ep_[kRequester]->qp(qpn_[kRequester])->has_outstanding_work(),
                     "the requester's QP is in RTS with %zu WR(s) not completed but reports no outstanding work",
                     outstanding_.size());
    for (int h = 0; h < 2; ++h) {
      const core::Endpoint& e = *ep_[h];
      if (!e.next_timeout().is_never() || e.has_pending_transmit()) continue;
      for (uint32_t n : e.qp_numbers()) {
        const core::Qp& q = *e.qp(n);
        if (q.state() != core::QpState::rts || !q.has_outstanding_work()) continue;
        const core::QpStats& st = q.stats();
        const core::cc::Controller* cc = q.controller();
        const std::string_view cc_name = cc ? cc->name() : std::string_view("none");
        MRC_PAIR_FAIL("silent hang: host %d QP 0x%x is in RTS with work outstanding (%zu WR(s) not completed), "
                      "no timer armed and nothing to send (t=%.3f us, %zu packet(s) in flight; CC %.*s window "
                      "%llu bytes, %lld in flight; QP sent %llu data, %llu rtx, got %llu SACKs, %llu NACKs; "
                      "%llu timeouts, %llu tail probes)",
                      h, n, h == kRequester ? outstanding_.size() : size_t{0}, now_.to_us(), flight_.size(),
                      static_cast<int>(cc_name.size()), cc_name.data(),
                      static_cast<unsigned long long>(cc ? cc->cwnd_bytes() : 0),
                      static_cast<long long>(cc ? cc->inflight_bytes() : 0),
                      static_cast<unsigned long long>(st.data_packets_sent),
                      static_cast<unsigned long long>(st.retransmissions),
                      static_cast<unsigned long long>(st.sacks_received),
                      static_cast<unsigned long long>(st.nacks_received),
                      static_cast<unsigned long long>(st.timeouts), static_cast<unsigned long long>(st.tail_probes));
      }
    }
  }

  /// Packets host `h` dropped before they reached a QP's logic.
  uint64_t refused(int h) const {
    const core::EndpointStats& s = ep_[h]->stats();
    return s.rx_malformed + s.rx_unknown_qp + s.rx_wrong_peer + s.rx_bad_state + s.rx_auth_failures + s.rx_replays +
           s.rx_bad_key_id;
  }

  void note_sent(int h, const std::vector<uint8_t>& bytes, uint8_t port, uint32_t entropy) {
    std::deque<Captured>& ring = captured_[h];
    if (ring.size() == kCaptured) ring.pop_front();
    ring.push_back(Captured{bytes, port, entropy});
    if (h == kRequester && !bytes.empty() && wire::opcode_info(bytes[0]).data && bytes.size() >= wire::Bth::kSize) {
      auto bth = wire::decode<wire::Bth>(std::span<const uint8_t>(bytes.data(), bytes.size()));
      if (bth.ok()) sent_psns_.insert(bth->psn);
    }
  }

  void drain_events() {
    for (int h = 0; h < 2; ++h) {
      size_t n = 0;
      core::WorkCompletion wcs[16];
      for (uint32_t cq : {kSendCq, kRecvCq}) {
        while (size_t got = ep(h).poll_cq(cq, wcs)) {
          for (size_t i = 0; i < got; ++i) {
            MRC_PAIR_CHECK(++n <= kMaxEventsPerStep, "host %d queued more than %zu events in one step", h,
                           kMaxEventsPerStep);
            on_completion(h, cq, wcs[i]);
          }
        }
      }
      while (auto e = ep(h).poll_event()) {
        MRC_PAIR_CHECK(++n <= kMaxEventsPerStep, "host %d queued more than %zu events in one step", h,
                       kMaxEventsPerStep);
        MRC_PAIR_CHECK(!std::holds_alternative<core::CqErrorEvent>(*e), "host %d overflowed a CQ", h);
      }
    }
  }

  void on_completion(int h, uint32_t cq, const core::WorkCompletion& wc) {
    MRC_PAIR_CHECK(wc.cq == cq, "completion for CQ %u polled from CQ %u", wc.cq, cq);
    if (h == kRequester) {
      MRC_PAIR_CHECK(cq == kSendCq && wc.opcode == core::WcOpcode::rdma_write,
                     "requester completion on CQ %u, opcode %d", cq, static_cast<int>(wc.opcode));
      MRC_PAIR_CHECK(outstanding_.erase(wc.wr_id) == 1, "completion for WR %llu, which is not outstanding",
                     static_cast<unsigned long long>(wc.wr_id));
      if (wc.status != core::WcStatus::success && !interfered_ && !failed_without_interference_) {
        failed_without_interference_ = true;
        first_failure_ = wc.status;
      }
    } else {
      MRC_PAIR_CHECK(cq == kRecvCq && wc.opcode == core::WcOpcode::recv_rdma_with_imm,
                     "responder completion on CQ %u, opcode %d", cq, static_cast<int>(wc.opcode));
      MRC_PAIR_CHECK(++recvs_completed_ <= recvs_posted_, "more receive completions (%llu) than receives posted",
                     static_cast<unsigned long long>(recvs_completed_));
    }
  }

  /// Runs the pair until `t`: delivers packets and fires timers in time order.
  void run_until(Time t) {
    uint32_t spins = 0;
    Time last = now_;
    for (;;) {
      settle();
      Time next = std::min(ep(0).next_timeout(), ep(1).next_timeout());
      if (!flight_.empty()) next = std::min(next, flight_.begin()->second.at);
      if (next > t) break;
      next = std::max(next, now_);
      if (next == last) {
        MRC_PAIR_CHECK(++spins <= kMaxSpinsAtOneInstant,
                       "time does not advance: %u rounds at t=%.3f us (a timer re-arms at now?)", spins,
                       now_.to_us());
      } else {
        spins = 0;
        last = next;
      }
      if (++rounds_ > kMaxRounds) {
        MRC_PAIR_FAIL("more than %llu rounds by t=%.3f us (requester timer %.3f us, responder timer %.3f us, "
                      "%zu packet(s) in flight): a timer storm?",
                      static_cast<unsigned long long>(kMaxRounds), now_.to_us(), ep(0).next_timeout().to_us(),
                      ep(1).next_timeout().to_us(), flight_.size());
      }
      now_ = next;
      while (!flight_.empty() && flight_.begin()->second.at <= now_) {
        InFlight p = std::move(flight_.begin()->second);
        flight_.erase(flight_.begin());
        ep(p.dst).handle_datagram(now_, p.meta, p.bytes);
      }
      for (int h = 0; h < 2; ++h)
        if (ep(h).next_timeout() <= now_) ep(h).handle_timeout(now_);
    }
    now_ = std::max(now_, t);
  }

  PairVariant v_;
  std::unique_ptr<core::Endpoint> ep_[2];
  uint32_t qpn_[2] = {0, 0};
  core::MemoryRegion src_mr_, dst_mr_[2], ro_mr_, ub_mr_;
  Time now_ = Time::zero();
  using FlightKey = std::pair<int64_t, uint64_t>;  ///< (arrival ps, sequence)
  std::map<FlightKey, InFlight> flight_;  ///< the network, in delivery order
  uint64_t next_seq_ = 0;
  uint64_t rounds_ = 0;
  std::deque<Captured> captured_[2];
  std::unordered_set<uint32_t> sent_psns_;   ///< 24-bit PSNs of the requester's data packets
  std::unordered_set<uint64_t> outstanding_; ///< wr_ids posted, not yet completed
  size_t posts_ = 0;
  uint64_t recvs_posted_ = 0;
  uint64_t recvs_completed_ = 0;
  bool interfered_ = false;
  bool failed_without_interference_ = false;
  core::WcStatus first_failure_ = core::WcStatus::success;
};

inline void dump(std::FILE* f, std::span<const uint8_t> bytes) {
  std::fprintf(f, "   ");
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 64); ++i) std::fprintf(f, " %02x", bytes[i]);
  if (bytes.size() > 64) std::fprintf(f, " ... (%zu bytes)", bytes.size());
  auto p = wire::parse(bytes);
  if (p.ok())
    std::fprintf(f, "  (%.*s to QP 0x%x, PSN 0x%06x)", static_cast<int>(p->h.info().name.size()),
                 p->h.info().name.data(), p->h.bth.dest_qp, p->h.bth.psn);
  else std::fprintf(f, "  (does not parse)");
  std::fprintf(f, "\n");
}

/// Reads records from a fuzz input and applies them to a pair.
class RecordReader {
 public:
  RecordReader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  bool byte(uint8_t& b) {
    if (p_ == end_) return false;
    b = *p_++;
    return true;
  }
  std::span<const uint8_t> take(size_t n) {
    n = std::min<size_t>(n, static_cast<size_t>(end_ - p_));
    std::span<const uint8_t> s(p_, n);
    p_ += n;
    return s;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

/// Applies one record; returns false at the end of the input. With `trace`,
/// prints each record and the requester's state after it (for reproducers).
inline bool apply_record(EndpointPair& pair, RecordReader& in, std::FILE* trace = nullptr) {
  uint8_t op = 0, a = 0, b = 0, c = 0;
  if (!in.byte(op)) return false;
  if (trace) {
    static constexpr const char* kNames[kRecordOps] = {"advance", "advance_long", "inject", "mutate",
                                                       "post", "drop", "delay", "post_recv"};
    std::fprintf(trace, "t=%.3f us  %s\n", pair.now().to_us(), kNames[op % kRecordOps]);
  }
  switch (static_cast<RecordOp>(op % kRecordOps)) {
    case RecordOp::advance:
      if (!in.byte(a)) return false;
      pair.advance(Duration::ns(200) * (a + 1));
      break;
    case RecordOp::advance_long:
      if (!in.byte(a)) return false;
      pair.advance(Duration::us(20) * (a + 1));
      break;
    case RecordOp::inject: {
      if (!in.byte(a) || !in.byte(b)) return false;
      const std::span<const uint8_t> bytes = in.take(b);
      if (trace) dump(trace, bytes);
      pair.inject((a & rec_flag::kToRequester) ? EndpointPair::kRequester : EndpointPair::kResponder, bytes, a,
                  0x1000u + b);
      break;
    }
    case RecordOp::mutate: {
      // A packet the destination's peer really sent, changed at up to 8
      // offsets (off & 0x80: set the byte, else xor it), optionally cut short.
      if (!in.byte(a) || !in.byte(b) || !in.byte(c)) return false;
      const int dst = (a & rec_flag::kToRequester) ? EndpointPair::kRequester : EndpointPair::kResponder;
      const auto& ring = pair.captured(1 - dst);
      std::vector<uint8_t> bytes;
      uint32_t entropy = 0;
      uint8_t flags = a;
      if (!ring.empty()) {
        const EndpointPair::Captured& cap = ring[ring.size() - 1 - (b % ring.size())];
        bytes = cap.bytes;
        entropy = cap.entropy;
        flags = static_cast<uint8_t>((a & ~rec_flag::kPort1) | (cap.port ? rec_flag::kPort1 : 0));
        if (a & rec_flag::kPort1) flags ^= rec_flag::kPort1;  // or the other plane
      }
      for (int i = 0; i < (c & 7); ++i) {
        uint8_t off = 0, val = 0;
        if (!in.byte(off) || !in.byte(val)) return false;
        if (bytes.empty()) continue;
        uint8_t& at = bytes[(off & 0x7F) % bytes.size()];
        at = (off & 0x80) ? val : static_cast<uint8_t>(at ^ val);
      }
      if (a & rec_flag::kTruncate) {
        uint8_t len = 0;
        if (!in.byte(len)) return false;
        if (!bytes.empty()) bytes.resize(len % bytes.size());
      }
      if (trace) dump(trace, bytes);
      pair.inject(dst, bytes, flags, entropy);
      break;
    }
    case RecordOp::post:
      if (!in.byte(a) || !in.byte(b) || !in.byte(c)) return false;
      pair.post_write(1000 + op, static_cast<uint32_t>(a << 8 | b), c & 3, static_cast<uint32_t>(c) * 61, c >> 7);
      break;
    case RecordOp::drop:
      if (!in.byte(a)) return false;
      pair.drop(a);
      break;
    case RecordOp::delay:
      if (!in.byte(a) || !in.byte(b)) return false;
      pair.delay(a, Duration::ns(500) * (b + 1));
      break;
    case RecordOp::post_recv:
      if (!in.byte(a)) return false;
      for (int i = 0; i <= a % 8; ++i) pair.post_recv_one();
      break;
  }
  pair.check_memory(false);
  return true;
}

}  // namespace mrc::fuzz
