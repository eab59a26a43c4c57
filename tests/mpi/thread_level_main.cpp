// The progress thread (TOROID_PROGRESS=thread) below MPI_THREAD_MULTIPLE, at the level named by
// argv[1] (single: plain MPI_Init; funneled). Where its thread may not call MPI, it runs a
// communicator whose every step goes over shared memory (one node, all ranks linked):
// constructing it must succeed there and fail elsewhere on every rank with a message naming the
// level and the reason (TOROID_TRANSPORT=mpi); an alltoallv under auto takes the node's path
// (no MPI) and runs in the background too, while one named `direct`, whose messages go over MPI,
// must be refused when started in the background and run when blocking; and the caller mode
// must work throughout.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "toroid/toroid.hpp"

namespace {

int rank = 0, size = 1;

// Rank r sends q + 1 elements of value 100 r + q to each q.
void alltoallv_on(toroid::Communicator& comm, bool blocking, bool direct) {
  const char* what = blocking ? (direct ? "blocking direct" : "blocking")
                              : (direct ? "background direct" : "background");
  const std::optional<toroid::Algorithm> algo =
      direct ? std::optional(toroid::Algorithm::direct) : std::nullopt;
  std::vector<std::uint64_t> sends(size), receives(size);
  std::vector<float> in, out;
  for (int q = 0; q < size; ++q) {
    sends[q] = q + 1u;
    receives[q] = rank + 1u;
    in.insert(in.end(), q + 1u, 100.0f * rank + q);
  }
  out.assign(static_cast<std::size_t>(size) * (rank + 1u), -1.0f);
  try {
    if (blocking)
      toroid::alltoallv(std::span<const float>(in), {sends}, std::span<float>(out), {receives},
                        comm, algo);
    else
      toroid::ialltoallv(std::span<const float>(in), {sends}, std::span<float>(out), {receives},
                         comm, algo)
          .wait();
    bool right = true;
    for (int q = 0; q < size; ++q)
      for (int k = 0; k <= rank; ++k) right &= out[q * (rank + 1) + k] == 100.0f * q + rank;
    std::printf("rank %d: %s alltoallv %s\n", rank, what, right ? "exact" : "WRONG");
  } catch (const toroid::Error& e) {
    std::printf("rank %d: %s alltoallv error: %s\n", rank, what, e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool single = argc > 1 && std::strcmp(argv[1], "single") == 0;
  int provided = 0;
  if (single)
    MPI_Init(&argc, &argv);
  else
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    toroid::Communicator comm(MPI_COMM_WORLD);
    std::printf("rank %d: constructed with progress %s\n", rank,
                std::string(toroid::to_string(comm.progress_mode())).c_str());
    std::vector<float> v(100000, 1.0f);
    toroid::Request r = toroid::iallreduce(std::span<float>(v), toroid::ReduceOp::sum, comm);
    r.wait();
    std::printf("rank %d: background sum %g\n", rank, static_cast<double>(v[99999]));
    alltoallv_on(comm, false, false);
    alltoallv_on(comm, false, true);
    alltoallv_on(comm, true, true);
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
  std::fflush(stdout);
  MPI_Finalize();
  return 0;
}
