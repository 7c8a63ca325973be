// Qp::describe(): a one-line dump of a QP's internal state for diagnostics.
// Kept apart from the hot paths in qp.cc / requester.cc.
#include <string>

#include "core/qp.hpp"

namespace mrc::core {

namespace {

void append(std::string& s, const char* key, uint64_t v) {
  s += ' ';
  s += key;
  s += '=';
  s += std::to_string(v);
}

void append_time(std::string& s, const char* key, Time t, Time now) {
  s += ' ';
  s += key;
  s += '=';
  if (t == Time::never()) {
    s += "never";
  } else {
    const double us = (t - now).to_us();
    s += std::to_string(us);
    s += "us";
  }
}

}  // namespace

std::string Qp::describe(Time now) const {
  std::string s = "qpn=" + std::to_string(qpn_) + " " + to_string(state_) + " " + to_string(init_.transport);
  append(s, "sq", sq_.size());
  append(s, "sq_next", sq_next_);
  append(s, "snd_una", snd_una_);
  append(s, "next_psn", next_psn_);
  append(s, "window_psns", window_psns());
  append(s, "rtx_q", rtx_q_.size());
  append(s, "fifo", fifo_.size());
  append(s, "retry", retry_count_);
  // What the records say is in flight, to compare with the controller's count.
  uint64_t rec_inflight = 0, rec_lost = 0;
  for (uint64_t psn = snd_una_; psn < next_psn_ && psn - snd_una_ <= rec_mask_; ++psn) {
    const SendRecord& r = records_[psn & rec_mask_];
    if (acked_.test(psn)) continue;
    if (r.state == PktState::inflight) rec_inflight += r.nominal;
    else if (r.state == PktState::lost) ++rec_lost;
  }
  append(s, "rec_inflight", rec_inflight);
  append(s, "rec_lost", rec_lost);
  append(s, "tail_probe_sent", tail_probe_sent_);
  s += " srtt=" + std::to_string(srtt_.to_us()) + "us";
  if (cc_) {
    s += " cc=";
    s += cc_->name();
    append(s, "cwnd", cc_->cwnd_bytes());
    s += " inflight=" + std::to_string(cc_->inflight_bytes());
  }
  static constexpr const char* kTimers[] = {"t_recovery", "t_sack", "t_probe", "t_rprobe", "t_pacing"};
  for (size_t i = 0; i < static_cast<size_t>(QpTimer::count); ++i) append_time(s, kTimers[i], timers_[i], now);
  if (path_) {
    append(s, "ev_good", path_->count(EvState::good));
    append(s, "ev_skip", path_->count(EvState::skip));
    append(s, "ev_bad", path_->count(EvState::assumed_bad));
    append(s, "ev_usable_active", path_->usable_active());
    append(s, "ev_ports", path_->sendable_ports());
    append_time(s, "next_probe", path_->next_probe(), now);
  }
  append(s, "rx_data", stats_.data_packets_received);
  append(s, "ctrl_q", ctrl_q_.size());
  return s;
}

}  // namespace mrc::core
