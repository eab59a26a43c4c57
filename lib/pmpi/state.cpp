#include "pmpi/state.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "pmpi/guard.hpp"
#include "pmpi/settings.hpp"
#include "toroid/error.hpp"

namespace toroid::pmpi {
namespace {

// The registry exists only so MPI_Finalize can free what the program did not; the mutex
// covers it and keyval creation, never a collective (two threads may build states on two
// communicators at once, and holding a lock across a collective could deadlock them). Keyed by
// creation, so MPI_Finalize frees in an order that depends on what the program did, not on
// where the heap placed each state (freeing is local anyway: see state.hpp).
std::mutex registry_mutex;
std::map<std::uint64_t, State*> live;
std::uint64_t states_made = 0;
int state_keyval = MPI_KEYVAL_INVALID;
int finalize_keyval = MPI_KEYVAL_INVALID;
std::once_flag keyvals_made;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  throw MpiError(fmt::format("{} failed while attaching toroid's state (MPI error {})", what, rc), rc);
}

int delete_state(MPI_Comm, int, void* value, void*) {
  // ~Communicator frees toroid's communicators; anything collective it did would be toroid's.
  ToroidScope inside;
  auto* s = static_cast<State*>(value);
  {
    std::lock_guard lock(registry_mutex);
    live.erase(s->created);
  }
  delete s;
  return MPI_SUCCESS;
}

int free_all_at_finalize(MPI_Comm, int, void*, void*) {
  std::vector<MPI_Comm> attached;
  {
    std::lock_guard lock(registry_mutex);
    for (auto it = live.rbegin(); it != live.rend(); ++it) attached.push_back(it->second->user);  // newest first
  }
  // Each deletion runs delete_state, which takes the lock: not held here.
  for (MPI_Comm c : attached) PMPI_Comm_delete_attr(c, state_keyval);
  PMPI_Comm_free_keyval(&state_keyval);
  PMPI_Comm_free_keyval(&finalize_keyval);
  return MPI_SUCCESS;
}

void make_keyvals() {
  check(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &state_keyval, nullptr),
        "MPI_Comm_create_keyval");
  check(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_all_at_finalize, &finalize_keyval, nullptr),
        "MPI_Comm_create_keyval");
  check(PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, nullptr), "MPI_Comm_set_attr");
}

std::string_view served_by(const State& s, Collective c) {
  return s.algorithm_for(c) ? "auto" : to_string(s.comm.default_algorithm());
}

void log_choice(const State& s) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  PMPI_Comm_get_name(s.user, name, &len);
  const Settings& set = settings();
  fmt::print(stderr,
             "toroid: {} ({} rank{}): topology {}, all-reduce {}, reduce-scatter {}, all-gather {}, over {}; "
             "calls of {} bytes and more go to toroid, smaller ones to MPI\n",
             len > 0 ? name : "communicator", s.comm.size(), s.comm.size() == 1 ? "" : "s", s.comm.topology().to_string(),
             served_by(s, Collective::allreduce), served_by(s, Collective::reduce_scatter),
             served_by(s, Collective::allgather), s.comm.uses_shared_memory() ? "shared memory" : "MPI",
             set.min_bytes);
  std::fflush(stderr);
}

// TOROID_TOPOLOGY names one shape, but a program has communicators of many sizes (MPI_COMM_SELF,
// the halves of a split). The shape must fit every communicator as large as MPI_COMM_WORLD, so
// a wrong one is still an error; communicators of another size than the shape get `auto`.
Options options_for(MPI_Comm c) {
  Options o;
  const char* text = std::getenv("TOROID_TOPOLOGY");
  if (!text || !*text || std::string_view(text) == "auto") return o;
  const Torus2D shape = Torus2D::parse(text);
  int size = 0, world = 0;
  check(PMPI_Comm_size(c, &size), "MPI_Comm_size");
  check(PMPI_Comm_size(MPI_COMM_WORLD, &world), "MPI_Comm_size");
  if (shape.size() != size && size != world) o.topology = "auto";
  return o;
}

}  // namespace

State::State(MPI_Comm c) : user(c), comm(c, options_for(c)) {}

std::optional<Algorithm> State::algorithm_for(Collective c) const {
  if (implements(comm.default_algorithm(), c)) return std::nullopt;
  return Algorithm::automatic;
}

State& state_of(MPI_Comm comm) {
  std::call_once(keyvals_made, make_keyvals);
  void* value = nullptr;
  int found = 0;
  check(PMPI_Comm_get_attr(comm, state_keyval, &value, &found), "MPI_Comm_get_attr");
  if (found) return *static_cast<State*>(value);

  // Same environment on every rank, so every rank throws here alike.
  if (!settings().error.empty()) throw InvalidArgument(settings().error);
  auto s = std::make_unique<State>(comm);
  {
    // Registered before it is attached, so nothing can throw between attaching and release.
    std::lock_guard lock(registry_mutex);
    s->created = states_made++;
    live.emplace(s->created, s.get());
  }
  if (const int rc = PMPI_Comm_set_attr(comm, state_keyval, s.get()); rc != MPI_SUCCESS) {
    std::lock_guard lock(registry_mutex);
    live.erase(s->created);
    check(rc, "MPI_Comm_set_attr");
  }
  State& attached = *s.release();  // the communicator owns it now
  if (settings().log_info && attached.comm.rank() == 0) log_choice(attached);
  return attached;
}

}  // namespace toroid::pmpi
