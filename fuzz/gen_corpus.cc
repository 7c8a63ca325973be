// SPDX-License-Identifier: BSD-2-Clause
// Writes the seed corpus for the fuzz targets: valid encoded packets of every
// opcode (with and without TSETH, with payload and pad), a few near-misses,
// the individual extension headers cut from them, framed packets (IP +
// UDP + packet + ICRC) in every EV mode for the frame parser, and for
// fuzz_endpoint record streams built around a short clean transfer of the
// endpoint pair (endpoint_pair.hpp): the transfer alone, replays and
// mutations of its packets, each kind of packet it sent injected as raw
// bytes, and losses.
//
//   fuzz_gen_corpus <dir>   writes <dir>/<target>/<name> files
//
// The output is committed under fuzz/corpus/ (regenerate with the
// `fuzz_corpus` build target); scripts/run_fuzz.sh also regenerates it into
// its scratch directory so the seeds follow codec changes. The
// fuzz/corpus/endpoint/regress_* inputs are not generated: each reproduces
// a core issue fuzz_endpoint once found, kept as a regression seed, and
// regenerating writes only its own names and leaves them in place.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "wire/framing.hpp"
#include "wire/icrc.hpp"
#include "endpoint_pair.hpp"
#include "wire/packet.hpp"

namespace {

namespace fs = std::filesystem;
using namespace mrc::wire;
using Bytes = std::vector<uint8_t>;

fs::path g_root;

void write(const std::string& target, const std::string& name, const Bytes& b) {
  const fs::path dir = g_root / target;
  fs::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

Headers base(Opcode op, bool ts) {
  Headers h;
  h.bth.opcode = static_cast<uint8_t>(op);
  h.bth.dest_qp = 0x000123;
  h.bth.ack_req = true;
  h.bth.ts = ts;
  h.bth.psn = 0xFFFFF0;
  h.meth.rqmsn = 1;
  h.meth.msn = 0xFFFF;
  h.tseth.timestamp = 0x1234;
  h.reth.va = 0x7f0000001000ull;
  h.reth.rkey = 0x5eed;
  h.reth.dma_length = 4096;
  h.imm.imm = 0xC0FFEE;
  h.aeth.syndrome = aeth::kAckNoCredit;
  h.aeth.msn = 7;
  h.seth.mark = static_cast<uint8_t>(Mark::skip_once);
  h.seth.ack_psn_offset = -3;
  h.seth.entropy = 0xBEEF;
  h.seth.src_conn = 0x0123;
  h.seth.dst_conn = 0x0456;
  h.seth.cack_psn = 0xFFFFF0;
  h.seth.sack_offset = 1;
  h.seth.bitmap = 0x00FF00FF00FF00FFull;
  h.cc.reflected_ts = 0x1234;
  h.cc.ooo_count = 5;
  h.cc.rcv_cwnd_pen = 3;
  h.cc.rcvd_bytes = 0xFFFFFF;
  h.neth.reason = static_cast<uint8_t>(NackCode::trimmed);
  h.neth.entropy = 0xBEEF;
  h.neth.nack_psn = 0xFFFFF1;
  h.peth.probe_id = 9;
  h.peth.timestamp = 0x1234;
  h.erth.op = static_cast<uint8_t>(EpWireOp::ev_probe);
  h.erth.port_status_mask = 0xFF;
  h.eeth.op = static_cast<uint8_t>(EpWireOp::ev_probe);
  h.eeth.rx_port = 2;
  h.eeth.entropy = 0xBEEF;
  // Endpoint operations are addressed to the reserved QP 0x2 (reference 3.3).
  if (op == Opcode::endpoint_request || op == Opcode::endpoint_response) h.bth.dest_qp = 2;
  return h;
}

Bytes encode_chain(const Headers& h) {
  Bytes b(kMaxHeaderBytes);
  auto n = encode(h, b);
  if (!n.ok()) {
    std::fprintf(stderr, "encode failed for opcode 0x%02x\n", h.bth.opcode);
    std::exit(1);
  }
  b.resize(*n);
  return b;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// Writes `h`'s extension header (the bytes after BTH) for the matching decoder.
void write_ext(const Headers& h, const Bytes& chain, const std::string& name) {
  const OpcodeInfo& info = opcode_info(h.bth.opcode);
  const Bytes after_bth(chain.begin() + Bth::kSize, chain.end());
  if (info.data) {
    if (!info.reth) return;  // RC MIDDLE/LAST: nothing after BTH but ImmDt
    const size_t reth_off = Bth::kSize + (info.meth ? Meth::kSize + (h.bth.ts ? Tseth::kSize : 0) : 0);
    write("decode_reth", name, Bytes(chain.begin() + static_cast<long>(reth_off),
                                     chain.begin() + static_cast<long>(reth_off + Reth::kSize)));
    return;
  }
  switch (info.ext) {
    case ExtHeader::seth: write("decode_seth", name, after_bth); break;
    case ExtHeader::neth: write("decode_neth", name, after_bth); break;
    case ExtHeader::peth: write("decode_peth", name, after_bth); break;
    case ExtHeader::erth: write("decode_erth", name, after_bth); break;
    case ExtHeader::eeth: write("decode_eeth", name, after_bth); break;
    case ExtHeader::aeth:
    case ExtHeader::cnp:
    case ExtHeader::none: break;
  }
}

// A framed packet for fuzz_parse_frame: its first byte is the target's
// configuration selector (EV mode in the low bits), then the frame.
Bytes framed(const FrameFormat& fmt, const Headers& h, const Bytes& payload) {
  const Bytes chain = encode_chain(h);
  FrameFields f;
  f.src[0] = f.dst[0] = 0xFD;
  f.src[15] = 1;
  f.dst[15] = 2;
  f.srv6_carrier = {0xCA, 0xFE, 0xCA, 0xFE, 0x01, 0x01, 0x02, 0x02};
  if (fmt.ip == IpVersion::v4) f.src = f.dst = {10, 0, 0, 1};
  f.ev = fmt.mode == EvMode::udp ? 0xC123 : 0xABCD0123;
  f.traffic_class = 0x12;
  Bytes out(kMaxFrameHeaderBytes);
  auto r = build_frame(fmt, f, chain, payload, out);
  if (!r.ok()) {
    std::fprintf(stderr, "build_frame failed\n");
    std::exit(1);
  }
  out.resize(r->header_len);
  out.insert(out.end(), chain.begin(), chain.end());
  out.insert(out.end(), payload.begin(), payload.end());
  uint8_t crc[kIcrcBytes];
  put_icrc(r->icrc, crc);
  out.insert(out.end(), crc, crc + kIcrcBytes);
  out.insert(out.begin(), static_cast<uint8_t>(fmt.mode));
  return out;
}

void write_frames() {
  const Headers data = base(Opcode::write_only, true);
  const Bytes payload(64, 0x5A);
  struct Case {
    const char* name;
    EvMode mode;
    IpVersion ip;
    UdpChecksumMode checksum;
  };
  const Case cases[] = {
      {"udp_ipv4", EvMode::udp, IpVersion::v4, UdpChecksumMode::computed},
      {"udp_ipv4_nocsum", EvMode::udp, IpVersion::v4, UdpChecksumMode::zero},
      {"udp_ipv6", EvMode::udp, IpVersion::v6, UdpChecksumMode::computed},
      {"stev", EvMode::stev, IpVersion::v6, UdpChecksumMode::computed},
      {"srv6", EvMode::srv6, IpVersion::v6, UdpChecksumMode::computed},
      {"srv6_nocsum", EvMode::srv6, IpVersion::v6, UdpChecksumMode::zero},
  };
  for (const Case& c : cases) {
    FrameFormat fmt;
    fmt.mode = c.mode;
    fmt.ip = c.ip;
    fmt.checksum = c.checksum;
    const std::string n = c.name;
    write("parse_frame", n + "_write_only", framed(fmt, data, payload));
    write("parse_frame", n + "_sack", framed(fmt, base(Opcode::sack, false), {}));
    // Trimmed in flight: cut after the transport headers, the outermost IP
    // length fixed, UDP's not (reference 3.9).
    Bytes t = framed(fmt, data, payload);
    t.resize(t.size() - payload.size() - kIcrcBytes);
    const size_t ip_total = t.size() - 1;
    if (c.ip == IpVersion::v4) {
      t[3] = static_cast<uint8_t>(ip_total >> 8);
      t[4] = static_cast<uint8_t>(ip_total);
      t[11] = t[12] = 0;  // header checksum: recomputed below
      uint32_t sum = 0;
      for (size_t i = 1; i < 21; i += 2) sum += uint32_t{t[i]} << 8 | t[i + 1];
      while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
      t[11] = static_cast<uint8_t>(~sum >> 8);
      t[12] = static_cast<uint8_t>(~sum);
    } else {
      t[5] = static_cast<uint8_t>((ip_total - 40) >> 8);
      t[6] = static_cast<uint8_t>(ip_total - 40);
    }
    write("parse_frame", n + "_trimmed", t);
  }
}

// fuzz_endpoint seeds (see RecordOp in endpoint_pair.hpp).
int write_endpoint_seeds() {
  using mrc::fuzz::EndpointPair;
  using mrc::fuzz::RecordOp;
  namespace flag = mrc::fuzz::rec_flag;
  auto op = [](RecordOp o) { return static_cast<uint8_t>(o); };
  int files = 0;
  // MTU 4096; MTU 256; MTU 1024 with the PSN wrapping; fixed CC with a
  // 128-PSN window; MTU 256, wrapping, finite retries (PairVariant::from_byte).
  // 0x82, 0xC0: secure QPs (integrity; encrypt), whose captured packets replay
  // and mutate into refusals.
  static constexpr uint8_t kVariants[] = {0x02, 0x00, 0x05, 0x1A, 0x24, 0x82, 0xC0};
  for (const uint8_t variant : kVariants) {
    char tag[8];
    std::snprintf(tag, sizeof tag, "v%02x", variant);
    const std::string v = tag;
    // The transfer on its own.
    write("endpoint", v + "_clean", Bytes{variant, op(RecordOp::advance_long), 4, op(RecordOp::advance_long), 40});
    // What the pair sends in its first 10 us (the last kCaptured packets each way).
    EndpointPair pair(mrc::fuzz::PairVariant::from_byte(variant));
    pair.advance(mrc::Duration::us(10));
    const Bytes lead{variant, op(RecordOp::advance), 24, op(RecordOp::advance), 24};  // 10 us
    // Replays of the latest packet each way, then a mutated one each way.
    Bytes replay = lead;
    for (uint8_t to : {uint8_t{0}, flag::kToRequester}) {
      const Bytes rec{op(RecordOp::mutate), to, 0, 0};
      replay.insert(replay.end(), rec.begin(), rec.end());
    }
    replay.insert(replay.end(), {op(RecordOp::advance_long), 20});
    write("endpoint", v + "_replay", replay);
    Bytes mutated = lead;
    mutated.insert(mutated.end(), {op(RecordOp::mutate), 0, 1, 2, 0x04, 0x01, 0x90, 0x00});
    mutated.insert(mutated.end(), {op(RecordOp::mutate), flag::kToRequester, 0, 1, 0x0C, 0x80});
    mutated.insert(mutated.end(), {op(RecordOp::advance_long), 20});
    write("endpoint", v + "_mutated", mutated);
    auto raw_seed = [&](const std::string& name, uint8_t flags, std::span<const uint8_t> pkt) {
      Bytes raw = lead;
      const size_t n = std::min<size_t>(pkt.size(), 255);  // an inject record carries at most 255 bytes
      raw.insert(raw.end(), {op(RecordOp::inject), flags, static_cast<uint8_t>(n)});
      raw.insert(raw.end(), pkt.begin(), pkt.begin() + static_cast<long>(n));
      raw.insert(raw.end(), {op(RecordOp::advance_long), 20});
      write("endpoint", v + "_raw_" + name, raw);
    };
    // Every kind of packet the transfer sent, as raw bytes, to its receiver.
    bool seen[2][256] = {};
    for (const int to : {EndpointPair::kResponder, EndpointPair::kRequester}) {
      for (const EndpointPair::Captured& c : pair.captured(1 - to)) {
        if (c.bytes.empty() || seen[to][c.bytes[0]]) continue;
        seen[to][c.bytes[0]] = true;
        const bool to_req = to == EndpointPair::kRequester;
        raw_seed(std::string(to_req ? "to_req_" : "to_rsp_") + lower(opcode_info(c.bytes[0]).name),
                 static_cast<uint8_t>((to_req ? flag::kToRequester : 0) | (c.port ? flag::kPort1 : 0)), c.bytes);
      }
    }
    // Control packets the transfer does not send on its own: port-status
    // updates (all ports up, one down) and an EV probe to each side, a
    // retriable NACK for the first PSN to the requester.
    for (const uint32_t mask : {3u, 2u}) {
      Headers h;
      h.bth.opcode = static_cast<uint8_t>(Opcode::endpoint_request);
      h.bth.dest_qp = 2;
      h.bth.psn = 7;
      h.erth.op = static_cast<uint8_t>(EpWireOp::port_status_update);
      h.erth.port_status_mask = mask;
      raw_seed("to_req_port_status_" + std::to_string(mask), flag::kToRequester, encode_chain(h));
      raw_seed("to_rsp_port_status_" + std::to_string(mask), 0, encode_chain(h));
      if (mask == 3) {
        h.erth.op = static_cast<uint8_t>(EpWireOp::ev_probe);
        raw_seed("to_rsp_ev_probe", flag::kPort1, encode_chain(h));
      }
    }
    {
      const mrc::fuzz::PairVariant pv = mrc::fuzz::PairVariant::from_byte(variant);
      Headers h;
      h.bth.opcode = static_cast<uint8_t>(Opcode::nack);
      h.bth.dest_qp = pair.qpn(EndpointPair::kRequester);
      h.neth.reason = static_cast<uint8_t>(NackCode::trimmed);
      h.neth.nack_psn = pv.first_psn;
      raw_seed("to_req_nack_trimmed", flag::kToRequester, encode_chain(h));
    }
    // Losses and reordering, more work and receives.
    write("endpoint", v + "_loss",
          Bytes{variant, op(RecordOp::advance), 10, op(RecordOp::drop), 0, op(RecordOp::drop), 3,
                op(RecordOp::delay), 1, 40, op(RecordOp::post), 0x20, 0x00, 0x81, op(RecordOp::post_recv), 3,
                op(RecordOp::advance_long), 30, op(RecordOp::advance_long), 200});
    files += 5;
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  int files = 0;
  for (unsigned op = 0; op < 256; ++op) {
    const OpcodeInfo& info = opcode_info(static_cast<uint8_t>(op));
    if (!info.valid) continue;
    const std::string name = lower(info.name);
    for (bool ts : {false, true}) {
      if ((!info.data || !info.meth) && ts) continue;  // BTH.ts selects TSETH on MRC data only
      const Headers h = base(static_cast<Opcode>(op), ts);
      const Bytes chain = encode_chain(h);
      const std::string n = name + (ts ? "_ts" : "");
      write("decode_bth", n, Bytes(chain.begin(), chain.begin() + Bth::kSize));
      write_ext(h, chain, n);
      ++files;
      if (!info.data) {
        write("parse_packet", n, chain);
        continue;
      }
      // Data: no payload, a small payload, and a payload with pad bytes.
      write("parse_packet", n + "_empty", chain);
      Bytes pkt = chain;
      for (int i = 0; i < 64; ++i) pkt.push_back(static_cast<uint8_t>(i));
      write("parse_packet", n + "_64", pkt);
      Headers padded = h;
      padded.bth.pad_count = 3;
      Bytes ppkt = encode_chain(padded);
      for (int i = 0; i < 13 + 3; ++i) ppkt.push_back(static_cast<uint8_t>(0xA0 + i));
      write("parse_packet", n + "_pad3", ppkt);
    }
  }
  // Near misses that exercise the error paths: a reserved QPN, trailing bytes
  // after a control header, a payload beyond the DMA length.
  {
    Headers h = base(Opcode::write_only, false);
    h.bth.dest_qp = 2;
    write("parse_packet", "err_reserved_qpn", encode_chain(h));
    Bytes sack = encode_chain(base(Opcode::sack, false));
    sack.push_back(0);
    write("parse_packet", "err_trailing", sack);
    h = base(Opcode::write_only, false);
    h.reth.dma_length = 1;
    Bytes over = encode_chain(h);
    over.push_back(1);
    over.push_back(2);
    write("parse_packet", "err_over_dma", over);
  }
  write_frames();
  const int endpoint_files = write_endpoint_seeds();
  std::printf("wrote seeds for %d header chains, framed packets and %d+ endpoint record streams under %s\n", files,
              endpoint_files, argv[1]);
  return 0;
}
