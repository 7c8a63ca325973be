// Memory-region table: the only way a peer's WRITE reaches memory.
//
// Every data packet's RETH is checked here (rkey, access, bounds) before one
// byte is placed (reference 3.6). Keys are drawn from the endpoint's PRNG so
// they are unguessable to a peer yet reproducible for a seeded run.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "util/prng.hpp"
#include "util/result.hpp"

namespace mrc::core {

namespace access {
inline constexpr uint32_t kLocalWrite = 1u << 0;
inline constexpr uint32_t kRemoteWrite = 1u << 1;
}  // namespace access

struct MemoryRegion {
  uint64_t addr = 0;      ///< start address (a real pointer, or a simulated address)
  uint64_t length = 0;
  uint32_t access = 0;    ///< access:: bits
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  bool backed = true;     ///< false: simulated memory, placement writes nothing
};

class MrTable {
 public:
  explicit MrTable(Prng rng) : rng_(rng) {}

  /// Registers [addr, addr+length). `backed` = false registers simulated
  /// memory (bounds are still enforced; no bytes are written). Errc::invalid_argument
  /// for a zero-length or wrapping region.
  Result<MemoryRegion> reg(uint64_t addr, uint64_t length, uint32_t access, bool backed = true);
  /// Removes the region with this lkey. Errc::not_found if unknown.
  Status dereg(uint32_t lkey);

  /// The region a remote WRITE of [va, va+len) under `rkey` may land in, or
  /// nullptr if the key is unknown, lacks remote write, or the range leaves it.
  const MemoryRegion* check_remote_write(uint32_t rkey, uint64_t va, uint64_t len) const;
  /// The region a local read of [addr, addr+len) under `lkey` lies in, or nullptr.
  const MemoryRegion* check_local(uint32_t lkey, uint64_t addr, uint64_t len) const;

  size_t size() const { return by_lkey_.size(); }

 private:
  static bool contains(const MemoryRegion& mr, uint64_t addr, uint64_t len);
  Prng rng_;
  // One-entry cache of the last rkey looked up: consecutive packets of a
  // WRITE all carry the same rkey. Invalidated by dereg().
  mutable uint32_t last_rkey_ = 0;
  mutable const MemoryRegion* last_mr_ = nullptr;
  std::unordered_map<uint32_t, MemoryRegion> by_lkey_;
  std::unordered_map<uint32_t, uint32_t> rkey_to_lkey_;
};

}  // namespace mrc::core
