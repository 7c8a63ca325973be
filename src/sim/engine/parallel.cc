// SPDX-License-Identifier: BSD-2-Clause
#include "sim/engine/parallel.hpp"

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <time.h>

namespace mrc::sim {

namespace {
double thread_cpu_now_s() {
  timespec ts{};  // CLOCK_THREAD_CPUTIME_ID is a system call, not a vDSO read
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

double ParallelEngine::cpu_now() const { return parts_.size() > 1 ? thread_cpu_now_s() : 0.0; }

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
  for (uint32_t p = 0; p < parts_.size(); ++p) local_.push_back(p);
}

void ParallelEngine::set_ranks(Ranks* ranks, std::vector<uint32_t> rank_of) {
  const uint32_t n = partitions();
  std::vector<uint32_t> per_rank(ranks ? ranks->size() : 0, 0);
  bool ok = ranks && rank_of.size() == n;
  for (size_t p = 0; ok && p < n; ++p) {
    ok = rank_of[p] < per_rank.size();
    if (ok) ++per_rank[rank_of[p]];
  }
  for (uint32_t c : per_rank) ok = ok && c > 0;
  if (!ok) {
    std::fprintf(stderr,
                 "mrc-sim: internal error: every rank needs a partition of its own, and every partition a rank\n");
    std::abort();
  }
  ranks_ = ranks;
  rank_of_ = std::move(rank_of);
  local_.clear();
  for (uint32_t p = 0; p < n; ++p)
    if (rank_of_[p] == ranks_->rank()) local_.push_back(p);
  remote_out_.assign(size_t{n} * ranks_->size(), {});
  remote_sent_.assign(size_t{n} * n, 0);
}

void ParallelEngine::register_target(Node* n) {
  if (n) target_id_.emplace(n, static_cast<uint32_t>(targets_.size()));
  targets_.push_back(n);
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
  if (ranks_ && rank_of_[dst] != ranks_->rank()) {
    if (rank_of_[src] != ranks_->rank()) return;  // the owner of `src` sends it
    const auto it = target_id_.find(node);
    if (it == target_id_.end()) {
      std::fprintf(stderr,
                   "mrc-sim: internal error: a message from partition %u to %u (another process) targets a node "
                   "that was not registered (ParallelEngine::register_target)\n",
                   src, dst);
      std::abort();
    }
    // A record: time, key, target, destination partition, then the tag's bytes.
    auto& buf = remote_out_[size_t{src} * ranks_->size() + rank_of_[dst]];
    const int64_t t = at.ps();
    const uint32_t ids[2] = {it->second, dst};
    const size_t o = buf.size();
    buf.resize(o + sizeof t + sizeof key + sizeof ids);
    std::memcpy(buf.data() + o, &t, sizeof t);
    std::memcpy(buf.data() + o + sizeof t, &key, sizeof key);
    std::memcpy(buf.data() + o + sizeof t + sizeof key, ids, sizeof ids);
    node->export_tag(*parts_[src], tag, buf);
    ++remote_sent_[size_t{src} * parts_.size() + dst];
    return;
  }
  if (ranks_ && rank_of_[src] != ranks_->rank()) return;  // the owner of `src` sends it
  out_[size_t{src} * parts_.size() + dst].push_back(Message{at, key, node, tag});
}

void ParallelEngine::exchange_remote() {
  const uint32_t nr = ranks_->size(), me = ranks_->rank();
  const size_t n = parts_.size();
  std::vector<std::vector<uint8_t>> out(nr);
  for (uint32_t src : local_) {
    for (uint32_t r = 0; r < nr; ++r) {
      auto& b = remote_out_[size_t{src} * nr + r];
      out[r].insert(out[r].end(), b.begin(), b.end());
      b.clear();
    }
    for (size_t dst = 0; dst < n; ++dst) {
      uint64_t& c = remote_sent_[src * n + dst];
      messages_ += c;
      batches_ += c != 0;
      c = 0;
    }
  }
  const double c0 = cpu_now();
  const auto in = ranks_->exchange(out);
  in_ranks_s_ += cpu_now() - c0;
  for (uint32_t r = 0; r < nr; ++r) {
    if (r == me) continue;
    const uint8_t* p = in[r].data();
    const uint8_t* const e = p + in[r].size();
    while (p < e) {
      int64_t t = 0;
      uint64_t key = 0;
      uint32_t ids[2] = {0, 0};
      bool ok = e - p >= static_cast<std::ptrdiff_t>(sizeof t + sizeof key + sizeof ids);
      if (ok) {
        std::memcpy(&t, p, sizeof t);
        std::memcpy(&key, p + sizeof t, sizeof key);
        std::memcpy(ids, p + sizeof t + sizeof key, sizeof ids);
        p += sizeof t + sizeof key + sizeof ids;
        ok = ids[0] < targets_.size() && ids[1] < n && rank_of_[ids[1]] == me;
      }
      if (!ok) {
        std::fprintf(stderr,
                     "mrc-sim: internal error: rank %u sent a message record that does not fit this model (do "
                     "all ranks run the same mrc-sim with the same flags?)\n",
                     r);
        std::abort();
      }
      Node* node = targets_[ids[0]];
      if (!node) {
        std::fprintf(stderr,
                     "mrc-sim: internal error: rank %u sent a message to target %u, which this process did not build "
                     "(it runs partition %u)\n",
                     r, ids[0], ids[1]);
        std::abort();
      }
      const uint64_t tag = node->import_tag(*parts_[ids[1]], p);
      parts_[ids[1]]->schedule(Time::from_ps(t), node, tag, key);
    }
  }
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
  if (ranks_) exchange_remote();
}

Time ParallelEngine::local_first_event() const {
  Time first = Time::never();
  for (uint32_t p : local_) first = min(first, parts_[p]->next_event_time());
  return first;
}

Time ParallelEngine::first_event() {
  Time first = local_first_event();
  if (ranks_) {
    int64_t t = first.ps();
    ranks_->min({&t, 1});
    first = Time::from_ps(t);
  }
  return first;
}

Time ParallelEngine::run_globals(Time end, Time first) {
  if (!global_) return first;
  for (;;) {
    const Time g = global_->next_event_time();
    if (g.is_never() || g > first) return first;
    // A global event scheduled (by a partition) inside a window already run
    // runs right after it.
    const Time at = g > done_until_ ? g : done_until_ + Duration::ps(1);
    if (at > end) return first;
    for (uint32_t p : local_) parts_[p]->advance_to(at);
    in_globals_ = true;
    global_->run_until(at);
    in_globals_ = false;
    // What the global events sent to other partitions (a transmission they
    // let start) is due no earlier than the lookahead after `at`, but may
    // fall inside the next window: into the queues now.
    deliver_outboxes();
    first = first_event();
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
  Time first = local_first_event();
  if (ranks_) {
    // One reduction for all three: the earliest stop of any process, the
    // earliest pending event, and the longest share of the window just run
    // (a maximum, as the minimum of its negation; in ns of CPU time).
    int64_t v[3] = {stop.ps(), first.ps(), -static_cast<int64_t>(window_busy_s_ * 1e9)};
    const double c0 = cpu_now();
    ranks_->min(v);
    in_ranks_s_ += cpu_now() - c0;
    stop = Time::from_ps(v[0]);
    first = Time::from_ps(v[1]);
    window_busy_s_ = static_cast<double>(-v[2]) * 1e-9;
  }
  if (!stop.is_never()) {
    stopped_ = true;
    stop_time_ = stop;
    return false;
  }
  first = run_globals(end, first);
  if (first.is_never() || first > end) return false;
  // The window ends where the lookahead grid's cell holding `first` ends:
  // a message sent at `first` or later arrives a lookahead later at the
  // earliest, so past the cell. Not at first + lookahead: `first` can
  // differ with the partitioning (a port feeding a cut pipe schedules
  // transmissions that an uncut one catches up on silently), and what
  // happens at a window's end (a stop ends the run there, a global event
  // a partition schedules runs there) must not. Cells are the same however
  // the model is split. A global event clips the window: it runs between
  // windows, before the partitions' events at its time.
  const int64_t cell = lookahead_.count_ps();
  window_end_ = min(end, Time::from_ps((first.ps() / cell + 1) * cell - 1));
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

bool ParallelEngine::barrier_step(Time end) {
  const double t0 = cpu_now();
  const double waited0 = in_ranks_s_;
  const bool more = next_window(end);
  // The barrier's own steps, less the collectives' CPU time: a rank that
  // finished its share early spins there, waiting for the longest share,
  // which window_busy_s_ counts already.
  span_s_ += window_busy_s_ + (cpu_now() - t0) - (in_ranks_s_ - waited0);
  return more;
}

bool ParallelEngine::run_until(Time end) {
  stopped_ = false;
  stop_time_ = Time::never();
  if (parts_.size() == 1 && !global_) return parts_[0]->run_until(end);
  run_windows(end, next_window(end));
  if (stopped_) return true;
  // Nothing is left by `end`: this only sets the clocks.
  bool pending = global_ && global_->pending_events() > 0;
  for (uint32_t p : local_) pending = parts_[p]->run_until(end) || pending;
  if (ranks_) {
    uint64_t v = pending;
    ranks_->max({&v, 1});
    pending = v != 0;
  }
  if (!end.is_never() && end > done_until_) done_until_ = end;
  return pending;
}

uint32_t ParallelEngine::threads() const {
  const auto n = static_cast<uint32_t>(local_.size());
  return threads_ == 0 ? n : std::min(threads_, n);
}

void ParallelEngine::run_windows(Time end, bool more) {
  // Thread t runs local_[t], local_[t + T], ...: each window's shares one
  // after another, each timed on its own (busy_s_, the critical path's
  // figure for as many cores as partitions).
  const uint32_t T = threads();
  auto run_shares = [this, T](uint32_t t) {
    // One clock read per share, not two (each read is a system call): a
    // share ends where the next begins.
    const double start = cpu_now();
    double w0 = start;
    for (size_t i = t; i < local_.size(); i += T) {
      const uint32_t p = local_[i];
      run_window(p);
      const double w1 = cpu_now();
      busy_s_[p] = w1 - w0;
      cpu_s_[p] += busy_s_[p];
      w0 = w1;
    }
    return w0 - start;
  };
  // The completion step runs on one thread while the others wait: it alone
  // touches the outboxes of every pair, the global events and the window.
  auto step = [this, end, &more] {
    window_busy_s_ = 0;
    for (double& b : busy_s_) {
      window_busy_s_ = std::max(window_busy_s_, b);
      b = 0;
    }
    more = barrier_step(end);
  };
  // Thread t's loop; `arrive` ends its window (the step, or the barrier
  // that runs it).
  auto work = [this, &more, &run_shares](uint32_t t, auto&& arrive) {
    const double cpu0 = cpu_now();
    double busy = 0;
    while (more) {
      busy += run_shares(t);
      arrive();
    }
    // The thread's time outside its shares: its waits and barrier steps.
    cpu_s_[local_[t]] += cpu_now() - cpu0 - busy;
  };
  if (T == 1) {
    work(0, step);
    return;
  }
  std::barrier sync(static_cast<std::ptrdiff_t>(T), [&step]() noexcept { step(); });
  auto worker = [&work, &sync](uint32_t t) { work(t, [&sync] { sync.arrive_and_wait(); }); };
  std::vector<std::thread> threads;
  for (uint32_t t = 1; t < T; ++t) threads.emplace_back(worker, t);
  worker(0);
  for (auto& th : threads) th.join();
}

}  // namespace mrc::sim
