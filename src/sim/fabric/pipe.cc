// SPDX-License-Identifier: BSD-2-Clause
#include "sim/fabric/pipe.hpp"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "sim/fabric/egress_port.hpp"
#include "sim/fabric/switch.hpp"

namespace mrc::sim {

void Pipe::init(FabricContext* ctx, uint64_t rate_bps, Duration delay, uint64_t rng_stream) {
  ctx_ = ctx;
  delay_ = delay;
  id_ = ctx->sim->new_entity();
  rng_ = ctx->sim->rng_for(rng_stream);
  set_rate(rate_bps);
}

void Pipe::connect_to_switch(Switch* sw, uint32_t in_port) {
  sw_ = sw;
  in_port_ = in_port;
}

void Pipe::connect_to_host(uint32_t host, uint32_t plane) {
  sw_ = nullptr;
  host_ = host;
  in_port_ = plane;
}

void Pipe::set_sender(FabricContext* tx) {
  cut_ = tx != ctx_;
  tx_ = tx;
}

void Pipe::set_rate(uint64_t bps) {
  // Transmissions that started before now keep the old rate.
  if (feeder_) feeder_->catch_up(ctx_->sim->now());
  rate_bps_ = bps;
  constexpr uint64_t kBitPs = 8'000'000'000'000ull;  // ps per byte at 1 b/s
  ps_per_byte_ = (bps != 0 && kBitPs % bps == 0) ? static_cast<int64_t>(kBitPs / bps) : 0;
}

void Pipe::set_loss(double p) {
  // Transmissions that started before now face the old loss rate.
  if (feeder_) feeder_->catch_up(ctx_->sim->now());
  loss_ = p;
}

void Pipe::drop(FabricContext& c, Packet* p, uint64_t& counter) {
  ++counter;
  c.stats.count_drop(static_cast<uint8_t>(p->cls));
  c.sim->free_packet(p);
}

bool Pipe::send(Packet* p, Time done) {
  if (cut_) return send_cut(p, done);
  if (!alive_) {
    drop(*ctx_, p, ctx_->stats.drops_link_down);
    return false;
  }
  if (loss_ > 0 && rng_.chance(loss_)) {
    drop(*ctx_, p, ctx_->stats.drops_random);
    return false;
  }
  const Time at = done + delay_;
  assert(!tail_ || tail_at_ <= at);
  p->pipe_next = nullptr;
  if (tail_) {
    tail_->pipe_next = p;
    tail_->pipe_next_at = at;
  } else {
    head_ = p;
    head_at_ = at;
  }
  tail_ = p;
  tail_at_ = at;
  ++count_;
  if (!ev_pending_) {
    // No event pending means the FIFO was empty: p is the head.
    ev_pending_ = true;
    ctx_->sim->schedule(at, this, reinterpret_cast<uintptr_t>(p), event_key(id_, head_seq_));
  }
  return true;
}

bool Pipe::send_cut(Packet* p, Time done) {
  FabricContext& tx = *tx_;
  if (!alive_) {
    drop(tx, p, tx.stats.drops_link_down);
    return false;
  }
  if (loss_ > 0 && rng_.chance(loss_)) {
    drop(tx, p, tx.stats.drops_random);
    return false;
  }
  ++sent_cls_[static_cast<uint8_t>(p->cls) < 3 ? static_cast<uint8_t>(p->cls) : 2];
  tx.post(ctx_->part, done + delay_, this, reinterpret_cast<uintptr_t>(p), event_key(id_, sent_++));
  return false;
}

uint64_t Pipe::flush() {
  uint64_t n = 0;
  if (cut_) {
    // Runs where neither side does: what was sent and has not arrived is
    // lost now; its deliveries only release it.
    for (int c = 0; c < 3; ++c) {
      const uint64_t k = sent_cls_[c] - recv_cls_[c];
      ctx_->stats.drops_by_class[c] += k;
      recv_cls_[c] = sent_cls_[c];
      n += k;
    }
    flushed_upto_ = sent_;
    ctx_->stats.drops_link_down += n;
    return n;
  }
  while (head_) {
    Packet* p = head_;
    head_ = p->pipe_next;
    ctx_->stats.count_drop(static_cast<uint8_t>(p->cls));
    ctx_->sim->free_packet(p);
    ++n;
  }
  tail_ = nullptr;
  count_ = 0;
  head_seq_ += n;
  ctx_->stats.drops_link_down += n;
  // A pending event stays; it finds the FIFO empty, or a later head, and
  // reschedules for that.
  return n;
}

void Pipe::on_event(Simulator& sim, uint64_t tag) {
  if (cut_) {
    Packet* p = reinterpret_cast<Packet*>(tag);
    if (recv_++ < flushed_upto_) {
      sim.free_packet(p);  // lost with the link (flush counted it)
      return;
    }
    ++recv_cls_[static_cast<uint8_t>(p->cls) < 3 ? static_cast<uint8_t>(p->cls) : 2];
    deliver(p);
    return;
  }
  const Time now = sim.now();
  // Deliveries never push into this pipe (a packet never turns back onto the
  // link it arrived on), so the loop sees a stable FIFO. (The tag, the head
  // when the event was scheduled, is only a prefetch hint: a flush may have
  // freed it since.)
  while (head_ && head_at_ <= now) {
    Packet* p = head_;
    // Before deliver(): forwarding relinks p.
    head_ = p->pipe_next;
    head_at_ = p->pipe_next_at;
    if (!head_) tail_ = nullptr;
    --count_;
    ++head_seq_;
    deliver(p);
  }
  // The feeding port starts what it would have started by now (arrivals
  // after now; ev_pending_ is still set, so send() schedules nothing).
  if (feeder_) feeder_->catch_up_if_queued(now);
  ev_pending_ = false;
  if (head_) {
    ev_pending_ = true;
    sim.schedule(head_at_, this, reinterpret_cast<uintptr_t>(head_), event_key(id_, head_seq_));
  }
}

void Pipe::prefetch(uint64_t tag) const {
  if (cut_) {
    // The tag is the packet; the feeder and the FIFO fields are the other
    // partition's.
    if (sw_) sw_->prefetch_route(*reinterpret_cast<const Packet*>(tag));
    return;
  }
  // After its deliveries the event lets the feeding port catch up, which
  // pops the entry it queued last and appends to this pipe's tail.
  if (feeder_) {
    __builtin_prefetch(feeder_);
    if (feeder_next_) __builtin_prefetch(feeder_next_);
    if (tail_) __builtin_prefetch(tail_);
  }
  if (!head_) return;
  if (sw_) {
    sw_->prefetch_route(*head_);
  } else {
    // A NIC reads what the transport wrote: the encoded headers and the
    // addressing behind the first line, written by the sender microseconds
    // ago and long evicted.
    const char* p = reinterpret_cast<const char*>(head_);
    for (size_t i = 64; i < sizeof(Packet); i += 64) __builtin_prefetch(p + i);
  }
}

namespace {
// A packet between processes: its fields, with only the header bytes the
// transport wrote (hdr_len of them), not the whole header buffer.
constexpr size_t kHdrAt = offsetof(Packet, hdr);
constexpr size_t kAfterHdr = kHdrAt + sizeof(Packet::hdr);
constexpr size_t kTail = sizeof(Packet) - kAfterHdr;
}  // namespace

void Pipe::export_tag(Simulator& from, uint64_t tag, std::vector<uint8_t>& out) {
  static_assert(std::is_trivially_copyable_v<Packet>);
  Packet* p = reinterpret_cast<Packet*>(tag);
  const auto* b = reinterpret_cast<const uint8_t*>(p);
  const size_t hdr = std::min<size_t>(p->hdr_len, sizeof(Packet::hdr));
  const size_t at = out.size();
  out.resize(at + kHdrAt + hdr + kTail);
  uint8_t* o = out.data() + at;
  std::memcpy(o, b, kHdrAt + hdr);
  std::memcpy(o + kHdrAt + hdr, b + kAfterHdr, kTail);
  from.free_packet(p);
}

uint64_t Pipe::import_tag(Simulator& to, const uint8_t*& in) {
  Packet* p = to.new_packet();
  auto* b = reinterpret_cast<uint8_t*>(p);
  std::memcpy(b, in, kHdrAt);
  const size_t hdr = std::min<size_t>(p->hdr_len, sizeof(Packet::hdr));
  std::memcpy(b + kHdrAt, in + kHdrAt, hdr);
  std::memcpy(b + kAfterHdr, in + kHdrAt + hdr, kTail);
  in += kHdrAt + hdr + kTail;
  p->pipe_next = nullptr;
  // The sender's side of this pipe runs in the other process: this copy
  // counts what was sent from the packets that arrive, in the order sent.
  ++sent_;
  ++sent_cls_[static_cast<uint8_t>(p->cls) < 3 ? static_cast<uint8_t>(p->cls) : 2];
  return reinterpret_cast<uintptr_t>(p);
}

void Pipe::deliver(Packet* p) {
  FabricStats& st = ctx_->stats;
  ++st.packets_forwarded;
  ++packets_;
  bytes_ += p->wire_bytes();
  ++p->hops;
  if (sw_) {
    sw_->receive(p, in_port_);
    return;
  }
  ++st.delivered;
  if (nic_)
    nic_->receive(*ctx_->sim, p, static_cast<int>(in_port_));
  else
    ctx_->sim->free_packet(p);  // no NIC attached to this host: the packet reached it and ends here
}

void Pipe::receive(Simulator&, Packet*, int) {
  // Pipes are fed through send(); nothing calls a pipe as a Node.
  std::fprintf(stderr, "mrc-sim: internal error: Pipe::receive called\n");
  std::abort();
}

}  // namespace mrc::sim
