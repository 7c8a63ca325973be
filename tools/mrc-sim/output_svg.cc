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

class Plot {
 public:
  Plot(const std::string& title, Axis x, Axis y) : x_(std::move(x)), y_(std::move(y)) {
    put("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
        kWidth, kHeight);
    put("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", kWidth, kHeight);
    put("<text x=\"{}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n", (kLeft + kRight) / 2,
        xml_escape(title));
    axes();
  }

  double px(double x) const { return kLeft + (x - x_.lo) / (x_.hi - x_.lo) * (kRight - kLeft); }
  double py(double y) const { return kBottom - (y - y_.lo) / (y_.hi - y_.lo) * (kBottom - kTop); }

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

  /// A vertical dashed marker at x with a label along it and the full text
  /// as a tooltip. A label equal to the previous one (a flapping link) is cut
  /// to `repeat_label`. Labels never overprint each other: one that would
  /// overlap a label already placed close by slides down the marker below
  /// it, or into a free column beside the marker with a leader line, and is
  /// left out (the tooltip stays) only when none is free.
  void marker(double x, const std::string& label, const std::string& repeat_label, const std::string& tooltip) {
    const double p = px(x);
    if (p < kLeft - 0.5 || p > kRight + 0.5) return;
    put("<g class=\"failure\"><title>{}</title>", xml_escape(tooltip));
    put("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#b8860b\" "
        "stroke-dasharray=\"4 3\"/>",
        p, kTop, kBottom);
    const std::string text = label == last_label_ ? repeat_label : label;
    const double len = label_length(text);
    // Along the marker first; when its column is full, in the next free
    // column to the side (left near the right edge), with a leader line.
    for (int lane = 0; lane < kLabelLanes; ++lane) {
      double lx = p + lane * kLabelWidth;
      if (lx > kRight) lx = p - lane * kLabelWidth;
      double top = kTop + 4;
      for (bool moved = true; moved;) {  // first free slot from the top
        moved = false;
        for (const PlacedLabel& o : labels_)
          if (std::abs(lx - o.x) < kLabelWidth && top < o.bottom + kLabelGap && o.top < top + len + kLabelGap) {
            top = o.bottom + kLabelGap;
            moved = true;
          }
      }
      if (top + len > kBottom - 2) continue;
      if (lane > 0)
        put("<line class=\"leader\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#b8860b\"/>",
            p, top, lx - 3, top);
      // A white outline under the glyphs keeps the label legible over data.
      put("<text class=\"failure-label\" transform=\"translate({:.1f},{:.1f}) rotate(-90)\" font-size=\"10\" "
          "fill=\"#8a6508\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\" "
          "text-anchor=\"end\">{}</text>",
          lx - 3, top, xml_escape(text));
      labels_.push_back(PlacedLabel{lx, top, top + len});
      break;
    }
    last_label_ = label;
    put("</g>\n");
  }

  /// Where the label of the marker at `x` went (top and bottom along the
  /// marker), for tests: the labels placed so far, in order.
  struct PlacedLabel {
    double x, top, bottom;
  };
  const std::vector<PlacedLabel>& labels() const { return labels_; }

  /// A note at the end of a run's line that it did not complete.
  void incomplete(double x, double y, const std::string& fill, const std::string& transport) {
    put("<g class=\"incomplete\" data-transport=\"{}\"><path d=\"M{:.1f},{:.1f} l6,6 m0,-6 l-6,6\" stroke=\"{}\" "
        "stroke-width=\"2\"/><text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"{}\" text-anchor=\"end\" "
        "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">{}: did not complete</text></g>\n",
        xml_escape(transport), px(x) - 3, py(y) - 3, fill, px(x) - 6, py(y) - 8, fill, xml_escape(transport));
  }

  void legend(const std::vector<LegendEntry>& entries) {
    double y = kTop + 10;
    put("<g class=\"legend\">\n");
    for (const auto& e : entries) {
      put("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2.5\"{}/>",
          kRight + 16, y, kRight + 44, y, e.colour,
          e.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", e.dash));
      put("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", kRight + 50, y + 4, xml_escape(e.text));
      y += 20;
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
      put("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", px(t), kTop, kBottom);
    for (double t : y_.ticks())
      put("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>\n", py(t), kLeft, kRight);
    put("</g>\n");
    put("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", kLeft, kTop,
        kRight - kLeft, kBottom - kTop);
    put("<g class=\"ticks\" fill=\"#333\">\n");
    for (double t : x_.ticks())
      put("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(t), kBottom + 16, tick_text(t));
    for (double t : y_.ticks())
      put("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, py(t) + 4, tick_text(t));
    put("</g>\n");
    put("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", (kLeft + kRight) / 2, kHeight - 20,
        xml_escape(x_.label));
    put("<text transform=\"translate({:.1f},{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", 24.0,
        (kTop + kBottom) / 2, xml_escape(y_.label));
  }

  // A rotated 10 px label is about 12 px wide; its length is estimated from
  // Helvetica's average advance (0.55 em).
  static constexpr double kLabelWidth = 12, kLabelGap = 6;
  static constexpr int kLabelLanes = 6;  ///< columns tried per label before it is left out
  static double label_length(const std::string& s) { return 5.5 * static_cast<double>(s.size()); }

  Axis x_, y_;
  std::string out_;
  std::vector<PlacedLabel> labels_;
  std::string last_label_;
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
  Plot p("Goodput over time (payload delivered to all NICs)", x,
         Axis::nice(0, g_max > 0 ? g_max * 1.05 : 1, "goodput (Gb/s)"));
  // Failure actions happen at the same times in every run (one schedule);
  // draw each distinct one once.
  std::set<std::pair<int64_t, std::string>> actions;
  for (const auto& r : runs)
    for (const auto& [t, a] : r.failure_log) actions.emplace((t - Time::zero()).count_ps(), a);
  for (const auto& [ps, a] : actions) {
    const std::string label = failure_label(a);
    const bool down = label.size() > 7 && label.substr(label.size() - 7) == " (down)";
    p.marker(Duration::ps(ps).to_us() * u.per_us, label, down ? "(down)" : "(again)",
             fmt::format("{:.1f} us: {}", Duration::ps(ps).to_us(), a));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& s : runs[i].series)
      if (in_range(s.at.to_us())) pts.emplace_back(s.at.to_us() * u.per_us, s.goodput_gbps);
    p.polyline(pts, colour(i), "series", runs[i].transport);
    // Marked where the run stopped (its time limit) when it is in view.
    if (!runs[i].completed && in_range(runs[i].end.to_us()))
      p.incomplete(runs[i].end.to_us() * u.per_us, pts.empty() ? 0 : pts.back().second, colour(i),
                   runs[i].transport);
  }
  auto legend = transport_legend(runs);
  if (!actions.empty()) legend.push_back({"failure action", "#b8860b", "4 3"});
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
