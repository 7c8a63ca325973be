// SPDX-License-Identifier: BSD-2-Clause
// Micro-benchmarks of the wire codecs.
//
//   cmake --preset release && cmake --build --preset release --target bench_wire
//   build/release/bench/bench_wire --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Each iteration changes a field so the compiler cannot hoist the work out of
// the loop; encoded bytes escape through DoNotOptimize(buf) before they are
// decoded (a plain ClobberMemory would let the compiler forward the stores of a
// non-escaping local buffer straight into the decode), and results escape too.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "wire/framing.hpp"
#include "wire/headers.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"

namespace {

using namespace mrc::wire;

Headers data_headers() {
  Headers h;
  h.bth.opcode = static_cast<uint8_t>(Opcode::write_middle);
  h.bth.dest_qp = 0x000123;
  h.bth.ack_req = true;
  h.bth.ts = true;
  h.bth.psn = 0x100;
  h.meth.msn = 7;
  h.tseth.timestamp = 0x1234;
  h.reth.va = 0x7f0000001000ull;
  h.reth.rkey = 0x5eed;
  h.reth.dma_length = 1 << 20;
  return h;
}

// BTH + METH + TSETH + RETH (36 bytes) encoded header by header into one
// buffer, then decoded back: what a sender and a receiver do per data packet.
void BM_DataHeaderChainEncodeDecode(benchmark::State& state) {
  Headers h = data_headers();
  alignas(8) std::array<uint8_t, kMaxHeaderBytes> buf{};
  uint64_t sink = 0;
  for (auto _ : state) {
    h.bth.psn = (h.bth.psn + 1) & 0xFFFFFF;
    h.reth.va += 4096;
    uint8_t* p = buf.data();
    encode(h.bth, p);
    encode(h.meth, p + Bth::kSize);
    encode(h.tseth, p + Bth::kSize + Meth::kSize);
    encode(h.reth, p + Bth::kSize + Meth::kSize + Tseth::kSize);
    benchmark::DoNotOptimize(buf);  // the bytes escape: decode must read them back
    const std::span<const uint8_t> in(buf);
    auto bth = decode<Bth>(in);
    auto meth = decode<Meth>(in.subspan(Bth::kSize));
    auto tseth = decode<Tseth>(in.subspan(Bth::kSize + Meth::kSize));
    auto reth = decode<Reth>(in.subspan(Bth::kSize + Meth::kSize + Tseth::kSize));
    // Every decoded field escapes, not just the few summed into sink.
    benchmark::DoNotOptimize(*bth);
    benchmark::DoNotOptimize(*meth);
    benchmark::DoNotOptimize(*tseth);
    benchmark::DoNotOptimize(*reth);
    sink += bth->psn + meth->msn + tseth->timestamp + reth->va;
    benchmark::DoNotOptimize(sink);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 36);
}
BENCHMARK(BM_DataHeaderChainEncodeDecode);

// The same chain through the whole-packet API: wire::encode then wire::parse.
void BM_DataHeaderPacketEncodeParse(benchmark::State& state) {
  Headers h = data_headers();
  std::array<uint8_t, kMaxHeaderBytes> buf{};
  uint64_t sink = 0;
  for (auto _ : state) {
    h.bth.psn = (h.bth.psn + 1) & 0xFFFFFF;
    auto n = encode(h, buf);
    benchmark::DoNotOptimize(buf);
    auto p = parse(std::span<const uint8_t>(buf.data(), *n));
    sink += p->h.bth.psn + p->header_len;
    benchmark::DoNotOptimize(sink);
  }
}
BENCHMARK(BM_DataHeaderPacketEncodeParse);

// SETH + CC_STATE (36 bytes): the SACK a responder builds and a requester reads.
void BM_SackEncodeDecode(benchmark::State& state) {
  Seth s;
  s.mark = 1;
  s.ack_psn_offset = -3;
  s.entropy = 0xBEEF;
  s.src_conn = 0x123;
  s.dst_conn = 0x456;
  s.cack_psn = 0x1000;
  s.sack_offset = 1;
  s.bitmap = 0x00FF00FF00FF00FFull;
  CcState c;
  c.reflected_ts = 0x1234;
  c.ooo_count = 5;
  c.rcv_cwnd_pen = 3;
  c.rcvd_bytes = 0x100;
  std::array<uint8_t, Seth::kSize + CcState::kSize> buf{};
  uint64_t sink = 0;
  for (auto _ : state) {
    s.cack_psn = (s.cack_psn + 1) & 0xFFFFFF;
    s.bitmap = (s.bitmap << 1) | (s.bitmap >> 63);
    c.rcvd_bytes = (c.rcvd_bytes + 16) & 0xFFFFFF;
    encode(s, buf.data());
    encode(c, buf.data() + Seth::kSize);
    benchmark::DoNotOptimize(buf);
    const std::span<const uint8_t> in(buf);
    auto ds = decode<Seth>(in);
    auto dc = decode<CcState>(in.subspan(Seth::kSize));
    benchmark::DoNotOptimize(*ds);
    benchmark::DoNotOptimize(*dc);
    sink += ds->cack_psn + ds->bitmap + static_cast<uint64_t>(ds->ack_psn_offset) + dc->rcvd_bytes +
            dc->ooo_count;
    benchmark::DoNotOptimize(sink);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 36);
}
BENCHMARK(BM_SackEncodeDecode);

// wire::parse of a complete 4 KiB-payload WRITE_MIDDLE with TSETH.
void BM_Parse4KiBDataPacket(benchmark::State& state) {
  const Headers h = data_headers();
  std::vector<uint8_t> pkt(kMaxHeaderBytes);
  const size_t hdr = *encode(h, pkt);
  pkt.resize(hdr);
  pkt.resize(hdr + 4096, 0x5A);
  uint64_t sink = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pkt.data());
    auto p = parse(pkt);
    sink += p->payload_len + p->h.bth.psn + p->h.reth.va;
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_Parse4KiBDataPacket);

// The CRC-32 alone (wire::crc32_update) over a buffer of range(0) bytes, the
// state carried from one iteration to the next as a chained update would.
void BM_Crc32Update(benchmark::State& state) {
  std::vector<uint8_t> buf(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 131 + 7);
  uint32_t crc = 0xFFFFFFFFu;
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    crc = crc32_update(crc, buf);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32Update)->Arg(64)->Arg(1024)->Arg(4096)->Arg(65536);

// A sender's staging of a payload: copied from a 1 MiB application buffer
// (walked 4 KiB at a time, as a message's packets are) into a 64 KiB
// staging buffer, and its CRC taken. range(0) = 0: std::memcpy, then
// crc32_update() over the copy (the device before crc32_copy); 1:
// crc32_copy(), one pass.
void BM_StageAndCrc4KiB(benchmark::State& state) {
  constexpr size_t kPkt = 4096, kApp = size_t{1} << 20, kStage = 64 * 1024;
  std::vector<uint8_t> app(kApp), stage(kStage);
  for (size_t i = 0; i < app.size(); ++i) app[i] = static_cast<uint8_t>(i * 131 + 7);
  size_t at = 0, to = 0;
  uint32_t sink = 0;
  for (auto _ : state) {
    const std::span<const uint8_t> src(app.data() + at, kPkt);
    uint8_t* dst = stage.data() + to;
    if (state.range(0) == 0) {
      std::memcpy(dst, src.data(), kPkt);
      sink ^= crc32_update(0xFFFFFFFFu, std::span<const uint8_t>(dst, kPkt));
    } else {
      sink ^= crc32_copy(dst, src, 0xFFFFFFFFu);
    }
    benchmark::DoNotOptimize(sink);
    benchmark::ClobberMemory();
    at = (at + kPkt) % kApp;
    to = to + 2 * (kPkt + 44) <= kStage ? to + kPkt + 44 : 0;  // segments of 4,140 bytes, as staged
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPkt));
  state.SetLabel(state.range(0) == 0 ? "memcpy+crc32_update" : crc32_copy_backend());
}
BENCHMARK(BM_StageAndCrc4KiB)->Arg(0)->Arg(1);

// The same on the portable slice-by-8 tables (the fallback without ISA-L),
// for comparison in one run.
void BM_Crc32UpdatePortable(benchmark::State& state) {
  std::vector<uint8_t> buf(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 131 + 7);
  uint32_t crc = 0xFFFFFFFFu;
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    crc = crc32_update_portable(crc, buf);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32UpdatePortable)->Arg(64)->Arg(1024)->Arg(4096)->Arg(65536);

// The IBTA ICRC of a WRITE_MIDDLE with TSETH over IPv6 + UDP (48 + 36 header
// bytes) and a range(0)-byte payload: what the sender and the receiver each
// compute per data packet (4096 is the soft device's data packet). Bytes
// processed count the CRC's input (8 masked LRH + 48 + 36 + payload).
void BM_IcrcIpv6(benchmark::State& state) {
  const Headers h = data_headers();
  std::array<uint8_t, kMaxHeaderBytes> hdr{};
  const size_t n = *encode(h, hdr);
  std::array<uint8_t, 48> ip_udp{};
  ip_udp[0] = 0x60;
  ip_udp[6] = 17;
  ip_udp[7] = 64;
  std::vector<uint8_t> payload(static_cast<size_t>(state.range(0)), 0x5A);
  uint64_t sink = 0;
  for (auto _ : state) {
    ip_udp[47] = static_cast<uint8_t>(sink);  // the (masked) UDP checksum: still an input
    benchmark::DoNotOptimize(ip_udp.data());
    benchmark::DoNotOptimize(payload.data());
    sink += *icrc(ip_udp, std::span<const uint8_t>(hdr.data(), n), payload);
    benchmark::DoNotOptimize(sink);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(8 + 48 + n + payload.size()));
}
BENCHMARK(BM_IcrcIpv6)->Arg(64)->Arg(1024)->Arg(4096)->Arg(65536);

// What the software device does per packet in SRv6 mode before the send:
// build_frame() writes the outer IPv6 (to the carrier), the inner IPv6 and
// UDP, computes the ICRC over the inner header and the packet, and the UDP
// checksum (computed mode, the default) over the inner pseudo-header.
// Arg 0: zero checksum (the RFC 6936 tunnel exception); 1: computed.
void BM_BuildFrameSrv6_4KiB(benchmark::State& state) {
  const Headers h = data_headers();
  std::array<uint8_t, kMaxHeaderBytes> hdr{};
  const size_t n = *encode(h, hdr);
  std::vector<uint8_t> payload(4096, 0x5A);
  FrameFormat fmt;
  fmt.mode = EvMode::srv6;
  fmt.stev.flow_label_bits = 0;
  fmt.checksum = state.range(0) ? UdpChecksumMode::computed : UdpChecksumMode::zero;
  FrameFields f;
  f.src[0] = 0xfd;
  f.dst[0] = 0xfd;
  f.dst[15] = 2;
  f.srv6_carrier[0] = 0xfc;
  f.srv6_carrier[5] = 0xb1;
  f.ev = 5;
  std::array<uint8_t, kMaxFrameHeaderBytes> out{};
  uint64_t sink = 0;
  for (auto _ : state) {
    f.ev = static_cast<uint32_t>(sink & 0xFF);
    benchmark::DoNotOptimize(payload.data());
    sink += build_frame(fmt, f, std::span<const uint8_t>(hdr.data(), n), payload, out)->icrc;
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n + payload.size()));
}
BENCHMARK(BM_BuildFrameSrv6_4KiB)->Arg(0)->Arg(1);

// The device's UDP mode over IPv4 on loopback, as the datagram benchmarks
// frame their packets.
FrameFormat udp_ipv4() {
  FrameFormat fmt;
  fmt.mode = EvMode::udp;
  fmt.ip = IpVersion::v4;
  return fmt;
}
FrameFields loopback_fields() {
  FrameFields f;
  f.src = {127, 0, 0, 1};
  f.dst = {127, 0, 0, 2};
  return f;
}

// What the software device does per data packet in UDP mode (IPv4, through
// kernel sockets): datagram_icrc() writes the IP and UDP headers the kernel
// will put on the wire and computes the ICRC over them and the packet.
// Arg 0: as the sender calls it (the headers and the 4 KiB payload apart);
// 1: as the receiver does (the datagram's UDP payload in one span).
void BM_DatagramIcrcIpv4_4KiB(benchmark::State& state) {
  const Headers h = data_headers();
  std::vector<uint8_t> packet(kMaxHeaderBytes + 4096, 0x5A);
  const size_t n = *encode(h, std::span<uint8_t>(packet.data(), kMaxHeaderBytes));
  std::memmove(packet.data() + n, packet.data() + kMaxHeaderBytes, 4096);
  packet.resize(n + 4096);
  const std::span<const uint8_t> whole(packet);
  const FrameFormat fmt = udp_ipv4();
  FrameFields f = loopback_fields();
  uint64_t sink = 0;
  for (auto _ : state) {
    f.ev = 49152 + static_cast<uint32_t>(sink & 0xFF);
    benchmark::DoNotOptimize(packet.data());
    const auto crc = state.range(0) == 0 ? datagram_icrc(fmt, f, whole.first(n), whole.subspan(n))
                                         : datagram_icrc(fmt, f, whole, {});
    sink += *crc;
    benchmark::DoNotOptimize(sink);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(packet.size()));
}
BENCHMARK(BM_DatagramIcrcIpv4_4KiB)->Arg(0)->Arg(1);

// Per packet of a 15-packet GSO burst (what the software device sends and
// receives per datagram with --burst 16), IPv4: Arg 0, the sender with
// datagram_icrc() per packet, staging the payload in the same pass; 1, the
// same with the IP and UDP headers' CRC register computed once per burst
// (SegmentIcrc), as the device does; 2 and 3,
// the receiver's form (the segment's UDP payload in one span), per packet
// and once per datagram.
void BM_BurstIcrcIpv4_4KiB(benchmark::State& state) {
  constexpr size_t kBurst = 15;
  const Headers h = data_headers();
  std::vector<uint8_t> hdr(kMaxHeaderBytes);
  const size_t n = *encode(h, std::span<uint8_t>(hdr.data(), kMaxHeaderBytes));
  std::vector<uint8_t> payload(kBurst * 4096, 0x5A);
  std::vector<uint8_t> stage(kBurst * (n + 4096));
  for (size_t k = 0; k < kBurst; ++k) std::memcpy(stage.data() + k * (n + 4096), hdr.data(), n);
  const FrameFormat fmt = udp_ipv4();
  FrameFields f = loopback_fields();
  const bool once = state.range(0) % 2 == 1, receiver = state.range(0) >= 2;
  uint64_t sink = 0;
  for (auto _ : state) {
    f.ev = 49152 + static_cast<uint32_t>(sink & 0xFF);
    benchmark::DoNotOptimize(payload.data());
    SegmentIcrc segment_icrc(fmt, f);
    for (size_t k = 0; k < kBurst; ++k) {
      uint8_t* seg = stage.data() + k * (n + 4096);
      const std::span<const uint8_t> t(hdr.data(), n), p(payload.data() + k * 4096, 4096), all(seg, n + 4096);
      mrc::Result<uint32_t> crc = mrc::Errc::invalid_argument;
      if (receiver)
        crc = once ? segment_icrc(all) : datagram_icrc(fmt, f, all, {});
      else
        crc = once ? segment_icrc(t, p, seg + n) : datagram_icrc(fmt, f, t, p, seg + n);
      sink += *crc;
    }
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBurst));
  state.counters["ns_per_pkt"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBurst),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_BurstIcrcIpv4_4KiB)->DenseRange(0, 3);

}  // namespace

BENCHMARK_MAIN();
