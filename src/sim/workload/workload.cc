// SPDX-License-Identifier: BSD-2-Clause
#include "sim/workload/workload.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace mrc::sim {

std::vector<FlowSpec> permutation_flows(uint32_t hosts, uint64_t bytes, Prng& rng) {
  std::vector<uint32_t> dst(hosts);
  for (uint32_t i = 0; i < hosts; ++i) dst[i] = i;
  // Random derangement: shuffle until no host maps to itself (expected ~e tries).
  for (;;) {
    for (size_t i = hosts; i > 1; --i) std::swap(dst[i - 1], dst[rng.below(i)]);
    bool ok = true;
    for (uint32_t i = 0; i < hosts && ok; ++i) ok = dst[i] != i;
    if (ok || hosts < 2) break;
  }
  std::vector<FlowSpec> flows;
  for (uint32_t i = 0; i < hosts; ++i) flows.push_back(FlowSpec{i, dst[i], bytes, Time::zero()});
  return flows;
}

std::vector<FlowSpec> incast_flows(uint32_t hosts, uint32_t fan_in, uint32_t target, uint64_t bytes, bool victim,
                                   uint32_t hosts_per_t0, uint32_t* victim_index) {
  std::vector<FlowSpec> flows;
  // Victim receiver: the target's T0 neighbour; victim sender: a host that is
  // neither an incast sender nor a receiver.
  const uint32_t t0_first = target / hosts_per_t0 * hosts_per_t0;
  const uint32_t victim_dst = t0_first + (target - t0_first + 1) % hosts_per_t0;
  uint32_t s = 0;
  for (uint32_t n = 0; n < fan_in && s < hosts; ++s) {
    if (s == target || (victim && s == victim_dst)) continue;
    flows.push_back(FlowSpec{s, target, bytes, Time::zero()});
    ++n;
  }
  if (victim) {
    for (; s < hosts; ++s) {
      if (s == target || s == victim_dst) continue;
      if (victim_index) *victim_index = static_cast<uint32_t>(flows.size());
      flows.push_back(FlowSpec{s, victim_dst, bytes, Time::zero()});
      break;
    }
  }
  return flows;
}

std::vector<FlowSpec> all_to_all_flows(uint32_t hosts, uint64_t bytes) {
  std::vector<FlowSpec> flows;
  for (uint32_t s = 0; s < hosts; ++s)
    for (uint32_t d = 1; d < hosts; ++d) flows.push_back(FlowSpec{s, (s + d) % hosts, bytes, Time::zero()});
  return flows;
}

Result<std::vector<FlowSpec>> read_connection_matrix(const std::string& path, uint32_t hosts, std::string* why) {
  std::ifstream in(path);
  auto fail = [&](size_t line, const std::string& msg) {
    if (why) *why = path + ":" + std::to_string(line) + ": " + msg;
    return Errc::invalid_argument;
  };
  if (!in) {
    if (why) *why = path + ": cannot open";
    return Errc::not_found;
  }
  std::vector<FlowSpec> flows;
  std::string line;
  size_t n = 0;
  int64_t declared = -1;
  while (std::getline(in, line)) {
    ++n;
    std::istringstream ls(line);
    std::string first;
    if (!(ls >> first) || first[0] == '#') continue;
    if (first == "Nodes") {
      uint64_t v = 0;
      if (!(ls >> v)) return fail(n, "expected 'Nodes <count>'");
      if (v > hosts) return fail(n, "matrix needs " + std::to_string(v) + " nodes, topology has " + std::to_string(hosts));
      continue;
    }
    if (first == "Connections") {
      if (!(ls >> declared)) return fail(n, "expected 'Connections <count>'");
      continue;
    }
    const auto arrow = first.find("->");
    if (arrow == std::string::npos) return fail(n, "expected 'src->dst start T size B', got '" + first + "'");
    FlowSpec f;
    try {
      f.src = static_cast<uint32_t>(std::stoul(first.substr(0, arrow)));
      f.dst = static_cast<uint32_t>(std::stoul(first.substr(arrow + 2)));
    } catch (...) {
      return fail(n, "bad host pair '" + first + "'");
    }
    if (f.src >= hosts || f.dst >= hosts) return fail(n, "host index out of range (topology has " + std::to_string(hosts) + " hosts)");
    if (f.src == f.dst) return fail(n, "a flow from a host to itself");
    std::string key;
    bool have_size = false;
    while (ls >> key) {
      std::string val;
      if (!(ls >> val)) return fail(n, "keyword '" + key + "' without a value");
      try {
        if (key == "start") f.start = Time::zero() + Duration::ps(static_cast<int64_t>(std::stod(val) * 1e6));
        else if (key == "size") {
          f.bytes = std::stoull(val);
          have_size = true;
        } else if (key != "id" && key != "priority") return fail(n, "unknown keyword '" + key + "'");
      } catch (...) {
        return fail(n, "bad value '" + val + "' for '" + key + "'");
      }
    }
    if (!have_size || f.bytes == 0) return fail(n, "every connection needs 'size B' with B > 0");
    if (f.bytes > (uint64_t{1} << 31)) return fail(n, "size above 2 GiB (one RDMA WRITE)");
    flows.push_back(f);
  }
  if (declared >= 0 && static_cast<size_t>(declared) != flows.size())
    return fail(n, "'Connections " + std::to_string(declared) + "' but " + std::to_string(flows.size()) + " listed");
  return flows;
}

// ---------------------------------------------------------------- FlowWorkload

namespace {
// FlowWorkload tags: a flow's index, with a kind in the high bits.
constexpr uint64_t kTrimsFrom = uint64_t{1} << 62;  // at the receiver: the start snapshot
constexpr uint64_t kTrimsTo = uint64_t{1} << 61;    // at the receiver: the finish snapshot
constexpr uint64_t kFlowMask = kTrimsTo - 1;
}  // namespace

FlowWorkload::FlowWorkload(Simulator& sim, Cluster& cluster, std::vector<FlowSpec> flows, Duration base_latency,
                           uint64_t host_bps)
    : cluster_(cluster), keys_(sim.new_keys()) {
  for (const FlowSpec& f : flows) {
    FlowRecord r;
    r.spec = f;
    const uint64_t mtu = cluster.transport().mtu;  // headers per packet of the path MTU
    const uint64_t pkts = (f.bytes + mtu - 1) / mtu;
    r.ideal = base_latency + Duration::serialization(f.bytes + pkts * (kWireOverhead + 40 + 40), host_bps);
    recs_.push_back(r);
  }
  // The application's hint (core::QpHint): how many hosts send to each
  // destination, over the whole flow set.
  std::vector<std::vector<uint32_t>> senders(cluster.hosts());
  for (const FlowSpec& f : flows)
    if (f.dst < senders.size()) senders[f.dst].push_back(f.src);
  std::vector<uint32_t> n(cluster.hosts(), 0);
  for (uint32_t d = 0; d < n.size(); ++d) {
    std::sort(senders[d].begin(), senders[d].end());
    n[d] = static_cast<uint32_t>(std::unique(senders[d].begin(), senders[d].end()) - senders[d].begin());
  }
  cluster.set_recv_peers(std::move(n));
  const uint32_t lanes = std::max<uint32_t>(1, cluster.transport().qps_per_peer);
  for (const FlowSpec& f : flows)
    for (uint32_t k = 0; k < std::min<uint64_t>(lanes, f.bytes); ++k) cluster.connect(f.src, f.dst, k);
  pieces_left_.assign(recs_.size(), 0);
  started_.assign(recs_.size(), 0);
  trims_state_.assign(recs_.size(), 0);
  retransmits_at_start_.assign(recs_.size(), 0);
  trims_at_start_.assign(recs_.size(), 0);
  tallies_.resize(cluster.partitions());
}

namespace {
/// Per-partition tallies (a count and a time) to every rank: only the rank
/// running a partition counts there, so the maximum is that rank's value.
template <class Tally, class Count>
void share_partition_tallies(std::vector<Tally>& tallies, Count Tally::*count, Ranks& ranks,
                             const ParallelEngine& engine) {
  const size_t n = tallies.size();
  std::vector<uint64_t> v(2 * n, 0);
  for (size_t p = 0; p < n; ++p) {
    if (!engine.local(static_cast<uint32_t>(p))) continue;
    v[p] = tallies[p].*count;
    v[n + p] = static_cast<uint64_t>(tallies[p].last.ps());
  }
  ranks.max(v);
  for (size_t p = 0; p < n; ++p) {
    if (engine.local(static_cast<uint32_t>(p))) continue;
    tallies[p].*count = static_cast<Count>(v[p]);
    tallies[p].last = Time::from_ps(static_cast<int64_t>(v[n + p]));
  }
}
}  // namespace

void FlowWorkload::share_tallies(Ranks& ranks, const ParallelEngine& engine) {
  share_partition_tallies(tallies_, &Tally::finished, ranks, engine);
}

void RingTraining::share_tallies(Ranks& ranks, const ParallelEngine& engine) {
  share_partition_tallies(tallies_, &Tally::hosts_done, ranks, engine);
}

uint64_t FlowWorkload::pair_retransmissions(const FlowSpec& f) const {
  return cluster_.sum_pair_qp_stats(f.src, f.dst, true, [](const core::QpStats& s) { return s.retransmissions; });
}

uint64_t FlowWorkload::pair_trims(const FlowSpec& f) const {
  return cluster_.sum_pair_qp_stats(f.src, f.dst, false, [](const core::QpStats& s) { return s.trims_received; });
}

size_t FlowWorkload::finished() const {
  size_t n = 0;
  for (const Tally& t : tallies_) n += t.finished;
  return n;
}

std::optional<Time> FlowWorkload::finished_at() const {
  if (!done()) return std::nullopt;
  Time last = Time::zero();
  for (const Tally& t : tallies_)
    if (t.finished) last = max(last, t.last);
  return last;
}

void FlowWorkload::count_unfinished() {
  for (size_t i = 0; i < recs_.size(); ++i) {
    // The sender knows it started; the receiver, that it took its snapshot
    // (the two may run in different processes).
    if (started_[i] && pieces_left_[i] != 0)
      recs_[i].retransmits = pair_retransmissions(recs_[i].spec) - retransmits_at_start_[i];
    if (trims_state_[i] == 1) recs_[i].trims = pair_trims(recs_[i].spec) - trims_at_start_[i];
  }
}

void FlowWorkload::start() {
  for (size_t i = 0; i < recs_.size(); ++i)
    cluster_.sim_of(recs_[i].spec.src).schedule(recs_[i].spec.start, this, i, keys_.next());
}

void FlowWorkload::on_event(Simulator&, uint64_t tag) {
  const size_t i = tag & kFlowMask;
  if (tag & kTrimsFrom) {  // at the receiver
    trims_at_start_[i] = pair_trims(recs_[i].spec);
    trims_state_[i] = 1;
  } else if (tag & kTrimsTo) {
    if (trims_state_[i] == 1) recs_[i].trims = pair_trims(recs_[i].spec) - trims_at_start_[i];
    trims_state_[i] = 2;
  } else {
    start_flow(i);
  }
}

void FlowWorkload::start_flow(size_t i) {
  const FlowSpec& f = recs_[i].spec;
  const uint32_t lanes = std::max<uint32_t>(1, cluster_.transport().qps_per_peer);
  const uint32_t pieces = static_cast<uint32_t>(std::min<uint64_t>(lanes, f.bytes));
  pieces_left_[i] = pieces;
  recs_[i].status = core::WcStatus::success;
  // The pair's QPs may already have carried an earlier flow of the same
  // pair: the flow's share is the growth of their counters from here on.
  started_[i] = 1;
  retransmits_at_start_[i] = pair_retransmissions(f);
  cluster_.post(f.src, f.dst, this, kTrimsFrom | i);
  for (uint32_t k = 0; k < pieces; ++k) {
    const uint64_t len = f.bytes / pieces + (k < f.bytes % pieces ? 1 : 0);
    cluster_.write(f.src, f.dst, len, [this, i](const Done& d) {
      FlowRecord& r = recs_[i];
      if (d.status != core::WcStatus::success) r.status = d.status;
      if (--pieces_left_[i] > 0) return;
      r.done = r.status == core::WcStatus::success;  // every piece completed successfully
      r.finish = d.at;
      r.retransmits = pair_retransmissions(r.spec) - retransmits_at_start_[i];
      cluster_.post(r.spec.src, r.spec.dst, this, kTrimsTo | i);
      Tally& t = tallies_[cluster_.partition_of(r.spec.src)];
      ++t.finished;
      t.last = max(t.last, d.at);
    }, k);
  }
}

// ---------------------------------------------------------------- RingTraining

namespace {
constexpr uint64_t kComputeDone = uint64_t{1} << 40;  // | ring position
}

RingTraining::RingTraining(Simulator& sim, Cluster& cluster, std::vector<uint32_t> ring, uint64_t bytes,
                           uint32_t steps, Duration compute, Duration step_latency)
    : cluster_(cluster),
      ring_(std::move(ring)),
      bytes_(bytes),
      steps_(steps),
      compute_(compute),
      step_latency_(step_latency),
      keys_(sim.new_keys()) {
  const uint32_t n = static_cast<uint32_t>(ring_.size());
  pos_of_.assign(cluster.hosts(), UINT32_MAX);
  for (uint32_t pos = 0; pos < n; ++pos) pos_of_[ring_[pos]] = pos;
  for (uint32_t pos = 0; pos < n; ++pos)
    for (uint32_t q = 0; q < pieces(); ++q) cluster.connect(ring_[pos], ring_[(pos + 1) % n], q);
  received_.assign(n, 0);
  pieces_got_.resize(n);
  tallies_.resize(cluster.partitions());
  cluster.on_recv_imm = [this](uint32_t host, uint32_t imm, const Done&) { on_piece(host, imm); };
}

uint32_t RingTraining::pieces() const {
  const uint64_t chunk = std::max<uint64_t>(1, bytes_ / ring_.size());
  return static_cast<uint32_t>(std::min<uint64_t>(std::max<uint32_t>(1, cluster_.transport().qps_per_peer), chunk));
}

Duration RingTraining::ideal_collective() const {
  const uint32_t n = static_cast<uint32_t>(ring_.size());
  const uint64_t chunk = bytes_ / n;
  const uint64_t mtu = cluster_.transport().mtu;
  const uint64_t pkts = (chunk + mtu - 1) / mtu;
  // A host's ports, as its NIC gives them to its endpoint before any
  // failure (the host may be another rank's, with no NIC here).
  const uint64_t bps = uint64_t{cluster_.fabric().shape().host_bps} * cluster_.fabric().planes();
  return (Duration::serialization(chunk + pkts * (kWireOverhead + 80), bps) + step_latency_) * (2 * (n - 1));
}

void RingTraining::start() {
  step_start_ = cluster_.sim_of(ring_[0]).now();
  if (on_step_start) on_step_start(0, step_start_);
  schedule_collective(step_start_ + compute_);
}

void RingTraining::schedule_collective(Time at) {
  coll_start_ = at;
  for (uint32_t pos = 0; pos < ring_.size(); ++pos)
    cluster_.sim_of(ring_[pos]).schedule(at, this, kComputeDone | pos, keys_.next());
}

void RingTraining::on_event(Simulator&, uint64_t tag) {
  if (!(tag & kComputeDone)) return;
  // This host's compute phase ended: its part of the collective starts.
  const auto pos = static_cast<uint32_t>(tag & (kComputeDone - 1));
  received_[pos] = 0;
  pieces_got_[pos].clear();
  send_step(pos, 0);
}

void RingTraining::send_step(uint32_t pos, uint32_t k) {
  // Each ring step's chunk is spread over the pair's QPs (as NCCL spreads a
  // transfer over channels); the step is received when every piece is. The
  // immediate names the step: the receiver counts its pieces.
  const uint32_t n = static_cast<uint32_t>(ring_.size());
  const uint32_t src = ring_[pos], dst = ring_[(pos + 1) % n];
  const uint64_t chunk = std::max<uint64_t>(1, bytes_ / n);
  const uint32_t np = pieces();
  for (uint32_t q = 0; q < np; ++q) {
    const uint64_t len = chunk / np + (q < chunk % np ? 1 : 0);
    const uint32_t imm = k;
    cluster_.write(
        src, dst, len,
        [this](const Done& d) {
          if (d.status != core::WcStatus::success) failed_.fetch_add(1, std::memory_order_relaxed);
        },
        q, &imm);
  }
}

void RingTraining::on_piece(uint32_t host, uint32_t k) {
  const uint32_t pos = host < pos_of_.size() ? pos_of_[host] : UINT32_MAX;
  if (pos == UINT32_MAX) return;
  auto& got = pieces_got_[pos];
  auto it = got.try_emplace(k, 0).first;
  if (++it->second < pieces()) return;
  got.erase(it);
  on_received(pos, k);
}

void RingTraining::on_received(uint32_t pos, uint32_t k) {
  const uint32_t n = static_cast<uint32_t>(ring_.size());
  const uint32_t last = 2 * (n - 1) - 1;
  ++received_[pos];
  if (k < last) {
    send_step(pos, k + 1);
    return;
  }
  Tally& t = tallies_[cluster_.partition_of(ring_[pos])];
  ++t.hosts_done;
  t.last = max(t.last, cluster_.sim_of(ring_[pos]).now());
}

std::optional<Time> RingTraining::at_barrier(Time earliest) {
  uint32_t done = 0;
  Time end = Time::zero();
  for (const Tally& t : tallies_) {
    done += t.hosts_done;
    if (t.hosts_done) end = max(end, t.last);
  }
  if (done < ring_.size() || this->done()) return std::nullopt;
  for (Tally& t : tallies_) t = Tally{};
  coll_times_.push_back(end - coll_start_);
  step_times_.push_back(end - step_start_);
  if (++step_ >= steps_) return end;
  step_start_ = end;
  if (on_step_start) on_step_start(step_, end);
  schedule_collective(max(end + compute_, earliest));
  return std::nullopt;
}

}  // namespace mrc::sim
