// mrc.hpp -- a header-only C++ RAII wrapper over the C API (<mrc/mrc.h>,
// <mrc/mrc_soft.h>).
//
// Every object frees itself in the right order when it goes out of scope;
// failures of creating calls throw std::system_error with the errno and the
// call's name. Data-path calls (post, poll) stay the C calls' shape and
// return errno values: they are hot, and their errors are answers, not
// exceptions. Nothing here holds state beyond the C handle.
//
//   mrc::SoftDevice dev({"127.0.0.1"});
//   mrc::Context ctx(dev);
//   mrc::Pd pd(dev);
//   mrc::Mr mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
//   mrc::Cq cq(ctx, 256);
//   mrc::Qp qp(ctx, cq, cq, pd, 128);
#pragma once

#include <cerrno>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "mrc/mrc.h"
#include "mrc/mrc_soft.h"

namespace mrc {

/// Throws std::system_error(rc) naming `what` when rc != 0.
inline void check(int rc, const char* what) {
  if (rc != 0) throw std::system_error(rc, std::generic_category(), what);
}

template <class T>
T* check_ptr(T* p, const char* what) {
  if (!p) throw std::system_error(errno ? errno : EINVAL, std::generic_category(), what);
  return p;
}

namespace detail {
template <class T, int (*Destroy)(T*)>
struct Deleter {
  void operator()(T* p) const noexcept { (void)Destroy(p); }
};
template <class T, int (*Destroy)(T*)>
using Handle = std::unique_ptr<T, Deleter<T, Destroy>>;
}  // namespace detail

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
    h_.reset(check_ptr(mrc_soft_open_device(&a), "mrc_soft_open_device"));
  }
  explicit SoftDevice(const mrc_soft_device_attr& a) {
    errno = 0;
    h_.reset(check_ptr(mrc_soft_open_device(&a), "mrc_soft_open_device"));
  }
  ibv_context* get() const { return h_.get(); }
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

 private:
  detail::Handle<ibv_context, mrc_soft_close_device> h_;
};

class Context {
 public:
  explicit Context(const SoftDevice& dev, const mrc_context_attr* attr = nullptr) {
    errno = 0;
    h_.reset(check_ptr(mrc_create_context(dev.get(), attr), "mrc_create_context"));
  }
  mrc_context* get() const { return h_.get(); }

 private:
  detail::Handle<mrc_context, mrc_destroy_context> h_;
};

class Pd {
 public:
  explicit Pd(const SoftDevice& dev) {
    errno = 0;
    h_.reset(check_ptr(mrc_soft_alloc_pd(dev.get()), "mrc_soft_alloc_pd"));
  }
  ibv_pd* get() const { return h_.get(); }

 private:
  detail::Handle<ibv_pd, mrc_soft_dealloc_pd> h_;
};

class Mr {
 public:
  Mr(const Pd& pd, void* addr, size_t length, int access) {
    errno = 0;
    h_.reset(check_ptr(mrc_soft_reg_mr(pd.get(), addr, length, access), "mrc_soft_reg_mr"));
  }
  ibv_mr* get() const { return h_.get(); }
  uint32_t lkey() const { return h_->lkey; }
  uint32_t rkey() const { return h_->rkey; }

 private:
  detail::Handle<ibv_mr, mrc_soft_dereg_mr> h_;
};

class CompChannel {
 public:
  explicit CompChannel(const Context& ctx) {
    errno = 0;
    h_.reset(check_ptr(mrc_create_comp_channel(ctx.get()), "mrc_create_comp_channel"));
  }
  mrc_comp_channel* get() const { return h_.get(); }
  int fd() const { return mrc_get_comp_channel_fd(get()); }

 private:
  detail::Handle<mrc_comp_channel, mrc_destroy_comp_channel> h_;
};

class Cq {
 public:
  Cq(const Context& ctx, int cqe, CompChannel* channel = nullptr, void* cq_context = nullptr) {
    errno = 0;
    h_.reset(check_ptr(mrc_create_cq(ctx.get(), cqe, cq_context, channel ? channel->get() : nullptr, 0),
                       "mrc_create_cq"));
  }
  mrc_cq* get() const { return h_.get(); }
  /// mrc_poll_cq: completions written to `out` (>= 0), or -1 with errno.
  int poll(std::span<ibv_wc> out) { return mrc_poll_cq(get(), static_cast<int>(out.size()), out.data()); }
  void arm() { check(mrc_req_notify_cq(get(), 0), "mrc_req_notify_cq"); }

 private:
  detail::Handle<mrc_cq, mrc_destroy_cq> h_;
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
    h_.reset(check_ptr(mrc_create_qp(ctx.get(), &a), "mrc_create_qp"));
  }
  explicit Qp(const Context& ctx, mrc_qp_init_attr& a) {
    errno = 0;
    h_.reset(check_ptr(mrc_create_qp(ctx.get(), &a), "mrc_create_qp"));
  }
  mrc_qp* get() const { return h_.get(); }
  uint32_t qpn() const { return mrc_get_qpn(get()); }
  /// mrc_modify_qp, throwing on failure (setup path).
  void modify(ibv_qp_attr& a, int ibv_mask, mrc_qp_attr* m = nullptr, uint32_t mrc_mask = 0) {
    check(mrc_modify_qp(get(), &a, ibv_mask, m, mrc_mask), "mrc_modify_qp");
  }
  /// Brings the QP from RESET to RTS against a peer: its GID, QPN and first
  /// PSN; `my_psn` is the first PSN sent; MRC attributes as the reference's
  /// example values unless `m` is given.
  void connect(const ibv_gid& peer_gid, uint32_t peer_qpn, uint32_t peer_psn, uint32_t my_psn,
               ibv_mtu mtu = IBV_MTU_4096, const mrc_qp_attr* m = nullptr) {
    mrc_qp_attr attrs{};
    if (m) {
      attrs = *m;
    } else {
      attrs.mpr.mpr = attrs.mpr.mpr_dest = 8;
      attrs.wimm.max_wimm = attrs.wimm.max_wimm_dest = 128;
      attrs.timeout = 14;
      attrs.retry.linear_cnt = 7;
      attrs.retry.exp_cnt = MRC_QP_RETRY_EXP_INFINITE;
    }
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    modify(a, IBV_QP_STATE);
    a.qp_state = IBV_QPS_RTR;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = peer_gid;
    a.dest_qp_num = peer_qpn;
    a.rq_psn = peer_psn;
    a.path_mtu = mtu;
    modify(a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU, &attrs,
           MRC_QP_MAX_WIMM_DEST | MRC_QP_MPR_DEST);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = my_psn;
    modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN, &attrs, MRC_QP_MAX_WIMM | MRC_QP_MPR | MRC_QP_RETRY_CNT | MRC_QP_TIMEOUT);
  }
  /// mrc_post_send: 0 or an errno (bad_wr names the first WR not posted).
  int post(ibv_send_wr& wr, ibv_send_wr** bad = nullptr) {
    ibv_send_wr* b = nullptr;
    return mrc_post_send(get(), &wr, bad ? bad : &b);
  }
  int post(ibv_recv_wr& wr, ibv_recv_wr** bad = nullptr) {
    ibv_recv_wr* b = nullptr;
    return mrc_post_recv(get(), &wr, bad ? bad : &b);
  }

 private:
  detail::Handle<mrc_qp, mrc_destroy_qp> h_;
};

}  // namespace mrc
