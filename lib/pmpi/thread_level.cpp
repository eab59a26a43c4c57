#include "pmpi/thread_level.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "api/communicator_impl.hpp"
#include "pmpi/settings.hpp"

namespace toroid::pmpi {
namespace {
std::atomic<int> told{-1};  // the program's level; -1 before init_thread

}  // namespace

int init_thread(int* argc, char*** argv, int required, int* provided) noexcept {
  int mpi_level = MPI_THREAD_SINGLE;
  const int rc =
      PMPI_Init_thread(argc, argv, std::max(required, settings().thread_floor), &mpi_level);
  if (rc != MPI_SUCCESS) return rc;
  const int level = std::min(mpi_level, required);
  told.store(level, std::memory_order_relaxed);
  // TOROID_LOG=info: what was asked of MPI for the program, once (world rank 0), when it differs.
  int rank = 0;
  if (settings().log_info && mpi_level != level && PMPI_Comm_rank(MPI_COMM_WORLD, &rank) == 0 &&
      rank == 0) {
    fmt::print(stderr,
               "toroid: MPI_Init: MPI is at {} (TOROID_THREAD_LEVEL), the program asked for {} "
               "and is told so\n",
               api::thread_level_name(mpi_level), api::thread_level_name(level));
    std::fflush(stderr);
  }
  if (provided) *provided = level;
  return rc;
}

bool program_level(int& level) noexcept {
  level = told.load(std::memory_order_relaxed);
  return level >= 0;
}

}  // namespace toroid::pmpi
