# SPDX-License-Identifier: BSD-2-Clause
include_guard(GLOBAL)

# mrc_find_lib(PREFIX TARGET PC_MODULE HEADER LIBRARY)
# Finds an optional system library: pkg-config's PC_MODULE first, then a
# plain search for HEADER and LIBRARY (installs without the .pc file). Sets
# ${PREFIX}_FOUND (ON/OFF) in the caller's scope; when found, TARGET is a
# global imported target to link against.
function(mrc_find_lib prefix target pc_module header library)
  set(found OFF)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(${prefix}_PC QUIET IMPORTED_TARGET GLOBAL ${pc_module})
  endif()
  if(${prefix}_PC_FOUND)
    add_library(${target} INTERFACE IMPORTED GLOBAL)
    target_link_libraries(${target} INTERFACE PkgConfig::${prefix}_PC)
    set(found ON)
  else()
    find_path(${prefix}_INCLUDE_DIR ${header})
    find_library(${prefix}_LIBRARY ${library})
    if(${prefix}_INCLUDE_DIR AND ${prefix}_LIBRARY)
      add_library(${target} UNKNOWN IMPORTED GLOBAL)
      set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${${prefix}_LIBRARY}"
                            INTERFACE_INCLUDE_DIRECTORIES "${${prefix}_INCLUDE_DIR}")
      set(found ON)
    endif()
  endif()
  set(${prefix}_FOUND ${found} PARENT_SCOPE)
endfunction()

# mrc_optional_lib(OPTION USE FOUND WHAT PACKAGE ON_MESSAGE OFF_MESSAGE)
# A build switch OPTION with three values: AUTO (the default) uses the
# library when it was FOUND, decided afresh at every configure; ON requires it
# and fails the configure, naming the Debian PACKAGE, when it is missing; OFF
# never uses it. The decision lands in USE (ON/OFF) in the caller's scope.
# AUTO is re-decided because a plain option() defaulting to "found" would
# cache OFF in a build directory configured before the package was
# installed, and keep the slow fallback there for good, silently.
function(mrc_optional_lib option use found what package on_message off_message)
  # Build directories from before AUTO cached the switch as a BOOL that said
  # whether the library was there at that first configure: start them over.
  get_property(type CACHE ${option} PROPERTY TYPE)
  if(type STREQUAL "BOOL")
    message(STATUS "OpenMRC: ${option} was cached as ${${option}} by an older configure; now AUTO "
                   "(pass -D${option}=OFF to keep it off)")
    unset(${option} CACHE)
  endif()
  set(${option} AUTO CACHE STRING "Use ${what}: AUTO (if found), ON (required) or OFF")
  set_property(CACHE ${option} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${option}}" value)
  if(value STREQUAL "AUTO")
    set(use_it ${${found}})
  elseif(value MATCHES "^(ON|YES|TRUE|Y|1)$")
    if(NOT ${found})
      message(FATAL_ERROR "${option} is ON but ${what} was not found: install ${package} "
                          "(scripts/deps.sh) or configure with -D${option}=AUTO or OFF")
    endif()
    set(use_it ON)
  elseif(value MATCHES "^(OFF|NO|FALSE|N|0)$")
    set(use_it OFF)
  else()
    message(FATAL_ERROR "${option} is '${${option}}': use AUTO, ON or OFF")
  endif()
  if(use_it)
    message(STATUS "OpenMRC: ${on_message}")
  elseif(value STREQUAL "AUTO")
    message(STATUS "OpenMRC: ${off_message} (${package} not found; install it and re-run cmake)")
  else()
    message(STATUS "OpenMRC: ${off_message} (${option}=${${option}})")
  endif()
  set(${use} ${use_it} PARENT_SCOPE)
endfunction()
