// SPDX-License-Identifier: BSD-2-Clause
// Device: PDs, memory regions, CQs, QPs and profiles. Each exists in every
// engine's endpoint with the same ids and keys (the calls that change them
// lock every engine); the verbs of one QP go to the engine that owns it.

#include "runtime/device.hpp"

#include <algorithm>
#include <cassert>

#include "platform/memory_guard.hpp"
#include "runtime/device_internal.hpp"

namespace mrc::rt {

using namespace detail;

// ----------------------------------------------------------------- CQ

size_t CompletionQueue::poll(std::span<core::WorkCompletion> out) {
  // An empty CQ answers without the consumer lock: applications spin here.
  if (ring_.size() == 0) {
    if (!progress_) return 0;
    progress_();
    if (ring_.size() == 0) return 0;
  }
  std::lock_guard<std::mutex> g(consumer_mu_);
  return ring_.pop(out);
}

// ----------------------------------------------------------------- control calls
// PDs, regions and CQs exist in every engine's endpoint with the same ids
// and keys: objects_mu_ keeps their creation order the same everywhere, and
// changes lock every engine, check, then apply, so they happen everywhere
// or nowhere.

std::vector<std::unique_lock<SpinThenBlockMutex>> Device::lock_all_engines() {
  std::vector<std::unique_lock<SpinThenBlockMutex>> locks;
  for (auto& e : engines_) locks.emplace_back(e->mu);
  return locks;
}

Result<uint32_t> Device::alloc_pd() {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  auto id = engines_[0]->ep->alloc_pd();
  if (!id) return id.error();  // the same limit everywhere
  for (size_t i = 1; i < engines_.size(); ++i) {
    auto r = engines_[i]->ep->alloc_pd();
    assert(r && *r == *id && "engines allocate PDs in lockstep");
    (void)r;
  }
  return id;
}

Status Device::dealloc_pd(uint32_t pd) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  for (auto& e : engines_)
    if (e->ep->pd_in_use(pd)) return Errc::busy;
  for (auto& e : engines_)
    if (Status s = e->ep->dealloc_pd(pd); !s) return s;
  return {};
}

Result<core::MemoryRegion> Device::reg_mr(const void* addr, size_t length, uint32_t access, uint32_t pd) {
  // Real memory only: a NULL or unmapped range would be a fault in the
  // engine on the first WRITE (one system call; platform/memory_guard.hpp).
  if (!platform::range_mapped(addr, length)) return Errc::invalid_argument;
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  auto first = engines_[0]->ep->reg_mr(reinterpret_cast<uint64_t>(addr), length, access, true, pd);
  if (!first) return first;
  // The other engines take the same keys, so any QP checks any region.
  for (size_t i = 1; i < engines_.size(); ++i) {
    if (auto r = engines_[i]->ep->reg_mr_as(*first); !r) {
      for (size_t j = 0; j < i; ++j) (void)engines_[j]->ep->dereg_mr(first->lkey);
      return r.error();
    }
  }
  return first;
}

Status Device::dereg_mr(uint32_t lkey) {
  {
    std::lock_guard<std::mutex> o(objects_mu_);
    auto locks = lock_all_engines();
    // A WR of any engine may hold it: refused unless none does.
    for (auto& e : engines_)
      if (e->ep->mr_refs(lkey) > 0) return Errc::busy;
    for (auto& e : engines_)
      if (Status s = e->ep->dereg_mr(lkey); !s) return s;
  }
  // A send in progress may still read the region's last retransmission:
  // wait for it (file comment).
  for (auto& e : engines_) std::lock_guard<std::mutex> g(e->send_mu);
  return {};
}

Result<CompletionQueue*> Device::create_cq(uint32_t capacity) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  auto id = engines_[0]->ep->create_cq(capacity);
  if (!id) return id.error();
  for (size_t i = 1; i < engines_.size(); ++i) {
    auto r = engines_[i]->ep->create_cq(capacity);
    assert(r && *r == *id && "engines create CQs in lockstep");
    (void)r;
  }
  auto* cq = new CompletionQueue(*id, capacity, next_cq_serial_++);
  if (cfg_.app_progress) {
    // A poll after arming (the verbs idiom that closes the race with a
    // completion before the arm) is the application's last look before it
    // sleeps on its channel: it runs the engines but does not claim to be
    // driving, or the engine threads would leave the packets to it. If the
    // channel watches the sockets, a packet that came since the last turn
    // wakes the application at once anyway: that look only sends what is
    // due (a post's turn, no receive: a system call per plane saved).
    cq->progress_ = [this, cq] {
      if (!cq->armed_.load(std::memory_order_acquire)) {
        app_progress(true);
      } else if (cq->channel_sockets_.load(std::memory_order_relaxed)) {
        for (auto& e : engines_) (void)try_iterate(*e, Turn::post);
      } else {
        app_progress(false);
      }
    };
    cq->on_arm_ = [this, cq] {
      if (cq->channel_sockets_.load(std::memory_order_relaxed)) {
        // Its application sleeps on a channel that watches the sockets and
        // runs the engines when a packet wakes it (watch_sockets): it goes
        // on driving, and the engine threads stay asleep on their timers,
        // so the packet wakes it alone. Not while bulk data flows: the
        // application would do all the engines' work on its own thread,
        // and be woken by every packet an engine thread busy elsewhere
        // had not taken yet (write_bw -e lost 11-17 % of its bandwidth).
        // The channels then stop watching the sockets until it stops.
        share_sockets(bulk_now());
      } else {
        engines_take_sockets();
      }
    };
  }
  cqs_.push_back(cq);
  for (auto& e : engines_) e->cqs.emplace_back(*id, cq->serial_);
  return cq;
}

Status Device::destroy_cq(CompletionQueue* cq) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto it = std::find(cqs_.begin(), cqs_.end(), cq);
  if (it == cqs_.end()) return Errc::not_found;
  auto locks = lock_all_engines();
  for (auto& e : engines_)
    if (auto info = e->ep->cq_info(cq->core_id()); info && info->qps > 0) return Errc::busy;
  for (auto& e : engines_) {
    if (Status s = e->ep->destroy_cq(cq->core_id()); !s) return s;
    std::erase(e->cqs, std::pair<uint32_t, uint64_t>{cq->core_id(), cq->serial_});
  }
  cqs_.erase(it);
  // Completions an engine staged for it are dropped at publication (the
  // serial no longer matches a live CQ).
  delete cq;
  return {};
}

Result<uint32_t> Device::create_qp(const core::QpInit& init) {
  Engine& e = *engines_[next_engine_.fetch_add(1) % engines_.size()];
  std::lock_guard g(e.mu);
  return e.ep->create_qp(init);
}

Status Device::destroy_qp(uint32_t qpn) {
  Engine& e = engine_of(qpn);
  {
    std::lock_guard g(e.mu);
    if (Status s = e.ep->destroy_qp(qpn); !s) return s;
  }
  kick(e);  // the flushed completions
  std::lock_guard<std::mutex> g(e.send_mu);
  return {};
}

Status Device::modify_qp(uint32_t qpn, const core::QpAttr& attr, uint32_t mask) {
  Engine& e = engine_of(qpn);
  Status s;
  {
    std::lock_guard g(e.mu);
    s = e.ep->modify_qp(clock_.now(), qpn, attr, mask);
  }
  kick(e);
  return s;
}

Status Device::set_ev_profile(uint64_t id, const core::EvProfile& p, std::string* why) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  for (auto& e : engines_)
    if (Status s = e->ep->set_ev_profile(id, p, why); !s) return s;
  return {};
}

Status Device::set_cc_profile(uint64_t id, const core::CcProfile& p, std::string* why) {
  std::lock_guard<std::mutex> o(objects_mu_);
  auto locks = lock_all_engines();
  for (auto& e : engines_)
    if (Status s = e->ep->set_cc_profile(id, p, why); !s) return s;
  return {};
}

bool Device::ev_sendable(uint32_t plane, uint32_t value) const {
  const uint64_t first = uint64_t{cfg_.ev_port_base} + uint64_t{plane} * cfg_.evs_per_plane;
  return plane < num_planes() && value >= first && value < first + cfg_.evs_per_plane;
}

Status Device::set_ev_denied(uint32_t qpn, uint32_t value, bool denied) {
  Engine& e = engine_of(qpn);
  Status s;
  {
    std::lock_guard g(e.mu);
    s = e.ep->set_ev_denied(clock_.now(), qpn, value, denied);
  }
  kick(e);  // an EV back in service may let the QP send
  return s;
}

std::optional<core::QpInfo> Device::query_qp(uint32_t qpn) {
  Engine& e = engine_of(qpn);
  std::lock_guard g(e.mu);
  return e.ep->query_qp(qpn);
}

size_t Device::query_evs(uint32_t qpn, std::span<core::EvInfo> out) {
  Engine& e = engine_of(qpn);
  std::lock_guard g(e.mu);
  return e.ep->query_evs(qpn, out);
}

uint32_t Device::random_psn() {
  std::lock_guard g(engines_[0]->mu);
  return engines_[0]->ep->random_psn();
}

Status Device::post_send(uint32_t qpn, const core::SendWr& wr) {
  Engine& e = engine_of(qpn);
  Status s;
  {
    std::lock_guard g(e.mu);
    s = e.ep->post_send(clock_.now(), qpn, wr);
  }
  // With app_progress the posting thread sends at once if the engine is
  // free (no thread to wake); otherwise the engine thread, awake or kicked,
  // finds the packet on its next look.
  if (!cfg_.app_progress || !app_turn(e, Turn::post)) kick(e);
  return s;
}

Status Device::post_recv(uint32_t qpn, const core::RecvWr& wr) {
  Engine& e = engine_of(qpn);
  std::lock_guard g(e.mu);
  return e.ep->post_recv(qpn, wr);
}

}  // namespace mrc::rt
