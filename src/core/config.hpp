// SPDX-License-Identifier: BSD-2-Clause
// Endpoint-wide configuration and the EV / CC profiles a controller installs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "core/incast_guard.hpp"
#include "core/mr_table.hpp"
#include "core/secure.hpp"
#include "core/wire_ev.hpp"
#include "util/time.hpp"

namespace mrc::core {

/// One NIC port = one network plane.
struct PortConfig {
  uint64_t rate_bps = 100'000'000'000ull;
};

/// How the core times and batches its feedback and recovery. Defaults follow
/// the reference's recommended choices (section 8); each names its item.
struct ProtocolConfig {
  /// SACK after this many new bytes when nothing forces one sooner (item 4).
  uint32_t sack_bytes_threshold = 16384;
  /// Send a pending SACK once data has stopped for this long (item 4: "on a
  /// short timer when data stops"): each arrival that does not force a SACK
  /// restarts the wait ...
  Duration sack_coalesce_delay = Duration::ns(1000);
  /// ... or for this many of the QP's recent gaps between arrivals (an
  /// average, 1/8 weight), if that is longer: a QP among many sharing the
  /// links sees its packets microseconds apart, and a fixed 1 us wait SACKed
  /// each one (a 16-host 1 MiB all-to-all with 8 QPs per peer sent 1.1
  /// control packets per data packet, and finished 2.3 % behind RoCE's,
  /// which ACKs every 16 packets). 0 = sack_coalesce_delay alone.
  uint32_t sack_coalesce_gaps = 2;
  /// ... but never later than this after the first arrival it covers, so a
  /// trickle of small packets that never reaches the byte threshold is still
  /// acknowledged (>= sack_coalesce_delay; equal = a fixed timer from the
  /// first arrival). The last packet of a QP's queued work and one that
  /// fills its window ask for a SACK at once (AckReq), so completions do not
  /// wait for it.
  Duration sack_coalesce_max = Duration::us(16);
  /// TSETH tick: default resolution 128 ns (reference 3.3).
  Duration timestamp_tick = Duration::ns(128);
  /// Unloaded RTT of the longest path (config_base_rtt, item 15).
  Duration base_rtt = Duration::us(10);
  /// Loss rule (item 5): a packet is lost once this many packets sent after
  /// it have been SACKed ...
  uint32_t reorder_packets = 3;
  /// ... and it has been in flight longer than the loss age: the largest
  /// delivery age seen recently (or base_rtt), plus this allowance times a
  /// multiplier that each spurious loss raises (ReorderWindow, in the
  /// spirit of RFC 8985's adaptive reordering window).
  Duration reorder_allowance = Duration::us(5);
  /// One path is a FIFO (DESIGN.md, "Resilience"): a first transmission
  /// sent on an EV before another first transmission on the same EV, and
  /// missing from a SACK that acknowledges the later one and whose bitmap
  /// covers it, cannot be merely late; it is lost at once, without the
  /// loss age or the reorder_packets count (RACK per path). The loss rule
  /// above still catches what this one cannot see (the last packet on an
  /// EV). Off by default: it helps where one EV carries runs of packets
  /// (ev_burst, long flows over few EVs), not a ring all-reduce spraying
  /// each packet on a fresh EV, and it misreads a path that reorders
  /// within itself (a harness path delaying 10 % of packets by 12 us: 96
  /// of 8192 packets resent for nothing, against 15 without it).
  bool path_fifo_loss = false;
  /// The loss age's floor is base_rtt (the longest path's RTT) only until
  /// the QP has RTT samples; then its own smoothed RTT plus the margin. A
  /// loss costs about the loss age: in a 16 MiB ring all-reduce under 0.1 %
  /// random loss (64 hosts, neighbours 4.6 us apart where base_rtt is 9.2)
  /// the fixed floor made it 1.78x its lossless time, the learned one
  /// 1.49x (mrc-sim's margin, a quarter of base_rtt). false = base_rtt
  /// stays the floor.
  bool loss_age_floor_from_rtt = true;
  /// Cap of that multiplier (1 = a fixed allowance, no adaptation).
  uint32_t reorder_max_multiplier = 8;
  /// The multiplier a new QP starts with (1..reorder_max_multiplier): one
  /// step wider while it has seen no delivery ages.
  uint32_t reorder_initial_multiplier = 2;
  /// The multiplier steps back by one per this long without a spurious loss.
  Duration reorder_decay = Duration::ms(1);
  /// A SKIP EV is passed over once in its port's rotation, or only until it
  /// has been SKIP this long if that comes first. The reference recommends
  /// a cap of one base RTT (section 8, item 7); the default here is no cap
  /// (0), a measured deviation: with 32 active EVs per port a rotation
  /// takes longer than a base RTT, and the cap sent traffic back onto
  /// congested paths early (docs/architecture.md, "Deviations").
  Duration skip_max{};
  /// Tail loss probes per silence (RFC 8985's TLP, one each probe timeout,
  /// doubling) before the ACK timeout takes over; 0 = none.
  uint32_t tail_probes = 3;
  /// Spraying granularity: consecutive new-data packets of a QP sent on one
  /// EV before the path policy picks the next (1 = a fresh pick per packet,
  /// as hardware sprays). The software device's burst mode sets k so that k
  /// packets leave as one UDP GSO super-packet; a burst ends early when its
  /// EV stops being GOOD or its port is busy. Retransmissions always pick
  /// afresh.
  uint32_t ev_burst = 1;
  /// With ev_burst > 1, a burst also ends before its packets (payload of
  /// the QP's MTU, largest headers and ICRC) would exceed this many bytes;
  /// 0 = no limit. The software device sets its GSO super-packet limit:
  /// a burst that does not fit one leaves as two datagrams, the second a
  /// lone packet (16 x 4 KiB on a 65,000-byte limit cost 18 % of goodput).
  uint32_t ev_burst_bytes = 0;
  /// First probe of an ASSUMED_BAD EV, then doubling up to the maximum (item 8).
  Duration probe_interval = Duration::us(100);
  Duration probe_interval_max = Duration::ms(10);
  /// An untrimmed loss takes its EV out of service at once, but it becomes
  /// ASSUMED_BAD (an EV event) only if a probe sent on it straight away
  /// goes unanswered for loss_confirm_wait; an answer, or proof that the
  /// loss was spurious, puts it back silently. A failed path fails the
  /// probe too, so failures are reported a few RTTs later than the plain
  /// rule of reference 3.11 would, with traffic off the path just as fast;
  /// a congestion drop (a full trimmed-header or control queue) no longer
  /// retires a healthy path. false = reference 3.11: every untrimmed loss
  /// makes its EV ASSUMED_BAD.
  bool loss_confirm = true;
  /// How long a confirming probe may take at least (0 = 1.5 base RTTs:
  /// probes and their answers travel in the control class, ahead of data
  /// queues). The wait grows to 1.5 times the slowest recent probe answer
  /// where answers take longer (a fabric that queues probes with data).
  Duration loss_confirm_wait{};
  /// Confirming probes a suspect must leave unanswered, one after the other
  /// (each waiting loss_confirm_wait), before it becomes ASSUMED_BAD. A
  /// probe and its answer cross the same lossy links as data: under 1 %
  /// random loss on every host link about 4 % of single probes went
  /// unanswered and retired a working EV (366 in a 16 MiB all-reduce);
  /// each further try multiplies that by itself (3: none). A dead path
  /// costs a wait more per extra try before its event, with no traffic on
  /// it meanwhile (an outage shorter than the tries, a 40 us T1 reboot,
  /// may then end without an event at all). 1 = the reference's single
  /// probe.
  uint32_t loss_confirm_probes = 3;
  /// Copies of each confirming probe, sent back to back on the suspect EV;
  /// an answer to any of them clears it. A dead path loses every copy, so
  /// failures are reported no later; random loss must take all of them:
  /// under 1 % loss on every host link (about 4 % per probe round trip)
  /// single probes retired 5-8 working EVs in a 64-256 MiB all-reduce, each
  /// after three probes lost in a row. No copies while the destination's
  /// last hop trims (an incast fills the control queue that drops them).
  /// 1 = one probe per try.
  uint32_t loss_confirm_copies = 2;
  /// Gray failures pass most probes: an EV that loses a packet within 4
  /// probe intervals of the last of this many confirming probes that
  /// vouched for it in a row (each within 4 intervals of the one before)
  /// becomes ASSUMED_BAD at once. A loss proven spurious resets the count.
  /// Losses while the destination's last hop trims (an incast) or while a
  /// quarter of the port's EVs lose packets (congestion, not a path) never
  /// retire at once. 1 = the second loss after a probe retires; 2 (the default)
  /// leaves room for the loss rule's occasional false verdict on a path
  /// that only reorders (9 of 6736 suspects in a fault-free 1024-host run).
  /// An EV whose recent losses are within twice its port's other EVs' rate
  /// (plus two packets) is never put on trial: its losses are the port's
  /// common lot, as under uniform random loss.
  uint32_t gray_loss_vouches = 2;
  /// An EV whose recent loss rate is more than this many times its port's
  /// other EVs' (plus two packets, at least four losses, and a count that
  /// chance would give less than once in 10^7) is ASSUMED_BAD at once, and each time
  /// it does it again it needs twice the answered probes to come back
  /// (probe_resurrect_count << strikes, up to 4 strikes). A gray link on a
  /// fabric with two T1s carries half a port's EVs and passes most probes,
  /// so neither the confirming probes nor the vouching rule above hold it
  /// out: 20 % loss on one link of the kernel fabric cycled its EVs in and
  /// out 600 times in 10 s. Uniform random loss never qualifies. 0 = off
  /// (the reference has no such rule).
  double gray_loss_factor = 3.0;
  /// Consecutive good probes that bring an ASSUMED_BAD EV back (item 8).
  uint32_t probe_resurrect_count = 2;
  /// An active EV whose deliveries come back ECN-marked this many times in a
  /// row (no unmarked one between) trades places with the oldest backup of
  /// its port, as does the first marked EV when a port's whole active set is
  /// SKIP: persistent marks move traffic off a path (reference 5.6), where
  /// SKIP alone only passes an EV over once. 0 = never (SKIP only). A run
  /// swaps only while at most a quarter of the port's active EVs are
  /// marked: when most are, the congestion is not the path's (see
  /// singled_out() in path_policy.cc).
  uint32_t ev_swap_marks = 3;
  /// EV recycling (an OpenMRC deviation, docs/architecture.md
  /// "Deviations"): an active EV whose packet came back unmarked is queued
  /// to carry one of its port's next packets ahead of the rotation, and an
  /// EV that came back ECN-marked or trimmed is not, so traffic follows the
  /// paths that answer cleanly and leaves congested ones at once, as UEC's
  /// recycled-entropy spraying (REPS) does; the rotation (reference 4.5)
  /// fills in when the queue is empty. Every packet a SACK newly
  /// acknowledges other than its trigger counts as unmarked, since a
  /// CE-marked packet triggers a SACK of its own. It pays off where the
  /// fabric hashes the EV (ECMP) and each port has many active EVs: on a
  /// 128-host permutation at 400 Gb/s with 128 active EVs per port the
  /// slowest flow took 357 us against 375-435 us without; with 64 or fewer
  /// active EVs per port it made the tail worse (docs/simulator.md, "ECMP
  /// and htsim"). Off by default.
  bool ev_recycle = false;
  /// A QP that receives data but gets no deliveries confirmed on its own EVs
  /// probes for a fresh reverse EV this often (reference 4.8): checked on
  /// each data arrival, at most one probe per interval.
  Duration reverse_probe_interval = Duration::us(100);
  /// Reverse (control) EVs kept per port; control packets rotate through them.
  uint32_t reverse_evs_per_port = 4;
  /// SACKs take turns over the usable ports (each on that port's reverse
  /// EV), so a QP's acknowledgements load every plane's reverse direction
  /// alike. false: each leaves on the plane its trigger arrived on, like
  /// NACKs and probe answers (reference item 13); a regular spray then puts
  /// every byte-triggered SACK of a QP on the same one or two planes, which
  /// finish their share of the QP's own data that much later.
  bool spread_sacks = true;
  /// A port-status update (reference 4.7) goes to every connected peer and
  /// is re-sent until that peer answers it: the first
  /// `port_status_repeats` sends `port_status_interval` apart, then with the
  /// interval doubling up to `port_status_max_interval`, for as long as a QP
  /// is connected to the peer. Each send takes the next port that is up, so
  /// one dead or lossy plane cannot swallow them all. The reference sends
  /// them unacknowledged: port_status_max_interval = 0 keeps that (exactly
  /// `port_status_repeats` sends, answers ignored), and then one lost
  /// update leaves a repaired plane unused for good.
  uint32_t port_status_repeats = 3;
  Duration port_status_interval = Duration::us(50);
  Duration port_status_max_interval = Duration::ms(10);
  /// A plane the peer reports down while it is up here is re-checked this
  /// often with an EV probe on it; an answer puts the plane back in service
  /// toward that peer (its update saying the port is up may have been lost,
  /// or it may never have noticed). 0: never re-checked.
  Duration peer_port_recheck = Duration::ms(100);
  /// Replies to endpoint operations (EV probes, port-status updates) are
  /// rate limited by a token bucket: at most `ep_reply_burst` at once, then
  /// one per `ep_reply_interval`. A reply is larger than the request, so
  /// without a limit a request flood would turn the endpoint into an
  /// amplifier and grow its queue without bound; replies over the limit are
  /// shed and counted (EndpointStats::ep_replies_shed).
  uint32_t ep_reply_burst = 64;
  Duration ep_reply_interval = Duration::ns(500);
  /// And per source address (RxMeta::peer), so that requests forged with a
  /// victim's address cannot make this endpoint reflect more bytes at it
  /// than they bring: each source has a byte credit that its requests add
  /// their bytes to and each reply takes its bytes from (a reply's BTH +
  /// EETH, 48 bytes, are more than a request's BTH + ERTH, 28), holding at most
  /// `ep_reply_source_burst` replies' worth (a new source starts full) and
  /// refilled by one reply's worth per `ep_reply_source_interval`. Over
  /// any time T the replies to one source carry at most the bytes of its
  /// requests + burst + T / interval replies: a steady prober at up to one
  /// request per interval is always answered; a flood gets back fewer
  /// bytes than it sent (28/48 of its MRC header bytes; with the IP, UDP
  /// and ICRC bytes both carry, under 1 too). 0 interval: no refill beyond
  /// the requests' bytes.
  uint32_t ep_reply_source_burst = 8;
  Duration ep_reply_source_interval = Duration::ms(1);
  /// Fatal errors are confirmed before a QP fails (an OpenMRC deviation, in
  /// the spirit of RFC 5961's challenge ACK; both ends of a connection must
  /// agree on it). On:
  ///  - a responder refuses a WRITE (bad rkey, PD, access, bounds,
  ///    dma_length, a short MIDDLE, an unmapped region) with a NETH NACK
  ///    UNEXP_EVENT that echoes the refused packet's PSN and TSETH stamp and
  ///    carries the AETH syndrome (remote access error 0x62, invalid request
  ///    0x61) in NETH's vendor byte, not with an AETH NAK, which has no room
  ///    for the echo; a QP that failed on a fatal event of its own (WriteIMM
  ///    overflow, no receive WQE) answers every later data packet with that
  ///    NACK, so the requester's confirmation gets an answer;
  ///  - a requester believes a fatal NACK only if it names an outstanding
  ///    PSN and echoes its latest transmission's stamp, and fails the QP
  ///    only when a NACK echoes a transmission sent after an earlier such
  ///    NACK: the first one resends the packet (the challenge, with a fresh
  ///    stamp) and the responder's answer to it confirms the error. An AETH
  ///    NAK is never believed (dropped, counted in rx_nak_unconfirmed).
  /// A forged fatal NACK thus costs one retransmission, not the connection;
  /// a genuine error fails the WR two round trips after the refusal.
  /// false = reference: a fatal AETH NAK or NACK UNEXP_EVENT naming an
  /// outstanding PSN fails the QP at once (the NACK's echo must still match).
  bool confirm_fatal = true;
  /// Destination flow control (reference 5.7): the responder's incast guard
  /// puts rcv_cwnd_pen on its SACKs (incast_guard.hpp). An interval of 0
  /// means one base_rtt.
  IncastGuardConfig incast_guard;

  // RoCEv2 RC baseline (QpInit::transport = Transport::roce_rc) -----------
  /// The responder ACKs once this many in-order packets are unacknowledged
  /// (16 x 4 KiB = 64 KiB), at once when a packet asks (BTH AckReq: the
  /// requester sets it on the last packet of every message and when its PSN
  /// window is about to fill), and at once on a duplicate.
  uint32_t rc_ack_packets = 16;
  /// ... and at most this long after the first unacknowledged packet.
  Duration rc_ack_delay = Duration::us(1);
  /// DCQCN notification point: a responder sends at most one CNP per QP per
  /// this interval, however many ECN-CE data packets arrive (the DCQCN
  /// paper's N = 50 us; NVIDIA NICs default to 4 us, min_time_between_cnps).
  Duration cnp_interval = Duration::us(50);
};

/// Device-wide settings of one endpoint (one NIC).
struct EndpointConfig {
  uint64_t seed = 1;                    ///< every random choice derives from this
  /// Where memory keys (lkey/rkey), QPN tags and initial PSNs come from:
  /// values a peer must not be able to guess. A device on a real network
  /// must pass an unpredictable source (the runtime passes getrandom(2)).
  /// Empty: a stream derived from `seed`, which keeps simulations
  /// reproducible but makes keys predictable to anyone who knows the seed.
  EntropySource entropy;
  /// How a received WRITE's payload is copied into a registered region:
  /// returns false if the destination could not be written (the region's
  /// memory was unmapped under it), and the WRITE is then refused as a
  /// remote access error with nothing acknowledged. Null: memcpy (the
  /// simulator, whose memory cannot vanish). The device passes
  /// platform::guarded_copy.
  bool (*place)(void* dst, const void* src, size_t bytes) = nullptr;
  /// Keys the AES-GCM of secure QPs (QpAttr::secure, core/secure.hpp): one
  /// Aead per key. Null: no cipher, and modify_qp refuses a secure QP with
  /// Errc::not_supported. The device passes crypto::make_aes_gcm (OpenSSL).
  AeadFactory make_aead = nullptr;
  std::vector<PortConfig> ports = {PortConfig{}};
  uint32_t max_qps = 4096;
  /// Sharding: the low `qpn_shard_bits` bits of every QPN this endpoint
  /// issues are `qpn_shard`. A device that runs several endpoints (one per
  /// progress engine) gives each a different shard, so a packet's engine is
  /// known from its BTH destination QP. 0 bits (the default) = no sharding.
  /// Every other QPN bit is random (drawn from `entropy`): a QPN has
  /// 24 - qpn_shard_bits unguessable bits, and max_qps may be at most
  /// 2^(23 - qpn_shard_bits).
  uint32_t qpn_shard_bits = 0;
  uint32_t qpn_shard = 0;
  uint32_t max_send_wr = 4096;          ///< per QP
  uint32_t max_recv_wr = 4096;          ///< per QP
  uint16_t max_wimm = 4096;             ///< device maximum for max_wimm / max_wimm_dest
  uint8_t max_mpr = 255;                ///< device maximum MPR (128-PSN units)
  bool cap_trim_nack = true;            ///< device can generate trim NACKs
  bool cap_dynamic_mpr = true;
  bool cap_svc_time = true;
  /// The NIC's arbiter, when poll_transmit offers a single port (a port
  /// whose last packet has left, as a NIC or the simulator frees them): the
  /// first QP in turn (within 64) for which that port is one of its
  /// destination's least used sends first, so each destination's packets
  /// spread evenly over the planes and its plane links finish together.
  /// Off: plain turns. QPs that can use one port only (RoCE) are not
  /// steered; EV bursts (ProtocolConfig::ev_burst > 1) turn it off, as a
  /// burst stays on one EV. The software device turns it off (it offers
  /// every port on every poll).
  bool balance_peer_ports = true;
  ProtocolConfig protocol;

  /// Checks every field; the error message names the field and the fix.
  Status validate(std::string* why) const;
};

/// Path policy of an EV profile: MRC's EV management, or a comparison policy.
enum class PathPolicyKind : uint8_t {
  mrc,         ///< GOOD/SKIP/ASSUMED_BAD/DENIED, backups, probes (reference 4)
  oblivious,   ///< spray over all EVs, ignore every path signal (ablation)
  single_path, ///< one EV for the whole QP (ECMP-style comparison)
};

/// An explicit EV entry (EXP mode) or a generated one.
struct EvEntry {
  uint32_t value = 0;  ///< compact EV: what the UDP source port / flow label carry
  uint8_t port = 0;    ///< 0-based port (plane)
};

/// EV profile (reference 4.2, 4.4): which EVs a QP sprays over and how many
/// stay active.
struct EvProfile {
  PathPolicyKind policy = PathPolicyKind::mrc;
  /// Total EVs per QP, split equally across ports (GEN mode). Ignored if
  /// `explicit_evs` is non-empty (EXP mode).
  uint32_t ev_count = 256;
  /// EVs in the active set (the rest are backups); split equally across ports.
  uint32_t active_count = 128;
  /// Demotion never leaves fewer usable EVs than this (reference 8, item 9).
  uint32_t ev_min_active = 64;
  /// GEN mode: EV values are drawn from [0, 2^entropy_bits) (16 = UDP source port).
  uint8_t entropy_bits = 16;
  /// Report EV events for these transitions (reference 4.10).
  bool event_on_good = true;
  bool event_on_assumed_bad = true;
  /// EXP mode entries.
  std::vector<EvEntry> explicit_evs;
  /// The expanded wire EV of each explicit EV (index-parallel), where the
  /// wire EV is more than the compact one (SRv6: the destination address
  /// the controller's expansion computed, reference 4.2). Null otherwise.
  /// Shared, never copied per QP: packets point into it (Transmit::wire_ev).
  std::shared_ptr<const std::vector<WireEv>> wire_evs;

  Status validate(uint32_t num_ports, std::string* why) const;
};

/// Fixed-window congestion control parameters (the reference controller
/// until NSCC lands; also the "no CC" baseline).
struct FixedWindowConfig {
  /// Window in bytes; 0 = 1.5 x (sum of port rates) x base_rtt.
  uint64_t window_bytes = 0;
};

/// UET/MRC NSCC parameters (reference 5.4, 5.5), field for field what OCP's
/// mrc_ctl_cc_nscc_cfg exposes. Every field set to 0 means "derive the
/// default": the controller computes it from the QP's link speed (the sum of
/// its usable plane rates, reference 8 item 14), its MTU and the base RTT, as
/// reference 5.5 gives them. Defaults that depend on the link speed are
/// recomputed when a port goes down or comes back; explicit values are kept.
/// Times are Durations (the C API's nanoseconds convert exactly); the float
/// fields are doubles here so 800 Gb/s windows keep their precision.
/// cc::derive_nscc_params() shows what a configuration resolves to.
struct NsccConfig {
  /// Never run quick adapt (reference 5.4); trims and losses then only take
  /// their nominal size off the window.
  bool disable_qa = false;
  /// Run the batched window update once more than this many bytes were
  /// acknowledged since the last one. Default 8 x MTU.
  uint64_t adjust_bytes_threshold = 0;
  /// ... or once this long passed since the last one; a full period also
  /// adds eta. Default 1 x base RTT.
  Duration adjust_period_threshold{};
  /// config_base_rtt: unloaded RTT of an MTU packet on the longest path
  /// (reference 8 item 15). Default: the endpoint's protocol.base_rtt.
  Duration base_rtt{};
  /// Bytes added to the window every adjust period (additive probe).
  /// Default 0.15 x MTU x scaling_a.
  double eta = 0;
  /// Fair increase: bytes added per RTT while delay >= target and unmarked.
  /// Default 5 x MTU x scaling_a.
  double fi = 0;
  /// Fast increase: window growth per acknowledged byte once a whole window
  /// was acknowledged at ~zero queueing delay. Default 0.25 x scaling_a.
  double fi_scale = 0;
  /// Multiplicative-decrease gain, in (0, 1]. Default 0.8.
  double gamma = 0;
  /// Largest single decrease: the window keeps at least this fraction of
  /// itself, in (0, 1). Default 0.5.
  double max_md_jump = 0;
  /// MaxWnd in bytes: ceiling and initial window (new flows start at line
  /// rate). Default 1.5 x BDP, BDP = link speed x base RTT; rescaled when a
  /// smaller base RTT is measured or the link speed changes. An explicit
  /// value is a fixed ceiling.
  uint64_t max_cwnd = 0;
  /// Quick adapt acts only if the bytes delivered in its window are below
  /// max_cwnd >> qa_gate, at most 63. Default 3 (MaxWnd / 8).
  uint8_t qa_gate = 0;
  /// Quick adapt also acts when the queueing delay exceeds this. Default:
  /// off (Duration::infinite()) with trimming, where trim NACKs are the
  /// quick-adapt signal; 4 x target_delay without trimming.
  Duration qa_threshold{};
  /// Target queueing delay. Default 0.75 x base RTT with trimming, 1.0 x
  /// without.
  Duration target_delay{};
  /// Not an OCP field: the most one batched update (fulfill) may add, as a
  /// fraction of the window. Default 1.0: the window at most doubles per
  /// update. The reference's rule adds inc_bytes / cwnd uncapped, so a
  /// window of one packet gains a whole fair increase (fi, ~11 packets at
  /// 400 Gb/s) from one SACK; in a 64-to-1 incast that made every sender
  /// overshoot each RTT (docs/congestion-control.md). A large value (1e9)
  /// restores the uncapped rule.
  double max_fulfill_growth = 0;
  /// Not OCP fields: the first window of a QP with a traffic hint
  /// (QpHint) is its share, MaxWnd / (target's senders x QPs per peer),
  /// except that a share of a few packets is multiplied by hint_share, up
  /// to hint_share_cap packets of the MTU (never less than the share nor
  /// more than MaxWnd): max(share, min(hint_share x share, hint_share_cap x
  /// MTU)). Defaults 2.0 and 8. A window of two or three packets keeps too
  /// little in flight while it grows: a 16-host all-to-all of 256 KiB with
  /// 8 QPs per peer (120 QPs per host, 2.7 packets each) took 57.3 us at
  /// the bare share and 53.2 us with the defaults (RoCE with PFC: 55.5);
  /// with one QP per peer (22 packets each) doubling made last-hop trims
  /// and a 69.2 us tail against 55.0, so larger shares are left alone. The
  /// 127 -> 1 incast (2.6 packets per QP) drops no trimmed header at up to
  /// 8 shares; at MaxWnd (no hint) 21,080 (docs/performance.md).
  double hint_share = 0;
  uint32_t hint_share_cap = 0;  ///< packets; see hint_share
};

/// DCQCN reaction-point parameters (Zhu et al., "Congestion Control for
/// Large-Scale RDMA Deployments", SIGCOMM 2015), the rate-based congestion
/// control of the RoCEv2 baseline. The controller reacts to CNPs only (the
/// notification point is the responder, ProtocolConfig::cnp_interval) and
/// paces the QP's packets at its current rate; its window is unlimited.
///
/// Defaults are the paper's where it gives one (g, alpha period K, byte
/// counter B, F) and scale with the QP's line rate otherwise; rates set to 0
/// are derived from the line rate (the QP's usable link speed: for a RoCE
/// QP, its one port). NVIDIA ConnectX equivalents are named for comparison.
struct DcqcnConfig {
  /// Alpha EWMA gain g: alpha = (1 - g) alpha + g on a CNP, alpha = (1 - g)
  /// alpha every alpha_update_period without one. Paper: 1/256.
  double g = 1.0 / 256;
  /// Alpha before the first CNP (NVIDIA initial_alpha_value 1023/1024): the
  /// first cut halves the rate.
  double initial_alpha = 1.0;
  /// Alpha decay period K (paper: 55 us, just above the CNP interval).
  Duration alpha_update_period = Duration::us(55);
  /// Rate-increase timer T: after a cut, one increase event per period.
  /// 55 us, the paper's value (NVIDIA's rpg_time_reset defaults to 300 us,
  /// which recovers about 5x more slowly).
  Duration rate_increase_period = Duration::us(55);
  /// Byte counter B: one increase event per this many bytes sent after a
  /// cut (paper: 10 MB; NVIDIA rpg_byte_reset is 32 KB).
  uint64_t byte_counter_bytes = 10'000'000;
  /// Fast-recovery steps F: while both the timer and the byte counter have
  /// fired fewer than F times since the last cut, an increase only halves
  /// the distance to the target rate (paper: 5; NVIDIA rpg_threshold).
  uint32_t fast_recovery_steps = 5;
  /// Additive increase R_AI: target rate gain per increase event once either
  /// stage count reached F. 0 = 5% of the line rate (5 Gb/s at 100 Gb/s).
  uint64_t rate_ai_bps = 0;
  /// Hyper increase R_HAI: gain per event (times the stages beyond F) once
  /// both stage counts passed F. 0 = 10 x R_AI (the QCN/NVIDIA ratio,
  /// rpg_hai_rate / rpg_ai_rate).
  uint64_t rate_hai_bps = 0;
  /// Lowest rate a cut can reach. 0 = 0.1% of the line rate.
  uint64_t min_rate_bps = 0;
  /// Highest rate: the rate a QP starts at and recovers to. 0 = the line
  /// rate. A smaller value makes the QP a paced flow even without CNPs.
  uint64_t max_rate_bps = 0;
  /// A CNP within this long of the last cut is ignored (NVIDIA
  /// rate_reduce_monitor_period, 4 us). 0 = every CNP cuts.
  Duration rate_reduce_period = Duration::us(4);
};

/// Algorithm names a CC profile accepts.
inline constexpr const char* kCcFixed = "fixed";
inline constexpr const char* kCcNscc = "uet-1.0-nscc";
inline constexpr const char* kCcDcqcn = "dcqcn";

/// CC profile (reference 5.1, 6.3.5).
struct CcProfile {
  /// kCcNscc (the default, MRC's congestion control, reference 5), kCcFixed
  /// (a constant window, for ablations and tests) or kCcDcqcn (the RoCEv2
  /// baseline).
  std::string algorithm = kCcNscc;
  FixedWindowConfig fixed;  ///< used when algorithm is "fixed"
  NsccConfig nscc;          ///< used when algorithm is "uet-1.0-nscc"
  DcqcnConfig dcqcn;        ///< used when algorithm is "dcqcn"

  /// Checks the algorithm name and the parameters of the selected algorithm;
  /// the error message names the offending field and its valid range.
  Status validate(std::string* why) const;
};

}  // namespace mrc::core
