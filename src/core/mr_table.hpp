// SPDX-License-Identifier: BSD-2-Clause
// Memory-region table: the only way a peer's WRITE reaches memory.
//
// Every data packet's RETH is checked here (rkey, protection domain, access,
// bounds) before one byte is placed (reference 3.6). Keys come from the
// entropy source the driver injects (EndpointConfig::entropy): a real device
// passes the OS's random source, so keys are unguessable to a peer; the
// simulator passes its seeded stream, so runs stay reproducible.
//
// Lifetimes: a region that an outstanding work request will still read
// (first transmission or a retransmission) holds a reference; deregistering
// it fails with Errc::busy until the last such WR completes or is flushed,
// as verbs refuses to deregister a region that is still bound.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>

#include "core/types.hpp"
#include "util/prng.hpp"
#include "util/result.hpp"

namespace mrc::core {

namespace access {
inline constexpr uint32_t kLocalWrite = 1u << 0;
inline constexpr uint32_t kRemoteWrite = 1u << 1;
}  // namespace access


/// 64 random bits per call. A device must pass an unpredictable source
/// (getrandom); a simulation passes a seeded stream.
using EntropySource = std::function<uint64_t()>;

struct MemoryRegion {
  uint64_t addr = 0;      ///< start address (a real pointer, or a simulated address)
  uint64_t length = 0;
  uint32_t access = 0;    ///< access:: bits
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  bool backed = true;     ///< false: simulated memory, placement writes nothing
  uint32_t pd = kDefaultPd;  ///< protection domain: only QPs of this PD may use the keys
};

class MrTable {
 public:
  /// `entropy` supplies the key bits (must not be empty).
  explicit MrTable(EntropySource entropy) : entropy_(std::move(entropy)) {}
  /// Keys from a seeded stream (tests, simulation).
  explicit MrTable(Prng rng) : MrTable(EntropySource([rng]() mutable { return rng.next_u64(); })) {}

  /// Registers [addr, addr+length) in protection domain `pd`. `backed` =
  /// false registers simulated memory (bounds are still enforced; no bytes
  /// are written). Errc::invalid_argument for a zero-length or wrapping region.
  Result<MemoryRegion> reg(uint64_t addr, uint64_t length, uint32_t access, bool backed = true,
                           uint32_t pd = kDefaultPd);
  /// Registers `mr` with the keys it carries (non-zero). Errc::busy if
  /// either key is in use; invalid_argument as reg().
  Result<MemoryRegion> reg_with_keys(const MemoryRegion& mr);
  /// Removes the region with this lkey. Errc::not_found if unknown;
  /// Errc::busy while an outstanding work request holds it (retry after its
  /// completion, or move the QP to ERROR/RESET to flush it).
  Status dereg(uint32_t lkey);

  /// The region a remote WRITE of [va, va+len) under `rkey` may land in, for
  /// a QP of protection domain `pd`, or nullptr if the key is unknown,
  /// belongs to another PD, lacks remote write, or the range leaves it.
  const MemoryRegion* check_remote_write(uint32_t pd, uint32_t rkey, uint64_t va, uint64_t len) const;
  /// The region a local read of [addr, addr+len) under `lkey` lies in, for a
  /// QP of protection domain `pd`, or nullptr.
  const MemoryRegion* check_local(uint32_t pd, uint32_t lkey, uint64_t addr, uint64_t len) const;

  /// An outstanding work request starts (acquire) or stops (release) reading
  /// the region `lkey`. acquire() must follow a successful check_local().
  void acquire(uint32_t lkey);
  void release(uint32_t lkey);
  /// References held on `lkey` (0 for an unknown key).
  uint32_t refs(uint32_t lkey) const;

  size_t size() const { return by_lkey_.size(); }
  /// Regions registered in protection domain `pd`.
  size_t count_in_pd(uint32_t pd) const;

 private:
  struct Entry {
    MemoryRegion mr;
    uint32_t refs = 0;
  };
  static bool contains(const MemoryRegion& mr, uint64_t addr, uint64_t len);
  uint32_t draw_key();
  EntropySource entropy_;
  uint64_t spare_ = 0;       ///< unused half of the last 64-bit draw
  bool has_spare_ = false;
  // One-entry cache of the last rkey looked up: consecutive packets of a
  // WRITE all carry the same rkey. Invalidated by dereg().
  mutable uint32_t last_rkey_ = 0;
  mutable const MemoryRegion* last_mr_ = nullptr;
  std::unordered_map<uint32_t, Entry> by_lkey_;
  std::unordered_map<uint32_t, uint32_t> rkey_to_lkey_;
};

}  // namespace mrc::core
