// SPDX-License-Identifier: BSD-2-Clause
// IncastGuard: the responder side of NSCC's destination flow control
// (reference 5.7), shared by every QP of an endpoint.
//
// The reference leaves open how a responder computes rcv_cwnd_pen. MRC
// switches do not ECN-mark the last hop, so a many-to-one incast shows at the
// responder only as TRIMMED_LASTHOP arrivals. The senders' NSCC reacts to
// each trim, but also keeps adding its fair increase (about fi bytes per RTT
// each, ~13% of a BDP at the defaults), so 64 senders overshoot the last hop
// by several BDPs every RTT and most of their packets are trimmed and resent.
//
// The guard counts, per interval of one base RTT, the data packets that
// arrived (trimmed or not), how many were trimmed on the last hop, and how
// many came from each QP. On every SACK of the next interval it puts
//     pen = 128 x (trimmed share) x (this QP's arrivals / the fair share)
// where the fair share is the arrivals per active QP. So the senders' total
// window shrinks by about the trimmed share per RTT, a sender above its fair
// share shrinks faster and one far below it is not penalised and keeps
// growing: the responder, which alone sees every sender, steers them to
// equal shares. With no trims in the last interval there is no penalty. It
// never sets the restore bit: restoring the pre-incast windows would
// recreate the overshoot.
#pragma once

#include <cstdint>

#include "util/time.hpp"

namespace mrc::core {

struct IncastGuardConfig {
  bool enabled = true;
  Duration interval;  ///< measurement interval; 0 = the endpoint's base RTT
};

/// What the guard keeps per QP: its arrivals in the current and the previous
/// interval (reset lazily, by interval number).
struct IncastGuardQp {
  uint64_t epoch = 0;
  uint32_t count = 0;  ///< arrivals in interval `epoch`
  uint32_t prev = 0;   ///< arrivals in interval `epoch - 1`
};

class IncastGuard {
 public:
  void configure(const IncastGuardConfig& c) { cfg_ = c; }
  /// A data packet for `qp` arrived, or its header after a trim.
  void on_arrival(Time now, IncastGuardQp& qp, bool trimmed_last_hop);
  /// rcv_cwnd_pen (0..127) for a SACK `qp` sends now.
  uint8_t penalty(Time now, IncastGuardQp& qp);

 private:
  void roll(Time now);
  void sync(IncastGuardQp& qp) const;

  IncastGuardConfig cfg_;
  Time interval_end_;
  uint64_t epoch_ = 1;
  uint32_t packets_ = 0, trims_ = 0, active_ = 0;            ///< this interval
  uint32_t prev_packets_ = 0, prev_trims_ = 0, prev_active_ = 0;  ///< the previous one
};

}  // namespace mrc::core
