// A rank dies (SIGKILL) or freezes (SIGSTOP) in the middle of a long run of large all-reduces.
//   toroid_fault_probe kill|stop|none [delay_s]
// (none: no signal; rank 0 says when the first all-reduce is done, so a test can break
// something else, a link, while the loop runs.)
// A timer thread on rank 1 signals its own process `delay_s` (default 1) seconds after the first
// collective started, so the signal lands inside a collective. It first prints the wall-clock
// time, which fault_test.cmake uses to measure how long the job takes to end afterwards.
#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "toroid/toroid.hpp"

namespace {

long long now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "kill";
  const double delay_s = argc > 2 ? std::atof(argv[2]) : 1.0;
  if (mode != "kill" && mode != "stop" && mode != "none") {
    std::fprintf(stderr, "toroid_fault_probe: mode '%s' is not kill, stop or none\n", mode.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int sig = mode == "stop" ? SIGSTOP : SIGKILL;
  {
    toroid::Communicator comm(MPI_COMM_WORLD);
    std::vector<float> v(std::size_t{4} << 20, 1.0f);  // 16 MiB: each all-reduce takes a while
    if (comm.rank() == 1 && mode != "none") {
      std::thread([=] {
        std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
        std::printf("fault: rank 1 sends itself %s at %lld us\n",
                    sig == SIGKILL ? "SIGKILL" : "SIGSTOP", now_us());
        std::fflush(stdout);
        std::raise(sig);
      }).detach();
    }
    // Far more work than the test allows time for: the job must end because of the fault.
    for (int i = 0; i < 100000; ++i) {
      toroid::allreduce(std::span<float>(v), toroid::ReduceOp::sum, comm, toroid::Algorithm::ring);
      if (i == 0 && comm.rank() == 0) {
        std::printf("fault: the first all-reduce is done at %lld us\n", now_us());
        std::fflush(stdout);
      }
    }
  }
  MPI_Finalize();
  std::printf("fault: the job ran to the end\n");
  return 0;
}
