// SPDX-License-Identifier: BSD-2-Clause
// The JSON document (--json) and the pieces the other writers share with it.
#include <nlohmann/json.hpp>

#include "mrc-sim/output.hpp"
#include "sim/fabric/packet.hpp"

namespace mrc::sim::tool {

namespace {

using json = nlohmann::ordered_json;

json run_json(const RunResult& r) {
  json j;
  j["transport"] = r.transport;
  j["completed"] = r.completed;
  j["simulated_us"] = r.end.to_us();
  j["wall_s"] = r.wall_s;
  j["events"] = r.events;
  json steps = json::array();
  for (size_t i = 0; i < r.steps.size(); ++i)
    steps.push_back({{"step", i}, {"step_us", r.steps[i].to_us()}, {"allreduce_us", r.collectives[i].to_us()}});
  j["steps"] = steps;
  if (!r.steps.empty()) j["allreduce_ideal_us"] = r.ideal_collective.to_us();
  json flows = json::array();
  for (const auto& f : r.flows)
    flows.push_back({{"src", f.spec.src},
                     {"dst", f.spec.dst},
                     {"bytes", f.spec.bytes},
                     {"start_us", f.spec.start.to_us()},
                     {"finish_us", f.done ? f.finish.to_us() : -1.0},
                     {"fct_us", f.done ? f.fct().to_us() : -1.0},
                     {"ideal_fct_us", f.ideal.to_us()},
                     {"slowdown", f.slowdown()},
                     {"status", flow_status(f)},
                     {"retransmits", f.retransmits},
                     {"trims", f.trims}});
  j["flows"] = flows;
  json counters = json::object();
  for (const auto& [name, value] : run_counters(r)) counters[name] = value;
  j["counters"] = counters;
  json series = json::array();
  for (const auto& s : r.series)
    series.push_back({{"t_us", s.at.to_us()},
                      {"goodput_gbps", s.goodput_gbps},
                      {"unplaced_gbps", s.unplaced_gbps},
                      {"queued_bytes", s.queued_bytes}});
  j["series"] = series;
  // Detail series (--series), row i at series[i].t_us.
  auto detail = [&](const char* name, const std::vector<std::vector<double>>& rows) {
    if (rows.empty()) return;
    json a = json::array();
    for (size_t i = 0; i < rows.size() && i < r.series.size(); ++i)
      a.push_back({{"t_us", r.series[i].at.to_us()}, {"goodput_gbps", rows[i]}});
    j[name] = a;
  };
  detail("host_series", r.host_series);
  detail("plane_series", r.plane_series);
  detail("flow_series", r.flow_series);
  json evs = json::array();
  for (size_t i = 0; i < r.ev_events.size(); ++i) {
    const auto& [t, e] = r.ev_events[i];
    evs.push_back({{"t_us", t.to_us()},
                   {"host", i < r.ev_event_hosts.size() ? r.ev_event_hosts[i] : 0},
                   {"qpn", e.qpn},
                   {"ev", e.ev},
                   {"plane", e.port},
                   {"from", core::to_string(e.from)},
                   {"to", core::to_string(e.to)},
                   {"drops", e.drop_count}});
  }
  j["ev_events"] = evs;
  json ports = json::array();
  for (const auto& p : r.port_events) {
    json o = {{"t_us", p.at.to_us()}, {"host", p.host}};
    if (p.local) o["local"] = true;
    else o["peer"] = p.peer;
    json up = json::array();
    for (uint32_t b = 0; b < 32; ++b)
      if (p.up_mask >> b & 1u) up.push_back(b);
    o["planes_up"] = up;
    ports.push_back(o);
  }
  j["port_events"] = ports;
  json fl = json::array();
  for (const auto& [t, s] : r.failure_log) fl.push_back({{"t_us", t.to_us()}, {"action", s}});
  j["failures"] = fl;
  return j;
}

}  // namespace

std::string flow_status(const FlowRecord& f) {
  // A flow's status stays `success` until a piece fails, so a flow cut off by
  // the time limit would otherwise read as a success.
  if (!f.done && f.status == core::WcStatus::success) return "unfinished";
  return std::string(core::to_string(f.status));
}

std::vector<std::pair<std::string, uint64_t>> run_counters(const RunResult& r) {
  return {{"packet_hops", r.fabric.packets_forwarded},
          {"delivered", r.fabric.delivered},
          {"drops_queue", r.fabric.drops_queue},
          {"drops_link_down", r.fabric.drops_link_down},
          {"drops_random", r.fabric.drops_random},
          {"drops_no_route", r.fabric.drops_no_route},
          {"drops_data", r.fabric.drops_by_class[static_cast<int>(Class::data)]},
          {"drops_trimmed_header", r.fabric.drops_by_class[static_cast<int>(Class::trimmed)]},
          {"drops_control", r.fabric.drops_by_class[static_cast<int>(Class::control)]},
          {"trims", r.fabric.trims},
          {"trims_last_hop", r.fabric.trims_last_hop},
          {"ecn_marks", r.fabric.ecn_marks},
          {"pfc_pauses", r.fabric.pfc_pauses},
          {"data_packets", r.data_packets},
          {"retransmissions", r.retransmissions},
          {"spurious_retransmissions", r.spurious_retransmissions},
          {"ack_timeouts", r.timeouts},
          {"losses_rule", r.losses_rule},
          {"losses_nack", r.losses_nack},
          {"probes", r.probes},
          {"evs_retired", r.evs_retired},
          {"evs_resurrected", r.evs_resurrected},
          {"ev_congestion_swaps", r.ev_congestion_swaps},
          {"ev_suspected", r.evs_suspected},
          {"ev_cleared", r.evs_cleared},
          {"qp_failures", r.qp_failures}};
}

std::string results_json(const std::vector<RunResult>& runs, uint64_t seed) {
  json j;
  j["schema"] = kJsonSchema;
  j["seed"] = seed;
  json arr = json::array();
  for (const auto& r : runs) arr.push_back(run_json(r));
  j["runs"] = arr;
  return j.dump(1) + "\n";
}

}  // namespace mrc::sim::tool
