// A process group's pending toroid works and the thread that completes them, the *completer*.
//
// Works complete in the order they were started, by one of two threads:
//  - the caller's, when it waits on the oldest pending work before the completer has taken it
//    (a synchronous dist.all_reduce is start + wait): it drives the requests itself, with no
//    thread hand-off. While calls keep coming the completer polls (every 0.1-1 ms) instead of
//    being woken for each work, and leaves a work alone for kCallerGrace after its start, so
//    a synchronous call costs no futex wake and no context switch;
//  - the completer otherwise: it drives toroid's progress while works are pending (one round
//    per test, so the caller's thread can start the next collective between rounds) and
//    sleeps when none is. A work started behind another, or while the completer sleeps for
//    good (no call for kPollFor), wakes it at once; an async work started alone while it polls
//    waits at most a poll interval (1 ms) for it.
// Both call MPI beside each other, so MPI must run with MPI_THREAD_MULTIPLE.
//
// Why a thread of its own beside the library's progress thread (api::Executor, Options::progress
// = thread): that one moves toroid's requests, but a c10d work is more than its requests. It
// completes in start order, copies out of its staging buffers, runs its future's callbacks (DDP's
// hooks chain on them) and drops its tensors, which needs the GIL: what only code that knows
// c10d can do. And the library's thread is off by default (a communicator's progress is its
// callers'), so without the completer an async work nobody waits on would never complete.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace toroid::torch_backend {

class ToroidWork;

class WorkQueue {
 public:
  WorkQueue();  // starts the completer
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues a started work; wakes the completer where it would not look by itself soon.
  void push(c10::intrusive_ptr<ToroidWork> work);
  // A caller about to wait on `work`: true when it is the oldest pending work and nobody drives
  // it yet, and then the caller drives it and calls retire(work) when it is complete.
  bool claim_oldest(ToroidWork& work);
  void retire(ToroidWork& work);
  // Completes every pending work and ends the completer (the group's destructor, while its
  // communicator still lives); idempotent.
  void stop();

 private:
  void run_completer();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<c10::intrusive_ptr<ToroidWork>> pending_;
  bool stop_ = false;
  // What the completer does while it holds no work: each state says whether a change of the
  // queue must wake it (notify) or it will see it itself.
  enum class Completer { busy, polling, asleep } completer_state_ = Completer::busy;
  std::chrono::steady_clock::time_point last_active_{};
  std::thread completer_;
};

}  // namespace toroid::torch_backend
