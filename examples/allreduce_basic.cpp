// The first program to copy: sum gradients over every rank on a 2D torus.
//
//   mpirun -np 4 ./allreduce_basic            (topology auto)
//   TOROID_TOPOLOGY=2x2 mpirun -np 4 ./allreduce_basic
#include <cstdio>
#include <toroid/toroid.hpp>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  try {
    toroid::Communicator comm(MPI_COMM_WORLD);
    std::vector<float> grads(1 << 20, 1.0f);  // each rank's gradients
    toroid::allreduce(std::span<float>(grads), toroid::ReduceOp::avg, comm);
    if (comm.rank() == 0)
      std::printf("topology %s: averaged %zu gradients over %d ranks, grads[0] = %g\n",
                  comm.shape().to_string().c_str(), grads.size(), comm.size(), grads[0]);
  } catch (const toroid::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return 0;
}
