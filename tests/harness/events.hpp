// SPDX-License-Identifier: BSD-2-Clause
// Completions and events in one stream, for tests that want to see what an
// endpoint reported in order: its completion queue first, then the
// asynchronous and controller events (Endpoint::poll_event).
#pragma once

#include <optional>
#include <variant>

#include "core/endpoint.hpp"

namespace mrc::harness {

using Event = std::variant<core::WorkCompletion, core::QpErrorEvent, core::CqErrorEvent, core::EvEvent,
                           core::PortEvent, core::ProbeResult>;

/// The next completion on `cq`, else the next endpoint event, else nullopt.
inline std::optional<Event> next_event(core::Endpoint& ep, uint32_t cq) {
  core::WorkCompletion wc;
  if (ep.poll_cq(cq, {&wc, 1}) == 1) return Event{wc};
  if (auto e = ep.poll_event()) return std::visit([](auto&& v) { return Event{v}; }, *e);
  return std::nullopt;
}

}  // namespace mrc::harness
