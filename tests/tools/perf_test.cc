// SPDX-License-Identifier: BSD-2-Clause
// Tests of tools/perf's shared library: command line, exchange messages and
// channel, sizes, patterns, statistics, banner/table formatting, JSON.
#include "perf/perf_common.hpp"

#include <gtest/gtest.h>
#include <openmrc/version.h>
#include <infiniband/verbs.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mrc::perf {
namespace {

// ------------------------------------------------------------------ command line

ParseOutcome parse(Tool t, std::vector<std::string> args, Options& o) { return parse_command_line(t, args, o); }

TEST(PerfCli, BwDefaultsArePerftests) {
  Options o;
  auto r = parse(Tool::write_bw, {}, o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_TRUE(o.is_server());
  EXPECT_EQ(o.port, 18515);
  EXPECT_EQ(o.size, 65536u);
  EXPECT_EQ(o.iters, 5000u);
  EXPECT_EQ(o.tx_depth, 128u);
  EXPECT_EQ(o.cq_mod, 100u);
  EXPECT_EQ(o.mtu, 4096u);
  EXPECT_EQ(o.num_qps, 1u);
  EXPECT_EQ(o.inline_size, 0u);
  EXPECT_EQ(o.udp_port, 4791);
  EXPECT_EQ(o.ev_mode, "udp");
  EXPECT_EQ(o.evs, 16u);
  EXPECT_EQ(o.burst, 1u);
  EXPECT_FALSE(o.busy_poll);
  EXPECT_TRUE(o.carrier_watch);
  EXPECT_EQ(o.verify, VerifyMode::automatic);
  EXPECT_TRUE(o.explicit_shape_flags.empty());
}

TEST(PerfCli, NoCarrierWatch) {
  for (const Tool t : {Tool::write_bw, Tool::write_lat}) {
    Options o;
    auto r = parse(t, {"--no-carrier-watch"}, o);
    ASSERT_TRUE(r.run) << r.text;
    EXPECT_FALSE(o.carrier_watch);
    EXPECT_TRUE(o.explicit_shape_flags.empty()) << "a device flag, not the test's shape";
  }
}

TEST(PerfCli, DscpControlAndCounters) {
  Options o;
  auto r = parse(Tool::write_bw, {"--dscp-control", "46"}, o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_EQ(o.dscp_control, 46u);
  EXPECT_FALSE(o.counters);
  r = parse(Tool::write_lat, {"--counters"}, o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_TRUE(o.counters);
  for (const char* bad : {"64", "-1", "ef"}) {
    Options b;
    r = parse(Tool::write_bw, {"--dscp-control", bad}, b);
    EXPECT_FALSE(r.run) << bad;
    EXPECT_NE(r.text.find("--dscp-control"), std::string::npos) << r.text;
  }
}

TEST(PerfCli, LatDefaults) {
  Options o;
  auto r = parse(Tool::write_lat, {"10.0.0.1"}, o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_FALSE(o.is_server());
  EXPECT_EQ(o.host, "10.0.0.1");
  EXPECT_EQ(o.size, 2u);
  EXPECT_EQ(o.iters, 1000u);
  EXPECT_EQ(o.inline_size, 220u);
  EXPECT_EQ(o.tx_depth, 1u);
  EXPECT_EQ(o.num_qps, 1u);
}

TEST(PerfCli, LatencySamplesFlagsAreLatencyOnlyAndUnsortedImpliesHistogram) {
  Options o;
  auto r = parse(Tool::write_lat, {"10.0.0.1", "-H"}, o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_TRUE(o.report_histogram);
  EXPECT_FALSE(o.report_unsorted);
  r = parse(Tool::write_lat, {"10.0.0.1", "--report-unsorted"}, o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_TRUE(o.report_histogram);
  EXPECT_TRUE(o.report_unsorted);
  r = parse(Tool::write_lat, {"10.0.0.1"}, o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_FALSE(o.report_histogram || o.report_unsorted);
  r = parse(Tool::write_bw, {"10.0.0.1", "-H"}, o);
  EXPECT_FALSE(r.run);
  EXPECT_NE(r.text.find("-H"), std::string::npos) << r.text;
}

TEST(PerfCli, AllFlagsParse) {
  Options o;
  auto r = parse(Tool::write_bw,
                 {"-p", "20000", "-s", "4096", "-n", "10", "-q", "4", "-t", "64", "-Q", "8", "-m", "1024", "-I", "64",
                  "--report_gbits", "--out_json_file", "x.json", "-F", "--use_event", "--planes",
                  "127.0.0.1,127.0.0.3", "--udp-port", "5000", "--ev-mode", "stev", "--evs", "32", "--burst", "8",
                  "--engines", "2", "--busy-poll", "--seed", "42", "--verify", "--timeout", "2.5", "--qp-timeout", "10",
                  "--retry-exp", "25", "server.example"},
                 o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_EQ(o.port, 20000);
  EXPECT_EQ(o.size, 4096u);
  EXPECT_EQ(o.iters, 10u);
  EXPECT_EQ(o.num_qps, 4u);
  EXPECT_EQ(o.tx_depth, 64u);
  EXPECT_EQ(o.cq_mod, 8u);
  EXPECT_EQ(o.mtu, 1024u);
  EXPECT_EQ(o.inline_size, 64u);
  EXPECT_TRUE(o.report_gbits);
  EXPECT_TRUE(o.out_json);
  EXPECT_EQ(o.json_path(), "x.json");
  EXPECT_TRUE(o.cpu_freq_warning_off);
  EXPECT_TRUE(o.use_event);
  EXPECT_EQ(o.planes, (std::vector<std::string>{"127.0.0.1", "127.0.0.3"}));
  EXPECT_EQ(o.udp_port, 5000);
  EXPECT_TRUE(o.udp_port_given);
  EXPECT_EQ(o.ev_mode, "stev");
  EXPECT_EQ(o.evs, 32u);
  EXPECT_EQ(o.burst, 8u);
  EXPECT_EQ(o.engines, 2u);
  EXPECT_TRUE(o.busy_poll);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.verify, VerifyMode::on);
  EXPECT_DOUBLE_EQ(o.timeout_s, 2.5);
  EXPECT_EQ(o.qp_timeout, 10u);
  EXPECT_EQ(o.retry_exp, 25u);
  EXPECT_EQ(o.host, "server.example");
  EXPECT_EQ(o.explicit_shape_flags,
            (std::vector<std::string>{"size", "iters", "qp", "tx-depth", "cq-mod", "mtu", "inline_size", "verify"}));
}

TEST(PerfCli, OutJsonDefaultFile) {
  Options o;
  ASSERT_TRUE(parse(Tool::write_lat, {"--out_json"}, o).run);
  EXPECT_TRUE(o.out_json);
  EXPECT_EQ(o.json_path(), "mrc_write_lat_out.json");
}

TEST(PerfCli, CqModIsClippedToTxDepth) {
  Options o;
  ASSERT_TRUE(parse(Tool::write_bw, {"-t", "16"}, o).run);
  EXPECT_EQ(o.cq_mod, 16u);
}

TEST(PerfCli, EventsAliases) {
  for (const char* flag : {"-e", "--events", "--use_event"}) {
    Options o;
    ASSERT_TRUE(parse(Tool::write_bw, {flag}, o).run) << flag;
    EXPECT_TRUE(o.use_event) << flag;
  }
}

struct BadFlag {
  Tool tool;
  std::vector<std::string> args;
  std::string must_mention;
};

TEST(PerfCli, OutOfRangeValuesNameTheFlag) {
  const std::vector<BadFlag> cases = {
      {Tool::write_bw, {"-s", "0"}, "--size"},
      {Tool::write_bw, {"--size", "4294967296"}, "--size"},
      {Tool::write_bw, {"-n", "0"}, "--iters"},
      {Tool::write_bw, {"-D", "0"}, "--duration"},
      {Tool::write_bw, {"-q", "0"}, "--qp"},
      {Tool::write_bw, {"-q", "5000"}, "--qp"},
      {Tool::write_bw, {"-t", "0"}, "--tx-depth"},
      {Tool::write_bw, {"-Q", "0"}, "--cq-mod"},
      {Tool::write_bw, {"-m", "300"}, "--mtu"},
      {Tool::write_bw, {"-m", "8192"}, "--mtu"},
      {Tool::write_bw, {"-I", "-1"}, "--inline_size"},
      {Tool::write_bw, {"-p", "0"}, "--port"},
      {Tool::write_bw, {"-p", "70000"}, "--port"},
      {Tool::write_bw, {"--udp-port", "0"}, "--udp-port"},
      {Tool::write_bw, {"--ev-mode", "ecmp"}, "--ev-mode"},
      {Tool::write_bw, {"--evs", "0"}, "--evs"},
      {Tool::write_bw, {"--evs", "2000"}, "--evs"},
      {Tool::write_bw, {"--burst", "0"}, "--burst"},
      {Tool::write_bw, {"--burst", "65"}, "--burst"},
      {Tool::write_bw, {"--engines", "0"}, "--engines"},
      {Tool::write_bw, {"--timeout", "0"}, "--timeout"},
      {Tool::write_bw, {"--qp-timeout", "25"}, "--qp-timeout"},
      {Tool::write_bw, {"--retry-exp", "26"}, "--retry-exp"},
      {Tool::write_bw, {"--planes", "127.0.0.1,not-an-address"}, "--planes"},
      {Tool::write_bw, {"--planes", "127.0.0.1,::1"}, "--planes"},
      {Tool::write_lat, {"-s", "abc"}, "--size"},
      {Tool::write_lat, {"-n", "-5"}, "--iters"},
  };
  for (const auto& c : cases) {
    Options o;
    auto r = parse(c.tool, c.args, o);
    EXPECT_FALSE(r.run) << c.args[0] << " " << c.args[1];
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args[1];  // every usage error, as mrc-sim and mrcctl
    EXPECT_NE(r.text.find(c.must_mention), std::string::npos) << r.text;
  }
}

TEST(PerfCli, PerftestFlagsAreAcceptedWithTheirMeaningOrAReason) {
  Options o;
  // Their meaning where it applies.
  auto r = parse(Tool::write_bw, {"-u", "12", "-N", "--report-both", "-x", "0", "-i", "1", "-c", "rc", "-l", "1",
                                  "--run_infinitely", "-D", "3", "host"},
                 o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_EQ(o.qp_timeout, 12u);
  EXPECT_TRUE(o.no_peak);
  EXPECT_TRUE(o.report_both);
  EXPECT_TRUE(o.run_infinitely);
  r = parse(Tool::write_bw, {"--run_infinitely"}, o);  // the server serves what the client sends
  EXPECT_TRUE(r.run) << r.text;
  r = parse(Tool::write_bw, {"--run_infinitely", "host"}, o);
  EXPECT_FALSE(r.run);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.text.find("--run_infinitely: give -D"), std::string::npos) << r.text;
  // -d names a device of the library's configuration file.
  r = parse(Tool::write_bw, {"-d", "mrc0", "-u", "12", "host"}, o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_EQ(o.ib_dev, "mrc0");
  // A reason where it does not, exit 2, the flag named.
  const std::vector<BadFlag> cases = {
      {Tool::write_bw, {"-d", "mrc0", "--planes", "127.0.0.1"}, "--planes describes a device: set `planes`"},
      {Tool::write_bw, {"-d", "mrc0", "--link-rate", "1gbit"}, "set `link_rate_bps`"},
      {Tool::write_bw, {"-x", "3"}, "-x 3: the software device has one GID"},
      {Tool::write_bw, {"-i", "2"}, "-i 2:"},
      {Tool::write_bw, {"-c", "UD"}, "-c UD: MRC is a reliable connection"},
      {Tool::write_bw, {"-b"}, "-b: not supported by MRC"},
      {Tool::write_bw, {"-l", "4"}, "-l 4: not supported by MRC"},
      {Tool::write_bw, {"--perform_warm_up"}, "--perform_warm_up: not supported by MRC"},
      {Tool::write_bw, {"-R"}, "-R: not supported by MRC"},
      {Tool::write_lat, {"-d", "mrc0", "--no-ecn"}, "set `no_ecn`"},
      {Tool::write_lat, {"-N"}, "-N"},  // a bandwidth flag: unknown to the latency tool
  };
  for (const auto& c : cases) {
    Options bad;
    r = parse(c.tool, c.args, bad);
    EXPECT_FALSE(r.run) << c.args[0];
    EXPECT_EQ(r.exit_code, 2) << c.args[0];
    EXPECT_NE(r.text.find(c.must_mention), std::string::npos) << r.text;
  }
}

TEST(PerfCli, VersionIsPerftestsDashV) {
  Options o;
  for (const char* flag : {"-V", "--version"}) {
    auto r = parse(Tool::write_bw, {flag}, o);
    EXPECT_FALSE(r.run);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.text, "mrc_write_bw (OpenMRC) " OPENMRC_VERSION_STRING);
  }
  auto r = parse(Tool::write_lat, {"-V"}, o);
  EXPECT_EQ(r.text, "mrc_write_lat (OpenMRC) " OPENMRC_VERSION_STRING);
}

TEST(PerfCli, ConflictsAndUnknownFlags) {
  Options o;
  auto r = parse(Tool::write_bw, {"-a", "-s", "64"}, o);
  EXPECT_FALSE(r.run);
  EXPECT_NE(r.text.find("--all"), std::string::npos) << r.text;
  r = parse(Tool::write_bw, {"-n", "5", "-D", "2"}, o);
  EXPECT_FALSE(r.run);
  EXPECT_NE(r.text.find("--duration"), std::string::npos) << r.text;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--raw-send", "--burst", "8"},
                                               std::vector<std::string>{"--raw-send", "--ev-mode", "stev"}}) {
    r = parse(Tool::write_bw, args, o);
    EXPECT_FALSE(r.run) << args[1];
    EXPECT_NE(r.text.find("--raw-send"), std::string::npos) << r.text;
  }
  r = parse(Tool::write_bw, {"--raw-send"}, o);
  EXPECT_TRUE(r.run) << r.text;
  EXPECT_TRUE(o.raw_send);
  Options u;
  r = parse(Tool::write_bw, {}, u);
  EXPECT_FALSE(u.no_io_uring) << "io_uring where the kernel allows it, by default";
  r = parse(Tool::write_lat, {"--no-io-uring"}, u);
  EXPECT_TRUE(r.run) << r.text;
  EXPECT_TRUE(u.no_io_uring);
  r = parse(Tool::write_bw, {"--verify", "--no-verify"}, o);
  EXPECT_FALSE(r.run);
  r = parse(Tool::write_bw, {"--busy-poll", "--no-busy-poll"}, o);
  EXPECT_FALSE(r.run);
  r = parse(Tool::write_lat, {"-q", "2"}, o);  // latency runs one QP
  EXPECT_FALSE(r.run);
  r = parse(Tool::write_bw, {"--bogus"}, o);
  EXPECT_FALSE(r.run);
  EXPECT_NE(r.text.find("--bogus"), std::string::npos) << r.text;
  r = parse(Tool::write_bw, {"host1", "host2"}, o);
  EXPECT_FALSE(r.run);
}

TEST(PerfCli, HelpExitsZeroAndDocumentsDefaults) {
  Options o;
  auto r = parse(Tool::write_bw, {"--help"}, o);
  EXPECT_FALSE(r.run);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--planes", "--udp-port", "--verify", "--no-verify", "127.0.0.2", "64 MiB", "--report_gbits",
                        "--out_json_file", "BW peak"})
    EXPECT_NE(r.text.find(s), std::string::npos) << s;
  r = parse(Tool::write_lat, {"-h"}, o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.text.find("WRITE WITH IMMEDIATE"), std::string::npos);
}

// ------------------------------------------------------------------ sizes, MTU, verify

TEST(PerfSizes, AllIsTwoToEightMiB) {
  const auto s = size_list(true, 123);
  ASSERT_EQ(s.size(), 23u);
  EXPECT_EQ(s.front(), 2u);
  EXPECT_EQ(s.back(), 8u << 20);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], s[i - 1] * 2);
  EXPECT_EQ(size_list(false, 123), std::vector<uint64_t>{123});
}

TEST(PerfSizes, VerifyModes) {
  EXPECT_TRUE(verify_enabled(VerifyMode::automatic, 64u << 20));
  EXPECT_FALSE(verify_enabled(VerifyMode::automatic, (64u << 20) + 1));
  EXPECT_TRUE(verify_enabled(VerifyMode::on, 1u << 30));
  EXPECT_FALSE(verify_enabled(VerifyMode::off, 2));
}

TEST(PerfSizes, MtuMapping) {
  EXPECT_EQ(mtu_to_ibv(256), IBV_MTU_256);
  EXPECT_EQ(mtu_to_ibv(4096), IBV_MTU_4096);
  EXPECT_EQ(mtu_to_ibv(1500), 0);
}

// ------------------------------------------------------------------ messages

ConnInfo sample_conn_info() {
  ConnInfo c;
  c.udp_port = 4791;
  Gid g0{};
  g0[10] = 0xff;
  g0[11] = 0xff;
  g0[12] = 127;
  g0[15] = 1;
  Gid g1 = g0;
  g1[15] = 3;
  c.plane_gids = {g0, g1};
  c.qps = {{0x123456, 0xabcdef, 0xdeadbeef, 0x7f0000001000, 8u << 20},
           {0x000001, 0, 1, 0x1000, 1},
           {0xffffff, 0xffffff, 0xffffffff, 0xffffffff0000, 0xffff}};
  c.qps[0].key.fill(0xA5);  // --secure: a send key and salt
  c.qps[0].salt = 0x01020304;
  return c;
}

TEST(PerfMessages, HeaderRoundTrip) {
  auto h = encode_header(MsgType::conn_info, 1234);
  ASSERT_EQ(h.size(), kHeaderBytes);
  auto d = decode_header(h);
  ASSERT_TRUE(d) << d.error;
  EXPECT_EQ(d.value->type, MsgType::conn_info);
  EXPECT_EQ(d.value->length, 1234u);
}

TEST(PerfMessages, HeaderRejections) {
  auto h = encode_header(MsgType::ready, 0);
  EXPECT_FALSE(decode_header(std::span(h).first(11)));
  auto bad = h;
  bad[0] = 'X';
  auto d = decode_header(bad);
  EXPECT_FALSE(d);
  EXPECT_NE(d.error.find("magic"), std::string::npos);
  bad = h;
  bad[4] = kProtocolVersion + 1;  // version
  EXPECT_NE(decode_header(bad).error.find("version"), std::string::npos);
  bad = h;
  bad[5] = 0;  // type
  EXPECT_FALSE(decode_header(bad));
  bad[5] = 9;
  EXPECT_FALSE(decode_header(bad));
  bad = h;
  bad[7] = 1;  // reserved
  EXPECT_FALSE(decode_header(bad));
  auto big = encode_header(MsgType::error, kMaxPayloadBytes + 1);
  EXPECT_FALSE(decode_header(big));
}

TEST(PerfMessages, ParamsRoundTrip) {
  Params p;
  p.tool = Tool::write_lat;
  p.verify = VerifyMode::off;
  p.all = true;
  p.num_qps = 7;
  p.mtu = 1024;
  p.tx_depth = 33;
  p.cq_mod = 11;
  p.inline_size = 220;
  p.iters = 123456789;
  p.duration_s = 0;
  p.size = 3;
  p.secure = Secure::encrypt;
  auto d = decode_params(encode(p));
  ASSERT_TRUE(d) << d.error;
  EXPECT_EQ(*d.value, p);
}

TEST(PerfMessages, ConnInfoRoundTrip) {
  const ConnInfo c = sample_conn_info();
  auto d = decode_conn_info(encode(c));
  ASSERT_TRUE(d) << d.error;
  EXPECT_EQ(*d.value, c);
}

TEST(PerfMessages, SmallMessagesRoundTrip) {
  SizeBegin b{8u << 20, 0x12345678, true};
  EXPECT_EQ(*decode_size_begin(encode(b)).value, b);
  SizeEnd e{65536, 5000, {1.5e9, 1.25e9, 19073.5}};
  EXPECT_EQ(*decode_size_end(encode(e)).value, e);
  SizeResult r{SizeResult::mismatch, 3, 4095};
  EXPECT_EQ(*decode_size_result(encode(r)).value, r);
  EXPECT_EQ(decode_error(encode_error("boom\n")), "boom?");
}

/// Every strict prefix and every one-byte extension of a valid payload is rejected.
template <class Decode>
void expect_exact_length(const std::vector<uint8_t>& good, Decode decode, const char* name) {
  ASSERT_TRUE(decode(good)) << name;
  for (size_t n = 0; n < good.size(); ++n) {
    auto d = decode(std::span(good).first(n));
    EXPECT_FALSE(d) << name << " accepted a " << n << "-byte prefix";
    EXPECT_FALSE(d.error.empty());
  }
  auto longer = good;
  longer.push_back(0);
  EXPECT_FALSE(decode(longer)) << name << " accepted a trailing byte";
}

TEST(PerfMessages, ShortOrLongPayloadsAreRejected) {
  Params p;
  p.size = 1;
  p.iters = 1;
  expect_exact_length(encode(p), decode_params, "Params");
  expect_exact_length(encode(sample_conn_info()), decode_conn_info, "ConnInfo");
  expect_exact_length(encode(SizeBegin{2, 1, false}), decode_size_begin, "SizeBegin");
  expect_exact_length(encode(SizeEnd{2, 1, {1.0, 2.0}}), decode_size_end, "SizeEnd");
  expect_exact_length(encode(SizeResult{}), decode_size_result, "SizeResult");
}

TEST(PerfMessages, GarbledFieldsAreRejected) {
  Params p;
  p.size = 1;
  p.iters = 1;
  auto bytes = encode(p);
  bytes[0] = 9;  // tool
  EXPECT_FALSE(decode_params(bytes));
  bytes = encode(p);
  bytes.back() = 3;  // secure mode
  EXPECT_NE(decode_params(bytes).error.find("secure"), std::string::npos);
  Params q = p;
  q.mtu = 1500;
  EXPECT_NE(decode_params(encode(q)).error.find("MTU"), std::string::npos);
  q = p;
  q.num_qps = 0;
  EXPECT_FALSE(decode_params(encode(q)));
  q = p;
  q.cq_mod = 200;  // above tx depth
  EXPECT_FALSE(decode_params(encode(q)));
  q = p;
  q.size = 0;
  EXPECT_FALSE(decode_params(encode(q)));

  ConnInfo c = sample_conn_info();
  c.qps[1].qpn = 0x1000000;
  EXPECT_FALSE(decode_conn_info(encode(c)));
  c = sample_conn_info();
  c.qps[0].size = 0;
  EXPECT_FALSE(decode_conn_info(encode(c)));
  c = sample_conn_info();
  c.qps[0].addr = ~uint64_t{0};
  EXPECT_FALSE(decode_conn_info(encode(c)));
  c = sample_conn_info();
  c.plane_gids.clear();
  EXPECT_FALSE(decode_conn_info(encode(c)));
  c = sample_conn_info();
  c.udp_port = 0;
  EXPECT_FALSE(decode_conn_info(encode(c)));
  // A count that disagrees with the bytes present.
  auto ci = encode(sample_conn_info());
  ci[3] = 3;  // claims 3 planes, carries 2
  auto d = decode_conn_info(ci);
  EXPECT_FALSE(d);
  EXPECT_NE(d.error.find("expected"), std::string::npos) << d.error;

  EXPECT_FALSE(decode_size_end(encode(SizeEnd{2, 1, {std::nan("")}})));
  EXPECT_FALSE(decode_size_end(encode(SizeEnd{2, 1, {-1.0}})));
  EXPECT_FALSE(decode_size_end(encode(SizeEnd{2, 1, std::vector<double>(17, 1.0)})));
  auto sr = encode(SizeResult{});
  sr[0] = 7;
  EXPECT_FALSE(decode_size_result(sr));
  auto sb = encode(SizeBegin{2, 1, true});
  sb[12] = 2;
  EXPECT_FALSE(decode_size_begin(sb));
}

TEST(PerfMessages, AServerRefusesWhatItWillNotAllocateForAClient) {
  Options client;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, std::vector<std::string>{"-s", "65536", "-q", "4", "h"}, client).run);
  Params p = params_from(client);
  EXPECT_EQ(check_peer_request(p), "");
  // The review's request: 1,024 QPs x 2 GiB x depth 4,096 (decode_params accepts each field).
  p.num_qps = 1024;
  p.size = uint64_t{2} << 30;
  p.tx_depth = 4096;
  EXPECT_NE(check_peer_request(p).find("--qp"), std::string::npos) << check_peer_request(p);
  p.num_qps = 8;
  auto why = check_peer_request(p);
  EXPECT_NE(why.find("MiB"), std::string::npos) << why;
  EXPECT_NE(why.find("--size"), std::string::npos) << why;
  p.size = 65536;
  p.num_qps = 256;
  p.tx_depth = 16384;
  why = check_peer_request(p);
  EXPECT_NE(why.find("--tx-depth"), std::string::npos) << why;
  p.tx_depth = 1024;
  EXPECT_EQ(check_peer_request(p), "");
}

TEST(PerfMessages, CompatibilityAndAdoption) {
  Options server;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, std::vector<std::string>{}, server).run);
  Options client;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, std::vector<std::string>{"-s", "4096", "-q", "3", "h"}, client).run);
  const Params p = params_from(client);
  EXPECT_EQ(check_compatible(server, p), "");
  adopt(server, p);
  EXPECT_EQ(server.size, 4096u);
  EXPECT_EQ(server.num_qps, 3u);

  Options strict;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, std::vector<std::string>{"-s", "1024"}, strict).run);
  auto why = check_compatible(strict, p);
  EXPECT_NE(why.find("--size"), std::string::npos) << why;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, std::vector<std::string>{"-q", "2"}, strict).run);
  EXPECT_NE(check_compatible(strict, p).find("--qp"), std::string::npos);
  Options lat;
  ASSERT_TRUE(parse_command_line(Tool::write_lat, std::vector<std::string>{}, lat).run);
  EXPECT_NE(check_compatible(lat, p).find("same test"), std::string::npos);
}

// ------------------------------------------------------------------ channel

struct SocketPair {
  SocketPair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    a = Channel(fds[0]);
    b = Channel(fds[1]);
  }
  Channel a, b;
};

TEST(PerfChannel, MessagesCrossTheConnection) {
  SocketPair sp;
  sp.a.send(MsgType::conn_info, encode(sample_conn_info()));
  sp.a.send(MsgType::ready);
  auto payload = sp.b.expect(MsgType::conn_info, 1.0);
  auto d = decode_conn_info(payload);
  ASSERT_TRUE(d) << d.error;
  EXPECT_EQ(*d.value, sample_conn_info());
  EXPECT_TRUE(sp.b.expect(MsgType::ready, 1.0).empty());
}

TEST(PerfChannel, ErrorsAreClear) {
  {
    SocketPair sp;
    sp.a.send_error_quietly("the server ran out of memory");
    try {
      (void)sp.b.expect(MsgType::conn_info, 1.0);
      FAIL();
    } catch (const PerfError& e) {
      EXPECT_STREQ(e.what(), "the peer reports: the server ran out of memory");
    }
  }
  {
    SocketPair sp;
    sp.a.send(MsgType::done);
    try {
      (void)sp.b.expect(MsgType::ready, 1.0);
      FAIL();
    } catch (const PerfError& e) {
      EXPECT_NE(std::string(e.what()).find("expected Ready"), std::string::npos) << e.what();
    }
  }
  {
    SocketPair sp;
    sp.a = Channel();  // closes
    try {
      (void)sp.b.recv(1.0);
      FAIL();
    } catch (const PerfError& e) {
      EXPECT_NE(std::string(e.what()).find("closed the connection"), std::string::npos) << e.what();
    }
  }
  {
    SocketPair sp;
    const char junk[] = "GET / HTTP/1.1\r\n\r\n";
    ASSERT_EQ(::write(sp.a.fd(), junk, sizeof junk), static_cast<ssize_t>(sizeof junk));
    try {
      (void)sp.b.recv(1.0);
      FAIL();
    } catch (const PerfError& e) {
      EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos) << e.what();
    }
  }
  {
    SocketPair sp;
    auto h = encode_header(MsgType::conn_info, 100);  // promises 100 bytes, sends 3
    h.insert(h.end(), {1, 2, 3});
    ASSERT_EQ(::write(sp.a.fd(), h.data(), h.size()), static_cast<ssize_t>(h.size()));
    try {
      (void)sp.b.recv(0.2);
      FAIL();
    } catch (const PerfError& e) {
      EXPECT_NE(std::string(e.what()).find("within"), std::string::npos) << e.what();
    }
  }
}

TEST(PerfChannel, ConnectRefusedIsExplained) {
  try {
    (void)Channel::connect("127.0.0.1", 1, 0.0);
    FAIL();
  } catch (const PerfError& e) {
    EXPECT_NE(std::string(e.what()).find("is the server running"), std::string::npos) << e.what();
  }
}

TEST(PerfChannel, DefaultClientPlanes) {
  EXPECT_EQ(default_client_planes("127.0.0.1", {"127.0.0.1"}), std::vector<std::string>{"127.0.0.2"});
  EXPECT_EQ(default_client_planes("127.0.0.1", {"127.0.0.1", "127.0.0.2"}),
            (std::vector<std::string>{"127.0.0.3", "127.0.0.4"}));
  EXPECT_EQ(default_client_planes("10.0.0.2", {"10.0.0.1"}), std::vector<std::string>{"10.0.0.2"});
  EXPECT_THROW(default_client_planes("10.0.0.2", {"10.0.0.1", "10.1.0.1"}), PerfError);
  EXPECT_THROW(default_client_planes("10.0.0.1", {"10.0.0.1"}), PerfError);
}

// ------------------------------------------------------------------ data and statistics

TEST(PerfData, PatternRoundTripAndCorruption) {
  for (size_t len : {1u, 7u, 8u, 9u, 4096u, 65537u}) {
    std::vector<uint8_t> buf(len);
    fill_pattern(buf.data(), len, 77);
    EXPECT_FALSE(check_pattern(buf.data(), len, 77).has_value()) << len;
    EXPECT_TRUE(check_pattern(buf.data(), len, 78).has_value() || len < 2) << len;
    buf[len - 1] ^= 0x01;
    auto off = check_pattern(buf.data(), len, 77);
    ASSERT_TRUE(off.has_value());
    EXPECT_EQ(*off, len - 1);
  }
  std::vector<uint8_t> zero(64, 0);
  EXPECT_TRUE(check_pattern(zero.data(), zero.size(), salt_for(64, 0)).has_value());
  EXPECT_NE(salt_for(64, 0), salt_for(64, 1));
  EXPECT_NE(salt_for(64, 0), salt_for(128, 0));
}

TEST(PerfStats, LatencyStatistics) {
  std::vector<double> v;
  for (int i = 1000; i >= 1; --i) v.push_back(i);
  const LatRow r = lat_stats(64, v);
  EXPECT_EQ(r.bytes, 64u);
  EXPECT_EQ(r.iters, 1000u);
  EXPECT_DOUBLE_EQ(r.t_min, 1);
  EXPECT_DOUBLE_EQ(r.t_max, 1000);
  EXPECT_DOUBLE_EQ(r.t_typical, 501);
  EXPECT_DOUBLE_EQ(r.t_avg, 500.5);
  EXPECT_NEAR(r.t_stdev, 288.675, 0.001);
  EXPECT_DOUBLE_EQ(r.p99, 990);
  EXPECT_DOUBLE_EQ(r.p999, 999);
  std::vector<double> one{3.5};
  const LatRow s = lat_stats(2, one);
  EXPECT_DOUBLE_EQ(s.p999, 3.5);
  EXPECT_DOUBLE_EQ(s.t_stdev, 0);
  std::vector<double> none;
  EXPECT_EQ(lat_stats(2, none).iters, 0u);
}

TEST(PerfStats, PeakRate) {
  std::vector<RateSample> steady;
  for (int i = 0; i <= 100; ++i) steady.push_back({i * 1000000, static_cast<uint64_t>(i) * 1000000});  // 1 GB/s
  EXPECT_NEAR(peak_rate(steady), 1e9, 1);
  auto bursty = steady;
  for (int i = 50; i <= 100; ++i) bursty[i].bytes += 5000000;  // 5 MB extra in one 1 ms step
  EXPECT_GT(peak_rate(bursty), 1.5e9);
  EXPECT_EQ(peak_rate({}), 0);
  EXPECT_EQ(peak_rate({{0, 0}}), 0);
}

// ------------------------------------------------------------------ formatting

/// Start columns of the whitespace-separated fields of `line`, given the
/// headers' multi-word titles collapse to one field each.
std::vector<size_t> field_starts(const std::string& line) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] != ' ' && line[i] != '\n' && (i == 0 || line[i - 1] == ' ')) starts.push_back(i);
  return starts;
}

TEST(PerfFormat, BwTableAlignsUnderItsHeader) {
  const std::string h = bw_table_header(false);
  EXPECT_EQ(h, " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
  BwRow r{65536, 5000, 1153.0 * 1048576, 1150.25 * 1048576, 18404.0};
  const std::string row = format_bw_row(r, false);
  EXPECT_EQ(row, " 65536      5000           1153.00            1150.25              0.018404\n");
  // Each value starts where its column title starts.
  const std::vector<size_t> cols = {1, 12, 27, 46, 67};
  EXPECT_EQ(field_starts(row), cols);
  for (size_t c : cols) EXPECT_NE(h[c], ' ');
  const std::string hg = bw_table_header(true);
  EXPECT_NE(hg.find("BW peak[Gb/sec]"), std::string::npos);
  EXPECT_NE(hg.find("BW average[Gb/sec]"), std::string::npos);
  BwRow g{1048576, 10, 1.25e9, 1.0e9, 1000};
  EXPECT_NE(format_bw_row(g, true).find("10.00"), std::string::npos);  // 1.25e9 B/s = 10 Gb/s
  EXPECT_NE(format_bw_row(g, true).find("8.00"), std::string::npos);
  EXPECT_DOUBLE_EQ(bw_in_unit(1048576, false), 1.0);
}

TEST(PerfFormat, LatTableAlignsUnderItsHeader) {
  const std::string h = lat_table_header();
  for (const char* t : {"#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]",
                        "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]"})
    EXPECT_NE(h.find(t), std::string::npos) << t;
  LatRow r{8388608, 1000, 1.5, 99.25, 2.0, 2.5, 0.75, 10.0, 50.126};
  const std::string row = format_lat_row(r);
  const std::vector<size_t> hs = {h.find("#bytes"), h.find("#iterations"), h.find("t_min"), h.find("t_max"),
                                  h.find("t_typical"), h.find("t_avg"), h.find("t_stdev"), h.find("99% "),
                                  h.find("99.9%")};
  EXPECT_EQ(field_starts(row), hs) << h << row;
  EXPECT_NE(row.find("50.13"), std::string::npos);
}

TEST(PerfFormat, LatSamplesListEveryValueInTheGivenOrder) {
  const std::vector<double> v{3.0, 1.234, 2.5};
  EXPECT_EQ(format_lat_samples(v), "#, usec\n1, 3.00\n2, 1.23\n3, 2.50\n");
  EXPECT_EQ(format_lat_samples({}), "#, usec\n");
}

TEST(PerfFormat, BannerAndAddresses) {
  EXPECT_EQ(result_line(), std::string(87, '-') + "\n");
  Options o;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, std::vector<std::string>{"-q", "2"}, o).run);
  const std::string b = format_banner(test_title(o.tool), banner_cells(o, 2, 0));
  EXPECT_EQ(b.rfind(result_line(), 0), 0u);  // starts with the rule
  EXPECT_NE(b.find("\n" + std::string(34, ' ') + "RDMA_Write BW Test\n"), std::string::npos) << b;
  for (const char* s : {" Dual-port       : OFF", "Connection type : MRC", "Number of qps   : 2", "TX depth        : 128",
                        "CQ Moderation   : 100", "Mtu             : 4096[B]", "Max inline data : 0[B]",
                        "Data ex. method : Ethernet (TCP)", "Planes          : 2", "EVs per plane   : 16"})
    EXPECT_NE(b.find(s), std::string::npos) << s << "\n" << b;

  QpInfo q{0x1a2b, 0x123456, 0xdeadbeef, 0x7f1234560000, 4096};
  Gid g{};
  g[10] = 255;
  g[11] = 255;
  g[12] = 127;
  g[15] = 1;
  EXPECT_EQ(gid_perftest(g), "00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:01");
  const std::string a = format_address("local", q, g, {"127.0.0.1", "127.0.0.3"});
  EXPECT_EQ(a,
            " local address: LID 0000 QPN 0x1a2b PSN 0x123456 RKey 0xdeadbeef VAddr 0x00007f1234560000\n"
            " GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:01\n"
            " Planes: 127.0.0.1, 127.0.0.3\n");
}

TEST(PerfFormat, CompletionErrorsAreReadable) {
  const std::string t = wc_status_text(IBV_WC_RETRY_EXC_ERR);
  EXPECT_NE(t.find("IBV_WC_RETRY_EXC_ERR"), std::string::npos);
  EXPECT_NE(t.find("transport retry counter exceeded"), std::string::npos);
  EXPECT_NE(t.find("--planes"), std::string::npos);  // the hint
  EXPECT_NE(wc_status_text(IBV_WC_REM_ACCESS_ERR).find("rkey"), std::string::npos);
  EXPECT_EQ(wc_status_name(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
  EXPECT_NE(wc_status_text(999).find("unknown"), std::string::npos);
}

TEST(PerfFormat, JsonReportIsValid) {
  Options o;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, std::vector<std::string>{"-a", "h\"ost"}, o).run);
  JsonReport rep(o, "client");
  rep.add_bw(BwRow{2, 5000, 2097152, 1048576, 524288}, false, "ok");
  rep.set_addresses({"127.0.0.2"}, {"127.0.0.1"});
  auto j = nlohmann::json::parse(rep.dump());
  EXPECT_EQ(j["tool"], "mrc_write_bw");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["config"]["host"], "h\"ost");
  EXPECT_EQ(j["config"]["sizes"].size(), 23u);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["MsgSize"], 2);
  EXPECT_EQ(j["results"][0]["n_iterations"], 5000);
  EXPECT_DOUBLE_EQ(j["results"][0]["BW_peak"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["results"][0]["BW_average"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["results"][0]["MsgRate"].get<double>(), 0.524288);
  EXPECT_EQ(j["remote_planes"][0], "127.0.0.1");
  rep.set_error("IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded)");
  j = nlohmann::json::parse(rep.dump());
  EXPECT_EQ(j["status"], "error");

  JsonReport lat(o, "server");
  lat.add_lat(LatRow{2, 1000, 1, 2, 3, 4, 5, 6, 7}, "ok");
  j = nlohmann::json::parse(lat.dump());
  for (const char* k : {"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "t_99_percentile", "t_99_9_percentile"})
    EXPECT_TRUE(j["results"][0].contains(k)) << k;
}

}  // namespace
}  // namespace mrc::perf

namespace mrc::perf {
namespace {

TEST(PerfMessages, ParamsCarryTheTransportInTheFormerReservedByte) {
  Params p;
  p.iters = 10;
  p.size = 64;
  p.transport = Transport::roce;
  auto bytes = encode(p);
  auto d = decode_params(bytes);
  ASSERT_TRUE(d) << d.error;
  EXPECT_EQ(d.value->transport, Transport::roce);
  bytes[3] = 0;  // what a client before --transport sends: MRC
  EXPECT_EQ(decode_params(bytes).value->transport, Transport::mrc);
  bytes[3] = 2;
  EXPECT_EQ(decode_params(bytes).error, "Params: unknown transport 2");
}

TEST(PerfOptions, TransportIsAShapeFlagTheServerTakesOver) {
  Options client, server, server_given;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, {"host", "--transport", "roce"}, client).run);
  ASSERT_TRUE(parse_command_line(Tool::write_bw, {}, server).run);
  ASSERT_TRUE(parse_command_line(Tool::write_bw, {"--transport", "mrc"}, server_given).run);
  const Params p = params_from(client);
  EXPECT_EQ(p.transport, Transport::roce);
  EXPECT_EQ(check_compatible(server, p), "");
  adopt(server, p);
  EXPECT_EQ(server.transport, Transport::roce);
  EXPECT_NE(check_compatible(server_given, p).find("--transport mrc but the client asks for roce"), std::string::npos);
  Options bad;
  const auto r = parse_command_line(Tool::write_bw, {"host", "--transport", "iwarp"}, bad);
  EXPECT_FALSE(r.run);
  EXPECT_NE(r.text.find("--transport"), std::string::npos) << r.text;
}

TEST(PerfOptions, SecureIsAShapeFlagWithAnOptionalMode) {
  Options plain, integrity, encrypt, server, server_given;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, {"host"}, plain).run);
  EXPECT_EQ(plain.secure, Secure::off);
  ASSERT_TRUE(parse_command_line(Tool::write_bw, {"host", "--secure"}, integrity).run);
  EXPECT_EQ(integrity.secure, Secure::integrity);
  ASSERT_TRUE(parse_command_line(Tool::write_lat, {"host", "--secure=encrypt"}, encrypt).run);
  EXPECT_EQ(encrypt.secure, Secure::encrypt);
  ASSERT_TRUE(parse_command_line(Tool::write_bw, {}, server).run);
  ASSERT_TRUE(parse_command_line(Tool::write_bw, {"--secure=integrity"}, server_given).run);
  Params p = params_from(integrity);
  p.secure = Secure::encrypt;
  EXPECT_EQ(check_compatible(server, p), "");
  adopt(server, p);
  EXPECT_EQ(server.secure, Secure::encrypt);
  EXPECT_NE(check_compatible(server_given, p).find("--secure integrity but the client asks for encrypt"),
            std::string::npos);
  Options bad;
  const auto r = parse_command_line(Tool::write_bw, {"host", "--secure=maybe"}, bad);
  EXPECT_FALSE(r.run);
  EXPECT_NE(r.text.find("--secure"), std::string::npos) << r.text;
}

TEST(PerfOptions, ProfilesNeedACtlFileAndTimelineIsTheClients) {
  Options o;
  auto r = parse_command_line(Tool::write_bw, {"host", "--cc-profile", "3"}, o);
  EXPECT_FALSE(r.run);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.text.find("--cc-profile 3: give --ctl FILE.toml"), std::string::npos) << r.text;
  r = parse_command_line(Tool::write_bw, {"host", "--ctl", "f.toml", "--ev-profile", "2", "--cc-profile", "3",
                                           "--ev-mode", "srv6", "--timeline", "250"},
                         o);
  ASSERT_TRUE(r.run) << r.text;
  EXPECT_EQ(o.ctl_file, "f.toml");
  EXPECT_EQ(o.ev_profile, 2u);
  EXPECT_EQ(o.cc_profile, 3u);
  EXPECT_EQ(o.ev_mode, "srv6");
  EXPECT_EQ(o.timeline_ms, 250u);
  r = parse_command_line(Tool::write_bw, {"--timeline", "100"}, o);
  EXPECT_FALSE(r.run);
  EXPECT_NE(r.text.find("--timeline: the client measures"), std::string::npos) << r.text;
  r = parse_command_line(Tool::write_bw, {"host", "--ev-profile", "17", "--ctl", "f.toml"}, o);
  EXPECT_FALSE(r.run);
  // write_lat has no timeline (its own latency statistics are its timeline).
  EXPECT_FALSE(parse_command_line(Tool::write_lat, {"host", "--timeline", "100"}, o).run);
}

TEST(PerfStats, StallMeterTakesTheLongestGapIncludingTheFirst) {
  StallMeter m;
  m.start(1'000'000'000);
  m.completion(1'002'000'000);  // 2 ms after the first post
  m.completion(1'003'000'000);
  m.completion(1'010'500'000);  // 7.5 ms gap, from 3 ms
  m.completion(1'011'000'000);
  EXPECT_DOUBLE_EQ(m.longest_ms(), 7.5);
  EXPECT_DOUBLE_EQ(m.longest_at_s(), 0.003);
  StallMeter first;
  first.start(0);
  first.completion(9'000'000);
  first.completion(10'000'000);
  EXPECT_DOUBLE_EQ(first.longest_ms(), 9.0);
  EXPECT_DOUBLE_EQ(first.longest_at_s(), 0.0);
}

TEST(PerfFormat, TimelineLinesAndJson) {
  TimelineSample s{0.5, 2.0, {30, 10}, {1.5, 0.5}};
  EXPECT_EQ(format_timeline_sample(s), "    0.500 s     2.000 Gb/s  plane0 1.500 Gb/s (30 pkts)  plane1 0.500 Gb/s (10 pkts)");
  EvEventRecord e{0.25, 1, 1, 0xc011, "ASSUMED_BAD", 0};
  EXPECT_EQ(format_ev_event(e), "    0.250 s EV event: plane 1 EV 0xc011 -> ASSUMED_BAD (profile 1)");
  Options o;
  ASSERT_TRUE(parse_command_line(Tool::write_bw, {"host", "--timeline", "500"}, o).run);
  JsonReport r(o, "client");
  TimelineReport t;
  t.interval_ms = 500;
  t.samples = {s};
  t.events = {e, EvEventRecord{0.75, 1, 1, 0xc011, "GOOD", 0}};
  t.longest_stall_ms = 3.25;
  r.add_timeline(65536, t);
  const auto j = nlohmann::json::parse(r.dump());
  ASSERT_EQ(j["timeline"].size(), 1u);
  EXPECT_EQ(j["timeline"][0]["MsgSize"], 65536);
  EXPECT_EQ(j["timeline"][0]["longest_stall_ms"], 3.25);
  EXPECT_EQ(j["timeline"][0]["ev_event_count"], 2);
  EXPECT_EQ(j["timeline"][0]["ev_events_assumed_bad"], 1);
  EXPECT_EQ(j["timeline"][0]["ev_events_good"], 1);
  EXPECT_EQ(j["timeline"][0]["samples"][0]["plane_packets"][0], 30);
  EXPECT_EQ(j["config"]["timeline_ms"], 500);
}

}  // namespace
}  // namespace mrc::perf
