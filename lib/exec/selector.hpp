// `auto`: which algorithm to run for a collective of a given size on a given shape.
#pragma once

#include <cstdint>

#include "schedule/step.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/topology.hpp"

namespace toroid::exec {

// Crossover points (bytes of the whole vector), measured with toroid-bench on one node;
// see README "auto".
inline constexpr std::uint64_t small_message_bytes = 16 * 1024;    // below: recursive_doubling
inline constexpr std::uint64_t medium_message_bytes = 512 * 1024;  // below: rabenseifner

Algorithm choose_algorithm(schedule::Collective c, std::uint64_t bytes, const Torus2D& t);

}  // namespace toroid::exec
