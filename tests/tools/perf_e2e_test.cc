// SPDX-License-Identifier: BSD-2-Clause
// End to end: mrc_write_bw and mrc_write_lat as two real processes over the
// software device on loopback (two planes, distinct 127/8 addresses per side;
// multi-address loopback needs no configuration on Linux), checking exit
// codes and the JSON reports. Skipped when the device cannot open here
// (addresses or UDP ports in use).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Proc {
  pid_t pid = -1;
  std::string out;  // stdout file
  std::string err;  // stderr file
  int status = -1;
};

Proc spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& tag) {
  Proc p;
  const std::string dir = ::testing::TempDir();
  p.out = dir + "perf_e2e_" + tag + "_" + std::to_string(getpid()) + ".out";
  p.err = dir + "perf_e2e_" + tag + "_" + std::to_string(getpid()) + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  if (posix_spawn(&p.pid, exe.c_str(), &fa, nullptr, argv.data(), environ) != 0) p.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return p;
}

/// Waits until `deadline`; kills the process if it is still running then.
void finish(Proc& p, std::chrono::steady_clock::time_point deadline) {
  if (p.pid < 0) return;
  for (;;) {
    const pid_t r = waitpid(p.pid, &p.status, WNOHANG);
    if (r == p.pid) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, &p.status, 0);
      p.status = -2;  // timed out
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int exit_code(const Proc& p) { return p.status >= 0 && WIFEXITED(p.status) ? WEXITSTATUS(p.status) : -1; }

/// A TCP port for the exchange, distinct per test process and run.
// ctest runs each test as its own process, in parallel: every process gets
// its own block of 8 ports (offsets 0..7), so two tests never share one (a
// pid-plus-offset scheme collided when two pids differed by the offsets' gap).
// The blocks stay below the kernel's ephemeral range (32768 and up by
// default): a port in it can be some other test's outgoing connection, and
// then the server's listen fails with EADDRINUSE (seen in CI at 43846).
int tcp_port(int offset) { return 20000 + static_cast<int>(getpid() % 1500) * 8 + offset; }

struct Pair {
  Proc server, client;
  bool device_unavailable = false;
};

/// Runs server and client to completion (bounded), returning both.
Pair run_pair(const std::string& exe, const std::vector<std::string>& server_args,
              const std::vector<std::string>& client_args, const std::string& tag, int seconds = 25) {
  Pair pr;
  pr.server = spawn(exe, server_args, tag + "_server");
  pr.client = spawn(exe, client_args, tag + "_client");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  finish(pr.client, deadline);
  // A failed client makes the server fail promptly (Error message or closed
  // connection); give it a moment.
  finish(pr.server, std::max(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(3)));
  const std::string errs = slurp(pr.server.err) + slurp(pr.client.err);
  pr.device_unavailable = errs.find("cannot open the software device") != std::string::npos;
  return pr;
}

std::string describe(const Pair& p) {
  return "server exit " + std::to_string(exit_code(p.server)) + ", stdout:\n" + slurp(p.server.out) + "stderr:\n" +
         slurp(p.server.err) + "\nclient exit " + std::to_string(exit_code(p.client)) + ", stdout:\n" +
         slurp(p.client.out) + "stderr:\n" + slurp(p.client.err);
}

nlohmann::json read_json(const std::string& path) {
  const std::string text = slurp(path);
  EXPECT_FALSE(text.empty()) << path;
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::string tmp(const std::string& name) { return ::testing::TempDir() + name + "_" + std::to_string(getpid()); }

TEST(PerfE2E, WriteBwTwoPlanesAllSizesVerified) {
  const std::string port = std::to_string(tcp_port(0));
  const std::string sj = tmp("bw_server.json"), cj = tmp("bw_client.json");
  auto pr = run_pair(MRC_WRITE_BW,
                     {"-p", port, "--planes", "127.0.11.1,127.0.11.3", "--out_json_file", sj},
                     {"127.0.0.1", "-p", port, "--planes", "127.0.11.2,127.0.11.4", "-a", "-n", "8", "-t", "16",
                      "-Q", "4", "--verify", "--out_json_file", cj, "--timeout", "10"},
                     "bw");
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  ASSERT_EQ(exit_code(pr.server), 0) << describe(pr);
  for (const auto& path : {cj, sj}) {
    const auto j = read_json(path);
    ASSERT_FALSE(j.is_discarded()) << path;
    EXPECT_EQ(j["status"], "ok") << j.dump(2);
    EXPECT_EQ(j["config"]["num_planes"], 2);
    ASSERT_EQ(j["results"].size(), 23u) << j.dump(2);
    uint64_t size = 2;
    for (const auto& row : j["results"]) {
      EXPECT_EQ(row["MsgSize"], size);
      EXPECT_EQ(row["n_iterations"], 8);
      EXPECT_EQ(row["verify"], "ok");
      EXPECT_GT(row["BW_average"].get<double>(), 0);
      EXPECT_GE(row["BW_peak"].get<double>(), row["BW_average"].get<double>());
      size *= 2;
    }
  }
  const std::string out = slurp(pr.client.out);
  EXPECT_NE(out.find("RDMA_Write BW Test"), std::string::npos);
  EXPECT_NE(out.find("Connection type : MRC"), std::string::npos);
  EXPECT_NE(out.find("#bytes     #iterations    BW peak[MB/sec]"), std::string::npos);
}

TEST(PerfE2E, WriteBwOneByteSeveralQpsWithEvents) {
  const std::string port = std::to_string(tcp_port(1));
  const std::string cj = tmp("bw1_client.json");
  auto pr = run_pair(MRC_WRITE_BW, {"-p", port, "--planes", "127.0.13.1,127.0.13.3"},
                     {"127.0.0.1", "-p", port, "--planes", "127.0.13.2,127.0.13.4", "-s", "1", "-q", "3", "-n", "300",
                      "--use_event", "--report_gbits", "--out_json_file", cj},
                     "bw1");
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  ASSERT_EQ(exit_code(pr.server), 0) << describe(pr);
  const auto j = read_json(cj);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["MsgSize"], 1);
  EXPECT_EQ(j["results"][0]["n_iterations"], 300);
  EXPECT_EQ(j["results"][0]["BW_unit"], "Gb/sec");
  EXPECT_EQ(j["results"][0]["verify"], "ok");
}

// The top of the size range between two processes: one 256 MiB WRITE,
// verified byte for byte by the server (GSO bursts keep it near a second).
TEST(PerfE2E, WriteBwOne256MiBWriteVerified) {
  const std::string port = std::to_string(tcp_port(5));
  const std::string cj = tmp("bw256_client.json");
  auto pr = run_pair(MRC_WRITE_BW, {"-p", port, "--planes", "127.0.50.1,127.0.50.3", "--burst", "8"},
                     {"127.0.0.1", "-p", port, "--planes", "127.0.50.2,127.0.50.4", "--burst", "8", "-s",
                      "268435456", "-n", "1", "-t", "1", "--verify", "--out_json_file", cj, "--timeout", "20"},
                     "bw256", 60);
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  ASSERT_EQ(exit_code(pr.server), 0) << describe(pr);
  const auto j = read_json(cj);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["MsgSize"], 268435456);
  EXPECT_EQ(j["results"][0]["verify"], "ok");
}

// Per-packet sends through one raw socket (--raw-send) on both sides:
// 1 MiB WRITEs verified byte for byte, the banner and JSON say which path.
// Needs root (CAP_NET_RAW); CI has it.
TEST(PerfE2E, WriteBwRawSendVerified) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (--raw-send opens a raw socket)";
  const std::string port = std::to_string(tcp_port(0));
  const std::string cj = tmp("bw_raw_client.json");
  auto pr = run_pair(MRC_WRITE_BW, {"-p", port, "--planes", "127.0.51.1,127.0.51.3", "--raw-send"},
                     {"127.0.0.1", "-p", port, "--planes", "127.0.51.2,127.0.51.4", "--raw-send", "-s", "1048576",
                      "-n", "40", "--verify", "--out_json_file", cj, "--timeout", "20"},
                     "bwraw", 60);
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  ASSERT_EQ(exit_code(pr.server), 0) << describe(pr);
  const auto j = read_json(cj);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["verify"], "ok");
  EXPECT_EQ(j["config"]["raw_send"], true) << j.dump();
  EXPECT_NE(slurp(pr.client.out).find("raw socket"), std::string::npos) << describe(pr);
}

TEST(PerfE2E, WriteLatPingPong) {
  const std::string port = std::to_string(tcp_port(2));
  const std::string cj = tmp("lat_client.json");
  auto pr = run_pair(MRC_WRITE_LAT, {"-p", port, "--planes", "127.0.12.1,127.0.12.3"},
                     {"127.0.0.1", "-p", port, "--planes", "127.0.12.2,127.0.12.4", "-s", "1", "-n", "200",
                      "--out_json_file", cj, "-H"},
                     "lat");
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  ASSERT_EQ(exit_code(pr.server), 0) << describe(pr);
  const auto j = read_json(cj);
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j["results"].size(), 1u);
  const auto& r = j["results"][0];
  EXPECT_EQ(r["MsgSize"], 1);
  EXPECT_EQ(r["n_iterations"], 200);
  EXPECT_EQ(r["verify"], "ok");
  EXPECT_GT(r["t_min"].get<double>(), 0);
  EXPECT_LE(r["t_min"].get<double>(), r["t_typical"].get<double>());
  EXPECT_LE(r["t_typical"].get<double>(), r["t_99_percentile"].get<double>());
  EXPECT_LE(r["t_99_9_percentile"].get<double>(), r["t_max"].get<double>());
  const std::string out = slurp(pr.client.out);
  EXPECT_NE(out.find("RDMA_Write Latency Test"), std::string::npos);
  EXPECT_NE(out.find("t_typical[usec]"), std::string::npos);
  // -H: every sample after the row, ascending, from t_min to t_max.
  const size_t h = out.find("#, usec\n");
  ASSERT_NE(h, std::string::npos) << out;
  std::istringstream lines(out.substr(h + 8));
  std::vector<double> samples;
  std::string line;
  while (std::getline(lines, line) && samples.size() < 200) {
    unsigned i = 0;
    double v = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%u, %lf", &i, &v), 2) << line;
    ASSERT_EQ(i, samples.size() + 1) << line;
    samples.push_back(v);
  }
  ASSERT_EQ(samples.size(), 200u) << out;
  EXPECT_TRUE(std::is_sorted(samples.begin(), samples.end()));
  EXPECT_NEAR(samples.front(), r["t_min"].get<double>(), 0.006);
  EXPECT_NEAR(samples.back(), r["t_max"].get<double>(), 0.006);
}

TEST(PerfE2E, MismatchedFlagsFailOnBothSidesWithAClearMessage) {
  const std::string port = std::to_string(tcp_port(3));
  auto pr = run_pair(MRC_WRITE_BW, {"-p", port, "-s", "1024", "--planes", "127.0.14.1"},
                     {"127.0.0.1", "-p", port, "-s", "4096", "--planes", "127.0.14.2"}, "mismatch", 10);
  EXPECT_EQ(exit_code(pr.client), 1) << describe(pr);
  EXPECT_EQ(exit_code(pr.server), 1) << describe(pr);
  EXPECT_NE(slurp(pr.client.err).find("--size"), std::string::npos) << describe(pr);
  EXPECT_NE(slurp(pr.server.err).find("--size"), std::string::npos) << describe(pr);
}

/// Connects to 127.0.0.1:`port` (retrying while the server starts, up to
/// 10 s) and returns the socket, or -1.
int connect_loopback(int port) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    std::this_thread::yield();
  }
  return -1;
}

// The exchange is unauthenticated: a client that sends garbage, says
// nothing, or asks for more than a server allocates is refused with the
// reason, and the one-shot server exits with code 1 at once (a silent
// client holds it for kFirstMessageTimeoutS, not the 30 s exchange timeout).
TEST(PerfE2E, AMisbehavingClientIsRefusedWithTheReason) {
  {
    const int port = tcp_port(5);
    auto s = spawn(MRC_WRITE_BW, {"-p", std::to_string(port), "--planes", "127.0.73.1"}, "garbage_server");
    const int fd = connect_loopback(port);
    ASSERT_GE(fd, 0);
    const char junk[] = "GET / HTTP/1.1\r\n\r\n";
    ASSERT_GT(::send(fd, junk, sizeof junk - 1, MSG_NOSIGNAL), 0);
    finish(s, std::chrono::steady_clock::now() + std::chrono::seconds(20));
    ::close(fd);
    EXPECT_EQ(exit_code(s), 1);
    EXPECT_NE(slurp(s.err).find("bad magic"), std::string::npos) << slurp(s.err);
  }
  {
    const int port = tcp_port(6);
    auto s = spawn(MRC_WRITE_BW, {"-p", std::to_string(port), "--planes", "127.0.73.1"}, "silent_server");
    const int fd = connect_loopback(port);
    ASSERT_GE(fd, 0);
    finish(s, std::chrono::steady_clock::now() + std::chrono::seconds(20));
    ::close(fd);
    EXPECT_EQ(exit_code(s), 1);
    EXPECT_NE(slurp(s.err).find("within 5 s"), std::string::npos) << slurp(s.err);
  }
  {
    const std::string port = std::to_string(tcp_port(7));
    auto pr = run_pair(MRC_WRITE_BW, {"-p", port, "--planes", "127.0.73.1"},
                       {"127.0.0.1", "-p", port, "-q", "300", "--planes", "127.0.73.2"}, "greedy", 20);
    EXPECT_EQ(exit_code(pr.server), 1) << describe(pr);
    EXPECT_EQ(exit_code(pr.client), 1) << describe(pr);
    EXPECT_NE(slurp(pr.server.err).find("--qp"), std::string::npos) << describe(pr);
    EXPECT_NE(slurp(pr.client.err).find("--qp"), std::string::npos) << describe(pr);
  }
}

TEST(PerfE2E, NoServerIsAClearError) {
  auto c = spawn(MRC_WRITE_BW, {"127.0.0.1", "-p", std::to_string(tcp_port(4)), "--timeout", "0.3"}, "noserver");
  finish(c, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_EQ(exit_code(c), 1);
  EXPECT_NE(slurp(c.err).find("is the server running"), std::string::npos) << slurp(c.err);
}

TEST(PerfE2E, BadFlagExitsNonZeroNamingTheFlag) {
  auto c = spawn(MRC_WRITE_LAT, {"--mtu", "1500"}, "badflag");
  finish(c, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_NE(exit_code(c), 0);
  EXPECT_NE(slurp(c.err).find("--mtu"), std::string::npos) << slurp(c.err);
}

// ------------------------------------------------------------------ --ctl, --transport, --timeline
//
// These use 127.0.63.x (no other test does) and UDP port 29611, each test its
// own addresses so they may run in parallel.

constexpr const char* kUdpPort = "29611";

std::string write_text(const std::string& name, const std::string& text) {
  const std::string path = tmp(name);
  std::ofstream(path) << text;
  return path;
}

// An EXP EV profile with EVs on plane 1 only (port 2; plane 1's EV sockets
// are source ports 49152 + 16 .. 49152 + 31 with the default --evs 16).
constexpr const char* kPlane1Profile =
    "[[format]]\nid = 1\nmode = \"udp\"\nfields = [16]\n\n"
    "[[ev_profile]]\nid = 2\nmode = \"exp\"\nformat = 1\ncount = 4\n"
    "events = [\"good\", \"assumed_bad\"]\n"
    "fields = [{ width = 16, mask = 0xffff, max = 0xffff }]\n"
    "evs = [{ port = 2, value = 49168 }, { port = 2, value = 49169 }, { port = 2, value = 49170 }, "
    "{ port = 2, value = 49171 }]\n\n"
    "[[cc_profile]]\nid = 3\nalgorithm = \"none\"\n";

/// Sums a timeline's per-plane packets over its samples.
std::vector<uint64_t> plane_totals(const nlohmann::json& timeline) {
  std::vector<uint64_t> t;
  for (const auto& s : timeline["samples"]) {
    const auto& pp = s["plane_packets"];
    if (t.size() < pp.size()) t.resize(pp.size());
    for (size_t p = 0; p < pp.size(); ++p) t[p] += pp[p].get<uint64_t>();
  }
  return t;
}

TEST(PerfE2E, CtlProfileOnPlaneOneOnlyCarriesAllTheClientsPackets) {
  const std::string port = std::to_string(tcp_port(6));
  const std::string ctl = write_text("plane1.toml", kPlane1Profile);
  const std::string cj = tmp("ctl_client.json");
  auto pr = run_pair(MRC_WRITE_BW, {"-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.1,127.0.63.2"},
                     {"127.0.0.1", "-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.3,127.0.63.4", "-s",
                      "16384", "-n", "400", "--ctl", ctl, "--ev-profile", "2", "--cc-profile", "3", "--timeline",
                      "20", "--out_json_file", cj},
                     "ctl");
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  ASSERT_EQ(exit_code(pr.server), 0) << describe(pr);
  const auto j = read_json(cj);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["config"]["ev_profile"], 2);
  EXPECT_EQ(j["config"]["cc_profile"], 3);
  ASSERT_EQ(j["timeline"].size(), 1u) << j.dump(2);
  const auto totals = plane_totals(j["timeline"][0]);
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0], 0u) << "plane 0 carried packets of a QP on a plane-1-only profile:\n" << j.dump(2);
  // 400 x 16 KiB in 4 KiB packets: at least 1600 packets, all on plane 1.
  EXPECT_GE(totals[1], 1600u) << j.dump(2);
  EXPECT_NE(slurp(pr.client.out).find("EV profile      : 2"), std::string::npos) << slurp(pr.client.out);
}

TEST(PerfE2E, CtlBadFileIsRejectedNamingTheLineAndField) {
  const std::string ctl = write_text("bad.toml", "[[ev_profile]]\nid = 1\nmode = \"sideways\"\n");
  auto c = spawn(MRC_WRITE_BW, {"127.0.0.1", "-p", std::to_string(tcp_port(7)), "--ctl", ctl, "--ev-profile", "1"},
                 "ctlbad");
  finish(c, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_NE(exit_code(c), 0);
  const std::string err = slurp(c.err);
  EXPECT_NE(err.find("--ctl: " + ctl + ":3: ev_profile[0].mode:"), std::string::npos) << err;
  // Rejected before connecting: no server was ever asked.
  EXPECT_EQ(err.find("connect"), std::string::npos) << err;
}

TEST(PerfE2E, CtlProfileIdTheFileDoesNotDefineIsRejected) {
  const std::string ctl = write_text("good.toml", kPlane1Profile);
  auto c = spawn(MRC_WRITE_BW, {"127.0.0.1", "-p", std::to_string(tcp_port(7)), "--ctl", ctl, "--ev-profile", "5"},
                 "ctlid");
  finish(c, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_NE(exit_code(c), 0);
  EXPECT_NE(slurp(c.err).find("--ev-profile 5: " + ctl + " defines no [[ev_profile]] with id = 5"), std::string::npos)
      << slurp(c.err);
  auto d = spawn(MRC_WRITE_BW, {"127.0.0.1", "-p", std::to_string(tcp_port(7)), "--ctl", ctl, "--cc-profile", "2"},
                 "ctlcc");
  finish(d, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_NE(exit_code(d), 0);
  EXPECT_NE(slurp(d.err).find("--cc-profile 2: " + ctl + " defines no [[cc_profile]] with id = 2"), std::string::npos)
      << slurp(d.err);
  auto e = spawn(MRC_WRITE_LAT, {"127.0.0.1", "--ev-profile", "1"}, "noctl");
  finish(e, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_EQ(exit_code(e), 2);
  EXPECT_NE(slurp(e.err).find("--ev-profile 1: give --ctl"), std::string::npos) << slurp(e.err);
}

TEST(PerfE2E, RoceTransportCompletesOnOnePlaneAndTheServerTakesItOver) {
  const std::string port = std::to_string(tcp_port(6));
  const std::string sj = tmp("roce_server.json"), cj = tmp("roce_client.json");
  auto pr = run_pair(MRC_WRITE_BW,
                     {"-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.5,127.0.63.6", "--out_json_file", sj},
                     {"127.0.0.1", "-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.7,127.0.63.8", "-s",
                      "8192", "-n", "300", "-q", "2", "--transport", "roce", "--timeline", "50", "--out_json_file", cj},
                     "roce");
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  ASSERT_EQ(exit_code(pr.server), 0) << describe(pr);
  const auto c = read_json(cj), s = read_json(sj);
  EXPECT_EQ(c["config"]["transport"], "roce");
  EXPECT_EQ(c["config"]["connection_type"], "RC");
  EXPECT_EQ(s["config"]["transport"], "roce") << "the server did not take the client's transport over";
  ASSERT_EQ(c["results"].size(), 1u);
  EXPECT_EQ(c["results"][0]["n_iterations"], 300);
  EXPECT_EQ(c["results"][0]["verify"], "ok");
  EXPECT_NE(slurp(pr.server.out).find("RoCEv2 RC over UDP"), std::string::npos) << slurp(pr.server.out);
  // RC keeps each QP on one EV: both QPs' packets sum to what was sent, and
  // a QP never splits over planes -- with 2 QPs at most 2 planes are used,
  // and the data (300 x 2 x 2 packets) is all there.
  const auto totals = plane_totals(c["timeline"][0]);
  uint64_t sum = 0;
  for (uint64_t t : totals) sum += t;
  EXPECT_GE(sum, 1200u) << c.dump(2);
}

TEST(PerfE2E, RoceServerGivenMrcRefusesARoceClient) {
  const std::string port = std::to_string(tcp_port(6));
  auto pr = run_pair(MRC_WRITE_BW,
                     {"-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.13", "--transport", "mrc"},
                     {"127.0.0.1", "-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.14", "--transport", "roce"},
                     "roce_mismatch", 10);
  EXPECT_NE(exit_code(pr.server), 0) << describe(pr);
  EXPECT_NE(exit_code(pr.client), 0) << describe(pr);
  EXPECT_NE(slurp(pr.server.err).find("--transport mrc but the client asks for roce"), std::string::npos)
      << describe(pr);
}

TEST(PerfE2E, TimelinePrintsIntervalsAndTheLongestStallAndReportsThemInJson) {
  const std::string port = std::to_string(tcp_port(6));
  const std::string cj = tmp("timeline_client.json");
  auto pr = run_pair(MRC_WRITE_BW, {"-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.9,127.0.63.10"},
                     {"127.0.0.1", "-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.11,127.0.63.12", "-D",
                      "1", "-Q", "1", "--timeline", "100", "--out_json_file", cj},
                     "timeline");
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  const std::string out = slurp(pr.client.out);
  // About 10 interval lines in a 1 s run (at least 5 whatever the load),
  // each with both planes.
  size_t lines = 0;
  for (size_t at = out.find(" Gb/s  plane0 "); at != std::string::npos; at = out.find(" Gb/s  plane0 ", at + 1))
    ++lines;
  EXPECT_GE(lines, 5u) << out;
  EXPECT_NE(out.find("plane1 "), std::string::npos) << out;
  EXPECT_NE(out.find(" Longest stall: "), std::string::npos) << out;
  const auto j = read_json(cj);
  ASSERT_EQ(j["timeline"].size(), 1u) << j.dump(2);
  const auto& t = j["timeline"][0];
  EXPECT_EQ(t["interval_ms"], 100);
  EXPECT_GE(t["samples"].size(), 5u);
  EXPECT_EQ(t["samples"].size(), lines);
  EXPECT_GT(t["longest_stall_ms"].get<double>(), 0.0);
  // The longest stall is a gap between completions, so it is below the run.
  EXPECT_LT(t["longest_stall_ms"].get<double>(), 1000.0 + 200.0);
  EXPECT_EQ(t["ev_event_count"], 0);
  for (const auto& s : t["samples"]) EXPECT_EQ(s["plane_packets"].size(), 2u);
  const auto totals = plane_totals(t);
  EXPECT_GT(totals[0], 0u);
  EXPECT_GT(totals[1], 0u);
}

TEST(PerfE2E, WithoutTimelineTheOutputHasNoTimeline) {
  const std::string port = std::to_string(tcp_port(6));
  const std::string cj = tmp("notimeline_client.json");
  auto pr = run_pair(MRC_WRITE_BW, {"-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.15"},
                     {"127.0.0.1", "-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.16", "-n", "50",
                      "--out_json_file", cj},
                     "notimeline");
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  EXPECT_EQ(slurp(pr.client.out).find("Longest stall"), std::string::npos);
  EXPECT_FALSE(read_json(cj).contains("timeline"));
}

/// The IPv4 DSCP of every record of a pcap file the device wrote (raw IP,
/// nanosecond records), with the record's length.
std::vector<std::pair<size_t, int>> pcap_dscps(const std::string& path) {
  const std::string b = slurp(path);
  auto le32 = [&b](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(b[at + static_cast<size_t>(i)]);
    return v;
  };
  std::vector<std::pair<size_t, int>> out;
  for (size_t at = 24; at + 16 <= b.size();) {
    const size_t len = le32(at + 8);
    if (at + 16 + len > b.size() || len < 20) break;
    out.emplace_back(len, static_cast<uint8_t>(b[at + 16 + 1]) >> 2);  // the IPv4 TOS byte
    at += 16 + len;
  }
  return out;
}

TEST(PerfE2E, DscpControlMarksTheClientsControlPacketsOnly) {
  const std::string port = std::to_string(tcp_port(6));
  const std::string pcap = tmp("dscp_client.pcap");
  auto pr = run_pair(MRC_WRITE_BW,
                     {"-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.40", "--dscp-control", "46"},
                     {"127.0.0.1", "-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.41", "-n", "20", "-s",
                      "65536", "--dscp-control", "46", "--pcap", pcap, "--counters"},
                     "dscp");
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  EXPECT_NE(slurp(pr.client.out).find("Control DSCP"), std::string::npos) << "the banner names the marking";
  EXPECT_NE(slurp(pr.client.out).find("Device counters: tx "), std::string::npos) << "--counters prints them at the end";
  EXPECT_NE(slurp(pr.client.out).find(" (lost by the SACK rule "), std::string::npos)
      << "and why retransmissions were sent";
  EXPECT_NE(slurp(pr.client.out).find(" io_uring submissions)"), std::string::npos) << "and how the batches left";
  EXPECT_EQ(slurp(pr.server.out).find("Device counters"), std::string::npos) << "only where asked for";
  size_t data = 0, control = 0;
  for (const auto& [len, dscp] : pcap_dscps(pcap)) {
    // The client sends 4 KiB WRITE packets and receives SACKs (and an ACK
    // or probe answer now and then): data unmarked, control at 46.
    const bool is_data = len > 1024;
    EXPECT_EQ(dscp, is_data ? 0 : 46) << "a " << len << "-byte packet";
    ++(is_data ? data : control);
  }
  EXPECT_GE(data, 20u * 16);
  EXPECT_GT(control, 0u);
  std::remove(pcap.c_str());
}

/// Runs a shell command; its exit status.
int sh(const std::string& cmd) { return std::system(cmd.c_str()); }

TEST(PerfE2E, TimelinePrintsEvEventsOfAPathThatDropsEverything) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (an nftables rule drops one EV's packets)";
  if (sh("command -v nft >/dev/null 2>&1") != 0) GTEST_SKIP() << "nft is not installed";
  // One EV of the client's two (source port 49153 from 127.0.63.18) loses
  // every packet; the other carries the run. The table is this process's own.
  const std::string table = "mrc_perf_e2e_" + std::to_string(getpid());
  ASSERT_EQ(sh("nft add table inet " + table + " && nft add chain inet " + table +
               " out '{ type filter hook output priority 0; }' && nft add rule inet " + table +
               " out ip saddr 127.0.63.18 udp sport 49153 drop"),
            0);
  const std::string ctl = write_text(
      "evdrop.toml",
      "[[format]]\nid = 1\nmode = \"udp\"\nfields = [16]\n\n"
      "[[ev_profile]]\nid = 1\nmode = \"exp\"\nformat = 1\ncount = 2\nevents = [\"good\", \"assumed_bad\"]\n"
      "fields = [{ width = 16, mask = 0xffff, max = 0xffff }]\n"
      "evs = [{ port = 1, value = 49152 }, { port = 1, value = 49153 }]\n");
  const std::string port = std::to_string(tcp_port(6));
  const std::string cj = tmp("evdrop_client.json");
  auto pr = run_pair(MRC_WRITE_BW, {"-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.17"},
                     {"127.0.0.1", "-p", port, "--udp-port", kUdpPort, "--planes", "127.0.63.18", "-n", "300", "-Q",
                      "1", "--ctl", ctl, "--ev-profile", "1", "--timeline", "100", "--out_json_file", cj},
                     "evdrop");
  sh("nft delete table inet " + table);
  if (pr.device_unavailable) GTEST_SKIP() << "software device cannot open here:\n" << describe(pr);
  ASSERT_EQ(exit_code(pr.client), 0) << describe(pr);
  EXPECT_NE(slurp(pr.client.out).find("EV event: plane 0 EV 0xc001 -> ASSUMED_BAD (profile 1)"), std::string::npos)
      << slurp(pr.client.out);
  const auto j = read_json(cj);
  ASSERT_EQ(j["timeline"].size(), 1u) << j.dump(2);
  const auto& t = j["timeline"][0];
  EXPECT_GE(t["ev_events_assumed_bad"].get<int>(), 1) << t.dump(2);
  EXPECT_EQ(t["ev_event_count"].get<size_t>(), t["ev_events"].size());
  bool found = false;
  for (const auto& e : t["ev_events"])
    found = found || (e["state"] == "ASSUMED_BAD" && e["ev"] == 49153 && e["plane"] == 0 && e["profile"] == 1);
  EXPECT_TRUE(found) << t.dump(2);
}

TEST(PerfE2E, Srv6CarriersWithoutARouteFailAtOnceNamingTheFix) {
  // A new network namespace has no route at all: the carriers of an SRv6
  // profile are unreachable there, as on a fabric in ECMP mode. The tool
  // says so before it opens a device or connects, instead of losing every
  // packet until its timeout.
  if (geteuid() != 0 || sh("unshare -n ip link set lo up 2>/dev/null") != 0)
    GTEST_SKIP() << "needs root, unshare (util-linux) and ip (iproute2) for a network namespace";
  const std::string ctl = write_text(
      "srv6.toml",
      "[[format]]\nid = 1\nmode = \"srv6\"\nfields = [32, 16, 16, 16, 16]\n\n"
      "[[ev_profile]]\nid = 1\nmode = \"exp\"\nformat = 1\ncount = 1\n"
      "fields = [{ width = 32, init = 0xfd736900, min = 0, max = 7, mask = 0x7 }, "
      "{ width = 16, init = 0x0001, min = 0, max = 0, mask = 0 }, { width = 16, init = 0x0800, min = 1, max = 3, "
      "mask = 0x3 }, { width = 16, init = 0x0002, min = 0, max = 0, mask = 0 }, "
      "{ width = 16, init = 0x1802, min = 0, max = 0, mask = 0 }]\n"
      "evs = [{ port = 1, value = 1 }]\n");
  // lo up, as a host's namespace has it: ::1 and its route, nothing else.
  auto c = spawn("/usr/bin/unshare",
                 {"-n", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\"", MRC_WRITE_BW, "::1", "-p",
                  std::to_string(tcp_port(6)), "--ev-mode", "srv6", "--ctl", ctl, "--ev-profile", "1"},
                 "srv6noroute");
  finish(c, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_EQ(exit_code(c), 1);
  const std::string err = slurp(c.err);
  EXPECT_NE(err.find("--ev-mode srv6: no route to fd73:6900:1:801:2:1802::, the SRv6 carrier of EV 1:1"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("--ev-mode udp with the profile `fabric ev-profile SRC DST` writes"), std::string::npos) << err;
}

}  // namespace

namespace {

// -d NAME: each side opens a device of its own configuration file through
// ibverbs, with that file's planes and attributes (the flags describe none).
TEST(PerfE2E, DashDOpensTheConfigurationsDevice) {
  const std::string a = write_text("dev_a.toml",
                                   "[[device]]\nname = \"mrc_srv\"\nplanes = [\"127.0.63.61\", \"127.0.63.62\"]\n"
                                   "udp_port = 29612\nevs_per_plane = 4\n");
  const std::string b = write_text("dev_b.toml",
                                   "[[device]]\nname = \"mrc_cli\"\nplanes = [\"127.0.63.63\", \"127.0.63.64\"]\n"
                                   "udp_port = 29612\n");
  const std::string port = std::to_string(tcp_port(6));
  setenv("OPENMRC_CONFIG", a.c_str(), 1);
  Proc server = spawn(MRC_WRITE_BW, {"-d", "mrc_srv", "-p", port}, "dash_d_server");
  setenv("OPENMRC_CONFIG", b.c_str(), 1);
  Proc client = spawn(MRC_WRITE_BW, {"127.0.0.1", "-d", "mrc_cli", "-p", port, "-n", "50", "--verify"},
                      "dash_d_client");
  unsetenv("OPENMRC_CONFIG");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(25);
  finish(client, deadline);
  finish(server, std::max(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(3)));
  const std::string out = slurp(client.out);
  ASSERT_EQ(exit_code(client), 0) << out << slurp(client.err) << slurp(server.err);
  EXPECT_EQ(exit_code(server), 0) << slurp(server.err);
  EXPECT_NE(out.find("Planes: 127.0.63.63, 127.0.63.64"), std::string::npos) << out;
  EXPECT_NE(out.find("Planes: 127.0.63.61, 127.0.63.62"), std::string::npos) << out;
}

}  // namespace
