// SPDX-License-Identifier: BSD-2-Clause
// The out-of-band exchange's TCP channel: connect, accept, framed messages
// with timeouts, and the default plane addresses a client derives from it.

#include "perf/perf_common.hpp"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace mrc::perf {

namespace {

std::string errno_text(int err) { return fmt::format("{} ({})", std::strerror(err), err); }

}  // namespace

// ------------------------------------------------------------------ TCP

namespace {

/// Numeric address of a socket address; IPv4-mapped IPv6 shown as IPv4.
std::string numeric_address(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], buf, sizeof buf);
    } else {
      inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    }
  }
  return buf;
}

void set_nodelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

Channel& Channel::operator=(Channel&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

Channel::~Channel() {
  if (fd_ >= 0) ::close(fd_);
}

Channel Channel::connect(const std::string& host, uint16_t port, double timeout_s) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw PerfError(fmt::format("cannot resolve '{}': {}", host, gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  int last_err = 0;
  for (;;) {
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) {
        last_err = errno;
        continue;
      }
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        set_nodelay(fd);
        return Channel(fd);
      }
      last_err = errno;
      ::close(fd);
    }
    // A server started a moment later is the common case in scripts: retry
    // while the connection is refused, until the timeout.
    if (last_err != ECONNREFUSED || now_ns() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw PerfError(fmt::format("cannot connect to {} port {}: {} (is the server running? -p must match)", host, port,
                              errno_text(last_err)));
}

Channel Channel::accept_one(uint16_t port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw PerfError(fmt::format("socket: {}", errno_text(errno)));
  Channel listener(fd);
  int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc = 0;
  if (v6) {
    int zero = 0;
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(port);
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(port);
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  }
  if (rc != 0) throw PerfError(fmt::format("cannot listen on TCP port {}: {} (use -p)", port, errno_text(errno)));
  if (::listen(fd, 1) != 0) throw PerfError(fmt::format("listen: {}", errno_text(errno)));
  for (;;) {
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) {
      set_nodelay(c);
      return Channel(c);
    }
    if (errno != EINTR && errno != ECONNABORTED) throw PerfError(fmt::format("accept: {}", errno_text(errno)));
  }
}

void Channel::send(MsgType type, std::span<const uint8_t> payload) {
  if (fd_ < 0) throw PerfError("exchange: connection closed");
  std::vector<uint8_t> buf = encode_header(type, static_cast<uint32_t>(payload.size()));
  buf.insert(buf.end(), payload.begin(), payload.end());
  size_t off = 0;
  while (off < buf.size()) {
    const ssize_t n = ::send(fd_, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw PerfError(fmt::format("exchange: sending {} failed: {}", msg_type_name(type), errno_text(errno)));
    }
    off += static_cast<size_t>(n);
  }
}

void Channel::send_error_quietly(std::string_view text) noexcept {
  if (fd_ < 0) return;
  try {
    const auto payload = encode_error(text);
    send(MsgType::error, payload);
  } catch (...) {  // NOLINT(bugprone-empty-catch): the peer may be gone already
  }
}

void Channel::read_exact(uint8_t* dst, size_t n, double timeout_s, std::string_view what) {
  const int64_t deadline = timeout_s < 0 ? -1 : now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  size_t off = 0;
  while (off < n) {
    int wait_ms = -1;
    if (deadline >= 0) {
      const int64_t left = deadline - now_ns();
      if (left <= 0) throw PerfError(fmt::format("exchange: no {} from the peer within {} s", what, timeout_s));
      wait_ms = static_cast<int>(std::min<int64_t>(left / 1000000 + 1, 1000000));
    }
    pollfd p{fd_, POLLIN, 0};
    const int rc = ::poll(&p, 1, wait_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      throw PerfError(fmt::format("exchange: poll: {}", errno_text(errno)));
    }
    if (rc == 0) continue;  // deadline re-checked above
    const ssize_t got = ::recv(fd_, dst + off, n - off, 0);
    if (got == 0)
      throw PerfError(fmt::format("exchange: the peer closed the connection while this side waited for {}", what));
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw PerfError(fmt::format("exchange: receiving {}: {}", what, errno_text(errno)));
    }
    off += static_cast<size_t>(got);
  }
}

Channel::Message Channel::recv(double timeout_s) {
  if (fd_ < 0) throw PerfError("exchange: connection closed");
  std::array<uint8_t, kHeaderBytes> hdr{};
  read_exact(hdr.data(), hdr.size(), timeout_s, "a message");
  auto h = decode_header(hdr);
  if (!h) throw PerfError("exchange: " + h.error);
  Message m;
  m.type = h.value->type;
  m.payload.resize(h.value->length);
  read_exact(m.payload.data(), m.payload.size(), timeout_s, msg_type_name(m.type));
  return m;
}

std::vector<uint8_t> Channel::expect(MsgType want, double timeout_s) {
  Message m = recv(timeout_s);
  if (m.type == MsgType::error) throw PerfError("the peer reports: " + decode_error(m.payload));
  if (m.type != want)
    throw PerfError(fmt::format("exchange: expected {} from the peer, got {}", msg_type_name(want),
                                msg_type_name(m.type)));
  return std::move(m.payload);
}

std::string Channel::local_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return numeric_address(ss);
}

std::string Channel::peer_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return numeric_address(ss);
}

std::vector<std::string> default_client_planes(const std::string& local_tcp_addr,
                                               const std::vector<std::string>& server_planes) {
  auto is_v4_loopback = [](const std::string& s) {
    in_addr a{};
    return inet_pton(AF_INET, s.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
  };
  const bool loopback = !server_planes.empty() && std::all_of(server_planes.begin(), server_planes.end(), is_v4_loopback);
  if (loopback) {
    std::vector<std::string> mine;
    for (uint32_t k = 2; mine.size() < server_planes.size() && k < 255; ++k) {
      std::string a = fmt::format("127.0.0.{}", k);
      if (std::find(server_planes.begin(), server_planes.end(), a) == server_planes.end()) mine.push_back(a);
    }
    return mine;
  }
  if (server_planes.size() != 1)
    throw PerfError(fmt::format("the server has {} planes: give --planes with {} local addresses",
                                server_planes.size(), server_planes.size()));
  if (local_tcp_addr.empty()) throw PerfError("cannot tell this host's address towards the server: give --planes");
  if (std::find(server_planes.begin(), server_planes.end(), local_tcp_addr) != server_planes.end())
    throw PerfError(fmt::format("this client would bind {} UDP port of the server's plane address {}: on one host give "
                                "--planes with another local address",
                                "the same", local_tcp_addr));
  return {local_tcp_addr};
}

}  // namespace mrc::perf
