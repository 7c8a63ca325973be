// SPDX-License-Identifier: BSD-2-Clause
// CSV files (--csv DIR): the JSON document's content as flat tables, one
// file per record type, every row led by the transport it belongs to.
#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "mrc-sim/output.hpp"

namespace mrc::sim::tool {

namespace {

/// Appends one CSV row: the fields formatted with fmt's "{}" (shortest
/// round-trip form for doubles, as the JSON writer) and quoted when needed.
class Table {
 public:
  Table(std::string name, std::initializer_list<const char*> header) : name_(std::move(name)) {
    bool first = true;
    for (const char* h : header) {
      if (!first) text_ += ',';
      text_ += h;
      first = false;
    }
    text_ += '\n';
  }
  template <class... Args>
  void row(const Args&... fields) {
    bool first = true;
    ((text_ += first ? "" : ",", text_ += cell(fields), first = false), ...);
    text_ += '\n';
  }
  CsvFile take() { return CsvFile{std::move(name_), std::move(text_)}; }

 private:
  static std::string cell(const std::string& s) { return csv_field(s); }
  static std::string cell(const char* s) { return csv_field(s); }
  static std::string cell(bool b) { return b ? "true" : "false"; }
  template <class T>
  static std::string cell(const T& v) {
    return fmt::format("{}", v);
  }
  std::string name_;
  std::string text_;
};

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string q = "\"";
  for (char c : text) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + '"';
}

std::vector<CsvFile> csv_files(const std::vector<RunResult>& runs) {
  Table run_t("runs.csv", {"transport", "completed", "simulated_us", "events", "wall_s", "allreduce_ideal_us"});
  Table flows("flows.csv", {"transport", "flow", "src", "dst", "bytes", "start_us", "finish_us", "fct_us",
                            "ideal_fct_us", "slowdown", "status", "retransmits", "trims"});
  Table steps("steps.csv", {"transport", "step", "step_us", "allreduce_us"});
  Table series("series.csv", {"transport", "t_us", "goodput_gbps", "unplaced_gbps", "queued_bytes"});
  Table evs("ev_events.csv", {"transport", "t_us", "host", "qpn", "ev", "plane", "from", "to", "drops"});
  Table counters("counters.csv", {"transport", "counter", "value"});
  Table failures("failures.csv", {"transport", "t_us", "action"});
  // Detail series (--series), written only when a run has them.
  Table hosts("series_hosts.csv", {"transport", "t_us", "host", "goodput_gbps"});
  Table planes("series_planes.csv", {"transport", "t_us", "plane", "goodput_gbps"});
  Table flow_s("series_flows.csv", {"transport", "t_us", "flow", "src", "dst", "goodput_gbps"});
  bool any_hosts = false, any_planes = false, any_flows = false;
  for (const RunResult& r : runs) {
    // allreduce_ideal_us is absent from JSON for flow workloads; empty here.
    const std::string ideal = r.steps.empty() ? std::string() : fmt::format("{}", r.ideal_collective.to_us());
    run_t.row(r.transport, r.completed, r.end.to_us(), r.events, r.wall_s, ideal);
    for (size_t i = 0; i < r.flows.size(); ++i) {
      const FlowRecord& f = r.flows[i];
      flows.row(r.transport, i, f.spec.src, f.spec.dst, f.spec.bytes, f.spec.start.to_us(),
                f.done ? f.finish.to_us() : -1.0, f.done ? f.fct().to_us() : -1.0, f.ideal.to_us(), f.slowdown(),
                flow_status(f), f.retransmits, f.trims);
    }
    for (size_t i = 0; i < r.steps.size(); ++i) steps.row(r.transport, i, r.steps[i].to_us(), r.collectives[i].to_us());
    for (const Sample& s : r.series)
      series.row(r.transport, s.at.to_us(), s.goodput_gbps, s.unplaced_gbps, s.queued_bytes);
    for (size_t i = 0; i < r.ev_events.size(); ++i) {
      const auto& [t, e] = r.ev_events[i];
      const uint32_t host = i < r.ev_event_hosts.size() ? r.ev_event_hosts[i] : 0;
      evs.row(r.transport, t.to_us(), host, e.qpn, e.ev, e.port, core::to_string(e.from), core::to_string(e.to),
              e.drop_count);
    }
    for (const auto& [name, value] : run_counters(r)) counters.row(r.transport, name, value);
    for (const auto& [t, action] : r.failure_log) failures.row(r.transport, t.to_us(), action);
    for (size_t i = 0; i < r.host_series.size() && i < r.series.size(); ++i)
      for (size_t h = 0; h < r.host_series[i].size(); ++h)
        hosts.row(r.transport, r.series[i].at.to_us(), h, r.host_series[i][h]);
    for (size_t i = 0; i < r.plane_series.size() && i < r.series.size(); ++i)
      for (size_t p = 0; p < r.plane_series[i].size(); ++p)
        planes.row(r.transport, r.series[i].at.to_us(), p, r.plane_series[i][p]);
    for (size_t i = 0; i < r.flow_series.size() && i < r.series.size(); ++i)
      for (size_t f = 0; f < r.flow_series[i].size() && f < r.flows.size(); ++f)
        flow_s.row(r.transport, r.series[i].at.to_us(), f, r.flows[f].spec.src, r.flows[f].spec.dst,
                   r.flow_series[i][f]);
    any_hosts = any_hosts || !r.host_series.empty();
    any_planes = any_planes || !r.plane_series.empty();
    any_flows = any_flows || !r.flow_series.empty();
  }
  std::vector<CsvFile> out;
  for (Table* t : {&run_t, &flows, &steps, &series, &evs, &counters, &failures}) out.push_back(t->take());
  if (any_hosts) out.push_back(hosts.take());
  if (any_planes) out.push_back(planes.take());
  if (any_flows) out.push_back(flow_s.take());
  return out;
}

Status write_file(const std::string& dir, const std::string& name, const std::string& text, std::string* why) {
  const std::filesystem::path path = dir.empty() ? std::filesystem::path(name) : std::filesystem::path(dir) / name;
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    if (why) *why = fmt::format("cannot create directory {}: {}", path.parent_path().string(), ec.message());
    return Errc::io;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    if (why) *why = fmt::format("cannot write {}: {}", path.string(), std::strerror(errno));
    return Errc::io;
  }
  return {};
}

}  // namespace mrc::sim::tool
