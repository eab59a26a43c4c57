#include "exec/stuck.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "mpi_base/comm_name.hpp"

namespace toroid::exec {

void abort_stuck(const ExecParams& params, MPI_Comm comm, std::uint32_t phase,
                 const std::string& waiting) {
  int rank = 0, world = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  fmt::print(stderr,
             "toroid: rank {}: {} made no progress for {} s in phase {} (TOROID_TIMEOUT) on {} "
             "(world rank {}){}\n",
             rank, params.what.text(), params.timeout_s, phase, comm_name(comm), world, waiting);
  std::fflush(stderr);
  MPI_Abort(comm, 3);
  std::abort();
}

}  // namespace toroid::exec
