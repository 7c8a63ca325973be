// SPDX-License-Identifier: BSD-2-Clause
// mrc-sim's outputs: the summary table on stdout, JSON, CSV files and SVG
// plots of a set of runs (one RunResult per transport, same scenario and
// seed). docs/mrc-sim.md describes every file and column.
//
// Every writer is a pure function of the runs: the same runs give the same
// bytes, so outputs of the same configuration and seed are identical. The
// only wall-clock figures written are the ones RunResult already carries
// (wall_s, and peak RSS in the table).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario/runner.hpp"
#include "util/result.hpp"

namespace mrc::sim::tool {

/// Schema name written into the JSON document ("schema" field). Stays
/// "mrc-sim/1" while changes only add fields.
inline constexpr const char* kJsonSchema = "mrc-sim/1";

/// The side-by-side summary table printed after the runs (one column per
/// run), as text ending in a newline.
std::string summary_table(const std::vector<RunResult>& runs);

/// The JSON document of `runs`: {"schema", "seed", "runs": [...]}, one run
/// object per transport, indented by one space.
std::string results_json(const std::vector<RunResult>& runs, uint64_t seed);

/// Status of a flow as written to the outputs: "unfinished" while a flow
/// that has not failed is still running at the end of the run, otherwise
/// the work-completion status ("success", "retry_exc_err", ...).
std::string flow_status(const FlowRecord& f);

/// The event counters of a run, by name, in the order JSON's "counters"
/// object and counters.csv list them (fabric counters summed over every
/// switch, protocol counters over every QP of every host).
std::vector<std::pair<std::string, uint64_t>> run_counters(const RunResult& r);

/// One CSV output file: its name within the output directory and its text
/// (a header row, then one row per record, "\n" line ends).
struct CsvFile {
  std::string name;
  std::string text;
};

/// The CSV files of `runs`: runs.csv, flows.csv, steps.csv, series.csv,
/// ev_events.csv, counters.csv and failures.csv, each with a header row even
/// when it has no records (e.g. flows.csv of a training run); then
/// series_hosts.csv, series_planes.csv and series_flows.csv when a run has
/// those series (Scenario::series_hosts, ...).
std::vector<CsvFile> csv_files(const std::vector<RunResult>& runs);

/// Quotes a CSV field when it holds a comma, a quote or a line break
/// (RFC 4180: wrapped in quotes, inner quotes doubled); otherwise returns it
/// as is.
std::string csv_field(const std::string& text);

/// Plot options.
struct SvgOptions {
  /// The time axis of throughput.svg from..to (microseconds); 0, 0 = the
  /// whole run. Samples and failure markers outside it are left out.
  double from_us = 0;
  double to_us = 0;
  /// throughput.svg's capacity line: what every NIC port can take at once
  /// (hosts x planes x host link rate), Gb/s; 0 = no line.
  double capacity_gbps = 0;
};

/// One SVG output file: its name within the output directory and its text.
struct SvgFile {
  std::string name;
  std::string text;
};

/// The SVG plots of `runs` (one colour per run, in the order of `runs`):
///   throughput.svg — goodput over time per transport, with a labelled
///                    vertical marker at each failure action (labels never
///                    overlap), a run that did not complete marked where it
///                    stopped;
///   steps.svg      — for collective workloads (train, allreduce): step
///                    time and all-reduce time of each step per transport,
///                    and the ideal all-reduce time;
///   fct_cdf.svg    — for flow workloads (runs with flow records): the CDF
///                    of flow completion times per transport, over all flows
///                    (unfinished flows keep a curve below 1).
/// Self-contained SVG 1.1 documents, no scripts or external references.
/// A run that did not complete says so in every legend.
std::vector<SvgFile> svg_files(const std::vector<RunResult>& runs, const SvgOptions& opt = {});

/// Writes `text` to `dir`/`name` (to `name` alone when `dir` is empty),
/// creating the directories on the way if missing. On failure (Errc::io)
/// `why` names the path and the system error.
Status write_file(const std::string& dir, const std::string& name, const std::string& text, std::string* why);

}  // namespace mrc::sim::tool
