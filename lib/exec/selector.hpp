// `auto`: which algorithm to run for a collective of a given size on a given shape.
#pragma once

#include <cstdint>
#include <string>

#include "schedule/step.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/topology.hpp"

namespace toroid::exec {

// Crossover points (bytes of the whole vector), measured with toroid-bench on one node;
// docs/algorithms.md, section `auto`, and the one-node tables in README, "Performance".
// At 4 ranks (2x2) recursive doubling led up to 64 KiB, Rabenseifner at 256 KiB - 1 MiB, the
// bandwidth algorithms from 4 MiB; at 2 ranks recursive doubling (one exchange) led up to 1 MiB.
inline constexpr std::uint64_t small_message_bytes = 128 * 1024;        // below: recursive_doubling
inline constexpr std::uint64_t medium_message_bytes = 2 * 1024 * 1024;  // below: rabenseifner
// Broadcast: below this the binomial tree (log2 p rounds), from here the pipelined chains.
inline constexpr std::uint64_t broadcast_tree_bytes = 64 * 1024;

Algorithm choose_algorithm(schedule::Collective c, std::uint64_t bytes, const Torus2D& t);

// What choose_algorithm picks for c on t, size class by size class (bytes of the whole vector):
// e.g. "recursive_doubling below 128 KiB, rabenseifner below 2 MiB, torus2d_both from 2 MiB", or
// one name where every size gets the same.
std::string describe_choice(schedule::Collective c, const Torus2D& t);

}  // namespace toroid::exec
