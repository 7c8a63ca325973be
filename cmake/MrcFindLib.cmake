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

# mrc_optional_lib(OPTION FOUND WHAT PACKAGE ON_MESSAGE OFF_MESSAGE)
# A build switch OPTION that defaults to whether the library was FOUND, and
# fails the configure, naming the Debian PACKAGE, when it is ON without it.
function(mrc_optional_lib option found what package on_message off_message)
  option(${option} "Use ${what} (default: ON if found)" ${${found}})
  if(${option} AND NOT ${found})
    message(FATAL_ERROR "${option} is ON but ${what} was not found: install ${package} "
                        "(scripts/deps.sh) or configure with -D${option}=OFF")
  endif()
  if(${option})
    message(STATUS "OpenMRC: ${on_message}")
  else()
    message(STATUS "OpenMRC: ${off_message}")
  endif()
endfunction()
