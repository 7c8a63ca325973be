include_guard(GLOBAL)

# Finds Intel ISA-L (Debian: libisal-dev) for wire's CRC-32 backend and sets
# MRC_ISAL_FOUND; when found, mrc_isal is an imported target for it. pkg-config
# first (libisal.pc), then a plain header + library search for installs
# without the .pc file.
set(MRC_ISAL_FOUND OFF)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(MRC_ISAL_PC QUIET IMPORTED_TARGET GLOBAL libisal)
endif()
if(MRC_ISAL_PC_FOUND)
  add_library(mrc_isal INTERFACE IMPORTED GLOBAL)
  target_link_libraries(mrc_isal INTERFACE PkgConfig::MRC_ISAL_PC)
  set(MRC_ISAL_FOUND ON)
else()
  find_path(MRC_ISAL_INCLUDE_DIR isa-l/crc.h)
  find_library(MRC_ISAL_LIBRARY isal)
  if(MRC_ISAL_INCLUDE_DIR AND MRC_ISAL_LIBRARY)
    add_library(mrc_isal UNKNOWN IMPORTED GLOBAL)
    set_target_properties(mrc_isal PROPERTIES IMPORTED_LOCATION "${MRC_ISAL_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${MRC_ISAL_INCLUDE_DIR}")
    set(MRC_ISAL_FOUND ON)
  endif()
endif()
