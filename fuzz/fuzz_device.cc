// SPDX-License-Identifier: BSD-2-Clause
// libFuzzer target: datagrams into the software device's receive path
// (rt::Device::inject_datagram: the source, port and ICRC checks, then the
// core), on two devices on loopback (127.0.80.1-4) with two engines and
// four connected QPs each, so every datagram meets a requester and a
// responder. Real WRITEs flow between them meanwhile. Checked after every
// input: no crash or sanitizer report, and the guard bytes around each
// registered region untouched (nothing written outside a region).
//
// Input: records of [flags][length: 2 bytes][bytes]. flags: bit 0 the
// device that receives, bit 1 the plane, bit 2 sets the BTH destination QP
// to one of that device's QPs (bits 4-5 which), bit 3 appends a correct
// ICRC (else the bytes' own last four are the ICRC), bit 6 posts a real
// 4 KiB WRITE towards that device first.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.hpp"
#include "wire/framing.hpp"
#include "wire/icrc.hpp"

namespace {

using namespace mrc;

constexpr uint16_t kPort = 24880;
constexpr uint16_t kEvBase = 42000;
constexpr size_t kQps = 4;
constexpr size_t kRegion = 1 << 16;
constexpr size_t kGuard = 4096;
constexpr uint8_t kCanary = 0xC5;

struct Side {
  std::unique_ptr<rt::Device> dev;
  rt::CompletionQueue* cq = nullptr;
  std::vector<uint32_t> qpns;
  std::vector<uint8_t> mem;  ///< guard | region | guard
  core::MemoryRegion mr;
  std::vector<platform::SockAddr> planes;
  uint64_t wr_id = 0;
  uint8_t* region() { return mem.data() + kGuard; }
};

Side g_side[2];
bool g_ready = false;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "fuzz_device: %s\n", why.c_str());
  std::abort();
}

void open_side(Side& s, const char* p0, const char* p1) {
  rt::DeviceConfig c;
  c.planes = {p0, p1};
  c.udp_port = kPort;
  c.ev_port_base = kEvBase;
  c.evs_per_plane = 2;
  c.engines = 2;
  c.seed = 3;
  c.watch_carrier = false;
  std::string why;
  auto d = rt::Device::open(c, &why);
  if (!d) die("cannot open a device on " + std::string(p0) + ": " + why);
  s.dev = std::move(*d);
  s.cq = *s.dev->create_cq(4096);
  core::QpInit init;
  init.send_cq = init.recv_cq = s.cq->core_id();
  for (size_t i = 0; i < kQps; ++i) s.qpns.push_back(*s.dev->create_qp(init));
  s.mem.assign(kRegion + 2 * kGuard, kCanary);
  std::memset(s.region(), 0, kRegion);
  s.mr = *s.dev->reg_mr(s.region(), kRegion, core::access::kLocalWrite | core::access::kRemoteWrite, core::kDefaultPd);
  for (uint32_t p = 0; p < s.dev->num_planes(); ++p) s.planes.push_back(s.dev->plane_address(p));
}

void connect(Side& me, const Side& peer) {
  using namespace core::qp_attr;
  if (!me.dev->set_peer(peer.planes[0], peer.planes).ok()) die("set_peer");
  for (size_t i = 0; i < kQps; ++i) {
    core::QpAttr at;
    at.state = core::QpState::init;
    if (!me.dev->modify_qp(me.qpns[i], at, kState).ok()) die("INIT");
    at.state = core::QpState::rtr;
    at.dest_qpn = peer.qpns[i];
    at.rq_psn = 1000;
    at.peer = *me.dev->peer_id(peer.planes[0]);
    at.path_mtu = 4096;
    if (!me.dev->modify_qp(me.qpns[i], at, kState | kDestQpn | kRqPsn | kPeer | kPathMtu | kMaxWimmDest | kMprDest).ok())
      die("RTR");
    at.state = core::QpState::rts;
    at.sq_psn = 1000;
    if (!me.dev->modify_qp(me.qpns[i], at, kState | kSqPsn | kMaxWimm | kMpr | kRetryCnt | kTimeout).ok()) die("RTS");
  }
}

void check_guards(const Side& s) {
  for (size_t i = 0; i < kGuard; ++i)
    if (s.mem[i] != kCanary || s.mem[kGuard + kRegion + i] != kCanary) die("a byte outside the region was written");
}

void drain(Side& s) {
  core::WorkCompletion wc[64];
  while (s.cq->poll(wc) > 0) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  open_side(g_side[0], "127.0.80.1", "127.0.80.3");
  open_side(g_side[1], "127.0.80.2", "127.0.80.4");
  connect(g_side[0], g_side[1]);
  connect(g_side[1], g_side[0]);
  g_ready = true;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!g_ready) return 0;
  size_t pos = 0;
  std::vector<uint8_t> pkt;
  for (int records = 0; records < 64 && pos + 3 <= size; ++records) {
    const uint8_t flags = data[pos];
    const size_t len = std::min<size_t>((size_t{data[pos + 1]} << 8 | data[pos + 2]) % 4200, size - pos - 3);
    pkt.assign(data + pos + 3, data + pos + 3 + len);
    pos += 3 + len;
    Side& to = g_side[flags & 1];
    Side& from = g_side[(flags & 1) ^ 1];
    const uint32_t plane = flags >> 1 & 1;
    const size_t qp = flags >> 4 & 3;
    if (flags & 0x40) {
      core::SendWr wr;
      wr.wr_id = ++from.wr_id;
      wr.local_addr = reinterpret_cast<uint64_t>(from.region());
      wr.lkey = from.mr.lkey;
      wr.length = 4096;
      wr.remote_addr = reinterpret_cast<uint64_t>(to.region()) + (from.wr_id % 15) * 4096;
      wr.rkey = to.mr.rkey;
      (void)from.dev->post_send(from.qpns[qp], wr);
    }
    if ((flags & 4) && pkt.size() >= 8) {
      const uint32_t q = to.qpns[qp];
      pkt[5] = static_cast<uint8_t>(q >> 16);
      pkt[6] = static_cast<uint8_t>(q >> 8);
      pkt[7] = static_cast<uint8_t>(q);
    }
    platform::SockAddr src = from.planes[plane];
    src.set_port(static_cast<uint16_t>(kEvBase + plane * 2));
    if (flags & 8) {
      wire::FrameFormat fmt;
      fmt.ip = wire::IpVersion::v4;
      fmt.udp_dport = kPort;
      wire::FrameFields f;
      std::memcpy(f.src.data(), src.address_bytes().data(), src.address_bytes().size());
      const platform::SockAddr dst = to.planes[plane];
      std::memcpy(f.dst.data(), dst.address_bytes().data(), dst.address_bytes().size());
      f.ev = src.port();
      const size_t split = std::min<size_t>(pkt.size(), 12);
      auto crc = wire::datagram_icrc(fmt, f, std::span<const uint8_t>(pkt.data(), split),
                                     std::span<const uint8_t>(pkt.data() + split, pkt.size() - split));
      if (crc.ok()) {
        uint8_t c[4];
        wire::put_icrc(*crc, c);
        pkt.insert(pkt.end(), c, c + 4);
      }
    }
    (void)to.dev->inject_datagram(plane, src, pkt);
    drain(g_side[0]);
    drain(g_side[1]);
  }
  check_guards(g_side[0]);
  check_guards(g_side[1]);
  return 0;
}
