// SPDX-License-Identifier: BSD-2-Clause
#include "core/incast_guard.hpp"

#include <algorithm>

namespace mrc::core {

void IncastGuard::roll(Time now) {
  if (now < interval_end_) return;
  // An interval that ended long ago (no arrivals since) says nothing about now.
  const bool stale = interval_end_ + cfg_.interval <= now;
  prev_packets_ = stale ? 0 : packets_;
  prev_trims_ = stale ? 0 : trims_;
  prev_active_ = stale ? 0 : active_;
  packets_ = trims_ = active_ = 0;
  epoch_ += stale ? 2 : 1;
  interval_end_ = now + cfg_.interval;
}

void IncastGuard::sync(IncastGuardQp& qp) const {
  if (qp.epoch == epoch_) return;
  qp.prev = qp.epoch + 1 == epoch_ ? qp.count : 0;
  qp.count = 0;
  qp.epoch = epoch_;
}

void IncastGuard::on_arrival(Time now, IncastGuardQp& qp, bool trimmed_last_hop) {
  if (!cfg_.enabled) return;
  roll(now);
  sync(qp);
  if (qp.count++ == 0) ++active_;
  ++packets_;
  trims_ += trimmed_last_hop;
}

uint8_t IncastGuard::penalty(Time now, IncastGuardQp& qp) {
  if (!cfg_.enabled) return 0;
  roll(now);
  sync(qp);
  if (prev_trims_ == 0 || prev_active_ == 0 || qp.prev == 0) return 0;
  const double share = static_cast<double>(prev_trims_) / static_cast<double>(prev_packets_);
  const double fair = static_cast<double>(prev_packets_) / static_cast<double>(prev_active_);
  const double pen = 128.0 * share * static_cast<double>(qp.prev) / fair;
  return static_cast<uint8_t>(std::min(pen, 127.0));
}

}  // namespace mrc::core
