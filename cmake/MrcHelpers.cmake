# SPDX-License-Identifier: BSD-2-Clause
include_guard(GLOBAL)

# Warnings and sanitizers shared by every OpenMRC target.
add_library(mrc_build_flags INTERFACE)
target_compile_options(mrc_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
  -Wimplicit-fallthrough)
if(MRC_WERROR)
  target_compile_options(mrc_build_flags INTERFACE -Werror)
endif()
if(MRC_ENABLE_ASSERTS)
  # RelWithDebInfo/Release put -DNDEBUG in CMAKE_CXX_FLAGS_<CONFIG>; the target
  # options come later on the command line, so -UNDEBUG wins and assert() stays.
  target_compile_options(mrc_build_flags INTERFACE -UNDEBUG)
endif()
if(MRC_ENABLE_ASAN)
  target_compile_options(mrc_build_flags INTERFACE -fsanitize=address -fno-omit-frame-pointer)
  target_link_options(mrc_build_flags INTERFACE -fsanitize=address)
endif()
if(MRC_ENABLE_UBSAN)
  # Any UB report aborts the process, so ctest sees a failure instead of a log line.
  target_compile_options(mrc_build_flags INTERFACE -fsanitize=undefined -fno-sanitize-recover=all)
  target_link_options(mrc_build_flags INTERFACE -fsanitize=undefined)
endif()

# mrc_add_module(NAME <name> SOURCES ... DEPS ...)
# Declares one layer as a static library mrc_<name> with the alias mrc::<name>.
# Headers live beside their sources under src/, included as "<layer>/<file>.hpp".
function(mrc_add_module)
  cmake_parse_arguments(M "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_library(mrc_${M_NAME} STATIC ${M_SOURCES})
  add_library(mrc::${M_NAME} ALIAS mrc_${M_NAME})
  target_include_directories(mrc_${M_NAME} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
    $<INSTALL_INTERFACE:include>)
  target_link_libraries(mrc_${M_NAME} PUBLIC ${M_DEPS} PRIVATE mrc_build_flags)
  set_target_properties(mrc_${M_NAME} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# mrc_add_test(NAME <name> SOURCES ... DEPS ... [LABELS ...] [SERIAL])
# SERIAL: ctest runs each of its tests alone (RUN_SERIAL), for tests whose
# assertions are about wall-clock timing that other tests' load would skew.
function(mrc_add_test)
  cmake_parse_arguments(T "SERIAL" "NAME" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest_main GTest::gmock mrc_build_flags)
  set(serial FALSE)
  if(T_SERIAL)
    set(serial TRUE)
  endif()
  # RUN_SERIAL before LABELS: the generated set_tests_properties() spreads a
  # list value into separate words, so a property after it would be lost.
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES RUN_SERIAL ${serial} LABELS "${T_LABELS}")
endfunction()
