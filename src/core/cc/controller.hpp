// SPDX-License-Identifier: BSD-2-Clause
// Congestion-control interface (reference 5.1).
//
// A Controller owns the QP's congestion window, its view of bytes in flight
// and, for rate-based algorithms, the QP's pacing. The QP calls it on every
// send, SACK (or RC ACK), NACK, inferred loss and CNP; it answers can_send()
// and next_send_time(). Controllers are built by make_controller() from a CC
// profile, so the simulator can compare algorithms on the same run.
//
// Bytes are nominal packet sizes (UDP payload + 40 B, reference 5.1), the same
// unit the responder's cumulative rcvd_bytes counter uses.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "core/config.hpp"
#include "util/time.hpp"
#include "wire/headers.hpp"

namespace mrc::core::cc {

/// What one SACK tells the controller.
struct AckInfo {
  Time now;
  uint64_t newly_rcvd_bytes = 0;  ///< from the rcvd_bytes clock (reference 5.2)
  bool ecn_marked = false;        ///< SACK M != NONE
  bool rtt_valid = false;
  Duration rtt;                   ///< sample for the triggering packet
  uint8_t rcv_cwnd_pen = 0;       ///< receiver window penalty (reference 5.7)
  bool restore_cwnd = false;
};

/// What one retriable NACK tells the controller.
struct NackInfo {
  Time now;
  uint32_t nominal_bytes = 0;
  wire::NackCode code = wire::NackCode::trimmed;
  bool rtt_valid = false;
  Duration rtt;
};

/// Link facts a controller derives its defaults from.
struct CcContext {
  uint32_t mtu_bytes = 4096;
  uint64_t link_bps = 100'000'000'000ull;  ///< sum of the QP's usable port rates
  Duration base_rtt = Duration::us(10);  ///< the endpoint's config_base_rtt
  /// The QP's packets are trimmable and the peer sends trim NACKs, so NSCC
  /// derives its target delay and quick-adapt threshold for a trimming
  /// network (reference 5.5).
  bool trimming = true;
  /// The QP's hint says it will get 1/window_divisor of the target's line
  /// rate (QpHint::window_divisor): window controllers start there rather
  /// than at line rate. 1 = no hint.
  uint32_t window_divisor = 1;
};

class Controller {
 public:
  virtual ~Controller() = default;
  virtual std::string_view name() const = 0;

  virtual uint64_t cwnd_bytes() const = 0;
  virtual int64_t inflight_bytes() const = 0;
  /// May a packet of `nominal` bytes be sent now?
  bool can_send(uint32_t nominal) const {
    const int64_t inflight = inflight_bytes();
    return inflight <= 0 || static_cast<uint64_t>(inflight) + nominal <= cwnd_bytes();
  }

  /// Earliest time a packet of `nominal` bytes may leave (pacing). A QP
  /// whose answer is later than `now` sends nothing and arms its pacing
  /// timer for that time. Window-based controllers never pace: `now`.
  /// Not const: a rate-based controller first runs its own timers up to
  /// `now` (they are driven by the times passed in, never by a clock).
  virtual Time next_send_time(Time now, uint32_t nominal) {
    (void)nominal;
    return now;
  }

  /// A packet of `nominal` bytes left (a first transmission or a
  /// retransmission); rate-based controllers also advance their pacing clock.
  virtual void on_send(Time now, uint32_t nominal) = 0;
  virtual void on_ack(const AckInfo& ack) = 0;
  virtual void on_nack(const NackInfo& nack) = 0;
  /// A packet was declared lost without a NACK (loss rule or timeout).
  virtual void on_inferred_loss(Time now, uint32_t nominal) = 0;
  /// A loss declared by on_inferred_loss proved spurious (the packet
  /// arrived): undo the window penalty it took. The in-flight accounting
  /// stays as it is (the acknowledgement and any retransmission account
  /// for the bytes).
  virtual void on_spurious_loss(Time now, uint32_t nominal) { (void)now, (void)nominal; }
  /// The QP's usable link speed changed (a port went down or came back).
  virtual void on_link_speed(uint64_t bps) = 0;
  /// A RoCEv2 CNP arrived for this QP: the path of its data is congested
  /// (DCQCN's signal). Only RoCE RC QPs receive CNPs; window controllers
  /// ignore them.
  virtual void on_cnp(Time now) { (void)now; }
};

/// Builds the controller a CC profile names. The profile must have passed
/// CcProfile::validate().
std::unique_ptr<Controller> make_controller(const CcProfile& profile, const CcContext& ctx);

}  // namespace mrc::core::cc
