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

FlowWorkload::FlowWorkload(Simulator& sim, Cluster& cluster, std::vector<FlowSpec> flows, Duration base_latency,
                           uint64_t host_bps)
    : sim_(sim), cluster_(cluster), keys_(sim.new_keys()) {
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
  started_.assign(recs_.size(), false);
  retransmits_at_start_.assign(recs_.size(), 0);
  trims_at_start_.assign(recs_.size(), 0);
}

uint64_t FlowWorkload::pair_retransmissions(const FlowSpec& f) const {
  return cluster_.sum_pair_qp_stats(f.src, f.dst, true, [](const core::QpStats& s) { return s.retransmissions; });
}

uint64_t FlowWorkload::pair_trims(const FlowSpec& f) const {
  return cluster_.sum_pair_qp_stats(f.src, f.dst, false, [](const core::QpStats& s) { return s.trims_received; });
}

void FlowWorkload::count_unfinished() {
  for (size_t i = 0; i < recs_.size(); ++i) {
    if (!started_[i] || pieces_left_[i] == 0) continue;  // started => pieces_left_ is sized
    recs_[i].retransmits = pair_retransmissions(recs_[i].spec) - retransmits_at_start_[i];
    recs_[i].trims = pair_trims(recs_[i].spec) - trims_at_start_[i];
  }
}

void FlowWorkload::start() {
  for (size_t i = 0; i < recs_.size(); ++i) sim_.schedule(recs_[i].spec.start, this, i, keys_.next());
}

void FlowWorkload::on_event(Simulator& sim, uint64_t tag) {
  const size_t i = tag;
  const FlowSpec& f = recs_[i].spec;
  const uint32_t lanes = std::max<uint32_t>(1, cluster_.transport().qps_per_peer);
  const uint32_t pieces = static_cast<uint32_t>(std::min<uint64_t>(lanes, f.bytes));
  if (pieces_left_.size() < recs_.size()) pieces_left_.assign(recs_.size(), 0);
  pieces_left_[i] = pieces;
  recs_[i].status = core::WcStatus::success;
  // The pair's QPs may already exist (an earlier flow of the same pair): the
  // flow's share is the growth of their counters from here on.
  started_[i] = true;
  retransmits_at_start_[i] = pair_retransmissions(f);
  trims_at_start_[i] = pair_trims(f);
  for (uint32_t k = 0; k < pieces; ++k) {
    const uint64_t len = f.bytes / pieces + (k < f.bytes % pieces ? 1 : 0);
    cluster_.write(f.src, f.dst, len, [this, i, &sim](const Done& d) {
      FlowRecord& r = recs_[i];
      if (d.status != core::WcStatus::success) r.status = d.status;
      if (--pieces_left_[i] > 0) return;
      r.done = r.status == core::WcStatus::success;  // every piece completed successfully
      r.finish = d.at;
      r.retransmits = pair_retransmissions(r.spec) - retransmits_at_start_[i];
      r.trims = pair_trims(r.spec) - trims_at_start_[i];
      ++finished_;
      if (done()) sim.stop();
    }, k);
  }
}

// ---------------------------------------------------------------- RingTraining

namespace {
constexpr uint64_t kComputeDone = 1;
}

RingTraining::RingTraining(Simulator& sim, Cluster& cluster, std::vector<uint32_t> ring, uint64_t bytes,
                           uint32_t steps, Duration compute, Duration step_latency)
    : sim_(sim),
      cluster_(cluster),
      ring_(std::move(ring)),
      bytes_(bytes),
      steps_(steps),
      compute_(compute),
      step_latency_(step_latency),
      keys_(sim.new_keys()) {}

Duration RingTraining::ideal_collective() const {
  const uint32_t n = static_cast<uint32_t>(ring_.size());
  const uint64_t chunk = bytes_ / n;
  const uint64_t mtu = cluster_.transport().mtu;
  const uint64_t pkts = (chunk + mtu - 1) / mtu;
  uint64_t bps = 0;
  for (uint32_t p = 0; p < cluster_.nic(ring_[0]).ep().num_ports(); ++p)
    bps += cluster_.nic(ring_[0]).ep().config().ports[p].rate_bps;
  return (Duration::serialization(chunk + pkts * (kWireOverhead + 80), bps) + step_latency_) * (2 * (n - 1));
}

void RingTraining::start() {
  step_start_ = sim_.now();
  if (on_step_start) on_step_start(0);
  sim_.schedule(sim_.now() + compute_, this, kComputeDone, keys_.next());
}

void RingTraining::on_event(Simulator&, uint64_t tag) {
  if (tag == kComputeDone) begin_collective();
}

void RingTraining::begin_collective() {
  coll_start_ = sim_.now();
  received_.assign(ring_.size(), 0);
  pieces_left_.clear();
  hosts_done_ = 0;
  for (uint32_t pos = 0; pos < ring_.size(); ++pos) send_step(pos, 0);
}

void RingTraining::send_step(uint32_t pos, uint32_t k) {
  // Each ring step's chunk is spread over the pair's QPs (as NCCL spreads a
  // transfer over channels); the step is received when every piece is.
  const uint32_t n = static_cast<uint32_t>(ring_.size());
  const uint32_t src = ring_[pos], dst = ring_[(pos + 1) % n];
  const uint32_t next = (pos + 1) % n;
  const uint64_t chunk = std::max<uint64_t>(1, bytes_ / n);
  const uint32_t pieces = static_cast<uint32_t>(
      std::min<uint64_t>(std::max<uint32_t>(1, cluster_.transport().qps_per_peer), chunk));
  const uint64_t slot = uint64_t{next} * 2 * (n - 1) + k;  // pieces of step k still due at `next`
  pieces_left_[slot] = pieces;
  for (uint32_t q = 0; q < pieces; ++q) {
    const uint64_t len = chunk / pieces + (q < chunk % pieces ? 1 : 0);
    const uint32_t imm = (step_ << 20) | (k << 8) | q;
    cluster_.write(
        src, dst, len,
        [this](const Done& d) {
          if (d.status != core::WcStatus::success) ++failed_;
        },
        q, &imm, [this, next, k, slot](const Done& d) {
          if (d.status != core::WcStatus::success) return;
          const auto it = pieces_left_.find(slot);
          if (--it->second != 0) return;
          pieces_left_.erase(it);
          on_received(next, k);
        });
  }
}

void RingTraining::on_received(uint32_t pos, uint32_t k) {
  const uint32_t n = static_cast<uint32_t>(ring_.size());
  const uint32_t last = 2 * (n - 1) - 1;
  ++received_[pos];
  if (k < last) {
    send_step(pos, k + 1);
    return;
  }
  if (++hosts_done_ < n) return;
  coll_times_.push_back(sim_.now() - coll_start_);
  step_times_.push_back(sim_.now() - step_start_);
  if (++step_ >= steps_) {
    sim_.stop();
    return;
  }
  step_start_ = sim_.now();
  if (on_step_start) on_step_start(step_);
  sim_.schedule(sim_.now() + compute_, this, kComputeDone, keys_.next());
}

}  // namespace mrc::sim
