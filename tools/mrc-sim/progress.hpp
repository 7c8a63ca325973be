// SPDX-License-Identifier: BSD-2-Clause
// Progress bars for long mrc-sim runs, drawn on a terminal (stderr), one
// line per transport. Nothing here touches the simulation or stdout: wall
// time appears only on the terminal.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "sim/scenario/runner.hpp"

namespace mrc::sim::tool {

/// How far a run is, in [0, 1]: steps done / steps for collectives, flows
/// ended / flows for flow workloads, or simulated time / time limit when
/// that is further along (the run stops at the limit whatever else is left).
double progress_fraction(const Progress& p);

/// One progress line (no line control characters): transport, a bar of
/// `bar_width` cells, percentage, simulated time, steps or flows done,
/// events per wall second, elapsed wall time and, once past 2 %, an
/// estimate of the wall time left.
std::string progress_line(const std::string& transport, const Progress& p, double wall_s, int bar_width = 28);

/// Draws the progress of one run after another on `out`, redrawing one line
/// in place at most 10 times a second; finish() leaves a final line per run.
class ProgressBar {
 public:
  explicit ProgressBar(std::FILE* out) : out_(out) {}
  /// A run of `transport` starts now (wall clock).
  void begin(const std::string& transport);
  /// Scenario::progress callback of the current run.
  void update(const Progress& p);
  /// The run ended: redraws its line at 100 % (or where it stopped if it did
  /// not complete) and moves to the next line.
  void finish(bool completed);

 private:
  double elapsed_s() const;
  void draw(const Progress& p, const char* note);

  std::FILE* out_;
  std::string transport_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  Progress last_;
};

}  // namespace mrc::sim::tool
