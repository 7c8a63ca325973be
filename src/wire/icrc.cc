#include "wire/icrc.hpp"

#include <array>
#include <cstring>

#include "wire/headers.hpp"
#include "wire/packet.hpp"

#ifdef MRC_HAVE_ISAL
#include <isa-l/crc.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#endif

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

// CRC state after the eight 0xFF bytes that stand in for the masked LRH:
// the same for every packet, so computed once, at compile time.
constexpr uint32_t after_masked_lrh() {
  uint32_t c = 0xFFFFFFFFu;
  for (int i = 0; i < 8; ++i) c = kT[0][(c ^ 0xFFu) & 0xFF] ^ (c >> 8);
  return c;
}
constexpr uint32_t kAfterMaskedLrh = after_masked_lrh();

constexpr size_t kIpv4Bytes = 20;
constexpr size_t kIpv6Bytes = 40;
constexpr size_t kUdpBytes = 8;

}  // namespace

uint32_t crc32_update_portable(uint32_t crc, std::span<const uint8_t> bytes) {
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

#ifdef MRC_HAVE_ISAL
// crc32_gzip_refl works on finished CRCs, like zlib's crc32(): it inverts its
// seed on entry and its result on exit (seed 0 starts a fresh CRC;
// crc32_gzip_refl(0, "123456789") == 0xCBF43926). crc32_update carries the
// raw register instead, so the register goes in and comes out inverted.
// Passing 0xFFFFFFFF straight in as the seed would give 0xD202D277 for the
// check string: wrong, and exactly what the equivalence test catches.
namespace {
#if defined(__x86_64__)
// ISA-L 2.30's AVX-512 CRC (crc32_gzip_refl_by16_10) returns without
// VZEROUPPER, so the upper halves of the vector registers stay dirty: the
// next legacy-SSE instruction of ours (an inlined memcpy) and the next VEX
// one in ISA-L each pay an SSE/AVX state transition. Measured on the
// project's Xeon, that cost ~200 ns per icrc() of a 4 KiB packet, more than
// the CRC itself (docs/performance.md); one VZEROUPPER after the call
// removes it. Only on CPUs with AVX (and an OS that saves its state), where
// ISA-L may have taken a VEX path and where the instruction exists.
__attribute__((target("avx"))) void clear_upper_vector_state() { _mm256_zeroupper(); }
const bool kHaveAvx = [] {
  __builtin_cpu_init();  // may run before libgcc's own constructor
  return __builtin_cpu_supports("avx") != 0;
}();
#endif
}  // namespace

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return crc;  // an empty span may have a null data()
  const uint32_t out = ~crc32_gzip_refl(~crc, bytes.data(), bytes.size());
#if defined(__x86_64__)
  if (kHaveAvx) clear_upper_vector_state();
#endif
  return out;
}

const char* crc32_backend() { return "isa-l"; }
#else
uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> bytes) {
  return crc32_update_portable(crc, bytes);
}

const char* crc32_backend() { return "slice-by-8"; }
#endif

Result<uint32_t> icrc(std::span<const uint8_t> ip_udp, std::span<const uint8_t> transport,
                      std::span<const uint8_t> payload) {
  if (transport.size() < Bth::kSize || ip_udp.empty()) return Errc::invalid_argument;
  size_t ip_len = 0;
  if (ip_udp.size() == kIpv4Bytes + kUdpBytes && ip_udp[0] == 0x45)
    ip_len = kIpv4Bytes;
  else if (ip_udp.size() == kIpv6Bytes + kUdpBytes && (ip_udp[0] >> 4) == 6)
    ip_len = kIpv6Bytes;
  else
    return Errc::invalid_argument;

  // The masked copy of IP + UDP + BTH, on the stack. When `transport` is
  // only headers (a sender's call), all of it rides along, so that one CRC
  // call covers every header: each call costs ~20 ns before its first byte,
  // a sixth of a 4 KiB payload's. A long `transport` (a receiver's: headers
  // and payload in one span) keeps its bytes after the BTH in one piece:
  // ISA-L's cost also depends on the length modulo 256, and cutting 64
  // bytes off the front made a 4 KiB packet's ICRC 30 ns slower.
  uint8_t m[kIpv6Bytes + kUdpBytes + kMaxHeaderBytes];
  std::memcpy(m, ip_udp.data(), ip_udp.size());
  if (ip_len == kIpv4Bytes) {
    m[1] = 0xFF;                   // type of service: DSCP remarking, ECN marking
    m[8] = 0xFF;                   // TTL: decremented per hop
    m[10] = m[11] = 0xFF;          // header checksum: follows TOS and TTL
  } else {
    m[0] |= 0x0F;                  // traffic class, high nibble (version kept)
    m[1] = m[2] = m[3] = 0xFF;     // traffic class low nibble, flow label
    m[7] = 0xFF;                   // hop limit
  }
  m[ip_len + 6] = m[ip_len + 7] = 0xFF;  // UDP checksum: may be zero or recomputed
  const size_t head = transport.size() <= kMaxHeaderBytes ? transport.size() : Bth::kSize;
  uint8_t* bth = m + ip_len + kUdpBytes;
  std::memcpy(bth, transport.data(), head);
  bth[4] = 0xFF;                   // BTH resv8a (FECN/BECN in InfiniBand)
  uint32_t crc = crc32_update(kAfterMaskedLrh, std::span<const uint8_t>(m, ip_len + kUdpBytes + head));
  crc = crc32_update(crc, transport.subspan(head));
  crc = crc32_update(crc, payload);
  return ~crc;
}

}  // namespace mrc::wire
