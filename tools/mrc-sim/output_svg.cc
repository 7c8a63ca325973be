// SPDX-License-Identifier: BSD-2-Clause
// SVG plots (--svg DIR), written as text: a line chart with axes, ticks,
// grid, legend and optional vertical markers is all the plots need, and
// plain SVG opens in any browser without a plotting stack.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "mrc-sim/output.hpp"

namespace mrc::sim::tool {

namespace {

// Canvas and plot area, in SVG user units (pixels). The legend sits in the
// right margin so it never hides data.
constexpr double kWidth = 960, kHeight = 540;
constexpr double kLeft = 90, kRight = kWidth - 200, kTop = 50, kBottom = kHeight - 60;
/// Height of the failure lane between the title and the plot (throughput
/// plots): numbered tags of the failure actions, never over the data.
constexpr double kFailureLane = 24;

// Distinct colours in run order (colour-blind friendly, high contrast on white).
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string colour(size_t i) { return kPalette[i % std::size(kPalette)]; }

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

/// A linear axis whose range is widened to whole tick steps of 1, 2 or 5
/// times a power of ten.
struct Axis {
  double lo = 0, hi = 1, step = 0.2;
  std::string label;

  static Axis nice(double lo, double hi, std::string label, bool integer_ticks = false) {
    if (!(hi > lo)) hi = lo + 1;
    const double raw = (hi - lo) / 6;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
      step = m * mag;
      if (step >= raw) break;
    }
    if (integer_ticks) step = std::max(1.0, std::round(step));
    Axis a;
    a.lo = std::floor(lo / step + 1e-9) * step;
    a.hi = std::ceil(hi / step - 1e-9) * step;
    a.step = step;
    a.label = std::move(label);
    return a;
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    // From the first multiple of `step` in range, so a range widened by
    // hand (half a step around integer positions) still ticks integers.
    for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-6; v += step)
      t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
    return t;
  }
};

std::string tick_text(double v) {
  if (std::abs(v - std::round(v)) < 1e-9 && std::abs(v) < 1e12)
    return fmt::format("{}", static_cast<int64_t>(std::round(v)));
  return fmt::format("{:.3g}", v);
}

/// Time axes read in microseconds up to 2 ms, in milliseconds beyond.
struct TimeUnit {
  double per_us;  ///< axis units per microsecond
  const char* name;
};
TimeUnit time_unit(double max_us) { return max_us >= 2000 ? TimeUnit{1e-3, "ms"} : TimeUnit{1, "\u00b5s"}; }

struct LegendEntry {
  std::string text;
  std::string colour;
  std::string dash;  ///< stroke-dasharray, empty for solid
};

/// A failure action to mark: where (x axis units), its short label and the
/// tooltip (time and full text).
struct Marker {
  double x;
  std::string label, tooltip;
};

class Plot {
 public:
  /// `lane`: room above the plot for failure tags (kFailureLane), or 0.
  Plot(const std::string& title, Axis x, Axis y, double lane = 0)
      : x_(std::move(x)), y_(std::move(y)), top_(kTop + lane), bottom_(kBottom + lane), height_(kHeight + lane) {
    put("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
        kWidth, height_);
    put("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", kWidth, height_);
    put("<text x=\"{}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n", (kLeft + kRight) / 2,
        xml_escape(title));
    axes();
  }

  double px(double x) const { return kLeft + (x - x_.lo) / (x_.hi - x_.lo) * (kRight - kLeft); }
  double py(double y) const { return bottom_ - (y - y_.lo) / (y_.hi - y_.lo) * (bottom_ - top_); }

  /// One data series; `cls` lets tools (and tests) find series by role.
  void polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, const char* cls,
                const std::string& transport, const std::string& dash = {}) {
    put("<polyline class=\"{}\" data-transport=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\"{} points=\"",
        cls, xml_escape(transport), stroke, dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", dash));
    bool first = true;
    for (const auto& [x, y] : pts) {
      put("{}{:.1f},{:.1f}", first ? "" : " ", px(x), py(y));
      first = false;
    }
    put("\"/>\n");
  }

  void dot(double x, double y, const std::string& fill) {
    put("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(x), py(y), fill);
  }

  /// A horizontal reference line across the plot with a label at its right end.
  void hline(double y, const std::string& label) {
    put("<g class=\"reference\"><line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#777\" "
        "stroke-dasharray=\"2 3\"/>",
        kLeft, py(y), kRight, py(y));
    put("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#555\" text-anchor=\"end\">{}</text></g>\n",
        kRight - 4, py(y) - 4, xml_escape(label));
  }

  /// A shaded band from x0 to x1 across the plot, behind the data (drawn
  /// before the series): a training step's compute phase.
  void band(double x0, double x1, const std::string& fill, const char* cls, const std::string& transport) {
    const double a = std::clamp(px(x0), kLeft, kRight), b = std::clamp(px(x1), kLeft, kRight);
    if (b - a < 0.05) return;
    put("<rect class=\"{}\" data-transport=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
        "fill=\"{}\" fill-opacity=\"0.12\"/>\n",
        cls, xml_escape(transport), a, top_, b - a, bottom_ - top_, fill);
  }

  /// Failure actions: a dashed line across the plot at each, and in the
  /// lane above the plot a numbered tag (one number per distinct label, in
  /// order of first appearance) joined to its line by a short leader. Tags
  /// sit in one row, slid right past the one before and back left at the
  /// right edge, so they never overlap each other or the data; the numbers
  /// are explained under the legend (key()). Markers outside the x range
  /// are left out; tags that find no room (more than the row holds) too,
  /// their lines and tooltips stay.
  void markers(const std::vector<Marker>& ms) {
    struct Placed {
      double p;
      size_t number;
      const Marker* m;
    };
    std::vector<Placed> in;
    for (const Marker& m : ms) {
      const double p = px(m.x);
      if (p < kLeft - 0.5 || p > kRight + 0.5) continue;
      auto it = std::find(key_.begin(), key_.end(), m.label);
      if (it == key_.end()) it = key_.insert(key_.end(), m.label);
      in.push_back({p, static_cast<size_t>(it - key_.begin()) + 1, &m});
    }
    std::stable_sort(in.begin(), in.end(), [](const Placed& a, const Placed& b) { return a.p < b.p; });
    std::vector<double> tx(in.size());
    for (size_t i = 0; i < in.size(); ++i) tx[i] = i == 0 ? in[i].p : std::max(in[i].p, tx[i - 1] + kTagWidth);
    for (size_t i = in.size(); i-- > 0;) tx[i] = std::min(tx[i], i + 1 == in.size() ? kRight : tx[i + 1] - kTagWidth);
    const bool room = in.empty() || tx.front() >= kLeft - kTagWidth / 2;
    for (size_t i = 0; i < in.size(); ++i) {
      const Placed& m = in[i];
      put("<g class=\"failure\"><title>{}</title>", xml_escape(m.m->tooltip));
      put("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#b8860b\" "
          "stroke-dasharray=\"4 3\"/>",
          m.p, top_, bottom_);
      if (room) {
        put("<line class=\"leader\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#b8860b\"/>",
            tx[i], top_ - 8, m.p, top_);
        put("<text class=\"failure-tag\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#8a6508\" "
            "text-anchor=\"middle\">{}</text>",
            tx[i], top_ - 10, m.number);
      }
      put("</g>\n");
    }
  }

  /// The tags' texts in number order (tests).
  const std::vector<std::string>& failure_key() const { return key_; }

  /// A note at the end of a run's line that it did not complete.
  void incomplete(double x, double y, const std::string& fill, const std::string& transport) {
    put("<g class=\"incomplete\" data-transport=\"{}\"><path d=\"M{:.1f},{:.1f} l6,6 m0,-6 l-6,6\" stroke=\"{}\" "
        "stroke-width=\"2\"/><text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"{}\" text-anchor=\"end\" "
        "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">{}: did not complete</text></g>\n",
        xml_escape(transport), px(x) - 3, py(y) - 3, fill, px(x) - 6, py(y) - 8, fill, xml_escape(transport));
  }

  void legend(const std::vector<LegendEntry>& entries) {
    double y = top_ + 10;
    put("<g class=\"legend\">\n");
    for (const auto& e : entries) {
      if (e.dash == "band")
        put("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"28\" height=\"10\" fill=\"{}\" fill-opacity=\"0.12\"/>",
            kRight + 16, y - 5, e.colour);
      else
        put("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2.5\"{}/>",
            kRight + 16, y, kRight + 44, y, e.colour,
            e.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", e.dash));
      put("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", kRight + 50, y + 4, xml_escape(e.text));
      y += 20;
    }
    // The failure tags' key: the number, the action's kind, its target on
    // a second line; what does not fit above the axis title is summed up.
    for (size_t i = 0; i < key_.size(); ++i) {
      if (y + 26 > bottom_) {
        put("<text class=\"failure-key-more\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#8a6508\">"
            "{} more: hover the markers</text>\n",
            kRight + 16, y + 4, key_.size() - i);
        break;
      }
      // Split before the target (the first key=value), so "end of
      // switch-down" stays on the first line.
      const std::string& l = key_[i];
      const size_t eq = l.find('=');
      const size_t sp = eq == std::string::npos ? std::string::npos : l.rfind(' ', eq);
      put("<g class=\"failure-key\" data-label=\"{}\" font-size=\"10\" fill=\"#8a6508\">", xml_escape(l));
      put("<text x=\"{:.1f}\" y=\"{:.1f}\">{}  {}</text>", kRight + 16, y + 4, i + 1,
          xml_escape(l.substr(0, sp)));
      if (sp != std::string::npos)
        put("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", kRight + 30, y + 16, xml_escape(l.substr(sp + 1)));
      put("</g>\n");
      y += sp == std::string::npos ? 16 : 28;
    }
    put("</g>\n");
  }

  std::string finish() {
    put("</svg>\n");
    return std::move(out_);
  }

 private:
  template <class... Args>
  void put(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(std::back_inserter(out_), f, std::forward<Args>(args)...);
  }

  void axes() {
    put("<g class=\"axes\" stroke=\"#ddd\">\n");
    for (double t : x_.ticks())
      put("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", px(t), top_, bottom_);
    for (double t : y_.ticks())
      put("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>\n", py(t), kLeft, kRight);
    put("</g>\n");
    put("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", kLeft, top_,
        kRight - kLeft, bottom_ - top_);
    put("<g class=\"ticks\" fill=\"#333\">\n");
    for (double t : x_.ticks())
      put("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(t), bottom_ + 16, tick_text(t));
    for (double t : y_.ticks())
      put("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, py(t) + 4, tick_text(t));
    put("</g>\n");
    put("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", (kLeft + kRight) / 2, height_ - 20,
        xml_escape(x_.label));
    put("<text transform=\"translate({:.1f},{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", 24.0,
        (top_ + bottom_) / 2, xml_escape(y_.label));
  }

  /// Room of a failure tag in its row: up to three digits at 10 px.
  static constexpr double kTagWidth = 20;

  Axis x_, y_;
  double top_, bottom_, height_;  ///< plot area top and bottom, canvas height (shifted down by the lane)
  std::string out_;
  std::vector<std::string> key_;  ///< failure labels, tag number - 1
};

/// A failure action as a short label: kind and target without the timing
/// keys ("switch-down tier=t1,plane=0,index=1"); "end of " and " (down)"
/// are kept.
std::string failure_label(const std::string& action) {
  std::string prefix, suffix, core = action;
  if (core.rfind("end of ", 0) == 0) {
    prefix = "end of ";
    core = core.substr(7);
  }
  if (const auto d = core.rfind(" (down)"); d != std::string::npos && d + 7 == core.size()) {
    suffix = " (down)";
    core = core.substr(0, d);
  }
  const auto colon = core.find(':');
  if (colon == std::string::npos) return action;
  std::string keep;
  size_t pos = colon + 1;
  while (pos <= core.size()) {
    size_t comma = core.find(',', pos);
    if (comma == std::string::npos) comma = core.size();
    const std::string item = core.substr(pos, comma - pos);
    const std::string key = item.substr(0, item.find('='));
    if (key != "at" && key != "for" && key != "until" && key != "period" && key != "duty")
      keep += (keep.empty() ? "" : ",") + item;
    pos = comma + 1;
  }
  return prefix + core.substr(0, colon) + (keep.empty() ? "" : " " + keep) + suffix;
}

/// One entry per run; a run that did not complete says so.
std::vector<LegendEntry> transport_legend(const std::vector<RunResult>& runs) {
  std::vector<LegendEntry> l;
  for (size_t i = 0; i < runs.size(); ++i)
    l.push_back({runs[i].transport + (runs[i].completed ? "" : " (did not complete)"), colour(i), {}});
  return l;
}

std::string throughput_svg(const std::vector<RunResult>& runs, const SvgOptions& opt) {
  double t_max = 0, g_max = 0;
  for (const auto& r : runs) t_max = std::max(t_max, r.end.to_us());
  // The x range: the whole run unless narrowed by the options.
  const double from_us = std::min(opt.from_us, t_max);
  const double to_us = opt.to_us > from_us ? std::min(opt.to_us, std::max(t_max, from_us + 1e-3)) : t_max;
  auto in_range = [&](double t_us) { return t_us >= from_us - 1e-9 && t_us <= to_us + 1e-9; };
  for (const auto& r : runs)
    for (const auto& s : r.series)
      if (in_range(s.at.to_us())) g_max = std::max(g_max, s.goodput_gbps);
  const TimeUnit u = time_unit(to_us);
  Axis x = Axis::nice(from_us * u.per_us, to_us * u.per_us, fmt::format("simulated time ({})", u.name));
  if (opt.from_us > 0 || opt.to_us > 0) {  // exactly the range asked for
    x.lo = from_us * u.per_us;
    x.hi = to_us * u.per_us;
  }
  // The y axis reaches the capacity line (and the data, which may pass it
  // for a moment: a sample interval's deliveries), in Gb/s or, from 2,000
  // Gb/s, in Tb/s.
  const double y_top = std::max(g_max, opt.capacity_gbps);
  const bool tbps = y_top >= 2000;
  const double scale = tbps ? 1e-3 : 1;
  const char* unit = tbps ? "Tb/s" : "Gb/s";
  // Failure actions happen at the same times in every run (one schedule);
  // each distinct one is marked once.
  std::set<std::pair<int64_t, std::string>> actions;
  for (const auto& r : runs)
    for (const auto& [t, a] : r.failure_log) actions.emplace((t - Time::zero()).count_ps(), a);
  Plot p("Goodput over time (payload delivered to all NICs)", x,
         Axis::nice(0, y_top > 0 ? y_top * 1.05 * scale : 1, fmt::format("goodput ({})", unit)),
         actions.empty() ? 0 : kFailureLane);
  // Training steps: each starts with its compute phase (the step's time
  // less its all-reduce's), the first at time zero and each next when the
  // one before ends (RingTraining). Shaded, so a phase without traffic does
  // not read as an outage.
  bool shaded = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    double at_us = 0;
    for (size_t k = 0; k < runs[i].steps.size() && k < runs[i].collectives.size(); ++k) {
      const double compute_us = (runs[i].steps[k] - runs[i].collectives[k]).to_us();
      if (compute_us > 0 && at_us + compute_us >= from_us && at_us <= to_us) {
        p.band(std::max(at_us, from_us) * u.per_us, std::min(at_us + compute_us, to_us) * u.per_us, colour(i),
               "compute", runs[i].transport);
        shaded = true;
      }
      at_us += runs[i].steps[k].to_us();
    }
  }
  if (opt.capacity_gbps > 0)
    p.hline(opt.capacity_gbps * scale, fmt::format("capacity {} {}", tick_text(opt.capacity_gbps * scale), unit));
  std::vector<Marker> ms;
  for (const auto& [ps, a] : actions)
    ms.push_back({Duration::ps(ps).to_us() * u.per_us, failure_label(a),
                  fmt::format("{:.1f} us: {}", Duration::ps(ps).to_us(), a)});
  p.markers(ms);
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& s : runs[i].series)
      if (in_range(s.at.to_us())) pts.emplace_back(s.at.to_us() * u.per_us, s.goodput_gbps * scale);
    p.polyline(pts, colour(i), "series", runs[i].transport);
    // Marked where the run stopped (its time limit) when it is in view.
    if (!runs[i].completed && in_range(runs[i].end.to_us()))
      p.incomplete(runs[i].end.to_us() * u.per_us, pts.empty() ? 0 : pts.back().second, colour(i),
                   runs[i].transport);
  }
  auto legend = transport_legend(runs);
  if (shaded) legend.push_back({"compute phase", "#555", "band"});
  if (!actions.empty()) legend.push_back({"failure action (key below)", "#b8860b", "4 3"});
  p.legend(legend);
  return p.finish();
}

std::string fct_cdf_svg(const std::vector<RunResult>& runs) {
  double fct_max = 0;
  for (const auto& r : runs)
    for (const auto& f : r.flows)
      if (f.done) fct_max = std::max(fct_max, f.fct().to_us());
  const TimeUnit u = time_unit(fct_max);
  Plot p("Flow completion time CDF",
         Axis::nice(0, fct_max * u.per_us, fmt::format("flow completion time ({})", u.name)),
         Axis::nice(0, 1, "fraction of flows completed"));
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<double> v;
    for (const auto& f : runs[i].flows)
      if (f.done) v.push_back(f.fct().to_us() * u.per_us);
    std::sort(v.begin(), v.end());
    // A step function over all flows of the run: unfinished flows keep the
    // curve below 1, which is the point when a transport loses some.
    const double n = static_cast<double>(std::max<size_t>(1, runs[i].flows.size()));
    std::vector<std::pair<double, double>> pts;
    if (!v.empty()) pts.emplace_back(v.front(), 0);
    for (size_t k = 0; k < v.size(); ++k) {
      pts.emplace_back(v[k], static_cast<double>(k) / n);
      pts.emplace_back(v[k], static_cast<double>(k + 1) / n);
    }
    p.polyline(pts, colour(i), "series", runs[i].transport);
  }
  p.legend(transport_legend(runs));
  return p.finish();
}

std::string steps_svg(const std::vector<RunResult>& runs) {
  size_t n = 0;
  double t_max = 0;
  for (const auto& r : runs) {
    n = std::max(n, r.steps.size());
    for (Duration d : r.steps) t_max = std::max(t_max, d.to_us());
  }
  const double ideal_us = runs.empty() ? 0 : runs[0].ideal_collective.to_us();
  const TimeUnit u = time_unit(t_max);
  // Steps sit at integer positions with half a step of room on either side.
  Axis x = Axis::nice(0, static_cast<double>(std::max<size_t>(n, 1) - 1), "training step", true);
  x.lo = -0.5;
  x.hi = static_cast<double>(std::max<size_t>(n, 1)) - 0.5;
  x.step = std::max(1.0, x.step);
  Plot p("Time per training step (solid) and its all-reduce (dashed)", x,
         Axis::nice(0, std::max(t_max, ideal_us) * 1.05 * u.per_us, fmt::format("time ({})", u.name)));
  if (ideal_us > 0) p.hline(ideal_us * u.per_us, "all-reduce ideal");
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::pair<double, double>> step_pts, coll_pts;
    for (size_t k = 0; k < runs[i].steps.size(); ++k) {
      step_pts.emplace_back(static_cast<double>(k), runs[i].steps[k].to_us() * u.per_us);
      coll_pts.emplace_back(static_cast<double>(k), runs[i].collectives[k].to_us() * u.per_us);
    }
    p.polyline(step_pts, colour(i), "series", runs[i].transport);
    p.polyline(coll_pts, colour(i), "series-allreduce", runs[i].transport, "5 3");
    for (const auto& [sx, sy] : step_pts) p.dot(sx, sy, colour(i));
  }
  auto legend = transport_legend(runs);
  legend.push_back({"step time", "#555", {}});
  legend.push_back({"all-reduce", "#555", "5 3"});
  p.legend(legend);
  return p.finish();
}

}  // namespace

std::vector<SvgFile> svg_files(const std::vector<RunResult>& runs, const SvgOptions& opt) {
  std::vector<SvgFile> out;
  out.push_back({"throughput.svg", throughput_svg(runs, opt)});
  // A flow workload records every flow (finished or not); a collective
  // workload records none, even when it completed no step.
  const bool flows = std::any_of(runs.begin(), runs.end(), [](const RunResult& r) { return !r.flows.empty(); });
  if (flows) out.push_back({"fct_cdf.svg", fct_cdf_svg(runs)});
  else out.push_back({"steps.svg", steps_svg(runs)});
  return out;
}

}  // namespace mrc::sim::tool
