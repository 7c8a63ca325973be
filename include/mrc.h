// SPDX-License-Identifier: BSD-2-Clause
/*
 * mrc.h -- the OCP MRC application API (reference section 6.2), as
 * OpenMRC's software device implements it.
 *
 * The API is modelled on ibverbs: verbs types (ibv_send_wr, ibv_recv_wr,
 * ibv_wc, ibv_qp_attr, ibv_qp_cap, ibv_pd, ibv_mr) come from rdma-core's
 * <infiniband/verbs.h>, so code written for the OCP API compiles. The
 * device is one of OpenMRC's software devices, found and opened as OCP
 * expects through libibverbs (ibv_get_device_list, ibv_open_device; the
 * library serves those calls and ibv_alloc_pd / ibv_reg_mr for its
 * devices, docs/using-the-library.md), or opened by <openmrc/mrc_soft.h>;
 * everything here then works on that ibv_context.
 *
 * Conventions (ibverbs):
 *  - calls returning int return 0 on success and an errno value on failure
 *    (mrc_poll_cq returns a count, or -1 with errno);
 *  - calls returning a pointer return NULL and set errno on failure;
 *  - posting calls set *bad_wr to the first work request not posted;
 *  - errors on the data path (remote access, retry exhausted, flush) are
 *    completion statuses in ibv_wc, not return codes.
 *
 * Threading: every call may be made from any thread. A QP's post calls may
 * run concurrently with polling its CQs; concurrent posts to one QP are
 * serialized inside.
 *
 * Only RDMA WRITE and RDMA WRITE WITH IMMEDIATE exist in MRC (reference
 * 3.1); QPs are always reliable (IBV_QPT_RC semantics).
 */
#ifndef MRC_MRC_H
#define MRC_MRC_H

#include <infiniband/verbs.h>
#include <stdint.h>

/* MRC_API_VER(), MRC_API_VER_LATEST, MRC_API_CURRENT_VERSION, ... */
#include "mrc_api_ver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ versions */

/** MRC wire protocol versions: a device advertises the bitmap of those it
 *  speaks (mrc_device_attr.mrc_protocol_version); a QP asks for one bit, or
 *  MRC_PROTOCOL_VERSION_0 for the provider's default
 *  (mrc_qp_init_attr.protocol_version). */
enum mrc_protocol_version {
  MRC_PROTOCOL_VERSION_0 = 0,
  MRC_PROTOCOL_VERSION_1 = 1 << 0,
};

struct mrc_version {
  uint32_t current;        /**< newest application API version supported */
  uint32_t oldest;         /**< oldest application API version supported */
  uint32_t vendor;         /**< vendor API version (OpenMRC: 1.0.0) */
  uint32_t oldest_vendor;
};

/** Fills *ver. May be called before any device is opened. EINVAL if ver is NULL. */
int mrc_query_version(struct mrc_version *ver);

/* ------------------------------------------------------------------ device */

/** Device capability bits (mrc_device_attr.cap). */
enum mrc_device_cap {
  MRC_DEVICE_CAP_TRIM_NACK = 1u << 0,   /**< generates trim NACKs */
  MRC_DEVICE_CAP_DYNAMIC_MPR = 1u << 1, /**< supports dynamic MPR */
  MRC_DEVICE_CAP_SVC_TIME = 1u << 2,    /**< reports responder service time */
};

/** A device's MRC capabilities (mrc_query_device). The software device's
 *  other limits (QPs, WRs, SGEs, CQEs, planes) are in
 *  mrc_soft_query_limits (<openmrc/mrc_soft.h>). */
struct mrc_device_attr {
  uint32_t mrc_protocol_version; /**< bitmap of enum mrc_protocol_version bits */
  struct {
    uint16_t max_wimm;      /**< largest max_wimm a QP may request */
    uint16_t max_wimm_dest; /**< largest max_wimm_dest */
  } wimm_attr;
  struct {
    uint8_t max_mpr;        /**< largest MPR, in 128-PSN units */
    uint8_t mpr_resolution; /**< MPR granularity, in 128-PSN units */
    uint8_t dynamic_mpr;    /**< non-zero if dynamic MPR is supported */
  } mpr_attr;
  struct {
    uint32_t max_qp_hint; /**< QP hints per context */
  } qp_attr;
  uint32_t cap; /**< enum mrc_device_cap bits */
};

struct mrc_context;

/**
 * Reports the device's MRC capabilities; *supported = 0 if `ibv_ctx` is not
 * an MRC device (then *attr is untouched). Returns 0, or -1 with errno
 * EINVAL for a NULL argument.
 */
int mrc_query_device(struct ibv_context *ibv_ctx, struct mrc_device_attr *attr, int *supported);
/** As mrc_query_device, for the API version `mrc_ctx` was created with
 *  (an OpenMRC addition); -1 with errno EINVAL also when mrc_ctx is not a
 *  context on ibv_ctx. */
int mrc_query_device_ex(struct ibv_context *ibv_ctx, struct mrc_context *mrc_ctx, struct mrc_device_attr *attr,
                        int *supported);

/* ------------------------------------------------------------------ context */

struct mrc_context_attr {
  /** The API version the program was written for: MRC_API_VER_USED (or
   *  MRC_API_VER_LATEST, the newest the library has), between
   *  MRC_API_LAST_SUPPORTED_VERSION and MRC_API_CURRENT_VERSION. */
  uint32_t mrc_api_version_used;
};

/**
 * Creates a library instance on a device: it owns the CQs, QPs, channels and
 * hints created through it (several contexts may share a device and a
 * process). `attr` may be NULL (the current API version); it is only read.
 * `ibv_ctx` is a software device's context, from ibv_open_device or
 * mrc_soft_open_device. NULL with errno: EINVAL (not an MRC device, or an
 * API version this library does not serve), ENOMEM.
 */
struct mrc_context *mrc_create_context(struct ibv_context *ibv_ctx, struct mrc_context_attr *attr);
/** Destroys a context: 0, or -1 with errno EBUSY (it still owns QPs, CQs,
 *  channels or hints) or EINVAL. */
int mrc_destroy_context(struct mrc_context *ctx);

/* ------------------------------------------------------------------ completion channels */

struct mrc_comp_channel;

/**
 * A completion channel (ibv_create_comp_channel): CQs armed with
 * mrc_req_notify_cq post an event to it when a completion arrives. Its fd
 * (mrc_get_comp_channel_fd) becomes readable then and works in poll/epoll;
 * mrc_get_cq_event blocks unless the fd was made non-blocking (fcntl).
 * On the software device (unless mrc_soft_device_attr.channel_bulk_bytes_per_ms
 * < 0) the fd also becomes readable when a packet arrives that no engine thread is
 * waiting for: the application is woken by the packet itself and its
 * mrc_get_cq_event processes it, one wake-up instead of two. Such a
 * wake-up can be spurious (the packet completed nothing on this channel's
 * CQs): a non-blocking get then returns EAGAIN, as after any spurious
 * verbs event; poll the CQ and wait again.
 * Stores the channel in *channel and returns 0, or returns -1 with errno
 * EINVAL (bad context, NULL channel), ENOMEM or EMFILE and *channel NULL.
 */
int mrc_create_comp_channel(struct mrc_context *ctx, struct mrc_comp_channel **channel);
/** Stores the channel's file descriptor (owned by the channel) in *fd:
 *  0, or -1 with errno EINVAL for a NULL argument. */
int mrc_get_comp_channel_fd(struct mrc_comp_channel *channel, int *fd);
/** EBUSY while a CQ still uses the channel. */
int mrc_destroy_comp_channel(struct mrc_comp_channel *channel);

/* ------------------------------------------------------------------ CQs */

struct mrc_cq;

/**
 * Creates a CQ holding at least `cqe` completions. `channel` may be NULL (no
 * notifications); `cq_context` is returned by mrc_get_cq_event;
 * `comp_vector` must be 0 or a valid vector (the software device has one).
 * NULL with errno EINVAL (cqe < 1 or above max_cqe, bad comp_vector), ENOMEM.
 * A CQ that overflows loses completions and raises IBV_EVENT_CQ_ERR.
 */
struct mrc_cq *mrc_create_cq(struct mrc_context *ctx, int cqe, void *cq_context, struct mrc_comp_channel *channel,
                             int comp_vector);
/**
 * Destroys a CQ. EBUSY while a QP uses it. Waits until every event obtained
 * with mrc_get_cq_event has been acknowledged (mrc_ack_cq_events), as verbs
 * does: acknowledge before destroying.
 */
int mrc_destroy_cq(struct mrc_cq *cq);
/**
 * Moves up to `num_entries` completions into `wc`; returns how many (0 when
 * none are ready), or -1 with errno EINVAL for bad arguments. Never blocks.
 * wc->opcode is IBV_WC_RDMA_WRITE for send completions and
 * IBV_WC_RECV_RDMA_WITH_IMM (with IBV_WC_WITH_IMM, imm_data in network
 * order) for consumed receives; wc->status is IBV_WC_SUCCESS or the error.
 */
int mrc_poll_cq(struct mrc_cq *cq, int num_entries, struct ibv_wc *wc);
/**
 * Arms the CQ: the next completion added to it posts one event to its
 * channel. `solicited_only` is accepted and treated as 0 (MRC has no
 * solicited events). EINVAL without a channel. Completions already in the
 * CQ do not trigger the event: poll once more after arming (the usual
 * verbs loop), since an event may also be spurious -- the CQ may turn out
 * empty when polled.
 */
int mrc_req_notify_cq(struct mrc_cq *cq, int solicited_only);
/**
 * Waits for the next event on `channel` and returns its CQ and cq_context:
 * 0, or -1 with errno (as ibv_get_cq_event): EAGAIN if the channel fd is
 * non-blocking and no event is pending, EINVAL for a NULL argument. Every
 * event must be acknowledged with mrc_ack_cq_events.
 */
int mrc_get_cq_event(struct mrc_comp_channel *channel, struct mrc_cq **cq, void **cq_context);
/** Acknowledges `nevents` events obtained for `cq`. */
void mrc_ack_cq_events(struct mrc_cq *cq, unsigned int nevents);
/**
 * A readable name for a completion status ("remote access error"), as
 * ibv_wc_status_str gives, without linking libibverbs. Never NULL.
 */
const char *mrc_wc_status_str(enum ibv_wc_status status);

/* ------------------------------------------------------------------ QP hints */

/** Bytes of opaque vendor data in a hint or a QP's attributes. */
#define MRC_MAX_VENDOR_CFG_SIZE 128

/** Which fields of a struct mrc_qp_hint_attr mrc_query_qp_hint and
 *  mrc_modify_qp_hint read or write. */
enum mrc_qp_hint_attr_mask {
  MRC_QP_HINT_NUM_QPS_PER_PEER = 1 << 0,
  MRC_QP_HINT_NUM_SEND_PEERS = 1 << 1,
  MRC_QP_HINT_NUM_REMOTE_RECV_PEERS = 1 << 2,
};
/** Bit 31, vendor_cfg (a macro: ISO C enumerators must fit an int). */
#define MRC_QP_HINT_VENDOR_CFG (1u << 31)

/** A traffic hint for resource sizing (optional; reference 6.2). Given to a
 *  QP on its way to INIT (MRC_QP_HINT in mrc_modify_qp), it also sizes the
 *  QP's first congestion window: NSCC starts at its maximum window divided
 *  by num_remote_recv_peers x num_qps_per_peer (each 1 when not set), the
 *  share of the target this QP will get, instead of at line rate. An
 *  application that knows its incast degree (an all-to-all, a many-to-one
 *  gather) avoids the blind first round trip that overflows the target's
 *  last hop. Read when the QP is given the hint. */
struct mrc_qp_hint_attr {
  int num_qps_per_peer;      /**< QPs of this hint sending to one peer at once; 0 = not given */
  int num_send_peers;        /**< peers the hint's QPs send to at once; 0 = not given */
  int num_remote_recv_peers; /**< remote QPs sending to this QP's target at once (its
                                  incast degree); 0 = not given */
  uint8_t vendor_cfg[MRC_MAX_VENDOR_CFG_SIZE]; /**< no vendor data is defined: all zero */
};

/** What mrc_create_qp_hint reads. */
struct mrc_qp_hint_init_attr {
  struct mrc_qp_hint_attr attr;
};

struct mrc_qp_hint;

/** A hint with the counts of init_attr->attr (each >= 0; 0 = not given).
 *  NULL with errno EINVAL (NULL argument, a negative count, non-zero
 *  vendor_cfg), ENOMEM (max_qp_hint hints in the context). */
struct mrc_qp_hint *mrc_create_qp_hint(struct mrc_context *ctx, struct mrc_qp_hint_init_attr *init_attr);
/** 0, or -1 with errno EBUSY (a QP refers to the hint) or EINVAL (NULL). */
int mrc_destroy_qp_hint(struct mrc_qp_hint *hint);
/** Copies the counts named in `mask` (enum mrc_qp_hint_attr_mask) into
 *  *attr, 0 for one not given; MRC_QP_HINT_VENDOR_CFG copies vendor_cfg.
 *  0, or -1 with errno EINVAL (NULL argument, unknown mask bits). */
int mrc_query_qp_hint(struct mrc_qp_hint *hint, struct mrc_qp_hint_attr *attr, int mask);
/** Sets the counts named in `mask` from *attr (0 = no longer given). QPs
 *  given the hint later see the new counts. 0, or -1 with errno EINVAL
 *  (NULL argument, unknown mask bits, a negative count, non-zero
 *  vendor_cfg under MRC_QP_HINT_VENDOR_CFG). */
int mrc_modify_qp_hint(struct mrc_qp_hint *hint, struct mrc_qp_hint_attr *attr, int mask);

/* ------------------------------------------------------------------ QPs */

struct mrc_qp_init_attr {
  void *qp_context;
  struct mrc_cq *send_cq;
  struct mrc_cq *recv_cq;
  /** Requested sizes: max_send_wr, max_recv_wr (>= 1, <= max_qp_wr),
   *  max_send_sge (<= max_sge), max_recv_sge (ignored: receives carry no
   *  data), max_inline_data (<= device max). On return, the granted sizes. */
  struct ibv_qp_cap cap;
  int sq_sig_all;
  struct ibv_pd *pd;          /**< from ibv_alloc_pd (or mrc_soft_alloc_pd) on the device */
  /** IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM; 0 = both. */
  uint64_t send_ops_flags;
  enum mrc_protocol_version protocol_version; /**< one version bit, or MRC_PROTOCOL_VERSION_0 = default */
};

/** Attribute mask of struct mrc_qp_attr (mrc_modify_qp / mrc_query_qp). */
enum mrc_qp_attr_mask {
  MRC_QP_MAX_WIMM = 1 << 0,
  MRC_QP_MAX_WIMM_DEST = 1 << 1,
  MRC_QP_MPR = 1 << 2,
  MRC_QP_MPR_DEST = 1 << 3,
  /** mpr.dynamic_mpr. OCP's newest mrc.h names this bit MRC_QP_DYNAMIC_MPR,
   *  the name it also gives the enum mrc_qp_cap bit, which C refuses; the
   *  bit keeps its earlier revision's name. Refused with EINVAL: enable
   *  dynamic MPR with MRC_QP_CAP and MRC_QP_DYNAMIC_MPR in mrc_qp_attr.cap. */
  MRC_QP_DYNAMIC_MPR_DEST = 1 << 4,
  MRC_QP_TIMEOUT = 1 << 5,
  MRC_EV_PROFILE_ID = 1 << 6,
  MRC_CC_PROFILE_ID = 1 << 7,
  MRC_QP_HINT = 1 << 8,
  MRC_QP_RETRY_CNT = 1 << 9,
  MRC_QP_CAP = 1 << 10,
};
/** Bit 31 (a macro: ISO C enumerators must fit an int). */
#define MRC_QP_VENDOR_CFG (1u << 31)

/**
 * QP capability bits (mrc_qp_attr.cap), set with MRC_QP_CAP on the way to
 * RTR or RTS; MRC_QP_CAP replaces the whole set. A QP that is never given
 * MRC_QP_CAP has MRC_QP_TRIM_NACK_DEST (when the device advertises
 * MRC_DEVICE_CAP_TRIM_NACK) and nothing else. A bit the device does not
 * advertise, or an unknown one, is refused with EINVAL.
 */
enum mrc_qp_cap {
  /** Trim NACKs on: this QP's responder answers a trimmed packet with a
   *  NACK, and its requester marks its packets trimmable (the peer's
   *  responder must support them too). Without it, trimmed packets are
   *  recovered as losses. */
  MRC_QP_TRIM_NACK_DEST = 1u << 0,
  /** Dynamic MPR on this QP, requester and responder; effective only when
   *  both peers enable it (MRC_DEVICE_CAP_DYNAMIC_MPR). */
  MRC_QP_DYNAMIC_MPR = 1u << 1,
  /** OpenMRC: the peer's responder reports no service time. Accepted and
   *  kept (mrc_query_qp); it changes nothing on the software device, whose
   *  responders always report it. */
  MRC_QP_CAP_SVC_TIME_DEST_UNSUPPORTED = 1u << 2,
};

/** Retry exponent meaning "retry forever". */
#define MRC_QP_RETRY_EXP_INFINITE 25

struct mrc_qp_attr {
  struct {
    uint8_t mpr;       /**< requester window, 128-PSN units, 1..max_mpr */
    uint8_t mpr_dest;  /**< responder window offered, 128-PSN units */
    uint8_t dynamic_mpr; /**< MRC_QP_DYNAMIC_MPR_DEST (refused; see there) */
  } mpr;
  struct {
    uint16_t max_wimm;       /**< WriteIMMs in flight (requester) */
    uint16_t max_wimm_dest;  /**< WriteIMMs the responder can stash */
  } wimm;
  uint8_t timeout;           /**< ACK timeout 1.024 us * 2^timeout, <= 24 */
  struct {
    uint64_t ev_profile_id;
    uint64_t cc_profile_id;
  } profile;
  struct {
    uint8_t linear_cnt;      /**< <= 7 */
    uint8_t exp_cnt;         /**< <= 25; 25 = MRC_QP_RETRY_EXP_INFINITE */
  } retry;
  struct mrc_qp_hint *qp_hint; /**< NULL = none */
  uint32_t cap;              /**< enum mrc_qp_cap bits */
  uint8_t vendor_cfg[128];
};

struct mrc_qp;

/**
 * Creates a QP in RESET. NULL with errno: EINVAL (NULL CQ or PD, objects of
 * another context, cap out of range, unsupported send_ops_flags or
 * protocol_version), ENOMEM (max_qp reached).
 */
struct mrc_qp *mrc_create_qp(struct mrc_context *ctx, struct mrc_qp_init_attr *init_attr);
/**
 * Destroys a QP in any state. Work still outstanding is flushed first: each
 * posted send and receive WR completes with IBV_WC_WR_FLUSH_ERR on its CQ.
 */
int mrc_destroy_qp(struct mrc_qp *qp);
/** Stores in *qpn the QP number a peer addresses (IBV_QP_DEST_QPN on its
 *  side). 0, or -1 with errno EINVAL for a NULL argument. */
int mrc_get_qpn(struct mrc_qp *qp, uint32_t *qpn);
/** The qp_context given at creation. */
void *mrc_get_qp_context(struct mrc_qp *qp);

/**
 * Moves the QP through RESET -> INIT -> RTR -> RTS (-> ERROR, -> RESET),
 * with ibverbs attributes in `ibv_attr`/`ibv_mask` and MRC ones in
 * `mrc_attr`/`mrc_mask` (either attr may be NULL when its mask is 0).
 * The new state comes from IBV_QP_STATE; IBV_QP_CUR_STATE asserts the
 * current one. Per transition (MRC attributes not named take the default
 * shown, so a program written for RC, as OCP's benchmark is, works as is):
 *   RESET->INIT: IBV_QP_STATE; may add MRC_EV_PROFILE_ID, MRC_CC_PROFILE_ID
 *                (default 0, the device's profiles), MRC_QP_HINT
 *   INIT->RTR:   IBV_QP_AV (ah_attr.grh.dgid = the peer's GID), IBV_QP_DEST_QPN,
 *                IBV_QP_RQ_PSN, IBV_QP_PATH_MTU; MRC_QP_MAX_WIMM_DEST (128),
 *                MRC_QP_MPR_DEST (8); may add MRC_QP_CAP, the profile ids
 *   RTR->RTS:    IBV_QP_SQ_PSN; MRC_QP_MAX_WIMM (128), MRC_QP_MPR (8),
 *                MRC_QP_RETRY_CNT (linear 7, exponential 25 = forever),
 *                MRC_QP_TIMEOUT (8: 262 us); may add MRC_QP_CAP
 *   RTS->RTS:    MRC_QP_TIMEOUT, MRC_QP_RETRY_CNT
 *   any->ERROR, any->RESET: IBV_QP_STATE only.
 * The ibverbs attributes an RC program sets are accepted: IBV_QP_TIMEOUT
 * (on the way to RTS, when MRC_QP_TIMEOUT is not given) is InfiniBand's
 * 4.096 us * 2^timeout and becomes the same MRC timeout (timeout + 2, at
 * most 24; 0 takes the default); IBV_QP_RETRY_CNT likewise sets
 * retry.linear_cnt (<= 7; exp_cnt keeps its default); IBV_QP_PORT must name
 * one of the device's ports (1..planes) and changes nothing, as every QP
 * uses every port; IBV_QP_ACCESS_FLAGS, IBV_QP_PKEY_INDEX,
 * IBV_QP_RNR_RETRY, IBV_QP_MIN_RNR_TIMER, IBV_QP_MAX_QP_RD_ATOMIC and
 * IBV_QP_MAX_DEST_RD_ATOMIC are ignored (MRC has no RNR, reads or atomics).
 * Errors are returned as ibv_modify_qp's: 0, or a positive errno. EINVAL
 * for IBV_QP_ALT_PATH, IBV_QP_PATH_MIG_STATE, MRC_QP_DYNAMIC_MPR_DEST,
 * MRC_QP_VENDOR_CFG, an attribute outside its transition, an illegal
 * transition, a missing ibverbs attribute, an unknown peer GID (see the
 * soft device's peers) or a value out of range. Nothing changes on error.
 */
int mrc_modify_qp(struct mrc_qp *qp, struct ibv_qp_attr *ibv_attr, int ibv_mask, struct mrc_qp_attr *mrc_attr,
                  int mrc_mask);
/**
 * Reads the QP's attributes in any state: the ibverbs ones named in
 * ibv_mask into *ibv_attr (qp_state, cur_qp_state, path_mtu, dest_qp_num,
 * rq_psn, sq_psn, ah_attr, cap), the MRC ones named in mrc_mask into
 * *mrc_attr, and the creation attributes into *init_attr (each pointer may
 * be NULL when not wanted). EINVAL for a NULL qp.
 */
int mrc_query_qp(struct mrc_qp *qp, struct ibv_qp_attr *ibv_attr, int ibv_mask, struct mrc_qp_attr *mrc_attr,
                 int mrc_mask, struct mrc_qp_init_attr *init_attr);

/**
 * Posts a chain of work requests (wr->next). Only IBV_WR_RDMA_WRITE and
 * IBV_WR_RDMA_WRITE_WITH_IMM (imm_data in network order). send_flags:
 * IBV_SEND_SIGNALED, IBV_SEND_INLINE (the data is copied now: the buffers
 * need no memory region and may be reused on return); IBV_SEND_FENCE and
 * IBV_SEND_SOLICITED are accepted and have no effect (MRC WRITEs need no
 * fence). Returns 0, or an errno with *bad_wr at the first WR not posted:
 * EINVAL (unsupported opcode or flag, too many sge, inline too long, QP not
 * in RTS or ERROR), ENOMEM (send queue full: poll completions first).
 * A WR whose lkey or range is invalid completes with IBV_WC_LOC_PROT_ERR and
 * moves the QP to ERROR; posted to a QP in ERROR, a WR completes with
 * IBV_WC_WR_FLUSH_ERR.
 */
int mrc_post_send(struct mrc_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
/**
 * Posts receive WQEs, consumed in order by incoming WRITE_WITH_IMMs (their
 * sg_list may be empty: the data lands at the WRITE's address). EINVAL in
 * RESET, ENOMEM when the receive queue is full; *bad_wr as for post_send.
 */
int mrc_post_recv(struct mrc_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* ------------------------------------------------------------------ async events */

struct mrc_async_event {
  union {
    struct mrc_cq *cq;  /**< IBV_EVENT_CQ_ERR */
    struct mrc_qp *qp;  /**< IBV_EVENT_QP_FATAL, IBV_EVENT_QP_ACCESS_ERR */
    int port_num;       /**< IBV_EVENT_PORT_ACTIVE / IBV_EVENT_PORT_ERR (1-based) */
  } element;
  enum ibv_event_type event_type;
};

/**
 * Waits for the next asynchronous event of the context: a QP that entered
 * ERROR (IBV_EVENT_QP_FATAL, or IBV_EVENT_QP_ACCESS_ERR for a remote access
 * violation), a CQ overflow (IBV_EVENT_CQ_ERR), a port going down or up.
 * 0, or -1 with errno (as ibv_get_async_event): EAGAIN if the context's
 * async fd is non-blocking and nothing is pending, EINVAL for a NULL
 * argument. Every event must be acknowledged with mrc_ack_async_event; a QP or CQ is
 * not destroyed while events naming it are unacknowledged.
 */
int mrc_get_async_event(struct mrc_context *ctx, struct mrc_async_event *event);
/** The fd that becomes readable when an async event is pending (epoll-able). */
int mrc_get_async_fd(struct mrc_context *ctx);
/** Acknowledges one event obtained with mrc_get_async_event. */
void mrc_ack_async_event(struct mrc_async_event *event);

#ifdef __cplusplus
}
#endif

#endif /* MRC_MRC_H */
