// SPDX-License-Identifier: BSD-2-Clause
// The out-of-band exchange's messages between the two sides of a test:
// their encoding, and the parameters the server adopts from a client.

#include "perf/perf_common.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mrc::perf {

// ------------------------------------------------------------------ encoding

std::string_view msg_type_name(MsgType t) {
  switch (t) {
    case MsgType::params: return "Params";
    case MsgType::conn_info: return "ConnInfo";
    case MsgType::size_begin: return "SizeBegin";
    case MsgType::ready: return "Ready";
    case MsgType::size_end: return "SizeEnd";
    case MsgType::size_result: return "SizeResult";
    case MsgType::done: return "Done";
    case MsgType::error: return "Error";
  }
  return "unknown";
}

namespace {

class Writer {
 public:
  void u8(uint8_t v) { b_.push_back(v); }
  void u16(uint16_t v) { be(v, 2); }
  void u32(uint32_t v) { be(v, 4); }
  void u64(uint64_t v) { be(v, 8); }
  void f64(double v) {
    uint64_t bits = 0;
    static_assert(sizeof bits == sizeof v);
    std::memcpy(&bits, &v, sizeof bits);
    u64(bits);
  }
  void bytes(std::span<const uint8_t> s) { b_.insert(b_.end(), s.begin(), s.end()); }
  std::vector<uint8_t> take() { return std::move(b_); }

 private:
  void be(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> b_;
};

/// Bounds-checked big-endian reader: a short read sets failed() and yields 0.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> s) : s_(s) {}
  uint8_t u8() { return static_cast<uint8_t>(be(1)); }
  uint16_t u16() { return static_cast<uint16_t>(be(2)); }
  uint32_t u32() { return static_cast<uint32_t>(be(4)); }
  uint64_t u64() { return be(8); }
  double f64() {
    const uint64_t bits = u64();
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  void bytes(uint8_t* dst, size_t n) {
    if (s_.size() - pos_ < n) {
      failed_ = true;
      return;
    }
    std::memcpy(dst, s_.data() + pos_, n);
    pos_ += n;
  }
  bool failed() const { return failed_; }
  size_t remaining() const { return s_.size() - pos_; }
  /// Why the payload does not have exactly the expected length, or "".
  std::string length_error(std::string_view what) const {
    if (failed_) return fmt::format("{}: truncated ({} bytes)", what, s_.size());
    if (remaining() != 0) return fmt::format("{}: {} unexpected trailing bytes", what, remaining());
    return {};
  }

 private:
  uint64_t be(size_t n) {
    if (s_.size() - pos_ < n) {
      failed_ = true;
      pos_ = s_.size();
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | s_[pos_ + i];
    pos_ += n;
    return v;
  }
  std::span<const uint8_t> s_;
  size_t pos_ = 0;
  bool failed_ = false;
};

constexpr uint32_t kMaxTxDepth = 16384;
constexpr uint32_t kMaxCqMod = 1024;
constexpr uint32_t kMaxInline = 65536;
constexpr uint64_t kMaxIters = 1000000000;
constexpr uint32_t kMaxDuration = 86400;
constexpr size_t kQpInfoBytes = 48;
constexpr size_t kMaxSizeEndValues = 16;

}  // namespace

std::vector<uint8_t> encode_header(MsgType type, uint32_t length) {
  Writer w;
  w.bytes(kMagic);
  w.u8(kProtocolVersion);
  w.u8(static_cast<uint8_t>(type));
  w.u16(0);
  w.u32(length);
  return w.take();
}

Parsed<Header> decode_header(std::span<const uint8_t> bytes) {
  using P = Parsed<Header>;
  if (bytes.size() < kHeaderBytes) return P::fail(fmt::format("message header truncated ({} bytes)", bytes.size()));
  if (!std::equal(kMagic.begin(), kMagic.end(), bytes.begin()))
    return P::fail("not an mrc_write_bw/mrc_write_lat peer (bad magic): is something else listening on this port?");
  Reader r(bytes.subspan(4, kHeaderBytes - 4));
  const uint8_t version = r.u8();
  const uint8_t type = r.u8();
  const uint16_t reserved = r.u16();
  const uint32_t length = r.u32();
  if (version != kProtocolVersion)
    return P::fail(fmt::format("peer speaks exchange version {}, this tool {}: use the same OpenMRC release",
                               version, kProtocolVersion));
  if (type < static_cast<uint8_t>(MsgType::params) || type > static_cast<uint8_t>(MsgType::error))
    return P::fail(fmt::format("unknown message type {}", type));
  if (reserved != 0) return P::fail("reserved header bits set");
  if (length > kMaxPayloadBytes) return P::fail(fmt::format("message of {} bytes exceeds the limit", length));
  return Parsed<Header>{Header{static_cast<MsgType>(type), length}, {}};
}

std::vector<uint8_t> encode(const Params& p) {
  Writer w;
  w.u8(static_cast<uint8_t>(p.tool));
  w.u8(static_cast<uint8_t>(p.verify));
  w.u8(p.all ? 1 : 0);
  w.u8(static_cast<uint8_t>(p.transport));  // was reserved (0 = mrc)
  w.u32(p.num_qps);
  w.u32(p.mtu);
  w.u32(p.tx_depth);
  w.u32(p.cq_mod);
  w.u32(p.inline_size);
  w.u64(p.iters);
  w.u32(p.duration_s);
  w.u64(p.size);
  w.u8(static_cast<uint8_t>(p.secure));
  return w.take();
}

Parsed<Params> decode_params(std::span<const uint8_t> payload) {
  using P = Parsed<Params>;
  Reader r(payload);
  Params p;
  const uint8_t tool = r.u8();
  const uint8_t verify = r.u8();
  const uint8_t all = r.u8();
  const uint8_t transport = r.u8();
  p.num_qps = r.u32();
  p.mtu = r.u32();
  p.tx_depth = r.u32();
  p.cq_mod = r.u32();
  p.inline_size = r.u32();
  p.iters = r.u64();
  p.duration_s = r.u32();
  p.size = r.u64();
  const uint8_t secure = r.u8();
  if (auto e = r.length_error("Params"); !e.empty()) return P::fail(e);
  if (secure > static_cast<uint8_t>(Secure::encrypt)) return P::fail(fmt::format("Params: unknown secure mode {}", secure));
  p.secure = static_cast<Secure>(secure);
  if (tool != static_cast<uint8_t>(Tool::write_bw) && tool != static_cast<uint8_t>(Tool::write_lat))
    return P::fail(fmt::format("Params: unknown test {}", tool));
  if (verify > static_cast<uint8_t>(VerifyMode::automatic)) return P::fail("Params: bad verify mode");
  if (all > 1) return P::fail("Params: bad flags");
  if (transport > static_cast<uint8_t>(Transport::roce)) return P::fail(fmt::format("Params: unknown transport {}", transport));
  p.transport = static_cast<Transport>(transport);
  p.tool = static_cast<Tool>(tool);
  p.verify = static_cast<VerifyMode>(verify);
  p.all = all == 1;
  if (p.num_qps < 1 || p.num_qps > kMaxQps) return P::fail(fmt::format("Params: {} QPs out of range", p.num_qps));
  if (mtu_to_ibv(p.mtu) == 0) return P::fail(fmt::format("Params: bad MTU {}", p.mtu));
  if (p.tx_depth < 1 || p.tx_depth > kMaxTxDepth) return P::fail("Params: tx depth out of range");
  if (p.cq_mod < 1 || p.cq_mod > kMaxCqMod || p.cq_mod > p.tx_depth) return P::fail("Params: cq moderation out of range");
  if (p.inline_size > kMaxInline) return P::fail("Params: inline size out of range");
  if (p.iters < 1 || p.iters > kMaxIters) return P::fail("Params: iterations out of range");
  if (p.duration_s > kMaxDuration) return P::fail("Params: duration out of range");
  if (p.size < 1 || p.size > kMaxMessageBytes) return P::fail("Params: message size out of range");
  return P{p, {}};
}

std::vector<uint8_t> encode(const ConnInfo& c) {
  Writer w;
  w.u16(c.udp_port);
  w.u16(static_cast<uint16_t>(c.plane_gids.size()));
  w.u32(static_cast<uint32_t>(c.qps.size()));
  for (const auto& g : c.plane_gids) w.bytes(g);
  for (const auto& q : c.qps) {
    w.u32(q.qpn);
    w.u32(q.psn);
    w.u32(q.rkey);
    w.u64(q.addr);
    w.u64(q.size);
    w.bytes(q.key);
    w.u32(q.salt);
  }
  return w.take();
}

Parsed<ConnInfo> decode_conn_info(std::span<const uint8_t> payload) {
  using P = Parsed<ConnInfo>;
  Reader r(payload);
  ConnInfo c;
  c.udp_port = r.u16();
  const uint16_t planes = r.u16();
  const uint32_t qps = r.u32();
  if (r.failed()) return P::fail(fmt::format("ConnInfo: truncated ({} bytes)", payload.size()));
  if (c.udp_port == 0) return P::fail("ConnInfo: UDP port 0");
  if (planes < 1 || planes > kMaxPlanes) return P::fail(fmt::format("ConnInfo: {} planes out of range", planes));
  if (qps < 1 || qps > kMaxQps) return P::fail(fmt::format("ConnInfo: {} QPs out of range", qps));
  const size_t want = 8 + size_t{planes} * 16 + size_t{qps} * kQpInfoBytes;
  if (payload.size() != want)
    return P::fail(fmt::format("ConnInfo: {} bytes for {} planes and {} QPs, expected {}", payload.size(), planes,
                               qps, want));
  c.plane_gids.resize(planes);
  for (auto& g : c.plane_gids) r.bytes(g.data(), g.size());
  c.qps.resize(qps);
  for (auto& q : c.qps) {
    q.qpn = r.u32();
    q.psn = r.u32();
    q.rkey = r.u32();
    q.addr = r.u64();
    q.size = r.u64();
    r.bytes(q.key.data(), q.key.size());
    q.salt = r.u32();
    if (q.qpn > 0xFFFFFF || q.psn > 0xFFFFFF) return P::fail("ConnInfo: QPN or PSN wider than 24 bits");
    if (q.size == 0 || q.addr + q.size < q.addr) return P::fail("ConnInfo: empty or wrapping buffer");
  }
  if (auto e = r.length_error("ConnInfo"); !e.empty()) return P::fail(e);
  return P{std::move(c), {}};
}

std::vector<uint8_t> encode(const SizeBegin& s) {
  Writer w;
  w.u64(s.size);
  w.u32(s.salt);
  w.u8(s.verify ? 1 : 0);
  return w.take();
}

Parsed<SizeBegin> decode_size_begin(std::span<const uint8_t> payload) {
  using P = Parsed<SizeBegin>;
  Reader r(payload);
  SizeBegin s;
  s.size = r.u64();
  s.salt = r.u32();
  const uint8_t verify = r.u8();
  if (auto e = r.length_error("SizeBegin"); !e.empty()) return P::fail(e);
  if (s.size < 1 || s.size > kMaxMessageBytes) return P::fail("SizeBegin: message size out of range");
  if (verify > 1) return P::fail("SizeBegin: bad verify flag");
  s.verify = verify == 1;
  return P{s, {}};
}

std::vector<uint8_t> encode(const SizeEnd& s) {
  Writer w;
  w.u64(s.size);
  w.u64(s.iters);
  w.u8(static_cast<uint8_t>(s.values.size()));
  for (double v : s.values) w.f64(v);
  return w.take();
}

Parsed<SizeEnd> decode_size_end(std::span<const uint8_t> payload) {
  using P = Parsed<SizeEnd>;
  Reader r(payload);
  SizeEnd s;
  s.size = r.u64();
  s.iters = r.u64();
  const uint8_t n = r.u8();
  if (r.failed()) return P::fail(fmt::format("SizeEnd: truncated ({} bytes)", payload.size()));
  if (n > kMaxSizeEndValues) return P::fail("SizeEnd: too many values");
  for (uint8_t i = 0; i < n; ++i) {
    const double v = r.f64();
    if (!std::isfinite(v) || v < 0) return P::fail("SizeEnd: value not a finite non-negative number");
    s.values.push_back(v);
  }
  if (auto e = r.length_error("SizeEnd"); !e.empty()) return P::fail(e);
  if (s.size < 1 || s.size > kMaxMessageBytes) return P::fail("SizeEnd: message size out of range");
  return P{std::move(s), {}};
}

std::vector<uint8_t> encode(const SizeResult& res) {
  Writer w;
  w.u8(static_cast<uint8_t>(res.status));
  w.u32(res.qp);
  w.u64(res.offset);
  return w.take();
}

Parsed<SizeResult> decode_size_result(std::span<const uint8_t> payload) {
  using P = Parsed<SizeResult>;
  Reader r(payload);
  SizeResult res;
  const uint8_t status = r.u8();
  res.qp = r.u32();
  res.offset = r.u64();
  if (auto e = r.length_error("SizeResult"); !e.empty()) return P::fail(e);
  if (status > SizeResult::skipped) return P::fail(fmt::format("SizeResult: unknown status {}", status));
  res.status = static_cast<SizeResult::Status>(status);
  return P{res, {}};
}

std::vector<uint8_t> encode_error(std::string_view text) {
  const auto n = std::min<size_t>(text.size(), 1000);
  return {text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n)};
}

std::string decode_error(std::span<const uint8_t> payload) {
  std::string s;
  for (size_t i = 0; i < payload.size() && i < 1000; ++i) {
    const auto c = static_cast<char>(payload[i]);
    s.push_back(payload[i] >= 0x20 && payload[i] < 0x7f ? c : '?');
  }
  return s;
}

Params params_from(const Options& o) {
  Params p;
  p.tool = o.tool;
  p.verify = o.verify;
  p.all = o.all;
  p.num_qps = o.num_qps;
  p.mtu = o.mtu;
  p.tx_depth = o.tx_depth;
  p.cq_mod = o.cq_mod;
  p.inline_size = o.inline_size;
  p.iters = o.iters;
  p.duration_s = o.duration_s;
  p.size = o.size;
  p.transport = o.transport;
  p.secure = o.secure;
  return p;
}

std::string check_compatible(const Options& server, const Params& client) {
  if (client.tool != server.tool)
    return fmt::format("the client runs {}, this server {}: run the same test on both sides",
                       tool_name(client.tool), tool_name(server.tool));
  auto given = [&](std::string_view flag) {
    return std::find(server.explicit_shape_flags.begin(), server.explicit_shape_flags.end(), flag) !=
           server.explicit_shape_flags.end();
  };
  auto differ = [](std::string_view flag, auto mine, auto theirs) -> std::string {
    return fmt::format("the server was started with --{} {} but the client asks for {}: give both sides the "
                       "same value (or none to the server)",
                       flag, mine, theirs);
  };
  if (given("size") && (client.all || client.size != server.size))
    return client.all ? "the server was started with --size but the client runs --all" : differ("size", server.size, client.size);
  if (given("all") && !client.all) return "the server was started with --all but the client runs one size";
  if (given("iters") && (client.duration_s != 0 || client.iters != server.iters))
    return differ("iters", server.iters, client.iters);
  if (given("duration") && client.duration_s != server.duration_s)
    return differ("duration", server.duration_s, client.duration_s);
  if (given("qp") && client.num_qps != server.num_qps) return differ("qp", server.num_qps, client.num_qps);
  if (given("tx-depth") && client.tx_depth != server.tx_depth)
    return differ("tx-depth", server.tx_depth, client.tx_depth);
  if (given("cq-mod") && client.cq_mod != server.cq_mod) return differ("cq-mod", server.cq_mod, client.cq_mod);
  if (given("mtu") && client.mtu != server.mtu) return differ("mtu", server.mtu, client.mtu);
  if (given("inline_size") && client.inline_size != server.inline_size)
    return differ("inline_size", server.inline_size, client.inline_size);
  if (given("transport") && client.transport != server.transport)
    return differ("transport", transport_name(server.transport), transport_name(client.transport));
  if (given("secure") && client.secure != server.secure)
    return differ("secure", secure_name(server.secure), secure_name(client.secure));
  if ((given("verify") || given("no-verify")) && client.verify != server.verify)
    return "the server's --verify/--no-verify differs from the client's: give both sides the same";
  return {};
}

std::string check_peer_request(const Params& client) {
  if (client.num_qps > kMaxPeerQps)
    return fmt::format("the client asks for {} QPs; a server accepts at most {} (--qp)", client.num_qps, kMaxPeerQps);
  const uint64_t largest = client.all ? kAllMaxBytes : client.size;
  const uint64_t memory = uint64_t{client.num_qps} * 2 * largest;
  if (memory > kMaxPeerMemoryBytes)
    return fmt::format("the client's buffers would take {} MiB ({} QPs x 2 x {} bytes); a server allocates at most {} "
                       "MiB for a client (--qp, --size)",
                       memory >> 20, client.num_qps, largest, kMaxPeerMemoryBytes >> 20);
  const uint64_t wrs = uint64_t{client.num_qps} * client.tx_depth;
  if (wrs > kMaxPeerWorkRequests)
    return fmt::format("the client asks for {} outstanding WRs ({} QPs x tx depth {}); a server accepts at most {} "
                       "(--qp, --tx-depth)",
                       wrs, client.num_qps, client.tx_depth, kMaxPeerWorkRequests);
  return {};
}

void adopt(Options& server, const Params& client) {
  server.verify = client.verify;
  server.all = client.all;
  server.num_qps = client.num_qps;
  server.mtu = client.mtu;
  server.tx_depth = client.tx_depth;
  server.cq_mod = client.cq_mod;
  server.inline_size = client.inline_size;
  server.iters = client.iters;
  server.duration_s = client.duration_s;
  server.size = client.size;
  server.transport = client.transport;
  server.secure = client.secure;
}

}  // namespace mrc::perf
