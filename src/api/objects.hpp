// SPDX-License-Identifier: BSD-2-Clause
// The objects behind the C API's opaque pointers, and the translation
// between verbs types and the core's. Internal to src/api.
//
// Ownership: a SoftDevice owns its rt::Device and is what the ibv_context
// pointer points to (the ibv_context is its first member). Contexts, PDs
// and MRs count themselves on the device, so closing a device that still
// has them fails with EBUSY instead of leaving dangling objects. Every
// entry point catches exceptions (std::bad_alloc) and turns them into
// ENOMEM: no C++ exception crosses the C boundary.
#pragma once

#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/ctl/profiles.hpp"
#include "mrc.h"
#include "mrc_ctl.h"
#include "openmrc/mrc_soft.h"
#include "platform/epoll.hpp"
#include "platform/sock_addr.hpp"
#include "runtime/device.hpp"

namespace mrc::api {

/// A peer's plane addresses from its GID (a configured device's rule), or
/// none to reach it at its GID on every plane.
using PeerPlanes = std::function<std::vector<platform::SockAddr>(const platform::SockAddr& gid)>;

/// An EV format profile as OCP's API configured it (api/ctl.cc): the
/// core keeps only the field widths.
struct FmtShape {
  uint32_t mode = 0;                          ///< enum mrc_ctl_ev_fmt_mode, 0 before MODE
  std::vector<mrc_ctl_ev_fmt_field> fields;
  uint32_t fixed_width = 0;                   ///< bits of the fixed prefix
};

/// An EV profile as OCP's API configured it, and what its EVs expand
/// through in the core (the format's widths and the EV fields).
struct EvShape {
  uint32_t mode = 0;                          ///< enum mrc_ctl_ev_mode
  uint64_t fmt_id = 0;                        ///< FMT_ID as given
  std::array<uint8_t, 32> comp{};             ///< SRV6_COMP as given (the prefix's value)
  std::vector<uint32_t> widths;
  std::vector<core::ctl::Field> fields;
};

struct SoftDevice {
  ibv_context ibv{};               ///< what applications hold (first member)
  ibv_device ibv_dev{};
  std::unique_ptr<rt::Device> rt;
  /// mrc_soft_device_attr.transport: what every QP of the device runs.
  core::Transport transport = core::Transport::mrc;
  std::mutex mu;                   ///< guards the counts and qps
  int contexts = 0;
  int pds = 0;
  int mrs = 0;
  std::unordered_map<uint32_t, mrc_qp*> qps;   ///< by QPN, for routing async events
  std::unordered_map<uint32_t, mrc_cq*> cqs;   ///< by core CQ id
  std::vector<mrc_context*> ctxs;
  /// Set for a device opened through ibv_open_device (api/verbs.cc):
  /// mrc_modify_qp declares a peer it does not know yet by this rule.
  PeerPlanes peer_planes;
  /// The node's controller (mrc_ctl.h, api/ctl.cc): created on the first
  /// controller call. Lock order: ctl_mu, then mu, then the device's own.
  std::mutex ctl_mu;
  std::unique_ptr<core::ctl::Controller> ctl;     ///< guarded by ctl_mu
  mrc_cq* ev_cq = nullptr;                        ///< the EV event CQ, if created (ctl_mu)
  /// NSCC configurations a CC profile query points to (ctl_mu).
  std::unordered_map<uint64_t, mrc_ctl_cc_nscc_cfg> cc_configs;
  /// What the C API knows of each configured format and EV profile beyond
  /// the core's model (ctl_mu): api/ctl.cc translates OCP's attributes.
  std::unordered_map<uint64_t, FmtShape> fmt_shapes;
  std::unordered_map<uint64_t, EvShape> ev_shapes;
  /// mrc_ctl_probe_ev, mrc_ctl_port_status_update: one call at a time per device (ep_call_mu,
  /// held for the whole call); the engine thread hands it the answers
  /// through route_event (ep_wait.mu, taken with no other lock held).
  std::mutex ep_call_mu;
  struct EpWait {
    std::mutex mu;
    std::condition_variable cv;
    bool active = false;
    bool port_status = false;
    std::vector<uint16_t> pending;     ///< request ids not answered yet
    std::vector<mrc_ctl_ev_probe_rsp> rsps;  ///< answers in arrival order
  } ep_wait;
};

/// The SoftDevice behind an ibv_context, or nullptr if it is not one of
/// ours (looked up in the registry of open devices, never dereferenced
/// blindly).
SoftDevice* soft_device(ibv_context* ctx);
/// The open SoftDevice whose ibv_device `dev` is, or nullptr.
SoftDevice* soft_device_of(const ibv_device* dev);

/// Live handles: the QPs, CQs and MRs the API gave out and has not
/// destroyed. A destroy call claims its argument here (handle_take) before
/// it reads it, so a second destroy of the same handle, or two at once,
/// fails with EINVAL instead of reading freed memory; a destroy that fails
/// (EBUSY) puts the handle back (handle_add). A handle whose memory a new
/// object of the same kind reuses cannot be told from that object.
void handle_add(const void* h);
/// True, and the handle is no longer live, if `h` was live.
bool handle_take(const void* h);

struct SoftPd {
  ibv_pd ibv{};
  SoftDevice* dev = nullptr;
  uint32_t core_pd = 0;
};

struct SoftMr {
  ibv_mr ibv{};
  SoftDevice* dev = nullptr;
};

/// A queue of events behind the fd an application waits on.
///
/// `count` holds one count per queued event (a semaphore eventfd; never
/// blocks). The fd applications see is `ep`, an epoll instance watching
/// `count` and, for a completion channel of a device its applications
/// progress, the device's receive sockets (rt::Device::watch_sockets): a
/// packet no engine thread is waiting for wakes the application, whose
/// mrc_get_cq_event then runs the engines itself. Readiness can therefore
/// be spurious (a packet that completes nothing), which the verbs loop
/// allows. Whether a get blocks follows the O_NONBLOCK flag the
/// application sets on ep's fd, as it would on a verbs channel's.
template <class T>
struct EventQueue {
  /// Tags of ep's entries.
  static constexpr uint64_t kCountTag = 0;
  static constexpr uint64_t kSocketTag = 1;
  platform::Epoll ep;
  platform::EventFd count;
  bool sockets = false;   ///< ep watches the device's sockets
  std::mutex mu;
  std::deque<T> q;
  /// Creates ep and count. False (errno set) if the kernel refuses.
  bool open() {
    auto e = platform::Epoll::create();
    auto c = platform::EventFd::create(true);
    if (!e || !c) return false;
    ep = std::move(*e);
    count = std::move(*c);
    return static_cast<bool>(ep.add(count.fd(), platform::events::kReadable, kCountTag));
  }
  int fd() const { return ep.fd(); }
  void push(const T& v) {
    {
      std::lock_guard<std::mutex> g(mu);
      q.push_back(v);
    }
    if (getter == this) {
      ++held;  // this thread's get queued it while running the engines: it takes it
      return;
    }
    (void)count.signal();
  }
  /// A get that runs the engines on its thread (wait_event) is the first
  /// to see what they queue: pushes from that thread, during that turn,
  /// are counted in `held` instead of `count` (two system calls saved per
  /// message); the get takes one and signals the rest.
  static inline thread_local const EventQueue* getter = nullptr;
  static inline thread_local uint32_t held = 0;
  /// Removes the queued events `pred` matches, with their counts (their
  /// object is being destroyed). A count another thread took already
  /// (its get then finds the queue short and says EAGAIN) is not waited for.
  template <class Pred>
  void drop(Pred pred) {
    std::lock_guard<std::mutex> g(mu);
    const auto n = std::erase_if(q, pred);
    for (size_t i = 0; i < n; ++i) (void)count.drain();
  }
};

/// Events handed out (mrc_get_cq_event, mrc_get_async_event) and not yet
/// acknowledged for one object; destroying it waits for zero, as verbs does.
class PendingAcks {
 public:
  void add(uint64_t n = 1) {
    std::lock_guard<std::mutex> g(mu_);
    out_ += n;
  }
  void ack(uint64_t n = 1) {
    std::lock_guard<std::mutex> g(mu_);
    out_ -= std::min(out_, n);
    if (out_ == 0) zero_.notify_all();
  }
  void wait_zero() {
    std::unique_lock<std::mutex> lk(mu_);
    zero_.wait(lk, [&] { return out_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable zero_;
  uint64_t out_ = 0;
};

/// Overwrites a secure QP's keys (mrc_soft_set_qp_secure) so that they do
/// not linger in freed or reused memory; the pointer form also frees it.
inline void erase_secure(core::QpSecure& s) { explicit_bzero(&s, sizeof s); }
inline void erase_secure(std::unique_ptr<core::QpSecure>& p) {
  if (!p) return;
  erase_secure(*p);
  p.reset();
}

}  // namespace mrc::api

struct mrc_context {
  mrc::api::SoftDevice* dev = nullptr;
  uint32_t api_version = 0;
  mrc::api::EventQueue<mrc_async_event> async;
  std::mutex mu;
  int cqs = 0, qps = 0, channels = 0, hints = 0;
};

struct mrc_comp_channel {
  mrc_context* ctx = nullptr;
  mrc::api::EventQueue<mrc_cq*> events;
  std::atomic<int> cqs{0};
};

struct mrc_cq {
  mrc_context* ctx = nullptr;
  mrc::rt::CompletionQueue* rcq = nullptr;
  void* cq_context = nullptr;
  mrc_comp_channel* channel = nullptr;
  int cqe = 0;
  std::atomic<int> qps{0};
  mrc::api::PendingAcks acks;
  /// An EV event CQ (mrc_ctl_create_ev_event_cq): rcq is null, events
  /// live in the device's controller.
  bool ev_events = false;
  std::atomic<bool> ev_armed{false};   ///< mrc_req_notify_cq on an EV event CQ
};

struct mrc_qp_hint {
  mrc_context* ctx = nullptr;
  mrc_qp_hint_attr attr{};
  std::atomic<int> qps{0};
};

struct mrc_qp {
  mrc_context* ctx = nullptr;
  uint32_t qpn = 0;
  mrc_qp_init_attr init{};
  mrc::api::SoftPd* pd = nullptr;
  mrc_qp_hint* hint = nullptr;
  union ibv_gid dgid {};
  /// Controller profiles the QP holds (0 = device default), from INIT
  /// until RESET or destroy; written under the device's ctl_mu.
  uint64_t ctl_ev = 0;
  uint64_t ctl_cc = 0;
  std::mutex post_mu;              ///< serializes posts to this QP
  mrc::api::PendingAcks acks;
  /// Keys given by mrc_soft_set_qp_secure, applied at RTR and then erased
  /// (mrc::api::erase_secure); guarded by post_mu.
  std::unique_ptr<mrc::core::QpSecure> secure;
};
