// SPDX-License-Identifier: BSD-2-Clause
// DCQCN: the rate-based congestion control of the RoCEv2 baseline
// (algorithm "dcqcn"; Zhu et al., "Congestion Control for Large-Scale RDMA
// Deployments", SIGCOMM 2015). This is the reaction point (RP), run by the
// requester; the notification point (NP) is the RoCE responder, which sends
// at most one CNP per QP per ProtocolConfig::cnp_interval while ECN-CE data
// arrives (qp.hpp).
//
// State: current rate Rc, target rate Rt, alpha. The QP starts at the
// maximum rate (the line rate unless DcqcnConfig::max_rate_bps says less).
//
//   on a CNP (at most one cut per rate_reduce_period):
//     Rt = Rc;  Rc = max(Rc (1 - alpha/2), min_rate);  alpha = (1-g) alpha + g
//     and the rate-increase timer, byte counter and both stage counts restart;
//   every alpha_update_period without a CNP:  alpha = (1-g) alpha;
//   an increase event (the timer fired: T stage + 1, or byte_counter_bytes
//   were sent: BC stage + 1), with F = fast_recovery_steps:
//     max(T, BC) <  F: fast recovery   Rc = (Rt + Rc) / 2
//     min(T, BC) >  F: hyper increase  Rt += (min(T, BC) - F) R_HAI; Rc = (Rt + Rc) / 2
//     otherwise:       additive        Rt += R_AI;                   Rc = (Rt + Rc) / 2
//   with Rt capped at the maximum rate. Once Rt is at the maximum and Rc
//   within 0.1% of it, the rate limiter is released (Rc = maximum, increase
//   timer stopped) until the next CNP, as NICs do.
//
// Timers run on the times the QP passes in, never on a clock: every call
// first replays the timer events due up to its `now`, in time order (alpha
// decay in closed form), so the controller needs no wakeups of its own. The
// byte counter advances in on_send(), after the timers are replayed, so
// timer and byte events keep their real order.
//
// Pacing: while Rc is below the link rate, packets leave no closer than
// nominal bytes / Rc apart (next_send_time); no credit accumulates while the
// QP is idle or blocked, so there are no bursts. At the link rate the QP is
// not paced. The window is unlimited: DCQCN bounds nothing but the rate (the
// RoCE QP's PSN window still bounds what is in flight).
#pragma once

#include <cstdint>

#include "core/cc/controller.hpp"

namespace mrc::core::cc {

/// Rc within this fraction of the maximum rate (with Rt at the maximum)
/// counts as recovered: the rate limiter is released.
inline constexpr double kDcqcnRecoveredFraction = 1e-3;

/// The rates a DcqcnConfig resolves to for one line rate (0 fields derived).
struct DcqcnParams {
  uint64_t line_bps = 0;      ///< the QP's link rate (pacing stops at it)
  uint64_t max_rate_bps = 0;  ///< start and recovery rate
  uint64_t min_rate_bps = 0;
  uint64_t rate_ai_bps = 0;
  uint64_t rate_hai_bps = 0;
};

/// Resolves `cfg` for a QP whose link rate is `line_bps` (see DcqcnConfig).
DcqcnParams derive_dcqcn_params(const DcqcnConfig& cfg, uint64_t line_bps);

class Dcqcn final : public Controller {
 public:
  /// Unlimited window: DCQCN limits the rate only.
  static constexpr uint64_t kUnlimitedWindow = uint64_t{1} << 62;

  Dcqcn(const DcqcnConfig& cfg, const CcContext& ctx);

  std::string_view name() const override { return kCcDcqcn; }
  uint64_t cwnd_bytes() const override { return kUnlimitedWindow; }
  /// Bytes sent and not yet acknowledged or declared lost (reporting only).
  int64_t inflight_bytes() const override { return inflight_; }

  /// now when not pacing (Rc at the link rate), else max(now, the time the
  /// previous packet's gap ends).
  Time next_send_time(Time now, uint32_t nominal) override;
  /// Counts the bytes (byte counter) and starts the next packet's gap.
  void on_send(Time now, uint32_t nominal) override;
  /// ACK/SACK, NACK and losses only return bytes from inflight: DCQCN reacts
  /// to CNPs alone.
  void on_ack(const AckInfo& ack) override;
  void on_nack(const NackInfo& nack) override;
  void on_inferred_loss(Time now, uint32_t nominal) override;
  /// Derived rates follow the new line rate; an unthrottled QP runs at it,
  /// a throttled one keeps its rates (capped at the new maximum).
  void on_link_speed(uint64_t bps) override;
  /// Rate cut (see the file comment), unless within rate_reduce_period of
  /// the previous cut, in which case the CNP is ignored entirely.
  void on_cnp(Time now) override;

  /// Replays the timer events due up to `now`. Every other call does this
  /// first; reports and tests call it to read the state at a given time.
  void advance(Time now);

  // State as of the last call.
  double rate_bps() const { return rc_; }     ///< current rate Rc
  double target_bps() const { return rt_; }   ///< target rate Rt
  double alpha() const { return alpha_; }
  /// A cut happened and the rate has not recovered to the maximum yet.
  bool limiting() const { return active_; }
  uint32_t timer_stage() const { return t_stage_; }
  uint32_t byte_stage() const { return bc_stage_; }
  uint64_t cuts() const { return cuts_; }
  uint64_t cnps_ignored() const { return cnps_ignored_; }
  const DcqcnParams& params() const { return p_; }

 private:
  void increase();
  bool paced() const { return rc_ < static_cast<double>(p_.line_bps); }

  DcqcnConfig cfg_;
  CcContext ctx_;
  DcqcnParams p_;
  double rc_ = 0;
  double rt_ = 0;
  double alpha_ = 1;
  bool active_ = false;
  uint32_t t_stage_ = 0;
  uint32_t bc_stage_ = 0;
  uint64_t bytes_since_cut_ = 0;
  Time next_increase_ = Time::never();
  Time next_alpha_ = Time::never();
  bool cut_yet_ = false;
  Time last_cut_;
  Time next_free_ = Time::zero();
  int64_t inflight_ = 0;
  uint64_t cuts_ = 0;
  uint64_t cnps_ignored_ = 0;
};

}  // namespace mrc::core::cc
