// SPDX-License-Identifier: BSD-2-Clause
#include "core/cc/dcqcn.hpp"

#include <algorithm>
#include <cmath>

namespace mrc::core::cc {

DcqcnParams derive_dcqcn_params(const DcqcnConfig& cfg, uint64_t line_bps) {
  DcqcnParams p;
  p.line_bps = std::max<uint64_t>(line_bps, 1);
  p.max_rate_bps = cfg.max_rate_bps ? cfg.max_rate_bps : p.line_bps;
  // 0.1% of the line rate, never above the maximum.
  p.min_rate_bps = cfg.min_rate_bps ? cfg.min_rate_bps : std::max<uint64_t>(p.line_bps / 1000, 1);
  p.min_rate_bps = std::min(p.min_rate_bps, p.max_rate_bps);
  // R_AI = 5% of the line rate; R_HAI = 10 x R_AI (the QCN/NVIDIA ratio).
  p.rate_ai_bps = cfg.rate_ai_bps ? cfg.rate_ai_bps : std::max<uint64_t>(p.line_bps / 20, 1);
  p.rate_hai_bps = cfg.rate_hai_bps ? cfg.rate_hai_bps : 10 * p.rate_ai_bps;
  return p;
}

Dcqcn::Dcqcn(const DcqcnConfig& cfg, const CcContext& ctx)
    : cfg_(cfg), ctx_(ctx), p_(derive_dcqcn_params(cfg, ctx.link_bps)) {
  rc_ = rt_ = static_cast<double>(p_.max_rate_bps);
  alpha_ = cfg_.initial_alpha;
}

void Dcqcn::advance(Time now) {
  // Alpha decays once per period without a CNP; closed form, since nothing
  // else reads alpha between two calls.
  if (next_alpha_ <= now) {
    const int64_t n = (now - next_alpha_) / cfg_.alpha_update_period + 1;
    alpha_ *= std::pow(1.0 - cfg_.g, static_cast<double>(n));
    next_alpha_ += cfg_.alpha_update_period * n;
  }
  // Rate-increase timer events, in order; increase() stops the timer once
  // the rate has recovered, which bounds the loop.
  while (active_ && next_increase_ <= now) {
    next_increase_ += cfg_.rate_increase_period;
    ++t_stage_;
    increase();
  }
}

void Dcqcn::increase() {
  const uint32_t f = cfg_.fast_recovery_steps;
  const double max_rate = static_cast<double>(p_.max_rate_bps);
  if (std::max(t_stage_, bc_stage_) < f) {
    // Fast recovery: Rt stays where the last cut found the rate.
  } else if (std::min(t_stage_, bc_stage_) > f) {
    rt_ += static_cast<double>(std::min(t_stage_, bc_stage_) - f) * static_cast<double>(p_.rate_hai_bps);
  } else {
    rt_ += static_cast<double>(p_.rate_ai_bps);
  }
  rt_ = std::min(rt_, max_rate);
  rc_ = std::min((rt_ + rc_) / 2, max_rate);
  if (rt_ >= max_rate && max_rate - rc_ <= max_rate * kDcqcnRecoveredFraction) {
    rc_ = max_rate;
    active_ = false;
    next_increase_ = Time::never();
  }
}

Time Dcqcn::next_send_time(Time now, uint32_t nominal) {
  (void)nominal;
  advance(now);
  if (!paced()) return now;
  return max(now, next_free_);
}

void Dcqcn::on_send(Time now, uint32_t nominal) {
  advance(now);
  inflight_ += nominal;
  if (active_) {
    bytes_since_cut_ += nominal;
    while (active_ && bytes_since_cut_ >= cfg_.byte_counter_bytes) {
      bytes_since_cut_ -= cfg_.byte_counter_bytes;
      ++bc_stage_;
      increase();
    }
  }
  if (paced()) {
    const auto bps = static_cast<uint64_t>(std::max(rc_, 1.0));
    next_free_ = max(next_free_, now) + Duration::serialization(nominal, bps);
  } else {
    next_free_ = now;
  }
}

void Dcqcn::on_ack(const AckInfo& ack) {
  advance(ack.now);
  inflight_ -= static_cast<int64_t>(ack.newly_rcvd_bytes);
}

void Dcqcn::on_nack(const NackInfo& nack) {
  advance(nack.now);
  inflight_ -= nack.nominal_bytes;
}

void Dcqcn::on_inferred_loss(Time now, uint32_t nominal) {
  advance(now);
  inflight_ -= nominal;
}

void Dcqcn::on_link_speed(uint64_t bps) {
  if (bps == 0) return;
  ctx_.link_bps = bps;
  p_ = derive_dcqcn_params(cfg_, bps);
  const double max_rate = static_cast<double>(p_.max_rate_bps);
  if (!active_) {
    rc_ = rt_ = max_rate;
  } else {
    rt_ = std::min(rt_, max_rate);
    rc_ = std::clamp(rc_, static_cast<double>(p_.min_rate_bps), max_rate);
  }
}

void Dcqcn::on_cnp(Time now) {
  advance(now);
  if (cut_yet_ && now - last_cut_ < cfg_.rate_reduce_period) {
    ++cnps_ignored_;
    return;
  }
  if (!paced()) next_free_ = now;  // pacing starts from here
  rt_ = rc_;
  rc_ = std::max(rc_ * (1.0 - alpha_ / 2.0), static_cast<double>(p_.min_rate_bps));
  alpha_ = (1.0 - cfg_.g) * alpha_ + cfg_.g;
  cut_yet_ = true;
  last_cut_ = now;
  active_ = true;
  ++cuts_;
  t_stage_ = bc_stage_ = 0;
  bytes_since_cut_ = 0;
  next_increase_ = now + cfg_.rate_increase_period;
  next_alpha_ = now + cfg_.alpha_update_period;
}

}  // namespace mrc::core::cc
