// SPDX-License-Identifier: BSD-2-Clause
// Device: the progress engine. Its thread's loop (engine_main), one
// iteration (receive, timers, publish completions, poll and send), the
// turns an application takes itself (app_progress), who watches the
// sockets, and the publication of completions into CQ rings.

#include "runtime/device.hpp"

#include <algorithm>

#include "platform/sched.hpp"
#include "runtime/device_internal.hpp"

namespace mrc::rt {

using namespace detail;

namespace {

constexpr Duration kMaxSleep = Duration::ms(50);

/// An application that posted or polled this recently is driving: the
/// engine threads stay out of its way (engine_main).
constexpr Duration kAppDrivingWindow = Duration::ms(1);
/// The soonest an engine thread wakes for a timer while an application
/// drives (engine_main).
constexpr Duration kAppTimerSlack = Duration::us(200);
/// Once a millisecond of bulk data is seen, the device counts as moving bulk
/// data this long after it (Device::bulk_now).
constexpr Duration kBulkHold = Duration::ms(10);

}  // namespace

void Device::kick(Engine& e) {
  if (e.sleeping.load(std::memory_order_acquire)) (void)e.wake.signal();
}

// ----------------------------------------------------------------- engine

bool Device::iterate(Engine& e, std::vector<StagedCompletion>& staged, std::vector<core::Event>& events, Turn turn) {
  // A post's turn does not look for packets: the posting thread wants its
  // work on the wire, and an empty receive is a system call per plane on
  // that path (a polling application's or the engine's turn takes them).
  // Nor does the engine thread's turn beside an application that takes
  // them itself (engine_main).
  const bool got = (turn == Turn::engine || turn == Turn::poll) && receive_all(e);
  {
    std::lock_guard g(e.mu);
    const Time now = clock_.now();
    if (turn == Turn::poll) e.app_rx_ps.store(now.ps(), std::memory_order_relaxed);
    if (e.ep->next_timeout() <= now) e.ep->handle_timeout(now);
    collect_events(e);
    staged.swap(e.staged);
    events.swap(e.events_out);
    ++e.st.engine_iterations;
  }
  // Publishing before polling packets is what makes completions safe
  // (file comment): no packet polled below belongs to a completed WR.
  // A message arrived for the application (a receive completion): what
  // this turn would send is that message's SACK (see below).
  const bool received = turn == Turn::poll && std::any_of(staged.begin(), staged.end(), [](const StagedCompletion& c) {
                                                 return c.wc.opcode == core::WcOpcode::recv_rdma_with_imm;
                                               });
  publish(staged, events);
  staged.clear();
  if (sink_)
    for (const core::Event& ev : events) sink_(ev);
  events.clear();
  // A polling application that just received a message is about to
  // answer it, and it runs this iteration: sending now (the message's SACK,
  // a system call) would hold its answer back. Its next turn (the post of
  // its answer) sends it, after that turn's data (send_slots). An
  // application that stops polling instead (a server computing its answer)
  // would leave it to the engine thread's millisecond of deference, and
  // the writer's tail probe fires first; so once the engine thread had to
  // send one, each later one is handed to it at once (a kick), until the
  // application's own turn is first again. (Kicking for every message made
  // the engine thread preempt the pollers: a 2-byte ping-pong took 10.3 us
  // one way, median, and 18-32 us on average; 9.0 and 10-13 us without.)
  // Send completions are not handed off: a writer's next turn has more
  // data.
  if (received) {
    e.handoff_waiting.store(true, std::memory_order_release);
    if (!e.app_answers.load(std::memory_order_acquire)) {
      e.handoff.store(true, std::memory_order_release);
      kick(e);
    }
    return true;
  }
  size_t n = 0;
  bool more = false;
  {
    // Lock order everywhere: peers_mu_, then an engine's mutex.
    std::shared_lock<std::shared_mutex> peers(peers_mu_);
    std::lock_guard g(e.mu);
    n = poll_transmits(e, clock_.now());
    more = e.ep->has_pending_transmit();
  }
  if (n > 0) {
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) bytes += e.slots[i].tx.payload_len;
    data_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    std::lock_guard<std::mutex> g(e.send_mu);
    send_slots(e, n);
  }
  if (!more && e.handoff_waiting.load(std::memory_order_acquire) &&
      e.handoff_waiting.exchange(false, std::memory_order_acq_rel))
    e.app_answers.store(turn == Turn::post || turn == Turn::poll, std::memory_order_release);
  return got || n > 0;
}

// An application thread's iteration of `e` (the caller holds e.run_mu).
void Device::app_iterate(Engine& e, Turn turn) {
  thread_local std::vector<StagedCompletion> staged;
  thread_local std::vector<core::Event> events;
  (void)iterate(e, staged, events, turn);
}

bool Device::try_iterate(Engine& e, Turn turn) {
  if (!e.run_mu.try_lock()) return false;  // its thread (or another application) is at it
  app_iterate(e, turn);
  e.run_mu.unlock();
  return true;
}

Status Device::watch_sockets_locked(platform::Epoll& ep, uint64_t tag, bool on) {
  for (auto& e : engines_)
    for (const platform::UdpSocket& s : e->rx) {
      Status st = on ? ep.add(s.fd(), platform::events::kReadable | platform::events::kExclusive, tag) : ep.del(s.fd());
      if (!st) return st;
    }
  return {};
}

Status Device::watch_sockets(platform::Epoll& ep, uint64_t tag) {
  std::lock_guard<std::mutex> g(watch_mu_);
  if (channels_watch_.load(std::memory_order_relaxed))
    if (Status st = watch_sockets_locked(ep, tag, true); !st) {
      (void)watch_sockets_locked(ep, tag, false);  // the ones added
      return st;
    }
  watchers_.push_back({&ep, tag});
  return {};
}

void Device::unwatch_sockets(platform::Epoll& ep) {
  std::lock_guard<std::mutex> g(watch_mu_);
  std::erase_if(watchers_, [&](const Watcher& w) { return w.ep == &ep; });
}

void Device::set_channels_watch_locked(bool on) {
  if (channels_watch_.load(std::memory_order_relaxed) == on) return;
  // A socket already (or not yet) in a channel's epoll is the only
  // failure, and leaves it as wanted.
  for (const Watcher& w : watchers_) (void)watch_sockets_locked(*w.ep, w.tag, on);
  channels_watch_.store(on, std::memory_order_relaxed);
}

bool Device::bulk_now() {
  if (cfg_.bulk_bytes_per_ms == 0) return true;
  const int64_t now = clock_.now().ps();
  const int64_t start = bulk_window_ps_.load(std::memory_order_relaxed);
  const int64_t since = now - start;
  if (start == kNotDriving || since >= kAppDrivingWindow.count_ps()) {
    // A window of a millisecond or more ends: its rate decides (racing
    // arms from several threads may each end one; any answer will do).
    // The first call only starts one.
    const uint64_t bytes = data_bytes_.load(std::memory_order_relaxed);
    const uint64_t moved = bytes - bulk_window_bytes_.exchange(bytes, std::memory_order_relaxed);
    bulk_window_ps_.store(now, std::memory_order_relaxed);
    // DeviceConfig::bulk_bytes_per_ms: a blocking ping-pong of small
    // messages moves a few kilobytes a millisecond, write_bw -e megabytes
    // (in bursts: a 4 MiB window, then a pause for its acknowledgements,
    // hence the hold).
    if (start != kNotDriving && static_cast<double>(moved) * static_cast<double>(kAppDrivingWindow.count_ps()) >=
                                    static_cast<double>(cfg_.bulk_bytes_per_ms) * static_cast<double>(since))
      bulk_until_ps_.store(now + kBulkHold.count_ps(), std::memory_order_relaxed);
  }
  return now < bulk_until_ps_.load(std::memory_order_relaxed);
}

void Device::drive_from_channel() {
  app_polled_ps_.store(clock_.now().ps(), std::memory_order_relaxed);
  for (auto& e : engines_) {
    std::lock_guard<std::mutex> run(e->run_mu);
    app_iterate(*e, Turn::poll);
  }
  // An application that sleeps through a whole transfer arms once, at its
  // start: bulk data is noticed here too.
  if (bulk_now()) share_sockets(true);
}

void Device::share_sockets(bool bulk) {
  // Under watch_mu_, so that two threads deciding at once (an arm and a
  // drive at a window's end) leave the channels and the engine threads
  // agreeing on who watches: never neither.
  std::lock_guard<std::mutex> g(watch_mu_);
  set_channels_watch_locked(!bulk);
  if (bulk)
    engines_take_sockets();
  else
    app_polled_ps_.store(clock_.now().ps(), std::memory_order_relaxed);
}

void Device::engines_take_sockets() {
  // Only an engine thread asleep on its timers alone needs waking: one
  // asleep on its sockets takes the next packet anyway, and waking it for
  // nothing cost a blocking ping-pong a third of its latency on 2 cores
  // (docs/performance.md). Pairs with engine_main's store of
  // `quiet` then load of app_polled_ps_: seq_cst on both sides, so at least
  // one of them sees the other.
  app_polled_ps_.store(kNotDriving, std::memory_order_seq_cst);
  for (auto& e : engines_)
    if (e->quiet.load(std::memory_order_seq_cst)) (void)e->wake.signal();  // out of the timers-only sleep
}

void Device::app_progress(bool driving) {
  for (auto& e : engines_) (void)(driving ? app_turn(*e, Turn::poll) : try_iterate(*e, Turn::engine));
}

bool Device::app_turn(Engine& e, Turn turn) {
  // Stamped before the attempt: an application that posts or polls is
  // driving, and the engine thread stays out of its way (engine_main).
  app_polled_ps_.store(clock_.now().ps(), std::memory_order_relaxed);
  return try_iterate(e, turn);
}

void Device::engine_main(Engine& e) {
  std::vector<StagedCompletion> staged;
  std::vector<core::Event> events;
  platform::EpollEvent evs[40];
  const bool watches = carrier_ && e.index == 0;
  while (!stop_.load(std::memory_order_acquire)) {
    if (watches && (carrier_->readable || clock_.now() >= carrier_->next_poll)) poll_carrier();
    // While an application polls (DeviceConfig::app_progress, within the
    // last millisecond) each of its polls is an iteration: it takes the
    // packets as they come and runs the timers as they fall due. This
    // thread then only fills the gaps between its polls: it iterates when
    // the application is not iterating itself, and never queues behind it
    // on run_mu. (Blocking there put this thread to sleep and woke it again
    // on every iteration the application finished: a 1 MiB write_bw client
    // switched 7,000 times a second, preempting the peer's engine on 2 cores.)
    const int64_t now_ps = clock_.now().ps();
    const int64_t since_app = now_ps - app_polled_ps_.load(std::memory_order_relaxed);
    const bool app_driving = since_app < kAppDrivingWindow.count_ps();
    bool busy = false, deferred = false;
    // A handoff (iterate) is work the application left to this thread: it
    // waits for the lock like any turn, and its timers (a SACK's coalescing
    // delay) are kept to the microsecond.
    const bool handed = e.handoff.exchange(false, std::memory_order_acq_rel);
    if (e.yields && (!app_driving || handed)) set_yields(e, false);
    if (app_driving && !handed) {
      // While the application takes the packets itself (it polls, or the
      // channel it sleeps on wakes it), this thread runs the timers only.
      // Taking a packet here cost a blocking ping-pong a second wake-up
      // whenever this thread's timer fell as the answer arrived: the
      // engine published the completion and woke the application through
      // its channel's event count (docs/performance.md). An
      // application that only posts (its post turns do not receive) gets
      // its SACKs taken here, as late as this thread's timers allow.
      const bool app_receives = now_ps - e.app_rx_ps.load(std::memory_order_relaxed) < kAppTimerSlack.count_ps();
      if (e.run_mu.try_lock()) {
        busy = iterate(e, staged, events, app_receives ? Turn::timers : Turn::engine);
        e.run_mu.unlock();
      } else {
        deferred = true;  // the application is iterating right now
      }
    } else {
      std::lock_guard<std::mutex> run(e.run_mu);
      busy = iterate(e, staged, events);
    }
    if (busy || cfg_.busy_poll) continue;
    // Idle: sleep until a packet, a kick or the next timer. The flag is set
    // before the last look so a post in between is not missed.
    e.sleeping.store(true, std::memory_order_release);
    bool pending = false;
    Time deadline = Time::never();
    if (!deferred) {
      std::lock_guard g(e.mu);
      const Time now = clock_.now();
      // Packets held back by pacing wait for their plane to reopen.
      const Time release = e.ep->has_pending_transmit() ? pace_release(e) : Time::never();
      pending = release <= now || e.ep->next_timeout() <= now;
      deadline = std::min(e.ep->next_timeout(), release);
    }
    if (!pending) {
      Duration wait = kMaxSleep;
      if (!deadline.is_never()) wait = std::min(wait, std::max(Duration{}, deadline - clock_.now()));
      // While the application drives, its turns run the timers: wake for
      // kicks, when it has stopped for a millisecond (to take over), and
      // for a timer, but never sooner than kAppTimerSlack from now, so an
      // application that keeps polling is not preempted for every timer of
      // its QPs, while one that stopped (a server computing its answer)
      // leaves its SACK timers late by that much at most, well inside the
      // peer's tail-probe and loss ages. (When the application was
      // iterating, the next timer is unknown: the slack.)
      bool quiet = app_driving && !handed;
      if (quiet) {
        e.quiet.store(true, std::memory_order_seq_cst);
        // An application that armed its CQ since (on_arm_) is about to
        // sleep: watch the sockets after all.
        if (app_polled_ps_.load(std::memory_order_seq_cst) == kNotDriving) {
          quiet = false;
          e.quiet.store(false, std::memory_order_relaxed);
        }
      }
      // An application polling for small messages is preempted by every
      // wake-up of this thread on its CPU: on 2 cores two polling
      // applications and their engine threads made the average one-way
      // latency half again the typical (docs/performance.md).
      // While it polls, this thread's wake-ups (its timers, to see whether
      // the application has stopped) wait for the application's time slice
      // to end, or run at once on an idle CPU. Not while bulk data moves:
      // there this thread's turns between the application's own are work
      // done on the other core.
      const bool yield = quiet && !bulk_now();
      if (yield != e.yields) set_yields(e, yield);
      if (quiet) {
        const Duration until_idle = Duration::ps(std::max<int64_t>(0, kAppDrivingWindow.count_ps() - since_app));
        wait = std::min(until_idle, deferred ? kAppTimerSlack : std::max(wait, kAppTimerSlack));
      }
      ++e.st.engine_sleeps;
      auto r = (quiet ? e.quiet_epoll : e.epoll).wait(evs, wait);
      e.quiet.store(false, std::memory_order_relaxed);
      if (r)
        for (size_t i = 0; i < *r; ++i) {
          if (evs[i].user_data == kWakeTag) (void)e.wake.drain();
          if (evs[i].user_data == kLinkTag) carrier_->readable = true;
        }
    }
    e.sleeping.store(false, std::memory_order_release);
  }
}

void Device::set_yields(Engine& e, bool yields) {
  // A failure leaves the thread as it was, which is correct, only slower.
  if (platform::set_thread_yields_on_wake(yields)) e.yields = yields;
}

// Moves the core's completions and events out (under the engine lock).
void Device::collect_events(Engine& e) {
  core::WorkCompletion wcs[64];
  for (const auto& [id, serial] : e.cqs) {
    while (size_t k = e.ep->poll_cq(id, wcs))
      for (size_t i = 0; i < k; ++i) e.staged.push_back(StagedCompletion{wcs[i], serial});
  }
  while (auto ev = e.ep->poll_event()) {
    if (auto* pr = std::get_if<core::ProbeResult>(&*ev)) e.ep_wire.erase(pr->req_id);
    // Every engine's core reports a local port change; the device reports
    // it once (engine 0's), not once per engine.
    if (auto* pe = std::get_if<core::PortEvent>(&*ev); pe && pe->local && e.index != 0) continue;
    e.events_out.push_back(*ev);
  }
}

// Pushes staged completions into their rings and fires the notify hook of
// armed CQs; counts the core's CQ overflows. Under objects_mu_ (not the
// engine's lock), so a CQ cannot be destroyed meanwhile.
void Device::publish(std::vector<StagedCompletion>& staged, std::vector<core::Event>& events) {
  if (staged.empty() && events.empty()) return;
  std::lock_guard<std::mutex> o(objects_mu_);
  auto find = [this](auto pred) -> CompletionQueue* {
    for (CompletionQueue* cq : cqs_)
      if (pred(*cq)) return cq;
    return nullptr;
  };
  for (const core::Event& ev : events)
    if (auto* ce = std::get_if<core::CqErrorEvent>(&ev))
      if (CompletionQueue* cq = find([&](const CompletionQueue& c) { return c.core_id_ == ce->cq; }))
        cq->overflows_.fetch_add(1, std::memory_order_relaxed);
  CompletionQueue* cq = nullptr;
  thread_local std::vector<CompletionQueue*> filled;  // CQs this call pushed to
  filled.clear();
  for (const StagedCompletion& sc : staged) {
    if (!cq || cq->serial_ != sc.cq_serial)
      cq = find([&](const CompletionQueue& c) { return c.serial_ == sc.cq_serial; });
    if (!cq) continue;  // destroyed meanwhile
    bool pushed;
    {
      std::lock_guard<std::mutex> p(cq->producer_mu_);
      pushed = cq->ring_.push(sc.wc);
    }
    if (!pushed) {
      // The application let the CQ fill: IBV_EVENT_CQ_ERR once, as the
      // core does for its own queue.
      if (cq->overflows_.fetch_add(1, std::memory_order_relaxed) == 0)
        events.push_back(core::CqErrorEvent{cq->core_id_});
      continue;
    }
    if (filled.empty() || filled.back() != cq) filled.push_back(cq);
  }
  // The arms are looked at after every push, never between two: an
  // application woken by a batch's first completion can poll it, arm again
  // and sleep while the rest is pushed, and a push after the look would
  // notify nobody (a blocking application hung with a completion in its
  // ring, about 1 run in 10 of 8 MiB of WRITEs on 2 loaded cores). The
  // fence pairs with arm()'s: either the arming application's poll after
  // its arm sees these pushes, or this look sees its arm.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (CompletionQueue* f : filled)
    if (f->armed_.load(std::memory_order_relaxed) && f->armed_.exchange(false, std::memory_order_acq_rel) && f->notify_)
      f->notify_();
}

}  // namespace mrc::rt
