// SPDX-License-Identifier: BSD-2-Clause
// OS error reporting for the platform layer.
//
// Every platform call returns `Result<T>` or `Status` (util/result.hpp) whose
// `Errc` is mapped from the errno the kernel gave. The `Errc` is what callers
// branch on; the exact errno and the name of the failing system call are kept
// per thread (like dlerror) for log and error messages:
//
//   auto s = UdpSocket::open(addr);
//   if (!s) fmt::print(stderr, "cannot open: {}\n", platform::last_error_message());
//
// The record is overwritten by the next failing platform call on the same
// thread; successful calls leave it alone.
#pragma once

#include <string>

#include "util/result.hpp"

namespace mrc::platform {

/// The last OS failure seen on this thread by a platform call.
struct OsError {
  int errno_value = 0;          ///< errno as the kernel returned it (0 = none recorded yet)
  const char* call = "";        ///< the system call or option that failed, e.g. "setsockopt(UDP_GRO)"
};

/// Maps an errno value to the closed `Errc` set:
/// EAGAIN/EWOULDBLOCK/ENOBUFS -> would_block, EINVAL -> invalid_argument,
/// EADDRINUSE/EEXIST/EBUSY -> busy, EADDRNOTAVAIL/ENOENT/ENODEV -> not_found,
/// ENOPROTOOPT/EOPNOTSUPP/EAFNOSUPPORT/EPROTONOSUPPORT -> not_supported,
/// ENOMEM/EMFILE/ENFILE -> no_memory, EPERM/EACCES -> permission,
/// EMSGSIZE -> too_big, ETIMEDOUT -> timed_out, anything else -> io.
Errc errc_from_errno(int errno_value);

/// Records `errno_value` and `call` as this thread's last error and returns
/// the mapped `Errc`. Used by the platform implementation; `call` must be a
/// string literal (it is stored, not copied).
Errc record_os_error(int errno_value, const char* call);

/// This thread's last recorded OS error.
OsError last_error();

/// "call: strerror text (ENAME)", e.g. "bind: Address already in use (EADDRINUSE)";
/// "no error" when nothing was recorded on this thread.
std::string last_error_message();

}  // namespace mrc::platform
