// SPDX-License-Identifier: BSD-2-Clause
#include "platform/sock_addr.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace mrc::platform {

static_assert(sizeof(sockaddr_storage) == SockAddr::kStorageBytes);
static_assert(alignof(sockaddr_storage) <= 8);

namespace {

// The storage is only ever read through these copies: memcpy keeps the
// accesses free of aliasing questions and compiles to plain loads.
sa_family_t family_of(const void* p) {
  sockaddr_storage ss;
  std::memcpy(&ss.ss_family, static_cast<const std::byte*>(p) + offsetof(sockaddr_storage, ss_family),
              sizeof(ss.ss_family));
  return ss.ss_family;
}
sockaddr_in load4(const void* p) { sockaddr_in a; std::memcpy(&a, p, sizeof a); return a; }
sockaddr_in6 load6(const void* p) { sockaddr_in6 a; std::memcpy(&a, p, sizeof a); return a; }

Result<uint16_t> parse_port(std::string_view s) {
  unsigned v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v > 65535)
    return Errc::invalid_argument;
  return static_cast<uint16_t>(v);
}

Result<SockAddr> parse_v6_host(std::string_view host, uint16_t port) {
  std::string_view scope;
  if (auto pct = host.find('%'); pct != std::string_view::npos) {
    scope = host.substr(pct + 1);
    host = host.substr(0, pct);
    if (scope.empty()) return Errc::invalid_argument;
  }
  std::string h(host);
  in6_addr a{};
  if (inet_pton(AF_INET6, h.c_str(), &a) != 1) return Errc::invalid_argument;
  uint32_t scope_id = 0;
  if (!scope.empty()) {
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(scope.data(), scope.data() + scope.size(), v);
    if (ec == std::errc() && ptr == scope.data() + scope.size()) {
      scope_id = v;
    } else {
      scope_id = if_nametoindex(std::string(scope).c_str());
      if (scope_id == 0) return Errc::invalid_argument;
    }
  }
  std::array<uint8_t, 16> bytes;
  std::memcpy(bytes.data(), &a, 16);
  return SockAddr::ipv6(bytes, port, scope_id);
}

}  // namespace

Result<SockAddr> SockAddr::parse(std::string_view text, uint16_t default_port) {
  if (text.empty()) return Errc::invalid_argument;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return Errc::invalid_argument;
    uint16_t port = default_port;
    const auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return Errc::invalid_argument;
      auto p = parse_port(rest.substr(1));
      if (!p) return p.error();
      port = *p;
    }
    return parse_v6_host(text.substr(1, close - 1), port);
  }
  const auto colons = std::count(text.begin(), text.end(), ':');
  if (colons >= 2) return parse_v6_host(text, default_port);  // bare IPv6, no port
  std::string_view host = text;
  uint16_t port = default_port;
  if (colons == 1) {
    const auto c = text.find(':');
    host = text.substr(0, c);
    auto p = parse_port(text.substr(c + 1));
    if (!p) return p.error();
    port = *p;
  }
  in_addr a{};
  if (inet_pton(AF_INET, std::string(host).c_str(), &a) != 1) return Errc::invalid_argument;
  std::array<uint8_t, 4> bytes;
  std::memcpy(bytes.data(), &a, 4);
  return ipv4(bytes, port);
}

SockAddr SockAddr::ipv4(std::array<uint8_t, 4> addr, uint16_t port) {
  SockAddr s;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  std::memcpy(&a.sin_addr, addr.data(), 4);
  std::memcpy(s.storage_.data(), &a, sizeof a);
  return s;
}

SockAddr SockAddr::ipv6(std::array<uint8_t, 16> addr, uint16_t port, uint32_t scope_id) {
  SockAddr s;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  a.sin6_scope_id = scope_id;
  std::memcpy(&a.sin6_addr, addr.data(), 16);
  std::memcpy(s.storage_.data(), &a, sizeof a);
  return s;
}

SockAddr SockAddr::ipv6_loopback(uint16_t port) {
  std::array<uint8_t, 16> b{};
  b[15] = 1;
  return ipv6(b, port);
}

Result<SockAddr> SockAddr::from_native(const void* sa, size_t len) {
  if (len < sizeof(sa_family_t)) return Errc::truncated;
  const sa_family_t f = family_of(sa);
  SockAddr s;
  if (f == AF_INET) {
    if (len < sizeof(sockaddr_in)) return Errc::truncated;
    std::memcpy(s.storage_.data(), sa, sizeof(sockaddr_in));
  } else if (f == AF_INET6) {
    if (len < sizeof(sockaddr_in6)) return Errc::truncated;
    std::memcpy(s.storage_.data(), sa, sizeof(sockaddr_in6));
  } else {
    return Errc::not_supported;
  }
  return s;
}

AddrFamily SockAddr::family() const {
  switch (family_of(storage_.data())) {
    case AF_INET: return AddrFamily::ipv4;
    case AF_INET6: return AddrFamily::ipv6;
    default: return AddrFamily::none;
  }
}

bool SockAddr::is_any() const {
  const auto b = address_bytes();
  if (b.empty()) return false;
  for (uint8_t x : b)
    if (x != 0) return false;
  return true;
}

uint16_t SockAddr::port() const {
  switch (family()) {
    case AddrFamily::ipv4: return ntohs(load4(storage_.data()).sin_port);
    case AddrFamily::ipv6: return ntohs(load6(storage_.data()).sin6_port);
    case AddrFamily::none: break;
  }
  return 0;
}

void SockAddr::set_port(uint16_t port) {
  const uint16_t be = htons(port);
  // sin_port and sin6_port sit at the same offset.
  static_assert(offsetof(sockaddr_in, sin_port) == offsetof(sockaddr_in6, sin6_port));
  if (family() != AddrFamily::none)
    std::memcpy(storage_.data() + offsetof(sockaddr_in, sin_port), &be, sizeof be);
}

std::span<const uint8_t> SockAddr::address_bytes() const {
  const auto* base = reinterpret_cast<const uint8_t*>(storage_.data());
  switch (family()) {
    case AddrFamily::ipv4: return {base + offsetof(sockaddr_in, sin_addr), 4};
    case AddrFamily::ipv6: return {base + offsetof(sockaddr_in6, sin6_addr), 16};
    case AddrFamily::none: break;
  }
  return {};
}

uint32_t SockAddr::scope_id() const {
  return is_ipv6() ? load6(storage_.data()).sin6_scope_id : 0;
}

uint32_t SockAddr::flow_label() const {
  return is_ipv6() ? (ntohl(load6(storage_.data()).sin6_flowinfo) & 0xfffffu) : 0;
}

void SockAddr::set_flow_label(uint32_t label) {
  if (!is_ipv6()) return;
  const uint32_t be = htonl(label & 0xfffffu);
  std::memcpy(storage_.data() + offsetof(sockaddr_in6, sin6_flowinfo), &be, sizeof be);
}

uint32_t SockAddr::native_len() const {
  switch (family()) {
    case AddrFamily::ipv4: return sizeof(sockaddr_in);
    case AddrFamily::ipv6: return sizeof(sockaddr_in6);
    case AddrFamily::none: break;
  }
  return 0;
}

std::string SockAddr::host_string() const {
  char buf[INET6_ADDRSTRLEN + 16] = {};
  const auto b = address_bytes();
  if (is_ipv4()) {
    inet_ntop(AF_INET, b.data(), buf, sizeof buf);
    return buf;
  }
  if (is_ipv6()) {
    inet_ntop(AF_INET6, b.data(), buf, sizeof buf);
    std::string out = buf;
    if (const uint32_t s = scope_id(); s != 0) out += "%" + std::to_string(s);
    return out;
  }
  return {};
}

std::string SockAddr::to_string() const {
  if (is_ipv4()) return host_string() + ":" + std::to_string(port());
  if (is_ipv6()) return "[" + host_string() + "]:" + std::to_string(port());
  return {};
}

bool operator==(const SockAddr& a, const SockAddr& b) {
  if (a.family() != b.family()) return false;
  if (a.family() == AddrFamily::none) return true;
  const auto x = a.address_bytes();
  const auto y = b.address_bytes();
  return a.port() == b.port() && a.scope_id() == b.scope_id() &&
         std::memcmp(x.data(), y.data(), x.size()) == 0;
}

size_t SockAddr::hash() const {
  // FNV-1a over family, port, scope and address bytes: the fields == compares.
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  mix(static_cast<uint64_t>(family()));
  mix(port());
  mix(scope_id());
  for (uint8_t x : address_bytes()) mix(x);
  return static_cast<size_t>(h);
}

}  // namespace mrc::platform
