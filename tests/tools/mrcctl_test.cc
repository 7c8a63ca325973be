// SPDX-License-Identifier: BSD-2-Clause
// mrcctl: its TOML reader (messages naming file, line and field; compact EV
// encoding) and the binary over real software devices on loopback
// 127.0.6.x: apply / deny / port / show with --json, a bad file's exact
// message and exit status, and probes between two mrcctl processes; watch
// on 127.0.61.x.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <openmrc/version.h>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mrcctl/ctl_file.hpp"

extern char** environ;

namespace {

using mrcctl::CtlFile;

std::string parse_error(const std::string& text) {
  CtlFile f;
  std::string why;
  EXPECT_FALSE(mrcctl::parse_ctl_file(text, "c.toml", f, why));
  return why;
}

constexpr const char* kGood = R"([[format]]
id = 1
mode = "udp"
fields = [16]

[[ev_profile]]
id = 2
mode = "exp"
format = 1
count = 2
events = ["assumed_bad"]
fields = [{ width = 16, mask = 0xffff, max = 0xffff }]
evs = [{ port = 1, value = 49152 }, { port = 2, value = 49169 }]

[[cc_profile]]
id = 3
algorithm = "uet-1.0-nscc"
base_rtt_ns = 20000
)";

TEST(MrcctlFile, AGoodFileIsReadCompletely) {
  CtlFile f;
  std::string why;
  ASSERT_TRUE(mrcctl::parse_ctl_file(kGood, "c.toml", f, why)) << why;
  ASSERT_EQ(f.formats.size(), 1u);
  EXPECT_EQ(f.formats[0].widths, std::vector<uint32_t>{16});
  ASSERT_EQ(f.ev_profiles.size(), 1u);
  EXPECT_EQ(f.ev_profiles[0].count, 2u);
  EXPECT_EQ(f.ev_profiles[0].min_active, 1u) << "the default";
  ASSERT_EQ(f.ev_profiles[0].evs.size(), 2u);
  EXPECT_EQ(f.ev_profiles[0].evs[1].port, 2);
  EXPECT_EQ(f.ev_profiles[0].evs[1].value, 49169u);
  ASSERT_EQ(f.cc_profiles.size(), 1u);
  EXPECT_EQ(f.cc_profiles[0].base_rtt_ns, 20000u);
}

TEST(MrcctlFile, ErrorsNameTheLineAndTheField) {
  EXPECT_EQ(parse_error("[[format]]\nid = 1\nmode = \"ecmp\"\nfields = [16]\n"),
            "c.toml:3: format[0].mode: must be \"udp\", \"stev\" or \"srv6\"");
  EXPECT_EQ(parse_error("[[format]]\nid = 1\nmode = \"udp\"\nfields = [16, 0]\n"),
            "c.toml:4: format[0].fields[1]: must be a width 1..64");
  EXPECT_EQ(parse_error("[[format]]\nid = 17\nmode = \"udp\"\nfields = [16]\n"),
            "c.toml:2: format[0].id: must be an integer 0..16");
  EXPECT_EQ(parse_error("[[format]]\nid = 0\nmode = \"udp\"\nfields = [16]\n"),
            "c.toml:2: format[0].id: must be 1..16 (0 is the device default)");
  EXPECT_EQ(parse_error("[[cc_profile]]\nid = 1\nalgoritm = \"none\"\n"), "c.toml:3: cc_profile[0].algoritm: unknown key");
  EXPECT_EQ(parse_error("[[ev_profile]]\nid = 1\nmode = \"exp\"\nformat = 1\ncount = 3\n"
                        "fields = [{ width = 8, mask = 0xff, max = 0x1ff }]\n"),
            "c.toml:6: ev_profile[0].fields[0].max: must be an integer 0..255");
  EXPECT_EQ(parse_error("[[ev_profile]]\nid = 1\nmode = \"exp\"\nformat = 1\ncount = 3\n"
                        "fields = [{ width = 8, mask = 0xff, max = 0xff }]\nevs = [{ port = 1, value = 2 }]\n"),
            "c.toml:7: ev_profile[0].evs: lists 1 EVs; count is 3");
  EXPECT_EQ(parse_error("[[cc_profile]]\nid = 1\nalgorithm = \"none\"\n[[cc_profile]]\nid = 1\nalgorithm = \"none\"\n"),
            "c.toml:5: cc_profile[1].id: defined twice");
  EXPECT_EQ(parse_error("[[format]]\nid = 1\nmode = \"udp\"\nfields = [16\n"),
            "c.toml:4: Error while parsing array: encountered end-of-file");
}

TEST(MrcctlFile, CompactEvsAreBitStringsFromTheTopOfByteZero) {
  uint8_t v[32];
  mrcctl::encode_compact(0x3312, 16, v);  // reference 4.2's sample EV bytes
  EXPECT_EQ(v[0], 0x33);
  EXPECT_EQ(v[1], 0x12);
  EXPECT_EQ(v[2], 0);
  mrcctl::encode_compact(0x5, 3, v);  // 101 -> 1010 0000
  EXPECT_EQ(v[0], 0xA0);
  EXPECT_EQ(mrcctl::decode_compact(v, 3), 0x5u);
  mrcctl::encode_compact(0x123456789ull, 36, v);
  EXPECT_EQ(mrcctl::decode_compact(v, 36), 0x123456789ull);
}

// ---------------------------------------------------------------- the binary

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Proc {
  pid_t pid = -1;
  std::string out, err;
  int status = -1;
};

Proc spawn(const std::vector<std::string>& args, const std::string& tag) {
  Proc r;
  const std::string base = ::testing::TempDir() + "mrcctl_" + tag + "_" + std::to_string(getpid());
  r.out = base + ".out";
  r.err = base + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, r.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, r.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv{const_cast<char*>(MRCCTL)};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  if (posix_spawn(&r.pid, MRCCTL, &fa, nullptr, argv.data(), environ) != 0) r.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return r;
}

/// Waits (at most 20 s, then kills) and returns the exit status.
int wait_exit(Proc& r) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (waitpid(r.pid, &r.status, WNOHANG) != r.pid) {
    if (std::chrono::steady_clock::now() > end) {
      kill(r.pid, SIGKILL);
      waitpid(r.pid, &r.status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
}

int run(const std::vector<std::string>& args, const std::string& tag, Proc& r) {
  r = spawn(args, tag);
  return wait_exit(r);
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name + "_" + std::to_string(getpid()) + ".toml";
  std::ofstream(path) << text;
  return path;
}

TEST(Mrcctl, ABadFileIsRejectedWithItsLineAndFieldAndExit2) {
  const std::string path = write_file("bad", "[[format]]\nid = 1\nmode = \"udp\"\nfields = [16]\n\n"
                                             "[[ev_profile]]\nid = 2\nmode = \"exact\"\n");
  Proc r;
  EXPECT_EQ(run({"--planes", "127.0.6.50", "--udp-port", "24798", "apply", path}, "bad", r), 2);
  EXPECT_EQ(slurp(r.err), "mrcctl: " + path + ":8: ev_profile[0].mode: must be \"auto\", \"exp\" or \"gen\"\n");
  EXPECT_EQ(slurp(r.out), "");
}

TEST(Mrcctl, ApplyDenyPortAndShowInOneRunWithJson) {
  const std::string path = write_file("good", kGood);
  Proc r;
  ASSERT_EQ(run({"--json", "--planes", "127.0.6.51,127.0.6.52", "--udp-port", "24798", "apply", path, "deny", "2",
                 "2:49169", "port", "2", "disable", "show"},
                "good", r),
            0)
      << slurp(r.err);
  const auto j = nlohmann::json::parse(slurp(r.out));
  EXPECT_EQ(j["apply"]["ev_profiles"], nlohmann::json::array({2}));
  EXPECT_EQ(j["deny"][0]["state"], "denied");
  EXPECT_EQ(j["port"]["state"], "down");
  const auto& s = j["show"];
  EXPECT_EQ(s["ports"][0]["state"], "active");
  EXPECT_EQ(s["ports"][1]["state"], "down");
  ASSERT_EQ(s["formats"].size(), 1u);
  EXPECT_EQ(s["formats"][0]["mode"], "generated") << "OCP's format mode of a UDP source port";
  EXPECT_EQ(s["formats"][0]["fields"][0]["width"], 16);
  ASSERT_EQ(s["ev_profiles"].size(), 1u);
  EXPECT_EQ(s["ev_profiles"][0]["state"], "online");
  const nlohmann::json evs = nlohmann::json::array(
      {{{"port", 1}, {"value", 49152}, {"state", "good"}}, {{"port", 2}, {"value", 49169}, {"state", "denied"}}});
  EXPECT_EQ(s["ev_profiles"][0]["evs"], evs);
  EXPECT_EQ(s["cc_profiles"][0]["algorithm"], "uet-1.0-nscc");
}

TEST(Mrcctl, TheDocumentedCommandRunsWithTheExampleFileAndJsonLast) {
  // docs/software-device.md's command, with examples/ctl.toml and --json
  // after the commands (device flags and --json are accepted anywhere).
  Proc r;
  ASSERT_EQ(run({"--planes", "127.0.6.60,127.0.6.61", "apply", MRCCTL_EXAMPLE, "deny", "2", "2:49169", "port", "2",
                 "disable", "show", "--json", "--udp-port", "24798"},
                "example", r),
            0)
      << slurp(r.err);
  const auto j = nlohmann::json::parse(slurp(r.out));
  EXPECT_EQ(j["apply"]["ev_profiles"], nlohmann::json::array({2}));
  EXPECT_EQ(j["deny"][0]["state"], "denied");
  EXPECT_EQ(j["show"]["ports"][1]["state"], "down");
  EXPECT_EQ(j["show"]["cc_profiles"][0]["algorithm"], "uet-1.0-nscc");
}

TEST(Mrcctl, MessagesSayWhatIsWrongAndWhatToDo) {
  Proc r;
  // A profile nobody configured: which step is missing, not EPERM.
  EXPECT_EQ(run({"--planes", "127.0.6.62", "--udp-port", "24798", "deny", "2", "1:49153"}, "unconfigured", r), 1);
  EXPECT_EQ(slurp(r.err),
            "mrcctl: ev_profile 2 is init, not online: EVs can be denied or allowed only in an online profile; define "
            "it with state = \"online\" in a file and `apply` it before `deny` (see examples/ctl.toml)\n");
  // An EV the profile does not have.
  EXPECT_EQ(run({"--planes", "127.0.6.63,127.0.6.64", "--udp-port", "24798", "apply", MRCCTL_EXAMPLE, "allow", "2",
                 "1:49160"},
                "not_in_profile", r),
            1);
  EXPECT_NE(slurp(r.err).find("mrcctl: ev_profile 2: EV 1:49160 is not in the profile"), std::string::npos)
      << slurp(r.err);
  // An unknown command, and none at all: usage errors, exit 2, named.
  EXPECT_EQ(run({"--planes", "127.0.6.65", "frob"}, "frob", r), 2);
  EXPECT_EQ(slurp(r.err), "mrcctl: unknown command or extra argument 'frob' (commands: apply FILE, show, deny, "
                          "allow, watch, probe, port; mrcctl --help lists them and the flags)\n");
  EXPECT_EQ(run({"--planes", "127.0.6.65"}, "none", r), 2);
  EXPECT_NE(slurp(r.err).find("mrcctl: no command given"), std::string::npos) << slurp(r.err);
  EXPECT_EQ(run({"--planes", "127.0.6.65", "show", "--frob"}, "flag", r), 2);
  EXPECT_NE(slurp(r.err).find("mrcctl: unknown flag '--frob'"), std::string::npos) << slurp(r.err);
}

TEST(Mrcctl, VersionNeedsNoDevice) {
  Proc r;
  EXPECT_EQ(run({"--version"}, "version", r), 0);
  EXPECT_EQ(slurp(r.out), "mrcctl (OpenMRC) " OPENMRC_VERSION_STRING "\n");
}

TEST(Mrcctl, ApplyingAnEvTheDeviceCannotSendFailsWithExit1) {
  // 49300 is no source port of this device (49152 + 2 planes x 16 EVs).
  std::string text = kGood;
  text.replace(text.find("49169"), 5, "49300");
  const std::string path = write_file("unsendable", text);
  Proc r;
  EXPECT_EQ(run({"--planes", "127.0.6.53,127.0.6.54", "--udp-port", "24798", "apply", path}, "unsendable", r), 1);
  EXPECT_EQ(slurp(r.err), "mrcctl: ev_profile 2: going online: Invalid argument (22)\n");
}

TEST(Mrcctl, ProbesBetweenTwoProcessesPrintRtts) {
  Proc server = spawn({"--planes", "127.0.6.55,127.0.6.56", "--udp-port", "24798", "--peer", "127.0.6.57/127.0.6.58",
                      "watch", "--seconds", "5"},
                     "server");
  // The server's device is up once a probe is answered: a loaded machine
  // may take a while to start it, so the first tries may find nobody.
  Proc r;
  int rc = -1;
  for (int attempt = 0; attempt < 10 && rc != 0; ++attempt)
    rc = run({"--json", "--planes", "127.0.6.57,127.0.6.58", "--udp-port", "24798", "--peer",
                      "127.0.6.55/127.0.6.56", "probe", "127.0.6.55", "--ev", "1:49152", "--ev", "2:49170",
                      "--timeout-ms", "2000"},
             "client", r);
  ASSERT_EQ(rc, 0) << slurp(r.err);
  const auto j = nlohmann::json::parse(slurp(r.out));
  ASSERT_EQ(j["probe"].size(), 2u);
  for (const auto& p : j["probe"]) {
    ASSERT_FALSE(p["rtt_ns"].is_null());
    EXPECT_GT(p["rtt_ns"].get<uint64_t>(), 0u);
    EXPECT_LT(p["rtt_ns"].get<uint64_t>(), 2'000'000'000u);
  }
  // Nobody listens at .59: no answer, exit 1, the EV reported unanswered.
  const int rc2 = run({"--planes", "127.0.6.57,127.0.6.58", "--udp-port", "24798", "probe", "127.0.6.59", "--ev",
                       "1:49153", "--timeout-ms", "50"},
                      "nobody", r);
  EXPECT_EQ(rc2, 1);
  EXPECT_EQ(slurp(r.out), "127.0.6.59 port 1 EV 49153: no answer\n");
  EXPECT_EQ(slurp(r.err), "mrcctl: probe 127.0.6.59: 0 of 1 answered within 50 ms\n");
  kill(server.pid, SIGTERM);
  wait_exit(server);
}

TEST(Mrcctl, WatchReportsTheEventAnAllowCausesAndStopsAtItsCount) {
  // An EV profile that reports GOOD: DENIED is the controller's own state
  // (no event), allowing the EV again is a change to GOOD (one event). The
  // watch's queue exists before the first command, so it sees it.
  std::string text = kGood;
  const std::string bad_only = "events = [\"assumed_bad\"]";
  text.replace(text.find(bad_only), bad_only.size(), "events = [\"good\"]");
  const std::string path = write_file("watch", text);
  Proc r;
  ASSERT_EQ(run({"--json", "--planes", "127.0.61.1,127.0.61.2", "--udp-port", "24799", "apply", path, "deny", "2",
                 "2:49169", "allow", "2", "2:49169", "watch", "--count", "1", "--seconds", "15"},
                "watch", r),
            0)
      << slurp(r.err);
  const auto j = nlohmann::json::parse(slurp(r.out));
  const nlohmann::json event = {{"profile", 2}, {"port", 2}, {"value", 49169}, {"state", "good"}, {"drop_count", 0}};
  EXPECT_EQ(j["watch"], nlohmann::json::array({event}));

  // Text output: one line per event.
  ASSERT_EQ(run({"--planes", "127.0.61.3,127.0.61.4", "--udp-port", "24799", "apply", path, "deny", "2", "2:49169",
                 "allow", "2", "2:49169", "watch", "--count", "1", "--seconds", "15"},
                "watch_text", r),
            0)
      << slurp(r.err);
  EXPECT_NE(slurp(r.out).find("event profile 2 EV 2:49169 good (dropped before: 0)\n"), std::string::npos)
      << slurp(r.out);
}

TEST(Mrcctl, WatchWithoutTheEventsItCountsOnExits1AfterItsTime) {
  // The profile reports only ASSUMED_BAD: allowing an EV again is not reported.
  const std::string path = write_file("watch_none", kGood);
  Proc r;
  EXPECT_EQ(run({"--json", "--planes", "127.0.61.5,127.0.61.6", "--udp-port", "24799", "apply", path, "deny", "2",
                 "2:49169", "allow", "2", "2:49169", "watch", "--count", "1", "--seconds", "0.2"},
                "watch_none", r),
            1);
  EXPECT_EQ(slurp(r.err), "mrcctl: watch: 0 of 1 events within 0.2 s\n");
  // Without --count a watch is a timed observation: no events is no failure.
  EXPECT_EQ(run({"--planes", "127.0.61.7,127.0.61.8", "--udp-port", "24799", "apply", path, "watch", "--seconds",
                 "0.1"},
                "watch_timed", r),
            0)
      << slurp(r.err);
  EXPECT_EQ(slurp(r.out), "applied " + path + "\n");
}

}  // namespace
