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
std::atomic<int> told{-1};    // the program's level; -1 before init_thread
std::atomic<int> lowest{-1};  // the job's lowest level (agree_on_thread_level); -1: not agreed
}  // namespace

int init_thread(int* argc, char*** argv, int required, bool plain, int* provided) noexcept {
  const int floor = preload_config().thread_floor;
  int mpi_level = MPI_THREAD_SINGLE, level = MPI_THREAD_SINGLE;
  int rc = MPI_SUCCESS;
  if (floor <= required) {
    // Nothing to raise: exactly the program's call, so MPI's own defaults hold (MPI_Init reads
    // OMPI_MPI_THREAD_LEVEL or MPIR_CVAR_DEFAULT_THREAD_LEVEL; MPI_Init_thread does not).
    rc = plain ? PMPI_Init(argc, argv) : PMPI_Init_thread(argc, argv, required, &mpi_level);
    if (rc != MPI_SUCCESS) return rc;
    if (plain) PMPI_Query_thread(&mpi_level);
    level = mpi_level;
  } else {
    rc = PMPI_Init_thread(argc, argv, floor, &mpi_level);
    if (rc != MPI_SUCCESS) return rc;
    level = std::min(mpi_level, required);
  }
  told.store(level, std::memory_order_relaxed);
  if (provided) *provided = level;
  // TOROID_LOG=info: what was asked of MPI for the program, once (world rank 0), when it differs.
  int rank = 0;
  if (preload_config().log_info && mpi_level != level &&
      PMPI_Comm_rank(MPI_COMM_WORLD, &rank) == 0 && rank == 0) {
    fmt::print(stderr,
               "toroid: MPI_Init: MPI is at {} (TOROID_THREAD_LEVEL), the program asked for {} "
               "and is told so\n",
               api::thread_level_name(mpi_level), api::thread_level_name(level));
    std::fflush(stderr);
  }
  return rc;
}

bool program_level(int& level) noexcept {
  level = told.load(std::memory_order_relaxed);
  return level >= 0;
}

void agree_on_thread_level() noexcept {
  int mine = MPI_THREAD_SINGLE, least = MPI_THREAD_SINGLE;
  if (PMPI_Query_thread(&mine) != MPI_SUCCESS) return;
  if (PMPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) == MPI_SUCCESS)
    lowest.store(least, std::memory_order_relaxed);
}

int job_thread_level() noexcept {
  const int least = lowest.load(std::memory_order_relaxed);
  if (least >= 0) return least;
  int mine = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&mine);
  return mine;
}

}  // namespace toroid::pmpi
