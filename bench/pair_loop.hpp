// SPDX-License-Identifier: BSD-2-Clause
// The setup and timed loop of the back-to-back endpoint pairs (bench_core.cc,
// bench_secure.cc). The loop: the requester's next packet goes to `deliver`, which
// hands it to the responder and its answers back; a closed window lets the
// requester's timers run and reposts the WRITE when it completed.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

#include "core/endpoint.hpp"

namespace mrc::bench {

/// Takes QP `qpn` of `e` through INIT (CC profile 1), RTR towards `peer_qpn`
/// at `peer` and RTS, PSNs 100 and MPR 16 both ways; with `secure`, a secure
/// QP under those keys.
inline void connect_qp(core::Endpoint& e, Time now, uint32_t qpn, uint32_t peer_qpn, uint64_t peer,
                       const core::QpSecure* secure = nullptr) {
  using namespace core::qp_attr;
  core::QpAttr at;
  at.state = core::QpState::init;
  at.cc_profile_id = 1;
  (void)e.modify_qp(now, qpn, at, kState | kCcProfileId);
  at.state = core::QpState::rtr;
  at.dest_qpn = peer_qpn;
  at.rq_psn = 100;
  at.peer = peer;
  at.mpr_dest = 16;
  if (secure) at.secure = *secure;
  (void)e.modify_qp(now, qpn, at,
                    kState | kDestQpn | kRqPsn | kPeer | kPathMtu | kMaxWimmDest | kMprDest | (secure ? kSecure : 0u));
  at.state = core::QpState::rts;
  at.sq_psn = 100;
  at.mpr = 16;
  (void)e.modify_qp(now, qpn, at, kState | kSqPsn | kMaxWimm | kMpr | kRetryCnt | kTimeout);
}

/// `p` has endpoints a (requester) and b, `now`, a header buffer `hdr` and
/// post(). Returns the data packets delivered. Simulated time advances by
/// `packet_time` per data packet.
template <class Pair, class Deliver>
uint64_t run_pair_loop(benchmark::State& state, Pair& p, Duration packet_time, Deliver&& deliver) {
  p.post();
  uint64_t packets = 0;
  uint32_t port = 0;
  for (auto _ : state) {
    auto tx = p.a->poll_transmit(p.now, 1u << port, p.hdr);
    port = (port + 1) & 7;
    if (!tx) {
      // Window full or message done: let timers run, re-post if needed.
      p.a->handle_timeout(p.now);
      core::WorkCompletion wc;
      while (p.a->poll_cq(0, {&wc, 1})) p.post();
      while (p.a->poll_event()) {
      }
      p.now += packet_time;
      continue;
    }
    deliver(*tx);
    if (p.now >= p.b->next_timeout()) p.b->handle_timeout(p.now);
    while (p.b->poll_event()) {
    }
    p.now += packet_time;
    ++packets;
  }
  return packets;
}

}  // namespace mrc::bench
