// Test support, header-only: a network namespace of the calling thread's own
// with its loopback interface up, for tests that change what lo looks like
// (addresses, qdiscs) without touching the host's. Used by
// platform/udp_socket_test.cc and runtime/device_test.cc.
#pragma once

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

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

}  // namespace mrc::test_support
