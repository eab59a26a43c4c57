// The dataflow engine: runs the collectives in flight on one communicator, each a schedule bound
// to its buffers (op.hpp), over MPI point-to-point and shared-memory channels at once.
//
//   task    = one step of one collective; it starts once the steps it waits for are done and it
//             is the first unstarted step on its channel, and then moves as far as its `follow`
//             dependencies allow: a send that forwards a receive goes segment by segment behind it
//   channel = (direction, peer, tag), shared by every collective in flight: its steps run in the
//             order the collectives were started, then in schedule order, on both ends alike
//             (MPI's non-overtaking rule and the shared-memory rings' FIFO order need that)
//   round   = progress(): one MPI_Testsome over every request, then every task of every
//             collective moves what it can; never blocks
//
//      collective A:  recv_reduce B2 <- left  ──follow──>  send B2 -> right  ──> ...
//      collective B:  recv B0 <- left          (waits on channel "recv from left, tag 0"
//                                               until A's receives there are posted)
//
// No deadlock across collectives: on every channel the earlier-started collective's steps come
// first, so the earliest unfinished collective always runs as if it were alone.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/bound_collective.hpp"
#include "exec/request_table.hpp"

namespace toroid::exec {

class Tracer;

// The rest of the process, as an engine that waits sees it: the other communicators' engines
// (api's executors). MPI's progress is process-wide: a rank blocked in MPI_Wait on one
// communicator still moves the collectives of every other, and a peer may be waiting on one of
// those before it can take part in this engine's collective. An engine waiting on its peers
// therefore moves the others on its idle rounds, and does not block inside MPI while they
// have collectives in flight (mpi_base/progress.hpp does the same for MPI's own operations).
struct Elsewhere {
  void* context = nullptr;
  bool (*busy)(void* context) noexcept = nullptr;  // collectives in flight elsewhere
  void (*move)(void* context) noexcept = nullptr;  // one round of each of them
};

struct Channel {
  Task* head = nullptr;  // the step that may run now; null: none queued
  Task* tail = nullptr;
};

class Engine {
 public:
  explicit Engine(MPI_Comm comm) : comm_(comm) {}
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts a bound op (idle or done, not active): queues its steps on their channels and, with
  // `move_now`, moves what can move at once (posting its MPI transfers early; over shared memory
  // that is copying, which a progress thread had better do while the caller goes on).
  void start(const std::shared_ptr<BoundCollective>& op, bool move_now = true);
  // One round over everything in flight; whether anything moved. Never blocks. An error raised
  // here fails every op in flight (they rethrow it from wait/test).
  bool progress();
  // Progress until `op` is done (blocking inside MPI when only MPI can move, and no watchdog);
  // rethrows the op's error. The watchdog (the op's timeout) aborts the job when nothing moves.
  void wait(BoundCollective& op) {
    if (op.status() != BoundCollective::Status::done) wait_until_ended(op);  // done: nothing to do
  }
  // One round; whether `op` is done (rethrows its error).
  bool test(BoundCollective& op);
  // Completes everything in flight.
  void wait_all();
  std::size_t in_flight() const noexcept { return active_.size(); }

  Channel& channel(bool sends, int peer, int tag);

  // Records a timeline of every call and step from now on (null: none); exec/tracer.hpp.
  void set_tracer(Tracer* t) noexcept { tracer_ = t; }
  // What idle rounds of wait() and test() move besides MPI's own operations (set once, before
  // the first collective).
  void set_elsewhere(const Elsewhere& e) noexcept { elsewhere_ = e; }
  // From now on, start(op, false) refuses an op with steps over MPI, saying `why` (a progress
  // thread that may not call MPI moves what is started so; the caller's own rounds may).
  void refuse_mpi_when_queued(std::string why) { mpi_refused_ = std::move(why); }

 private:
  void wait_until_ended(BoundCollective& op);
  bool advance(BoundCollective& op) {
    return tracer_ ? advance_as<true>(op) : advance_as<false>(op);
  }
  template <bool kTrace>
  bool advance_as(BoundCollective& op);
  bool can_start(const BoundCollective& op, const Task& t) const;
  template <bool kTrace>
  void start_task(BoundCollective& op, Task& t);
  void trace_step(const BoundCollective& op, const Task& t);
  std::size_t follow_limit(const BoundCollective& op, const Task& t) const;
  void fail_all(std::exception_ptr e);
  void fail_on_mismatch(BoundCollective& op) const;
  // An idle round of a wait or a test: MPI's operations and the other engines move.
  void move_elsewhere() noexcept;
  std::string waiting_lines() const;
  [[noreturn]] void stuck(const BoundCollective& op) const;

  MPI_Comm comm_;
  std::string mpi_refused_;  // refuse_mpi_when_queued
  std::map<std::uint64_t, Channel> channels_;
  std::vector<std::shared_ptr<BoundCollective>> active_;
  // Single-copy ops in flight, in start order: only the first moves (their posts in the node's
  // control block follow one another, single_copy.hpp).
  std::deque<BoundCollective*> single_copies_;
  RequestTable requests_;
  std::size_t shm_open_ = 0;  // shared-memory tasks not finished, over every op in flight
  std::size_t probing_ = 0;   // exact receives waiting for their message (MpiTransfer::probing)
  Tracer* tracer_ = nullptr;
  Elsewhere elsewhere_;
  std::uint32_t idle_tests_ = 0;  // tests that moved nothing (every so many move the rest)
};

}  // namespace toroid::exec
