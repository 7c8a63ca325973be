// SPDX-License-Identifier: BSD-2-Clause
// libFuzzer target: wire::parse on arbitrary bytes (a UDP payload).
//
// When a packet parses, its header chain is re-encoded with wire::encode and
// the re-encoded header, followed by the original payload bytes, must parse to
// the same fields: compared by encoding both parses to bytes. The lengths must
// agree with header_size() and the input size, and the encoding may only
// carry bits that were set in the input.
#include <array>
#include <vector>

#include "fuzz_common.hpp"
#include "wire/packet.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mrc;
  const std::span<const uint8_t> in(data, size);
  auto p = wire::parse(in);
  if (!p.ok()) return 0;

  const wire::OpcodeInfo& info = p->h.info();
  MRC_FUZZ_CHECK(info.valid);
  MRC_FUZZ_CHECK(wire::header_size(p->h) == p->header_len);
  MRC_FUZZ_CHECK(p->header_len <= wire::kMaxHeaderBytes);
  if (info.data) {
    MRC_FUZZ_CHECK(p->header_len + p->payload_len + p->h.bth.pad_count == size);
    // Only packets that carry RETH state the operation's length (RC MIDDLE
    // and LAST packets do not).
    if (info.reth) MRC_FUZZ_CHECK(p->payload_len <= p->h.reth.dma_length);
    MRC_FUZZ_CHECK(p->h.bth.dest_qp > 2);
  } else {
    MRC_FUZZ_CHECK(p->header_len == size);
    MRC_FUZZ_CHECK(p->payload_len == 0);
  }

  std::array<uint8_t, wire::kMaxHeaderBytes> enc1;
  auto n1 = wire::encode(p->h, enc1);
  MRC_FUZZ_CHECK(n1.ok());
  MRC_FUZZ_CHECK(*n1 == p->header_len);
  MRC_FUZZ_CHECK(fuzz::bits_subset(enc1.data(), data, *n1));

  std::vector<uint8_t> again(enc1.begin(), enc1.begin() + static_cast<long>(*n1));
  again.insert(again.end(), data + p->header_len, data + size);
  auto q = wire::parse(again);
  MRC_FUZZ_CHECK(q.ok());
  MRC_FUZZ_CHECK(q->header_len == p->header_len);
  MRC_FUZZ_CHECK(q->payload_len == p->payload_len);

  std::array<uint8_t, wire::kMaxHeaderBytes> enc2;
  auto n2 = wire::encode(q->h, enc2);
  MRC_FUZZ_CHECK(n2.ok());
  MRC_FUZZ_CHECK(*n2 == *n1);
  MRC_FUZZ_CHECK(std::memcmp(enc1.data(), enc2.data(), *n1) == 0);
  return 0;
}
