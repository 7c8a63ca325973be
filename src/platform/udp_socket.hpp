// SPDX-License-Identifier: BSD-2-Clause
// UdpSocket: a non-blocking UDP socket with batched send/receive (sendmmsg /
// recvmmsg), UDP GSO/GRO, per-datagram TOS/ECN, packet info and IPv6 flow
// labels. This is the "epoll + mmsg" datapath back-end of the software device.
//
// Threading: a UdpSocket and an RxBatch are used by one thread at a time
// (send_batch keeps per-socket scratch arrays). Different sockets are
// independent.
//
// Kernel behaviour measured on Linux 6.18 (tests/unit/platform/udp_socket_test.cc):
// - UDP_SEGMENT (GSO) and UDP_GRO work on loopback: a GSO send of k segments
//   to a GRO socket arrives as ONE datagram with the segment size reported;
//   to a socket without GRO it arrives as k datagrams.
// - The TOS/TCLASS byte, ECN bits included (ECT(0), ECT(1), CE), is carried
//   and reported by IP_RECVTOS / IPV6_RECVTCLASS on loopback.
// - IPv6 flow labels: see lease_flow_label() below.
// - On loopback sendmmsg never returns EAGAIN: the skb is orphaned from the
//   sender's buffer on transmit, and a full receiver drops silently. A real
//   interface (or a qdisc that queues) does hold the buffer; then send_batch
//   returns 0.
// - A datagram the interface's qdisc drops (a full tbf, htb or fifo queue)
//   fails its send with ENOBUFS only on a socket with IP_RECVERR /
//   IPV6_RECVERR; without it the send succeeds and the kernel counts the
//   drop in Udp SndbufErrors (veth pair with a 20 KB tbf: 2,950 of 3,000
//   sends refused with RECVERR, 0 without). With RECVERR an ICMP port
//   unreachable is queued on the error queue (origin ICMP / ICMP6) and the
//   next sendmsg fails with ECONNREFUSED, sending nothing.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "platform/fd.hpp"
#include "platform/sock_addr.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

struct msghdr;  // <sys/socket.h>
struct iovec;   // <sys/uio.h>

namespace mrc::platform {

/// One gathered piece of an outgoing datagram (layout-compatible with iovec
/// by intent, but converted, not cast). Not owned: the bytes must stay valid
/// until send_batch returns.
struct IoSlice {
  const void* data = nullptr;
  size_t bytes = 0;
};

/// One outgoing datagram (or, with gso_segment_bytes, one GSO burst).
struct TxDatagram {
  /// Destination; not owned, must outlive the send_batch call. Its family must
  /// match the socket's.
  const SockAddr* dest = nullptr;
  /// The bytes, gathered in order with no copy: e.g. {header, payload0,
  /// payload1, ...}. At most UdpSocket::kMaxIovPerDatagram slices.
  std::span<const IoSlice> iov;
  /// 0: the slices form one datagram. >0: GSO — the slices hold k segments
  /// back to back (each exactly this many bytes, the last may be shorter) and
  /// the kernel splits them into k datagrams with identical UDP/IP headers.
  /// At most UdpSocket::kMaxGsoSegments segments and 65507 bytes in total
  /// (IPv4; 65527 for IPv6).
  uint16_t gso_segment_bytes = 0;
  /// -1: the socket's TOS/TCLASS (set_tos). 0..255: this datagram's
  /// DSCP (high 6 bits) + ECN (low 2 bits) byte, sent as an IP_TOS /
  /// IPV6_TCLASS control message.
  int16_t tos = -1;
  /// IPv6 only: a non-zero flow label, sent through sin6_flowinfo. Needs
  /// set_flowinfo_send(true) and a label leased with lease_flow_label(),
  /// otherwise the send fails with invalid_argument.
  uint32_t flow_label = 0;
};

/// One received datagram, a view into its RxBatch's buffer.
struct RxDatagram {
  /// The received bytes (length = bytes received, at most the buffer size).
  std::span<std::byte> data;
  /// Sender address and port.
  SockAddr source;
  /// The destination address the datagram was sent to, with the socket's
  /// port, if set_recv_pktinfo(true); family none otherwise. Tells which
  /// local address (plane) a packet came in on when one socket is bound to
  /// the wildcard address.
  SockAddr local;
  /// Interface index the datagram arrived on (with pktinfo), else 0.
  uint32_t ifindex = 0;
  /// The IPv4 TOS / IPv6 traffic class byte (DSCP << 2 | ECN), valid if tos_valid
  /// (set_recv_tos(true), which open() enables by default).
  uint8_t tos = 0;
  bool tos_valid = false;
  /// IPv6 flow label of the packet if set_recv_flow_label(true), else 0.
  uint32_t flow_label = 0;
  /// GRO: >0 when the kernel coalesced several datagrams of the same flow into
  /// this one; each segment is this many bytes, the last may be shorter.
  /// 0: an ordinary datagram.
  uint16_t gro_segment_bytes = 0;
  /// The datagram was longer than the buffer and was cut (MSG_TRUNC).
  bool truncated = false;

  /// Number of original datagrams in `data`: 1 when not coalesced.
  size_t segment_count() const {
    if (gro_segment_bytes == 0 || data.empty()) return data.empty() ? 0 : 1;
    return (data.size() + gro_segment_bytes - 1) / gro_segment_bytes;
  }
  /// Segment i (0 <= i < segment_count()): one original datagram's payload.
  std::span<std::byte> segment(size_t i) const {
    if (gro_segment_bytes == 0) return data;
    const size_t off = i * gro_segment_bytes;
    const size_t len = std::min<size_t>(gro_segment_bytes, data.size() - off);
    return data.subspan(off, len);
  }

  /// Range over the segments: `for (std::span<std::byte> seg : d.segments())`.
  class SegmentRange {
   public:
    class iterator {
     public:
      iterator(const RxDatagram* d, size_t i) : d_(d), i_(i) {}
      std::span<std::byte> operator*() const { return d_->segment(i_); }
      iterator& operator++() { ++i_; return *this; }
      bool operator==(const iterator& o) const { return i_ == o.i_; }
     private:
      const RxDatagram* d_;
      size_t i_;
    };
    explicit SegmentRange(const RxDatagram* d) : d_(d) {}
    iterator begin() const { return {d_, 0}; }
    iterator end() const { return {d_, d_->segment_count()}; }
   private:
    const RxDatagram* d_;
  };
  SegmentRange segments() const { return SegmentRange(this); }
};

/// What a socket's error queue held (UdpSocket::drain_errors). The kernel
/// queues entries there only for a socket with UdpSocketOptions::recv_errors.
struct ErrorQueueCounts {
  /// ICMP / ICMPv6 errors about datagrams this socket sent (port, host or
  /// network unreachable, ...), as the network answered them. Each also
  /// made one later send or receive call on the socket fail with its errno
  /// (that call's datagram was not sent: UdpSocket::send_batch sends it
  /// again itself).
  uint64_t icmp = 0;
  /// The host's own reports about a send that failed at once (EMSGSIZE, the
  /// call's own error), and entries of any other origin.
  uint64_t local = 0;
  /// The errno the last entry carried (ECONNREFUSED, EHOSTUNREACH, ...), 0 if none.
  int last_errno = 0;

  uint64_t total() const { return icmp + local; }
  ErrorQueueCounts& operator+=(const ErrorQueueCounts& o) {
    icmp += o.icmp;
    local += o.local;
    if (o.total() != 0) last_errno = o.last_errno;
    return *this;
  }
};

/// Caller-owned, reusable receive buffers for recv_batch: `count` buffers of
/// `buffer_bytes` each, allocated once. Use 65536-byte buffers when GRO is on
/// (a coalesced datagram can be up to 64 KiB), the path MTU otherwise.
/// Move-only. The RxDatagram views stay valid until the next recv_batch into
/// the same batch.
class RxBatch {
 public:
  /// Allocates count * buffer_bytes bytes plus control-message space.
  /// count must be 1..1024 and buffer_bytes 1..(1 << 20); out-of-range values are clamped.
  explicit RxBatch(size_t count = 64, size_t buffer_bytes = 65536);
  ~RxBatch();
  RxBatch(RxBatch&&) noexcept;
  RxBatch& operator=(RxBatch&&) noexcept;
  RxBatch(const RxBatch&) = delete;
  RxBatch& operator=(const RxBatch&) = delete;

  size_t capacity() const { return dgrams_.size(); }
  size_t buffer_bytes() const { return buffer_bytes_; }
  /// Datagrams filled by the last recv_batch.
  size_t size() const { return filled_; }
  RxDatagram& operator[](size_t i) { return dgrams_[i]; }
  const RxDatagram& operator[](size_t i) const { return dgrams_[i]; }
  std::span<RxDatagram> received() { return {dgrams_.data(), filled_}; }
  /// Error-queue entries recv_batch drained into this batch, since it was
  /// made (UdpSocketOptions::recv_errors).
  const ErrorQueueCounts& errors_drained() const { return errors_drained_; }
  RxDatagram* begin() { return dgrams_.data(); }
  RxDatagram* end() { return dgrams_.data() + filled_; }

 private:
  friend class UdpSocket;
  struct Native;  // mmsghdr / iovec / cmsg arrays, defined in the .cc
  size_t buffer_bytes_;
  size_t filled_ = 0;
  std::vector<std::byte> storage_;
  std::vector<RxDatagram> dgrams_;
  ErrorQueueCounts errors_drained_;
  std::unique_ptr<Native> native_;
};

/// What the last UdpSocket::send_batch call met besides the datagrams it
/// reports as sent.
struct SendReport {
  /// It returned 0 because the socket's send buffer was full (EAGAIN): wait
  /// for writability (Epoll kWritable / wait_writable), then send again.
  bool buffer_full = false;
  /// It returned 0 because the host's egress queue (the interface's qdisc)
  /// dropped the first datagram (ENOBUFS): it was not sent. A UDP socket
  /// hears of such drops only with recv_errors; without it the kernel
  /// reports success and counts the drop in /proc/net/snmp
  /// (Udp SndbufErrors). The socket is writable meanwhile: retry once the
  /// queue has drained, not on writability.
  bool queue_drop = false;
  /// Error-queue entries the call drained after a send failed with an error
  /// an earlier datagram's ICMP error had left pending (recv_errors only),
  /// and whether it then sent again (once) because one was an ICMP error.
  ErrorQueueCounts drained;
  bool retried = false;
};

/// Options applied by UdpSocket::open. Each can also be changed later with the
/// matching setter; open() fails if a requested option fails (the error names
/// the option in last_error_message()), so probe optional features with the
/// setters when a fallback is acceptable.
struct UdpSocketOptions {
  int rcvbuf_bytes = 0;          ///< >0: SO_RCVBUFFORCE (root) else SO_RCVBUF
  int sndbuf_bytes = 0;          ///< >0: SO_SNDBUFFORCE (root) else SO_SNDBUF
  bool recv_tos = true;          ///< IP_RECVTOS / IPV6_RECVTCLASS
  bool recv_pktinfo = false;     ///< IP_PKTINFO / IPV6_RECVPKTINFO
  bool gro = false;              ///< UDP_GRO
  int tos = -1;                  ///< >=0: IP_TOS / IPV6_TCLASS default for sends
  bool ipv6_zero_checksum_tx = false;  ///< UDP_NO_CHECK6_TX
  bool ipv6_zero_checksum_rx = false;  ///< UDP_NO_CHECK6_RX
  bool reuse_addr = false;       ///< SO_REUSEADDR before bind
  /// SO_REUSEPORT before bind: several sockets may bind one address and
  /// port; the kernel spreads received datagrams over them (by hash, or by
  /// steer_reuseport_group()).
  bool reuse_port = false;
  int busy_poll_us = 0;          ///< >0: SO_BUSY_POLL microseconds
  /// Never fragment (IP_MTU_DISCOVER / IPV6_MTU_DISCOVER = PMTUDISC_PROBE):
  /// every datagram leaves with DF set and, over IPv4, identification 0
  /// (RFC 6864), as RoCEv2 and MRC packets do; a datagram larger than the
  /// outgoing interface's MTU is refused with Errc::too_big (EMSGSIZE)
  /// instead of being fragmented. A path MTU learned from ICMP is ignored:
  /// the sender's packet size is configuration. Without it (the kernel's
  /// default) an unconnected IPv4 socket may fragment and draws each
  /// datagram's identification from a shared generator (about 8 % of a
  /// per-packet sender's CPU on loopback).
  bool no_fragment = false;
  /// IP_RECVERR / IPV6_RECVERR (by the socket's family): the kernel reports
  /// a datagram its egress queue (qdisc) dropped as ENOBUFS from the send
  /// (SendReport::queue_drop), where it otherwise reports success, and
  /// queues ICMP errors about sent datagrams on the socket's error queue
  /// (also for an unconnected socket). Such an error is also left pending
  /// on the socket and fails its next send or receive call, which
  /// send_batch and recv_batch handle: they drain the queue (drain_errors)
  /// and call again once, so no datagram is lost or misread for it. A
  /// socket with errors queued reports EPOLLERR to epoll; recv_batch drains
  /// the queue whenever it finds nothing to receive, so a reader that waits
  /// for readability does not wake for them again and again.
  bool recv_errors = false;
};

class UdpSocket {
 public:
  static constexpr size_t kMaxBatch = 64;            ///< datagrams per sendmmsg/recvmmsg call
  static constexpr size_t kMaxIovPerDatagram = 64;   ///< slices per TxDatagram
  static constexpr size_t kMaxGsoSegments = 64;      ///< segments per GSO send (kernel: 64 before 6.x, 128 after)

  /// An invalid socket (fd -1); only assignable/destructible.
  UdpSocket();
  ~UdpSocket();
  UdpSocket(UdpSocket&&) noexcept;
  UdpSocket& operator=(UdpSocket&&) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  /// Opens a non-blocking, close-on-exec UDP socket of `local`'s family, bound
  /// to `local` (port 0 = an ephemeral port; read it back with local_address()).
  /// IPv6 sockets are IPV6_V6ONLY. Errors: busy (address in use), not_found
  /// (address not local), permission, not_supported, or the error of the
  /// first option that failed; last_error_message() has the errno and call.
  static Result<UdpSocket> open(const SockAddr& local, const UdpSocketOptions& opts = {});

  /// Opens a non-blocking raw socket of `family` that sends whole IP
  /// packets the caller built, header included (IPPROTO_RAW, which implies
  /// IP_HDRINCL / IPV6_HDRINCL): send_batch() then takes, per datagram, the
  /// packet from its first IP header on, and `dest` is the address the
  /// kernel routes it by (the packet's (outer) destination; the port is not
  /// used). The kernel fills in an IPv4 header's checksum and total length,
  /// and its identification when it is 0. No GSO, no TOS or flow label
  /// control messages (the header carries them), and nothing is ever
  /// received on it. The software device sends SRv6 (IPv6-in-IPv6) frames
  /// through one, and per-packet sprays with DeviceConfig::raw_send. Only
  /// the buffer size options apply. Errors: permission without
  /// CAP_NET_RAW, not_supported without the family.
  static Result<UdpSocket> open_raw(AddrFamily family, const UdpSocketOptions& opts = {});
  static Result<UdpSocket> open_raw_ipv6(const UdpSocketOptions& opts = {}) {
    return open_raw(AddrFamily::ipv6, opts);
  }
  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  AddrFamily family() const { return local_.family(); }
  /// The bound address, with the actual port after an ephemeral bind.
  const SockAddr& local_address() const { return local_; }

  // --- options -----------------------------------------------------------
  /// Buffer sizes: tries SO_*BUFFORCE (needs CAP_NET_ADMIN), then SO_*BUF
  /// (capped by net.core.{r,w}mem_max). The kernel doubles the value for
  /// bookkeeping; read the effective size with rcvbuf_bytes()/sndbuf_bytes().
  Status set_rcvbuf(int bytes);
  Status set_sndbuf(int bytes);
  Result<int> rcvbuf_bytes() const;
  Result<int> sndbuf_bytes() const;
  /// Default TOS / traffic class byte for sends (DSCP << 2 | ECN). The ECN bits
  /// are kept for UDP (the kernel strips them only for TCP).
  Status set_tos(uint8_t tos);
  /// Report the TOS / traffic class byte of every received datagram.
  Status set_recv_tos(bool on);
  /// Report the destination address and interface of every received datagram.
  Status set_recv_pktinfo(bool on);
  /// UDP_GRO: let the kernel hand over coalesced datagrams (RxDatagram::gro_segment_bytes).
  Status set_gro(bool on);
  /// IPv6 only: send with a zero UDP checksum (TX) / accept zero checksums (RX).
  /// Errors: not_supported on IPv4 sockets.
  Status set_ipv6_zero_checksum(bool tx, bool rx);
  /// IPv6 only: IPV6_FLOWINFO_SEND, so TxDatagram::flow_label is used.
  Status set_flowinfo_send(bool on);
  /// IPv6 only: IPV6_FLOWINFO, so RxDatagram::flow_label is reported.
  Status set_recv_flow_label(bool on);
  /// IP_RECVERR / IPV6_RECVERR: see UdpSocketOptions::recv_errors.
  Status set_recv_errors(bool on);
  bool recv_errors() const { return recv_errors_; }
  /// Reads every entry of the socket's error queue (recvmsg with
  /// MSG_ERRQUEUE, non-blocking, at most 256 a call) and clears the error
  /// the last one left pending (SO_ERROR), so that no later call fails
  /// with it. Returns what it read; all zero when the queue is empty (and
  /// always without recv_errors). Errors: as the system call gives them.
  Result<ErrorQueueCounts> drain_errors();
  /// SO_BUSY_POLL: spin in the driver this long on a blocking receive/poll
  /// (only useful with a NIC driver that supports it; no effect on loopback).
  Status set_busy_poll(int microseconds);
  /// For a socket of an SO_REUSEPORT group: deliver each datagram to the
  /// group's socket number (in bind order) `(be32 at offset_bytes of the UDP
  /// payload) & mask` (a classic BPF program, SO_ATTACH_REUSEPORT_CBPF; it
  /// applies to the whole group). An index past the group falls back to the
  /// kernel's hash. The software device steers MRC packets to the engine
  /// owning their destination QP this way (BTH bytes 4..7 end with the QPN).
  Status steer_reuseport_group(uint32_t offset_bytes, uint32_t mask);

  /// IPv6 only: leases flow label `label` (20 bits; 0 = let the kernel pick a
  /// free one) for destination `dest` through IPV6_FLOWLABEL_MGR, exclusive to
  /// this socket, so it may send with it (TxDatagram::flow_label). Returns the
  /// leased label. The lease lives as long as the socket, and the kernel keeps
  /// the label reserved for a linger time (at least 6 s) after the socket
  /// closes, so prefer label 0.
  /// Errors: not_supported on IPv4; busy (EEXIST) if the label is held or
  /// still lingering; permission/invalid_argument if the kernel refuses.
  /// Finding on this kernel (6.18, net.ipv6.auto_flowlabels=1,
  /// flowlabel_state_ranges=0): leasing and sending with a leased label work
  /// on ::1 and the receiver sees the label (IPV6_FLOWINFO); sending with an
  /// unleased label fails with EINVAL. Without a lease, auto_flowlabels already
  /// sets a label hashed from the 5-tuple, so a changing UDP source port (the
  /// EV) changes the flow label too; an explicit label is only needed when the
  /// EV is carried in the flow label itself.
  Result<uint32_t> lease_flow_label(const SockAddr& dest, uint32_t label = 0);

  // --- data path -----------------------------------------------------------
  /// Sends up to kMaxBatch datagrams with one sendmmsg. Returns how many of
  /// the leading datagrams the kernel accepted (possibly fewer than given:
  /// call again with the rest). 0 means datagrams[0] was not sent and is no
  /// error: the socket buffer was full (EAGAIN) or the egress queue dropped
  /// it (ENOBUFS); last_send() says which, and when to try again. (A drop
  /// of a later datagram of the batch ends the batch there: it is not
  /// counted as sent, and the next call starts with it.) Errors:
  /// invalid_argument (bad TxDatagram: null dest, family mismatch, too many
  /// slices or segments, unleased flow label), too_big (EMSGSIZE), io. An
  /// error always concerns datagrams[0] (the datagrams before it were
  /// reported as sent by an earlier call): drop or fix it and send the
  /// rest. With recv_errors, a failure that an earlier datagram's ICMP
  /// error left pending is not reported: the call drains the error queue
  /// and sends again, once (last_send().drained and retried).
  Result<size_t> send_batch(std::span<const TxDatagram> datagrams);
  /// What the last send_batch call met (refusal cause, error queue).
  const SendReport& last_send() const { return last_send_; }

  /// Convenience: one datagram of contiguous bytes. Returns 1 sent, 0 would-block.
  Result<size_t> send_to(const SockAddr& dest, std::span<const std::byte> bytes, int16_t tos = -1);

  /// Receives up to min(batch.capacity(), max_datagrams) datagrams with one
  /// recvmmsg (non-blocking). Returns the number received (> 0) and fills
  /// batch[0..n). A smaller max_datagrams keeps the bytes one call writes
  /// small enough to still be in cache when they are read (GRO datagrams
  /// are up to 64 KiB each); 0 counts as 1. Errors: would_block when nothing
  /// is queued (wait with Epoll or wait_readable), io and others as mapped
  /// from errno. With recv_errors, an error an ICMP message left pending
  /// is not one: the call drains the error queue, counts it in
  /// batch.errors_drained() and receives again (once); and a call that
  /// finds nothing to receive drains the queue too, so that epoll, which
  /// reports EPOLLERR while the queue holds anything, does not wake the
  /// reader for it again.
  Result<size_t> recv_batch(RxBatch& batch, size_t max_datagrams = SIZE_MAX);

 private:
  friend class UringSender;
  /// Control-message space of one outgoing datagram: UDP_SEGMENT (u16) and
  /// IP_TOS / IPV6_TCLASS (int), each CMSG_SPACE-aligned (24 + 24 bytes on
  /// 64-bit Linux); uint64_t for cmsghdr alignment.
  using TxCtrl = std::array<uint64_t, 6>;
  /// Builds the msghdr of one datagram for this socket (no system call):
  /// the slices into iov (room for kMaxIovPerDatagram), the control
  /// messages into ctrl, a flow-labelled copy of the destination into
  /// dest_copy. invalid_argument: the checks send_batch() documents.
  Errc prepare(const TxDatagram& d, ::msghdr& m, ::iovec* iov, TxCtrl& ctrl, SockAddr& dest_copy) const;
  struct TxScratch;  // mmsghdr/iovec/cmsg arrays, defined in the .cc
  /// Drains the error queue after a failed call; true if it held an ICMP
  /// error (the failure was that error's, left pending: call again).
  bool drained_icmp(ErrorQueueCounts& into);
  UniqueFd fd_;
  SockAddr local_;
  std::unique_ptr<TxScratch> tx_;  // allocated by open()
  bool recv_errors_ = false;
  SendReport last_send_;
};

/// The MTU of the local interface holding `local`'s address (its port is
/// ignored). Errc::not_found if no interface has the address (an unbound
/// wildcard, or an address of another host); other errors as the system
/// calls give them (last_error_message() names the call).
Result<uint32_t> local_interface_mtu(const SockAddr& local);
/// The link speed, in bits per second, of the physical network interface
/// that holds `local` (sysfs `speed`). Errc::not_found for a virtual
/// interface (loopback, veth, bridge: no `device` in sysfs; a veth reports a
/// fixed 10 Gb/s that means nothing), a link that is down, or a driver that
/// reports no speed.
Result<uint64_t> local_interface_speed_bps(const SockAddr& local);

}  // namespace mrc::platform
