// SPDX-License-Identifier: BSD-2-Clause
// Fixed-window controller: a constant window, exact inflight accounting.
//
// The baseline before NSCC and the "CC off" ablation. With window_bytes = 0
// the window is 1.5 x BDP of the QP's usable links, recomputed when a port
// goes down, so a QP that loses a plane does not overrun the rest.
#pragma once

#include "core/cc/controller.hpp"

namespace mrc::core::cc {

class FixedWindow final : public Controller {
 public:
  FixedWindow(const FixedWindowConfig& cfg, const CcContext& ctx);

  std::string_view name() const override { return "fixed"; }
  uint64_t cwnd_bytes() const override { return cwnd_; }
  int64_t inflight_bytes() const override { return inflight_; }
  void on_send(Time now, uint32_t nominal) override;
  void on_ack(const AckInfo& ack) override;
  void on_nack(const NackInfo& nack) override;
  void on_inferred_loss(Time now, uint32_t nominal) override;
  void on_link_speed(uint64_t bps) override;

 private:
  uint64_t derive(uint64_t bps) const;
  FixedWindowConfig cfg_;
  CcContext ctx_;
  uint64_t cwnd_ = 0;
  int64_t inflight_ = 0;
};

}  // namespace mrc::core::cc
