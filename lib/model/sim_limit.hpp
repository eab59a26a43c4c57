// The physical limit of a collective on a modeled torus: what no algorithm can beat there, set
// beside every simulated time (toroid-sim's bound, floor and of_limit columns).
//
//   bandwidth bound  without coding, every element of an all-reduce crosses at least 2(p−1)
//                    link directions (a reduce tree and a broadcast tree over p chips); a
//                    reduce-scatter, all-gather or broadcast at least p−1. So
//                      T ≥ crossings · bytes / Σ (link directions · their bandwidth)
//                    An all-to-all: every block crosses its chips' distance (Σ block-hops over
//                    the same capacity), and the bisection: across the middle of each
//                    dimension the chips below the cut send every chip above it a block,
//                    through one link direction a row on a line (two on a ring), which binds
//                    where a dimension is a line (the multipod's X: 2048 · 2048 blocks through
//                    32 links, 2.5 times the block-hops bound)
//   latency floor    the diameter (the farthest two chips, each dimension the short way round
//                    a ring, end to end along a line) times the hop latency
//   reduction bound  an all-reduce or reduce-scatter sums p contributions of every element:
//                    p−1 pairwise reductions each, (p−1)·bytes of reducer input in all, spread
//                    over p chips' reducers at best. So T ≥ (p−1)/p · bytes / reduce_bw. It
//                    binds where the reducer is slower than the links feeding it (a 32x32
//                    reduce-scatter: four 80 GB/s links into a 300 GB/s reducer). An
//                    all-reduce adds the radius: the chip that reduces the most (at least the
//                    average) ends its last sum no earlier, and every chip needs that sum, so
//                    it still crosses at least that chip's eccentricity (v5p, 16 MiB: 56 µs of
//                    reduction + 28 hops of 1 µs). A reduce-scatter adds nothing: its last sum
//                    may be the owner's own
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
//   distance bound   a chip's ports and how far its data must still go, together. Chip c
//                    moves its bytes through its own link directions (bandwidth P_c in all),
//                    and what leaves it last still travels to where it is needed; what it
//                    needs from far away arrives no earlier than the distance, and then all
//                    of it must come in through those ports:
//                      all-reduce      every chip's output depends on the farthest chip's
//                                      input: T ≥ ecc(c)·L + n/P_c (n bytes of it come in
//                                      after the first can)
//                      reduce-scatter  c sends each other chip f its block (n/p) of
//                                      contributions; one port, jobs with delivery times
//                                      d(c,f)·L: farthest first is optimal (Jackson's rule),
//                                      so T ≥ max_k [k·(n/p)/P_c + d_k·L], d_1 ≥ d_2 ≥ ...
//                      all-gather      the same, reversed in time: block f arrives no earlier
//                                      than d(f,c)·L
//                      broadcast       the chip farthest from any root is at least the radius
//                                      away: T ≥ radius·L + n/P_max
//                    with L per dimension (a distance is Σ hops_d·L_d) and the largest over
//                    every chip. The 128x32 multipod's corner (3 ports, 127 + 16 hops from the
//                    opposite corner): 16 MiB all-reduce 70 + 143 = 213 µs, where the latency
//                    floor alone says 143
//   limit            the largest of the five; of_limit = limit / simulated time (1 = at the
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
#include <vector>

#include "model/simulator.hpp"
#include "toroid/torus.hpp"

namespace toroid::model {

struct SimLimit {
  double bandwidth_s = 0;
  double latency_s = 0;
  double reduction_s = 0;  // 0 for the collectives that do not reduce
  double port_s = 0;
  double distance_s = 0;
  double limit_s() const {
    return std::max({bandwidth_s, latency_s, reduction_s, port_s, distance_s});
  }
};

// For the torus of `m` (not its endpoint links); `bytes` = the collective's whole vector.
SimLimit limit_of(const SimModel& m, Collective c, std::uint64_t bytes);

// The same five bounds for a torus of any dimension: per dimension its link bandwidth (per
// direction) and hop latency; `reduce_bytes_per_s` per chip. A twisted torus's latency terms
// count its shortest paths (every chip sees the same ones) at the least hop latency.
struct TorusLinks {
  std::vector<double> bytes_per_s, hop_s;  // one per dimension
  double reduce_bytes_per_s = 0;
};
SimLimit limit_of(const Torus& t, const TorusLinks& links, Collective c, std::uint64_t bytes);

// One dimension of a torus as the distance bound sees it: its size, whether it wraps, its hop
// latency and its link bandwidth (per direction).
struct DimensionLinks {
  int size = 1;
  bool wraps = true;
  double hop_s = 0;
  double bytes_per_s = 0;
};
// The distance bound over any number of dimensions (the chips' classes up to symmetry, each
// with its distance profile; milliseconds at 4096 chips).
double distance_bound(const std::vector<DimensionLinks>& dims, Collective c, double bytes);

// Link directions along dimension d of the torus, over all its rows along d.
std::uint64_t link_directions(const Torus& t, int d);

// Link directions out of (and into) the chip that has the fewest along dimension d: 2 round a
// ring of more than two, 1 at the end of a line or between two chips, 0 on a dimension of one.
int fewest_ports(const Torus& t, int d);

}  // namespace toroid::model
