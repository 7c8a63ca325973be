// SPDX-License-Identifier: BSD-2-Clause
// Failure schedules: what breaks when, parsed from a compact text form and
// applied during a run (issue 3, "Failures, at any time during a run").
//
// One failure per string, "kind:key=value,key=value...". Times take a unit
// (ps, ns, us, ms, s). Kinds:
//   link-down   tier=host|t0t1|t1t2 plane=P a=I b=J at=T [for=D]
//               (host tier: a = host; t0t1: a = T0, b = T1; t1t2: a = T1, b = T2)
//   link-flap   same link keys, at=T until=T2 period=D [duty=0.5]  (down for duty x period each period)
//   switch-down tier=t0|t1|t2 plane=P index=I at=T [for=D]         (for= is a reboot)
//   loss        link keys, p=0.2 at=T [for=D]                       (gray failure)
//   rate        link keys, gbps=R at=T [for=D]                      (degraded link)
//   deny        host=H ev=V at=T [for=D]                            (controller DENY of EV V on H's QPs;
//                                                                    for= allows it again at the end)
//   allow       host=H ev=V at=T                                    (controller sets EV V GOOD again)
//   port-disable host=H port=P at=T [for=D]                         (controller disables NIC port P = plane P)
//   port-enable host=H port=P at=T                                  (controller enables it again)
// The controller actions (deny, allow, port-*) act through the core on
// the QPs that exist at that time: DENY/allow with
// core::Endpoint::set_ev_denied on each of H's QPs; a port's
// administrative state with Nic::set_port_admin, which takes the port out
// of service in the core (core::Endpoint::set_port_up: its EVs leave
// service on every QP and the peers are told with PORT_STATUS_UPDATE, so
// they stop sending into that plane towards H at once).
// Groups: "*" for plane, a or b (links) or for plane or index (switches)
// stands for every value, e.g. every link of host 5 (tier=host,plane=*,a=5),
// every T0-T1 link of plane 2 (tier=t0t1,plane=2,a=*,b=*) or T1 3 of every
// plane (switch-down:tier=t1,plane=*,index=3). A group hits all its links or
// switches at once (with every parallel link between two switches) and is
// one action in the log.
// Relative to a training workload: at=step<K>[+<time>] starts the failure
// that long after training step K (0-based) starts; a link-flap's until= is
// then counted from the same instant.
// A host link going down or up also tells that NIC (carrier), so the core's
// port-status handling runs (reference 4.7, 4.9).
#pragma once

#include <string>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "sim/fabric/fabric.hpp"
#include "util/result.hpp"

namespace mrc::sim {

class Cluster;

struct FailureSpec {
  enum class Kind : uint8_t {
    link_down,
    link_flap,
    switch_down,
    loss,
    rate,
    deny,
    allow,
    port_disable,
    port_enable
  } kind = Kind::link_down;
  LinkRef link;
  SwitchRef sw;
  Time at;
  Duration duration = Duration::infinite();  ///< for= (infinite: stays)
  Time until = Time::never();                ///< link-flap end
  Duration period;                           ///< link-flap period
  double duty = 0.5;
  double loss = 0;
  uint64_t rate_bps = 0;
  uint32_t host = 0;
  uint32_t ev = 0;
  uint32_t port = 0;  ///< port-disable / port-enable: the NIC port (plane), 0-based
  /// Group specs: "*" was given for the plane, for a (links) or index
  /// (switches), for b (links).
  bool all_planes = false;
  bool all_a = false;
  bool all_b = false;
  /// at=step<K>[+T]: `at` (and `until`) count from the start of training
  /// step K; -1 = from the start of the run.
  int32_t at_step = -1;
  std::string text;                          ///< as given, for output
  bool is_group() const { return all_planes || all_a || all_b; }
  /// A controller action on one host (deny, allow, port-disable, port-enable).
  bool is_controller_action() const {
    return kind == Kind::deny || kind == Kind::allow || kind == Kind::port_disable || kind == Kind::port_enable;
  }
};

/// Parses one failure string; the error names the key and what is wrong.
Result<FailureSpec> parse_failure(const std::string& text, std::string* why);
/// Checks that every link, switch and host a failure names exists in
/// `fabric`; the message names the failure and what is wrong.
Status validate_failures(const std::vector<FailureSpec>& specs, const Fabric& fabric, std::string* why);

/// The links a link failure applies to in `fabric`: its one link, or every
/// existing link of a group (all parallel lanes included); empty when
/// nothing matches. Empty for switch failures and controller actions.
std::vector<LinkRef> failure_links(const FailureSpec& f, const Fabric& fabric);
/// The switches a switch-down applies to (one, or every existing switch of a
/// group); empty for other kinds.
std::vector<SwitchRef> failure_switches(const FailureSpec& f, const Fabric& fabric);

/// Parses "12us", "3ms", "1.5s", "500ns".
Result<Duration> parse_duration(const std::string& text);

/// Applies a list of failures at their times.
class FailureSchedule final : public Node {
 public:
  FailureSchedule(Simulator& sim, Fabric& fabric, Cluster& cluster, std::vector<FailureSpec> specs);
  /// Schedules the failures timed from the start of the run.
  void start();
  /// Training step `step` starts at `now` (the training's clock, which in a
  /// partitioned run is not the schedule's): schedules the failures timed
  /// from it (RingTraining::on_step_start). One due inside the window being
  /// run takes effect right after it (ParallelEngine).
  void step_started(uint32_t step, Time now);
  void on_event(Simulator& sim, uint64_t tag) override;
  void receive(Simulator& sim, Packet* p, int) override { sim.free_packet(p); }
  /// (time, text) of every action taken, for output and plots.
  const std::vector<std::pair<Time, std::string>>& log() const { return log_; }

 private:
  void apply(size_t i, bool begin);
  void set_link(const LinkRef& l, bool up);
  void set_links(size_t i, bool up);
  Simulator& sim_;
  Fabric& fabric_;
  Cluster& cluster_;
  std::vector<FailureSpec> specs_;
  std::vector<std::vector<LinkRef>> links_;     ///< failure_links() of each spec
  std::vector<std::vector<SwitchRef>> switches_;  ///< failure_switches() of each spec
  std::vector<std::pair<Time, std::string>> log_;
  EventKeys keys_;  ///< failures beginning and ending
};

}  // namespace mrc::sim
