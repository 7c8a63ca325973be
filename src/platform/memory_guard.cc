// SPDX-License-Identifier: BSD-2-Clause
#include "platform/memory_guard.hpp"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace mrc::platform {

namespace {

// The copy in progress on this thread, if any: the handler jumps back to
// `jb` only for a fault inside [lo, hi).
struct Guard {
  sigjmp_buf jb;
  uintptr_t lo;
  uintptr_t hi;
};
thread_local Guard* t_guard = nullptr;

struct sigaction g_old_segv{};
struct sigaction g_old_bus{};

void on_fault(int sig, siginfo_t* si, void* uc) {
  Guard* g = t_guard;
  const auto a = reinterpret_cast<uintptr_t>(si->si_addr);
  if (g && si->si_code > 0 && a >= g->lo && a < g->hi) {
    t_guard = nullptr;
    siglongjmp(g->jb, 1);
  }
  // Not a guarded copy's: what the process would have done without us.
  struct sigaction& old = sig == SIGBUS ? g_old_bus : g_old_segv;
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction) old.sa_sigaction(sig, si, uc);
    return;
  }
  if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
    old.sa_handler(sig);
    return;
  }
  // Default action: restore it and let the fault happen again on return
  // (a signal sent by kill() has no instruction to repeat: raise it).
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  if (si->si_code <= 0) raise(sig);
}

bool ours(int sig) {
  struct sigaction cur{};
  if (sigaction(sig, nullptr, &cur) != 0) return false;
  return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == &on_fault;
}

}  // namespace

bool range_mapped(const void* addr, size_t length) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (a == 0 || length == 0 || a + length < a) return false;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = a & ~(page - 1);
  const uintptr_t hi = a + length;  // msync rounds the length up to pages itself
  return msync(reinterpret_cast<void*>(lo), hi - lo, MS_ASYNC) == 0;
}

bool install_fault_guard() {
  static std::once_flag once;
  static bool installed = false;
  std::call_once(once, [] {
    struct sigaction sa{};
    sa.sa_sigaction = &on_fault;
    // SA_NODEFER: the signal stays unblocked when the handler jumps out,
    // so guarded_copy need not save and restore the mask (a system call).
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    installed = sigaction(SIGSEGV, &sa, &g_old_segv) == 0 && sigaction(SIGBUS, &sa, &g_old_bus) == 0;
  });
  return installed && ours(SIGSEGV) && ours(SIGBUS);
}

bool guarded_copy(void* dst, const void* src, size_t n) {
  Guard g;
  g.lo = reinterpret_cast<uintptr_t>(dst);
  g.hi = g.lo + n;
  if (sigsetjmp(g.jb, 0) != 0) return false;  // the handler cleared t_guard
  t_guard = &g;
  // Keep the compiler from moving the guard's stores across the copy.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(dst, src, n);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_guard = nullptr;
  return true;
}

}  // namespace mrc::platform
