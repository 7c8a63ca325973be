// SPDX-License-Identifier: BSD-2-Clause
// Per-packet cost of secure QPs (core/secure.hpp) against plain ones: two
// endpoints back to back with real 4 KiB payloads in real memory, each data
// packet sealed by the requester (poll_transmit), copied into one receive
// buffer as a socket would deliver it, opened and placed by the responder,
// its SACKs sealed and opened on the way back. The only difference between
// the three benchmarks is QpAttr::secure:
//
//   BM_SecurePair/0  plain MRC
//   BM_SecurePair/1  integrity (AES-128-GCM as GMAC over headers and payload)
//   BM_SecurePair/2  encrypt (AES-128-GCM over the payload)
//
// ns_per_pkt is the time of one data packet, both sides and their control
// traffic included; the integrity/plain ratio of it is the cost issue 37
// bounds (plain / integrity >= 0.7). Run interleaved (docs/performance.md):
//   build/dev/bench/bench_secure --benchmark_repetitions=9
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/endpoint.hpp"
#include "crypto/aes_gcm.hpp"
#include "pair_loop.hpp"
#include "wire/packet.hpp"

namespace {

using namespace mrc;
using namespace mrc::core;

constexpr uint32_t kMtu = 4096;
constexpr uint64_t kMsg = 16ull << 20;  // one 16 MiB WRITE, reposted when done
const Duration kPacketTime = Duration::serialization(kMtu + 92, 100'000'000'000ull);

QpSecure secure_of(SecureMode mode, bool requester) {
  QpSecure s;
  s.mode = mode;
  SecureKey ka, kb;
  ka.key.fill(0xA1);
  kb.key.fill(0xB2);
  ka.key_len = kb.key_len = 16;
  ka.salt = 1;
  kb.salt = 2;
  s.send = requester ? ka : kb;
  s.recv = requester ? kb : ka;
  return s;
}

struct Pair {
  std::unique_ptr<Endpoint> a, b;
  uint32_t qa = 0, qb = 0;
  MemoryRegion src, dst;
  std::vector<uint8_t> src_mem = std::vector<uint8_t>(kMsg, 0x5C), dst_mem = std::vector<uint8_t>(kMsg);
  Time now = Time::zero();
  uint8_t hdr[wire::kMaxHeaderBytes];
  std::vector<uint8_t> rx = std::vector<uint8_t>(wire::kMaxHeaderBytes + kMtu);

  explicit Pair(SecureMode mode) {
    EndpointConfig cfg;
    cfg.ports.assign(8, PortConfig{100'000'000'000ull});
    cfg.make_aead = &crypto::make_aes_gcm;
    cfg.seed = 1;
    a = std::move(Endpoint::create(cfg).value());
    cfg.seed = 2;
    b = std::move(Endpoint::create(cfg).value());
    CcProfile cc;
    cc.algorithm = kCcFixed;
    cc.fixed.window_bytes = 4 << 20;
    a->set_cc_profile(1, cc).ok();
    b->set_cc_profile(1, cc).ok();
    a->create_cq(Endpoint::kMaxCqe).value();
    b->create_cq(Endpoint::kMaxCqe).value();
    qa = a->create_qp({}).value();
    qb = b->create_qp({}).value();
    src = a->reg_mr(reinterpret_cast<uint64_t>(src_mem.data()), kMsg, access::kLocalWrite).value();
    dst = b->reg_mr(reinterpret_cast<uint64_t>(dst_mem.data()), kMsg, access::kRemoteWrite).value();
    connect(*a, qa, qb, 2, secure_of(mode, true));
    connect(*b, qb, qa, 1, secure_of(mode, false));
  }
  void connect(Endpoint& e, uint32_t qpn, uint32_t peer_qpn, uint64_t peer, const QpSecure& s) {
    bench::connect_qp(e, now, qpn, peer_qpn, peer, &s);
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
  // The packet as a socket delivers it: headers and payload in one buffer.
  std::span<const uint8_t> gather(const Transmit& tx) {
    std::memcpy(rx.data(), hdr, tx.header_len);
    PayloadSegment segs[kMaxSge];
    size_t at = tx.header_len;
    for (size_t i = 0, n = payload_segments(tx, segs); i < n; ++i) {
      std::memcpy(rx.data() + at, segs[i].data, segs[i].len);
      at += segs[i].len;
    }
    return std::span<const uint8_t>(rx.data(), at);
  }
  void drain_control() {
    for (;;) {
      auto tx = b->poll_transmit(now, 0xFF, hdr);
      if (!tx) return;
      RxMeta m;
      m.port = tx->port;
      m.peer = 2;
      m.entropy = tx->entropy;
      a->handle_datagram(now, m, gather(*tx));
    }
  }
};

void BM_SecurePair(benchmark::State& state) {
  Pair p(static_cast<SecureMode>(state.range(0)));
  const uint64_t packets = bench::run_pair_loop(state, p, kPacketTime, [&p](const Transmit& tx) {
    RxMeta m;
    m.port = tx.port;
    m.peer = 1;
    m.entropy = tx.entropy;
    p.b->handle_datagram(p.now, m, p.gather(tx));
    p.drain_control();
  });
  if (p.a->stats().rx_auth_failures + p.b->stats().rx_auth_failures + p.b->stats().rx_replays != 0)
    state.SkipWithError("packets refused: the benchmark measures something else");
  state.counters["data_pkts"] = static_cast<double>(packets);
  state.counters["ns_per_pkt"] = benchmark::Counter(static_cast<double>(packets),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SecurePair)->Arg(0)->Arg(1)->Arg(2)->Iterations(200'000);

}  // namespace

BENCHMARK_MAIN();
