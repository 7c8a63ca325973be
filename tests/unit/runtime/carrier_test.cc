// SPDX-License-Identifier: BSD-2-Clause
// The software device follows its planes' carrier (DeviceConfig::
// watch_carrier) across two network namespaces. Plane 0 is a veth pair
// (A 10.77.0.1 -- B 10.77.0.2). Plane 1 is a second veth pair whose B end
// carries only a transit address: B's plane-1 address 10.77.1.2 lives on
// B's lo (which has no carrier to watch), so when the test downs B's end of
// the pair, A's interface loses its carrier while B's plane stays up, and B
// can learn of the failure only from A's PORT_STATUS_UPDATE over plane 0.
//
// Needs root and ip (iproute2); skips with a message without them. Waits
// poll with deadlines of a few seconds; no sleep is a timing assertion.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "device_fixture.hpp"
#include "srv6_netns.hpp"

namespace mrc::rt {
namespace {

using namespace fixture;
using test_support::sh;

/// Two namespaces joined by two veth pairs (see the file comment), removed
/// on destruction and before creation (a crashed run's leftovers).
class CarrierNet {
 public:
  CarrierNet() : a_("mrccw" + std::to_string(::getpid()) + "a"), b_("mrccw" + std::to_string(::getpid()) + "b") {
    if (::geteuid() != 0) {
      skip_ = "needs root (network namespaces)";
      return;
    }
    if (!sh("command -v ip")) {
      skip_ = "needs ip (iproute2)";
      return;
    }
    cleanup();
    const std::string A = "ip -n " + a_ + " ", B = "ip -n " + b_ + " ";
    const std::vector<std::string> steps = {
        "ip netns add " + a_,
        "ip netns add " + b_,
        A + "link set lo up",
        B + "link set lo up",
        // Two interfaces in B only, so the veths' indexes differ from their
        // peers'. The kernel reports a carrier change at once for a stacked
        // device (index != iflink, as a veth's usually is) and batches the
        // others' to one per second (linkwatch): with equal indexes a
        // carrier change could reach the device up to 1 s late.
        B + "link add cbx0 type veth peer name cbx1",
        "ip link add ca0 netns " + a_ + " type veth peer name cb0 netns " + b_,
        "ip link add ca1 netns " + a_ + " type veth peer name cb1 netns " + b_,
        A + "addr add 10.77.0.1/24 dev ca0",
        B + "addr add 10.77.0.2/24 dev cb0",
        A + "addr add 10.77.1.1/24 dev ca1",
        B + "addr add 10.77.1.3/24 dev cb1",
        B + "addr add 10.77.1.2/32 dev lo",
        A + "link set ca0 up",
        A + "link set ca1 up",
        B + "link set cb0 up",
        B + "link set cb1 up",
    };
    for (const std::string& s : steps)
      if (!sh(s)) {
        skip_ = "the kernel or iproute2 refused: " + s;
        return;
      }
  }
  ~CarrierNet() { cleanup(); }
  CarrierNet(const CarrierNet&) = delete;
  CarrierNet& operator=(const CarrierNet&) = delete;

  const std::string& skip() const { return skip_; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }

 private:
  void cleanup() {
    (void)sh("ip netns del " + a_);
    (void)sh("ip netns del " + b_);
  }
  std::string a_, b_, skip_;
};

DeviceConfig two_planes(const char* p0, const char* p1, uint16_t udp_port = 4791, uint16_t ev_base = 27152) {
  DeviceConfig c;
  c.planes = {p0, p1};
  c.udp_port = udp_port;
  c.ev_port_base = ev_base;
  c.evs_per_plane = 4;
  c.seed = 21;
  return c;
}

std::vector<platform::SockAddr> addrs(const char* p0, const char* p1) {
  return {*platform::SockAddr::parse(p0), *platform::SockAddr::parse(p1)};
}

/// Polls `pred` until it holds or 5 s pass; the time it took.
template <class F>
std::optional<double> within_5s(F pred) {
  const auto start = Clock::now();
  while (!pred()) {
    if (Clock::now() - start > std::chrono::seconds(5)) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Packets QP `qpn` of `d` sent on plane `plane`'s EVs.
uint64_t sent_on(Device& d, uint32_t qpn, uint32_t plane) {
  std::vector<core::EvInfo> evs(16);
  const size_t n = d.query_evs(qpn, evs);
  uint64_t s = 0;
  for (size_t i = 0; i < n && i < evs.size(); ++i)
    if (evs[i].port == plane) s += evs[i].packets_sent;
  return s;
}

/// One WRITE of 1 MiB from `a` to `b`, waited for.
void write_1mib(Endpoint& a, Endpoint& b, uint64_t id) {
  fill(a.mem, id);
  ASSERT_TRUE(a.dev->post_send(a.qpn, write(a, b, 0, 1 << 20, id)).ok());
  const auto wcs = wait_until(a.cq, 1, Clock::now() + std::chrono::seconds(10), Idle::yield);
  ASSERT_EQ(wcs.size(), 1u) << "WRITE " << id << " did not complete";
  EXPECT_EQ(wcs[0].status, core::WcStatus::success);
  EXPECT_EQ(0, std::memcmp(a.mem.data(), b.mem.data(), 1 << 20)) << "WRITE " << id;
}

TEST(DeviceCarrier, ALostCarrierTakesThePlaneOutAndThePeerIsToldAndItComesBack) {
  CarrierNet net;
  if (!net.skip().empty()) GTEST_SKIP() << net.skip();
  Endpoint a, b;
  a.dev = open_device_in(net.a(), two_planes("10.77.0.1", "10.77.1.1"));
  b.dev = open_device_in(net.b(), two_planes("10.77.0.2", "10.77.1.2"));
  ASSERT_TRUE(a.dev && b.dev);
  // A second device in A's namespace that does not watch (other ports).
  DeviceConfig off = two_planes("10.77.0.1", "10.77.1.1", 4792, 40000);
  off.watch_carrier = false;
  std::unique_ptr<Device> blind = open_device_in(net.a(), off);
  ASSERT_TRUE(blind);

  // The kernel reports carrier on a moment after the links came up.
  ASSERT_TRUE(within_5s([&] { return a.dev->port_up_mask() == 0b11u && b.dev->port_up_mask() == 0b11u; }))
      << "the planes did not come up";
  EXPECT_EQ(a.dev->stats().carrier_watched, 0b11u);
  EXPECT_EQ(b.dev->stats().carrier_watched, 0b01u) << "an address on lo is not watched";
  EXPECT_FALSE(a.dev->stats().carrier_watch_failed);
  EXPECT_EQ(blind->stats().carrier_watched, 0u);
  EXPECT_EQ(a.dev->port_up_mask(), 0b11u);

  // What B hears from A: the port masks of its port-status updates.
  std::mutex mu;
  std::vector<uint32_t> heard;
  b.dev->set_event_sink([&](const core::Event& e) {
    if (auto* p = std::get_if<core::PortEvent>(&e); p && !p->local) {
      std::lock_guard<std::mutex> g(mu);
      heard.push_back(p->up_mask);
    }
  });
  auto b_heard = [&](uint32_t mask) {
    std::lock_guard<std::mutex> g(mu);
    return !heard.empty() && heard.back() == mask;
  };

  create_resources(a, 1 << 20);
  create_resources(b, 1 << 20);
  connect_qp(a, addrs("10.77.0.2", "10.77.1.2"), b.qpn, 1, 2);
  connect_qp(b, addrs("10.77.0.1", "10.77.1.1"), a.qpn, 2, 1);
  write_1mib(a, b, 1);
  ASSERT_GT(sent_on(*a.dev, a.qpn, 1), 0u) << "plane 1 in use before";

  // B's end of plane 1 goes down: A's ca1 has no carrier.
  const auto before_ip = Clock::now();
  ASSERT_TRUE(sh("ip -n " + net.b() + " link set cb1 down"));
  const double ip_ms = std::chrono::duration<double, std::milli>(Clock::now() - before_ip).count();
  const auto took = within_5s([&] { return a.dev->port_up_mask() == 0b01u; });
  ASSERT_TRUE(took) << "A did not take plane 1 out";
  std::printf("  plane 1 out of service %.1f ms after running `ip link set cb1 down` (which took %.1f ms)\n",
              ip_ms + *took, ip_ms);
  EXPECT_EQ(a.dev->port_carrier_mask(), 0b01u);
  EXPECT_EQ(a.dev->port_admin_mask(), 0b11u) << "the controller's state is its own";
  EXPECT_EQ(a.dev->stats().carrier_down, 1u);
  EXPECT_EQ(b.dev->port_up_mask(), 0b11u) << "B's plane-1 address is on lo: B knows nothing yet";
  const auto told = within_5s([&] { return b_heard(0b01u); });
  ASSERT_TRUE(told) << "B was not told";
  std::printf("  B heard the port-status update %.1f ms after that\n", *told);
  EXPECT_EQ(blind->port_up_mask(), 0b11u) << "a device that does not watch keeps the plane";
  EXPECT_EQ(blind->stats().carrier_down, 0u);

  // Data goes over plane 0 only.
  const uint64_t on1 = sent_on(*a.dev, a.qpn, 1);
  write_1mib(a, b, 2);
  EXPECT_EQ(sent_on(*a.dev, a.qpn, 1), on1) << "A sent on a plane without carrier";

  // The controller cannot bring back a plane without carrier...
  ASSERT_TRUE(a.dev->set_port_admin(1, false).ok());
  ASSERT_TRUE(a.dev->set_port_admin(1, true).ok());
  EXPECT_EQ(a.dev->port_up_mask(), 0b01u) << "enabled, but no carrier";
  // ...and the carrier does not undo the controller's disable.
  ASSERT_TRUE(a.dev->set_port_admin(1, false).ok());
  ASSERT_TRUE(sh("ip -n " + net.b() + " link set cb1 up"));
  ASSERT_TRUE(within_5s([&] { return a.dev->port_carrier_mask() == 0b11u; })) << "the carrier did not come back";
  EXPECT_EQ(a.dev->stats().carrier_up, 1u);
  EXPECT_EQ(a.dev->port_up_mask(), 0b01u) << "the carrier re-enabled a port the controller disabled";
  {
    std::lock_guard<std::mutex> g(mu);
    EXPECT_EQ(heard.back(), 0b01u);
  }
  // Enabled again: in service, and B is told.
  ASSERT_TRUE(a.dev->set_port_admin(1, true).ok());
  EXPECT_EQ(a.dev->port_up_mask(), 0b11u);
  ASSERT_TRUE(within_5s([&] { return b_heard(0b11u); })) << "B was not told plane 1 is back";
  write_1mib(a, b, 3);
  EXPECT_GT(sent_on(*a.dev, a.qpn, 1), on1) << "plane 1 unused after it came back";

  // The carrier alone brings a plane back too.
  ASSERT_TRUE(sh("ip -n " + net.b() + " link set cb1 down"));
  ASSERT_TRUE(within_5s([&] { return a.dev->port_up_mask() == 0b01u; }));
  ASSERT_TRUE(sh("ip -n " + net.b() + " link set cb1 up"));
  ASSERT_TRUE(within_5s([&] { return a.dev->port_up_mask() == 0b11u; }));
  EXPECT_EQ(a.dev->stats().carrier_down, 2u);
  EXPECT_EQ(a.dev->stats().carrier_up, 2u);
  ASSERT_TRUE(within_5s([&] { return b_heard(0b11u); }));
  EXPECT_EQ(a.dev->stats().netlink_malformed, 0u);
}

// A plane whose interface is down when the device opens starts out of
// service; one on lo (or 127.x) is never watched.
TEST(DeviceCarrier, APlaneDownAtOpenStartsOutOfServiceAndLoopbackIsNotWatched) {
  CarrierNet net;
  if (!net.skip().empty()) GTEST_SKIP() << net.skip();
  ASSERT_TRUE(sh("ip -n " + net.a() + " link set ca1 down"));
  ASSERT_TRUE(sh("ip -n " + net.a() + " addr add 10.77.9.1/32 dev lo"));
  std::unique_ptr<Device> d = open_device_in(net.a(), two_planes("10.77.0.1", "10.77.1.1"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->port_up_mask(), 0b01u);
  EXPECT_EQ(d->port_carrier_mask(), 0b01u);
  EXPECT_EQ(d->port_admin_mask(), 0b11u);
  ASSERT_TRUE(sh("ip -n " + net.a() + " link set ca1 up"));
  EXPECT_TRUE(within_5s([&] { return d->port_up_mask() == 0b11u; }));
  d.reset();
  d = open_device_in(net.a(), two_planes("127.0.0.1", "10.77.9.1"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->stats().carrier_watched, 0u) << "127.0.0.1 and an address on lo have no carrier to watch";
  EXPECT_FALSE(d->stats().carrier_watch_failed);
  EXPECT_EQ(d->port_up_mask(), 0b11u);
}

}  // namespace
}  // namespace mrc::rt
