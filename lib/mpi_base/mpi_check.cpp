#include <fmt/format.h>

#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid {

void mpi_check(int rc, std::string_view what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError(fmt::format("{} failed on world rank {}: {}", what, rank,
                             len > 0 ? std::string_view(text, len) : "unknown MPI error"),
                 rc);
}

}  // namespace toroid
