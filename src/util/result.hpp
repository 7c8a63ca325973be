// SPDX-License-Identifier: BSD-2-Clause
// Result<T>: a value or an error code, with a distinguished "Done".
//
// The core never throws on its hot paths. Calls that can fail return
// Result<T>; poll-style calls return Errc::done when there is nothing more to
// hand out (the loop-ending value, as quiche's QUICHE_ERR_DONE). Errors map to
// the errno values the OCP API specifies through to_errno().
#pragma once

#include <cassert>
#include <cerrno>
#include <cstdint>
#include <string_view>
#include <utility>
#include <variant>

namespace mrc {

/// Closed set of error codes. Ranges: 1..99 usage errors (the caller did
/// something the API forbids), 100..199 protocol/parse errors (bad input from
/// the network), 200.. resource/fatal conditions.
enum class Errc : uint16_t {
  ok = 0,
  done = 1,                 ///< nothing more to return (not an error)
  invalid_argument = 10,    ///< EINVAL: bad attribute, mask or state transition
  not_found = 11,           ///< ENOENT: no such QP / MR / profile / EV
  busy = 12,                ///< EBUSY: object in use
  would_block = 13,         ///< EAGAIN: queue full, try again after completions
  too_big = 14,             ///< E2BIG: array too small / value too large
  not_supported = 15,       ///< ENOTSUP / EOPNOTSUPP
  no_memory = 16,           ///< ENOMEM: a fixed-size table is full
  permission = 17,          ///< EPERM
  bad_state = 18,           ///< EINVAL in OCP terms: operation not legal in this QP state
  truncated = 100,          ///< input shorter than the header layout requires
  malformed = 101,          ///< a field has an impossible value
  unknown_opcode = 102,     ///< opcode not in the MRC table
  length_mismatch = 103,    ///< lengths in the headers disagree with the bytes present
  io = 200,                 ///< EIO
  timed_out = 201,          ///< ETIMEDOUT
};

/// errno value the OCP API returns for an Errc (0 for ok/done).
constexpr int to_errno(Errc e) {
  switch (e) {
    case Errc::ok: case Errc::done: return 0;
    case Errc::invalid_argument: case Errc::bad_state: return EINVAL;
    case Errc::not_found: return ENOENT;
    case Errc::busy: return EBUSY;
    case Errc::would_block: return EAGAIN;
    case Errc::too_big: return E2BIG;
    case Errc::not_supported: return EOPNOTSUPP;
    case Errc::no_memory: return ENOMEM;
    case Errc::permission: return EPERM;
    case Errc::truncated: case Errc::malformed: case Errc::unknown_opcode:
    case Errc::length_mismatch: return EBADMSG;
    case Errc::io: return EIO;
    case Errc::timed_out: return ETIMEDOUT;
  }
  return EIO;
}

/// Short stable name of an error code, for logs and test messages.
std::string_view to_string(Errc e);

/// Either a T or an Errc (never Errc::ok).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T v) : v_(std::move(v)) {}  // NOLINT: implicit by design
  Result(Errc e) : v_(e) { assert(e != Errc::ok); }  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  Errc error() const { return ok() ? Errc::ok : std::get<Errc>(v_); }
  T& value() & { assert(ok()); return std::get<T>(v_); }
  const T& value() const& { assert(ok()); return std::get<T>(v_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Errc> v_;
};

/// Result of an operation with no value: Status is Errc::ok on success.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc e) : e_(e) {}  // NOLINT: implicit by design
  bool ok() const { return e_ == Errc::ok; }
  explicit operator bool() const { return ok(); }
  Errc error() const { return e_; }
  friend bool operator==(Status a, Errc b) { return a.e_ == b; }

 private:
  Errc e_ = Errc::ok;
};

}  // namespace mrc
