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
//   port bound       what one chip must move through its own links, at the chip with the
//                    fewest: an all-gather chip receives the (p−1)/p of the vector it lacks, a
//                    reduce-scatter chip sends its (p−1)/p of contributions to the others'
//                    blocks, a broadcast chip receives the whole vector, an all-reduce chip
//                    receives at least one value for every element (each sum needs the
//                    others). So T ≥ that / (the chip's link directions · their bandwidth).
//                    On a torus every chip has four and it equals the bandwidth bound; where a
//                    dimension is a line its end chips have one link along it, and the port
//                    bound is above the bandwidth bound for reduce-scatter, all-gather and
//                    broadcast (the multipod: 3 ports at the ends, the bandwidth bound's
//                    16,320 / 4096 = 3.98 a chip, so 4/3 of it)
//   limit            the largest of the four; of_limit = limit / simulated time (1 = at the
//                    limit)
//
//   32x32 torus:  4·32·32 = 4096 link directions; diameter 16 + 16 hops; 4 ports a chip
//   128x32, wraparound along Y only:  X lines 2·127·32 + Y rings 2·32·128 = 16,320; 127 + 16 hops;
//                 3 ports at the line's ends (x = 0 and x = 127), 4 elsewhere
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
  double port_s = 0;
  double limit_s() const { return std::max({bandwidth_s, latency_s, reduction_s, port_s}); }
};

// For the torus of `m` (not its endpoint links); `bytes` = the collective's whole vector.
SimLimit limit_of(const SimModel& m, Collective c, std::uint64_t bytes);

// Link directions along one axis of the torus, over all its rows or columns.
std::uint64_t link_directions(const Torus2D& t, Axis a);

// Link directions out of (and into) the chip that has the fewest along axis `a`: 2 round a ring
// of more than two, 1 at the end of a line or between two chips, 0 on a dimension of one.
int fewest_ports(const Torus2D& t, Axis a);

}  // namespace toroid::model
