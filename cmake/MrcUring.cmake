include_guard(GLOBAL)

# Finds liburing (Debian: liburing-dev) for the software device's io_uring
# send path and sets MRC_URING_FOUND; when found, mrc_uring is an imported
# target for it. pkg-config first (liburing.pc), then a plain header + library
# search.
set(MRC_URING_FOUND OFF)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(MRC_URING_PC QUIET IMPORTED_TARGET GLOBAL liburing)
endif()
if(MRC_URING_PC_FOUND)
  add_library(mrc_uring INTERFACE IMPORTED GLOBAL)
  target_link_libraries(mrc_uring INTERFACE PkgConfig::MRC_URING_PC)
  set(MRC_URING_FOUND ON)
else()
  find_path(MRC_URING_INCLUDE_DIR liburing.h)
  find_library(MRC_URING_LIBRARY uring)
  if(MRC_URING_INCLUDE_DIR AND MRC_URING_LIBRARY)
    add_library(mrc_uring UNKNOWN IMPORTED GLOBAL)
    set_target_properties(mrc_uring PROPERTIES IMPORTED_LOCATION "${MRC_URING_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${MRC_URING_INCLUDE_DIR}")
    set(MRC_URING_FOUND ON)
  endif()
endif()
