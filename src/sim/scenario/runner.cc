// SPDX-License-Identifier: BSD-2-Clause
#include "sim/scenario/runner.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <optional>
#include <tuple>
#include <type_traits>
#include <algorithm>
#include <string>

#include "sim/engine/parallel.hpp"
#include "sim/fabric/partition.hpp"

namespace mrc::sim {

namespace {

/// Samples delivered throughput and fabric queueing at a fixed interval.
class Sampler final : public Node {
 public:
  Sampler(Simulator& sim, Cluster& c, Fabric& f, Duration every, std::vector<Sample>* out,
          std::function<void(Time, const Cluster&)> hook)
      : sim_(sim), c_(c), f_(f), every_(every), out_(out), hook_(std::move(hook)), keys_(sim.new_keys()) {}
  /// Also records per-host, per-plane and per-flow rows into `r` (flows:
  /// the (src, dst) of each, whose receivers count per source).
  void detail(RunResult* r, bool hosts, bool planes, std::vector<std::pair<uint32_t, uint32_t>> flows) {
    r_ = r;
    hosts_ = hosts;
    planes_ = planes;
    flows_ = std::move(flows);
    for (const auto& [src, dst] : flows_)
      if (local(dst)) c_.nic(dst).count_rx_by_source(c_.hosts());
  }
  /// A run across processes: every sample adds up the counters of each
  /// rank's NICs (the hosts it builds, Cluster::built; one reduction per
  /// sample), so every rank takes the same samples.
  void share(Ranks* ranks) { ranks_ = ranks; }
  void start() { sim_.schedule(sim_.now() + every_, this, 0, keys_.next()); }
  void on_event(Simulator& sim, uint64_t) override {
    take(sim.now());
    sim.schedule(sim.now() + every_, this, 0, keys_.next());
  }
  /// The run stopped at `now`: a last, shorter sample covers what arrived
  /// since the last full one (rates over its own length), so the series
  /// adds up to everything delivered.
  void finish(Time now) {
    if (now > last_at_) take(now);
  }
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }

 private:
  double gbps(uint64_t bytes) const { return static_cast<double>(bytes) * 8 / interval_.to_s() / 1e9; }

  void take(Time now) {
    interval_ = now - last_at_;
    last_at_ = now;
    uint64_t rx = 0, placed = 0;
    for (uint32_t h = 0; h < c_.hosts(); ++h) {
      if (!local(h)) continue;
      rx += c_.nic(h).rx_payload_bytes();
      placed += c_.nic(h).rx_placed_bytes();
    }
    uint64_t queued = f_.total_queued_bytes();
    if (ranks_) {
      uint64_t v[3] = {rx, placed, queued};
      ranks_->sum(v);
      rx = v[0];
      placed = v[1];
      queued = v[2];
    }
    const uint64_t unplaced = rx - placed;
    Sample s{now, gbps(placed - last_placed_), 0, queued};
    // A packet counted on arrival is placed in the same event, so the
    // difference never shrinks; max() keeps a sample at 0 regardless.
    s.unplaced_gbps = gbps(std::max(unplaced, last_unplaced_) - last_unplaced_);
    out_->push_back(s);
    last_placed_ = placed;
    last_unplaced_ = std::max(unplaced, last_unplaced_);
    if (r_) sample_detail();
    if (hook_) hook_(now, c_);
  }

  /// One row per enabled detail: deltas of the NICs' counters since the last sample.
  void sample_detail() {
    auto row = [&](std::vector<uint64_t> now, std::vector<uint64_t>& last, std::vector<std::vector<double>>& out) {
      if (ranks_) ranks_->sum(now);
      last.resize(now.size(), 0);
      std::vector<double> g(now.size());
      for (size_t i = 0; i < now.size(); ++i) g[i] = gbps(now[i] - last[i]);
      out.push_back(std::move(g));
      last = std::move(now);
    };
    const uint32_t n = c_.hosts();
    if (hosts_) {
      std::vector<uint64_t> v(n);
      for (uint32_t h = 0; h < n; ++h) v[h] = local(h) ? c_.nic(h).rx_payload_bytes() : 0;
      row(std::move(v), last_hosts_, r_->host_series);
    }
    if (planes_) {
      std::vector<uint64_t> v(f_.planes(), 0);
      for (uint32_t h = 0; h < n; ++h)
        for (uint32_t p = 0; p < f_.planes() && local(h); ++p) v[p] += c_.nic(h).rx_payload_by_plane()[p];
      row(std::move(v), last_planes_, r_->plane_series);
    }
    if (!flows_.empty()) {
      std::vector<uint64_t> v(flows_.size());
      for (size_t i = 0; i < flows_.size(); ++i)
        v[i] = local(flows_[i].second) ? c_.nic(flows_[i].second).rx_payload_from(flows_[i].first) : 0;
      row(std::move(v), last_flows_, r_->flow_series);
    }
  }

  Simulator& sim_;
  Cluster& c_;
  Fabric& f_;
  Duration every_;
  std::vector<Sample>* out_;
  std::function<void(Time, const Cluster&)> hook_;
  EventKeys keys_;  ///< samples
  uint64_t last_placed_ = 0, last_unplaced_ = 0;
  Time last_at_;        ///< time of the last sample (the run's start before the first)
  Duration interval_;   ///< length of the sample being taken
  RunResult* r_ = nullptr;
  bool hosts_ = false, planes_ = false;
  std::vector<std::pair<uint32_t, uint32_t>> flows_;
  std::vector<uint64_t> last_hosts_, last_planes_, last_flows_;
  bool local(uint32_t h) const { return c_.built(h); }

  Ranks* ranks_ = nullptr;
};

/// Records made in several partitions at once (and by the global events),
/// each buffer capped, merged into the order of a sequential run: by time,
/// global events before partition events at the same time, then by the key
/// of the event that made the record; records of one event keep their order.
/// Across processes, a global event's records are made on several ranks:
/// they go by host (`tie`), the order the failure schedule visits hosts in.
template <class T>
class Recorder {
 public:
  struct Place {
    uint32_t buffer;  ///< a partition, or the global events' (partitions)
    Time at;
    uint8_t phase;  ///< 0: a global event; 1: a partition's
    uint64_t key;   ///< of the event making the record
    uint32_t tie;   ///< before the record's place in its buffer: 0, or across processes a global record's host
  };
  // One buffer per partition, the global events', and other ranks' records.
  explicit Recorder(uint32_t partitions) : buffers_(partitions + 2) {}
  template <class P>
  void add(const P& w, T rec) {
    auto& b = buffers_[w.buffer].items;
    if (b.size() < cap_) b.push_back(Item{w.at, w.phase, w.key, w.tie, b.size(), std::move(rec)});
  }
  /// Calls f(place, seq, rec) for every record kept here.
  template <class F>
  void for_each(F&& f) const {
    for (size_t k = 0; k < buffers_.size(); ++k)
      for (const Item& i : buffers_[k].items)
        f(Place{static_cast<uint32_t>(k), i.at, i.phase, i.key, i.tie}, i.seq, i.rec);
  }
  /// A record another rank kept (for_each there), with its place.
  void add_item(const Place& w, size_t seq, T rec) {
    buffers_.back().items.push_back(Item{w.at, w.phase, w.key, w.tie, seq, std::move(rec)});
  }
  /// The first `cap` records of the run, in order, with their times.
  std::vector<std::pair<Time, T>> merged(size_t cap) {
    std::vector<Item*> all;
    for (auto& b : buffers_)
      for (Item& i : b.items) all.push_back(&i);
    std::sort(all.begin(), all.end(), [](const Item* a, const Item* b) {
      return std::tie(a->at, a->phase, a->key, a->tie, a->seq) < std::tie(b->at, b->phase, b->key, b->tie, b->seq);
    });
    std::vector<std::pair<Time, T>> out;
    for (size_t i = 0; i < all.size() && i < cap; ++i) out.emplace_back(all[i]->at, std::move(all[i]->rec));
    return out;
  }

 private:
  struct Item {
    Time at;
    uint8_t phase;
    uint64_t key;
    uint32_t tie;
    size_t seq;
    T rec;
  };
  // Each buffer keeps its first 100,000: what the merged first 100,000 can hold of it.
  static constexpr size_t cap_ = 100000;
  struct alignas(64) Buffer {
    std::vector<Item> items;
  };
  std::vector<Buffer> buffers_;
};

/// Bytes a rank sends to rank 0 with its share of the results.
class Bytes {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = b_.size();
    b_.resize(at + sizeof(T));
    std::memcpy(b_.data() + at, &v, sizeof(T));
  }
  const std::vector<uint8_t>& bytes() const { return b_; }

 private:
  std::vector<uint8_t> b_;
};

/// Reads what Bytes wrote; a short buffer is a programming error (every
/// rank runs the same build and scenario).
class BytesReader {
 public:
  explicit BytesReader(const std::vector<uint8_t>& b) : p_(b.data()), e_(b.data() + b.size()) {}
  template <class T>
  T get() {
    T v{};
    if (static_cast<size_t>(e_ - p_) < sizeof(T)) {
      std::fprintf(stderr, "mrc-sim: internal error: a rank's results ended early\n");
      std::abort();
    }
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }

 private:
  const uint8_t* p_;
  const uint8_t* e_;
};

/// The fields of a RunResult that each rank counts for its partitions
/// alone, added up over the ranks.
template <class F>
void for_each_summed(RunResult& r, F&& f) {
  for (uint64_t* v : {&r.retransmissions, &r.timeouts, &r.losses_rule, &r.losses_nack, &r.probes,
                      &r.data_packets, &r.spurious_retransmissions, &r.evs_retired, &r.evs_resurrected,
                      &r.ev_congestion_swaps, &r.evs_suspected, &r.evs_cleared, &r.qp_failures, &r.events,
                      &r.messages, &r.batches, &r.rank_bytes, &r.rank_buffers})
    f(*v);
}

size_t peak_rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

}  // namespace

Result<TransportSpec> transport_by_name(const std::string& name, uint32_t evs_per_plane, uint32_t qps_per_peer) {
  TransportSpec t;
  t.name = name;
  t.qps_per_peer = qps_per_peer;
  t.evs_per_plane = evs_per_plane;
  t.active_per_plane = std::max<uint32_t>(1, evs_per_plane / 2);
  if (name == "mrc" || name == "mrc-nscc") {
    t.policy = core::PathPolicyKind::mrc;  // NSCC, the default CC profile
  } else if (name == "mrc-fixed") {
    t.policy = core::PathPolicyKind::mrc;
    t.cc.algorithm = core::kCcFixed;
  } else if (name == "mrc-oblivious") {
    t.policy = core::PathPolicyKind::oblivious;
  } else if (name == "mrc-single-path") {
    t.policy = core::PathPolicyKind::single_path;
  } else if (name == "roce" || name == "roce-pfc") {
    // RoCEv2 RC: one ECMP-hashed path per QP, go-back-N, DCQCN. PFC is a
    // fabric setting; "roce-pfc" asks the runner to turn it on.
    t.transport = core::Transport::roce_rc;
    t.policy = core::PathPolicyKind::single_path;
    t.cc.algorithm = core::kCcDcqcn;
  } else {
    return Errc::not_found;
  }
  return t;
}

std::vector<FlowSpec> scenario_flows(const Scenario& sc) {
  // The permutation's stream is derived from the seed alone, as the
  // simulator of the run derives it.
  Prng wrng = Simulator(sc.seed).rng_for(0x77);
  const uint32_t hosts = sc.topology.hosts;
  switch (sc.workload) {
    case WorkloadKind::train:
    case WorkloadKind::allreduce: return {};
    case WorkloadKind::permutation: return permutation_flows(hosts, sc.bytes, wrng);
    case WorkloadKind::incast:
      return incast_flows(hosts, sc.fan_in, sc.incast_target, sc.bytes, sc.victim, sc.topology.t0_down, nullptr);
    case WorkloadKind::alltoall: return all_to_all_flows(hosts, sc.bytes);
    case WorkloadKind::matrix: return sc.flows;
  }
  return {};
}

Duration scenario_lookahead(const TopologyConfig& topo) {
  return topo.link_delay > Duration::ps(1) ? topo.link_delay : Duration::ps(1);
}

RunResult run_scenario(const Scenario& sc, const TransportSpec& spec) {
  RunResult r;
  r.transport = spec.name;
  const auto wall0 = std::chrono::steady_clock::now();
  TopologyConfig topo = sc.topology;
  if (spec.name == "roce-pfc") topo.queue.pfc = true;  // lossless data class for the baseline
  // The events global to every partition (failures, samples, the fabric's
  // reconvergence) run in `global`, which also numbers every entity; each
  // host (its NIC, QPs and the workload's part there) runs in its partition.
  Simulator global(sc.seed);
  const uint32_t nparts = std::max<uint32_t>(1, sc.partitions);
  std::vector<std::unique_ptr<Simulator>> parts;
  std::vector<Simulator*> part_ptrs;
  for (uint32_t p = 0; p < nparts; ++p) {
    parts.push_back(std::make_unique<Simulator>(sc.seed));
    parts.back()->share_entities(&global);
    part_ptrs.push_back(parts.back().get());
  }
  FabricPartitions fp;
  fp.sims = part_ptrs;
  if (nparts > 1) {
    std::string why;
    auto plan = plan_partitions(topo, nparts, &why);
    if (!plan) {
      std::fprintf(stderr, "mrc-sim: %s\n", why.c_str());
      std::abort();
    }
    fp.sw = plan->sw;
    fp.host = plan->host;
  } else {
    fp.sw.assign(topo.shape().switches(), 0);
  }
  if (nparts > 1 && sc.packet_tap) {
    std::fprintf(stderr, "mrc-sim: a packet capture needs one partition (--partitions 1)\n");
    std::abort();
  }
  ParallelEngine engine(part_ptrs, scenario_lookahead(topo), &global);
  engine.set_threads(sc.threads);
  fp.engine = &engine;
  Ranks* const ranks = sc.ranks;
  if (ranks) {
    const uint32_t nr = ranks->size();
    if (nparts < 2 || nparts % nr != 0) {
      std::fprintf(stderr, "mrc-sim: a run over %u ranks needs a multiple of them as partitions (%u given)\n", nr,
                   nparts);
      std::abort();
    }
    std::vector<uint32_t> rank_of(nparts);
    for (uint32_t p = 0; p < nparts; ++p) rank_of[p] = p / (nparts / nr);
    engine.set_ranks(ranks, std::move(rank_of));
  }
  // Every partition's NICs allocate packets, and a packet ends where it is
  // delivered or dropped: what ended away from home goes back between
  // windows (across processes: one from another process's partition, whose
  // copy arrived here, goes to this process's first pool).
  if (nparts > 1)
    for (uint32_t p = 0; p < nparts; ++p) parts[p]->set_packet_homes(&fp.host, p, nparts);
  std::vector<Simulator*> homes = part_ptrs;
  for (uint32_t p = 0; p < nparts; ++p)
    if (!engine.local(p)) homes[p] = part_ptrs[engine.local_partitions()[0]];
  // A partition this process runs: its clock is the run's.
  Simulator& sim = *parts[engine.local_partitions()[0]];
  Fabric fabric(global, topo, fp);
  core::EndpointConfig ec;
  ec.protocol = sc.protocol;
  ec.balance_peer_ports = sc.balance_peer_ports;
  if (sc.derive_base_rtt) {
    ec.protocol.base_rtt = fabric.max_one_way_latency() * 2;
    // The loss rule's margin per step (ProtocolConfig::reorder_allowance):
    // a quarter of the base RTT, twice that to start. With base_rtt / 2 a
    // random loss cost a ring step nearly two round trips (16 MiB
    // all-reduce under 0.1 % loss on every host link: 1.78x lossless,
    // 1.49x with this); an eighth (1.33x) let spurious retransmissions
    // through under congestion (0.2 % of the data in bench/load_quality.sh
    // --quick's all-to-all and 3-tier permutation, against 0.01 % here).
    ec.protocol.reorder_allowance = ec.protocol.base_rtt / 4;
  }
  HostPlacement place;
  place.sims = part_ptrs;
  place.host = fp.host;
  place.engine = &engine;
  place.post_delay = engine.lookahead();
  Cluster cluster(global, place, fabric, ec, spec);
  if (!sc.controller.empty() && spec.transport == core::Transport::mrc) {
    std::string why;
    if (Status s = cluster.use_controller(sc.controller, &why); !s) {
      // validate_controller_plan() accepted it: a programming error.
      std::fprintf(stderr, "mrc-sim: controller profiles refused: %s\n", why.c_str());
      std::abort();
    }
  }
  // EV and port events are recorded where they happen (a partition, or the
  // global events), each with its place in the sequential order, and merged
  // at the end.
  Recorder<std::pair<core::EvEvent, uint32_t>> ev_rec(nparts);
  Recorder<RunResult::PortRecord> port_rec(nparts);
  // Across processes, a host's records are its rank's (what the global
  // events do to other ranks' hosts here is not the run's).
  auto where = [&](uint32_t host) {
    if (engine.in_globals())
      return Recorder<int>::Place{nparts, global.now(), 0, global.current_key(), ranks ? host : 0};
    Simulator& s = cluster.sim_of(host);
    return Recorder<int>::Place{cluster.partition_of(host), s.now(), 1, s.current_key(), 0};
  };
  cluster.on_ev_event = [&](uint32_t host, const core::EvEvent& e) {
    if (engine.local(cluster.partition_of(host))) ev_rec.add(where(host), {e, host});
  };
  cluster.on_port_event = [&](uint32_t host, const core::PortEvent& e) {
    if (!engine.local(cluster.partition_of(host))) return;
    const auto w = where(host);
    port_rec.add(w, RunResult::PortRecord{w.at, host, e.local, static_cast<uint32_t>(e.peer), e.up_mask});
  };
  if (sc.packet_tap)
    for (uint32_t h = 0; h < cluster.hosts(); ++h)
      cluster.nic(h).on_transmit = [&sim, &tap = sc.packet_tap](const Nic& nic, const Packet& p) {
        tap(sim.now(), nic.host(), p);
      };
  FailureSchedule sched(global, fabric, cluster, sc.failures);
  sched.start();
  Sampler sampler(global, cluster, fabric, sc.sample_every, &r.series, sc.on_sample);
  if (sc.series_hosts || sc.series_planes || sc.series_flows) {
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    if (sc.series_flows)
      for (const FlowSpec& f : scenario_flows(sc)) pairs.emplace_back(f.src, f.dst);
    sampler.detail(&r, sc.series_hosts, sc.series_planes, std::move(pairs));
  }
  sampler.share(ranks);
  sampler.start();

  uint64_t host_bps = 0;
  for (uint32_t p = 0; p < fabric.planes(); ++p) host_bps += fabric.host_port_bps(0, p);
  std::unique_ptr<RingTraining> train;
  std::unique_ptr<FlowWorkload> flows;
  switch (sc.workload) {
    case WorkloadKind::train:
    case WorkloadKind::allreduce: {
      std::vector<uint32_t> ring(fabric.hosts());
      std::iota(ring.begin(), ring.end(), 0);
      const bool training = sc.workload == WorkloadKind::train;
      train = std::make_unique<RingTraining>(global, cluster, ring, sc.bytes, training ? sc.steps : 1,
                                             training ? sc.compute : Duration{});
      r.ideal_collective = train->ideal_collective();
      train->on_step_start = [&sched](uint32_t k, Time at) { sched.step_started(k, at); };
      train->start();
      break;
    }
    default: {
      flows =
          std::make_unique<FlowWorkload>(global, cluster, scenario_flows(sc), fabric.max_one_way_latency(), host_bps);
      flows->start();
    }
  }
  // Between windows: packets go home, and the workload's completions,
  // counted apart by the partitions, tell whether the run is over (or the
  // next training step starts).
  if (ranks) {
    // The nodes a message from another process may target, in the same
    // order on every rank.
    auto reg = [&engine](Node* n) { engine.register_target(n); };
    fabric.for_each_message_target(reg);
    cluster.for_each_message_target(reg);
    if (flows) reg(flows.get());
  }
  engine.set_on_barrier([&] {
    if (nparts > 1)
      for (uint32_t p : engine.local_partitions()) part_ptrs[p]->return_packets(homes);
    if (ranks) {
      if (train) train->share_tallies(*ranks, engine);
      if (flows) flows->share_tallies(*ranks, engine);
    }
    const std::optional<Time> end = train ? train->at_barrier(engine.now() + Duration::ps(1)) : flows->finished_at();
    if (end) engine.request_stop(*end);
  });
  auto events = [&] {
    uint64_t n = global.events_processed();
    for (const auto& p : parts) n += p->events_processed();
    return n;
  };
  const Time limit = Time::zero() + sc.time_limit;
  bool stopped = false;
  while (sim.now() < limit) {
    engine.run_until(min(limit, sim.now() + Duration::us(200)));
    stopped = engine.stopped();
    const bool done = train ? train->done() : flows->done();
    if (sc.progress)
      sc.progress(Progress{sim.now(), sc.time_limit, events(), train ? train->step_times().size() : 0,
                           train ? train->steps() : 0, flows ? flows->finished() : 0,
                           flows ? flows->records().size() : 0});
    if (done || stopped) break;
  }
  r.end = stopped ? engine.stop_time() : sim.now();
  sampler.finish(r.end);
  if (sc.at_end) sc.at_end(sim.now(), cluster);
  r.completed = train ? train->done() : flows->done();
  if (train) {
    r.steps = train->step_times();
    r.collectives = train->collective_times();
  }
  if (flows) {
    flows->count_unfinished();
    r.flows = flows->records();
  }
  if (ranks) {
    // Only this rank's partitions' counters: a flush here of a pipe that
    // crosses to another rank's partition counts its losses there.
    for (uint32_t p : engine.local_partitions()) r.fabric.add(fabric.partition_stats(p));
  } else {
    r.fabric = fabric.stats();
  }
  r.retransmissions = cluster.sum_qp_stats([](const core::QpStats& s) { return s.retransmissions; });
  r.timeouts = cluster.sum_qp_stats([](const core::QpStats& s) { return s.timeouts; });
  r.losses_rule = cluster.sum_qp_stats([](const core::QpStats& s) { return s.losses_rule; });
  r.losses_nack = cluster.sum_qp_stats([](const core::QpStats& s) { return s.losses_nack; });
  r.probes = cluster.sum_qp_stats([](const core::QpStats& s) { return s.probes_sent; });
  r.data_packets = cluster.sum_qp_stats([](const core::QpStats& s) { return s.data_packets_sent; });
  // Duplicates are counted where data arrives: at the responder's QP.
  r.spurious_retransmissions =
      cluster.sum_qp_stats([](const core::QpStats& s) { return s.duplicates_received; }, /*at_receivers=*/true);
  r.evs_retired = cluster.evs_retired();
  r.evs_resurrected = cluster.evs_resurrected();
  r.ev_congestion_swaps = cluster.sum_path_stats([](const core::PathStats& s) { return s.congestion_swaps; });
  r.evs_suspected = cluster.sum_path_stats([](const core::PathStats& s) { return s.suspected; });
  r.evs_cleared = cluster.sum_path_stats([](const core::PathStats& s) { return s.cleared; });
  r.qp_failures = cluster.qp_failures();
  r.events = events();
  r.windows = nparts > 1 ? engine.windows() : 0;
  r.messages = engine.messages();
  r.batches = engine.batches();
  for (const auto& p : parts) r.partition_events.push_back(p->events_processed());
  if (nparts > 1) {
    r.partition_cpu_s = engine.thread_cpu_s();
    r.span_cpu_s = engine.span_cpu_s();
  }
  r.failure_log = sched.log();
  if (ranks) {
    // Each rank counted its partitions' share (the others' elements never
    // ran here: their counters read 0); rank 0 adds them up. The global
    // events ran on every rank: their count is rank 0's.
    if (ranks->rank() != 0) r.events -= global.events_processed();
    r.rank_bytes = ranks->bytes_sent();
    r.rank_buffers = ranks->buffers_sent();
    Bytes out;
    for_each_summed(r, [&](uint64_t v) { out.put(v); });
    out.put(r.fabric);
    for (uint32_t p = 0; p < nparts; ++p) {
      out.put(r.partition_events[p]);
      out.put(r.partition_cpu_s[p]);
    }
    for (const FlowRecord& f : r.flows) {
      out.put(uint8_t{f.done});
      out.put(f.status);
      out.put(f.finish);
      out.put(f.retransmits);
      out.put(f.trims);
    }
    static_assert(std::is_trivially_copyable_v<core::EvEvent> &&
                  std::is_trivially_copyable_v<RunResult::PortRecord>);
    auto put_place = [&out](const auto& w, size_t seq) {
      out.put(w.at);
      out.put(w.phase);
      out.put(w.key);
      out.put(w.tie);
      out.put(uint64_t{seq});
    };
    uint64_t n_ev = 0, n_port = 0;
    ev_rec.for_each([&](auto&&...) { ++n_ev; });
    port_rec.for_each([&](auto&&...) { ++n_port; });
    out.put(n_ev);
    ev_rec.for_each([&](const auto& w, size_t seq, const auto& rec) {
      put_place(w, seq);
      out.put(rec.first);
      out.put(rec.second);
    });
    out.put(n_port);
    port_rec.for_each([&](const auto& w, size_t seq, const RunResult::PortRecord& rec) {
      put_place(w, seq);
      out.put(rec);
    });
    out.put(uint64_t{peak_rss_kb()});
    const auto all = ranks->gather(out.bytes());
    r.rank_share = ranks->rank() != 0;
    for (uint32_t k = 1; k < all.size(); ++k) {
      BytesReader in(all[k]);
      for_each_summed(r, [&](uint64_t& v) { v += in.get<uint64_t>(); });
      r.fabric.add(in.get<FabricStats>());
      for (uint32_t p = 0; p < nparts; ++p) {
        r.partition_events[p] += in.get<uint64_t>();
        r.partition_cpu_s[p] += in.get<double>();
      }
      const auto rank_of_host = [&](uint32_t h) { return engine.rank_of(cluster.partition_of(h)); };
      for (FlowRecord& f : r.flows) {
        const bool done = in.get<uint8_t>() != 0;
        const auto status = in.get<core::WcStatus>();
        const Time finish = in.get<Time>();
        const uint64_t retransmits = in.get<uint64_t>();
        const uint64_t trims = in.get<uint64_t>();
        // What the sender's partition counts, and what the receiver's does.
        if (rank_of_host(f.spec.src) == k) {
          f.done = done;
          f.status = status;
          f.finish = finish;
          f.retransmits = retransmits;
        }
        if (rank_of_host(f.spec.dst) == k) f.trims = trims;
      }
      // A record's place, as put_place wrote it (its buffer is this rank's).
      auto get_place = [&in](uint64_t* seq) {
        Recorder<int>::Place w{};
        w.at = in.get<Time>();
        w.phase = in.get<uint8_t>();
        w.key = in.get<uint64_t>();
        w.tie = in.get<uint32_t>();
        *seq = in.get<uint64_t>();
        return w;
      };
      uint64_t seq = 0;
      for (uint64_t i = 0, n = in.get<uint64_t>(); i < n; ++i) {
        const auto w = get_place(&seq);
        const auto e = in.get<core::EvEvent>();
        ev_rec.add_item({w.buffer, w.at, w.phase, w.key, w.tie}, seq, {e, in.get<uint32_t>()});
      }
      for (uint64_t i = 0, n = in.get<uint64_t>(); i < n; ++i) {
        const auto w = get_place(&seq);
        port_rec.add_item({w.buffer, w.at, w.phase, w.key, w.tie}, seq, in.get<RunResult::PortRecord>());
      }
      r.peak_rss_kb = std::max<size_t>(r.peak_rss_kb, in.get<uint64_t>());
    }
  }
  for (auto& [at, rec] : ev_rec.merged(100000)) {
    r.ev_events.emplace_back(at, rec.first);
    r.ev_event_hosts.push_back(rec.second);
  }
  for (auto& [at, rec] : port_rec.merged(100000)) r.port_events.push_back(rec);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  r.peak_rss_kb = std::max(r.peak_rss_kb, peak_rss_kb());
  return r;
}

}  // namespace mrc::sim
