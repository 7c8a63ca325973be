// SPDX-License-Identifier: BSD-2-Clause
// A hostile or broken peer must not stop, kill or blind a connection, grow
// the core's memory without bound, or reach memory it has no key for (the
// hardening issue's findings, one test or more each). The pair below moves
// packets between two real endpoints with zero delay, one step per
// microsecond, and lets a test drop, copy, alter or forge any packet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "endpoint_pair.hpp"
#include "harness/events.hpp"
#include "wire/packet.hpp"
#include "wire/psn.hpp"

namespace mrc::core {
namespace {

using harness::Event;
using test_support::EndpointPair;
using test_support::kAllPorts;
using test_support::kHostA;
using test_support::kHostB;
using test_support::PairSpec;
using test_support::Sent;
using Bytes = test_support::Bytes;
constexpr uint32_t kMtu = test_support::kPairMtu;

struct Pair : EndpointPair {
  using EndpointPair::EndpointPair;

  /// Headers of a WRITE_ONLY to B's QP at B's region (PSN left to the caller).
  wire::Headers write_to_b() const {
    wire::Headers h;
    h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_only);
    h.bth.dest_qp = qb;
    h.bth.ts = true;
    h.reth.va = dst_mr.addr;
    h.reth.rkey = dst_mr.rkey;
    return h;
  }
};

Bytes encode(const wire::Headers& h) {
  Bytes b(wire::kMaxHeaderBytes);
  const size_t n = wire::encode(h, b).value();
  b.resize(n);
  return b;
}

Bytes port_status(uint32_t mask) {
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::endpoint_request);
  h.bth.dest_qp = kEndpointOpsQpn;
  h.bth.psn = 77;
  h.erth.op = static_cast<uint8_t>(wire::EpWireOp::port_status_update);
  h.erth.port_status_mask = mask;
  return encode(h);
}

template <class T>
size_t count_events(const std::vector<Event>& ev) {
  size_t n = 0;
  for (const Event& e : ev) n += std::holds_alternative<T>(e);
  return n;
}

// ------------------------------------------------------------- 1. port status

TEST(HostilePortStatus, AnUpdateFromASourceWithNoConnectedQpIsRefused) {
  Pair p;
  p.step();
  for (uint64_t stranger = 100; stranger < 1100; ++stranger) p.inject(kHostA, stranger, port_status(0), 0);
  EXPECT_EQ(p.a->stats().rx_ep_refused, 1000u);
  EXPECT_EQ(p.a->peer_status_entries(), 0u) << "a spoofed source must not grow the table";
  EXPECT_EQ(count_events<PortEvent>(p.events_a), 0u);
  ASSERT_TRUE(p.write(1, 64 * 1024).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_TRUE(p.data_arrived(64 * 1024));
}

TEST(HostilePortStatus, AMaskThatLeavesNoUsablePlaneIsRefused) {
  Pair p;
  ASSERT_TRUE(p.write(1, 256 * 1024).ok());
  p.step();
  p.inject(kHostA, kHostB, port_status(0), 0);          // no plane at all
  p.inject(kHostA, kHostB, port_status(0b100), 0);      // only a port this device does not have
  p.inject(kHostA, kHostB, port_status(0b10), 0);       // denies the plane it arrived on
  EXPECT_EQ(p.a->stats().rx_ep_refused, 3u);
  EXPECT_EQ(count_events<PortEvent>(p.events_a), 0u);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(3)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.data_arrived(256 * 1024));
}

TEST(HostilePortStatus, AGenuineUpdateStillMovesTrafficOffThePlane) {
  Pair p;
  p.step();
  p.inject(kHostA, kHostB, port_status(0b01), 0);  // B says: only plane 0, sent on plane 0
  p.step();
  EXPECT_EQ(p.a->stats().rx_ep_refused, 0u);
  ASSERT_EQ(count_events<PortEvent>(p.events_a), 1u);
  EXPECT_EQ(p.a->peer_status_entries(), 1u);
  const size_t before = p.log.size();
  ASSERT_TRUE(p.write(1, 64 * 1024).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  for (size_t i = before; i < p.log.size(); ++i) {
    if (p.log[i].from == kHostA) {
      EXPECT_EQ(p.log[i].tx.port, 0u);
    }
  }
  // Destroying the last QP towards B forgets B's entry.
  ASSERT_TRUE(p.a->destroy_qp(p.qa).ok());
  EXPECT_EQ(p.a->peer_status_entries(), 0u);
}

TEST(HostilePortStatus, AQpWithWorkAndNoUsablePathReachesItsRetryLimit) {
  PairSpec few_retries;
  few_retries.retry_exp = 0;
  few_retries.retry_linear = 3;
  Pair p(few_retries);
  // Every local port goes down: nothing can be sent and nothing is in flight.
  p.a->set_port_up(p.now, 0, false);
  p.a->set_port_up(p.now, 1, false);
  ASSERT_TRUE(p.write(1, 4096).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(5)))
      << "a QP with work and no path must not hang in RTS";
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::retry_exc_err);
  EXPECT_EQ(p.qp_a().state(), QpState::error);
  EXPECT_EQ(p.qp_a().stats().stall_timeouts, 4u);
}

TEST(HostilePortStatus, AStalledQpResumesWhenAPortReturns) {
  Pair p;
  p.a->set_port_up(p.now, 0, false);
  p.a->set_port_up(p.now, 1, false);
  ASSERT_TRUE(p.write(1, 8192).ok());
  for (int i = 0; i < 200; ++i) p.step();
  EXPECT_GT(p.qp_a().stats().stall_timeouts, 0u);
  EXPECT_NE(p.a->next_timeout(), Time::never()) << "retrying forever keeps a timer armed";
  p.a->set_port_up(p.now, 1, true);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
}

// ------------------------------------------------------------- 2. forged feedback

/// A NACK to A's QP naming `psn`, echoing `ts`, with reason `code`.
Bytes nack(const Pair& p, uint32_t psn, uint16_t ts, wire::NackCode code) {
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::nack);
  h.bth.dest_qp = p.qa;
  h.bth.psn = psn;
  h.neth.reason = static_cast<uint8_t>(code);
  h.neth.nack_psn = psn;
  h.neth.reflected_ts = ts;
  return encode(h);
}

/// A NACK UNEXP_EVENT to A's QP naming `psn`, echoing `ts`.
Bytes fatal_nack(const Pair& p, uint32_t psn, uint16_t ts) { return nack(p, psn, ts, wire::NackCode::unexp_event); }

/// An AETH NAK (remote access error) to A's QP naming `psn`.
Bytes fatal_nak(const Pair& p, uint32_t psn) {
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::ack);
  h.bth.dest_qp = p.qa;
  h.bth.psn = psn;
  h.aeth.syndrome = wire::aeth::kNakRemoteAccess;
  return encode(h);
}


TEST(HostileFeedback, AForgedFatalNackForAnyPsnDoesNotFailTheQp) {
  Pair p;
  ASSERT_TRUE(p.write(1, 256 * 1024).ok());
  p.step();
  const uint64_t bad_before = p.a->stats().rx_bad_ack + p.a->stats().rx_stale_ack;
  for (uint32_t psn : {0u, 0x100u, 0x101u, 0x140u, 0xFFFFFFu}) p.inject(kHostA, kHostB, fatal_nack(p, psn, 0x1234), 0);
  EXPECT_EQ(p.qp_a().state(), QpState::rts);
  EXPECT_EQ(p.a->stats().rx_bad_ack + p.a->stats().rx_stale_ack, bad_before);
  EXPECT_EQ(p.a->stats().rx_nak_unconfirmed, 5u);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(3)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.data_arrived(256 * 1024));
}

// A semantic ACK for a message already completed (its SACKs got there
// first) is late news: counted as a late acknowledgement, not as a bad one
// (which the device reports as a drop), and it changes nothing.
TEST(HostileFeedback, AnAckForACompletedMessageIsLateNotBad) {
  Pair p;
  ASSERT_TRUE(p.write(1, 4096).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(1)));
  const Sent* ack = p.last(kHostB, wire::Opcode::ack);
  ASSERT_NE(ack, nullptr) << "B acknowledged the message";
  const Bytes old_ack = ack->bytes;
  // Message 2 is outstanding (none of its packets reach B).
  p.filter = [](const Sent& s) { return s.from != kHostA; };
  ASSERT_TRUE(p.write(2, 4096, 4096).ok());
  p.step();
  const EndpointStats before = p.a->stats();
  p.inject(kHostA, kHostB, old_ack);
  EXPECT_EQ(p.a->stats().rx_stale_ack, before.rx_stale_ack + 1);
  EXPECT_EQ(p.a->stats().rx_bad_ack, before.rx_bad_ack);
  EXPECT_FALSE(p.completed(2));
  p.filter = nullptr;
  ASSERT_TRUE(p.run_until([&] { return p.completed(2); }, Duration::ms(3)));
  EXPECT_TRUE(p.data_arrived(8192));
}

TEST(HostileFeedback, AForgedSackCannotAcknowledgeDataThatNeverArrived) {
  Pair p;
  // Nothing from A reaches B: any completion would be a lie.
  p.filter = [](const Sent& s) { return s.from != kHostA; };
  ASSERT_TRUE(p.write(1, 64 * 1024).ok());
  p.step();
  const uint64_t last = 0x100 + 63;  // the WRITE's 64 PSNs
  for (uint16_t ts : {uint16_t{0}, uint16_t{0x4000}, uint16_t{0xFFFF}}) {
    wire::Headers h;
    h.bth.opcode = static_cast<uint8_t>(wire::Opcode::sack);
    h.bth.dest_qp = p.qa;
    h.bth.psn = static_cast<uint32_t>(last);
    h.seth.cack_psn = static_cast<uint32_t>(last);
    h.seth.bitmap = ~0ull;
    h.cc.reflected_ts = ts;
    h.cc.rcvd_bytes = 0x7FFFFF;
    p.inject(kHostA, kHostB, encode(h), 0);
    // And a semantic ACK for the message.
    wire::Headers k;
    k.bth.opcode = static_cast<uint8_t>(wire::Opcode::ack);
    k.bth.dest_qp = p.qa;
    k.bth.psn = 0x5000;  // no PSN we sent
    k.aeth.syndrome = wire::aeth::kAckNoCredit;
    k.aeth.msn = 1;
    p.inject(kHostA, kHostB, encode(k), 0);
  }
  for (int i = 0; i < 20; ++i) p.step();
  EXPECT_FALSE(p.completed(1));
  EXPECT_EQ(p.a->stats().rx_bad_ack, 6u);
  EXPECT_GE(p.qp_a().controller()->inflight_bytes(), 0);
}

TEST(HostileFeedback, AForgedFatalNakForAPsnNotOutstandingIsIgnored) {
  Pair p;
  ASSERT_TRUE(p.write(1, 64 * 1024).ok());
  p.step();
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::ack);
  h.bth.dest_qp = p.qa;
  h.bth.psn = 0x100 + 4000;  // beyond everything sent
  h.aeth.syndrome = wire::aeth::kNakRemoteAccess;
  p.inject(kHostA, kHostB, encode(h), 0);
  EXPECT_EQ(p.qp_a().state(), QpState::rts);
  EXPECT_EQ(p.a->stats().rx_nak_unconfirmed, 1u);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
}

TEST(HostileFeedback, AGenuineFatalNackStillFailsTheQp) {
  // A WRITE_WITH_IMM with no receive posted is fatal at the responder
  // (reference 3.1: no RNR); the NACK it sends must be believed.
  Pair p;
  SendWr wr;
  wr.wr_id = 9;
  wr.opcode = WrOpcode::rdma_write_with_imm;
  wr.local_addr = p.src_mr.addr;
  wr.lkey = p.src_mr.lkey;
  wr.length = 8 * kMtu;
  wr.remote_addr = p.dst_mr.addr;
  wr.rkey = p.dst_mr.rkey;
  ASSERT_TRUE(p.a->post_send(p.now, p.qa, wr).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(9); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(9)->status, WcStatus::rem_op_err);
  EXPECT_EQ(p.qp_a().state(), QpState::error);
  // Confirmed first: the failed responder answered the resent packet.
  EXPECT_GE(p.qp_a().stats().fatal_challenges, 1u);
}

// ------------------------------------------------------------- 2b. fatal NAKs and NACKs (issue 37, goal 1)

/// The reference's behaviour: the first fatal NAK or NACK that names an
/// outstanding PSN (and, for a NACK, echoes its stamp) fails the QP.
PairSpec reference_fatal() {
  PairSpec s;
  s.cfg.protocol.confirm_fatal = false;
  return s;
}

/// A WRITE of 64 KiB whose packets all left A and none reached B (or none
/// of B's answers reached A): every PSN from 0x100 is outstanding.
void outstanding_write(Pair& p, bool drop_data) {
  p.filter = [drop_data](const Sent& s) { return s.from != (drop_data ? kHostA : kHostB); };
  ASSERT_TRUE(p.write(1, 64 * 1024).ok());
  p.step();
  p.filter = nullptr;
}

/// The TSETH stamp of A's latest data packet with this PSN.
uint16_t stamp_of(const Pair& p, uint32_t psn) {
  for (auto it = p.log.rbegin(); it != p.log.rend(); ++it) {
    if (it->from != kHostA) continue;
    auto q = wire::parse(it->bytes);
    if (q.ok() && q->h.info().data && q->h.bth.psn == psn) return q->h.tseth.timestamp;
  }
  ADD_FAILURE() << "A sent no PSN " << psn;
  return 0;
}

TEST(FatalNak, AnAethNakForAnOutstandingPsnIsNotBelieved) {
  // AETH has no room for a timestamp echo: knowing the QPN and one PSN in
  // flight was enough to kill the connection.
  Pair p;
  outstanding_write(p, false);
  p.inject(kHostA, kHostB, fatal_nak(p, 0x100));
  EXPECT_EQ(p.qp_a().state(), QpState::rts);
  EXPECT_EQ(p.a->stats().rx_nak_unconfirmed, 1u);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.data_arrived(64 * 1024));

  Pair r(reference_fatal());
  outstanding_write(r, false);
  r.inject(kHostA, kHostB, fatal_nak(r, 0x100));
  EXPECT_EQ(r.qp_a().state(), QpState::error) << "the reference believes it";
}

TEST(FatalNak, ANackEchoingAnObservedStampCostsOneRetransmissionNotTheQp) {
  // An observer saw PSN 0x100 leave with its stamp and forges the fatal
  // NACK for it: the requester resends the packet to confirm, the
  // responder places it, and nothing fails.
  Pair p;
  outstanding_write(p, false);
  const uint64_t resent = p.qp_a().stats().retransmissions;
  p.inject(kHostA, kHostB, fatal_nack(p, 0x100, stamp_of(p, 0x100)));
  EXPECT_EQ(p.qp_a().state(), QpState::rts);
  EXPECT_EQ(p.qp_a().stats().fatal_challenges, 1u);
  // A copy of the same NACK is not a second challenge.
  p.inject(kHostA, kHostB, fatal_nack(p, 0x100, stamp_of(p, 0x100)));
  EXPECT_EQ(p.qp_a().stats().fatal_challenges, 1u);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.data_arrived(64 * 1024));
  EXPECT_GE(p.qp_a().stats().retransmissions - resent, 1u);

  Pair r(reference_fatal());
  outstanding_write(r, false);
  r.inject(kHostA, kHostB, fatal_nack(r, 0x100, stamp_of(r, 0x100)));
  EXPECT_EQ(r.qp_a().state(), QpState::error) << "the reference believes it";
}

/// WRITE_ONLY headers from A to B's region with this PSN and stamp, and a
/// wrong rkey.
Bytes bad_key_write(const Pair& p, uint32_t psn, uint16_t ts) {
  wire::Headers h = p.write_to_b();
  h.bth.psn = psn;
  h.tseth.timestamp = ts;
  h.reth.rkey = p.dst_mr.rkey ^ 0x5A5A;
  h.reth.dma_length = 64;
  Bytes b = encode(h);
  b.resize(b.size() + 64, 0xEE);
  return b;
}

TEST(FatalNak, ASpoofedBadKeyWriteDoesNotMakeTheResponderEndTheConnection) {
  // A blind spoofer with the QPN and a PSN A has in flight (none of A's
  // packets reached B yet) sends B a WRITE with a wrong rkey from A's
  // address. B refuses it and answers A, echoing the spoofer's stamp,
  // which A never sent: dropped.
  Pair p;
  outstanding_write(p, true);
  p.inject(kHostB, kHostA, bad_key_write(p, 0x100, 0x4321));
  EXPECT_EQ(p.qp_b().stats().access_errors, 1u);
  p.step();
  EXPECT_EQ(p.a->stats().rx_nak_unconfirmed, 1u);
  EXPECT_EQ(p.qp_a().state(), QpState::rts);
  EXPECT_EQ(p.qp_b().state(), QpState::rts);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.data_arrived(64 * 1024));

  // The reference's responder answers with an AETH NAK, which kills A.
  Pair r(reference_fatal());
  outstanding_write(r, true);
  r.inject(kHostB, kHostA, bad_key_write(r, 0x100, 0x4321));
  r.step();
  EXPECT_EQ(r.qp_a().state(), QpState::error);
}

TEST(FatalNak, ASpoofedBadKeyWriteWithAnObservedStampCostsOneRetransmission) {
  // The same from an observer who copies the stamp of A's packet (which
  // has not reached B): A believes B's refusal, resends to confirm, and B
  // places the real packet.
  Pair p;
  outstanding_write(p, true);
  p.inject(kHostB, kHostA, bad_key_write(p, 0x100, stamp_of(p, 0x100)));
  p.step();
  EXPECT_EQ(p.qp_a().stats().fatal_challenges, 1u);
  EXPECT_EQ(p.qp_a().state(), QpState::rts);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.data_arrived(64 * 1024));
  EXPECT_EQ(p.qp_b().state(), QpState::rts);
}

TEST(FatalNak, AGenuineAccessErrorIsConfirmedAndReportedWithinAFewRoundTrips) {
  Pair p;
  SendWr wr;
  wr.wr_id = 3;
  wr.local_addr = p.src_mr.addr;
  wr.lkey = p.src_mr.lkey;
  wr.length = 4 * kMtu;
  wr.remote_addr = p.dst_mr.addr + p.dst_mr.length - kMtu;  // runs past the region's end
  wr.rkey = p.dst_mr.rkey;
  ASSERT_TRUE(p.a->post_send(p.now, p.qa, wr).ok());
  // Each step is a round trip here (zero delay): the refusal, the
  // challenge and its refusal take a few.
  ASSERT_TRUE(p.run_until([&] { return p.completed(3); }, Duration::us(10)));
  EXPECT_EQ(p.send_completion(3)->status, WcStatus::rem_access_err);
  EXPECT_EQ(p.qp_a().state(), QpState::error);
  EXPECT_GE(p.qp_a().stats().fatal_challenges, 1u);  // one per refused packet at most
  EXPECT_EQ(p.qp_b().state(), QpState::rts) << "the responder stays up";
  EXPECT_EQ(std::count(p.dst.begin(), p.dst.end(), 0), static_cast<ptrdiff_t>(p.dst.size()));

  // A wrong rkey, reported as such.
  Pair q;
  wr.remote_addr = q.dst_mr.addr;
  wr.rkey = q.dst_mr.rkey + 1;
  wr.local_addr = q.src_mr.addr;
  wr.lkey = q.src_mr.lkey;
  ASSERT_TRUE(q.a->post_send(q.now, q.qa, wr).ok());
  ASSERT_TRUE(q.run_until([&] { return q.completed(3); }, Duration::us(10)));
  EXPECT_EQ(q.send_completion(3)->status, WcStatus::rem_access_err);
}

// ------------------------------------------------------------- 2c. dma_length

/// A WRITE packet to B's region with PSN `psn`: opcode, VA offset, payload
/// length and RETH dma_length as given; payload bytes 0xD7.
Bytes write_packet(const Pair& p, wire::Opcode op, uint32_t psn, uint64_t offset, uint32_t len, uint32_t dma) {
  wire::Headers h = p.write_to_b();
  h.bth.opcode = static_cast<uint8_t>(op);
  h.bth.psn = psn;
  h.reth.va = p.dst_mr.addr + offset;
  h.reth.dma_length = dma;
  Bytes b = encode(h);
  b.resize(b.size() + len, 0xD7);
  return b;
}

TEST(DmaLength, AWriteWhosePacketsContradictItsLengthOrLeaveTheRegionIsRefused) {
  Pair p;
  const uint64_t size = p.dst_mr.length;
  struct Case {
    wire::Opcode op;
    uint64_t offset;
    uint32_t len, dma;
    const char* what;
  };
  const Case bad[] = {
      {wire::Opcode::write_only, 0, 64, 128, "ONLY longer than its payload"},
      {wire::Opcode::write_only, 0, 64, 32, "ONLY shorter than its payload"},
      {wire::Opcode::write_first, size - 4 * kMtu, kMtu, 8 * kMtu, "FIRST of a WRITE past the region's end"},
      {wire::Opcode::write_first, 0, kMtu, kMtu, "FIRST of a one-packet WRITE"},
      {wire::Opcode::write_first, 0, kMtu, uint32_t(size + 1), "FIRST of a WRITE larger than the region"},
      {wire::Opcode::write_last, 0, 100, 100 + kMtu, "LAST of a WRITE that starts before the region"},
      {wire::Opcode::write_last, kMtu, 100, 100 + kMtu / 2, "LAST whose WRITE is no whole number of MTUs before it"},
      {wire::Opcode::write_middle, 0, kMtu, 3 * kMtu, "MIDDLE at the region's start"},
      {wire::Opcode::write_middle, size - kMtu, kMtu, 3 * kMtu, "MIDDLE at the region's end"},
      {wire::Opcode::write_middle, kMtu, kMtu, 2 * kMtu, "MIDDLE of a two-packet WRITE"},
  };
  uint32_t psn = 0x100 + 10;
  for (const Case& c : bad) {
    // Refused as an access error, or (a payload longer than the whole
    // WRITE) already by the parser as malformed.
    const uint64_t before = p.qp_b().stats().access_errors + p.b->stats().rx_malformed;
    p.inject(kHostB, kHostA, write_packet(p, c.op, psn++, c.offset, c.len, c.dma));
    EXPECT_EQ(p.qp_b().stats().access_errors + p.b->stats().rx_malformed - before, 1u) << c.what;
  }
  EXPECT_EQ(std::count(p.dst.begin(), p.dst.end(), 0xD7), 0) << "not one byte placed";
  EXPECT_EQ(p.qp_b().state(), QpState::rts);
  // Consistent packets of a three-packet WRITE are placed, whichever comes first.
  p.inject(kHostB, kHostA, write_packet(p, wire::Opcode::write_middle, psn + 1, kMtu, kMtu, 2 * kMtu + 100));
  p.inject(kHostB, kHostA, write_packet(p, wire::Opcode::write_last, psn + 2, 2 * kMtu, 100, 2 * kMtu + 100));
  p.inject(kHostB, kHostA, write_packet(p, wire::Opcode::write_first, psn, 0, kMtu, 2 * kMtu + 100));
  EXPECT_EQ(p.qp_b().stats().access_errors + p.b->stats().rx_malformed, std::size(bad));
  EXPECT_EQ(std::count(p.dst.begin(), p.dst.end(), 0xD7), static_cast<ptrdiff_t>(2 * kMtu + 100));
}

// ------------------------------------------------------------- 3. probe answers

TEST(HostileFeedback, ForgedProbeAnswersDoNotResurrectADeadPath) {
  Pair p;
  // EV 0's path is dead: everything A sends on it is lost.
  const uint32_t dead = p.qp_a().path()->slot(0).value;
  p.filter = [&](const Sent& s) { return !(s.from == kHostA && s.tx.entropy == dead); };
  ASSERT_TRUE(p.write(1, 512 * 1024).ok());
  ASSERT_TRUE(p.run_until([&] { return p.qp_a().path()->slot(0).state == EvState::assumed_bad; },
                          Duration::ms(3)));
  const uint64_t bad_before = p.a->stats().rx_bad_ack;
  for (int i = 0; i < 10; ++i) {
    wire::Headers h;
    h.bth.opcode = static_cast<uint8_t>(wire::Opcode::sack);
    h.bth.dest_qp = p.qa;
    const uint32_t cack = (0x100 + static_cast<uint32_t>(p.qp_a().stats().data_packets_sent / 2)) & wire::kPsnMask;
    h.bth.psn = cack;
    h.seth.cack_psn = cack;
    h.seth.probe_response = true;
    h.seth.entropy = dead;
    h.cc.reflected_ts = static_cast<uint16_t>(i * 977);
    p.inject(kHostA, kHostB, encode(h), 0, dead);
  }
  EXPECT_EQ(p.qp_a().path()->slot(0).state, EvState::assumed_bad);
  EXPECT_EQ(p.qp_a().path()->stats().resurrected, 0u);
  EXPECT_EQ(p.a->stats().rx_bad_ack - bad_before, 10u);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(5)));
  EXPECT_TRUE(p.data_arrived(512 * 1024));
  // Real probes still work: once the path heals, its own answers bring it back.
  p.filter = nullptr;
  ASSERT_TRUE(p.run_until([&] { return p.qp_a().path()->slot(0).state != EvState::assumed_bad; },
                          Duration::ms(5)));
  EXPECT_EQ(p.qp_a().path()->stats().resurrected, 1u);
}

// ------------------------------------------------------------- 4. peer-reported quantities

TEST(HostileFeedback, AHugeReceiveClockCannotSwitchCongestionControlOff) {
  Pair p;
  // A's packets take a while: hold B's SACKs back and replay the first one
  // with a receive clock 2 GiB ahead. The SACK is otherwise genuine.
  bool hold = true;
  std::vector<Bytes> held;
  p.filter = [&](const Sent& s) {
    if (hold && s.from == kHostB && static_cast<wire::Opcode>(s.bytes[0]) == wire::Opcode::sack) {
      held.push_back(s.bytes);
      return false;
    }
    return true;
  };
  ASSERT_TRUE(p.write(1, 512 * 1024).ok());
  for (int i = 0; i < 3 && held.empty(); ++i) p.step();
  ASSERT_FALSE(held.empty());
  hold = false;
  wire::Parsed parsed;
  ASSERT_TRUE(wire::parse_into(held[0], parsed));
  wire::Headers h = parsed.h;
  h.cc.rcvd_bytes = (h.cc.rcvd_bytes + (1u << 23) - 1) & wire::kPsnMask;  // +2 GiB - 256
  p.inject(kHostA, kHostB, encode(h), 0, 0);
  const int64_t inflight = p.qp_a().controller()->inflight_bytes();
  EXPECT_GE(inflight, -256) << "credit beyond what was acknowledged";
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(3)));
  EXPECT_GE(p.qp_a().controller()->inflight_bytes(), -256);
}

// ------------------------------------------------------------- 5. EV events when they happen

TEST(EvEvents, ARetirementAtATimerIsReportedBeforeAnyPacketArrives) {
  // EV 0's path is dead. The loss rule names its packet lost only once the
  // packet is old enough, and the EV is ASSUMED_BAD only once its confirming
  // probe has gone unanswered (ProtocolConfig::loss_confirm): both are
  // timers, not arriving SACKs, and the event must be there as soon as the
  // timer has run.
  Pair p;
  const uint32_t dead = p.qp_a().path()->slot(0).value;
  p.filter = [&](const Sent& s) { return !(s.from == kHostA && s.tx.entropy == dead); };
  ASSERT_TRUE(p.write(1, 256 * kMtu).ok());
  bool checked = false;
  for (int i = 0; i < 2000 && !checked; ++i) {
    p.drain(kHostA);
    p.drain(kHostB);
    p.now = p.now + Duration::us(1);
    if (p.a->next_timeout() > p.now) continue;
    const uint64_t retired_before = p.qp_a().path()->stats().retired;
    const uint64_t rx_before = p.a->stats().rx_packets;
    p.a->handle_timeout(p.now);
    if (p.qp_a().path()->stats().retired == retired_before) continue;
    ASSERT_EQ(p.a->stats().rx_packets, rx_before);
    bool seen = false;
    while (auto e = p.a->poll_event())
      if (auto* ev = std::get_if<EvEvent>(&*e); ev && ev->ev == dead && ev->to == EvState::assumed_bad) seen = true;
    EXPECT_TRUE(seen) << "the retirement's event waits for a packet";
    checked = true;
  }
  EXPECT_TRUE(checked) << "EV 0 was never retired at a timer";
}

TEST(EvEvents, ASilenceThatMayBeTheAcksPathRetiresNoEv) {
  // Nothing A sends is answered, on any EV: that is as likely a dead
  // reverse path as a dead forward one, so the ACK timeout retransmits
  // without retiring (the RTO's losses are not evidence against an EV).
  Pair p;
  p.filter = [](const Sent& s) { return s.from != kHostA; };
  ASSERT_TRUE(p.write(1, 8 * kMtu).ok());
  for (int i = 0; i < 150; ++i) p.step();  // past one RTO (65.5 us)
  EXPECT_GT(p.qp_a().stats().timeouts, 0u);
  EXPECT_EQ(p.qp_a().path()->stats().retired, 0u);
}

TEST(EvEvents, APlaneThatDiesWhileEveryDeliveryIsAmbiguousIsStillRetired) {
  // The first copy of every data packet is lost, so every delivery is a
  // retransmission's, and B folds a tick of service time into every echo
  // (reference 8, item 11), so no SACK can say which copy arrived: the loss
  // rule has no evidence, and every expiry under the ACK timeout is
  // "silent" (a CPU-starved loopback run, where every ACK timeout resent
  // the whole flight, came to this). Port 1 is dead both ways. Port 0's
  // SACKs still prove the peer and a reverse path alive, so the port-1 EVs
  // whose packets expire are probed, fail, and are retired; port 0's are not.
  Pair p;
  std::set<uint32_t> seen;
  std::vector<std::pair<Bytes, uint32_t>> sacks;  // B's SACKs, to be resent with a later echo
  p.filter = [&](const Sent& s) {
    if (s.tx.port == 1) return false;
    wire::Parsed parsed;
    EXPECT_TRUE(wire::parse_into(s.bytes, parsed));
    if (s.from == kHostB && static_cast<wire::Opcode>(parsed.h.bth.opcode) == wire::Opcode::sack &&
        !parsed.h.seth.probe_response) {
      wire::Headers h = parsed.h;
      h.cc.reflected_ts = static_cast<uint16_t>(h.cc.reflected_ts + 1);
      sacks.emplace_back(encode(h), s.tx.entropy);
      return false;
    }
    if (s.from != kHostA || s.tx.payload_len == 0) return true;
    return !seen.insert(parsed.h.bth.psn).second;  // a retransmission
  };
  auto step = [&] {
    p.step();
    for (auto& [bytes, ev] : sacks) p.inject(kHostA, kHostB, bytes, 0, ev);
    sacks.clear();
  };
  ASSERT_TRUE(p.write(1, 32 * kMtu).ok());
  for (int i = 0; i < 20000 && !p.completed(1); ++i) step();
  ASSERT_TRUE(p.completed(1));
  EXPECT_TRUE(p.data_arrived(32 * kMtu));
  EXPECT_EQ(p.qp_a().stats().losses_rule, 0u) << "no unambiguous delivery: the loss rule had nothing to go on";
  uint32_t retired_port0 = 0, retired_port1 = 0;
  for (const Event& e : p.events_a)
    if (const auto* ev = std::get_if<EvEvent>(&e); ev && ev->to == EvState::assumed_bad)
      ++(ev->port == 1 ? retired_port1 : retired_port0);
  EXPECT_GT(retired_port1, 0u);
  EXPECT_EQ(retired_port0, 0u);
}

TEST(EvEvents, ADenyIsReportedAtOnce) {
  Pair p;
  const uint32_t v = p.qp_a().path()->slot(3).value;
  ASSERT_TRUE(p.a->set_ev_denied(p.now, p.qa, v, true).ok());
  bool seen = false;
  while (auto e = p.a->poll_event())
    if (auto* ev = std::get_if<EvEvent>(&*e); ev && ev->ev == v && ev->to == EvState::denied) seen = true;
  EXPECT_TRUE(seen);
}

// ------------------------------------------------------------- 6. floods

TEST(Floods, OutOfWindowWritesQueueOneNack) {
  Pair p;
  wire::Headers h = p.write_to_b();
  for (uint32_t i = 0; i < 100000; ++i) {
    h.bth.psn = (0x100 + 5000 + i) & wire::kPsnMask;  // far outside the 1024-PSN window
    p.inject(kHostB, kHostA, encode(h), 0);
  }
  EXPECT_EQ(p.b->stats().rx_psn_out_of_window, 100000u);
  EXPECT_EQ(p.qp_b().control_queued(), 1u);
  EXPECT_EQ(p.b->stats().ctrl_shed, 99999u);
}

TEST(Floods, BadKeyWritesQueueOneNak) {
  Pair p;
  wire::Headers h = p.write_to_b();
  h.bth.psn = 0x100;
  for (uint32_t i = 0; i < 10000; ++i) {
    h.reth.rkey = p.dst_mr.rkey ^ (i + 1);
    p.inject(kHostB, kHostA, encode(h), 0);
  }
  EXPECT_EQ(p.qp_b().stats().access_errors, 10000u);
  EXPECT_EQ(p.qp_b().control_queued(), 1u);
}

TEST(Floods, TheControlQueueNeverPassesItsCap) {
  Pair p;
  // Distinct trimmed packets inside the window each earn a NACK, up to the cap.
  wire::Headers h = p.write_to_b();
  for (uint32_t i = 0; i < 1000; ++i) {
    h.bth.psn = 0x100 + i;
    RxMeta m;
    m.peer = kHostA;
    m.trim = TrimMark::trimmed;
    p.b->handle_datagram(p.now, m, encode(h));
    ASSERT_LE(p.qp_b().control_queued(), Qp::kMaxCtrl);
  }
  EXPECT_EQ(p.qp_b().control_queued(), Qp::kMaxCtrlNacks);
  EXPECT_EQ(p.b->stats().ctrl_shed, 1000u - Qp::kMaxCtrlNacks);
}

/// The headers of an EV probe request.
wire::Headers ev_probe_request() {
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::endpoint_request);
  h.bth.dest_qp = kEndpointOpsQpn;
  h.erth.op = static_cast<uint8_t>(wire::EpWireOp::ev_probe);
  return h;
}

TEST(Floods, EndpointRequestRepliesAreCappedAndRateLimited) {
  Pair p;
  wire::Headers h = ev_probe_request();
  for (uint32_t i = 0; i < 100000; ++i) {
    h.bth.psn = i & 0xFFFF;
    p.inject(kHostB, 5000 + i, encode(h), 0, i);
  }
  const uint64_t shed = p.b->stats().ep_replies_shed;
  EXPECT_EQ(shed, 100000u - EndpointConfig{}.protocol.ep_reply_burst);
  // They drain, and the bucket refills at one reply per 500 ns.
  uint8_t hdr[wire::kMaxHeaderBytes];
  size_t sent = 0;
  while (p.b->poll_transmit(p.now, kAllPorts, hdr).ok()) ++sent;
  EXPECT_EQ(sent, EndpointConfig{}.protocol.ep_reply_burst);
  p.now = p.now + Duration::us(10);
  for (uint32_t i = 0; i < 100; ++i) p.inject(kHostB, 5000 + i, encode(h), 0, i);
  EXPECT_EQ(p.b->stats().ep_replies_shed - shed, 80u);
}

// Requests forged with a victim's address (reflection): the replies sent
// to one source carry fewer bytes than its requests brought, beyond a
// small burst and a slow refill, while another source that probes at a
// normal rate is answered every time.
TEST(Floods, RepliesToOneSourceNeverCarryMoreBytesThanItsRequests) {
  Pair p;
  const Bytes req = encode(ev_probe_request());
  const ProtocolConfig pc = EndpointConfig{}.protocol;
  constexpr uint64_t kVictim = 4242, kProber = 7777;
  uint8_t hdr[wire::kMaxHeaderBytes];
  uint64_t to_victim = 0, to_prober = 0, probes = 0;
  const Time start = p.now;
  auto drain = [&] {
    for (;;) {
      auto tx = p.b->poll_transmit(p.now, kAllPorts, hdr);
      if (!tx.ok()) break;
      if (tx->peer == kVictim) ++to_victim;
      if (tx->peer == kProber) ++to_prober;
    }
  };
  constexpr uint32_t kFlood = 20000;
  for (uint32_t i = 0; i < kFlood; ++i) {
    // 1 us apart: the endpoint-wide bucket (one per 500 ns) would answer all.
    p.now = p.now + Duration::us(1);
    p.inject(kHostB, kVictim, req, 0, i);
    if (i % 2000 == 0) {
      p.inject(kHostB, kProber, req, 0, i);
      ++probes;
    }
    drain();
  }
  const uint64_t reply_bytes = wire::Bth::kSize + wire::Eeth::kSize;
  const uint64_t req_bytes = req.size();
  const uint64_t elapsed_ms = static_cast<uint64_t>((p.now - start).count_ps() / Duration::ms(1).count_ps());
  EXPECT_LE(to_victim * reply_bytes,
            kFlood * req_bytes + (pc.ep_reply_source_burst + elapsed_ms) * reply_bytes);
  EXPECT_LT(to_victim, kFlood * 2 / 3);
  EXPECT_GT(to_victim, kFlood / 2) << "the requests' own bytes still pay for most replies";
  EXPECT_EQ(to_prober, probes) << "a source probing at a normal rate is always answered";
  EXPECT_EQ(p.b->stats().ep_replies_shed_source, kFlood - to_victim);
}

// ------------------------------------------------------------- 7. keys and PDs

TEST(Keys, KeysQpnsAndPsnsComeFromTheInjectedSource) {
  EndpointConfig cfg;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  cfg.entropy = [&x] { return x = x * 6364136223846793005ull + 1442695040888963407ull; };
  auto e1 = EndpointPair::make_endpoint(cfg);
  x ^= 0xABCDEF;
  auto e2 = EndpointPair::make_endpoint(cfg);
  const auto m1 = *e1->reg_mr(0x1000, 0x1000, access::kRemoteWrite, false);
  const auto m2 = *e2->reg_mr(0x1000, 0x1000, access::kRemoteWrite, false);
  EXPECT_NE(m1.rkey, m2.rkey);
  // Without a source, the seed decides: two fresh default devices agree.
  auto d1 = EndpointPair::make_endpoint(EndpointConfig{});
  auto d2 = EndpointPair::make_endpoint(EndpointConfig{});
  EXPECT_EQ(d1->reg_mr(0x1000, 0x1000, access::kRemoteWrite, false)->rkey,
            d2->reg_mr(0x1000, 0x1000, access::kRemoteWrite, false)->rkey);
  // QPNs are not sequential: the tags above the slot index differ.
  std::vector<uint32_t> qpns;
  ASSERT_TRUE(e1->create_cq(16).ok());
  for (int i = 0; i < 8; ++i) qpns.push_back(*e1->create_qp(QpInit{}));
  int distinct_tags = 0;
  for (size_t i = 1; i < qpns.size(); ++i) {
    EXPECT_GE(qpns[i], Endpoint::kFirstQpn);
    EXPECT_LE(qpns[i], wire::kPsnMask);
    distinct_tags += (qpns[i] >> 12) != (qpns[0] >> 12);
  }
  EXPECT_GE(distinct_tags, 5);
}

TEST(Keys, AQpAcceptsOnlyItsOwnProtectionDomainsKeys) {
  Pair p;
  // Another PD on B with its own region: B's QP (PD 0) must refuse its rkey.
  const uint32_t pd = *p.b->alloc_pd();
  Bytes other(4096, 0xEE);
  const auto mr = *p.b->reg_mr(reinterpret_cast<uint64_t>(other.data()), other.size(), access::kRemoteWrite,
                               true, pd);
  SendWr wr;
  wr.wr_id = 5;
  wr.local_addr = p.src_mr.addr;
  wr.lkey = p.src_mr.lkey;
  wr.length = 1024;
  wr.remote_addr = mr.addr;
  wr.rkey = mr.rkey;
  ASSERT_TRUE(p.a->post_send(p.now, p.qa, wr).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(5); }, Duration::ms(1)));
  EXPECT_EQ(p.send_completion(5)->status, WcStatus::rem_access_err);
  EXPECT_EQ(other, Bytes(4096, 0xEE)) << "not one byte written";
  EXPECT_EQ(p.qp_b().stats().access_errors, 2u);  // the WRITE, and A's resend confirming the refusal
  // The PD is busy while its region exists, and unknown PDs are refused.
  EXPECT_EQ(p.b->dealloc_pd(pd).error(), Errc::busy);
  EXPECT_EQ(p.b->reg_mr(0x1000, 16, access::kRemoteWrite, false, pd + 100).error(), Errc::not_found);
  QpInit qi;
  qi.pd = pd + 100;
  EXPECT_EQ(p.b->create_qp(qi).error(), Errc::not_found);
  ASSERT_TRUE(p.b->dereg_mr(mr.lkey).ok());
  EXPECT_TRUE(p.b->dealloc_pd(pd).ok());
  EXPECT_EQ(p.b->dealloc_pd(kDefaultPd).error(), Errc::invalid_argument);
}

// ------------------------------------------------------------- 8. region lifetimes

TEST(Keys, ARegionAnOutstandingWriteReadsCannotBeDeregistered) {
  Pair p;
  // B's answers are lost for a while: A keeps the data in flight and will
  // have to resend from the region.
  p.filter = [&](const Sent& s) { return s.from == kHostA || p.now > Time::zero() + Duration::us(200); };
  ASSERT_TRUE(p.write(1, 128 * 1024).ok());
  for (int i = 0; i < 100; ++i) {
    p.step();
    ASSERT_EQ(p.a->dereg_mr(p.src_mr.lkey).error(), Errc::busy);
  }
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.a->dereg_mr(p.src_mr.lkey).ok());
}

TEST(Keys, AFlushedWriteReleasesItsRegion) {
  Pair p;
  p.filter = [](const Sent& s) { return s.from != kHostA; };
  ASSERT_TRUE(p.write(1, 128 * 1024).ok());
  p.step();
  EXPECT_EQ(p.a->dereg_mr(p.src_mr.lkey).error(), Errc::busy);
  QpAttr at;
  at.state = QpState::error;
  ASSERT_TRUE(p.a->modify_qp(p.now, p.qa, at, qp_attr::kState).ok());
  EXPECT_TRUE(p.a->dereg_mr(p.src_mr.lkey).ok());
}

// ------------------------------------------------------------- protocol points

TEST(ProtocolPoints, AnUnknownNackReasonIsDroppedAsMalformed) {
  Pair p;
  ASSERT_TRUE(p.write(1, 64 * 1024).ok());
  p.drain(kHostA);  // A's packets go out (and B answers) before the NACK
  const Sent* d = p.last(kHostA, wire::Opcode::write_middle);
  ASSERT_NE(d, nullptr);
  wire::Parsed dp;
  ASSERT_TRUE(wire::parse_into(d->bytes, dp));
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::nack);
  h.bth.dest_qp = p.qa;
  h.bth.psn = dp.h.bth.psn;
  h.neth.reason = 0x33;  // no such code
  h.neth.nack_psn = dp.h.bth.psn;
  h.neth.reflected_ts = dp.h.tseth.timestamp;
  const uint64_t before = p.a->stats().rx_malformed;
  p.inject(kHostA, kHostB, encode(h), 0);
  EXPECT_EQ(p.a->stats().rx_malformed - before, 1u);
  EXPECT_EQ(p.qp_a().stats().nacks_received, 0u);
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(2)));
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
}

TEST(ProtocolPoints, TheResponderOrdersWriteImmCompletionsByPsnNotMeth) {
  // Pins a documented choice (docs/architecture.md): the responder never
  // reads METH's MSN and RQMSN. Completions follow PSN order, which is
  // message order, so scrambling METH on the wire changes nothing.
  Pair p;
  p.filter = [](const Sent& s) {
    if (s.from == kHostA && (s.bytes[0] & 0xE0) == 0xC0) {  // MRC data: METH follows BTH
      auto& b = const_cast<Bytes&>(s.bytes);
      for (size_t i = 12; i < 16; ++i) b[i] = static_cast<uint8_t>(b[i] * 31 + 7);
    }
    return true;
  };
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(p.b->post_recv(p.qb, RecvWr{100 + i}).ok());
  for (uint32_t i = 0; i < 3; ++i) {
    SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::rdma_write_with_imm;
    wr.local_addr = p.src_mr.addr + i * 8 * kMtu;
    wr.lkey = p.src_mr.lkey;
    wr.length = 8 * kMtu;
    wr.remote_addr = p.dst_mr.addr + i * 8 * kMtu;
    wr.rkey = p.dst_mr.rkey;
    wr.imm = 0xA0 + i;
    ASSERT_TRUE(p.a->post_send(p.now, p.qa, wr).ok());
  }
  ASSERT_TRUE(p.run_until([&] { return p.completed(2); }, Duration::ms(2)));
  std::vector<uint32_t> imms;
  for (const Event& e : p.events_b)
    if (auto* wc = std::get_if<WorkCompletion>(&e); wc && wc->with_imm) {
      EXPECT_EQ(wc->status, WcStatus::success);
      imms.push_back(wc->imm);
    }
  EXPECT_EQ(imms, (std::vector<uint32_t>{0xA0, 0xA1, 0xA2}));
  EXPECT_TRUE(p.data_arrived(24 * kMtu));
}

TEST(ProtocolPoints, RetransmissionsWaitForAWindowThatDynamicMprShrank) {
  // Reference 3.4: when the responder shrinks its window, the requester
  // delays retransmissions that would fall outside it, as it pauses new
  // data. PSN +10 is lost, which holds the window's base, and so are
  // +300..+309 far above it; then B shrinks its window to 128 PSNs. New
  // data already on its way when B shrank may be refused (a race the
  // reference accepts); a retransmission never may.
  PairSpec dynamic_mpr;
  dynamic_mpr.cap = qp_cap::kDynamicMpr;
  Pair p(dynamic_mpr);
  std::vector<bool> seen(4096, false);
  uint64_t rtx_refused = 0, rtx_sent = 0, oor_before = 0;
  bool last_rtx = false;
  auto account = [&] {
    if (last_rtx && p.b->stats().rx_psn_out_of_window > oor_before) ++rtx_refused;
    last_rtx = false;
  };
  p.filter = [&](const Sent& s) {
    account();
    if (s.from != kHostA || (s.bytes[0] & 0xE0) != 0xC0) return true;
    const uint32_t off = ((uint32_t{s.bytes[9]} << 16) | (uint32_t{s.bytes[10]} << 8) | s.bytes[11]) - 0x100;
    const bool first = off < seen.size() && !seen[off];
    if (off < seen.size()) seen[off] = true;
    if (!first) {
      last_rtx = true;
      ++rtx_sent;
      oor_before = p.b->stats().rx_psn_out_of_window;
    }
    return !(first && (off == 10 || (off >= 300 && off < 310)));
  };
  ASSERT_TRUE(p.write(1, 400 * kMtu).ok());
  while (!seen[0x140]) p.step();
  ASSERT_TRUE(p.b->set_mpr_dest(p.qb, 1).ok());
  ASSERT_TRUE(p.run_until([&] { return p.completed(1); }, Duration::ms(5)));
  account();
  EXPECT_EQ(p.send_completion(1)->status, WcStatus::success);
  EXPECT_TRUE(p.data_arrived(400 * kMtu));
  EXPECT_GE(rtx_sent, 11u);
  EXPECT_EQ(rtx_refused, 0u) << "a retransmission went past the shrunk window";
  // One resend per lost or refused packet (plus the tail probes): no loop
  // of resends into the same refusal.
  EXPECT_LE(p.qp_a().stats().retransmissions, 10 + 1 + p.b->stats().rx_psn_out_of_window + 3);
}

TEST(ProtocolPoints, ARefusalThatRepeatsBacksOffInsteadOfResendingEveryRoundTrip) {
  // B refuses PSN 0x100 every time it arrives (NO_RESOURCE, a genuine NACK
  // echoing each transmission's stamp) and takes every other packet. The
  // linear retries resend it at once; after them, with nothing delivered,
  // the tail probes and the ACK timeout resend it and back off, so 5 ms
  // hold a few dozen resends, not one per round trip (5,000 here). With
  // retries forever the QP stays up; with a limit it fails at the limit.
  for (const uint8_t retry_exp : {uint8_t{25}, uint8_t{3}}) {
    SCOPED_TRACE(static_cast<int>(retry_exp));
    PairSpec spec;
    spec.retry_exp = retry_exp;
    Pair p(spec);
    uint64_t refused = 0;
    std::vector<Bytes> refusals;  // delivered a step later, as from across the link
    p.filter = [&](const Sent& s) {
      if (s.from != kHostA || (s.bytes[0] & 0xE0) != 0xC0) return true;
      auto q = wire::parse(s.bytes);
      if (!q.ok() || q->h.bth.psn != 0x100) return true;
      ++refused;
      refusals.push_back(nack(p, 0x100, q->h.tseth.timestamp, wire::NackCode::no_resource));
      return false;
    };
    ASSERT_TRUE(p.write(1, 16 * kMtu).ok());
    for (const Time end = p.now + Duration::ms(5); p.now < end && !p.completed(1);) {
      p.step();
      for (const Bytes& b : std::exchange(refusals, {})) p.inject(kHostA, kHostB, b);
    }
    const QpStats& st = p.qp_a().stats();
    EXPECT_LE(refused, 40u) << "a refused packet was resent every round trip";
    EXPECT_GE(refused, 8u) << "the linear retries resend at once";
    EXPECT_GE(st.nacks_deferred, 1u);
    if (retry_exp == 25) {
      EXPECT_GE(st.timeouts, 3u) << "the ACK timeout resends it";
      EXPECT_EQ(p.qp_a().state(), QpState::rts);
      EXPECT_FALSE(p.completed(1));
    } else {
      ASSERT_TRUE(p.completed(1));
      EXPECT_EQ(p.send_completion(1)->status, WcStatus::retry_exc_err);
    }
  }
}

}  // namespace
}  // namespace mrc::core
