// SPDX-License-Identifier: BSD-2-Clause
// Tests for platform/sock_addr.hpp: parsing, formatting, ports, equality, hash.
#include "platform/sock_addr.hpp"

#include <gtest/gtest.h>

#include <unordered_set>

namespace mrc::platform {
namespace {

TEST(PlatformSockAddr, ParsesIpv4WithAndWithoutPort) {
  auto a = SockAddr::parse("127.0.0.1");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->is_ipv4());
  EXPECT_EQ(a->port(), 0);
  EXPECT_EQ(a->to_string(), "127.0.0.1:0");
  auto b = SockAddr::parse("10.0.0.1:4791");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port(), 4791);
  EXPECT_EQ(b->host_string(), "10.0.0.1");
  EXPECT_EQ(b->address_bytes().size(), 4u);
  EXPECT_EQ(b->address_bytes()[0], 10);
  auto c = SockAddr::parse("127.0.0.2", 4791);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port(), 4791);
}

TEST(PlatformSockAddr, ParsesIpv6Forms) {
  auto a = SockAddr::parse("::1");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->is_ipv6());
  EXPECT_EQ(*a, SockAddr::ipv6_loopback(0));
  auto b = SockAddr::parse("[::1]:4791");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port(), 4791);
  EXPECT_EQ(b->to_string(), "[::1]:4791");
  auto c = SockAddr::parse("[2001:db8::5]", 99);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port(), 99);
  EXPECT_EQ(c->host_string(), "2001:db8::5");
  auto d = SockAddr::parse("[fe80::1%1]:5");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->scope_id(), 1u);
  EXPECT_EQ(d->to_string(), "[fe80::1%1]:5");
  auto e = SockAddr::parse("fe80::1%lo");
  ASSERT_TRUE(e.ok());
  EXPECT_NE(e->scope_id(), 0u);
}

TEST(PlatformSockAddr, RejectsMalformed) {
  for (const char* bad : {"", "1.2.3", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:-1", "1.2.3.4:4x",
                          "[::1", "[::1]4791", "[::1]:", "::g", "host.example:80", "256.1.1.1",
                          "fe80::1%", "fe80::1%nosuchif0"}) {
    EXPECT_FALSE(SockAddr::parse(bad).ok()) << bad;
  }
}

TEST(PlatformSockAddr, FormatParsesBack) {
  for (const char* s : {"127.0.0.1:1", "10.1.2.3:65535", "[::1]:4791", "[2001:db8::1]:0"}) {
    auto a = SockAddr::parse(s);
    ASSERT_TRUE(a.ok()) << s;
    EXPECT_EQ(a->to_string(), s);
    auto b = SockAddr::parse(a->to_string());
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*a, *b);
  }
}

TEST(PlatformSockAddr, PortSetAndEquality) {
  SockAddr a = SockAddr::ipv4_loopback(1);
  SockAddr b = SockAddr::ipv4_loopback(2);
  EXPECT_NE(a, b);
  b.set_port(1);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(SockAddr::ipv4_loopback(1), SockAddr::ipv6_loopback(1));
  EXPECT_EQ(SockAddr(), SockAddr());
  EXPECT_EQ(SockAddr().port(), 0);
  EXPECT_EQ(SockAddr().native_len(), 0u);
  EXPECT_EQ(a.native_len(), 16u);
  EXPECT_EQ(SockAddr::ipv6_loopback(1).native_len(), 28u);
  // The flow label is not part of the identity.
  SockAddr c = SockAddr::ipv6_loopback(7), d = c;
  d.set_flow_label(0x12345);
  EXPECT_EQ(d.flow_label(), 0x12345u);
  EXPECT_EQ(c, d);
  EXPECT_TRUE(SockAddr::ipv4_any(0).is_any());
  EXPECT_TRUE(SockAddr::ipv6_any(0).is_any());
  EXPECT_FALSE(a.is_any());
}

TEST(PlatformSockAddr, HashSpreadsInASet) {
  std::unordered_set<SockAddr> set;
  for (uint16_t p = 1; p <= 100; ++p) {
    set.insert(SockAddr::ipv4_loopback(p));
    set.insert(SockAddr::ipv6_loopback(p));
  }
  EXPECT_EQ(set.size(), 200u);
  EXPECT_EQ(set.count(*SockAddr::parse("127.0.0.1:50")), 1u);
}

TEST(PlatformSockAddr, FromNative) {
  SockAddr a = *SockAddr::parse("[::1]:9");
  auto b = SockAddr::from_native(a.native(), a.native_len());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, a);
  EXPECT_EQ(SockAddr::from_native(a.native(), 4).error(), Errc::truncated);
  SockAddr none;
  EXPECT_EQ(SockAddr::from_native(none.native(), SockAddr::kStorageBytes).error(), Errc::not_supported);
}

}  // namespace
}  // namespace mrc::platform
