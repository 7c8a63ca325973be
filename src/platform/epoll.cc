// SPDX-License-Identifier: BSD-2-Clause
#include "platform/epoll.hpp"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <vector>

#include "platform/os_error.hpp"

namespace mrc::platform {

static_assert(events::kReadable == EPOLLIN && events::kWritable == EPOLLOUT &&
              events::kError == EPOLLERR && events::kHangup == EPOLLHUP &&
              events::kEdgeTriggered == static_cast<uint32_t>(EPOLLET) &&
              events::kExclusive == static_cast<uint32_t>(EPOLLEXCLUSIVE));
static_assert(POLLIN == EPOLLIN && POLLOUT == EPOLLOUT);

namespace {

// Milliseconds for epoll_wait/poll: negative -> -1 (forever), positive
// durations rounded up so a short timeout never becomes a busy 0.
int to_timeout_ms(Duration d) {
  if (d < Duration()) return -1;
  const int64_t ms = (d.count_ps() + 999'999'999) / 1'000'000'000;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

Status ctl(int epfd, int op, int fd, uint32_t ev, uint64_t user_data, const char* what) {
  epoll_event e{};
  e.events = ev;
  e.data.u64 = user_data;
  if (epoll_ctl(epfd, op, fd, &e) != 0) {
    const int err = errno;
    const Errc c = record_os_error(err, what);
    return err == EEXIST ? Errc::busy : c;
  }
  return {};
}

Result<size_t> poll_fds(std::span<const int> fds, short events, Duration timeout, std::span<bool> ready) {
  if (!ready.empty() && ready.size() != fds.size()) return Errc::invalid_argument;
  std::vector<pollfd> p(fds.size());
  for (size_t i = 0; i < fds.size(); ++i) p[i] = pollfd{fds[i], events, 0};
  const int r = ::poll(p.data(), p.size(), to_timeout_ms(timeout));
  if (r < 0) {
    if (errno == EINTR) return size_t{0};
    return record_os_error(errno, "poll");
  }
  for (size_t i = 0; i < ready.size(); ++i) ready[i] = p[i].revents != 0;
  return static_cast<size_t>(r);
}

}  // namespace

Result<Epoll> Epoll::create() {
  Epoll e;
  e.fd_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (!e.fd_.valid()) return record_os_error(errno, "epoll_create1");
  return e;
}

Status Epoll::add(int fd, uint32_t ev, uint64_t user_data) {
  return ctl(fd_.get(), EPOLL_CTL_ADD, fd, ev, user_data, "epoll_ctl(ADD)");
}
Status Epoll::modify(int fd, uint32_t ev, uint64_t user_data) {
  return ctl(fd_.get(), EPOLL_CTL_MOD, fd, ev, user_data, "epoll_ctl(MOD)");
}
Status Epoll::del(int fd) { return ctl(fd_.get(), EPOLL_CTL_DEL, fd, 0, 0, "epoll_ctl(DEL)"); }

Result<size_t> Epoll::wait(std::span<EpollEvent> out, Duration timeout) {
  if (out.empty()) return Errc::invalid_argument;
  constexpr size_t kChunk = 64;
  epoll_event evs[kChunk];
  const int max = static_cast<int>(std::min(out.size(), kChunk));
  // epoll_pwait2 takes a nanosecond timeout: the engines sleep until
  // timers microseconds away, which epoll_wait's milliseconds would round
  // up to a whole millisecond. Kernels before 5.11 lack it (ENOSYS).
  int r;
  if (timeout < Duration()) {
    r = epoll_wait(fd_.get(), evs, max, -1);
  } else {
    const int64_t ns = timeout.count_ps() / 1000;
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    r = epoll_pwait2(fd_.get(), evs, max, &ts, nullptr);
    if (r < 0 && errno == ENOSYS) r = epoll_wait(fd_.get(), evs, max, to_timeout_ms(timeout));
  }
  if (r < 0) {
    if (errno == EINTR) return size_t{0};
    return record_os_error(errno, "epoll_wait");
  }
  for (int i = 0; i < r; ++i) out[static_cast<size_t>(i)] = EpollEvent{evs[i].events, evs[i].data.u64};
  return static_cast<size_t>(r);
}

Result<EventFd> EventFd::create(bool semaphore) {
  EventFd e;
  e.fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | (semaphore ? EFD_SEMAPHORE : 0)));
  if (!e.fd_.valid()) return record_os_error(errno, "eventfd");
  return e;
}

Status EventFd::signal(uint64_t n) {
  if (n == 0) return Errc::invalid_argument;
  ssize_t r;
  do {
    r = ::write(fd_.get(), &n, sizeof n);
  } while (r < 0 && errno == EINTR);
  if (r != static_cast<ssize_t>(sizeof n)) return record_os_error(errno, "write(eventfd)");
  return {};
}

Result<uint64_t> EventFd::drain() {
  uint64_t v = 0;
  ssize_t r;
  do {
    r = ::read(fd_.get(), &v, sizeof v);
  } while (r < 0 && errno == EINTR);
  if (r != static_cast<ssize_t>(sizeof v)) {
    if (errno == EAGAIN) return Errc::would_block;
    return record_os_error(errno, "read(eventfd)");
  }
  return v;
}

Result<size_t> wait_readable(std::span<const int> fds, Duration timeout, std::span<bool> ready) {
  return poll_fds(fds, POLLIN, timeout, ready);
}

Result<bool> wait_readable(int fd, Duration timeout) {
  auto r = poll_fds({&fd, 1}, POLLIN, timeout, {});
  if (!r) return r.error();
  return *r > 0;
}

Result<bool> wait_writable(int fd, Duration timeout) {
  auto r = poll_fds({&fd, 1}, POLLOUT, timeout, {});
  if (!r) return r.error();
  return *r > 0;
}

}  // namespace mrc::platform
