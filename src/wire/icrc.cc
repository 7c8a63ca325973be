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

// The build's CRC without the folding below: ISA-L's.
uint32_t crc32_update_library(uint32_t crc, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return crc;  // an empty span may have a null data()
  const uint32_t out = ~crc32_gzip_refl(~crc, bytes.data(), bytes.size());
#if defined(__x86_64__)
  if (kHaveAvx) clear_upper_vector_state();
#endif
  return out;
}

constexpr const char* kLibraryBackend = "isa-l";
}  // namespace
#else
namespace {
// The build's CRC without the folding below: the tables.
uint32_t crc32_update_library(uint32_t crc, std::span<const uint8_t> bytes) {
  return crc32_update_portable(crc, bytes);
}
constexpr const char* kLibraryBackend = "slice-by-8";
}  // namespace
#endif

// ---- Carry-less folding: crc32_update() and crc32_copy() on x86-64 ----
//
// Read the bytes as one polynomial over GF(2), the
// first bit (bit 0 of byte 0, as a reflected CRC consumes them) the highest
// power. The CRC depends only on that polynomial modulo P (0x104C11DB7) and
// on where it ends, so any 64-byte block A that lies D bits before a later
// block B (64 or 16 bytes) may be dropped once a 128-bit-lane value
// congruent to A * x^D has been XORed into B. For one 128-bit lane whose first 8 bytes are `lo` and
// last 8 `hi` (each a reflected 64-bit polynomial), A = lo * x^64 + hi, and
// a carry-less multiply of two reflected 64-bit values yields their product
// times x inside a reflected 128-bit lane; so
//   clmul(lo, [x^(D+63) mod P]) ^ clmul(hi, [x^(D-1) mod P])
// is such a value, [c] being c bit-reversed into a 64-bit word. The lanes
// of the last 64-byte block fold the same way into its last lane; what is
// left, 16 bytes, has the CRC (from a zero register) of all the bytes it
// replaced, and the tables finish it. A register `crc` other
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
#define MRC_CRC32_VPCLMUL 1
// Below this many bytes crc32_update() stays on the tables or ISA-L: one
// 16-byte fold and the 16-byte finish cost about what they save.
constexpr size_t kFoldMinBytes = 16;
// From here on the 64-byte (four-lane) loop pays for its set-up and for
// folding its four lanes into one at the end.
constexpr size_t kWideMinBytes = 256;
constexpr FoldConstants kFold128 = fold_by(128);  // one 16-byte lane on
constexpr FoldConstants kFold256 = fold_by(256);
constexpr FoldConstants kFold384 = fold_by(384);

#define MRC_CRC32_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1")))

MRC_CRC32_TARGET inline __m512i fold(__m512i acc, __m512i k, __m512i next) {
  // 0x96: three-way XOR.
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00), _mm512_clmulepi64_epi128(acc, k, 0x11),
                                   next, 0x96);
}

// The same pair of multipliers in each 128-bit lane.
MRC_CRC32_TARGET inline __m512i lanes(FoldConstants c) {
  const auto lo = static_cast<long long>(c.lo), hi = static_cast<long long>(c.hi);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}

// Lane j of v. (The masked form with a zero source: the plain one passes
// GCC 12 an undefined register it then warns about.)
template <int j>
MRC_CRC32_TARGET inline __m128i lane(__m512i v) {
  return _mm512_mask_extracti32x4_epi32(_mm_setzero_si128(), 0xFF, v, j);
}

// One 16-byte lane `acc` folded over the distance `c` was made for.
MRC_CRC32_TARGET inline __m128i fold16(__m128i acc, FoldConstants c) {
  const __m128i k = _mm_set_epi64x(static_cast<long long>(c.hi), static_cast<long long>(c.lo));
  return _mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11));
}

// crc32_update() over src (n >= kFoldMinBytes bytes), copying the bytes to
// dst on the way when kCopy. `before` is a lane that immediately precedes
// src in the stream (zero for none): it is folded into the first 16 bytes,
// as `crc` is XORed into their first 4. Whatever the length, the work ends
// in one 16-byte lane whose CRC from a zero register stands for every byte
// folded into it; the tables finish that lane and the last n % 16 bytes.
template <bool kCopy>
MRC_CRC32_TARGET uint32_t fold_crc(uint8_t* dst, const uint8_t* src, size_t n, uint32_t crc,
                                   __m128i before = _mm_setzero_si128()) {
  const __m128i seed = _mm_xor_si128(_mm_cvtsi32_si128(static_cast<int>(crc)), fold16(before, kFold128));
  __m128i x;  // the lane everything so far is folded into
  size_t i;
  if (n >= kWideMinBytes) {
    const __m512i k1 = lanes(kFold512);
    __m512i a0 = _mm512_loadu_si512(src);
    if constexpr (kCopy) _mm512_storeu_si512(dst, a0);
    a0 = _mm512_xor_si512(a0, _mm512_zextsi128_si512(seed));  // lane 0 only
    i = 64;
    if (n >= 512) {
      // Four independent accumulators: one fold's multiply latency is longer
      // than a load, so a single chain would leave the multiplier idle.
      const __m512i k4 = lanes(kFold2048);
      __m512i a1 = _mm512_loadu_si512(src + 64), a2 = _mm512_loadu_si512(src + 128),
              a3 = _mm512_loadu_si512(src + 192);
      if constexpr (kCopy) {
        _mm512_storeu_si512(dst + 64, a1);
        _mm512_storeu_si512(dst + 128, a2);
        _mm512_storeu_si512(dst + 192, a3);
      }
      for (i = 256; i + 256 <= n; i += 256) {
        const __m512i b0 = _mm512_loadu_si512(src + i), b1 = _mm512_loadu_si512(src + i + 64),
                      b2 = _mm512_loadu_si512(src + i + 128), b3 = _mm512_loadu_si512(src + i + 192);
        if constexpr (kCopy) {
          _mm512_storeu_si512(dst + i, b0);
          _mm512_storeu_si512(dst + i + 64, b1);
          _mm512_storeu_si512(dst + i + 128, b2);
          _mm512_storeu_si512(dst + i + 192, b3);
        }
        a0 = fold(a0, k4, b0);
        a1 = fold(a1, k4, b1);
        a2 = fold(a2, k4, b2);
        a3 = fold(a3, k4, b3);
      }
      a0 = fold(fold(fold(a0, k1, a1), k1, a2), k1, a3);
    }
    for (; i + 64 <= n; i += 64) {
      const __m512i b = _mm512_loadu_si512(src + i);
      if constexpr (kCopy) _mm512_storeu_si512(dst + i, b);
      a0 = fold(a0, k1, b);
    }
    // The four lanes into the last: lane j lies (3 - j) x 128 bits before it.
    x = _mm_xor_si128(_mm_xor_si128(fold16(lane<0>(a0), kFold384), fold16(lane<1>(a0), kFold256)),
                      _mm_xor_si128(fold16(lane<2>(a0), kFold128), lane<3>(a0)));
  } else {
    x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    if constexpr (kCopy) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), x);
    x = _mm_xor_si128(x, seed);
    i = 16;
  }
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    if constexpr (kCopy) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), b);
    x = _mm_xor_si128(fold16(x, kFold128), b);
  }
  alignas(16) uint8_t rest[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(rest), x);
  // Leave no dirty upper vector state to the caller's SSE code (see
  // clear_upper_vector_state).
  _mm256_zeroupper();
  uint32_t out = crc32_update_portable(0, rest);
  if (i < n) {
    if constexpr (kCopy) std::memcpy(dst + i, src + i, n - i);
    out = crc32_update_portable(out, std::span<const uint8_t>(src + i, n - i));
  }
  return out;
}

// The first n bytes of a stream (n >= 16) as one 16-byte lane whose CRC
// from a zero register is crc32_update(crc, src[0..n)), with no bytes left
// over: n % 16 zero bytes go in front, which change nothing ahead of a zero
// register, and `crc` enters at the first real byte instead (spilling into
// the second 16 bytes when fewer than 4 real bytes share the first). A
// packet's headers end this way, so their lane folds straight into the
// payload's first 16 bytes (fold_crc's `before`) with one finish for both.
MRC_CRC32_TARGET __m128i lane_of(const uint8_t* src, size_t n, uint32_t crc) {
  const auto pad = static_cast<unsigned>((16 - n % 16) % 16);
  const __m128i iota = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m128i four = _mm_set1_epi8(4);
  // Byte k of the register sits at stream position pad + k: in the first
  // 16 bytes at index i when i - pad is 0..3, in the second when i + 16 - pad is.
  const __m128i reg = _mm_cvtsi32_si128(static_cast<int>(crc));
  const __m128i at0 = _mm_sub_epi8(iota, _mm_set1_epi8(static_cast<char>(pad)));
  const __m128i at1 = _mm_add_epi8(at0, _mm_set1_epi8(16));
  const __m128i seed0 = _mm_maskz_shuffle_epi8(_mm_cmplt_epu8_mask(at0, four), reg, at0);
  const __m128i seed1 = _mm_maskz_shuffle_epi8(_mm_cmplt_epu8_mask(at1, four), reg, at1);
  // The first 16 - pad bytes, loaded to indexes pad..15. The masked load
  // touches no byte before src.
  const auto* first = reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(src) - pad);
  __m128i x = _mm_xor_si128(_mm_maskz_loadu_epi8(static_cast<__mmask16>(0xFFFFu << pad), first), seed0);
  size_t i = 16 - pad;
  if (i < n) {
    x = _mm_xor_si128(fold16(x, kFold128),
                      _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)), seed1));
    i += 16;
  }
  for (; i < n; i += 16)
    x = _mm_xor_si128(fold16(x, kFold128), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  return x;
}

// icrc() with carry-less folding: the masked headers m[0..m_len) (at
// least 16 bytes) from the register after the masked LRH, then `rest` (at
// least 16 bytes), copied to `copy` when not null.
MRC_CRC32_TARGET uint32_t icrc_folded(const uint8_t* m, size_t m_len, std::span<const uint8_t> rest, uint8_t* copy) {
  const __m128i headers = lane_of(m, m_len, kAfterMaskedLrh);
  return copy ? fold_crc<true>(copy, rest.data(), rest.size(), 0, headers)
              : fold_crc<false>(nullptr, rest.data(), rest.size(), 0, headers);
}

const bool kHaveVpclmul512 = [] {
  __builtin_cpu_init();
  // libgcc's check includes the OS's saving of the AVX-512 state, and
  // lane_of()'s byte masks need AVX-512 BW and VL.
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq");
}();
#endif

}  // namespace

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> bytes) {
#ifdef MRC_CRC32_VPCLMUL
  if (kHaveVpclmul512 && bytes.size() >= kFoldMinBytes) return fold_crc<false>(nullptr, bytes.data(), bytes.size(), crc);
#endif
  return crc32_update_library(crc, bytes);
}

const char* crc32_backend() {
#ifdef MRC_CRC32_VPCLMUL
  if (kHaveVpclmul512) return "avx512-vpclmulqdq";
#endif
  return kLibraryBackend;
}

uint32_t crc32_copy(uint8_t* dst, std::span<const uint8_t> src, uint32_t crc) {
  if (src.empty()) return crc;
#ifdef MRC_CRC32_VPCLMUL
  if (kHaveVpclmul512 && src.size() >= kFoldMinBytes) return fold_crc<true>(dst, src.data(), src.size(), crc);
#endif
  std::memcpy(dst, src.data(), src.size());
  return crc32_update_library(crc, src);
}

const char* crc32_copy_backend() {
#ifdef MRC_CRC32_VPCLMUL
  if (kHaveVpclmul512) return "avx512-vpclmulqdq";
#endif
  return "memcpy+crc32_update";
}

Result<uint32_t> icrc(std::span<const uint8_t> ip_udp, std::span<const uint8_t> transport,
                      std::span<const uint8_t> payload, uint8_t* payload_copy) {
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
  const size_t m_len = ip_len + kUdpBytes + head;
#ifdef MRC_CRC32_VPCLMUL
  // The common shapes, a sender's (headers, then the payload) and a
  // receiver's (BTH, then everything else in `transport`), in one fold.
  const auto after = transport.subspan(head);
  if (kHaveVpclmul512 && after.empty() != payload.empty()) {
    const auto rest = after.empty() ? payload : after;
    if (rest.size() >= kFoldMinBytes)
      return ~icrc_folded(m, m_len, rest, after.empty() ? payload_copy : nullptr);
  }
#endif
  uint32_t crc = crc32_update(kAfterMaskedLrh, std::span<const uint8_t>(m, m_len));
  crc = crc32_update(crc, transport.subspan(head));
  crc = payload_copy ? crc32_copy(payload_copy, payload, crc) : crc32_update(crc, payload);
  return ~crc;
}

}  // namespace mrc::wire
