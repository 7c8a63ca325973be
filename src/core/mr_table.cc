// SPDX-License-Identifier: BSD-2-Clause
#include "core/mr_table.hpp"

namespace mrc::core {

bool MrTable::contains(const MemoryRegion& mr, uint64_t addr, uint64_t len) {
  if (addr < mr.addr) return false;
  const uint64_t off = addr - mr.addr;
  return off <= mr.length && len <= mr.length - off;
}

uint32_t MrTable::draw_key() {
  if (has_spare_) {
    has_spare_ = false;
    return static_cast<uint32_t>(spare_);
  }
  const uint64_t r = entropy_();
  spare_ = r >> 32;
  has_spare_ = true;
  return static_cast<uint32_t>(r);
}

Result<MemoryRegion> MrTable::reg(uint64_t addr, uint64_t length, uint32_t acc, bool backed, uint32_t pd) {
  if (length == 0 || addr + length < addr) return Errc::invalid_argument;
  MemoryRegion mr{addr, length, acc, 0, 0, backed, pd};
  // Draw distinct non-zero keys; collisions are astronomically rare but cheap to rule out.
  do mr.lkey = draw_key(); while (mr.lkey == 0 || by_lkey_.count(mr.lkey));
  do mr.rkey = draw_key(); while (mr.rkey == 0 || rkey_to_lkey_.count(mr.rkey));
  by_lkey_.emplace(mr.lkey, Entry{mr, 0});
  rkey_to_lkey_.emplace(mr.rkey, mr.lkey);
  return mr;
}

Result<MemoryRegion> MrTable::reg_with_keys(const MemoryRegion& mr) {
  if (mr.length == 0 || mr.addr + mr.length < mr.addr || mr.lkey == 0 || mr.rkey == 0) return Errc::invalid_argument;
  if (by_lkey_.count(mr.lkey) || rkey_to_lkey_.count(mr.rkey)) return Errc::busy;
  by_lkey_.emplace(mr.lkey, Entry{mr, 0});
  rkey_to_lkey_.emplace(mr.rkey, mr.lkey);
  return mr;
}

Status MrTable::dereg(uint32_t lkey) {
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end()) return Errc::not_found;
  if (it->second.refs > 0) return Errc::busy;
  last_rkey_ = 0;
  last_mr_ = nullptr;
  rkey_to_lkey_.erase(it->second.mr.rkey);
  by_lkey_.erase(it);
  return {};
}

const MemoryRegion* MrTable::check_remote_write(uint32_t pd, uint32_t rkey, uint64_t va, uint64_t len) const {
  if (rkey != last_rkey_ || !last_mr_) {
    auto k = rkey_to_lkey_.find(rkey);
    if (k == rkey_to_lkey_.end()) return nullptr;
    last_rkey_ = rkey;
    last_mr_ = &by_lkey_.at(k->second).mr;
  }
  const MemoryRegion& mr = *last_mr_;
  if (mr.pd != pd || !(mr.access & access::kRemoteWrite)) return nullptr;
  return contains(mr, va, len) ? &mr : nullptr;
}

const MemoryRegion* MrTable::check_local(uint32_t pd, uint32_t lkey, uint64_t addr, uint64_t len) const {
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end() || it->second.mr.pd != pd) return nullptr;
  return contains(it->second.mr, addr, len) ? &it->second.mr : nullptr;
}

void MrTable::acquire(uint32_t lkey) {
  auto it = by_lkey_.find(lkey);
  if (it != by_lkey_.end()) ++it->second.refs;
}

void MrTable::release(uint32_t lkey) {
  auto it = by_lkey_.find(lkey);
  if (it != by_lkey_.end() && it->second.refs > 0) --it->second.refs;
}

uint32_t MrTable::refs(uint32_t lkey) const {
  auto it = by_lkey_.find(lkey);
  return it == by_lkey_.end() ? 0 : it->second.refs;
}

size_t MrTable::count_in_pd(uint32_t pd) const {
  size_t n = 0;
  for (const auto& [k, e] : by_lkey_) n += e.mr.pd == pd;
  return n;
}

}  // namespace mrc::core
