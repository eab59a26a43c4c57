#include "mpi_base/progress.hpp"

namespace toroid {

void poke_mpi_progress(MPI_Comm comm) noexcept {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, kNeverSentTag, comm, &flag, MPI_STATUS_IGNORE);
}

}  // namespace toroid
