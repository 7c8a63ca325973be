// SPDX-License-Identifier: BSD-2-Clause
// The version of the library a program runs with (openmrc/version.h).
#include "api/export.hpp"
#include "openmrc/version.h"

extern "C" MRC_EXPORT const char* openmrc_version(void) { return OPENMRC_VERSION_STRING; }
