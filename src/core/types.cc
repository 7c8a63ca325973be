// SPDX-License-Identifier: BSD-2-Clause
#include "core/types.hpp"
#include <algorithm>

namespace mrc::core {

const char* to_string(Transport t) {
  switch (t) {
    case Transport::mrc: return "mrc";
    case Transport::roce_rc: return "roce_rc";
  }
  return "?";
}

const char* to_string(QpState s) {
  switch (s) {
    case QpState::reset: return "RESET";
    case QpState::init: return "INIT";
    case QpState::rtr: return "RTR";
    case QpState::rts: return "RTS";
    case QpState::error: return "ERROR";
  }
  return "?";
}

const char* to_string(WcStatus s) {
  switch (s) {
    case WcStatus::success: return "success";
    case WcStatus::loc_len_err: return "local length error";
    case WcStatus::loc_qp_op_err: return "local QP operation error";
    case WcStatus::loc_prot_err: return "local protection error";
    case WcStatus::wr_flush_err: return "WR flushed";
    case WcStatus::rem_inv_req_err: return "remote invalid request";
    case WcStatus::rem_access_err: return "remote access error";
    case WcStatus::rem_op_err: return "remote operational error";
    case WcStatus::retry_exc_err: return "transport retry counter exceeded";
    case WcStatus::general_err: return "general error";
  }
  return "?";
}

const char* to_string(EvState s) {
  switch (s) {
    case EvState::good: return "GOOD";
    case EvState::skip: return "SKIP";
    case EvState::assumed_bad: return "ASSUMED_BAD";
    case EvState::denied: return "DENIED";
  }
  return "?";
}

}  // namespace mrc::core

namespace mrc::core {

size_t payload_segments(const Transmit& tx, std::span<PayloadSegment> out) {
  if (tx.payload_len == 0) return 0;
  if (tx.gather == nullptr) {
    out[0] = PayloadSegment{tx.payload, tx.payload_len};
    return 1;
  }
  // Skip the elements wholly before the packet, then take pieces until the
  // payload is covered. Zero-length elements contribute nothing.
  uint64_t skip = tx.gather_offset;
  uint32_t left = tx.payload_len;
  size_t n = 0;
  for (uint16_t i = 0; i < tx.gather_count && left > 0; ++i) {
    const Sge& e = tx.gather[i];
    if (skip >= e.length) {
      skip -= e.length;
      continue;
    }
    const uint32_t take = static_cast<uint32_t>(std::min<uint64_t>(e.length - skip, left));
    out[n++] = PayloadSegment{reinterpret_cast<const uint8_t*>(e.addr + skip), take};
    left -= take;
    skip = 0;
  }
  return n;
}

}  // namespace mrc::core
