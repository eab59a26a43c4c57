// MPI initialized without MPI_THREAD_MULTIPLE, and the progress thread asked for through
// TOROID_PROGRESS=thread: constructing the Communicator must fail on every rank with a message
// naming the thread level, and the caller mode must still work.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "toroid/toroid.hpp"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, status = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    toroid::Communicator comm(MPI_COMM_WORLD);
    std::printf("rank %d: constructed with progress %s\n", rank,
                std::string(toroid::to_string(comm.progress_mode())).c_str());
    status = 1;
  } catch (const toroid::Error& e) {
    std::printf("rank %d: error: %s\n", rank, e.what());
  }
  toroid::Options caller;
  caller.progress = toroid::ProgressMode::caller;
  toroid::Communicator comm(MPI_COMM_WORLD, caller);
  float v = 1.0f;
  toroid::Request r = toroid::iallreduce(std::span<float>(&v, 1), toroid::ReduceOp::sum, comm);
  r.wait();
  std::printf("rank %d: caller mode sum %g\n", rank, static_cast<double>(v));
  MPI_Finalize();
  return status;
}
