// A timeline of one 4-rank torus2d_both all-reduce (TOROID_TRACE's Options::trace): first a
// path nobody can write, which must fail on every rank naming the path; then the real file,
// written at the communicator's end. tests/mpi/trace_test.py sets it against toroid-sim's.
//   trace_main FILE BYTES
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "toroid/toroid.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, status = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3) {
    std::fprintf(stderr, "usage: trace_main FILE BYTES\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  toroid::Options options;
  options.topology = "2x2";
  options.algorithm = toroid::Algorithm::torus2d_both;
  options.trace = "/nonexistent-directory/trace.json";
  try {
    toroid::Communicator comm(MPI_COMM_WORLD, options);
    std::printf("rank %d: an unwritable trace file was accepted\n", rank);
    status = 1;
  } catch (const toroid::Error& e) {
    std::printf("rank %d: error: %s\n", rank, e.what());
  }
  options.trace = argv[1];
  {
    toroid::Communicator comm(MPI_COMM_WORLD, options);
    std::vector<float> v(std::stoull(argv[2]) / sizeof(float), static_cast<float>(rank + 1));
    toroid::allreduce(std::span<float>(v), toroid::ReduceOp::sum, comm);
    const float want = static_cast<float>(size * (size + 1) / 2);
    for (float x : v)
      if (x != want) {
        std::printf("rank %d: wrong sum %g (want %g)\n", rank, static_cast<double>(x),
                    static_cast<double>(want));
        status = 1;
        break;
      }
  }
  std::printf("rank %d: done\n", rank);
  MPI_Finalize();
  return status;
}
