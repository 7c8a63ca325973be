// SPDX-License-Identifier: BSD-2-Clause
// NSCC: the UET 1.0 network-signal congestion control MRC runs per QP
// (algorithm "uet-1.0-nscc", reference 5; MRC follows UET 1.0.1).
//
// One window covers every path and plane of the QP (reference 5.6). The
// controller reads two signals from each SACK: the queueing delay (RTT minus
// the smallest RTT seen) and whether the SACKed packet was ECN-marked (any
// mark, SKIP_ONCE or ALWAYS_SKIP: reference 8 item 21). Their four
// combinations pick the window rule (reference 5.4):
//
//   | mark | delay vs target | rule                                         |
//   |------|-----------------|----------------------------------------------|
//   | no   | >= target       | fair increase (~fi bytes per RTT)            |
//   | no   | <  target       | proportional increase, or fast increase when |
//   |      |                 | a whole window saw ~zero delay               |
//   | yes  | >= target       | multiplicative decrease, at most once per    |
//   |      |                 | base RTT, sized by the average delay         |
//   | yes  | <  target       | none: a mark alone only moves the EV (SKIP)  |
//
// Increases are batched: each SACK adds to inc_bytes, and the window takes
// inc_bytes / cwnd every adjust_bytes_threshold bytes or adjust period
// ("fulfill"). Quick adapt cuts the window to what was actually delivered in
// the last base_rtt + target when a trim or a huge delay shows the window is
// far too large. Trims and inferred losses take the packet's size off the
// window; the responder can impose a window penalty (reference 5.7).
//
// Every byte count is a nominal size (UDP payload + 40 B, reference 5.1) held
// in 64 bits; the fractional parameters and the increase accumulator are
// doubles, so an 800 Gb/s QP (MaxWnd 1.5 MB, inc_bytes ~1e11 per SACK) does
// not overflow. The window is whole bytes, rounded down after every rule, and
// always within [MTU, MaxWnd].
#pragma once

#include <cstdint>

#include "core/cc/controller.hpp"

namespace mrc::core::cc {

/// Queueing delay below which a SACK counts as "no queue" for fast increase
/// (reference 5.4; the tolerance htsim uses, since delay samples have 128 ns
/// resolution and never read exactly zero under load).
inline constexpr Duration kNsccFastIncreaseDelay = Duration::us(1);

/// Gain of the average-delay EWMA: avg += gain x (sample - avg) per RTT
/// sample. Reference 5.4 leaves the average implementation-defined ("over
/// ~the last base_rtt"); 0.0125 is htsim's gain. With a SACK every 16 KiB an
/// 800 Gb/s window yields ~90 samples per RTT, so the average follows within
/// about one RTT; slower QPs average over several RTTs.
inline constexpr double kNsccAvgDelayGain = 0.0125;

/// Reference BDP the UEC defaults scale from: 100 Gb/s x 12 us (reference 5.5).
inline constexpr double kNsccReferenceBdpBytes = 150'000.0;
/// Reference target delay the UEC defaults scale from (reference 5.5).
inline constexpr Duration kNsccReferenceTarget = Duration::us(12);

/// The parameters an NsccConfig resolves to for one QP's links: explicit
/// fields as given, zero fields derived per reference 5.5. Read-only
/// reporting view; Nscc::params() is the live copy.
struct NsccParams {
  uint32_t mtu_bytes = 0;         ///< the minimum window
  uint64_t link_bps = 0;          ///< sum of the QP's usable plane rates (item 14)
  Duration base_rtt;              ///< config_base_rtt
  double bdp_bytes = 0;           ///< link_bps / 8 x base_rtt
  double scaling_a = 0;           ///< bdp_bytes / 150,000
  double scaling_b = 0;           ///< target_delay / 12 us
  Duration target_delay;          ///< 0.75 (trimming) or 1.0 x base_rtt
  /// Proportional-increase gain in bytes per second: an unmarked SACK of n
  /// bytes at queueing delay d < target adds alpha x n x (target - d) to
  /// inc_bytes, so a window gains about alpha x (target - d) bytes per RTT.
  /// 4 x MTU x scaling_a x scaling_b / target. Not configurable (OCP has no
  /// alpha field).
  double alpha = 0;
  double fi = 0;                  ///< bytes per RTT, 5 x MTU x scaling_a
  double fi_scale = 0;            ///< 0.25 x scaling_a
  double eta = 0;                 ///< bytes per adjust period, 0.15 x MTU x scaling_a
  double gamma = 0;               ///< 0.8
  double max_md_jump = 0;         ///< 0.5
  uint64_t max_cwnd = 0;          ///< 1.5 x BDP, at least one MTU
  uint8_t qa_gate = 0;            ///< 3
  /// 4 x target without trimming; Duration::infinite() (never) with trimming.
  Duration qa_threshold;
  bool disable_qa = false;
  uint64_t adjust_bytes_threshold = 0;  ///< 8 x MTU
  Duration adjust_period_threshold;     ///< 1 x base_rtt
  double max_fulfill_growth = 0;        ///< 1.0: a window update at most doubles the window
  double hint_share = 0;                ///< a small hinted share's multiplier (NsccConfig)
  uint64_t hint_share_cap = 0;          ///< ... up to this many bytes (hint_share_cap x MTU)
};

/// Resolves `cfg` against the QP's link facts (reference 5.5). `cfg` must have
/// passed CcProfile::validate(). Pure: the simulator and reports use it to
/// print the parameters a run will use.
NsccParams derive_nscc_params(const NsccConfig& cfg, const CcContext& ctx);

/// The NSCC window of one QP. Built by make_controller() for a profile whose
/// algorithm is "uet-1.0-nscc"; every call is O(1) and never allocates.
///
/// Time starts at the first call that carries `now`: the adjust-period and
/// once-per-RTT decrease clocks (last_adjust_time, last_dec_time, reference
/// 5.3) start there, as if the QP had been created then.
class Nscc final : public Controller {
 public:
  Nscc(const NsccConfig& cfg, const CcContext& ctx);

  std::string_view name() const override { return kCcNscc; }
  /// Current window in bytes; starts at MaxWnd (line rate, reference 5.4).
  uint64_t cwnd_bytes() const override { return cwnd_; }
  /// Bytes sent and not yet acknowledged, NACKed or declared lost. Signed:
  /// the rcvd_bytes clock counts 256-byte units, so it may run slightly
  /// ahead of the nominal sizes sent (reference 5.2).
  int64_t inflight_bytes() const override { return inflight_; }

  /// OnSend (reference 5.4): inflight += nominal.
  void on_send(Time now, uint32_t nominal) override;
  /// OnACK (reference 5.4 steps 1-6): inflight and the byte counters, the
  /// receiver penalty or restore (5.7), then, with a valid RTT sample only:
  /// base RTT and MaxWnd, the delay average, quick adapt, the quadrant rule
  /// and the batched fulfill step. A non-positive RTT sample (the timestamp
  /// tick is coarser than the path) counts as invalid.
  void on_ack(const AckInfo& ack) override;
  /// OnNACK (reference 5.4, 3.11). TRIMMED and TRIMMED_LASTHOP (MRC has no
  /// receiver-credit CC, so both count): base RTT from the NACK's RTT, the
  /// config base RTT fed into the delay average as the sample of a full
  /// queue, quick adapt triggered, and the window reduced by the packet's
  /// size if quick adapt did not act. Every other code only returns the
  /// packet's bytes from inflight.
  void on_nack(const NackInfo& nack) override;
  /// OnInferredLoss (reference 5.4): window and inflight minus the packet.
  void on_inferred_loss(Time now, uint32_t nominal) override;
  void on_spurious_loss(Time now, uint32_t nominal) override;
  /// Link speed changed (item 14): the defaults that depend on it (BDP and
  /// scaling_a, alpha, fi, fi_scale, eta, max_cwnd) are derived again unless
  /// set explicitly, MaxWnd follows, and the window is clamped to it. A
  /// speed of 0 is ignored.
  void on_link_speed(uint64_t bps) override;

  /// The resolved parameters for the current link speed.
  const NsccParams& params() const { return p_; }
  /// Current MaxWnd: params().max_cwnd, or 1.5 x link x base_rtt() once a
  /// smaller base RTT was measured (reference 5.3).
  uint64_t max_cwnd() const { return max_wnd_; }
  /// Smallest RTT seen, starting from the config base RTT (reference 5.3).
  Duration base_rtt() const { return base_rtt_; }
  /// Running average of the queueing delay (see kNsccAvgDelayGain).
  Duration avg_delay() const;
  /// Window saved by the first receiver penalty, 0 when not penalised (5.7).
  uint64_t saved_cwnd() const { return saved_cwnd_; }
  /// True while in fast-increase mode (reference 5.4).
  bool in_fast_increase() const { return increase_mode_; }

 private:
  void start(Time now);
  void set_cwnd(double bytes);
  uint64_t window_ceiling() const;
  void update_base_rtt(Duration rtt);
  void feed_delay(Duration delay);
  bool apply_receiver_window(const AckInfo& ack);
  bool quick_adapt(Time now, bool loss, bool marked, Duration delay);
  void proportional_increase(uint64_t newly, Duration delay);
  bool fast_increase(uint64_t newly, Duration delay);
  void multiplicative_decrease(Time now);
  void fulfill(Time now);

  NsccConfig cfg_;
  CcContext ctx_;
  NsccParams p_;

  // State per QPCC (reference 5.3, UEC Table 3-77).
  uint64_t cwnd_ = 0;
  int64_t inflight_ = 0;
  uint64_t saved_cwnd_ = 0;
  Duration base_rtt_;
  uint64_t max_wnd_ = 0;
  double avg_delay_ps_ = 0;
  uint64_t achieved_bytes_ = 0;
  uint64_t received_bytes_ = 0;
  uint64_t fi_count_ = 0;
  double inc_bytes_ = 0;          ///< bytes^2: divided by cwnd at fulfill
  bool increase_mode_ = false;
  bool trigger_qa_ = false;
  bool qa_window_open_ = false;   ///< qa_endtime != 0 in the reference
  Time qa_endtime_;
  int64_t bytes_to_ignore_ = 0;
  int64_t bytes_ignored_ = 0;
  bool started_ = false;
  Time last_adjust_time_;
  Time last_dec_time_;
};

}  // namespace mrc::core::cc
