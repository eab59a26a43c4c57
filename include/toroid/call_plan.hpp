// What a collective call runs, before it runs: Communicator::plan answers with the rule every
// call follows (lib/api/call_path.cpp), so a benchmark's rows, a test or a log can say which
// path and which algorithm a call took without reaching into the library.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "toroid/algorithm.hpp"
#include "toroid/export.hpp"
#include "toroid/torus.hpp"
#include "toroid/types.hpp"

TOROID_API_BEGIN
namespace toroid {

// schedule: a schedule run by the engine (transport.md). stock: the MPI library's own
// collective (Algorithm::mpi). On one node, for `auto` over the whole communicator, the node's
// control block instead (transport.md, "Single-copy"): staged (small calls, any memory),
// single_copy (every rank's buffers from Communicator::allocate), remote_reads (an all-to-all
// reading its peers' buffers where they are).
enum class CallPath { schedule, stock, staged, single_copy, remote_reads };
std::string_view to_string(CallPath p) noexcept;

// A call's arguments as far as its path depends on them.
struct CallQuery {
  Collective collective = Collective::allreduce;
  std::uint64_t count = 0;  // the whole vector's elements (alltoall: all blocks; alltoallv:
                            // this rank's input)
  DataType type = DataType::f32;
  Algorithm algorithm = Algorithm::automatic;
  std::optional<Axes> axes;     // along these dimensions only (the axis collectives)
  bool toroid_buffers = false;  // input and output from Communicator::allocate, on every rank
  bool varying_blocks = false;  // an alltoallv (per-peer counts)
};

struct CallPlan {
  CallPath path = CallPath::schedule;
  // The schedule's algorithm (auto resolved by its model; an alltoallv's auto is direct),
  // Algorithm::mpi on the stock path, Algorithm::automatic on the node paths (no schedule).
  Algorithm algorithm = Algorithm::automatic;
  // auto's model of the schedule on this communicator's links, in seconds; empty on the other
  // paths and for alltoallv (the model prices equal blocks).
  std::optional<double> predicted_seconds;
};

// Calls this rank ran through the node's control block, by path (a diagnostic).
struct NodePathCalls {
  std::uint64_t staged = 0, single_copy = 0, remote_reads = 0;
};

}  // namespace toroid
TOROID_API_END
