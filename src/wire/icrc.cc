#include "wire/icrc.hpp"

#include <array>
#include <cstring>

#include "wire/headers.hpp"

namespace mrc::wire {
namespace {

// Slice-by-8 tables, built at compile time.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  return t;
}
constexpr auto kT = make_tables();

}  // namespace

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;  // little-endian hosts only (x86-64, aarch64)
    crc = kT[7][lo & 0xFF] ^ kT[6][(lo >> 8) & 0xFF] ^ kT[5][(lo >> 16) & 0xFF] ^ kT[4][lo >> 24] ^
          kT[3][hi & 0xFF] ^ kT[2][(hi >> 8) & 0xFF] ^ kT[1][(hi >> 16) & 0xFF] ^ kT[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = kT[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc;
}

uint32_t icrc(std::span<const uint8_t> headers, std::span<const uint8_t> payload) {
  static constexpr uint8_t kMaskedNetwork[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  uint32_t crc = crc32_update(0xFFFFFFFFu, kMaskedNetwork);
  if (headers.size() >= Bth::kSize) {
    uint8_t bth[Bth::kSize];
    std::memcpy(bth, headers.data(), Bth::kSize);
    bth[4] = 0xFF;  // BTH resv8a (FECN/BECN in IB) may change in flight: masked
    crc = crc32_update(crc, bth);
    crc = crc32_update(crc, headers.subspan(Bth::kSize));
  } else {
    crc = crc32_update(crc, headers);
  }
  crc = crc32_update(crc, payload);
  return ~crc;
}

}  // namespace mrc::wire
