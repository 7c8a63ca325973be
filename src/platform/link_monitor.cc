// SPDX-License-Identifier: BSD-2-Clause
#include "platform/link_monitor.hpp"

#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "platform/epoll.hpp"
#include "platform/os_error.hpp"

namespace mrc::platform {

static_assert(static_cast<uint8_t>(OperState::unknown) == IF_OPER_UNKNOWN);
static_assert(static_cast<uint8_t>(OperState::notpresent) == IF_OPER_NOTPRESENT);
static_assert(static_cast<uint8_t>(OperState::down) == IF_OPER_DOWN);
static_assert(static_cast<uint8_t>(OperState::lowerlayerdown) == IF_OPER_LOWERLAYERDOWN);
static_assert(static_cast<uint8_t>(OperState::testing) == IF_OPER_TESTING);
static_assert(static_cast<uint8_t>(OperState::dormant) == IF_OPER_DORMANT);
static_assert(static_cast<uint8_t>(OperState::up) == IF_OPER_UP);
static_assert(link_flags::kUp == IFF_UP && link_flags::kLoopback == IFF_LOOPBACK);
static_assert(link_flags::kRunning == IFF_RUNNING && link_flags::kLowerUp == IFF_LOWER_UP);

namespace {

// Netlink messages and attributes are 4-byte aligned (NLMSG_ALIGNTO,
// RTA_ALIGNTO); a buffer from recv() need not be aligned for our types, so
// every field is copied out.
constexpr size_t align4(size_t n) { return (n + 3) & ~size_t{3}; }
constexpr size_t kAttrHeader = 4;  // struct rtattr / nlattr: u16 length, u16 type

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Calls f(type, payload) for every attribute in `attrs`; false (stopping) if
// one is malformed or f says so. Attribute lengths exclude the padding that
// aligns the next one; the last one may lack its padding.
template <class F>
bool for_each_attr(std::span<const uint8_t> attrs, F&& f) {
  size_t at = 0;
  while (at < attrs.size()) {
    const size_t left = attrs.size() - at;
    if (left < kAttrHeader) return false;
    const auto len = load<uint16_t>(attrs.data() + at);
    const auto type = static_cast<uint16_t>(load<uint16_t>(attrs.data() + at + 2) & NLA_TYPE_MASK);
    if (len < kAttrHeader || len > left) return false;
    if (!f(type, attrs.subspan(at + kAttrHeader, len - kAttrHeader))) return false;
    at += std::min(left, align4(len));
  }
  return true;
}

bool parse_link(bool removed, std::span<const uint8_t> body, std::vector<LinkStatus>& out) {
  if (body.size() < sizeof(ifinfomsg)) return false;
  const auto ifi = load<ifinfomsg>(body.data());
  if (ifi.ifi_index <= 0) return false;
  LinkStatus s;
  s.ifindex = ifi.ifi_index;
  s.flags = ifi.ifi_flags;
  s.removed = removed;
  const bool ok = for_each_attr(body.subspan(NLMSG_ALIGN(sizeof(ifinfomsg))), [&](uint16_t type, auto payload) {
    if (type != IFLA_OPERSTATE) return true;
    if (payload.empty()) return false;
    // A value from a newer kernel than this code: let the flags decide.
    s.operstate = payload[0] <= IF_OPER_UP ? static_cast<OperState>(payload[0]) : OperState::unknown;
    return true;
  });
  if (!ok) return false;
  const uint32_t need = link_flags::kUp | link_flags::kLowerUp | link_flags::kRunning;
  const bool oper_down = s.operstate == OperState::notpresent || s.operstate == OperState::down ||
                         s.operstate == OperState::lowerlayerdown;
  s.carrier_up = !removed && (s.flags & need) == need && !oper_down;
  out.push_back(s);
  return true;
}

// An RTM_NEWADDR / RTM_DELADDR: checks its framing and, for a new address
// of `match`'s family equal to it, returns its interface in *found.
bool parse_addr(bool added, std::span<const uint8_t> body, const SockAddr* match, int32_t* found) {
  if (body.size() < sizeof(ifaddrmsg)) return false;
  const auto ifa = load<ifaddrmsg>(body.data());
  std::span<const uint8_t> local, address;
  const bool ok = for_each_attr(body.subspan(NLMSG_ALIGN(sizeof(ifaddrmsg))), [&](uint16_t type, auto payload) {
    if (type == IFA_LOCAL) local = payload;
    if (type == IFA_ADDRESS) address = payload;
    return true;
  });
  if (!ok) return false;
  if (!added || match == nullptr || found == nullptr || ifa.ifa_index == 0 || ifa.ifa_index > INT32_MAX) return true;
  const int family = match->is_ipv4() ? AF_INET : match->is_ipv6() ? AF_INET6 : -1;
  if (ifa.ifa_family != family) return true;
  // The local side: IFA_ADDRESS of a point-to-point address is the peer's.
  const std::span<const uint8_t> mine = local.empty() ? address : local;
  const std::span<const uint8_t> want = match->address_bytes();
  if (mine.size() != want.size() || !std::equal(want.begin(), want.end(), mine.begin())) return true;
  if (match->scope_id() != 0 && match->scope_id() != ifa.ifa_index) return true;
  *found = static_cast<int32_t>(ifa.ifa_index);
  return true;
}

// recvmsg without blocking, retrying EINTR. The sender's address goes to
// `from` (the kernel is nl_pid 0); MSG_TRUNC in *flags for a message larger
// than `buf`.
ssize_t recv_netlink(int fd, std::vector<uint8_t>& buf, sockaddr_nl& from, int* flags) {
  for (;;) {
    iovec iov{buf.data(), buf.size()};
    msghdr mh{};
    mh.msg_name = &from;
    mh.msg_namelen = sizeof from;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    const ssize_t n = ::recvmsg(fd, &mh, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    *flags = mh.msg_flags;
    if (n >= 0 && (mh.msg_namelen < sizeof from || from.nl_family != AF_NETLINK)) from.nl_pid = ~0u;
    return n;
  }
}

// A dump request of `type` (RTM_GETLINK, RTM_GETADDR) for `family`, to the kernel.
template <class Msg>
Status send_dump(int fd, uint16_t type, uint32_t seq, const Msg& m, const char* call) {
  struct {
    nlmsghdr h;
    Msg m;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = type;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = seq;
  req.m = m;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  for (;;) {
    if (::sendto(fd, &req, sizeof req, 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel) ==
        static_cast<ssize_t>(sizeof req))
      return {};
    if (errno != EINTR) return record_os_error(errno, call);
  }
}

// A NETLINK_ROUTE socket (nonblocking, close-on-exec) bound to `groups`.
Result<UniqueFd> open_route_socket(uint32_t groups) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return record_os_error(errno, "socket(NETLINK_ROUTE)");
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  local.nl_groups = groups;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
    return record_os_error(errno, "bind(NETLINK_ROUTE)");
  return fd;
}

constexpr size_t kRecvBytes = 64u << 10;  // above the kernel's largest dump skb (32 KiB)

Duration until(std::chrono::steady_clock::time_point deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  return Duration::ns(std::chrono::duration_cast<std::chrono::nanoseconds>(left).count());
}

}  // namespace

NetlinkParse parse_netlink(std::span<const uint8_t> buf, std::vector<LinkStatus>& links, const SockAddr* match,
                           int32_t* match_ifindex) {
  NetlinkParse r;
  size_t at = 0;
  while (at < buf.size()) {
    const size_t left = buf.size() - at;
    if (left < sizeof(nlmsghdr)) {
      ++r.malformed;  // trailing bytes no message fits in
      break;
    }
    const auto h = load<nlmsghdr>(buf.data() + at);
    if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > left) {
      ++r.malformed;  // the rest of the buffer cannot be framed
      break;
    }
    const std::span<const uint8_t> body = buf.subspan(at + NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN);
    at += std::min(left, align4(h.nlmsg_len));
    if (h.nlmsg_flags & NLM_F_DUMP_INTR) r.dump_interrupted = true;
    switch (h.nlmsg_type) {
      case NLMSG_DONE:
        // Its payload, when present, is the dump's result (0 or -errno).
        r.done = true;
        if (body.size() >= sizeof(int32_t)) {
          const auto v = load<int32_t>(body.data());
          if (v < 0) r.error = v == INT32_MIN ? EIO : -v;
        }
        break;
      case NLMSG_ERROR: {
        if (body.size() < sizeof(int32_t)) {
          ++r.malformed;
          break;
        }
        const auto e = load<int32_t>(body.data());
        if (e > 0 || e == INT32_MIN) ++r.malformed;
        else if (e < 0) r.error = -e;
        break;
      }
      case RTM_NEWLINK:
      case RTM_DELLINK:
        if (parse_link(h.nlmsg_type == RTM_DELLINK, body, links)) ++r.links;
        else ++r.malformed;
        break;
      case RTM_NEWADDR:
      case RTM_DELADDR:
        if (parse_addr(h.nlmsg_type == RTM_NEWADDR, body, match, match_ifindex)) ++r.addr_changes;
        else ++r.malformed;
        break;
      default:
        break;  // NLMSG_NOOP, NLMSG_OVERRUN, other families' messages: not ours
    }
  }
  return r;
}

Result<int32_t> interface_of(const SockAddr& addr, Duration timeout) {
  if (!addr.is_ipv4() && !addr.is_ipv6()) return Errc::invalid_argument;
  auto fd = open_route_socket(0);
  if (!fd) return fd.error();
  ifaddrmsg m{};
  m.ifa_family = addr.is_ipv4() ? AF_INET : AF_INET6;
  if (Status s = send_dump(fd->get(), RTM_GETADDR, 1, m, "send(RTM_GETADDR)"); !s) return s.error();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout.count_ps() / 1000);
  std::vector<uint8_t> buf(kRecvBytes);
  std::vector<LinkStatus> unused;
  for (;;) {
    sockaddr_nl from{};
    int flags = 0;
    const ssize_t n = recv_netlink(fd->get(), buf, from, &flags);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) return record_os_error(errno, "recvmsg(RTM_GETADDR)");
      const Duration left = until(deadline);
      if (left <= Duration{}) return record_os_error(ETIMEDOUT, "RTM_GETADDR dump");
      auto w = wait_readable(fd->get(), left);
      if (!w) return w.error();
      continue;
    }
    if (from.nl_pid != 0 || (flags & MSG_TRUNC)) continue;  // not the kernel's, or cut: skip it
    int32_t found = 0;
    const NetlinkParse p = parse_netlink(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)), unused, &addr,
                                         &found);
    if (found > 0) return found;
    if (p.error != 0) return record_os_error(p.error, "RTM_GETADDR dump");
    if (p.done) return Errc::not_found;
  }
}

Result<LinkMonitor> LinkMonitor::open() {
  auto fd = open_route_socket(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR);
  if (!fd) return fd.error();
  // A burst of notifications (many interfaces flapping) should not overrun
  // the socket; if it does anyway, read() dumps again. Best effort.
  const int want = 1 << 20;
  (void)::setsockopt(fd->get(), SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
  LinkMonitor m;
  m.fd_ = std::move(*fd);
  m.buf_.resize(kRecvBytes);
  return m;
}

Status LinkMonitor::request_dump() {
  if (!fd_.valid()) return Errc::bad_state;
  if (dumping_) {
    dump_wanted_ = true;  // one dump at a time per socket: after this one
    return {};
  }
  ifinfomsg m{};
  m.ifi_family = AF_UNSPEC;
  if (Status s = send_dump(fd_.get(), RTM_GETLINK, ++seq_, m, "send(RTM_GETLINK)"); !s) {
    dump_wanted_ = true;  // retried by the next read()
    return s;
  }
  dumping_ = true;
  dump_wanted_ = false;
  dump_error_ = 0;
  return {};
}

Result<size_t> LinkMonitor::read(std::vector<LinkStatus>& out) {
  if (!fd_.valid()) return Errc::bad_state;
  size_t appended = 0;
  for (;;) {
    sockaddr_nl from{};
    int flags = 0;
    const ssize_t n = recv_netlink(fd_.get(), buf_, from, &flags);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == ENOBUFS) {
        // The kernel dropped notifications: only a new dump tells the state.
        ++overruns_;
        dump_wanted_ = true;
        continue;
      }
      return record_os_error(errno, "recvmsg(NETLINK_ROUTE)");
    }
    if (from.nl_pid != 0) {
      ++malformed_;  // another process wrote to us: not the kernel's word
      continue;
    }
    if (flags & MSG_TRUNC) {
      ++malformed_;  // cut short: what it said is lost, as with an overrun
      ++overruns_;
      dump_wanted_ = true;
      continue;
    }
    const NetlinkParse p = parse_netlink(std::span<const uint8_t>(buf_.data(), static_cast<size_t>(n)), out);
    appended += p.links;
    malformed_ += p.malformed;
    if (p.addr_changes) addr_changed_ = true;
    if (p.dump_interrupted) {
      ++overruns_;
      dump_wanted_ = true;
    }
    if (dumping_ && (p.done || p.error != 0)) {
      dumping_ = false;
      dump_error_ = p.error;
    }
  }
  if (dump_wanted_ && !dumping_) (void)request_dump();  // on failure, tried again next time
  return appended;
}

Status LinkMonitor::dump(std::vector<LinkStatus>& out, Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout.count_ps() / 1000);
  if (Status s = request_dump(); !s) return s;
  for (;;) {
    auto r = read(out);
    if (!r) return r.error();
    if (dump_error_ != 0) return record_os_error(std::exchange(dump_error_, 0), "RTM_GETLINK dump");
    if (!dumping_ && !dump_wanted_) return {};
    const Duration left = until(deadline);
    if (left <= Duration{}) return record_os_error(ETIMEDOUT, "RTM_GETLINK dump");
    auto w = wait_readable(fd_.get(), left);
    if (!w) return w.error();
  }
}

}  // namespace mrc::platform
