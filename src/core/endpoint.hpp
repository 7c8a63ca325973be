// SPDX-License-Identifier: BSD-2-Clause
// Endpoint: one MRC NIC as a sans-I/O state machine (DESIGN.md, "The core
// contract").
//
// An Endpoint owns the QPs, memory regions and EV/CC profiles of one device.
// A driver (the test harness, the simulator, the UDP runtime) moves bytes and
// time; the Endpoint decides everything else. The whole surface is:
//
//   handle_datagram(now, meta, bytes)    a packet arrived on a port
//   poll_transmit(now, port_mask, hdr)   next packet for a port with room
//   next_timeout() / handle_timeout(now) timers
//   poll_event()                         completions and events
//   create_qp / modify_qp / post_send / post_recv / reg_mr / profiles ...
//
// Time is always an argument and randomness comes from EndpointConfig::seed:
// the same inputs give the same outputs, bit for bit. Nothing here blocks,
// allocates per packet on the steady path, reads a clock or touches the OS.
//
// Threading: an Endpoint is not thread-safe; a driver serializes calls.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "core/mr_table.hpp"
#include "core/qpn_table.hpp"
#include "core/types.hpp"
#include "util/prng.hpp"
#include "util/result.hpp"
#include "util/ring.hpp"
#include "wire/packet.hpp"

namespace mrc::core {

class Qp;

/// A QP as a query sees it (Endpoint::query_qp): plain values, nothing
/// that refers into the core.
struct QpInfo {
  uint32_t qpn = 0;
  Transport transport = Transport::mrc;
  QpState state = QpState::reset;
  QpAttr attr;                     ///< attributes as last set
  QpInit init;                     ///< creation arguments (CQs, PD, ...)
  uint64_t peer = 0;
  QpStats stats;
  uint32_t send_queued = 0;        ///< send WRs posted and not yet completed
  uint32_t recv_queued = 0;        ///< receive WQEs posted and not yet consumed
  uint32_t evs = 0;                ///< EVs in the QP's set
  uint32_t evs_good = 0;
  uint32_t evs_assumed_bad = 0;
  uint32_t evs_denied = 0;
  uint64_t cwnd_bytes = 0;         ///< congestion window
  int64_t inflight_bytes = 0;
  Duration srtt;                   ///< smoothed RTT (0 before the first sample)
  PathStats path;                  ///< the path policy's counters (EV retirements, swaps, ...)
};

/// One EV of a QP's set (Endpoint::query_evs).
struct EvInfo {
  uint32_t value = 0;              ///< compact EV
  uint8_t port = 0;                ///< 0-based port (plane)
  EvState state = EvState::good;
  bool active = false;             ///< in the active set (else backup / out of service)
  uint64_t packets_sent = 0;
};

/// Endpoint-wide counters. Every dropped packet is counted under one reason.
struct EndpointStats {
  uint64_t rx_packets = 0;
  /// Failed wire::parse (truncated, bad opcode, lengths), or an opcode of the
  /// other transport family than the destination QP's (an RC opcode to an
  /// MRC QP, an MRC opcode to a RoCE RC QP), or an unknown NACK reason.
  uint64_t rx_malformed = 0;
  uint64_t rx_unknown_qp = 0;      ///< no such QPN
  uint64_t rx_wrong_peer = 0;      ///< QPN exists but the source is not its peer
  uint64_t rx_bad_state = 0;       ///< QP not in a state that accepts the packet
  uint64_t rx_psn_out_of_window = 0;
  uint64_t rx_access_errors = 0;   ///< rkey/PD/access/bounds failures (nothing written)
  /// WRITEs whose placement faulted (EndpointConfig::place returned false:
  /// the application unmapped a registered region); also in rx_access_errors.
  uint64_t rx_place_faults = 0;
  /// SACK/NACK/ACK/NAK/probe answer that acknowledges nothing outstanding:
  /// PSNs never sent, a PSN with no WR, a timestamp echo that no
  /// transmission of that PSN can have produced, a probe answer with no
  /// probe outstanding. Dropped before it changes any state.
  uint64_t rx_bad_ack = 0;
  /// Feedback for PSNs already acknowledged (a late or reordered SACK/NACK):
  /// harmless, dropped.
  uint64_t rx_stale_ack = 0;
  /// Fatal NAKs and NACKs not believed: an AETH NAK (remote access, invalid
  /// request, remote operational error) or NACK UNEXP_EVENT that names no
  /// outstanding PSN, whose echo is not the stamp of that PSN's latest
  /// transmission, or (ProtocolConfig::confirm_fatal) an AETH NAK, which
  /// carries no echo. Dropped before any state changes. A genuine refusal
  /// of a packet resent before the refusal arrived lands here too (its echo
  /// names the older copy; the resend's refusal follows), so a few are
  /// normal around an application error; a count that grows on a healthy
  /// connection is someone trying to kill it.
  uint64_t rx_nak_unconfirmed = 0;
  /// Endpoint requests refused: a port-status update whose mask leaves no
  /// usable plane or denies the plane it arrived on (not answered), or one
  /// from a source with no connected QP here (answered, not applied).
  uint64_t rx_ep_refused = 0;
  /// Port-status updates sent (re-sends included) and answered by the peer.
  uint64_t port_status_sent = 0;
  uint64_t port_status_answered = 0;
  /// EV probes re-checking a plane a peer reports down, and planes they
  /// put back in service (the peer answered on them).
  uint64_t peer_port_rechecks = 0;
  uint64_t peer_ports_restored = 0;
  uint64_t tx_packets = 0;
  /// Payload bytes placed in registered memory: each byte of a message once
  /// (duplicates and a go-back-N receiver's out-of-order packets are not).
  uint64_t rx_placed_bytes = 0;
  uint64_t ep_requests = 0;
  uint64_t ep_responses = 0;
  /// Endpoint-operation replies not sent: over the rate limit or the queue cap.
  uint64_t ep_replies_shed = 0;
  /// Of ep_replies_shed: refused by the per-source byte credit (a flood of
  /// requests from one address, e.g. forged to reflect at it).
  uint64_t ep_replies_shed_source = 0;
  /// QP control packets (SACK/NACK/NAK/probe answers) not queued: a
  /// duplicate of one already pending, or over a cap (Qp::kMaxCtrl).
  uint64_t ctrl_shed = 0;
  /// Secure QPs (core/secure.hpp). Packets refused before any state
  /// changed: a tag that does not verify (forged, altered, or sealed under
  /// another key), a packet without a SECETH to a secure QP or with one to
  /// a plain QP, a payload-encryption flag other than the QP's mode.
  uint64_t rx_auth_failures = 0;
  /// A transmission counter already accepted or below the replay window: a
  /// replayed (captured and resent) packet.
  uint64_t rx_replays = 0;
  /// A SECETH key id other than the QP's receive key's.
  uint64_t rx_bad_key_id = 0;
  /// Packets a secure QP could not seal (the cipher failed, its counter
  /// reached 2^48, or the driver's header buffer was shorter than
  /// wire::kMaxHeaderBytes): not sent; loss recovery resends them.
  uint64_t tx_seal_failures = 0;
};

/// The numbers an endpoint draws for what its peers are told, one
/// implementation: its QPNs, initial PSNs and memory keys come from two
/// streams of its seed (EndpointConfig::seed), or from EndpointConfig::entropy
/// where that is set. Endpoint draws through these; EndpointIds below draws
/// the same without an endpoint.
struct EndpointDraw {
  /// The endpoint's seeded stream (initial PSNs; its QPs' streams derive from it).
  static Prng seeded(uint64_t seed) { return Prng(seed); }
  /// The stream of its secrets (QPN bits, memory keys), from the seeded one.
  static Prng secrets(const Prng& seeded) { return seeded.derive(0x6d72); }
  /// Random bits for a secret: `entropy` if set, else the next of `secrets`.
  static uint64_t secret(const EntropySource& entropy, Prng& secrets) {
    return entropy ? entropy() : secrets.next_u64();
  }
  /// An initial PSN: `entropy` if set, else the next of `seeded`.
  static uint32_t psn(const EntropySource& entropy, Prng& seeded);
  /// The QPN of a new QP: 24 bits, the low `shard_bits` are `shard`, every
  /// other bit from `secret()`; drawn again while it is reserved (below
  /// Endpoint::kFirstQpn) or `taken` has it.
  static uint32_t qpn(uint32_t shard_bits, uint32_t shard, const EntropySource& secret, const QpnTable& taken);
};

/// Stands in for an endpoint that is not built, for a process that needs
/// the numbers it gives its peers: the simulator across processes, where a
/// host another process runs has no endpoint here but the local end of each
/// of its connections must be given its QPN and PSN, and writers its
/// memory keys. Made from the configuration the endpoint is made from, and
/// called in the order the endpoint is (reg_mr, create_qp, random_psn), it
/// returns what the endpoint returns (EndpointDraw). A few hundred bytes.
/// Not copyable or movable (hold it by pointer).
class EndpointIds {
 public:
  /// `cfg.entropy` must be empty (an entropy source cannot be replayed):
  /// aborts with a message otherwise.
  explicit EndpointIds(const EndpointConfig& cfg);
  EndpointIds(const EndpointIds&) = delete;
  EndpointIds& operator=(const EndpointIds&) = delete;
  /// The region Endpoint::reg_mr gives in PD 0 (its keys); errors as there.
  Result<MemoryRegion> reg_mr(uint64_t addr, uint64_t length, uint32_t access, bool backed = true) {
    return mrs_.reg(addr, length, access, backed);
  }
  /// The QPN Endpoint::create_qp gives (no QP is made; QPNs drawn here
  /// count as taken).
  uint32_t create_qp();
  /// What Endpoint::random_psn gives.
  uint32_t random_psn() { return EndpointDraw::psn({}, rng_); }

 private:
  uint32_t shard_bits_;
  uint32_t shard_;
  Prng rng_;
  Prng secrets_;
  MrTable mrs_;
  QpnTable qpns_;
};

class Endpoint {
 public:
  /// Validates `cfg`; on error returns the message in `why` and an endpoint
  /// must not be used (use create()).
  static Result<std::unique_ptr<Endpoint>> create(const EndpointConfig& cfg, std::string* why = nullptr);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const EndpointConfig& config() const { return cfg_; }
  const EndpointStats& stats() const { return stats_; }
  uint32_t num_ports() const { return static_cast<uint32_t>(cfg_.ports.size()); }

  // ---------------------------------------------------------------- profiles
  /// Installs (or replaces) EV profile `id`. Errc::invalid_argument with a
  /// message in `why` if the profile is inconsistent; Errc::busy if a QP uses it.
  Status set_ev_profile(uint64_t id, const EvProfile& p, std::string* why = nullptr);
  /// Installs (or replaces) CC profile `id`. Same errors as set_ev_profile.
  Status set_cc_profile(uint64_t id, const CcProfile& p, std::string* why = nullptr);
  /// Profile 0 of each kind always exists (defaults) and is what a QP uses
  /// when INIT names none.

  // ---------------------------------------------------------------- memory
  /// Allocates a protection domain. A QP (QpInit::pd) accepts only the
  /// rkeys of regions in its own PD, and posts only from them. PD 0
  /// (kDefaultPd) always exists. Errc::no_memory past kMaxPds.
  Result<uint32_t> alloc_pd();
  /// Frees a PD. Errc::busy while a QP or a memory region uses it;
  /// Errc::not_found for an unknown PD; Errc::invalid_argument for PD 0.
  Status dealloc_pd(uint32_t pd);
  /// Registers [addr, addr+length) with access:: bits in protection domain
  /// `pd`. `backed` = false for simulated memory (bounds enforced, nothing
  /// written). Keys come from EndpointConfig::entropy.
  /// Errc::invalid_argument for an empty or wrapping range; Errc::not_found
  /// for an unknown PD.
  Result<MemoryRegion> reg_mr(uint64_t addr, uint64_t length, uint32_t access, bool backed = true,
                              uint32_t pd = kDefaultPd);
  /// References outstanding WRs hold on region `lkey` (dereg_mr is busy
  /// while > 0); 0 for an unknown key.
  uint32_t mr_refs(uint32_t lkey) const { return mrs_.refs(lkey); }
  /// True while a QP or a region uses protection domain `pd`.
  bool pd_in_use(uint32_t pd) const;
  /// Registers a region exactly like `like` (range, access, backing, PD and
  /// both keys): a device that shards QPs over several endpoints registers
  /// each region in all of them under one pair of keys. Errc::busy if either
  /// key is in use here; otherwise reg_mr()'s errors.
  Result<MemoryRegion> reg_mr_as(const MemoryRegion& like);
  /// Deregisters the region `lkey`. Errc::not_found if unknown; Errc::busy
  /// while a posted WR that is not complete still reads it (its
  /// retransmissions would read freed memory): wait for the completion, or
  /// flush the QP (modify to ERROR) and poll the flushed completions first.
  Status dereg_mr(uint32_t lkey);

  // ---------------------------------------------------------------- CQs
  /// Creates a completion queue holding up to `capacity` completions (a
  /// bounded ring; memory grows with the completions actually held). QPs
  /// name it in QpInit::send_cq / recv_cq. Errc::invalid_argument for a
  /// capacity of 0 or above kMaxCqe; Errc::no_memory past kMaxCqs.
  Result<uint32_t> create_cq(uint32_t capacity);
  /// Destroys a CQ and the completions it holds. Errc::busy while a QP names
  /// it; Errc::not_found for an unknown CQ.
  Status destroy_cq(uint32_t cq);
  /// Moves up to out.size() completions, oldest first, from CQ `cq` into
  /// `out`; returns how many (0 when empty or unknown).
  size_t poll_cq(uint32_t cq, std::span<WorkCompletion> out);
  /// A CQ's occupancy and overflow record, or nullopt if unknown.
  struct CqInfo {
    uint32_t capacity = 0;
    uint32_t size = 0;        ///< completions waiting to be polled
    uint64_t overflows = 0;   ///< completions lost because the CQ was full
    uint32_t qps = 0;         ///< QP queues naming it (destroy_cq is busy while > 0)
  };
  std::optional<CqInfo> cq_info(uint32_t cq) const;

  // ---------------------------------------------------------------- QPs
  /// Creates a QP in RESET. QPNs are random 24-bit values (a per-slot tag
  /// drawn from EndpointConfig::entropy above the slot index), so a peer
  /// cannot guess them and a packet for a destroyed QP never reaches its
  /// successor. Errc::no_memory when max_qps are in use; Errc::not_found for
  /// an unknown init.pd or a send/recv CQ that does not exist.
  Result<uint32_t> create_qp(const QpInit& init);
  /// Every live QP's number, in slot order.
  std::vector<uint32_t> qp_numbers() const;
  /// Destroys a QP (any state). Work still queued on it is flushed first:
  /// each posted send and receive WR completes with wr_flush_err on its CQ.
  /// Errc::not_found for an unknown QPN.
  Status destroy_qp(uint32_t qpn);
  /// Moves a QP through RESET -> INIT -> RTR -> RTS (-> ERROR, -> RESET).
  /// `mask` names the attributes to apply (qp_attr bits); each transition
  /// requires and permits a fixed set (see qp.cc, check_transition()).
  /// Errc::invalid_argument for an illegal transition, a missing required
  /// attribute, an attribute not allowed in this transition or out of range.
  Status modify_qp(Time now, uint32_t qpn, const QpAttr& attr, uint32_t mask);
  /// The QP's state, attributes, counters and path summary; nullopt if unknown.
  std::optional<QpInfo> query_qp(uint32_t qpn) const;
  /// Just the QP's counters and its path policy's (QpInfo::stats and
  /// QpInfo::path), without the EV-state census query_qp() walks the EV
  /// set for: for a driver that sums counters over many QPs (mrc-sim's
  /// end-of-run totals). False, and nothing written, if the QPN is unknown.
  bool query_qp_counters(uint32_t qpn, QpStats* stats, PathStats* path = nullptr) const;
  /// Copies the QP's EVs (in set order) into `out`; returns how many the QP
  /// has, which may exceed out.size() (then only the first out.size() are
  /// written: call again with more room). 0 for an unknown QPN.
  size_t query_evs(uint32_t qpn, std::span<EvInfo> out) const;
  /// The QP object itself (core/qp.hpp): for the core's own tests, which
  /// look at internals. Drivers use query_qp().
  const Qp* qp(uint32_t qpn) const;
  /// A random 24-bit initial PSN from EndpointConfig::entropy (reference 3.4).
  uint32_t random_psn();

  /// Posts a WRITE / WRITE_WITH_IMM. Errc::invalid_argument if the QP is not
  /// in RTS/ERROR or the request is malformed (length > 2^31); Errc::no_memory
  /// when the send queue is full. A local protection failure (lkey, bounds)
  /// is reported as a completion with WcStatus::loc_prot_err and moves the QP
  /// to ERROR, as in ibverbs. In ERROR the WR completes with wr_flush_err.
  Status post_send(Time now, uint32_t qpn, const SendWr& wr);
  /// Posts a receive WQE (consumed by WRITE_WITH_IMM). Errc::no_memory when full.
  Status post_recv(uint32_t qpn, const RecvWr& wr);

  // ---------------------------------------------------------------- I/O
  /// A packet arrived. `bytes` is the UDP payload (BTH onwards, no ICRC).
  /// Malformed or unacceptable packets are dropped and counted in stats();
  /// this call never fails and never writes outside a registered region.
  void handle_datagram(Time now, const RxMeta& meta, std::span<const uint8_t> bytes);
  /// The next packet to send on one of the ports in `port_mask` (bit i =
  /// port i has room). Header bytes are written to `hdr` (at least
  /// wire::kMaxPlainHeaderBytes, else Errc::invalid_argument); the payload is
  /// described by the Transmit. Returns Errc::done when nothing can be sent
  /// on those ports now.
  ///
  /// A secure QP's packet (QpAttr::secure) leaves sealed: its header carries
  /// a SECETH and tag, so a driver with secure QPs gives wire::kMaxHeaderBytes
  /// (a secure packet that does not fit is not sent, counted in
  /// EndpointStats::tx_seal_failures, and recovered as a loss). If the QP encrypts, the Transmit's payload is the
  /// ciphertext, written to `payload_buf` when that holds the payload (give
  /// one per packet a driver keeps before sending, at least the path MTU),
  /// else to a buffer of the endpoint's that the next poll_transmit reuses.
  Result<Transmit> poll_transmit(Time now, uint32_t port_mask, std::span<uint8_t> hdr,
                                 std::span<uint8_t> payload_buf = {});
  /// The packet `tx` (header bytes `hdr`, as poll_transmit wrote them) never
  /// left this host: the driver's socket buffer or egress queue refused it
  /// (EAGAIN, ENOBUFS). A QP's data packet is resent at once without
  /// counting against its EV, and its congestion control takes the refusal
  /// as congestion (as a trimmed packet); anything else is left to the
  /// protocol's loss recovery. Call it before the next poll_transmit.
  void on_transmit_refused(Time now, const Transmit& tx, std::span<const uint8_t> hdr);
  /// Earliest time handle_timeout() must be called, or Time::never().
  Time next_timeout() const;
  /// Runs every timer due at or before `now`.
  void handle_timeout(Time now);
  /// Next asynchronous or controller event (QP and CQ errors, EV state
  /// changes, port status, probe results), or std::nullopt. Work
  /// completions are polled from their CQ (poll_cq).
  std::optional<Event> poll_event();
  /// True if poll_transmit may return a packet for some port (a driver that
  /// sleeps on port availability uses this to know whether to wake ports).
  bool has_pending_transmit() const { return !ctrl_list_.empty() || !data_list_.empty() || !ep_ctrl_.empty(); }

  // ---------------------------------------------------------------- ports
  /// Local port `port` went up or down. Its EVs leave (return to) service on
  /// every QP at once and peers are told with PORT_STATUS_UPDATE (reference 4.7).
  void set_port_up(Time now, uint8_t port, bool up);
  uint32_t local_port_mask() const { return local_up_; }
  /// Peers whose port-status report is held (at most one per connected peer).
  size_t peer_status_entries() const { return peer_up_.size(); }
  /// Peer `peer` reports its ports `mask` up (bit i = its port i), as a
  /// PORT_STATUS_UPDATE would: QPs to it stop (resume) sending into the
  /// planes it reports down, at once. For a driver that shards one device's
  /// QPs over several endpoints: the update arrives at one of them
  /// (handle_datagram checks it, answers it and applies it there), and the
  /// driver hands it to the others with this call. Applied only if a QP
  /// here is connected (RTR/RTS) to `peer`, else false and nothing is kept
  /// (the table stays bounded by the QPs). A PortEvent reports a change.
  bool apply_peer_port_status(Time now, uint64_t peer, uint32_t mask);


  // ---------------------------------------------------------------- controller
  /// DENY (or restore) EV `value` on QP `qpn` (reference 4.6, DENIED).
  Status set_ev_denied(Time now, uint32_t qpn, uint32_t value, bool denied);
  /// Changes the responder window a dynamic-MPR QP advertises (<= its mpr_dest).
  Status set_mpr_dest(uint32_t qpn, uint8_t mpr);
  /// Sends an EV probe (endpoint operation) to `peer` on `port` with EV
  /// `entropy`; a ProbeResult event reports the answer or the timeout. Only
  /// an answer from `peer` that echoes the request id, the EV and the
  /// timestamp completes it. Errc::invalid_argument for a bad port;
  /// Errc::busy if `req_id` is outstanding; Errc::no_memory past
  /// kMaxOutstandingProbes.
  Status send_ev_probe(Time now, uint16_t req_id, uint64_t peer, uint8_t port, uint32_t entropy,
                       Duration timeout);
  /// Sends a PORT_STATUS_UPDATE saying ports `mask` are up (bit i = port i)
  /// to `peer`, preferably on `port` with EV `entropy` (another port that
  /// is up if that one is not), for a controller (reference 6.3.7); a
  /// ProbeResult event with port_status set reports the answer or the
  /// timeout, matched as for probes. Unlike the updates set_port_up sends,
  /// it is sent once. Errors as send_ev_probe (request ids are shared).
  Status send_port_status(Time now, uint16_t req_id, uint64_t peer, uint8_t port, uint32_t entropy, uint32_t mask,
                          Duration timeout);

 private:
  /// poll_transmit before sealing: fills `tx` (false: nothing to send now)
  /// and names the QP whose packet it is in `from` (null for endpoint
  /// operations).
  bool next_transmit(Time now, uint32_t port_mask, std::span<uint8_t> hdr, Transmit& tx, Qp*& from);
  /// poll_transmit's path for a secure QP's packet `tx` from `from`: sealed,
  /// or (if sealing fails) the next packet; false if none is left.
  bool sealed_transmit(Time now, uint32_t port_mask, std::span<uint8_t> hdr, std::span<uint8_t> payload_buf,
                       Qp* from, Transmit& tx);
  // Secure QPs (core/secure.cc). seal_transmit adds the SECETH and tag to
  // q's packet (false: not sent); open_secure checks a packet for q and
  // returns where its verified (decrypted) payload is, or null if refused.
  bool seal_transmit(Qp& q, std::span<uint8_t> hdr, Transmit& tx, std::span<uint8_t> payload_buf);
  const uint8_t* open_secure(Qp& q, const RxMeta& meta, const wire::Parsed& p, std::span<const uint8_t> bytes);
  std::vector<uint8_t> tx_cipher_;  ///< ciphertext when the driver gives no buffer
  std::vector<uint8_t> rx_plain_;   ///< a verified packet's plaintext, before placement
  Status send_ep_request(Time now, wire::EpWireOp op, uint16_t req_id, uint64_t peer, uint8_t port, uint32_t entropy,
                         uint32_t mask, Duration timeout);
  friend class Qp;
  explicit Endpoint(const EndpointConfig& cfg);

  struct EpCtrl {
    wire::EpWireOp op;
    bool response;
    uint64_t peer;
    uint8_t port;        ///< preferred port
    uint32_t entropy;
    uint16_t req_id;
    uint16_t ts;
    uint32_t mask;
    uint8_t rx_port;
  };
  struct PendingProbe {
    bool port_status;    ///< a controller's port-status update, not a probe
    uint16_t req_id;
    uint64_t peer;
    uint32_t entropy;
    uint16_t ts;
    Time sent_at;
    Time deadline;
  };

  Qp* find_qp(uint32_t qpn);
  uint64_t secret();
  bool peer_connected(uint64_t peer) const;
  void forget_peer_if_unused(uint64_t peer);
  bool take_reply_token(Time now);
  void refresh(Qp& qp);
  void heap_update(Qp& qp);
  void heap_remove(Qp& qp);
  void heap_sift_up(size_t i);
  void heap_sift_down(size_t i);
  void push_event(Event e) { events_.push_back(std::move(e)); }
  void push_completion(const WorkCompletion& wc);
  struct Cq {
    Ring<WorkCompletion> ring;
    uint32_t capacity = 0;
    uint32_t users = 0;       ///< QPs naming it (send and receive side each count)
    uint64_t overflows = 0;
  };
  Cq* find_cq(uint32_t cq);
  void on_endpoint_request(Time now, const RxMeta& meta, const wire::Parsed& p);
  void on_endpoint_response(Time now, const RxMeta& meta, const wire::Parsed& p);
  void run_adverts(Time now);
  void run_rechecks(Time now);
  bool take_advert_answer(const RxMeta& meta, const wire::Parsed& p);
  bool take_recheck_answer(Time now, const RxMeta& meta, const wire::Parsed& p);
  uint16_t ep_timestamp(Time now) const;
  uint32_t peer_port_mask(uint64_t peer) const;
  bool build_ep_ctrl(Time now, uint32_t port_mask, uint8_t* hdr, Transmit& tx);

  EndpointConfig cfg_;
  EndpointStats stats_;
  wire::Parsed rx_parsed_;  ///< reused for every received packet
  Prng rng_;
  Prng secret_rng_;                   ///< used when cfg_.entropy is empty
  MrTable mrs_;
  std::vector<uint32_t> pds_;         ///< allocated PDs other than 0
  uint32_t next_pd_ = 1;
  std::unordered_map<uint64_t, EvProfile> ev_profiles_;
  std::unordered_map<uint64_t, CcProfile> cc_profiles_;
  std::vector<std::unique_ptr<Qp>> qps_;    ///< by slot (qpn_slots_); null = free
  QpnTable qpn_slots_;                      ///< QPN -> slot of every live QP
  uint32_t last_qpn_ = 0;                   ///< find_qp's last answer (reset by destroy_qp)
  Qp* last_qp_ = nullptr;
  std::vector<uint32_t> free_qp_slots_;
  std::deque<Event> events_;
  std::vector<std::unique_ptr<Cq>> cqs_;   ///< index = CQ id; null = free
  std::vector<uint32_t> free_cqs_;
  Ring<Qp*> ctrl_list_;
  Ring<Qp*> data_list_;
  /// Data packets sent to each peer on each port (balance_peer_ports),
  /// kept small by subtracting their minimum.
  std::unordered_map<uint64_t, std::array<uint32_t, 32>> peer_port_sent_;
  /// Of `port_mask`, the ports `q` can use that its peer has had the fewest
  /// data packets on (balance_peer_ports).
  uint32_t least_used_ports(Qp& q, uint32_t port_mask);
  std::array<uint32_t, 32>& peer_port_sent(Qp& q);
  /// poll_transmit's data turn for `q`, taken off data_list_: it sent (and
  /// is queued again), it could not use these ports (the caller puts it
  /// back in its place), or it has nothing to send (it left the list).
  enum class DataTurn : uint8_t { sent, ports_busy, left };
  DataTurn data_turn(Time now, Qp* q, uint32_t port_mask, uint8_t* hdr, Transmit& tx, bool balance);
  /// How far into the turns the arbiter looks for a QP to balance a peer's
  /// planes, and how many QPs that cannot use the free ports keep their
  /// place (more go to the back).
  static constexpr size_t kArbiterScan = 64;
  std::vector<Qp*> heap_;
  Ring<EpCtrl> ep_ctrl_;
  std::vector<PendingProbe> probes_;
  /// peer -> its last reported port mask; only peers with a connected QP
  /// here have an entry (at most max_qps), removed with their last QP.
  std::unordered_map<uint64_t, uint32_t> peer_up_;
  double reply_tokens_ = 0;
  Time reply_refill_ = Time::zero();
  /// Per-source reply credit (ProtocolConfig::ep_reply_source_*), bytes.
  struct ReplyCredit {
    int64_t bytes;
    Time at;        ///< last refill
  };
  std::unordered_map<uint64_t, ReplyCredit> reply_credit_;
  Time reply_credit_swept_ = Time::zero();
  /// Sources tracked at once; when full, those idle long enough to be full
  /// again are forgotten (a new source starts full: nothing is lost), at
  /// most once per refill time; a source that still finds no room is shed.
  static constexpr size_t kMaxReplySources = 4096;
  bool take_source_credit(Time now, uint64_t source, uint32_t request_bytes);
  uint32_t replies_queued_ = 0;
  uint32_t local_up_ = 0;
  IncastGuard incast_;
  /// A trimmed or ECN-marked packet arrived (at any QP) less than 16 base
  /// RTTs before this: responders SACK promptly (Qp::want_sack).
  Time rx_congested_until_;
  /// The port-status update owed to each connected peer, re-sent until it
  /// answers (ProtocolConfig::port_status_max_interval).
  struct PortAdvert {
    uint32_t mask = 0;
    uint16_t first_req = 0;  ///< request id of the first send; each send takes the next
    uint16_t first_ts = 0;   ///< timestamp of the first send
    uint32_t sends = 0;
    Time next;               ///< next send
  };
  std::unordered_map<uint64_t, PortAdvert> adverts_;
  Time advert_next_ = Time::never();
  /// An EV probe on `port`, which `peer` reports down and is up here
  /// (ProtocolConfig::peer_port_recheck); one per peer and port.
  struct PortRecheck {
    uint64_t peer;
    uint8_t port;
    uint16_t req_id;
    uint16_t ts;
    Time deadline;
  };
  std::vector<PortRecheck> rechecks_;
  Time recheck_next_ = Time::never();
  uint16_t ep_req_id_ = 1;

 public:
  /// The lowest QPN ever issued (QPNs 0..0xFF are reserved, reference 3.2).
  static constexpr uint32_t kFirstQpn = 0x100;
  /// Protection domains per endpoint, besides PD 0.
  static constexpr size_t kMaxPds = 4096;
  /// Own EV probes and controller port-status updates outstanding at once.
  static constexpr size_t kMaxOutstandingProbes = 1024;
  /// Endpoint-operation replies queued at once; more are shed (counted).
  static constexpr uint32_t kMaxQueuedReplies = 256;
  /// Completion queues per endpoint, and completions per queue.
  static constexpr size_t kMaxCqs = 65536;
  static constexpr uint32_t kMaxCqe = 1u << 22;
};

}  // namespace mrc::core
