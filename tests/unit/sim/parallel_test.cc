// SPDX-License-Identifier: BSD-2-Clause
// Tests for sim/engine/parallel.hpp: a model whose nodes pass tokens to each
// other, with many events at the same picosecond and state that depends on
// the order they run in, gives the same trace at every node on 1, 2, 3 and 4
// partitions as on the sequential engine.
#include "sim/engine/parallel.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "util/prng.hpp"

namespace mrc::sim {
namespace {

constexpr uint32_t kNodes = 12;
constexpr uint32_t kTokens = 16;
const Duration kLookahead = Duration::ps(500);
const Time kEnd = Time::from_ps(400'000);

struct Model;

// A node: each event it runs is recorded, mixes the node's state and its
// random stream, and passes the token on to a random node, sooner when that
// node shares the partition. Delays are multiples of 100 ps so that events
// often fall at the same time, and which of them runs first changes the
// node's stream and everything after.
class TokenNode final : public Node {
 public:
  TokenNode(Model* m, uint32_t id) : m_(m), id_(id), rng_(1000 + id), keys_(id + 1) {}
  void on_event(Simulator& sim, uint64_t tag) override;
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }
  std::vector<std::pair<int64_t, uint64_t>> trace;
  uint64_t state = 0;

 private:
  Model* m_;
  uint32_t id_;
  Prng rng_;
  EventKeys keys_;
};

struct Model {
  /// `with_global`: the engine gets a global Simulator (windows even on one
  /// partition), for the global events of the tests below.
  explicit Model(uint32_t partitions, bool with_global = false) : parts(partitions) {
    for (uint32_t p = 0; p < partitions; ++p) sims.push_back(std::make_unique<Simulator>(1));
    std::vector<Simulator*> ptrs;
    for (auto& s : sims) ptrs.push_back(s.get());
    engine = std::make_unique<ParallelEngine>(ptrs, kLookahead, with_global ? &global : nullptr);
    for (uint32_t i = 0; i < kNodes; ++i) nodes.push_back(std::make_unique<TokenNode>(this, i));
    EventKeys start(1000);
    for (uint32_t t = 0; t < kTokens; ++t) {
      const uint32_t n = (t * 5) % kNodes;
      sim_of(n).schedule(Time::from_ps(100 * (t % 3)), nodes[n].get(), t, start.next());
    }
  }
  uint32_t part_of(uint32_t node) const { return node % parts; }
  Simulator& sim_of(uint32_t node) { return *sims[part_of(node)]; }
  void send(uint32_t from, uint32_t to, Time at, uint64_t tag, uint64_t key) {
    if (part_of(from) == part_of(to))
      sim_of(to).schedule(at, nodes[to].get(), tag, key);
    else
      engine->send(part_of(from), part_of(to), at, nodes[to].get(), tag, key);
  }

  uint32_t parts;
  Simulator global{1};
  std::vector<std::unique_ptr<Simulator>> sims;
  std::unique_ptr<ParallelEngine> engine;
  std::vector<std::unique_ptr<TokenNode>> nodes;
};

void TokenNode::on_event(Simulator& sim, uint64_t tag) {
  trace.emplace_back(sim.now().ps(), tag);
  state = state * 1'000'003 + tag * 7 + static_cast<uint64_t>(sim.now().ps());
  const uint64_t r = rng_.next_u64() ^ state;
  const uint32_t to = static_cast<uint32_t>(r % kNodes);
  // Far enough for any partitioning when it may cross one; a node never
  // knows which partitions the run has.
  const bool near = (r >> 20) % 3 != 0 && to % 12 == id_ % 12;
  const int64_t hops = static_cast<int64_t>((r >> 8) % 4);
  const Duration d = near ? Duration::ps(100 * hops) : kLookahead + Duration::ps(100 * hops);
  m_->send(id_, to, sim.now() + d, tag, keys_.next());
}

struct Outcome {
  std::vector<std::vector<std::pair<int64_t, uint64_t>>> traces;
  std::vector<uint64_t> states;
  uint64_t windows = 0, messages = 0;
};

Outcome run(uint32_t partitions) {
  Model m(partitions);
  m.engine->run_until(kEnd);
  Outcome o;
  for (const auto& n : m.nodes) {
    o.traces.push_back(n->trace);
    o.states.push_back(n->state);
  }
  o.windows = m.engine->windows();
  o.messages = m.engine->messages();
  for (auto& s : m.sims) EXPECT_EQ(s->now(), kEnd);
  return o;
}

TEST(ParallelEngine, EveryPartitioningGivesTheSequentialTraces) {
  const Outcome seq = run(1);
  size_t events = 0;
  for (const auto& t : seq.traces) events += t.size();
  EXPECT_GT(events, 10'000u);
  for (uint32_t p : {2u, 3u, 4u}) {
    const Outcome par = run(p);
    EXPECT_EQ(par.traces, seq.traces) << p << " partitions";
    EXPECT_EQ(par.states, seq.states) << p << " partitions";
    EXPECT_GT(par.windows, 100u);
    EXPECT_GT(par.messages, 1'000u);
  }
}

// The model has ties: some node runs two events at the same picosecond.
TEST(ParallelEngine, TheModelHasSameTimeEvents) {
  const Outcome seq = run(1);
  size_t ties = 0;
  for (const auto& t : seq.traces)
    for (size_t i = 1; i < t.size(); ++i) ties += t[i].first == t[i - 1].first;
  EXPECT_GT(ties, 100u);
}

// A global event: reads every node's state (a sample), changes one node's
// state (a failure would), and at the last one stops the run from inside a
// partition, which ends it after that window.
class Sampler final : public Node {
 public:
  explicit Sampler(Model* m) : m_(m) {}
  void on_event(Simulator& sim, uint64_t tag) override {
    uint64_t sum = 0;
    for (const auto& n : m_->nodes) sum = sum * 31 + n->state;
    samples.emplace_back(sim.now().ps(), sum);
    // Global events run at their own time: no window ran past it.
    for (const auto& p : m_->sims) EXPECT_EQ(p->now(), sim.now());
    m_->nodes[tag % kNodes]->state ^= sum;
    if (tag < 20) sim.schedule(sim.now() + Duration::ps(7'300), this, tag + 1, keys_.next());
  }
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }
  std::vector<std::pair<int64_t, uint64_t>> samples;

 private:
  Model* m_;
  EventKeys keys_{2000};
};

// Calls stop() in its partition at a fixed time.
class Stopper final : public Node {
 public:
  void on_event(Simulator& sim, uint64_t) override { sim.stop(); }
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }
};

struct GlobalOutcome {
  Outcome o;
  std::vector<std::pair<int64_t, uint64_t>> samples;
  bool stopped = false;
  int64_t stop_ps = 0, now_ps = 0;
};

GlobalOutcome run_with_globals(uint32_t partitions) {
  Model m(partitions, /*with_global=*/true);
  Sampler sampler(&m);
  Stopper stopper;
  m.global.schedule(Time::from_ps(1'000), &sampler, 0, event_key(3000, 0));
  // In the last partition (as any node could).
  m.sims.back()->schedule(Time::from_ps(150'050), &stopper, 0, event_key(3001, 0));
  // In chunks, as the scenario runner calls it.
  GlobalOutcome g;
  for (Time t = Time::zero(); t < kEnd && !g.stopped; t = t + Duration::ps(40'000)) {
    m.engine->run_until(min(kEnd, t + Duration::ps(40'000)));
    g.stopped = m.engine->stopped();
  }
  for (const auto& n : m.nodes) {
    g.o.traces.push_back(n->trace);
    g.o.states.push_back(n->state);
  }
  g.samples = sampler.samples;
  g.stop_ps = m.engine->stop_time().ps();
  g.now_ps = m.sims[0]->now().ps();
  return g;
}

TEST(ParallelEngine, GlobalEventsAndStopGiveTheSameRunOnEveryPartitioning) {
  const GlobalOutcome one = run_with_globals(1);
  ASSERT_TRUE(one.stopped);
  EXPECT_EQ(one.stop_ps, 150'050);
  // The run went on to the end of the stopping window, and not past it.
  EXPECT_GE(one.now_ps, 150'050);
  EXPECT_LT(one.now_ps, 150'050 + kLookahead.count_ps());
  EXPECT_EQ(one.samples.size(), 21u);
  for (uint32_t p : {2u, 3u, 4u}) {
    const GlobalOutcome par = run_with_globals(p);
    EXPECT_TRUE(par.stopped) << p << " partitions";
    EXPECT_EQ(par.stop_ps, one.stop_ps) << p << " partitions";
    EXPECT_EQ(par.now_ps, one.now_ps) << p << " partitions";
    EXPECT_EQ(par.samples, one.samples) << p << " partitions";
    EXPECT_EQ(par.o.traces, one.o.traces) << p << " partitions";
    EXPECT_EQ(par.o.states, one.o.states) << p << " partitions";
  }
}

}  // namespace
}  // namespace mrc::sim
