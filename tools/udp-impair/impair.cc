// SPDX-License-Identifier: BSD-2-Clause
#include "udp-impair/impair.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "platform/clock.hpp"
#include "platform/epoll.hpp"
#include "platform/os_error.hpp"
#include "platform/udp_socket.hpp"
#include "util/prng.hpp"
#include "wire/framing.hpp"
#include "wire/icrc.hpp"

namespace mrc::udp_impair {

using platform::SockAddr;
using platform::UdpSocket;

// ------------------------------------------------------------------ parsing

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const auto p = s.find(sep);
    out.push_back(s.substr(0, p));
    if (p == std::string_view::npos) break;
    s = s.substr(p + 1);
  }
  return out;
}

bool parse_u64(std::string_view v, uint64_t& out) {
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return !v.empty() && ec == std::errc() && ptr == v.data() + v.size();
}

bool parse_prob(std::string_view v, double& out) {
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return !v.empty() && ec == std::errc() && ptr == v.data() + v.size() && out >= 0 && out <= 1;
}

std::string bad(std::string_view what, std::string_view key, std::string_view value, std::string_view why) {
  return std::string(what) + ": " + std::string(key) + "=" + std::string(value) + ": " + std::string(why);
}

}  // namespace

std::string Impairments::validate() const {
  auto prob = [](double p) { return p >= 0 && p <= 1; };
  if (!prob(drop_probability)) return "drop: not a probability in [0,1]";
  if (!prob(duplicate_probability)) return "dup: not a probability in [0,1]";
  if (!prob(corrupt_probability)) return "corrupt: not a probability in [0,1]";
  if (!prob(reorder_probability)) return "reorder: not a probability in [0,1]";
  if (reorder_probability > 0 && reorder_hold_datagrams == 0 && reorder_hold_time <= Duration())
    return "reorder: needs reorder_depth > 0 or reorder_us > 0";
  if (reorder_hold_time < Duration()) return "reorder_us: must be >= 0";
  return {};
}

LinkParse parse_link(std::string_view spec, const Impairments& defaults) {
  LinkParse r;
  LinkConfig l;
  l.impair = defaults;
  const std::string what = "link '" + std::string(spec) + "'";
  bool has_listen = false, has_to = false, has_from = false;
  for (std::string_view kv : split(spec, ',')) {
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) {
      r.error = what + ": '" + std::string(kv) + "' is not key=value";
      return r;
    }
    const auto key = kv.substr(0, eq), val = kv.substr(eq + 1);
    uint64_t u = 0;
    if (key == "listen" || key == "to" || key == "from") {
      auto a = SockAddr::parse(val);
      if (!a) { r.error = bad(what, key, val, "not a numeric IPv4/IPv6 address[:port]"); return r; }
      if (key == "listen") { l.listen = *a; has_listen = true; }
      if (key == "to") {
        if (a->port() == 0) { r.error = bad(what, key, val, "needs a port"); return r; }
        l.to = *a; has_to = true;
      }
      if (key == "from") { l.from = *a; l.from.set_port(0); has_from = true; }
    } else if (key == "name") {
      l.name = std::string(val);
    } else if (key == "drop") {
      if (!parse_prob(val, l.impair.drop_probability)) { r.error = bad(what, key, val, "not a probability in [0,1]"); return r; }
    } else if (key == "dup") {
      if (!parse_prob(val, l.impair.duplicate_probability)) { r.error = bad(what, key, val, "not a probability in [0,1]"); return r; }
    } else if (key == "corrupt") {
      if (!parse_prob(val, l.impair.corrupt_probability)) { r.error = bad(what, key, val, "not a probability in [0,1]"); return r; }
    } else if (key == "reorder") {
      if (!parse_prob(val, l.impair.reorder_probability)) { r.error = bad(what, key, val, "not a probability in [0,1]"); return r; }
    } else if (key == "fix_icrc") {
      if (val != "0" && val != "1") { r.error = bad(what, key, val, "must be 0 or 1"); return r; }
      l.fix_icrc = val == "1";
    } else if (key == "drop_nth") {
      if (!parse_u64(val, u)) { r.error = bad(what, key, val, "not a non-negative integer"); return r; }
      l.impair.drop_every_nth = u;
    } else if (key == "reorder_depth") {
      if (!parse_u64(val, u) || u > 1'000'000) { r.error = bad(what, key, val, "not an integer in [0,1000000]"); return r; }
      l.impair.reorder_hold_datagrams = static_cast<uint32_t>(u);
    } else if (key == "reorder_us") {
      if (!parse_u64(val, u) || u > 60'000'000) { r.error = bad(what, key, val, "not an integer in [0,60000000]"); return r; }
      l.impair.reorder_hold_time = Duration::us(static_cast<int64_t>(u));
    } else {
      r.error = what + ": unknown key '" + std::string(key) +
                "' (known: listen, to, from, name, drop, drop_nth, dup, corrupt, reorder, reorder_depth, reorder_us, fix_icrc)";
      return r;
    }
  }
  if (!has_listen || !has_to || !has_from) {
    r.error = what + ": listen=, to= and from= are required";
    return r;
  }
  if (l.listen.family() != l.to.family() || l.from.family() != l.to.family()) {
    r.error = what + ": listen, to and from must all be IPv4 or all IPv6";
    return r;
  }
  if (auto e = l.impair.validate(); !e.empty()) {
    r.error = what + ": " + e;
    return r;
  }
  r.link = std::move(l);
  return r;
}

BlackholeParse parse_blackhole(std::string_view spec) {
  BlackholeParse r;
  Blackhole b;
  const std::string what = "blackhole '" + std::string(spec) + "'";
  bool has_link = false;
  for (std::string_view kv : split(spec, ',')) {
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) { r.error = what + ": '" + std::string(kv) + "' is not key=value"; return r; }
    const auto key = kv.substr(0, eq), val = kv.substr(eq + 1);
    uint64_t u = 0;
    if (!parse_u64(val, u)) { r.error = bad(what, key, val, "not a non-negative integer"); return r; }
    if (key == "link") {
      b.link = u; has_link = true;
    } else if (key == "port") {
      if (u == 0 || u > 65535) { r.error = bad(what, key, val, "not a port in [1,65535]"); return r; }
      b.source_port = static_cast<uint16_t>(u);
    } else if (key == "after_n") {
      b.start_after_datagrams = u;
    } else if (key == "after_ms") {
      b.start_after = Duration::ms(static_cast<int64_t>(std::min<uint64_t>(u, 1ull << 40)));
    } else if (key == "until_ms") {
      b.end_after = Duration::ms(static_cast<int64_t>(std::min<uint64_t>(u, 1ull << 40)));
    } else {
      r.error = what + ": unknown key '" + std::string(key) + "' (known: link, port, after_n, after_ms, until_ms)";
      return r;
    }
  }
  if (!has_link) { r.error = what + ": link= is required"; return r; }
  r.blackhole = b;
  return r;
}

// ------------------------------------------------------------------ forwarder

namespace {

enum Counter : size_t {
  kReceived, kForwarded, kBytes, kDropRandom, kDropNth, kBlackholed, kCorrupted,
  kDuplicated, kReordered, kPortOverflow, kSendFailed, kSourcePorts, kIcrcRewritten, kCounterCount
};

struct Held {
  std::vector<std::byte> bytes;
  uint16_t source_port;
  int16_t tos;
  uint64_t release_seq;
  Time release_time;
};

struct BlackholeState {
  Blackhole cfg;
  uint64_t matched = 0;
};

constexpr uint64_t kStopToken = ~uint64_t{0};

// The ICRC a sender on `src` computed for `udp_payload` (BTH ... payload,
// without the ICRC) sent to `dst`; nullopt if it is no MRC datagram.
std::optional<uint32_t> icrc_between(const SockAddr& src, const SockAddr& dst, std::span<const uint8_t> body) {
  wire::FrameFormat fmt;
  // udp mode for both families: the EV is the source port; in stev mode the
  // flow label differs but the ICRC masks it.
  fmt.mode = wire::EvMode::udp;
  fmt.ip = src.is_ipv4() ? wire::IpVersion::v4 : wire::IpVersion::v6;
  fmt.udp_dport = dst.port();
  wire::FrameFields f;
  const auto s = src.address_bytes(), d = dst.address_bytes();
  std::copy(s.begin(), s.end(), f.src.begin());
  std::copy(d.begin(), d.end(), f.dst.begin());
  f.ev = src.port();
  auto c = wire::datagram_icrc(fmt, f, body, {});
  if (!c) return std::nullopt;
  return *c;
}

// LinkConfig::fix_icrc: what a NAT does to a UDP checksum, for the ICRC.
bool rewrite_icrc(std::span<std::byte> data, const SockAddr& src, const SockAddr& listen, const SockAddr& from,
                  const SockAddr& to) {
  if (data.size() < wire::Bth::kSize + wire::kIcrcBytes) return false;
  auto* bytes = reinterpret_cast<uint8_t*>(data.data());
  const std::span<const uint8_t> body(bytes, data.size() - wire::kIcrcBytes);
  SockAddr out = from;
  out.set_port(src.port());
  const auto before = icrc_between(src, listen, body);
  const auto after = icrc_between(out, to, body);
  if (!before || !after) return false;
  uint8_t* trailer = bytes + body.size();
  wire::put_icrc(wire::get_icrc(trailer) ^ *before ^ *after, trailer);
  return true;
}

}  // namespace

struct LinkState {
  LinkConfig cfg;
  UdpSocket listen;
  SockAddr listen_addr;      // bound address (the ICRC's destination on arrival)
  Prng prng;
  std::unordered_map<uint16_t, UdpSocket*> out_by_port;
  std::array<std::atomic<uint64_t>, kCounterCount> counters{};
  uint64_t seq = 0;          // datagrams received (1-based index of the current one)
  uint64_t forward_seq = 0;  // datagrams forwarded directly (drives reorder release)
  std::deque<Held> held;
  std::vector<BlackholeState*> blackholes;

  void add(Counter c, uint64_t n = 1) { counters[c].fetch_add(n, std::memory_order_relaxed); }
};

struct Forwarder::Impl {
  ForwarderConfig cfg;
  std::vector<std::unique_ptr<LinkState>> links;
  std::vector<std::unique_ptr<BlackholeState>> blackholes;
  std::vector<std::unique_ptr<UdpSocket>> out_sockets;
  std::unordered_map<SockAddr, UdpSocket*> by_addr;  // every socket we own, by bound address
  platform::Epoll epoll;
  platform::EventFd stop_fd;
  platform::MonotonicClock clock;
  platform::RxBatch batch{32, 65536};

  UdpSocket* out_socket(LinkState& l, uint16_t port);
  void send(LinkState& l, uint16_t port, std::span<const std::byte> bytes, int16_t tos);
  void handle(LinkState& l, const platform::RxDatagram& d, Time now);
  void release_held(LinkState& l, Time now, bool all);
  bool blackholed(LinkState& l, uint16_t port, Time now);
};

UdpSocket* Forwarder::Impl::out_socket(LinkState& l, uint16_t port) {
  if (auto it = l.out_by_port.find(port); it != l.out_by_port.end()) return it->second;
  SockAddr key = l.cfg.from;
  key.set_port(port);
  UdpSocket* s = nullptr;
  if (auto it = by_addr.find(key); it != by_addr.end()) {
    s = it->second;  // e.g. the listen socket of the reverse link
  } else {
    if (l.counters[kSourcePorts].load(std::memory_order_relaxed) >= cfg.max_source_ports) return nullptr;
    auto sock = UdpSocket::open(key, {.sndbuf_bytes = cfg.socket_buffer_bytes, .recv_tos = false});
    if (!sock) return nullptr;
    out_sockets.push_back(std::make_unique<UdpSocket>(std::move(*sock)));
    s = out_sockets.back().get();
    by_addr.emplace(key, s);
    l.add(kSourcePorts);
  }
  l.out_by_port.emplace(port, s);
  return s;
}

void Forwarder::Impl::send(LinkState& l, uint16_t port, std::span<const std::byte> bytes, int16_t tos) {
  UdpSocket* s = out_socket(l, port);
  if (s == nullptr) {
    l.add(kPortOverflow);
    return;
  }
  auto r = s->send_to(l.cfg.to, bytes, tos);
  if (!r || *r == 0) {
    l.add(kSendFailed);
    return;
  }
  l.add(kForwarded);
  l.add(kBytes, bytes.size());
}

bool Forwarder::Impl::blackholed(LinkState& l, uint16_t port, Time now) {
  bool drop = false;
  const Duration since = now - Time::zero();
  for (BlackholeState* b : l.blackholes) {
    if (b->cfg.source_port && *b->cfg.source_port != port) continue;
    const uint64_t before = b->matched++;
    const bool untimed = !b->cfg.start_after_datagrams && !b->cfg.start_after;
    const bool started = untimed ||
                         (b->cfg.start_after_datagrams && before >= *b->cfg.start_after_datagrams) ||
                         (b->cfg.start_after && since >= *b->cfg.start_after);
    const bool ended = b->cfg.end_after != Duration::infinite() && since >= b->cfg.end_after;
    if (started && !ended) drop = true;
  }
  return drop;
}

void Forwarder::Impl::release_held(LinkState& l, Time now, bool all) {
  // Release every held datagram whose count or time has come (not only the
  // front: holds are independent).
  for (auto it = l.held.begin(); it != l.held.end();) {
    if (all || l.forward_seq >= it->release_seq || now >= it->release_time) {
      send(l, it->source_port, it->bytes, it->tos);
      it = l.held.erase(it);
    } else {
      ++it;
    }
  }
}

void Forwarder::Impl::handle(LinkState& l, const platform::RxDatagram& d, Time now) {
  l.add(kReceived);
  ++l.seq;
  const uint16_t port = d.source.port();
  const Impairments& im = l.cfg.impair;
  if (blackholed(l, port, now)) { l.add(kBlackholed); return; }
  if (im.drop_probability > 0 && l.prng.chance(im.drop_probability)) { l.add(kDropRandom); return; }
  if (im.drop_every_nth > 0 && l.seq % im.drop_every_nth == 0) { l.add(kDropNth); return; }
  const int16_t tos = d.tos_valid ? static_cast<int16_t>(d.tos) : int16_t{-1};
  if (l.cfg.fix_icrc && rewrite_icrc(d.data, d.source, l.listen_addr, l.cfg.from, l.cfg.to)) l.add(kIcrcRewritten);
  std::span<const std::byte> bytes = d.data;
  if (im.corrupt_probability > 0 && !d.data.empty() && l.prng.chance(im.corrupt_probability)) {
    const size_t pos = l.prng.below(d.data.size());
    // XOR with a non-zero value: exactly one byte changes.
    d.data[pos] ^= static_cast<std::byte>(1 + l.prng.below(255));
    l.add(kCorrupted);
  }
  const bool dup = im.duplicate_probability > 0 && l.prng.chance(im.duplicate_probability);
  if (im.reorder_probability > 0 && l.prng.chance(im.reorder_probability)) {
    const Time release = im.reorder_hold_time > Duration() ? now + im.reorder_hold_time : Time::never();
    const uint64_t seq = im.reorder_hold_datagrams > 0 ? l.forward_seq + im.reorder_hold_datagrams
                                                       : ~uint64_t{0};
    l.held.push_back(Held{{bytes.begin(), bytes.end()}, port, tos, seq, release});
    if (dup) {
      l.held.push_back(l.held.back());
      l.add(kDuplicated);
    }
    l.add(kReordered);
    return;
  }
  send(l, port, bytes, tos);
  if (dup) {
    send(l, port, bytes, tos);
    l.add(kDuplicated);
  }
  ++l.forward_seq;
  if (!l.held.empty()) release_held(l, now, false);
}

Forwarder::Forwarder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Forwarder::~Forwarder() = default;

std::unique_ptr<Forwarder> Forwarder::create(const ForwarderConfig& config, std::string& error) {
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  if (config.links.empty()) { error = "no links configured (--link)"; return nullptr; }
  auto ep = platform::Epoll::create();
  auto ev = platform::EventFd::create();
  if (!ep || !ev) { error = "epoll/eventfd: " + platform::last_error_message(); return nullptr; }
  impl->epoll = std::move(*ep);
  impl->stop_fd = std::move(*ev);
  if (!impl->epoll.add(impl->stop_fd.fd(), platform::events::kReadable, kStopToken)) {
    error = "epoll_ctl: " + platform::last_error_message();
    return nullptr;
  }
  const Prng root(config.seed);
  for (size_t i = 0; i < config.links.size(); ++i) {
    auto l = std::make_unique<LinkState>();
    l->cfg = config.links[i];
    if (l->cfg.name.empty()) l->cfg.name = "link" + std::to_string(i);
    if (auto e = l->cfg.impair.validate(); !e.empty()) { error = l->cfg.name + ": " + e; return nullptr; }
    l->prng = root.derive(i);
    auto s = UdpSocket::open(l->cfg.listen, {.rcvbuf_bytes = config.socket_buffer_bytes,
                                             .sndbuf_bytes = config.socket_buffer_bytes});
    if (!s) {
      error = l->cfg.name + ": listen " + l->cfg.listen.to_string() + ": " + platform::last_error_message();
      return nullptr;
    }
    l->listen = std::move(*s);
    l->listen_addr = l->listen.local_address();
    if (l->cfg.fix_icrc && std::all_of(l->listen_addr.address_bytes().begin(), l->listen_addr.address_bytes().end(),
                                       [](uint8_t b) { return b == 0; })) {
      error = l->cfg.name + ": fix_icrc needs a specific listen address (the ICRC covers it), not a wildcard";
      return nullptr;
    }
    impl->by_addr.emplace(l->listen.local_address(), &l->listen);
    if (!impl->epoll.add(l->listen.fd(), platform::events::kReadable, i)) {
      error = "epoll_ctl: " + platform::last_error_message();
      return nullptr;
    }
    impl->links.push_back(std::move(l));
  }
  for (const Blackhole& b : config.blackholes) {
    if (b.link >= impl->links.size()) {
      error = "blackhole link=" + std::to_string(b.link) + ": only " + std::to_string(impl->links.size()) + " links";
      return nullptr;
    }
    impl->blackholes.push_back(std::make_unique<BlackholeState>(BlackholeState{b, 0}));
    impl->links[b.link]->blackholes.push_back(impl->blackholes.back().get());
  }
  return std::unique_ptr<Forwarder>(new Forwarder(std::move(impl)));
}

SockAddr Forwarder::listen_address(size_t link) const { return impl_->links.at(link)->listen.local_address(); }
size_t Forwarder::link_count() const { return impl_->links.size(); }
const LinkConfig& Forwarder::link_config(size_t i) const { return impl_->links.at(i)->cfg; }
void Forwarder::stop() { (void)impl_->stop_fd.signal(); }

LinkStats Forwarder::stats(size_t link) const {
  const auto& c = impl_->links.at(link)->counters;
  auto g = [&c](Counter k) { return c[k].load(std::memory_order_relaxed); };
  LinkStats s;
  s.received = g(kReceived);
  s.forwarded = g(kForwarded);
  s.bytes_forwarded = g(kBytes);
  s.dropped_random = g(kDropRandom);
  s.dropped_nth = g(kDropNth);
  s.blackholed = g(kBlackholed);
  s.corrupted = g(kCorrupted);
  s.duplicated = g(kDuplicated);
  s.reordered = g(kReordered);
  s.port_overflow = g(kPortOverflow);
  s.send_failed = g(kSendFailed);
  s.source_ports = g(kSourcePorts);
  s.icrc_rewritten = g(kIcrcRewritten);
  return s;
}

Status Forwarder::run(Duration duration, std::string& error) {
  Impl& m = *impl_;
  m.clock = platform::MonotonicClock();
  const Time deadline = Time::zero() + duration;  // saturates for infinite()
  std::array<platform::EpollEvent, 16> evs;
  bool stopping = false;
  while (!stopping) {
    Time now = m.clock.now();
    if (now >= deadline) break;
    Time wake = deadline;
    for (auto& l : m.links) {
      if (l->held.empty()) continue;
      m.release_held(*l, now, false);
      for (const Held& h : l->held) wake = min(wake, h.release_time);
    }
    Duration timeout = std::min(wake - now, Duration::ms(200));
    if (timeout < Duration()) timeout = Duration();
    auto n = m.epoll.wait(evs, timeout);
    if (!n) {
      error = platform::last_error_message();
      return n.error();
    }
    // Drain the ready links one batch each in turn, so the links (planes)
    // interleave finely: draining one link for several batches before the
    // next would delay one plane behind the other by that many datagrams,
    // a path skew no fabric of parallel planes has. Bounded, so busy links
    // cannot starve the stop token.
    std::array<LinkState*, evs.size()> ready{};
    size_t nready = 0;
    for (size_t i = 0; i < *n; ++i) {
      if (evs[i].user_data == kStopToken) { stopping = true; continue; }
      ready[nready++] = m.links[evs[i].user_data].get();
    }
    for (int round = 0; round < 8 && nready > 0; ++round) {
      size_t keep = 0;
      for (size_t i = 0; i < nready; ++i) {
        LinkState& l = *ready[i];
        auto got = l.listen.recv_batch(m.batch);
        if (!got || *got == 0) continue;
        now = m.clock.now();
        for (const platform::RxDatagram& d : m.batch.received()) m.handle(l, d, now);
        ready[keep++] = &l;
      }
      nready = keep;
    }
  }
  for (auto& l : m.links) m.release_held(*l, m.clock.now(), true);
  return {};
}

}  // namespace mrc::udp_impair
