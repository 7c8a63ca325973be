/*
 * mrc_ctl.h -- the OCP MRC controller API (reference section 6.3): EV
 * format, EV and CC profiles, EV events, endpoint operations and ports.
 * One privileged controller per node configures what applications' QPs
 * use (they name profiles by id, learned out of band).
 *
 * Status in OpenMRC: every entry point exists with its signature and
 * argument checks. mrc_ctl_query_version, mrc_ctl_query_device(_ex) and
 * mrc_ctl_query_port work; the profile, event, endpoint-operation and
 * port-modify calls return EOPNOTSUPP until the controller lands (the
 * software device's QPs use profile 0 of each kind meanwhile).
 * Conventions as in <mrc/mrc.h>: 0 or an errno value.
 */
#ifndef MRC_MRC_CTL_H
#define MRC_MRC_CTL_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "mrc/mrc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MRC_CTL_API_VERSION_CURRENT MRC_API_VERSION(1, 0, 1)

/** Optional features (mrc_ctl_device_attr.opt_attr). */
enum mrc_ctl_opt_attr {
  MRC_CTL_OPT_EV_PROFILE_MODIFY_ONLINE = 1u << 0,
  MRC_CTL_OPT_CC_PROFILE_MODIFY_ONLINE = 1u << 1,
  MRC_CTL_OPT_EV_EVENT = 1u << 2,
  MRC_CTL_OPT_EV_EXPLICIT_RANGE = 1u << 3,
  MRC_CTL_OPT_EV_EVENT_PRECISE_DROP_CNT = 1u << 4,
  MRC_CTL_OPT_EP_OP_EV_PROBE = 1u << 5,
};

/** EV format modes (fmt profile) and EV modes (EV profile). */
enum mrc_ctl_ev_fmt_mode { MRC_CTL_EV_FMT_STEV = 1u << 0, MRC_CTL_EV_FMT_SRV6 = 1u << 1, MRC_CTL_EV_FMT_UDP = 1u << 2 };
enum mrc_ctl_ev_mode { MRC_CTL_EV_MODE_AUTO = 1u << 0, MRC_CTL_EV_MODE_EXP = 1u << 1, MRC_CTL_EV_MODE_GEN = 1u << 2 };

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
    uint32_t ev_mode_mask;          /**< enum mrc_ctl_ev_mode bits */
    uint32_t ev_op_max_entries;     /**< 0 = no cap */
  } ev;
  struct {
    uint32_t cc_max_profiles;
    const char *const *algorithms;  /**< NULL-terminated, e.g. "uet-1.0-nscc" */
  } cc;
  uint32_t phy_port_mask;           /**< bit N = port N (1-based) */
  uint32_t opt_attr;                /**< enum mrc_ctl_opt_attr bits */
};

struct mrc_ctl_version {
  uint32_t current;
  uint32_t oldest;
  uint32_t vendor;
  uint32_t oldest_vendor;
};

/** Versions of the controller API. EINVAL for NULL. */
int mrc_ctl_query_version(struct mrc_ctl_version *ver);
/** Device limits and features for the controller. EINVAL for NULL arguments. */
int mrc_ctl_query_device(struct ibv_context *ibv_ctx, struct mrc_ctl_device_attr *attr);
/** As above for a context's API version; *supported = 0 if not an MRC device. */
int mrc_ctl_query_device_ex(struct ibv_context *ibv_ctx, struct mrc_context *ctx, struct mrc_ctl_device_attr *attr,
                            int *supported);

/* ------------------------------------------------------------------ ports (6.3.2) */

enum mrc_ctl_port_admin_state { MRC_CTL_PORT_ADMIN_DISABLED = 0, MRC_CTL_PORT_ADMIN_ENABLED = 1 };
enum mrc_ctl_port_attr_mask { MRC_CTL_PORT_ADMIN_STATE = 1u << 0 };
struct mrc_ctl_port_attr {
  enum mrc_ctl_port_admin_state admin_state;
  enum ibv_port_state state;        /**< query only: IBV_PORT_ACTIVE or IBV_PORT_DOWN */
};
/** Port `port_num` is 1-based. EINVAL for a bad port. */
int mrc_ctl_query_port(struct mrc_context *ctx, uint8_t port_num, struct mrc_ctl_port_attr *attr);
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

enum mrc_ctl_ev_fmt_attr_mask {
  MRC_CTL_EV_FMT_STATE = 1u << 0,
  MRC_CTL_EV_FMT_CUR_STATE = 1u << 1,
  MRC_CTL_EV_FMT_MODE = 1u << 2,
  MRC_CTL_EV_FMT_OP = 1u << 3,
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
int mrc_ctl_modify_ev_fmt_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_fmt_profile_attr *attr,
                                  uint32_t mask);
int mrc_ctl_query_ev_fmt_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_fmt_profile_attr *attr,
                                 uint32_t mask);

/** An EV: up to 256 bits (expanded through the format profile) and a 1-based port. */
struct mrc_ctl_ev {
  uint8_t value[32];
  uint8_t port;       /**< 0 with an all-zero value = UNPOPULATED */
};
enum mrc_ctl_ev_state {
  MRC_CTL_EV_STATE_GOOD = 1u << 0,
  MRC_CTL_EV_STATE_ASSUMED_BAD = 1u << 1,
  MRC_CTL_EV_STATE_DENIED = 1u << 2,
};
/** Bit 31 (a macro: ISO C enumerators must fit an int). */
#define MRC_CTL_EV_STATE_UNKNOWN (1u << 31)
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

enum mrc_ctl_ev_profile_attr_mask {
  MRC_CTL_EV_PROFILE_STATE = 1u << 0,
  MRC_CTL_EV_PROFILE_CUR_STATE = 1u << 1,
  MRC_CTL_EV_PROFILE_MODE = 1u << 2,
  MRC_CTL_EV_PROFILE_FMT_ID = 1u << 3,
  MRC_CTL_EV_PROFILE_COUNT = 1u << 4,
  MRC_CTL_EV_PROFILE_MIN_ACTIVE = 1u << 5,
  MRC_CTL_EV_PROFILE_EVENT_MASK = 1u << 6,
  MRC_CTL_EV_PROFILE_EV_OP = 1u << 7,
  MRC_CTL_EV_PROFILE_EV_FIELDS_OP = 1u << 8,
};
/** Bit 31 (a macro: ISO C enumerators must fit an int). */
#define MRC_CTL_EV_PROFILE_VENDOR (1u << 31)
struct mrc_ctl_ev_profile_attr {
  enum mrc_ctl_profile_state state;
  enum mrc_ctl_profile_state cur_state;
  uint32_t ev_mode;                /**< one enum mrc_ctl_ev_mode bit */
  uint64_t ev_fmt_profile_id;
  uint32_t ev_count;
  uint32_t ev_min_active;
  uint32_t ev_event_mask;          /**< GOOD / ASSUMED_BAD state bits */
  struct mrc_ctl_ev_op_attr ev_op;
  struct mrc_ctl_fields_op_attr ev_fields_op;
  uint8_t vendor_cfg[128];
};
int mrc_ctl_modify_ev_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_profile_attr *attr,
                              uint32_t mask);
int mrc_ctl_query_ev_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_profile_attr *attr,
                             uint32_t mask);

/** NSCC configuration (reference 5.5); times in nanoseconds. */
struct mrc_ctl_nscc_config {
  uint32_t base_rtt_ns;
  uint32_t target_qdelay_ns;
  uint32_t max_cwnd_bytes;
  uint32_t min_cwnd_bytes;
  uint32_t mss_bytes;
};
enum mrc_ctl_cc_attr_mask {
  MRC_CTL_CC_PROFILE_STATE = 1u << 0,
  MRC_CTL_CC_PROFILE_CUR_STATE = 1u << 1,
  MRC_CTL_CC_PROFILE_ALGORITHM = 1u << 2,
  MRC_CTL_CC_PROFILE_CONFIG = 1u << 3,
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
int mrc_ctl_modify_cc_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_cc_profile_attr *attr,
                              uint32_t mask);
int mrc_ctl_query_cc_profile(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_cc_profile_attr *attr,
                             uint32_t mask);

/* ------------------------------------------------------------------ EV events (6.3.6) */

struct mrc_ctl_ev_event {
  uint64_t profile_id;
  struct mrc_ctl_ev ev;
  uint32_t drop_count;
  enum mrc_ctl_ev_state state;
};
/** A CQ of EV events (no overrun support: drops are counted in drop_count). Destroy with mrc_destroy_cq. */
struct mrc_cq *mrc_ctl_create_ev_event_cq(struct mrc_context *ctx, int cqe, void *cq_context,
                                          struct mrc_comp_channel *channel, int comp_vector);
/** Returns the number of events written (>= 0) or -errno. */
int mrc_ctl_poll_ev_event(struct mrc_cq *cq, int num_events, struct mrc_ctl_ev_event *events);

/* ------------------------------------------------------------------ endpoint operations (6.3.7) */

/** API numbering (differs from the wire's ERTH op codes, reference 6.4). */
enum mrc_ctl_ep_op_type { MRC_CTL_EP_OP_EV_PROBE = 0, MRC_CTL_EP_OP_PORT_STATUS_UPDATE = 1 };
struct mrc_ctl_ep_req {
  uint16_t req_id;                 /**< unique among outstanding requests */
  union ibv_gid sgid;
  union ibv_gid dgid;
  uint32_t ev_fmt_mode;
  struct mrc_ctl_ev req_ev;
  struct {
    uint32_t port_status;          /**< PORT_STATUS_UPDATE: 1-based port mask */
  } port_status_update;
};
struct mrc_ctl_ep_rsp {
  uint16_t req_id;
  uint8_t port;                    /**< port the response arrived on (1-based) */
  uint64_t rtt_ns;
  int adj_svc_time;
};
/** Sends the requests and waits up to rsp_timeout_ns for the answers
 *  (ETIMEDOUT when not all answered; *n_rsp says how many were). */
int mrc_ctl_ep_batch_send_wait(struct mrc_context *ctx, uint8_t req_tc, enum mrc_ctl_ep_op_type op_type,
                               const struct mrc_ctl_ep_req *reqs, uint32_t n_reqs, uint64_t rsp_timeout_ns,
                               struct mrc_ctl_ep_rsp *rsps, uint32_t *n_rsp);

#ifdef __cplusplus
}
#endif

#endif /* MRC_MRC_CTL_H */
