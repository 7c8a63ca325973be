/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrc_api_ver.h -- the MRC application API's version numbers, with the
 * names and values of the OCP companion repository's header.
 *
 * A version is MAJOR.MINOR.SUBMINOR packed as major << 24 | minor << 16 |
 * subminor: MAJOR changes break source or binary compatibility, MINOR adds
 * compatible calls, SUBMINOR fixes. A program names the version it was
 * written for in mrc_context_attr.mrc_api_version_used (MRC_API_VER_USED,
 * the current version unless the program defines it before including
 * <mrc.h>); MRC_API_VER_LATEST there means "the newest this library has".
 */
#ifndef MRC_MRC_API_VER_H
#define MRC_MRC_API_VER_H

#define MRC_API_VER_MAJOR_OFFSET 24
#define MRC_API_VER_MINOR_OFFSET 16
#define MRC_API_VER_SUBMINOR_OFFSET 0

/** Packs a version (the arguments are unsigned values: major and minor < 256, sub < 65536). */
#define MRC_API_VER(_major, _minor, _sub_minor)                                                \
  (((_major) << MRC_API_VER_MAJOR_OFFSET) | ((_minor) << MRC_API_VER_MINOR_OFFSET) |          \
   ((_sub_minor) << MRC_API_VER_SUBMINOR_OFFSET))

/** "The newest version the library supports", for mrc_context_attr. */
#define MRC_API_VER_LATEST MRC_API_VER(0xFFu, 0xFFu, 0xFFFFu)

/** The newest and the oldest application API versions this library serves. */
#define MRC_API_CURRENT_VERSION MRC_API_VER(1u, 0u, 1u)
#define MRC_API_LAST_SUPPORTED_VERSION MRC_API_VER(0u, 0u, 0u)

#ifndef MRC_API_VER_USED
#define MRC_API_VER_USED MRC_API_CURRENT_VERSION
#elif MRC_API_VER_USED == MRC_API_VER_LATEST
#undef MRC_API_VER_USED
#define MRC_API_VER_USED MRC_API_CURRENT_VERSION
#endif
#if MRC_API_VER_USED > MRC_API_CURRENT_VERSION
#error "MRC_API_VER_USED is newer than this library's MRC_API_CURRENT_VERSION"
#elif MRC_API_VER_USED < MRC_API_LAST_SUPPORTED_VERSION
#error "MRC_API_VER_USED is older than this library's MRC_API_LAST_SUPPORTED_VERSION"
#endif

/** The vendor (OpenMRC) API versions, numbered the same way. */
#define MRC_VENDOR_API_CURRENT_VERSION MRC_API_VER(1u, 0u, 0u)
#define MRC_VENDOR_API_LAST_SUPPORTED_VERSION MRC_API_VER(0u, 0u, 0u)

#ifndef MRC_VENDOR_API_VER_USED
#define MRC_VENDOR_API_VER_USED MRC_VENDOR_API_CURRENT_VERSION
#elif MRC_VENDOR_API_VER_USED == MRC_API_VER_LATEST
#undef MRC_VENDOR_API_VER_USED
#define MRC_VENDOR_API_VER_USED MRC_VENDOR_API_CURRENT_VERSION
#endif
#if MRC_VENDOR_API_VER_USED > MRC_VENDOR_API_CURRENT_VERSION
#error "MRC_VENDOR_API_VER_USED is newer than this library's MRC_VENDOR_API_CURRENT_VERSION"
#elif MRC_VENDOR_API_VER_USED < MRC_VENDOR_API_LAST_SUPPORTED_VERSION
#error "MRC_VENDOR_API_VER_USED is older than this library's MRC_VENDOR_API_LAST_SUPPORTED_VERSION"
#endif

#endif /* MRC_MRC_API_VER_H */
