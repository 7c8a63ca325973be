// SPDX-License-Identifier: BSD-2-Clause
#include "platform/udp_socket.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/errqueue.h>
#include <linux/filter.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "platform/os_error.hpp"

// Not in glibc's <netinet/in.h>; values from the kernel UAPI <linux/in6.h>,
// which cannot be included together with glibc's headers.
#ifndef IPV6_FLOWINFO
#define IPV6_FLOWINFO 11
#endif
#ifndef IPV6_FLOWLABEL_MGR
#define IPV6_FLOWLABEL_MGR 32
#endif
#ifndef IPV6_FLOWINFO_SEND
#define IPV6_FLOWINFO_SEND 33
#endif

namespace mrc::platform {
namespace {

// Kernel UAPI struct in6_flowlabel_req (include/uapi/linux/in6.h).
struct FlowLabelReq {
  in6_addr flr_dst;
  uint32_t flr_label;  // network order
  uint8_t flr_action;
  uint8_t flr_share;
  uint16_t flr_flags;
  uint16_t flr_expires;
  uint16_t flr_linger;
  uint32_t flr_pad;
};
static_assert(sizeof(FlowLabelReq) == 32);
constexpr uint8_t kFlActionGet = 0;   // IPV6_FL_A_GET
constexpr uint8_t kFlShareExcl = 1;   // IPV6_FL_S_EXCL: only this socket may use it
constexpr uint16_t kFlFlagCreate = 1; // IPV6_FL_F_CREATE
constexpr uint16_t kFlFlagExcl = 2;   // IPV6_FL_F_EXCL: fail if it exists

constexpr size_t kCtrlBytes = 256;  // per datagram: TOS + pktinfo + GRO + flowinfo fit in ~120

// The CMSG_* macros expand to C-style casts; keep them in one place.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wsign-conversion"
cmsghdr* cmsg_first(msghdr* m) { return CMSG_FIRSTHDR(m); }
cmsghdr* cmsg_next(msghdr* m, cmsghdr* c) { return CMSG_NXTHDR(m, c); }
unsigned char* cmsg_data(cmsghdr* c) { return CMSG_DATA(c); }
constexpr size_t cmsg_space(size_t n) { return CMSG_SPACE(n); }
constexpr size_t cmsg_len(size_t n) { return CMSG_LEN(n); }
#pragma GCC diagnostic pop

template <class T>
T cmsg_value(cmsghdr* c) {
  T v{};
  std::memcpy(&v, cmsg_data(c), std::min(sizeof v, c->cmsg_len - cmsg_len(0)));
  return v;
}

Status set_int(int fd, int level, int name, int value, const char* what) {
  if (setsockopt(fd, level, name, &value, sizeof value) != 0) return record_os_error(errno, what);
  return {};
}

Result<int> get_int(int fd, int level, int name, const char* what) {
  int v = 0;
  socklen_t len = sizeof v;
  if (getsockopt(fd, level, name, &v, &len) != 0) return record_os_error(errno, what);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- RxBatch

struct RxBatch::Native {
  std::vector<mmsghdr> msgs;
  std::vector<iovec> iov;
  std::vector<uint64_t> ctrl;  // uint64_t: cmsghdr alignment
};

RxBatch::RxBatch(size_t count, size_t buffer_bytes)
    : buffer_bytes_(std::clamp<size_t>(buffer_bytes, 1, size_t{1} << 20)),
      native_(std::make_unique<Native>()) {
  count = std::clamp<size_t>(count, 1, 1024);
  storage_.resize(count * buffer_bytes_);
  dgrams_.resize(count);
  native_->msgs.resize(count);
  native_->iov.resize(count);
  native_->ctrl.resize(count * kCtrlBytes / sizeof(uint64_t));
  for (size_t i = 0; i < count; ++i) {
    native_->iov[i] = iovec{storage_.data() + i * buffer_bytes_, buffer_bytes_};
  }
}
RxBatch::~RxBatch() = default;
RxBatch::RxBatch(RxBatch&&) noexcept = default;
RxBatch& RxBatch::operator=(RxBatch&&) noexcept = default;

// ---------------------------------------------------------------- UdpSocket

struct UdpSocket::TxScratch {
  std::array<mmsghdr, kMaxBatch> msgs{};
  std::vector<iovec> iov = std::vector<iovec>(kMaxBatch * kMaxIovPerDatagram);
  std::array<TxCtrl, kMaxBatch> ctrl{};
  std::array<SockAddr, kMaxBatch> dest_copy{};  // only for per-datagram flow labels
  static_assert(sizeof(TxCtrl) >= cmsg_space(sizeof(uint16_t)) + cmsg_space(sizeof(int)));
};

UdpSocket::UdpSocket() = default;
UdpSocket::~UdpSocket() = default;
UdpSocket::UdpSocket(UdpSocket&&) noexcept = default;
UdpSocket& UdpSocket::operator=(UdpSocket&&) noexcept = default;

// A classic BPF program run by the kernel on each datagram for the
// socket's SO_REUSEPORT group, with the packet positioned at the UDP
// payload: it returns the index (in bind order) of the socket to deliver to.
// Here: the big-endian word at `offset_bytes`, masked. A datagram too short
// for the load makes the program return 0 (the first socket).
Status UdpSocket::steer_reuseport_group(uint32_t offset_bytes, uint32_t mask) {
  sock_filter code[] = {
      {BPF_LD | BPF_W | BPF_ABS, 0, 0, offset_bytes},
      {BPF_ALU | BPF_AND | BPF_K, 0, 0, mask},
      {BPF_RET | BPF_A, 0, 0, 0},
  };
  sock_fprog prog{static_cast<unsigned short>(std::size(code)), code};
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) != 0)
    return record_os_error(errno, "setsockopt(SO_ATTACH_REUSEPORT_CBPF)");
  return {};
}

Result<UdpSocket> UdpSocket::open(const SockAddr& local, const UdpSocketOptions& o) {
  const int domain = local.is_ipv4() ? AF_INET : local.is_ipv6() ? AF_INET6 : -1;
  if (domain < 0) return Errc::invalid_argument;
  UdpSocket s;
  s.fd_.reset(::socket(domain, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP));
  if (!s.fd_.valid()) return record_os_error(errno, "socket");
  const int fd = s.fd_.get();
  if (local.is_ipv6()) {
    if (Status st = set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1, "setsockopt(IPV6_V6ONLY)"); !st) return st.error();
  }
  if (o.reuse_addr) {
    if (Status st = set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1, "setsockopt(SO_REUSEADDR)"); !st) return st.error();
  }
  if (o.reuse_port) {
    if (Status st = set_int(fd, SOL_SOCKET, SO_REUSEPORT, 1, "setsockopt(SO_REUSEPORT)"); !st) return st.error();
  }
  if (::bind(fd, static_cast<const sockaddr*>(local.native()), local.native_len()) != 0)
    return record_os_error(errno, "bind");
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return record_os_error(errno, "getsockname");
  auto bound = SockAddr::from_native(&ss, len);
  if (!bound) return bound.error();
  s.local_ = *bound;
  s.tx_ = std::make_unique<TxScratch>();

  auto check = [](Status st) { return st.ok() ? Errc::ok : st.error(); };
  Errc e = Errc::ok;
  if (e == Errc::ok && o.rcvbuf_bytes > 0) e = check(s.set_rcvbuf(o.rcvbuf_bytes));
  if (e == Errc::ok && o.sndbuf_bytes > 0) e = check(s.set_sndbuf(o.sndbuf_bytes));
  if (e == Errc::ok && o.recv_tos) e = check(s.set_recv_tos(true));
  if (e == Errc::ok && o.recv_pktinfo) e = check(s.set_recv_pktinfo(true));
  if (e == Errc::ok && o.gro) e = check(s.set_gro(true));
  if (e == Errc::ok && o.tos >= 0) e = check(s.set_tos(static_cast<uint8_t>(o.tos)));
  if (e == Errc::ok && (o.ipv6_zero_checksum_tx || o.ipv6_zero_checksum_rx))
    e = check(s.set_ipv6_zero_checksum(o.ipv6_zero_checksum_tx, o.ipv6_zero_checksum_rx));
  if (e == Errc::ok && o.busy_poll_us > 0) e = check(s.set_busy_poll(o.busy_poll_us));
  if (e == Errc::ok && o.recv_errors) e = check(s.set_recv_errors(true));
  if (e == Errc::ok && o.no_fragment)
    e = local.is_ipv6() ? check(set_int(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_PROBE,
                                        "setsockopt(IPV6_MTU_DISCOVER)"))
                        : check(set_int(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_PROBE, "setsockopt(IP_MTU_DISCOVER)"));
  if (e != Errc::ok) return e;
  return s;
}

Result<UdpSocket> UdpSocket::open_raw(AddrFamily family, const UdpSocketOptions& o) {
  UdpSocket s;
  const bool v6 = family == AddrFamily::ipv6;
  s.fd_.reset(::socket(v6 ? AF_INET6 : AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_RAW));
  if (!s.fd_.valid())
    return record_os_error(errno, v6 ? "socket(AF_INET6, SOCK_RAW, IPPROTO_RAW)" : "socket(AF_INET, SOCK_RAW, IPPROTO_RAW)");
  // The family is what send_batch() checks destinations against; the raw
  // socket is bound to no address (the header names the source).
  s.local_ = v6 ? SockAddr::ipv6_any(0) : SockAddr::ipv4_any(0);
  s.tx_ = std::make_unique<TxScratch>();
  if (o.sndbuf_bytes > 0)
    if (Status st = s.set_sndbuf(o.sndbuf_bytes); !st) return st.error();
  if (o.recv_errors)
    if (Status st = s.set_recv_errors(true); !st) return st.error();
  return s;
}

Status UdpSocket::set_rcvbuf(int bytes) {
  if (setsockopt(fd(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) == 0) return {};
  return set_int(fd(), SOL_SOCKET, SO_RCVBUF, bytes, "setsockopt(SO_RCVBUF)");
}
Status UdpSocket::set_sndbuf(int bytes) {
  if (setsockopt(fd(), SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) == 0) return {};
  return set_int(fd(), SOL_SOCKET, SO_SNDBUF, bytes, "setsockopt(SO_SNDBUF)");
}
Result<int> UdpSocket::rcvbuf_bytes() const {
  return get_int(fd(), SOL_SOCKET, SO_RCVBUF, "getsockopt(SO_RCVBUF)");
}
Result<int> UdpSocket::sndbuf_bytes() const {
  return get_int(fd(), SOL_SOCKET, SO_SNDBUF, "getsockopt(SO_SNDBUF)");
}

Status UdpSocket::set_tos(uint8_t tos) {
  if (family() == AddrFamily::ipv6) return set_int(fd(), IPPROTO_IPV6, IPV6_TCLASS, tos, "setsockopt(IPV6_TCLASS)");
  return set_int(fd(), IPPROTO_IP, IP_TOS, tos, "setsockopt(IP_TOS)");
}
Status UdpSocket::set_recv_tos(bool on) {
  if (family() == AddrFamily::ipv6)
    return set_int(fd(), IPPROTO_IPV6, IPV6_RECVTCLASS, on, "setsockopt(IPV6_RECVTCLASS)");
  return set_int(fd(), IPPROTO_IP, IP_RECVTOS, on, "setsockopt(IP_RECVTOS)");
}
Status UdpSocket::set_recv_pktinfo(bool on) {
  if (family() == AddrFamily::ipv6)
    return set_int(fd(), IPPROTO_IPV6, IPV6_RECVPKTINFO, on, "setsockopt(IPV6_RECVPKTINFO)");
  return set_int(fd(), IPPROTO_IP, IP_PKTINFO, on, "setsockopt(IP_PKTINFO)");
}
Status UdpSocket::set_gro(bool on) {
  return set_int(fd(), IPPROTO_UDP, UDP_GRO, on, "setsockopt(UDP_GRO)");
}
Status UdpSocket::set_ipv6_zero_checksum(bool tx, bool rx) {
  if (family() != AddrFamily::ipv6) return Errc::not_supported;
  if (Status s = set_int(fd(), IPPROTO_UDP, UDP_NO_CHECK6_TX, tx, "setsockopt(UDP_NO_CHECK6_TX)"); !s) return s;
  return set_int(fd(), IPPROTO_UDP, UDP_NO_CHECK6_RX, rx, "setsockopt(UDP_NO_CHECK6_RX)");
}
Status UdpSocket::set_flowinfo_send(bool on) {
  if (family() != AddrFamily::ipv6) return Errc::not_supported;
  return set_int(fd(), IPPROTO_IPV6, IPV6_FLOWINFO_SEND, on, "setsockopt(IPV6_FLOWINFO_SEND)");
}
Status UdpSocket::set_recv_flow_label(bool on) {
  if (family() != AddrFamily::ipv6) return Errc::not_supported;
  return set_int(fd(), IPPROTO_IPV6, IPV6_FLOWINFO, on, "setsockopt(IPV6_FLOWINFO)");
}
Status UdpSocket::set_recv_errors(bool on) {
  Status st = family() == AddrFamily::ipv6
                  ? set_int(fd(), IPPROTO_IPV6, IPV6_RECVERR, on, "setsockopt(IPV6_RECVERR)")
                  : set_int(fd(), IPPROTO_IP, IP_RECVERR, on, "setsockopt(IP_RECVERR)");
  if (st) recv_errors_ = on;
  return st;
}

Result<ErrorQueueCounts> UdpSocket::drain_errors() {
  ErrorQueueCounts c;
  if (!recv_errors_) return c;
  // The queue is bounded by the receive buffer; the bound on reads keeps a
  // call short whatever arrives meanwhile.
  for (int i = 0; i < 256; ++i) {
    std::array<uint64_t, 64> ctrl;        // uint64_t: cmsghdr alignment
    std::array<std::byte, 64> head;        // the start of the datagram the error is about: not needed
    sockaddr_storage from{};
    iovec v{head.data(), head.size()};
    msghdr m{};
    m.msg_name = &from;
    m.msg_namelen = sizeof from;
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    m.msg_control = ctrl.data();
    m.msg_controllen = sizeof ctrl;
    const ssize_t r = ::recvmsg(fd(), &m, MSG_ERRQUEUE | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return record_os_error(errno, "recvmsg(MSG_ERRQUEUE)");
    }
    bool icmp = false;
    for (cmsghdr* cm = cmsg_first(&m); cm != nullptr; cm = cmsg_next(&m, cm)) {
      if (!(cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_RECVERR) &&
          !(cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_RECVERR))
        continue;
      const auto ee = cmsg_value<sock_extended_err>(cm);
      icmp = ee.ee_origin == SO_EE_ORIGIN_ICMP || ee.ee_origin == SO_EE_ORIGIN_ICMP6;
      c.last_errno = static_cast<int>(ee.ee_errno);
    }
    ++(icmp ? c.icmp : c.local);
  }
  // The error the last entry left pending (sk_err), if no call has taken it
  // yet: taken here, so the next send or receive does not fail with it.
  if (c.total() != 0) (void)get_int(fd(), SOL_SOCKET, SO_ERROR, "getsockopt(SO_ERROR)");
  return c;
}

bool UdpSocket::drained_icmp(ErrorQueueCounts& into) {
  auto d = drain_errors();
  if (!d) return false;
  into += *d;
  return d->icmp != 0;
}

Status UdpSocket::set_busy_poll(int microseconds) {
  return set_int(fd(), SOL_SOCKET, SO_BUSY_POLL, microseconds, "setsockopt(SO_BUSY_POLL)");
}

Result<uint32_t> UdpSocket::lease_flow_label(const SockAddr& dest, uint32_t label) {
  if (family() != AddrFamily::ipv6 || !dest.is_ipv6()) return Errc::not_supported;
  if (label > 0xfffffu) return Errc::invalid_argument;
  FlowLabelReq req{};
  std::memcpy(&req.flr_dst, dest.address_bytes().data(), 16);
  req.flr_label = htonl(label);
  req.flr_action = kFlActionGet;
  req.flr_share = kFlShareExcl;
  req.flr_flags = kFlFlagCreate | (label != 0 ? kFlFlagExcl : 0);
  if (setsockopt(fd(), IPPROTO_IPV6, IPV6_FLOWLABEL_MGR, &req, sizeof req) != 0)
    return record_os_error(errno, "setsockopt(IPV6_FLOWLABEL_MGR)");
  // With label 0 the kernel picks one and writes it back into the request.
  return ntohl(req.flr_label) & 0xfffffu;
}

Errc UdpSocket::prepare(const TxDatagram& d, ::msghdr& m, ::iovec* iov, TxCtrl& ctrl, SockAddr& dest_copy) const {
  const bool v6 = family() == AddrFamily::ipv6;
  if (d.dest == nullptr || d.dest->family() != family() || d.iov.size() > kMaxIovPerDatagram || d.tos > 255 ||
      (d.flow_label != 0 && !v6))
    return Errc::invalid_argument;
  size_t total = 0;
  for (const IoSlice& s : d.iov) total += s.bytes;
  if (d.gso_segment_bytes != 0 && (total + d.gso_segment_bytes - 1) / d.gso_segment_bytes > kMaxGsoSegments)
    return Errc::invalid_argument;
  m = msghdr{};
  for (size_t i = 0; i < d.iov.size(); ++i) iov[i] = iovec{const_cast<void*>(d.iov[i].data), d.iov[i].bytes};
  m.msg_iov = iov;
  m.msg_iovlen = d.iov.size();
  const SockAddr* dest = d.dest;
  if (d.flow_label != 0) {
    dest_copy = *d.dest;
    dest_copy.set_flow_label(d.flow_label);
    dest = &dest_copy;
  }
  // sendmsg never writes through msg_name.
  m.msg_name = const_cast<void*>(dest->native());
  m.msg_namelen = dest->native_len();
  if (d.gso_segment_bytes != 0 || d.tos >= 0) {
    ctrl.fill(0);
    m.msg_control = ctrl.data();
    size_t ctrl_len = 0;
    if (d.gso_segment_bytes != 0) ctrl_len += cmsg_space(sizeof(uint16_t));
    if (d.tos >= 0) ctrl_len += cmsg_space(sizeof(int));
    m.msg_controllen = ctrl_len;
    cmsghdr* c = cmsg_first(&m);
    if (d.gso_segment_bytes != 0) {
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = cmsg_len(sizeof(uint16_t));
      const uint16_t seg = d.gso_segment_bytes;
      std::memcpy(cmsg_data(c), &seg, sizeof seg);
      c = cmsg_next(&m, c);
    }
    if (d.tos >= 0) {
      c->cmsg_level = v6 ? IPPROTO_IPV6 : IPPROTO_IP;
      c->cmsg_type = v6 ? IPV6_TCLASS : IP_TOS;
      c->cmsg_len = cmsg_len(sizeof(int));
      const int tos = d.tos;
      std::memcpy(cmsg_data(c), &tos, sizeof tos);
    }
  }
  return Errc::ok;
}

Result<size_t> UdpSocket::send_batch(std::span<const TxDatagram> datagrams) {
  if (!valid()) return Errc::bad_state;
  const size_t n = std::min(datagrams.size(), kMaxBatch);
  if (n == 0) return size_t{0};
  TxScratch& t = *tx_;
  size_t built = 0;
  for (; built < n; ++built) {
    const Errc bad = prepare(datagrams[built], t.msgs[built].msg_hdr, &t.iov[built * kMaxIovPerDatagram],
                             t.ctrl[built], t.dest_copy[built]);
    if (bad != Errc::ok) {
      // Send the valid datagrams before it; report the error when it is first.
      if (built == 0) return bad;
      break;
    }
  }
  last_send_ = SendReport{};
  while (true) {
    int r;
    do {
      r = ::sendmmsg(fd(), t.msgs.data(), static_cast<unsigned>(built), MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    if (r >= 0) return static_cast<size_t>(r);
    const int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS) {
      (e == ENOBUFS ? last_send_.queue_drop : last_send_.buffer_full) = true;
      return size_t{0};
    }
    // An ICMP error about an earlier datagram fails the next send before it
    // sends anything (the error was pending on the socket): once the queue
    // is drained, this batch goes as if nothing happened. A failure of
    // this batch's own (no route, too big) fails again.
    if (!recv_errors_ || last_send_.retried || !drained_icmp(last_send_.drained))
      return record_os_error(e, "sendmmsg");
    last_send_.retried = true;
  }
}

Result<size_t> UdpSocket::send_to(const SockAddr& dest, std::span<const std::byte> bytes, int16_t tos) {
  const IoSlice slice{bytes.data(), bytes.size()};
  TxDatagram d;
  d.dest = &dest;
  d.iov = {&slice, 1};
  d.tos = tos;
  return send_batch({&d, 1});
}

Result<size_t> UdpSocket::recv_batch(RxBatch& batch, size_t max_datagrams) {
  if (!valid()) return Errc::bad_state;
  RxBatch::Native& nat = *batch.native_;
  const size_t cap = std::clamp<size_t>(max_datagrams, 1, batch.capacity());
  auto* ctrl_base = reinterpret_cast<std::byte*>(nat.ctrl.data());
  for (size_t i = 0; i < cap; ++i) {
    msghdr& h = nat.msgs[i].msg_hdr;
    h = msghdr{};
    h.msg_name = batch.dgrams_[i].source.native_mut();
    h.msg_namelen = SockAddr::kStorageBytes;
    h.msg_iov = &nat.iov[i];
    h.msg_iovlen = 1;
    h.msg_control = ctrl_base + i * kCtrlBytes;
    h.msg_controllen = kCtrlBytes;
    nat.msgs[i].msg_len = 0;
  }
  int r;
  bool retried = false;
  while (true) {
    do {
      r = ::recvmmsg(fd(), nat.msgs.data(), static_cast<unsigned>(cap), MSG_DONTWAIT, nullptr);
    } while (r < 0 && errno == EINTR);
    batch.filled_ = 0;
    if (r >= 0) break;
    const int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      // Whatever woke the caller may have been the error queue (EPOLLERR).
      (void)drained_icmp(batch.errors_drained_);
      return Errc::would_block;
    }
    // An ICMP error about a datagram this socket sent, left pending: the
    // datagrams queued behind it are still there.
    if (!recv_errors_ || retried || !drained_icmp(batch.errors_drained_)) return record_os_error(e, "recvmmsg");
    retried = true;
  }
  const size_t n = static_cast<size_t>(r);
  for (size_t i = 0; i < n; ++i) {
    msghdr& h = nat.msgs[i].msg_hdr;
    RxDatagram& d = batch.dgrams_[i];
    d.data = std::span<std::byte>(static_cast<std::byte*>(nat.iov[i].iov_base),
                                  std::min<size_t>(nat.msgs[i].msg_len, batch.buffer_bytes_));
    d.truncated = (h.msg_flags & MSG_TRUNC) != 0;
    d.local = SockAddr();
    d.ifindex = 0;
    d.tos = 0;
    d.tos_valid = false;
    d.flow_label = 0;
    d.gro_segment_bytes = 0;
    for (cmsghdr* c = cmsg_first(&h); c != nullptr; c = cmsg_next(&h, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
        d.tos = cmsg_value<uint8_t>(c);
        d.tos_valid = true;
      } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
        d.tos = static_cast<uint8_t>(cmsg_value<int>(c));
        d.tos_valid = true;
      } else if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
        d.gro_segment_bytes = static_cast<uint16_t>(cmsg_value<int>(c));
      } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        const auto pi = cmsg_value<in_pktinfo>(c);
        std::array<uint8_t, 4> a;
        std::memcpy(a.data(), &pi.ipi_addr, 4);
        d.local = SockAddr::ipv4(a, local_.port());
        d.ifindex = static_cast<uint32_t>(pi.ipi_ifindex);
      } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
        const auto pi = cmsg_value<in6_pktinfo>(c);
        std::array<uint8_t, 16> a;
        std::memcpy(a.data(), &pi.ipi6_addr, 16);
        d.local = SockAddr::ipv6(a, local_.port());
        d.ifindex = pi.ipi6_ifindex;
      } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_FLOWINFO) {
        d.flow_label = ntohl(cmsg_value<uint32_t>(c)) & 0xfffffu;
      }
    }
  }
  batch.filled_ = n;
  return n;
}

namespace {

// The name of the interface that holds `local`, or empty.
Result<std::string> interface_of(const SockAddr& local) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return record_os_error(errno, "getifaddrs");
  std::string name;
  const auto want = local.address_bytes();
  for (const ifaddrs* a = list; a && name.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6)) continue;
    const socklen_t len = a->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    auto have = SockAddr::from_native(a->ifa_addr, len);
    if (have && have->family() == local.family() && std::ranges::equal(have->address_bytes(), want)) name = a->ifa_name;
  }
  ::freeifaddrs(list);
  // Loopback holds all of 127/8, but lists only 127.0.0.1.
  if (name.empty() && local.is_ipv4() && want[0] == 127) name = "lo";
  if (name.empty()) return Errc::not_found;
  return name;
}

}  // namespace

Result<uint32_t> local_interface_mtu(const SockAddr& local) {
  auto found = interface_of(local);
  if (!found) return found.error();
  const std::string& name = *found;
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return record_os_error(errno, "socket");
  ifreq req{};
  std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd.get(), SIOCGIFMTU, &req) != 0) return record_os_error(errno, "ioctl(SIOCGIFMTU)");
  return static_cast<uint32_t>(req.ifr_mtu);
}

Result<uint64_t> local_interface_speed_bps(const SockAddr& local) {
  auto name = interface_of(local);
  if (!name) return name.error();
  // Virtual interfaces (loopback, veth, bridges, tunnels) have no `device`
  // link in sysfs; a veth's 10000 Mb/s is a placeholder, not a rate.
  const std::string dir = "/sys/class/net/" + *name;
  if (::access((dir + "/device").c_str(), F_OK) != 0) return Errc::not_found;
  std::FILE* f = std::fopen((dir + "/speed").c_str(), "re");
  if (f == nullptr) return Errc::not_found;
  long long mbps = -1;
  const int got = std::fscanf(f, "%lld", &mbps);
  std::fclose(f);
  // A link that is down (or a driver that does not know) reads -1 or fails.
  if (got != 1 || mbps <= 0) return Errc::not_found;
  return static_cast<uint64_t>(mbps) * 1'000'000u;
}

}  // namespace mrc::platform
