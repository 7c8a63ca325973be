// SPDX-License-Identifier: BSD-2-Clause
#include "sim/engine/simulator.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mrc::sim {

namespace {
// Tags in [kMinHint, kMaxHint) may be pointers (small integers and the tags
// with high kind bits are not).
constexpr uint64_t kMinHint = uint64_t{1} << 16;
constexpr uint64_t kMaxHint = uint64_t{1} << 47;

// The node's first two cache lines, and the tag if it may be a pointer (a
// prefetch never faults, so a tag that only looks like one costs a wasted
// load slot).
inline void prefetch_lines(const Event& e) {
  __builtin_prefetch(e.node);
  __builtin_prefetch(reinterpret_cast<const char*>(e.node) + 64);
  if (e.tag - kMinHint < kMaxHint - kMinHint) __builtin_prefetch(reinterpret_cast<const void*>(e.tag));
}
}  // namespace

void Node::export_tag(Simulator&, uint64_t tag, std::vector<uint8_t>& out) {
  const size_t at = out.size();
  out.resize(at + sizeof tag);
  std::memcpy(out.data() + at, &tag, sizeof tag);
}

uint64_t Node::import_tag(Simulator&, const uint8_t*& in) {
  uint64_t tag = 0;
  std::memcpy(&tag, in, sizeof tag);
  in += sizeof tag;
  return tag;
}

void Simulator::advance_to(Time t) {
  if (t < now_ || next_event_time() < t) {
    std::fprintf(stderr, "mrc-sim: internal error: the clock cannot move from %lld ps to %lld ps past pending events\n",
                 static_cast<long long>(now_.ps()), static_cast<long long>(t.ps()));
    std::abort();
  }
  now_ = t;
}

bool Simulator::run_until(Time end) {
  stop_ = false;
  while (!queue_.empty()) {
    if (queue_.top().at > end) {
      now_ = end;
      return true;
    }
    const Event e = queue_.pop();
    // A two-stage prefetch: the objects of the next two events are most
    // likely cold. The one after next gets its first two cache lines and
    // what its tag may point at (a pipe's head packet, a port's next queue
    // entry) loading now; the next one, whose lines were loaded that way an
    // event ago, is asked to prefetch what its handler will reach through
    // them (Node::prefetch: the egress port a packet is routed to, ...).
    if (!queue_.empty()) {
      const Event& n = queue_.top();
      prefetch_lines(n);
      if (const Event* n2 = queue_.peek_second()) prefetch_lines(*n2);
      n.node->prefetch(n.tag);
    }
    now_ = e.at;
    cur_key_ = e.key;
    ++events_;
    e.node->on_event(*this, e.tag);
    if (stop_) return !queue_.empty();
  }
  if (now_ < end && !end.is_never()) now_ = end;
  return false;
}

}  // namespace mrc::sim
