// SPDX-License-Identifier: BSD-2-Clause
// AES-GCM for secure QPs through OpenSSL's libcrypto (EVP, which uses AES-NI
// and carry-less multiplication where the CPU has them). The core calls it
// only through core::Aead; this module is the one that links libcrypto.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/secure.hpp"

namespace mrc::crypto {

/// An AES-128-GCM (16-byte key) or AES-256-GCM (32-byte key) core::Aead,
/// keyed once; null for another key length or if libcrypto cannot set it
/// up. Matches core::AeadFactory: EndpointConfig::make_aead = make_aes_gcm.
std::unique_ptr<core::Aead> make_aes_gcm(std::span<const uint8_t> key);

}  // namespace mrc::crypto
