#include "exec/engine.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "exec/backoff.hpp"
#include "exec/stuck.hpp"
#include "exec/tracer.hpp"
#include "mpi_base/progress.hpp"
#include "schedule/wait_graph.hpp"
#include "toroid/error.hpp"

namespace toroid::exec {

using schedule::Kind;
using schedule::Wait;

Channel& Engine::channel(bool sends, int peer, int tag) {
  return channels_[schedule::channel_key(sends, peer, tag)];
}

void Engine::start(const std::shared_ptr<BoundCollective>& op, bool move_now) {
  if (op->status_ == BoundCollective::Status::active)
    throw InvalidArgument("a collective was started while it is still active");
  if (!move_now && op->mpi_tasks_ > 0 && !mpi_refused_.empty()) {
    int me = 0;
    MPI_Comm_rank(comm_, &me);
    throw InvalidArgument(
        fmt::format("{} on rank {}: {}", op->params_.what.text(), me, mpi_refused_));
  }
  op->status_ = BoundCollective::Status::active;
  op->error_ = nullptr;
  op->first_open_ = 0;
  if (tracer_) op->trace_call_ = tracer_->begin_call(op->params_.what.text(), op->params_.bytes);
  if (op->single_copy_) {
    op->single_copy_->restart();
    single_copies_.push_back(op.get());
  }
  for (Task& t : op->tasks_) {
    t.started = t.finished = false;
    t.next_on_channel = nullptr;
    if (t.via == Via::mpi) t.mpi.reset();
    if (t.via == Via::shm) t.shm.done = 0;
    if (!t.channel) continue;
    if (t.channel->tail)
      t.channel->tail->next_on_channel = &t;
    else
      t.channel->head = &t;
    t.channel->tail = &t;
  }
  shm_open_ += op->shm_tasks_;
  if (!move_now) {
    active_.push_back(op);
    return;
  }
  // Moved first and listed only when it is still active: an op that ends in its first round
  // (all its steps local, or a small one whose peers were there already) is never listed.
  try {
    advance(*op);
  } catch (...) {
    active_.push_back(op);  // failed with the others that are in flight
    fail_all(std::current_exception());
    return;
  }
  if (op->status_ == BoundCollective::Status::active) active_.push_back(op);
}

bool Engine::can_start(const BoundCollective& op, const Task& t) const {
  if (t.channel && t.channel->head != &t) return false;
  const schedule::Schedule& s = *op.schedule_;
  const schedule::Step& st = *t.step;
  for (std::uint32_t k = 0; k < st.dep_count; ++k) {
    const schedule::Dep& d = s.deps[st.dep_begin + k];
    const Task& g = op.tasks_[d.step];
    if (!schedule::lets_go(d.wait, g.started, g.finished)) return false;
  }
  return true;
}

std::size_t Engine::follow_limit(const BoundCollective& op, const Task& t) const {
  const schedule::Schedule& s = *op.schedule_;
  const schedule::Step& st = *t.step;
  std::size_t limit = t.bytes;
  for (std::uint32_t k = 0; k < st.dep_count; ++k) {
    const schedule::Dep& d = s.deps[st.dep_begin + k];
    if (d.wait != Wait::follow) continue;
    const std::size_t off = d.offset * op.buf_.elem_size, ready = op.tasks_[d.step].ready();
    limit = std::min(limit, ready > off ? ready - off : 0);
  }
  return limit;
}

template <bool kTrace>
void Engine::start_task(BoundCollective& op, Task& t) {
  t.started = true;
  if constexpr (kTrace) t.trace_start_us = tracer_->now_us();
  switch (t.via) {
    case Via::local:
      if (t.carried) break;  // done by the send that carries it (carry_local_copies)
      run_local_step(*t.step, op.buf_, op.params_.type, op.copy_, op.reduce_);
      t.finished = true;
      if constexpr (kTrace) trace_step(op, t);
      break;
    case Via::mpi:
      t.mpi.start(requests_, comm_);
      probing_ += t.mpi.probing();
      break;
    case Via::shm:
      break;
  }
}

void Engine::trace_step(const BoundCollective& op, const Task& t) {
  const schedule::Step& st = *t.step;
  // (A local step's task carries no byte count: the trace takes its destination's.)
  tracer_->step({t.trace_start_us, tracer_->now_us(), op.trace_call_,
                 static_cast<std::uint32_t>(&t - op.tasks_.data()), st.phase, st.peer, st.tag,
                 t.via == Via::local ? st.dst.count * op.buf_.elem_size : t.bytes,
                 schedule::to_string(st.kind).data(),
                 t.via == Via::shm   ? "shm"
                 : t.via == Via::mpi ? "mpi"
                                     : "local"});
}

template <bool kTrace>
bool Engine::advance_as(BoundCollective& op) {
  if (op.single_copy_) {
    if (single_copies_.front() != &op) return false;  // an earlier one first
    const bool moved = op.single_copy_->advance();
    if (op.single_copy_->finished()) {
      op.status_ = BoundCollective::Status::done;
      single_copies_.pop_front();
      if constexpr (kTrace) tracer_->end_call(op.trace_call_);
    }
    return moved;
  }
  bool moved = false;
  std::vector<Task>& tasks = op.tasks_;
  for (std::size_t i = op.first_open_; i < tasks.size(); ++i) {
    Task& t = tasks[i];
    if (t.finished) continue;
    if (!t.started) {
      if (!can_start(op, t)) continue;
      start_task<kTrace>(op, t);
      moved = true;
      if (t.finished) continue;
    }
    if (t.via == Via::local) continue;  // carried: its send finishes it
    const std::size_t limit = follow_limit(op, t);
    if (t.via == Via::shm) {
      if (t.shm.sends()) {
        moved |= t.shm.push(limit);
      } else {
        ShmTransfer* relay = nullptr;
        if (t.relay >= 0) {
          Task& r = tasks[static_cast<std::size_t>(t.relay)];
          if (!r.started && can_start(op, r)) start_task<kTrace>(op, r);
          if (r.started && !r.finished) relay = &r.shm;
        }
        moved |= t.shm.pop(op.reduce_, limit, relay, op.reduce_copy_);
      }
      if (t.shm.finished()) {
        t.finished = true;
        --shm_open_;
        if constexpr (kTrace) trace_step(op, t);
        if (t.carries >= 0) {
          Task& c = tasks[static_cast<std::size_t>(t.carries)];
          c.finished = true;
          if constexpr (kTrace) trace_step(op, c);
        }
      }
    } else {
      const bool probed = t.mpi.probing();
      moved |= t.mpi.advance(requests_, comm_, limit, op.reduce_);
      probing_ -= probed && !t.mpi.probing();
      if (t.mpi.finished()) {
        t.finished = true;
        if constexpr (kTrace) trace_step(op, t);
      }
    }
    if (t.channel && t.channel->head == &t && t.issued()) {
      t.channel->head = t.next_on_channel;
      if (!t.channel->head) t.channel->tail = nullptr;
    }
  }
  // Relays finished inside a receive's pop, and MPI steps finished by completions, are noticed
  // above on the next round; the op ends when every task has.
  while (op.first_open_ < tasks.size() && tasks[op.first_open_].finished) ++op.first_open_;
  if (op.first_open_ == tasks.size()) {
    op.status_ = BoundCollective::Status::done;
    if (op.schedule_->exact_messages) fail_on_mismatch(op);
    if constexpr (kTrace) tracer_->end_call(op.trace_call_);
  }
  return moved;
}

// An exact-message collective (alltoallv) whose receives did not all bring the size this rank
// expects fails alone, once all its transfers are done: its peers' counts disagree with its own,
// which is the caller's error (the ops beside it are not touched).
void Engine::fail_on_mismatch(BoundCollective& op) const {
  for (const Task& t : op.tasks_) {
    if (t.via != Via::mpi || !t.mpi.mismatch().found) continue;
    const MpiTransfer::Mismatch& m = t.mpi.mismatch();
    const std::size_t es = op.buf_.elem_size;
    int me = 0;
    MPI_Comm_rank(comm_, &me);
    const int peer = t.step->peer;
    const std::string sent =
        fmt::format("{} element{}", m.arrived / es, m.arrived / es == 1 ? "" : "s");
    op.status_ = BoundCollective::Status::failed;
    op.error_ = std::make_exception_ptr(InvalidArgument(fmt::format(
        "{} on rank {}: rank {} sent {} to rank {}, whose receive count for rank {} is {}: a "
        "send count and the matching receive count must be equal",
        op.params_.what.text(), me, peer, sent, me, peer, t.bytes / es)));
    return;
  }
}

bool Engine::progress() {
  if (active_.empty()) return false;
  bool moved = false;
  try {
    moved = requests_.test() > 0;
    for (std::size_t i = 0; i < active_.size(); ++i) moved |= advance(*active_[i]);
  } catch (...) {
    fail_all(std::current_exception());
    return true;
  }
  std::erase_if(active_, [](const std::shared_ptr<BoundCollective>& o) {
    return o->status_ != BoundCollective::Status::active;
  });
  return moved;
}

void Engine::fail_all(std::exception_ptr e) {
  for (auto& op : active_) {
    op->status_ = BoundCollective::Status::failed;
    op->error_ = e;
  }
  active_.clear();
  single_copies_.clear();
  for (auto& [key, ch] : channels_) ch = {};
  requests_.abandon();
  shm_open_ = 0;
  probing_ = 0;
}

void Engine::wait_until_ended(BoundCollective& op) {
  Backoff backoff(op.params_.timeout_s);
  while (op.status_ == BoundCollective::Status::active) {
    if (progress()) {
      backoff.moved();
      continue;
    }
    if (op.status_ != BoundCollective::Status::active) break;
    // Only MPI can move now: block inside it, unless the watchdog needs to look or other
    // engines have collectives that only this thread may be moving.
    if (shm_open_ == 0 && probing_ == 0 && single_copies_.empty() && requests_.open() > 0 &&
        op.params_.timeout_s <= 0 && !(elsewhere_.busy && elsewhere_.busy(elsewhere_.context))) {
      try {
        requests_.wait_some();
      } catch (...) {
        fail_all(std::current_exception());
      }
      continue;
    }
    if (backoff.idle()) stuck(op);
    // Waiting on peers: the program's MPI operations and other communicators' collectives
    // move meanwhile, as inside a stock MPI_Wait (a peer may be waiting on one of them before
    // it can take part in this very collective).
    if (backoff.time_to_move_elsewhere()) move_elsewhere();
  }
  if (op.status_ == BoundCollective::Status::failed) std::rethrow_exception(op.error_);
}

void Engine::move_elsewhere() noexcept {
  poke_mpi_progress(comm_);
  if (elsewhere_.move) elsewhere_.move(elsewhere_.context);
}

bool Engine::test(BoundCollective& op) {
  if (op.status_ == BoundCollective::Status::active && !progress() &&
      op.status_ == BoundCollective::Status::active) {
    // As MPI_Test would (the program may poll this and nothing else), every so many tests.
    if (++idle_tests_ % Backoff::kElsewhereEvery == 0) move_elsewhere();
    Backoff::after_idle_test();
  }
  if (op.status_ == BoundCollective::Status::failed) std::rethrow_exception(op.error_);
  return op.status_ != BoundCollective::Status::active;
}

void Engine::wait_all() {
  while (!active_.empty()) wait(*active_.front());
}

std::string Engine::waiting_lines() const {
  std::string lines;
  int shown = 0;
  for (const auto& op : active_)
    if (op->single_copy_) lines += op->single_copy_->waiting();
  for (const auto& op : active_)
    for (std::size_t i = op->first_open_; i < op->tasks_.size() && shown < 8; ++i) {
      const Task& t = op->tasks_[i];
      if (t.finished || t.via == Via::local) continue;
      lines += fmt::format("\n  waiting: {}{} ({}, {}, byte {} of {})", schedule::describe(*t.step),
                           t.started ? "" : " (not started)", op->params_.what.text(),
                           t.via == Via::shm ? "shared memory" : "mpi", t.ready(), t.bytes);
      ++shown;
    }
  return lines;
}

void Engine::stuck(const BoundCollective& op) const {
  // first_open_ is the op's first unfinished step (advance keeps it there).
  const std::uint32_t phase =
      op.first_open_ < op.tasks_.size() ? op.tasks_[op.first_open_].step->phase : 0;
  abort_stuck(op.params_, comm_, phase, waiting_lines());
}

}  // namespace toroid::exec
