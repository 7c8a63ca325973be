// SPDX-License-Identifier: BSD-2-Clause
// Secure QPs: an OpenMRC extension (docs/security.md, "Secure QPs") in
// which every packet of a QP carries a SECETH with an AES-GCM tag, checked
// before the packet changes any state.
//
// The protocol decisions live here, in the sans-I/O core: which packets are
// sealed (every packet a secure QP sends), the nonce (salt and a per-QP
// transmission counter that never repeats under a key), the additional data
// (every header but the tag), the replay window, and the order of the
// receive checks. The cipher itself is behind Aead, a keyed seal/open
// interface the driver supplies (EndpointConfig::make_aead): the software
// device passes OpenSSL's AES-GCM (src/crypto), and the core links no
// cryptographic library.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/types.hpp"
#include "util/result.hpp"
#include "wire/headers.hpp"

namespace mrc::core {

/// GCM's 96-bit nonce and 128-bit tag.
inline constexpr size_t kAeadNonceBytes = 12;
inline constexpr size_t kAeadTagBytes = wire::Seceth::kTagBytes;

/// One AES-GCM key, used in one direction. Implementations keep the key
/// schedule; each call gives the nonce and the data. Not thread-safe: a QP
/// uses its keys from the thread that drives its endpoint.
class Aead {
 public:
  virtual ~Aead() = default;
  /// Seals one packet: the tag over `aad` and then the payload pieces `in`.
  /// `out` null: the payload is authenticated only (GMAC: it goes into the
  /// additional data after `aad`, in clear). `out` non-null: the payload is
  /// encrypted into `out` (sum of the pieces' lengths) and the tag covers
  /// the ciphertext. False if the library failed (nothing is then sent).
  virtual bool seal(std::span<const uint8_t, kAeadNonceBytes> nonce, std::span<const uint8_t> aad,
                    std::span<const PayloadSegment> in, uint8_t* out, std::span<uint8_t, kAeadTagBytes> tag) = 0;
  /// Opens one packet sealed as above: true if `tag` matches. With `out`
  /// (encrypted payload) the plaintext of `in` is written there; the caller
  /// must not use it unless this returns true.
  virtual bool open(std::span<const uint8_t, kAeadNonceBytes> nonce, std::span<const uint8_t> aad,
                    std::span<const uint8_t> in, uint8_t* out, std::span<const uint8_t, kAeadTagBytes> tag) = 0;
};

/// Makes an Aead for `key` (16 bytes: AES-128-GCM, 32: AES-256-GCM); null
/// if the key cannot be used. EndpointConfig::make_aead.
using AeadFactory = std::unique_ptr<Aead> (*)(std::span<const uint8_t> key);

/// Anti-replay window over the peer's transmission counter (RFC 4303's
/// sliding bitmap): the highest counter seen and which of the kBits below
/// it have arrived. check() reads; accept() records, and is called only
/// after the tag verified, so a forged packet cannot move it.
class ReplayWindow {
 public:
  /// Wide enough for the reordering a sprayed QP sees: a counter is
  /// refused only when kBits later transmissions (data and control) have
  /// arrived before it.
  static constexpr uint64_t kBits = 4096;
  /// False if `counter` arrived already or lies below the window.
  bool check(uint64_t counter) const;
  void accept(uint64_t counter);

 private:
  bool seen(uint64_t c) const { return (bits_[(c / 64) % kWords] >> (c % 64)) & 1; }
  static constexpr size_t kWords = kBits / 64;
  std::array<uint64_t, kWords> bits_{};
  uint64_t top_ = 0;      ///< highest counter accepted + 1 (0: none yet)
};

/// A QP's secure state: its keys, its send counter and its replay window.
struct SecureQp {
  SecureMode mode = SecureMode::off;
  std::unique_ptr<Aead> send;
  std::unique_ptr<Aead> recv;
  uint32_t send_salt = 0, recv_salt = 0;
  uint8_t send_key_id = 0, recv_key_id = 0;
  uint64_t tx_counter = 0;   ///< counter of the next packet sent
  ReplayWindow window;
};

/// Largest counter a key may seal (48 bits on the wire). A QP that reaches
/// it stops sending (the peer would refuse a wrapped counter as a replay).
inline constexpr uint64_t kMaxSecureCounter = (uint64_t{1} << 48) - 1;

/// The GCM nonce: salt (32 bits), 16 zero bits, the 48-bit counter.
std::array<uint8_t, kAeadNonceBytes> secure_nonce(uint32_t salt, uint64_t counter);

/// Checks a QpSecure for modify_qp; the message names the field and the fix.
Status validate_secure(const QpSecure& s, std::string* why = nullptr);

/// Keys a secure QP from `s` (which validate_secure accepted) with
/// `factory`. Errc::not_supported if there is no factory (a driver without
/// a cipher) or it refuses a key.
Status make_secure_qp(AeadFactory factory, const QpSecure& s, std::unique_ptr<SecureQp>& out);

}  // namespace mrc::core
