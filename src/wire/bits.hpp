// SPDX-License-Identifier: BSD-2-Clause
// Big-endian bit-field access used by the table-driven header codecs.
//
// A field of `width` bits at bit offset `bit` (0 = MSB of byte 0) lies in the
// bytes [bit/8, (bit+width-1)/8]. When those are at most 8 bytes (every field
// in headers.hpp), it is read or written as one big-endian word loaded from
// exactly those bytes, shifted and masked. The header tables pass constant
// offsets, so after inlining each field compiles to a load, a byte swap, a
// shift and a mask; nothing outside the field's bytes is ever touched. A
// 64-bit field that straddles nine bytes takes a bit-at-a-time path.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__GNUC__)
#define MRC_WIRE_INLINE inline __attribute__((always_inline))
#else
#define MRC_WIRE_INLINE inline
#endif

namespace mrc::wire::detail {

template <class U>
MRC_WIRE_INLINE U from_be(U v) {
  if constexpr (std::endian::native == std::endian::big || sizeof(U) == 1) {
    return v;
  } else if constexpr (sizeof(U) == 2) {
    return __builtin_bswap16(v);
  } else if constexpr (sizeof(U) == 4) {
    return __builtin_bswap32(v);
  } else {
    return __builtin_bswap64(v);
  }
}

template <class U>
MRC_WIRE_INLINE U load_be(const uint8_t* p) {
  U v;
  std::memcpy(&v, p, sizeof v);
  return from_be(v);
}

template <class U>
MRC_WIRE_INLINE void store_be(uint8_t* p, U v) {
  v = from_be(v);  // byte swapping is its own inverse
  std::memcpy(p, &v, sizeof v);
}

/// The `n` bytes at `p` (1 <= n <= 8) as a big-endian number.
MRC_WIRE_INLINE uint64_t load_window(const uint8_t* p, unsigned n) {
  if (n == 8) return load_be<uint64_t>(p);
  uint64_t v = 0;
  unsigned i = 0;
  if (n >= 4) {
    v = load_be<uint32_t>(p);
    i = 4;
  }
  if (n - i >= 2) {
    v = (v << 16) | load_be<uint16_t>(p + i);
    i += 2;
  }
  if (n - i >= 1) v = (v << 8) | p[i];
  return v;
}

/// Writes the low 8n bits of `v` to the `n` bytes at `p` (1 <= n <= 8), big-endian.
MRC_WIRE_INLINE void store_window(uint8_t* p, unsigned n, uint64_t v) {
  if (n == 8) {
    store_be<uint64_t>(p, v);
    return;
  }
  unsigned i = n;  // bytes still to write, from the end
  if (i & 1) {
    p[i - 1] = static_cast<uint8_t>(v);
    v >>= 8;
    i -= 1;
  }
  if (i & 2) {
    store_be<uint16_t>(p + i - 2, static_cast<uint16_t>(v));
    v >>= 16;
    i -= 2;
  }
  if (i & 4) store_be<uint32_t>(p, static_cast<uint32_t>(v));
}

MRC_WIRE_INLINE constexpr uint64_t low_mask(unsigned width) {
  return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
}

/// Writes the low `width` bits of `v` at bit offset `bit` (0 = MSB of byte 0),
/// network bit order. Bits outside the field are preserved.
MRC_WIRE_INLINE void put_bits(uint8_t* buf, unsigned bit, unsigned width, uint64_t v) {
  v &= low_mask(width);
  uint8_t* p = buf + bit / 8;
  const unsigned head = bit & 7;                 // field bits skipped in the first byte
  const unsigned nbytes = (head + width + 7) / 8;
  if (nbytes <= 8) {
    const unsigned tail = nbytes * 8 - head - width;  // bits after the field in the last byte
    if (head == 0 && tail == 0) {
      store_window(p, nbytes, v);  // whole bytes: no read needed
      return;
    }
    const uint64_t m = low_mask(width) << tail;
    store_window(p, nbytes, (load_window(p, nbytes) & ~m) | (v << tail));
    return;
  }
  for (unsigned i = 0; i < width; ++i) {
    const unsigned b = bit + width - 1 - i;  // bit position of value bit i
    const uint8_t m = static_cast<uint8_t>(0x80u >> (b & 7));
    if ((v >> i) & 1u)
      buf[b / 8] = static_cast<uint8_t>(buf[b / 8] | m);
    else
      buf[b / 8] = static_cast<uint8_t>(buf[b / 8] & ~m);
  }
}

/// Reads `width` bits at bit offset `bit` (network bit order).
MRC_WIRE_INLINE uint64_t get_bits(const uint8_t* buf, unsigned bit, unsigned width) {
  const uint8_t* p = buf + bit / 8;
  const unsigned head = bit & 7;
  const unsigned nbytes = (head + width + 7) / 8;
  if (nbytes <= 8) {
    const unsigned tail = nbytes * 8 - head - width;
    return (load_window(p, nbytes) >> tail) & low_mask(width);
  }
  uint64_t v = 0;
  for (unsigned i = 0; i < width; ++i) {
    const unsigned b = bit + i;
    v = (v << 1) | ((buf[b / 8] >> (7 - (b & 7))) & 1u);
  }
  return v;
}

/// Field visitor that encodes a header struct into a zeroed buffer.
struct Writer {
  uint8_t* buf;
  template <class T>
  MRC_WIRE_INLINE void operator()(unsigned bit, unsigned width, const T& field) const {
    if constexpr (std::is_same_v<T, bool>)
      put_bits(buf, bit, width, field ? 1u : 0u);
    else
      put_bits(buf, bit, width, static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(field)));
  }
};

/// Field visitor that decodes a header struct; signed fields are sign-extended.
struct Reader {
  const uint8_t* buf;
  template <class T>
  MRC_WIRE_INLINE void operator()(unsigned bit, unsigned width, T& field) const {
    const uint64_t raw = get_bits(buf, bit, width);
    if constexpr (std::is_same_v<T, bool>) {
      field = raw != 0;
    } else if constexpr (std::is_signed_v<T>) {
      const uint64_t sign = uint64_t{1} << (width - 1);
      field = static_cast<T>(static_cast<int64_t>((raw ^ sign) - sign));
    } else {
      field = static_cast<T>(raw);
    }
  }
};

}  // namespace mrc::wire::detail
