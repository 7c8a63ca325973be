// SPDX-License-Identifier: BSD-2-Clause
// Per-packet cost of the protocol core, each side, for payload-less 4 KiB
// WRITE packets with no loss (issue 2's goal: <= 200 ns per packet per side).
//
// Two endpoints are wired back to back with no network model: every data
// packet the requester emits goes straight into the responder, every control
// packet straight back. Payload travels as a length (RxMeta::phantom_payload)
// into simulated memory, as in the simulator. Simulated time advances by one
// 4 KiB serialization at 800 Gb/s per packet.
//
//   BM_CorePair       both sides: requester + responder work per data packet
//                     (fixed window: the protocol alone)
//   BM_CorePairNscc   the same with NSCC, MRC's default CC, on both QPs
//   BM_CoreResponder  responder only: a recorded stream of data packets
//                     replayed into a fresh responder (its SACKs drained)
// The requester's cost is the difference.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "core/endpoint.hpp"
#include "pair_loop.hpp"
#include "wire/packet.hpp"

namespace {

using namespace mrc;
using namespace mrc::core;

constexpr uint32_t kMtu = 4096;
constexpr uint64_t kMsg = 64ull << 20;  // one 64 MiB WRITE, reposted when done
const Duration kPacketTime = Duration::serialization(kMtu + 92, 800'000'000'000ull);

struct Pair {
  std::unique_ptr<Endpoint> a, b;
  uint32_t qa = 0, qb = 0;
  MemoryRegion src, dst;
  Time now = Time::zero();
  uint8_t hdr[wire::kMaxHeaderBytes];

  /// `algorithm`: the CC profile of both QPs; the fixed window isolates the
  /// protocol's per-packet cost, NSCC (MRC's default) adds its per-SACK work.
  explicit Pair(const std::string& algorithm = kCcFixed) {
    EndpointConfig cfg;
    cfg.ports.assign(8, PortConfig{100'000'000'000ull});
    cfg.seed = 1;
    a = std::move(Endpoint::create(cfg).value());
    cfg.seed = 2;
    b = std::move(Endpoint::create(cfg).value());
    CcProfile cc;
    cc.algorithm = algorithm;
    cc.fixed.window_bytes = 4 << 20;
    a->set_cc_profile(1, cc).ok();
    b->set_cc_profile(1, cc).ok();
    a->create_cq(Endpoint::kMaxCqe).value();  // CQ 0, what QpInit{} names
    b->create_cq(Endpoint::kMaxCqe).value();
    qa = a->create_qp({}).value();
    qb = b->create_qp({}).value();
    src = a->reg_mr(0x10000, kMsg, access::kLocalWrite, false).value();
    dst = b->reg_mr(0x10000, kMsg, access::kRemoteWrite, false).value();
    connect(*a, qa, qb, 2);
    connect(*b, qb, qa, 1);
  }
  void connect(Endpoint& e, uint32_t qpn, uint32_t peer_qpn, uint64_t peer) {
    bench::connect_qp(e, now, qpn, peer_qpn, peer);
  }
  void post() {
    SendWr wr;
    wr.local_addr = src.addr;
    wr.lkey = src.lkey;
    wr.length = static_cast<uint32_t>(kMsg);
    wr.remote_addr = dst.addr;
    wr.rkey = dst.rkey;
    (void)a->post_send(now, qa, wr);
  }
  // Moves every control packet b has queued into a.
  void drain_control(Endpoint& from, Endpoint& to, uint64_t peer) {
    for (;;) {
      auto tx = from.poll_transmit(now, 0xFF, hdr);
      if (!tx) return;
      RxMeta m;
      m.port = tx->port;
      m.peer = peer;
      m.entropy = tx->entropy;
      to.handle_datagram(now, m, std::span<const uint8_t>(hdr, tx->header_len));
    }
  }
};

void run_pair(benchmark::State& state, Pair& p) {
  const uint64_t packets = bench::run_pair_loop(state, p, kPacketTime, [&p](const Transmit& tx) {
    RxMeta m;
    m.port = tx.port;
    m.peer = 1;
    m.entropy = tx.entropy;
    m.phantom_payload = tx.payload_len;
    p.b->handle_datagram(p.now, m, std::span<const uint8_t>(p.hdr, tx.header_len));
    p.drain_control(*p.b, *p.a, 2);
  });
  state.counters["data_pkts"] = static_cast<double>(packets);
  // Control packets (SACKs) the responder sent per data packet, and polls
  // that found the window closed: what separates the CC profiles' costs.
  const double n = packets ? static_cast<double>(packets) : 1.0;
  state.counters["ctrl_per_pkt"] = static_cast<double>(p.b->stats().tx_packets) / n;
  state.counters["blocked_per_pkt"] = static_cast<double>(state.iterations() - packets) / n;
  state.counters["ns_per_pkt"] = benchmark::Counter(static_cast<double>(packets),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_CorePair(benchmark::State& state) {
  Pair p;
  run_pair(state, p);
}
BENCHMARK(BM_CorePair)->Iterations(2'000'000);

// The same with NSCC, MRC's default congestion control, on both QPs.
void BM_CorePairNscc(benchmark::State& state) {
  Pair p(kCcNscc);
  run_pair(state, p);
}
BENCHMARK(BM_CorePairNscc)->Iterations(2'000'000);

void BM_CoreResponder(benchmark::State& state) {
  // Record a stream of data packets from a live pair.
  struct Rec {
    uint8_t hdr[wire::kMaxHeaderBytes];
    uint16_t len;
    uint8_t port;
    uint32_t entropy;
  };
  std::vector<Rec> stream;
  const size_t n = 1'000'000;
  stream.reserve(n);
  {
    Pair p;
    p.post();
    uint32_t port = 0;
    while (stream.size() < n) {
      auto tx = p.a->poll_transmit(p.now, 1u << port, p.hdr);
      port = (port + 1) & 7;
      if (!tx) {
        WorkCompletion wc;
        while (p.a->poll_cq(0, {&wc, 1})) p.post();
        while (p.a->poll_event()) {
        }
        p.now += kPacketTime;
        continue;
      }
      Rec r;
      std::memcpy(r.hdr, p.hdr, tx->header_len);
      r.len = tx->header_len;
      r.port = tx->port;
      r.entropy = tx->entropy;
      if (wire::opcode_info(r.hdr[0]).data) stream.push_back(r);
      RxMeta m;
      m.port = tx->port;
      m.peer = 1;
      m.entropy = tx->entropy;
      m.phantom_payload = tx->payload_len;
      p.b->handle_datagram(p.now, m, std::span<const uint8_t>(p.hdr, tx->header_len));
      p.drain_control(*p.b, *p.a, 2);
      while (p.b->poll_event()) {
      }
      p.now += kPacketTime;
    }
  }
  // Replay into a fresh responder.
  Pair p;
  size_t i = 0;
  for (auto _ : state) {
    const Rec& r = stream[i];
    RxMeta m;
    m.port = r.port;
    m.peer = 1;
    m.entropy = r.entropy;
    m.phantom_payload = kMtu;
    p.b->handle_datagram(p.now, m, std::span<const uint8_t>(r.hdr, r.len));
    for (;;) {
      auto tx = p.b->poll_transmit(p.now, 0xFF, p.hdr);
      if (!tx) break;
      benchmark::DoNotOptimize(tx->header_len);
    }
    while (p.b->poll_event()) {
    }
    p.now += kPacketTime;
    if (++i == stream.size()) {
      state.PauseTiming();
      i = 0;
      p.~Pair();
      new (&p) Pair();
      state.ResumeTiming();
    }
  }
  state.counters["ns_per_pkt"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CoreResponder)->Iterations(1'000'000);

}  // namespace

BENCHMARK_MAIN();
