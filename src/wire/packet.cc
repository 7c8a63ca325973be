// SPDX-License-Identifier: BSD-2-Clause
#include "wire/packet.hpp"

#include <array>

namespace mrc::wire {
namespace {

constexpr std::array<OpcodeInfo, 256> make_table() {
  std::array<OpcodeInfo, 256> t{};
  auto data = [&t](Opcode op, bool first, bool last, bool imm, std::string_view name) {
    OpcodeInfo i{true, true, first, last, imm, ExtHeader::none, name};
    i.meth = i.reth = true;
    t[static_cast<uint8_t>(op)] = i;
  };
  auto ctrl = [&t](Opcode op, ExtHeader ext, std::string_view name) {
    t[static_cast<uint8_t>(op)] = OpcodeInfo{true, false, false, false, false, ext, name};
  };
  // IBTA RC: RETH only where the message starts (IBTA 9.3.3).
  auto rc_data = [&t](Opcode op, bool first, bool last, bool imm, std::string_view name) {
    OpcodeInfo i{true, true, first, last, imm, ExtHeader::none, name};
    i.rc = true;
    i.reth = first;
    t[static_cast<uint8_t>(op)] = i;
  };
  auto rc_ctrl = [&t](Opcode op, ExtHeader ext, std::string_view name) {
    OpcodeInfo i{true, false, false, false, false, ext, name};
    i.rc = true;
    t[static_cast<uint8_t>(op)] = i;
  };
  data(Opcode::write_first, true, false, false, "WRITE_FIRST");
  data(Opcode::write_middle, false, false, false, "WRITE_MIDDLE");
  data(Opcode::write_last, false, true, false, "WRITE_LAST");
  data(Opcode::write_last_imm, false, true, true, "WRITE_LAST_WITH_IMM");
  data(Opcode::write_only, true, true, false, "WRITE_ONLY");
  data(Opcode::write_only_imm, true, true, true, "WRITE_ONLY_WITH_IMM");
  ctrl(Opcode::ack, ExtHeader::aeth, "ACKNOWLEDGE");
  ctrl(Opcode::endpoint_request, ExtHeader::erth, "ENDPOINT_REQUEST");
  ctrl(Opcode::endpoint_response, ExtHeader::eeth, "ENDPOINT_RESPONSE");
  ctrl(Opcode::sack, ExtHeader::seth, "RELIABILITY_SACK");
  ctrl(Opcode::nack, ExtHeader::neth, "RELIABILITY_NACK");
  ctrl(Opcode::probe, ExtHeader::peth, "RELIABILITY_PROBE");
  rc_data(Opcode::rc_write_first, true, false, false, "RC_RDMA_WRITE_FIRST");
  rc_data(Opcode::rc_write_middle, false, false, false, "RC_RDMA_WRITE_MIDDLE");
  rc_data(Opcode::rc_write_last, false, true, false, "RC_RDMA_WRITE_LAST");
  rc_data(Opcode::rc_write_last_imm, false, true, true, "RC_RDMA_WRITE_LAST_WITH_IMM");
  rc_data(Opcode::rc_write_only, true, true, false, "RC_RDMA_WRITE_ONLY");
  rc_data(Opcode::rc_write_only_imm, true, true, true, "RC_RDMA_WRITE_ONLY_WITH_IMM");
  rc_ctrl(Opcode::rc_ack, ExtHeader::aeth, "RC_ACKNOWLEDGE");
  rc_ctrl(Opcode::cnp, ExtHeader::cnp, "CNP");
  return t;
}

constexpr std::array<OpcodeInfo, 256> kTable = make_table();

constexpr size_t ext_size(ExtHeader e) {
  switch (e) {
    case ExtHeader::none: return 0;
    case ExtHeader::aeth: return Aeth::kSize;
    case ExtHeader::seth: return Seth::kSize + CcState::kSize;
    case ExtHeader::neth: return Neth::kSize;
    case ExtHeader::peth: return Peth::kSize;
    case ExtHeader::erth: return Erth::kSize;
    case ExtHeader::eeth: return Eeth::kSize;
    case ExtHeader::cnp: return Cnp::kSize;
  }
  return 0;
}

}  // namespace

const OpcodeInfo& opcode_info(uint8_t opcode) { return kTable[opcode]; }

size_t header_size(const Headers& h) {
  const OpcodeInfo& info = opcode_info(h.bth.opcode);
  if (!info.valid) return 0;
  size_t n = Bth::kSize + (h.bth.sec ? Seceth::kSize : 0);
  if (info.data) {
    if (info.meth) n += Meth::kSize + (h.bth.ts ? Tseth::kSize : 0);
    n += (info.reth ? Reth::kSize : 0) + (info.imm ? ImmDt::kSize : 0);
  } else {
    n += ext_size(info.ext);
  }
  return n;
}

Result<size_t> encode(const Headers& h, std::span<uint8_t> out) {
  const OpcodeInfo& info = opcode_info(h.bth.opcode);
  if (!info.valid) return Errc::unknown_opcode;
  const size_t need = header_size(h);
  if (out.size() < need) return Errc::too_big;
  uint8_t* p = out.data();
  encode(h.bth, p);
  p += Bth::kSize;
  if (h.bth.sec) {
    encode(h.sec, p);
    p += Seceth::kSize;
  }
  if (info.data) {
    if (info.meth) {
      encode(h.meth, p);
      p += Meth::kSize;
      if (h.bth.ts) {
        encode(h.tseth, p);
        p += Tseth::kSize;
      }
    }
    if (info.reth) {
      encode(h.reth, p);
      p += Reth::kSize;
    }
    if (info.imm) {
      encode(h.imm, p);
      p += ImmDt::kSize;
    }
    return need;
  }
  switch (info.ext) {
    case ExtHeader::aeth: encode(h.aeth, p); break;
    case ExtHeader::seth:
      encode(h.seth, p);
      encode(h.cc, p + Seth::kSize);
      break;
    case ExtHeader::neth: encode(h.neth, p); break;
    case ExtHeader::peth: encode(h.peth, p); break;
    case ExtHeader::erth: encode(h.erth, p); break;
    case ExtHeader::eeth: encode(h.eeth, p); break;
    case ExtHeader::cnp: encode(h.cnp, p); break;
    case ExtHeader::none: break;
  }
  return need;
}

namespace {
// Decodes H at in[off] and advances off; false if it does not fit.
template <class H>
bool take(std::span<const uint8_t> in, size_t& off, H& out) {
  if (in.size() - off < H::kSize) return false;
  H::fields(detail::Reader{in.data() + off}, out);
  off += H::kSize;
  return true;
}
}  // namespace

Result<Parsed> parse(std::span<const uint8_t> in) {
  Parsed p;
  if (Status s = parse_into(in, p); !s) return s.error();
  return p;
}

Status parse_into(std::span<const uint8_t> in, Parsed& p) {
  size_t off = 0;
  p.payload_len = 0;
  if (!take(in, off, p.h.bth)) return Errc::truncated;
  const OpcodeInfo& info = opcode_info(p.h.bth.opcode);
  if (!info.valid) return Errc::unknown_opcode;
  if (p.h.bth.tver != 0) return Errc::malformed;
  if (p.h.bth.sec && !take(in, off, p.h.sec)) return Errc::truncated;
  if (info.data) {
    if (p.h.bth.dest_qp <= 2) return Errc::malformed;  // reserved QPNs never take data
    if (info.meth) {
      if (!take(in, off, p.h.meth)) return Errc::truncated;
      if (p.h.bth.ts && !take(in, off, p.h.tseth)) return Errc::truncated;
    }
    if (info.reth && !take(in, off, p.h.reth)) return Errc::truncated;
    if (info.imm && !take(in, off, p.h.imm)) return Errc::truncated;
    const size_t rest = in.size() - off;
    if (rest < p.h.bth.pad_count) return Errc::length_mismatch;
    p.payload_len = rest - p.h.bth.pad_count;
    if (info.reth && p.payload_len > p.h.reth.dma_length) return Errc::length_mismatch;
  } else {
    bool ok = true;
    switch (info.ext) {
      case ExtHeader::aeth: ok = take(in, off, p.h.aeth); break;
      case ExtHeader::seth: ok = take(in, off, p.h.seth) && take(in, off, p.h.cc); break;
      case ExtHeader::neth: ok = take(in, off, p.h.neth); break;
      case ExtHeader::peth: ok = take(in, off, p.h.peth); break;
      case ExtHeader::erth: ok = take(in, off, p.h.erth); break;
      case ExtHeader::eeth: ok = take(in, off, p.h.eeth); break;
      case ExtHeader::cnp: ok = take(in, off, p.h.cnp); break;
      case ExtHeader::none: break;
    }
    if (!ok) return Errc::truncated;
    if (off != in.size()) return Errc::length_mismatch;
  }
  p.header_len = off;
  return {};
}

}  // namespace mrc::wire

namespace mrc::wire {
// write_opcode() relies on both WRITE families keeping the IBTA order.
static_assert(write_opcode(true, false, false, false) == Opcode::write_first);
static_assert(write_opcode(false, false, false, false) == Opcode::write_middle);
static_assert(write_opcode(false, true, false, false) == Opcode::write_last);
static_assert(write_opcode(false, true, true, false) == Opcode::write_last_imm);
static_assert(write_opcode(true, true, false, false) == Opcode::write_only);
static_assert(write_opcode(true, true, true, false) == Opcode::write_only_imm);
static_assert(write_opcode(true, false, false, true) == Opcode::rc_write_first);
static_assert(write_opcode(false, false, false, true) == Opcode::rc_write_middle);
static_assert(write_opcode(false, true, true, true) == Opcode::rc_write_last_imm);
static_assert(write_opcode(true, true, true, true) == Opcode::rc_write_only_imm);
}  // namespace mrc::wire
