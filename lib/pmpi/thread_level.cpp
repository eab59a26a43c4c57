#include "pmpi/thread_level.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>

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
  if (provided) *provided = level;
  return rc;
}

bool program_level(int& level) noexcept {
  level = told.load(std::memory_order_relaxed);
  return level >= 0;
}

}  // namespace toroid::pmpi
