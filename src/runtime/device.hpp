// SPDX-License-Identifier: BSD-2-Clause
// Device: the software MRC NIC. It binds the sans-I/O core (core::Endpoint)
// to UDP sockets (platform/) and runs it on a progress engine thread.
//
// Datapath (DESIGN.md "Software device"):
//  - one local address per plane; MRC arrives on UDP port `udp_port` of each
//    and leaves from a socket bound to (plane address, EV): the EV is the UDP
//    source port (ev_port_base + i), so kernel ECMP spreads the packets;
//  - every packet carries the IBTA ICRC over the headers the kernel writes
//    (wire::datagram_icrc); the receiver recomputes it from the datagram's
//    addresses and ports and drops a corrupt packet, counted;
//  - per-packet spraying (burst = 1) sends each packet as its own datagram;
//    per-burst (burst = k) has the core keep one EV for k packets
//    (ProtocolConfig::ev_burst) and sends them as one UDP GSO super-packet,
//    received with GRO.
//
// Engines: a device runs `engines` progress engines (threads), each with its
// own core::Endpoint. QPs are sharded over them: an engine's endpoint issues
// QPNs whose low bits are its number (EndpointConfig::qpn_shard), and each
// engine has its own receive socket per plane in one SO_REUSEPORT group
// whose BPF program steers a datagram to the engine named by the low bits
// of its BTH destination QP. Device-wide state is shared: peers (under a
// reader-writer lock), and PDs, regions and CQs, which are created in every
// endpoint with the same ids and keys.
//
// Threading: every public call may come from any thread. An engine and the
// calls share that engine's mutex around its core (the core is
// single-threaded by contract); the engine does its system calls outside
// it. Completions reach applications through lock-free rings
// (CompletionQueue), so polling a CQ never waits for an engine.
//
// Ordering that keeps application memory safe: in each engine iteration
// received packets and timers run first, then completions are published,
// then packets are polled and sent. A WR completes only when all its packets
// were acknowledged, so no packet being sent belongs to a completed WR: the
// application may reuse or free a buffer as soon as it sees the completion.
// dereg_mr() and destroy_qp() also wait for a send in progress to finish.
//
// Ports: a plane is in service while the controller has it enabled
// (set_port_admin) and its carrier is up. The device watches the carrier of
// the interface that holds each plane's address through rtnetlink
// (platform::LinkMonitor, read by engine 0; DeviceConfig::watch_carrier): a
// plane whose interface goes down or loses its link leaves service at once,
// exactly as a controller disable takes it out, and the peers are told by
// PORT_STATUS_UPDATE on the other planes, instead of every EV of the plane
// having to time out first. The two states are kept apart: a carrier coming
// back does not undo a controller disable, nor the reverse.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/endpoint.hpp"
#include "platform/clock.hpp"
#include "platform/epoll.hpp"
#include "platform/link_monitor.hpp"
#include "platform/pcap_writer.hpp"
#include "platform/sock_addr.hpp"
#include "platform/udp_socket.hpp"
#include "platform/uring_sender.hpp"
#include "runtime/spsc_ring.hpp"
#include "util/result.hpp"
#include "util/spin_mutex.hpp"
#include "wire/framing.hpp"

namespace mrc::rt {

/// Where the EV goes on the wire.
enum class EvWire : uint8_t {
  udp,   ///< UDP source port (IPv4 or IPv6)
  stev,  ///< UDP source port, and the IPv6 flow label by the kernel's auto_flowlabels hash of it
  /// SRv6 (reference 4.1): a packet whose EV has a wire EV (a QP on a
  /// controller EV profile of an SRv6 format, core::EvProfile::wire_evs)
  /// leaves IPv6-in-IPv6 through a raw socket: the outer destination is
  /// the wire EV's address (locator + uSIDs, which the fabric's switches
  /// shift), the inner header carries the plane addresses and the UDP
  /// source port the compact EV, so the responder can reflect it. The
  /// destination decapsulates (e.g. a seg6local End.DT6 route) and the
  /// inner packet reaches the UDP socket as in udp mode, its UDP checksum
  /// and ICRC intact (both cover the inner header, which no switch
  /// rewrites). Packets without a wire EV (profile 0, endpoint requests)
  /// leave as in udp mode. IPv6 only; needs CAP_NET_RAW.
  srv6,
};

struct DeviceConfig {
  /// Local address of each plane (numeric IPv4 or IPv6, one family); 1..32.
  std::vector<std::string> planes;
  uint16_t udp_port = 4791;
  EvWire ev_mode = EvWire::udp;
  /// EV i of plane p is UDP source port ev_port_base + p * evs_per_plane + i.
  uint16_t ev_port_base = 49152;
  /// EVs per plane in the default EV profile; one sending socket each.
  uint32_t evs_per_plane = 16;
  /// Packets per GSO burst (1 = per-packet spraying), at most 64. A
  /// responder SACKs at least every burst x 4 KiB (raising
  /// protocol.sack_bytes_threshold to that): a burst arrives at once.
  uint32_t burst = 1;
  /// Per-packet spraying in udp mode (burst 1): the device writes each
  /// packet's IP and UDP headers itself and sends the whole batch through
  /// one raw socket per engine, in one sendmmsg whatever the packets' EVs.
  /// Through the EV sockets (the default) each EV is its own socket: a
  /// batch costs one io_uring submission (io_uring below) or, without it,
  /// one sendmsg per packet. The IPv4 UDP checksum is left 0
  /// (the ICRC covers the packet); IPv6 has it computed. Needs CAP_NET_RAW
  /// (Device::open fails with permission without it); receiving is
  /// unchanged. docs/software-device.md has the figures.
  bool raw_send = false;
  /// Send a batch whose datagrams leave from several sockets (a per-packet
  /// spray over the EV sockets, several EV bursts) with one io_uring
  /// submission, in the core's order, instead of one sendmmsg per run of
  /// one socket's datagrams. Needs no privilege. Where io_uring is missing
  /// (a build without liburing, a kernel or container that refuses it) the
  /// device quietly sends as with false; DeviceStats::tx_uring_submits says
  /// whether it is in use. raw_send, where allowed, is faster still.
  bool io_uring = true;
  /// DSCP (1..63) to mark control-class packets with: SACK, NACK, ACK and
  /// the reliability probes (core::TrafficClass::control), so a network
  /// with a strict-priority control class (reference 3.9, 5.8) serves them
  /// ahead of the data; tools/fabric does, for 46. 0 (the default) marks
  /// nothing: every packet leaves with DSCP 0, as a network that has no
  /// such class (or remarks DSCP 46) expects of an application.
  uint8_t dscp_control = 0;
  /// Pacing (docs/software-device.md, "Pacing"): the device sends no
  /// faster than each plane's link carries, so its own interface's queue
  /// does not overflow and drop what the protocol would then resend. Bits
  /// per second per plane, shared by the engines. 0 (the default) = the
  /// speed of the plane's interface where it is a physical NIC that reports
  /// one, else unpaced (loopback, veth and other virtual interfaces report
  /// no rate that means anything: give it here, as tools/fabric does for
  /// its shaped links). kUnpaced: never pace.
  uint64_t link_rate_bps = 0;
  static constexpr uint64_t kUnpaced = UINT64_MAX;
  /// Data and control packets leave ECN-capable (ECT(0)), so a switch that
  /// marks CE instead of dropping can signal congestion; the CE mark of
  /// every received packet goes to the core either way (NSCC, DCQCN).
  /// false: Not-ECT, for a network that mishandles ECT.
  bool ecn = true;
  /// Progress engines (threads), QPs spread over them: 1, 2, 4, 8 or 16.
  uint32_t engines = 1;
  /// The engine never sleeps (else it waits in epoll when idle).
  bool busy_poll = false;
  /// Application threads help: a CQ poll that finds its ring empty runs
  /// one engine iteration itself (when no engine thread is in one), and
  /// while applications poll, the engine threads sleep on timers only. A
  /// busy-polling application then sees its completions without waiting
  /// for an engine thread to be scheduled: on a machine with fewer cores
  /// than spinning threads that wait is the whole latency.
  bool app_progress = true;
  /// With app_progress, an application asleep on a completion channel is
  /// woken by the packets themselves and runs the engines (one wake-up per
  /// message instead of two; Device::watch_sockets) while the device moves
  /// less payload than this per millisecond, sent and received together;
  /// above it (bulk data, and for 10 ms after) the engine threads take the
  /// packets and work in parallel with the application. 0: the engine
  /// threads always take them. 256 KiB (2.1 Gbit/s) is the measured choice
  /// (docs/performance.md, the blocking rows and `--channel-bulk -1`).
  uint64_t bulk_bytes_per_ms = 256 * 1024;
  /// Seed of the protocol's random choices (EV picks); 0 = from getrandom.
  uint64_t seed = 0;
  uint32_t socket_buffer_bytes = 8u << 20;
  /// Congestion control of the default CC profile: "fixed" (a window of
  /// fixed_window_bytes, the default: a software path's delay is dominated
  /// by scheduling, which delay-based NSCC reads as queueing) or
  /// "uet-1.0-nscc".
  std::string cc = "fixed";
  uint64_t fixed_window_bytes = 4u << 20;
  /// Protocol timing for a software path (RTTs of tens of microseconds).
  core::ProtocolConfig protocol = default_protocol();
  /// Packet capture (docs/software-device.md, "Packet capture"): if set,
  /// every MRC packet the device sends, and every one it receives from a
  /// known peer on an enabled plane (corrupt ones included), is written to
  /// this file as a whole IP packet (classic pcap, LINKTYPE_RAW, wall-clock
  /// nanosecond timestamps). The device sends over UDP sockets, so the IP
  /// and UDP headers are rebuilt with wire::build_frame() as the kernel
  /// writes them (the IPv4 identification as 0); the ICRC is the one on the
  /// wire. The file is created (truncated) at open; Device::open() fails
  /// with the file's error if it cannot be. Empty = no capture (one branch
  /// per packet).
  std::string pcap_path;
  /// Packets written to pcap_path at most; later ones are counted in
  /// DeviceStats::pcap_dropped, not written. 0 = no limit.
  uint64_t pcap_max_packets = 1'000'000;
  /// Carrier watching (docs/software-device.md, "Carrier watching"): the
  /// device follows the link of the network interface that holds each
  /// plane's address (rtnetlink: administratively up, carrier, operational
  /// state) and takes the plane out of service while it is down, as
  /// set_port_admin(plane, false) does, and back when it returns (if the
  /// controller has the port enabled). Planes on a loopback address or
  /// interface (127.0.0.0/8, ::1, lo) have no carrier to watch. If netlink
  /// cannot be used (no permission, no netlink), the device runs without
  /// watching and says so once on stderr (DeviceStats::carrier_watch_failed).
  bool watch_carrier = true;

  static core::ProtocolConfig default_protocol();
  /// Checks every field; `why` names the field and the fix.
  Status validate(std::string* why) const;
};

struct DeviceStats {
  uint64_t tx_packets = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_datagrams = 0;
  /// Packets refused because a sending socket's buffer was full (EAGAIN):
  /// handed back to the core (core::Endpoint::on_transmit_refused), which
  /// resends them at once, takes the refusal as congestion and blames no EV.
  uint64_t tx_eagain = 0;
  /// Packets the host's own egress queue (the plane interface's qdisc)
  /// dropped: the kernel reports them as ENOBUFS because the sending
  /// sockets have IP_RECVERR / IPV6_RECVERR. Handed back to the core as
  /// tx_eagain's are: local congestion, not path loss.
  uint64_t tx_queue_drops = 0;
  /// Packets handed back to the core unsent because their plane's queue
  /// had just dropped one of the same batch (the plane waits for it to
  /// drain: a hold of 50 us doubling to 1 ms while the drops go on).
  uint64_t tx_queue_held = 0;
  /// Entries of the sending sockets' error queues: ICMP errors about sent
  /// packets (port, host or network unreachable; each one failed the next
  /// send of its socket, which was made again), and the host's own reports
  /// (EMSGSIZE, also counted in tx_errors).
  uint64_t tx_icmp_errors = 0;
  uint64_t tx_local_errors = 0;
  /// Times a plane was held back by pacing (a batch stopped at its rate).
  uint64_t tx_paced = 0;
  /// Packets the kernel refused with an error, lost like network drops.
  /// In srv6 mode: EMSGSIZE when a link's MTU is below path_mtu plus the
  /// headers (about 150 bytes with both IPv6 headers; use jumbo frames),
  /// ENETUNREACH when a carrier has no route.
  uint64_t tx_errors = 0;
  /// Batches sent with one io_uring submission (DeviceConfig::io_uring);
  /// 0 when the device sends with sendmmsg only.
  uint64_t tx_uring_submits = 0;
  uint64_t rx_packets = 0;
  uint64_t rx_bytes = 0;
  uint64_t rx_icrc_errors = 0;
  uint64_t rx_unknown_source = 0;
  uint64_t rx_short = 0;          ///< shorter than BTH + ICRC
  uint64_t rx_port_down = 0;      ///< dropped: arrived on a plane out of service (disabled, or no carrier)
  uint64_t engine_iterations = 0;
  uint64_t engine_sleeps = 0;
  uint64_t retransmissions = 0;   ///< over the QPs that exist now
  /// Why they were sent, and what they were worth (core::QpStats summed
  /// over the QPs that exist now): losses declared by the SACK loss rule and
  /// by ACK timeouts, tail probes, losses later proven spurious, and data
  /// packets this side received twice (a peer's unneeded retransmissions).
  uint64_t losses_rule = 0;
  uint64_t losses_timeout = 0;
  /// Data packets the local host refused to send (tx_eagain, tx_queue_drops),
  /// resent without blaming their EV (core::QpStats::losses_local).
  uint64_t losses_local = 0;
  uint64_t tail_probes = 0;
  uint64_t spurious_losses = 0;
  uint64_t duplicates_received = 0;
  uint64_t pcap_packets = 0;      ///< packets written to DeviceConfig::pcap_path
  uint64_t pcap_dropped = 0;      ///< packets not captured: pcap_max_packets reached, or a write failed
  /// Carrier transitions of watched planes (DeviceConfig::watch_carrier):
  /// a plane's interface lost its link / got it back. Counted whatever the
  /// controller's port state.
  uint64_t carrier_down = 0;
  uint64_t carrier_up = 0;
  uint32_t carrier_watched = 0;   ///< bit p: plane p's interface carrier is watched
  /// watch_carrier is set but netlink could not be used: ports follow the
  /// controller only (stderr said why, once).
  bool carrier_watch_failed = false;
  uint64_t netlink_malformed = 0; ///< netlink messages skipped as malformed or not from the kernel
  uint64_t netlink_overruns = 0;  ///< the kernel dropped link notifications; each answered by a new dump
  core::EndpointStats core;
};

/// A completion queue: the core's bounded CQ, drained by the engine into an
/// SPSC ring that application threads poll without the device lock.
class CompletionQueue {
 public:
  /// Up to out.size() completions; thread-safe.
  size_t poll(std::span<core::WorkCompletion> out);
  /// The next completion published will call the notify hook once. An
  /// application that arms is about to sleep on its channel: the engine
  /// threads take over progress at once (DeviceConfig::app_progress).
  void arm() {
    armed_.store(true, std::memory_order_relaxed);
    // Pairs with Device::publish's fence between its pushes and its look
    // at the arms: the poll that follows an arm (the verbs idiom) sees a
    // completion pushed before that look, or the look sees the arm.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (on_arm_) on_arm_();
  }
  /// Called (from the engine thread) when an armed CQ receives completions.
  void set_notify(std::function<void()> f) { notify_ = std::move(f); }
  /// The CQ's channel watches the device's sockets (Device::watch_sockets)
  /// and its application runs the engines when a packet wakes it
  /// (Device::drive_from_channel). Arming it then counts as driving: the
  /// engine threads stay off the sockets, so that a packet wakes the
  /// sleeping application alone. Set before the CQ is first armed.
  void set_channel_watches_sockets(bool on) { channel_sockets_.store(on, std::memory_order_relaxed); }
  uint32_t capacity() const { return capacity_; }
  /// Completions lost to overflow (the ring or the core CQ was full).
  uint64_t overflows() const { return overflows_.load(std::memory_order_relaxed); }
  uint32_t core_id() const { return core_id_; }

 private:
  friend class Device;
  CompletionQueue(uint32_t core_id, uint32_t capacity, uint64_t serial)
      : core_id_(core_id), capacity_(capacity), serial_(serial), ring_(capacity) {}
  const uint32_t core_id_;
  const uint32_t capacity_;
  const uint64_t serial_;   ///< unique per device: core ids are reused, serials never
  SpscRing<core::WorkCompletion> ring_;
  std::mutex consumer_mu_;
  std::mutex producer_mu_;  ///< engines take turns producing (one producer at a time)
  std::atomic<bool> armed_{false};
  std::atomic<bool> channel_sockets_{false};
  std::atomic<uint64_t> overflows_{0};
  std::function<void()> notify_;
  std::function<void()> progress_;  ///< DeviceConfig::app_progress: runs the engines once
  std::function<void()> on_arm_;    ///< the application stops driving: wake the engines
};

class Device {
 public:
  /// Opens the sockets and starts the engine. Errc::invalid_argument with
  /// `why` for a bad configuration; Errc::busy / not_found / ... with `why`
  /// naming the socket call for an address that cannot be bound.
  static Result<std::unique_ptr<Device>> open(const DeviceConfig& cfg, std::string* why = nullptr);
  /// Stops the engine, closes the sockets and frees the CQs not destroyed
  /// yet (their pointers become invalid).
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceConfig& config() const { return cfg_; }
  uint32_t num_planes() const { return static_cast<uint32_t>(planes_.size()); }
  /// Plane `p`'s local address (port 0).
  const platform::SockAddr& plane_address(uint32_t p) const { return planes_[p].addr; }
  /// Core limits the API reports (max QPs, WRs, ...).
  const core::EndpointConfig& endpoint_config() const { return ep_cfg_; }

  // ---- peers. A peer is named by its plane-0 address (its GID).
  /// Declares a peer's per-plane addresses (ports ignored): one per plane,
  /// same family as ours. Errc::invalid_argument otherwise. Declaring the
  /// same addresses again is a no-op; different ones are Errc::busy while a
  /// QP is connected to that peer.
  Status set_peer(const platform::SockAddr& gid, std::span<const platform::SockAddr> planes);
  /// The core's id for the peer named `gid` (declared, or implicitly one
  /// reached at `gid` on every plane). Errc::invalid_argument for a family
  /// other than ours.
  Result<uint64_t> peer_id(const platform::SockAddr& gid);
  /// The GID (plane-0 address) of a peer id, for queries.
  std::optional<platform::SockAddr> peer_gid(uint64_t peer) const;

  // ---- protection domains and memory (core::Endpoint semantics and errors)
  Result<uint32_t> alloc_pd();
  Status dealloc_pd(uint32_t pd);
  /// Registers [addr, addr+length) in PD `pd`. Errc::invalid_argument for
  /// a NULL address, a zero length, or a range not wholly mapped in this
  /// process (platform::range_mapped). If the application unmaps the range
  /// later while it is registered, a peer's WRITE into it fails as a remote
  /// access error (counted in EndpointStats::rx_place_faults), never a
  /// crash (platform::guarded_copy).
  Result<core::MemoryRegion> reg_mr(const void* addr, size_t length, uint32_t access, uint32_t pd);
  /// Errc::busy while an outstanding WR reads the region.
  Status dereg_mr(uint32_t lkey);

  // ---- completion queues
  /// Errc::invalid_argument for a capacity of 0 or above the core's maximum.
  Result<CompletionQueue*> create_cq(uint32_t capacity);
  /// Errc::busy while a QP uses it. The object is freed.
  Status destroy_cq(CompletionQueue* cq);

  // ---- applications asleep on the sockets (DeviceConfig::app_progress).
  /// Adds every engine's receive sockets to `ep`, an epoll an application
  /// sleeps on (a completion channel's fd), with user data `tag`. Both the
  /// engine threads' epolls and `ep` watch them exclusively
  /// (events::kExclusive), the engines' first: a packet wakes an engine
  /// thread asleep on its sockets if there is one, and otherwise `ep`,
  /// whose application then calls drive_from_channel. The engine threads
  /// sleep on their timers alone while an application drives (posts,
  /// polls, or arms a CQ set_channel_watches_sockets), so in a ping-pong
  /// the packet wakes the application directly. Remove nothing: entries
  /// leave `ep` when the device closes its sockets. Errors: those of
  /// epoll_ctl (no_memory for the user's epoll limit).
  Status watch_sockets(platform::Epoll& ep, uint64_t tag);
  /// Forgets `ep` (call before closing it): watch_sockets adds the sockets
  /// to it again, or removes them, as bulk data starts and stops flowing.
  void unwatch_sockets(platform::Epoll& ep);
  /// Whether the channels watch_sockets registered watch the sockets now:
  /// not while bulk data flows (DeviceConfig::bulk_bytes_per_ms), as seen
  /// by the last arm of a CQ set_channel_watches_sockets.
  bool channels_watch_sockets() const { return channels_watch_.load(std::memory_order_relaxed); }
  /// An application woken by a socket watch_sockets added: one iteration
  /// of every engine on the calling thread, as a polling application's
  /// turn (its completions first), waiting for an engine thread that is
  /// mid-iteration (which may be taking that very packet) rather than
  /// skipping the engine.
  void drive_from_channel();

  // ---- QPs (core::Endpoint semantics and errors)
  Result<uint32_t> create_qp(const core::QpInit& init);
  /// Flushes outstanding WRs (wr_flush_err completions) and destroys.
  Status destroy_qp(uint32_t qpn);
  Status modify_qp(uint32_t qpn, const core::QpAttr& attr, uint32_t mask);
  std::optional<core::QpInfo> query_qp(uint32_t qpn);
  /// The QP's EVs (core::Endpoint::query_evs).
  size_t query_evs(uint32_t qpn, std::span<core::EvInfo> out);
  uint32_t random_psn();
  Status post_send(uint32_t qpn, const core::SendWr& wr);
  Status post_recv(uint32_t qpn, const core::RecvWr& wr);

  // ---- profiles the controller installs (mrc_ctl.h over core/ctl)
  /// The EV profile a QP uses when it names none (profile 0): every EV of
  /// every plane.
  const core::EvProfile& default_ev_profile() const { return default_evp_; }
  /// Installs EV / CC profile `id` in every engine's endpoint
  /// (core::Endpoint::set_ev_profile / set_cc_profile semantics and errors).
  Status set_ev_profile(uint64_t id, const core::EvProfile& p, std::string* why = nullptr);
  Status set_cc_profile(uint64_t id, const core::CcProfile& p, std::string* why = nullptr);
  /// True if EV `value` on plane `plane` (0-based) has a sending socket: the
  /// device sends each EV from a socket bound at open to its source port,
  /// ev_port_base + plane x evs_per_plane + i. (EvWire::srv6 frames need no
  /// socket per EV: any 16-bit value with a wire EV can be sent.)
  bool ev_sendable(uint32_t plane, uint32_t value) const;
  /// DENY (or allow again) EV `value` on QP `qpn` (core::Endpoint::set_ev_denied).
  Status set_ev_denied(uint32_t qpn, uint32_t value, bool denied);

  // ---- ports (planes): administered by the controller (mrc_ctl_modify_port)
  // and following their interface's carrier (DeviceConfig::watch_carrier)
  /// Enables or disables plane `plane` (0-based). A plane out of service
  /// (disabled, or its carrier down) sends nothing, drops what arrives on
  /// it (counted in rx_port_down), its EVs leave service on every QP, and
  /// every engine tells the peers it has connected QPs with by
  /// PORT_STATUS_UPDATE, so they stop sending into it
  /// (core::Endpoint::set_port_up). Enabling reverses all of it once the
  /// carrier is up too; the carrier never re-enables a disabled plane.
  /// Idempotent. Errc::invalid_argument for a bad plane.
  Status set_port_admin(uint32_t plane, bool up);
  /// Bit p set = plane p is in service: enabled and its carrier up.
  uint32_t port_up_mask() const { return port_up_.load(std::memory_order_acquire); }
  /// Bit p set = the controller has plane p enabled (set_port_admin).
  uint32_t port_admin_mask() const { return admin_up_.load(std::memory_order_acquire); }
  /// Bit p set = plane p's carrier is up; always set for a plane whose
  /// interface is not watched (loopback, or watching off or failed).
  uint32_t port_carrier_mask() const { return carrier_up_.load(std::memory_order_acquire); }

  // ---- endpoint operations (controller, reference 6.3.7)
  /// One endpoint request: an EV probe, or a port-status update saying
  /// planes `up_mask` are up (bit p = plane p), to `peer` on plane `plane`
  /// with EV `ev` (a source port of that plane: ev_sendable).
  struct EpRequest {
    bool port_status = false;
    uint16_t req_id = 0;
    uint64_t peer = 0;
    uint32_t plane = 0;
    uint32_t ev = 0;
    uint32_t up_mask = 0;
    /// EvWire::srv6: the request leaves IPv6-in-IPv6 to this wire EV's
    /// address (an SRv6 probe names its whole path; reference 4.1), `ev`
    /// being only the inner source port (any value). Unset: as in udp mode.
    std::optional<core::WireEv> wire_ev;
  };
  /// Sends it from the engine that receives QP 2 traffic (where its answer
  /// arrives); a core::ProbeResult event reports the answer or, after
  /// `timeout`, that none came. Errc::invalid_argument for a bad plane or
  /// EV; Errc::busy if req_id is outstanding; Errc::no_memory past
  /// core::Endpoint::kMaxOutstandingProbes.
  Status send_ep_request(const EpRequest& r, Duration timeout);

  /// Receives every asynchronous event (QP errors, CQ overflows, port
  /// changes, EV events, probe results), on the engine thread, outside the
  /// device lock. Set it before creating QPs.
  void set_event_sink(std::function<void(const core::Event&)> sink);

  DeviceStats stats();

  /// Fuzzing and tests: hands `bytes` to the receive path as if a datagram
  /// from `source` (address and UDP source port) had arrived on plane
  /// `plane`'s socket, and on the engine the kernel would steer it to (the
  /// low bits of its BTH destination QP): the same source, ICRC and port
  /// checks, then the core. Errc::invalid_argument for a plane out of
  /// range or more than 64 KiB. What the core then sends goes out on the
  /// engine's next iteration as usual.
  Status inject_datagram(uint32_t plane, const platform::SockAddr& source, std::span<const uint8_t> bytes);

 private:
  struct Plane {
    platform::SockAddr addr;                  ///< port 0
    wire::IpAddress ip{};
    /// Its interface carries the largest MRC packet (4 KiB path MTU) whole:
    /// the sockets never fragment (UdpSocketOptions::no_fragment). Else the
    /// kernel fragments the packets that do not fit, as before.
    bool whole_packets = true;
    /// Pacing rate of this plane, bits per second for the whole device
    /// (DeviceConfig::link_rate_bps resolved at open); 0 = unpaced.
    uint64_t rate_bps = 0;
  };
  struct Peer {
    platform::SockAddr gid;
    std::vector<platform::SockAddr> planes;   ///< destination per plane, port = udp_port
    std::vector<wire::IpAddress> ips;
  };
  /// One polled packet waiting to be sent.
  struct TxSlot {
    std::array<uint8_t, wire::kMaxHeaderBytes> hdr;
    std::array<uint8_t, 4096> bounce;         ///< a payload gathered from several elements
    std::array<uint8_t, 4> icrc;
    core::Transmit tx;
    const uint8_t* payload = nullptr;         ///< contiguous payload (user memory or bounce)
    platform::SockAddr dest;                  ///< the peer's address on tx.port (copied under the lock)
    wire::IpAddress dst_ip{};
    /// EvWire::srv6 packets with a wire EV: the outer and inner IPv6 and
    /// UDP headers, and the outer destination (the wire EV's address).
    std::array<uint8_t, wire::kMaxFrameHeaderBytes> net;
    uint16_t net_len = 0;
    platform::SockAddr carrier;
    core::WireEv wire_copy;                   ///< an endpoint request's wire EV (tx.wire_ev points here)
  };
  struct StagedCompletion {
    core::WorkCompletion wc;
    uint64_t cq_serial;
  };
  /// One progress engine: an endpoint, its sockets and its thread.
  struct Engine {
    uint32_t index = 0;
    SpinThenBlockMutex mu;                    ///< guards ep and the engine's staging (held for one core call at a time)
    std::mutex run_mu;                        ///< held for a whole iteration (engine thread or an application)
    platform::Epoll quiet_epoll;              ///< only the wake eventfd: sleeping while applications drive
    std::unique_ptr<core::Endpoint> ep;
    std::vector<platform::UdpSocket> rx;      ///< per plane, in the plane's reuseport group
    std::vector<std::vector<platform::UdpSocket>> tx;  ///< [plane][EV]
    platform::UdpSocket raw;                  ///< EvWire::srv6: sends the encapsulated frames
    platform::UringSender uring;              ///< DeviceConfig::io_uring, when the kernel allows it (send_mu)
    std::vector<TxSlot> slots;
    /// Pacing, per plane: when what this engine sent on it will have left
    /// at its share of the plane's rate (poll_transmits).
    std::vector<Time> pace_free;
    /// Per plane: its egress queue dropped a packet (ENOBUFS), so it is not
    /// offered before tx_hold; the hold doubles with each drop in a row
    /// (tx_backoff, up to kMaxQueueBackoff) and starts again at its
    /// shortest once a batch goes out whole (send_slots).
    std::vector<Time> tx_hold;
    std::vector<Duration> tx_backoff;
    /// A batch's GSO datagrams, each copied whole (send_slots): a burst
    /// gathered from three pieces a segment made the kernel's copy slower
    /// than our copy into here plus one piece.
    std::vector<uint8_t> gso_stage;
    platform::RxBatch rx_batch{64, 65536};
    /// Datagrams per recvmmsg (receive_all): as many as the last call's
    /// mean size fits in kRxBytesPerCall.
    size_t rx_per_call = 64;
    platform::Epoll epoll;
    platform::EventFd wake;
    std::atomic<bool> sleeping{false};
    bool yields = false;                      ///< engine thread only: in SCHED_BATCH (engine_main)
    std::atomic<bool> quiet{false};           ///< asleep on quiet_epoll alone (an application drives): arming wakes it
    std::atomic<bool> handoff{false};         ///< a polling application left its sends to this thread (iterate)
    /// A receiving poll turn left its sends (the message's SACK) unsent,
    /// and whose turn sent them last time: the application's (it answers
    /// its messages; no kick) or this thread's (it stopped polling; kick).
    std::atomic<bool> handoff_waiting{false};
    std::atomic<bool> app_answers{true};
    /// When an application's turn last took this engine's packets (a poll,
    /// or a wake-up on its channel), clock_ picoseconds; INT64_MIN / 2 =
    /// never. Recent: this thread's turns beside it leave the packets to it.
    std::atomic<int64_t> app_rx_ps{INT64_MIN / 2};
    std::mutex send_mu;                       ///< held while the engine sends (see file comment)
    std::vector<std::pair<uint32_t, uint64_t>> cqs;   ///< (core CQ id, serial) of every live CQ
    std::vector<StagedCompletion> staged;
    std::vector<core::Event> events_out;
    /// Port-status updates this engine's core accepted from peers, to be
    /// applied in the other engines' cores too (the QPs to that peer may
    /// live on any engine; QP 2 traffic reaches only one).
    struct PeerPortStatus {
      uint64_t peer;
      uint32_t mask;
    };
    std::vector<PeerPortStatus> port_status_in;
    /// EvWire::srv6: wire EVs of this engine's outstanding endpoint
    /// requests, by request id; dropped when their ProbeResult is collected.
    std::unordered_map<uint16_t, core::WireEv> ep_wire;
    DeviceStats st;
    std::thread thread;
  };

  explicit Device(const DeviceConfig& cfg);
  Status open_engine(Engine& e, std::string* why);
  Engine& engine_of(uint32_t qpn) { return *engines_[qpn & (engines_.size() - 1)]; }
  void engine_main(Engine& e);
  /// One engine iteration: receive, timers, publish, poll and send. True if
  /// it moved a packet. The caller holds e.run_mu.
  /// Whose turn an iteration is: the engine thread's (or an application's
  /// last look before it sleeps), the engine thread's beside a driving
  /// application (timers and sends only: the application's turns, or the
  /// channel it sleeps on, take the packets), an application's post (no
  /// receive: its work goes out at once), or a polling application's (its
  /// completions first: what it would send waits for its next turn, see
  /// iterate).
  enum class Turn : uint8_t { engine, timers, post, poll };
  bool iterate(Engine& e, std::vector<StagedCompletion>& staged, std::vector<core::Event>& events,
               Turn turn = Turn::engine);
  /// An application thread's turn (app_progress): one iteration of every
  /// engine no thread is running now. `driving`: the application keeps
  /// polling (the engine threads stay out of its way for a millisecond);
  /// false for its last look before it sleeps on a channel.
  void app_progress(bool driving = true);
  /// An application thread's turn at one engine (a post, or app_progress):
  /// notes that an application is driving, then try_iterate.
  bool app_turn(Engine& e, Turn turn);
  /// One iteration of `e` on the calling (application) thread, if no
  /// thread is in one; false if one is.
  bool try_iterate(Engine& e, Turn turn = Turn::engine);
  /// One iteration of `e` on an application thread that holds e.run_mu.
  void app_iterate(Engine& e, Turn turn);
  /// Adds (on) or removes the engines' receive sockets to / from `ep`.
  /// Under watch_mu_.
  Status watch_sockets_locked(platform::Epoll& ep, uint64_t tag, bool on);
  /// The channels registered with watch_sockets watch the sockets (on) or
  /// not; a no-op if they already do as asked. Under watch_mu_.
  void set_channels_watch_locked(bool on);
  /// Decides who watches the sockets, for an application that sleeps on a
  /// channel watching them: while bulk data flows, the engine threads
  /// (engines_take_sockets); otherwise the channels, and the application
  /// counts as driving so the engine threads stay on their timers.
  void share_sockets(bool bulk);
  /// Whether bulk data flows: more than DeviceConfig::bulk_bytes_per_ms
  /// sent and received per millisecond over the last window (at least a millisecond long,
  /// from one call to a later one).
  bool bulk_now();
  /// The engine threads take the sockets: no application drives, and one
  /// asleep on its timers alone is woken to watch them.
  void engines_take_sockets();
  /// Every engine's mutex, in index order (objects_mu_ first, by the caller).
  std::vector<std::unique_lock<SpinThenBlockMutex>> lock_all_engines();
  bool receive_all(Engine& e);
  /// Applies the port-status updates `from` received in every other engine.
  void forward_port_status(Engine& from);
  void handle_datagram(Engine& e, uint32_t plane, const platform::RxDatagram& d, Time now);
  /// Writes one packet to the capture file (pcap_ is set): the IP and UDP
  /// headers `f` describes, then `transport` ‖ `payload` ‖ `icrc`.
  void capture(const wire::FrameFields& f, std::span<const uint8_t> transport, std::span<const uint8_t> payload,
               std::span<const uint8_t> icrc);
  /// Writes one frame whose IP and UDP headers are given (`net`).
  void capture_frame(std::span<const uint8_t> net, std::span<const uint8_t> transport,
                     std::span<const uint8_t> payload, std::span<const uint8_t> icrc);
  /// A send the kernel failed (not a full buffer): the packets are lost as
  /// if dropped. EMSGSIZE (a datagram larger than the link's MTU: the
  /// sockets never fragment) is also said once on stderr with the fix.
  void note_send_error(int err, size_t datagram_bytes, const platform::SockAddr& dest);
  void note_port_status(Engine& e, const core::RxMeta& meta, std::span<const uint8_t> bytes);
  size_t poll_transmits(Engine& e, Time now);
  /// Pacing (DeviceConfig::link_rate_bps, device_tx.cc): the planes this
  /// engine may send on now; charges a packet to its plane (true if that
  /// used up the plane's allowance); when the first paced-out plane
  /// reopens (Time::zero() if none is paced). Under the engine's mutex.
  uint32_t pace_mask(Engine& e, Time now) const;
  bool pace_charge(Engine& e, Time now, uint32_t plane, size_t udp_payload_bytes);
  Time pace_release(Engine& e) const;
  uint32_t all_planes() const { return num_planes() >= 32 ? ~0u : (1u << num_planes()) - 1; }
  /// The ECN bits of every packet sent: ECT(0), or Not-ECT (DeviceConfig::ecn).
  uint8_t ecn_bits() const { return cfg_.ecn ? 0b10 : 0; }
  void attach_ep_wire(Engine& e, TxSlot& s);
  /// Sends slots [0, n) (device_tx.cc), in steps over one TxBatch:
  /// send_raw_frames (srv6, raw_send), build_datagram per datagram, then
  /// submit_uring and/or submit_sendmmsg, which count_sent what was taken.
  void send_slots(Engine& e, size_t n);
  struct TxBatch;
  size_t send_raw_frames(TxBatch& b, size_t n);
  void build_datagram(TxBatch& b, size_t i, size_t j, size_t total);
  void count_sent(TxBatch& b, size_t d);
  void submit_uring(TxBatch& b);
  void hold_dropping_planes(Engine& e, uint32_t dropped, uint32_t sent);
  void send_one(TxBatch& b, size_t d);
  void submit_sendmmsg(TxBatch& b);
  /// Engine thread only: puts it in SCHED_BATCH or back
  /// (platform::set_thread_yields_on_wake) and records which in e.yields.
  void set_yields(Engine& e, bool yields);
  /// Sends slots order[0, n) as whole frames through the engine's raw
  /// socket, in that order: a slot with a wire EV (EvWire::srv6) as an
  /// IPv6-in-IPv6 frame to its carrier, any other (raw_send) as a plain
  /// UDP datagram whose source port is its entropy. Returns what the
  /// kernel took, refused (full buffer) and failed.
  struct SendCount {
    uint64_t packets = 0, bytes = 0, refused = 0, errors = 0;
    uint64_t queue_drops = 0;  ///< of `refused`: dropped by the egress queue (ENOBUFS)
    uint32_t dropped_planes = 0, sent_planes = 0;  ///< planes with a queue drop / a packet sent
    platform::ErrorQueueCounts errq;
  };
  /// `refused` receives the slot of each frame the kernel refused (room
  /// for order.size()); SendCount::refused counts them.
  SendCount send_frames(Engine& e, std::span<const uint16_t> order, uint16_t* refused);
  void collect_events(Engine& e);
  void publish(std::vector<StagedCompletion>& staged, std::vector<core::Event>& events);
  void kick(Engine& e);
  /// Watching the planes' carrier (DeviceConfig::watch_carrier), at open:
  /// finds each plane's interface, dumps their state, and leaves the
  /// monitor in engine 0's epolls; on failure says so once on stderr.
  void open_carrier_watch();
  /// Engine 0's thread: reads the link notifications and applies them.
  void poll_carrier();
  /// Finds the planes' interfaces again (an address moved or went away).
  void resolve_carrier_planes();
  /// Plane `plane`'s carrier went up or down.
  void set_port_carrier(uint32_t plane, bool up);
  /// Puts plane `plane` in or out of service on every engine if its
  /// admin and carrier states now say so. Under port_admin_mu_.
  void apply_port_locked(uint32_t plane);
  uint64_t add_peer_locked(const platform::SockAddr& gid, std::vector<platform::SockAddr> planes);
  bool peer_connected_locked(uint64_t peer);

  DeviceConfig cfg_;
  core::EndpointConfig ep_cfg_;
  core::EvProfile default_evp_;
  wire::FrameFormat fmt_;                      ///< what the UDP sockets send and receive (udp / stev)
  wire::FrameFormat srv6_fmt_;                 ///< EvWire::srv6 frames (send only)
  wire::FrameFormat raw_fmt_;                  ///< raw_send datagrams (send only)
  platform::MonotonicClock clock_;
  std::unique_ptr<platform::PcapWriter> pcap_;  ///< DeviceConfig::pcap_path; null = no capture
  std::atomic<uint64_t> pcap_failed_{0};        ///< captures refused for another reason than the bound
  std::atomic<bool> too_big_reported_{false};   ///< the one EMSGSIZE message was printed
  std::vector<Plane> planes_;
  bool paced_ = false;                 ///< some plane has a rate
  std::vector<Duration> pace_ahead_;   ///< per plane: how far ahead of now an engine may have sent
  std::vector<std::unique_ptr<Engine>> engines_;
  std::atomic<uint32_t> next_engine_{0};

  std::shared_mutex peers_mu_;                 ///< guards peers_, peer_by_addr_
  std::vector<Peer> peers_;                    ///< peer id = index + 1
  std::unordered_map<platform::SockAddr, uint64_t, platform::SockAddrHash> peer_by_addr_;
  /// Serializes PD/MR/CQ changes across engines and guards cqs_. Lock
  /// order: objects_mu_, then engine mutexes in index order; an engine
  /// never takes objects_mu_ while holding its own mutex.
  std::mutex objects_mu_;
  std::vector<CompletionQueue*> cqs_;          ///< live CQs
  uint64_t next_cq_serial_ = 1;
  std::function<void(const core::Event&)> sink_;
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> port_up_{0};           ///< planes in service: admin_up_ & carrier_up_
  std::atomic<uint32_t> admin_up_{0};          ///< enabled planes (set_port_admin)
  std::atomic<uint32_t> carrier_up_{0};        ///< planes whose carrier is up (or not watched)
  std::mutex port_admin_mu_;                   ///< serializes port state changes (admin and carrier)
  /// DeviceConfig::watch_carrier: the monitor and what it watches. Only
  /// engine 0's thread touches it once the engines run.
  struct CarrierWatch {
    platform::LinkMonitor mon;
    std::vector<bool> watched;                 ///< per plane: its interface is watched
    std::vector<int32_t> ifindex;              ///< per watched plane: its interface; 0 = its address is on none now
    std::vector<platform::LinkStatus> buf;
    Time next_poll;
    bool readable = false;                     ///< epoll said the monitor has messages
  };
  std::unique_ptr<CarrierWatch> carrier_;
  std::atomic<uint32_t> carrier_watched_{0};   ///< bit p: plane p is watched
  bool carrier_failed_ = false;                ///< watch_carrier set, netlink unusable
  std::atomic<uint64_t> carrier_downs_{0}, carrier_ups_{0};
  std::atomic<uint64_t> netlink_malformed_{0}, netlink_overruns_{0};  ///< the monitor's counters, for stats()
  /// app_polled_ps_ when no application drives: never, or it armed a CQ to sleep.
  static constexpr int64_t kNotDriving = INT64_MIN / 2;
  std::atomic<int64_t> app_polled_ps_{kNotDriving};  ///< last app_turn(), clock_ picoseconds
  /// Channels' epolls that watch_sockets registered, and whether they
  /// watch the sockets now (not while bulk data flows: bulk_now).
  struct Watcher {
    platform::Epoll* ep;
    uint64_t tag;
  };
  std::mutex watch_mu_;                              ///< guards watchers_ and changes of channels_watch_
  std::vector<Watcher> watchers_;

  std::atomic<bool> channels_watch_{true};
  /// Payload bytes the engines sent and received, and bulk_now's window.
  std::atomic<uint64_t> data_bytes_{0};
  std::atomic<uint64_t> bulk_window_bytes_{0};
  std::atomic<int64_t> bulk_window_ps_{kNotDriving};
  std::atomic<int64_t> bulk_until_ps_{kNotDriving};
};

}  // namespace mrc::rt
