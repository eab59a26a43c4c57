#include "api/executor.hpp"

#include <sched.h>

namespace toroid::api {

namespace {

// The executors moved only by their callers. Their mutexes are only ever try-locked while this
// one is held, so no order of locks can deadlock.
std::mutex listed_mutex;
std::vector<Executor*> listed;
// How many listed executors have collectives in flight: the one load a wait pays while none has.
std::atomic<int> busy_listed{0};

}  // namespace

void Executor::note_busy() noexcept {
  const bool busy = listed_ && engine_.in_flight() > 0;
  if (busy == busy_.load(std::memory_order_relaxed)) return;
  busy_.store(busy, std::memory_order_relaxed);
  busy_listed.fetch_add(busy ? 1 : -1, std::memory_order_release);
}

Executor::Executor(MPI_Comm comm) : engine_(comm) {
  int level = MPI_THREAD_MULTIPLE;
  MPI_Query_thread(&level);  // on failure: the safe assumption, locking
  locking_ = level >= MPI_THREAD_MULTIPLE;
  engine_.set_elsewhere(
      {this, [](void* self) noexcept { return busy_besides(static_cast<Executor*>(self)); },
       [](void* self) noexcept { move_besides(static_cast<Executor*>(self)); }});
  std::lock_guard lock(listed_mutex);
  listed.push_back(this);
  listed_ = true;
}

// `self` is held by its caller, so its own count is current.
bool Executor::busy_besides(const Executor* self) noexcept {
  const int busy = busy_listed.load(std::memory_order_acquire);
  return busy > (self && self->busy_ ? 1 : 0);
}

void Executor::move_besides(const Executor* self) noexcept {
  if (!busy_besides(self)) return;
  std::lock_guard lock(listed_mutex);
  for (Executor* e : listed) {
    if (e == self || !e->busy_) continue;  // (a stale busy_ costs one empty round)
    if (!e->locking_) {
      e->engine_.progress();
      e->note_busy();
      continue;
    }
    // Held by another thread: that one moves it.
    if (std::unique_lock held(e->mutex_, std::try_to_lock); held) {
      e->engine_.progress();
      e->note_busy();
    }
  }
}

void Executor::unlist() noexcept {
  std::lock_guard lock(listed_mutex);
  if (listed_) std::erase(listed, this);
  listed_ = false;
  if (busy_.exchange(false)) busy_listed.fetch_sub(1, std::memory_order_release);
}

Executor::~Executor() {
  unlist();
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

void Executor::start_thread(std::string mpi_refusal) {
  if (!mpi_refusal.empty()) engine_.refuse_mpi_when_queued(std::move(mpi_refusal));
  unlist();         // its thread moves it
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
    if (op.use_count() != 1 || op->status() == exec::BoundCollective::Status::active)
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

std::shared_ptr<exec::BoundCollective> Executor::acquire_into(
    std::shared_ptr<exec::BoundCollective>& slot,
    const std::shared_ptr<const schedule::Schedule>& s, const schedule::BufferSet& user,
    const exec::ExecParams& params) {
  Hold hold(*this);
  if (!slot || slot.use_count() != 1 || slot->status() == exec::BoundCollective::Status::active)
    slot = std::make_shared<exec::BoundCollective>();
  slot->bind(s, user, params, engine_);  // its vectors' room is reused
  return slot;
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
  return op.status() != exec::BoundCollective::Status::active;
}

void Executor::wait_all() {
  Hold hold(*this);
  engine_.wait_all();
}

void wait_stock(exec::StockCall& call) {
  if (!Executor::busy_besides(nullptr)) return call.wait();
  while (!call.test()) {
    Executor::move_besides(nullptr);
    sched_yield();
  }
}

}  // namespace toroid::api
