// Runs an algorithm's schedules for every rank of a shape through the in-process verifier.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/verifier.hpp"
#include "schedule/build.hpp"

namespace toroid::testing {

struct Shape {
  Torus topology{Torus2D{1, 1}};  // any number of dimensions
  std::vector<int> node_of_rank;  // empty: one node
};

// `axes`: the collective along them (every sub-torus on its own); none: the whole shape.
inline std::string check(Algorithm a, schedule::Collective c, const Shape& shape, std::uint64_t n,
                         bool in_place, DataType t = DataType::i64, ReduceOp op = ReduceOp::sum,
                         model::Traffic* traffic = nullptr, int root = 0,
                         std::optional<Axes> axes = std::nullopt) {
  model::CheckSpec spec{c, shape.topology.chips(), n, in_place, t, op, root, {}};
  if (axes)
    for (int r = 0; r < shape.topology.chips(); ++r) {
      std::vector<int> group = shape.topology.group_along(r, *axes);
      if (group.front() == r) spec.groups.push_back(std::move(group));  // once, from its first
    }
  return model::check_collective(
      spec,
      [&](int r) {
        schedule::Context ctx{r, shape.topology, shape.node_of_rank};
        return schedule::build(a, {c, n, in_place, op == ReduceOp::avg, axes, root}, ctx);
      },
      traffic);
}

}  // namespace toroid::testing
