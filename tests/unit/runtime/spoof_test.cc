// SPDX-License-Identifier: BSD-2-Clause
// Spoofed packets against two software devices over loopback sockets while
// a real transfer runs: forged fatal NAKs and NACKs, WRITEs with a wrong
// rkey sent with the peer's address, and WRITEs whose dma_length their
// packets contradict. The forger knows the QPNs and the initial PSN (more
// than a blind attacker does) and injects datagrams with correct ICRCs from
// the peer's address and EV port (rt::Device::inject_datagram: the same
// source, ICRC and port checks as a socket). Bounded by wall-clock
// deadlines; verdicts from completions, bytes and counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "device_fixture.hpp"
#include "runtime/device.hpp"
#include "util/prng.hpp"
#include "wire/framing.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"
#include "wire/psn.hpp"

namespace mrc::rt {
namespace {

using fixture::Clock;

constexpr uint16_t kPort = 24791;
constexpr uint16_t kEvBase = 28000;

DeviceConfig config(int net, int host, bool confirm_fatal) {
  DeviceConfig c;
  const std::string p = "127.0." + std::to_string(net) + ".";
  c.planes = {p + std::to_string(host), p + std::to_string(host + 2)};
  c.udp_port = kPort;
  c.ev_port_base = kEvBase;
  c.evs_per_plane = 4;
  c.seed = 5;
  c.watch_carrier = false;
  c.protocol.confirm_fatal = confirm_fatal;
  return c;
}

/// Two devices with a connected QP pair (A sends to B), 1 MiB buffers each.
struct Pair {
  fixture::Endpoint a, b;
  uint32_t psn_a = 0, psn_b = 0;

  explicit Pair(int net, bool confirm_fatal = true, core::SecureMode secure = core::SecureMode::off) {
    a.dev = fixture::open_device(config(net, 1, confirm_fatal));
    b.dev = fixture::open_device(config(net, 2, confirm_fatal));
    if (!a.dev || !b.dev) return;
    fixture::create_resources(a, 1 << 20);
    fixture::create_resources(b, 1 << 20);
    psn_a = a.dev->random_psn();
    psn_b = b.dev->random_psn();
    std::vector<platform::SockAddr> pa{a.dev->plane_address(0), a.dev->plane_address(1)};
    std::vector<platform::SockAddr> pb{b.dev->plane_address(0), b.dev->plane_address(1)};
    if (secure == core::SecureMode::off) {
      fixture::connect_qp(a, pb, b.qpn, psn_a, psn_b);
      fixture::connect_qp(b, pa, a.qpn, psn_b, psn_a);
      return;
    }
    // A sends under key 0x11.., B under 0x22..
    core::QpSecure sa, sb;
    sa.mode = sb.mode = secure;
    sa.send.key.fill(0x11);
    sb.send.key.fill(0x22);
    sa.send.key_len = sb.send.key_len = 16;
    sa.send.salt = 1;
    sb.send.salt = 2;
    sa.recv = sb.send;
    sb.recv = sa.send;
    fixture::connect_qp(a, pb, b.qpn, psn_a, psn_b, std::nullopt, &sa);
    fixture::connect_qp(b, pa, a.qpn, psn_b, psn_a, std::nullopt, &sb);
  }
  bool ok() const { return a.dev && b.dev; }

  /// Hands `to` a datagram of `h` + `payload` from `from`'s plane 0 (its
  /// first EV port), with a correct ICRC.
  void forge(fixture::Endpoint& to, fixture::Endpoint& from, const wire::Headers& h,
             const std::vector<uint8_t>& payload = {}) {
    std::vector<uint8_t> pkt(wire::kMaxHeaderBytes);
    pkt.resize(wire::encode(h, pkt).value());
    const size_t hlen = pkt.size();
    pkt.insert(pkt.end(), payload.begin(), payload.end());
    platform::SockAddr src = from.dev->plane_address(0);
    src.set_port(kEvBase);
    const platform::SockAddr dst = to.dev->plane_address(0);
    wire::FrameFormat fmt;
    fmt.ip = wire::IpVersion::v4;
    fmt.udp_dport = kPort;
    wire::FrameFields f;
    std::memcpy(f.src.data(), src.address_bytes().data(), src.address_bytes().size());
    std::memcpy(f.dst.data(), dst.address_bytes().data(), dst.address_bytes().size());
    f.ev = src.port();
    const auto crc = wire::datagram_icrc(fmt, f, std::span<const uint8_t>(pkt.data(), hlen),
                                         std::span<const uint8_t>(pkt.data() + hlen, pkt.size() - hlen));
    ASSERT_TRUE(crc.ok());
    uint8_t c[4];
    wire::put_icrc(*crc, c);
    pkt.insert(pkt.end(), c, c + 4);
    ASSERT_TRUE(to.dev->inject_datagram(0, src, pkt).ok());
  }

  /// 16 WRITEs of 64 KiB (256 PSNs of 4 KiB) from A to B, posted at once.
  static constexpr uint32_t kWrites = 16, kWriteBytes = 64 * 1024;
  static constexpr uint32_t kPsns = kWrites * kWriteBytes / 4096;
  void post_writes() {
    fixture::fill(a.mem, 3);
    for (uint32_t i = 0; i < kWrites; ++i)
      ASSERT_TRUE(a.dev->post_send(a.qpn, fixture::write(a, b, uint64_t{i} * kWriteBytes, kWriteBytes, i)).ok());
  }

  /// Polls A's CQ until every WRITE completed (or 20 s passed), calling
  /// `attack` between polls; the completions.
  template <class F>
  std::vector<core::WorkCompletion> run(F&& attack) {
    std::vector<core::WorkCompletion> out;
    const auto end = Clock::now() + std::chrono::seconds(20);
    core::WorkCompletion wc[16];
    while (out.size() < kWrites && Clock::now() < end) {
      attack();
      const size_t k = a.cq->poll(wc);
      out.insert(out.end(), wc, wc + k);
    }
    return out;
  }
  bool data_arrived() const { return std::memcmp(a.mem.data(), b.mem.data(), kWrites * kWriteBytes) == 0; }
};

/// A forged fatal NAK (AETH remote access error) and NACK (UNEXP_EVENT, a
/// random timestamp) for every PSN of the transfer.
void forge_fatal_feedback(Pair& p, Prng& rng) {
  for (uint32_t i = 0; i < Pair::kPsns; ++i) {
    const uint32_t psn = (p.psn_a + i) & wire::kPsnMask;
    wire::Headers h;
    h.bth.dest_qp = p.a.qpn;
    h.bth.psn = psn;
    h.bth.opcode = static_cast<uint8_t>(wire::Opcode::ack);
    h.aeth.syndrome = wire::aeth::kNakRemoteAccess;
    p.forge(p.a, p.b, h);
    h.bth.opcode = static_cast<uint8_t>(wire::Opcode::nack);
    h.neth.reason = static_cast<uint8_t>(wire::NackCode::unexp_event);
    h.neth.nack_psn = psn;
    h.neth.reflected_ts = static_cast<uint16_t>(rng.next_u64());
    p.forge(p.a, p.b, h);
  }
}

TEST(DeviceSpoof, ForgedFatalNaksAndNacksDoNotEndAConnection) {
  Pair p(81);
  ASSERT_TRUE(p.ok());
  p.post_writes();
  Prng rng(17);
  const auto done = p.run([&] { forge_fatal_feedback(p, rng); });
  ASSERT_EQ(done.size(), Pair::kWrites);
  for (const auto& wc : done) EXPECT_EQ(wc.status, core::WcStatus::success) << "WR " << wc.wr_id;
  EXPECT_TRUE(p.data_arrived());
  const DeviceStats s = p.a.dev->stats();
  EXPECT_GT(s.core.rx_nak_unconfirmed, 0u);
}

TEST(DeviceSpoof, SpoofedBadKeyWritesDoNotMakeTheResponderEndTheConnection) {
  // WRITEs to B from A's address, with B's QPN, PSNs of the transfer and a
  // wrong rkey: B refuses each, and its answers echo stamps A never sent.
  // One round before the transfer starts (every PSN is then still to come,
  // so each is refused, however fast the transfer runs), then on and on
  // while it runs.
  Pair p(82);
  ASSERT_TRUE(p.ok());
  Prng rng(19);
  const std::vector<uint8_t> junk(256, 0xEE);
  auto attack = [&] {
    for (uint32_t i = 0; i < Pair::kPsns; ++i) {
      wire::Headers h;
      h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_only);
      h.bth.dest_qp = p.b.qpn;
      h.bth.psn = (p.psn_a + i) & wire::kPsnMask;
      h.bth.ts = true;
      h.tseth.timestamp = static_cast<uint16_t>(rng.next_u64());
      h.reth.va = reinterpret_cast<uint64_t>(p.b.mem.data());
      h.reth.rkey = p.b.mr.rkey ^ static_cast<uint32_t>(rng.next_u64() | 1);
      h.reth.dma_length = static_cast<uint32_t>(junk.size());
      p.forge(p.b, p.a, h, junk);
    }
  };
  attack();
  EXPECT_EQ(p.b.dev->stats().core.rx_access_errors, Pair::kPsns);
  p.post_writes();
  const auto done = p.run(attack);
  ASSERT_EQ(done.size(), Pair::kWrites);
  for (const auto& wc : done) EXPECT_EQ(wc.status, core::WcStatus::success) << "WR " << wc.wr_id;
  EXPECT_TRUE(p.data_arrived());
  auto q = p.b.dev->query_qp(p.b.qpn);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->state, core::QpState::rts);
}

TEST(DeviceSpoof, AWriteWhoseDmaLengthItsPacketContradictsPlacesNothing) {
  Pair p(83);
  ASSERT_TRUE(p.ok());
  // With the right rkey and the next PSN B expects: a WRITE_ONLY of 64
  // bytes that claims 128, and a WRITE_FIRST whose whole length runs past
  // the region's end.
  const std::vector<uint8_t> junk(4096, 0xEE);
  wire::Headers h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_only);
  h.bth.dest_qp = p.b.qpn;
  h.bth.psn = p.psn_a;
  h.bth.ts = true;
  h.reth.va = reinterpret_cast<uint64_t>(p.b.mem.data());
  h.reth.rkey = p.b.mr.rkey;
  h.reth.dma_length = 128;
  p.forge(p.b, p.a, h, std::vector<uint8_t>(junk.begin(), junk.begin() + 64));
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_first);
  h.reth.va = reinterpret_cast<uint64_t>(p.b.mem.data()) + p.b.mem.size() - 8192;
  h.reth.dma_length = 3 * 4096;
  p.forge(p.b, p.a, h, junk);
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (p.b.dev->stats().core.rx_access_errors < 2 && Clock::now() < end) {
  }
  EXPECT_EQ(p.b.dev->stats().core.rx_access_errors, 2u);
  EXPECT_EQ(std::count(p.b.mem.begin(), p.b.mem.end(), 0xEE), 0) << "not one byte placed";

  // A genuine WRITE past the region's end: REM_ACCESS_ERR, after the
  // responder confirmed it.
  core::SendWr wr = fixture::write(p.a, p.b, 0, 3 * 4096, 99);
  wr.remote_addr = reinterpret_cast<uint64_t>(p.b.mem.data()) + p.b.mem.size() - 8192;
  ASSERT_TRUE(p.a.dev->post_send(p.a.qpn, wr).ok());
  const auto wcs = fixture::wait_until(p.a.cq, 1, Clock::now() + std::chrono::seconds(10), fixture::Idle::yield);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, core::WcStatus::rem_access_err);
  EXPECT_EQ(std::count(p.b.mem.begin(), p.b.mem.end(), 0xEE), 0);
}

TEST(DeviceSpoof, SecureQpsRefuseEveryForgeryEvenWithoutConfirmation) {
  // The reference's fatal-error handling (confirm_fatal off), which a
  // forged NAK or a bad-key WRITE kills, but secure QPs: forged fatal
  // feedback to A, bad-key WRITEs and WRITEs with the right rkey and PSNs
  // ahead of A to B. Every one is refused before the core reads more than
  // its headers; the transfer completes intact.
  for (core::SecureMode mode : {core::SecureMode::integrity, core::SecureMode::encrypt}) {
    Pair p(mode == core::SecureMode::integrity ? 84 : 85, false, mode);
    ASSERT_TRUE(p.ok());
    Prng rng(23);
    const std::vector<uint8_t> junk(4096, 0xEE);
    auto attack = [&] {
      forge_fatal_feedback(p, rng);
      for (uint32_t i = 0; i < Pair::kPsns; i += 8) {
        wire::Headers h;
        h.bth.opcode = static_cast<uint8_t>(wire::Opcode::write_only);
        h.bth.dest_qp = p.b.qpn;
        h.bth.psn = (p.psn_a + i) & wire::kPsnMask;
        h.bth.ts = true;
        h.reth.va = reinterpret_cast<uint64_t>(p.b.mem.data()) + uint64_t{i} * 4096;
        h.reth.rkey = p.b.mr.rkey ^ (i % 16 == 0 ? 0x5A5Au : 0u);  // a wrong key, or the right one
        h.reth.dma_length = 4096;
        p.forge(p.b, p.a, h, junk);
      }
    };
    attack();
    p.post_writes();
    const auto done = p.run(attack);
    ASSERT_EQ(done.size(), Pair::kWrites);
    for (const auto& wc : done) EXPECT_EQ(wc.status, core::WcStatus::success) << "WR " << wc.wr_id;
    EXPECT_TRUE(p.data_arrived()) << "every byte A's (none forged)";
    const DeviceStats sa = p.a.dev->stats(), sb = p.b.dev->stats();
    EXPECT_GE(sa.core.rx_auth_failures, 2u * Pair::kPsns);
    EXPECT_GE(sb.core.rx_auth_failures, Pair::kPsns / 8);
    EXPECT_EQ(sb.core.rx_access_errors, 0u) << "no forged WRITE got as far as its rkey";
    EXPECT_EQ(sa.core.rx_nak_unconfirmed, 0u);
    for (fixture::Endpoint* e : {&p.a, &p.b}) {
      auto q = e->dev->query_qp(e->qpn);
      ASSERT_TRUE(q.has_value());
      EXPECT_EQ(q->state, core::QpState::rts);
      EXPECT_EQ(q->attr.secure.mode, mode);
    }
  }
}

}  // namespace
}  // namespace mrc::rt
