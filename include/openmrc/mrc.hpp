// SPDX-License-Identifier: BSD-2-Clause
// mrc.hpp -- a header-only C++ RAII wrapper over the C API (<mrc.h>,
// <openmrc/mrc_soft.h>).
//
// Every object frees itself when it goes out of scope; destroy objects in
// the reverse order of creation (QPs, CQs, hints and channels before their
// Context, the Context and MRs before their device), which is what C++
// scoping does for objects declared in creation order.
//
// Errors:
//  - creating calls and setup calls (modify, query) throw std::system_error
//    with the errno and the C call's name;
//  - data-path calls (post, poll, events) keep the C calls' shape and return
//    errno values: they are hot, and their errors are answers, not
//    exceptions;
//  - destruction: close() destroys the object now and returns the C call's
//    error (0 on success; on failure, such as EBUSY for a Context that still
//    owns a CQ, the object stays open and close() may be called again once
//    the cause is gone). A destructor that finds its object still open
//    destroys it; if that fails it cannot throw, so it hands the call's name
//    and errno to the destroy-error handler (set_destroy_error_handler; the
//    default prints one line to stderr) and the C object leaks. Call close()
//    where a failure matters.
//
//   mrc::SoftDevice dev({"127.0.0.1"});
//   mrc::Context ctx(dev);
//   mrc::Pd pd(dev);
//   mrc::Mr mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
//   mrc::CompChannel ch(ctx);
//   mrc::Cq cq(ctx, 256, &ch);
//   mrc::Qp qp(ctx, cq, cq, pd, 128);
//   qp.connect(peer_gid, peer_qpn, peer_psn, my_psn);
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <mrc.h>
#include <openmrc/mrc_soft.h>

namespace mrc {

namespace detail {
/// The errno of a C call's int result: the value itself (calls returning an
/// errno) or errno (calls returning -1 with errno set).
inline int error_of(int rc) { return rc == -1 ? (errno ? errno : EINVAL) : rc; }
}  // namespace detail

/// Throws std::system_error naming `what` when rc != 0 (rc an errno, or -1
/// with errno set).
inline void check(int rc, const char* what) {
  if (rc != 0) throw std::system_error(detail::error_of(rc), std::generic_category(), what);
}

/// Returns `p`, or throws std::system_error(errno) naming `what` when NULL.
template <class T>
T* check_ptr(T* p, const char* what) {
  if (!p) throw std::system_error(errno ? errno : EINVAL, std::generic_category(), what);
  return p;
}

/// Called when a destructor's destroy call fails: `call` is the C call's
/// name, `err` its errno. The C object is left allocated (leaked). Must not
/// throw.
using DestroyErrorHandler = void (*)(const char* call, int err) noexcept;

namespace detail {
inline void print_destroy_error(const char* call, int err) noexcept {
  std::fprintf(stderr, "mrc.hpp: %s failed in a destructor: %s; the object is leaked (call close() first)\n", call,
               std::strerror(err));
}
inline DestroyErrorHandler& destroy_error_handler() noexcept {
  static DestroyErrorHandler h = print_destroy_error;
  return h;
}

/// Owns one C handle of type T, destroyed with Destroy (named Name).
template <class T, int (*Destroy)(T*), const char* Name>
class Owned {
 public:
  Owned() = default;
  explicit Owned(T* p) noexcept : p_(p) {}
  Owned(Owned&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      destroy_or_report();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { destroy_or_report(); }

  T* get() const noexcept { return p_; }
  /// Destroys now: 0, or the errno (the handle then stays open).
  int close() noexcept {
    if (!p_) return 0;
    if (const int rc = Destroy(p_); rc != 0) return error_of(rc);
    p_ = nullptr;
    return 0;
  }

 private:
  void destroy_or_report() noexcept {
    if (const int err = close(); err != 0) {
      p_ = nullptr;
      destroy_error_handler()(Name, err);
    }
  }
  T* p_ = nullptr;
};

inline constexpr char kCloseDevice[] = "mrc_soft_close_device";
inline constexpr char kDestroyContext[] = "mrc_destroy_context";
inline constexpr char kDeallocPd[] = "mrc_soft_dealloc_pd";
inline constexpr char kDeregMr[] = "mrc_soft_dereg_mr";
inline constexpr char kDestroyChannel[] = "mrc_destroy_comp_channel";
inline constexpr char kDestroyCq[] = "mrc_destroy_cq";
inline constexpr char kDestroyHint[] = "mrc_destroy_qp_hint";
inline constexpr char kDestroyQp[] = "mrc_destroy_qp";
}  // namespace detail

/// Installs the handler destructors call when a destroy fails (nullptr
/// restores the default, one line on stderr); returns the previous one.
inline DestroyErrorHandler set_destroy_error_handler(DestroyErrorHandler h) noexcept {
  return std::exchange(detail::destroy_error_handler(), h ? h : detail::print_destroy_error);
}

/// The device's MRC attributes (mrc_query_device). Throws EOPNOTSUPP when
/// `dev` is not an MRC device, or the call's error.
inline mrc_device_attr query_device(ibv_context* dev) {
  mrc_device_attr a{};
  int supported = 0;
  check(mrc_query_device(dev, &a, &supported), "mrc_query_device");
  if (!supported) throw std::system_error(EOPNOTSUPP, std::generic_category(), "mrc_query_device: not an MRC device");
  return a;
}

/// An open software device (mrc_soft_open_device / mrc_soft_close_device).
class SoftDevice {
 public:
  /// Opens with the plane addresses and otherwise default attributes;
  /// `tune` may adjust the attributes before the call.
  explicit SoftDevice(const std::vector<std::string>& planes, void (*tune)(mrc_soft_device_attr&) = nullptr) {
    std::vector<const char*> p;
    for (const auto& s : planes) p.push_back(s.c_str());
    mrc_soft_device_attr a{};
    a.plane_addrs = p.data();
    a.num_planes = static_cast<int>(p.size());
    if (tune) tune(a);
    errno = 0;
    h_ = Handle(check_ptr(mrc_soft_open_device(&a), "mrc_soft_open_device"));
  }
  explicit SoftDevice(const mrc_soft_device_attr& a) {
    errno = 0;
    h_ = Handle(check_ptr(mrc_soft_open_device(&a), "mrc_soft_open_device"));
  }
  ibv_context* get() const { return h_.get(); }
  /// Closes the device: 0, or EBUSY while a context or PD still uses it.
  int close() noexcept { return h_.close(); }
  /// The GID of plane `p` (its address).
  ibv_gid gid(int plane = 0) const {
    ibv_gid g;
    check(mrc_soft_query_gid(get(), plane, &g), "mrc_soft_query_gid");
    return g;
  }
  /// Declares a peer's plane addresses (plane_gids[0] is its GID).
  void set_peer(std::span<const ibv_gid> plane_gids) {
    check(mrc_soft_set_peer(get(), &plane_gids[0], plane_gids.data(), static_cast<int>(plane_gids.size())),
          "mrc_soft_set_peer");
  }
  mrc_soft_stats stats() const {
    mrc_soft_stats s;
    check(mrc_soft_query_stats(get(), &s), "mrc_soft_query_stats");
    return s;
  }
  /// The device's MRC attributes (mrc_query_device).
  mrc_device_attr query() const { return query_device(get()); }

 private:
  using Handle = detail::Owned<ibv_context, mrc_soft_close_device, detail::kCloseDevice>;
  Handle h_;
};

/// One asynchronous event (mrc_get_async_event), acknowledged when this
/// object is destroyed or ack() is called: keep it no longer than needed,
/// since destroying the QP or CQ it names waits for the acknowledgement.
class AsyncEvent {
 public:
  AsyncEvent() = default;
  AsyncEvent(AsyncEvent&& o) noexcept : ev_(o.ev_), held_(std::exchange(o.held_, false)) {}
  AsyncEvent& operator=(AsyncEvent&& o) noexcept {
    if (this != &o) {
      ack();
      ev_ = o.ev_;
      held_ = std::exchange(o.held_, false);
    }
    return *this;
  }
  ~AsyncEvent() { ack(); }
  ibv_event_type type() const { return ev_.event_type; }
  const mrc_async_event& get() const { return ev_; }
  /// Acknowledges now (mrc_ack_async_event); later calls do nothing.
  void ack() noexcept {
    if (std::exchange(held_, false)) mrc_ack_async_event(&ev_);
  }

 private:
  friend class Context;
  mrc_async_event ev_{};
  bool held_ = false;
};

class Context {
 public:
  explicit Context(const SoftDevice& dev, const mrc_context_attr* attr = nullptr) : Context(dev.get(), attr) {}
  explicit Context(ibv_context* dev, const mrc_context_attr* attr = nullptr) {
    mrc_context_attr a{MRC_API_VER_USED};
    if (attr) a = *attr;
    errno = 0;
    h_ = Handle(check_ptr(mrc_create_context(dev, &a), "mrc_create_context"));
  }
  mrc_context* get() const { return h_.get(); }
  /// Destroys the context: 0, or EBUSY while it still owns QPs, CQs,
  /// channels or hints.
  int close() noexcept { return h_.close(); }
  /// The fd that becomes readable when an async event is pending.
  int async_fd() const { return mrc_get_async_fd(get()); }
  /// Waits for the next async event into `ev` (acknowledging the event `ev`
  /// held before): 0, or an errno (EAGAIN if the async fd is non-blocking
  /// and nothing is pending).
  int get_async_event(AsyncEvent& ev) {
    ev.ack();
    const int rc = mrc_get_async_event(get(), &ev.ev_);
    if (rc != 0) return detail::error_of(rc);
    ev.held_ = true;
    return 0;
  }

 private:
  using Handle = detail::Owned<mrc_context, mrc_destroy_context, detail::kDestroyContext>;
  Handle h_;
};

class Pd {
 public:
  explicit Pd(const SoftDevice& dev) {
    errno = 0;
    h_ = Handle(check_ptr(mrc_soft_alloc_pd(dev.get()), "mrc_soft_alloc_pd"));
  }
  ibv_pd* get() const { return h_.get(); }
  /// Frees the PD: 0, or EBUSY while memory regions or QPs use it.
  int close() noexcept { return h_.close(); }

 private:
  using Handle = detail::Owned<ibv_pd, mrc_soft_dealloc_pd, detail::kDeallocPd>;
  Handle h_;
};

class Mr {
 public:
  Mr(const Pd& pd, void* addr, size_t length, int access) {
    errno = 0;
    h_ = Handle(check_ptr(mrc_soft_reg_mr(pd.get(), addr, length, access), "mrc_soft_reg_mr"));
  }
  ibv_mr* get() const { return h_.get(); }
  uint32_t lkey() const { return h_.get()->lkey; }
  uint32_t rkey() const { return h_.get()->rkey; }
  int close() noexcept { return h_.close(); }

 private:
  using Handle = detail::Owned<ibv_mr, mrc_soft_dereg_mr, detail::kDeregMr>;
  Handle h_;
};

class Cq;

/// A CQ event obtained from a channel: its CQ and that CQ's cq_context.
struct CqEvent {
  mrc_cq* cq = nullptr;
  void* cq_context = nullptr;
};

class CompChannel {
 public:
  explicit CompChannel(const Context& ctx) {
    mrc_comp_channel* ch = nullptr;
    errno = 0;
    check(mrc_create_comp_channel(ctx.get(), &ch), "mrc_create_comp_channel");
    h_ = Handle(ch);
  }
  mrc_comp_channel* get() const { return h_.get(); }
  /// Destroys the channel: 0, or EBUSY while a CQ still uses it.
  int close() noexcept { return h_.close(); }
  /// The channel's fd (poll/epoll; fcntl O_NONBLOCK makes get_event return
  /// EAGAIN instead of blocking).
  int fd() const {
    int fd = -1;
    check(mrc_get_comp_channel_fd(get(), &fd), "mrc_get_comp_channel_fd");
    return fd;
  }
  /// Waits for the next CQ event (mrc_get_cq_event): 0, or an errno
  /// (EAGAIN: non-blocking fd and nothing pending, or a spurious wake-up).
  /// Acknowledge every event with Cq::ack_events (or mrc_ack_cq_events on
  /// ev.cq) before destroying the CQ.
  int get_event(CqEvent& ev) {
    const int rc = mrc_get_cq_event(get(), &ev.cq, &ev.cq_context);
    return rc == 0 ? 0 : detail::error_of(rc);
  }

 private:
  using Handle = detail::Owned<mrc_comp_channel, mrc_destroy_comp_channel, detail::kDestroyChannel>;
  Handle h_;
};

class Cq {
 public:
  Cq(const Context& ctx, int cqe, CompChannel* channel = nullptr, void* cq_context = nullptr) {
    errno = 0;
    h_ = Handle(check_ptr(mrc_create_cq(ctx.get(), cqe, cq_context, channel ? channel->get() : nullptr, 0),
                          "mrc_create_cq"));
  }
  mrc_cq* get() const { return h_.get(); }
  /// Destroys the CQ: 0, or EBUSY while a QP uses it.
  int close() noexcept { return h_.close(); }
  /// mrc_poll_cq: completions written to `out` (>= 0), or -1 with errno.
  int poll(std::span<ibv_wc> out) { return mrc_poll_cq(get(), static_cast<int>(out.size()), out.data()); }
  /// Arms the CQ: its next completion posts an event to its channel.
  /// Throws EINVAL for a CQ without a channel.
  void arm(bool solicited_only = false) {
    check(mrc_req_notify_cq(get(), solicited_only ? 1 : 0), "mrc_req_notify_cq");
  }
  /// Acknowledges `n` events obtained for this CQ.
  void ack_events(unsigned int n) { mrc_ack_cq_events(get(), n); }

 private:
  using Handle = detail::Owned<mrc_cq, mrc_destroy_cq, detail::kDestroyCq>;
  Handle h_;
};

/// A QP hint (traffic pattern for resource and first-window sizing).
class QpHint {
 public:
  /// A hint with the counts of `attr` (0 = not given).
  QpHint(const Context& ctx, const mrc_qp_hint_attr& attr) {
    mrc_qp_hint_init_attr ia{attr};
    errno = 0;
    h_ = Handle(check_ptr(mrc_create_qp_hint(ctx.get(), &ia), "mrc_create_qp_hint"));
  }
  mrc_qp_hint* get() const { return h_.get(); }
  /// Destroys the hint: 0, or EBUSY while a QP refers to it.
  int close() noexcept { return h_.close(); }
  /// The hint's counts (0 = not given).
  mrc_qp_hint_attr query() const {
    mrc_qp_hint_attr a{};
    constexpr int kCounts =
        MRC_QP_HINT_NUM_QPS_PER_PEER | MRC_QP_HINT_NUM_SEND_PEERS | MRC_QP_HINT_NUM_REMOTE_RECV_PEERS;
    check(mrc_query_qp_hint(get(), &a, kCounts), "mrc_query_qp_hint");
    return a;
  }
  /// Sets the counts named in `mask` (enum mrc_qp_hint_attr_mask) from `attr`.
  void modify(const mrc_qp_hint_attr& attr, int mask) {
    mrc_qp_hint_attr a = attr;
    check(mrc_modify_qp_hint(get(), &a, mask), "mrc_modify_qp_hint");
  }

 private:
  using Handle = detail::Owned<mrc_qp_hint, mrc_destroy_qp_hint, detail::kDestroyHint>;
  Handle h_;
};

/// What Qp::query returns: the attributes asked for, and the creation ones.
struct QpAttrs {
  ibv_qp_attr ibv{};
  mrc_qp_attr mrc{};
  mrc_qp_init_attr init{};
};

class Qp {
 public:
  /// A QP in RESET with the given queue sizes.
  Qp(const Context& ctx, const Cq& send_cq, const Cq& recv_cq, const Pd& pd, uint32_t max_send_wr,
     uint32_t max_recv_wr = 128, uint32_t max_send_sge = 1, uint32_t max_inline = 0, void* qp_context = nullptr) {
    mrc_qp_init_attr a{};
    a.qp_context = qp_context;
    a.send_cq = send_cq.get();
    a.recv_cq = recv_cq.get();
    a.pd = pd.get();
    a.cap.max_send_wr = max_send_wr;
    a.cap.max_recv_wr = max_recv_wr;
    a.cap.max_send_sge = max_send_sge;
    a.cap.max_inline_data = max_inline;
    errno = 0;
    h_ = Handle(check_ptr(mrc_create_qp(ctx.get(), &a), "mrc_create_qp"));
  }
  /// A QP from full creation attributes; `a.cap` receives the granted sizes.
  explicit Qp(const Context& ctx, mrc_qp_init_attr& a) {
    errno = 0;
    h_ = Handle(check_ptr(mrc_create_qp(ctx.get(), &a), "mrc_create_qp"));
  }
  mrc_qp* get() const { return h_.get(); }
  /// Destroys the QP (its outstanding work completes flushed): 0 or errno.
  int close() noexcept { return h_.close(); }
  uint32_t qpn() const {
    uint32_t n = 0;
    check(mrc_get_qpn(get(), &n), "mrc_get_qpn");
    return n;
  }
  /// mrc_modify_qp, throwing on failure (setup path).
  void modify(ibv_qp_attr& a, int ibv_mask, mrc_qp_attr* m = nullptr, uint32_t mrc_mask = 0) {
    check(mrc_modify_qp(get(), &a, ibv_mask, m, static_cast<int>(mrc_mask)), "mrc_modify_qp");
  }
  /// mrc_query_qp for the attributes named in the masks (and the creation
  /// attributes), throwing on failure.
  QpAttrs query(int ibv_mask, uint32_t mrc_mask) const {
    QpAttrs q;
    check(mrc_query_qp(get(), &q.ibv, ibv_mask, &q.mrc, static_cast<int>(mrc_mask), &q.init), "mrc_query_qp");
    return q;
  }
  /// Brings the QP from RESET to RTS against a peer: its GID, QPN and first
  /// PSN; `my_psn` is the first PSN sent. Without `m`, the reference's
  /// example values (MPR 8 each way, 128 WriteIMMs each way, ACK timeout
  /// 14, 7 linear retries then infinite exponential ones) on the device's
  /// default EV and CC profiles. With `m`, every attribute of `m` is
  /// applied at the transition that takes it: the EV and CC profile ids and
  /// the hint (when not NULL) at INIT, max_wimm_dest, mpr_dest and cap at
  /// RTR, max_wimm, mpr, retry and timeout at RTS; a non-zero vendor_cfg is
  /// passed on too (MRC_QP_VENDOR_CFG). A value the C call refuses throws
  /// std::system_error naming mrc_modify_qp; the QP is then left in the
  /// last state reached.
  void connect(const ibv_gid& peer_gid, uint32_t peer_qpn, uint32_t peer_psn, uint32_t my_psn,
               ibv_mtu mtu = IBV_MTU_4096, const mrc_qp_attr* m = nullptr) {
    mrc_qp_attr attrs{};
    uint32_t init_mask = 0, rtr_mask = MRC_QP_MAX_WIMM_DEST | MRC_QP_MPR_DEST;
    if (m) {
      attrs = *m;
      init_mask = MRC_EV_PROFILE_ID | MRC_CC_PROFILE_ID | (m->qp_hint ? uint32_t{MRC_QP_HINT} : 0u);
      rtr_mask |= MRC_QP_CAP;
      for (uint8_t b : m->vendor_cfg) {
        if (b != 0) {
          rtr_mask |= MRC_QP_VENDOR_CFG;
          break;
        }
      }
    } else {
      attrs.mpr.mpr = attrs.mpr.mpr_dest = 8;
      attrs.wimm.max_wimm = attrs.wimm.max_wimm_dest = 128;
      attrs.timeout = 14;
      attrs.retry.linear_cnt = 7;
      attrs.retry.exp_cnt = MRC_QP_RETRY_EXP_INFINITE;
    }
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    modify(a, IBV_QP_STATE, &attrs, init_mask);
    a.qp_state = IBV_QPS_RTR;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = peer_gid;
    a.dest_qp_num = peer_qpn;
    a.rq_psn = peer_psn;
    a.path_mtu = mtu;
    modify(a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU, &attrs, rtr_mask);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = my_psn;
    modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN, &attrs, MRC_QP_MAX_WIMM | MRC_QP_MPR | MRC_QP_RETRY_CNT | MRC_QP_TIMEOUT);
  }
  /// mrc_post_send: 0 or an errno (bad_wr names the first WR not posted).
  int post(ibv_send_wr& wr, ibv_send_wr** bad = nullptr) {
    ibv_send_wr* b = nullptr;
    return detail::error_of(mrc_post_send(get(), &wr, bad ? bad : &b));
  }
  int post(ibv_recv_wr& wr, ibv_recv_wr** bad = nullptr) {
    ibv_recv_wr* b = nullptr;
    return detail::error_of(mrc_post_recv(get(), &wr, bad ? bad : &b));
  }

 private:
  using Handle = detail::Owned<mrc_qp, mrc_destroy_qp, detail::kDestroyQp>;
  Handle h_;
};

}  // namespace mrc
