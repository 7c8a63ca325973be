// SPDX-License-Identifier: BSD-2-Clause
// Captures from the real datapath and from the simulator: a short transfer
// between two software devices on loopback (127.0.60.x, used by no other
// test) and a small mrc-sim scenario, each written to pcap files. Every
// record is parsed back with the codec (whole frame, ICRC verified); with
// tshark present, the dissector decodes every packet without an expert
// error and the decoded WRITEs are the ones the transfer sent.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>

#include "device_fixture.hpp"
#include "sim/host/capture.hpp"
#include "sim/scenario/runner.hpp"
#include "tshark.hpp"

namespace mrc::test {
namespace {

using namespace mrc::rt::fixture;

/// The records of a pcap file written by platform::PcapWriter.
struct Record {
  uint64_t ts_ns;
  std::vector<uint8_t> bytes;
};
std::vector<Record> read_pcap(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), {});
  auto le32 = [&b](size_t at) {
    return uint32_t{b[at]} | uint32_t{b[at + 1]} << 8 | uint32_t{b[at + 2]} << 16 | uint32_t{b[at + 3]} << 24;
  };
  std::vector<Record> out;
  if (b.size() < 24 || le32(0) != platform::kPcapMagicNs) {
    ADD_FAILURE() << path << " is not a nanosecond pcap file";
    return out;
  }
  size_t at = 24;
  while (at + 16 <= b.size()) {
    const uint32_t len = le32(at + 8);
    if (at + 16 + len > b.size()) {
      ADD_FAILURE() << path << ": record at " << at << " runs past the end";
      break;
    }
    out.push_back({uint64_t{le32(at)} * 1'000'000'000 + le32(at + 4),
                   std::vector<uint8_t>(b.begin() + static_cast<ptrdiff_t>(at + 16),
                                        b.begin() + static_cast<ptrdiff_t>(at + 16 + len))});
    at += 16 + len;
  }
  EXPECT_EQ(at, b.size());
  return out;
}

/// Removes the files it names when the test ends, however it ends (a skip
/// returns early).
struct RemoveAtEnd {
  std::vector<std::string> paths;
  ~RemoveAtEnd() {
    for (const auto& p : paths) std::remove(p.c_str());
  }
};

rt::DeviceConfig loopback_config(const std::string& addr, const std::string& pcap) {
  rt::DeviceConfig c;
  c.planes = {addr};
  c.seed = 7;
  c.pcap_path = pcap;
  c.dscp_control = 46;  // the control class is marked (checked below)
  return c;
}

TEST(DeviceCapture, ShortTransferIsCapturedWholeAndDecodes) {
  const std::string pa = temp_pcap("client"), pb = temp_pcap("server");
  const RemoveAtEnd cleanup{{pa, pb}};
  constexpr uint32_t kBytes = 256 << 10;
  constexpr uint32_t kPsnA = 1000;
  uint64_t rkey_b = 0, va_b = 0;
  {
    Endpoint a, b;
    a.dev = open_device(loopback_config("127.0.60.1", pa));
    b.dev = open_device(loopback_config("127.0.60.2", pb));
    ASSERT_TRUE(a.dev && b.dev);
    create_resources(a, kBytes);
    create_resources(b, kBytes);
    fill(a.mem, 3);
    connect_qp(a, {b.dev->plane_address(0)}, b.qpn, kPsnA, 5000);
    connect_qp(b, {a.dev->plane_address(0)}, a.qpn, 5000, kPsnA);
    ASSERT_TRUE(a.dev->post_send(a.qpn, write(a, b, 0, kBytes, 1)).ok());
    const auto wcs = wait_until(a.cq, 1, Clock::now() + std::chrono::seconds(20), Idle::yield);
    ASSERT_EQ(wcs.size(), 1u);
    ASSERT_EQ(wcs[0].status, core::WcStatus::success);
    EXPECT_EQ(a.mem, b.mem);
    rkey_b = b.mr.rkey;
    va_b = reinterpret_cast<uint64_t>(b.mem.data());
    const rt::DeviceStats sa = a.dev->stats();
    EXPECT_GE(sa.pcap_packets, kBytes / 4096);
    EXPECT_EQ(sa.pcap_dropped, 0u);
    EXPECT_GE(b.dev->stats().pcap_packets, kBytes / 4096);
  }  // the devices close their capture files

  // Every record is a whole IPv4/UDP frame to or from port 4791 whose ICRC
  // (the one on the wire) verifies over the rebuilt headers.
  wire::FrameFormat fmt;
  fmt.ip = wire::IpVersion::v4;
  // Data leaves with DSCP 0, control packets (SACKs, ACKs) with the
  // device's dscp_control (46 here): each side records what it sent and, for
  // what it received, the traffic class the socket reported, so the
  // marking is seen to cross the (loopback) network.
  for (const std::string& path : {pa, pb}) {
    const auto recs = read_pcap(path);
    ASSERT_GE(recs.size(), kBytes / 4096) << path;
    size_t control = 0;
    for (const Record& r : recs) {
      auto p = wire::parse_frame(fmt, r.bytes);
      ASSERT_TRUE(p.ok()) << path << ": " << to_string(p.error());
      EXPECT_TRUE(wire::verify_icrc(r.bytes, *p)) << path;
      EXPECT_EQ(p->checksum, wire::UdpChecksumState::valid) << path;
      EXPECT_GE(p->udp_sport, 49152) << path;  // an EV socket
      const bool data = r.bytes.size() > 1024;
      EXPECT_EQ(p->traffic_class >> 2, data ? 0 : 46) << path << ": a " << r.bytes.size() << "-byte frame";
      control += !data;
    }
    EXPECT_GT(control, 0u) << path << ": no control packet captured";
    EXPECT_GT(recs.back().ts_ns, 1'577'836'800ull * 1'000'000'000ull) << "wall-clock timestamps";
  }

  MRC_REQUIRE_TSHARK(tshark);
  for (const std::string& path : {pa, pb}) {
    // No expert error and no malformed frame, with IP and UDP checksums checked.
    int status = 0;
    const std::string cmd = "'" + *tshark + "' -n -X lua_script:'" + dissector_path() + "' -r '" + path +
                            "' -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE -T fields -e frame.number -Y "
                            "'_ws.expert.severity == error || _ws.malformed || !mrc' 2>/dev/null";
    const std::string bad = run(cmd, &status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(bad, "") << path << ": frames with errors or not MRC";
    // The WRITEs, as the server saw them and as the client sent them: every
    // PSN from kPsnA on, each packet's RETH inside the server's buffer with
    // its rkey, and the whole operation's length.
    const auto rows = tshark_fields(*tshark, path,
                                    {"mrc.bth.psn", "mrc.reth.va", "mrc.reth.rkey", "mrc.reth.len", "mrc.payload_len",
                                     "ip.src", "mrc.ev"},
                                    "mrc.bth.opcode >= 0xc6 && mrc.bth.opcode <= 0xcb");
    std::set<uint64_t> psns;
    for (const auto& r : rows) {
      psns.insert(num(r[0]).value_or(0));
      const uint64_t va = num(r[1]).value_or(0);
      EXPECT_GE(va, va_b);
      EXPECT_LE(va + num(r[4]).value_or(0), va_b + kBytes);
      EXPECT_EQ(num(r[2]), rkey_b);
      EXPECT_EQ(num(r[3]), kBytes);
      EXPECT_EQ(r[5], "127.0.60.1");
      EXPECT_GE(num(r[6]).value_or(0), 49152u);
    }
    ASSERT_EQ(psns.size(), kBytes / 4096) << path;
    EXPECT_EQ(*psns.begin(), kPsnA);
    EXPECT_EQ(*psns.rbegin(), kPsnA + kBytes / 4096 - 1);
  }
}

TEST(DeviceCapture, AFileThatCannotBeCreatedFailsOpen) {
  std::string why;
  auto d = rt::Device::open(loopback_config("127.0.60.3", "/nonexistent-mrc-dir/x.pcap"), &why);
  EXPECT_EQ(d.error(), Errc::not_found);
  EXPECT_NE(why.find("/nonexistent-mrc-dir/x.pcap"), std::string::npos) << why;
}

sim::Scenario small_scenario(sim::Routing routing) {
  sim::Scenario sc;
  sim::TopologyConfig& t = sc.topology;
  t.kind = sim::TopologyKind::clos2_multiplane;
  t.routing = routing;
  t.planes = 2;
  t.hosts = 8;
  t.t0_down = 4;
  t.t0_up = 4;
  t.t1_count = 4;
  t.host_link_bps = 100'000'000'000ull;
  sc.workload = sim::WorkloadKind::permutation;
  sc.bytes = 64 << 10;
  sc.seed = 3;
  sc.time_limit = Duration::ms(5);
  return sc;
}

TEST(SimCapture, EveryPacketLeavingANicDecodes) {
  for (const sim::Routing routing : {sim::Routing::srv6, sim::Routing::ecmp}) {
    SCOPED_TRACE(routing == sim::Routing::srv6 ? "srv6" : "ecmp");
    const std::string path = temp_pcap(routing == sim::Routing::srv6 ? "srv6" : "ecmp");
    const RemoveAtEnd cleanup{{path}};
    sim::Scenario sc = small_scenario(routing);
    std::vector<uint8_t> frame;
    uint64_t packets = 0, data = 0;
    std::vector<uint64_t> times;
    {
      auto w = platform::PcapWriter::open(path);
      ASSERT_TRUE(w.ok());
      sc.packet_tap = [&](Time now, uint32_t host, const sim::Packet& p) {
        ASSERT_EQ(host, p.src);
        ASSERT_TRUE(sim::frame_packet(p, frame).ok());
        ASSERT_TRUE((*w)->write(static_cast<uint64_t>(now.ps() / 1000), frame).ok());
        ++packets;
        data += wire::opcode_info(p.hdr[0]).data ? 1 : 0;
        times.push_back(static_cast<uint64_t>(now.ps() / 1000));
      };
      const auto mrc = sim::transport_by_name("mrc", 16, 1).value();
      const sim::RunResult r = sim::run_scenario(sc, mrc);
      EXPECT_TRUE(r.completed);
      ASSERT_TRUE((*w)->close().ok());
      // The tap changes nothing: the same run without it ends identically.
      const sim::RunResult plain = sim::run_scenario(small_scenario(routing), mrc);
      EXPECT_EQ(plain.end, r.end);
      EXPECT_EQ(plain.events, r.events);
      EXPECT_EQ(plain.data_packets, r.data_packets);
      EXPECT_EQ(plain.retransmissions, r.retransmissions);
    }
    ASSERT_GT(data, 8u * (64 << 10) / 4096 - 1);
    const auto recs = read_pcap(path);
    ASSERT_EQ(recs.size(), packets);
    for (size_t i = 0; i < recs.size(); ++i) EXPECT_EQ(recs[i].ts_ns, times[i]) << "simulated time, exact";

    MRC_REQUIRE_TSHARK(tshark);
    // The simulator's EVs are small numbers, so the UDP source ports are
    // well-known ones (echo, daytime, ...) that Wireshark's UDP dissector
    // would try before port 4791: the heuristic goes first instead
    // (docs/wireshark.md).
    const std::string opts = "-o udp.try_heuristic_first:TRUE";
    const auto rows = tshark_fields(*tshark, path, {"frame.number"}, "mrc", opts);
    EXPECT_EQ(rows.size(), packets);
    const auto bad =
        tshark_fields(*tshark, path, {"frame.number"}, "_ws.expert.severity == error || _ws.malformed", opts);
    EXPECT_TRUE(bad.empty()) << bad.size() << " frames with errors, first " << bad[0][0];
    const auto writes = tshark_fields(*tshark, path, {"frame.number"}, "mrc.reth.va", opts);
    EXPECT_EQ(writes.size(), data);
  }
}

}  // namespace
}  // namespace mrc::test
