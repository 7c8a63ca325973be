// SPDX-License-Identifier: BSD-2-Clause
// Readiness waiting: Epoll (an epoll instance), EventFd (a wakeup counter that
// works in epoll) and poll()-based helpers for one-off waits.
//
// The runtime's progress thread sleeps in Epoll::wait on its sockets plus an
// EventFd that application threads signal; completion channels are EventFds
// the application puts in its own epoll.
#pragma once

#include <cstdint>
#include <span>

#include "platform/fd.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace mrc::platform {

/// Event bits (the values of EPOLLIN etc., checked in the .cc).
namespace events {
inline constexpr uint32_t kReadable = 0x001;       ///< EPOLLIN
inline constexpr uint32_t kWritable = 0x004;       ///< EPOLLOUT
inline constexpr uint32_t kError = 0x008;          ///< EPOLLERR (always reported)
inline constexpr uint32_t kHangup = 0x010;         ///< EPOLLHUP (always reported)
inline constexpr uint32_t kEdgeTriggered = 1u << 31;  ///< EPOLLET (registration only)
/// EPOLLEXCLUSIVE (add() only, never modify()): when several epoll
/// instances watch one fd this way, an event wakes them in the order they
/// added it and stops at the first one a thread is waiting on; the ones
/// before it still see the fd ready when they next look.
inline constexpr uint32_t kExclusive = 1u << 28;
}  // namespace events

/// One ready descriptor reported by Epoll::wait.
struct EpollEvent {
  uint32_t events = 0;     ///< events:: bits that are ready
  uint64_t user_data = 0;  ///< the value given to add()/modify()
};

/// An epoll instance (RAII, move-only).
class Epoll {
 public:
  Epoll() = default;
  /// Creates a close-on-exec epoll instance. Errors: no_memory (EMFILE/ENOMEM).
  static Result<Epoll> create();

  int fd() const { return fd_.get(); }

  /// Watches `fd` (not owned; remove it before closing it) for `events`
  /// (events:: bits, level-triggered unless kEdgeTriggered); `user_data` comes
  /// back in EpollEvent. Errors: busy (EEXIST: already added — use modify),
  /// invalid_argument, permission (EPERM: fd does not support epoll, e.g. a file).
  Status add(int fd, uint32_t events, uint64_t user_data);
  /// Changes the events/user_data of a watched fd. Errors: not_found (not added).
  Status modify(int fd, uint32_t events, uint64_t user_data);
  /// Stops watching `fd`. Errors: not_found (not added).
  Status del(int fd);

  /// Waits until at least one watched fd is ready or `timeout` passes
  /// (negative = forever, 0 = just check; rounded up to whole milliseconds,
  /// so a positive timeout below 1 ms waits 1 ms). Fills `out` and returns the
  /// count; 0 on timeout or when a signal interrupted the wait (EINTR), so the
  /// caller can check its exit flag and wait again.
  Result<size_t> wait(std::span<EpollEvent> out, Duration timeout);

 private:
  UniqueFd fd_;
};

/// An eventfd counter (RAII, move-only, non-blocking, close-on-exec): readable
/// in epoll/poll while the counter is non-zero.
class EventFd {
 public:
  EventFd() = default;
  /// Creates the counter at 0. `semaphore`: each drain() takes 1 instead of all.
  static Result<EventFd> create(bool semaphore = false);

  int fd() const { return fd_.get(); }
  /// Adds `n` (> 0) to the counter, waking any waiter. Safe from any thread.
  /// Errors: would_block if the counter would overflow (practically never).
  Status signal(uint64_t n = 1);
  /// Takes the counter (or 1 in semaphore mode) and returns it, resetting the
  /// readiness. Errors: would_block when the counter is 0.
  Result<uint64_t> drain();

 private:
  UniqueFd fd_;
};

/// Waits with poll() until one of `fds` is readable (or has an error/hangup),
/// or `timeout` passes (negative = forever; rounded up to whole ms). If
/// `ready` is non-empty (same size as `fds`) it gets true for each ready fd.
/// Returns the number of ready fds, 0 on timeout or EINTR.
/// Errors: invalid_argument (ready has the wrong size), no_memory.
Result<size_t> wait_readable(std::span<const int> fds, Duration timeout, std::span<bool> ready = {});

/// The same for a single fd: true if readable, false on timeout/EINTR.
Result<bool> wait_readable(int fd, Duration timeout);

/// Waits until `fd` is writable (e.g. after send_batch returned 0): true if
/// writable, false on timeout/EINTR.
Result<bool> wait_writable(int fd, Duration timeout);

}  // namespace mrc::platform
