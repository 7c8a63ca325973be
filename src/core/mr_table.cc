#include "core/mr_table.hpp"

namespace mrc::core {

bool MrTable::contains(const MemoryRegion& mr, uint64_t addr, uint64_t len) {
  if (addr < mr.addr) return false;
  const uint64_t off = addr - mr.addr;
  return off <= mr.length && len <= mr.length - off;
}

Result<MemoryRegion> MrTable::reg(uint64_t addr, uint64_t length, uint32_t acc, bool backed) {
  if (length == 0 || addr + length < addr) return Errc::invalid_argument;
  MemoryRegion mr{addr, length, acc, 0, 0, backed};
  // Draw distinct non-zero keys; collisions are astronomically rare but cheap to rule out.
  do mr.lkey = rng_.next_u32(); while (mr.lkey == 0 || by_lkey_.count(mr.lkey));
  do mr.rkey = rng_.next_u32(); while (mr.rkey == 0 || rkey_to_lkey_.count(mr.rkey));
  by_lkey_.emplace(mr.lkey, mr);
  rkey_to_lkey_.emplace(mr.rkey, mr.lkey);
  return mr;
}

Status MrTable::dereg(uint32_t lkey) {
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end()) return Errc::not_found;
  last_rkey_ = 0;
  last_mr_ = nullptr;
  rkey_to_lkey_.erase(it->second.rkey);
  by_lkey_.erase(it);
  return {};
}

const MemoryRegion* MrTable::check_remote_write(uint32_t rkey, uint64_t va, uint64_t len) const {
  if (rkey != last_rkey_ || !last_mr_) {
    auto k = rkey_to_lkey_.find(rkey);
    if (k == rkey_to_lkey_.end()) return nullptr;
    last_rkey_ = rkey;
    last_mr_ = &by_lkey_.at(k->second);
  }
  const MemoryRegion& mr = *last_mr_;
  if (!(mr.access & access::kRemoteWrite)) return nullptr;
  return contains(mr, va, len) ? &mr : nullptr;
}

const MemoryRegion* MrTable::check_local(uint32_t lkey, uint64_t addr, uint64_t len) const {
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end()) return nullptr;
  return contains(it->second, addr, len) ? &it->second : nullptr;
}

}  // namespace mrc::core
