# Every build switch of OpenMRC lives here, prefixed MRC_.
include_guard(GLOBAL)

set(_mrc_top OFF)
if(CMAKE_SOURCE_DIR STREQUAL PROJECT_SOURCE_DIR)
  set(_mrc_top ON)
endif()

option(MRC_BUILD_TESTS "Build the unit, harness and scenario tests" ${_mrc_top})
option(MRC_BUILD_TOOLS "Build the command-line tools and examples" ON)
option(MRC_BUILD_BENCH "Build the Google Benchmark micro-benchmarks" ${_mrc_top})
option(MRC_BUILD_FUZZ "Build the libFuzzer targets (needs clang)" OFF)
option(MRC_ENABLE_ASAN "Build with AddressSanitizer" OFF)
option(MRC_ENABLE_UBSAN "Build with UndefinedBehaviorSanitizer" OFF)
option(MRC_ENABLE_ASSERTS "Keep assert() in optimized builds: drops NDEBUG for OpenMRC's own targets" OFF)
option(MRC_WERROR "Treat compiler warnings as errors" OFF)
