// SPDX-License-Identifier: BSD-2-Clause
#include "platform/sched.hpp"

#include <pthread.h>
#include <sched.h>

#include "platform/os_error.hpp"

namespace mrc::platform {

Status set_thread_yields_on_wake(bool yields_on_wake) {
  // Both classes take priority 0; the nice value is the thread's own and
  // survives the change.
  const sched_param param{};
  const int err = pthread_setschedparam(pthread_self(), yields_on_wake ? SCHED_BATCH : SCHED_OTHER, &param);
  if (err != 0) return record_os_error(err, "pthread_setschedparam");
  return Errc::ok;
}

}  // namespace mrc::platform
