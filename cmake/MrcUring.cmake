# SPDX-License-Identifier: BSD-2-Clause
include_guard(GLOBAL)

# Finds liburing (Debian: liburing-dev) for the software device's io_uring
# send path and sets MRC_URING_FOUND; when found, mrc_uring is an imported
# target for it.
include(MrcFindLib)
mrc_find_lib(MRC_URING mrc_uring liburing liburing.h uring)
