// SPDX-License-Identifier: BSD-2-Clause
#include "core/cc/fixed_window.hpp"

#include <algorithm>

namespace mrc::core::cc {

FixedWindow::FixedWindow(const FixedWindowConfig& cfg, const CcContext& ctx) : cfg_(cfg), ctx_(ctx) {
  cwnd_ = derive(ctx.link_bps);
}

uint64_t FixedWindow::derive(uint64_t bps) const {
  if (cfg_.window_bytes != 0) return cfg_.window_bytes;
  // 1.5 x BDP (the NSCC MaxWnd rule, reference 5.5), at least one MTU.
  const double bdp = static_cast<double>(bps) / 8.0 * ctx_.base_rtt.to_s();
  return std::max<uint64_t>(static_cast<uint64_t>(1.5 * bdp), ctx_.mtu_bytes);
}

void FixedWindow::on_send(Time, uint32_t nominal) { inflight_ += nominal; }
void FixedWindow::on_ack(const AckInfo& ack) { inflight_ -= static_cast<int64_t>(ack.newly_rcvd_bytes); }
void FixedWindow::on_nack(const NackInfo& nack) { inflight_ -= nack.nominal_bytes; }
void FixedWindow::on_inferred_loss(Time, uint32_t nominal) { inflight_ -= nominal; }
void FixedWindow::on_link_speed(uint64_t bps) {
  ctx_.link_bps = bps;
  cwnd_ = derive(bps);
}

}  // namespace mrc::core::cc
