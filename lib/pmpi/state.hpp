// Per-communicator toroid state, kept as an attribute of the caller's communicator.
//
// TOROID_TOPOLOGY is used for communicators of its size and required to fit MPI_COMM_WORLD;
// others get `auto`. TOROID_NODES is used where its counts add up to the communicator's size;
// others see their real nodes (see options_for in state.cpp).
//
// Lifetime: built at the first call toroid serves on a communicator (toroid::Communicator is
// collective; every rank reaches that same call because the serve decision is alike on all
// ranks), freed by the keyval's delete callback when the communicator is freed
// (MPI_Comm_free, MPI_Comm_disconnect). Communicators still alive at MPI_Finalize (MPI_COMM_WORLD
// and any the program never freed) are freed from a delete callback on MPI_COMM_SELF, which
// MPI runs first thing in MPI_Finalize, while every MPI call still works. Duplicates made with
// MPI_Comm_dup do not inherit the state (MPI_COMM_NULL_COPY_FN): each builds its own.
//
// Freeing a state is local: it waits for no other rank (toroid::Communicator's destructor is
// local, see communicator.hpp). It has to be, because each rank gets there on its own: the
// program frees communicators in its own order, a garbage collector (mpi4py) whenever it runs,
// and MPI_Finalize walks whatever is left in an order no other rank shares.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "toroid/communicator.hpp"

namespace toroid::pmpi {

// What the preload keeps for one of the program's communicators (an MPI attribute on it): the toroid
// communicator that serves its calls, and what it chose.
struct AttachedComm {
  explicit AttachedComm(MPI_Comm user);
  // The algorithm to ask toroid for: the configured one (TOROID_ALGO) where it implements the
  // collective, else auto. A program's MPI_Allgather keeps working under TOROID_ALGO=rabenseifner.
  std::optional<Algorithm> algorithm_for(Collective c) const;

  // The communicator the served non-blocking calls run on: the same options with a progress
  // thread, built at the first one (every rank reaches it alike: plan.hpp). Blocking calls
  // stay on `comm`, where they cost no thread hand-off.
  Communicator& background();

  MPI_Comm user;               // the caller's communicator this state is attached to
  std::string emulated_nodes;  // TOROID_NODES where it fits this communicator's size
  std::string unfit_nodes;     // TOROID_NODES where it does not (the real nodes are used)
  int unfit_ranks = 0;         // what TOROID_NODES adds up to
  Options options;
  Communicator comm;
  std::unique_ptr<Communicator> background_;
  std::uint64_t created = 0;  // this process's count of states made before it
};

// The state of `comm`, built on first use (see above). Throws toroid::Error.
AttachedComm& state_of(MPI_Comm comm);

}  // namespace toroid::pmpi
