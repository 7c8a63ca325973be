// SPDX-License-Identifier: BSD-2-Clause
// Scheduling class of the calling thread.
#pragma once

#include "util/result.hpp"

namespace mrc::platform {

/// Puts the calling thread in SCHED_BATCH (yields_on_wake = true) or back in
/// SCHED_OTHER, keeping its nice value. A SCHED_BATCH thread that wakes does
/// not preempt the thread running on its CPU: it waits for that thread's
/// time slice to end (or for an idle CPU, where it runs at once). Needs no
/// privilege. Errors: as mapped from errno (last_error_message() names the
/// call); the thread then keeps its class.
Status set_thread_yields_on_wake(bool yields_on_wake);

}  // namespace mrc::platform
