// SPDX-License-Identifier: BSD-2-Clause
#include "platform/uring_sender.hpp"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <climits>
#include <vector>

#include "platform/os_error.hpp"

#if MRC_HAVE_URING
#include <liburing.h>
#endif

namespace mrc::platform {

#if MRC_HAVE_URING
namespace {
constexpr int kPending = INT_MIN;  // queued, no completion seen yet
}  // namespace

struct UringSender::Native {
  io_uring ring{};
  bool live = false;
  std::array<msghdr, kMaxBatch> msgs{};
  std::vector<iovec> iov = std::vector<iovec>(kMaxBatch * UdpSocket::kMaxIovPerDatagram);
  std::array<UdpSocket::TxCtrl, kMaxBatch> ctrl{};
  std::array<SockAddr, kMaxBatch> dest_copy{};
  ~Native() {
    if (live) io_uring_queue_exit(&ring);
  }
};

UringSender::UringSender() = default;
UringSender::~UringSender() = default;
UringSender::UringSender(UringSender&&) noexcept = default;
UringSender& UringSender::operator=(UringSender&&) noexcept = default;

Result<UringSender> UringSender::open() {
  UringSender s;
  s.n_ = std::make_unique<Native>();
  const int r = io_uring_queue_init(kMaxBatch, &s.n_->ring, 0);
  if (r < 0) {
    if (r == -ENOSYS || r == -EPERM || r == -EACCES) {
      (void)record_os_error(-r, "io_uring_setup");
      return Errc::not_supported;
    }
    return record_os_error(-r, "io_uring_setup");
  }
  s.n_->live = true;
  return s;
}

bool UringSender::live() const { return n_ && n_->live; }

Result<size_t> UringSender::send(std::span<const Item> items, std::span<int> results) {
  if (!live()) return Errc::bad_state;
  const size_t n = std::min(items.size(), kMaxBatch);
  if (results.size() < n) return Errc::invalid_argument;
  Native& x = *n_;
  size_t queued = 0;
  for (size_t i = 0; i < n; ++i) {
    const Item& it = items[i];
    results[i] = -EINVAL;
    if (it.sock == nullptr || it.datagram == nullptr) continue;
    if (!it.sock->valid()) {
      results[i] = -EBADF;
      continue;
    }
    if (it.sock->prepare(*it.datagram, x.msgs[i], &x.iov[i * UdpSocket::kMaxIovPerDatagram], x.ctrl[i],
                         x.dest_copy[i]) != Errc::ok)
      continue;
    io_uring_sqe* sqe = io_uring_get_sqe(&x.ring);
    if (sqe == nullptr) break;  // cannot happen: the ring holds kMaxBatch and send() drains it
    io_uring_prep_sendmsg(sqe, it.sock->fd(), &x.msgs[i], MSG_DONTWAIT);
    io_uring_sqe_set_data64(sqe, i);
    results[i] = kPending;
    ++queued;
  }
  if (queued == 0) return n;
  // The kernel reports how many requests it took; the rest stay in the
  // submission queue. It stops short only when it cannot allocate a request
  // (the completion queue, twice the submission queue's size, is drained by
  // every call, so it never overflows): submit again while it makes progress.
  size_t submitted = 0;
  while (submitted < queued) {
    int r;
    do {
      r = io_uring_submit_and_wait(&x.ring, static_cast<unsigned>(queued - submitted));
    } while (r == -EINTR);
    if (r <= 0) {
      if (submitted == 0) {
        // Nothing went out, and what is queued still points into this
        // call's scratch: the ring cannot be used again (its owner falls
        // back to sendmmsg).
        io_uring_queue_exit(&x.ring);
        x.live = false;
        return record_os_error(r < 0 ? -r : EAGAIN, "io_uring_enter");
      }
      break;
    }
    submitted += static_cast<size_t>(r);
  }
  if (submitted < queued) {
    // Some went out, some cannot: settle the ones that went, then retire the
    // ring for the same reason as above.
    x.live = false;
  }
  size_t settled = 0;
  while (settled < submitted) {
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&x.ring, head, cqe) {
      const uint64_t i = io_uring_cqe_get_data64(cqe);
      if (i < n) results[i] = cqe->res;
      ++seen;
    }
    io_uring_cq_advance(&x.ring, seen);
    settled += seen;
    if (settled < submitted) {
      io_uring_cqe* w;
      const int wr = io_uring_wait_cqe(&x.ring, &w);
      if (wr < 0 && wr != -EINTR) {
        x.live = false;  // requests may still complete into this call's results: do not reuse the ring
        break;
      }
    }
  }
  if (!x.live) {
    io_uring_queue_exit(&x.ring);
    // Results of datagrams the kernel never took: report a full buffer
    // (not sent), which the caller treats as a drop.
    for (size_t i = 0; i < n; ++i)
      if (results[i] == kPending) results[i] = -EAGAIN;
  }
  return n;
}

#else  // built without liburing (MRC_WITH_URING=OFF): every caller takes the sendmmsg path

struct UringSender::Native {};
UringSender::UringSender() = default;
UringSender::~UringSender() = default;
UringSender::UringSender(UringSender&&) noexcept = default;
UringSender& UringSender::operator=(UringSender&&) noexcept = default;
Result<UringSender> UringSender::open() { return Errc::not_supported; }
Result<size_t> UringSender::send(std::span<const Item>, std::span<int>) { return Errc::bad_state; }
bool UringSender::live() const { return false; }

#endif

}  // namespace mrc::platform
