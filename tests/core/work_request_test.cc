// SPDX-License-Identifier: BSD-2-Clause
// Claims about what a driver hands the core and gets back: gather lists and
// inline data arrive byte for byte (MRC and RoCE RC), malformed work
// requests are refused without side effects, completion queues are bounded
// and report an overflow once, destroying a QP flushes its work, and
// queries return plain values.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <cstring>
#include <vector>

#include "core/test_fabric.hpp"

namespace mrc {
namespace {

using harness::Fabric;
using testing::at_ms;

void fill(Fabric::Buffer& b, uint8_t seed) {
  for (size_t i = 0; i < b.mem.size(); ++i) b.mem[i] = static_cast<uint8_t>(i * 131 + seed);
}

/// Runs until `host` has `n` completions on its CQ; returns them.
std::vector<core::WorkCompletion> wait_completions(Fabric& f, int host, size_t n) {
  std::vector<core::WorkCompletion> out;
  f.run_until(
      [&] {
        core::WorkCompletion wc;
        while (f.ep(host).poll_cq(f.cq(host), {&wc, 1})) out.push_back(wc);
        return out.size() >= n;
      },
      at_ms(50));
  return out;
}

class GatherTest : public ::testing::TestWithParam<core::Transport> {};

TEST_P(GatherTest, AGatherListArrivesAsTheConcatenationOfItsElements) {
  Fabric f(testing::small_fabric());
  harness::QpOptions o = testing::default_qp();
  o.init.transport = GetParam();
  o.attr.path_mtu = 1024;  // packets straddle element boundaries
  const harness::QpPair qp = f.connect(0, 1, o);
  Fabric::Buffer& s1 = f.alloc(0, 5000);
  Fabric::Buffer& s2 = f.alloc(0, 3000);  // a second region: elements may name any
  Fabric::Buffer& dst = f.alloc(1, 16384);
  fill(s1, 1);
  fill(s2, 2);
  // Odd sizes and offsets, a zero-length element, the same region twice.
  const std::array<core::Sge, 6> sg{{{s1.addr() + 7, 1500, s1.mr.lkey},
                                     {s2.addr(), 10, s2.mr.lkey},
                                     {s1.addr(), 0, s1.mr.lkey},
                                     {s2.addr() + 100, 2900, s2.mr.lkey},
                                     {s1.addr() + 4000, 1000, s1.mr.lkey},
                                     {s1.addr() + 1, 3, s1.mr.lkey}}};
  std::vector<uint8_t> want;
  for (const core::Sge& e : sg) {
    const auto* p = reinterpret_cast<const uint8_t*>(e.addr);
    want.insert(want.end(), p, p + e.length);
  }
  core::SendWr wr;
  wr.wr_id = 42;
  wr.opcode = core::WrOpcode::rdma_write_with_imm;
  wr.imm = 7;
  wr.sg_list = sg;
  wr.remote_addr = dst.addr() + 64;
  wr.rkey = dst.mr.rkey;
  ASSERT_TRUE(f.ep(1).post_recv(qp.b, core::RecvWr{9}).ok());
  ASSERT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  f.kick(0);
  const auto wcs = wait_completions(f, 0, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, core::WcStatus::success);
  EXPECT_EQ(wcs[0].byte_len, want.size());
  ASSERT_EQ(0, std::memcmp(dst.mem.data() + 64, want.data(), want.size()));
  EXPECT_EQ(dst.mem[63], 0);
  EXPECT_EQ(dst.mem[64 + want.size()], 0);
  const auto rwc = wait_completions(f, 1, 1);
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].byte_len, want.size());
  EXPECT_EQ(rwc[0].imm, 7u);
  // The completion released every element's region.
  EXPECT_TRUE(f.ep(0).dereg_mr(s2.mr.lkey).ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, GatherTest, ::testing::Values(core::Transport::mrc, core::Transport::roce_rc),
                         [](const auto& p) { return std::string(core::to_string(p.param)); });

TEST(InlineData, IsCopiedAtPostSoTheBufferMayBeReusedAtOnce) {
  Fabric f(testing::small_fabric());
  const harness::QpPair qp = f.connect(0, 1, testing::default_qp());
  Fabric::Buffer& dst = f.alloc(1, 4096);
  std::array<uint8_t, core::kMaxInlineData> buf;
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(0xA0 ^ i);
  const std::array<uint8_t, core::kMaxInlineData> want = buf;
  core::SendWr wr;
  wr.wr_id = 1;
  wr.inline_data = buf;
  wr.remote_addr = dst.addr();
  wr.rkey = dst.mr.rkey;
  ASSERT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  buf.fill(0xEE);  // the application reuses its buffer before anything left
  f.kick(0);
  const auto wcs = wait_completions(f, 0, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, core::WcStatus::success);
  EXPECT_EQ(0, std::memcmp(dst.mem.data(), want.data(), want.size()));
}

TEST(WorkRequests, MalformedOnesAreRefusedWithNothingQueuedOrHeld) {
  Fabric f(testing::small_fabric());
  const harness::QpPair qp = f.connect(0, 1, testing::default_qp());
  Fabric::Buffer& src = f.alloc(0, 4096);
  Fabric::Buffer& dst = f.alloc(1, 4096);
  core::SendWr base;
  base.remote_addr = dst.addr();
  base.rkey = dst.mr.rkey;
  const std::array<uint8_t, core::kMaxInlineData + 1> big{};
  std::vector<core::Sge> many(core::kMaxSge + 1, core::Sge{src.addr(), 1, src.mr.lkey});
  const core::Sge one{src.addr(), 8, src.mr.lkey};

  core::SendWr w = base;
  w.inline_data = big;  // over the inline limit
  EXPECT_EQ(f.ep(0).post_send(f.now(), qp.a, w).error(), Errc::invalid_argument);
  w = base;
  w.sg_list = many;  // over kMaxSge
  EXPECT_EQ(f.ep(0).post_send(f.now(), qp.a, w).error(), Errc::invalid_argument);
  w = base;
  w.sg_list = {&one, 1};
  w.local_addr = src.addr();  // two source forms at once
  w.length = 8;
  w.lkey = src.mr.lkey;
  EXPECT_EQ(f.ep(0).post_send(f.now(), qp.a, w).error(), Errc::invalid_argument);
  w = base;
  w.sg_list = {&one, 1};
  w.inline_data = {big.data(), 4};
  EXPECT_EQ(f.ep(0).post_send(f.now(), qp.a, w).error(), Errc::invalid_argument);
  EXPECT_EQ(f.ep(0).query_qp(qp.a)->send_queued, 0u);
  EXPECT_TRUE(f.next_event(0) == std::nullopt) << "a refused WR completes nothing";
  EXPECT_EQ(f.ep(0).query_qp(qp.a)->state, core::QpState::rts);
}

TEST(WorkRequests, AGatherElementOutsideItsRegionFailsTheWrAndHoldsNoRegion) {
  Fabric f(testing::small_fabric());
  const harness::QpPair qp = f.connect(0, 1, testing::default_qp());
  Fabric::Buffer& src = f.alloc(0, 4096);
  Fabric::Buffer& other = f.alloc(0, 4096);
  Fabric::Buffer& dst = f.alloc(1, 4096);
  const std::array<core::Sge, 3> sg{{{src.addr(), 100, src.mr.lkey},
                                     {other.addr(), 100, other.mr.lkey},
                                     {src.addr() + 4000, 200, src.mr.lkey}}};  // leaves the region
  core::SendWr wr;
  wr.wr_id = 5;
  wr.sg_list = sg;
  wr.remote_addr = dst.addr();
  wr.rkey = dst.mr.rkey;
  ASSERT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  const auto wcs = wait_completions(f, 0, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, core::WcStatus::loc_prot_err);
  EXPECT_EQ(f.ep(0).query_qp(qp.a)->state, core::QpState::error);
  // Nothing kept a reference: both regions deregister.
  EXPECT_TRUE(f.ep(0).dereg_mr(other.mr.lkey).ok());
  EXPECT_TRUE(f.ep(0).dereg_mr(src.mr.lkey).ok());
}

TEST(CompletionQueues, AnOverflowLosesTheExcessAndIsReportedOnce) {
  Fabric f(testing::small_fabric());
  Fabric::Buffer& src = f.alloc(0, 4096);
  Fabric::Buffer& dst = f.alloc(1, 4096);
  // A QP whose send CQ holds two completions, in ERROR so that every WR
  // posted completes (flushed) at once.
  const uint32_t small_cq = f.ep(0).create_cq(2).value();
  core::QpInit init;
  init.send_cq = small_cq;
  init.recv_cq = f.cq(0);
  auto q = f.ep(0).create_qp(init);
  ASSERT_TRUE(q.ok());
  core::QpAttr a;
  a.state = core::QpState::init;
  ASSERT_TRUE(f.ep(0).modify_qp(f.now(), *q, a, core::qp_attr::kState).ok());
  a.state = core::QpState::error;
  ASSERT_TRUE(f.ep(0).modify_qp(f.now(), *q, a, core::qp_attr::kState).ok());
  for (uint64_t id = 0; id < 5; ++id) {
    core::SendWr wr;
    wr.wr_id = id;
    wr.local_addr = src.addr();
    wr.lkey = src.mr.lkey;
    wr.length = 16;
    wr.remote_addr = dst.addr();
    wr.rkey = dst.mr.rkey;
    ASSERT_TRUE(f.ep(0).post_send(f.now(), *q, wr).ok());
  }
  const auto info = f.ep(0).cq_info(small_cq);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->capacity, 2u);
  EXPECT_EQ(info->size, 2u);
  EXPECT_EQ(info->overflows, 3u);
  int errors = 0;
  while (auto e = f.ep(0).poll_event())
    if (auto* ce = std::get_if<core::CqErrorEvent>(&*e)) {
      EXPECT_EQ(ce->cq, small_cq);
      ++errors;
    }
  EXPECT_EQ(errors, 1) << "IBV_EVENT_CQ_ERR once per CQ";
  std::array<core::WorkCompletion, 8> wcs;
  ASSERT_EQ(f.ep(0).poll_cq(small_cq, wcs), 2u);
  EXPECT_EQ(wcs[0].wr_id, 0u);
  EXPECT_EQ(wcs[1].wr_id, 1u);
  EXPECT_EQ(wcs[0].status, core::WcStatus::wr_flush_err);
  EXPECT_EQ(f.ep(0).cq_info(f.cq(0))->overflows, 0u) << "other CQs are untouched";
}

TEST(CompletionQueues, CreateAndDestroyFollowTheirErrorContract) {
  Fabric f(testing::small_fabric());
  EXPECT_EQ(f.ep(0).create_cq(0).error(), Errc::invalid_argument);
  EXPECT_EQ(f.ep(0).create_cq(core::Endpoint::kMaxCqe + 1).error(), Errc::invalid_argument);
  const harness::QpPair qp = f.connect(0, 1, testing::default_qp());
  EXPECT_EQ(f.ep(0).destroy_cq(f.cq(0)).error(), Errc::busy) << "a QP names it";
  EXPECT_EQ(f.ep(0).destroy_cq(12345).error(), Errc::not_found);
  core::QpInit init;
  init.send_cq = 999;
  EXPECT_EQ(f.ep(0).create_qp(init).error(), Errc::not_found);
  const uint32_t spare = f.ep(0).create_cq(8).value();
  EXPECT_TRUE(f.ep(0).destroy_cq(spare).ok());
  EXPECT_FALSE(f.ep(0).cq_info(spare).has_value());
  ASSERT_TRUE(f.ep(0).destroy_qp(qp.a).ok());
  EXPECT_TRUE(f.ep(0).destroy_cq(f.cq(0)).ok()) << "its last QP is gone";
}

TEST(DestroyQp, FlushesOutstandingWorkBeforeTheQpGoes) {
  Fabric f(testing::small_fabric());
  const harness::QpPair qp = f.connect(0, 1, testing::default_qp());
  Fabric::Buffer& src = f.alloc(0, 1 << 20);
  Fabric::Buffer& dst = f.alloc(1, 1 << 20);
  for (uint64_t id = 0; id < 4; ++id) {
    core::SendWr wr;
    wr.wr_id = 100 + id;
    wr.local_addr = src.addr();
    wr.lkey = src.mr.lkey;
    wr.length = 1 << 18;
    wr.remote_addr = dst.addr();
    wr.rkey = dst.mr.rkey;
    ASSERT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  }
  ASSERT_TRUE(f.ep(0).post_recv(qp.a, core::RecvWr{7}).ok());
  f.kick(0);
  f.run_until(at_ms(0) + Duration::us(3));  // some packets out, nothing complete
  ASSERT_EQ(f.ep(0).dereg_mr(src.mr.lkey).error(), Errc::busy);
  ASSERT_TRUE(f.ep(0).destroy_qp(qp.a).ok());
  std::vector<core::WorkCompletion> flushed;
  core::WorkCompletion wc;
  while (f.ep(0).poll_cq(f.cq(0), {&wc, 1})) flushed.push_back(wc);
  ASSERT_EQ(flushed.size(), 5u);
  for (const auto& w : flushed) EXPECT_EQ(w.status, core::WcStatus::wr_flush_err);
  EXPECT_EQ(flushed[0].wr_id, 100u);
  EXPECT_EQ(flushed[4].wr_id, 7u);
  EXPECT_EQ(flushed[4].opcode, core::WcOpcode::recv_rdma_with_imm);
  EXPECT_TRUE(f.ep(0).dereg_mr(src.mr.lkey).ok()) << "the flushed WRs released their region";
  EXPECT_FALSE(f.ep(0).query_qp(qp.a).has_value());
}

TEST(Queries, ReturnPlainValuesOfTheQpAndItsEvs) {
  Fabric f(testing::small_fabric());
  const harness::QpPair qp = f.connect(0, 1, testing::default_qp());
  ASSERT_TRUE(harness::write_and_wait(f, qp, 0, 1, 1 << 16, at_ms(10)).completed);
  const auto info = f.ep(0).query_qp(qp.a);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->qpn, qp.a);
  EXPECT_EQ(info->state, core::QpState::rts);
  EXPECT_EQ(info->peer, 1u);
  EXPECT_EQ(info->init.send_cq, f.cq(0));
  EXPECT_GE(info->stats.bytes_acked, uint64_t{1} << 16);
  EXPECT_GT(info->srtt.count_ps(), 0);
  EXPECT_GT(info->evs, 0u);
  EXPECT_EQ(info->evs_good, info->evs) << "no EV lost anything on a clean fabric";
  EXPECT_GT(info->cwnd_bytes, 0u);
  std::vector<core::EvInfo> evs(info->evs);
  EXPECT_EQ(f.ep(0).query_evs(qp.a, evs), info->evs);
  uint64_t sent = 0;
  for (const auto& e : evs) {
    EXPECT_LT(e.port, 4);
    sent += e.packets_sent;
  }
  EXPECT_EQ(sent, info->stats.data_packets_sent + info->stats.retransmissions + info->stats.probes_sent);
  std::array<core::EvInfo, 2> two;
  EXPECT_EQ(f.ep(0).query_evs(qp.a, two), info->evs) << "the count tells a short array how much to grow";
  EXPECT_FALSE(f.ep(0).query_qp(0xABCDEF).has_value());
}

// The software device's burst mode: k consecutive packets on one EV, then
// a fresh pick; k = 1 sprays every packet.
// A new QP from host 0 to host 1 with one WRITE of `packets` 4 KiB packets
// posted; its requester QPN.
uint32_t connect_and_write(Fabric& f, uint32_t packets) {
  const harness::QpPair qp = f.connect(0, 1, testing::default_qp());
  Fabric::Buffer& src = f.alloc(0, packets * 4096);
  Fabric::Buffer& dst = f.alloc(1, packets * 4096);
  core::SendWr wr;
  wr.local_addr = src.addr();
  wr.lkey = src.mr.lkey;
  wr.length = packets * 4096;
  wr.remote_addr = dst.addr();
  wr.rkey = dst.mr.rkey;
  EXPECT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  return qp.a;
}

std::vector<uint32_t> data_evs(uint32_t burst, uint32_t burst_bytes = 0, std::vector<bool>* burst_more = nullptr) {
  harness::FabricConfig fc = testing::small_fabric();
  fc.endpoint.protocol.ev_burst = burst;
  fc.endpoint.protocol.ev_burst_bytes = burst_bytes;
  Fabric f(fc);
  connect_and_write(f, 64);
  std::vector<uint32_t> evs;
  uint8_t hdr[wire::kMaxHeaderBytes];
  while (evs.size() < 32) {
    auto tx = f.ep(0).poll_transmit(f.now(), 0xF, hdr);
    if (!tx) break;
    if (tx->payload_len > 0) {
      evs.push_back(tx->entropy);
      if (burst_more) burst_more->push_back(tx->burst_more);
    }
  }
  return evs;
}

TEST(Spraying, ABurstKeepsOneEvForKPacketsThenPicksAgain) {
  std::vector<bool> more;
  const std::vector<uint32_t> evs = data_evs(4, 0, &more);
  ASSERT_GE(evs.size(), 16u);
  for (size_t i = 0; i + 4 <= evs.size(); i += 4) {
    for (size_t j = 1; j < 4; ++j) EXPECT_EQ(evs[i + j], evs[i]) << "packet " << i + j;
    // Each packet says whether the burst goes on, so a driver's batch can
    // end with it rather than split it over two datagrams.
    for (size_t j = 0; j < 4; ++j) EXPECT_EQ(more[i + j], j < 3) << "packet " << i + j;
    if (i + 4 < evs.size()) {
      EXPECT_NE(evs[i + 4], evs[i]) << "the next burst sprays elsewhere";
    }
  }
  more.clear();
  const std::vector<uint32_t> single = data_evs(1, 0, &more);
  ASSERT_GE(single.size(), 16u);
  for (size_t i = 1; i < single.size(); ++i) EXPECT_NE(single[i], single[i - 1]);
  for (size_t i = 0; i < more.size(); ++i) EXPECT_FALSE(more[i]) << "packet " << i;
}

// A burst also stops where its packets would no longer fit the device's
// GSO super-packet (ev_burst_bytes, at the QP's 4 KiB MTU with the largest
// headers and the ICRC): 16 asked for, 5 fit.
TEST(Spraying, ABurstEndsWhereItsBytesWouldExceedTheLimit) {
  const uint32_t per_packet = 4096 + static_cast<uint32_t>(wire::kMaxPlainHeaderBytes) + 4;
  for (const uint32_t bytes : {5 * per_packet, 6 * per_packet - 1}) {
    const std::vector<uint32_t> evs = data_evs(16, bytes);
    ASSERT_GE(evs.size(), 30u);
    for (size_t i = 0; i + 5 <= evs.size(); i += 5) {
      for (size_t j = 1; j < 5; ++j) EXPECT_EQ(evs[i + j], evs[i]) << "packet " << i + j << ", limit " << bytes;
      if (i + 5 < evs.size()) {
        EXPECT_NE(evs[i + 5], evs[i]) << "packet " << i + 5 << ", limit " << bytes;
      }
    }
  }
  // A limit below one packet still sends (bursts of one).
  const std::vector<uint32_t> one = data_evs(16, 100);
  ASSERT_GE(one.size(), 16u);
  for (size_t i = 1; i < one.size(); ++i) EXPECT_NE(one[i], one[i - 1]);
}

// Two QPs with data to send take turns burst by burst, not packet by packet:
// a burst's packets leave side by side, so a driver sends them as one GSO
// super-packet in the core's order, with nothing to regroup.
TEST(Spraying, AQpWhoseBurstGoesOnKeepsItsTurn) {
  harness::FabricConfig fc = testing::small_fabric();
  fc.endpoint.protocol.ev_burst = 4;
  Fabric f(fc);
  for (int i = 0; i < 2; ++i) connect_and_write(f, 32);
  // Which QP each data packet came from: its destination QP on the peer.
  std::vector<uint32_t> dest;
  std::vector<bool> more;
  uint8_t hdr[wire::kMaxHeaderBytes];
  while (dest.size() < 32) {
    auto tx = f.ep(0).poll_transmit(f.now(), 0xF, hdr);
    if (!tx) break;
    if (tx->payload_len == 0) continue;
    auto p = wire::parse(std::span<const uint8_t>(hdr, tx->header_len));
    ASSERT_TRUE(p.ok());
    dest.push_back(p->h.bth.dest_qp);
    more.push_back(tx->burst_more);
  }
  ASSERT_GE(dest.size(), 16u);
  size_t switches = 0;
  for (size_t i = 1; i < dest.size(); ++i) {
    if (dest[i] == dest[i - 1]) continue;
    ++switches;
    EXPECT_FALSE(more[i - 1]) << "packet " << i << " cut the other QP's burst";
  }
  EXPECT_GE(switches, 3u) << "the QPs take turns";
}

// A NIC's port arbiter offers one port at a time, as each port's last
// packet leaves. Plain turns would tie each QP to the ports that free in
// its turn: with four QPs (two per peer) and the ports freeing in order,
// one peer's packets would all take ports 0-1 and the other's 2-3, and a
// destination's plane links would not finish together. The arbiter gives
// each free port to the first QP in turn whose peer has had the fewest
// packets on it.
std::array<std::array<uint32_t, 4>, 3> packets_per_peer_and_port(bool balance) {
  harness::FabricConfig fc = testing::small_fabric();
  fc.hosts = 3;
  fc.endpoint.balance_peer_ports = balance;
  Fabric f(fc);
  for (int peer : {1, 2, 1, 2}) {
    const harness::QpPair qp = f.connect(0, peer, testing::default_qp());
    Fabric::Buffer& src = f.alloc(0, 16 * 4096);
    Fabric::Buffer& dst = f.alloc(peer, 16 * 4096);
    core::SendWr wr;
    wr.local_addr = src.addr();
    wr.lkey = src.mr.lkey;
    wr.length = 16 * 4096;
    wr.remote_addr = dst.addr();
    wr.rkey = dst.mr.rkey;
    EXPECT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  }
  std::array<std::array<uint32_t, 4>, 3> sent{};
  uint8_t hdr[wire::kMaxHeaderBytes];
  for (uint32_t k = 0, data = 0; data < 32 && k < 1000; ++k) {
    auto tx = f.ep(0).poll_transmit(f.now(), 1u << (k % 4), hdr);
    if (!tx || tx->payload_len == 0) continue;
    ++sent[tx->peer][tx->port];
    ++data;
  }
  return sent;
}

TEST(Spraying, APortArbiterSpreadsEachPeersPacketsOverThePlanes) {
  const auto sent = packets_per_peer_and_port(true);
  for (int peer : {1, 2}) {
    const auto [lo, hi] = std::minmax_element(sent[peer].begin(), sent[peer].end());
    EXPECT_EQ(std::accumulate(sent[peer].begin(), sent[peer].end(), 0u), 16u) << "peer " << peer;
    EXPECT_LE(*hi - *lo, 1u) << "peer " << peer << ": " << sent[peer][0] << " " << sent[peer][1] << " "
                             << sent[peer][2] << " " << sent[peer][3];
  }
  // Plain turns, for contrast: the skew this test exists to catch.
  const auto plain = packets_per_peer_and_port(false);
  const auto [lo, hi] = std::minmax_element(plain[1].begin(), plain[1].end());
  EXPECT_GE(*hi - *lo, 4u) << "the port order no longer skews plain turns; the test above proves nothing";
}

TEST(PayloadSegments, WalkTheGatherListFromTheOffset) {
  std::array<uint8_t, 64> mem{};
  const std::array<core::Sge, 4> sg{{{reinterpret_cast<uint64_t>(mem.data()), 10, 0},
                                     {reinterpret_cast<uint64_t>(mem.data() + 20), 0, 0},
                                     {reinterpret_cast<uint64_t>(mem.data() + 30), 5, 0},
                                     {reinterpret_cast<uint64_t>(mem.data() + 40), 20, 0}}};
  core::Transmit tx;
  tx.gather = sg.data();
  tx.gather_count = 4;
  tx.gather_offset = 8;
  tx.payload_len = 10;
  std::array<core::PayloadSegment, core::kMaxSge> out;
  ASSERT_EQ(core::payload_segments(tx, out), 3u);
  EXPECT_EQ(out[0].data, mem.data() + 8);
  EXPECT_EQ(out[0].len, 2u);
  EXPECT_EQ(out[1].data, mem.data() + 30);
  EXPECT_EQ(out[1].len, 5u);
  EXPECT_EQ(out[2].data, mem.data() + 40);
  EXPECT_EQ(out[2].len, 3u);
  core::Transmit flat;
  flat.payload = mem.data();
  flat.payload_len = 4;
  ASSERT_EQ(core::payload_segments(flat, out), 1u);
  flat.payload_len = 0;
  EXPECT_EQ(core::payload_segments(flat, out), 0u);
}

}  // namespace
}  // namespace mrc

namespace mrc {
namespace {

// Sharding support for a device with several engines: QPNs carry the shard
// in their low bits (and stay unguessable above them), and a region can be
// registered in another endpoint under the same keys.
TEST(Sharding, QpnsCarryTheShardAndRegionsKeepTheirKeysAcrossEndpoints) {
  core::EndpointConfig c0, c1;
  c0.qpn_shard_bits = c1.qpn_shard_bits = 2;
  c0.qpn_shard = 1;
  c1.qpn_shard = 3;
  auto e0 = std::move(core::Endpoint::create(c0).value());
  auto e1 = std::move(core::Endpoint::create(c1).value());
  for (auto* e : {e0.get(), e1.get()}) ASSERT_TRUE(e->create_cq(16).ok());
  std::vector<uint32_t> q0;
  for (int i = 0; i < 20; ++i) q0.push_back(*e0->create_qp(core::QpInit{}));
  for (uint32_t q : q0) {
    EXPECT_EQ(q & 3u, 1u);
    EXPECT_GE(q, core::Endpoint::kFirstQpn);
    EXPECT_TRUE(e0->query_qp(q).has_value());
  }
  EXPECT_EQ(*e1->create_qp(core::QpInit{}) & 3u, 3u);
  ASSERT_TRUE(e0->destroy_qp(q0[3]).ok());
  EXPECT_FALSE(e0->query_qp(q0[3]).has_value());
  EXPECT_TRUE(e0->query_qp(q0[4]).has_value());
  // Same keys in both endpoints; a second registration under used keys is refused.
  const core::MemoryRegion mr = *e0->reg_mr(0x10000, 4096, core::access::kRemoteWrite, false);
  const auto copy = e1->reg_mr_as(mr);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->lkey, mr.lkey);
  EXPECT_EQ(copy->rkey, mr.rkey);
  EXPECT_EQ(e1->reg_mr_as(mr).error(), Errc::busy);
  core::EndpointConfig bad;
  bad.qpn_shard_bits = 2;
  bad.qpn_shard = 4;
  std::string why;
  EXPECT_FALSE(core::Endpoint::create(bad, &why).ok());
  EXPECT_NE(why.find("qpn_shard"), std::string::npos);
}

// core::EndpointIds gives what an endpoint made from the same configuration
// gives its peers, called in the same order, without the endpoint: memory
// keys, QPNs (shard bits included) and initial PSNs, interleaved as a
// driver interleaves them.
TEST(Sharding, EndpointIdsDrawWhatTheEndpointDraws) {
  core::EndpointConfig cfg;
  cfg.seed = 0x5eed;
  cfg.qpn_shard_bits = 2;
  cfg.qpn_shard = 1;
  auto ep = std::move(core::Endpoint::create(cfg).value());
  ASSERT_TRUE(ep->create_cq(16).ok());
  core::EndpointIds ids(cfg);
  const core::MemoryRegion mr = *ep->reg_mr(0x10000, 4096, core::access::kRemoteWrite, false);
  const core::MemoryRegion drawn = *ids.reg_mr(0x10000, 4096, core::access::kRemoteWrite, false);
  EXPECT_EQ(drawn.lkey, mr.lkey);
  EXPECT_EQ(drawn.rkey, mr.rkey);
  for (int i = 0; i < 40; ++i) {
    const uint32_t qpn = *ep->create_qp(core::QpInit{});
    EXPECT_EQ(ids.create_qp(), qpn) << "QP " << i;
    EXPECT_EQ(qpn & 3u, 1u);
    if (i % 3 == 0) {
      EXPECT_EQ(ids.random_psn(), ep->random_psn()) << "QP " << i;
    }
  }
  // Another seed draws other numbers.
  cfg.seed = 0x5eee;
  core::EndpointIds other(cfg);
  (void)other.reg_mr(0x10000, 4096, core::access::kRemoteWrite, false);
  EXPECT_NE(other.create_qp(), *ep->create_qp(core::QpInit{}));
}

}  // namespace
}  // namespace mrc
