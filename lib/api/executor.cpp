#include "api/executor.hpp"

#include <sched.h>

namespace toroid::api {

Executor::Executor(MPI_Comm comm) : engine_(comm) {
  int level = MPI_THREAD_MULTIPLE;
  MPI_Query_thread(&level);  // on failure: the safe assumption, locking
  locking_ = level >= MPI_THREAD_MULTIPLE;
}

Executor::~Executor() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

namespace {
thread_local bool progress_thread = false;
}  // namespace

bool on_progress_thread() noexcept { return progress_thread; }

void Executor::set_tracer(exec::Tracer* t) {
  Hold hold(*this);
  engine_.set_tracer(t);
}

void Executor::start_thread() {
  locking_ = true;  // set before the thread exists: it and the caller share the engine now
  thread_ = std::thread([this] {
    progress_thread = true;
    run_thread();
  });
}

// Rounds while something is in flight; spinning a little between idle rounds, then yielding
// the core, and sleeping while nothing is in flight.
void Executor::run_thread() {
  std::unique_lock lock(mutex_);
  int idle = 0;
  while (!stop_) {
    if (engine_.in_flight() == 0) {
      wake_.wait(lock, [&] { return stop_ || engine_.in_flight() > 0; });
      continue;
    }
    const bool moved = engine_.progress();
    idle = moved ? 0 : idle + 1;
    if (callers_ > 0 || idle > 64) {
      lock.unlock();
      sched_yield();
      lock.lock();
    }
  }
}

std::shared_ptr<exec::BoundCollective> Executor::acquire(
    const std::shared_ptr<const schedule::Schedule>& s, std::uint64_t serial,
    const schedule::BufferSet& user, const exec::ExecParams& params, bool own) {
  constexpr std::size_t kPool = 16;
  Hold hold(*this);
  if (own) {
    auto op = std::make_shared<exec::BoundCollective>();
    op->bind(s, user, params, engine_);
    return op;
  }
  std::shared_ptr<exec::BoundCollective>* free = nullptr;
  for (auto& op : pool_) {
    if (op.use_count() != 1 || op->state() == exec::BoundCollective::State::active)
      continue;  // in flight or held
    if (op->bound_to(*s, serial, user, params)) return op;
    if (!free) free = &op;
  }
  std::shared_ptr<exec::BoundCollective> op;
  if (free)
    op = *free;
  else {
    op = std::make_shared<exec::BoundCollective>();
    if (pool_.size() < kPool) pool_.push_back(op);
  }
  op->bind(s, user, params, engine_);
  op->set_serial(serial);
  return op;
}

void Executor::start(const std::shared_ptr<exec::BoundCollective>& op) {
  {
    Hold hold(*this);
    engine_.start(op, !thread_.joinable());
  }
  if (thread_.joinable()) wake_.notify_one();
}

void Executor::run(const std::shared_ptr<exec::BoundCollective>& op) {
  Hold hold(*this);
  engine_.start(op, true);
  engine_.wait(*op);
}

void Executor::run_on(const std::shared_ptr<exec::BoundCollective>& op,
                      const schedule::BufferSet& user) {
  Hold hold(*this);
  op->rebind(user);
  engine_.start(op, true);
  engine_.wait(*op);
}

void Executor::wait(exec::BoundCollective& op) {
  Hold hold(*this);
  engine_.wait(op);
}

bool Executor::test(exec::BoundCollective& op) {
  Hold hold(*this);
  return engine_.test(op);
}

bool Executor::finished(const exec::BoundCollective& op) {
  Hold hold(*this);
  return op.state() != exec::BoundCollective::State::active;
}

void Executor::wait_all() {
  Hold hold(*this);
  engine_.wait_all();
}

}  // namespace toroid::api
