// Rank 1 skips the collective that every other rank enters. With TOROID_TIMEOUT set, the
// waiting ranks must print what they wait for and end the job instead of hanging.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "toroid/toroid.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    toroid::Communicator comm(MPI_COMM_WORLD);
    std::vector<float> v(1 << 16, 1.0f);
    if (comm.rank() != 1) toroid::allreduce(std::span<float>(v), toroid::ReduceOp::sum, comm, toroid::Algorithm::ring);
    else std::fprintf(stderr, "rank 1 skips the collective\n");
    // The skipping rank waits here; the job ends through the watchdog's MPI_Abort.
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  std::printf("watchdog did not fire\n");
  return 0;
}
