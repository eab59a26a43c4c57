// What a collective along axes (along.cpp) sees of its sub-torus, shared by the schedules, the
// simulator's model of a group (model_along) and auto's selector of a group.
#pragma once

#include <array>
#include <vector>

#include "toroid/torus.hpp"

namespace toroid::schedule {

using PerDimensionValues = std::array<double, Torus::kMaxDimensions>;

// `into` with its first entries replaced by `from`'s of the dimensions of `t` that `axes` names,
// in order: a per-dimension value (link rate, hop latency) as the sub-torus numbers them.
PerDimensionValues values_along(const PerDimensionValues& from, PerDimensionValues into,
                                const Torus& t, Axes axes);

// The node of each of `members` (ranks of the whole), numbered as they first appear: a group's
// node indices in [0, its size). Empty stays empty (one node).
std::vector<int> nodes_along(const std::vector<int>& node_of_rank, const std::vector<int>& members);

}  // namespace toroid::schedule
