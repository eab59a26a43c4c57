#include "exec/stuck.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace toroid::exec {

void abort_stuck(const ExecParams& params, MPI_Comm comm, std::uint32_t phase,
                 const std::string& waiting) {
  int rank = 0, world = 0, len = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  char name[MPI_MAX_OBJECT_NAME] = {};
  MPI_Comm_get_name(comm, name, &len);
  fmt::print(stderr,
             "toroid: rank {}: {} made no progress for {} s in phase {} (TOROID_TIMEOUT) on {} "
             "(world rank {}){}\n",
             rank, params.what.text(), params.timeout_s, phase,
             len > 0 ? name : "an unnamed communicator", world, waiting);
  std::fflush(stderr);
  MPI_Abort(comm, 3);
  std::abort();
}

}  // namespace toroid::exec
