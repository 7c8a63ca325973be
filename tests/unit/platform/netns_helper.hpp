// SPDX-License-Identifier: BSD-2-Clause
// Test support, header-only: a network namespace of the calling thread's own
// with its loopback interface up, for tests that change what lo looks like
// (addresses, qdiscs) without touching the host's. Used by
// platform/udp_socket_test.cc and runtime/device_test.cc.
#pragma once

#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

namespace mrc::test_support {

/// Moves the calling thread into a new network namespace
/// (unshare(CLONE_NEWNET)) and brings its lo up. Returns why the test must be
/// skipped, or "" when the thread is in its namespace. Needs root; the
/// namespace disappears with the thread, and processes the thread forks (ip,
/// tc) run in it.
inline std::string enter_private_netns() {
  if (unshare(CLONE_NEWNET) != 0) return std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno) + " (needs root)";
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strcpy(ifr.ifr_name, "lo");
  const bool up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
                  (ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP), ioctl(fd, SIOCSIFFLAGS, &ifr) == 0);
  if (fd >= 0) ::close(fd);
  if (!up) return "cannot bring lo up in the new namespace";
  return {};
}

/// Runs `body` on a thread of its own inside a private namespace
/// (enter_private_netns), with lo's MTU set to `lo_mtu` first unless 0.
/// Returns why the test must be skipped ("" when `body` ran); `body` may
/// set `skip` itself. gtest assertions in `body` work (they return from it).
inline std::string in_private_netns(const std::function<void(std::string& skip)>& body, int lo_mtu = 0) {
  std::string skip;
  std::thread t([&] {
    skip = enter_private_netns();
    if (!skip.empty()) return;
    if (lo_mtu != 0 &&
        std::system(("ip link set dev lo mtu " + std::to_string(lo_mtu) + " 2>/dev/null").c_str()) != 0) {
      skip = "ip (iproute2) unavailable or refused to set lo's MTU";
      return;
    }
    body(skip);
  });
  t.join();
  return skip;
}

/// A raw IPv4 socket that receives a copy of every UDP datagram delivered
/// in the calling thread's namespace, IP header included, with a 64 MiB
/// buffer and a 2 s receive bound (a bound, not a timing: callers read
/// what has already arrived). -1 with `skip` set if it cannot be opened.
inline int open_udp_capture(std::string& skip) {
  const int fd = ::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP);
  if (fd < 0) {
    skip = std::string("raw socket: ") + std::strerror(errno);
    return -1;
  }
  int big = 64 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

}  // namespace mrc::test_support
