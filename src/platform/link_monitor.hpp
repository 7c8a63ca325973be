// SPDX-License-Identifier: BSD-2-Clause
// LinkMonitor: the carrier of the host's network interfaces, from the
// kernel's rtnetlink (a NETLINK_ROUTE socket), so the software device can
// take a plane out of service the moment its interface loses its link, as a
// NIC knows its own carrier (docs/software-device.md, "Carrier watching").
//
// Pieces, each usable alone:
//  - parse_netlink(): a pure parser of what one recv() on a NETLINK_ROUTE
//    socket returns: RTM_NEWLINK / RTM_DELLINK become LinkStatus values
//    (interface index, flags, operational state, a carrier verdict), address
//    notifications are counted, RTM_NEWADDR entries can be matched against
//    an address, and everything malformed is skipped and counted. It never
//    reads outside the buffer it is given.
//  - interface_of(): the interface index owning a local IPv4 or IPv6
//    address (an RTM_GETADDR dump on a short-lived socket of its own).
//  - LinkMonitor: a nonblocking socket subscribed to link and address
//    notifications (RTMGRP_LINK, RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR),
//    whose fd a caller puts in its epoll; it also dumps every link's state
//    on request, so a caller starts from the current state and recovers
//    after the kernel dropped notifications (ENOBUFS).
//
// The socket belongs to the network namespace of the thread that opens it
// (as every socket does), whatever thread reads it later.
//
// Thread safety: a LinkMonitor is used by one thread at a time; the free
// functions are reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "platform/fd.hpp"
#include "platform/sock_addr.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace mrc::platform {

/// RFC 2863 operational states as IFLA_OPERSTATE reports them (linux/if.h
/// IF_OPER_*; the .cc checks the values).
enum class OperState : uint8_t {
  unknown = 0,         ///< the driver does not say (e.g. dummy, lo): the flags decide
  notpresent = 1,
  down = 2,
  lowerlayerdown = 3,  ///< e.g. a veth whose peer is down
  testing = 4,
  dormant = 5,
  up = 6,
};

/// Interface flag bits the monitor reads (linux/if.h IFF_*; checked in the .cc).
namespace link_flags {
inline constexpr uint32_t kUp = 0x1;            ///< IFF_UP: administratively up
inline constexpr uint32_t kLoopback = 0x8;      ///< IFF_LOOPBACK
inline constexpr uint32_t kRunning = 0x40;      ///< IFF_RUNNING: operationally up
inline constexpr uint32_t kLowerUp = 0x10000;   ///< IFF_LOWER_UP: the driver reports carrier
}  // namespace link_flags

/// What one RTM_NEWLINK or RTM_DELLINK message says about an interface.
struct LinkStatus {
  int32_t ifindex = 0;     ///< > 0
  uint32_t flags = 0;      ///< ifi_flags (link_flags:: bits and others)
  /// IFLA_OPERSTATE, if the message carried it.
  std::optional<OperState> operstate;
  bool removed = false;    ///< RTM_DELLINK: the interface is gone
  /// The verdict: the interface exists, is administratively up (kUp), has
  /// carrier (kLowerUp) and is operational (kRunning), and its operational
  /// state, if given, is none of notpresent, down, lowerlayerdown. An
  /// unknown, up, testing or dormant operstate leaves the decision to the
  /// flags (the kernel clears kRunning for testing and dormant).
  bool carrier_up = false;
};

/// What parse_netlink() found in one buffer.
struct NetlinkParse {
  size_t links = 0;          ///< LinkStatus values appended
  size_t addr_changes = 0;   ///< well-formed RTM_NEWADDR / RTM_DELADDR messages
  /// Messages skipped as malformed: a link or address message too short for
  /// its fixed header, an attribute that overruns its message, an
  /// IFLA_OPERSTATE without its byte, an interface index <= 0, a message
  /// length that overruns the buffer (this also ends the walk: the rest
  /// cannot be framed), or trailing bytes too short for a header.
  size_t malformed = 0;
  bool done = false;         ///< an NLMSG_DONE (the end of a dump) was seen
  /// The errno (positive) of an NLMSG_ERROR that reported a failure; 0 if
  /// none did (an NLMSG_ERROR with errno 0 is an acknowledgement).
  int error = 0;
  /// A dump message carried NLM_F_DUMP_INTR: the kernel's table changed
  /// during the dump, so the dump may be inconsistent; dump again.
  bool dump_interrupted = false;
};

/// Parses the netlink messages in `buf` (the bytes one recv() returned from
/// a NETLINK_ROUTE socket, several messages back to back, 4-byte aligned)
/// and appends one LinkStatus per well-formed RTM_NEWLINK / RTM_DELLINK to
/// `links`. Other message types (NLMSG_NOOP, RTM_NEWROUTE, ...) are ignored
/// without counting them. If `match` is given, RTM_NEWADDR messages are
/// compared against it (its port ignored; see interface_of()) and the first
/// matching interface index is stored in `*match_ifindex` (left alone if
/// none matches). Never fails: whatever cannot be parsed is counted in
/// `malformed` and skipped.
NetlinkParse parse_netlink(std::span<const uint8_t> buf, std::vector<LinkStatus>& links,
                           const SockAddr* match = nullptr, int32_t* match_ifindex = nullptr);

/// The index of the interface that holds local address `addr` (IPv4 or
/// IPv6; the port is ignored). An address's local side is its IFA_LOCAL
/// attribute if it has one (the peer of a point-to-point address is not
/// ours), else IFA_ADDRESS. An IPv6 address with a scope id (link-local)
/// matches only on that interface. Looked up in the calling thread's network
/// namespace with an RTM_GETADDR dump on a socket of its own, waiting at
/// most `timeout` for the kernel's answer.
/// Errors: not_found (no interface has it), invalid_argument (an empty
/// address), timed_out, or the socket's errno mapped as errc_from_errno()
/// does (permission, no_memory, ...), recorded for last_error_message().
Result<int32_t> interface_of(const SockAddr& addr, Duration timeout = Duration::ms(1000));

/// A NETLINK_ROUTE socket subscribed to link and address notifications.
/// Move-only; closes its socket on destruction.
class LinkMonitor {
 public:
  LinkMonitor() = default;
  /// Opens the socket (nonblocking, close-on-exec, a 1 MiB receive buffer
  /// when the kernel grants it) in the calling thread's network namespace
  /// and subscribes it. Nothing is read yet: request_dump() for the current
  /// state. Errors: the errno of socket() or bind() mapped as
  /// errc_from_errno() does (permission when netlink is forbidden, e.g. by
  /// a seccomp filter; no_memory; not_supported without netlink), recorded
  /// for last_error_message().
  static Result<LinkMonitor> open();

  /// The socket, readable when notifications or dump answers are queued;
  /// for epoll (level-triggered: read() until it returns 0). Owned by the
  /// monitor; -1 for a default-constructed one.
  int fd() const { return fd_.get(); }

  /// Asks the kernel for every link's state (an RTM_GETLINK dump); the
  /// answers arrive through read() as LinkStatus values, mixed with
  /// notifications in the order the kernel queued them. Only one dump runs
  /// at a time: asking while one runs schedules another after it (so its
  /// answers reflect a state at least as new as the call). Errors:
  /// bad_state for a default-constructed monitor; the errno of send()
  /// mapped as errc_from_errno() does, recorded for last_error_message()
  /// (the dump is then retried by the next read()).
  Status request_dump();
  /// True while a dump's answers are still coming.
  bool dumping() const { return dumping_; }

  /// Reads every queued message without blocking and appends the link
  /// states to `out` (oldest first). Returns how many it appended (0 when
  /// nothing was queued). Sets addr_changed() when address notifications
  /// arrived. When the kernel reports it dropped notifications (ENOBUFS),
  /// or a dump was interrupted, it counts an overrun and requests a new
  /// dump itself, so the caller's view catches up with no action.
  /// Messages that are not from the kernel are dropped and counted as
  /// malformed. Errors: bad_state for a default-constructed monitor; an
  /// errno of recvmsg other than EAGAIN, EINTR and ENOBUFS, mapped as
  /// errc_from_errno() does and recorded (what was read before it is in
  /// `out`).
  Result<size_t> read(std::vector<LinkStatus>& out);

  /// Blocking, for start-up: request_dump(), then read() until the dump
  /// ends, appending to `out` (notifications that arrive meanwhile too),
  /// for at most `timeout`. Errors: those of request_dump() and read();
  /// timed_out; the errno of an NLMSG_ERROR answer to the dump, mapped;
  /// each recorded for last_error_message().
  Status dump(std::vector<LinkStatus>& out, Duration timeout);

  /// Address notifications arrived since the last take_addr_changed():
  /// an address the caller resolved with interface_of() may have moved.
  bool take_addr_changed() { return std::exchange(addr_changed_, false); }

  /// Messages skipped as malformed or foreign, since open.
  uint64_t malformed() const { return malformed_; }
  /// Times the kernel dropped notifications (ENOBUFS) or interrupted a
  /// dump, each answered by a new dump; since open.
  uint64_t overruns() const { return overruns_; }

 private:
  UniqueFd fd_;
  std::vector<uint8_t> buf_;
  uint32_t seq_ = 0;
  bool dumping_ = false;
  bool dump_wanted_ = false;  ///< a dump to request once the running one ends
  int dump_error_ = 0;        ///< errno an NLMSG_ERROR answered the running dump with
  bool addr_changed_ = false;
  uint64_t malformed_ = 0;
  uint64_t overruns_ = 0;
};

}  // namespace mrc::platform
