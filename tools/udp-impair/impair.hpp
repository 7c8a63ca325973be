// SPDX-License-Identifier: BSD-2-Clause
// udp-impair: a lossy UDP forwarder between two MRC endpoints on loopback.
//
// Each link listens on one address and forwards what arrives to another,
// sending from the link's outgoing address and from the SAME UDP source port
// the datagram arrived from, so the EV (entropy value), which MRC carries in
// the UDP source port, survives the hop. One outgoing socket is opened lazily
// per observed (outgoing address, source port) and kept; the number per link
// is capped (`max_source_ports`) and datagrams beyond the cap are dropped and
// counted as `port_overflow`.
//
// Two-plane bidirectional example (all loopback addresses): the client thinks
// the server's plane-p address is G_p; the server thinks the client is F_p.
//   link p up:   listen G_p:4791  to S_p:4791  from F_p
//   link p down: listen F_p:4791  to C_p:4791  from G_p
//
// MRC's ICRC (the IBTA invariant CRC every datagram ends with) covers the IP
// addresses and UDP ports, which a link rewrites as a NAT does: the receiver
// recomputes it over (from, to), the sender computed it over (source,
// listen). A link with `fix_icrc` updates it the way a NAT updates a UDP
// checksum (LinkConfig::fix_icrc); without it every forwarded MRC datagram
// fails the receiver's check.
//
// Impairments are applied per datagram in this order: blackhole, random
// drop, drop every Nth, (ICRC rewrite), corrupt, duplicate, reorder. All randomness comes
// from one seeded Prng (one derived stream per link), so a run with the same
// seed and the same input sequence makes the same decisions.
//
// Threading: create() and the accessors are for the owning thread; run()
// blocks in its own thread; stop() and stats() may be called from any thread
// (stats() reads relaxed atomic counters: exact once run() has returned).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "platform/sock_addr.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace mrc::udp_impair {

/// Drops every datagram of a link, or of one UDP source port (one EV) on a
/// link, inside a window. The window opens after `start_after_datagrams`
/// matching datagrams have passed or `start_after` has elapsed since run()
/// started, whichever comes first (the unset one is ignored; both unset =
/// from the start), and closes `end_after` after run() started (infinite = never).
struct Blackhole {
  size_t link = 0;                           ///< index of the link it applies to
  std::optional<uint16_t> source_port;       ///< nullopt: the whole link (a plane)
  std::optional<uint64_t> start_after_datagrams;
  std::optional<Duration> start_after;
  Duration end_after = Duration::infinite();
};

/// What a link does to the datagrams it forwards.
struct Impairments {
  double drop_probability = 0;       ///< independent drop chance per datagram, [0,1]
  uint64_t drop_every_nth = 0;       ///< >0: drop datagram N, 2N, 3N... of the link (1-based)
  double duplicate_probability = 0;  ///< send the datagram twice, [0,1]
  double corrupt_probability = 0;    ///< flip one random byte of the UDP payload, [0,1]
  double reorder_probability = 0;    ///< hold a datagram back, [0,1]
  /// A held datagram is released after this many later datagrams were
  /// forwarded on the link, or after `reorder_hold_time`, whichever is first.
  uint32_t reorder_hold_datagrams = 3;
  Duration reorder_hold_time = Duration::ms(10);

  /// Empty if valid, else a message naming the bad field.
  std::string validate() const;
};

struct LinkConfig {
  std::string name;            ///< for reports; defaults to "linkN"
  platform::SockAddr listen;   ///< where the forwarder receives (port 0 = ephemeral)
  platform::SockAddr to;       ///< where it forwards to
  platform::SockAddr from;     ///< the forwarder's outgoing address (port ignored)
  Impairments impair;
  /// Treat each datagram as MRC over UDP (BTH ... ICRC, udp/stev EV mode)
  /// and rewrite its trailing 4-byte ICRC for the new addresses and ports:
  /// new = old ^ icrc(source -> listen) ^ icrc(from -> to), so a valid ICRC
  /// stays valid and a wrong one (corrupted before the hop) stays wrong.
  /// Before the corrupt impairment, so what it corrupts is detected. Needs a
  /// specific (not wildcard) listen address. Datagrams shorter than BTH +
  /// ICRC pass unchanged.
  bool fix_icrc = false;
};

struct ForwarderConfig {
  std::vector<LinkConfig> links;
  std::vector<Blackhole> blackholes;
  uint64_t seed = 1;
  size_t max_source_ports = 512;  ///< outgoing sockets per link
  int socket_buffer_bytes = 4 << 20;
};

/// Parses a link spec "listen=A:P,to=B:P,from=C[,name=N][,drop=0.1][,drop_nth=N]
/// [,dup=P][,corrupt=P][,reorder=P][,reorder_depth=D][,reorder_us=T][,fix_icrc=0|1]".
/// Keys not given take their value from `defaults`. Returns the link or an
/// error message naming the key ("link 'x': drop=1.5: not a probability in [0,1]").
struct LinkParse {
  std::optional<LinkConfig> link;
  std::string error;
};
LinkParse parse_link(std::string_view spec, const Impairments& defaults);

/// Parses a blackhole spec "link=I[,port=P][,after_n=N][,after_ms=T][,until_ms=T]".
struct BlackholeParse {
  std::optional<Blackhole> blackhole;
  std::string error;
};
BlackholeParse parse_blackhole(std::string_view spec);

/// Counters of one link (a snapshot).
struct LinkStats {
  uint64_t received = 0;        ///< datagrams that arrived on the listen socket
  uint64_t forwarded = 0;       ///< datagrams sent on (duplicates included)
  uint64_t bytes_forwarded = 0;
  uint64_t dropped_random = 0;
  uint64_t dropped_nth = 0;
  uint64_t blackholed = 0;
  uint64_t corrupted = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;       ///< datagrams held back
  uint64_t port_overflow = 0;   ///< dropped: no outgoing socket for the source port (cap or bind failure)
  uint64_t send_failed = 0;     ///< dropped: the send failed or would block
  uint64_t source_ports = 0;    ///< outgoing sockets opened
  uint64_t icrc_rewritten = 0;  ///< datagrams whose ICRC was rewritten (fix_icrc)
};

class Forwarder {
 public:
  /// Validates the configuration and opens the listen sockets (so their
  /// addresses are known before run()). Errors: invalid_argument (message in
  /// `error`), or the socket error (message from platform::last_error_message()).
  static std::unique_ptr<Forwarder> create(const ForwarderConfig& config, std::string& error);
  ~Forwarder();

  /// The bound listen address of link i (the actual port if 0 was given).
  platform::SockAddr listen_address(size_t link) const;

  /// Forwards until stop() is called or `duration` elapses. Held (reordered)
  /// datagrams are flushed before returning. Errors: io with a message in `error`.
  Status run(Duration duration, std::string& error);
  /// Makes run() return soon; safe from any thread (and from a signal handler:
  /// it only writes to an eventfd).
  void stop();

  size_t link_count() const;
  const LinkConfig& link_config(size_t i) const;
  LinkStats stats(size_t link) const;

 private:
  struct Impl;
  explicit Forwarder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mrc::udp_impair
