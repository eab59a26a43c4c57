// The physical limit of a collective on a modeled torus: what no algorithm can beat there, set
// beside every simulated time (toroid-sim's bound, floor and of_limit columns).
//
//   bandwidth bound  without coding, every element of an all-reduce crosses at least 2(p−1)
//                    link directions (a reduce tree and a broadcast tree over p chips); a
//                    reduce-scatter, all-gather or broadcast at least p−1. So
//                      T ≥ crossings · bytes / Σ (link directions · their bandwidth)
//   latency floor    the diameter (the farthest two chips, each dimension the short way round
//                    a ring, end to end along a line) times the hop latency
//   reduction bound  an all-reduce or reduce-scatter sums p contributions of every element:
//                    p−1 pairwise reductions each, (p−1)·bytes of reducer input in all, spread
//                    over p chips' reducers at best. So T ≥ (p−1)/p · bytes / reduce_bw. It
//                    binds where the reducer is slower than the links feeding it (a 32x32
//                    reduce-scatter: four 80 GB/s links into a 300 GB/s reducer)
//   limit            the largest of the three; of_limit = limit / simulated time (1 = at the
//                    limit)
//
//   32x32 torus:  4·32·32 = 4096 link directions; diameter 16 + 16 hops
//   128x32, wraparound along Y only:  X lines 2·127·32 + Y rings 2·32·128 = 16,320; 127 + 16 hops
//
// A dimension of 2 has one link between its chips (its two directions), with or without
// wraparound: the simulator routes both ways over it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/simulator.hpp"

namespace toroid::model {

struct SimLimit {
  double bandwidth_s = 0;
  double latency_s = 0;
  double reduction_s = 0;  // 0 for the collectives that do not reduce
  double limit_s() const { return std::max({bandwidth_s, latency_s, reduction_s}); }
};

// For the torus of `m` (not its endpoint links); `bytes` = the collective's whole vector.
SimLimit limit_of(const SimModel& m, Collective c, std::uint64_t bytes);

// Link directions along one axis of the torus, over all its rows or columns.
std::uint64_t link_directions(const Torus2D& t, Axis a);

}  // namespace toroid::model
