// Writes the seed corpus for the fuzz targets: valid encoded packets of every
// opcode (with and without TSETH, with payload and pad), a few near-misses,
// and the individual extension headers cut from them.
//
//   fuzz_gen_corpus <dir>   writes <dir>/<target>/<name> files
//
// The output is committed under fuzz/corpus/ (regenerate with the
// `fuzz_corpus` build target); scripts/run_fuzz.sh also regenerates it into
// its scratch directory so the seeds follow codec changes.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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
  std::printf("wrote seeds for %d header chains under %s\n", files, argv[1]);
  return 0;
}
