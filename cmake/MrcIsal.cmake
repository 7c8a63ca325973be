# SPDX-License-Identifier: BSD-2-Clause
include_guard(GLOBAL)

# Finds Intel ISA-L (Debian: libisal-dev) for wire's CRC-32 backend and sets
# MRC_ISAL_FOUND; when found, mrc_isal is an imported target for it.
include(MrcFindLib)
mrc_find_lib(MRC_ISAL mrc_isal libisal isa-l/crc.h isal)
