// Runs an algorithm's schedules for every rank of a shape through the in-process verifier.
#pragma once

#include <string>

#include "model/verifier.hpp"
#include "schedule/build.hpp"

namespace toroid::testing {

struct Shape {
  Torus topology{Torus2D{1, 1}};  // any number of dimensions
  std::vector<int> node_of_rank;  // empty: one node
};

inline std::string check(Algorithm a, schedule::Collective c, const Shape& shape, std::uint64_t n,
                         bool in_place, DataType t = DataType::i64, ReduceOp op = ReduceOp::sum,
                         model::Traffic* traffic = nullptr, int root = 0) {
  model::CheckSpec spec{c, shape.topology.chips(), n, in_place, t, op, root};
  return model::check_collective(
      spec,
      [&](int r) {
        schedule::Context ctx{r, shape.topology, shape.node_of_rank};
        return schedule::build(a, {c, n, in_place, op == ReduceOp::avg, std::nullopt, root}, ctx);
      },
      traffic);
}

}  // namespace toroid::testing
