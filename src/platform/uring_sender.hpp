// SPDX-License-Identifier: BSD-2-Clause
// UringSender: sends datagrams on several UDP sockets with one system call,
// through io_uring (one IORING_OP_SENDMSG per datagram, one io_uring_enter
// per batch).
//
// Why: sendmmsg batches only datagrams of one socket. The software device
// puts an MRC packet's EV in its UDP source port, one socket per EV, so a
// per-packet spray gives consecutive packets different sockets and, kept in
// the core's order, costs one sendmsg each. An io_uring submission takes
// datagrams for any sockets, in order: measured on loopback (4160-byte
// datagrams over 16 sockets, batches of 32) at about the rate of one
// socket's sendmmsg, against 25-30 % less for a sendmsg each.
//
// Every send is non-blocking (MSG_DONTWAIT): a full socket buffer comes back
// as -EAGAIN in that datagram's result instead of parking the request in the
// kernel, so send() returns with every datagram settled, and the kernel runs
// the requests in submission order.
//
// Threading: one thread at a time (the ring and the scratch arrays are the
// sender's); sockets may be shared with other senders as UdpSocket allows.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "platform/udp_socket.hpp"
#include "util/result.hpp"

namespace mrc::platform {

class UringSender {
 public:
  /// Datagrams per send() call.
  static constexpr size_t kMaxBatch = 128;

  /// One datagram and the socket it leaves from (neither owned; both must
  /// stay valid until send() returns).
  struct Item {
    const UdpSocket* sock = nullptr;
    const TxDatagram* datagram = nullptr;
  };

  /// Sets up a ring. not_supported when the kernel has no io_uring or
  /// refuses it (ENOSYS; EPERM from kernel.io_uring_disabled or a seccomp
  /// filter, as container runtimes install); the caller then sends with
  /// UdpSocket::send_batch. no_memory: the ring's locked memory is over
  /// RLIMIT_MEMLOCK (kernels before 5.12).
  static Result<UringSender> open();

  UringSender();
  ~UringSender();
  UringSender(UringSender&&) noexcept;
  UringSender& operator=(UringSender&&) noexcept;

  /// Sends items[0..n) in order (n = min(items.size(), kMaxBatch)) and
  /// waits until each has a result. results[i] (results must hold n):
  /// >= 0 the bytes the kernel took; -EAGAIN or -ENOBUFS a full socket
  /// buffer (the datagram is not sent: drop it or send it again later);
  /// -EINVAL a datagram UdpSocket::send_batch would reject (bad_state for a
  /// closed socket is -EBADF); any other -errno the kernel's error for that
  /// datagram alone. Returns n; an error (io) only when the ring itself
  /// fails, with no datagram sent.
  Result<size_t> send(std::span<const Item> items, std::span<int> results);

  /// True while the ring can send: opened, and not retired by a send() that
  /// failed (the caller then sends with UdpSocket::send_batch).
  bool live() const;

 private:
  struct Native;  // the liburing ring and msghdr scratch, defined in the .cc
  std::unique_ptr<Native> n_;
};

}  // namespace mrc::platform
