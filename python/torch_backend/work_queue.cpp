#include "work_queue.hpp"

#include <algorithm>

#include "gil.hpp"
#include "process_group.hpp"

namespace toroid::torch_backend {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
// The completer polls while calls came within kPollFor instead of being woken for each work:
// every kPollMin at first, twice as long after each poll that found nothing left to it (the
// callers drove their works), up to kPollMax. It leaves a work younger than kCallerGrace to a
// caller who may be about to wait on it (torch's synchronous calls are start + wait, a few
// microseconds of Python apart).
constexpr auto kPollFor = 50ms;
constexpr std::chrono::microseconds kPollMin{100}, kPollMax{1000};
constexpr auto kCallerGrace = 50us;

}  // namespace

WorkQueue::WorkQueue() : completer_([this] { run_completer(); }) {}

WorkQueue::~WorkQueue() { stop(); }

void WorkQueue::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  // Python destroys the group holding the GIL; the completer, finishing its last works, may
  // need it to free their tensors.
  ReleaseGilIfHeld gil;
  if (completer_.joinable()) completer_.join();
}

void WorkQueue::push(c10::intrusive_ptr<ToroidWork> work) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    // Behind another work (async use: nobody may wait soon) or with the completer asleep for
    // good, wake it; while it polls, a work alone is left to the caller's wait.
    wake = !pending_.empty() || completer_state_ == Completer::asleep;
    pending_.push_back(work);
  }
  if (wake) wake_.notify_one();
}

bool WorkQueue::claim_oldest(ToroidWork& work) {
  std::lock_guard lock(mutex_);
  return !pending_.empty() && pending_.front().get() == &work && work.claim();
}

void WorkQueue::retire(ToroidWork& work) {
  c10::intrusive_ptr<ToroidWork> done;  // dropped outside the lock (tensors may need the GIL)
  {
    std::lock_guard lock(mutex_);
    // `work` is the front: claimed by its caller there, and only a work's claimer pops it.
    (void)work;
    done = std::move(pending_.front());
    pending_.pop_front();
    last_active_ = Clock::now();
    if (pending_.empty()) return;  // the completer finds out when it polls
  }
  wake_.notify_one();  // works behind this one are the completer's
}

void WorkQueue::run_completer() {
  std::unique_lock lock(mutex_);
  std::chrono::microseconds poll_every = kPollMin;
  for (;;) {
    if (pending_.empty()) {
      if (stop_) return;
      if (Clock::now() - last_active_ < kPollFor) {
        completer_state_ = Completer::polling;
        wake_.wait_for(lock, poll_every);
        // Nothing left to it (the callers drove their works): poll less often.
        if (pending_.empty() || pending_.front()->claimed())
          poll_every = std::min(2 * poll_every, kPollMax);
      } else {
        completer_state_ = Completer::asleep;
        wake_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      }
      completer_state_ = Completer::busy;
      continue;
    }
    c10::intrusive_ptr<ToroidWork> work = pending_.front();
    const auto moved_on = [&] { return stop_ || pending_.empty() || pending_.front() != work; };
    // Young and alone: its caller may be about to wait on it and drive it itself. Taken by a
    // caller: it is driven. Either way look again later (retire() does not wake us for it,
    // so the caller pays no wake-up).
    const auto grace_ends = work->started + kCallerGrace;
    const bool young = pending_.size() == 1 && Clock::now() < grace_ends;
    if ((young && !stop_) || work->claimed()) {
      completer_state_ = Completer::polling;
      if (young)
        wake_.wait_until(lock, grace_ends, moved_on);
      else
        wake_.wait_for(lock, poll_every, moved_on);
      completer_state_ = Completer::busy;
    } else if (work->claim()) {
      poll_every = kPollMin;  // a work left to the completer: poll sooner while calls come
      lock.unlock();
      work->drive(false);
      lock.lock();
      pending_.pop_front();
      last_active_ = Clock::now();
    }
    // `work` goes outside every lock (it may hold the last references to tensors, whose
    // Python objects need the GIL to be freed).
    lock.unlock();
    work.reset();
    lock.lock();
  }
}

}  // namespace toroid::torch_backend
