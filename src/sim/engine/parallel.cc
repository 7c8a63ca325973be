// SPDX-License-Identifier: BSD-2-Clause
#include "sim/engine/parallel.hpp"

#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace mrc::sim {

ParallelEngine::ParallelEngine(std::vector<Simulator*> parts, Duration lookahead)
    : parts_(std::move(parts)), lookahead_(lookahead) {
  if (parts_.empty() || lookahead_ <= Duration{}) {
    std::fprintf(stderr, "mrc-sim: internal error: a parallel engine needs partitions and a lookahead above 0\n");
    std::abort();
  }
  out_.resize(parts_.size() * parts_.size());
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

bool ParallelEngine::next_window(Time end) {
  const size_t n = parts_.size();
  for (size_t dst = 0; dst < n; ++dst) {
    for (size_t src = 0; src < n; ++src) {
      auto& box = out_[src * n + dst];
      for (const Message& m : box) parts_[dst]->schedule(m.at, m.node, m.tag, m.key);
      messages_ += box.size();
      box.clear();
    }
  }
  Time first = Time::never();
  for (Simulator* s : parts_) first = min(first, s->next_event_time());
  if (first.is_never() || first > end) return false;
  // Exclusive of first + lookahead: a message sent at `first` or later
  // arrives there at the earliest.
  window_end_ = min(end, first + lookahead_ - Duration::ps(1));
  ++windows_;
  return true;
}

bool ParallelEngine::run_until(Time end) {
  if (parts_.size() == 1) return parts_[0]->run_until(end);
  bool more = next_window(end);
  // The completion step runs on one thread while the others wait: it alone
  // touches the outboxes of every pair and the window.
  auto on_barrier = [this, end, &more]() noexcept { more = next_window(end); };
  std::barrier sync(static_cast<std::ptrdiff_t>(parts_.size()), on_barrier);
  auto work = [this, &more, &sync](Simulator* s) {
    while (more) {
      s->run_until(window_end_);
      sync.arrive_and_wait();
    }
  };
  std::vector<std::thread> threads;
  for (size_t p = 1; p < parts_.size(); ++p) threads.emplace_back(work, parts_[p]);
  work(parts_[0]);
  for (auto& t : threads) t.join();
  // Nothing is left by `end`: this only sets the clocks.
  bool pending = false;
  for (Simulator* s : parts_) pending = s->run_until(end) || pending;
  return pending;
}

}  // namespace mrc::sim
