// Sums a vector over all ranks with toroid and checks the result.
#include <toroid/toroid.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int bad = 0;
  {
    toroid::Communicator comm(MPI_COMM_WORLD);
    std::vector<float> grad(1000, static_cast<float>(comm.rank() + 1));
    toroid::allreduce(std::span<float>(grad), toroid::ReduceOp::sum, comm);
    const float expect = comm.size() * (comm.size() + 1) / 2.0f;
    for (float g : grad) bad += g != expect;
    if (comm.rank() == 0) std::printf("%s (toroid %s)\n", bad ? "consumer WRONG" : "consumer ok", TOROID_VERSION_STRING);
  }
  MPI_Finalize();
  return bad ? 1 : 0;
}
