// Swing all-reduce (swing_pattern.hpp: who talks to whom), on a ring or a 2D torus.
//
//   fold     per dimension of size k, with k2 = the largest power of two <= k and rem = k − k2:
//            coordinates c < 2·rem pair up (c even with c+1, physical neighbours); the even one
//            hands its whole vector to c+1 and sits out until the result comes back. X folds
//            first, then Y among the ranks still in; what remains is a k2x × k2y virtual grid,
//            virtual coordinate n at real n < rem ? 2n+1 : n + rem.
//   part     a share of the vector with its own pattern: a first dimension and plain or
//            mirrored peers. `swing` runs 2·D parts at once (D = dimensions of size > 1), so in
//            every step each chip sends on both directions of every dimension it uses:
//
//                 part 0: X first, plain      part 1: X first, mirrored
//                 part 2: Y first, plain      part 3: Y first, mirrored
//
//            step 0 of part 0 sends even→+x, odd→−x; of part 1 even→−x, odd→+x: together every
//            X link direction carries a quarter of the half each sends.
//
// swing (bandwidth-optimal), per part: a reduce-scatter halving the part's data at every move,
// keeping the half of its own class (the blocks at the positions of its class), then an
// all-gather retracing the moves in reverse: 2·log2(p2) moves (each sent in pieces in the order
// the next moves use them, group.hpp), 2(p2−1)/p2 of the vector sent
// per rank, the distance of move s about 2^(s/D+1)/3 hops while the data is 1/2^(s+1).
//
//     positions   [ 0 1 2 3 | 4 5 6 7 ]   move 0: keep my half, send the other to my peer
//                 [ 0 1 | 2 3 ]           move 1: halve again with the next peer ...
//
// swing_latency's reduce-scatter: the whole vector at every move (recursive doubling with
// Swing's peers, the farthest move first): log2(p2) steps; partial vectors alternate between two
// scratch slots so a step never writes what it sends; each rank keeps its block (of the block
// rule) and hands the ranks that folded into it theirs: log2(p2) steps of the whole vector
// where a ring takes p-1, for small vectors. (Its all-reduce, on 2D shapes too, is
// swing_dims.cpp's, whose combs take a ring's odd factors and its last three moves.)
//
// swing_latency all-gather: recursive doubling with the same peers, the farthest move first.
// After moves M-1 … m a rank holds the blocks of its class T(r, m) (its own, and the blocks of
// every rank folded into a member); at move m it sends what it holds and receives its peer's
// class, which completes T(r, m - 1):
//
//     move M-1: {r} <-> {q}            held {r, q}
//     move M-2: {r, q} <-> {u, w}      held {r, q, u, w}   ... log2(p2) moves, then unfold
//
// A class's blocks lie apart in the output (rank order is not class order), so a rank sends
// them as a gathered chunk of the output and receives the peer's into their places the same
// way.
#include <algorithm>
#include <bit>

#include "schedule/build.hpp"
#include "schedule/group.hpp"
#include "schedule/swing_pattern.hpp"
#include "toroid/block.hpp"

namespace toroid::schedule {
namespace {

struct SwingBuilder {
  Schedule& s;
  std::uint32_t phase = 0;
  void add(Kind k, int peer, int tag, Chunk src, Chunk dst) {
    if ((k == Kind::send ? src.count : dst.count) > 0)
      s.steps.push_back({k, peer, tag, phase, src, dst});
  }
};

struct Grid {
  const Torus2D& t;
  DimensionFold x, y;
  explicit Grid(const Torus2D& topology) : t(topology), x(t.x_dim()), y(t.y_dim()) {}
  int rank_of_virtual(Coord v) const { return t.rank_of({x.real_of(v.x), y.real_of(v.y)}); }
  Coord virtual_of(Coord c) const { return {x.virtual_of(c.x), y.virtual_of(c.y)}; }
};

// The swing_latency all-gather (the block comment above).
Schedule build_swing_allgather(const Spec& r, const Context& ctx) {
  Schedule s;
  const Torus2D t = ctx.grid("swing");
  const int p = ctx.nranks(), rank = ctx.rank;
  const std::uint64_t n = r.count;
  const Block own = block_of(n, p, rank);
  const Chunk own_src = r.in_place ? chunk(Buf::output, own) : Chunk{Buf::input, 0, own.count};
  SwingBuilder b{s};
  if (append_move(s, own_src, chunk(Buf::output, own), b.phase)) ++b.phase;
  if (p == 1) return s;
  const Grid g(t);
  const Coord me = t.coord_of(rank);
  // The output's runs of a set of ranks' blocks (ascending), as one gathered chunk.
  auto blocks_of = [&](std::vector<int> ranks) {
    std::sort(ranks.begin(), ranks.end());
    std::vector<Block> runs;
    for (int q : ranks) runs.push_back(block_of(n, p, q));
    return gathered_chunk(s, Buf::output, runs);
  };
  // Send `mine`, receive `theirs` from `peer`, straight into their places.
  auto exchange = [&](int peer, const std::vector<int>& mine, const std::vector<int>& theirs) {
    const Chunk out = blocks_of(mine), in = blocks_of(theirs);
    if (!mine.empty()) b.add(Kind::send, peer, 0, out, {});
    if (!theirs.empty()) b.add(Kind::recv, peer, 0, {}, in);
    ++b.phase;
  };
  const int rx = me.x + (g.x.sends(me.x) ? 1 : -1), ry = me.y + (g.y.sends(me.y) ? 1 : -1);
  // The real ranks behind each virtual coordinate: itself and those folded into it.
  auto folded_into = [&](Coord real) {
    std::vector<int> ranks{t.rank_of(real)};
    if (g.x.receives(real.x)) ranks.push_back(t.rank_of({real.x - 1, real.y}));
    if (g.y.receives(real.y)) {
      ranks.push_back(t.rank_of({real.x, real.y - 1}));
      if (g.x.receives(real.x)) ranks.push_back(t.rank_of({real.x - 1, real.y - 1}));
    }
    return ranks;
  };
  std::vector<int> held{rank};
  // Fold X, then Y: the ranks that sit out hand over what they hold and wait for the whole.
  if (g.x.sends(me.x)) {
    exchange(t.rank_of({rx, me.y}), held, {});
    b.add(Kind::recv, t.rank_of({rx, me.y}), 0, {}, {Buf::output, 0, n});
    return s;
  }
  if (g.x.receives(me.x)) {
    exchange(t.rank_of({rx, me.y}), {}, {t.rank_of({rx, me.y})});
    held.push_back(t.rank_of({rx, me.y}));
  }
  if (g.y.sends(me.y)) {
    exchange(t.rank_of({me.x, ry}), held, {});
    b.add(Kind::recv, t.rank_of({me.x, ry}), 0, {}, {Buf::output, 0, n});
    ++b.phase;
    if (g.x.receives(me.x)) b.add(Kind::send, t.rank_of({rx, me.y}), 0, {Buf::output, 0, n}, {});
    return s;
  }
  if (g.y.receives(me.y)) {
    std::vector<int> theirs{t.rank_of({me.x, ry})};
    if (g.x.receives(me.x)) theirs.push_back(t.rank_of({me.x - 1, ry}));
    exchange(t.rank_of({me.x, ry}), {}, theirs);
    held.insert(held.end(), theirs.begin(), theirs.end());
  }
  // Recursive doubling over the virtual grid: T(v, m) is the aligned range of 2^(M - m)
  // positions around v's.
  const SwingPattern pattern(g.x.k2, g.y.k2, t.wraps(Axis::x), t.wraps(Axis::y),
                             g.x.k2 > 1 ? Axis::x : Axis::y, false);
  const int moves = static_cast<int>(pattern.moves().size());
  std::vector<Coord> at_position(static_cast<std::size_t>(pattern.size()));
  for (int vy = 0; vy < g.y.k2; ++vy)
    for (int vx = 0; vx < g.x.k2; ++vx) at_position[pattern.position(Coord{vx, vy})] = {vx, vy};
  auto class_of = [&](Coord v, int level) {  // the real ranks of T(v, level)
    const std::uint32_t size = 1u << (moves - level), first = pattern.position(v) & ~(size - 1);
    std::vector<int> ranks;
    for (std::uint32_t q = first; q < first + size; ++q) {
      const Coord u = at_position[q];
      const std::vector<int> behind = folded_into({g.x.real_of(u.x), g.y.real_of(u.y)});
      ranks.insert(ranks.end(), behind.begin(), behind.end());
    }
    return ranks;
  };
  const Coord v = g.virtual_of(me);
  for (int m = moves - 1; m >= 0; --m) {  // the farthest move first
    const Coord q = pattern.peer(v, m);
    exchange(g.rank_of_virtual(q), class_of(v, m + 1), class_of(q, m + 1));
  }
  // Unfold: the whole output back to the ranks that sat out.
  if (g.y.receives(me.y)) b.add(Kind::send, t.rank_of({me.x, ry}), 0, {Buf::output, 0, n}, {});
  if (g.x.receives(me.x)) b.add(Kind::send, t.rank_of({rx, me.y}), 0, {Buf::output, 0, n}, {});
  return s;
}

}  // namespace

Schedule build_swing(Algorithm a, const Spec& r, const Context& ctx) {
  if (r.collective == Collective::allgather) return build_swing_allgather(r, ctx);
  Schedule s;
  const Torus2D t = ctx.grid("swing");
  const int p = ctx.nranks(), rank = ctx.rank;
  const std::uint64_t n = r.count;
  const Chunk input{Buf::input, 0, n}, output{Buf::output, 0, n};
  const bool latency = a == Algorithm::swing_latency;
  if (p == 1) {
    if (!r.in_place && n > 0) s.steps.push_back({Kind::copy, -1, 0, 0, input, output});
    return s;
  }
  const Grid g(t);
  const Coord me = t.coord_of(rank);
  const auto divisor = static_cast<std::uint32_t>(p);
  SwingBuilder b{s};
  if (latency) s.scratch_count = 2 * n;
  const bool x_in = !g.x.sends(me.x);
  // The fold partners (only asked for by ranks that fold).
  auto neighbour_x = [&] { return t.rank_of({me.x + (g.x.sends(me.x) ? 1 : -1), me.y}); };
  auto neighbour_y = [&] { return t.rank_of({me.x, me.y + (g.y.sends(me.y) ? 1 : -1)}); };
  const SwingPattern latency_pattern(g.x.k2, g.y.k2, t.wraps(Axis::x), t.wraps(Axis::y),
                                     g.x.k2 > 1 ? Axis::x : Axis::y, false);
  const bool scatter = r.collective == Collective::reduce_scatter;  // swing_latency only
  // Latency form (here swing_latency's reduce-scatter only): every reduction writes a fresh
  // scratch slot in turn, none the output, which receives one block at the end.
  AlternatingTargets targets(n,
                             static_cast<int>(latency_pattern.moves().size()) +
                                 (g.x.receives(me.x) ? 1 : 0) +
                                 (x_in && g.y.receives(me.y) ? 1 : 0),
                             r.in_place, /*ends_in_output=*/false);
  // Reduce-scatter: where this rank's block goes, and rank q's block of the reduced vector.
  const Block own = block_of(n, p, rank);
  const Chunk result =
      r.in_place ? Chunk{Buf::output, own.offset, own.count} : Chunk{Buf::output, 0, own.count};
  auto block_in = [&](Chunk reduced, int q) {
    const Block bl = block_of(n, p, q);
    return Chunk{reduced.buf, reduced.offset + bl.offset, bl.count};
  };
  Chunk cur = input;
  // A neighbour's whole vector reduced into the next target (the bandwidth form: the output).
  auto take_from = [&](int neighbour) {
    const Chunk to = latency ? targets.next() : output;
    b.add(Kind::recv_reduce, neighbour, 0, cur, to);
    ++b.phase;
    cur = to;
  };
  // Fold X, then Y.
  if (g.x.sends(me.x)) {
    b.add(Kind::send, neighbour_x(), 0, input, {});
    ++b.phase;
    // A reduce-scatter's block comes from the rank holding the result: the X neighbour, or the
    // one its vector went on to when that neighbour folded in Y too.
    const int holder = scatter && g.y.sends(me.y) ? t.rank_of({me.x + 1, me.y + 1}) : neighbour_x();
    b.add(Kind::recv, holder, 0, {}, scatter ? result : output);
    return s;
  }
  if (g.x.receives(me.x)) take_from(neighbour_x());
  if (g.y.sends(me.y)) {
    b.add(Kind::send, neighbour_y(), 0, cur, {});
    ++b.phase;
    b.add(Kind::recv, neighbour_y(), 0, {}, scatter ? result : output);
    ++b.phase;
    if (g.x.receives(me.x) && !scatter) b.add(Kind::send, neighbour_x(), 0, output, {});
    return s;
  }
  if (g.y.receives(me.y)) take_from(neighbour_y());
  const Coord v = g.virtual_of(me);
  if (latency) {
    // swing_latency's reduce-scatter (its all-reduce is build_swing_latency_dims, on any shape;
    // its all-gather build_swing_allgather, above).
    const int moves = static_cast<int>(latency_pattern.moves().size());
    for (int m = moves - 1; m >= 0; --m) {  // the farthest move first
      const int peer = g.rank_of_virtual(latency_pattern.peer(v, m));
      const Chunk to = targets.next();
      b.add(Kind::send, peer, 0, cur, {});
      b.add(Kind::recv_reduce, peer, 0, cur, to);
      ++b.phase;
      cur = to;
    }
    // Averaged whole (the folded ranks' blocks too), then each block to its rank.
    b.phase = append_average(s, r.average, cur, divisor, b.phase);
    if (append_move(s, block_in(cur, rank), result, b.phase)) ++b.phase;
    // The ranks that folded into this one get their blocks straight from here.
    if (g.y.receives(me.y)) {
      b.add(Kind::send, neighbour_y(), 0, block_in(cur, neighbour_y()), {});
      if (g.x.receives(me.x)) {
        const int corner = t.rank_of({me.x - 1, me.y - 1});
        b.add(Kind::send, corner, 0, block_in(cur, corner), {});
      }
    }
    if (g.x.receives(me.x)) b.add(Kind::send, neighbour_x(), 0, block_in(cur, neighbour_x()), {});
    return s;
  }
  // The bandwidth form (swing): one part per (first dimension, plain or mirrored); dimensions of
  // virtual size 1 have none.
  std::vector<std::pair<Axis, bool>> parts;
  for (Axis first : {Axis::x, Axis::y})
    if ((first == Axis::x ? g.x.k2 : g.y.k2) > 1)
      for (bool mirrored : {false, true}) parts.emplace_back(first, mirrored);
  const Blocks regions = even_blocks(0, n, static_cast<int>(parts.size()));
  const std::uint32_t start = b.phase;
  std::uint32_t end = start;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const SwingPattern pattern(g.x.k2, g.y.k2, t.wraps(Axis::x), t.wraps(Axis::y), parts[i].first,
                               parts[i].second);
    const auto moves = static_cast<int>(pattern.moves().size());
    end = std::max(end, append_halving_doubling(
                            s, regions[i], moves, pattern.position(v),
                            [&](int m, int k) {
                              Coord q = pattern.peer(v, m);
                              for (int j = 1; j <= k; ++j) q = pattern.peer(q, m + j);
                              return HalvingPeer{g.rank_of_virtual(q), pattern.position(q)};
                            },
                            static_cast<int>(i), cur.buf, r.average, divisor, start));
  }
  b.phase = end;
  // Unfold: the result goes back to the ranks that sat out.
  if (g.y.receives(me.y)) b.add(Kind::send, neighbour_y(), 0, output, {});
  if (g.x.receives(me.x)) b.add(Kind::send, neighbour_x(), 0, output, {});
  return s;
}

}  // namespace toroid::schedule
