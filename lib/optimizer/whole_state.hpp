// The optimizer state as one array per kind of state, independent of the rank count and the
// bucket layout: every tensor's elements end to end in registration order.
//
//   this part's state array:  | bucket 0 own | bucket 1 own | ...   (layout order, sharded)
//   whole array:              | t0 ........ | t1 .... | t2 ......... |   (registration order)
//
// whole_array gathers it (each part contributes its own pieces, zeros elsewhere, and one f32
// all-reduce sums them: exact, since exactly one part holds each element); place_array puts a
// whole array's elements back into this part's pieces. Re-cutting buckets, torch-style state
// dicts and their loading all go through these two.
#pragma once

#include <span>
#include <vector>

#include "optimizer/impl.hpp"

namespace toroid::optimizer {

// Collective when sharded.
std::vector<float> whole_array(const ShardedOptimizer::Impl& s, const Layout& layout,
                               std::span<const float> part_array);
void place_array(const ShardedOptimizer::Impl& s, const Layout& layout,
                 std::span<const float> whole, std::vector<float>& part_array);

}  // namespace toroid::optimizer
