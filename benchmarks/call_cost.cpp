// Instructions per call of a small collective: toroid's against the stock MPI collective's, in
// one process, counted by callgrind (stable where wall time is not: instruction counts do not
// depend on what else runs on the cores). benchmarks/call_cost.sh runs it and prints the counts.
//   valgrind --tool=callgrind --instr-atstart=no toroid-call-cost toroid|toroid-new|stock [ALGO [BYTES [CALLS]]]
// toroid-new: every call with buffers other than the last call's (rotating over 64 pairs), the
// path of a program that does not reuse its vectors. Outside callgrind it only runs the calls.
// One rank counts only the library's own path (no waiting on a peer, whose spinning would count
// too).
#include <mpi.h>
#include <valgrind/callgrind.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "toroid/toroid.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    const std::string side = argc > 1 ? argv[1] : "toroid";
    if (side != "toroid" && side != "toroid-new" && side != "stock")
      throw toroid::InvalidArgument("first argument: toroid, toroid-new or stock, got '" + side +
                                    "'");
    const toroid::Algorithm algo = toroid::parse_algorithm(argc > 2 ? argv[2] : "auto");
    const std::size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 8;
    const int calls = argc > 4 ? std::atoi(argv[4]) : 2000;
    if (bytes < 4 || calls < 1) throw toroid::InvalidArgument("BYTES must be >= 4 and CALLS >= 1");
    toroid::Communicator comm(MPI_COMM_WORLD);
    constexpr int kPairs = 64;
    std::vector<std::vector<float>> ins(kPairs, std::vector<float>(bytes / 4, 1.0f)),
        outs(kPairs, std::vector<float>(bytes / 4));
    std::vector<float>&in = ins[0], &out = outs[0];
    const auto n = static_cast<int>(in.size());
    int next = 0;
    auto toroid_call = [&] {
      const int k = side == "toroid-new" ? next++ % kPairs : 0;
      toroid::allreduce(std::span<const float>(ins[k]), std::span<float>(outs[k]),
                        toroid::ReduceOp::sum, comm, algo);
    };
    auto stock_call = [&] {
      MPI_Allreduce(in.data(), out.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
    // Warm: the schedule built, auto's size class priced, MPI's buffers set up.
    for (int i = 0; i < 100; ++i) toroid_call(), stock_call();
    // One side counted per run (a second instrumented section in one run miscounted).
    CALLGRIND_START_INSTRUMENTATION;
    for (int i = 0; i < calls; ++i) side == "stock" ? stock_call() : toroid_call();
    CALLGRIND_DUMP_STATS;
    CALLGRIND_STOP_INSTRUMENTATION;
  } catch (const toroid::Error& e) {
    std::fprintf(stderr, "toroid-call-cost: %s\n", e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}
