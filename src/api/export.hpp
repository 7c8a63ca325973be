// SPDX-License-Identifier: BSD-2-Clause
// MRC_EXPORT marks a definition of the public C API (include/*.h) as
// exported from libopenmrc.so. Every OpenMRC target is compiled with
// -fvisibility=hidden (mrc_add_module), so a symbol without this mark stays
// inside the library: applications link against the C API and nothing
// else, and the library's C++ internals may change without breaking them.
#pragma once

#define MRC_EXPORT __attribute__((visibility("default")))
