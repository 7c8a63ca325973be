// SPDX-License-Identifier: BSD-2-Clause
// mrc-sim's writers on tiny real runs: CSV headers and row counts, JSON
// fields, SVG structure, per-flow counters, progress lines.
#include "mrc-sim/output.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "mrc-sim/progress.hpp"

namespace mrc::sim::tool {
namespace {

TopologyConfig small_clos() {
  TopologyConfig t;
  t.kind = TopologyKind::clos2_multiplane;
  t.planes = 2;
  t.hosts = 8;
  t.t0_down = 4;
  t.t0_up = 4;
  t.t1_count = 4;
  t.host_link_bps = 100'000'000'000ull;
  return t;
}

FailureSpec failure(const char* text) {
  std::string why;
  auto f = parse_failure(text, &why);
  EXPECT_TRUE(f) << why;
  return *f;
}

std::vector<RunResult> run_all(const Scenario& sc, std::initializer_list<const char*> transports) {
  std::vector<RunResult> rs;
  for (const char* t : transports) rs.push_back(run_scenario(sc, transport_by_name(t, 8, t[0] == 'r' ? 2 : 1).value()));
  return rs;
}

// Training: two steps with a T1 reboot in the middle, MRC and RoCE.
const std::vector<RunResult>& training_runs() {
  static const std::vector<RunResult> runs = [] {
    Scenario sc;
    sc.topology = small_clos();
    sc.workload = WorkloadKind::train;
    sc.bytes = 1 << 20;
    sc.steps = 2;
    sc.compute = Duration::us(20);
    sc.sample_every = Duration::us(10);
    sc.failures = {failure("switch-down:tier=t1,plane=0,index=1,at=30us,for=40us")};
    // A 40 us reboot is shorter than three confirming probes: with the
    // reference's single probe the EVs through it are retired and reported.
    sc.protocol.loss_confirm_probes = 1;
    sc.time_limit = Duration::us(1500);  // keeps the time axis in microseconds
    return run_all(sc, {"mrc", "roce"});
  }();
  return runs;
}

// A permutation with random loss on host 0's plane-0 link, so flows retransmit.
const std::vector<RunResult>& flow_runs() {
  static const std::vector<RunResult> runs = [] {
    Scenario sc;
    sc.topology = small_clos();
    sc.workload = WorkloadKind::permutation;
    sc.bytes = 512 << 10;
    sc.sample_every = Duration::us(10);
    sc.failures = {failure("loss:tier=host,plane=0,a=0,p=0.05,at=0us")};
    sc.time_limit = Duration::ms(2);
    return run_all(sc, {"mrc", "roce"});
  }();
  return runs;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Fields of a CSV row, honouring quotes.
size_t field_count(const std::string& row) {
  size_t n = 1;
  bool quoted = false;
  for (char c : row) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) ++n;
  }
  return n;
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

const CsvFile& file(const std::vector<CsvFile>& fs, const std::string& name) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const CsvFile& f) { return f.name == name; });
  EXPECT_NE(it, fs.end()) << name;
  return *it;
}

TEST(Csv, FieldsAreQuotedOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
}

TEST(Csv, TrainingRunHasEveryFileWithHeaderAndOneRowPerRecord) {
  const auto& rs = training_runs();
  ASSERT_EQ(rs.size(), 2u);
  const auto fs = csv_files(rs);
  std::set<std::string> names;
  for (const auto& f : fs) names.insert(f.name);
  EXPECT_EQ(names, (std::set<std::string>{"runs.csv", "flows.csv", "steps.csv", "series.csv", "ev_events.csv",
                                          "counters.csv", "failures.csv"}));
  EXPECT_EQ(lines(file(fs, "flows.csv").text)[0],
            "transport,flow,src,dst,bytes,start_us,finish_us,fct_us,ideal_fct_us,slowdown,status,retransmits,trims");
  EXPECT_EQ(lines(file(fs, "steps.csv").text)[0], "transport,step,step_us,allreduce_us");
  EXPECT_EQ(lines(file(fs, "series.csv").text)[0], "transport,t_us,goodput_gbps,queued_bytes");
  EXPECT_EQ(lines(file(fs, "ev_events.csv").text)[0], "transport,t_us,host,qpn,ev,plane,from,to,drops");
  EXPECT_EQ(lines(file(fs, "counters.csv").text)[0], "transport,counter,value");
  EXPECT_EQ(lines(file(fs, "failures.csv").text)[0], "transport,t_us,action");

  size_t steps = 0, series = 0, evs = 0, fails = 0;
  for (const auto& r : rs) {
    steps += r.steps.size();
    series += r.series.size();
    evs += r.ev_events.size();
    fails += r.failure_log.size();
  }
  EXPECT_EQ(lines(file(fs, "runs.csv").text).size(), 1 + rs.size());
  EXPECT_EQ(lines(file(fs, "flows.csv").text).size(), 1u) << "a training run has no flows";
  EXPECT_EQ(lines(file(fs, "steps.csv").text).size(), 1 + steps);
  EXPECT_EQ(lines(file(fs, "series.csv").text).size(), 1 + series);
  EXPECT_EQ(lines(file(fs, "ev_events.csv").text).size(), 1 + evs);
  EXPECT_EQ(lines(file(fs, "counters.csv").text).size(), 1 + rs.size() * run_counters(rs[0]).size());
  EXPECT_EQ(lines(file(fs, "failures.csv").text).size(), 1 + fails);
  EXPECT_EQ(fails, 4u) << "switch down and up, in each run";
  EXPECT_GT(evs, 0u) << "MRC retires EVs through the dead T1";
  for (const auto& f : fs) {
    const auto ls = lines(f.text);
    for (const auto& l : ls) EXPECT_EQ(field_count(l), field_count(ls[0])) << f.name << ": " << l;
  }
  // The failure action holds commas, so it is quoted.
  EXPECT_NE(file(fs, "failures.csv").text.find(",\"switch-down:tier=t1,plane=0,index=1,at=30us,for=40us\""),
            std::string::npos);
}

TEST(Csv, FlowRowsCarryPerFlowCounters) {
  const auto& rs = flow_runs();
  const auto fs = csv_files(rs);
  const auto ls = lines(file(fs, "flows.csv").text);
  EXPECT_EQ(ls.size(), 1 + rs[0].flows.size() + rs[1].flows.size());
  EXPECT_EQ(ls[1].rfind("mrc,0,0,", 0), 0u) << ls[1];
}

TEST(FlowCounters, OnePairPerFlowAddsUpToTheRunTotals) {
  // In a permutation every flow has its own host pair and all start at 0, so
  // the per-flow retransmissions partition the run's (finished or not).
  for (const RunResult& r : flow_runs()) {
    uint64_t rtx = 0;
    for (const auto& f : r.flows) rtx += f.retransmits;
    EXPECT_EQ(rtx, r.retransmissions) << r.transport;
  }
  for (const RunResult& r : flow_runs()) {
    ASSERT_TRUE(r.completed) << r.transport;
    EXPECT_GT(r.flows[0].retransmits, 0u) << r.transport << ": host 0 sends over the lossy link";
  }
}

TEST(Json, HasSchemaRunsAndPerFlowCounters) {
  const auto& rs = flow_runs();
  const auto j = nlohmann::json::parse(results_json(rs, 7));
  EXPECT_EQ(j["schema"], "mrc-sim/1");
  EXPECT_EQ(j["seed"], 7);
  ASSERT_EQ(j["runs"].size(), 2u);
  const auto& f0 = j["runs"][0]["flows"][0];
  EXPECT_EQ(f0["retransmits"], rs[0].flows[0].retransmits);
  EXPECT_EQ(f0["trims"], rs[0].flows[0].trims);
  EXPECT_EQ(f0["status"], flow_status(rs[0].flows[0]));
  EXPECT_EQ(j["runs"][1]["flows"][1]["status"], "success");
  EXPECT_EQ(j["runs"][1]["transport"], "roce");
  EXPECT_EQ(j["runs"][0]["counters"].size(), run_counters(rs[0]).size());
}

// A 7 -> 1 incast whose QPs start at line rate (no QP hint): the target's
// last hop trims, and so may the fabric's ports.
const std::vector<RunResult>& incast_runs() {
  static const std::vector<RunResult> runs = [] {
    Scenario sc;
    sc.topology = small_clos();
    sc.workload = WorkloadKind::incast;
    sc.fan_in = 7;
    sc.bytes = 512 << 10;
    sc.time_limit = Duration::ms(2);
    TransportSpec t = transport_by_name("mrc", 8, 1).value();
    t.qp_hints = false;
    return std::vector<RunResult>{run_scenario(sc, t)};
  }();
  return runs;
}

// The summary table's value of a counter row, as printed (first column).
std::string table_cell(const std::string& table, const std::string& row) {
  for (const std::string& l : lines(table)) {
    if (l.rfind(row, 0) != 0) continue;
    const size_t at = l.find_first_not_of(' ', row.size());
    if (at == std::string::npos || at < 18) continue;  // a longer row name that starts alike
    return l.substr(at, l.find(' ', at) - at);
  }
  ADD_FAILURE() << "no table row " << row;
  return {};
}

TEST(Json, CountersAgreeWithTheSummaryTable) {
  for (const auto* rs : {&incast_runs(), &flow_runs(), &training_runs()}) {
    const std::string table = summary_table({rs->front()});
    const auto c = nlohmann::json::parse(results_json({rs->front()}, 1))["runs"][0]["counters"];
    SCOPED_TRACE(table);
    const uint64_t drops = c["drops_queue"].get<uint64_t>() + c["drops_link_down"].get<uint64_t>() +
                           c["drops_random"].get<uint64_t>() + c["drops_no_route"].get<uint64_t>();
    EXPECT_EQ(table_cell(table, "drops"), std::to_string(drops));
    EXPECT_EQ(drops, c["drops_data"].get<uint64_t>() + c["drops_trimmed_header"].get<uint64_t>() +
                         c["drops_control"].get<uint64_t>());
    for (const auto& [row, key] : std::vector<std::pair<std::string, std::string>>{
             {"  on dead links", "drops_link_down"},
             {"trims", "trims"},
             {"ECN marks", "ecn_marks"},
             {"retransmissions", "retransmissions"},
             {"  spurious", "spurious_retransmissions"},
             {"ACK timeouts", "ack_timeouts"},
             {"EVs retired", "evs_retired"},
             {"EVs resurrected", "evs_resurrected"},
             {"ECN path swaps", "ev_congestion_swaps"},
             {"EVs suspected", "ev_suspected"},
             {"  cleared", "ev_cleared"},
             {"QP failures", "qp_failures"}})
      EXPECT_EQ(table_cell(table, row), std::to_string(c[key].get<uint64_t>())) << row;
    EXPECT_LE(c["trims_last_hop"].get<uint64_t>(), c["trims"].get<uint64_t>());
  }
  // The incast trims at its target's last hop: those are in `trims` too.
  const RunResult& r = incast_runs().front();
  EXPECT_GT(r.fabric.trims_last_hop, 0u);
  const auto c = nlohmann::json::parse(results_json(incast_runs(), 1))["runs"][0]["counters"];
  EXPECT_EQ(c["trims"], r.fabric.trims);
  EXPECT_EQ(c["trims_last_hop"], r.fabric.trims_last_hop);
  EXPECT_GE(c["trims"].get<uint64_t>(), r.fabric.trims_last_hop);
}

TEST(Json, UnfinishedFlowsSayUnfinished) {
  FlowRecord f;
  EXPECT_EQ(flow_status(f), "unfinished");
  f.done = true;
  EXPECT_EQ(flow_status(f), "success");
}

void expect_well_formed(const SvgFile& f) {
  SCOPED_TRACE(f.name);
  EXPECT_EQ(f.text.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(f.text.substr(f.text.size() - 7), "</svg>\n");
  EXPECT_EQ(count(f.text, "<svg"), 1u);
  EXPECT_EQ(count(f.text, "<g"), count(f.text, "</g>"));
  EXPECT_EQ(count(f.text, "<"), count(f.text, ">")) << "no stray angle brackets in text";
  EXPECT_EQ(count(f.text, "nan"), 0u);
  EXPECT_EQ(count(f.text, "inf"), 0u);
}

TEST(Svg, TrainingPlotsThroughputWithFailureMarkersAndSteps) {
  const auto& rs = training_runs();
  const auto fs = svg_files(rs);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].name, "throughput.svg");
  EXPECT_EQ(fs[1].name, "steps.svg");
  for (const auto& f : fs) expect_well_formed(f);
  const std::string& tp = fs[0].text;
  EXPECT_EQ(count(tp, "<polyline class=\"series\""), rs.size()) << "one line per transport";
  EXPECT_NE(tp.find("data-transport=\"mrc\""), std::string::npos);
  EXPECT_NE(tp.find("data-transport=\"roce\""), std::string::npos);
  EXPECT_EQ(count(tp, "<g class=\"failure\">"), 2u) << "switch down, switch up (same in both runs)";
  EXPECT_NE(tp.find("data-label=\"switch-down tier=t1,plane=0,index=1\""), std::string::npos);
  EXPECT_NE(tp.find(">1  switch-down</text>"), std::string::npos);
  EXPECT_NE(tp.find("data-label=\"end of switch-down tier=t1,plane=0,index=1\""), std::string::npos);
  EXPECT_NE(tp.find(">2  end of switch-down</text>"), std::string::npos);
  EXPECT_NE(tp.find("goodput (Gb/s)"), std::string::npos);
  // Each completed step's compute phase is shaded, in its run's colour.
  size_t steps = 0;
  for (const auto& r : rs) steps += r.steps.size();
  EXPECT_GT(steps, 0u);
  EXPECT_EQ(count(tp, "<rect class=\"compute\""), steps);
  EXPECT_NE(tp.find(">compute phase</text>"), std::string::npos);
  EXPECT_NE(tp.find("simulated time (\u00b5s)"), std::string::npos);
  const std::string& st = fs[1].text;
  EXPECT_EQ(count(st, "<polyline class=\"series\""), rs.size());
  EXPECT_EQ(count(st, "<polyline class=\"series-allreduce\""), rs.size());
  EXPECT_NE(st.find("all-reduce ideal"), std::string::npos);
}

TEST(Svg, FlowWorkloadPlotsTheFctCdf) {
  const auto& rs = flow_runs();
  const auto fs = svg_files(rs);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[1].name, "fct_cdf.svg");
  for (const auto& f : fs) expect_well_formed(f);
  EXPECT_EQ(count(fs[1].text, "<polyline class=\"series\""), rs.size());
  // Every flow completed: each CDF climbs to 1 (the top of the y axis).
  EXPECT_EQ(count(fs[1].text, "<g class=\"failure\">"), 0u);
}

TEST(Svg, SameRunsGiveTheSameBytes) {
  EXPECT_EQ(svg_files(training_runs())[0].text, svg_files(training_runs())[0].text);
}

TEST(Output, WritesFilesIntoANewDirectory) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "mrc_sim_output_test" / "nested";
  std::filesystem::remove_all(dir.parent_path());
  std::string why;
  for (const auto& f : csv_files(training_runs())) ASSERT_TRUE(write_file(dir.string(), f.name, f.text, &why)) << why;
  std::ifstream in(dir / "steps.csv");
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "transport,step,step_us,allreduce_us");
  EXPECT_FALSE(write_file("/proc/none", "x.csv", "", &why));
  EXPECT_NE(why.find("/proc/none"), std::string::npos) << why;
}

TEST(Progress, FractionFollowsStepsFlowsOrTime) {
  Progress p;
  p.time_limit = Duration::ms(10);
  p.now = Time::zero() + Duration::ms(1);
  p.steps_total = 8;
  p.steps_done = 4;
  EXPECT_DOUBLE_EQ(progress_fraction(p), 0.5);
  p.now = Time::zero() + Duration::ms(9);
  EXPECT_DOUBLE_EQ(progress_fraction(p), 0.9) << "the time limit is closer than the last step";
  Progress q;
  q.time_limit = Duration::ms(10);
  q.flows_total = 4;
  q.flows_done = 1;
  EXPECT_DOUBLE_EQ(progress_fraction(q), 0.25);
}

TEST(Progress, LineShowsBarPercentWorkAndRate) {
  Progress p;
  p.time_limit = Duration::ms(100);
  p.now = Time::zero() + Duration::us(500);
  p.steps_total = 4;
  p.steps_done = 2;
  p.events = 3'000'000;
  const std::string l = progress_line("mrc", p, 2.0, 10);
  EXPECT_NE(l.find("[=====>    ]"), std::string::npos) << l;
  EXPECT_NE(l.find(" 50%"), std::string::npos) << l;
  EXPECT_NE(l.find("step 2/4"), std::string::npos) << l;
  EXPECT_NE(l.find("500 us simulated"), std::string::npos) << l;
  EXPECT_NE(l.find("1.50 M events/s"), std::string::npos) << l;
  EXPECT_NE(l.find("ETA 2.0 s"), std::string::npos) << l;
}

}  // namespace
}  // namespace mrc::sim::tool
