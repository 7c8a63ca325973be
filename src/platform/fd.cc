// SPDX-License-Identifier: BSD-2-Clause
#include "platform/fd.hpp"

#include <unistd.h>

namespace mrc::platform {

void UniqueFd::reset(int fd) {
  // close() is not retried on EINTR: on Linux the descriptor is released
  // either way and a retry could close a descriptor another thread just got.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace mrc::platform
