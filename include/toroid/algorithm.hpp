// Names of the collective algorithms a caller can ask for.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "toroid/export.hpp"

TOROID_API_BEGIN
namespace toroid {

enum class Algorithm {
  automatic,           // "auto": chosen per call by a latency/bandwidth cost model
  ring,                // one-directional ring over all ranks in rank order
  bidir_ring,          // ring over all ranks, each block's halves going both ways at once
  torus2d,             // X then Y (then back), each dimension a bidirectional ring or a line
  torus2d_both,        // half the data X-then-Y, half Y-then-X, all four links busy
  hierarchical,        // node-local reduce-scatter, all-reduce across nodes, node-local all-gather
  recursive_doubling,  // log2(p) exchanges of the whole vector (small messages)
  rabenseifner,        // recursive halving reduce-scatter + recursive doubling all-gather
  swing,               // Swing: halving with short-cut ring peers, every torus port at once
  swing_latency,       // Swing's peers, the whole vector each step (small messages)
  mpi,                 // the stock MPI collective of the same MPI library
  direct,              // all-to-all: every rank's block straight to its rank
  bruck,               // all-to-all: ceil(log2 p) rounds to rank + 2^k, blocks aggregated
};

inline constexpr Algorithm all_algorithms[] = {Algorithm::automatic,
                                               Algorithm::ring,
                                               Algorithm::bidir_ring,
                                               Algorithm::torus2d,
                                               Algorithm::torus2d_both,
                                               Algorithm::hierarchical,
                                               Algorithm::recursive_doubling,
                                               Algorithm::rabenseifner,
                                               Algorithm::swing,
                                               Algorithm::swing_latency,
                                               Algorithm::mpi,
                                               Algorithm::direct,
                                               Algorithm::bruck};

enum class Collective { allreduce, reduce_scatter, allgather, broadcast, alltoall };
inline constexpr Collective all_collectives[] = {Collective::allreduce, Collective::reduce_scatter,
                                                 Collective::allgather, Collective::broadcast,
                                                 Collective::alltoall};

// Whether `a` is a schedule toroid runs: every algorithm but auto (which chooses one) and mpi
// (the MPI library's own collective).
inline constexpr bool has_schedule(Algorithm a) noexcept {
  return a != Algorithm::automatic && a != Algorithm::mpi;
}

// Every algorithm with a schedule, in all_algorithms' order: what the verifier, the simulator
// and the schedule tests iterate over.
inline constexpr auto scheduled_algorithms = [] {
  std::array<Algorithm, std::size(all_algorithms) - 2> out{};  // all but automatic and mpi
  std::size_t n = 0;
  for (Algorithm a : all_algorithms)
    if (has_schedule(a)) out[n++] = a;
  return out;
}();

std::string_view to_string(Algorithm a) noexcept;
std::string_view to_string(Collective c) noexcept;
// Whether `a` has a schedule (or stock call) for collective `c`: hierarchical, recursive_doubling,
// rabenseifner and swing implement all-reduce of the reductions; broadcast has ring (two chains
// around the rank ring), torus2d (row chains, then column chains), recursive_doubling (a
// binomial tree), mpi and auto; all-to-all has direct (every block straight to its rank), bruck
// (ceil(log2 p) rounds, blocks aggregated), torus2d (one phase per dimension, blocks
// aggregated), torus2d_both (the same, a part per dimension order so every dimension is busy),
// ring (torus2d_both's parts, each phase relayed chip to chip: neighbours only), hierarchical
// (inside the nodes, then one message per node), mpi and auto; direct and bruck have all-to-all
// only.
bool implements(Algorithm a, Collective c) noexcept;
// Accepts the names above ("auto", "ring", ...); throws InvalidArgument listing the valid ones.
Algorithm parse_algorithm(std::string_view text);

}  // namespace toroid
TOROID_API_END
