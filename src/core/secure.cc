// SPDX-License-Identifier: BSD-2-Clause
#include "core/secure.hpp"

#include <algorithm>
#include <cstring>

#include "core/endpoint.hpp"
#include "core/qp.hpp"
#include "wire/bits.hpp"
#include "wire/packet.hpp"

namespace mrc::core {

bool ReplayWindow::check(uint64_t counter) const {
  if (counter >= top_) return true;
  if (top_ - counter > kBits) return false;  // below the window: too old to tell
  return !seen(counter);
}

void ReplayWindow::accept(uint64_t counter) {
  if (counter >= top_) {
    // The window slides up: the counters entering it (top_ .. counter)
    // take the slots of those leaving it, which must read as not seen.
    if (counter - top_ >= kBits) {
      bits_.fill(0);
    } else {
      for (uint64_t c = top_; c <= counter; ++c) bits_[(c / 64) % kWords] &= ~(uint64_t{1} << (c % 64));
    }
    top_ = counter + 1;
  }
  bits_[(counter / 64) % kWords] |= uint64_t{1} << (counter % 64);
}

std::array<uint8_t, kAeadNonceBytes> secure_nonce(uint32_t salt, uint64_t counter) {
  // Salt, 16 zero bits, the 48-bit counter: unique for as long as a key
  // seals fewer than 2^48 packets (the QP stops before, kMaxSecureCounter).
  std::array<uint8_t, kAeadNonceBytes> n{};
  wire::detail::store_be<uint32_t>(n.data(), salt);
  for (int i = 0; i < 6; ++i) n[6 + i] = static_cast<uint8_t>(counter >> (8 * (5 - i)));
  return n;
}

namespace {
Status refuse(std::string* why, const char* msg) {
  if (why) *why = msg;
  return Errc::invalid_argument;
}
}  // namespace

Status validate_secure(const QpSecure& s, std::string* why) {
  if (s.mode == SecureMode::off) return {};
  if (s.mode != SecureMode::integrity && s.mode != SecureMode::encrypt)
    return refuse(why, "secure.mode: must be off, integrity or encrypt");
  for (const SecureKey* k : {&s.send, &s.recv})
    if (k->key_len != 16 && k->key_len != 32)
      return refuse(why, k == &s.send ? "secure.send.key_len: must be 16 (AES-128) or 32 (AES-256)"
                                      : "secure.recv.key_len: must be 16 (AES-128) or 32 (AES-256)");
  if (s.send.key_len == s.recv.key_len && s.send.salt == s.recv.salt &&
      std::memcmp(s.send.key.data(), s.recv.key.data(), s.send.key_len) == 0)
    return refuse(why, "secure: the send and receive keys are the same; give each direction its own key");
  return {};
}

Status make_secure_qp(AeadFactory factory, const QpSecure& s, std::unique_ptr<SecureQp>& out) {
  if (Status v = validate_secure(s); !v) return v;
  if (factory == nullptr) return Errc::not_supported;
  auto q = std::make_unique<SecureQp>();
  q->mode = s.mode;
  q->send = factory(std::span<const uint8_t>(s.send.key.data(), s.send.key_len));
  q->recv = factory(std::span<const uint8_t>(s.recv.key.data(), s.recv.key_len));
  if (!q->send || !q->recv) return Errc::not_supported;
  q->send_salt = s.send.salt;
  q->recv_salt = s.recv.salt;
  q->send_key_id = s.send.key_id;
  q->recv_key_id = s.recv.key_id;
  out = std::move(q);
  return {};
}

namespace {

// The additional data: every header byte but the tag (BTH, SECETH's first
// 8 bytes, the rest of the chain). Copied into one piece: at most 72 bytes,
// and one AAD call costs less than two.
size_t secure_aad(const uint8_t* hdr, size_t header_len, uint8_t* aad) {
  constexpr size_t kTagAt = wire::Bth::kSize + wire::Seceth::kTagOffset;
  constexpr size_t kTagEnd = kTagAt + wire::Seceth::kTagBytes;
  std::memcpy(aad, hdr, kTagAt);
  std::memcpy(aad + kTagAt, hdr + kTagEnd, header_len - kTagEnd);
  return header_len - wire::Seceth::kTagBytes;
}

}  // namespace

bool Endpoint::seal_transmit(Qp& q, std::span<uint8_t> hdr_buf, Transmit& tx, std::span<uint8_t> payload_buf) {
  SecureQp& s = *q.secure();
  uint8_t* const hdr = hdr_buf.data();
  const size_t plain_len = tx.header_len;
  if (s.tx_counter > kMaxSecureCounter || plain_len + wire::Seceth::kSize > hdr_buf.size()) {
    ++stats_.tx_seal_failures;
    return false;
  }
  // SECETH goes right after BTH: the rest of the chain moves up.
  std::memmove(hdr + wire::Bth::kSize + wire::Seceth::kSize, hdr + wire::Bth::kSize, plain_len - wire::Bth::kSize);
  wire::Bth bth = wire::decode<wire::Bth>(std::span<const uint8_t>(hdr, wire::Bth::kSize)).value();
  bth.sec = true;
  wire::encode(bth, hdr);
  wire::Seceth sec;
  sec.key_id = s.send_key_id;
  sec.encrypted = s.mode == SecureMode::encrypt;
  sec.counter = s.tx_counter++;
  wire::encode(sec, hdr + wire::Bth::kSize);
  tx.header_len = static_cast<uint16_t>(plain_len + wire::Seceth::kSize);

  uint8_t aad[wire::kMaxHeaderBytes];
  const size_t aad_len = secure_aad(hdr, tx.header_len, aad);
  PayloadSegment segs[kMaxSge];
  const size_t nseg = payload_segments(tx, segs);
  uint8_t* out = nullptr;
  if (sec.encrypted && tx.payload_len > 0) {
    if (payload_buf.size() < tx.payload_len) {
      if (tx_cipher_.size() < tx.payload_len) tx_cipher_.resize(std::max<size_t>(tx.payload_len, 4096));
      payload_buf = tx_cipher_;
    }
    out = payload_buf.data();
  }
  const auto nonce = secure_nonce(s.send_salt, sec.counter);
  uint8_t* tag = hdr + wire::Bth::kSize + wire::Seceth::kTagOffset;
  if (!s.send->seal(nonce, std::span<const uint8_t>(aad, aad_len), std::span<const PayloadSegment>(segs, nseg), out,
                    std::span<uint8_t, kAeadTagBytes>(tag, kAeadTagBytes))) {
    ++stats_.tx_seal_failures;
    return false;
  }
  if (out != nullptr) {
    // The ciphertext is one contiguous piece, whatever the gather list was.
    tx.payload = out;
    tx.gather = nullptr;
    tx.gather_count = 0;
  }
  return true;
}

const uint8_t* Endpoint::open_secure(Qp& q, const RxMeta& meta, const wire::Parsed& p,
                                     std::span<const uint8_t> bytes) {
  SecureQp* s = q.secure();
  const uint8_t* payload = bytes.data() + p.header_len;
  if (s == nullptr) {
    // A plain QP never takes a sealed packet: its peer and it disagree.
    if (!p.h.bth.sec) return payload;
    ++stats_.rx_auth_failures;
    return nullptr;
  }
  if (!p.h.bth.sec) {
    ++stats_.rx_auth_failures;
    return nullptr;
  }
  if (p.h.sec.key_id != s->recv_key_id) {
    ++stats_.rx_bad_key_id;
    return nullptr;
  }
  if (!s->window.check(p.h.sec.counter)) {
    ++stats_.rx_replays;
    return nullptr;
  }
  if (meta.trim != TrimMark::none) {
    // A switch cut the payload and with it what the tag covers: the header
    // is taken only as the loss hint it is (the responder NACKs it, sealed;
    // a forged one costs a retransmission), and the window keeps its slot
    // for the real transmission.
    if (p.h.info().data) return payload;
    ++stats_.rx_auth_failures;
    return nullptr;
  }
  const bool encrypted = s->mode == SecureMode::encrypt;
  if (p.h.sec.encrypted != encrypted || meta.phantom_payload != 0) {
    ++stats_.rx_auth_failures;
    return nullptr;
  }
  uint8_t aad[wire::kMaxHeaderBytes];
  const size_t aad_len = secure_aad(bytes.data(), p.header_len, aad);
  uint8_t* out = nullptr;
  if (encrypted && p.payload_len > 0) {
    // Decrypted apart and placed only once the tag verified: no
    // unauthenticated byte reaches a region.
    if (rx_plain_.size() < p.payload_len) rx_plain_.resize(std::max<size_t>(p.payload_len, 4096));
    out = rx_plain_.data();
  }
  const auto nonce = secure_nonce(s->recv_salt, p.h.sec.counter);
  const uint8_t* tag = bytes.data() + wire::Bth::kSize + wire::Seceth::kTagOffset;
  if (!s->recv->open(nonce, std::span<const uint8_t>(aad, aad_len), bytes.subspan(p.header_len, p.payload_len), out,
                     std::span<const uint8_t, kAeadTagBytes>(tag, kAeadTagBytes))) {
    ++stats_.rx_auth_failures;
    return nullptr;
  }
  s->window.accept(p.h.sec.counter);
  return out != nullptr ? out : payload;
}

}  // namespace mrc::core
