// Rank 1 skips the collective that every other rank enters. With TOROID_TIMEOUT set, the
// waiting ranks must print what they wait for and end the job instead of hanging.
//   watchdog_probe              a blocking all-reduce
//   watchdog_probe nonblocking  a non-blocking one, started and then waited for
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "toroid/toroid.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const bool nonblocking = argc > 1 && std::string(argv[1]) == "nonblocking";
  {
    toroid::Communicator comm(MPI_COMM_WORLD);
    std::vector<float> v(1 << 16, 1.0f);
    if (comm.rank() == 1) {
      std::fprintf(stderr, "rank 1 skips the collective\n");
    } else if (nonblocking) {
      toroid::Request r = toroid::iallreduce(std::span<float>(v), toroid::ReduceOp::sum, comm,
                                             toroid::Algorithm::ring);
      r.wait();
    } else {
      toroid::allreduce(std::span<float>(v), toroid::ReduceOp::sum, comm, toroid::Algorithm::ring);
    }
    // The skipping rank waits here; the job ends through the watchdog's MPI_Abort.
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  std::printf("watchdog did not fire\n");
  return 0;
}
