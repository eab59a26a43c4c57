// What moves a communicator's collectives: its engine, the ops it reuses, and the optional
// progress thread.
//
// Without the thread, collectives move only inside toroid calls on the communicator (test,
// wait, any blocking collective). With TOROID_PROGRESS=thread (Options::progress) a thread per
// communicator runs engine rounds while collectives are in flight and sleeps otherwise, so a
// collective advances while the caller computes. It calls MPI where MPI provides
// MPI_THREAD_MULTIPLE; below that it may only run collectives whose every step is over shared
// memory or local (start_thread's `mpi_refusal`; communicator.cpp decides where that holds).
// Every engine call, from either thread, holds `mutex` where two threads may call at once: with the progress thread, or where MPI was initialized with
// MPI_THREAD_MULTIPLE (the program's threads may test and wait on requests side by side).
// Below that level MPI's own rules let one thread call at a time, so the lock (a lock, an
// unlock and two atomic counts on every call) is left out.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/engine.hpp"
#include "exec/stock.hpp"

namespace toroid::api {

// Whether the calling thread is a communicator's progress thread. Its MPI calls are toroid's
// own; the preload (lib/pmpi) uses this to pass them straight to MPI.
bool on_progress_thread() noexcept;

class Executor {
 public:
  explicit Executor(MPI_Comm comm);
  ~Executor();  // stops the thread; the owner has completed what was in flight
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // `mpi_refusal` non-empty: the thread may not call MPI, so a collective started to run in the
  // background with steps over MPI is refused with this reason (exec::Engine).
  void start_thread(std::string mpi_refusal = {});

  // Every executor of the process that its callers move (no progress thread): MPI's progress
  // is process-wide, so a caller waiting on one communicator moves the others too
  // (exec::Elsewhere). `self`: the one the caller already moves (null: none).
  static bool busy_besides(const Executor* self) noexcept;  // collectives in flight there
  static void move_besides(const Executor* self) noexcept;  // one round of each
  // Records a timeline of what the engine runs (null: stop); exec/tracer.hpp.
  void set_tracer(exec::Tracer* t);
  bool threaded() const noexcept { return thread_.joinable(); }

  // An op bound to (s, user, params): a reusable one already bound so when there is, else a
  // free one bound again, else a new one; `own`: always a new one, kept out of the pool (a
  // persistent request's). Never one a request in flight holds.
  std::shared_ptr<exec::BoundCollective> acquire(const std::shared_ptr<const schedule::Schedule>& s,
                                                 std::uint64_t serial,
                                                 const schedule::BufferSet& user,
                                                 const exec::ExecParams& params, bool own = false);
  // acquire for a schedule of one call (an alltoallv's): `slot`'s op bound to it when no
  // request holds that op and it is not in flight, else a new one, kept in `slot` from then on.
  // The pool's ops stay bound to the schedules they serve.
  std::shared_ptr<exec::BoundCollective> acquire_into(
      std::shared_ptr<exec::BoundCollective>& slot,
      const std::shared_ptr<const schedule::Schedule>& s, const schedule::BufferSet& user,
      const exec::ExecParams& params);
  void start(const std::shared_ptr<exec::BoundCollective>& op);
  void wait(exec::BoundCollective& op);
  // A blocking call: start and wait under one hold of the mutex (the caller moves it all).
  void run(const std::shared_ptr<exec::BoundCollective>& op);
  // run(op) with op first bound to other buffers of the same sizes (exec::BoundCollective::rebind).
  void run_on(const std::shared_ptr<exec::BoundCollective>& op, const schedule::BufferSet& user);
  bool test(exec::BoundCollective& op);
  void wait_all();
  bool finished(const exec::BoundCollective& op);  // not active any more; moves nothing

 private:
  void run_thread();
  // Counts this executor among the busy listed ones, or not, after its engine ran (held).
  void note_busy() noexcept;
  void unlist() noexcept;  // no longer moved by callers of other executors
  // A caller thread's hold on the mutex: counted first, so the progress thread steps aside
  // (std::mutex is not fair, and the thread would otherwise take it back round after round).
  class Hold {
   public:
    explicit Hold(Executor& p) : p_(p) {
      if (!p_.locking_) return;
      ++p_.callers_;
      lock_ = std::unique_lock(p_.mutex_);
      --p_.callers_;
    }
    ~Hold() { p_.note_busy(); }  // still held
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    Executor& p_;
    std::unique_lock<std::mutex> lock_;
  };

  exec::Engine engine_;
  std::vector<std::shared_ptr<exec::BoundCollective>> pool_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stop_{false};
  std::atomic<int> callers_{0};    // caller threads waiting for the mutex
  bool locking_ = true;            // whether Hold takes the mutex (the comment at the top)
  bool listed_ = false;            // among the executors callers move (under the list's mutex)
  std::atomic<bool> busy_{false};  // listed, with collectives in flight (counted; set held)
  std::thread thread_;
};

// Waits for a stock (the `mpi` algorithm's) collective. Inside MPI's wait only MPI's
// operations move, so while collectives are in flight on communicators their callers move,
// this polls MPI and moves those too (Executor::busy_besides).
void wait_stock(exec::StockCall& call);

}  // namespace toroid::api
