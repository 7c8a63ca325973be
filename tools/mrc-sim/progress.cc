// SPDX-License-Identifier: BSD-2-Clause
#include "mrc-sim/progress.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace mrc::sim::tool {

namespace {

std::string wall_text(double s) {
  if (s < 100) return fmt::format("{:.1f} s", s);
  const auto whole = static_cast<int64_t>(s);
  return fmt::format("{}m{:02}s", whole / 60, whole % 60);
}

std::string sim_text(Time t) {
  const double us = t.to_us();
  return us < 2000 ? fmt::format("{:.0f} us", us) : fmt::format("{:.2f} ms", us / 1e3);
}

}  // namespace

double progress_fraction(const Progress& p) {
  double f = 0;
  if (p.steps_total > 0) f = static_cast<double>(p.steps_done) / static_cast<double>(p.steps_total);
  else if (p.flows_total > 0) f = static_cast<double>(p.flows_done) / static_cast<double>(p.flows_total);
  if (p.time_limit > Duration{}) f = std::max(f, (p.now - Time::zero()).to_s() / p.time_limit.to_s());
  return std::clamp(f, 0.0, 1.0);
}

std::string progress_line(const std::string& transport, const Progress& p, double wall_s, int bar_width) {
  const double f = progress_fraction(p);
  const int filled = static_cast<int>(std::floor(f * bar_width));
  std::string bar(static_cast<size_t>(bar_width), ' ');
  for (int i = 0; i < filled; ++i) bar[static_cast<size_t>(i)] = '=';
  if (filled < bar_width) bar[static_cast<size_t>(filled)] = '>';
  std::string work;
  if (p.steps_total > 0) work = fmt::format("  step {}/{}", p.steps_done, p.steps_total);
  else if (p.flows_total > 0) work = fmt::format("  flows {}/{}", p.flows_done, p.flows_total);
  const double rate = wall_s > 0 ? static_cast<double>(p.events) / wall_s : 0;
  std::string eta;
  if (f > 0.02 && f < 1) eta = fmt::format("  ETA {}", wall_text(wall_s * (1 - f) / f));
  return fmt::format("  {:<16} [{}] {:3.0f}%  {} simulated{}  {:.2f} M events/s  {}{}", transport, bar, f * 100,
                     sim_text(p.now), work, rate / 1e6, wall_text(wall_s), eta);
}

void ProgressBar::begin(const std::string& transport) {
  transport_ = transport;
  start_ = std::chrono::steady_clock::now();
  last_draw_ = {};
  last_ = Progress{};
}

double ProgressBar::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressBar::update(const Progress& p) {
  last_ = p;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(p, "");
}

void ProgressBar::finish(bool completed) {
  Progress p = last_;
  // A completed run is done whatever its last chunk reported.
  if (completed) {
    p.steps_done = p.steps_total;
    p.flows_done = p.flows_total;
    if (p.now > Time::zero()) p.time_limit = p.now - Time::zero();  // full bar
  }
  draw(p, completed ? "" : "  (stopped at the time limit)");
  std::fputc('\n', out_);
  std::fflush(out_);
}

void ProgressBar::draw(const Progress& p, const char* note) {
  // \r returns to the line start; ESC[K clears what a longer line left.
  const std::string line = progress_line(transport_, p, elapsed_s());
  std::fprintf(out_, "\r%s%s\x1b[K", line.c_str(), note);
  std::fflush(out_);
}

}  // namespace mrc::sim::tool
