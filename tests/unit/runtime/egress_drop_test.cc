// SPDX-License-Identifier: BSD-2-Clause
// Packets the sending host's own egress queue drops are local congestion,
// not path loss. Two namespaces joined by a veth pair (jumbo MTU, no
// offloads that matter here); the sender's end has a tbf qdisc far slower
// than an unpaced device sends, with a queue of a few packets, so the qdisc
// drops many of them. The device's sending sockets have IP_RECVERR /
// IPV6_RECVERR: each drop comes back from the send as ENOBUFS and goes to
// the core (Endpoint::on_transmit_refused), which resends it without
// blaming its EV. Without RECVERR the kernel reports those sends as
// successful, and the drops surface as losses declared by the SACK rule and
// timeouts, charged to the EVs.
//
// Every test needs root (network namespaces), the qdisc ones ip and tc
// (iproute2) too; they skip with a message without them. The
// transfer is bounded (a few MiB at 100 Mbit/s, under a second); waits poll
// with deadlines, nothing sleeps for a verdict.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../platform/netns_helper.hpp"
#include "device_fixture.hpp"
#include "srv6_netns.hpp"

namespace mrc::rt {
namespace {

using namespace fixture;
using test_support::sh;

/// Namespaces A and B joined by one veth pair, A's end behind a small
/// tbf: 100 Mbit/s, a 64 KiB bucket, a queue of 24,000 bytes (5 packets of
/// 4 KiB). Removed on destruction and before creation.
class DropNet {
 public:
  explicit DropNet(bool ipv6)
      : a_("mrcqd" + std::to_string(::getpid()) + "a"), b_("mrcqd" + std::to_string(::getpid()) + "b"),
        a_addr_(ipv6 ? "fd00:77::1" : "10.79.0.1"), b_addr_(ipv6 ? "fd00:77::2" : "10.79.0.2") {
    if (::geteuid() != 0) {
      skip_ = "needs root (network namespaces, a qdisc)";
      return;
    }
    if (!sh("command -v ip") || !sh("command -v tc") || !sh("command -v ping")) {
      skip_ = "needs ip and tc (iproute2) and ping";
      return;
    }
    cleanup();
    const std::string A = "ip -n " + a_ + " ", B = "ip -n " + b_ + " ";
    const std::string len = ipv6 ? "/64 nodad" : "/24";
    const std::vector<std::string> steps = {
        "ip netns add " + a_,
        "ip netns add " + b_,
        A + "link set lo up",
        B + "link set lo up",
        "ip link add qa netns " + a_ + " type veth peer name qb netns " + b_,
        A + "link set qa mtu 9000",
        B + "link set qb mtu 9000",
        A + "addr add " + a_addr_ + len + " dev qa",
        B + "addr add " + b_addr_ + len + " dev qb",
        A + "link set qa up",
        B + "link set qb up",
        // The bucket holds a whole GSO burst, so tbf never splits one (a
        // split burst's partial drops would go unreported).
        "tc -n " + a_ + " qdisc add dev qa root tbf rate 100mbit burst 65536 limit 24000",
        // The neighbour entry resolved first: packets sent while it is
        // being resolved wait in a queue of its own, which drops the
        // excess silently (a first window of 4 MiB is most of it).
        "ip netns exec " + a_ + " ping -c 1 -W 5 " + b_addr_,
    };
    for (const std::string& s : steps)
      if (!sh(s)) {
        skip_ = "the kernel or iproute2 refused: " + s;
        return;
      }
  }
  ~DropNet() { cleanup(); }
  DropNet(const DropNet&) = delete;
  DropNet& operator=(const DropNet&) = delete;

  const std::string& skip() const { return skip_; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }
  const std::string& a_addr() const { return a_addr_; }
  const std::string& b_addr() const { return b_addr_; }
  /// Packets A's qdisc dropped (tc -s), or -1 if unreadable.
  long long qdisc_drops() const {
    const std::string out = test_support::capture("tc -n " + a_ + " -s qdisc show dev qa");
    const size_t at = out.find("dropped ");
    return at == std::string::npos ? -1 : std::atoll(out.c_str() + at + 8);
  }

 private:
  void cleanup() {
    (void)sh("ip netns del " + a_);
    (void)sh("ip netns del " + b_);
  }
  std::string a_, b_, a_addr_, b_addr_, skip_;
};

DeviceConfig one_plane(const std::string& addr, uint32_t burst) {
  DeviceConfig c;
  c.planes = {addr};
  c.evs_per_plane = 8;
  c.burst = burst;
  c.seed = 35;
  // Unpaced (a veth reports no speed; said here so the test does not
  // depend on it), so the sender outruns the tbf.
  c.link_rate_bps = DeviceConfig::kUnpaced;
  return c;
}

/// 8 MiB from A to B in WRITEs of 1 MiB, through the dropping qdisc: every
/// byte arrives, the drops come back as local refusals, no EV is blamed.
void drops_are_local(bool ipv6, uint32_t burst) {
  DropNet net(ipv6);
  if (!net.skip().empty()) GTEST_SKIP() << net.skip();
  Endpoint a, b;
  a.dev = open_device_in(net.a(), one_plane(net.a_addr(), burst));
  b.dev = open_device_in(net.b(), one_plane(net.b_addr(), burst));
  ASSERT_TRUE(a.dev && b.dev);
  // The kernel may report the veths' carrier a moment after they came up
  // (linkwatch): a device drops what arrives on a plane it holds down.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while ((a.dev->port_up_mask() != 1u || b.dev->port_up_mask() != 1u) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(a.dev->port_up_mask() & b.dev->port_up_mask(), 1u) << "the plane did not come up";
  std::atomic<int> ev_events{0};
  a.dev->set_event_sink([&](const core::Event& e) {
    if (std::holds_alternative<core::EvEvent>(e)) ev_events.fetch_add(1);
  });
  constexpr size_t kBytes = 8 << 20;
  constexpr uint32_t kWrite = 1 << 20;
  create_resources(a, kBytes);
  create_resources(b, kBytes);
  // The perf tools' ACK timeout (1.024 us x 2^16, 67 ms): the queue delays
  // packets by 2 ms, past the core's default of 262 us.
  connect_qp(a, {*platform::SockAddr::parse(net.b_addr())}, b.qpn, 1, 2, 16);
  connect_qp(b, {*platform::SockAddr::parse(net.a_addr())}, a.qpn, 2, 1, 16);
  fill(a.mem, 35);
  for (uint32_t i = 0; i < kBytes / kWrite; ++i)
    ASSERT_TRUE(a.dev->post_send(a.qpn, write(a, b, uint64_t{i} * kWrite, kWrite, i)).ok());
  const auto wcs = wait_until(a.cq, kBytes / kWrite, Clock::now() + std::chrono::seconds(20), Idle::yield);
  ASSERT_EQ(wcs.size(), kBytes / kWrite) << "the WRITEs did not complete";
  for (const core::WorkCompletion& wc : wcs) EXPECT_EQ(wc.status, core::WcStatus::success);
  EXPECT_EQ(0, std::memcmp(a.mem.data(), b.mem.data(), kBytes)) << "the data arrived wrong";

  const DeviceStats st = a.dev->stats();
  const long long qdisc = net.qdisc_drops();
  std::printf("  qdisc dropped %lld; device: %llu refused by the egress queue, %llu by a full buffer, %llu resent "
              "locally, %llu lost by the SACK rule, %llu by timeouts, %llu tail probes, %llu retransmissions of %llu "
              "packets; %d EV events\n",
              qdisc, static_cast<unsigned long long>(st.tx_queue_drops), static_cast<unsigned long long>(st.tx_eagain),
              static_cast<unsigned long long>(st.losses_local), static_cast<unsigned long long>(st.losses_rule),
              static_cast<unsigned long long>(st.losses_timeout), static_cast<unsigned long long>(st.tail_probes),
              static_cast<unsigned long long>(st.retransmissions), static_cast<unsigned long long>(st.tx_packets),
              ev_events.load());
  EXPECT_GT(qdisc, 0) << "the qdisc dropped nothing: the test shows nothing";
  EXPECT_GT(st.tx_queue_drops, 0u) << "the qdisc's drops did not reach the device";
  EXPECT_GT(st.losses_local, 0u) << "the core did not hear of them";
  // The qdisc counts a GSO burst as one drop, the device its packets.
  if (burst == 1) {
    EXPECT_LE(st.tx_queue_drops, static_cast<uint64_t>(qdisc)) << "a drop the qdisc did not make";
  }
  // Every drop is reported, so nothing goes missing in the network: no loss
  // is declared, no EV is suspected.
  EXPECT_EQ(st.losses_rule, 0u);
  EXPECT_EQ(st.losses_timeout, 0u);
  EXPECT_EQ(ev_events.load(), 0) << "an EV was blamed for the host's own queue";
  EXPECT_EQ(st.tx_errors, 0u);
  EXPECT_EQ(st.tx_icmp_errors, 0u);
}

TEST(DeviceEgressDrop, QdiscDropsAreLocalCongestionIpv4) { drops_are_local(false, 1); }
TEST(DeviceEgressDrop, QdiscDropsAreLocalCongestionIpv6) { drops_are_local(true, 1); }
// GSO bursts of 8: a dropped burst is refused whole.
TEST(DeviceEgressDrop, QdiscDropsAreLocalCongestionBursts) { drops_are_local(true, 8); }

// An ICMP error about a packet fails the next send of its socket (the
// error is left pending on it), sending nothing; the device drains it and
// sends anyway, so no packet is lost for another one's error. On loopback:
// A believes B's plane 1 is 127.0.0.5, where nothing listens, so every
// packet A sends there draws an ICMP port unreachable (loopback does not
// rate-limit them); plane 0 carries the WRITE. In a namespace of its own,
// through io_uring (the device drains and resends) and through sendmmsg
// (send_batch does).
void icmp_errors_fail_no_send(bool io_uring) {
  // A namespace of its own: its loopback, its ports.
  const std::string skip = test_support::in_private_netns([&](std::string&) {
    auto plane_cfg = [io_uring](const char* p0, const char* p1) {
      DeviceConfig c;
      c.planes = {p0, p1};
      c.evs_per_plane = 4;
      c.seed = 36;
      c.ev_port_base = 29000;
      c.io_uring = io_uring;
      return c;
    };
    Endpoint a, b;
    a.dev = open_device(plane_cfg("127.0.0.3", "127.0.0.4"));
    DeviceConfig bc = plane_cfg("127.0.0.1", "127.0.0.2");
    bc.ev_port_base = 30000;
    b.dev = open_device(bc);
    ASSERT_TRUE(a.dev && b.dev);
    create_resources(a, 1 << 20);
    create_resources(b, 1 << 20);
    connect_qp(a, {*platform::SockAddr::parse("127.0.0.1"), *platform::SockAddr::parse("127.0.0.5")}, b.qpn, 1, 2, 16);
    connect_qp(b, {*platform::SockAddr::parse("127.0.0.3"), *platform::SockAddr::parse("127.0.0.4")}, a.qpn, 2, 1, 16);
    fill(a.mem, 36);
    ASSERT_TRUE(a.dev->post_send(a.qpn, write(a, b, 0, 1 << 20, 1)).ok());
    const auto wcs = wait_until(a.cq, 1, Clock::now() + std::chrono::seconds(20), Idle::yield);
    ASSERT_EQ(wcs.size(), 1u) << "the WRITE did not complete";
    EXPECT_EQ(wcs[0].status, core::WcStatus::success);
    EXPECT_EQ(0, std::memcmp(a.mem.data(), b.mem.data(), 1 << 20));
    const DeviceStats st = a.dev->stats();
    std::printf("  %llu ICMP errors drained, %llu sends failed, %llu packets sent\n",
                static_cast<unsigned long long>(st.tx_icmp_errors), static_cast<unsigned long long>(st.tx_errors),
                static_cast<unsigned long long>(st.tx_packets));
    EXPECT_GT(st.tx_icmp_errors, 0u) << "no ICMP error reached the device";
    EXPECT_EQ(st.tx_errors, 0u) << "a pending ICMP error failed a send";
  });
  if (!skip.empty()) GTEST_SKIP() << skip;
}

TEST(DeviceEgressDrop, IcmpErrorsFailNoSendThroughIoUring) { icmp_errors_fail_no_send(true); }
TEST(DeviceEgressDrop, IcmpErrorsFailNoSendThroughSendmmsg) { icmp_errors_fail_no_send(false); }

}  // namespace
}  // namespace mrc::rt
