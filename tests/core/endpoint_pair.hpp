// SPDX-License-Identifier: BSD-2-Clause
// Test support, header-only: two real endpoints joined back to back, A the
// requester (host 1) and B the responder (host 2), one QP each, connected
// through INIT, RTR and RTS. Packets move with zero delay, one step per
// microsecond, and a test may drop, copy, alter or forge any of them
// (hostile_peer_test.cc, secure_qp_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "harness/events.hpp"
#include "wire/packet.hpp"

namespace mrc::core::test_support {

using Bytes = std::vector<uint8_t>;
constexpr uint64_t kHostA = 1;  ///< requester
constexpr uint64_t kHostB = 2;  ///< responder
constexpr uint32_t kPairMtu = 1024;
constexpr uint32_t kAllPorts = 0b11;

/// One packet an endpoint sent: its transmit record and its bytes as they
/// left (headers, then the payload, ciphertext where the QP encrypts).
struct Sent {
  uint64_t from;
  Transmit tx;
  Bytes bytes;
};

/// How the pair is made. Both endpoints get `cfg` with two ports and seeds
/// 11 and 12.
struct PairSpec {
  EndpointConfig cfg;
  uint8_t retry_exp = 25;  ///< 25 = retry forever
  uint8_t retry_linear = 7;
  uint32_t cap = 0;        ///< QpAttr::cap of both QPs (qp_cap::*)
  /// Secure attributes of A's and B's QP (QpAttr::secure), none if unset.
  std::optional<QpSecure> secure_a, secure_b;
};

struct EndpointPair {
  std::unique_ptr<Endpoint> a, b;
  uint32_t qa = 0, qb = 0;
  Time now = Time::zero() + Duration::us(1);
  Bytes src = Bytes(1 << 20), dst = Bytes(1 << 20);
  MemoryRegion src_mr, dst_mr;
  /// Called for every packet before delivery; false drops it.
  std::function<bool(const Sent&)> filter;
  std::vector<Sent> log;
  std::vector<harness::Event> events_a, events_b;

  explicit EndpointPair(PairSpec spec = {}) {
    EndpointConfig cfg = spec.cfg;
    cfg.ports.assign(2, PortConfig{});
    cfg.seed = 11;
    a = make_endpoint(cfg);
    cfg.seed = 12;
    b = make_endpoint(cfg);
    if (!a || !b) return;
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
    src_mr = *a->reg_mr(reinterpret_cast<uint64_t>(src.data()), src.size(), access::kLocalWrite);
    dst_mr = *b->reg_mr(reinterpret_cast<uint64_t>(dst.data()), dst.size(), access::kRemoteWrite);
    // CQ 0 on each side: QpInit{} names it for both queues.
    EXPECT_EQ(*a->create_cq(Endpoint::kMaxCqe), 0u);
    EXPECT_EQ(*b->create_cq(Endpoint::kMaxCqe), 0u);
    qa = *a->create_qp(QpInit{});
    qb = *b->create_qp(QpInit{});
    EXPECT_TRUE(connect(*a, qa, qb, kHostB, 0x100, 0x200, spec.secure_a, spec).ok());
    EXPECT_TRUE(connect(*b, qb, qa, kHostA, 0x200, 0x100, spec.secure_b, spec).ok());
  }

  Endpoint& ep(uint64_t host) { return host == kHostA ? *a : *b; }

  /// A WRITE of `len` bytes from A's region at `offset` to B's at the same.
  Status write(uint64_t wr_id, uint32_t len, uint64_t offset = 0) {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.local_addr = src_mr.addr + offset;
    wr.lkey = src_mr.lkey;
    wr.length = len;
    wr.remote_addr = dst_mr.addr + offset;
    wr.rkey = dst_mr.rkey;
    return a->post_send(now, qa, wr);
  }

  /// Delivers `bytes` to `to` as if sent by `from` on `port` with EV `entropy`.
  void inject(uint64_t to, uint64_t from, const Bytes& bytes, uint8_t port = 0, uint32_t entropy = 0) {
    RxMeta m;
    m.port = port;
    m.peer = from;
    m.entropy = entropy;
    ep(to).handle_datagram(now, m, bytes);
  }

  /// Everything `host` has to send, logged, filtered and delivered.
  void drain(uint64_t host) {
    Endpoint& e = ep(host);
    uint8_t hdr[wire::kMaxHeaderBytes];
    for (;;) {
      auto t = e.poll_transmit(now, kAllPorts, hdr);
      if (!t.ok()) break;
      Sent s{host, *t, Bytes(hdr, hdr + t->header_len)};
      // The payload as it leaves: ciphertext when the QP encrypts (the
      // endpoint's buffer, valid until the next poll_transmit).
      PayloadSegment segs[kMaxSge];
      for (size_t i = 0, n = payload_segments(*t, segs); i < n; ++i)
        s.bytes.insert(s.bytes.end(), segs[i].data, segs[i].data + segs[i].len);
      log.push_back(s);
      if (filter && !filter(log.back())) continue;
      RxMeta m;
      m.port = t->port;
      m.peer = host;
      m.entropy = t->entropy;
      ep(t->peer).handle_datagram(now, m, log.back().bytes);
    }
  }

  /// Both sides send, time moves by `dt`, due timers run, events are kept.
  void step(Duration dt = Duration::us(1)) {
    drain(kHostA);
    drain(kHostB);
    now = now + dt;
    for (uint64_t h : {kHostA, kHostB})
      if (ep(h).next_timeout() <= now) ep(h).handle_timeout(now);
    while (auto e = harness::next_event(*a, 0)) events_a.push_back(*e);
    while (auto e = harness::next_event(*b, 0)) events_b.push_back(*e);
  }

  /// Steps until `done` or `limit` has passed; `done`'s last answer.
  bool run_until(const std::function<bool()>& done, Duration limit) {
    const Time end = now + limit;
    while (now < end) {
      if (done()) return true;
      step();
    }
    return done();
  }

  /// A's completion of `wr_id` on its QP, if it came.
  std::optional<WorkCompletion> send_completion(uint64_t wr_id) const {
    for (const harness::Event& e : events_a)
      if (auto* wc = std::get_if<WorkCompletion>(&e); wc && wc->wr_id == wr_id && wc->qpn == qa) return *wc;
    return std::nullopt;
  }
  bool completed(uint64_t wr_id) const { return send_completion(wr_id).has_value(); }
  bool data_arrived(uint32_t len) const { return std::memcmp(src.data(), dst.data(), len) == 0; }

  const Qp& qp_a() const { return *a->qp(qa); }
  const Qp& qp_b() const { return *b->qp(qb); }

  /// The first / last packet `from` sent with this opcode (null if none).
  const Sent* first(uint64_t from, wire::Opcode op) const {
    for (const Sent& s : log)
      if (s.from == from && static_cast<wire::Opcode>(s.bytes[0]) == op) return &s;
    return nullptr;
  }
  const Sent* last(uint64_t from, wire::Opcode op) const {
    for (auto it = log.rbegin(); it != log.rend(); ++it)
      if (it->from == from && static_cast<wire::Opcode>(it->bytes[0]) == op) return &*it;
    return nullptr;
  }

  /// An endpoint made with `cfg` (a test failure, and null, if refused).
  static std::unique_ptr<Endpoint> make_endpoint(const EndpointConfig& cfg) {
    auto r = Endpoint::create(cfg);
    EXPECT_TRUE(r.ok());
    return r.ok() ? std::move(*r) : nullptr;
  }

  /// Takes QP `q` of `e` through INIT, RTR (to `dest` at host `peer`, its
  /// first PSN `rq`, `secure` if set) and RTS (first PSN `sq`, ACK timeout
  /// 65.5 us, the spec's retries and cap); the first refusal, as is.
  Status connect(Endpoint& e, uint32_t q, uint32_t dest, uint64_t peer, uint32_t sq, uint32_t rq,
                 const std::optional<QpSecure>& secure = std::nullopt, const PairSpec& spec = {}) {
    namespace at_ = qp_attr;
    QpAttr at;
    at.state = QpState::init;
    if (Status st = e.modify_qp(now, q, at, at_::kState); !st) return st;
    at.state = QpState::rtr;
    at.dest_qpn = dest;
    at.rq_psn = rq;
    at.peer = peer;
    at.path_mtu = kPairMtu;
    at.cap = spec.cap;
    uint32_t rtr = at_::kState | at_::kDestQpn | at_::kRqPsn | at_::kPeer | at_::kPathMtu | at_::kMaxWimmDest |
                   at_::kMprDest | at_::kCap;
    if (secure) {
      at.secure = *secure;
      rtr |= at_::kSecure;
    }
    if (Status st = e.modify_qp(now, q, at, rtr); !st) return st;
    at.state = QpState::rts;
    at.sq_psn = sq;
    at.timeout = 6;  // 65.5 us
    at.retry_exp = spec.retry_exp;
    at.retry_linear = spec.retry_linear;
    return e.modify_qp(now, q, at, at_::kState | at_::kSqPsn | at_::kMaxWimm | at_::kMpr | at_::kRetryCnt | at_::kTimeout);
  }
};

}  // namespace mrc::core::test_support
