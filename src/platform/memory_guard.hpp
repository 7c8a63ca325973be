// SPDX-License-Identifier: BSD-2-Clause
// Application memory the device writes into on a peer's behalf: checks at
// registration, and a copy that survives a region the application unmapped.
//
// A registered region stays the application's memory: nothing stops it
// from unmapping the range while it is registered (verbs forbids it, but a
// buggy or hostile application may). A peer's next WRITE would then fault
// inside the device's progress engine and kill the whole process. The
// device therefore places payload with guarded_copy(), which turns a fault
// on the destination into a false return (the core answers the WRITE with
// a remote access error, as for a bad rkey), and checks at registration
// that the range is mapped at all (range_mapped()).
#pragma once

#include <cstddef>

namespace mrc::platform {

/// True if every page of [addr, addr+length) is mapped in this process (any
/// protection). One msync(MS_ASYNC) call: the kernel walks its mappings and
/// answers ENOMEM for a hole; MS_ASYNC writes nothing back (a no-op since
/// Linux 2.6.19), so the check costs one system call whatever the length,
/// needs no buffer (mincore needs a byte per page: 512 KiB for a 2 GiB
/// region) and does not fault pages in (process_vm_readv would touch them).
/// False for a null `addr`, a zero length or a range that wraps.
bool range_mapped(const void* addr, size_t length);

/// Installs the process-wide SIGSEGV/SIGBUS handler guarded_copy() needs
/// (once; later calls only check). True if it is in place: false if the
/// kernel refused, or if another handler replaced ours later (a runtime
/// that keeps its own, e.g. a sanitizer not allowing user handlers); then
/// guarded_copy() still copies, unguarded. The handler chains every fault
/// that is not a guarded copy's to the handler it replaced (or the default
/// action), so the application's own handling is unchanged.
bool install_fault_guard();

/// Copies `n` bytes from `src` to `dst` (non-overlapping, as memcpy). A
/// fault on a destination byte (unmapped, or mapped without write access)
/// stops the copy and returns false: some leading bytes of `dst` may have
/// been written, the rest not. A fault anywhere else (on `src`) is not
/// caught. Costs a sigsetjmp (no system call: the signal mask is not saved,
/// the handler runs with SA_NODEFER) on top of the memcpy. Call
/// install_fault_guard() first, or faults are not caught.
bool guarded_copy(void* dst, const void* src, size_t n);

}  // namespace mrc::platform
