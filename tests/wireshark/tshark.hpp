// SPDX-License-Identifier: BSD-2-Clause
// Running Debian's tshark with tools/wireshark/mrc.lua from a test, and
// building capture files of known packets with the real codec.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "platform/pcap_writer.hpp"
#include "wire/framing.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"

namespace mrc::test {

/// The tshark to run: $MRC_TSHARK, else `tshark` on PATH; nullopt if none.
inline std::optional<std::string> find_tshark() {
  if (const char* e = std::getenv("MRC_TSHARK"); e && *e) return std::string(e);
  FILE* p = popen("command -v tshark 2>/dev/null", "r");
  if (!p) return std::nullopt;
  char buf[512] = {};
  const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  if (!got) return std::nullopt;
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (s.empty()) return std::nullopt;
  return s;
}

/// Skips the calling test (return from it after) when tshark is missing.
#define MRC_REQUIRE_TSHARK(var)                                                                     \
  const auto var = ::mrc::test::find_tshark();                                                      \
  if (!var) GTEST_SKIP() << "tshark is not installed (scripts/deps.sh installs it): dissector not tested"

/// The dissector in the source tree.
inline std::string dissector_path() { return std::string(MRC_SOURCE_DIR) + "/tools/wireshark/mrc.lua"; }

/// A temporary file name for this test, removed by the caller if wanted.
inline std::string temp_pcap(const std::string& tag) {
  const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "mrc_ws_" + t->name() + "_" + tag + "_" + std::to_string(getpid()) + ".pcap";
}

/// Runs a shell command, returning its stdout; the exit status in `status`.
inline std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

/// tshark -T fields over `pcap` with the dissector: one row per frame
/// passing `filter` (empty = all), one column per field; `options` go on
/// the command line as they are. A failing tshark is a test failure (and
/// no rows).
inline std::vector<std::vector<std::string>> tshark_fields(const std::string& tshark, const std::string& pcap,
                                                          const std::vector<std::string>& fields,
                                                          const std::string& filter = "",
                                                          const std::string& options = "") {
  std::string cmd = "'" + tshark + "' -n -X lua_script:'" + dissector_path() + "' -r '" + pcap + "' " + options +
                    " -T fields -E separator=/t -E occurrence=a -E aggregator=,";
  for (const auto& f : fields) cmd += " -e " + f;
  if (!filter.empty()) cmd += " -Y '" + filter + "'";
  const std::string err = ::testing::TempDir() + "mrc_ws_tshark_stderr_" + std::to_string(getpid());
  cmd += " 2>'" + err + "'";
  int status = 0;
  const std::string out = run(cmd, &status);
  std::vector<std::vector<std::string>> rows;
  if (status != 0) {
    int st2 = 0;
    ADD_FAILURE() << "tshark failed (" << status << "): " << cmd << "\n" << run("cat '" + err + "'", &st2);
  }
  std::remove(err.c_str());
  if (status != 0) return rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    size_t at = 0;
    while (true) {
      const size_t tab = line.find('\t', at);
      cols.push_back(line.substr(at, tab == std::string::npos ? std::string::npos : tab - at));
      if (tab == std::string::npos) break;
      at = tab + 1;
    }
    cols.resize(fields.size());
    rows.push_back(std::move(cols));
  }
  return rows;
}

/// A number as tshark prints it (decimal or 0x-hex); nullopt if empty.
inline std::optional<uint64_t> num(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return std::strtoull(s.c_str(), nullptr, 0);
}
/// A boolean as tshark prints it ("1"/"0" or "True"/"False").
inline bool flag(const std::string& s) { return s == "1" || s == "True" || s == "true"; }

/// One packet to put in a capture: its frame format and fields, the header
/// chain and the payload.
struct TestPacket {
  wire::FrameFormat fmt;
  wire::FrameFields f;
  wire::Headers h;
  std::vector<uint8_t> payload;
  std::optional<size_t> cut_transport;  ///< keep only this many transport bytes (a malformed packet)
};

/// The whole IP packet, ICRC included, built by wire::encode and
/// wire::build_frame.
inline std::vector<uint8_t> build(const TestPacket& p) {
  uint8_t hdr[wire::kMaxHeaderBytes];
  auto n = wire::encode(p.h, std::span<uint8_t>(hdr));
  EXPECT_TRUE(n.ok());
  size_t len = n.ok() ? *n : 0;
  if (p.cut_transport) len = *p.cut_transport;
  uint8_t net[wire::kMaxFrameHeaderBytes];
  auto fr = wire::build_frame(p.fmt, p.f, std::span<const uint8_t>(hdr, len), p.payload, net);
  EXPECT_TRUE(fr.ok()) << to_string(fr.error());
  if (!fr.ok()) return {};
  std::vector<uint8_t> out(net, net + fr->header_len);
  out.insert(out.end(), hdr, hdr + len);
  out.insert(out.end(), p.payload.begin(), p.payload.end());
  uint8_t icrc[wire::kIcrcBytes];
  wire::put_icrc(fr->icrc, icrc);
  out.insert(out.end(), icrc, icrc + wire::kIcrcBytes);
  return out;
}

/// Writes `packets` to `path`, one per microsecond.
inline void write_pcap(const std::string& path, const std::vector<TestPacket>& packets) {
  auto w = platform::PcapWriter::open(path);
  ASSERT_TRUE(w.ok());
  uint64_t t = 1'700'000'000'000'000'000ull;
  for (const auto& p : packets) {
    const auto bytes = build(p);
    ASSERT_TRUE((*w)->write(t, bytes).ok());
    t += 1000;
  }
  ASSERT_TRUE((*w)->close().ok());
}

}  // namespace mrc::test
