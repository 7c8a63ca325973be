// SPDX-License-Identifier: BSD-2-Clause
// platform/link_monitor: the rtnetlink parser on hand-built messages (well
// formed, truncated, malformed, foreign types), the address lookup on
// loopback, and the monitor on a veth pair in a private network namespace
// (root; skipped otherwise).
#include "platform/link_monitor.hpp"

#include <gtest/gtest.h>
// glibc's <net/if.h> first: <linux/if.h> then adds only what it lacks.
#include <net/if.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "netns_helper.hpp"
#include "platform/epoll.hpp"
#include "platform/os_error.hpp"
#include "util/prng.hpp"

namespace mrc::platform {
namespace {

/// Builds netlink messages as the kernel lays them out: 4-byte aligned
/// headers, attributes padded to 4 bytes, nlmsg_len covering the padding.
class NlBuilder {
 public:
  /// Starts a message of `type`.
  NlBuilder& msg(uint16_t type, uint16_t flags = 0) {
    start_ = buf_.size();
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = flags;
    append(&h, sizeof h);
    return *this;
  }
  NlBuilder& link(int32_t index, uint32_t flags) {
    ifinfomsg i{};
    i.ifi_family = AF_UNSPEC;
    i.ifi_index = index;
    i.ifi_flags = flags;
    i.ifi_change = ~0u;
    append(&i, sizeof i);
    return *this;
  }
  NlBuilder& addr(uint8_t family, uint32_t index) {
    ifaddrmsg a{};
    a.ifa_family = family;
    a.ifa_prefixlen = family == AF_INET ? 24 : 64;
    a.ifa_index = index;
    append(&a, sizeof a);
    return *this;
  }
  NlBuilder& attr(uint16_t type, const void* data, size_t len) {
    rtattr a{};
    a.rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
    a.rta_type = type;
    append(&a, sizeof a);
    append(data, len);
    pad();
    return *this;
  }
  NlBuilder& operstate(uint8_t s) { return attr(IFLA_OPERSTATE, &s, 1); }
  NlBuilder& raw(const void* data, size_t len) {
    append(data, len);
    return *this;
  }
  NlBuilder& i32(int32_t v) { return raw(&v, sizeof v); }
  /// Ends the message: writes its length.
  NlBuilder& end() {
    pad();
    const auto len = static_cast<uint32_t>(buf_.size() - start_);
    std::memcpy(buf_.data() + start_, &len, sizeof len);
    return *this;
  }
  std::vector<uint8_t>& bytes() { return buf_; }
  size_t last_start() const { return start_; }

 private:
  void append(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  void pad() {
    while (buf_.size() % 4) buf_.push_back(0);
  }
  std::vector<uint8_t> buf_;
  size_t start_ = 0;
};

// The flags as plain integers: glibc's and Linux's IFF_* are different enums.
constexpr uint32_t fUp = IFF_UP, fBroadcast = IFF_BROADCAST, fRunning = IFF_RUNNING, fLowerUp = IFF_LOWER_UP,
                   fLoopback = IFF_LOOPBACK, fNoarp = IFF_NOARP, fDormant = IFF_DORMANT;
constexpr uint32_t kAllUp = fUp | fBroadcast | fRunning | fLowerUp;

NetlinkParse parse(const std::vector<uint8_t>& b, std::vector<LinkStatus>& out) { return parse_netlink(b, out); }

TEST(LinkParse, AnUpLinkIsUpAndItsFieldsAreRead) {
  NlBuilder b;
  b.msg(RTM_NEWLINK).link(7, kAllUp).operstate(IF_OPER_UP).end();
  std::vector<LinkStatus> out;
  const NetlinkParse p = parse(b.bytes(), out);
  EXPECT_EQ(p.links, 1u);
  EXPECT_EQ(p.malformed, 0u);
  EXPECT_FALSE(p.done);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ifindex, 7);
  EXPECT_EQ(out[0].flags, kAllUp);
  EXPECT_EQ(out[0].operstate, OperState::up);
  EXPECT_FALSE(out[0].removed);
  EXPECT_TRUE(out[0].carrier_up);
}

// What `ip link` shows for the usual states, as the kernel reports them.
TEST(LinkParse, CarrierVerdictsOfTheUsualStates) {
  struct Case {
    const char* what;
    uint32_t flags;
    int operstate;  // -1: no IFLA_OPERSTATE
    bool up;
  } cases[] = {
      {"veth whose peer is down (NO-CARRIER, LOWERLAYERDOWN)", fUp | fBroadcast, IF_OPER_LOWERLAYERDOWN, false},
      {"administratively down", fBroadcast, IF_OPER_DOWN, false},
      {"dummy (UNKNOWN, flags up)", fUp | fRunning | fLowerUp | fNoarp, IF_OPER_UNKNOWN, true},
      {"lo", fUp | fLoopback | fRunning | fLowerUp, IF_OPER_UNKNOWN, true},
      {"operstate down overrides the flags", kAllUp, IF_OPER_DOWN, false},
      {"operstate notpresent", kAllUp, IF_OPER_NOTPRESENT, false},
      {"operstate lowerlayerdown", kAllUp, IF_OPER_LOWERLAYERDOWN, false},
      {"dormant (no RUNNING)", fUp | fLowerUp | fDormant, IF_OPER_DORMANT, false},
      {"no carrier bit", fUp | fRunning, IF_OPER_UP, false},
      {"not running", fUp | fLowerUp, IF_OPER_UP, false},
      {"no operstate: the flags say up", kAllUp, -1, true},
      {"no operstate: the flags say down", fUp, -1, false},
      {"an operstate from a newer kernel: the flags decide", kAllUp, 42, true},
  };
  for (const Case& c : cases) {
    NlBuilder b;
    b.msg(RTM_NEWLINK).link(3, c.flags);
    if (c.operstate >= 0) b.operstate(static_cast<uint8_t>(c.operstate));
    b.end();
    std::vector<LinkStatus> out;
    const NetlinkParse p = parse(b.bytes(), out);
    ASSERT_EQ(out.size(), 1u) << c.what;
    EXPECT_EQ(p.malformed, 0u) << c.what;
    EXPECT_EQ(out[0].carrier_up, c.up) << c.what;
    EXPECT_EQ(out[0].operstate.has_value(), c.operstate >= 0) << c.what;
  }
}

TEST(LinkParse, DelLinkIsRemovedAndDown) {
  NlBuilder b;
  b.msg(RTM_DELLINK).link(9, kAllUp).operstate(IF_OPER_UP).end();
  std::vector<LinkStatus> out;
  parse(b.bytes(), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].removed);
  EXPECT_FALSE(out[0].carrier_up);
}

TEST(LinkParse, SeveralMessagesOtherTypesDoneAndErrors) {
  NlBuilder b;
  const uint32_t other_attr = 0x12345678;
  b.msg(RTM_NEWLINK, NLM_F_MULTI).link(1, kAllUp).attr(IFLA_MTU, &other_attr, 4).operstate(IF_OPER_UNKNOWN).end();
  b.msg(RTM_NEWROUTE).raw("\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 12).end();  // not ours: ignored
  b.msg(NLMSG_NOOP).end();
  b.msg(RTM_NEWLINK, NLM_F_MULTI).link(2, fUp).operstate(IF_OPER_LOWERLAYERDOWN).end();
  b.msg(NLMSG_DONE, NLM_F_MULTI).i32(0).end();
  std::vector<LinkStatus> out;
  NetlinkParse p = parse(b.bytes(), out);
  EXPECT_EQ(p.links, 2u);
  EXPECT_EQ(p.malformed, 0u);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.error, 0);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].carrier_up);
  EXPECT_FALSE(out[1].carrier_up);

  NlBuilder e;
  nlmsghdr echoed{};
  e.msg(NLMSG_ERROR).i32(-EBUSY).raw(&echoed, sizeof echoed).end();
  out.clear();
  p = parse(e.bytes(), out);
  EXPECT_EQ(p.error, EBUSY);
  EXPECT_EQ(p.malformed, 0u);

  NlBuilder ack;
  ack.msg(NLMSG_ERROR).i32(0).raw(&echoed, sizeof echoed).end();
  p = parse(ack.bytes(), out);
  EXPECT_EQ(p.error, 0) << "an acknowledgement is no error";

  NlBuilder failed_dump;
  failed_dump.msg(NLMSG_DONE).i32(-EINTR).end();
  p = parse(failed_dump.bytes(), out);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.error, EINTR);

  NlBuilder intr;
  intr.msg(RTM_NEWLINK, NLM_F_MULTI | NLM_F_DUMP_INTR).link(4, kAllUp).end();
  p = parse(intr.bytes(), out);
  EXPECT_TRUE(p.dump_interrupted);
  EXPECT_EQ(p.links, 1u);
}

TEST(LinkParse, MalformedMessagesAreSkippedAndCounted) {
  std::vector<LinkStatus> out;
  auto count = [&](std::vector<uint8_t> bytes) {
    out.clear();
    return parse(bytes, out);
  };
  {
    SCOPED_TRACE("shorter than a netlink header");
    const NetlinkParse p = count(std::vector<uint8_t>(10, 0));
    EXPECT_EQ(p.malformed, 1u);
    EXPECT_TRUE(out.empty());
  }
  {
    SCOPED_TRACE("empty buffer");
    const NetlinkParse p = count({});
    EXPECT_EQ(p.malformed, 0u);
    EXPECT_EQ(p.links, 0u);
  }
  {
    SCOPED_TRACE("nlmsg_len beyond the buffer: the walk stops");
    NlBuilder b;
    b.msg(RTM_NEWLINK).link(1, kAllUp).end();
    b.bytes()[0] = 200;
    const NetlinkParse p = count(b.bytes());
    EXPECT_EQ(p.malformed, 1u);
    EXPECT_TRUE(out.empty());
  }
  {
    SCOPED_TRACE("nlmsg_len below the header");
    NlBuilder b;
    b.msg(RTM_NEWLINK).link(1, kAllUp).end();
    b.bytes()[0] = 8;
    EXPECT_EQ(count(b.bytes()).malformed, 1u);
    EXPECT_TRUE(out.empty());
  }
  {
    SCOPED_TRACE("a link message too short for ifinfomsg; the next one still counts");
    NlBuilder b;
    b.msg(RTM_NEWLINK).raw("\0\0\0\0\0\0\0\0", 8).end();
    b.msg(RTM_NEWLINK).link(5, kAllUp).end();
    const NetlinkParse p = count(b.bytes());
    EXPECT_EQ(p.malformed, 1u);
    EXPECT_EQ(p.links, 1u);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].ifindex, 5);
  }
  {
    SCOPED_TRACE("interface index 0 and negative");
    NlBuilder b;
    b.msg(RTM_NEWLINK).link(0, kAllUp).end();
    b.msg(RTM_NEWLINK).link(-3, kAllUp).end();
    EXPECT_EQ(count(b.bytes()).malformed, 2u);
    EXPECT_TRUE(out.empty());
  }
  {
    SCOPED_TRACE("an attribute that overruns its message");
    NlBuilder b;
    b.msg(RTM_NEWLINK).link(1, kAllUp).operstate(IF_OPER_UP).end();
    const size_t attr_at = b.last_start() + NLMSG_HDRLEN + sizeof(ifinfomsg);
    b.bytes()[attr_at] = 40;  // rta_len 40 in an 8-byte attribute at the end
    b.msg(RTM_NEWLINK).link(2, kAllUp).end();
    const NetlinkParse p = count(b.bytes());
    EXPECT_EQ(p.malformed, 1u);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].ifindex, 2);
  }
  {
    SCOPED_TRACE("an attribute length below its header");
    NlBuilder b;
    b.msg(RTM_NEWLINK).link(1, kAllUp).operstate(IF_OPER_UP).end();
    b.bytes()[b.last_start() + NLMSG_HDRLEN + sizeof(ifinfomsg)] = 2;
    EXPECT_EQ(count(b.bytes()).malformed, 1u);
    EXPECT_TRUE(out.empty());
  }
  {
    SCOPED_TRACE("IFLA_OPERSTATE without its byte");
    NlBuilder b;
    b.msg(RTM_NEWLINK).link(1, kAllUp).attr(IFLA_OPERSTATE, nullptr, 0).end();
    EXPECT_EQ(count(b.bytes()).malformed, 1u);
    EXPECT_TRUE(out.empty());
  }
  {
    SCOPED_TRACE("attribute bytes too short for an attribute header");
    NlBuilder b;
    b.msg(RTM_NEWLINK).link(1, kAllUp).raw("\x01\x02\x03\x04", 4).end();
    // Shrink the message so 2 bytes of the 4 remain after ifinfomsg.
    const uint32_t len = NLMSG_HDRLEN + sizeof(ifinfomsg) + 2;
    std::memcpy(b.bytes().data(), &len, 4);
    EXPECT_EQ(count(b.bytes()).malformed, 1u);
    EXPECT_TRUE(out.empty());
  }
  {
    SCOPED_TRACE("trailing bytes after a good message");
    NlBuilder b;
    b.msg(RTM_NEWLINK).link(1, kAllUp).end();
    b.raw("\x01\x02\x03", 3);
    const NetlinkParse p = count(b.bytes());
    EXPECT_EQ(p.malformed, 1u);
    EXPECT_EQ(p.links, 1u);
  }
  {
    SCOPED_TRACE("an NLMSG_ERROR without its errno, and with a positive one");
    NlBuilder b;
    b.msg(NLMSG_ERROR).end();
    b.msg(NLMSG_ERROR).i32(5).end();
    const NetlinkParse p = count(b.bytes());
    EXPECT_EQ(p.malformed, 2u);
    EXPECT_EQ(p.error, 0);
  }
  {
    SCOPED_TRACE("an address message too short for ifaddrmsg");
    NlBuilder b;
    b.msg(RTM_NEWADDR).raw("\x02\x18", 2).end();
    const NetlinkParse p = count(b.bytes());
    EXPECT_EQ(p.malformed, 1u);
    EXPECT_EQ(p.addr_changes, 0u);
  }
}

// Every prefix of a good buffer, and every single-byte corruption of it,
// parses without reading outside it (ASan would say) and counts a link at
// most once per message.
TEST(LinkParse, EveryTruncationAndCorruptionIsSafe) {
  NlBuilder b;
  b.msg(RTM_NEWLINK, NLM_F_MULTI).link(1, kAllUp).operstate(IF_OPER_UP).end();
  const uint8_t v4[4] = {10, 0, 0, 1};
  b.msg(RTM_NEWADDR).addr(AF_INET, 1).attr(IFA_LOCAL, v4, 4).attr(IFA_ADDRESS, v4, 4).end();
  b.msg(RTM_DELLINK).link(2, 0).operstate(IF_OPER_DOWN).end();
  b.msg(NLMSG_DONE).i32(0).end();
  const std::vector<uint8_t> good = b.bytes();
  const SockAddr match = *SockAddr::parse("10.0.0.1");
  for (size_t n = 0; n <= good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(n));
    std::vector<LinkStatus> out;
    int32_t found = 0;
    const NetlinkParse p = parse_netlink(cut, out, &match, &found);
    EXPECT_LE(p.links, 2u);
    EXPECT_EQ(out.size(), p.links);
  }
  Prng rng(12);
  for (size_t i = 0; i < good.size(); ++i)
    for (int k = 0; k < 8; ++k) {
      std::vector<uint8_t> bad = good;
      bad[i] = static_cast<uint8_t>(rng.next_u64());
      std::vector<LinkStatus> out;
      int32_t found = 0;
      const NetlinkParse p = parse_netlink(bad, out, &match, &found);
      EXPECT_LE(p.links + p.malformed, good.size() / NLMSG_HDRLEN + 1);
      EXPECT_EQ(out.size(), p.links);
    }
  for (int k = 0; k < 2000; ++k) {
    std::vector<uint8_t> noise(rng.next_u64() % 200);
    for (auto& x : noise) x = static_cast<uint8_t>(rng.next_u64());
    std::vector<LinkStatus> out;
    (void)parse_netlink(noise, out);
  }
}

TEST(LinkParse, AddressesMatchOnTheirLocalSide) {
  const uint8_t ours[4] = {10, 1, 2, 3}, peer[4] = {10, 1, 2, 9};
  const SockAddr want = *SockAddr::parse("10.1.2.3:4791");  // the port does not matter
  std::vector<LinkStatus> out;
  {
    SCOPED_TRACE("IFA_LOCAL is ours");
    NlBuilder b;
    b.msg(RTM_NEWADDR).addr(AF_INET, 4).attr(IFA_ADDRESS, ours, 4).attr(IFA_LOCAL, ours, 4).end();
    int32_t found = 0;
    const NetlinkParse p = parse_netlink(b.bytes(), out, &want, &found);
    EXPECT_EQ(found, 4);
    EXPECT_EQ(p.addr_changes, 1u);
  }
  {
    SCOPED_TRACE("point to point: IFA_ADDRESS is the peer's");
    NlBuilder b;
    b.msg(RTM_NEWADDR).addr(AF_INET, 4).attr(IFA_ADDRESS, ours, 4).attr(IFA_LOCAL, peer, 4).end();
    int32_t found = 0;
    parse_netlink(b.bytes(), out, &want, &found);
    EXPECT_EQ(found, 0);
  }
  {
    SCOPED_TRACE("a deleted address is not a match, but a change");
    NlBuilder b;
    b.msg(RTM_DELADDR).addr(AF_INET, 4).attr(IFA_LOCAL, ours, 4).end();
    int32_t found = 0;
    const NetlinkParse p = parse_netlink(b.bytes(), out, &want, &found);
    EXPECT_EQ(found, 0);
    EXPECT_EQ(p.addr_changes, 1u);
  }
  {
    SCOPED_TRACE("IPv6: IFA_ADDRESS alone; another family never matches");
    const SockAddr v6 = *SockAddr::parse("fd00:5::1");
    const auto bytes = v6.address_bytes();
    NlBuilder b;
    b.msg(RTM_NEWADDR).addr(AF_INET, 3).attr(IFA_LOCAL, ours, 4).end();
    b.msg(RTM_NEWADDR).addr(AF_INET6, 6).attr(IFA_ADDRESS, bytes.data(), 16).end();
    int32_t found = 0;
    parse_netlink(b.bytes(), out, &v6, &found);
    EXPECT_EQ(found, 6);
  }
  {
    SCOPED_TRACE("a link-local address with a scope id matches only on that interface");
    const SockAddr ll = SockAddr::ipv6({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 0, 8);
    const auto bytes = ll.address_bytes();
    NlBuilder b;
    b.msg(RTM_NEWADDR).addr(AF_INET6, 7).attr(IFA_ADDRESS, bytes.data(), 16).end();
    int32_t found = 0;
    parse_netlink(b.bytes(), out, &ll, &found);
    EXPECT_EQ(found, 0);
    NlBuilder c;
    c.msg(RTM_NEWADDR).addr(AF_INET6, 8).attr(IFA_ADDRESS, bytes.data(), 16).end();
    parse_netlink(c.bytes(), out, &ll, &found);
    EXPECT_EQ(found, 8);
  }
  EXPECT_TRUE(out.empty());
}

// ---------------------------------------------------------------- the kernel

TEST(LinkLookup, LoopbackAddressesAreOnLo) {
  const int lo = static_cast<int>(::if_nametoindex("lo"));
  ASSERT_GT(lo, 0);
  auto v4 = interface_of(*SockAddr::parse("127.0.0.1"));
  ASSERT_TRUE(v4.ok()) << last_error_message();
  EXPECT_EQ(*v4, lo);
  auto none = interface_of(*SockAddr::parse("192.0.2.231"));  // TEST-NET-1: no host has it
  EXPECT_EQ(none.error(), Errc::not_found);
  EXPECT_EQ(interface_of(SockAddr()).error(), Errc::invalid_argument);
  // IPv6 only where the host has ::1 (some containers disable IPv6).
  auto v6 = interface_of(*SockAddr::parse("::1"));
  if (!v6.ok() && v6.error() == Errc::not_found) GTEST_SKIP() << "no ::1 on this host";
  ASSERT_TRUE(v6.ok()) << last_error_message();
  EXPECT_EQ(*v6, lo);
}

/// Reads `m` until a status of `ifindex` satisfies `pred` (up to 5 s).
template <class Pred>
bool wait_for(LinkMonitor& m, int32_t ifindex, Pred pred, LinkStatus* last) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::vector<LinkStatus> out;
  while (std::chrono::steady_clock::now() < end) {
    out.clear();
    if (!m.read(out).ok()) return false;
    for (const LinkStatus& s : out)
      if (s.ifindex == ifindex) {
        *last = s;
        if (pred(s)) return true;
      }
    (void)wait_readable(m.fd(), Duration::ms(50));
  }
  return false;
}

// In a namespace of its own: a veth whose peer goes up and down (its
// carrier), an address added, and the pair deleted.
TEST(LinkMonitorNetns, FollowsAVethsCarrierAndItsRemoval) {
  std::string skip;
  std::thread t([&] {
    skip = test_support::enter_private_netns();
    if (!skip.empty()) return;
    if (std::system("ip link add mrcv0 type veth peer name mrcv1 2>/dev/null") != 0 ||
        std::system("ip addr add 10.99.0.1/24 dev mrcv0 2>/dev/null") != 0) {
      skip = "ip (iproute2) or the veth driver unavailable";
      return;
    }
    const auto index = static_cast<int32_t>(::if_nametoindex("mrcv0"));
    ASSERT_GT(index, 0);
    auto found = interface_of(*SockAddr::parse("10.99.0.1"));
    ASSERT_TRUE(found.ok()) << last_error_message();
    EXPECT_EQ(*found, index);

    auto m = LinkMonitor::open();
    ASSERT_TRUE(m.ok()) << last_error_message();
    std::vector<LinkStatus> all;
    ASSERT_TRUE(m->dump(all, Duration::s(2)).ok()) << last_error_message();
    EXPECT_FALSE(m->dumping());
    bool saw_lo = false, saw_veth = false;
    for (const LinkStatus& s : all) {
      if (s.flags & link_flags::kLoopback) saw_lo = s.carrier_up;
      if (s.ifindex == index) {
        saw_veth = true;
        EXPECT_FALSE(s.carrier_up) << "created down";
      }
    }
    EXPECT_TRUE(saw_lo) << "lo is up in the namespace";
    EXPECT_TRUE(saw_veth);

    LinkStatus last;
    ASSERT_EQ(std::system("ip link set mrcv0 up"), 0);
    EXPECT_TRUE(wait_for(*m, index, [](const LinkStatus& s) { return (s.flags & link_flags::kUp) != 0; }, &last));
    EXPECT_FALSE(last.carrier_up) << "up, but its peer is down: no carrier";
    ASSERT_EQ(std::system("ip link set mrcv1 up"), 0);
    EXPECT_TRUE(wait_for(*m, index, [](const LinkStatus& s) { return s.carrier_up; }, &last));
    ASSERT_EQ(std::system("ip link set mrcv1 down"), 0);
    EXPECT_TRUE(wait_for(*m, index, [](const LinkStatus& s) { return !s.carrier_up; }, &last));
    EXPECT_EQ(last.operstate, OperState::lowerlayerdown);
    EXPECT_TRUE(last.flags & link_flags::kUp) << "still administratively up";
    // Address changes are noticed (a plane's address may move).
    (void)m->take_addr_changed();
    ASSERT_EQ(std::system("ip addr add 10.99.1.1/24 dev mrcv0"), 0);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    bool changed = false;
    while (!changed && std::chrono::steady_clock::now() < end) {
      std::vector<LinkStatus> out;
      ASSERT_TRUE(m->read(out).ok());
      changed = m->take_addr_changed();
      if (!changed) (void)wait_readable(m->fd(), Duration::ms(50));
    }
    EXPECT_TRUE(changed);
    ASSERT_EQ(std::system("ip link del mrcv0"), 0);
    EXPECT_TRUE(wait_for(*m, index, [](const LinkStatus& s) { return s.removed; }, &last));
    EXPECT_FALSE(last.carrier_up);
    EXPECT_EQ(m->malformed(), 0u);
  });
  t.join();
  if (!skip.empty()) GTEST_SKIP() << skip;
}

}  // namespace
}  // namespace mrc::platform
