// SPDX-License-Identifier: BSD-2-Clause
#include "platform/os_error.hpp"

#include <cerrno>
#include <cstring>

namespace mrc::platform {
namespace {
thread_local OsError t_last;
}  // namespace

Errc errc_from_errno(int e) {
  switch (e) {
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
    case ENOBUFS: return Errc::would_block;
    case EINVAL: return Errc::invalid_argument;
    case EADDRINUSE: case EEXIST: case EBUSY: return Errc::busy;
    case EADDRNOTAVAIL: case ENOENT: case ENODEV: return Errc::not_found;
    case ENOPROTOOPT: case EOPNOTSUPP: case EAFNOSUPPORT: case EPROTONOSUPPORT:
      return Errc::not_supported;
    case ENOMEM: case EMFILE: case ENFILE: return Errc::no_memory;
    case EPERM: case EACCES: return Errc::permission;
    case EMSGSIZE: return Errc::too_big;
    case ETIMEDOUT: return Errc::timed_out;
    default: return Errc::io;
  }
}

Errc record_os_error(int errno_value, const char* call) {
  t_last = OsError{errno_value, call};
  return errc_from_errno(errno_value);
}

OsError last_error() { return t_last; }

std::string last_error_message() {
  if (t_last.errno_value == 0) return "no error";
  std::string out = t_last.call;
  out += ": ";
  out += std::strerror(t_last.errno_value);
  if (const char* name = strerrorname_np(t_last.errno_value)) {
    out += " (";
    out += name;
    out += ")";
  }
  return out;
}

}  // namespace mrc::platform
