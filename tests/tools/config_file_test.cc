// SPDX-License-Identifier: BSD-2-Clause
// TOML scenario files: loading every section, errors that name the line and
// the fix, flags overriding the file, resolution, and the example files.
#include "mrc-sim/config_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace mrc::sim::tool {
namespace {

Status load(const std::string& text, SimOptions* o, std::string* why) {
  return load_config_text(text, "t.toml", o, why);
}

std::string load_error(const std::string& text) {
  SimOptions o;
  std::string why;
  EXPECT_FALSE(load(text, &o, &why)) << text;
  return why;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::path(testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(ConfigFile, FullFileSetsEverySection) {
  const std::string text = R"(
[topology]
kind = "fattree3"
routing = "ecmp"
planes = 1
hosts = 32
t0_down = 4
t0_up = 4
t1 = 4
pods = 2
t2 = 8
rate_gbps = 400
fabric_rate_gbps = 800.5
link_delay_ns = 250
switch_latency_ns = 300

[topology.queue]
data_bytes = 1000000
ecn_kmin_bytes = 100000
ecn_kmax_bytes = 800000
ecn_last_hop = false
trimming = false
trimmed_weight_pct = 30
trimmed_bytes = 65536
control_bytes = 131072
pfc = true
pfc_xoff_bytes = 700000
pfc_xon_bytes = 500000

[workload]
kind = "incast"
bytes = 1048576
steps = 3
compute_us = 12.5
fan_in = 6
victim = true
cm = "m.cm"

[[failure]]
kind = "loss"
tier = "t0t1"
plane = 0
a = 1
b = 2
p = 0.25
at = "10us"
for = "1ms"

[[failure]]
spec = "deny:host=3,ev=7,at=5us"

[run]
transports = ["mrc-nscc", "roce-pfc"]
seed = 42
time_limit_ms = 5
sample_us = 2.5
qps_per_peer = 4
evs_per_plane = 16
default_failures = false

[output]
json = "out.json"
csv = "csv"
svg = "svg"
quiet = true
)";
  SimOptions o;
  std::string why;
  ASSERT_TRUE(load_config_text(text, "dir/t.toml", &o, &why)) << why;
  EXPECT_EQ(o.topology, "fattree3");
  EXPECT_EQ(o.routing, "ecmp");
  EXPECT_EQ(o.planes, 1u);
  EXPECT_EQ(o.hosts, 32u);
  EXPECT_EQ(o.t0_down, 4u);
  EXPECT_EQ(o.t0_up, 4u);
  EXPECT_EQ(o.t1, 4u);
  EXPECT_EQ(o.pods, 2u);
  EXPECT_EQ(o.t2, 8u);
  EXPECT_EQ(o.rate_gbps, 400);
  EXPECT_EQ(o.fabric_rate_gbps, 800.5);
  EXPECT_EQ(o.link_delay_ns, 250);
  EXPECT_EQ(o.switch_latency_ns, 300);
  EXPECT_EQ(o.queue.data_bytes, 1000000u);
  EXPECT_EQ(o.queue.ecn_kmin_bytes, 100000u);
  EXPECT_EQ(o.queue.ecn_kmax_bytes, 800000u);
  EXPECT_FALSE(o.queue.ecn_last_hop);  // on by default
  EXPECT_FALSE(o.queue.trimming);
  EXPECT_EQ(o.queue.trimmed_weight_pct, 30u);
  EXPECT_EQ(o.queue.trimmed_bytes, 65536u);
  EXPECT_EQ(o.queue.control_bytes, 131072u);
  EXPECT_TRUE(o.queue.pfc);
  EXPECT_EQ(o.queue.pfc_xoff_bytes, 700000u);
  EXPECT_EQ(o.queue.pfc_xon_bytes, 500000u);
  EXPECT_EQ(o.workload, "incast");
  EXPECT_EQ(o.bytes, 1048576u);
  EXPECT_EQ(o.steps, 3u);
  EXPECT_EQ(o.compute_us, 12.5);
  EXPECT_EQ(o.fan_in, 6u);
  EXPECT_TRUE(o.victim);
  EXPECT_EQ(o.cm_file, "dir/m.cm") << "relative to the scenario file";
  EXPECT_EQ(o.failures, (std::vector<std::string>{"loss:tier=t0t1,plane=0,a=1,b=2,p=0.25,at=10us,for=1ms",
                                                  "deny:host=3,ev=7,at=5us"}));
  EXPECT_EQ(o.transports, (std::vector<std::string>{"mrc-nscc", "roce-pfc"}));
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.time_limit_ms, 5);
  EXPECT_EQ(o.sample_us, 2.5);
  EXPECT_EQ(o.qps_per_peer, 4u);
  EXPECT_EQ(o.evs_per_plane, 16u);
  EXPECT_FALSE(o.default_failures);
  EXPECT_EQ(o.json_out, "out.json");
  EXPECT_EQ(o.csv_dir, "csv");
  EXPECT_EQ(o.svg_dir, "svg");
  EXPECT_TRUE(o.quiet);
}

TEST(ConfigFile, KeysTheFileLeavesOutKeepTheirValues) {
  SimOptions o;
  o.hosts = 16;
  std::string why;
  ASSERT_TRUE(load("[workload]\nsteps = 2\n", &o, &why)) << why;
  EXPECT_EQ(o.steps, 2u);
  EXPECT_EQ(o.hosts, 16u);
  EXPECT_EQ(o.transports, SimOptions{}.transports);
}

TEST(ConfigFile, UnknownKeyNamesTheLineAndTheLikelyKey) {
  EXPECT_EQ(load_error("# comment\n[topology]\nplanes = 2\nhost = 4\n"),
            "t.toml:4: [topology] unknown key 'host' (did you mean 'hosts'?)");
  EXPECT_EQ(load_error("[topology]\nseed = 4\n"), "t.toml:2: [topology] unknown key 'seed' (it belongs in [run])");
  EXPECT_EQ(load_error("[topology.queue]\npfc_xof_bytes = 4\n"),
            "t.toml:2: [topology.queue] unknown key 'pfc_xof_bytes' (did you mean 'pfc_xoff_bytes'?)");
  EXPECT_EQ(load_error("\n[workloads]\nkind = \"train\"\n"),
            "t.toml:2: unknown section [workloads] (did you mean 'workload'?)");
  EXPECT_EQ(load_error("hosts = 4\n"), "t.toml:1: 'hosts' must be inside a section (it belongs in [topology])");
  EXPECT_NE(load_error("[run]\nzzz = 1\n").find("(keys: transports, seed,"), std::string::npos);
}

TEST(ConfigFile, WrongTypeNamesTheLineTheTypeAndAnExample) {
  EXPECT_EQ(load_error("[topology]\nhosts = \"64\"\n"),
            "t.toml:2: [topology] 'hosts' must be an integer, not a string (e.g. hosts = 64)");
  EXPECT_EQ(load_error("[topology]\nhosts = 6.5\n"),
            "t.toml:2: [topology] 'hosts' must be an integer, not a floating-point number (e.g. hosts = 64)");
  EXPECT_EQ(load_error("[workload]\nvictim = 1\n"),
            "t.toml:2: [workload] 'victim' must be true or false, not an integer (e.g. victim = false)");
  EXPECT_EQ(load_error("[run]\ntransports = \"mrc\"\n"),
            "t.toml:2: [run] 'transports' must be an array of strings, not a string (e.g. transports = [\"mrc\", "
            "\"roce\"])");
  EXPECT_EQ(load_error("[topology]\nrate_gbps = \"fast\"\n"),
            "t.toml:2: [topology] 'rate_gbps' must be a number, not a string (e.g. rate_gbps = 100)");
  EXPECT_EQ(load_error("[topology]\nhosts = -1\n"),
            "t.toml:2: [topology] hosts = -1 is out of range (an integer from 2 to 1048576)");
  EXPECT_EQ(load_error("[topology]\nkind = \"clos\"\n"),
            "t.toml:2: [topology] kind = \"clos\" is not one of clos2, fattree2, fattree3 (did you mean 'clos2'?)");
  EXPECT_EQ(load_error("[run]\ntransports = [\"mrc\", \"rocee\"]\n"),
            std::string("t.toml:2: [run] transports: \"rocee\" is not one of ") + kTransportNames +
                " (did you mean 'roce'?)");
  EXPECT_EQ(load_error("[topology]\nqueue = 5\n"), "t.toml:2: [topology] 'queue' must be a table: [topology.queue]");
}

TEST(ConfigFile, SyntaxErrorsNameLineAndColumn) {
  const std::string why = load_error("[topology]\nhosts = = 4\n");
  EXPECT_EQ(why.rfind("t.toml:2:", 0), 0u) << why;
}

TEST(ConfigFile, FailuresAsKeysOrSpec) {
  EXPECT_EQ(load_error("[[failure]]\nkind = \"switch-down\"\ntier = \"t1\"\nindex = 1\nat = 3\n"),
            "t.toml:5: [[failure]] 1: 'at' is a time: write it as a string with a unit, e.g. at = \"3ms\" (ps, ns, "
            "us, ms, s)");
  EXPECT_EQ(load_error("[[failure]]\nkind = \"switch-down\"\ntier = \"t1\"\nindx = 1\nat = \"3ms\"\n"),
            "t.toml:4: [[failure]] 1: unknown key 'indx' (did you mean 'index'?)");
  EXPECT_EQ(load_error("[[failure]]\nspec = \"switch-down:tier=t1,index=1,at=1ms\"\n[[failure]]\nkind = "
                       "\"switch-down\"\ntier = \"t1\"\nat = \"3ms\"\n"),
            "t.toml:3: [[failure]] 2: failure 'switch-down:tier=t1,at=3ms': switch-down needs index=I (and plane=P)");
  EXPECT_NE(load_error("[[failure]]\ntier = \"t1\"\n").find("[[failure]] 1: needs kind = "), std::string::npos);
  EXPECT_NE(load_error("[[failure]]\nspec = \"deny:host=1,ev=2,at=1us\"\nat = \"1us\"\n").find("not both"),
            std::string::npos);
  EXPECT_NE(load_error("failure = 3\n").find("write each failure as [[failure]]"), std::string::npos);
}

TEST(ConfigFile, FlagsGivenExplicitlyOverrideTheFile) {
  const std::string path = temp_file("override.toml", R"(
[topology]
hosts = 32
t0_down = 4
[workload]
steps = 3
[run]
transports = ["mrc-nscc"]
[[failure]]
spec = "switch-down:tier=t1,plane=0,index=0,at=1ms"
)");
  SimOptions o;
  const char* argv[] = {"mrc-sim", "--hosts", "16", "--config", path.c_str(), "--transports", "mrc,roce", "--quiet"};
  ASSERT_EQ(parse_command_line(static_cast<int>(std::size(argv)), argv, &o), -1);
  EXPECT_EQ(o.hosts, 16u) << "flag wins";
  EXPECT_EQ(o.t0_down, 4u) << "from the file";
  EXPECT_EQ(o.steps, 3u) << "from the file";
  EXPECT_EQ(o.transports, (std::vector<std::string>{"mrc", "roce"})) << "flag wins";
  EXPECT_EQ(o.failures, (std::vector<std::string>{"switch-down:tier=t1,plane=0,index=0,at=1ms"}));
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(o.config_file, path);

  SimOptions p;
  const char* argv2[] = {"mrc-sim", "--config", path.c_str(), "--fail", "deny:host=1,ev=2,at=1us"};
  ASSERT_EQ(parse_command_line(static_cast<int>(std::size(argv2)), argv2, &p), -1);
  EXPECT_EQ(p.failures, (std::vector<std::string>{"deny:host=1,ev=2,at=1us"})) << "--fail replaces the file's failures";
}

TEST(ConfigFile, ABadFileStopsTheCommandLine) {
  const std::string path = temp_file("bad.toml", "[topology]\nhost = 3\n");
  SimOptions o;
  const char* argv[] = {"mrc-sim", "--config", path.c_str()};
  EXPECT_EQ(parse_command_line(3, argv, &o), 2);
}

TEST(ConfigFile, InvalidTopologyIsRejectedByValidate) {
  SimOptions o;
  std::string why;
  ASSERT_TRUE(load("[topology]\nhosts = 60\nt0_down = 8\n", &o, &why)) << why;
  auto r = resolve(o, &why);
  ASSERT_FALSE(r);
  EXPECT_EQ(why.rfind("invalid topology: hosts: 60 is not a multiple of t0_down (8)", 0), 0u) << why;
}

TEST(ConfigFile, ReconvergenceOnlyForTheEcmpBaseline) {
  SimOptions o;
  std::string why;
  ASSERT_TRUE(load("[topology]\nrouting = \"ecmp\"\nreconverge_ms = 2.5\n", &o, &why)) << why;
  auto r = resolve(o, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->scenario.topology.reconverge_after, Duration::us(2500));
  SimOptions srv6;
  ASSERT_TRUE(load("[topology]\nreconverge_ms = 1\n", &srv6, &why)) << why;
  EXPECT_FALSE(resolve(srv6, &why));
  EXPECT_NE(why.find("only the ECMP baseline reconverges"), std::string::npos) << why;
}

TEST(ConfigFile, FailureOnAMissingSwitchIsRejectedByResolve) {
  SimOptions o;
  std::string why;
  ASSERT_TRUE(load("[[failure]]\nspec = \"switch-down:tier=t1,plane=0,index=99,at=1ms\"\n", &o, &why)) << why;
  EXPECT_FALSE(resolve(o, &why));
  EXPECT_NE(why.find("index=99"), std::string::npos) << why;
}

TEST(ConfigFile, DefaultTomlIsTheDefaultScenario) {
  SimOptions file;
  std::string why;
  ASSERT_TRUE(load_config_file(MRC_SOURCE_DIR "/examples/scenarios/default.toml", &file, &why)) << why;
  const SimOptions none;
  auto a = resolve(file, &why);
  ASSERT_TRUE(a) << why;
  auto b = resolve(none, &why);
  ASSERT_TRUE(b) << why;
  EXPECT_EQ(describe(file, *a), describe(none, *b));
  const Scenario& x = a->scenario;
  const Scenario& y = b->scenario;
  EXPECT_EQ(x.topology.kind, y.topology.kind);
  EXPECT_EQ(x.topology.routing, y.topology.routing);
  EXPECT_EQ(x.topology.planes, y.topology.planes);
  EXPECT_EQ(x.topology.hosts, y.topology.hosts);
  EXPECT_EQ(x.topology.t0_down, y.topology.t0_down);
  EXPECT_EQ(x.topology.t0_up, y.topology.t0_up);
  EXPECT_EQ(x.topology.t1_count, y.topology.t1_count);
  EXPECT_EQ(x.topology.host_link_bps, y.topology.host_link_bps);
  EXPECT_EQ(x.topology.fabric_link_bps, y.topology.fabric_link_bps);
  EXPECT_EQ(x.topology.link_delay, y.topology.link_delay);
  EXPECT_EQ(x.topology.switch_latency, y.topology.switch_latency);
  EXPECT_EQ(x.workload, y.workload);
  EXPECT_EQ(x.bytes, y.bytes);
  EXPECT_EQ(x.steps, y.steps);
  EXPECT_EQ(x.compute, y.compute);
  ASSERT_EQ(x.failures.size(), y.failures.size());
  for (size_t i = 0; i < x.failures.size(); ++i) EXPECT_EQ(x.failures[i].text, y.failures[i].text);
  EXPECT_EQ(x.seed, y.seed);
  EXPECT_EQ(x.time_limit, y.time_limit);
  EXPECT_EQ(x.sample_every, y.sample_every);
  ASSERT_EQ(a->transports.size(), b->transports.size());
  for (size_t i = 0; i < a->transports.size(); ++i) {
    EXPECT_EQ(a->transports[i].name, b->transports[i].name);
    EXPECT_EQ(a->transports[i].qps_per_peer, b->transports[i].qps_per_peer);
    EXPECT_EQ(a->transports[i].evs_per_plane, b->transports[i].evs_per_plane);
  }
}

TEST(ConfigFile, Perm128TomlIsThe128HostPermutation) {
  SimOptions o;
  std::string why;
  ASSERT_TRUE(load_config_file(MRC_SOURCE_DIR "/examples/scenarios/perm128.toml", &o, &why)) << why;
  auto r = resolve(o, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->scenario.topology.kind, TopologyKind::fattree2);
  EXPECT_EQ(r->scenario.topology.hosts, 128u);
  EXPECT_EQ(r->scenario.topology.host_link_bps, 400'000'000'000ull);
  EXPECT_EQ(r->scenario.workload, WorkloadKind::permutation);
  EXPECT_EQ(r->scenario.bytes, 16u << 20);
  EXPECT_TRUE(r->scenario.failures.empty());
}

TEST(ConfigFile, MissingFileIsNotFound) {
  SimOptions o;
  std::string why;
  EXPECT_EQ(load_config_file("/nonexistent/x.toml", &o, &why).error(), Errc::not_found);
  EXPECT_EQ(why, "/nonexistent/x.toml: cannot open the scenario file");
}

// Controller profiles in mrcctl's shape ([[format]], [[ev_profile]],
// [[cc_profile]]) and [controller] saying which the MRC QPs use.
constexpr const char* kProfiles = R"(
[[format]]
id = 1
mode = "srv6"
fields = [32, 16]

[[ev_profile]]
id = 2
mode = "exp"
format = 1
count = 4
min_active = 2
events = ["good"]
fields = [{ width = 32, init = 0xcafe0000 }, { width = 16, mask = 0xffff, max = 0xffff }]
evs = [{ port = 1, value = 0 }, { port = 1, value = 1 }, { port = 2, value = 256 }, { port = 2, value = 257 }]

[[ev_profile]]
id = 3
mode = "auto"
count = 16
min_active = 4
events = ["good", "assumed_bad"]

[[cc_profile]]
id = 1
algorithm = "uet-1.0-nscc"
max_cwnd_bytes = 65536

[controller]
ev_profile = 2
cc_profile = 1
hosts = [0, 5]
)";

TEST(ConfigFile, ControllerProfilesInMrcctlsShape) {
  SimOptions o;
  o.planes = 4;
  o.hosts = 8;
  o.t0_down = o.t0_up = o.t1 = 4;
  std::string why;
  ASSERT_TRUE(load(kProfiles, &o, &why)) << why;
  const ControllerPlan& p = o.controller;
  ASSERT_EQ(p.formats.size(), 1u);
  EXPECT_EQ(p.formats[0].mode, core::ctl::fmt_mode::kSrv6);
  EXPECT_EQ(p.formats[0].widths, (std::vector<uint32_t>{32, 16}));
  ASSERT_EQ(p.ev_profiles.size(), 2u);
  EXPECT_EQ(p.ev_profiles[0].mode, core::ctl::ev_mode::kExp);
  EXPECT_EQ(p.ev_profiles[0].min_active, 2u);
  EXPECT_EQ(p.ev_profiles[0].event_mask, core::ctl::ev_state::kGood);
  EXPECT_EQ(p.ev_profiles[0].fields[0].init_val, 0xcafe0000u);
  EXPECT_EQ(p.ev_profiles[0].evs[2], (std::pair<uint8_t, uint64_t>{2, 256}));
  EXPECT_EQ(p.ev_profiles[1].mode, core::ctl::ev_mode::kAuto);
  EXPECT_EQ(p.ev_profiles[1].count, 16u);
  ASSERT_EQ(p.cc_profiles.size(), 1u);
  EXPECT_EQ(p.cc_profiles[0].config.max_cwnd, 65536u);
  EXPECT_EQ(p.ev_profile, 2u);
  EXPECT_EQ(p.cc_profile, 1u);
  EXPECT_EQ(p.hosts, (std::vector<uint32_t>{0, 5}));
  auto r = resolve(o, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->scenario.controller.ev_profile, 2u);
  EXPECT_NE(describe(o, *r).find("  controller  mrc QPs of hosts 0, 5: EV profile 2 (exp, 4 EVs, min_active 2, events "
                                 "good), CC profile 1 (uet-1.0-nscc)\n"),
            std::string::npos)
      << describe(o, *r);
}

TEST(ConfigFile, ControllerTomlResolves) {
  SimOptions o;
  std::string why;
  ASSERT_TRUE(load_config_file(std::string(MRC_SOURCE_DIR) + "/examples/scenarios/controller.toml", &o, &why)) << why;
  auto r = resolve(o, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->scenario.controller.ev_profile, 1u);
  EXPECT_EQ(r->scenario.controller.cc_profile, 1u);
  ASSERT_EQ(r->scenario.failures.size(), 2u);
  EXPECT_EQ(r->scenario.failures[0].kind, FailureSpec::Kind::port_disable);
  EXPECT_EQ(r->scenario.failures[1].kind, FailureSpec::Kind::deny);
}

TEST(ConfigFile, BadControllerProfilesNameTheLineAndField) {
  // mrcctl's reader: line and field.
  EXPECT_EQ(load_error("[[ev_profile]]\nid = 1\nmode = \"gen\"\nformat = 1\ncount = 4\nevents = [\"bad\"]\n"
                       "fields = [{ width = 8, mask = 0xff, max = 0xff }]\n"),
            "t.toml:6: ev_profile[0].events[0]: must be \"good\" or \"assumed_bad\"");
  EXPECT_EQ(load_error("[[ev_profile]]\nid = 1\nmode = \"auto\"\ncout = 4\n"),
            "t.toml:4: ev_profile[0].cout: unknown key");
  EXPECT_EQ(load_error("[[cc_profile]]\nid = 1\nalgorithm = \"dcqcn\"\n"),
            "t.toml:3: cc_profile[0].algorithm: must be \"uet-1.0-nscc\" or \"none\"");
  // [controller]: its keys.
  EXPECT_EQ(load_error("[controller]\nev_profil = 1\n"),
            "t.toml:2: [controller] unknown key 'ev_profil' (did you mean 'ev_profile'?)");
  EXPECT_EQ(load_error("[controller]\nev_profile = \"1\"\n"),
            "t.toml:2: [controller] 'ev_profile' must be a profile id 1..16 (0 = none), not a string (e.g. ev_profile "
            "= 1)");
  EXPECT_EQ(load_error("[controller]\nhosts = [1, -2]\n"),
            "t.toml:2: [controller] hosts: each must be a host number >= 0 (e.g. hosts = [0, 5])");
  // What only the core controller knows, at resolution: its errno and the profile's step.
  SimOptions o;
  o.planes = 4;
  o.hosts = 8;
  o.t0_down = o.t0_up = o.t1 = 4;
  std::string why;
  ASSERT_TRUE(load("[[ev_profile]]\nid = 1\nmode = \"auto\"\ncount = 5000\n[controller]\nev_profile = 1\n", &o,
                   &why))
      << why;
  EXPECT_FALSE(resolve(o, &why));
  EXPECT_EQ(why, "controller profiles: ev_profile 1: going offline (mode, count): refused (E2BIG: too_big)");
  SimOptions p;
  p.planes = 4;
  p.hosts = 8;
  p.t0_down = p.t0_up = p.t1 = 4;
  ASSERT_TRUE(load("[[ev_profile]]\nid = 1\nmode = \"auto\"\n[controller]\nev_profile = 2\n", &p, &why)) << why;
  EXPECT_FALSE(resolve(p, &why));
  EXPECT_EQ(why.rfind("controller profiles: controller.ev_profile: 2 is not an online EV profile", 0), 0u) << why;
}

}  // namespace
}  // namespace mrc::sim::tool
