# SPDX-License-Identifier: BSD-2-Clause
# Installing OpenMRC like a system library: libopenmrc.so (soname
# libopenmrc.so.<major>) with the lib_mrc.so name OCP's examples link,
# libopenmrc.a, the public headers, openmrc.pc, the CMake package
# (find_package(OpenMRC): OpenMRC::openmrc, OpenMRC::openmrc_static), the
# tools, and a Debian package built with CPack (cpack -G DEB in the build
# directory).
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Installed tools find libopenmrc beside them (prefix/bin -> prefix/lib...).
set(MRC_INSTALL_TOOLS)
foreach(t mrc_write_bw mrc_write_lat mrcctl mrc-sim)
  if(TARGET ${t})
    list(APPEND MRC_INSTALL_TOOLS ${t})
    set_target_properties(${t} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  endif()
endforeach()
if(MRC_INSTALL_TOOLS)
  install(TARGETS ${MRC_INSTALL_TOOLS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
endif()

install(TARGETS openmrc
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT devel)
install(FILES $<TARGET_FILE_DIR:openmrc>/lib_mrc.so DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
install(TARGETS openmrc_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/generated/openmrc/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/openmrc COMPONENT devel)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

# What a program linking libopenmrc.a needs besides it: the C++ runtime and
# the libraries the layers use.
set(MRC_STATIC_LIBS fmt crypto stdc++ m pthread ${CMAKE_DL_LIBS})  # crypto: OpenSSL's libcrypto (secure QPs)
if(MRC_USE_URING)
  list(APPEND MRC_STATIC_LIBS uring)
endif()
if(MRC_USE_ISAL)
  list(APPEND MRC_STATIC_LIBS isal)
endif()
set(MRC_PC_LIBS_PRIVATE "")
foreach(l IN LISTS MRC_STATIC_LIBS)
  string(APPEND MRC_PC_LIBS_PRIVATE " -l${l}")
endforeach()
string(STRIP "${MRC_PC_LIBS_PRIVATE}" MRC_PC_LIBS_PRIVATE)

# openmrc.pc locates the prefix from its own place, so a tree installed
# with --prefix anywhere (a staging directory, a package) stays usable.
file(RELATIVE_PATH MRC_PC_TO_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" MRC_PC_TO_PREFIX "${MRC_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/install/openmrc.pc.in ${PROJECT_BINARY_DIR}/generated/openmrc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/generated/openmrc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT devel)

set(MRC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/OpenMRC)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/install/OpenMRCConfig.cmake.in
  ${PROJECT_BINARY_DIR}/generated/OpenMRCConfig.cmake INSTALL_DESTINATION ${MRC_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/generated/OpenMRCConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/generated/OpenMRCConfig.cmake
  ${PROJECT_BINARY_DIR}/generated/OpenMRCConfigVersion.cmake DESTINATION ${MRC_CMAKE_DIR} COMPONENT devel)

# cpack -G DEB: one package, openmrc, with the library, headers and tools.
set(CPACK_PACKAGE_NAME openmrc)
set(CPACK_PACKAGE_VENDOR "The OpenMRC Authors")
set(CPACK_PACKAGE_CONTACT "The OpenMRC Authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libibverbs-dev, libssl-dev")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
