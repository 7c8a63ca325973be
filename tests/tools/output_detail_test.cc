// SPDX-License-Identifier: BSD-2-Clause
// Detail outputs: drops by packet type, per-host / per-plane / per-flow
// goodput series, and the plots' options (x range, failure labels that do
// not overlap, runs that did not complete).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "mrc-sim/options.hpp"
#include "mrc-sim/output.hpp"

namespace mrc::sim::tool {
namespace {

// 16 hosts on 2 planes; plane 0's T0-T1 links all die 5 us in, so the run
// drops packets of every type. Seed 2: the failure also loses SACKs of
// packets that had arrived, so some are sent twice (seeds 2 to 8 do; seed 1
// does not).
RunResult plane_down_run(std::vector<std::string> series = {}) {
  SimOptions o;
  o.seed = 2;
  o.series = std::move(series);
  o.planes = 2;
  o.hosts = 16;
  o.t0_down = 4;
  o.t0_up = 4;
  o.t1 = 2;
  o.workload = "permutation";
  o.bytes = 256 * 1024;
  o.transports = {"mrc"};
  o.failures = {"link-down:tier=t0t1,plane=0,a=*,b=*,at=5us"};
  std::string why;
  auto run = resolve(o, &why);
  EXPECT_TRUE(run) << why;
  return run_scenario(run->scenario, run->transports[0]);
}

const RunResult& plane_down() {
  static const RunResult r = plane_down_run();
  return r;
}

TEST(OutputDetail, DropsByPacketTypeAddUpToTheDrops) {
  const RunResult& r = plane_down();
  const FabricStats& f = r.fabric;
  const uint64_t all = f.drops_queue + f.drops_link_down + f.drops_random + f.drops_no_route;
  EXPECT_GT(all, 0u);
  EXPECT_EQ(f.drops_by_class[0] + f.drops_by_class[1] + f.drops_by_class[2], all);
  EXPECT_GT(f.drops_by_class[static_cast<int>(Class::data)], 0u);
  const auto j = nlohmann::json::parse(results_json({r}, 1));
  const auto& c = j["runs"][0]["counters"];
  EXPECT_EQ(c["drops_data"], f.drops_by_class[static_cast<int>(Class::data)]);
  EXPECT_EQ(c["drops_trimmed_header"], f.drops_by_class[static_cast<int>(Class::trimmed)]);
  EXPECT_EQ(c["drops_control"], f.drops_by_class[static_cast<int>(Class::control)]);
}

TEST(OutputDetail, GoodputSeriesPerHostPlaneAndFlow) {
  const RunResult r = plane_down_run({"host", "plane", "flow"});
  ASSERT_TRUE(r.completed);
  ASSERT_FALSE(r.series.empty());
  ASSERT_EQ(r.host_series.size(), r.series.size());
  ASSERT_EQ(r.plane_series.size(), r.series.size());
  ASSERT_EQ(r.flow_series.size(), r.series.size());
  double delivered_bits = 0, unplaced = 0;
  for (size_t i = 0; i < r.series.size(); ++i) {
    ASSERT_EQ(r.host_series[i].size(), 16u);
    ASSERT_EQ(r.plane_series[i].size(), 2u);
    ASSERT_EQ(r.flow_series[i].size(), r.flows.size());
    double hosts = 0, planes = 0, flows = 0;
    for (double g : r.host_series[i]) hosts += g;
    for (double g : r.plane_series[i]) planes += g;
    for (double g : r.flow_series[i]) flows += g;
    // Every byte that arrived, placed or not (a duplicate), is some
    // host's, some plane's and (in a permutation, one flow per host pair)
    // some flow's.
    const double arrived = r.series[i].goodput_gbps + r.series[i].unplaced_gbps;
    EXPECT_NEAR(hosts, arrived, 1e-6);
    EXPECT_NEAR(planes, arrived, 1e-6);
    EXPECT_NEAR(flows, arrived, 1e-6);
    unplaced += r.series[i].unplaced_gbps;
    // 20 us samples (the default), the last one up to the end of the run.
    const double from_us = i == 0 ? 0.0 : r.series[i - 1].at.to_us();
    delivered_bits += r.flow_series[i][0] * (r.series[i].at.to_us() - from_us) * 1e3;
  }
  EXPECT_GE(delivered_bits / 8, static_cast<double>(r.flows[0].spec.bytes) * 0.999) << "flow 0 delivered it all";
  // The plane's failure made the senders resend packets that had arrived
  // (their SACKs were lost with it): the goodput series leaves them out.
  EXPECT_GT(unplaced, 0.0) << "duplicates are reported apart from the goodput";

  const auto j = nlohmann::json::parse(results_json({r}, 1));
  const auto& run = j["runs"][0];
  ASSERT_TRUE(run.contains("host_series"));
  EXPECT_EQ(run["host_series"].size(), r.series.size());
  EXPECT_EQ(run["host_series"][0]["goodput_gbps"].size(), 16u);
  EXPECT_EQ(run["plane_series"][0]["goodput_gbps"].size(), 2u);
  EXPECT_EQ(run["flow_series"][0]["goodput_gbps"].size(), r.flows.size());
  EXPECT_EQ(run["flow_series"][0]["t_us"], r.series[0].at.to_us());

  const auto files = csv_files({r});
  auto text = [&](const std::string& name) {
    for (const auto& f : files)
      if (f.name == name) return f.text;
    ADD_FAILURE() << "no " << name;
    return std::string();
  };
  auto lines = [](const std::string& t) { return static_cast<size_t>(std::count(t.begin(), t.end(), '\n')); };
  EXPECT_EQ(text("series_hosts.csv").rfind("transport,t_us,host,goodput_gbps\n", 0), 0u);
  EXPECT_EQ(lines(text("series_hosts.csv")), 1 + r.series.size() * 16);
  EXPECT_EQ(lines(text("series_planes.csv")), 1 + r.series.size() * 2);
  EXPECT_EQ(text("series_flows.csv").rfind("transport,t_us,flow,src,dst,goodput_gbps\n", 0), 0u);
  EXPECT_EQ(lines(text("series_flows.csv")), 1 + r.series.size() * r.flows.size());
}

TEST(OutputDetail, NoDetailSeriesUnlessAsked) {
  const RunResult& r = plane_down();
  EXPECT_TRUE(r.host_series.empty());
  EXPECT_TRUE(r.plane_series.empty());
  EXPECT_TRUE(r.flow_series.empty());
  EXPECT_FALSE(nlohmann::json::parse(results_json({r}, 1))["runs"][0].contains("host_series"));
  EXPECT_EQ(csv_files({r}).size(), 7u);
}

// A synthetic run: goodput samples every 10 us up to `end_us`, and failure
// actions at the given times.
RunResult synthetic(const std::string& name, double end_us, bool completed,
                    const std::vector<std::pair<double, std::string>>& actions) {
  RunResult r;
  r.transport = name;
  r.completed = completed;
  r.end = Time::zero() + Duration::ps(static_cast<int64_t>(end_us * 1e6));
  for (double t = 10; t <= end_us; t += 10)
    r.series.push_back(Sample{Time::zero() + Duration::ps(static_cast<int64_t>(t * 1e6)), 100 + t / 10, 0});
  for (const auto& [t, a] : actions)
    r.failure_log.emplace_back(Time::zero() + Duration::ps(static_cast<int64_t>(t * 1e6)), a);
  return r;
}

struct Tag {
  double x, y;
  std::string number;
};

/// The failure tags of an SVG (the numbers above the plot): position and text.
std::vector<Tag> tags(const std::string& svg) {
  std::vector<Tag> out;
  const std::string tag = "<text class=\"failure-tag\" x=\"";
  for (size_t pos = svg.find(tag); pos != std::string::npos; pos = svg.find(tag, pos + 1)) {
    Tag t{};
    t.x = std::stod(svg.substr(pos + tag.size()));
    const size_t y = svg.find("y=\"", pos) + 3;
    t.y = std::stod(svg.substr(y));
    const size_t gt = svg.find('>', pos);
    t.number = svg.substr(gt + 1, svg.find("</text>", gt) - gt - 1);
    out.push_back(t);
  }
  return out;
}

/// The failure key's labels (under the legend), in tag-number order.
std::vector<std::string> key(const std::string& svg) {
  std::vector<std::string> out;
  const std::string tag = "<g class=\"failure-key\" data-label=\"";
  for (size_t pos = svg.find(tag); pos != std::string::npos; pos = svg.find(tag, pos + 1))
    out.push_back(svg.substr(pos + tag.size(), svg.find('"', pos + tag.size()) - pos - tag.size()));
  return out;
}

/// The plot area's top: the frame rectangle's y.
double plot_top(const std::string& svg) {
  const std::string frame = "<rect x=\"90\" y=\"";
  return std::stod(svg.substr(svg.find(frame) + frame.size()));
}

TEST(OutputDetail, FailureTagsNeverOverlapEachOtherOrTheData) {
  // Five actions within a few microseconds of each other (a group failure
  // and its neighbours): all five tagged above the plot, none overprinting
  // another, each explained in the key.
  const RunResult r = synthetic("mrc", 1000, true,
                                {{500, "switch-down:tier=t1,plane=0,index=1,at=500us"},
                                 {501, "link-down:tier=host,plane=*,a=5,at=501us"},
                                 {502, "loss:tier=t0t1,plane=2,a=*,b=*,p=0.1,at=502us"},
                                 {503, "rate:tier=host,plane=1,a=3,gbps=10,at=503us"},
                                 {504, "link-down:tier=host,plane=0,a=1,at=504us"}});
  const std::string svg = svg_files({r})[0].text;
  const auto ts = tags(svg);
  ASSERT_EQ(ts.size(), 5u) << svg;
  const double top = plot_top(svg);
  for (size_t i = 0; i < ts.size(); ++i) {
    EXPECT_LT(ts[i].y, top) << "tag " << ts[i].number << " is inside the plot";
    for (size_t j = i + 1; j < ts.size(); ++j)
      EXPECT_GE(std::abs(ts[i].x - ts[j].x), 20 - 1e-6) << ts[i].number << " overlaps " << ts[j].number;
  }
  EXPECT_EQ(key(svg), (std::vector<std::string>{"switch-down tier=t1,plane=0,index=1", "link-down tier=host,plane=*,a=5",
                                                "loss tier=t0t1,plane=2,a=*,b=*,p=0.1",
                                                "rate tier=host,plane=1,a=3,gbps=10",
                                                "link-down tier=host,plane=0,a=1"}));
  // No failure: no lane, the plot starts right under the title.
  EXPECT_EQ(plot_top(svg_files({synthetic("mrc", 1000, true, {})})[0].text), 50);
}

TEST(OutputDetail, CapacityLineAndUnitsScaledToTheData) {
  const RunResult r = synthetic("mrc", 1000, true, {});  // goodput 101..200 Gb/s
  const std::string gb = svg_files({r}, SvgOptions{0, 0, 400})[0].text;
  EXPECT_NE(gb.find("goodput (Gb/s)"), std::string::npos);
  EXPECT_NE(gb.find(">capacity 400 Gb/s</text>"), std::string::npos);
  EXPECT_NE(gb.find(">400</text>"), std::string::npos) << "the axis reaches the capacity";
  // A 64-host, 8-plane, 800 Gb/s fabric: Tb/s.
  const std::string tb = svg_files({r}, SvgOptions{0, 0, 409600})[0].text;
  EXPECT_NE(tb.find("goodput (Tb/s)"), std::string::npos);
  EXPECT_NE(tb.find(">capacity 410 Tb/s</text>"), std::string::npos) << tb.substr(tb.find("capacity") - 40, 80);
  EXPECT_EQ(svg_files({r})[0].text.find("capacity"), std::string::npos);
}

TEST(OutputDetail, XRangeNarrowsTheTimeAxis) {
  const RunResult r = synthetic("mrc", 1000, true,
                                {{100, "switch-down:tier=t1,plane=0,index=1,at=100us"},
                                 {300, "link-down:tier=host,plane=0,a=1,at=300us"}});
  const std::string whole = svg_files({r})[0].text;
  const std::string part = svg_files({r}, SvgOptions{200, 400})[0].text;
  EXPECT_NE(whole.find(">100</text>"), std::string::npos);
  // Ticks from 200 to 400, the marker at 300 only, 21 samples (200..400 us).
  EXPECT_NE(part.find(">200</text>"), std::string::npos);
  EXPECT_NE(part.find(">400</text>"), std::string::npos);
  EXPECT_EQ(part.find(">1000</text>"), std::string::npos);
  EXPECT_EQ(tags(part).size(), 1u);
  EXPECT_EQ(key(part), std::vector<std::string>{"link-down tier=host,plane=0,a=1"});
  const size_t pts = part.find("points=\"");
  ASSERT_NE(pts, std::string::npos);
  const std::string points = part.substr(pts, part.find('"', pts + 8) - pts);
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 21);
}

TEST(OutputDetail, ARunThatDidNotCompleteIsMarked) {
  const RunResult done = synthetic("mrc", 1000, true, {});
  const RunResult cut = synthetic("roce", 1000, false, {});
  for (const SvgFile& f : svg_files({done, cut})) {
    EXPECT_NE(f.text.find(">roce (did not complete)</text>"), std::string::npos) << f.name;
    EXPECT_EQ(f.text.find(">mrc (did not complete)</text>"), std::string::npos) << f.name;
  }
  const std::string tp = svg_files({done, cut})[0].text;
  EXPECT_NE(tp.find("<g class=\"incomplete\" data-transport=\"roce\">"), std::string::npos);
  EXPECT_NE(tp.find(">roce: did not complete</text>"), std::string::npos);
  EXPECT_EQ(tp.find("data-transport=\"mrc\"><path"), std::string::npos);
}

}  // namespace
}  // namespace mrc::sim::tool
