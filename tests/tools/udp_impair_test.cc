// SPDX-License-Identifier: BSD-2-Clause
// Tests for tools/udp-impair: each impairment does what it claims, on real
// loopback sockets with the forwarder running on a thread. Bounded: every
// wait is a poll with a timeout and an overall deadline.
#include "udp-impair/impair.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "platform/clock.hpp"
#include "platform/epoll.hpp"
#include "platform/os_error.hpp"
#include "platform/udp_socket.hpp"
#include "wire/framing.hpp"
#include "wire/icrc.hpp"

namespace mrc::udp_impair {
namespace {

using platform::SockAddr;
using platform::UdpSocket;

constexpr size_t kPayload = 64;

struct Rx {
  uint32_t id = 0;
  std::vector<std::byte> bytes;
  SockAddr source;
  uint8_t tos = 0;
};

std::vector<std::byte> payload_for(uint32_t id) {
  std::vector<std::byte> v(kPayload);
  std::memcpy(v.data(), &id, sizeof id);
  for (size_t i = sizeof id; i < v.size(); ++i) v[i] = static_cast<std::byte>((id * 31 + i) & 0xff);
  return v;
}

// One forwarder link 127.0.0.2:ephemeral -> server on 127.0.0.3, from 127.0.0.4.
class Rig {
 public:
  explicit Rig(const Impairments& im, std::vector<Blackhole> bh = {}, uint64_t seed = 1) {
    auto s = UdpSocket::open(*SockAddr::parse("127.0.0.3:0"), {.rcvbuf_bytes = 8 << 20});
    EXPECT_TRUE(s.ok()) << platform::last_error_message();
    server = std::move(*s);
    ForwarderConfig cfg;
    cfg.seed = seed;
    cfg.links.push_back(LinkConfig{"up", *SockAddr::parse("127.0.0.2:0"), server.local_address(),
                                   *SockAddr::parse("127.0.0.4"), im});
    cfg.blackholes = std::move(bh);
    std::string err;
    fwd = Forwarder::create(cfg, err);
    EXPECT_TRUE(fwd) << err;
    thread = std::thread([this] {
      std::string e;
      EXPECT_TRUE(fwd->run(Duration::s(60), e).ok()) << e;
    });
  }
  ~Rig() {
    fwd->stop();
    thread.join();
  }
  SockAddr entry() const { return fwd->listen_address(0); }

  // Sends datagram ids through the forwarder from the given client sockets
  // (plan[i] = index into clients) and collects everything that reaches the
  // server until the forwarder's counters account for every datagram.
  std::vector<Rx> run(std::vector<UdpSocket*> clients, const std::vector<size_t>& plan, int16_t tos = -1) {
    std::vector<Rx> got;
    platform::RxBatch batch(64, 2048);
    auto drain = [&] {
      while (true) {
        auto n = server.recv_batch(batch);
        if (!n) return;
        for (const auto& d : batch.received()) {
          Rx r;
          std::memcpy(&r.id, d.data.data(), std::min(sizeof r.id, d.data.size()));
          r.bytes.assign(d.data.begin(), d.data.end());
          r.source = d.source;
          r.tos = d.tos;
          got.push_back(std::move(r));
        }
      }
    };
    const SockAddr dest = entry();
    platform::MonotonicClock clock;
    const Time deadline = clock.now() + Duration::s(20);
    size_t sent = 0;
    while (sent < plan.size() && clock.now() < deadline) {
      // Send a group of up to 64, then wait until the forwarder consumed it,
      // so no socket buffer overflows and every loss is a deliberate one.
      const size_t group_end = std::min(plan.size(), sent + 64);
      for (; sent < group_end; ++sent) {
        const auto p = payload_for(static_cast<uint32_t>(sent));
        auto r = clients[plan[sent]]->send_to(dest, p, tos);
        EXPECT_TRUE(r.ok() && *r == 1) << platform::last_error_message();
      }
      while (fwd->stats(0).received < sent && clock.now() < deadline) {
        drain();
        (void)platform::wait_readable(server.fd(), Duration::ms(5));
      }
    }
    // Every datagram is accounted for when the forwarder sent what it will send
    // (held ones included) and the server received all of it.
    while (clock.now() < deadline) {
      drain();
      const LinkStats s = fwd->stats(0);
      const uint64_t expected_out = s.received - s.dropped_random - s.dropped_nth - s.blackholed + s.duplicated;
      if (s.received == plan.size() && s.forwarded + s.port_overflow + s.send_failed == expected_out &&
          got.size() == s.forwarded)
        break;
      (void)platform::wait_readable(server.fd(), Duration::ms(5));
    }
    EXPECT_LT(clock.now(), deadline) << "traffic did not settle";
    return got;
  }

  UdpSocket server;
  std::unique_ptr<Forwarder> fwd;
  std::thread thread;
};

UdpSocket client() {
  auto c = UdpSocket::open(SockAddr::ipv4_loopback(0));
  EXPECT_TRUE(c.ok()) << platform::last_error_message();
  return std::move(*c);
}

std::vector<size_t> single(size_t n) { return std::vector<size_t>(n, 0); }

TEST(UdpImpair, PassThroughPreservesSourcePortPayloadAndTos) {
  Rig rig({});
  UdpSocket a = client(), b = client(), c = client();
  std::vector<size_t> plan;
  for (size_t i = 0; i < 300; ++i) plan.push_back(i % 3);
  auto got = rig.run({&a, &b, &c}, plan, 0xb8 | 0x3);  // DSCP EF + CE
  ASSERT_EQ(got.size(), 300u);
  const UdpSocket* clients[] = {&a, &b, &c};
  for (const Rx& r : got) {
    ASSERT_LT(r.id, 300u);
    EXPECT_EQ(r.bytes, payload_for(r.id));
    EXPECT_EQ(r.source.host_string(), "127.0.0.4");
    EXPECT_EQ(r.source.port(), clients[plan[r.id]]->local_address().port()) << "EV (source port) not preserved";
    EXPECT_EQ(r.tos, 0xbb);
  }
  const LinkStats s = rig.fwd->stats(0);
  EXPECT_EQ(s.received, 300u);
  EXPECT_EQ(s.forwarded, 300u);
  EXPECT_EQ(s.source_ports, 3u);
}

TEST(UdpImpair, DropProbabilityWithinBounds) {
  Rig rig({.drop_probability = 0.1});
  UdpSocket a = client();
  auto got = rig.run({&a}, single(10000));
  const LinkStats s = rig.fwd->stats(0);
  EXPECT_GE(s.dropped_random, 800u);
  EXPECT_LE(s.dropped_random, 1200u);
  EXPECT_EQ(got.size(), 10000u - s.dropped_random);
  std::set<uint32_t> ids;
  for (const Rx& r : got) ids.insert(r.id);
  EXPECT_EQ(ids.size(), got.size());
}

TEST(UdpImpair, SameSeedSameDecisions) {
  std::set<uint32_t> first, second;
  for (auto* out : {&first, &second}) {
    Rig rig({.drop_probability = 0.3}, {}, 42);
    UdpSocket a = client();
    for (const Rx& r : rig.run({&a}, single(1000))) out->insert(r.id);
  }
  EXPECT_EQ(first, second);
  EXPECT_LT(first.size(), 1000u);
}

TEST(UdpImpair, DropEveryNthIsExact) {
  Rig rig({.drop_every_nth = 10});
  UdpSocket a = client();
  auto got = rig.run({&a}, single(1000));
  ASSERT_EQ(got.size(), 900u);
  for (const Rx& r : got) EXPECT_NE((r.id + 1) % 10, 0u) << r.id;
  EXPECT_EQ(rig.fwd->stats(0).dropped_nth, 100u);
}

TEST(UdpImpair, DuplicatesArriveTwice) {
  Rig rig({.duplicate_probability = 0.2});
  UdpSocket a = client();
  auto got = rig.run({&a}, single(2000));
  const LinkStats s = rig.fwd->stats(0);
  EXPECT_GE(s.duplicated, 300u);
  EXPECT_LE(s.duplicated, 500u);
  std::map<uint32_t, int> count;
  for (const Rx& r : got) ++count[r.id];
  ASSERT_EQ(count.size(), 2000u);
  size_t twice = 0;
  for (auto [id, n] : count) {
    EXPECT_TRUE(n == 1 || n == 2) << id;
    if (n == 2) ++twice;
  }
  EXPECT_EQ(twice, s.duplicated);
}

TEST(UdpImpair, CorruptFlipsExactlyOneByte) {
  Rig rig({.corrupt_probability = 1.0});
  UdpSocket a = client();
  auto got = rig.run({&a}, single(200));
  ASSERT_EQ(got.size(), 200u);
  size_t id_damaged = 0;
  for (const Rx& r : got) {
    // The id itself may be the byte that was hit; find the original by trying
    // the id as received first, then every id (the payload pattern identifies it).
    auto differing = [&](uint32_t id) {
      const auto want = payload_for(id);
      size_t diff = 0;
      for (size_t i = 0; i < want.size(); ++i) diff += want[i] != r.bytes[i];
      return diff;
    };
    ASSERT_EQ(r.bytes.size(), kPayload);
    size_t d = r.id < 200 ? differing(r.id) : kPayload;
    if (d != 1) {
      ++id_damaged;
      size_t best = kPayload;
      for (uint32_t id = 0; id < 200; ++id) best = std::min(best, differing(id));
      d = best;
    }
    EXPECT_EQ(d, 1u);
  }
  EXPECT_LT(id_damaged, 40u);  // 4 of 64 bytes are the id
  EXPECT_EQ(rig.fwd->stats(0).corrupted, 200u);
}

TEST(UdpImpair, ReorderChangesOrderLosesNothing) {
  Rig rig({.reorder_probability = 0.1, .reorder_hold_datagrams = 3});
  UdpSocket a = client();
  auto got = rig.run({&a}, single(2000));
  ASSERT_EQ(got.size(), 2000u);
  std::set<uint32_t> ids;
  size_t inversions = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ids.insert(got[i].id);
    if (i > 0 && got[i].id < got[i - 1].id) ++inversions;
  }
  EXPECT_EQ(ids.size(), 2000u);
  EXPECT_GT(inversions, 0u);
  const LinkStats s = rig.fwd->stats(0);
  EXPECT_GE(s.reordered, 120u);
  EXPECT_LE(s.reordered, 280u);
}

TEST(UdpImpair, BlackholeOneSourcePortFromItsStart) {
  UdpSocket a = client(), b = client();
  Blackhole bh;
  bh.link = 0;
  bh.source_port = a.local_address().port();
  bh.start_after_datagrams = 50;
  Rig rig({}, {bh});
  std::vector<size_t> plan;
  for (size_t i = 0; i < 400; ++i) plan.push_back(i % 2);
  auto got = rig.run({&a, &b}, plan);
  size_t from_a = 0, from_b = 0;
  for (const Rx& r : got) {
    if (plan[r.id] == 0) {
      ++from_a;
      EXPECT_LT(r.id / 2, 50u) << "datagram " << r.id << " of the blackholed EV got through";
    } else {
      ++from_b;
    }
  }
  EXPECT_EQ(from_a, 50u);
  EXPECT_EQ(from_b, 200u);
  EXPECT_EQ(rig.fwd->stats(0).blackholed, 150u);
}

TEST(UdpImpair, BlackholeWholeLink) {
  Blackhole bh;
  bh.link = 0;
  bh.start_after_datagrams = 100;
  Rig rig({}, {bh});
  UdpSocket a = client(), b = client();
  std::vector<size_t> plan;
  for (size_t i = 0; i < 300; ++i) plan.push_back(i % 2);
  auto got = rig.run({&a, &b}, plan);
  ASSERT_EQ(got.size(), 100u);
  for (const Rx& r : got) EXPECT_LT(r.id, 100u);
}

TEST(UdpImpair, BidirectionalLinksShareSockets) {
  // Client C (127.0.0.1) believes the server is G (127.0.0.5); the server S
  // (127.0.0.3) believes the client is F (127.0.0.6). The reply path sends
  // from G with the server's source port.
  auto c = UdpSocket::open(*SockAddr::parse("127.0.0.1:0"));
  auto s = UdpSocket::open(*SockAddr::parse("127.0.0.3:0"));
  ASSERT_TRUE(c.ok() && s.ok());
  ForwarderConfig cfg;
  cfg.links.push_back({"up", *SockAddr::parse("127.0.0.5:0"), s->local_address(), *SockAddr::parse("127.0.0.6"), {}});
  cfg.links.push_back({"down", *SockAddr::parse("127.0.0.6:0"), c->local_address(), *SockAddr::parse("127.0.0.5"), {}});
  std::string err;
  auto fwd = Forwarder::create(cfg, err);
  ASSERT_TRUE(fwd) << err;
  std::thread t([&] { std::string e; (void)fwd->run(Duration::s(30), e); });
  const auto msg = payload_for(7);
  ASSERT_EQ(*c->send_to(fwd->listen_address(0), msg), 1u);
  platform::RxBatch batch(4, 2048);
  ASSERT_TRUE(*platform::wait_readable(s->fd(), Duration::s(5)));
  ASSERT_EQ(*s->recv_batch(batch), 1u);
  EXPECT_EQ(batch[0].source.to_string(), "127.0.0.6:" + std::to_string(c->local_address().port()));
  // The server answers F (the down link's listen address; ephemeral here
  // instead of 4791 so the test needs no fixed port).
  ASSERT_EQ(*s->send_to(fwd->listen_address(1), msg), 1u);
  ASSERT_TRUE(*platform::wait_readable(c->fd(), Duration::s(5)));
  ASSERT_EQ(*c->recv_batch(batch), 1u);
  EXPECT_EQ(batch[0].source.to_string(), "127.0.0.5:" + std::to_string(s->local_address().port()));
  fwd->stop();
  t.join();
}

// The ICRC a sender at `src` computes for `body` (BTH...payload) sent to `dst`.
uint32_t icrc_for(const SockAddr& src, const SockAddr& dst, std::span<const uint8_t> body) {
  wire::FrameFormat fmt;
  fmt.mode = wire::EvMode::udp;
  fmt.ip = wire::IpVersion::v4;
  fmt.udp_dport = dst.port();
  wire::FrameFields f;
  std::copy_n(src.address_bytes().begin(), 4, f.src.begin());
  std::copy_n(dst.address_bytes().begin(), 4, f.dst.begin());
  f.ev = src.port();
  return *wire::datagram_icrc(fmt, f, body, {});
}

TEST(UdpImpair, FixIcrcKeepsValidIcrcsValidAndWrongOnesWrong) {
  // The ICRC covers the addresses the forwarder rewrites: without fix_icrc a
  // valid MRC datagram arrives with a wrong ICRC (what the software device
  // would drop and count); with it the ICRC matches the new addresses, and
  // one that was wrong on arrival stays wrong.
  auto c = UdpSocket::open(*SockAddr::parse("127.0.0.1:0"));
  auto s = UdpSocket::open(*SockAddr::parse("127.0.0.3:0"));
  ASSERT_TRUE(c.ok() && s.ok());
  ForwarderConfig cfg;
  cfg.links.push_back({"fix", *SockAddr::parse("127.0.0.5:0"), s->local_address(), *SockAddr::parse("127.0.0.6"), {},
                       true});
  cfg.links.push_back({"plain", *SockAddr::parse("127.0.0.7:0"), s->local_address(), *SockAddr::parse("127.0.0.8"), {}});
  std::string err;
  auto fwd = Forwarder::create(cfg, err);
  ASSERT_TRUE(fwd) << err;
  std::thread t([&] { std::string e; (void)fwd->run(Duration::s(30), e); });
  std::vector<uint8_t> body(12 + 100);
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<uint8_t>(i * 7 + 1);
  platform::RxBatch batch(4, 2048);
  // Sends body ‖ ICRC(c -> entry) (its payload's last byte flipped if
  // `corrupt`) through link `l`; true if the ICRC checks at the server.
  auto check = [&](size_t l, bool corrupt) {
    const SockAddr entry = fwd->listen_address(l);
    std::vector<std::byte> dg(body.size() + 4);
    std::memcpy(dg.data(), body.data(), body.size());
    wire::put_icrc(icrc_for(c->local_address(), entry, body), reinterpret_cast<uint8_t*>(dg.data()) + body.size());
    if (corrupt) dg[body.size() - 1] ^= std::byte{0x40};
    EXPECT_EQ(*c->send_to(entry, dg), 1u);
    EXPECT_TRUE(*platform::wait_readable(s->fd(), Duration::s(5)));
    EXPECT_EQ(*s->recv_batch(batch), 1u);
    const auto& d = batch[0];
    EXPECT_EQ(d.data.size(), dg.size());
    const auto* got = reinterpret_cast<const uint8_t*>(d.data.data());
    const std::span<const uint8_t> got_body(got, d.data.size() - 4);
    return icrc_for(d.source, s->local_address(), got_body) == wire::get_icrc(got + got_body.size());
  };
  EXPECT_TRUE(check(0, false));
  EXPECT_FALSE(check(0, true));
  EXPECT_FALSE(check(1, false)) << "a plain link breaks the ICRC (this is what fix_icrc is for)";
  fwd->stop();
  t.join();
  EXPECT_EQ(fwd->stats(0).icrc_rewritten, 2u);
  EXPECT_EQ(fwd->stats(1).icrc_rewritten, 0u);

  auto p = parse_link("listen=127.0.0.2:1,to=127.0.0.3:1,from=127.0.0.4,fix_icrc=1", {});
  ASSERT_TRUE(p.link) << p.error;
  EXPECT_TRUE(p.link->fix_icrc);
  EXPECT_NE(parse_link("listen=127.0.0.2:1,to=127.0.0.3:1,from=127.0.0.4,fix_icrc=yes", {}).error.find("fix_icrc"),
            std::string::npos);
  ForwarderConfig wild;
  wild.links.push_back({"w", *SockAddr::parse("0.0.0.0:0"), *SockAddr::parse("127.0.0.3:9"),
                        *SockAddr::parse("127.0.0.4"), {}, true});
  EXPECT_FALSE(Forwarder::create(wild, err));
  EXPECT_NE(err.find("wildcard"), std::string::npos) << err;
}

TEST(UdpImpair, ParseLinkValidatesAndNamesTheKey) {
  const Impairments def{.drop_probability = 0.05};
  auto ok = parse_link("listen=127.0.0.2:4791,to=127.0.0.3:4791,from=127.0.0.4,name=p0,dup=0.5", def);
  ASSERT_TRUE(ok.link) << ok.error;
  EXPECT_EQ(ok.link->name, "p0");
  EXPECT_DOUBLE_EQ(ok.link->impair.drop_probability, 0.05);
  EXPECT_DOUBLE_EQ(ok.link->impair.duplicate_probability, 0.5);
  EXPECT_EQ(ok.link->listen.port(), 4791);
  struct Case { const char* spec; const char* needle; };
  for (const Case& c : {Case{"listen=127.0.0.2:1,to=127.0.0.3:1,from=127.0.0.4,drop=1.5", "drop=1.5"},
                        Case{"listen=127.0.0.2:1,to=127.0.0.3,from=127.0.0.4", "needs a port"},
                        Case{"listen=nope,to=127.0.0.3:1,from=127.0.0.4", "listen=nope"},
                        Case{"listen=127.0.0.2:1,to=127.0.0.3:1", "required"},
                        Case{"listen=127.0.0.2:1,to=127.0.0.3:1,from=127.0.0.4,bogus=1", "unknown key 'bogus'"},
                        Case{"listen=127.0.0.2:1,to=[::1]:1,from=127.0.0.4", "IPv4 or all IPv6"},
                        Case{"listen=127.0.0.2:1,to=127.0.0.3:1,from=127.0.0.4,drop_nth=-3", "drop_nth=-3"}}) {
    auto r = parse_link(c.spec, {});
    EXPECT_FALSE(r.link) << c.spec;
    EXPECT_NE(r.error.find(c.needle), std::string::npos) << r.error;
  }
  auto bh = parse_blackhole("link=1,port=50000,after_n=10,until_ms=500");
  ASSERT_TRUE(bh.blackhole) << bh.error;
  EXPECT_EQ(*bh.blackhole->source_port, 50000);
  EXPECT_EQ(bh.blackhole->end_after, Duration::ms(500));
  EXPECT_NE(parse_blackhole("port=5").error.find("link= is required"), std::string::npos);
  EXPECT_NE(parse_blackhole("link=0,port=70000").error.find("port=70000"), std::string::npos);
}

TEST(UdpImpair, CreateRejectsBadBlackholeLink) {
  ForwarderConfig cfg;
  cfg.links.push_back({"x", *SockAddr::parse("127.0.0.2:0"), *SockAddr::parse("127.0.0.3:9"),
                       *SockAddr::parse("127.0.0.4"), {}});
  Blackhole bh;
  bh.link = 3;
  cfg.blackholes.push_back(bh);
  std::string err;
  EXPECT_FALSE(Forwarder::create(cfg, err));
  EXPECT_NE(err.find("link=3"), std::string::npos) << err;
}

}  // namespace
}  // namespace mrc::udp_impair
