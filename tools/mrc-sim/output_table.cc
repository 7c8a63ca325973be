// SPDX-License-Identifier: BSD-2-Clause
// The side-by-side summary table on stdout.
#include <fmt/core.h>

#include <algorithm>
#include <iterator>

#include "mrc-sim/output.hpp"

namespace mrc::sim::tool {

namespace {

/// Appends fmt output to `out` (format string checked at compile time).
template <class... Args>
void append(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

// Nearest-rank percentile; p = 0 is the minimum, 100 the maximum.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::vector<double> us_of(const std::vector<Duration>& ds) {
  std::vector<double> v;
  for (Duration d : ds) v.push_back(d.to_us());
  return v;
}

}  // namespace

std::string summary_table(const std::vector<RunResult>& rs) {
  std::string out;
  // Flow workloads record every flow; collectives record none (even when
  // they completed no step).
  const bool steps = std::none_of(rs.begin(), rs.end(), [](const RunResult& r) { return !r.flows.empty(); });
  append(out, "\n{:<18}", "");
  for (const auto& r : rs) append(out, "{:>20}", r.transport);
  append(out, "\n");
  auto row = [&](const std::string& name, auto f) {
    append(out, "{:<18}", name);
    for (const auto& r : rs) append(out, "{:>20}", f(r));
    append(out, "\n");
  };
  row("completed", [](const RunResult& r) { return r.completed ? std::string("yes") : std::string("NO"); });
  // Percentile rows over a per-run sample.
  auto stat_row = [&](const std::string& name, auto sample, double p, const char* fmt_str) {
    row(name, [&](const RunResult& r) { return fmt::format(fmt::runtime(fmt_str), percentile(sample(r), p)); });
  };
  if (steps) {
    auto step_us = [](const RunResult& r) { return us_of(r.steps); };
    auto coll_us = [](const RunResult& r) { return us_of(r.collectives); };
    stat_row("step time min", step_us, 0, "{:.1f} us");
    stat_row("step time p50", step_us, 50, "{:.1f} us");
    stat_row("step time max", step_us, 100, "{:.1f} us");
    row("all-reduce ideal", [](const RunResult& r) { return fmt::format("{:.1f} us", r.ideal_collective.to_us()); });
    stat_row("all-reduce p50", coll_us, 50, "{:.1f} us");
    stat_row("all-reduce max", coll_us, 100, "{:.1f} us");
  } else {
    auto fct_us = [](const RunResult& r) {
      std::vector<double> v;
      for (const auto& f : r.flows)
        if (f.done) v.push_back(f.fct().to_us());
      return v;
    };
    auto slowdown = [](const RunResult& r) {
      std::vector<double> v;
      for (const auto& f : r.flows)
        if (f.done) v.push_back(f.slowdown());
      return v;
    };
    row("flows done", [](const RunResult& r) {
      size_t n = 0;
      for (const auto& f : r.flows) n += f.done;
      return fmt::format("{}/{}", n, r.flows.size());
    });
    for (double p : {0.0, 50.0, 99.0, 100.0})
      stat_row(p == 0 ? "FCT min" : p == 100 ? "FCT max" : fmt::format("FCT p{:.0f}", p), fct_us, p, "{:.1f} us");
    stat_row("slowdown p50", slowdown, 50, "{:.2f}");
    stat_row("slowdown max", slowdown, 100, "{:.2f}");
    // Jain's index over the finished flows' goodput (bytes / FCT): 1 when
    // every flow got the same rate, 1/n when one got all of it.
    row("goodput Jain", [](const RunResult& r) {
      double sum = 0, sq = 0;
      size_t n = 0;
      for (const auto& f : r.flows) {
        if (!f.done) continue;
        const double g = static_cast<double>(f.spec.bytes) / f.fct().to_us();
        sum += g;
        sq += g * g;
        ++n;
      }
      return n ? fmt::format("{:.3f}", sum * sum / (static_cast<double>(n) * sq)) : std::string("-");
    });
  }
  row("drops", [](const RunResult& r) {
    return fmt::format(
        "{}", r.fabric.drops_queue + r.fabric.drops_link_down + r.fabric.drops_random + r.fabric.drops_no_route);
  });
  row("  on dead links", [](const RunResult& r) { return fmt::format("{}", r.fabric.drops_link_down); });
  row("trims", [](const RunResult& r) { return fmt::format("{}", r.fabric.trims); });
  row("ECN marks", [](const RunResult& r) { return fmt::format("{}", r.fabric.ecn_marks); });
  row("retransmissions", [](const RunResult& r) { return fmt::format("{}", r.retransmissions); });
  row("  spurious", [](const RunResult& r) {
    const double pct = r.data_packets ? 100.0 * static_cast<double>(r.spurious_retransmissions) /
                                            static_cast<double>(r.data_packets)
                                      : 0.0;
    return fmt::format("{} ({:.2f} %)", r.spurious_retransmissions, pct);
  });
  row("ACK timeouts", [](const RunResult& r) { return fmt::format("{}", r.timeouts); });
  row("EVs retired", [](const RunResult& r) { return fmt::format("{}", r.evs_retired); });
  row("EVs resurrected", [](const RunResult& r) { return fmt::format("{}", r.evs_resurrected); });
  row("ECN path swaps", [](const RunResult& r) { return fmt::format("{}", r.ev_congestion_swaps); });
  row("EVs suspected", [](const RunResult& r) { return fmt::format("{}", r.evs_suspected); });
  row("  cleared", [](const RunResult& r) { return fmt::format("{}", r.evs_cleared); });
  row("QP failures", [](const RunResult& r) { return fmt::format("{}", r.qp_failures); });
  row("simulated", [](const RunResult& r) { return fmt::format("{:.1f} us", r.end.to_us()); });
  row("packet-hops/s", [](const RunResult& r) {
    return fmt::format("{:.2f} M", static_cast<double>(r.fabric.packets_forwarded) / r.wall_s / 1e6);
  });
  row("wall time", [](const RunResult& r) { return fmt::format("{:.2f} s", r.wall_s); });
  // --partitions: the parallel engine's windows and the events carried
  // between partitions, per window.
  if (std::any_of(rs.begin(), rs.end(), [](const RunResult& r) { return r.windows > 0; }))
    row("windows", [](const RunResult& r) {
      const double w = r.windows ? static_cast<double>(r.windows) : 1.0;
      return fmt::format("{} ({:.1f} msg/w in {:.1f} batches/w)", r.windows, static_cast<double>(r.messages) / w,
                         static_cast<double>(r.batches) / w);
    });
  // Under mpirun: what the ranks sent each other, per window (bytes, and
  // point-to-point buffers over every rank).
  if (std::any_of(rs.begin(), rs.end(), [](const RunResult& r) { return r.rank_buffers > 0; }))
    row("MPI exchange", [](const RunResult& r) {
      const double w = r.windows ? static_cast<double>(r.windows) : 1.0;
      return fmt::format("{:.1f} KB/w in {:.1f} msgs/w", static_cast<double>(r.rank_bytes) / w / 1e3,
                         static_cast<double>(r.rank_buffers) / w);
    });
  // The busiest partition's share of the events bounds the speedup.
  if (std::any_of(rs.begin(), rs.end(), [](const RunResult& r) { return r.partition_events.size() > 1; }))
    row("busiest partition", [](const RunResult& r) {
      uint64_t sum = 0, most = 0;
      for (uint64_t e : r.partition_events) {
        sum += e;
        most = std::max(most, e);
      }
      return fmt::format("{:.0f} % of events", sum ? 100.0 * static_cast<double>(most) / static_cast<double>(sum) : 0.0);
    });
  if (std::any_of(rs.begin(), rs.end(), [](const RunResult& r) { return r.partition_cpu_s.size() > 1; }))
    row("partition CPU", [](const RunResult& r) {
      std::string s;
      for (double c : r.partition_cpu_s) s += fmt::format("{}{:.2f}", s.empty() ? "" : "/", c);
      return s + " s";
    });
  // The busiest partition of each window, summed: what the run would take
  // on free cores.
  if (std::any_of(rs.begin(), rs.end(), [](const RunResult& r) { return r.span_cpu_s > 0; }))
    row("critical path", [](const RunResult& r) { return fmt::format("{:.2f} s CPU", r.span_cpu_s); });
  row("peak RSS", [](const RunResult& r) { return fmt::format("{} MB", r.peak_rss_kb / 1024); });
  return out;
}

}  // namespace mrc::sim::tool
