// SPDX-License-Identifier: BSD-2-Clause
// Secure QPs (core/secure.hpp, docs/security.md): every attack of issue 37
// against two real endpoints with secure QPs on, each refused before it
// changes anything and counted; the window, the nonce and the wire format
// on their own. Packets move between the endpoints with zero delay, one
// step per microsecond, and a test may drop, copy, alter or forge any.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "core/secure.hpp"
#include "crypto/aes_gcm.hpp"
#include "endpoint_pair.hpp"
#include "harness/events.hpp"
#include "wire/packet.hpp"

namespace mrc::core {
namespace {

using harness::Event;
using test_support::EndpointPair;
using test_support::kHostA;
using test_support::kHostB;
using test_support::PairSpec;
using test_support::Sent;
using Bytes = test_support::Bytes;
constexpr uint32_t kMtu = test_support::kPairMtu;

SecureKey key(uint8_t fill, uint8_t len = 16, uint8_t id = 1) {
  SecureKey k;
  k.key.fill(fill);
  k.key_len = len;
  k.salt = 0x01020300u + fill;
  k.key_id = id;
  return k;
}

/// A's and B's secure attributes: A sends under key 0x11, B under 0x22.
QpSecure secure_of(uint64_t host, SecureMode mode) {
  QpSecure s;
  s.mode = mode;
  const SecureKey ka = key(0x11), kb = key(0x22, 32, 2);
  s.send = host == kHostA ? ka : kb;
  s.recv = host == kHostA ? kb : ka;
  return s;
}

struct Options {
  SecureMode mode_a = SecureMode::integrity;
  SecureMode mode_b = SecureMode::integrity;
  bool confirm_fatal = true;
};

PairSpec spec_of(const Options& o) {
  PairSpec spec;
  spec.cfg.protocol.confirm_fatal = o.confirm_fatal;
  spec.cfg.make_aead = &crypto::make_aes_gcm;
  spec.secure_a = secure_of(kHostA, o.mode_a);
  spec.secure_b = secure_of(kHostB, o.mode_b);
  return spec;
}

struct Pair : EndpointPair {
  explicit Pair(Options o = {}) : EndpointPair(spec_of(o)) {}
};

Bytes encode(const wire::Headers& h, size_t payload = 0, uint8_t fill = 0) {
  Bytes b(wire::kMaxHeaderBytes);
  b.resize(wire::encode(h, b).value());
  b.resize(b.size() + payload, fill);
  return b;
}

/// A WRITE of 64 KiB whose packets all left A and none reached B: every
/// PSN from 0x100 is outstanding, and B expects them all.
void outstanding_write(Pair& p) {
  p.filter = [](const Sent& s) { return s.from != kHostA; };
  ASSERT_TRUE(p.write(1, 64 * 1024).ok());
  p.step();
  p.filter = nullptr;
}

/// The counters a refused packet must leave alone, and the drop counters.
struct Snapshot {
  EndpointStats ep;
  QpStats qp;
  QpState state;
};
Snapshot snap(const Endpoint& e, const Qp& q) { return Snapshot{e.stats(), q.stats(), q.state()}; }

/// Nothing but rx_packets and the secure drop counters moved.
void expect_unchanged(const Snapshot& before, const Endpoint& e, const Qp& q) {
  const EndpointStats& s = e.stats();
  EXPECT_EQ(q.state(), before.state);
  EXPECT_EQ(s.rx_malformed, before.ep.rx_malformed);
  EXPECT_EQ(s.rx_access_errors, before.ep.rx_access_errors);
  EXPECT_EQ(s.rx_psn_out_of_window, before.ep.rx_psn_out_of_window);
  EXPECT_EQ(s.rx_bad_ack, before.ep.rx_bad_ack);
  EXPECT_EQ(s.rx_stale_ack, before.ep.rx_stale_ack);
  EXPECT_EQ(s.rx_nak_unconfirmed, before.ep.rx_nak_unconfirmed);
  EXPECT_EQ(s.rx_placed_bytes, before.ep.rx_placed_bytes);
  EXPECT_EQ(q.stats().data_packets_received, before.qp.data_packets_received);
  EXPECT_EQ(q.stats().nacks_received, before.qp.nacks_received);
  EXPECT_EQ(q.stats().sacks_received, before.qp.sacks_received);
  EXPECT_EQ(q.stats().fatal_challenges, before.qp.fatal_challenges);
  EXPECT_EQ(q.stats().access_errors, before.qp.access_errors);
}

// ------------------------------------------------------------- the pieces

TEST(ReplayWindow, AcceptsEachCounterOnceAndRefusesWhatFellBelow) {
  ReplayWindow w;
  EXPECT_TRUE(w.check(0));
  w.accept(0);
  EXPECT_FALSE(w.check(0));
  EXPECT_TRUE(w.check(5));
  w.accept(5);
  EXPECT_TRUE(w.check(3)) << "reordered, not yet seen";
  w.accept(3);
  EXPECT_FALSE(w.check(3));
  EXPECT_FALSE(w.check(5));
  w.accept(5 + ReplayWindow::kBits);
  EXPECT_FALSE(w.check(4)) << "below the window: refused";
  EXPECT_TRUE(w.check(6 + 1)) << "inside the window, never seen";
  EXPECT_FALSE(w.check(5 + ReplayWindow::kBits));
  // A slot reused by a newer counter reads as not seen.
  EXPECT_TRUE(w.check(5 + ReplayWindow::kBits - 1));
  w.accept(10 * ReplayWindow::kBits);
  EXPECT_TRUE(w.check(10 * ReplayWindow::kBits - 1));
  EXPECT_FALSE(w.check(9 * ReplayWindow::kBits));
}

TEST(SecureWire, SecethRoundTripsAndSitsRightAfterBth) {
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_only);
  h.bth.dest_qp = 0x345;
  h.bth.ts = true;
  h.bth.sec = true;
  h.sec.key_id = 7;
  h.sec.encrypted = true;
  h.sec.counter = 0xABCDEF012345ull;
  h.sec.tag_hi = 0x0102030405060708ull;
  h.sec.tag_lo = 0x090A0B0C0D0E0F10ull;
  h.reth.dma_length = 8;
  const Bytes b = encode(h, 8, 0x5A);
  EXPECT_EQ(b.size(), 12u + 24u + 4u + 4u + 16u + 8u);
  EXPECT_EQ(b[8] & 0x08, 0x08) << "BTH bit 68";
  EXPECT_EQ(b[12], 7);
  EXPECT_EQ(b[13], 0x80);
  EXPECT_EQ(b[14], 0xAB);
  EXPECT_EQ(b[19], 0x45);
  EXPECT_EQ(b[20], 0x01);
  EXPECT_EQ(b[35], 0x10);
  auto p = wire::parse(b);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->h.bth.sec);
  EXPECT_EQ(p->h.sec.counter, h.sec.counter);
  EXPECT_TRUE(p->h.sec.encrypted);
  EXPECT_EQ(p->h.sec.tag_lo, h.sec.tag_lo);
  EXPECT_EQ(p->payload_len, 8u);
  EXPECT_EQ(wire::parse(std::span<const uint8_t>(b.data(), 30)).error(), Errc::truncated);
}

TEST(SecureWire, TheNonceIsSaltZerosAndCounter) {
  const auto n = secure_nonce(0xA1B2C3D4, 0x0000112233445566ull);
  const uint8_t want[] = {0xA1, 0xB2, 0xC3, 0xD4, 0, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66};
  EXPECT_TRUE(std::equal(n.begin(), n.end(), std::begin(want)));
}

TEST(AesGcm, SealsOpensAndRefusesAnyChange) {
  const SecureKey k = key(0x33);
  auto g = crypto::make_aes_gcm(std::span<const uint8_t>(k.key.data(), 16));
  ASSERT_TRUE(g);
  EXPECT_FALSE(crypto::make_aes_gcm(std::span<const uint8_t>(k.key.data(), 20)));
  const auto nonce = secure_nonce(1, 2);
  const Bytes aad = {1, 2, 3, 4, 5};
  Bytes msg(1000);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i);
  const PayloadSegment segs[] = {{msg.data(), 300}, {msg.data() + 300, 700}};
  for (bool enc : {false, true}) {
    Bytes ct(msg.size());
    std::array<uint8_t, kAeadTagBytes> tag{};
    ASSERT_TRUE(g->seal(nonce, aad, segs, enc ? ct.data() : nullptr, tag));
    const Bytes& wire = enc ? ct : msg;
    if (enc) {
      EXPECT_NE(ct, msg);
    }
    Bytes pt(msg.size());
    ASSERT_TRUE(g->open(nonce, aad, wire, enc ? pt.data() : nullptr, tag));
    if (enc) {
      EXPECT_EQ(pt, msg);
    }
    Bytes bad = wire;
    bad[999] ^= 1;
    EXPECT_FALSE(g->open(nonce, aad, bad, enc ? pt.data() : nullptr, tag));
    Bytes bad_aad = aad;
    bad_aad[0] ^= 1;
    EXPECT_FALSE(g->open(nonce, bad_aad, wire, enc ? pt.data() : nullptr, tag));
    EXPECT_FALSE(g->open(secure_nonce(1, 3), aad, wire, enc ? pt.data() : nullptr, tag));
  }
}

// ------------------------------------------------------------- configuration

TEST(SecureQp, KeysAreCheckedAndACipherIsRequired) {
  Pair p;
  EndpointConfig cfg;  // no make_aead
  auto e = EndpointPair::make_endpoint(cfg);
  ASSERT_TRUE(e->create_cq(16).ok());
  const uint32_t q = *e->create_qp(QpInit{});
  EXPECT_EQ(p.connect(*e, q, 0x777, 9, 1, 1, secure_of(kHostA, SecureMode::integrity)), Errc::not_supported);
  EXPECT_EQ(e->query_qp(q)->state, QpState::init) << "refused before anything changed";

  auto e2 = EndpointPair::make_endpoint(p.a->config());
  ASSERT_TRUE(e2->create_cq(16).ok());
  QpSecure same = secure_of(kHostA, SecureMode::encrypt);
  same.recv = same.send;
  const uint32_t q2 = *e2->create_qp(QpInit{});
  EXPECT_EQ(p.connect(*e2, q2, 0x777, 9, 1, 1, same), Errc::invalid_argument);
  QpSecure short_key = secure_of(kHostA, SecureMode::integrity);
  short_key.send.key_len = 24;
  EXPECT_EQ(p.connect(*e2, q2, 0x777, 9, 1, 1, short_key), Errc::invalid_argument);
  QpInit roce;
  roce.transport = Transport::roce_rc;
  const uint32_t q3 = *e2->create_qp(roce);
  EXPECT_EQ(p.connect(*e2, q3, 0x777, 9, 1, 1, secure_of(kHostA, SecureMode::integrity)), Errc::not_supported);

  // query_qp reports the mode and key ids, never the keys.
  const QpInfo info = *p.a->query_qp(p.qa);
  EXPECT_EQ(info.attr.secure.mode, SecureMode::integrity);
  EXPECT_EQ(info.attr.secure.recv.key_id, 2);
  EXPECT_TRUE(std::all_of(info.attr.secure.send.key.begin(), info.attr.secure.send.key.end(),
                          [](uint8_t b) { return b == 0; }));
}

TEST(SecureQp, TransfersCompleteWithEveryPacketSealed) {
  for (SecureMode mode : {SecureMode::integrity, SecureMode::encrypt}) {
    Pair p({mode, mode});
    ASSERT_TRUE(p.write(1, 256 * 1024).ok());
    ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
    EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
    EXPECT_TRUE(p.data_arrived(256 * 1024));
    size_t data = 0;
    for (const Sent& s : p.log) {
      auto q = wire::parse(s.bytes);
      ASSERT_TRUE(q.ok());
      EXPECT_TRUE(q->h.bth.sec) << "every packet, data and control";
      EXPECT_EQ(q->h.sec.encrypted, mode == SecureMode::encrypt);
      if (!q->h.info().data) continue;
      ++data;
      const uint8_t* wire_payload = s.bytes.data() + q->header_len;
      const uint8_t* plain = p.src.data() + (q->h.reth.va - p.dst_mr.addr);
      EXPECT_EQ(std::memcmp(wire_payload, plain, q->payload_len) == 0, mode == SecureMode::integrity);
    }
    EXPECT_GE(data, 256u);
    EXPECT_EQ(p.a->stats().rx_auth_failures + p.b->stats().rx_auth_failures, 0u);
    EXPECT_EQ(p.a->stats().rx_replays + p.b->stats().rx_replays, 0u);
  }
}

TEST(SecureQp, LossesAreRecoveredUnderFreshCounters) {
  Pair p({SecureMode::encrypt, SecureMode::encrypt});
  size_t n = 0;
  p.filter = [&n](const Sent&) { return ++n % 7 != 0; };  // every 7th packet, both ways
  ASSERT_TRUE(p.write(1, 512 * 1024).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(20)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.data_arrived(512 * 1024));
  EXPECT_GT(p.qp_a().stats().retransmissions, 0u);
  EXPECT_EQ(p.b->stats().rx_replays, 0u) << "a retransmission is a new transmission";
}

TEST(SecureQp, APlainPeerAndASecureOneRefuseEachOther) {
  Pair p({SecureMode::integrity, SecureMode::off});
  ASSERT_TRUE(p.write(1, 4 * kMtu).ok());
  for (int i = 0; i < 50; ++i) p.step();
  EXPECT_FALSE(p.completed(1));
  EXPECT_GE(p.b->stats().rx_auth_failures, 4u) << "sealed packets to a plain QP";
  EXPECT_EQ(p.b->stats().rx_placed_bytes, 0u);
}

// ------------------------------------------------------------- the attacks (issue 37)

TEST(SecureAttack, AForgedFatalNakIsRefusedEvenWithoutConfirmation) {
  // The reference's setting believes the first fatal AETH NAK for an
  // outstanding PSN; a secure QP never sees it.
  Pair p({.confirm_fatal = false});
  outstanding_write(p);
  const Snapshot before = snap(*p.a, p.qp_a());
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::ack);
  h.bth.dest_qp = p.qa;
  h.bth.psn = 0x100;
  h.aeth.syndrome = wire::aeth::kNakRemoteAccess;
  p.inject(kHostA, kHostB, encode(h));
  EXPECT_EQ(p.a->stats().rx_auth_failures, before.ep.rx_auth_failures + 1);
  expect_unchanged(before, *p.a, p.qp_a());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.data_arrived(64 * 1024));
}

TEST(SecureAttack, AForgedNackEchoingASeenStampIsRefused) {
  Pair p({.confirm_fatal = false});
  outstanding_write(p);
  const Sent* seen = p.first(kHostA, wire::Opcode::write_first);
  ASSERT_NE(seen, nullptr);
  const auto observed = *wire::parse(seen->bytes);
  const Snapshot before = snap(*p.a, p.qp_a());
  // Unsealed, with the PSN and stamp the observer saw.
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::nack);
  h.bth.dest_qp = p.qa;
  h.bth.psn = observed.h.bth.psn;
  h.neth.reason = static_cast<uint8_t>(wire::NackCode::unexp_event);
  h.neth.nack_psn = observed.h.bth.psn;
  h.neth.reflected_ts = observed.h.tseth.timestamp;
  p.inject(kHostA, kHostB, encode(h));
  // Sealed-looking: a SECETH with a fresh counter and a made-up tag.
  h.bth.sec = true;
  h.sec.key_id = 2;
  h.sec.counter = 1000;
  h.sec.tag_hi = 0xDEADBEEF;
  p.inject(kHostA, kHostB, encode(h));
  EXPECT_EQ(p.a->stats().rx_auth_failures, before.ep.rx_auth_failures + 2);
  expect_unchanged(before, *p.a, p.qp_a());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
}

TEST(SecureAttack, AGenuineControlPacketAlteredIntoAFatalNackIsRefused) {
  // An on-path attacker takes one of B's real (sealed) SACKs and rewrites
  // it: any bit changed in the headers breaks the tag.
  Pair p({.confirm_fatal = false});
  p.filter = [](const Sent& s) { return s.from != kHostB; };  // B's answers held back
  ASSERT_TRUE(p.write(1, 64 * 1024).ok());
  p.step();
  p.filter = nullptr;
  const Sent* sack = p.first(kHostB, wire::Opcode::sack);
  ASSERT_NE(sack, nullptr);
  const Snapshot before = snap(*p.a, p.qp_a());
  Bytes forged = sack->bytes;
  forged[12 + 24 + 15] ^= 0x10;  // SETH cack_psn: acknowledges what never arrived
  p.inject(kHostA, kHostB, forged);
  Bytes flipped = sack->bytes;
  flipped.back() ^= 0x01;  // a bitmap bit
  p.inject(kHostA, kHostB, flipped);
  Bytes other_id = sack->bytes;
  other_id[12] ^= 0x40;    // SECETH key id
  p.inject(kHostA, kHostB, other_id);
  EXPECT_EQ(p.a->stats().rx_auth_failures, before.ep.rx_auth_failures + 2);
  EXPECT_EQ(p.a->stats().rx_bad_key_id, before.ep.rx_bad_key_id + 1);
  expect_unchanged(before, *p.a, p.qp_a());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
}

TEST(SecureAttack, ASpoofedWriteAheadOfTheSenderPlacesNothing) {
  // With the QPN, rkey and VA of one observed packet, a spoofer writes
  // PSNs ahead of the sender: plain MRC places them and drops the real
  // packets as duplicates. Sealed under no key it has, nothing lands.
  for (SecureMode mode : {SecureMode::integrity, SecureMode::encrypt}) {
    Pair p({mode, mode});
    ASSERT_TRUE(p.write(1, 4 * kMtu).ok());
    p.step();
    ASSERT_TRUE(p.completed(1));
    const Sent* seen = p.first(kHostA, wire::Opcode::write_first);
    ASSERT_NE(seen, nullptr);
    const auto observed = *wire::parse(seen->bytes);
    // The next WRITE's packets are held back (B expects them all) and one
    // of them is captured on the way.
    p.filter = [](const Sent& s) { return s.from != kHostA; };
    ASSERT_TRUE(p.write(2, 64 * 1024, 4 * kMtu).ok());
    p.step();
    p.filter = nullptr;
    const Bytes captured = p.log.back().from == kHostA ? p.log.back().bytes : Bytes{};
    ASSERT_FALSE(captured.empty());
    const Snapshot before = snap(*p.b, p.qp_b());
    for (uint32_t i = 0; i < 64; ++i) {
      wire::Headers h = observed.h;
      h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_middle);
      h.bth.psn = observed.h.bth.psn + 4 + i;
      h.reth.va = p.dst_mr.addr + 4 * kMtu + uint64_t{i} * kMtu;
      h.reth.dma_length = 64 * 1024;
      h.bth.sec = false;
      p.inject(kHostB, kHostA, encode(h, kMtu, 0xEE));  // plain
      h.bth.sec = true;
      h.sec.counter += 100 + i;                          // sealed-looking
      p.inject(kHostB, kHostA, encode(h, kMtu, 0xEE));
    }
    // A real packet B has not had yet, its payload changed on the way.
    Bytes altered = captured;
    altered.back() ^= 0xFF;
    p.inject(kHostB, kHostA, altered);
    EXPECT_EQ(p.b->stats().rx_auth_failures, before.ep.rx_auth_failures + 129);
    expect_unchanged(before, *p.b, p.qp_b());
    ASSERT_TRUE(p.run_until([&] { return p.completed(2); }, Duration::ms(2)));
    EXPECT_EQ(p.send_completion(2)->status, WcStatus::success);
    EXPECT_TRUE(p.data_arrived(4 * kMtu + 64 * 1024)) << "no spoofed byte in the region";
  }
}

TEST(SecureAttack, AReplayedPacketIsRefused) {
  Pair p;
  ASSERT_TRUE(p.write(1, 16 * kMtu).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  const Sent* data = p.first(kHostA, wire::Opcode::write_first);
  const Sent* sack = p.first(kHostB, wire::Opcode::sack);
  ASSERT_NE(data, nullptr);
  ASSERT_NE(sack, nullptr);
  const Bytes old_data = data->bytes, old_sack = sack->bytes;  // the log grows below
  // The region is overwritten by the application after the WRITE: a
  // replayed WRITE would put the old bytes back.
  std::fill(p.dst.begin(), p.dst.begin() + kMtu, 0x42);
  const Snapshot before_b = snap(*p.b, p.qp_b());
  const Snapshot before_a = snap(*p.a, p.qp_a());
  p.inject(kHostB, kHostA, old_data);
  p.inject(kHostA, kHostB, old_sack);
  EXPECT_EQ(p.b->stats().rx_replays, 1u);
  EXPECT_EQ(p.a->stats().rx_replays, 1u);
  expect_unchanged(before_b, *p.b, p.qp_b());
  expect_unchanged(before_a, *p.a, p.qp_a());
  EXPECT_EQ(p.b->stats().ctrl_shed, before_b.ep.ctrl_shed);
  EXPECT_EQ(p.dst[0], 0x42) << "nothing placed again";
  // Long after, below the window: more than ReplayWindow::kBits
  // transmissions later.
  for (uint64_t wr = 2; wr < 7; ++wr) {
    ASSERT_TRUE(p.write(wr, 1024 * 1024 - kMtu).ok());
    ASSERT_TRUE(p.run_until([&] { return p.completed(wr); }, Duration::ms(10)));
  }
  p.inject(kHostB, kHostA, old_data);
  EXPECT_EQ(p.b->stats().rx_replays, 2u);
  EXPECT_EQ(p.b->stats().rx_auth_failures, 0u);
}

TEST(SecureAttack, ABadKeyWriteCannotMakeTheResponderEndTheConnection) {
  // The reference's responder answers a WRITE with a wrong rkey with a
  // fatal NAK; a secure one never reads the rkey of an unsealed packet.
  Pair p({.confirm_fatal = false});
  outstanding_write(p);
  const Snapshot before = snap(*p.b, p.qp_b());
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_only);
  h.bth.dest_qp = p.qb;
  h.bth.psn = 0x100;
  h.bth.ts = true;
  h.reth.va = p.dst_mr.addr;
  h.reth.rkey = p.dst_mr.rkey ^ 0x5A5A;
  h.reth.dma_length = 64;
  p.inject(kHostB, kHostA, encode(h, 64, 0xEE));
  EXPECT_EQ(p.b->stats().rx_auth_failures, before.ep.rx_auth_failures + 1);
  expect_unchanged(before, *p.b, p.qp_b());
  EXPECT_FALSE(p.b->has_pending_transmit()) << "no NAK, no NACK queued";
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_EQ(p.qp_b().state(), QpState::rts);
}

TEST(SecureAttack, AForgedProbeIsNotAnswered) {
  Pair p;
  outstanding_write(p);
  const Snapshot before = snap(*p.b, p.qp_b());
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::probe);
  h.bth.dest_qp = p.qb;
  h.bth.psn = 0x100;
  for (int i = 0; i < 10; ++i) p.inject(kHostB, kHostA, encode(h));
  EXPECT_EQ(p.b->stats().rx_auth_failures, before.ep.rx_auth_failures + 10);
  expect_unchanged(before, *p.b, p.qp_b());
  EXPECT_FALSE(p.b->has_pending_transmit()) << "nothing to reflect";
}

TEST(SecureAttack, ATrimmedHeaderIsOnlyALossHint) {
  // A trimmed packet lost what its tag covers: B answers it with a sealed
  // NACK TRIMMED (the requester resends), places nothing, and keeps the
  // counter's window slot for the real transmission.
  Pair p;
  outstanding_write(p);
  const Sent* seen = p.first(kHostA, wire::Opcode::write_first);
  ASSERT_NE(seen, nullptr);
  const auto parsed = *wire::parse(seen->bytes);
  Bytes trimmed(seen->bytes.begin(), seen->bytes.begin() + static_cast<ptrdiff_t>(parsed.header_len));
  RxMeta m;
  m.peer = kHostA;
  m.trim = TrimMark::trimmed;
  p.b->handle_datagram(p.now, m, trimmed);
  EXPECT_EQ(p.qp_b().stats().trims_received, 1u);
  EXPECT_EQ(p.b->stats().rx_placed_bytes, 0u);
  EXPECT_EQ(p.b->stats().rx_auth_failures, 0u);
  p.inject(kHostB, kHostA, seen->bytes);  // the real one, same counter
  EXPECT_EQ(p.b->stats().rx_replays, 0u);
  EXPECT_EQ(p.b->stats().rx_placed_bytes, kMtu);
}

}  // namespace
}  // namespace mrc::core
