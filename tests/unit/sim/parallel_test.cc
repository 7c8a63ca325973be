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
  explicit Model(uint32_t partitions) : parts(partitions) {
    for (uint32_t p = 0; p < partitions; ++p) sims.push_back(std::make_unique<Simulator>(1));
    std::vector<Simulator*> ptrs;
    for (auto& s : sims) ptrs.push_back(s.get());
    engine = std::make_unique<ParallelEngine>(ptrs, kLookahead);
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

}  // namespace
}  // namespace mrc::sim
