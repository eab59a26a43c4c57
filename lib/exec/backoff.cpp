#include "exec/backoff.hpp"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>

namespace toroid::exec {

namespace {
std::atomic<int> spins{Backoff::kSpins};  // or 1 once oversubscribed
}  // namespace

void Backoff::note_node_ranks(int node_ranks) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && node_ranks > cores) spins.store(1, std::memory_order_relaxed);
}

void Backoff::after_idle_test() {
  if (spins.load(std::memory_order_relaxed) == 1) sched_yield();
}

bool Backoff::time_to_move_elsewhere() const noexcept {
  const int past = rounds_ - spins.load(std::memory_order_relaxed);
  return past >= 0 && (past + 1) % kElsewhereEvery == 0;  // not on the first: most waits end soon
}

bool Backoff::idle() {
  if (rounds_ == 0 && timeout_s_ > 0) since_ = MPI_Wtime();
  if (++rounds_ < spins.load(std::memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return false;
  }
  sched_yield();
  return timeout_s_ > 0 && rounds_ % 256 == 0 && MPI_Wtime() - since_ > timeout_s_;
}

}  // namespace toroid::exec
