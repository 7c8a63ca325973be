// SPDX-License-Identifier: BSD-2-Clause
// UniqueFd: sole owner of a file descriptor (RAII, move-only).
#pragma once

#include <utility>

namespace mrc::platform {

/// Owns one file descriptor and closes it on destruction. -1 means "none".
/// Moving transfers ownership and leaves the source empty.
class UniqueFd {
 public:
  UniqueFd() = default;
  /// Takes ownership of `fd` (which may be -1).
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) { reset(); fd_ = std::exchange(o.fd_, -1); }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  /// The descriptor, still owned by this object (-1 if none).
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  /// Gives up ownership without closing; returns the descriptor.
  int release() { return std::exchange(fd_, -1); }
  /// Closes the owned descriptor (if any) and takes `fd` instead.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

}  // namespace mrc::platform
