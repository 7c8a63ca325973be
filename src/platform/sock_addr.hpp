// SPDX-License-Identifier: BSD-2-Clause
// SockAddr: an IPv4 or IPv6 UDP endpoint address (address + port).
//
// A value type wrapping the kernel's sockaddr_storage, so it can be handed to
// sendmsg/recvmsg without conversion. This header includes no OS header: the
// storage is an opaque 128-byte block whose layout the .cc checks against
// sockaddr_storage.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace mrc::platform {

enum class AddrFamily : uint8_t { none, ipv4, ipv6 };

class SockAddr {
 public:
  /// An empty address (family none). Such an address cannot be bound or sent to.
  SockAddr() = default;

  /// Parses a numeric address with an optional port:
  ///   "127.0.0.1", "10.0.0.1:4791", "::1", "[::1]", "[::1]:4791",
  ///   "fe80::1%eth0" / "[fe80::1%2]:4791" (scope by interface name or index).
  /// Without a port, `default_port` is used. Host names are not resolved.
  /// Errors: invalid_argument (not a numeric address, bad or out-of-range
  /// port, unknown scope interface). No OS error is recorded.
  static Result<SockAddr> parse(std::string_view text, uint16_t default_port = 0);

  /// 4 address bytes in network order (a.b.c.d = {a,b,c,d}).
  static SockAddr ipv4(std::array<uint8_t, 4> addr, uint16_t port);
  /// 16 address bytes in network order; `scope_id` is the interface index for link-local.
  static SockAddr ipv6(std::array<uint8_t, 16> addr, uint16_t port, uint32_t scope_id = 0);
  static SockAddr ipv4_loopback(uint16_t port) { return ipv4({127, 0, 0, 1}, port); }
  static SockAddr ipv6_loopback(uint16_t port);
  static SockAddr ipv4_any(uint16_t port) { return ipv4({0, 0, 0, 0}, port); }
  static SockAddr ipv6_any(uint16_t port) { return ipv6({}, port); }

  /// Copies a kernel `struct sockaddr` of `len` bytes (AF_INET or AF_INET6).
  /// Errors: not_supported for another family, truncated if `len` is too short.
  static Result<SockAddr> from_native(const void* sa, size_t len);

  AddrFamily family() const;
  bool is_ipv4() const { return family() == AddrFamily::ipv4; }
  bool is_ipv6() const { return family() == AddrFamily::ipv6; }
  /// True for 0.0.0.0 and ::.
  bool is_any() const;

  /// Port in host order (0 for family none).
  uint16_t port() const;
  /// Sets the port (no effect on family none).
  void set_port(uint16_t port);

  /// The address bytes in network order: 4 for IPv4, 16 for IPv6, 0 for none.
  std::span<const uint8_t> address_bytes() const;
  /// IPv6 scope id (interface index); 0 for IPv4.
  uint32_t scope_id() const;

  /// IPv6 flow label (20 bits) stored in sin6_flowinfo; used by sendmsg only
  /// when the socket has IPV6_FLOWINFO_SEND on and the label is leased. Not
  /// part of equality. 0 for IPv4.
  uint32_t flow_label() const;
  void set_flow_label(uint32_t label);

  /// "127.0.0.1:4791", "[::1]:4791", "[fe80::1%2]:4791"; "" for family none.
  /// The output parses back to an equal address.
  std::string to_string() const;
  /// The address alone: "127.0.0.1", "::1".
  std::string host_string() const;

  /// Kernel view, for the platform implementation: a `const struct sockaddr*`
  /// and its length (16 for IPv4, 28 for IPv6, 0 for none).
  const void* native() const { return storage_.data(); }
  void* native_mut() { return storage_.data(); }
  uint32_t native_len() const;
  static constexpr size_t kStorageBytes = 128;

  /// Equal when family, address bytes, port and (IPv6) scope id are equal.
  friend bool operator==(const SockAddr& a, const SockAddr& b);
  /// Hash consistent with ==.
  size_t hash() const;

 private:
  alignas(8) std::array<std::byte, kStorageBytes> storage_{};
};

/// For std::unordered_map<SockAddr, ...>.
struct SockAddrHash {
  size_t operator()(const SockAddr& a) const { return a.hash(); }
};

}  // namespace mrc::platform

template <>
struct std::hash<mrc::platform::SockAddr> {
  size_t operator()(const mrc::platform::SockAddr& a) const { return a.hash(); }
};
