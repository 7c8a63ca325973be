// SPDX-License-Identifier: BSD-2-Clause
/*
 * mrc_soft.h -- open an OpenMRC software device: MRC over ordinary UDP/IP,
 * no RDMA NIC and no kernel module.
 *
 * A software device has one local IP address per plane (IPv4 or IPv6; the
 * planes of one device use one family). It receives MRC on UDP port 4791
 * (configurable) of each address and sends from that address with the EV in
 * the UDP source port (and, in STEV mode, in the IPv6 flow label), so
 * kernel ECMP routes spread the packets. A progress engine thread drives the
 * same protocol core the simulator drives.
 *
 * The ibv_context returned here is accepted by every call of <mrc.h>.
 * Programs that find their device through libibverbs instead
 * (ibv_get_device_list lists the software devices a configuration file
 * describes; docs/using-the-library.md) need none of this header. On a
 * context opened here, ibv_alloc_pd, ibv_reg_mr, ibv_query_gid and the
 * other calls libopenmrc serves for its devices work too, when the program
 * links libopenmrc before libibverbs; the calls below work either way.
 *
 * Peers: a QP's peer is named at RTR by IBV_QP_AV with ah_attr.grh.dgid set
 * to the peer's GID, which is its plane-0 address (mrc_soft_query_gid). A
 * multi-plane peer's other addresses are declared once per device with
 * mrc_soft_set_peer; a peer never declared is reached at its GID on every
 * plane.
 */
#ifndef MRC_MRC_SOFT_H
#define MRC_MRC_SOFT_H

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where the EV goes on the wire. */
enum mrc_soft_ev_mode {
  /** UDP source port = the EV: ev_port_base + plane * evs_per_plane + i. */
  MRC_SOFT_EV_UDP = 0,
  /** STEV: the UDP source port as above and, on IPv6, also the flow label. */
  MRC_SOFT_EV_STEV = 1,
  /** SRv6 (IPv6 planes, needs CAP_NET_RAW): QPs on a controller EV profile
   *  of an SRv6 format send IPv6-in-IPv6 to each EV's expanded destination
   *  address (locator + uSIDs) through a raw socket, the compact EV in the
   *  inner UDP source port; the destination host decapsulates. Everything
   *  else leaves as in MRC_SOFT_EV_UDP. Enables the controller's SRv6 format
   *  mode and GEN EV profiles (mrc_ctl.h). */
  MRC_SOFT_EV_SRV6 = 2,
};

/** The reliable transport of a device's QPs (mrc_soft_device_attr.transport). */
enum mrc_soft_transport {
  /** MRC (the default): each QP sprays over the EVs of its EV profile. */
  MRC_SOFT_TRANSPORT_MRC = 0,
  /** The RoCEv2 RC baseline: each QP keeps one EV (one plane, one path) for
   *  its life, sends IBTA RC opcodes in PSN order, recovers by go-back-N and
   *  acknowledges cumulatively; no trimming, probes or EV management (EV
   *  profiles a QP names are accepted and unused). Both ends of a
   *  connection must use the same transport: a packet of the other family
   *  is dropped as malformed. For comparisons against MRC on the same
   *  network; the API is the same. */
  MRC_SOFT_TRANSPORT_ROCE_RC = 1,
};

struct mrc_soft_device_attr {
  /** Local address of each plane ("127.0.0.1", "::1", "fd00::1"); 1..32. */
  const char *const *plane_addrs;
  int num_planes;
  /** UDP port MRC is received on; 0 = 4791 (IANA RoCEv2). */
  uint16_t udp_port;
  enum mrc_soft_ev_mode ev_mode;
  /** First UDP source port of the EV range; 0 = 49152. */
  uint16_t ev_port_base;
  /** EVs per plane in the default EV profile (profile 0); 0 = 16. At most
   *  65536 - ev_port_base (and 1024 per plane: one socket per source port). */
  uint32_t evs_per_plane;
  /** Packets sent back to back on one EV: 1 = per-packet spraying (each
   *  packet its own datagram, as hardware sprays); k > 1 = per-burst: k
   *  consecutive packets of a QP on one EV leave as one UDP GSO
   *  super-packet and are received with GRO. Both are correct MRC on the
   *  wire; a burst's packets share one path. 0 = 1; at most 64. */
  uint32_t burst;
  /** Progress engines (threads); QPs are spread over them. 0 = 1. */
  uint32_t num_engines;
  /** 1 = the engines never sleep (one core each);
   *  0 = they sleep in epoll when idle (waking costs tens of microseconds). */
  int busy_poll;
  /** 0 (default) = application threads help: a poll of an empty CQ runs the
   *  engines once and a post sends at once, so a busy-polling application
   *  needs no engine thread to be scheduled (the lowest latency when cores
   *  are scarce); 1 = only the engine threads make progress. */
  int engines_only;
  /** Seed of the protocol's random choices; 0 = from getrandom. Keys and QPNs
   *  always come from getrandom. */
  uint64_t seed;
  /** Socket buffer sizes in bytes; 0 = 8 MiB. */
  uint32_t socket_buffer_bytes;
  /** Capture file: NULL = no capture; else every MRC packet sent and
   *  received is written to this file (created or truncated) as a whole
   *  IP packet, in pcap format (nanosecond timestamps, LINKTYPE_RAW), for
   *  Wireshark with tools/wireshark/mrc.lua (docs/wireshark.md). At most
   *  1,000,000 packets are written. Open fails with the file's errno
   *  (ENOENT, EACCES, ...) if it cannot be created. */
  const char *pcap_path;
  /** The transport every QP created on this device runs (fixed at
   *  mrc_create_qp); 0 = MRC_SOFT_TRANSPORT_MRC. A device-wide choice, not
   *  a per-QP one, so an unchanged application runs either transport.
   *  Open fails with EINVAL for another value. */
  enum mrc_soft_transport transport;
  /** 0 (default) = the device watches the carrier of the network interface
   *  holding each plane's address (rtnetlink) and takes a plane out of
   *  service while that interface is down or has lost its link, exactly as
   *  mrc_ctl_modify_port disabling it does (its EVs leave service, peers
   *  are told by a port-status update over the other planes), and back
   *  when the link returns, unless the controller disabled the port
   *  (mrc_ctl_query_port reads state DOWN with admin_state ENABLED while
   *  the carrier is down). Loopback planes are not watched. If netlink
   *  cannot be used the device opens anyway, without watching, and says so
   *  once on stderr. 1 = do not watch: ports follow the controller only. */
  int no_carrier_watch;
  /** DSCP of the control class: 0 (default) = no marking; 1..63 = every
   *  SACK, NACK, ACK and probe leaves with this DSCP (UDP mode: in the IP
   *  header of its datagram; SRv6 mode: in the outer IPv6 header), and
   *  data keeps DSCP 0, so switches that give the control class its own
   *  strict-priority queue (reference 3.9; 46 in the reference's example
   *  emulator, and tools/fabric's shaper) never queue feedback behind the
   *  data it reports on. Off by default because a network without such a
   *  class may police or remark DSCP 46. Open fails with EINVAL above 63. */
  int dscp_control;
  /** 0 (default) = each EV's packets leave through that EV's UDP socket
   *  (its source port); 1 = per-packet spraying (burst 1) in
   *  MRC_SOFT_EV_UDP mode writes each packet's IP and UDP headers itself
   *  and sends a whole batch through one raw socket per engine, one
   *  sendmmsg whatever the EVs: 1 MiB WRITEs went from 5.2 to 5.9 Gbit/s
   *  per packet on loopback (docs/software-device.md). The IPv4 UDP checksum is left
   *  0 (the ICRC covers the packet). Needs CAP_NET_RAW: open fails with
   *  EPERM without it, and with EINVAL with burst > 1 or another ev_mode. */
  int raw_send;
  /** 0 (default) = a batch whose datagrams leave from several EV sockets
   *  (a per-packet spray, several EV bursts) goes to the kernel in one
   *  io_uring submission, in order, where the kernel allows io_uring (no
   *  privilege needed); where it does not, or the library was built
   *  without liburing, each socket's run leaves with its own sendmmsg
   *  (mrc_soft_stats.tx_uring_submits stays 0). 1 = always sendmmsg.
   *  Ignored with raw_send (one sendmmsg already takes a whole batch). */
  int no_io_uring;
  /** Applications that sleep on a completion channel (unless
   *  engines_only): while the device moves less than this many bytes of
   *  payload a millisecond (sent and received together), a packet no
   *  engine thread waits for wakes the application asleep on its channel,
   *  whose mrc_get_cq_event processes it: one wake-up per message instead
   *  of two (a blocking 2 B ping-pong: 26-31 us one way instead of 51-60
   *  on a 2-core VM). Above it (bulk data, and for 10 ms after) the engine
   *  threads take the packets and work in parallel with the application.
   *  0 = the default, 262144 (the measured choice); < 0 = off: the engine
   *  threads take every packet and wake the application through the
   *  channel. */
  int64_t channel_bulk_bytes_per_ms;
  /** Pacing: each plane's link rate in bits per second; the device sends no
   *  faster, so its own interface's queue does not overflow and drop what
   *  MRC would then resend. 0 (default) = the speed of the plane's network
   *  interface where it is a physical NIC that reports one, else unpaced
   *  (loopback and veth report no real rate: give it here). UINT64_MAX =
   *  never pace. Open fails with EINVAL below 1000000. */
  uint64_t link_rate_bps;
  /** 0 (default) = every packet leaves ECN-capable (ECT(0)), so switches
   *  that mark CE can signal congestion; 1 = Not-ECT. Received CE marks are
   *  used either way. */
  int no_ecn;
};

/**
 * Opens a software device and starts its engines. NULL with errno: EINVAL
 * (bad attribute: the message is printed to stderr naming the field),
 * EADDRNOTAVAIL / EADDRINUSE (an address cannot be bound), EMFILE, ENOMEM.
 */
struct ibv_context *mrc_soft_open_device(const struct mrc_soft_device_attr *attr);
/**
 * Stops the engines and frees the device. EBUSY while contexts, PDs or
 * memory regions still exist on it.
 */
int mrc_soft_close_device(struct ibv_context *dev);

/** The GID of plane `plane` (0-based): its address, IPv4 as ::ffff:a.b.c.d. EINVAL for a bad plane. */
int mrc_soft_query_gid(struct ibv_context *dev, int plane, union ibv_gid *gid);
/** Formats a GID as an address string ("10.0.0.1", "fd00::1") into buf. EINVAL if it does not fit. */
int mrc_soft_gid_to_str(const union ibv_gid *gid, char *buf, size_t len);
/** Parses an IPv4 or IPv6 address into a GID. EINVAL if it is not one. */
int mrc_soft_str_to_gid(const char *addr, union ibv_gid *gid);

/**
 * Declares a peer device: `gid` is its plane-0 GID (what QPs name in
 * IBV_QP_AV) and plane_gids[i] its address on plane i. Replaces an earlier
 * declaration. EINVAL for a count other than this device's planes or mixed
 * address families; EBUSY while a connected QP uses the peer.
 */
int mrc_soft_set_peer(struct ibv_context *dev, const union ibv_gid *gid, const union ibv_gid *plane_gids,
                      int num_planes);

/** A protection domain. NULL with errno ENOMEM. */
struct ibv_pd *mrc_soft_alloc_pd(struct ibv_context *dev);
/** EBUSY while QPs or memory regions use it. */
int mrc_soft_dealloc_pd(struct ibv_pd *pd);
/**
 * Registers [addr, addr+length) with IBV_ACCESS_LOCAL_WRITE /
 * IBV_ACCESS_REMOTE_WRITE (other bits EINVAL). The keys are unguessable
 * (getrandom). NULL with errno EINVAL (empty or wrapping range), ENOMEM.
 */
struct ibv_mr *mrc_soft_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);
/** EBUSY while a posted WR that has not completed reads the region. */
int mrc_soft_dereg_mr(struct ibv_mr *mr);

/** Device counters (all since open). */
struct mrc_soft_stats {
  uint64_t tx_packets;        /**< MRC packets sent (each segment of a burst counts) */
  uint64_t tx_bytes;          /**< UDP payload bytes sent */
  uint64_t tx_datagrams;      /**< send calls' datagrams (a GSO burst is one) */
  uint64_t tx_eagain;         /**< packets refused because a socket buffer was full, resent (see losses_local) */
  uint64_t tx_errors;         /**< packets the kernel refused with an error (SRv6: EMSGSIZE for a link MTU
                                   below path_mtu + ~150, no route to a carrier); lost like drops */
  uint64_t rx_packets;        /**< MRC packets received (each GRO segment counts) */
  uint64_t rx_bytes;
  uint64_t rx_icrc_errors;    /**< dropped: ICRC mismatch (corrupt) */
  uint64_t rx_unknown_source; /**< dropped: source address of no known peer */
  uint64_t rx_malformed;      /**< dropped by the core: unparsable */
  uint64_t rx_dropped;        /**< dropped by the core for any other reason (rx_stale_acks are not counted here) */
  uint64_t rx_access_errors;  /**< WRITEs refused by rkey/bounds/access checks */
  uint64_t retransmissions;
  uint64_t carrier_downs;     /**< a watched plane's interface lost its link (the plane left service) */
  uint64_t carrier_ups;       /**< a watched plane's interface got its link back */
  /** Bit p: plane p's carrier is watched (no_carrier_watch); 0 when watching
   *  is off, when netlink could not be used, or when every plane is on a
   *  loopback interface. */
  uint64_t carrier_watched_mask;
  /* Why the retransmissions were sent, over the QPs that exist now: */
  uint64_t losses_rule;       /**< packets declared lost by the SACK loss rule */
  uint64_t losses_timeout;    /**< packets declared lost by ACK timeouts */
  uint64_t tail_probes;       /**< newest packets resent after a silent tail */
  uint64_t spurious_losses;   /**< losses later proven spurious (SACKed after all) */
  uint64_t rx_duplicates;     /**< data packets received twice (a peer's unneeded retransmissions) */
  uint64_t tx_uring_submits;  /**< batches sent with one io_uring submission (no_io_uring) */
  /** Late acknowledgements: a SACK, NACK or ACK about packets already
   *  acknowledged, overtaken by a newer one (reordering across paths, a
   *  duplicate). Normal and harmless, so not drops: the newer feedback
   *  already said what they say (a late SACK's receive counter is still
   *  credited to the congestion window). */
  uint64_t rx_stale_acks;
  uint64_t tx_paced;          /**< times a plane was held back by pacing (link_rate_bps) */
  /** Secure QPs (mrc_soft_set_qp_secure): packets refused before any state
   *  changed because their tag did not verify (forged, altered, injected),
   *  they lacked a SECETH a secure QP requires (or carried one to a plain
   *  QP), or named another key id. Also in rx_dropped. */
  uint64_t rx_auth_failures;
  /** Secure QPs: packets refused as replays (a transmission counter already
   *  received or below the replay window). Also in rx_dropped. */
  uint64_t rx_replays;
  /** Packets the host's own egress queue (the plane interface's qdisc)
   *  dropped, reported by the kernel as ENOBUFS: resent at once as local
   *  congestion, like tx_eagain's, never blamed on a path. */
  uint64_t tx_queue_drops;
  /** ICMP errors (port, host or network unreachable) about packets sent,
   *  read from the sending sockets' error queues; the send each one failed
   *  was made again. */
  uint64_t tx_icmp_errors;
  /** Data packets this host refused to send (tx_eagain, tx_queue_drops) and
   *  resent, over the QPs that exist now: part of retransmissions, never
   *  counted against an EV. */
  uint64_t losses_local;
};
/** Fills *stats. EINVAL for NULL. */
int mrc_soft_query_stats(struct ibv_context *dev, struct mrc_soft_stats *stats);

/** A software device's limits beyond mrc_device_attr's. */
struct mrc_soft_device_limits {
  uint32_t max_qp;          /**< QPs per device */
  uint32_t max_qp_wr;       /**< send or receive WRs per QP */
  uint32_t max_sge;         /**< gather elements per send WR */
  uint32_t max_inline_data; /**< inline bytes per send WR */
  uint32_t max_cqe;         /**< completions per CQ */
  uint32_t max_msg_size;    /**< bytes per WRITE */
  uint32_t num_planes;      /**< ports (planes) of the device */
};
/** Fills *limits. EINVAL for NULL or a context that is not a software device. */
int mrc_soft_query_limits(struct ibv_context *dev, struct mrc_soft_device_limits *limits);

/**
 * Packets QP `qp` has sent per plane: packets[p] (0-based plane p, for
 * p < num_planes) = the sum over the QP's current EVs on plane p of the
 * packets each sent (new packets and retransmissions, data and probes; not
 * ACKs a responder sends). Counts of an EV that leaves the QP's set (EV
 * replaced by the controller) are no longer included, so a total may go
 * down; a QP before INIT reports zeros. Planes beyond the device's are
 * filled with 0. Returns the device's number of planes (>= 1), or -EINVAL
 * for a NULL argument or num_planes < 1.
 */
struct mrc_qp;
int mrc_soft_query_qp_plane_packets(struct mrc_qp *qp, uint64_t *packets, int num_planes);

/**
 * One QP's transport counters as a requester sees them (an OpenMRC
 * extension; the counters only grow while the QP exists).
 */
struct mrc_soft_qp_stats {
  uint64_t data_packets_sent; /**< first transmissions of data packets */
  uint64_t retransmissions;   /**< data packets sent again */
  /** Payload bytes of data packets the peer acknowledged, each packet once
   *  (selectively or cumulatively): the bytes the responder has placed, as
   *  the requester learns them, without waiting for a whole message. */
  uint64_t bytes_delivered;
  uint64_t bytes_completed;   /**< payload bytes of completed WRITEs */
  uint64_t losses_rule;       /**< packets declared lost by the SACK loss rule */
  uint64_t losses_timeout;    /**< packets declared lost by the ACK timeout */
  uint64_t spurious_losses;   /**< losses later proved wrong (the packet arrived) */
  uint64_t ev_suspected;      /**< EVs taken out of service on a loss, pending a confirming probe */
  uint64_t ev_retired;        /**< EVs that went ASSUMED_BAD (a probe confirmed the loss, or a timeout) */
  uint64_t ev_resurrected;    /**< ASSUMED_BAD EVs put back after answered probes */
};
/**
 * Fills *stats with QP `qp`'s counters. Returns 0, or -EINVAL for a NULL
 * argument or a QP that is not a software device's (or no longer exists).
 */
int mrc_soft_query_qp_stats(struct mrc_qp *qp, struct mrc_soft_qp_stats *stats);

/** What a secure QP protects (an OpenMRC extension; docs/security.md). */
enum mrc_soft_secure_mode {
  MRC_SOFT_SECURE_OFF = 0,       /**< plain MRC */
  /** Every packet carries an AES-GCM tag (GMAC) over its headers and
   *  payload; the payload travels in clear. */
  MRC_SOFT_SECURE_INTEGRITY = 1,
  /** Every packet carries an AES-GCM tag and its payload is encrypted. */
  MRC_SOFT_SECURE_ENCRYPT = 2,
};

/** One direction's key. */
struct mrc_soft_secure_key {
  uint8_t key[32];   /**< the AES key: its first key_len bytes */
  uint32_t key_len;  /**< 16 (AES-128-GCM) or 32 (AES-256-GCM) */
  uint32_t salt;     /**< the first 32 bits of every nonce under this key */
  uint8_t key_id;    /**< carried in each packet; a packet with another id is refused */
};

struct mrc_soft_qp_secure {
  enum mrc_soft_secure_mode mode;
  /** Seals what this QP sends: the peer QP's `recv`. */
  struct mrc_soft_secure_key send;
  /** Opens what the peer QP sends: the peer QP's `send`. */
  struct mrc_soft_secure_key recv;
};

/**
 * Makes `qp` a secure QP (an OpenMRC extension, OCP's API has none): from
 * its transition to RTR every packet it sends carries a SECETH and an
 * AES-GCM tag (payload encrypted too with MRC_SOFT_SECURE_ENCRYPT), and
 * every packet it receives must carry a valid tag under `recv`, a key id
 * of `recv.key_id` and a transmission counter not seen before: any other
 * is dropped before it changes anything and counted (mrc_soft_stats
 * rx_auth_failures, rx_replays).
 *
 * Call it while the QP is in RESET or INIT; the keys are copied, held
 * until the QP moves to RTR (mrc_modify_qp), then erased here and kept by
 * the device only. MRC_SOFT_SECURE_OFF withdraws keys given before RTR.
 * Moving the QP to RESET forgets them: give keys again (new ones) before
 * the next RTR. Both QPs of a connection must be given matching keys (one's
 * send is the other's recv) and the same mode: a secure QP and a plain one
 * drop each other's packets, and the requester ends with
 * MRC_WC_RETRY_EXC_ERR.
 *
 * Keys come from the application or its controller, over a channel it
 * trusts; never reuse a key for another QP or connection (each QP's packet
 * counter restarts at 0 with its keys, and GCM must never see a nonce
 * twice under one key). The send and receive keys must differ.
 *
 * Returns 0, or: EINVAL for a NULL argument, a QP that is not a software
 * device's or is past INIT, an unknown mode, a key_len other than 16 or
 * 32, or the same key and salt for both directions; EOPNOTSUPP on a device
 * whose transport is MRC_SOFT_TRANSPORT_ROCE_RC (the RoCEv2 baseline has no
 * secure mode).
 */
int mrc_soft_set_qp_secure(struct mrc_qp *qp, const struct mrc_soft_qp_secure *secure);

#ifdef __cplusplus
}
#endif

#endif /* MRC_MRC_SOFT_H */
