// SPDX-License-Identifier: BSD-2-Clause
// mrcctl's TOML controller file: EV format, EV and CC profiles, read and
// checked before anything is applied, so a bad file changes nothing. Every
// error names the file, the line and the field ("f.toml:7: ev_profile[0].mode:
// must be \"auto\" or \"exp\"").
//
//   [[format]]                 # an EV format profile
//   id = 1                     # 1..16
//   mode = "udp"               # "udp" | "stev" | "srv6"
//   fields = [16]              # field widths in bits, 1..64 each
//   state = "online"           # "offline" | "online" (default online)
//
//   [[ev_profile]]
//   id = 1
//   mode = "exp"               # "auto" | "exp" | "gen"
//   format = 1                 # format profile id (exp, gen)
//   count = 4                  # EVs in the array (exp, gen)
//   min_active = 1             # default 1
//   events = ["good", "assumed_bad"]   # EV states reported (default none)
//   fields = [{ width = 16, init = 0, min = 0, max = 0xffff, mask = 0xffff }]
//   evs = [{ port = 1, value = 49152 }, ...]   # exp: exactly `count` EVs
//   state = "online"
//
//   [[cc_profile]]
//   id = 1
//   algorithm = "uet-1.0-nscc" # or "none"
//   base_rtt_ns = 20000        # NSCC configuration, 0 = derived (default 0)
//   target_qdelay_ns = 0
//   max_cwnd_bytes = 0
//   state = "online"
//
// An EV's `value` is the compact EV as an integer of as many bits as the
// profile's field masks select (their popcounts summed, at most 64).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mrcctl {

struct FieldSpec {
  uint32_t width = 0;
  uint64_t init = 0, min = 0, max = 0, mask = 0;
};

struct EvSpec {
  uint8_t port = 0;
  uint64_t value = 0;
};

/// A format's wire (its `mode`): one bit each, the bits of the core's
/// controller model (core::ctl::fmt_mode), which mrc-sim hands them to.
/// mrcctl applies udp and stev as OCP's MRC_CTL_EV_FMT_MODE_GENERATED and
/// srv6 as MRC_CTL_EV_FMT_MODE_SRV6_GENERATED.
inline constexpr uint32_t kFmtStev = 1u << 0;
inline constexpr uint32_t kFmtSrv6 = 1u << 1;
inline constexpr uint32_t kFmtUdp = 1u << 2;

struct FormatSpec {
  uint64_t id = 0;
  uint32_t mode = 0;               ///< kFmtUdp, kFmtStev or kFmtSrv6
  std::vector<uint32_t> widths;
  bool online = true;
};

struct EvProfileSpec {
  uint64_t id = 0;
  uint32_t mode = 0;               ///< an enum mrc_ctl_ev_mode value
  uint64_t format = 0;
  uint32_t count = 0;
  uint32_t min_active = 1;
  uint32_t event_mask = 0;         ///< enum mrc_ctl_ev_state bits
  std::vector<FieldSpec> fields;
  std::vector<EvSpec> evs;
  bool online = true;
};

struct CcProfileSpec {
  uint64_t id = 0;
  bool nscc = true;                ///< false: "none" (no congestion control)
  uint32_t base_rtt_ns = 0, target_qdelay_ns = 0, max_cwnd_bytes = 0;
  bool online = true;
};

struct CtlFile {
  std::vector<FormatSpec> formats;
  std::vector<EvProfileSpec> ev_profiles;
  std::vector<CcProfileSpec> cc_profiles;
};

/// Reads and checks `path`. False with the message in `why`.
bool load_ctl_file(const std::string& path, CtlFile& out, std::string& why);
/// The same for TOML text; `name` is what messages call the file.
bool parse_ctl_file(const std::string& text, const std::string& name, CtlFile& out, std::string& why);

/// Bits of the compact EV the fields select (sum of mask popcounts).
uint32_t compact_bits(const std::vector<FieldSpec>& fields);
/// Writes a compact EV of `bits` bits MSB-first from bit 7 of out[0]
/// (reference 4.2); the rest of the 32 bytes zero.
void encode_compact(uint64_t value, uint32_t bits, uint8_t (&out)[32]);
/// The inverse of encode_compact.
uint64_t decode_compact(const uint8_t (&in)[32], uint32_t bits);

}  // namespace mrcctl
