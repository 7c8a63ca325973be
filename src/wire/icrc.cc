// SPDX-License-Identifier: BSD-2-Clause
#include "wire/icrc.hpp"

#include <array>
#include <cstring>

#include "wire/headers.hpp"
#include "wire/packet.hpp"

#ifdef MRC_HAVE_ISAL
#include <isa-l/crc.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
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

// ---- crc32_copy: the copy and the CRC in one pass ----
//
// Carry-less folding. Read the bytes as one polynomial over GF(2), the
// first bit (bit 0 of byte 0, as a reflected CRC consumes them) the highest
// power. The CRC depends only on that polynomial modulo P (0x104C11DB7) and
// on where it ends, so any 64-byte block A that lies D bits before a later
// block B may be dropped once a 128-bit-lane value congruent to A * x^D has
// been XORed into B. For one 128-bit lane whose first 8 bytes are `lo` and
// last 8 `hi` (each a reflected 64-bit polynomial), A = lo * x^64 + hi, and
// a carry-less multiply of two reflected 64-bit values yields their product
// times x inside a reflected 128-bit lane; so
//   clmul(lo, [x^(D+63) mod P]) ^ clmul(hi, [x^(D-1) mod P])
// is such a value, [c] being c bit-reversed into a 64-bit word. What is
// left at the end, 64 bytes, has the CRC (from a zero register) of all the
// bytes it replaced, and crc32_update() finishes it. A register `crc` other
// than zero enters as an XOR into the first 4 bytes (little-endian): that is
// what a reflected CRC does with its register before the first byte.
namespace {

// x^e mod P, P = x^32 + 0x04C11DB7, as a 32-bit polynomial (bit k = x^k).
constexpr uint32_t x_pow_mod_p(uint32_t e) {
  uint32_t r = 1;
  for (uint32_t i = 0; i < e; ++i) r = (r & 0x80000000u) ? (r << 1) ^ 0x04C11DB7u : r << 1;
  return r;
}
// A polynomial of degree < 32 as a reflected 64-bit clmul operand.
constexpr uint64_t reflect64(uint32_t c) {
  uint64_t r = 0;
  for (int k = 0; k < 32; ++k)
    if (c >> k & 1u) r |= uint64_t{1} << (63 - k);
  return r;
}
struct FoldConstants {
  uint64_t lo, hi;  // multipliers for a lane's first and last 8 bytes
};
constexpr FoldConstants fold_by(uint32_t bits) {
  return FoldConstants{reflect64(x_pow_mod_p(bits + 63)), reflect64(x_pow_mod_p(bits - 1))};
}
constexpr FoldConstants kFold512 = fold_by(512);    // one 64-byte block on
constexpr FoldConstants kFold2048 = fold_by(2048);  // four blocks on

#if defined(__x86_64__) && defined(__GNUC__)
#define MRC_CRC32_COPY_VPCLMUL 1
// Below this, memcpy and one crc32_update() are as fast (the fold's set-up
// and its 64-byte finish cost about what 256 bytes of folding save).
constexpr size_t kFoldMinBytes = 256;

__attribute__((target("avx512f,vpclmulqdq"))) inline __m512i fold(__m512i acc, __m512i k, __m512i next) {
  // 0x96: three-way XOR.
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00), _mm512_clmulepi64_epi128(acc, k, 0x11),
                                   next, 0x96);
}

// The same pair of multipliers in each 128-bit lane.
__attribute__((target("avx512f,vpclmulqdq"))) inline __m512i lanes(FoldConstants c) {
  const auto lo = static_cast<long long>(c.lo), hi = static_cast<long long>(c.hi);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}

__attribute__((target("avx512f,vpclmulqdq"))) uint32_t crc32_copy_vpclmul(uint8_t* dst, const uint8_t* src, size_t n,
                                                                          uint32_t crc) {
  const __m512i k1 = lanes(kFold512), k4 = lanes(kFold2048);
  __m512i a0 = _mm512_loadu_si512(src);
  _mm512_storeu_si512(dst, a0);
  a0 = _mm512_xor_si512(a0, _mm512_maskz_set1_epi32(0x0001, static_cast<int>(crc)));  // lane 0 only
  size_t i = 64;
  if (n >= 512) {
    // Four independent accumulators: one fold's multiply latency is longer
    // than a load, so a single chain would leave the multiplier idle.
    __m512i a1 = _mm512_loadu_si512(src + 64), a2 = _mm512_loadu_si512(src + 128),
            a3 = _mm512_loadu_si512(src + 192);
    _mm512_storeu_si512(dst + 64, a1);
    _mm512_storeu_si512(dst + 128, a2);
    _mm512_storeu_si512(dst + 192, a3);
    for (i = 256; i + 256 <= n; i += 256) {
      const __m512i b0 = _mm512_loadu_si512(src + i), b1 = _mm512_loadu_si512(src + i + 64),
                    b2 = _mm512_loadu_si512(src + i + 128), b3 = _mm512_loadu_si512(src + i + 192);
      _mm512_storeu_si512(dst + i, b0);
      _mm512_storeu_si512(dst + i + 64, b1);
      _mm512_storeu_si512(dst + i + 128, b2);
      _mm512_storeu_si512(dst + i + 192, b3);
      a0 = fold(a0, k4, b0);
      a1 = fold(a1, k4, b1);
      a2 = fold(a2, k4, b2);
      a3 = fold(a3, k4, b3);
    }
    a0 = fold(fold(fold(a0, k1, a1), k1, a2), k1, a3);
  }
  for (; i + 64 <= n; i += 64) {
    const __m512i b = _mm512_loadu_si512(src + i);
    _mm512_storeu_si512(dst + i, b);
    a0 = fold(a0, k1, b);
  }
  alignas(64) uint8_t rest[64];
  _mm512_store_si512(rest, a0);
  // Leave no dirty upper vector state to the caller's SSE code (see
  // clear_upper_vector_state).
  _mm256_zeroupper();
  uint32_t out = crc32_update(0, rest);
  if (i < n) {
    std::memcpy(dst + i, src + i, n - i);
    out = crc32_update(out, std::span<const uint8_t>(src + i, n - i));
  }
  return out;
}

const bool kHaveVpclmul512 = [] {
  __builtin_cpu_init();
  // libgcc's check includes the OS's saving of the AVX-512 state.
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
}();
#endif

}  // namespace

uint32_t crc32_copy(uint8_t* dst, std::span<const uint8_t> src, uint32_t crc) {
  if (src.empty()) return crc;
#ifdef MRC_CRC32_COPY_VPCLMUL
  if (kHaveVpclmul512 && src.size() >= kFoldMinBytes) return crc32_copy_vpclmul(dst, src.data(), src.size(), crc);
#endif
  std::memcpy(dst, src.data(), src.size());
  return crc32_update(crc, src);
}

const char* crc32_copy_backend() {
#ifdef MRC_CRC32_COPY_VPCLMUL
  if (kHaveVpclmul512) return "avx512-vpclmulqdq";
#endif
  return "memcpy+crc32_update";
}

namespace {

// The fix-up for a sender's BTH, whose resv8a byte (offset 4) is 0 where the
// ICRC reads it as 0xFF. A raw CRC register update is linear in register and
// bytes together, so the CRC of the masked headers is the CRC of the headers
// as they are, XOR the CRC from a zero register of their difference: 0xFF at
// offset 4 of `len` bytes, zeros elsewhere (leading zeros leave a zero
// register alone). One constant per header length, computed at compile time.
constexpr std::array<uint32_t, kMaxHeaderBytes + 1> make_resv8a_fix() {
  std::array<uint32_t, kMaxHeaderBytes + 1> fix{};
  for (size_t len = Bth::kSize; len <= kMaxHeaderBytes; ++len) {
    uint32_t c = kT[0][0xFF];
    for (size_t i = 5; i < len; ++i) c = kT[0][c & 0xFF] ^ (c >> 8);
    fix[len] = c;
  }
  return fix;
}
constexpr auto kResv8aFix = make_resv8a_fix();

// Copies `ip_udp` (an IPv4 or IPv6 header and the UDP header) to `m` with
// the fields the ICRC does not cover set to ones, and returns its length;
// 0 when `ip_udp` is neither.
size_t mask_ip_udp(std::span<const uint8_t> ip_udp, uint8_t* m) {
  size_t ip_len = 0;
  if (ip_udp.size() == kIpv4Bytes + kUdpBytes && ip_udp[0] == 0x45)
    ip_len = kIpv4Bytes;
  else if (ip_udp.size() == kIpv6Bytes + kUdpBytes && (ip_udp[0] >> 4) == 6)
    ip_len = kIpv6Bytes;
  else
    return 0;
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
  return ip_len + kUdpBytes;
}

}  // namespace

Result<uint32_t> icrc_prefix(std::span<const uint8_t> ip_udp) {
  uint8_t m[kIpv6Bytes + kUdpBytes];
  const size_t n = mask_ip_udp(ip_udp, m);
  if (n == 0) return Errc::invalid_argument;
  return crc32_update(kAfterMaskedLrh, std::span<const uint8_t>(m, n));
}

Result<uint32_t> icrc_from_prefix(uint32_t prefix, std::span<const uint8_t> transport, std::span<const uint8_t> payload,
                                  uint8_t* payload_copy) {
  if (transport.size() < Bth::kSize) return Errc::invalid_argument;
  uint32_t crc;
  if (transport.size() <= kMaxHeaderBytes && transport[4] == 0) {
    // A sender's headers, read where they are: no masked copy, whose
    // narrow stores a wide load would wait for, and one call.
    crc = crc32_update(prefix, transport) ^ kResv8aFix[transport.size()];
  } else {
    // A receiver's span (headers and payload), or a BTH with resv8a set:
    // the BTH masked on the stack (12 bytes, table-driven: a vector call's
    // fixed cost is most of such a short input's), the rest in one piece.
    uint8_t bth[Bth::kSize];
    std::memcpy(bth, transport.data(), Bth::kSize);
    bth[4] = 0xFF;                 // BTH resv8a (FECN/BECN in InfiniBand)
    crc = crc32_update_portable(prefix, std::span<const uint8_t>(bth, Bth::kSize));
    crc = crc32_update(crc, transport.subspan(Bth::kSize));
  }
  crc = payload_copy ? crc32_copy(payload_copy, payload, crc) : crc32_update(crc, payload);
  return ~crc;
}

Result<uint32_t> icrc(std::span<const uint8_t> ip_udp, std::span<const uint8_t> transport,
                      std::span<const uint8_t> payload, uint8_t* payload_copy) {
  if (transport.size() < Bth::kSize) return Errc::invalid_argument;
  // The masked copy of IP + UDP + BTH, on the stack. When `transport` is
  // only headers (a sender's call), all of it rides along, so that one CRC
  // call covers every header: each call costs ~20 ns before its first byte,
  // a sixth of a 4 KiB payload's (computing the prefix apart, as
  // icrc_prefix() does, made this call 20-40 ns slower). A long `transport`
  // (a receiver's: headers and payload in one span) keeps its bytes after
  // the BTH in one piece: ISA-L's cost also depends on the length modulo
  // 256, and cutting 64 bytes off the front made a 4 KiB packet's ICRC
  // 30 ns slower.
  uint8_t m[kIpv6Bytes + kUdpBytes + kMaxHeaderBytes];
  const size_t n = mask_ip_udp(ip_udp, m);
  if (n == 0) return Errc::invalid_argument;
  const size_t head = transport.size() <= kMaxHeaderBytes ? transport.size() : Bth::kSize;
  uint8_t* bth = m + n;
  std::memcpy(bth, transport.data(), head);
  bth[4] = 0xFF;                   // BTH resv8a (FECN/BECN in InfiniBand)
  uint32_t crc = crc32_update(kAfterMaskedLrh, std::span<const uint8_t>(m, n + head));
  crc = crc32_update(crc, transport.subspan(head));
  crc = payload_copy ? crc32_copy(payload_copy, payload, crc) : crc32_update(crc, payload);
  return ~crc;
}

}  // namespace mrc::wire
