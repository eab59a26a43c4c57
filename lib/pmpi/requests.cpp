#include "pmpi/requests.hpp"

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "pmpi/errors.hpp"
#include "pmpi/guard.hpp"
#include "pmpi/report.hpp"
#include "toroid/error.hpp"

namespace toroid::pmpi {
namespace {

struct Served {
  MPI_Comm comm = MPI_COMM_NULL;
  const char* name = "";
  MPI_Request handle = MPI_REQUEST_NULL;
  Request request;
  std::function<void()> finish;
  bool completed = false;  // MPI_Grequest_complete called
  bool freed = false;      // the program called MPI_Request_free on it
  int error = MPI_SUCCESS;
};

// The registry: every served request MPI has not freed yet, by handle. The mutex covers the
// map only, never MPI or toroid calls (MPI calls `release` from inside its own functions).
std::mutex registry_mutex;
std::unordered_map<MPI_Request, std::unique_ptr<Served>> registry;
std::atomic<int> alive{0};
// Persistent collectives, by handle (under registry_mutex too).
struct Persistent {
  MPI_Comm comm = MPI_COMM_NULL;
  const char* name = "";
  Request request;  // empty once retired (its communicator's state was freed)
  std::function<void()> finish;
  bool active = false;
};
std::unordered_map<MPI_Request, std::unique_ptr<Persistent>> persistent;
std::atomic<int> handles{0};

Persistent* persistent_of(MPI_Request r) {
  if (handles.load(std::memory_order_relaxed) == 0 || r == MPI_REQUEST_NULL) return nullptr;
  std::lock_guard lock(registry_mutex);
  auto it = persistent.find(r);
  return it == persistent.end() ? nullptr : it->second.get();
}

// The handle's callbacks: it is complete from the start and holds nothing of its own.
int handle_query(void*, MPI_Status* status) {
  empty_status(status);
  status->MPI_ERROR = MPI_SUCCESS;
  return MPI_SUCCESS;
}
int handle_free(void*) { return MPI_SUCCESS; }

// Ends toroid's collective behind a request once it has finished (waiting for it when
// `block`) and runs its completion step, inside toroid. False while it still runs; what it
// threw goes to `failure` (the request has ended then too).
bool end_collective(Request& r, const std::function<void()>& finish, bool block,
                    std::exception_ptr& failure) noexcept {
  ToroidScope inside;
  try {
    if (!block && !(r.is_complete() && r.test())) return false;
    if (block) r.wait();
    if (finish) finish();
  } catch (...) {
    failure = std::current_exception();
  }
  return true;
}

// Completes an active persistent collective (waiting first when `block`); whether it is
// inactive afterwards. Errors go through the communicator's handler; the code is returned in
// `error`.
bool complete(Persistent& p, bool block, int& error) noexcept {
  if (!p.active) return true;
  std::exception_ptr failure;
  if (!end_collective(p.request, p.finish, block, failure)) return false;
  p.active = false;
  if (failure) error = report_error(p.comm, p.name, failure);
  return true;
}

// Freed requests are settled by one sweeping thread at a time: MPI releases each as it is
// completed, so two threads must never hold the same one.
std::mutex sweep_mutex;

// MPI's callbacks for the generalized request (MPI_Grequest_start).
int query(void* extra, MPI_Status* status) {
  empty_status(status);
  return static_cast<Served*>(extra)->error;
}
int release(void* extra) {  // MPI frees the request: after completion, never before
  ToroidScope inside;       // destroying toroid's request is toroid's business
  std::unique_ptr<Served> gone;
  {
    std::lock_guard lock(registry_mutex);
    auto it = registry.find(static_cast<Served*>(extra)->handle);
    if (it != registry.end()) {
      gone = std::move(it->second);
      registry.erase(it);
      alive.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  return MPI_SUCCESS;  // `gone` (a completed toroid request) is destroyed outside the lock
}
int cancel(void*, int) { return MPI_SUCCESS; }  // nothing to cancel: it completes as usual

// Completes one served request once toroid's collective has finished (waiting for it when
// `block`). Returns whether it is complete.
bool settle_one(Served& s, bool block) noexcept {
  if (s.completed) return true;
  std::exception_ptr failure;
  if (!end_collective(s.request, s.finish, block, failure)) return false;
  if (failure) s.error = report_error(s.comm, s.name, failure);
  s.completed = true;
  PMPI_Grequest_complete(s.handle);  // a freed request is released here (`release`)
  return true;
}

// The served requests among `requests`, and (when `freed`) those the program freed.
std::vector<Served*> find(const MPI_Request* requests, int count, bool freed,
                          MPI_Comm only = MPI_COMM_NULL) {
  std::vector<Served*> found;
  std::lock_guard lock(registry_mutex);
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    auto it = registry.find(requests[i]);
    if (it != registry.end() && !it->second->completed) found.push_back(it->second.get());
  }
  if (freed || only != MPI_COMM_NULL)
    for (auto& [handle, s] : registry)
      if (!s->completed && ((freed && s->freed) || s->comm == only)) found.push_back(s.get());
  return found;
}

// Runs `start` on comm's background communicator, inside toroid; what it threw, if anything.
std::exception_ptr begin(MPI_Comm comm, const std::function<Started(Communicator&)>& start,
                         Request& request, std::function<void()>& finish) noexcept {
  ToroidScope inside;
  try {
    Started started = start(state_of(comm).background());
    request = std::move(started.request);
    finish = std::move(started.finish);
    return nullptr;
  } catch (...) {
    return std::current_exception();
  }
}

}  // namespace

int start_served(MPI_Comm comm, const char* name, MPI_Request* request,
                 const std::function<Started(Communicator&)>& start) noexcept {
  auto s = std::make_unique<Served>();
  s->comm = comm;
  s->name = name;
  if (auto failure = begin(comm, start, s->request, s->finish))
    return report_error(comm, name, failure);
  if (const int rc = PMPI_Grequest_start(query, release, cancel, s.get(), request);
      rc != MPI_SUCCESS) {
    settle_one(*s, true);  // toroid's collective runs on the other ranks: finish it here too
    return rc;
  }
  s->handle = *request;
  {
    std::lock_guard lock(registry_mutex);
    registry.emplace(*request, std::move(s));
    alive.fetch_add(1, std::memory_order_relaxed);
  }
  note_served();
  return MPI_SUCCESS;
}

bool any_served() noexcept {
  return alive.load(std::memory_order_relaxed) > 0 || handles.load(std::memory_order_relaxed) > 0;
}

bool settle(MPI_Request* requests, int count, bool block) noexcept {
  if (alive.load(std::memory_order_relaxed) == 0) return false;
  bool pending = false;
  const std::vector<Served*> mine = find(requests, count, false);
  for (Served* s : mine) pending = !settle_one(*s, block) || pending;
  if (sweep_mutex.try_lock()) {
    for (Served* s : find(nullptr, 0, true)) settle_one(*s, false);
    sweep_mutex.unlock();
  }
  return pending;
}

bool forget_if_served(MPI_Request request) noexcept {
  std::lock_guard lock(registry_mutex);
  auto it = registry.find(request);
  if (it == registry.end()) return false;
  it->second->freed = true;
  return true;
}

void drain_served_requests(MPI_Comm comm) noexcept {
  if (!any_served()) return;
  const std::vector<Served*> left = comm == MPI_COMM_NULL ? [] {
    std::vector<Served*> all;
    std::lock_guard lock(registry_mutex);
    for (auto& [handle, s] : registry)
      if (!s->completed) all.push_back(s.get());
    return all;
  }()
                                                          : find(nullptr, 0, false, comm);
  {
    std::lock_guard sweeping(sweep_mutex);
    for (Served* s : left) settle_one(*s, true);
  }
  // Persistent ones: completed, then retired before the communicator goes.
  std::vector<Persistent*> mine;
  {
    std::lock_guard lock(registry_mutex);
    for (auto& [handle, p] : persistent)
      if (comm == MPI_COMM_NULL || p->comm == comm) mine.push_back(p.get());
  }
  for (Persistent* p : mine) {
    int error = MPI_SUCCESS;
    complete(*p, true, error);
    ToroidScope inside;
    p->request = Request();
    p->finish = nullptr;
  }
}

void empty_status(MPI_Status* status) noexcept {
  if (status == MPI_STATUS_IGNORE) return;
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
}

int init_persistent(MPI_Comm comm, const char* name, MPI_Request* request,
                    const std::function<Started(Communicator&)>& init) noexcept {
  auto p = std::make_unique<Persistent>();
  p->comm = comm;
  p->name = name;
  if (auto failure = begin(comm, init, p->request, p->finish))
    return report_error(comm, name, failure);
  if (const int rc = PMPI_Grequest_start(handle_query, handle_free, cancel, nullptr, request);
      rc != MPI_SUCCESS)
    return rc;
  PMPI_Grequest_complete(*request);
  std::lock_guard lock(registry_mutex);
  persistent.emplace(*request, std::move(p));
  handles.fetch_add(1, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

bool is_persistent(MPI_Request request) noexcept { return persistent_of(request) != nullptr; }

int start_persistent(MPI_Request request) noexcept {
  Persistent& p = *persistent_of(request);
  std::exception_ptr failure;
  {
    ToroidScope inside;
    try {
      if (p.active)
        throw InvalidArgument("MPI_Start on a persistent collective that is still active");
      if (!p.request.persistent())
        throw InvalidArgument(
            "MPI_Start on a persistent collective whose communicator has been freed");
      p.request.start();
      p.active = true;
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (failure) return report_error(p.comm, p.name, failure);
  note_served();
  return MPI_SUCCESS;
}

Outcome complete_persistent(MPI_Request request, bool block, MPI_Status* status) noexcept {
  Persistent& p = *persistent_of(request);
  const bool was_active = p.active;
  int error = MPI_SUCCESS;
  if (!complete(p, block, error)) return Outcome::running;
  empty_status(status);
  if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = error;
  return was_active ? Outcome::completed : Outcome::inactive;
}

bool persistent_finished(MPI_Request request) noexcept {
  Persistent& p = *persistent_of(request);
  ToroidScope inside;
  try {
    return !p.active || p.request.is_complete();
  } catch (...) {
    return true;  // its error comes out of the call that completes it
  }
}

int free_persistent(MPI_Request* request) noexcept {
  Persistent* p = persistent_of(*request);
  int error = MPI_SUCCESS;
  complete(*p, true, error);
  std::unique_ptr<Persistent> gone;
  {
    std::lock_guard lock(registry_mutex);
    auto it = persistent.find(*request);
    gone = std::move(it->second);
    persistent.erase(it);
    handles.fetch_sub(1, std::memory_order_relaxed);
  }
  {
    ToroidScope inside;
    gone.reset();
  }
  const int rc = PMPI_Request_free(request);
  return error != MPI_SUCCESS ? error : rc;
}

}  // namespace toroid::pmpi
