// How a rank waits for a peer on its node without holding a core that peer needs.
#pragma once

namespace toroid::exec {

// Waiting for a peer that shares the node: spin briefly (it is usually a few hundred
// nanoseconds away), then give the core away each round, so ranks that outnumber the cores
// still run. `idle()` is called after a round in which nothing moved and says whether the wait
// has lasted longer than the watchdog's timeout; `moved()` after one in which something did.
//
// Where the node's ranks outnumber its cores, the awaited rank is usually waiting for this very
// core, so spinning only delays it: then every idle round yields (as Open MPI's progress does
// when oversubscribed). 4 ranks on 2 cores, 128 B - 8 KiB all-reduce, 4 interleaved pairs of
// runs: 5-10 us yielding at once against 9-28 us after 64 spins.
class Backoff {
 public:
  explicit Backoff(double timeout_s) : timeout_s_(timeout_s) {}
  void moved() { rounds_ = 0; }
  bool idle();
  // Whether this idle round should also move the rest of the process (MPI's operations, other
  // communicators: Engine::move_elsewhere): once the wait has spun its spins, every
  // kElsewhereEvery-th round, the first of them kElsewhereEvery rounds in. At every round, or
  // at the first, a 16 B all-reduce at 4 ranks on 2 cores took 19 us against 9.7: the probe
  // runs Open MPI's progress loop, which gives the core away there (mpi_yield_when_idle).
  bool time_to_move_elsewhere() const noexcept;
  static constexpr int kElsewhereEvery = 16;
  // A communicator with `node_ranks` ranks on this rank's node: once any communicator of the
  // process has more than the machine's online cores, waits yield from the first idle round.
  static void note_node_ranks(int node_ranks);
  static constexpr int kSpins = 64;  // idle rounds spun before the first yield, not oversubscribed
  // After one round of a caller's polling loop (Request::test) that moved nothing: yields the
  // core when the node is oversubscribed, as Open MPI's progress does then, so a rank that polls
  // test() in a loop does not hold the core its peers need for a whole time slice.
  static void after_idle_test();

 private:
  double timeout_s_;
  int rounds_ = 0;
  double since_ = 0;
};

}  // namespace toroid::exec
