# SPDX-License-Identifier: BSD-2-Clause
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

# wire::crc32_update (the ICRC's CRC-32) runs on Intel ISA-L's PCLMULQDQ/AVX
# code when ISA-L is installed (Debian: libisal-dev), else on wire's own
# slice-by-8 tables; both are always built and tested against each other.
include(MrcIsal)
mrc_optional_lib(MRC_WITH_ISAL MRC_USE_ISAL MRC_ISAL_FOUND "Intel ISA-L's crc32_gzip_refl for the CRC-32" libisal-dev
                 "CRC-32 on ISA-L" "CRC-32 on the portable slice-by-8 tables")

# The software device sends a batch that spans several sockets with one
# io_uring submission when liburing is there (Debian: liburing-dev); without
# it, or where the kernel refuses io_uring at run time, each socket's run of
# datagrams leaves with its own sendmmsg.
include(MrcUring)
mrc_optional_lib(MRC_WITH_URING MRC_USE_URING MRC_URING_FOUND "liburing for the software device's io_uring send path"
                 liburing-dev "software device sends through io_uring where the kernel allows it"
                 "software device without io_uring (sendmmsg per socket)")

# mrc-sim runs a partitioned scenario over MPI ranks (one process per
# partition, started by mpirun) when an MPI C++ library is there (Debian:
# libopenmpi-dev, openmpi-bin); without it mrc-sim runs partitions as
# threads only and refuses to run under several ranks.
find_package(MPI COMPONENTS CXX QUIET)
set(MRC_MPI_FOUND ${MPI_CXX_FOUND})
mrc_optional_lib(MRC_WITH_MPI MRC_USE_MPI MRC_MPI_FOUND "MPI (Open MPI) for mrc-sim's ranks across processes"
                 "libopenmpi-dev openmpi-bin" "mrc-sim runs partitions on threads and on MPI ranks"
                 "mrc-sim runs partitions on threads only")
