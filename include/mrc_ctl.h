// SPDX-License-Identifier: BSD-2-Clause
/*
 * mrc_ctl.h -- the OCP MRC controller API (reference section 6.3): EV
 * format, EV and CC profiles, EV events, endpoint operations and ports.
 * One privileged controller per node configures what applications' QPs
 * use (they name profiles by id, learned out of band).
 *
 * Status in OpenMRC (software device): every call works --
 * mrc_ctl_query_version, mrc_ctl_query_device(_ex), the ports, the EV
 * format, EV and CC profile calls (state machines, field and EV
 * operations, queries), the EV event CQ and the endpoint operations (EV
 * probes and port-status updates); the limits of the software device are
 * given with each call.
 *
 * Profiles. Ids are 1..16 for each kind (ev_max_fmt_profiles etc.); id 0
 * names the device's default profile, which a QP uses when it names none,
 * and is not managed here (EINVAL). Every profile follows INIT -> OFFLINE
 * -> ONLINE -> OFFLINE -> INIT. A modify call applies the attributes its
 * mask names; a transition's requirements may be met in the same call or
 * an earlier one. Errors, one rule each:
 *   EINVAL  unknown mask bits (incl. the VENDOR bits: no vendor attributes),
 *           a value out of range, no such transition (INIT -> ONLINE,
 *           ONLINE -> INIT), a CUR_STATE that is not current, unmet
 *           requirements, EV_OP together with EV_FIELDS_OP, NULL arrays;
 *   EPERM   an attribute or operation the current state does not allow
 *           (anything but going OFFLINE in INIT; MODE, FMT_ID, COUNT,
 *           MIN_ACTIVE, EVENT_MASK, REPLACE_EV, MODIFY_FIELDS, ALGORITHM,
 *           CONFIG while ONLINE: no *_MODIFY_ONLINE feature is offered);
 *   EBUSY   a format profile leaving ONLINE while an ONLINE EV profile uses
 *           it; an EV or CC profile leaving ONLINE while a QP holds it (a
 *           QP holds the profiles it names from INIT until RESET/destroy);
 *   E2BIG   a query array too small (its count is set to the count
 *           needed); a field set wider than the mode or ev_max_width, more
 *           than 16 fields; an EV count above ev_max_count_profile or the
 *           free EVs (ev_free_count);
 *   ENOENT  an EV operation names an EV the array does not hold.
 * The software device puts the EV in the UDP source port and sends each EV
 * from a socket bound at open (source port ev_port_base + (port - 1) x
 * evs_per_plane + i): formats are UDP or STEV of at most 16 bits, EV modes
 * AUTO or EXPLICIT (a generated array would have no sockets), and an EXPLICIT profile goes
 * ONLINE only if each EV's expanded value is one of its port's source
 * ports (else EINVAL). ONLINE installs the profile for QPs created after.
 * Returns: 0 or a positive errno value, as OCP's header gives them, but the
 * EV format profile calls, which return a negative one (-EINVAL) as OCP's
 * do, and mrc_ctl_poll_ev_event (a count, or a negative errno).
 */
#ifndef MRC_MRC_CTL_H
#define MRC_MRC_CTL_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include <mrc.h>
#include <mrc_ctl_api_ver.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Controller API versions a device supports (mrc_ctl_attr.mrc_ctl_version bits). */
enum mrc_ctl_version {
  MRC_CTL_VERSION_0 = 0,       /**< no MRC controller */
  MRC_CTL_VERSION_1 = 1 << 0,
};

/** Optional controller features (opt_attr bits), OCP's values. The software
 *  device offers EV_EVENT, EV_EVENT_PRECISE_DROP_CNT, EV_EXPLICIT, EV_PROBE
 *  and, on a MRC_SOFT_EV_SRV6 device, SRV6_GENERATED. */
enum mrc_ctl_attr_opt {
  MRC_CTL_OPT_CAP_EV_PROFILE_MODIFY_ONLINE = 1 << 0,
  MRC_CTL_OPT_CAP_CC_PROFILE_MODIFY_ONLINE = 1 << 1,
  MRC_CTL_OPT_CAP_EV_EVENT = 1 << 2,
  MRC_CTL_OPT_CAP_EV_EXPLICIT = 1 << 3,
  MRC_CTL_OPT_CAP_EV_GENERATED = 1 << 4,
  MRC_CTL_OPT_CAP_EV_EXPLICIT_RANGE = 1 << 5,
  MRC_CTL_OPT_CAP_EV_PROBE = 1 << 6,
  MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT = 1 << 7,
  MRC_CTL_OPT_CAP_SRV6_EXPLICIT = 1 << 8,
  MRC_CTL_OPT_CAP_SRV6_GENERATED = 1 << 9,
  MRC_CTL_OPT_CAP_SRV6_COMP_EXPLICIT = 1 << 10,
  MRC_CTL_OPT_CAP_SRV6_COMP_GENERATED = 1 << 11,
  MRC_CTL_OPT_CAP_SRV6_SRH = 1 << 12,
};

/** EV format modes (fmt profile): OpenMRC's, one bit each (OCP's revision
 *  names GENERATED 1 and SRV6_GENERATED 2; see docs/ocp-compatibility.md). */
enum mrc_ctl_ev_fmt_mode { MRC_CTL_EV_FMT_STEV = 1u << 0, MRC_CTL_EV_FMT_SRV6 = 1u << 1, MRC_CTL_EV_FMT_UDP = 1u << 2 };
/** EV modes (EV profile), OCP's values. The software device takes AUTO
 *  (the device's own EVs), EXPLICIT (an array the controller fills) and,
 *  on a MRC_SOFT_EV_SRV6 device, SRV6_GENERATED (an array it generates
 *  from the fields of an SRv6 format profile); the others are EINVAL. */
enum mrc_ctl_ev_mode {
  MRC_CTL_EV_MODE_AUTO = 0,
  MRC_CTL_EV_MODE_EXPLICIT = 1,
  MRC_CTL_EV_MODE_GENERATED = 2,
  MRC_CTL_EV_MODE_SRV6_EXPLICIT = 3,
  MRC_CTL_EV_MODE_SRV6_GENERATED = 4,
  MRC_CTL_EV_MODE_SRV6_COMP_EXPLICIT = 5,
  MRC_CTL_EV_MODE_SRV6_COMP_GENERATED = 6,
};

/** What the controller may configure, OCP's layout (mrc_ctl_query_device). */
struct mrc_ctl_attr {
  uint32_t mrc_ctl_version;         /**< enum mrc_ctl_version bits */
  struct {
    uint32_t ev_max_fmt_profiles;
    uint32_t ev_max_profiles;
    uint32_t ev_max_count;          /**< EVs over all profiles */
    uint32_t ev_free_count;
    uint32_t ev_max_count_profile;
    uint32_t ev_count_align;
    uint32_t ev_max_bits;           /**< valid consecutive bits of an EV */
  } ev;
  struct {
    uint32_t cc_max_profiles;
    const char **cc_algorithms;     /**< NULL-terminated ("uet-1.0-nscc"); the library's, not to be freed */
  } cc;
  uint64_t port_mask;               /**< bit N = port N (1-based, as ibv_query_port) */
  uint32_t opt_attr;                /**< enum mrc_ctl_attr_opt bits */
};

/** The same and more (OpenMRC's, mrc_ctl_query_device_ex). */
struct mrc_ctl_device_attr {
  uint32_t protocol_versions;
  struct {
    uint32_t ev_max_fmt_profiles;
    uint32_t ev_max_profiles;
    uint32_t ev_max_count;          /**< EVs over all profiles */
    uint32_t ev_free_count;
    uint32_t ev_max_count_profile;
    uint32_t ev_count_align;
    uint32_t ev_max_width;          /**< valid consecutive bits of an EV */
    uint32_t ev_fmt_mode_mask;      /**< enum mrc_ctl_ev_fmt_mode bits */
    uint32_t ev_mode_mask;          /**< bit 1 << m for each enum mrc_ctl_ev_mode m the device takes */
    uint32_t ev_op_max_entries;     /**< 0 = no cap */
  } ev;
  struct {
    uint32_t cc_max_profiles;
    const char *const *algorithms;  /**< NULL-terminated, e.g. "uet-1.0-nscc" */
  } cc;
  uint32_t phy_port_mask;           /**< bit N = port N (1-based) */
  uint32_t opt_attr;                /**< enum mrc_ctl_attr_opt bits */
};

/** The controller API versions this library serves (OpenMRC; named apart
 *  from OCP's enum mrc_ctl_version, the device's protocol bits). */
struct mrc_ctl_api_version {
  uint32_t current;
  uint32_t oldest;
  uint32_t vendor;
  uint32_t oldest_vendor;
};

/** Versions of the controller API. EINVAL for NULL. */
int mrc_ctl_query_version(struct mrc_ctl_api_version *ver);
/** Device limits and features for the controller: 0, or an errno as
 *  ibv_query_device (EINVAL for NULL arguments or a device that is not an
 *  MRC software device). */
int mrc_ctl_query_device(struct ibv_context *ibv_ctx, struct mrc_ctl_attr *attr);
/** OpenMRC's fuller report (format and EV modes as masks, the EV operation
 *  cap), for a context's API version; *supported = 0 if not an MRC device. */
int mrc_ctl_query_device_ex(struct ibv_context *ibv_ctx, struct mrc_context *ctx, struct mrc_ctl_device_attr *attr,
                            int *supported);

/* ------------------------------------------------------------------ ports (6.3.2) */

enum mrc_ctl_port_admin_state { MRC_CTL_PORT_ADMIN_DISABLED = 0, MRC_CTL_PORT_ADMIN_ENABLED = 1 };
enum mrc_ctl_port_attr_mask { MRC_CTL_PORT_ADMIN_STATE = 1u << 0 };
struct mrc_ctl_port_attr {
  enum mrc_ctl_port_admin_state admin_state;
  enum ibv_port_state state;        /**< query only: IBV_PORT_ACTIVE or IBV_PORT_DOWN */
};
/** Port `port_num` (1-based; port N is plane N-1 of the software device).
 *  Fills admin_state and state: an enabled port reads IBV_PORT_ACTIVE, a
 *  disabled one IBV_PORT_DOWN; an enabled port whose interface has lost its
 *  carrier reads IBV_PORT_DOWN too (mrc_soft_device_attr.no_carrier_watch).
 *  EINVAL for a bad port or NULL. */
int mrc_ctl_query_port(struct mrc_context *ctx, uint8_t port_num, struct mrc_ctl_port_attr *attr);
/** With MRC_CTL_PORT_ADMIN_STATE in `mask`, enables or disables the port
 *  (`state` is ignored). Disabling: the port sends nothing and drops what
 *  arrives, its EVs leave service on every QP of the device at once (QPs
 *  keep running on the other ports; a QP with no port left stalls and
 *  reaches its retry limit), every application context gets an async
 *  event for each port (IBV_EVENT_PORT_ERR for the disabled ones,
 *  IBV_EVENT_PORT_ACTIVE for the others), and each peer with a connected
 *  QP is told by
 *  a port-status update (sent on an enabled port, repeated a few times), so
 *  it stops sending into that plane. Enabling reverses all of it, once the
 *  port's carrier is up (a port whose interface lost its link stays out of
 *  service until the link returns). Setting the current state again does nothing.
 *  A mask of 0 does nothing. EINVAL for a bad port, NULL, other mask bits
 *  or an admin_state other than DISABLED / ENABLED. */
int mrc_ctl_modify_port(struct mrc_context *ctx, uint8_t port_num, struct mrc_ctl_port_attr *attr, uint32_t mask);

/* ------------------------------------------------------------------ profiles (6.3.3-6.3.5) */

enum mrc_ctl_profile_state {
  MRC_CTL_PROFILE_INIT = 0,
  MRC_CTL_PROFILE_OFFLINE = 1,
  MRC_CTL_PROFILE_ONLINE = 2,
};

/** One field of an EV format or EV profile. */
struct mrc_ctl_ev_field {
  uint32_t width;     /**< bits */
  uint64_t init_val;
  uint64_t min_val;
  uint64_t max_val;
  uint64_t mask;
};

enum mrc_ctl_fields_op { MRC_CTL_MODIFY_FIELDS = 0, MRC_CTL_QUERY_FIELDS = 1 };
struct mrc_ctl_fields_op_attr {
  enum mrc_ctl_fields_op op;
  struct mrc_ctl_ev_field *fields;
  uint32_t count;     /**< in: array size; out: fields (E2BIG with the needed count) */
};

enum mrc_ctl_ev_fmt_profile_attr_mask {
  MRC_CTL_EV_FMT_PROFILE_STATE = 1 << 0,
  MRC_CTL_EV_FMT_PROFILE_CUR_STATE = 1 << 1,
  MRC_CTL_EV_FMT_PROFILE_MODE = 1 << 2,
  MRC_CTL_EV_FMT_PROFILE_OP = 1 << 3,
};
/** Bit 31 (a macro: ISO C enumerators must fit an int). */
#define MRC_CTL_EV_FMT_VENDOR (1u << 31)
struct mrc_ctl_ev_fmt_profile_attr {
  enum mrc_ctl_profile_state state;
  enum mrc_ctl_profile_state cur_state;
  uint32_t mode;      /**< one enum mrc_ctl_ev_fmt_mode bit */
  struct mrc_ctl_fields_op_attr fields_op;
  uint8_t vendor_cfg[128];
};
/** EV format profile `id` (reference 6.3.3): 0, or a negative errno (OCP's
 *  convention for the format calls: -EINVAL, -EPERM, -EBUSY, -E2BIG, as
 *  the rules below and at the top). INIT -> OFFLINE needs MODE;
 *  OFFLINE -> ONLINE needs the fields (OP with MODIFY_FIELDS: widths 1..64,
 *  only `width` is read). OFFLINE permits everything; ONLINE only -> OFFLINE
 *  and OP with QUERY_FIELDS (fills fields_op.fields, count = fields; E2BIG
 *  with the count needed). `attr` stays owned by the caller. */
int mrc_ctl_modify_ev_fmt_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_fmt_profile_attr *attr,
                                  int mask);
/** Fills what `mask` names: state and cur_state, mode, and with OP
 *  (QUERY_FIELDS only, else -EINVAL) the fields (-E2BIG with the count
 *  needed). An unconfigured id reads as INIT. 0, or a negative errno. */
int mrc_ctl_query_ev_fmt_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_fmt_profile_attr *attr,
                                 int mask);

/** Bytes of an EV value: an SRv6 EV's address (16) and, with an SRH, its
 *  segment (16); other EVs use the first 4. */
#define MRC_CTL_EV_MAX_BYTES 32
typedef uint8_t mrc_ctl_ev_t[MRC_CTL_EV_MAX_BYTES];

/** An EV: up to 256 bits (expanded through the format profile) and a 1-based port. */
struct mrc_ctl_ev {
  mrc_ctl_ev_t val;
  uint8_t port;       /**< 0 with an all-zero value = UNPOPULATED */
};
/** An unpopulated EV entry (a C compound literal). */
#define MRC_CTL_EV_UNPOPULATED ((struct mrc_ctl_ev){{0}, 0})
enum mrc_ctl_ev_state {
  MRC_CTL_EV_GOOD = 1u << 0,
  MRC_CTL_EV_ASSUMED_BAD = 1u << 1,
  MRC_CTL_EV_DENIED = 1u << 2,
};
/** Bit 31 (a macro: ISO C enumerators must fit an int). */
#define MRC_CTL_EV_UNKNOWN (1u << 31)
enum mrc_ctl_ev_op {
  MRC_CTL_EV_OP_REPLACE_EV = 0,
  MRC_CTL_EV_OP_MODIFY_EV_STATE = 1,
  MRC_CTL_EV_OP_QUERY_EV_STATE = 2,
  MRC_CTL_EV_OP_QUERY_EV_ARRAY = 3,
};
enum mrc_ctl_ev_op_flags { MRC_CTL_EV_OP_ALL_COPIES = 1u << 0 };
struct mrc_ctl_ev_op_entry {
  struct mrc_ctl_ev ev;
  struct mrc_ctl_ev ev_new;        /**< REPLACE_EV */
  enum mrc_ctl_ev_state state;
  uint32_t flags;                  /**< enum mrc_ctl_ev_op_flags */
};
struct mrc_ctl_ev_op_attr {
  enum mrc_ctl_ev_op op;
  struct mrc_ctl_ev_op_entry *entries;
  uint32_t entry_count;            /**< in: entries; out: processed (E2BIG with the needed count) */
};

/** OCP's bits; SRV6_SRH and SRV6_COMP are EINVAL (no SRH segment, no
 *  compressed modes); EV_FIELDS_OP is OpenMRC's (the EV profile's fields,
 *  which OCP's revision keeps in the format profile alone). */
enum mrc_ctl_ev_profile_attr_mask {
  MRC_CTL_EV_PROFILE_STATE = 1 << 0,
  MRC_CTL_EV_PROFILE_CUR_STATE = 1 << 1,
  MRC_CTL_EV_PROFILE_MODE = 1 << 2,
  MRC_CTL_EV_PROFILE_COUNT = 1 << 3,
  MRC_CTL_EV_PROFILE_MIN_ACTIVE = 1 << 4,
  MRC_CTL_EV_PROFILE_EVENT_MASK = 1 << 5,
  MRC_CTL_EV_PROFILE_EV_OP = 1 << 6,
  MRC_CTL_EV_PROFILE_FMT_ID = 1 << 7,
  MRC_CTL_EV_PROFILE_SRV6_SRH = 1 << 8,
  MRC_CTL_EV_PROFILE_SRV6_COMP = 1 << 9,
  MRC_CTL_EV_PROFILE_EV_FIELDS_OP = 1 << 16,
};
/** Bit 31 (a macro: ISO C enumerators must fit an int). */
#define MRC_CTL_EV_PROFILE_VENDOR (1u << 31)
struct mrc_ctl_ev_profile_attr {
  enum mrc_ctl_profile_state state;
  enum mrc_ctl_profile_state cur_state;
  uint32_t ev_mode;                /**< an enum mrc_ctl_ev_mode value */
  uint64_t ev_fmt_profile_id;
  uint32_t ev_count;
  uint32_t ev_min_active;
  uint32_t ev_event_mask;          /**< GOOD / ASSUMED_BAD state bits */
  struct mrc_ctl_ev_op_attr ev_op;
  struct mrc_ctl_fields_op_attr ev_fields_op;
  uint8_t vendor_cfg[128];
};
/** EV profile `id` (reference 6.3.4): 0 or a positive errno, as OCP's
 *  EV profile calls. INIT -> OFFLINE needs MODE and, for EXPLICIT and
 *  SRV6_GENERATED, FMT_ID (a format profile not in INIT), COUNT and EV_FIELDS_OP with
 *  MODIFY_FIELDS (each field: width <= 32 and no wider than its format
 *  field, init_val and mask inside the width, min_val <= max_val <=
 *  2^popcount(mask) - 1); the EXPLICIT array then holds COUNT UNPOPULATED
 *  entries. OFFLINE -> ONLINE needs MIN_ACTIVE (<= ev_count), EVENT_MASK
 *  (GOOD / ASSUMED_BAD bits), the format ONLINE and every entry replaced.
 *  EV_OP: REPLACE_EV (ev -> ev_new in state GOOD or DENIED, 0 = GOOD; one
 *  occurrence, every one with MRC_CTL_EV_OP_ALL_COPIES), MODIFY_EV_STATE
 *  (GOOD or DENIED: a DENIED EV carries no data on any QP using the
 *  profile), QUERY_EV_STATE, QUERY_EV_ARRAY (E2BIG with the count needed;
 *  UNPOPULATED entries read MRC_CTL_EV_UNKNOWN). Entries run in
 *  order and stop at the first failure: ev_op.entry_count returns how many
 *  were done, those stay done, and the call's transition does not happen.
 *  ONLINE permits only -> OFFLINE, MODIFY/QUERY_EV_STATE, QUERY_EV_ARRAY
 *  and QUERY_FIELDS. Compact EVs are bit strings from bit 7 of value[0];
 *  expansion follows reference 4.2. */
int mrc_ctl_modify_ev_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_profile_attr *attr,
                              int mask);
/** Fills what `mask` names (ev_count is the aligned array size); EV_OP only
 *  QUERY_EV_STATE / QUERY_EV_ARRAY and EV_FIELDS_OP only QUERY_FIELDS
 *  (EINVAL otherwise). */
int mrc_ctl_query_ev_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_profile_attr *attr,
                             int mask);

/** NSCC configuration (reference 5.5); times in nanoseconds; 0 = derived
 *  from the QP's links (reference 5.5). min_cwnd_bytes and mss_bytes must
 *  be 0 in the software device (the floor and segment are the path MTU). */
struct mrc_ctl_nscc_config {
  uint32_t base_rtt_ns;
  uint32_t target_qdelay_ns;
  uint32_t max_cwnd_bytes;
  uint32_t min_cwnd_bytes;
  uint32_t mss_bytes;
};
enum mrc_ctl_cc_profile_attr_mask {
  MRC_CTL_CC_PROFILE_STATE = 1 << 0,
  MRC_CTL_CC_PROFILE_CUR_STATE = 1 << 1,
  MRC_CTL_CC_PROFILE_ALGORITHM = 1 << 2,
  MRC_CTL_CC_PROFILE_CONFIG = 1 << 3,
};
/** Bit 31 (a macro: ISO C enumerators must fit an int). */
#define MRC_CTL_CC_PROFILE_VENDOR (1u << 31)
struct mrc_ctl_cc_profile_attr {
  enum mrc_ctl_profile_state state;
  enum mrc_ctl_profile_state cur_state;
  const char *algorithm;           /**< a name from the device list; NULL disables CC */
  const void *config;              /**< e.g. const struct mrc_ctl_nscc_config * */
  uint8_t vendor_cfg[128];
};
/** CC profile `id` (reference 6.3.5). INIT -> OFFLINE needs ALGORITHM
 *  ("uet-1.0-nscc", or NULL: no congestion control); OFFLINE -> ONLINE
 *  needs CONFIG (a const struct mrc_ctl_nscc_config *, copied) unless CC is
 *  disabled; CONFIG without an algorithm is EINVAL. ONLINE permits only
 *  -> OFFLINE. A QP names it in mrc_qp_attr.profile.cc_profile_id. */
int mrc_ctl_modify_cc_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_cc_profile_attr *attr,
                              int mask);
/** Fills what `mask` names. `algorithm` points to a library string;
 *  `config` to the library's copy of the last CONFIG (NULL if none), valid
 *  until the profile is next modified or the device is closed. */
int mrc_ctl_query_cc_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_cc_profile_attr *attr,
                             int mask);

/* ------------------------------------------------------------------ EV events (6.3.6) */

struct mrc_ctl_ev_event {
  uint64_t profile_id;
  struct mrc_ctl_ev ev;
  uint32_t drop_count;
  enum mrc_ctl_ev_state state;
};
/** The controller's CQ of EV events, holding up to `cqe` events: one event
 *  per state change of an EV of an ONLINE EV profile that the profile's
 *  ev_event_mask selects (a QP's path manager found it ASSUMED_BAD or GOOD
 *  again; the controller set a DENIED EV GOOD). No overrun: events that
 *  find it full are lost and counted exactly; the next event that fits
 *  carries the count in drop_count (MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT).
 *  One per device: NULL with errno EBUSY if it exists, EINVAL for bad
 *  arguments. `channel` (may be NULL) works as for mrc_create_cq: after
 *  mrc_req_notify_cq the next event makes it readable. Destroy with
 *  mrc_destroy_cq; mrc_poll_cq on it is EINVAL. */
struct mrc_cq *mrc_ctl_create_ev_event_cq(struct mrc_context *ctx, int cqe, void *cq_context,
                                          struct mrc_comp_channel *channel, int comp_vector);
/** Moves up to `num_events` events, oldest first, into `events`. Returns
 *  the number written (>= 0) or -EINVAL (not an EV event CQ, bad args). */
int mrc_ctl_poll_ev_event(struct mrc_cq *cq, int num_events, struct mrc_ctl_ev_event *events);

/* ------------------------------------------------------------------ endpoint operations (6.3.7) */

/** API numbering (differs from the wire's ERTH op codes, reference 6.4). */
enum mrc_ctl_ep_op_type { MRC_CTL_EP_OP_EV_PROBE = 0, MRC_CTL_EP_OP_PORT_STATUS_UPDATE = 1 };
struct mrc_ctl_ep_req {
  uint16_t req_id;                 /**< unique among outstanding requests */
  union ibv_gid sgid;              /**< all zero, or the GID of req_ev.port */
  union ibv_gid dgid;              /**< the destination device (any of its GIDs) */
  uint32_t ev_fmt_mode;            /**< MRC_CTL_EV_FMT_UDP or _STEV; _SRV6 on a MRC_SOFT_EV_SRV6 device (req_ev = the destination address) */
  struct mrc_ctl_ev req_ev;        /**< the wire EV and the 1-based port it leaves on */
  struct {
    uint32_t port_status;          /**< PORT_STATUS_UPDATE: bit N = port N (1-based) up */
  } port_status_update;
};
struct mrc_ctl_ep_rsp {
  uint16_t req_id;
  uint8_t port;                    /**< port the response arrived on (1-based) */
  uint64_t rtt_ns;                 /**< request sent -> answer received, in ns */
  int adj_svc_time;                /**< 1 if rtt_ns excludes the responder's service time */
};
/** Endpoint operations (reference 6.3.7): sends `n_reqs` requests of one
 *  kind -- EV probes (does this EV path reach that device, and how long is
 *  the round trip?) or port-status updates (tell that device which of our
 *  ports are up; it stops or resumes sending into the others at once) --
 *  then blocks until every one is answered or rsp_timeout_ns has passed.
 *  rsps (room for n_reqs) receives one entry per answer, in arrival order;
 *  *n_rsp says how many. Returns 0 when all were answered, ETIMEDOUT when
 *  not (the answered ones are in rsps; an answer arriving after the call
 *  returned is dropped: nothing is buffered across calls).
 *  Software device: the wire EV is the UDP source port, value[0..1] big
 *  endian with the other bytes zero, and must be one of the port's EV
 *  source ports (ev_port_base + (port - 1) x evs_per_plane + i): the
 *  request leaves from that socket, so a probe measures exactly that
 *  path. rtt_ns is wall-clock time through both devices' engines and the
 *  kernel; adj_svc_time is always 0 (no service time is subtracted).
 *  req_tc (a DSCP, 0..63) is checked and not applied. Calls on one device
 *  run one at a time. rsp_timeout_ns is capped at one hour.
 *  Errors: EINVAL (NULL pointers, an unknown op type, req_tc > 63, more
 *  than 1024 requests, a req_id twice in the batch, an ev_fmt_mode, port,
 *  EV or sgid the device cannot send from, a dgid of another address
 *  family, port_status bits for ports the device does not have) -- nothing
 *  is sent then; EAGAIN (a req_id is still outstanding from an earlier call
 *  that gave up on it: wait for its timeout or use another id);
 *  ETIMEDOUT (above). */
int mrc_ctl_ep_batch_send_wait(struct mrc_context *ctx, uint8_t req_tc, enum mrc_ctl_ep_op_type op_type,
                               const struct mrc_ctl_ep_req *reqs, uint32_t n_reqs, uint64_t rsp_timeout_ns,
                               struct mrc_ctl_ep_rsp *rsps, uint32_t *n_rsp);

#ifdef __cplusplus
}
#endif

#endif /* MRC_MRC_CTL_H */
