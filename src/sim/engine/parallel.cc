// SPDX-License-Identifier: BSD-2-Clause
#include "sim/engine/parallel.hpp"

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <time.h>

namespace mrc::sim {

namespace {
double thread_cpu_now_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

ParallelEngine::ParallelEngine(std::vector<Simulator*> parts, Duration lookahead, Simulator* global)
    : parts_(std::move(parts)), global_(global), lookahead_(lookahead), done_until_(Time::from_ps(-1)) {
  if (parts_.empty() || lookahead_ <= Duration{}) {
    std::fprintf(stderr, "mrc-sim: internal error: a parallel engine needs partitions and a lookahead above 0\n");
    std::abort();
  }
  out_.resize(parts_.size() * parts_.size());
  stop_at_.assign(parts_.size(), Time::never());
  cpu_s_.assign(parts_.size(), 0.0);
  busy_s_.assign(parts_.size(), 0.0);
}

void ParallelEngine::send(uint32_t src, uint32_t dst, Time at, Node* node, uint64_t tag, uint64_t key) {
  if (at < parts_[src]->now() + lookahead_) {
    std::fprintf(stderr,
                 "mrc-sim: internal error: a message from partition %u to %u arrives %lld ps after it was sent, "
                 "under the lookahead of %lld ps\n",
                 src, dst, static_cast<long long>((at - parts_[src]->now()).count_ps()),
                 static_cast<long long>(lookahead_.count_ps()));
    std::abort();
  }
  out_[size_t{src} * parts_.size() + dst].push_back(Message{at, key, node, tag});
}

void ParallelEngine::deliver_outboxes() {
  const size_t n = parts_.size();
  for (size_t dst = 0; dst < n; ++dst) {
    for (size_t src = 0; src < n; ++src) {
      auto& box = out_[src * n + dst];
      for (const Message& m : box) parts_[dst]->schedule(m.at, m.node, m.tag, m.key);
      messages_ += box.size();
      batches_ += !box.empty();
      box.clear();
    }
  }
}

Time ParallelEngine::first_event() const {
  Time first = Time::never();
  for (Simulator* s : parts_) first = min(first, s->next_event_time());
  return first;
}

void ParallelEngine::run_globals(Time end) {
  if (!global_) return;
  for (;;) {
    const Time g = global_->next_event_time();
    if (g.is_never() || g > first_event()) return;
    // A global event scheduled (by a partition) inside a window already run
    // runs right after it.
    const Time at = g > done_until_ ? g : done_until_ + Duration::ps(1);
    if (at > end) return;
    for (Simulator* s : parts_) s->advance_to(at);
    in_globals_ = true;
    global_->run_until(at);
    in_globals_ = false;
    // What the global events sent to other partitions (a transmission they
    // let start) is due no earlier than the lookahead after `at`, but may
    // fall inside the next window: into the queues now.
    deliver_outboxes();
  }
}

bool ParallelEngine::next_window(Time end) {
  deliver_outboxes();
  if (on_barrier_) on_barrier_();
  Time stop = Time::never();
  for (Time& t : stop_at_) {
    stop = min(stop, t);
    t = Time::never();
  }
  if (!stop.is_never()) {
    stopped_ = true;
    stop_time_ = stop;
    return false;
  }
  run_globals(end);
  const Time first = first_event();
  if (first.is_never() || first > end) return false;
  // Exclusive of first + lookahead: a message sent at `first` or later
  // arrives there at the earliest. A global event clips the window: it runs
  // between windows, before the partitions' events at its time.
  window_end_ = min(end, first + lookahead_ - Duration::ps(1));
  if (global_ && !global_->next_event_time().is_never())
    window_end_ = min(window_end_, global_->next_event_time() - Duration::ps(1));
  done_until_ = window_end_;
  // A global event a partition schedules during the window (at a time
  // inside it) is clamped to the window's end, and so runs right after it.
  if (global_) global_->advance_to(window_end_ + Duration::ps(1));
  ++windows_;
  return true;
}

void ParallelEngine::run_window(uint32_t p) {
  Simulator* s = parts_[p];
  // A stop() ends the run after this window: the partition still runs the
  // rest of it, as every other partition does.
  for (;;) {
    s->run_until(window_end_);
    if (!s->stopped()) return;
    stop_at_[p] = min(stop_at_[p], s->now());
  }
}

bool ParallelEngine::run_until(Time end) {
  stopped_ = false;
  stop_time_ = Time::never();
  if (parts_.size() == 1 && !global_) return parts_[0]->run_until(end);
  bool more = next_window(end);
  if (parts_.size() == 1) {
    while (more) {
      run_window(0);
      more = next_window(end);
    }
  } else {
    // The completion step runs on one thread while the others wait: it alone
    // touches the outboxes of every pair, the global events and the window.
    auto on_barrier = [this, end, &more]() noexcept {
      const double t0 = thread_cpu_now_s();
      double longest = 0;
      for (double& b : busy_s_) {
        longest = std::max(longest, b);
        b = 0;
      }
      more = next_window(end);
      span_s_ += longest + (thread_cpu_now_s() - t0);
    };
    std::barrier sync(static_cast<std::ptrdiff_t>(parts_.size()), on_barrier);
    auto work = [this, &more, &sync](uint32_t p) {
      const double cpu0 = thread_cpu_now_s();
      while (more) {
        const double w0 = thread_cpu_now_s();
        run_window(p);
        busy_s_[p] = thread_cpu_now_s() - w0;
        sync.arrive_and_wait();
      }
      cpu_s_[p] += thread_cpu_now_s() - cpu0;
    };
    std::vector<std::thread> threads;
    for (uint32_t p = 1; p < parts_.size(); ++p) threads.emplace_back(work, p);
    work(0);
    for (auto& t : threads) t.join();
  }
  if (stopped_) return true;
  // Nothing is left by `end`: this only sets the clocks.
  bool pending = global_ && global_->pending_events() > 0;
  for (Simulator* s : parts_) pending = s->run_until(end) || pending;
  if (!end.is_never() && end > done_until_) done_until_ = end;
  return pending;
}

}  // namespace mrc::sim
