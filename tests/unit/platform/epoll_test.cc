// SPDX-License-Identifier: BSD-2-Clause
// Tests for platform/epoll.hpp: Epoll, EventFd and the poll helpers.
#include "platform/epoll.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <sys/syscall.h>
#include <unistd.h>

#include "platform/os_error.hpp"
#include "platform/udp_socket.hpp"

namespace mrc::platform {
namespace {

TEST(PlatformEventFd, SignalAndDrain) {
  auto e = EventFd::create();
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->drain().error(), Errc::would_block);
  ASSERT_TRUE(e->signal().ok());
  ASSERT_TRUE(e->signal(4).ok());
  auto v = e->drain();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 5u);
  EXPECT_EQ(e->drain().error(), Errc::would_block);
  EXPECT_EQ(e->signal(0).error(), Errc::invalid_argument);
}

TEST(PlatformEventFd, SemaphoreMode) {
  auto e = EventFd::create(true);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->signal(2).ok());
  EXPECT_EQ(*e->drain(), 1u);
  EXPECT_EQ(*e->drain(), 1u);
  EXPECT_EQ(e->drain().error(), Errc::would_block);
}

TEST(PlatformEpoll, ReportsEventFdAndSocketWithUserData) {
  auto ep = Epoll::create();
  auto ev = EventFd::create();
  auto sock = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(ep.ok() && ev.ok() && sock.ok());
  ASSERT_TRUE(ep->add(ev->fd(), events::kReadable, 11).ok());
  ASSERT_TRUE(ep->add(sock->fd(), events::kReadable, 22).ok());
  EXPECT_EQ(ep->add(sock->fd(), events::kReadable, 22).error(), Errc::busy);

  EpollEvent out[4];
  auto n = ep->wait(out, Duration());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);  // nothing ready

  // Wake from another thread; the waiter returns with the eventfd's user data.
  std::thread t([&] { (void)ev->signal(); });
  n = ep->wait(out, Duration::s(5));
  t.join();
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 1u);
  EXPECT_EQ(out[0].user_data, 11u);
  EXPECT_TRUE(out[0].events & events::kReadable);
  ASSERT_TRUE(ev->drain().ok());

  const std::byte b[1] = {std::byte{1}};
  ASSERT_EQ(*sock->send_to(sock->local_address(), b), 1u);
  n = ep->wait(out, Duration::s(5));
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 1u);
  EXPECT_EQ(out[0].user_data, 22u);

  ASSERT_TRUE(ep->modify(sock->fd(), events::kWritable, 33).ok());
  n = ep->wait(out, Duration::s(5));
  ASSERT_EQ(*n, 1u);
  EXPECT_EQ(out[0].user_data, 33u);
  EXPECT_TRUE(out[0].events & events::kWritable);
  ASSERT_TRUE(ep->del(sock->fd()).ok());
  EXPECT_EQ(ep->del(sock->fd()).error(), Errc::not_found);
  EXPECT_EQ(ep->modify(sock->fd(), events::kReadable, 1).error(), Errc::not_found);
}

// What the software device's completion channels rely on
// (rt::Device::watch_sockets): an engine thread's epoll and an
// application's channel both watch a socket exclusively, the engine's
// first. A packet wakes the engine thread if it waits on its epoll, and
// passes over it to the channel (watched in turn by the application's own
// epoll) if it does not.
TEST(PlatformEpoll, AnExclusiveWatchWakesTheFirstWaiterAndPassesOverAnIdleEpoll) {
  auto first = Epoll::create();
  auto second = Epoll::create();
  auto outer = Epoll::create();
  auto sock = UdpSocket::open(SockAddr::ipv4_loopback(0));
  ASSERT_TRUE(first.ok() && second.ok() && outer.ok() && sock.ok());
  ASSERT_TRUE(first->add(sock->fd(), events::kReadable | events::kExclusive, 1).ok());
  ASSERT_TRUE(second->add(sock->fd(), events::kReadable | events::kExclusive, 2).ok());
  ASSERT_TRUE(outer->add(second->fd(), events::kReadable, 3).ok());
  const std::byte b[1] = {std::byte{1}};
  RxBatch rx(4, 2048);
  EpollEvent out[4];

  // Nobody waits on `first`: the packet wakes the application's epoll
  // through `second`, and `first` still sees the socket ready.
  ASSERT_EQ(*sock->send_to(sock->local_address(), b), 1u);
  auto n = outer->wait(out, Duration::s(5));
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 1u);
  EXPECT_EQ(out[0].user_data, 3u);
  n = first->wait(out, Duration());
  ASSERT_EQ(*n, 1u);
  EXPECT_EQ(out[0].user_data, 1u);
  ASSERT_EQ(*sock->recv_batch(rx), 1u);
  // Level-triggered: once the socket is read, nothing is ready anywhere.
  EXPECT_EQ(*outer->wait(out, Duration()), 0u);
  EXPECT_EQ(*second->wait(out, Duration()), 0u);

  // A thread asleep on `first`: the packet wakes it, and `second` is
  // never told (it does not report the socket, still unread, as ready).
  std::atomic<pid_t> tid{0};
  size_t woke = 0;
  std::thread t([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    EpollEvent got[4];
    auto r = first->wait(got, Duration::s(10));
    woke = r.ok() ? *r : 0;
  });
  while (tid.load() == 0) {
  }
  // Wait until it sleeps in epoll (its wait channel says so).
  const std::string wchan_path = "/proc/self/task/" + std::to_string(tid.load()) + "/wchan";
  bool asleep = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       !asleep && std::chrono::steady_clock::now() < until;) {
    std::ifstream f(wchan_path);
    std::string w;
    f >> w;
    asleep = w.find("epoll") != std::string::npos || w == "ep_poll";
  }
  if (!asleep) {
    ASSERT_TRUE(sock->send_to(sock->local_address(), b).ok());  // let the thread finish
    t.join();
    GTEST_SKIP() << "cannot tell when a thread sleeps in epoll here (" << wchan_path << ")";
  }
  ASSERT_EQ(*sock->send_to(sock->local_address(), b), 1u);
  t.join();
  EXPECT_EQ(woke, 1u);
  n = second->wait(out, Duration());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u) << "the exclusive wake-up went past the epoll a thread was waiting on";
  EXPECT_EQ(*outer->wait(out, Duration()), 0u);
  EXPECT_EQ(*sock->recv_batch(rx), 1u);
}

TEST(PlatformWait, ReadableAndWritableHelpers) {
  auto a = EventFd::create();
  auto b = EventFd::create();
  ASSERT_TRUE(a.ok() && b.ok());
  const int fds[] = {a->fd(), b->fd()};
  bool ready[2] = {true, true};
  auto n = wait_readable(fds, Duration::ms(1), ready);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  EXPECT_FALSE(ready[0] || ready[1]);
  ASSERT_TRUE(b->signal().ok());
  n = wait_readable(fds, Duration::s(5), ready);
  ASSERT_EQ(*n, 1u);
  EXPECT_FALSE(ready[0]);
  EXPECT_TRUE(ready[1]);
  bool wrong[1];
  EXPECT_EQ(wait_readable(fds, Duration(), wrong).error(), Errc::invalid_argument);
  EXPECT_TRUE(*wait_readable(b->fd(), Duration()));
  EXPECT_FALSE(*wait_readable(a->fd(), Duration()));
  EXPECT_TRUE(*wait_writable(a->fd(), Duration()));
}

}  // namespace
}  // namespace mrc::platform
