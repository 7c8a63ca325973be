// SPDX-License-Identifier: BSD-2-Clause
#include "core/cc/nscc.hpp"

#include <algorithm>
#include <cmath>

namespace mrc::core::cc {

namespace {

__extension__ using U128 = unsigned __int128;

constexpr double kPsPerSecond = 1e12;

// 1.5 x bps/8 x rtt in whole bytes, at least one MTU (reference 5.5 MaxWnd).
// Integer math in 128 bits: 800e9 b/s x 1e7 ps is already 8e18, and rounding
// a double here would turn 1.5 MB into 1,499,999 B.
uint64_t max_window(uint64_t bps, Duration rtt, uint32_t mtu) {
  const int64_t ps = std::max<int64_t>(rtt.count_ps(), 0);
  const U128 bytes = static_cast<U128>(bps) * static_cast<uint64_t>(ps) * 3u / (16u * 1'000'000'000'000ull);
  return std::max<uint64_t>(static_cast<uint64_t>(bytes), mtu);
}

double bdp_bytes(uint64_t bps, Duration rtt) {
  const int64_t ps = std::max<int64_t>(rtt.count_ps(), 0);
  return static_cast<double>(static_cast<U128>(bps) * static_cast<uint64_t>(ps)) / (8.0 * kPsPerSecond);
}

}  // namespace

NsccParams derive_nscc_params(const NsccConfig& cfg, const CcContext& ctx) {
  NsccParams p;
  p.mtu_bytes = ctx.mtu_bytes;
  p.link_bps = ctx.link_bps;
  p.base_rtt = cfg.base_rtt > Duration{} ? cfg.base_rtt : ctx.base_rtt;
  // BDP = linkspeed x config_base_rtt; the UEC defaults were tuned for
  // 100 Gb/s x 12 us and scale linearly from there (reference 5.5).
  p.bdp_bytes = bdp_bytes(ctx.link_bps, p.base_rtt);
  p.scaling_a = p.bdp_bytes / kNsccReferenceBdpBytes;
  // With trimming a trim NACK reports a full queue directly, so the target
  // can sit below one base RTT (reference 5.5).
  p.target_delay = cfg.target_delay > Duration{} ? cfg.target_delay
                   : ctx.trimming              ? p.base_rtt * 3 / 4
                                               : p.base_rtt;
  p.scaling_b = static_cast<double>(p.target_delay.count_ps()) / static_cast<double>(kNsccReferenceTarget.count_ps());
  const double mtu = ctx.mtu_bytes;
  p.alpha = p.target_delay > Duration{} ? 4.0 * mtu * p.scaling_a * p.scaling_b / p.target_delay.to_s() : 0.0;
  p.fi = cfg.fi > 0 ? cfg.fi : 5.0 * mtu * p.scaling_a;
  p.fi_scale = cfg.fi_scale > 0 ? cfg.fi_scale : 0.25 * p.scaling_a;
  p.eta = cfg.eta > 0 ? cfg.eta : 0.15 * mtu * p.scaling_a;
  p.gamma = cfg.gamma > 0 ? cfg.gamma : 0.8;
  p.max_md_jump = cfg.max_md_jump > 0 ? cfg.max_md_jump : 0.5;
  p.max_cwnd = cfg.max_cwnd > 0 ? std::max<uint64_t>(cfg.max_cwnd, ctx.mtu_bytes)
                                : max_window(ctx.link_bps, p.base_rtt, ctx.mtu_bytes);
  p.qa_gate = cfg.qa_gate > 0 ? cfg.qa_gate : 3;
  // With trimming, quick adapt runs on trim NACKs; a delay trigger on top
  // would fire on ordinary queue build-up (reference 5.5 "effectively
  // disabled"). Without trimming, delay is the only early signal.
  p.qa_threshold = cfg.qa_threshold > Duration{} ? cfg.qa_threshold
                   : ctx.trimming               ? Duration::infinite()
                                                : p.target_delay * 4;
  p.disable_qa = cfg.disable_qa;
  p.adjust_bytes_threshold = cfg.adjust_bytes_threshold > 0 ? cfg.adjust_bytes_threshold : uint64_t{8} * ctx.mtu_bytes;
  p.adjust_period_threshold = cfg.adjust_period_threshold > Duration{} ? cfg.adjust_period_threshold : p.base_rtt;
  p.max_fulfill_growth = cfg.max_fulfill_growth > 0 ? cfg.max_fulfill_growth : 1.0;
  p.hint_share = cfg.hint_share > 0 ? cfg.hint_share : 2.0;
  p.hint_share_cap = uint64_t{cfg.hint_share_cap > 0 ? cfg.hint_share_cap : 8u} * ctx.mtu_bytes;
  return p;
}

Nscc::Nscc(const NsccConfig& cfg, const CcContext& ctx) : cfg_(cfg), ctx_(ctx), p_(derive_nscc_params(cfg, ctx)) {
  base_rtt_ = p_.base_rtt;
  max_wnd_ = p_.max_cwnd;
  // New flows start at line rate (reference 5.4), or at their share of the
  // target's when the application's hint says how many share it (QpHint):
  // the first round trip is sent blind, and 127 senders at MaxWnd overflow
  // the target's last hop (21,080 trimmed headers dropped and 60 ACK
  // timeouts in the 127 -> 1 incast; none at MaxWnd / 127). A share of a
  // few packets is boosted (NsccConfig::hint_share): so small a window
  // leaves the target's link idle while it grows. Without a hint the share
  // is MaxWnd, which set_cwnd never exceeds.
  const double share = static_cast<double>(max_wnd_) / std::max<uint32_t>(1, ctx.window_divisor);
  const double boosted = std::min(p_.hint_share * share, static_cast<double>(p_.hint_share_cap));
  set_cwnd(std::max(share, boosted));
}

Duration Nscc::avg_delay() const { return Duration::ps(std::llround(avg_delay_ps_)); }

void Nscc::start(Time now) {
  if (started_) return;
  started_ = true;
  last_adjust_time_ = now;
  last_dec_time_ = now;
}

void Nscc::set_cwnd(double bytes) {
  // Every rule ends here: whole bytes, never below one MTU (the minimum
  // window, reference 5.5) nor above MaxWnd. NaN falls to the floor.
  const double lo = p_.mtu_bytes;
  const double hi = static_cast<double>(max_wnd_);
  const double v = bytes >= lo ? std::min(std::floor(bytes), hi) : lo;
  cwnd_ = static_cast<uint64_t>(v);
}

uint64_t Nscc::window_ceiling() const {
  // An explicit max_cwnd is a fixed ceiling; the derived one follows the
  // smallest base RTT seen and the current link speed (reference 5.3).
  if (cfg_.max_cwnd > 0) return p_.max_cwnd;
  return max_window(ctx_.link_bps, base_rtt_, ctx_.mtu_bytes);
}

void Nscc::update_base_rtt(Duration rtt) {
  if (rtt >= base_rtt_) return;
  base_rtt_ = rtt;
  max_wnd_ = window_ceiling();
  set_cwnd(static_cast<double>(cwnd_));
}

void Nscc::feed_delay(Duration delay) {
  avg_delay_ps_ += kNsccAvgDelayGain * (static_cast<double>(delay.count_ps()) - avg_delay_ps_);
}

void Nscc::on_send(Time now, uint32_t nominal) {
  start(now);
  inflight_ += nominal;
}

bool Nscc::apply_receiver_window(const AckInfo& ack) {
  // Reference 5.7. The penalty is a 7-bit field; 127 takes ~one packet per
  // RTT off every sender, so larger values are treated as 127.
  const uint64_t pen = std::min<uint64_t>(ack.rcv_cwnd_pen, 127);
  if (pen > 0) {
    if (saved_cwnd_ == 0) saved_cwnd_ = cwnd_;
    const double decrease = static_cast<double>((pen * ack.newly_rcvd_bytes) >> 7);
    // Do not let the window stay above what is actually in flight: the
    // receiver is the bottleneck, so unused window would only burst later.
    const double w = std::min(static_cast<double>(cwnd_), static_cast<double>(inflight_));
    set_cwnd(w - decrease);
    return true;
  }
  if (ack.restore_cwnd && saved_cwnd_ > 0) {
    set_cwnd(static_cast<double>(saved_cwnd_));
    saved_cwnd_ = 0;
  }
  return false;
}

void Nscc::on_ack(const AckInfo& ack) {
  start(ack.now);
  const uint64_t newly = ack.newly_rcvd_bytes;
  // Step 1 (reference 5.4).
  inflight_ -= static_cast<int64_t>(newly);
  bytes_ignored_ += static_cast<int64_t>(newly);
  received_bytes_ += newly;
  achieved_bytes_ += newly;
  // Step 2: the penalty holds for this SACK only; a receiver that stops
  // sending it (with or without restore) lets the window grow again.
  const bool rcv_limited = apply_receiver_window(ack);
  // Step 3.
  if (!ack.rtt_valid || ack.rtt <= Duration{}) return;
  update_base_rtt(ack.rtt);
  const Duration delay = ack.rtt - base_rtt_;
  feed_delay(delay);
  // Step 4.
  if (quick_adapt(ack.now, false, ack.ecn_marked, delay)) return;
  // Step 5: the quadrants.
  const bool queued = delay >= p_.target_delay;
  if (!ack.ecn_marked) {
    if (!rcv_limited) {
      if (queued) inc_bytes_ += p_.fi * static_cast<double>(newly);  // fair increase
      else proportional_increase(newly, delay);
    }
  } else if (queued) {
    multiplicative_decrease(ack.now);
  }
  // A mark below target: the path manager already moved the EV to SKIP;
  // the window stays (reference 5.6).

  // Step 6.
  if (ack.now - last_adjust_time_ >= p_.adjust_period_threshold || received_bytes_ > p_.adjust_bytes_threshold)
    fulfill(ack.now);
}

bool Nscc::fast_increase(uint64_t newly, Duration delay) {
  if (delay < kNsccFastIncreaseDelay) {
    fi_count_ += newly;
    // A whole window acknowledged with no queue: the path has spare capacity,
    // so grow by fi_scale per acknowledged byte until a queue shows up.
    if (fi_count_ > cwnd_ || increase_mode_) {
      set_cwnd(static_cast<double>(cwnd_) + static_cast<double>(newly) * p_.fi_scale);
      increase_mode_ = true;
      return true;
    }
  } else {
    fi_count_ = 0;
  }
  increase_mode_ = false;
  return false;
}

void Nscc::proportional_increase(uint64_t newly, Duration delay) {
  if (fast_increase(newly, delay)) return;
  const double headroom_s = static_cast<double>((p_.target_delay - delay).count_ps()) / kPsPerSecond;
  inc_bytes_ += p_.alpha * static_cast<double>(newly) * headroom_s;
}

void Nscc::multiplicative_decrease(Time now) {
  increase_mode_ = false;
  fi_count_ = 0;
  const double target = static_cast<double>(p_.target_delay.count_ps());
  // The average, not the sample: one late SACK must not halve the window.
  // Once per base RTT, so the decrease is seen before the next one.
  if (avg_delay_ps_ > target && now - last_dec_time_ > base_rtt_) {
    // Sized to drain the queue above target in about one RTT.
    const double factor = std::max(1.0 - p_.gamma * (avg_delay_ps_ - target) / avg_delay_ps_, p_.max_md_jump);
    set_cwnd(static_cast<double>(cwnd_) * factor);
    last_dec_time_ = now;
  }
}

void Nscc::fulfill(Time now) {
  const double w = static_cast<double>(cwnd_);
  double next = w + std::min(inc_bytes_ / w, w * p_.max_fulfill_growth);
  if (now - last_adjust_time_ >= p_.adjust_period_threshold) {
    next += p_.eta;
    last_adjust_time_ = now;
  }
  set_cwnd(next);
  inc_bytes_ = 0;
  received_bytes_ = 0;
}

bool Nscc::quick_adapt(Time now, bool loss, bool marked, Duration delay) {
  if (p_.disable_qa) return false;
  bool done = false;
  if (bytes_ignored_ < bytes_to_ignore_ && marked) {
    // The packets in flight at the last quick adapt were sent under the old
    // window; their marks and trims say nothing about the new one.
    done = true;
  } else if (now >= qa_endtime_ || !qa_window_open_) {
    if (qa_window_open_ && (trigger_qa_ || loss || delay > p_.qa_threshold) &&
        achieved_bytes_ < (max_wnd_ >> p_.qa_gate)) {
      // Delivered far less than the window in the last base_rtt + target:
      // the window is what the network actually carried.
      set_cwnd(static_cast<double>(std::max<uint64_t>(achieved_bytes_, p_.mtu_bytes)));
      bytes_to_ignore_ = inflight_;
      bytes_ignored_ = 0;
      trigger_qa_ = false;
      done = true;
    }
    achieved_bytes_ = 0;
    qa_window_open_ = true;
    qa_endtime_ = now + base_rtt_ + p_.target_delay;
  }
  if (done) {
    inc_bytes_ = 0;
    received_bytes_ = 0;
  }
  return done;
}

void Nscc::on_nack(const NackInfo& nack) {
  start(nack.now);
  inflight_ -= nack.nominal_bytes;
  if (nack.code != wire::NackCode::trimmed && nack.code != wire::NackCode::trimmed_lasthop) return;
  if (nack.rtt_valid && nack.rtt > Duration{}) update_base_rtt(nack.rtt);
  // A trim means a queue overflowed: count it as a delay sample of a full
  // queue (about one config base RTT, reference 5.4).
  feed_delay(p_.base_rtt);
  bytes_ignored_ += nack.nominal_bytes;
  // MRC has no receiver-credit CC, so a last-hop trim is a window signal too
  // (reference 3.11); only the path manager tells the two apart.
  trigger_qa_ = true;
  if (!quick_adapt(nack.now, true, true, Duration{}))
    set_cwnd(static_cast<double>(cwnd_) - static_cast<double>(nack.nominal_bytes));
}

void Nscc::on_inferred_loss(Time now, uint32_t nominal) {
  start(now);
  set_cwnd(static_cast<double>(cwnd_) - static_cast<double>(nominal));
  bytes_ignored_ += nominal;
  inflight_ -= nominal;
}

void Nscc::on_spurious_loss(Time now, uint32_t nominal) {
  (void)now;
  // The loss took `nominal` off the window (reference 3.8,
  // OnInferredLoss); the packet was only late, so give it back. set_cwnd
  // keeps the result under MaxWnd.
  set_cwnd(static_cast<double>(cwnd_) + static_cast<double>(nominal));
}

void Nscc::on_link_speed(uint64_t bps) {
  if (bps == 0) return;
  ctx_.link_bps = bps;
  p_ = derive_nscc_params(cfg_, ctx_);
  max_wnd_ = window_ceiling();
  set_cwnd(static_cast<double>(cwnd_));
}

}  // namespace mrc::core::cc
