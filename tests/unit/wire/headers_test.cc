// SPDX-License-Identifier: BSD-2-Clause
// Tests for wire/headers.hpp.
//
// Two kinds of test:
//  - Table-driven properties of every header (typed tests): the field table
//    is sane, every field round-trips at 0 and at its width's maximum, values
//    wider than the field are truncated without touching neighbours, bit
//    order within a field is MSB-first, reserved bits are written as zero and
//    ignored on decode, short buffers are rejected.
//  - Known-answer vectors written by hand from the layout comments (offset 0
//    = MSB of byte 0). These do not consult fields(), so a change to a table
//    that does not match the documented layout fails here.
#include "wire/headers.hpp"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "util/prng.hpp"

namespace mrc::wire {
namespace {

using Bytes = std::vector<uint8_t>;

template <class H>
Bytes enc(const H& h) {
  Bytes b(H::kSize, 0);
  encode(h, b.data());
  return b;
}

template <class H>
H dec(const Bytes& b) {
  auto r = decode<H>(b);
  EXPECT_TRUE(r.ok()) << to_string(r.error());
  return r.ok() ? *r : H{};
}

constexpr uint64_t width_mask(unsigned w) { return w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1; }

bool bit_at(const Bytes& b, unsigned bit) { return (b[bit / 8] >> (7 - bit % 8)) & 1u; }

size_t popcount(const Bytes& b) {
  size_t n = 0;
  for (uint8_t x : b) n += static_cast<size_t>(std::popcount(x));
  return n;
}

struct FieldDesc {
  unsigned bit;
  unsigned width;
  unsigned type_bits;  // bits of the C++ member type (1 for bool)
  bool is_signed;
};

template <class H>
std::vector<FieldDesc> layout() {
  std::vector<FieldDesc> out;
  H h{};
  H::fields(
      [&](unsigned bit, unsigned width, auto& f) {
        using T = std::remove_cvref_t<decltype(f)>;
        const unsigned tb = std::is_same_v<T, bool> ? 1u : 8u * sizeof(T);
        out.push_back({bit, width, tb, std::is_signed_v<T>});
      },
      h);
  return out;
}

// Assigns the raw bit pattern `raw` to field `idx` (converted to the member type).
template <class H>
void set_field(H& h, size_t idx, uint64_t raw) {
  size_t i = 0;
  H::fields(
      [&](unsigned, unsigned, auto& f) {
        using T = std::remove_cvref_t<decltype(f)>;
        if (i++ == idx) {
          if constexpr (std::is_same_v<T, bool>)
            f = raw != 0;
          else
            f = static_cast<T>(raw);
        }
      },
      h);
}

// The field's value as an unsigned bit pattern of its member type.
template <class H>
uint64_t get_field(const H& h, size_t idx) {
  uint64_t v = 0;
  size_t i = 0;
  H copy = h;
  H::fields(
      [&](unsigned, unsigned, auto& f) {
        using T = std::remove_cvref_t<decltype(f)>;
        if (i++ == idx) {
          if constexpr (std::is_same_v<T, bool>)
            v = f ? 1 : 0;
          else
            v = static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(f));
        }
      },
      copy);
  return v;
}

template <class H>
H all_zero() {
  H h{};
  const auto l = layout<H>();
  for (size_t i = 0; i < l.size(); ++i) set_field(h, i, 0);
  return h;
}

template <class H>
class HeaderCodec : public ::testing::Test {};

using AllHeaders = ::testing::Types<Bth, Meth, Tseth, Reth, ImmDt, Aeth, Seth, CcState, Neth,
                                    Peth, Erth, Eeth>;
TYPED_TEST_SUITE(HeaderCodec, AllHeaders);

TYPED_TEST(HeaderCodec, LayoutIsSane) {
  using H = TypeParam;
  const auto l = layout<H>();
  ASSERT_FALSE(l.empty());
  unsigned next_free = 0;
  for (const auto& f : l) {
    EXPECT_GE(f.width, 1u);
    EXPECT_LE(f.width, f.type_bits) << "field at bit " << f.bit << " wider than its member";
    // Sign extension on decode assumes a signed member spans its full width.
    if (f.is_signed) {
      EXPECT_EQ(f.width, f.type_bits) << "signed field at bit " << f.bit;
    }
    EXPECT_GE(f.bit, next_free) << "fields overlap or are out of order at bit " << f.bit;
    next_free = f.bit + f.width;
  }
  EXPECT_LE(next_free, 8 * H::kSize);
}

TYPED_TEST(HeaderCodec, ZeroRoundTrip) {
  using H = TypeParam;
  const H z = all_zero<H>();
  const Bytes b = enc(z);
  EXPECT_EQ(b, Bytes(H::kSize, 0));
  const H d = dec<H>(b);
  for (size_t i = 0; i < layout<H>().size(); ++i) EXPECT_EQ(get_field(d, i), 0u) << "field " << i;
}

TYPED_TEST(HeaderCodec, AllFieldsAtMaxRoundTrip) {
  using H = TypeParam;
  const auto l = layout<H>();
  H h{};
  size_t width_sum = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    set_field(h, i, width_mask(l[i].width));
    width_sum += l[i].width;
  }
  const Bytes b = enc(h);
  EXPECT_EQ(popcount(b), width_sum);  // every field bit set, no reserved bit set
  const H d = dec<H>(b);
  for (size_t i = 0; i < l.size(); ++i)
    EXPECT_EQ(get_field(d, i), width_mask(l[i].width) & width_mask(l[i].type_bits)) << "field " << i;
}

TYPED_TEST(HeaderCodec, EachFieldAtMaxSetsExactlyItsBits) {
  using H = TypeParam;
  const auto l = layout<H>();
  for (size_t i = 0; i < l.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "field " << i << " bit " << l[i].bit);
    H h = all_zero<H>();
    set_field(h, i, width_mask(l[i].width));
    const Bytes b = enc(h);
    for (unsigned bit = 0; bit < 8 * H::kSize; ++bit)
      EXPECT_EQ(bit_at(b, bit), bit >= l[i].bit && bit < l[i].bit + l[i].width) << "bit " << bit;
    const H d = dec<H>(b);
    for (size_t j = 0; j < l.size(); ++j)
      EXPECT_EQ(get_field(d, j), j == i ? width_mask(l[i].width) : 0u) << "field " << j;
  }
}

TYPED_TEST(HeaderCodec, BitOrderIsMsbFirst) {
  // Value bit j of a field of width w lands at offset bit + w - 1 - j.
  using H = TypeParam;
  const auto l = layout<H>();
  for (size_t i = 0; i < l.size(); ++i) {
    for (unsigned j = 0; j < l[i].width; ++j) {
      H h = all_zero<H>();
      set_field(h, i, uint64_t{1} << j);
      const Bytes b = enc(h);
      ASSERT_EQ(popcount(b), 1u) << "field " << i << " value bit " << j;
      ASSERT_TRUE(bit_at(b, l[i].bit + l[i].width - 1 - j)) << "field " << i << " value bit " << j;
      ASSERT_EQ(get_field(dec<H>(b), i), uint64_t{1} << j);
    }
  }
}

TYPED_TEST(HeaderCodec, WiderValuesAreTruncated) {
  using H = TypeParam;
  const auto l = layout<H>();
  for (size_t i = 0; i < l.size(); ++i) {
    if (l[i].width == l[i].type_bits) continue;  // nothing wider fits in the member
    SCOPED_TRACE(::testing::Message() << "field " << i << " bit " << l[i].bit);
    // All ones in the member encodes like the field's maximum...
    H wide = all_zero<H>();
    set_field(wide, i, ~uint64_t{0});
    H max = all_zero<H>();
    set_field(max, i, width_mask(l[i].width));
    EXPECT_EQ(enc(wide), enc(max));
    EXPECT_EQ(get_field(dec<H>(enc(wide)), i), width_mask(l[i].width));
    // ...and a value with only bits above the field encodes as zero.
    H above = all_zero<H>();
    set_field(above, i, uint64_t{1} << l[i].width);
    EXPECT_EQ(enc(above), Bytes(H::kSize, 0));
    // Neighbours at max are not disturbed by a wide value.
    H all = all_zero<H>();
    for (size_t j = 0; j < l.size(); ++j) set_field(all, j, width_mask(l[j].width));
    H all_wide = all;
    set_field(all_wide, i, ~uint64_t{0});
    EXPECT_EQ(enc(all_wide), enc(all));
  }
}

TYPED_TEST(HeaderCodec, RandomRoundTrip) {
  using H = TypeParam;
  const auto l = layout<H>();
  Prng rng(0xC0DEC);
  for (int iter = 0; iter < 500; ++iter) {
    H h{};
    std::vector<uint64_t> want(l.size());
    for (size_t i = 0; i < l.size(); ++i) {
      want[i] = rng.next_u64() & width_mask(l[i].width);
      set_field(h, i, want[i]);
    }
    const H d = dec<H>(enc(h));
    for (size_t i = 0; i < l.size(); ++i) ASSERT_EQ(get_field(d, i), want[i]) << "field " << i;
  }
}

TYPED_TEST(HeaderCodec, ReservedBitsWrittenZeroAndIgnored) {
  using H = TypeParam;
  const auto l = layout<H>();
  // Decoding all-ones gives every field its maximum; reserved bits vanish.
  const Bytes ones(H::kSize, 0xFF);
  const H d = dec<H>(ones);
  size_t width_sum = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    EXPECT_EQ(get_field(d, i), width_mask(l[i].width)) << "field " << i;
    width_sum += l[i].width;
  }
  EXPECT_EQ(popcount(enc(d)), width_sum);
  // encode() overwrites whatever the buffer held, reserved bits included.
  Bytes dirty(H::kSize, 0xFF);
  const H z = all_zero<H>();
  encode(z, dirty.data());
  EXPECT_EQ(dirty, Bytes(H::kSize, 0));
}

TYPED_TEST(HeaderCodec, EncodeWritesExactlyKSize) {
  using H = TypeParam;
  Bytes buf(H::kSize + 8, 0xA5);
  H h{};
  encode(h, buf.data());
  for (size_t i = H::kSize; i < buf.size(); ++i) EXPECT_EQ(buf[i], 0xA5) << i;
}

TYPED_TEST(HeaderCodec, ShortBufferIsTruncated) {
  using H = TypeParam;
  const Bytes buf(H::kSize + 4, 0x5A);
  for (size_t n = 0; n < H::kSize; ++n) {
    auto r = decode<H>(std::span<const uint8_t>(buf.data(), n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error(), Errc::truncated) << n;
  }
  EXPECT_TRUE(decode<H>(std::span<const uint8_t>(buf.data(), H::kSize)).ok());
  // Trailing bytes are not the header's business.
  auto longer = decode<H>(buf);
  ASSERT_TRUE(longer.ok());
  EXPECT_EQ(enc(*longer), enc(dec<H>(Bytes(buf.begin(), buf.begin() + H::kSize))));
}

TEST(HeaderSizes, MatchReference) {
  // Reference section 3.3.
  EXPECT_EQ(Bth::kSize, 12u);
  EXPECT_EQ(Meth::kSize, 4u);
  EXPECT_EQ(Tseth::kSize, 4u);
  EXPECT_EQ(Reth::kSize, 16u);
  EXPECT_EQ(ImmDt::kSize, 4u);
  EXPECT_EQ(Aeth::kSize, 4u);
  EXPECT_EQ(Seth::kSize, 28u);
  EXPECT_EQ(CcState::kSize, 8u);
  EXPECT_EQ(Neth::kSize, 20u);
  EXPECT_EQ(Peth::kSize, 16u);
  EXPECT_EQ(Erth::kSize, 16u);
  EXPECT_EQ(Eeth::kSize, 36u);
  EXPECT_EQ(kDefaultUdpPort, 4791);
}

// ---------------------------------------------------------------------------
// Known-answer vectors. Each byte is derived from the bit offsets in
// headers.hpp by hand; comments give the derivation.
// ---------------------------------------------------------------------------

TEST(HeaderKat, Bth) {
  Bth h;
  h.opcode = 0xC6;
  h.pkey = 0xffff;
  h.dest_qp = 0x123456;
  h.ack_req = true;
  h.rtx = true;
  h.ts = true;
  h.psn = 0xABCDEF;
  const Bytes want = {
      0xC6,              // [0..8)   opcode
      0x00,              // [8]SE [9]M [10..12)pad [12..16)tver: all zero
      0xFF, 0xFF,        // [16..32) pkey
      0x00,              // [32..40) reserved
      0x12, 0x34, 0x56,  // [40..64) dest_qp
      0xB0,              // [64]A=1 (0x80) [65]rsvd [66]rtx=1 (0x20) [67]ts=1 (0x10) [68..72) rsvd
      0xAB, 0xCD, 0xEF,  // [72..96) psn
  };
  EXPECT_EQ(enc(h), want);
  const Bth d = dec<Bth>(want);
  EXPECT_EQ(d.opcode, 0xC6);
  EXPECT_EQ(d.pkey, 0xffff);
  EXPECT_EQ(d.dest_qp, 0x123456u);
  EXPECT_TRUE(d.ack_req);
  EXPECT_TRUE(d.rtx);
  EXPECT_TRUE(d.ts);
  EXPECT_EQ(d.psn, 0xABCDEFu);
  EXPECT_FALSE(d.solicited);
  EXPECT_FALSE(d.mig_req);
  EXPECT_EQ(d.pad_count, 0);
  EXPECT_EQ(d.tver, 0);
}

TEST(HeaderKat, BthByte1AndFlagBits) {
  Bth h;
  h.opcode = 0xDC;
  h.solicited = true;  // bit 8  -> 0x80 of byte 1
  h.mig_req = false;   // bit 9
  h.pad_count = 2;     // bits 10..11 = 10 -> 0x20
  h.tver = 5;          // bits 12..15 = 0101 -> 0x05
  h.pkey = 0x8001;
  h.dest_qp = 0x000002;
  h.ack_req = false;
  h.rtx = true;        // bit 66 -> 0x20 of byte 8
  h.ts = false;
  h.psn = 0x000001;
  const Bytes want = {0xDC, 0xA5, 0x80, 0x01, 0x00, 0x00, 0x00, 0x02, 0x20, 0x00, 0x00, 0x01};
  EXPECT_EQ(enc(h), want);
  // Only A (bit 64) set in the flag byte -> 0x80; only ts (bit 67) -> 0x10.
  Bth a;
  a.pkey = 0;
  a.ack_req = true;
  EXPECT_EQ(enc(a)[8], 0x80);
  Bth t;
  t.pkey = 0;
  t.ts = true;
  EXPECT_EQ(enc(t)[8], 0x10);
  // mig_req alone is bit 9 -> 0x40 of byte 1.
  Bth m;
  m.mig_req = true;
  EXPECT_EQ(enc(m)[1], 0x40);
}

TEST(HeaderKat, BthTruncatesWideValues) {
  Bth h;
  h.opcode = 0xC8;
  h.pad_count = 0xFF;     // 2 bits -> 3
  h.tver = 0xF3;          // 4 bits -> 3
  h.pkey = 0x0000;
  h.dest_qp = 0xFF123456; // 24 bits -> 0x123456; byte 4 (reserved) stays 0
  h.psn = 0xAA000001;     // 24 bits -> 0x000001
  const Bytes want = {0xC8, 0x33, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x00, 0x00, 0x00, 0x01};
  EXPECT_EQ(enc(h), want);
  const Bth d = dec<Bth>(want);
  EXPECT_EQ(d.pad_count, 3);
  EXPECT_EQ(d.tver, 3);
  EXPECT_EQ(d.dest_qp, 0x123456u);
  EXPECT_EQ(d.psn, 1u);
}

TEST(HeaderKat, Meth) {
  Meth h;
  h.rqmsn = 0x1234;  // [0..16)
  h.msn = 0xABCD;    // [16..32)
  EXPECT_EQ(enc(h), (Bytes{0x12, 0x34, 0xAB, 0xCD}));
  const Meth d = dec<Meth>({0xFF, 0xFE, 0x00, 0x01});
  EXPECT_EQ(d.rqmsn, 0xFFFE);
  EXPECT_EQ(d.msn, 0x0001);
}

TEST(HeaderKat, Tseth) {
  Tseth h;
  h.timestamp = 0xBEEF;      // [0..16)
  h.alt_resolution = true;   // [16] -> 0x80 of byte 2; [17..28) reserved
  h.format = 1;              // [28..32) -> low nibble of byte 3
  EXPECT_EQ(enc(h), (Bytes{0xBE, 0xEF, 0x80, 0x01}));
  h.alt_resolution = false;
  h.format = 0xA;
  EXPECT_EQ(enc(h), (Bytes{0xBE, 0xEF, 0x00, 0x0A}));
  const Tseth d = dec<Tseth>({0x00, 0x80, 0x7F, 0xF5});  // reserved bits all set
  EXPECT_EQ(d.timestamp, 0x0080);
  EXPECT_FALSE(d.alt_resolution);
  EXPECT_EQ(d.format, 5);
  EXPECT_EQ(Tseth{}.format, 1);  // default format type
}

TEST(HeaderKat, Reth) {
  Reth h;
  h.va = 0x0123456789ABCDEFull;  // [0..64)
  h.rkey = 0xDEADBEEF;           // [64..96)
  h.dma_length = 0x00010000;     // [96..128)
  EXPECT_EQ(enc(h), (Bytes{0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,  //
                           0xDE, 0xAD, 0xBE, 0xEF,                          //
                           0x00, 0x01, 0x00, 0x00}));
  h.va = ~uint64_t{0};
  h.rkey = 0;
  h.dma_length = 0xFFFFFFFF;
  const Reth d = dec<Reth>(enc(h));
  EXPECT_EQ(d.va, ~uint64_t{0});
  EXPECT_EQ(d.rkey, 0u);
  EXPECT_EQ(d.dma_length, 0xFFFFFFFFu);
}

TEST(HeaderKat, ImmDt) {
  ImmDt h;
  h.imm = 0xCAFEBABE;
  EXPECT_EQ(enc(h), (Bytes{0xCA, 0xFE, 0xBA, 0xBE}));
}

TEST(HeaderKat, Aeth) {
  Aeth h;
  h.syndrome = aeth::kAckNoCredit;  // [0..8) = 0x1F
  h.msn = 0x123456;                 // [8..32)
  EXPECT_EQ(enc(h), (Bytes{0x1F, 0x12, 0x34, 0x56}));
  h.syndrome = aeth::kNakInvalidRequest;
  h.msn = 0x1FFFFFF;  // 24 bits -> 0xFFFFFF
  EXPECT_EQ(enc(h), (Bytes{0x61, 0xFF, 0xFF, 0xFF}));
  EXPECT_TRUE(aeth::is_nak(aeth::kNakPsnSeqError));
  EXPECT_TRUE(aeth::is_nak(aeth::kNakRemoteOperational));
  EXPECT_FALSE(aeth::is_nak(aeth::kAckNoCredit));
  EXPECT_FALSE(aeth::is_nak(0x20));  // RNR NAK is not in the NAK class
}

TEST(HeaderKat, SethAndCcState) {
  Seth s;
  s.type = 0xA;              // [0..4)   1010
  s.next_header = 0x15;      // [4..9)   10101: 1010 in byte 0 low nibble, 1 in byte 1 MSB
  s.mark = 2;                // [9..11)  10
  s.probe_response = true;   // [14]     ([11..14) and [15] reserved)
  s.ack_psn_offset = -2;     // [16..32) 0xFFFE
  s.entropy = 0x11223344;    // [32..64)
  s.src_conn = 0x5566;       // [64..80)
  s.dst_conn = 0x7788;       // [80..96)
  s.cack_psn = 0x9ABCDE;     // [96..104) reserved, [104..128)
  s.cc_type = 0x3;           // [128..132)
  s.cc_flags = 0xC;          // [132..136)
  s.mpr = 0x7F;              // [136..144)
  s.sack_offset = -32768;    // [144..160) 0x8000
  s.bitmap = 0x8000000000000001ull;  // [160..224)
  const Bytes want_seth = {
      0xAA,                    // 1010 | 1010
      0xC2,                    // 1 (next_header lsb) 10 (mark) 000 1 (PR) 0
      0xFF, 0xFE,              // ack_psn_offset -2
      0x11, 0x22, 0x33, 0x44,  // entropy
      0x55, 0x66, 0x77, 0x88,  // src_conn, dst_conn
      0x00, 0x9A, 0xBC, 0xDE,  // reserved, cack_psn
      0x3C,                    // cc_type 3, cc_flags C
      0x7F,                    // mpr
      0x80, 0x00,              // sack_offset -32768
      0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,  // bitmap
  };
  EXPECT_EQ(enc(s), want_seth);
  const Seth ds = dec<Seth>(want_seth);
  EXPECT_EQ(ds.type, 0xA);
  EXPECT_EQ(ds.next_header, 0x15);
  EXPECT_EQ(ds.mark, 2);
  EXPECT_TRUE(ds.probe_response);
  EXPECT_EQ(ds.ack_psn_offset, -2);
  EXPECT_EQ(ds.entropy, 0x11223344u);
  EXPECT_EQ(ds.src_conn, 0x5566);
  EXPECT_EQ(ds.dst_conn, 0x7788);
  EXPECT_EQ(ds.cack_psn, 0x9ABCDEu);
  EXPECT_EQ(ds.cc_type, 3);
  EXPECT_EQ(ds.cc_flags, 0xC);
  EXPECT_EQ(ds.mpr, 0x7F);
  EXPECT_EQ(ds.sack_offset, -32768);
  EXPECT_EQ(ds.bitmap, 0x8000000000000001ull);

  CcState c;
  c.reflected_ts = 0x1234;  // [0..16)
  c.ooo_count = 0x7FFF;     // [16] reserved, [17..32): 0 111 1111 1111 1111
  c.restore_cwnd = true;    // [32] -> 0x80 of byte 4
  c.rcv_cwnd_pen = 0x55;    // [33..40) 1010101 -> byte 4 = 1 1010101 = 0xD5
  c.rcvd_bytes = 0xABCDEF;  // [40..64)
  const Bytes want_cc = {0x12, 0x34, 0x7F, 0xFF, 0xD5, 0xAB, 0xCD, 0xEF};
  EXPECT_EQ(enc(c), want_cc);
  const CcState dc = dec<CcState>(want_cc);
  EXPECT_EQ(dc.reflected_ts, 0x1234);
  EXPECT_EQ(dc.ooo_count, 0x7FFF);
  EXPECT_TRUE(dc.restore_cwnd);
  EXPECT_EQ(dc.rcv_cwnd_pen, 0x55);
  EXPECT_EQ(dc.rcvd_bytes, 0xABCDEFu);
  // ooo_count is 15 bits: 0xFFFF encodes as 0x7FFF and leaves reserved bit 16 clear.
  c.ooo_count = 0xFFFF;
  c.rcv_cwnd_pen = 0xFF;  // 7 bits -> 0x7F; restore_cwnd bit unaffected
  c.restore_cwnd = false;
  EXPECT_EQ(enc(c), (Bytes{0x12, 0x34, 0x7F, 0xFF, 0x7F, 0xAB, 0xCD, 0xEF}));
  // Reserved bit 16 set on the wire is ignored.
  EXPECT_EQ(dec<CcState>({0, 0, 0x80, 0x01, 0, 0, 0, 0}).ooo_count, 1);
}

TEST(HeaderKat, SethSignedExtremes) {
  struct Case {
    int16_t v;
    uint8_t hi, lo;
  };
  for (const Case c : {Case{0, 0x00, 0x00}, Case{1, 0x00, 0x01}, Case{-1, 0xFF, 0xFF},
                       Case{32767, 0x7F, 0xFF}, Case{-32768, 0x80, 0x00},
                       Case{-256, 0xFF, 0x00}}) {
    SCOPED_TRACE(c.v);
    Seth s{};
    s.ack_psn_offset = c.v;
    s.sack_offset = c.v;
    const Bytes b = enc(s);
    EXPECT_EQ(b[2], c.hi);
    EXPECT_EQ(b[3], c.lo);
    EXPECT_EQ(b[18], c.hi);
    EXPECT_EQ(b[19], c.lo);
    const Seth d = dec<Seth>(b);
    EXPECT_EQ(d.ack_psn_offset, c.v);
    EXPECT_EQ(d.sack_offset, c.v);
  }
}

TEST(HeaderKat, SethMarkValues) {
  for (const Mark m : {Mark::none, Mark::skip_once, Mark::always_skip}) {
    Seth s{};
    s.mark = static_cast<uint8_t>(m);
    // mark occupies bits 9..10: byte 1 bits 6..5 (value << 5).
    EXPECT_EQ(enc(s)[1], static_cast<uint8_t>(static_cast<uint8_t>(m) << 5));
    EXPECT_EQ(dec<Seth>(enc(s)).mark, static_cast<uint8_t>(m));
  }
}

TEST(HeaderKat, Neth) {
  Neth h;
  h.type = 0x5;               // [0..4)   0101
  h.next_header = 0x1F;       // [4..9)   11111 -> byte 0 = 0101 1111, byte 1 MSB = 1
  h.reason = static_cast<uint8_t>(NackCode::psn_oor_window);  // [16..24) 0x0B
  h.vendor = 0xEE;            // [24..32)
  h.entropy = 0xA1B2C3D4;     // [32..64)
  h.src_conn = 0x0102;        // [64..80)
  h.dst_conn = 0x0304;        // [80..96)
  h.nack_psn = 0xFEDCBA;      // [96..104) reserved, [104..128)
  h.cc_type = 0xF;            // [128..132)
  h.cc_flags = 0x0;           // [132..136)
  h.reflected_ts = 0x4321;    // [136..144) reserved, [144..160)
  const Bytes want = {0x5F, 0x80, 0x0B, 0xEE, 0xA1, 0xB2, 0xC3, 0xD4, 0x01, 0x02,
                      0x03, 0x04, 0x00, 0xFE, 0xDC, 0xBA, 0xF0, 0x00, 0x43, 0x21};
  EXPECT_EQ(enc(h), want);
  const Neth d = dec<Neth>(want);
  EXPECT_EQ(d.type, 5);
  EXPECT_EQ(d.next_header, 0x1F);
  EXPECT_EQ(d.reason, 0x0B);
  EXPECT_EQ(d.vendor, 0xEE);
  EXPECT_EQ(d.entropy, 0xA1B2C3D4u);
  EXPECT_EQ(d.src_conn, 0x0102);
  EXPECT_EQ(d.dst_conn, 0x0304);
  EXPECT_EQ(d.nack_psn, 0xFEDCBAu);
  EXPECT_EQ(d.cc_type, 0xF);
  EXPECT_EQ(d.cc_flags, 0);
  EXPECT_EQ(d.reflected_ts, 0x4321);
}

TEST(HeaderKat, NackCodes) {
  EXPECT_EQ(static_cast<uint8_t>(NackCode::trimmed), 0x01);
  EXPECT_EQ(static_cast<uint8_t>(NackCode::trimmed_lasthop), 0x02);
  EXPECT_EQ(static_cast<uint8_t>(NackCode::no_bitmap), 0x06);
  EXPECT_EQ(static_cast<uint8_t>(NackCode::no_pkt_buffer), 0x07);
  EXPECT_EQ(static_cast<uint8_t>(NackCode::no_resource), 0x0A);
  EXPECT_EQ(static_cast<uint8_t>(NackCode::psn_oor_window), 0x0B);
  EXPECT_EQ(static_cast<uint8_t>(NackCode::unexp_event), 0x19);
  for (NackCode c : {NackCode::trimmed, NackCode::trimmed_lasthop, NackCode::no_bitmap,
                     NackCode::no_pkt_buffer, NackCode::no_resource, NackCode::psn_oor_window})
    EXPECT_TRUE(nack_is_retriable(c));
  EXPECT_FALSE(nack_is_retriable(NackCode::unexp_event));
  EXPECT_TRUE(nack_implicates_path(NackCode::trimmed));
  EXPECT_FALSE(nack_implicates_path(NackCode::trimmed_lasthop));
  EXPECT_FALSE(nack_implicates_path(NackCode::no_bitmap));
}

// PETH, ERTH and EETH: expected bytes derived by hand from the layouts of
// anichol67/MRC-Client core/mrc_headers.py and (PETH) HanGuTalker/uet-simulator
// src/mrc/model/mrc-header.cc; see docs/architecture.md "PETH, ERTH, EETH".
TEST(HeaderKat, Peth) {
  Peth h;
  h.type = 0x1;             // byte 0 high nibble
  h.next_header = 0x02;     // 00010: byte 0 low nibble 0001, byte 1 bit 7 = 0
  h.vendor = 0x99;          // byte 3 (byte 2 reserved)
  h.probe_id = 0xBEEF;      // bytes 4-5 (6-7 reserved)
  h.src_conn = 0x1111;      // bytes 8-9
  h.dst_conn = 0x2222;      // bytes 10-11
  h.timestamp = 0x3333;     // bytes 12-13
  h.alt_resolution = true;  // bit 15 of the word at 14-15 -> 0x80 in byte 14
  h.format = 1;             // bits 3:0 of that word -> low nibble of byte 15
  const Bytes want = {0x11, 0x00, 0x00, 0x99, 0xBE, 0xEF, 0x00, 0x00,
                      0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x80, 0x01};
  EXPECT_EQ(enc(h), want);
  const Peth d = dec<Peth>(want);
  EXPECT_EQ(d.type, 1);
  EXPECT_EQ(d.next_header, 2);
  EXPECT_EQ(d.vendor, 0x99);
  EXPECT_EQ(d.probe_id, 0xBEEF);
  EXPECT_EQ(d.src_conn, 0x1111);
  EXPECT_EQ(d.dst_conn, 0x2222);
  EXPECT_EQ(d.timestamp, 0x3333);
  EXPECT_TRUE(d.alt_resolution);
  EXPECT_EQ(d.format, 1);
  // type 0xF / next header 0x1F fill byte 0 and bit 7 of byte 1 only.
  h = Peth{};
  h.type = 0xF;
  h.next_header = 0x1F;
  h.format = 0;
  EXPECT_EQ(enc(h), Bytes({0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(HeaderKat, PethFromUetSimulatorBytes) {
  // What HanGuTalker/uet-simulator's PETH serializer emits for probe 7 from
  // PDC 0x0102 to 0x0304 at time 0x0A0B with vendor info 0x55: zero
  // type/next-header, the constant 0x0001 (format 1) in bytes 14-15.
  const Bytes theirs = {0x00, 0x00, 0x00, 0x55, 0x00, 0x07, 0x00, 0x00,
                        0x01, 0x02, 0x03, 0x04, 0x0A, 0x0B, 0x00, 0x01};
  const Peth d = dec<Peth>(theirs);
  EXPECT_EQ(d.vendor, 0x55);
  EXPECT_EQ(d.probe_id, 7);
  EXPECT_EQ(d.src_conn, 0x0102);
  EXPECT_EQ(d.dst_conn, 0x0304);
  EXPECT_EQ(d.timestamp, 0x0A0B);
  EXPECT_FALSE(d.alt_resolution);
  EXPECT_EQ(d.format, 1);
  EXPECT_EQ(enc(d), theirs);
}

TEST(HeaderKat, Erth) {
  Erth h;
  h.type = 0xA;                                     // byte 0 = 1010 | 1010 (next_header[4:1])
  h.next_header = 0x15;                             // 10101: bit 0 -> byte 1 bit 7
  h.op = static_cast<uint8_t>(EpWireOp::ev_probe);  // byte 1 bits 1:0 = 01
  h.vendor = 0x42;                                  // byte 3 (byte 2 reserved)
  h.port_status_mask = 0x8000000F;                  // bytes 4-7 (8-11 reserved)
  h.timestamp = 0xABCD;                             // bytes 12-13
  h.alt_resolution = false;                         // byte 14 bit 7
  h.format = 1;                                     // byte 15 low nibble
  const Bytes want = {0xAA, 0x81, 0x00, 0x42, 0x80, 0x00, 0x00, 0x0F,
                      0x00, 0x00, 0x00, 0x00, 0xAB, 0xCD, 0x00, 0x01};
  EXPECT_EQ(enc(h), want);
  const Erth d = dec<Erth>(want);
  EXPECT_EQ(d.type, 0xA);
  EXPECT_EQ(d.next_header, 0x15);
  EXPECT_EQ(d.op, 1);
  EXPECT_EQ(d.vendor, 0x42);
  EXPECT_EQ(d.port_status_mask, 0x8000000Fu);
  EXPECT_EQ(d.timestamp, 0xABCD);
  EXPECT_FALSE(d.alt_resolution);
  EXPECT_EQ(d.format, 1);
  // port_status_update is op 0 on the wire; op is 2 bits (0xFF -> 11).
  h.op = static_cast<uint8_t>(EpWireOp::port_status_update);
  EXPECT_EQ(enc(h)[1], 0x80);
  h.op = 0xFF;
  EXPECT_EQ(enc(h)[1], 0x83);
  EXPECT_EQ(enc(h)[0], 0xAA);
}

TEST(HeaderKat, ErthProbeFromMrcClientDecodesAsProbe) {
  // MRC-Client's ERTH for an EV probe (op 1) at time 0x0102 with everything
  // else zero. The old layout read op from the top of byte 0 and took this
  // for a port-status update with mask 0.
  const Bytes probe = {0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                       0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x01};
  const Erth d = dec<Erth>(probe);
  EXPECT_EQ(static_cast<EpWireOp>(d.op), EpWireOp::ev_probe);
  EXPECT_EQ(d.port_status_mask, 0u);
  EXPECT_EQ(d.timestamp, 0x0102);
  EXPECT_EQ(d.format, 1);
  EXPECT_EQ(enc(d), probe);
  // And its port-status update for ports 1 and 3 (mask 0b101).
  const Bytes psu = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,
                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
  const Erth u = dec<Erth>(psu);
  EXPECT_EQ(static_cast<EpWireOp>(u.op), EpWireOp::port_status_update);
  EXPECT_EQ(u.port_status_mask, 5u);
}

TEST(HeaderKat, Eeth) {
  Eeth h;
  h.type = 0x3;                // byte 0 = 0011 | 0010 (next_header[4:1])
  h.next_header = 0x04;        // 00100: byte 1 bit 7 = 0
  h.op = 1;                    // byte 1 bits 5:4 = 01 -> 0x10
  h.vendor = 0x7E;             // byte 3 (byte 2 reserved)
  h.entropy = 0xDEADBEEF;      // bytes 4-7
  h.rx_port = 8;               // byte 8
  h.svc_time_adjusted = true;  // byte 9 bit 7
  h.reflected_ts = 0x0F0F;     // bytes 28-29; 10-27 and 30-35 reserved
  Bytes want(36, 0);
  const uint8_t head[] = {0x32, 0x10, 0x00, 0x7E, 0xDE, 0xAD, 0xBE, 0xEF, 0x08, 0x80};
  std::copy(std::begin(head), std::end(head), want.begin());
  want[28] = 0x0F;
  want[29] = 0x0F;
  EXPECT_EQ(enc(h), want);
  const Eeth d = dec<Eeth>(want);
  EXPECT_EQ(d.type, 3);
  EXPECT_EQ(d.next_header, 4);
  EXPECT_EQ(d.op, 1);
  EXPECT_TRUE(d.svc_time_adjusted);
  EXPECT_EQ(d.vendor, 0x7E);
  EXPECT_EQ(d.rx_port, 8);
  EXPECT_EQ(d.reflected_ts, 0x0F0F);
  EXPECT_EQ(d.entropy, 0xDEADBEEFu);
  // MRC-Client's reserved bits of byte 1 (6, 3..0) stay clear with every field full.
  Eeth full;
  full.type = 0xF;
  full.next_header = 0x1F;
  full.op = 3;
  full.svc_time_adjusted = true;
  full.vendor = full.rx_port = 0xFF;
  full.reflected_ts = 0xFFFF;
  full.entropy = 0xFFFFFFFF;
  const Bytes e = enc(full);
  EXPECT_EQ(e[1], 0xB0);  // next_header bit 0 + op
  EXPECT_EQ(e[2], 0x00);
  for (size_t i = 10; i < 28; ++i) EXPECT_EQ(e[i], 0x00) << i;
  for (size_t i = 30; i < 36; ++i) EXPECT_EQ(e[i], 0x00) << i;
}

TEST(HeaderKat, EethFromMrcClientBytes) {
  // MRC-Client's EETH answering an EV probe (op 1) whose timestamp was
  // 0x1234: op in byte 1 bits 5:4, timestamp at 28-29, nothing else.
  Bytes theirs(36, 0);
  theirs[1] = 0x10;
  theirs[28] = 0x12;
  theirs[29] = 0x34;
  const Eeth d = dec<Eeth>(theirs);
  EXPECT_EQ(static_cast<EpWireOp>(d.op), EpWireOp::ev_probe);
  EXPECT_EQ(d.reflected_ts, 0x1234);
  EXPECT_EQ(d.rx_port, 0);  // not reported by that layout
  EXPECT_EQ(d.entropy, 0u);
  EXPECT_FALSE(d.svc_time_adjusted);
  EXPECT_EQ(enc(d), theirs);
}

}  // namespace
}  // namespace mrc::wire
