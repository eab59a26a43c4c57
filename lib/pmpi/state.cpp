#include "pmpi/state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "api/internal.hpp"
#include "core/config_values.hpp"
#include "pmpi/guard.hpp"
#include "pmpi/requests.hpp"
#include "pmpi/settings.hpp"
#include "toroid/error.hpp"
#include "toroid/settings.hpp"
#include "toroid/torus.hpp"

namespace toroid::pmpi {
namespace {

// The registry exists only so MPI_Finalize can free what the program did not; the mutex
// covers it and keyval creation, never a collective (two threads may build states on two
// communicators at once, and holding a lock across a collective could deadlock them). Keyed by
// creation, so MPI_Finalize frees in an order that depends on what the program did, not on
// where the heap placed each state (freeing is local anyway: see state.hpp).
std::mutex registry_mutex;
std::map<std::uint64_t, AttachedComm*> live;
std::uint64_t states_made = 0;
int state_keyval = MPI_KEYVAL_INVALID;
int finalize_keyval = MPI_KEYVAL_INVALID;
std::once_flag keyvals_made;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  throw MpiError(fmt::format("{} failed while attaching toroid's state (MPI error {})", what, rc),
                 rc);
}

int delete_state(MPI_Comm, int, void* value, void*) {
  // ~Communicator frees toroid's communicators; anything collective it did would be toroid's.
  ToroidScope inside;
  auto* s = static_cast<AttachedComm*>(value);
  drain_served_requests(s->user);  // MPI lets a communicator be freed with requests pending
  {
    std::lock_guard lock(registry_mutex);
    live.erase(s->created);
  }
  delete s;
  return MPI_SUCCESS;
}

int free_all_at_finalize(MPI_Comm, int, void*, void*) {
  drain_served_requests();  // served requests the program never waited for
  std::vector<MPI_Comm> attached;
  {
    std::lock_guard lock(registry_mutex);
    for (auto it = live.rbegin(); it != live.rend(); ++it)
      attached.push_back(it->second->user);  // newest first
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
  check(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_all_at_finalize, &finalize_keyval,
                                nullptr),
        "MPI_Comm_create_keyval");
  check(PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, nullptr), "MPI_Comm_set_attr");
}

std::string served_by(const AttachedComm& s, Collective c) {
  const Algorithm a = s.algorithm_for(c).value_or(s.comm.default_algorithm());
  if (a != Algorithm::automatic) return std::string(to_string(a));
  return fmt::format("auto ({})", internal::impl(s.comm).selector->describe(c));
}

// Where rank 0's steps travel: what its node shares, and MPI to ranks elsewhere.
std::string links_of(const Communicator& c) {
  const exec::ShmLinks* links = internal::impl(c).shm_links.get();
  const int shared = links ? links->local_ranks() : 0;
  if (c.size() == 1) return "none";
  if (shared < 2) return "MPI";
  if (shared == c.size()) return "shared memory";
  return fmt::format("shared memory among its node's {} ranks, MPI to the other {}", shared,
                     c.size() - shared);
}

std::string nodes_of(const AttachedComm& s) {
  const int n = s.comm.nodes();
  std::vector<std::string> notes;
  if (!s.emulated_nodes.empty()) notes.push_back("TOROID_NODES " + s.emulated_nodes);
  if (!s.unfit_nodes.empty())
    notes.push_back(
        fmt::format("real: TOROID_NODES {} is for {} ranks", s.unfit_nodes, s.unfit_ranks));
  if (n > 1) notes.push_back(fmt::format("ranks {}", s.comm.node_placement()));
  const std::string count = fmt::format("{} node{}", n, n == 1 ? "" : "s");
  return notes.empty() ? count : fmt::format("{} ({})", count, fmt::join(notes, "; "));
}

void log_choice(const AttachedComm& s) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  PMPI_Comm_get_name(s.user, name, &len);
  const PreloadConfig& set = preload_config();
  // 0-count calls are always forwarded, so the smallest served call has 1 byte.
  const std::uint64_t smallest = std::max<std::uint64_t>(set.min_bytes, 1);
  fmt::print(stderr,
             "toroid: {} ({} rank{}{}): topology {}, {}, links {}; all-reduce {}, reduce-scatter "
             "{}, all-gather "
             "{}; calls of {} byte{} and more go to toroid, smaller ones to MPI\n",
             len > 0 ? name : "communicator", s.comm.size(), s.comm.size() == 1 ? "" : "s",
             s.comm.size() == 1 && s.user != MPI_COMM_WORLD
                 ? "; other ranks' 1-rank communicators not reported"
                 : "",
             s.comm.shape().to_string(), nodes_of(s), links_of(s.comm),
             served_by(s, Collective::allreduce), served_by(s, Collective::reduce_scatter),
             served_by(s, Collective::allgather), smallest, smallest == 1 ? "" : "s");
  std::fflush(stderr);
}

// Once per communicator, on its rank 0; a 1-rank communicator (every rank may have some, like
// MPI_COMM_SELF) only on world rank 0, or a job would print one line per rank.
bool reports(const AttachedComm& s) {
  if (s.comm.rank() != 0) return false;
  if (s.comm.size() > 1 || s.user == MPI_COMM_WORLD) return true;
  int world_rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  return world_rank == 0;
}

int size_of_comm(MPI_Comm c) {
  int size = 0;
  check(PMPI_Comm_size(c, &size), "MPI_Comm_size");
  return size;
}

// A program has communicators of many sizes (MPI_COMM_SELF, the halves of a split), but
// TOROID_TOPOLOGY and TOROID_NODES each describe one size. TOROID_TOPOLOGY must still fit every
// communicator as large as MPI_COMM_WORLD, so a wrong one is an error; communicators of another
// size than the shape get `auto`. TOROID_NODES applies where its counts add up to the
// communicator's size, and the real nodes elsewhere (the log line says which).
Options options_for(MPI_Comm c, std::string& emulated, std::string& unfit, int& unfit_ranks) {
  Options o;
  const int size = size_of_comm(c);
  const char* text = setting_from_environment("TOROID_TOPOLOGY");
  if (text && std::string_view(text) != "auto") {
    const Torus shape = Torus::parse(text);
    if (shape.chips() != size && size != size_of_comm(MPI_COMM_WORLD)) o.topology = "auto";
  }
  if (const char* nodes = setting_from_environment("TOROID_NODES")) {
    const std::vector<int> counts = parse_node_counts(nodes, "TOROID_NODES");
    unfit_ranks = std::accumulate(counts.begin(), counts.end(), 0);
    if (unfit_ranks == size) {
      emulated = nodes;
    } else {
      o.nodes = "real";
      unfit = nodes;
    }
  }
  return o;
}

}  // namespace

AttachedComm::AttachedComm(MPI_Comm c)
    : user(c),
      options(options_for(c, emulated_nodes, unfit_nodes, unfit_ranks)),
      comm(c, options) {}

Communicator& AttachedComm::background() {
  if (!background_) {
    Options o = options;
    o.progress = ProgressMode::thread;
    background_ = std::make_unique<Communicator>(user, o);
  }
  return *background_;
}

std::optional<Algorithm> AttachedComm::algorithm_for(Collective c) const {
  if (implements(comm.default_algorithm(), c)) return std::nullopt;
  return Algorithm::automatic;
}

AttachedComm& state_of(MPI_Comm comm) {
  std::call_once(keyvals_made, make_keyvals);
  void* value = nullptr;
  int found = 0;
  check(PMPI_Comm_get_attr(comm, state_keyval, &value, &found), "MPI_Comm_get_attr");
  if (found) return *static_cast<AttachedComm*>(value);

  // Same environment on every rank, so every rank throws here alike.
  if (!preload_config().error.empty()) throw InvalidArgument(preload_config().error);
  auto s = std::make_unique<AttachedComm>(comm);
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
  AttachedComm& attached = *s.release();  // the communicator owns it now
  if (preload_config().log_info && reports(attached)) log_choice(attached);
  return attached;
}

}  // namespace toroid::pmpi
