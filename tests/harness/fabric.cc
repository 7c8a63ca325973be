// SPDX-License-Identifier: BSD-2-Clause
#include "harness/fabric.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "wire/framing.hpp"
#include "wire/icrc.hpp"
#include "wire/packet.hpp"

namespace mrc::harness {

namespace {
[[noreturn]] void die(const char* what, Errc e) {
  std::fprintf(stderr, "harness: %s failed: %s\n", what, std::string(to_string(e)).c_str());
  std::abort();
}
// The frame format of every harness packet: STEV (the core's EVs are 32
// bits), IPv6, the reference's default split, UDP port 4791.
wire::FrameFormat frame_format() {
  wire::FrameFormat f;
  f.mode = wire::EvMode::stev;
  return f;
}
// fd00:0:0:<plane>::<host + 1>: one address per host port (plane).
wire::IpAddress port_address(int host, int plane) {
  wire::IpAddress a{};
  a[0] = 0xFD;
  a[6] = static_cast<uint8_t>(plane >> 8);
  a[7] = static_cast<uint8_t>(plane);
  a[14] = static_cast<uint8_t>((host + 1) >> 8);
  a[15] = static_cast<uint8_t>(host + 1);
  return a;
}
// Sets ECN CE (traffic class bits 1:0) in the packet's IPv6 header.
void mark_ce(Packet& p) {
  if (p.net_len >= wire::kIpv6HeaderBytes) p.net[1] = static_cast<uint8_t>(p.net[1] | 0x30);
}
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t checksum(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

PacketKind Packet::kind() const {
  if (bytes.empty()) return PacketKind::any;
  const auto op = static_cast<wire::Opcode>(bytes[0]);
  if (op == wire::Opcode::probe) return PacketKind::probe;
  return wire::opcode_info(bytes[0]).data ? PacketKind::data : PacketKind::control;
}

Fabric::Fabric(const FabricConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {
  if (cfg_.path_rate_bps == 0) cfg_.path_rate_bps = cfg_.port_rate_bps;
  for (uint32_t h = 0; h < cfg_.hosts; ++h) {
    core::EndpointConfig ec = cfg_.endpoint;
    ec.seed = mix(cfg_.seed * 1000003 + h);
    ec.ports.assign(cfg_.planes, core::PortConfig{cfg_.port_rate_bps});
    std::string why;
    auto ep = core::Endpoint::create(ec, &why);
    if (!ep) {
      std::fprintf(stderr, "harness: endpoint config rejected: %s\n", why.c_str());
      std::abort();
    }
    eps_.push_back(std::move(ep.value()));
    cqs_.push_back(eps_.back()->create_cq(core::Endpoint::kMaxCqe).value());
  }
  port_busy_.assign(cfg_.hosts, std::vector<Time>(cfg_.planes, Time::zero()));
  path_busy_.assign(size_t{cfg_.hosts} * cfg_.planes, std::vector<Time>(cfg_.paths_per_plane, Time::zero()));
  timer_at_.assign(cfg_.hosts, Time::never());
  timer_gen_.assign(cfg_.hosts, 0);
  held_.resize(cfg_.hosts);
}

Fabric::~Fabric() {
  while (!q_.empty()) {
    delete q_.top().pkt;
    q_.pop();
  }
}

Fabric::Buffer& Fabric::alloc(int host, size_t bytes) {
  auto b = std::make_unique<Buffer>();
  b->mem.assign(bytes, 0);
  auto mr = ep(host).reg_mr(b->addr(), bytes, core::access::kLocalWrite | core::access::kRemoteWrite);
  if (!mr) die("reg_mr", mr.error());
  b->mr = *mr;
  buffers_.push_back(std::move(b));
  return *buffers_.back();
}

QpPair Fabric::connect(int a, int b, const QpOptions& opt, int64_t fixed_psn) {
  using namespace core::qp_attr;
  core::Endpoint& ea = ep(a);
  core::Endpoint& eb = ep(b);
  QpPair pr;
  core::QpInit init = opt.init;
  init.send_cq = init.recv_cq = cq(a);
  auto qa = ea.create_qp(init);
  init.send_cq = init.recv_cq = cq(b);
  auto qb = eb.create_qp(init);
  if (!qa) die("create_qp", qa.error());
  if (!qb) die("create_qp", qb.error());
  pr.a = *qa;
  pr.b = *qb;
  const uint32_t psn_a = fixed_psn >= 0 ? static_cast<uint32_t>(fixed_psn) : ea.random_psn();
  const uint32_t psn_b = fixed_psn >= 0 ? static_cast<uint32_t>(fixed_psn) : eb.random_psn();
  auto bring_up = [&](core::Endpoint& e, uint32_t qpn, uint32_t peer_qpn, int peer_host, uint32_t my_psn,
                      uint32_t peer_psn) {
    core::QpAttr at = opt.attr;
    at.state = core::QpState::init;
    at.ev_profile_id = opt.ev_profile;
    at.cc_profile_id = opt.cc_profile;
    if (Status s = e.modify_qp(now_, qpn, at, kState | kEvProfileId | kCcProfileId); !s)
      die("modify_qp(INIT)", s.error());
    at.state = core::QpState::rtr;
    at.dest_qpn = peer_qpn;
    at.rq_psn = peer_psn;
    at.peer = static_cast<uint64_t>(peer_host);
    if (Status s = e.modify_qp(now_, qpn, at,
                               kState | kDestQpn | kRqPsn | kPeer | kPathMtu | kMaxWimmDest | kMprDest | kCap);
        !s)
      die("modify_qp(RTR)", s.error());
    at.state = core::QpState::rts;
    at.sq_psn = my_psn;
    if (Status s = e.modify_qp(now_, qpn, at, kState | kSqPsn | kMaxWimm | kMpr | kRetryCnt | kTimeout); !s)
      die("modify_qp(RTS)", s.error());
  };
  bring_up(ea, pr.a, pr.b, b, psn_a, psn_b);
  bring_up(eb, pr.b, pr.a, a, psn_b, psn_a);
  return pr;
}

Rule& Fabric::add_rule(const Rule& r) {
  rules_.push_back(std::make_unique<Rule>(r));
  rule_rng_.push_back(rng_.derive(rules_.size()));
  return *rules_.back();
}

Rule& Fabric::path_down(int plane, int path, Time from, Time until) {
  Rule r;
  r.match.plane = plane;
  r.match.path = path;
  r.match.from = from;
  r.match.until = until;
  r.action = Action::drop;
  return add_rule(r);
}

int Fabric::path_of(int src, int dst, uint32_t entropy) const {
  // ECMP: a hash of the flow's addresses and the EV. Sorted host pair so both
  // directions of an EV value take the same path index.
  const uint64_t lo = static_cast<uint64_t>(std::min(src, dst));
  const uint64_t hi = static_cast<uint64_t>(std::max(src, dst));
  return static_cast<int>(mix((lo << 40) ^ (hi << 20) ^ entropy) % cfg_.paths_per_plane);
}

void Fabric::push(Ev e) {
  e.seq = seq_++;
  q_.push(e);
}

void Fabric::kick(int host) {
  for (uint32_t p = 0; p < cfg_.planes; ++p) try_send(host, static_cast<int>(p));
  arm_timer(host);
}

void Fabric::arm_timer(int host) {
  const Time t = ep(host).next_timeout();
  if (t == timer_at_[static_cast<size_t>(host)]) return;
  timer_at_[static_cast<size_t>(host)] = t;
  ++timer_gen_[static_cast<size_t>(host)];
  if (!t.is_never())
    push(Ev{max(t, now_), 0, Ev::timer, host, 0, timer_gen_[static_cast<size_t>(host)], nullptr});
}

void Fabric::try_send(int host, int port) {
  Time& busy = port_busy_[static_cast<size_t>(host)][static_cast<size_t>(port)];
  if (busy > now_) return;
  uint8_t hdr[wire::kMaxHeaderBytes];
  for (int refused = 0;; ++refused) {
    if (refused == 16) {
      // The queue stays full for now: try again a microsecond later, as a
      // driver does when its socket becomes writable.
      busy = now_ + Duration::us(1);
      push(Ev{busy, 0, Ev::port_free, host, port, 0, nullptr});
      return;
    }
    auto tx = ep(host).poll_transmit(now_, 1u << port, std::span<uint8_t>(hdr, sizeof hdr));
    if (!tx) return;
    if (refuse_send && refuse_send(host, *tx, now_)) {
      ++stats_.refused;
      ep(host).on_transmit_refused(now_, *tx, std::span<const uint8_t>(hdr, tx->header_len));
      continue;  // never left: the port is still free
    }
    transmit(host, *tx, hdr);
    return;
  }
}

void Fabric::transmit(int host, const core::Transmit& tx, const uint8_t* hdr) {
  auto* p = new Packet;
  p->src = host;
  p->dst = static_cast<int>(tx.peer);
  p->plane = tx.port;
  p->entropy = tx.entropy;
  p->tc = tx.tc;
  p->trimmable = tx.trimmable;
  p->header_len = tx.header_len;
  p->payload_len = tx.payload_len;
  p->id = next_pkt_id_++;
  p->bytes.assign(hdr, hdr + tx.header_len);
  if (cfg_.carry_payload) {
    core::PayloadSegment segs[core::kMaxSge];
    const size_t n = core::payload_segments(tx, segs);
    for (size_t i = 0; i < n; ++i) p->bytes.insert(p->bytes.end(), segs[i].data, segs[i].data + segs[i].len);
  }
  // The NIC frames the packet and appends the ICRC over the IPv6 and UDP
  // headers and what it carries (header + payload bytes).
  wire::FrameFields ff;
  ff.src = port_address(p->src, p->plane);
  ff.dst = port_address(p->dst, p->plane);
  ff.ev = p->entropy;
  const auto frame = wire::build_frame(frame_format(), ff,
                                       std::span<const uint8_t>(p->bytes.data(), tx.header_len),
                                       std::span<const uint8_t>(p->bytes.data() + tx.header_len,
                                                                p->bytes.size() - tx.header_len),
                                       p->net);
  if (!frame) die("build_frame", frame.error());
  p->net_len = static_cast<uint8_t>(frame->header_len);
  uint8_t crc[wire::kIcrcBytes];
  wire::put_icrc(frame->icrc, crc);
  p->bytes.insert(p->bytes.end(), crc, crc + wire::kIcrcBytes);
  p->path = path_of(p->src, p->dst, p->entropy);
  ++stats_.sent;
  hash_packet(*p);
  if (on_transmit) on_transmit(*p, now_);
  // +8 UDP +40 IPv6 +4 ICRC on the wire.
  const uint64_t wire_bytes = uint64_t{tx.header_len} + tx.payload_len + 52;
  const Duration ser = Duration::serialization(wire_bytes, cfg_.port_rate_bps);
  Time& busy = port_busy_[static_cast<size_t>(host)][tx.port];
  busy = now_ + ser;
  push(Ev{busy, 0, Ev::port_free, host, tx.port, 0, nullptr});
  if (p->dst < 0 || p->dst >= static_cast<int>(cfg_.hosts)) {
    delete p;  // addressed to nobody
    return;
  }
  route(p, busy);
}

bool Fabric::apply_rules(Packet* p, Time at, Duration* extra) {
  for (size_t i = 0; i < rules_.size(); ++i) {
    Rule& r = *rules_[i];
    const Match& m = r.match;
    if (at < m.from || at >= m.until) continue;
    if (m.src >= 0 && m.src != p->src) continue;
    if (m.dst >= 0 && m.dst != p->dst) continue;
    if (m.plane >= 0 && m.plane != p->plane) continue;
    if (m.path >= 0 && m.path != p->path) continue;
    if (m.kind != PacketKind::any && m.kind != p->kind()) continue;
    if (m.opcode >= 0 && (p->bytes.empty() || p->bytes[0] != m.opcode)) continue;
    const uint64_t idx = r.matched++;
    bool hit = false;
    switch (r.select) {
      case Rule::Select::all: hit = true; break;
      case Rule::Select::nth: hit = idx + 1 == r.nth; break;
      case Rule::Select::bitmap: hit = idx < r.bitmap.size() && r.bitmap[idx]; break;
      case Rule::Select::random: hit = rule_rng_[i].chance(r.probability); break;
    }
    if (!hit) continue;
    ++r.applied;
    switch (r.action) {
      case Action::drop:
        ++stats_.dropped;
        return false;
      case Action::trim:
      case Action::trim_lasthop:
        if (p->kind() == PacketKind::data && p->trim == core::TrimMark::none) {
          p->trim = r.action == Action::trim ? core::TrimMark::trimmed : core::TrimMark::trimmed_lasthop;
          p->bytes.resize(p->header_len);
          p->payload_len = 0;
          ++stats_.trimmed;
        } else if (p->kind() != PacketKind::data) {
          ++stats_.dropped;
          return false;  // only data can be trimmed
        }
        break;
      case Action::ecn:
        p->ecn = true;
        mark_ce(*p);
        ++stats_.ecn_marked;
        break;
      case Action::duplicate: {
        auto* d = new Packet(*p);
        d->id = next_pkt_id_++;
        ++stats_.duplicated;
        push(Ev{at + Duration::ns(100), 0, Ev::deliver, d->dst, 0, 0, d});
        break;
      }
      case Action::corrupt:
        if (!p->bytes.empty()) {
          size_t pos = rule_rng_[i].below(p->bytes.size());
          // BTH byte 4 is the one packet byte the ICRC masks (reference
          // 3.2): a flip there is invisible by design, so flip its neighbour.
          if (pos == 4 && p->bytes.size() > 5) pos = 5;
          p->bytes[pos] ^= static_cast<uint8_t>(1u << rule_rng_[i].below(8));
          ++stats_.corrupted;
        }
        break;
      case Action::delay:
        *extra += r.extra_delay;
        break;
    }
  }
  return true;
}

void Fabric::route(Packet* p, Time at) {
  Duration extra;
  if (!apply_rules(p, at, &extra)) {
    delete p;
    return;
  }
  // The path: a FIFO of its own rate towards the destination.
  Time& busy = path_busy_[static_cast<size_t>(p->dst) * cfg_.planes + p->plane][static_cast<size_t>(p->path)];
  const Time start = max(busy, at);
  const uint64_t queued_bytes =
      static_cast<uint64_t>(static_cast<double>((start - at).count_ps()) * 1e-12 * static_cast<double>(cfg_.path_rate_bps) / 8.0);
  if (p->kind() == PacketKind::data && cfg_.queue_limit_bytes && queued_bytes > cfg_.queue_limit_bytes) {
    if (cfg_.trim_on_overflow && p->trimmable && p->trim == core::TrimMark::none) {
      p->trim = core::TrimMark::trimmed;
      p->bytes.resize(p->header_len);
      p->payload_len = 0;
      ++stats_.trimmed;
    } else {
      ++stats_.overflow_drops;
      delete p;
      return;
    }
  }
  if (cfg_.ecn_threshold_bytes && queued_bytes > cfg_.ecn_threshold_bytes && p->kind() == PacketKind::data) {
    p->ecn = true;
    mark_ce(*p);
    ++stats_.ecn_marked;
  }
  const Duration ser = Duration::serialization(uint64_t{p->header_len} + p->payload_len + 52, cfg_.path_rate_bps);
  busy = start + ser;
  const Duration delay = cfg_.path_delay + cfg_.path_delay_step * p->path + extra;
  push(Ev{busy + delay, 0, Ev::deliver, p->dst, 0, 0, p});
}

void Fabric::deliver(Packet* p) {
  // Receiving NIC: verify the ICRC (not on trimmed packets, whose payload a
  // switch removed) and drop corrupt packets before the transport sees them.
  if (p->trim == core::TrimMark::none) {
    const size_t n = p->bytes.size() - wire::kIcrcBytes;
    const auto want = wire::frame_icrc(std::span<const uint8_t>(p->net.data(), p->net_len),
                                       std::span<const uint8_t>(p->bytes.data(), n), {});
    if (!want || *want != wire::get_icrc(p->bytes.data() + n)) {
      ++stats_.icrc_drops;
      const int dst = p->dst;
      delete p;
      kick(dst);
      return;
    }
    p->bytes.resize(n);
  }
  ++stats_.delivered;
  core::RxMeta meta;
  meta.port = p->plane;
  meta.peer = static_cast<uint64_t>(p->src);
  meta.entropy = p->entropy;
  meta.ecn_ce = p->ecn;
  meta.trim = p->trim;
  const size_t carried = p->bytes.size();
  const size_t expected = size_t{p->header_len} + p->payload_len;
  meta.phantom_payload = carried < expected ? static_cast<uint32_t>(expected - carried) : 0;
  ep(p->dst).handle_datagram(now_, meta, std::span<const uint8_t>(p->bytes.data(), p->bytes.size()));
  const int dst = p->dst;
  delete p;
  kick(dst);
}

void Fabric::hash_packet(const Packet& p) {
  auto mixin = [this](uint64_t v) {
    for (int i = 0; i < 8; ++i) trace_hash_ = (trace_hash_ ^ ((v >> (8 * i)) & 0xFF)) * 1099511628211ull;
  };
  mixin(static_cast<uint64_t>(now_.ps()));
  mixin(static_cast<uint64_t>(p.src) << 32 | static_cast<uint64_t>(p.dst));
  mixin(uint64_t{p.plane} << 32 | p.entropy);
  // RETH carries real buffer addresses, which differ from process to process
  // (and run to run within one): hash the header with the VA masked.
  uint8_t hdr[wire::kMaxHeaderBytes];
  const size_t n = std::min<size_t>(p.header_len, sizeof hdr);
  std::memcpy(hdr, p.bytes.data(), n);
  const wire::OpcodeInfo& info = wire::opcode_info(n ? hdr[0] : 0);
  if (n >= wire::Bth::kSize && info.data && info.reth) {
    const bool ts = wire::decode<wire::Bth>(std::span<const uint8_t>(hdr, n)).value().ts;
    const size_t va = wire::Bth::kSize + (info.meth ? wire::Meth::kSize + (ts ? wire::Tseth::kSize : 0) : 0);
    if (va + 8 <= n) std::memset(hdr + va, 0, 8);
  }
  for (size_t i = 0; i < n; ++i) trace_hash_ = (trace_hash_ ^ hdr[i]) * 1099511628211ull;
}

bool Fabric::run_until(Time t) {
  while (!q_.empty()) {
    const Ev e = q_.top();
    if (e.t > t) {
      now_ = t;
      return true;
    }
    q_.pop();
    now_ = e.t;
    switch (e.kind) {
      case Ev::port_free:
        try_send(e.host, e.port);
        arm_timer(e.host);
        break;
      case Ev::deliver:
        deliver(e.pkt);
        break;
      case Ev::timer:
        if (e.gen != timer_gen_[static_cast<size_t>(e.host)]) break;
        timer_at_[static_cast<size_t>(e.host)] = Time::never();
        ep(e.host).handle_timeout(now_);
        kick(e.host);
        break;
    }
  }
  now_ = max(now_, t);
  return false;
}

bool Fabric::run_until(const std::function<bool()>& done, Time limit) {
  while (!done()) {
    if (q_.empty() || q_.top().t > limit) {
      now_ = max(now_, limit);
      return done();
    }
    run_until(q_.top().t);
  }
  return true;
}

std::vector<Event> Fabric::events(int host) {
  std::vector<Event> out = std::move(held_[static_cast<size_t>(host)]);
  held_[static_cast<size_t>(host)].clear();
  while (auto e = next_event(host)) out.push_back(std::move(*e));
  return out;
}

TransferResult write_and_wait(Fabric& f, const QpPair& qp, int a, int b, uint64_t bytes, Time limit,
                              uint64_t chunk, uint64_t pattern_seed) {
  TransferResult res;
  Fabric::Buffer& src = f.alloc(a, std::max<uint64_t>(bytes, 1));
  Fabric::Buffer& dst = f.alloc(b, std::max<uint64_t>(bytes, 1));
  Prng fill(pattern_seed);
  for (size_t i = 0; i + 8 <= src.mem.size(); i += 8) {
    const uint64_t v = fill.next_u64();
    std::memcpy(&src.mem[i], &v, 8);
  }
  for (size_t i = src.mem.size() & ~size_t{7}; i < src.mem.size(); ++i) src.mem[i] = static_cast<uint8_t>(i);
  const uint64_t step = chunk ? chunk : std::max<uint64_t>(bytes, 1);
  uint64_t posted = 0;
  size_t wrs = 0;
  for (uint64_t off = 0; off < bytes || (bytes == 0 && wrs == 0); off += step) {
    core::SendWr wr;
    wr.wr_id = wrs++;
    wr.local_addr = src.addr() + off;
    wr.lkey = src.mr.lkey;
    wr.length = static_cast<uint32_t>(std::min(step, bytes - off));
    wr.remote_addr = dst.addr() + off;
    wr.rkey = dst.mr.rkey;
    if (Status s = f.ep(a).post_send(f.now(), qp.a, wr); !s) die("post_send", s.error());
    posted += wr.length;
    if (bytes == 0) break;
  }
  const uint64_t before = f.ep(a).qp(qp.a)->stats().retransmissions;
  f.kick(a);
  size_t done = 0;
  bool failed = false;
  f.run_until(
      [&] {
        while (auto e = f.next_event(a)) {
          if (auto* w = std::get_if<core::WorkCompletion>(&*e)) {
            ++done;
            res.status = w->status;
            if (w->status != core::WcStatus::success) failed = true;
          } else {
            f.hold_event(a, std::move(*e));
          }
        }
        return done == wrs || failed;
      },
      limit);
  res.completed = done == wrs && !failed;
  res.finish = f.now();
  if (failed) res.completed = false;
  res.data_ok = bytes == 0 || std::memcmp(src.mem.data(), dst.mem.data(), bytes) == 0;
  if (const core::Qp* q = f.ep(a).qp(qp.a)) res.retransmissions = q->stats().retransmissions - before;
  return res;
}

}  // namespace mrc::harness
