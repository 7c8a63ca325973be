// SPDX-License-Identifier: BSD-2-Clause
// The timed loop of the back-to-back endpoint pairs (bench_core.cc,
// bench_secure.cc): the requester's next packet goes to `deliver`, which
// hands it to the responder and its answers back; a closed window lets the
// requester's timers run and reposts the WRITE when it completed.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

#include "core/endpoint.hpp"

namespace mrc::bench {

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
