// Big-endian bit-field access used by the table-driven header codecs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace mrc::wire::detail {

/// Writes the low `width` bits of `v` at bit offset `bit` (0 = MSB of byte 0),
/// network bit order. Bits outside the field are preserved.
inline void put_bits(uint8_t* buf, unsigned bit, unsigned width, uint64_t v) {
  if (width < 64) v &= (uint64_t{1} << width) - 1;
  // Fast path: byte-aligned whole bytes.
  if ((bit & 7) == 0 && (width & 7) == 0) {
    for (unsigned i = width / 8; i-- > 0;) {
      buf[bit / 8 + i] = static_cast<uint8_t>(v);
      v >>= 8;
    }
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
inline uint64_t get_bits(const uint8_t* buf, unsigned bit, unsigned width) {
  uint64_t v = 0;
  if ((bit & 7) == 0 && (width & 7) == 0) {
    for (unsigned i = 0; i < width / 8; ++i) v = (v << 8) | buf[bit / 8 + i];
    return v;
  }
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
  void operator()(unsigned bit, unsigned width, const T& field) const {
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
  void operator()(unsigned bit, unsigned width, T& field) const {
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
