/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrc_ctl_api_ver.h -- the MRC controller API's version numbers, with the
 * names and values of the OCP companion repository's header.
 *
 * Numbered as the application API (<mrc_api_ver.h>): MAJOR.MINOR.SUBMINOR
 * packed as major << 24 | minor << 16 | subminor. A controller program may
 * define MRC_CTL_API_VER_USED before including <mrc_ctl.h> to name the
 * version it was written for (the current one otherwise; MRC_CTL_API_VER_LATEST
 * means "the newest this library has"); the checks below refuse, at compile
 * time, a version this library does not serve.
 */
#ifndef MRC_MRC_CTL_API_VER_H
#define MRC_MRC_CTL_API_VER_H

#define MRC_CTL_API_VER_MAJOR_OFFSET 24
#define MRC_CTL_API_VER_MINOR_OFFSET 16
#define MRC_CTL_API_VER_SUBMINOR_OFFSET 0

/** Packs a version (the arguments are unsigned values: major and minor < 256, sub < 65536). */
#define MRC_CTL_API_VER(_major, _minor, _sub_minor)                                            \
  (((_major) << MRC_CTL_API_VER_MAJOR_OFFSET) | ((_minor) << MRC_CTL_API_VER_MINOR_OFFSET) |  \
   ((_sub_minor) << MRC_CTL_API_VER_SUBMINOR_OFFSET))

/** "The newest version the library supports". */
#define MRC_CTL_API_VER_LATEST MRC_CTL_API_VER(0xFFu, 0xFFu, 0xFFFFu)

/** The newest and the oldest controller API versions this library serves. */
#define MRC_CTL_API_CURRENT_VERSION MRC_CTL_API_VER(1u, 0u, 1u)
#define MRC_CTL_API_LAST_SUPPORTED_VERSION MRC_CTL_API_VER(0u, 0u, 0u)

#ifndef MRC_CTL_API_VER_USED
#define MRC_CTL_API_VER_USED MRC_CTL_API_CURRENT_VERSION
#elif MRC_CTL_API_VER_USED == MRC_CTL_API_VER_LATEST
#undef MRC_CTL_API_VER_USED
#define MRC_CTL_API_VER_USED MRC_CTL_API_CURRENT_VERSION
#endif
#if MRC_CTL_API_VER_USED > MRC_CTL_API_CURRENT_VERSION
#error "MRC_CTL_API_VER_USED is newer than this library's MRC_CTL_API_CURRENT_VERSION"
#elif MRC_CTL_API_VER_USED < MRC_CTL_API_LAST_SUPPORTED_VERSION
#error "MRC_CTL_API_VER_USED is older than this library's MRC_CTL_API_LAST_SUPPORTED_VERSION"
#endif

/** The vendor (OpenMRC) controller API versions, numbered the same way. */
#define MRC_CTL_VENDOR_API_CURRENT_VERSION MRC_CTL_API_VER(1u, 0u, 0u)
#define MRC_CTL_VENDOR_API_LAST_SUPPORTED_VERSION MRC_CTL_API_VER(0u, 0u, 0u)

#ifndef MRC_CTL_VENDOR_API_VER_USED
#define MRC_CTL_VENDOR_API_VER_USED MRC_CTL_VENDOR_API_CURRENT_VERSION
#elif MRC_CTL_VENDOR_API_VER_USED == MRC_CTL_API_VER_LATEST
#undef MRC_CTL_VENDOR_API_VER_USED
#define MRC_CTL_VENDOR_API_VER_USED MRC_CTL_VENDOR_API_CURRENT_VERSION
#endif
#if MRC_CTL_VENDOR_API_VER_USED > MRC_CTL_VENDOR_API_CURRENT_VERSION
#error "MRC_CTL_VENDOR_API_VER_USED is newer than this library's MRC_CTL_VENDOR_API_CURRENT_VERSION"
#elif MRC_CTL_VENDOR_API_VER_USED < MRC_CTL_VENDOR_API_LAST_SUPPORTED_VERSION
#error "MRC_CTL_VENDOR_API_VER_USED is older than this library's MRC_CTL_VENDOR_API_LAST_SUPPORTED_VERSION"
#endif

#endif /* MRC_MRC_CTL_API_VER_H */
