// SPDX-License-Identifier: BSD-2-Clause
// Forged and malformed input to Endpoint::handle_datagram: a responder QP in
// RTS, connected to peer 7, must count every refused packet under exactly one
// reason, answer with the reaction the spec names (reference 3.3, 3.6, 3.7),
// and never write a byte it should not.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "wire/packet.hpp"
#include "wire/psn.hpp"

namespace mrc::core {
namespace {

constexpr uint64_t kPeerId = 7;
constexpr uint32_t kRequesterQpn = 0x123;   // the requester's QPN (where our replies go)
constexpr uint32_t kFirstPsn = 0xFFFFF0;  // window crosses the 24-bit wrap
constexpr uint32_t kMtu = 1024;
constexpr size_t kGuard = 4096;        // unregistered bytes either side of the region
constexpr size_t kRegion = 4096;
const Time t0 = Time::zero() + Duration::us(50);

using Bytes = std::vector<uint8_t>;

// Every EndpointStats counter by name, to check that exactly the expected ones moved.
std::vector<std::pair<std::string, uint64_t>> counters(const EndpointStats& s) {
  return {{"rx_packets", s.rx_packets},
          {"rx_malformed", s.rx_malformed},
          {"rx_unknown_qp", s.rx_unknown_qp},
          {"rx_wrong_peer", s.rx_wrong_peer},
          {"rx_bad_state", s.rx_bad_state},
          {"rx_psn_out_of_window", s.rx_psn_out_of_window},
          {"rx_access_errors", s.rx_access_errors},
          {"rx_bad_ack", s.rx_bad_ack},
          {"tx_packets", s.tx_packets},
          {"ep_requests", s.ep_requests},
          {"ep_responses", s.ep_responses}};
}

struct Sent {
  Transmit tx;
  wire::Parsed p;
};

struct EndpointRxTest : ::testing::Test {
  EndpointConfig cfg;  // a derived fixture's constructor may change it
  std::unique_ptr<Endpoint> ep;
  uint32_t qpn = 0;
  Bytes mem = Bytes(kGuard + kRegion + kGuard, 0xAB);
  MemoryRegion mr;
  EndpointStats before;

  void SetUp() override {
    cfg.ports.assign(2, PortConfig{});
    auto e = Endpoint::create(cfg);
    ASSERT_TRUE(e.ok());
    ep = std::move(*e);
    auto m = ep->reg_mr(reinterpret_cast<uint64_t>(mem.data() + kGuard), kRegion,
                        access::kRemoteWrite | access::kLocalWrite);
    ASSERT_TRUE(m.ok());
    mr = *m;
    ASSERT_EQ(*ep->create_cq(Endpoint::kMaxCqe), 0u);  // what QpInit{} names
    auto q = ep->create_qp(QpInit{});
    ASSERT_TRUE(q.ok());
    qpn = *q;
    namespace qa = qp_attr;
    QpAttr a;
    a.state = QpState::init;
    ASSERT_TRUE(ep->modify_qp(t0, qpn, a, qa::kState).ok());
    a.state = QpState::rtr;
    a.dest_qpn = kRequesterQpn;
    a.rq_psn = kFirstPsn;
    a.peer = kPeerId;
    a.path_mtu = kMtu;
    a.max_wimm_dest = 8;
    a.mpr_dest = 1;  // 128-PSN window
    const uint32_t to_rtr =
        qa::kState | qa::kDestQpn | qa::kRqPsn | qa::kPeer | qa::kPathMtu | qa::kMaxWimmDest | qa::kMprDest;
    ASSERT_TRUE(ep->modify_qp(t0, qpn, a, to_rtr).ok());
    a.state = QpState::rts;
    a.sq_psn = 0x42;
    a.max_wimm = 8;
    a.mpr = 1;
    const uint32_t to_rts = qa::kState | qa::kSqPsn | qa::kMaxWimm | qa::kMpr | qa::kRetryCnt | qa::kTimeout;
    ASSERT_TRUE(ep->modify_qp(t0, qpn, a, to_rts).ok());
    ASSERT_EQ(ep->qp(qpn)->state(), QpState::rts);
    ASSERT_EQ(ep->poll_transmit(t0, 0b11, hdr_).error(), Errc::done);
    before = ep->stats();
  }

  uint64_t region() const { return mr.addr; }
  uint64_t region_end() const { return mr.addr + kRegion; }

  // A WRITE_ONLY of `len` payload bytes (value `fill`) at `va`.
  Bytes write_only(uint32_t psn24, uint64_t va, uint32_t len, uint8_t fill = 0x11, uint32_t rkey = 0,
                   bool ack_req = true, bool ts = true) const {
    wire::Headers h;
    h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_only);
    h.bth.dest_qp = qpn;
    h.bth.psn = psn24 & wire::kPsnMask;
    h.bth.ack_req = ack_req;
    h.bth.ts = ts;
    h.meth.msn = 1;
    h.tseth.timestamp = 0x0777;
    h.reth.va = va;
    h.reth.rkey = rkey ? rkey : mr.rkey;
    h.reth.dma_length = len;
    Bytes b(wire::kMaxHeaderBytes);
    auto n = wire::encode(h, b);
    EXPECT_TRUE(n.ok());
    b.resize(*n);
    for (uint32_t i = 0; i < len; ++i) b.push_back(static_cast<uint8_t>(fill + i));
    return b;
  }

  RxMeta meta(uint8_t port = 1, uint64_t peer = kPeerId, TrimMark trim = TrimMark::none) const {
    RxMeta m;
    m.port = port;
    m.peer = peer;
    m.entropy = 0xBEEF;
    m.trim = trim;
    return m;
  }

  void deliver(const Bytes& b, const RxMeta& m) { ep->handle_datagram(t0, m, b); }
  void deliver(const Bytes& b) { deliver(b, meta()); }
  // The `i`th of a run of small WRITEs without an ack request, arriving at `at`.
  void deliver_small(uint32_t i, Time at) {
    ep->handle_datagram(at, meta(), write_only(kFirstPsn + i, region() + 16 * i, 16, 0x40, 0, /*ack_req=*/false));
  }
  // The SACKs among what the endpoint sends now (semantic ACKs dropped).
  std::vector<Sent> sacks() {
    std::vector<Sent> out;
    for (Sent& x : drain())
      if (x.p.h.bth.opcode == 0xDC) out.push_back(x);
    return out;
  }

  std::vector<Sent> drain() {
    std::vector<Sent> out;
    for (int guard = 0; guard < 64; ++guard) {
      auto tx = ep->poll_transmit(t0, 0b11, hdr_);
      if (!tx.ok()) {
        EXPECT_EQ(tx.error(), Errc::done);
        break;
      }
      auto p = wire::parse(std::span<const uint8_t>(hdr_.data(), tx->header_len));
      EXPECT_TRUE(p.ok()) << "core emitted an unparsable header";
      if (!p.ok()) continue;
      EXPECT_EQ(tx->payload_len, 0u);
      EXPECT_EQ(tx->peer, kPeerId);
      EXPECT_EQ(tx->tc, TrafficClass::control);
      EXPECT_EQ(p->h.bth.dest_qp, kRequesterQpn);
      // Replies go out on a reverse EV of this QP on the port they leave from.
      const path::PathPolicy* pp = ep->qp(qpn)->path();
      const int ev = pp->find(tx->entropy);
      EXPECT_NE(ev, path::PathPolicy::kNone);
      if (ev != path::PathPolicy::kNone) {
        EXPECT_EQ(pp->slot(ev).port, tx->port);
      }
      out.push_back(Sent{*tx, *p});
    }
    return out;
  }

  // Only `name` (and rx_packets, by `rx`) moved since SetUp / the last call.
  void expect_counter(const std::string& name, uint64_t delta = 1, uint64_t rx = 1) {
    const auto b = counters(before), a = counters(ep->stats());
    for (size_t i = 0; i < a.size(); ++i) {
      const uint64_t want = a[i].first == name ? delta : a[i].first == "rx_packets" ? rx : 0;
      if (a[i].first == "tx_packets") continue;  // checked through drain()
      EXPECT_EQ(a[i].second - b[i].second, want) << a[i].first;
    }
    before = ep->stats();
  }

  void expect_memory_untouched() const {
    for (size_t i = 0; i < mem.size(); ++i)
      if (mem[i] != 0xAB) {
        ADD_FAILURE() << "byte " << i << " (region offset " << static_cast<int64_t>(i) - static_cast<int64_t>(kGuard)
                      << ") was written: " << int{mem[i]};
        return;
      }
  }

  /// A WRITE_FIRST of 16 bytes at kFirstPsn: not last, so it must be a full MTU.
  Bytes short_first() const {
    Bytes b = write_only(kFirstPsn, region(), 16);
    wire::Headers h = wire::parse(b)->h;
    h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_first);
    h.reth.dma_length = 4 * kMtu;
    EXPECT_TRUE(wire::encode(h, b).ok());
    return b;
  }

  /// One refusal of the packet `psn24` (stamp 0x0777, write_only's) went
  /// out: with ProtocolConfig::confirm_fatal a NACK UNEXP_EVENT echoing the
  /// PSN and stamp with the syndrome in NETH's vendor byte, else (the
  /// reference) an AETH NAK.
  void expect_nak(const std::vector<Sent>& s, uint32_t psn24, uint8_t syndrome) const {
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].p.h.bth.psn, psn24 & wire::kPsnMask);
    EXPECT_EQ(s[0].tx.port, 1);  // the port the packet arrived on
    if (cfg.protocol.confirm_fatal) {
      EXPECT_EQ(s[0].p.h.bth.opcode, 0xDD);
      EXPECT_EQ(s[0].p.h.neth.reason, static_cast<uint8_t>(wire::NackCode::unexp_event));
      EXPECT_EQ(s[0].p.h.neth.vendor, syndrome);
      EXPECT_EQ(s[0].p.h.neth.nack_psn, psn24 & wire::kPsnMask);
      EXPECT_EQ(s[0].p.h.neth.reflected_ts, 0x0777);
      return;
    }
    EXPECT_EQ(s[0].p.h.bth.opcode, 0xD1);
    EXPECT_EQ(s[0].p.h.aeth.syndrome, syndrome);
    EXPECT_TRUE(wire::aeth::is_nak(s[0].p.h.aeth.syndrome));
  }

  std::vector<uint8_t> hdr_ = std::vector<uint8_t>(64);
};

// ------------------------------------------------------------------ dispatch

TEST_F(EndpointRxTest, UnknownQpnIsCountedAndIgnored) {
  for (uint32_t bad : {qpn + 1, qpn + 0x10000u, 3u, 0xFFFFFFu}) {
    Bytes b = write_only(kFirstPsn, region(), 16);
    wire::Headers h = wire::parse(b)->h;
    h.bth.dest_qp = bad;
    ASSERT_TRUE(wire::encode(h, b).ok());
    deliver(b);
    expect_counter("rx_unknown_qp");
  }
  EXPECT_TRUE(drain().empty());
  expect_memory_untouched();
}

TEST_F(EndpointRxTest, WrongPeerIsCountedAndIgnored) {
  for (uint64_t peer : {uint64_t{0}, uint64_t{8}, ~uint64_t{0}}) {
    deliver(write_only(kFirstPsn, region(), 16), meta(1, peer));
    expect_counter("rx_wrong_peer");
  }
  // Probes from another peer are refused as well.
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::probe);
  h.bth.dest_qp = qpn;
  Bytes p(wire::kMaxHeaderBytes);
  p.resize(*wire::encode(h, p));
  deliver(p, meta(0, 6));
  expect_counter("rx_wrong_peer");
  EXPECT_TRUE(drain().empty());
  expect_memory_untouched();
  EXPECT_EQ(ep->qp(qpn)->stats().data_packets_received, 0u);
}

TEST_F(EndpointRxTest, BadPortIsMalformed) {
  deliver(write_only(kFirstPsn, region(), 16), meta(2));
  expect_counter("rx_malformed");
  EXPECT_TRUE(drain().empty());
  expect_memory_untouched();
}

TEST_F(EndpointRxTest, QpNotReadyIsBadState) {
  auto q = ep->create_qp(QpInit{});
  ASSERT_TRUE(q.ok());
  Bytes b = write_only(kFirstPsn, region(), 16);
  wire::Headers h = wire::parse(b)->h;
  h.bth.dest_qp = *q;  // in RESET
  ASSERT_TRUE(wire::encode(h, b).ok());
  deliver(b);
  expect_counter("rx_bad_state");
  EXPECT_TRUE(drain().empty());
  expect_memory_untouched();
}

// ------------------------------------------------------------------ PSN window

TEST_F(EndpointRxTest, PsnBeyondWindowIsNacked) {
  const uint32_t psn = (kFirstPsn + 128) & wire::kPsnMask;  // first PSN past MPR_DEST x 128
  deliver(write_only(psn, region(), 16));
  expect_counter("rx_psn_out_of_window");
  const std::vector<Sent> s = drain();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].p.h.bth.opcode, 0xDD);
  EXPECT_EQ(s[0].p.h.neth.reason, static_cast<uint8_t>(wire::NackCode::psn_oor_window));
  EXPECT_EQ(s[0].p.h.neth.nack_psn, psn);
  EXPECT_EQ(s[0].p.h.neth.entropy, 0xBEEFu);
  EXPECT_EQ(s[0].p.h.neth.reflected_ts, 0x0777);
  EXPECT_EQ(s[0].p.h.neth.src_conn, static_cast<uint16_t>(qpn));
  EXPECT_EQ(s[0].p.h.neth.dst_conn, static_cast<uint16_t>(kRequesterQpn));
  EXPECT_EQ(s[0].tx.port, 1);
  expect_memory_untouched();
  EXPECT_EQ(ep->qp(qpn)->stats().rx_rejected, 1u);
  // Far beyond (half the PSN space away) is out of window too.
  const uint32_t far = (kFirstPsn + (1u << 22)) & wire::kPsnMask;
  deliver(write_only(far, region(), 16));
  expect_counter("rx_psn_out_of_window");
  ASSERT_EQ(drain().size(), 1u);
  expect_memory_untouched();
}

TEST_F(EndpointRxTest, LastPsnInWindowIsAccepted) {
  const uint32_t psn = (kFirstPsn + 127) & wire::kPsnMask;
  deliver(write_only(psn, region() + 8, 4, 0x30));
  expect_counter("");
  EXPECT_EQ(mem[kGuard + 8], 0x30);
  EXPECT_EQ(ep->qp(qpn)->stats().ooo_received, 1u);
}

// ------------------------------------------------------------------ access checks

TEST_F(EndpointRxTest, WrongRkeyIsRemoteAccessNak) {
  for (uint32_t rkey : {mr.rkey ^ 1u, mr.rkey + 0x100u, mr.lkey == mr.rkey ? 1u : mr.lkey}) {
    deliver(write_only(kFirstPsn, region(), 16, 0x11, rkey));
    expect_counter("rx_access_errors");
    expect_nak(drain(), kFirstPsn, wire::aeth::kNakRemoteAccess);
  }
  expect_memory_untouched();
  EXPECT_EQ(ep->qp(qpn)->stats().data_packets_received, 0u);
}

struct EndpointRxReferenceTest : EndpointRxTest {
  EndpointRxReferenceTest() { cfg.protocol.confirm_fatal = false; }
};

TEST_F(EndpointRxReferenceTest, WrongRkeyAndShortMiddleAreAethNaks) {
  deliver(write_only(kFirstPsn, region(), 16, 0x11, mr.rkey ^ 1u));
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakRemoteAccess);
  deliver(short_first());
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakInvalidRequest);
  expect_memory_untouched();
}

TEST_F(EndpointRxTest, AddressBelowRegionIsRemoteAccessNak) {
  deliver(write_only(kFirstPsn, region() - 1, 16));
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakRemoteAccess);
  deliver(write_only(kFirstPsn, region() - 64, 16));  // entirely before
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakRemoteAccess);
  expect_memory_untouched();
}

TEST_F(EndpointRxTest, RangePastRegionEndIsRemoteAccessNak) {
  deliver(write_only(kFirstPsn, region_end() - 8, 16));
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakRemoteAccess);
  deliver(write_only(kFirstPsn, region_end(), 1));
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakRemoteAccess);
  // va + len wrapping around the address space.
  deliver(write_only(kFirstPsn, ~uint64_t{0} - 3, 16));
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakRemoteAccess);
  expect_memory_untouched();
}

TEST_F(EndpointRxTest, PayloadLongerThanPathMtuIsRemoteAccessNak) {
  deliver(write_only(kFirstPsn, region(), kMtu + 1));
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakRemoteAccess);
  // Phantom payload (simulator) counts towards the length too.
  RxMeta m = meta();
  m.phantom_payload = kMtu;
  Bytes b = write_only(kFirstPsn, region(), 1);
  wire::Headers h = wire::parse(b)->h;
  h.reth.dma_length = kMtu + 1;
  ASSERT_TRUE(wire::encode(h, b).ok());
  deliver(b, m);
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakRemoteAccess);
  expect_memory_untouched();
}

TEST_F(EndpointRxTest, ShortMiddlePacketIsInvalidRequestNak) {
  deliver(short_first());
  expect_counter("rx_access_errors");
  expect_nak(drain(), kFirstPsn, wire::aeth::kNakInvalidRequest);
  expect_memory_untouched();
}

// ------------------------------------------------------------------ malformed

TEST_F(EndpointRxTest, EveryTruncatedHeaderIsMalformed) {
  for (bool ts : {false, true}) {
    const Bytes b = write_only(kFirstPsn, region(), 16, 0x11, 0, true, ts);
    const size_t header_len = wire::parse(b)->header_len;
    ASSERT_EQ(header_len, ts ? 36u : 32u);
    for (size_t n = 0; n < header_len; ++n) {
      ep->handle_datagram(t0, meta(), std::span<const uint8_t>(b.data(), n));
      expect_counter("rx_malformed");
    }
  }
  // Truncated control packets too.
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::probe);
  h.bth.dest_qp = qpn;
  Bytes p(wire::kMaxHeaderBytes);
  p.resize(*wire::encode(h, p));
  for (size_t n = 0; n < p.size(); ++n) {
    ep->handle_datagram(t0, meta(), std::span<const uint8_t>(p.data(), n));
    expect_counter("rx_malformed");
  }
  EXPECT_TRUE(drain().empty());
  expect_memory_untouched();
}

TEST_F(EndpointRxTest, UnknownOpcodeIsMalformed) {
  const uint8_t ops[] = {0x00, 0x04, 0x0A, 0xC0, 0xC5, 0xCC, 0xD0, 0xDF, 0xFF};
  for (uint8_t op : ops) {
    Bytes b = write_only(kFirstPsn, region(), 16);
    b[0] = op;
    deliver(b);
    expect_counter("rx_malformed");
  }
  EXPECT_TRUE(drain().empty());
  expect_memory_untouched();
}

TEST_F(EndpointRxTest, PayloadLongerThanDmaLengthIsMalformed) {
  Bytes b = write_only(kFirstPsn, region(), 16);
  wire::Headers h = wire::parse(b)->h;
  h.reth.dma_length = 15;
  ASSERT_TRUE(wire::encode(h, b).ok());
  deliver(b);
  expect_counter("rx_malformed");
  EXPECT_TRUE(drain().empty());
  expect_memory_untouched();
}

// ------------------------------------------------------------------ valid, duplicate, trimmed

TEST_F(EndpointRxTest, ValidPacketIsPlacedAndSacked) {
  const uint64_t off = 100;
  deliver(write_only(kFirstPsn, region() + off, 16, 0x40));
  expect_counter("");
  for (size_t i = 0; i < mem.size(); ++i) {
    const size_t rel = i - kGuard;
    const bool inside = i >= kGuard && rel >= off && rel < off + 16;
    ASSERT_EQ(mem[i], inside ? static_cast<uint8_t>(0x40 + (rel - off)) : 0xAB) << "byte " << i;
  }
  const std::vector<Sent> s = drain();
  // The message completed: one semantic ACK (AETH, MSN 1) and the SACK the
  // ack request asked for.
  ASSERT_EQ(s.size(), 2u);
  const Sent* sack = nullptr;
  const Sent* ack = nullptr;
  for (const Sent& x : s) {
    if (x.p.h.bth.opcode == 0xDC) sack = &x;
    if (x.p.h.bth.opcode == 0xD1) ack = &x;
  }
  ASSERT_NE(sack, nullptr);
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(sack->p.h.seth.cack_psn, kFirstPsn);
  EXPECT_EQ(sack->p.h.seth.ack_psn_offset, 0);
  EXPECT_FALSE(sack->p.h.seth.probe_response);
  EXPECT_EQ(sack->p.h.seth.entropy, 0xBEEFu);
  EXPECT_EQ(sack->p.h.seth.mark, 0);
  EXPECT_EQ(sack->p.h.cc.reflected_ts, 0x0777);
  EXPECT_EQ(sack->tx.port, 1);
  EXPECT_EQ(ack->p.h.aeth.syndrome, wire::aeth::kAckNoCredit);
  EXPECT_EQ(ack->p.h.aeth.msn, 1u);
  const QpStats& qs = ep->qp(qpn)->stats();
  EXPECT_EQ(qs.data_packets_received, 1u);
  EXPECT_EQ(qs.duplicates_received, 0u);
  EXPECT_EQ(qs.ooo_received, 0u);
}

TEST_F(EndpointRxTest, SackIsCoalescedWithoutAckRequest) {
  deliver(write_only(kFirstPsn, region(), 16, 0x40, 0, /*ack_req=*/false));
  std::vector<Sent> s = drain();
  ASSERT_EQ(s.size(), 1u);  // only the semantic ACK
  EXPECT_EQ(s[0].p.h.bth.opcode, 0xD1);
  const Time due = ep->next_timeout();
  EXPECT_EQ(due, t0 + Duration::ns(1000));
  ep->handle_timeout(due);
  s = drain();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].p.h.bth.opcode, 0xDC);
  EXPECT_EQ(s[0].p.h.seth.cack_psn, kFirstPsn);
}

TEST_F(EndpointRxTest, CoalescedSackWaitsForDataToStop) {
  // Packets 600 ns apart, below the byte threshold: the wait restarts on
  // each, so one SACK goes after the last and covers all three. The wait
  // is 1 us, or two of the QP's gaps between arrivals if longer
  // (sack_coalesce_gaps): 1.2 us here.
  ASSERT_EQ(cfg.protocol.sack_coalesce_gaps, 2u);
  for (uint32_t i = 0; i < 3; ++i) {
    deliver_small(i, t0 + Duration::ns(600 * i));
    EXPECT_TRUE(sacks().empty()) << "packet " << i;
  }
  const Time due = ep->next_timeout();
  EXPECT_EQ(due, t0 + Duration::ns(1200 + 1200));
  ep->handle_timeout(due);
  const std::vector<Sent> s = sacks();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].p.h.seth.cack_psn, (kFirstPsn + 2) & wire::kPsnMask);
}

TEST_F(EndpointRxTest, ATrickleIsSackedWithinTheCoalescingBound) {
  // One packet every 900 ns never lets the wait (1.8 us: two gaps) run
  // out: the SACK goes sack_coalesce_max (16 us) after the first packet it
  // covers.
  ASSERT_EQ(cfg.protocol.sack_coalesce_max, Duration::us(16));
  for (uint32_t i = 0; i < 18; ++i) deliver_small(i, t0 + Duration::ns(900 * i));
  EXPECT_TRUE(sacks().empty());
  const Time due = ep->next_timeout();
  EXPECT_EQ(due, t0 + Duration::us(16));
  ep->handle_timeout(due);
  std::vector<Sent> s = sacks();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].p.h.seth.cack_psn, (kFirstPsn + 17) & wire::kPsnMask);
  // The next packet, 800 ns after the last, starts a new wait: two of the
  // average gap (7 x 900 + 800) / 8 = 887.5 ns.
  deliver_small(18, due + Duration::ns(100));
  EXPECT_EQ(ep->next_timeout(), due + Duration::ns(100) + Duration::ps(1775000));
}

TEST_F(EndpointRxTest, ACongestedReceivePathSacksAfterTheShortWait) {
  // Packets 3 us apart: the wait is two gaps, 6 us...
  for (uint32_t i = 0; i < 3; ++i) deliver_small(i, t0 + Duration::us(3 * i));
  EXPECT_EQ(ep->next_timeout(), t0 + Duration::us(6 + 6));
  // ... until an ECN-marked packet arrives (SACKed at once): for 16 base
  // RTTs after it the wait is the fixed 1 us, whatever the gaps, so the
  // senders of a congested receiver hear back promptly.
  RxMeta marked = meta();
  marked.ecn_ce = true;
  const Time at = t0 + Duration::us(9);
  ep->handle_datagram(at, marked, write_only(kFirstPsn + 3, region() + 48, 16, 0x40, 0, /*ack_req=*/false));
  ASSERT_EQ(sacks().size(), 1u);
  deliver_small(4, at + Duration::us(3));
  EXPECT_EQ(ep->next_timeout(), at + Duration::us(3) + Duration::ns(1000));
  // Long after, the QP's gaps count again: no SACK 2 us after the next
  // packet.
  const Time later = at + cfg.protocol.base_rtt * 16 + Duration::us(1);
  while (ep->next_timeout() <= later) ep->handle_timeout(ep->next_timeout());
  (void)sacks();
  deliver_small(5, later);
  ep->handle_timeout(later + Duration::us(2));
  EXPECT_TRUE(sacks().empty()) << "the calm path waited only 1 us";
}

TEST_F(EndpointRxTest, SacksTakeTurnsOverTheFreePorts) {
  // Every packet arrives on port 1; their SACKs alternate, so one QP's
  // acknowledgements load both planes' reverse direction alike.
  std::vector<uint8_t> ports;
  for (uint32_t i = 0; i < 4; ++i) {
    deliver(write_only(kFirstPsn + i, region() + 16 * i, 16));
    for (const Sent& x : sacks()) ports.push_back(x.tx.port);
  }
  EXPECT_EQ(ports, (std::vector<uint8_t>{1, 0, 1, 0}));
  // A busy port is passed over, not waited for: with only port 1 free, the
  // SACK whose turn was port 1's leaves there, and so does the next.
  for (uint32_t i = 4; i < 6; ++i) {
    deliver(write_only(kFirstPsn + i, region() + 16 * i, 16));
    bool sacked = false;
    for (int guard = 0; guard < 4; ++guard) {
      auto tx = ep->poll_transmit(t0, 0b10, hdr_);
      if (!tx.ok()) break;
      auto p = wire::parse(std::span<const uint8_t>(hdr_.data(), tx->header_len));
      ASSERT_TRUE(p.ok());
      EXPECT_EQ(tx->port, 1);
      sacked |= p->h.bth.opcode == 0xDC;
    }
    EXPECT_TRUE(sacked) << "packet " << i;
  }
}

struct EndpointRxArrivalPortTest : EndpointRxTest {
  EndpointRxArrivalPortTest() { cfg.protocol.spread_sacks = false; }
};

TEST_F(EndpointRxArrivalPortTest, WithoutSpreadingEverySackFollowsItsTrigger) {
  for (uint32_t i = 0; i < 4; ++i) {
    deliver(write_only(kFirstPsn + i, region() + 16 * i, 16), meta(static_cast<uint8_t>(i % 2 == 0 ? 1 : 0)));
    const std::vector<Sent> s = sacks();
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].tx.port, i % 2 == 0 ? 1 : 0) << "packet " << i;
  }
  // And it waits for that port rather than leave on another.
  deliver(write_only(kFirstPsn + 4, region() + 64, 16), meta(1));
  for (int guard = 0; guard < 4; ++guard) {
    auto tx = ep->poll_transmit(t0, 0b01, hdr_);
    if (!tx.ok()) break;
    auto p = wire::parse(std::span<const uint8_t>(hdr_.data(), tx->header_len));
    ASSERT_TRUE(p.ok());
    EXPECT_NE(p->h.bth.opcode, 0xDC) << "a SACK left on port 0";
  }
  EXPECT_EQ(sacks().size(), 1u);
}

TEST_F(EndpointRxTest, DuplicateWritesNothingNew) {
  const uint64_t off = 200;
  deliver(write_only(kFirstPsn, region() + off, 16, 0x40));
  ASSERT_EQ(drain().size(), 2u);
  before = ep->stats();
  // Same PSN, different payload: must not be placed again.
  deliver(write_only(kFirstPsn, region() + off, 16, 0x90));
  expect_counter("");
  for (size_t k = 0; k < 16; ++k) ASSERT_EQ(mem[kGuard + off + k], static_cast<uint8_t>(0x40 + k));
  EXPECT_EQ(ep->qp(qpn)->stats().duplicates_received, 1u);
  EXPECT_EQ(ep->qp(qpn)->stats().data_packets_received, 1u);
  const std::vector<Sent> s = drain();
  ASSERT_EQ(s.size(), 1u);  // an immediate SACK, no second ACK
  EXPECT_EQ(s[0].p.h.bth.opcode, 0xDC);
  EXPECT_EQ(s[0].p.h.seth.cack_psn, kFirstPsn);
  // An old PSN (below the window) also counts as a duplicate.
  deliver(write_only((kFirstPsn - 5) & wire::kPsnMask, region() + off, 16, 0x90));
  expect_counter("");
  EXPECT_EQ(ep->qp(qpn)->stats().duplicates_received, 2u);
  for (size_t k = 0; k < 16; ++k) ASSERT_EQ(mem[kGuard + off + k], static_cast<uint8_t>(0x40 + k));
  ASSERT_EQ(drain().size(), 1u);
}

TEST_F(EndpointRxTest, TrimmedPacketIsNackedNotWritten) {
  struct Case {
    TrimMark mark;
    wire::NackCode code;
  };
  for (const Case& c : {Case{TrimMark::trimmed, wire::NackCode::trimmed},
                        Case{TrimMark::trimmed_lasthop, wire::NackCode::trimmed_lasthop}}) {
    deliver(write_only(kFirstPsn, region(), 16), meta(0, kPeerId, c.mark));
    expect_counter("");
    const std::vector<Sent> s = drain();
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].p.h.bth.opcode, 0xDD);
    EXPECT_EQ(s[0].p.h.neth.reason, static_cast<uint8_t>(c.code));
    EXPECT_EQ(s[0].p.h.neth.nack_psn, kFirstPsn);
    EXPECT_EQ(s[0].tx.port, 0);
    expect_memory_untouched();
  }
  EXPECT_EQ(ep->qp(qpn)->stats().trims_received, 2u);
  EXPECT_EQ(ep->qp(qpn)->stats().data_packets_received, 0u);
  // The PSN was not consumed: the retransmission is placed.
  deliver(write_only(kFirstPsn, region(), 16, 0x60));
  EXPECT_EQ(mem[kGuard], 0x60);
  EXPECT_EQ(ep->qp(qpn)->stats().data_packets_received, 1u);
}

// ------------------------------------------------------------------ reliability probe

TEST_F(EndpointRxTest, ReliabilityProbeIsAnsweredWithProbeSack) {
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::probe);
  h.bth.dest_qp = qpn;
  h.bth.psn = 0;  // consumes no PSN
  h.peth.probe_id = 0x55;
  h.peth.timestamp = 0x1234;
  Bytes p(wire::kMaxHeaderBytes);
  p.resize(*wire::encode(h, p));
  RxMeta m = meta(0);
  m.entropy = 0xC0DE;
  deliver(p, m);
  expect_counter("");
  const std::vector<Sent> s = drain();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].p.h.bth.opcode, 0xDC);
  EXPECT_TRUE(s[0].p.h.seth.probe_response);
  EXPECT_EQ(s[0].p.h.seth.entropy, 0xC0DEu);
  EXPECT_EQ(s[0].p.h.cc.reflected_ts, 0x1234);
  EXPECT_EQ(s[0].p.h.seth.cack_psn, (kFirstPsn - 1) & wire::kPsnMask);  // nothing received yet
  EXPECT_EQ(s[0].tx.port, 0);
  expect_memory_untouched();
  EXPECT_EQ(ep->qp(qpn)->stats().data_packets_received, 0u);
}

}  // namespace
}  // namespace mrc::core
