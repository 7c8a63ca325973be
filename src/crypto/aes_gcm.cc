// SPDX-License-Identifier: BSD-2-Clause
#include "crypto/aes_gcm.hpp"

#include <openssl/evp.h>

#include <climits>

namespace mrc::crypto {
namespace {

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

// One key, one context: the key schedule is set once, and each packet only
// sets its nonce (EVP_*Init_ex with a null cipher and key keeps them).
// Integrity-only packets put the payload in the additional data, which
// GCM hashes without running AES-CTR over it: GMAC, about half the work.
class AesGcm final : public core::Aead {
 public:
  AesGcm(Ctx enc, Ctx dec) : enc_(std::move(enc)), dec_(std::move(dec)) {}

  bool seal(std::span<const uint8_t, core::kAeadNonceBytes> nonce, std::span<const uint8_t> aad,
            std::span<const core::PayloadSegment> in, uint8_t* out,
            std::span<uint8_t, core::kAeadTagBytes> tag) override {
    EVP_CIPHER_CTX* c = enc_.get();
    int n = 0;
    if (EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, nonce.data()) != 1) return false;
    if (!update(c, nullptr, aad.data(), aad.size(), true)) return false;
    for (const core::PayloadSegment& s : in) {
      if (!update(c, out, s.data, s.len, out == nullptr)) return false;
      if (out) out += s.len;
    }
    if (EVP_EncryptFinal_ex(c, out, &n) != 1) return false;
    return EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag.size()), tag.data()) == 1;
  }

  bool open(std::span<const uint8_t, core::kAeadNonceBytes> nonce, std::span<const uint8_t> aad,
            std::span<const uint8_t> in, uint8_t* out, std::span<const uint8_t, core::kAeadTagBytes> tag) override {
    EVP_CIPHER_CTX* c = dec_.get();
    int n = 0;
    if (EVP_DecryptInit_ex(c, nullptr, nullptr, nullptr, nonce.data()) != 1) return false;
    if (!update(c, nullptr, aad.data(), aad.size(), true, false)) return false;
    if (!update(c, out, in.data(), in.size(), out == nullptr, false)) return false;
    // The expected tag is an input (OpenSSL's prototype takes it non-const).
    uint8_t t[core::kAeadTagBytes];
    std::copy(tag.begin(), tag.end(), t);
    if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, static_cast<int>(sizeof t), t) != 1) return false;
    return EVP_DecryptFinal_ex(c, out, &n) == 1;
  }

 private:
  // One EVP update: additional data (`aad`, out null) or payload.
  static bool update(EVP_CIPHER_CTX* c, uint8_t* out, const uint8_t* in, size_t len, bool aad, bool enc = true) {
    if (len == 0) return true;
    if (len > INT_MAX) return false;
    int n = 0;
    const int l = static_cast<int>(len);
    if (enc) return EVP_EncryptUpdate(c, aad ? nullptr : out, &n, in, l) == 1;
    return EVP_DecryptUpdate(c, aad ? nullptr : out, &n, in, l) == 1;
  }

  Ctx enc_, dec_;
};

}  // namespace

std::unique_ptr<core::Aead> make_aes_gcm(std::span<const uint8_t> key) {
  const EVP_CIPHER* cipher = key.size() == 16 ? EVP_aes_128_gcm() : key.size() == 32 ? EVP_aes_256_gcm() : nullptr;
  if (cipher == nullptr) return nullptr;
  Ctx enc(EVP_CIPHER_CTX_new()), dec(EVP_CIPHER_CTX_new());
  if (!enc || !dec) return nullptr;
  if (EVP_EncryptInit_ex(enc.get(), cipher, nullptr, key.data(), nullptr) != 1 ||
      EVP_DecryptInit_ex(dec.get(), cipher, nullptr, key.data(), nullptr) != 1)
    return nullptr;
  // GCM's default nonce is 12 bytes, the length core::secure_nonce makes.
  return std::make_unique<AesGcm>(std::move(enc), std::move(dec));
}

}  // namespace mrc::crypto
