// SPDX-License-Identifier: BSD-2-Clause
#include "util/result.hpp"

namespace mrc {

std::string_view to_string(Errc e) {
  switch (e) {
    case Errc::ok: return "ok";
    case Errc::done: return "done";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::not_found: return "not_found";
    case Errc::busy: return "busy";
    case Errc::would_block: return "would_block";
    case Errc::too_big: return "too_big";
    case Errc::not_supported: return "not_supported";
    case Errc::no_memory: return "no_memory";
    case Errc::permission: return "permission";
    case Errc::bad_state: return "bad_state";
    case Errc::truncated: return "truncated";
    case Errc::malformed: return "malformed";
    case Errc::unknown_opcode: return "unknown_opcode";
    case Errc::length_mismatch: return "length_mismatch";
    case Errc::io: return "io";
    case Errc::timed_out: return "timed_out";
  }
  return "unknown";
}

}  // namespace mrc
