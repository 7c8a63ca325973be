// SPDX-License-Identifier: BSD-2-Clause
// Ranks: the collective operations a ParallelEngine spread over processes
// (MPI ranks) needs, behind an interface so that the simulator library does
// not depend on MPI. mrc-sim implements it over MPI (tools/mrc-sim/mpi_ranks.cc)
// when built with MRC_WITH_MPI.
//
// Every process numbers the same model (the same entity ids, the same
// message targets), builds the elements of the partitions assigned to it
// (sim/fabric/fabric.hpp, sim/workload/cluster.hpp) and runs them. Every call here
// is collective: every rank makes the same calls in the same order (the
// engine's barrier decides only from reduced values and from the global
// events, which every rank runs alike).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mrc::sim {

class Ranks {
 public:
  virtual ~Ranks() = default;
  /// This process's rank, and the number of ranks (>= 1).
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  /// One all-to-all exchange: out[r] goes to rank r (out[rank()] is not
  /// sent); returns in[r], what rank r sent to this one. `out` has size()
  /// entries. Empty buffers cost a count and nothing else.
  virtual std::vector<std::vector<uint8_t>> exchange(const std::vector<std::vector<uint8_t>>& out) = 0;
  /// Element-wise over every rank, in place: sum, maximum, minimum.
  virtual void sum(std::span<uint64_t> v) = 0;
  virtual void max(std::span<uint64_t> v) = 0;
  virtual void min(std::span<int64_t> v) = 0;
  /// Every rank's `mine` on rank 0 (in rank order; its own included);
  /// other ranks get nothing back.
  virtual std::vector<std::vector<uint8_t>> gather(const std::vector<uint8_t>& mine) = 0;

  /// Bytes this rank sent to other ranks in exchange(), and the non-empty
  /// buffers it sent (a point-to-point message each): what the engine
  /// costs on the network.
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t buffers_sent() const { return buffers_sent_; }

 protected:
  uint64_t bytes_sent_ = 0;
  uint64_t buffers_sent_ = 0;
};

}  // namespace mrc::sim
