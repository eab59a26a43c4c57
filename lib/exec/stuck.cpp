#include "exec/stuck.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include <sched.h>

namespace toroid::exec {

void abort_stuck(const ExecParams& params, MPI_Comm comm, std::uint32_t phase, const std::string& waiting) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  fmt::print(stderr, "toroid: rank {}: {} made no progress for {} s in phase {} (TOROID_TIMEOUT){}\n", rank,
             params.what, params.timeout_s, phase, waiting);
  std::fflush(stderr);
  MPI_Abort(comm, 3);
  std::abort();
}

std::string describe_waiting(const std::vector<ShmTransfer>& transfers, int max_lines, int& shown) {
  std::string lines;
  for (const ShmTransfer& t : transfers) {
    if (t.finished() || shown >= max_lines) continue;
    lines += fmt::format("\n  waiting: {} (shared memory, byte {} of {})", schedule::describe(*t.step), t.done, t.bytes);
    ++shown;
  }
  return lines;
}

bool Backoff::idle() {
  if (rounds_ == 0 && timeout_s_ > 0) since_ = MPI_Wtime();
  if (++rounds_ < kSpins) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return false;
  }
  sched_yield();
  return timeout_s_ > 0 && rounds_ % 256 == 0 && MPI_Wtime() - since_ > timeout_s_;
}

}  // namespace toroid::exec
