// SPDX-License-Identifier: BSD-2-Clause
// Helpers for the simulator unit tests: a Node that records what reaches it,
// and packet construction.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "sim/fabric/packet.hpp"

namespace mrc::sim::test {

/// Records every delivered packet (then frees it) and every event.
class Sink final : public Node {
 public:
  struct Rx {
    Time at;
    uint64_t id = 0;
    uint32_t src = 0;
    uint32_t dst = 0;
    int port = 0;
    uint8_t hops = 0;
    uint32_t payload = 0;
    Class cls = Class::data;
    core::TrimMark trim = core::TrimMark::none;
    bool ecn_ce = false;
    uint32_t entropy = 0;
  };
  std::vector<Rx> rx;
  std::vector<uint64_t> events;

  void on_event(Simulator&, uint64_t tag) override { events.push_back(tag); }
  void receive(Simulator& sim, Packet* p, int port) override {
    rx.push_back(Rx{sim.now(), p->id, p->src, p->dst, port, p->hops, p->payload_len, p->cls, p->trim, p->ecn_ce,
                    p->entropy});
    sim.free_packet(p);
  }
};

/// A packet with a 48-byte header and `payload` bytes, addressed src -> dst.
inline Packet* make_packet(Simulator& sim, uint32_t src, uint32_t dst, uint32_t payload, Class cls = Class::data,
                           bool trimmable = false, uint8_t plane = 0, uint32_t entropy = 0) {
  static uint64_t next_id = 1;
  Packet* p = sim.new_packet();
  p->hdr_len = 48;
  p->payload_len = payload;
  p->src = src;
  p->dst = dst;
  p->plane = plane;
  p->entropy = entropy;
  p->cls = cls;
  p->trimmable = trimmable;
  p->ecn_capable = true;
  p->ecn_ce = false;
  p->trim = core::TrimMark::none;
  p->hops = 0;
  p->id = next_id++;
  p->sent_at = sim.now();
  return p;
}

}  // namespace mrc::sim::test
