// SPDX-License-Identifier: BSD-2-Clause
#include "core/config.hpp"

#include <cmath>
#include <set>
#include <string>

namespace mrc::core {

namespace {
Status reject(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return Errc::invalid_argument;
}
}  // namespace

Status EndpointConfig::validate(std::string* why) const {
  if (qpn_shard_bits > 4)
    return reject(why, "endpoint.qpn_shard_bits: must be 0..4 (at most 16 shards)");
  if (qpn_shard >= (1u << qpn_shard_bits))
    return reject(why, "endpoint.qpn_shard: must be below 2^qpn_shard_bits");
  if (ports.empty() || ports.size() > 32)
    return reject(why, "ports: need 1..32 ports (one per plane); got " + std::to_string(ports.size()));
  for (size_t i = 0; i < ports.size(); ++i)
    if (ports[i].rate_bps == 0)
      return reject(why, "ports[" + std::to_string(i) + "].rate_bps: must be > 0 (e.g. 100e9)");
  // QPNs are drawn at random from the shard's 2^(24 - qpn_shard_bits)
  // values: at most half of them in use keeps a draw to two tries or so.
  if (max_qps == 0 || max_qps > (1u << (23 - qpn_shard_bits)))
    return reject(why, "max_qps: must be in 1.." + std::to_string(1u << (23 - qpn_shard_bits)) +
                           " (half the QPNs of a shard of qpn_shard_bits)");
  if (max_send_wr == 0 || max_recv_wr == 0)
    return reject(why, "max_send_wr / max_recv_wr: must be > 0");
  if (max_mpr == 0) return reject(why, "max_mpr: must be >= 1 (units of 128 PSNs)");
  const ProtocolConfig& p = protocol;
  if (p.sack_bytes_threshold == 0)
    return reject(why, "protocol.sack_bytes_threshold: must be > 0 (default 16384)");
  if (p.sack_coalesce_delay <= Duration{})
    return reject(why, "protocol.sack_coalesce_delay: must be > 0 (default 1 us)");
  if (p.sack_coalesce_max < p.sack_coalesce_delay)
    return reject(why, "protocol.sack_coalesce_max: must be >= sack_coalesce_delay (default 16 us)");
  if (p.timestamp_tick <= Duration{})
    return reject(why, "protocol.timestamp_tick: must be > 0 (default 128 ns)");
  if (p.base_rtt <= Duration{}) return reject(why, "protocol.base_rtt: must be > 0 (e.g. 10 us)");
  if (p.reorder_packets == 0 || p.reorder_packets > 3)
    return reject(why, "protocol.reorder_packets: must be 1..3 (default 3)");
  if (p.reorder_allowance < Duration{})
    return reject(why, "protocol.reorder_allowance: must be >= 0 (default 5 us)");
  if (p.reorder_max_multiplier == 0 || p.reorder_max_multiplier > 64)
    return reject(why, "protocol.reorder_max_multiplier: must be 1..64 (default 8; 1 = no adaptation)");
  if (p.reorder_initial_multiplier == 0 || p.reorder_initial_multiplier > p.reorder_max_multiplier)
    return reject(why, "protocol.reorder_initial_multiplier: must be 1..reorder_max_multiplier (default 2)");
  if (p.reorder_decay <= Duration{})
    return reject(why, "protocol.reorder_decay: must be > 0 (default 1 ms)");
  if (p.loss_confirm_wait < Duration{})
    return reject(why, "protocol.loss_confirm_wait: must be >= 0 (0 = 1.5 base RTTs)");
  if (p.loss_confirm_copies < 1 || p.loss_confirm_copies > 4)
    return reject(why, "protocol.loss_confirm_copies: must be 1..4 (default 2; 1 = one probe per confirming try)");
  if (p.loss_confirm_probes < 1 || p.loss_confirm_probes > 16)
    return reject(why, "protocol.loss_confirm_probes: must be 1..16 (default 3; 1 = one unanswered probe retires, as the reference)");
  if (!(p.gray_loss_factor == 0 || (p.gray_loss_factor >= 1 && p.gray_loss_factor <= 1000)))
    return reject(why, "protocol.gray_loss_factor: must be 0 (off) or 1..1000 (how many times its siblings' loss rate retires an EV; default 3)");
  if (p.gray_loss_vouches < 1 || p.gray_loss_vouches > 255)
    return reject(why, "protocol.gray_loss_vouches: must be 1..255 (confirming probes in a row before a loss retires the EV)");
  if (p.probe_interval <= Duration{} || p.probe_interval_max < p.probe_interval)
    return reject(why, "protocol.probe_interval: must be > 0 and <= probe_interval_max");
  if (p.probe_resurrect_count == 0 || p.probe_resurrect_count > 255)
    return reject(why, "protocol.probe_resurrect_count: must be 1..255 (default 2)");
  if (p.ev_swap_marks > 255)
    return reject(why, "protocol.ev_swap_marks: must be 0..255 (default 3; 0 = never swap, SKIP only)");
  if (p.reverse_evs_per_port == 0 || p.reverse_evs_per_port > 64)
    return reject(why, "protocol.reverse_evs_per_port: must be 1..64 (default 4)");
  if (p.reverse_probe_interval <= Duration{})
    return reject(why, "protocol.reverse_probe_interval: must be > 0");
  if (p.rc_ack_packets == 0)
    return reject(why, "protocol.rc_ack_packets: must be > 0 (default 16)");
  if (p.rc_ack_delay <= Duration{})
    return reject(why, "protocol.rc_ack_delay: must be > 0 (default 1 us)");
  if (p.cnp_interval < Duration{})
    return reject(why, "protocol.cnp_interval: must be >= 0 (default 50 us; 0 = a CNP per marked packet)");
  if (p.skip_max < Duration{})
    return reject(why, "protocol.skip_max: must be >= 0 (0 = no time cap, one rotation)");
  if (p.tail_probes > 16)
    return reject(why, "protocol.tail_probes: must be 0..16 (default 3)");
  if (p.ev_burst == 0 || p.ev_burst > 64)
    return reject(why, "protocol.ev_burst: must be 1..64 (default 1 = per-packet spraying)");
  if (p.port_status_repeats == 0 || p.port_status_repeats > 64)
    return reject(why, "protocol.port_status_repeats: must be 1..64 (default 3)");
  if (p.port_status_interval <= Duration{})
    return reject(why, "protocol.port_status_interval: must be > 0 (default 50 us)");
  if (p.port_status_max_interval < Duration{} ||
      (p.port_status_max_interval > Duration{} && p.port_status_max_interval < p.port_status_interval))
    return reject(why, "protocol.port_status_max_interval: must be 0 (no re-sends past port_status_repeats) or >= "
                       "port_status_interval (default 10 ms)");
  if (p.peer_port_recheck < Duration{})
    return reject(why, "protocol.peer_port_recheck: must be >= 0 (default 100 ms; 0 = never re-check)");
  if (p.ep_reply_burst == 0)
    return reject(why, "protocol.ep_reply_burst: must be > 0 (default 64)");
  if (p.ep_reply_source_burst == 0)
    return reject(why, "protocol.ep_reply_source_burst: must be > 0 (default 8)");
  if (p.ep_reply_source_interval < Duration{})
    return reject(why, "protocol.ep_reply_source_interval: must be >= 0 (default 1 ms; 0 = no refill)");
  if (p.ep_reply_interval < Duration{})
    return reject(why, "protocol.ep_reply_interval: must be >= 0 (default 500 ns; 0 = no rate limit)");
  const IncastGuardConfig& ig = p.incast_guard;
  if (ig.interval < Duration{})
    return reject(why, "protocol.incast_guard.interval: must be >= 0 (0 = one base_rtt)");
  return {};
}

Status EvProfile::validate(uint32_t num_ports, std::string* why) const {
  if (num_ports == 0) return reject(why, "EV profile: the endpoint has no ports");
  if (explicit_evs.empty()) {
    if (entropy_bits == 0 || entropy_bits > 32)
      return reject(why, "ev_profile.entropy_bits: must be 1..32 (16 = UDP source port)");
    if (ev_count < num_ports)
      return reject(why, "ev_profile.ev_count: need at least one EV per port (" + std::to_string(num_ports) + ")");
    if (ev_count > 4096) return reject(why, "ev_profile.ev_count: at most 4096 EVs per QP");
    if (entropy_bits < 32 && uint64_t{ev_count} * 2 > (uint64_t{1} << entropy_bits))
      return reject(why, "ev_profile.entropy_bits: the value space must be at least twice ev_count");
  } else {
    if (explicit_evs.size() > 4096) return reject(why, "ev_profile.explicit_evs: at most 4096 EVs per QP");
    std::set<uint32_t> seen;
    for (size_t i = 0; i < explicit_evs.size(); ++i) {
      if (explicit_evs[i].port >= num_ports)
        return reject(why, "ev_profile.explicit_evs[" + std::to_string(i) + "].port: no such port");
      if (!seen.insert(explicit_evs[i].value).second)
        return reject(why, "ev_profile.explicit_evs[" + std::to_string(i) + "].value: duplicate EV value");
    }
  }
  if (wire_evs && wire_evs->size() != explicit_evs.size())
    return reject(why, "ev_profile.wire_evs: one wire EV per explicit EV (or none)");
  const uint32_t total = explicit_evs.empty() ? ev_count : static_cast<uint32_t>(explicit_evs.size());
  if (active_count == 0 || active_count > total)
    return reject(why, "ev_profile.active_count: must be 1..ev_count");
  if (ev_min_active > active_count)
    return reject(why, "ev_profile.ev_min_active: must be <= active_count");
  return {};
}

namespace {
// A double field of NsccConfig: finite and >= 0 (0 = derive the default).
bool bad_nscc_double(double v) { return !std::isfinite(v) || v < 0; }
}  // namespace

namespace {
Status validate_dcqcn(const DcqcnConfig& d, std::string* why) {
  const auto bad = [&](const char* field, const char* rule) {
    return reject(why, std::string("cc_profile.dcqcn.") + field + ": " + rule);
  };
  if (!std::isfinite(d.g) || d.g <= 0 || d.g > 1) return bad("g", "must be in (0, 1] (default 1/256)");
  if (!std::isfinite(d.initial_alpha) || d.initial_alpha <= 0 || d.initial_alpha > 1)
    return bad("initial_alpha", "must be in (0, 1] (default 1)");
  if (d.alpha_update_period <= Duration{}) return bad("alpha_update_period", "must be > 0 (default 55 us)");
  if (d.rate_increase_period <= Duration{}) return bad("rate_increase_period", "must be > 0 (default 55 us)");
  if (d.rate_reduce_period < Duration{}) return bad("rate_reduce_period", "must be >= 0 (default 4 us)");
  if (d.byte_counter_bytes == 0) return bad("byte_counter_bytes", "must be > 0 (default 10,000,000)");
  if (d.fast_recovery_steps == 0 || d.fast_recovery_steps > 1000)
    return bad("fast_recovery_steps", "must be 1..1000 (default 5)");
  if (d.min_rate_bps != 0 && d.max_rate_bps != 0 && d.min_rate_bps > d.max_rate_bps)
    return bad("min_rate_bps", "must be <= max_rate_bps");
  return {};
}
}  // namespace

Status CcProfile::validate(std::string* why) const {
  if (algorithm == kCcFixed) return {};
  if (algorithm == kCcDcqcn) return validate_dcqcn(dcqcn, why);
  if (algorithm != kCcNscc)
    return reject(why, "cc_profile.algorithm: unknown algorithm '" + algorithm + "' (available: " +
                           kCcFixed + ", " + kCcNscc + ", " + kCcDcqcn + ")");
  const NsccConfig& n = nscc;
  const auto bad_double = [&](const char* field, double v) {
    return reject(why, std::string("cc_profile.nscc.") + field +
                           ": must be a finite number >= 0 (0 = default); got " + std::to_string(v));
  };
  const auto bad_time = [&](const char* field) {
    return reject(why, std::string("cc_profile.nscc.") + field + ": must be >= 0 (0 = default)");
  };
  if (n.adjust_period_threshold < Duration{}) return bad_time("adjust_period_threshold");
  if (n.base_rtt < Duration{}) return bad_time("base_rtt");
  if (n.qa_threshold < Duration{}) return bad_time("qa_threshold");
  if (n.target_delay < Duration{}) return bad_time("target_delay");
  if (bad_nscc_double(n.eta)) return bad_double("eta", n.eta);
  if (bad_nscc_double(n.fi)) return bad_double("fi", n.fi);
  if (bad_nscc_double(n.fi_scale)) return bad_double("fi_scale", n.fi_scale);
  if (bad_nscc_double(n.max_fulfill_growth)) return bad_double("max_fulfill_growth", n.max_fulfill_growth);
  if (bad_nscc_double(n.hint_share)) return bad_double("hint_share", n.hint_share);
  if (n.hint_share_cap > 65536)
    return reject(why, "cc_profile.nscc.hint_share_cap: must be <= 65536 packets (0 = default 8); got " +
                           std::to_string(n.hint_share_cap));
  if (bad_nscc_double(n.gamma) || n.gamma > 1)
    return reject(why, "cc_profile.nscc.gamma: must be in (0, 1] (0 = default 0.8); got " + std::to_string(n.gamma));
  if (bad_nscc_double(n.max_md_jump) || n.max_md_jump >= 1)
    return reject(why, "cc_profile.nscc.max_md_jump: must be in (0, 1) (0 = default 0.5); got " +
                           std::to_string(n.max_md_jump));
  if (n.qa_gate > 63)
    return reject(why, "cc_profile.nscc.qa_gate: must be <= 63 (0 = default 3); got " + std::to_string(n.qa_gate));
  return {};
}

}  // namespace mrc::core
