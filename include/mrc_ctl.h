// SPDX-License-Identifier: BSD-2-Clause
/*
 * mrc_ctl.h -- the OCP MRC controller API (reference section 6.3): EV
 * format, EV and CC profiles, EV events, endpoint operations and ports.
 * One privileged controller per node configures what applications' QPs
 * use (they name profiles by id, learned out of band).
 *
 * Names, types, values, layouts and return conventions are those of the
 * OCP companion repository's mrc_ctl.h (docs/ocp-compatibility.md lists
 * each item); OpenMRC's additions are marked (OpenMRC).
 *
 * Status in OpenMRC (software device): every call works --
 * mrc_ctl_query_version, mrc_ctl_query_device(_ex), the ports, the EV
 * format, EV and CC profile calls (state machines, EV operations,
 * queries), the EV event CQ, EV probes and port-status updates; the limits
 * of the software device are given with each call.
 *
 * Profiles. Ids are 1..16 for each kind (ev_max_fmt_profiles etc.); id 0
 * names the device's default profile, which a QP uses when it names none,
 * and is not managed here (EINVAL). Every profile follows INIT -> OFFLINE
 * -> ONLINE -> OFFLINE -> INIT. A modify call applies the attributes its
 * mask names; a transition's requirements may be met in the same call or
 * an earlier one. Errors, one rule each:
 *   EINVAL  unknown mask bits, a value out of range, no such transition
 *           (INIT -> ONLINE, ONLINE -> INIT), a CUR_STATE that is not
 *           current, unmet requirements, NULL arrays;
 *   EPERM   an attribute or operation the current state does not allow
 *           (anything but going OFFLINE in INIT; MODE, FMT_ID, COUNT,
 *           MIN_ACTIVE, EVENT_MASK, REPLACE_EV, MODIFY_FIELDS, ALGORITHM,
 *           CONFIG while ONLINE: no *_MODIFY_ONLINE feature is offered);
 *   EBUSY   a format profile leaving ONLINE while an ONLINE EV profile uses
 *           it; an EV or CC profile leaving ONLINE while a QP holds it (a
 *           QP holds the profiles it names from INIT until RESET/destroy);
 *   E2BIG   a query array too small (its count is set to the count
 *           needed); a format wider than its mode allows, more than 16
 *           fields; an EV count above ev_max_count_profile or the free EVs
 *           (ev_free_count);
 *   ENOENT  an EV operation names an EV the array does not hold.
 * The software device puts the EV in the UDP source port and sends each EV
 * from a socket bound at open (source port ev_port_base + (port - 1) x
 * evs_per_plane + i): EV modes AUTO or EXPLICIT (a generated array would
 * have no sockets) and, on an SRv6 device, SRV6_GENERATED; an EXPLICIT
 * profile goes ONLINE only if each EV is one of its port's source ports
 * (else EINVAL). ONLINE installs the profile for QPs created after.
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

/** EV format modes (the format profile's ev_fmt_mode), OCP's values.
 *  GENERATED describes EVs carried in the UDP source port (and, on a
 *  MRC_SOFT_EV_STEV device, the flow label); SRV6_GENERATED describes an
 *  SRv6 destination address (a MRC_SOFT_EV_SRV6 device only, else EINVAL). */
enum mrc_ctl_ev_fmt_mode {
  MRC_CTL_EV_FMT_MODE_GENERATED = 1,
  MRC_CTL_EV_FMT_MODE_SRV6_GENERATED = 2,
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
    uint32_t ev_fmt_mode_mask;      /**< bit 1 << m for each enum mrc_ctl_ev_fmt_mode m the device takes */
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

/* ---- EV format profiles (6.3.3) */

/** What an EV format profile call does with its fields (ev_fmt_op.op). */
enum mrc_ctl_ev_fmt_op {
  MRC_CTL_EV_FMT_OP_MODIFY_FIELDS = 0,
  MRC_CTL_EV_FMT_OP_QUERY_FIELDS = 1,
};

enum mrc_ctl_ev_fmt_profile_attr_mask {
  MRC_CTL_EV_FMT_PROFILE_STATE = 1 << 0,
  MRC_CTL_EV_FMT_PROFILE_CUR_STATE = 1 << 1,
  MRC_CTL_EV_FMT_PROFILE_MODE = 1 << 2,
  MRC_CTL_EV_FMT_PROFILE_OP = 1 << 3,
};

/** One generated field of an EV format: `width` bits (1..64) holding a
 *  value in [min_val, max_val] (max_val < 2^width). A field whose min_val
 *  equals max_val is constant. */
struct mrc_ctl_ev_fmt_field {
  uint8_t width;
  uint8_t min_val;
  uint8_t max_val;
};

/** EV format profile attributes. A generated EV is, from its most
 *  significant bit: a fixed prefix of fixed_field_width bits, then each
 *  field in order (the remaining bits of an SRv6 address are zero). */
struct mrc_ctl_ev_fmt_profile_attr {
  enum mrc_ctl_profile_state profile_state;      /**< STATE: the state to move to */
  enum mrc_ctl_profile_state cur_profile_state;  /**< CUR_STATE: asserted (modify), current (query) */
  enum mrc_ctl_ev_fmt_mode ev_fmt_mode;          /**< MODE */
  struct {
    enum mrc_ctl_ev_fmt_op op;                   /**< OP: which member below */
    union {
      struct {
        struct mrc_ctl_ev_fmt_field *fmt_fields; /**< fmt_field_count fields, read during the call */
        int fmt_field_count;                     /**< 1..16 */
        int fixed_field_width;                   /**< bits of the fixed prefix, >= 0 */
      } modify_fmt_fields;
      struct {
        struct mrc_ctl_ev_fmt_field *fmt_fields; /**< room for fmt_field_count fields, filled */
        int fmt_field_count;
        int *cur_fmt_field_count;                /**< set to the profile's field count (also on -E2BIG) */
        int *fixed_field_width;                  /**< set to the prefix width (may be NULL) */
      } query_fmt_fields;
    };
  } ev_fmt_op;
};

/** EV format profile `id` (1..ev_max_fmt_profiles; reference 6.3.3): 0, or
 *  a negative errno, OCP's convention for the format calls.
 *  INIT -> OFFLINE needs MODE; OFFLINE -> ONLINE needs the fields (OP with
 *  MODIFY_FIELDS, in this call or an earlier one). OFFLINE permits
 *  everything; ONLINE only -> OFFLINE and OP with QUERY_FIELDS. Limits: the
 *  prefix plus the fields at most 16 bits with GENERATED (the UDP source
 *  port; -E2BIG beyond) and 128 with SRV6_GENERATED (no SRH segment).
 *  Errors: -EINVAL (a NULL or bad argument, unknown mask bits, an unknown
 *  mode or op, a field of width 0 or above 64, min_val > max_val, max_val
 *  not within width, a negative prefix, no such transition, unmet
 *  requirements); -EPERM (an attribute the current state does not allow);
 *  -EBUSY (leaving ONLINE while an ONLINE EV profile uses the format);
 *  -E2BIG (more than 16 fields, or wider than the mode allows; a query
 *  array too small). `attr` stays owned by the caller. */
int mrc_ctl_modify_ev_fmt_profile(struct mrc_context *mrc_ctx, uint64_t ev_fmt_profile_id,
                                  struct mrc_ctl_ev_fmt_profile_attr *attr, int attr_mask);
/** Fills what `attr_mask` names: both states, the mode, and with OP
 *  (QUERY_FIELDS only, else -EINVAL) the fields, *cur_fmt_field_count and
 *  *fixed_field_width (-E2BIG, with *cur_fmt_field_count set, when
 *  fmt_field_count is too small). An id never configured reads as INIT.
 *  0, or a negative errno. */
int mrc_ctl_query_ev_fmt_profile(struct mrc_context *mrc_ctx, uint64_t ev_fmt_profile_id,
                                 struct mrc_ctl_ev_fmt_profile_attr *attr, int attr_mask);

/* ---- EVs */

/** Bytes of an EV value: an SRv6 EV's address (16) and, with an SRH, its
 *  segment (16); other EVs use the first 4. */
#define MRC_CTL_EV_MAX_BYTES 32
/** An EV value. SRv6: the first 16 bytes are the IPv6 destination address
 *  (network order). Otherwise the first 4 bytes hold the EV as a host-order
 *  uint32_t (read and write it with memcpy); on the software device it is
 *  the UDP source port, 0..65535. The other bytes are zero. */
typedef uint8_t mrc_ctl_ev_t[MRC_CTL_EV_MAX_BYTES];

/** An EV and the 1-based port it leaves from. */
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

/* ---- EV profiles (6.3.4) */

/** EV modes (EV profile), OCP's values. The software device takes AUTO
 *  (the device's own EVs), EXPLICIT (an array the controller fills, each
 *  EV one of its port's source ports: ev_port_base + (port - 1) x
 *  evs_per_plane + i) and, on a MRC_SOFT_EV_SRV6 device, SRV6_GENERATED
 *  (an array of addresses it generates from an SRV6_GENERATED format) and
 *  SRV6_COMP_EXPLICIT (an array the controller fills with compressed EVs,
 *  expanded through srv6_comp; see there); the others are EINVAL. */
enum mrc_ctl_ev_mode {
  MRC_CTL_EV_MODE_AUTO = 0,
  MRC_CTL_EV_MODE_EXPLICIT = 1,
  MRC_CTL_EV_MODE_GENERATED = 2,
  MRC_CTL_EV_MODE_SRV6_EXPLICIT = 3,
  MRC_CTL_EV_MODE_SRV6_GENERATED = 4,
  MRC_CTL_EV_MODE_SRV6_COMP_EXPLICIT = 5,
  MRC_CTL_EV_MODE_SRV6_COMP_GENERATED = 6,
};

/** The operation of an EV profile call (ev_op.op). */
enum mrc_ctl_ev_op {
  MRC_CTL_EV_OP_REPLACE_EV = 0,
  MRC_CTL_EV_OP_MODIFY_EV_STATE = 1,
  MRC_CTL_EV_OP_QUERY_EV_STATE = 2,
  MRC_CTL_EV_OP_QUERY_EV_ARRAY = 3,
};

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
};

/** EV profile attributes. */
struct mrc_ctl_ev_profile_attr {
  enum mrc_ctl_profile_state profile_state;      /**< STATE: the state to move to */
  enum mrc_ctl_profile_state cur_profile_state;  /**< CUR_STATE: asserted (modify), current (query) */
  enum mrc_ctl_ev_mode ev_mode;                  /**< MODE */
  uint32_t ev_count;                             /**< COUNT: EVs in the array (query: the aligned size) */
  uint32_t ev_min_active;                        /**< MIN_ACTIVE: <= ev_count */
  int ev_event_mask;                             /**< EVENT_MASK: MRC_CTL_EV_GOOD / _ASSUMED_BAD bits */
  uint64_t ev_fmt_profile_id;                    /**< FMT_ID: the format of a generated mode */
  uint8_t srv6_use_srh;                          /**< SRV6_SRH: 0 (the software device sends no SRH) */
  /** SRV6_COMP: vendor data. SRV6_GENERATED: the fixed prefix of the
   *  format's EVs (the first fixed_field_width bits, most significant
   *  first: e.g. the locator). SRV6_COMP_EXPLICIT: bytes 0-15 an address
   *  template and bytes 16-31 a mask; a compressed EV (the value, a
   *  host-order uint32_t of at most 16 bits, popcount(mask) wide) puts its
   *  bits, most significant first, into the mask's set bits, most
   *  significant first, over the template (reference 4.2's expansion):
   *  the address it is sent to. Needs FMT_ID (an SRV6_GENERATED format,
   *  whose field widths cut the address; their bounds are not used). */
  uint8_t srv6_comp[MRC_CTL_EV_MAX_BYTES];
  struct {
    enum mrc_ctl_ev_op op;                       /**< EV_OP: which member below */
    union {
      struct {
        struct mrc_ctl_ev cur_ev;                /**< the entry to replace (UNPOPULATED: an empty one) */
        struct mrc_ctl_ev new_ev;                /**< its replacement, GOOD */
        int all_copies;                          /**< non-zero: every entry equal to cur_ev */
      } replace_ev;
      struct {
        struct mrc_ctl_ev ev;
        enum mrc_ctl_ev_state state;             /**< MRC_CTL_EV_GOOD or MRC_CTL_EV_DENIED */
      } modify_ev_state;
      struct {
        struct mrc_ctl_ev ev;
        enum mrc_ctl_ev_state state;             /**< out */
      } query_ev_state;
      struct {
        struct mrc_ctl_ev *ev;                   /**< room for ev_count entries (query COUNT first), filled */
      } query_ev_array;
    };
  } ev_op;
};

/** EV profile `id` (1..ev_max_profiles; reference 6.3.4): 0 or a positive
 *  errno, as OCP's EV profile calls. INIT -> OFFLINE needs MODE and, for
 *  EXPLICIT, COUNT (the array then holds COUNT UNPOPULATED entries), for
 *  SRV6_GENERATED, COUNT and FMT_ID (an SRV6_GENERATED format not in INIT;
 *  the device generates COUNT distinct addresses, each field within its
 *  bounds, ports assigned in turn) and SRV6_COMP when the format has a
 *  prefix. OFFLINE -> ONLINE needs MIN_ACTIVE, EVENT_MASK, the format
 *  ONLINE and, for EXPLICIT, every entry replaced. OFFLINE permits
 *  everything (a new MODE, COUNT, FMT_ID or SRV6_COMP rebuilds the array);
 *  ONLINE permits only -> OFFLINE, MODIFY_EV_STATE (GOOD or DENIED: a
 *  DENIED EV carries no data on any QP using the profile) and the queries.
 *  The call's attributes apply before its EV_OP; EV_OP with MODE, FMT_ID
 *  or SRV6_COMP is EINVAL. ONLINE installs the profile for QPs created
 *  after; a QP names it in mrc_qp_attr.profile.ev_profile_id.
 *  Errors: EINVAL (NULL, unknown mask bits, an unsupported mode, a value
 *  out of range, srv6_use_srh non-zero, no such transition, unmet
 *  requirements, an EXPLICIT EV the device cannot send from); EPERM (an
 *  attribute the current state does not allow); EBUSY (leaving ONLINE
 *  while a QP uses it); E2BIG (COUNT above ev_max_count_profile or the
 *  free EVs); ENOENT (the EV named is not in the array). */
int mrc_ctl_modify_ev_profile(struct mrc_context *mrc_ctx, uint64_t ev_profile_id,
                              struct mrc_ctl_ev_profile_attr *attr, int attr_mask);
/** Fills what `attr_mask` names; EV_OP only QUERY_EV_STATE and
 *  QUERY_EV_ARRAY (EINVAL otherwise). QUERY_EV_ARRAY writes ev_count
 *  entries: UNPOPULATED ones as MRC_CTL_EV_UNPOPULATED. 0 or a positive
 *  errno. */
int mrc_ctl_query_ev_profile(struct mrc_context *mrc_ctx, uint64_t ev_profile_id,
                             struct mrc_ctl_ev_profile_attr *attr, int attr_mask);

/* ---- CC profiles (6.3.5) */

enum mrc_ctl_cc_profile_attr_mask {
  MRC_CTL_CC_PROFILE_STATE = 1 << 0,
  MRC_CTL_CC_PROFILE_CUR_STATE = 1 << 1,
  MRC_CTL_CC_PROFILE_ALGORITHM = 1 << 2,
  MRC_CTL_CC_PROFILE_CONFIG = 1 << 3,
};

/** CC profile attributes. */
struct mrc_ctl_cc_profile_attr {
  enum mrc_ctl_profile_state profile_state;      /**< STATE */
  enum mrc_ctl_profile_state cur_profile_state;  /**< CUR_STATE */
  /** ALGORITHM: a name of mrc_ctl_attr.cc.cc_algorithms ("uet-1.0-nscc"),
   *  or NULL: no congestion control (a fixed window). */
  const char *cc_algorithm;
  /** CONFIG: the algorithm's configuration, for "uet-1.0-nscc" a const
   *  struct mrc_ctl_cc_nscc_cfg * (copied during the call). */
  const void *cc_config;
};

/** NSCC configuration (reference 5; UET 1.0 NSCC). A zero field takes the
 *  default derived from the QP's links (reference 5.5). Every field is
 *  honoured by the software device. */
struct mrc_ctl_cc_nscc_cfg {
  uint8_t disable_qa;                /**< non-zero: never run quick adapt */
  uint32_t adjust_bytes_threshold;   /**< bytes acknowledged between window updates */
  uint32_t adjust_period_threshold;  /**< ns between window updates */
  uint32_t base_rtt;                 /**< ns: unloaded RTT of the longest path */
  float eta;                         /**< bytes added per adjust period */
  float fi;                          /**< fair increase, bytes per RTT */
  float fi_scale;                    /**< fast increase per acknowledged byte */
  float gamma;                       /**< multiplicative-decrease gain, (0, 1] */
  float max_md_jump;                 /**< largest decrease as a fraction of the window, (0, 1) */
  uint32_t max_cwnd;                 /**< bytes: window ceiling and initial window */
  uint8_t qa_gate;                   /**< quick adapt acts below max_cwnd >> qa_gate (<= 63) */
  uint32_t qa_threshold;             /**< ns of queueing delay that also triggers quick adapt */
  uint32_t target_delay;             /**< ns: target queueing delay */
};

/** CC profile `id` (1..cc_max_profiles; reference 6.3.5): 0 or a positive
 *  errno. INIT -> OFFLINE needs ALGORITHM; OFFLINE -> ONLINE needs CONFIG
 *  unless CC is disabled (cc_algorithm NULL). ONLINE permits only ->
 *  OFFLINE. A QP names it in mrc_qp_attr.profile.cc_profile_id.
 *  Errors: EINVAL (NULL, unknown mask bits, an unknown algorithm, CONFIG
 *  NULL or without an algorithm, a configuration NSCC cannot run -- a
 *  gamma outside (0, 1], a max_md_jump outside (0, 1), a negative or
 *  non-finite float, qa_gate above 63 -- no such transition, unmet
 *  requirements); EPERM (an attribute the current state does not allow);
 *  EBUSY (leaving ONLINE while a QP uses it). */
int mrc_ctl_modify_cc_profile(struct mrc_context *mrc_ctx, uint64_t cc_profile_id,
                              struct mrc_ctl_cc_profile_attr *attr, int attr_mask);
/** Fills what `attr_mask` names. cc_algorithm points to a library string;
 *  cc_config to the library's copy of the last CONFIG (NULL if none), valid
 *  until the profile is next modified or the device is closed. */
int mrc_ctl_query_cc_profile(struct mrc_context *mrc_ctx, uint64_t cc_profile_id,
                             struct mrc_ctl_cc_profile_attr *attr, int attr_mask);

/* ------------------------------------------------------------------ EV events (6.3.6) */

/** One EV event: an EV of profile `profile_id` changed to a state the
 *  profile's ev_event_mask selects (query its state with QUERY_EV_STATE). */
struct mrc_ctl_ev_event {
  uint64_t profile_id;
  struct mrc_ctl_ev ev;
  /** Events lost before this one because the CQ was full (exact:
   *  MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT). */
  uint32_t drop_count;
};
/** The controller's CQ of EV events, holding up to `cqe` events: one event
 *  per state change of an EV of an ONLINE EV profile that the profile's
 *  ev_event_mask selects (a QP's path manager found it ASSUMED_BAD or GOOD
 *  again; the controller set a DENIED EV GOOD). No overrun: events that
 *  find it full are lost and counted. One per device: NULL with errno
 *  EBUSY if it exists, EINVAL for bad arguments. `channel` (may be NULL)
 *  works as for mrc_create_cq: after mrc_req_notify_cq the next event makes
 *  it readable. Destroy with mrc_destroy_cq; mrc_poll_cq on it is EINVAL. */
struct mrc_cq *mrc_ctl_create_ev_event_cq(struct mrc_context *mrc_ctx, int cqe, void *cq_context,
                                          struct mrc_comp_channel *channel, int comp_vector);
/** Moves up to `num_entries` events, oldest first, into `ev_event`. Returns
 *  the number written (>= 0) or -EINVAL (not an EV event CQ, bad args). */
int mrc_ctl_poll_ev_event(struct mrc_cq *ev_cq, int num_entries, struct mrc_ctl_ev_event *ev_event);

/* ------------------------------------------------------------------ EV probes (6.3.7) */

/** SRv6 probe parameters: with srv6_enable, req_ev's value is the whole
 *  SRv6 destination address (locator and uSID stack, uncompressed). */
struct mrc_ctl_srv6_probe {
  uint8_t srv6_enable;     /**< a MRC_SOFT_EV_SRV6 device only (else EINVAL) */
  uint8_t srv6_use_srh;    /**< must be 0: no SRH segment (ENOTSUP) */
};

/** One EV probe: does this EV path reach that device, and how long is the
 *  round trip? */
struct mrc_ctl_ev_probe_req {
  uint16_t probe_id;       /**< unique among the batch and the probes still outstanding */
  union ibv_gid sgid;      /**< all zero, or the GID of req_ev.port */
  union ibv_gid dgid;      /**< the destination device (any of its GIDs) */
  struct mrc_ctl_srv6_probe srv6;
  struct mrc_ctl_ev req_ev; /**< the EV and the 1-based port the probe leaves from */
  /** The EV of the response: all zero (the responder's choice). MRC's wire
   *  carries no response EV, so another value is ENOTSUP. */
  mrc_ctl_ev_t rsp_ev;
};

/** One answer. */
struct mrc_ctl_ev_probe_rsp {
  uint16_t probe_id;
  unsigned int rtt;        /**< ns, request sent -> answer received */
  uint8_t adj_svc_time;    /**< 1 if rtt excludes the responder's service time (the software device: 0) */
};

/** Sends `num_req` EV probes, then blocks until each is answered or
 *  rsp_timeout ns have passed. rsp (room for num_req) receives one entry
 *  per answer, in arrival order; *num_rsp says how many. Returns 0 when
 *  all were answered, ETIMEDOUT when not (the answered ones are in rsp; an
 *  answer arriving after the call returned is dropped: nothing is buffered
 *  across calls).
 *  Software device: a probe leaves from the socket of its EV (a UDP source
 *  port of req_ev.port, see enum mrc_ctl_ev_mode) or, with srv6_enable,
 *  encapsulated to its address, so it measures exactly that path. rtt is
 *  wall-clock time through both devices' engines and the kernel. req_tc
 *  (a DSCP, 0..63) is checked and not applied. Calls on one device run one
 *  at a time.
 *  Errors: EINVAL (NULL pointers, num_req < 0 or above 1024, req_tc > 63,
 *  a probe_id twice in the batch, a port, EV or sgid the device cannot
 *  send from, a dgid of no known peer) -- nothing is sent then; ENOTSUP (a
 *  response EV or an SRH asked for); EAGAIN (a probe_id is still
 *  outstanding from an earlier call that gave up on it: wait for its
 *  timeout or use another id); ETIMEDOUT (above). */
int mrc_ctl_probe_ev(struct mrc_context *mrc_ctx, uint8_t req_tc, struct mrc_ctl_ev_probe_req *req, int num_req,
                     uint32_t rsp_timeout, struct mrc_ctl_ev_probe_rsp *rsp, int *num_rsp);

/* ------------------------------------------------------------------ port-status updates (OpenMRC) */

/** One port-status update (reference 4.7): tells the device at `dgid`
 *  which of our ports are up, so it stops or resumes sending into the
 *  others at once. */
struct mrc_ctl_port_status_req {
  uint16_t req_id;          /**< shares the id space of mrc_ctl_probe_ev's probe_id */
  union ibv_gid sgid;       /**< all zero, or the GID of req_ev.port */
  union ibv_gid dgid;
  struct mrc_ctl_ev req_ev; /**< the EV and port the update leaves from, as a probe's */
  uint32_t port_status;     /**< bit N = port N (1-based) up */
};
/** Sends `num_req` port-status updates and waits for their answers, as
 *  mrc_ctl_probe_ev does (answers in rsp, probe_id = req_id, rtt as a
 *  probe's), with its errors, plus EINVAL for port_status bits of ports
 *  the device does not have. The device sends these by itself when a
 *  port changes (mrc_ctl_modify_port); this call is for a controller that
 *  tells peers itself. */
int mrc_ctl_port_status_update(struct mrc_context *mrc_ctx, uint8_t req_tc, const struct mrc_ctl_port_status_req *req,
                               int num_req, uint32_t rsp_timeout, struct mrc_ctl_ev_probe_rsp *rsp, int *num_rsp);

#ifdef __cplusplus
}
#endif

#endif /* MRC_MRC_CTL_H */
