// SPDX-License-Identifier: BSD-2-Clause
// Cluster: the hosts of a simulation, their NICs, and the QPs between them.
//
// Workloads ask the cluster for a connected QP between two hosts and post
// WRITE / WRITE_WITH_IMM on it; the cluster routes every completion back to
// the callback given with the work request. Each host registers one large
// simulated (unbacked) memory region, so payload travels as a length only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/ctl/profiles.hpp"
#include "core/qp.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric.hpp"
#include "sim/host/nic.hpp"
#include "sim/scenario/controller_plan.hpp"

namespace mrc::sim {

/// How a transport under test is configured on every host.
struct TransportSpec {
  std::string name = "mrc";
  core::Transport transport = core::Transport::mrc;  ///< roce_rc: the RoCEv2 baseline
  core::PathPolicyKind policy = core::PathPolicyKind::mrc;
  uint32_t evs_per_plane = 32;        ///< EV set per QP and plane (active + backup)
  uint32_t active_per_plane = 16;
  uint32_t ev_min_active_pct = 25;    ///< of the active set
  uint32_t qps_per_peer = 1;          ///< QPs opened per host pair (work is spread over them)
  core::CcProfile cc;
  uint8_t timeout = 6;                ///< ACK timeout exponent (1.024 us x 2^t)
  /// Retries before the QP fails (core::QpAttr: retry_linear <= 7, then
  /// retry_exp more with doubling timeouts; retry_exp 25 = forever).
  uint8_t retry_linear = 7;
  uint8_t retry_exp = 25;
  uint32_t mtu = 4096;                ///< path MTU (payload per packet): 256, 512, 1024, 2048 or 4096
  uint8_t mpr = 16;                   ///< 128-PSN units
  /// Pinning hook for scenarios and tests (SRv6 routing only; -1 = off).
  /// When set, every QP's EV set (both directions of a connection) is
  /// reordered, per plane, so that up to `active_per_plane` EVs whose path
  /// leaves the source's T0 on uplink `pin_t0_uplink` come first: MRC makes the first
  /// `active_per_plane` EVs of each plane its active set, so the QP starts
  /// with its active EVs on that one uplink (as many as the set has there,
  /// see Fabric::make_evs: choose evs_per_plane >= active_per_plane * t0_up)
  /// and every other EV of the plane, in make_evs() order (uplinks
  /// interleaved), as its backups. With `pin_only`, EVs on other uplinks are
  /// dropped instead: the QP can never leave that uplink, whatever its
  /// policy (the pinned control run for single-path or oblivious policies).
  int32_t pin_t0_uplink = -1;
  bool pin_only = false;
  /// Give every QP the application's traffic hint (core::QpHint): QPs per
  /// peer, and the senders its target receives from at once when the
  /// workload knows (Cluster::set_recv_peers), as NCCL knows its
  /// collective's pattern. NSCC sizes the first window from it.
  bool qp_hints = true;
};

/// Completion of one posted work request.
struct Done {
  Time at;
  core::WcStatus status = core::WcStatus::success;
};

class ParallelEngine;

/// Where the hosts of a partitioned run (ParallelEngine) run: host h's NIC,
/// its QPs and what the workload does at it run in sims[host[h]].
struct HostPlacement {
  std::vector<Simulator*> sims;  ///< one per partition (not owned; they outlive the cluster)
  std::vector<uint32_t> host;    ///< partition of each host (PartitionPlan::host), or empty: all in 0
  ParallelEngine* engine = nullptr;
  /// The delay of a request from one host's software to another's
  /// (Cluster::post): the engine's lookahead, which it must not be under.
  Duration post_delay = Duration::ps(1);
};

class Cluster {
 public:
  /// Every host in `sim`; requests between hosts' software (post()) take
  /// the fabric's link delay (at least 1 ps), as in a partitioned run.
  Cluster(Simulator& sim, Fabric& fabric, const core::EndpointConfig& ep_cfg, const TransportSpec& t);
  /// The hosts spread over the partitions of `place`. `sim` takes the
  /// random streams and runs nothing (the global Simulator of the run).
  Cluster(Simulator& sim, const HostPlacement& place, Fabric& fabric, const core::EndpointConfig& ep_cfg,
          const TransportSpec& t);
  ~Cluster();

  /// Gives the hosts `plan` names a controller each (core::ctl::Controller
  /// with controller_limits(), seeded per host) configured with the plan,
  /// before any QP exists: their QPs take their EV set, ev_min_active and
  /// congestion control from the plan's profiles and their EV events are
  /// filtered by its event mask (controller_plan.hpp says how). For MRC
  /// transports; call once, right after construction. Errors are the
  /// controller's (validate_controller_plan() checks a plan beforehand);
  /// `why` says which.
  Status use_controller(const ControllerPlan& plan, std::string* why = nullptr);
  /// Host `h`'s controller; nullptr without one.
  const core::ctl::Controller* controller(uint32_t h) const {
    return h < ctl_.size() ? ctl_[h].ctl.get() : nullptr;
  }

  uint32_t hosts() const { return static_cast<uint32_t>(nics_.size()); }
  /// Host h's NIC: one built here (built(); else aborts with a message).
  Nic& nic(uint32_t h) {
    must_be_built(h, "the NIC");
    return *nics_[h];
  }
  const Nic& nic(uint32_t h) const {
    must_be_built(h, "the NIC");
    return *nics_[h];
  }
  /// The fabric the hosts attach to.
  const Fabric& fabric() const { return fabric_; }
  const TransportSpec& transport() const { return spec_; }

  /// The Simulator host `h` runs in (its partition's).
  Simulator& sim_of(uint32_t h) { return *sims_[partition_of(h)]; }
  /// The partition host `h` runs in (0 without partitions).
  uint32_t partition_of(uint32_t h) const { return host_part_.empty() ? 0 : host_part_[h]; }
  uint32_t partitions() const { return static_cast<uint32_t>(sims_.size()); }

  /// Opens QP `lane` of the pair (src, dst) at both ends now, if it is not
  /// open. A workload opens every QP it will write on before a partitioned
  /// run starts: opening touches both hosts, which may run in different
  /// partitions (write() on a QP not opened aborts with a message then).
  void connect(uint32_t src, uint32_t dst, uint32_t lane = 0);

  /// WRITE `bytes` from `src` to `dst` (QP `lane` of that pair, opened on
  /// first use without partitions); `done` runs at the send completion. Call
  /// it from an event of `src`'s partition. With `imm`, a WRITE_WITH_IMM:
  /// `dst` posts its receive a post() later (before any of the data can
  /// arrive), and its completion goes to on_recv_imm at dst.
  void write(uint32_t src, uint32_t dst, uint64_t bytes, std::function<void(const Done&)> done,
             uint32_t lane = 0, const uint32_t* imm = nullptr);
  /// Receive completions of WRITE_WITH_IMM: (receiving host, immediate,
  /// completion), in the receiving host's partition.
  std::function<void(uint32_t host, uint32_t imm, const Done&)> on_recv_imm;

  /// Runs node->on_event(tag) in `dst`'s partition, the post delay after
  /// now at `src` (HostPlacement::post_delay), keyed by `src`'s NIC: what
  /// one host's software asks of another's, the one way that works whether
  /// or not they run in the same partition. Call it from an event of
  /// `src`'s partition; `node` must touch only `dst`'s state.
  void post(uint32_t src, uint32_t dst, Node* node, uint64_t tag);
  Duration post_delay() const { return post_delay_; }
  /// Calls f(Node*) for each node of the cluster's own that post() may
  /// target (every host's receive poster, in host order): targets of a
  /// run across processes (ParallelEngine::register_target). A workload
  /// that posts to itself registers itself.
  void for_each_message_target(const std::function<void(Node*)>& f) {
    for (uint32_t h = 0; h < hosts(); ++h) f(&posters_[h]);
  }

  /// The workload's senders per destination (`n[dst]`, 0 = unknown), for
  /// the QP hints of QPs created from now on (TransportSpec::qp_hints).
  void set_recv_peers(std::vector<uint32_t> n) { recv_peers_ = std::move(n); }

  /// True if host `h`'s NIC, endpoint and QPs are built in this process:
  /// always, but in a run across processes (HostPlacement::engine with
  /// ranks) only for the hosts of this rank's partitions. Another rank's
  /// host has no NIC here: its entity id is taken all the same, its receive
  /// poster (a message target) is kept, and what its endpoint gives its
  /// peers (memory keys, each QP's QPN and PSN, which the local end of a
  /// connection needs) is drawn as that rank's endpoint draws it
  /// (core::EndpointIds), so ids, keys and targets are those of one
  /// process. Nothing reads or runs a host not built here: nic(), write(),
  /// the receive poster and sum_pair_qp_stats() abort on one; for_each_qp()
  /// skips connections whose sender is one; qp_failures(), evs_retired(),
  /// evs_resurrected(), sum_qp_stats() and sum_path_stats() count the hosts
  /// built here alone (the run's totals are their sums over the ranks).
  bool built(uint32_t h) const { return remote_.empty() || !remote_[h]; }

  /// Every QP that failed (entered ERROR), for the summary.
  uint64_t qp_failures() const { return qp_failures_.load(std::memory_order_relaxed); }
  /// EV events seen (retired / resurrected), over all hosts.
  uint64_t evs_retired() const { return evs_retired_.load(std::memory_order_relaxed); }
  uint64_t evs_resurrected() const { return evs_resurrected_.load(std::memory_order_relaxed); }
  /// Time series hook: called for every EV event (host, event), in the
  /// host's partition (or while global events run).
  std::function<void(uint32_t host, const core::EvEvent&)> on_ev_event;
  /// Called for every port-status change a NIC's core reports: its own
  /// ports (peer 0: carrier or the controller's port state) or a peer's
  /// PORT_STATUS_UPDATE (peer = that host). Where on_ev_event is.
  std::function<void(uint32_t host, const core::PortEvent&)> on_port_event;

  /// Calls f(src, dst, lane, endpoint, qpn) for the sending QP of every
  /// connection the workload opened whose sender is built here (built();
  /// query it with endpoint.query_qp).
  template <class F>
  void for_each_qp(F&& f) const {
    for (const auto& [key, qp] : qps_)
      if (built(key.src)) f(key.src, key.dst, key.lane, nics_[key.src]->ep(), qp.local);
  }
  /// The QPNs of QP `lane` of (src, dst) at src and at dst, once opened
  /// (connect()), whether or not each end is built here; nullopt before.
  std::optional<std::pair<uint32_t, uint32_t>> qpns(uint32_t src, uint32_t dst, uint32_t lane = 0) const {
    const auto it = qps_.find(Key{src, dst, lane});
    if (it == qps_.end()) return std::nullopt;
    return std::pair{it->second.local, it->second.remote};
  }

  /// Sums a QpStats field over the sending QP of every connection
  /// (requester-side counters), or with `at_receivers` over the receiving
  /// QP of every connection (responder-side counters such as
  /// duplicates_received).
  template <class F>
  uint64_t sum_qp_stats(F&& field, bool at_receivers = false) const {
    uint64_t s = 0;
    core::QpStats st;
    for (const auto& [key, qp] : qps_) {
      if (!built(at_receivers ? key.dst : key.src)) continue;
      const bool known = at_receivers ? nics_[key.dst]->ep().query_qp_counters(qp.remote, &st)
                                      : nics_[key.src]->ep().query_qp_counters(qp.local, &st);
      if (known) s += field(st);
    }
    return s;
  }

  /// Sums a core::PathStats field over both QPs of every connection, as
  /// evs_retired() counts the EV events of both (RoCE QPs count too: their
  /// single-path policy keeps the same counters, mostly zero).
  template <class F>
  uint64_t sum_path_stats(F&& field) const {
    uint64_t s = 0;
    core::PathStats ps;
    for (const auto& [key, qp] : qps_) {
      if (built(key.src) && nics_[key.src]->ep().query_qp_counters(qp.local, nullptr, &ps)) s += field(ps);
      if (built(key.dst) && nics_[key.dst]->ep().query_qp_counters(qp.remote, nullptr, &ps)) s += field(ps);
    }
    return s;
  }

  /// Sums a QpStats field over the connections from `src` to `dst` (every
  /// lane of that host pair): over the sender's QPs when `at_sender`, else
  /// over the receiver's QPs of the same connections. Connections not opened
  /// yet count 0. The reverse direction (dst to src) is a different set of
  /// connections and is not included.
  template <class F>
  uint64_t sum_pair_qp_stats(uint32_t src, uint32_t dst, bool at_sender, F&& field) const {
    uint64_t s = 0;
    must_be_built(at_sender ? src : dst, "a QP's counters");
    for (auto it = qps_.lower_bound(Key{src, dst, 0}); it != qps_.end() && it->first.src == src && it->first.dst == dst;
         ++it) {
      core::QpStats st;
      const bool known = at_sender ? nics_[src]->ep().query_qp_counters(it->second.local, &st)
                                   : nics_[dst]->ep().query_qp_counters(it->second.remote, &st);
      if (known) s += field(st);
    }
    return s;
  }

 private:
  struct Key {
    uint32_t src, dst, lane;
    bool operator<(const Key& o) const {
      return src != o.src ? src < o.src : dst != o.dst ? dst < o.dst : lane < o.lane;
    }
  };
  struct QpInfo {
    uint32_t local = 0;   ///< QPN at src
    uint32_t remote = 0;  ///< QPN at dst
  };
  /// A host's controller and what its QPs take from it (use_controller).
  struct HostCtl {
    std::unique_ptr<core::ctl::Controller> ctl;
    uint64_t ev_profile = 0;     ///< 0: the transport's own EV set
    bool auto_mode = false;      ///< an AUTO profile: the simulator's EVs, count_per_qp of them
    uint32_t count_per_qp = 0;   ///< AUTO: EVs per QP (0 = evs_per_plane per plane)
    uint32_t event_mask = 0;     ///< ev_state bits of the EV events recorded
  };
  /// Runs a host's receive postings (post() from the writer).
  struct RecvPoster final : Node {
    Cluster* c = nullptr;
    uint32_t host = 0;
    void on_event(Simulator& sim, uint64_t tag) override;
    void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }
  };
  void init_hosts(Simulator& sim, Fabric& fabric, const core::EndpointConfig& ep_cfg);
  /// Aborts with a message naming `what` if host h is not built here
  /// (built()): reading or running another rank's host is a bug.
  void must_be_built(uint32_t h, const char* what) const;
  /// The QP of (src, dst, lane), opened if it is not and the run has one partition.
  const QpInfo& qp(uint32_t src, uint32_t dst, uint32_t lane);
  /// Opens QP `lane` of (src, dst) at both ends.
  const QpInfo& open(uint32_t src, uint32_t dst, uint32_t lane);
  core::EvProfile ev_profile_for(uint32_t from, uint32_t to, uint32_t lane);
  /// False if host h's EV profile asks not to report this event.
  bool reported(uint32_t h, const core::EvEvent& e) const;
  void pin(uint32_t src, std::vector<core::EvEntry>& evs) const;
  void on_nic_event(Nic& nic, const core::Event& e);
  void on_nic_completion(Nic& nic, const core::WorkCompletion& wc);

  Simulator& sim_;  ///< the random streams (a partitioned run's global Simulator)
  std::vector<Simulator*> sims_;  ///< per partition
  std::vector<uint32_t> host_part_;  ///< partition of each host (empty: all 0)
  std::vector<uint8_t> remote_;  ///< per host, 1: another rank's (built()); empty: none
  ParallelEngine* engine_ = nullptr;
  Duration post_delay_;
  Fabric& fabric_;
  TransportSpec spec_;
  std::vector<std::unique_ptr<Nic>> nics_;  ///< per host; null: another rank's (built())
  /// Per host, another rank's: what its endpoint draws (empty in one process).
  std::vector<std::unique_ptr<core::EndpointIds>> ids_;
  std::unique_ptr<RecvPoster[]> posters_;  ///< per host
  std::vector<core::MemoryRegion> mrs_;
  std::map<Key, QpInfo> qps_;
  std::vector<uint32_t> recv_peers_;  ///< set_recv_peers
  // Send completion callbacks by (host, wr_id); each host's own.
  std::vector<std::map<uint64_t, std::function<void(const Done&)>>> send_cb_;
  std::vector<uint64_t> next_wr_;  ///< per host
  uint64_t next_profile_ = 1;
  // Counted from every partition: only their sums are read.
  std::atomic<uint64_t> qp_failures_{0};
  std::atomic<uint64_t> evs_retired_{0};
  std::atomic<uint64_t> evs_resurrected_{0};
  std::vector<HostCtl> ctl_;  ///< per host; empty without use_controller()
  Prng ev_rng_;  ///< parent of each QP's EV stream (ev_profile_for); never drawn from itself
};

}  // namespace mrc::sim
