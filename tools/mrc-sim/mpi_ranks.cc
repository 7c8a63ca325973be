// SPDX-License-Identifier: BSD-2-Clause
#include "mrc-sim/mpi_ranks.hpp"

#include <cstdlib>

#ifdef MRC_HAVE_MPI
#include <mpi.h>

#include <cstdio>
#include <limits>
#include <vector>
#endif

namespace mrc::sim::tool {

uint32_t launcher_ranks() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char* s = std::getenv(v)) {
      const long n = std::strtol(s, nullptr, 10);
      if (n > 0) return static_cast<uint32_t>(n);
    }
  return 1;
}

#ifdef MRC_HAVE_MPI

namespace {

/// MPI's counts and displacements are ints: a window's exchange with a
/// rank above 2 GiB is refused with a message rather than truncated.
int count_of(size_t n) {
  if (n > static_cast<size_t>(std::numeric_limits<int>::max())) {
    std::fprintf(stderr,
                 "mrc-sim: a window's messages to one MPI rank exceed 2 GiB (%zu bytes): run with more "
                 "--partitions per rank, or a smaller fabric\n",
                 n);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return static_cast<int>(n);
}

class MpiRanks final : public Ranks {
 public:
  MpiRanks() {
    int r = 0, n = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    rank_ = static_cast<uint32_t>(r);
    size_ = static_cast<uint32_t>(n);
  }
  ~MpiRanks() override { MPI_Finalize(); }
  MpiRanks(const MpiRanks&) = delete;
  MpiRanks& operator=(const MpiRanks&) = delete;

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }

  std::vector<std::vector<uint8_t>> exchange(const std::vector<std::vector<uint8_t>>& out) override {
    const int n = static_cast<int>(size_);
    // The counts first (one all-to-all of an int per pair), then the
    // bytes in one MPI_Alltoallv: O(ranks) per rank, whatever was sent.
    std::vector<int> send_counts(n), recv_counts(n), send_displs(n), recv_displs(n);
    std::vector<uint8_t> send;
    for (int r = 0; r < n; ++r) {
      send_displs[r] = count_of(send.size());
      if (static_cast<uint32_t>(r) != rank_) send.insert(send.end(), out[r].begin(), out[r].end());
      send_counts[r] = count_of(send.size()) - send_displs[r];
      if (send_counts[r] > 0) {
        bytes_sent_ += static_cast<uint64_t>(send_counts[r]);
        ++buffers_sent_;
      }
    }
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    size_t total = 0;
    for (int r = 0; r < n; ++r) {
      recv_displs[r] = count_of(total);
      total += static_cast<size_t>(recv_counts[r]);
    }
    std::vector<uint8_t> recv(total);
    MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_BYTE, recv.data(), recv_counts.data(),
                  recv_displs.data(), MPI_BYTE, MPI_COMM_WORLD);
    std::vector<std::vector<uint8_t>> in(size_);
    for (int r = 0; r < n; ++r)
      in[r].assign(recv.begin() + recv_displs[r], recv.begin() + recv_displs[r] + recv_counts[r]);
    return in;
  }

  void sum(std::span<uint64_t> v) override { reduce(v.data(), v.size(), MPI_UINT64_T, MPI_SUM); }
  void max(std::span<uint64_t> v) override { reduce(v.data(), v.size(), MPI_UINT64_T, MPI_MAX); }
  void min(std::span<int64_t> v) override { reduce(v.data(), v.size(), MPI_INT64_T, MPI_MIN); }

  std::vector<std::vector<uint8_t>> gather(const std::vector<uint8_t>& mine) override {
    const int n = static_cast<int>(size_);
    int count = count_of(mine.size());
    std::vector<int> counts(rank_ == 0 ? n : 0), displs(rank_ == 0 ? n : 0);
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
      displs[r] = count_of(total);
      total += static_cast<size_t>(counts[r]);
    }
    std::vector<uint8_t> all(total);
    MPI_Gatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, 0,
                MPI_COMM_WORLD);
    std::vector<std::vector<uint8_t>> out(counts.size());
    for (size_t r = 0; r < counts.size(); ++r)
      out[r].assign(all.begin() + displs[r], all.begin() + displs[r] + counts[r]);
    return out;
  }

 private:
  void reduce(void* v, size_t n, MPI_Datatype type, MPI_Op op) {
    MPI_Allreduce(MPI_IN_PLACE, v, count_of(n), type, op, MPI_COMM_WORLD);
  }

  uint32_t rank_ = 0;
  uint32_t size_ = 1;
};

}  // namespace

std::unique_ptr<Ranks> start_mpi(int* argc, char*** argv, std::string* why) {
  if (MPI_Init(argc, argv) != MPI_SUCCESS) {
    *why = "MPI_Init failed (is mrc-sim started by mpirun?)";
    return nullptr;
  }
  return std::make_unique<MpiRanks>();
}

#else

std::unique_ptr<Ranks> start_mpi(int*, char***, std::string* why) {
  *why = "this mrc-sim was built without MPI: install libopenmpi-dev openmpi-bin (scripts/deps.sh) and "
         "configure again (MRC_WITH_MPI, on when MPI is found), or run without mpirun (--partitions N runs "
         "the partitions on threads)";
  return nullptr;
}

#endif

}  // namespace mrc::sim::tool
