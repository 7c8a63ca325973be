// SPDX-License-Identifier: BSD-2-Clause
// Tests for platform/pcap_writer.hpp: the file layout byte by byte, snaplen,
// the packet bound, concurrent writers and error reporting.
#include "platform/pcap_writer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "platform/clock.hpp"

namespace mrc::platform {
namespace {

uint32_t le32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t{b[at]} | uint32_t{b[at + 1]} << 8 | uint32_t{b[at + 2]} << 16 | uint32_t{b[at + 3]} << 24;
}
uint16_t le16(const std::vector<uint8_t>& b, size_t at) { return static_cast<uint16_t>(b[at] | b[at + 1] << 8); }

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A file name unique to this test and process, removed at the end.
class PcapFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "mrc_pcap_" + t->name() + "_" + std::to_string(getpid()) + ".pcap";
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST(PcapHeaders, GlobalHeaderLayout) {
  uint8_t h[kPcapGlobalHeaderBytes];
  encode_pcap_global_header(1500, kLinktypeRaw, h);
  const std::vector<uint8_t> b(h, h + sizeof h);
  // Little-endian nanosecond magic: 4d 3c b2 a1.
  EXPECT_EQ(b[0], 0x4d);
  EXPECT_EQ(b[1], 0x3c);
  EXPECT_EQ(b[2], 0xb2);
  EXPECT_EQ(b[3], 0xa1);
  EXPECT_EQ(le16(b, 4), 2);
  EXPECT_EQ(le16(b, 6), 4);
  EXPECT_EQ(le32(b, 8), 0u);
  EXPECT_EQ(le32(b, 12), 0u);
  EXPECT_EQ(le32(b, 16), 1500u);
  EXPECT_EQ(le32(b, 20), 101u);
}

TEST(PcapHeaders, RecordHeaderSplitsNanoseconds) {
  uint8_t h[kPcapRecordHeaderBytes];
  encode_pcap_record_header(3'000'000'123ull, 60, 80, h);
  const std::vector<uint8_t> b(h, h + sizeof h);
  EXPECT_EQ(le32(b, 0), 3u);
  EXPECT_EQ(le32(b, 4), 123u);
  EXPECT_EQ(le32(b, 8), 60u);
  EXPECT_EQ(le32(b, 12), 80u);
}

TEST_F(PcapFile, WritesRecordsInOrderFromParts) {
  auto w = PcapWriter::open(path_);
  ASSERT_TRUE(w.ok());
  const uint8_t a[] = {0x60, 1, 2};
  const uint8_t c[] = {3, 4};
  const std::span<const uint8_t> parts[] = {a, {}, c};
  ASSERT_TRUE((*w)->write(5'000'000'007ull, parts).ok());
  ASSERT_TRUE((*w)->write(6'000'000'000ull, std::span<const uint8_t>(c)).ok());
  EXPECT_EQ((*w)->packets(), 2u);
  ASSERT_TRUE((*w)->close().ok());
  const auto b = slurp(path_);
  ASSERT_EQ(b.size(), 24u + 16 + 5 + 16 + 2);
  EXPECT_EQ(le32(b, 0), kPcapMagicNs);
  EXPECT_EQ(le32(b, 16), 65535u);
  EXPECT_EQ(le32(b, 24), 5u);
  EXPECT_EQ(le32(b, 28), 7u);
  EXPECT_EQ(le32(b, 32), 5u);
  EXPECT_EQ(le32(b, 36), 5u);
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + 40, b.begin() + 45), (std::vector<uint8_t>{0x60, 1, 2, 3, 4}));
  EXPECT_EQ(le32(b, 45), 6u);
  EXPECT_EQ(le32(b, 49), 0u);
  EXPECT_EQ(le32(b, 53), 2u);
  EXPECT_EQ(b[61], 3);
  EXPECT_EQ(b[62], 4);
}

TEST_F(PcapFile, SnaplenCutsAndKeepsOriginalLength) {
  PcapOptions o;
  o.snaplen = 4;
  o.linktype = kLinktypeIpv6;
  auto w = PcapWriter::open(path_, o);
  ASSERT_TRUE(w.ok());
  const uint8_t a[] = {1, 2, 3};
  const uint8_t c[] = {4, 5, 6};
  const std::span<const uint8_t> parts[] = {a, c};
  ASSERT_TRUE((*w)->write(1, parts).ok());
  ASSERT_TRUE((*w)->close().ok());
  const auto b = slurp(path_);
  ASSERT_EQ(b.size(), 24u + 16 + 4);
  EXPECT_EQ(le32(b, 16), 4u);
  EXPECT_EQ(le32(b, 20), kLinktypeIpv6);
  EXPECT_EQ(le32(b, 32), 4u);
  EXPECT_EQ(le32(b, 36), 6u);
  EXPECT_EQ(b[43], 4);
}

TEST_F(PcapFile, MaxPacketsBoundsTheFile) {
  PcapOptions o;
  o.max_packets = 3;
  auto w = PcapWriter::open(path_, o);
  ASSERT_TRUE(w.ok());
  const uint8_t a[] = {0x45, 0, 0, 0};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE((*w)->write(i, std::span<const uint8_t>(a)).ok());
  EXPECT_EQ((*w)->write(9, std::span<const uint8_t>(a)), Errc::too_big);
  EXPECT_EQ((*w)->write(9, std::span<const uint8_t>(a)), Errc::too_big);
  EXPECT_EQ((*w)->packets(), 3u);
  EXPECT_EQ((*w)->dropped(), 2u);
  ASSERT_TRUE((*w)->close().ok());
  EXPECT_EQ(slurp(path_).size(), 24u + 3 * (16 + 4));
}

TEST_F(PcapFile, ConcurrentWritersNeverInterleave) {
  auto w = PcapWriter::open(path_);
  ASSERT_TRUE(w.ok());
  constexpr int kThreads = 4, kEach = 500;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      // Each thread's records have their own length and fill byte.
      std::vector<uint8_t> pkt(10 + t, static_cast<uint8_t>(t));
      for (int i = 0; i < kEach; ++i) ASSERT_TRUE((*w)->write(i, std::span<const uint8_t>(pkt)).ok());
    });
  for (auto& t : ts) t.join();
  ASSERT_TRUE((*w)->close().ok());
  const auto b = slurp(path_);
  size_t at = 24;
  int counts[kThreads] = {};
  while (at < b.size()) {
    ASSERT_LE(at + 16, b.size());
    const uint32_t len = le32(b, at + 8);
    ASSERT_GE(len, 10u);
    ASSERT_LT(len, 10u + kThreads);
    const int t = static_cast<int>(len - 10);
    ASSERT_LE(at + 16 + len, b.size());
    for (uint32_t i = 0; i < len; ++i) ASSERT_EQ(b[at + 16 + i], t);
    ++counts[t];
    at += 16 + len;
  }
  for (int c : counts) EXPECT_EQ(c, kEach);
}

TEST_F(PcapFile, WriteAfterCloseIsRefused) {
  auto w = PcapWriter::open(path_);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->close().ok());
  const uint8_t a[] = {1};
  EXPECT_EQ((*w)->write(0, std::span<const uint8_t>(a)), Errc::bad_state);
  EXPECT_EQ((*w)->flush(), Errc::bad_state);
  EXPECT_TRUE((*w)->close().ok());  // idempotent
}

TEST(PcapOpen, ErrorsNameTheFile) {
  std::string why;
  auto w = PcapWriter::open("/nonexistent-mrc-dir/x.pcap", {}, &why);
  EXPECT_EQ(w.error(), Errc::not_found);
  EXPECT_NE(why.find("/nonexistent-mrc-dir/x.pcap"), std::string::npos) << why;
  EXPECT_EQ(PcapWriter::open("", {}, &why).error(), Errc::invalid_argument);
  PcapOptions o;
  o.snaplen = 0;
  EXPECT_EQ(PcapWriter::open("/tmp/x.pcap", o, &why).error(), Errc::invalid_argument);
  EXPECT_NE(why.find("snaplen"), std::string::npos) << why;
}

TEST(PlatformClock, RealtimeIsAfter2020) {
  EXPECT_GT(realtime_ns(), 1'577'836'800ull * 1'000'000'000ull);
}

}  // namespace
}  // namespace mrc::platform
