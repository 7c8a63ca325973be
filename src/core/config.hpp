// Endpoint-wide configuration and the EV / CC profiles a controller installs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "util/time.hpp"

namespace mrc::core {

/// One NIC port = one network plane.
struct PortConfig {
  uint64_t rate_bps = 100'000'000'000ull;
};

/// How the core times and batches its feedback and recovery. Defaults follow
/// the reference's recommended choices (section 8); each names its item.
struct ProtocolConfig {
  /// SACK after this many new bytes when nothing forces one sooner (item 4).
  uint32_t sack_bytes_threshold = 16384;
  /// Send a pending SACK at most this long after the data that wants it (item 4).
  Duration sack_coalesce_delay = Duration::ns(1000);
  /// TSETH tick: default resolution 128 ns (reference 3.3).
  Duration timestamp_tick = Duration::ns(128);
  /// Unloaded RTT of the longest path (config_base_rtt, item 15).
  Duration base_rtt = Duration::us(10);
  /// Loss rule (item 5): a packet is lost once this many packets sent after
  /// it have been SACKed ...
  uint32_t reorder_packets = 3;
  /// ... and it has been in flight longer than base_rtt + this allowance.
  Duration reorder_allowance = Duration::us(5);
  /// First probe of an ASSUMED_BAD EV, then doubling up to the maximum (item 8).
  Duration probe_interval = Duration::us(100);
  Duration probe_interval_max = Duration::ms(10);
  /// Consecutive good probes that bring an ASSUMED_BAD EV back (item 8).
  uint32_t probe_resurrect_count = 2;
  /// A QP that receives data but gets no deliveries confirmed on its own EVs
  /// probes for a fresh reverse EV this often (reference 4.8).
  Duration reverse_probe_interval = Duration::us(100);
  /// Reverse (control) EVs kept per port; control packets rotate through them.
  uint32_t reverse_evs_per_port = 4;
  /// Port-status updates are repeated this many times this far apart, since
  /// endpoint operations are not retransmitted (reference 4.7).
  uint32_t port_status_repeats = 3;
  Duration port_status_interval = Duration::us(50);
};

/// Device-wide settings of one endpoint (one NIC).
struct EndpointConfig {
  uint64_t seed = 1;                    ///< every random choice derives from this
  std::vector<PortConfig> ports = {PortConfig{}};
  uint32_t max_qps = 4096;
  uint32_t max_send_wr = 4096;          ///< per QP
  uint32_t max_recv_wr = 4096;          ///< per QP
  uint16_t max_wimm = 4096;             ///< device maximum for max_wimm / max_wimm_dest
  uint8_t max_mpr = 255;                ///< device maximum MPR (128-PSN units)
  bool cap_trim_nack = true;            ///< device can generate trim NACKs
  bool cap_dynamic_mpr = true;
  bool cap_svc_time = true;
  ProtocolConfig protocol;

  /// Checks every field; the error message names the field and the fix.
  Status validate(std::string* why) const;
};

/// Path policy of an EV profile: MRC's EV management, or a comparison policy.
enum class PathPolicyKind : uint8_t {
  mrc,         ///< GOOD/SKIP/ASSUMED_BAD/DENIED, backups, probes (reference 4)
  oblivious,   ///< spray over all EVs, ignore every path signal (ablation)
  single_path, ///< one EV for the whole QP (ECMP-style comparison)
};

/// An explicit EV entry (EXP mode) or a generated one.
struct EvEntry {
  uint32_t value = 0;  ///< compact EV: what the UDP source port / flow label carry
  uint8_t port = 0;    ///< 0-based port (plane)
};

/// EV profile (reference 4.2, 4.4): which EVs a QP sprays over and how many
/// stay active.
struct EvProfile {
  PathPolicyKind policy = PathPolicyKind::mrc;
  /// Total EVs per QP, split equally across ports (GEN mode). Ignored if
  /// `explicit_evs` is non-empty (EXP mode).
  uint32_t ev_count = 256;
  /// EVs in the active set (the rest are backups); split equally across ports.
  uint32_t active_count = 128;
  /// Demotion never leaves fewer usable EVs than this (reference 8, item 9).
  uint32_t ev_min_active = 64;
  /// GEN mode: EV values are drawn from [0, 2^entropy_bits) (16 = UDP source port).
  uint8_t entropy_bits = 16;
  /// Report EV events for these transitions (reference 4.10).
  bool event_on_good = true;
  bool event_on_assumed_bad = true;
  /// EXP mode entries.
  std::vector<EvEntry> explicit_evs;

  Status validate(uint32_t num_ports, std::string* why) const;
};

/// Fixed-window congestion control parameters (the reference controller
/// until NSCC lands; also the "no CC" baseline).
struct FixedWindowConfig {
  /// Window in bytes; 0 = 1.5 x (sum of port rates) x base_rtt.
  uint64_t window_bytes = 0;
};

/// CC profile (reference 5.1, 6.3.5).
struct CcProfile {
  std::string algorithm = "fixed";  ///< "fixed" (more with NSCC)
  FixedWindowConfig fixed;

  Status validate(std::string* why) const;
};

}  // namespace mrc::core
