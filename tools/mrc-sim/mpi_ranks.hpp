// SPDX-License-Identifier: BSD-2-Clause
// mrc-sim under mpirun: the simulator's Ranks (sim/engine/ranks.hpp) over
// MPI_COMM_WORLD, when mrc-sim is built with MRC_WITH_MPI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sim/engine/ranks.hpp"

namespace mrc::sim::tool {

/// The ranks mrc-sim was started under, from the environment the MPI
/// launcher sets (Open MPI's OMPI_COMM_WORLD_SIZE, or PMI_SIZE / PMIX's),
/// before MPI is initialised: 1 when started without mpirun.
uint32_t launcher_ranks();

/// MPI started (MPI_Init) and ended (MPI_Finalize, at destruction): the
/// world's ranks. Null (after a message in *why) if this build has no MPI
/// (MRC_WITH_MPI off) or MPI_Init failed.
std::unique_ptr<Ranks> start_mpi(int* argc, char*** argv, std::string* why);

}  // namespace mrc::sim::tool
