#include "exec/stuck.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace toroid::exec {

void abort_stuck(const ExecParams& params, MPI_Comm comm, std::uint32_t phase,
                 const std::string& waiting) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  fmt::print(stderr,
             "toroid: rank {}: {} made no progress for {} s in phase {} (TOROID_TIMEOUT){}\n", rank,
             params.what.text(), params.timeout_s, phase, waiting);
  std::fflush(stderr);
  MPI_Abort(comm, 3);
  std::abort();
}

}  // namespace toroid::exec
