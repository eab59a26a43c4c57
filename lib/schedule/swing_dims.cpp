// Swing's all-reduce on three dimensions and more (swing.cpp has the 2D forms and the terms).
//
// Both forms fold every dimension in turn (x, then y, then z, ...: a coordinate that sends
// hands its vector on and waits for the result), run on the virtual grid of powers of two, and
// send the result back to the ranks that folded, in reverse order.
//
// swing_latency: Swing's moves round robin over the dimensions that still have steps, the
// farthest first, each sending the whole vector and reducing the peer's.
//
//     16x16x16: moves z3 y3 x3 z2 y2 x2 ... x0 (farthest first), distances 5, 5, 5, 3, 3, 3,
//     1, 1, 1, 1, 1, 1 hops: 30 in all, where recursive doubling's partners at 2^k cross
//     8+4+2+1 a dimension, 45, and the diameter is 24.
//
// swing (bandwidth-optimal): 2·D parts at once (D = the dimensions of virtual size > 1), part
// (d, plain or mirrored) starting its moves on dimension d, so that every step sends on both
// directions of every dimension; each part a reduce-scatter halving its share of the vector at
// every move and an all-gather retracing them (append_halving_doubling):
//
//     2x2x2 (D = 3): part 0  x0 y0 z0      part 1  x0 y0 z0  mirrored
//                    part 2  y0 z0 x0      part 3  y0 z0 x0  mirrored
//                    part 4  z0 x0 y0      part 5  z0 x0 y0  mirrored
#include <algorithm>

#include "schedule/build.hpp"
#include "schedule/group.hpp"
#include "schedule/swing_pattern.hpp"

namespace toroid::schedule {
namespace {

// Every dimension folded in turn, as one rank sees it.
struct Fold {
  const Torus& t;
  std::vector<DimensionFold> dims;
  std::vector<int> me;
  std::vector<int> took;  // the dimensions whose neighbour folded into me, in order

  Fold(const Torus& torus, int rank) : t(torus), me(torus.coord_of(rank)) {
    for (int d = 0; d < t.dimensions(); ++d) dims.emplace_back(t.size(d));
  }
  int coord(int d) const { return me[static_cast<std::size_t>(d)]; }
  const DimensionFold& of(int d) const { return dims[static_cast<std::size_t>(d)]; }
  int at(int d, int c) const {  // my neighbour with coordinate c along d
    std::vector<int> q = me;
    q[static_cast<std::size_t>(d)] = c;
    return t.rank_of(q);
  }
  // The fold receives this rank takes before it runs on the virtual grid or sits out.
  int takes() const {
    int n = 0;
    for (int d = 0; d < t.dimensions() && !of(d).sends(coord(d)); ++d)
      n += of(d).receives(coord(d)) ? 1 : 0;
    return n;
  }
  // Appends the fold: each neighbour's vector reduced from `cur` into `next()`. Returns true
  // when this rank sits out: its steps are then complete (hand over, wait for the result, pass
  // it back).
  template <class Next>
  bool append(Schedule& s, std::uint32_t& phase, Chunk& cur, const Chunk& output, Next&& next) {
    for (int d = 0; d < t.dimensions(); ++d) {
      const int c = coord(d);
      if (of(d).sends(c)) {
        s.steps.push_back({Kind::send, at(d, c + 1), 0, phase++, cur, {}});
        s.steps.push_back({Kind::recv, at(d, c + 1), 0, phase++, {}, output});
        unfold(s, phase, output);
        return true;
      }
      if (of(d).receives(c)) {
        const Chunk to = next();
        s.steps.push_back({Kind::recv_reduce, at(d, c - 1), 0, phase++, cur, to});
        cur = to;
        took.push_back(d);
      }
    }
    return false;
  }
  // The result back to the ranks folded into me, the last first.
  void unfold(Schedule& s, std::uint32_t& phase, const Chunk& output) const {
    for (auto e = took.rbegin(); e != took.rend(); ++e)
      s.steps.push_back({Kind::send, at(*e, coord(*e) - 1), 0, phase++, output, {}});
  }
  std::vector<int> virtual_coord() const {
    std::vector<int> v(me.size());
    for (int d = 0; d < t.dimensions(); ++d)
      v[static_cast<std::size_t>(d)] = of(d).virtual_of(coord(d));
    return v;
  }
  int rank_of_virtual(const std::vector<int>& v) const {
    std::vector<int> q(v.size());
    for (int d = 0; d < t.dimensions(); ++d)
      q[static_cast<std::size_t>(d)] = of(d).real_of(v[static_cast<std::size_t>(d)]);
    return t.rank_of(q);
  }
  std::vector<int> virtual_sizes() const {
    std::vector<int> k;
    for (const DimensionFold& f : dims) k.push_back(f.k2);
    return k;
  }
  std::vector<bool> rings() const {
    std::vector<bool> r;
    for (int d = 0; d < t.dimensions(); ++d) r.push_back(t.ring_along(d));
    return r;
  }
};

// One rank: its vector is the result (copied when not in place). False when there are more.
bool alone(const Spec& r, const Context& ctx, Schedule& s) {
  if (ctx.nranks() > 1) return false;
  if (!r.in_place && r.count > 0)
    s.steps.push_back({Kind::copy, -1, 0, 0, {Buf::input, 0, r.count}, {Buf::output, 0, r.count}});
  return true;
}

}  // namespace

Schedule build_swing_latency_dims(const Spec& r, const Context& ctx) {
  Schedule s;
  if (alone(r, ctx, s)) return s;
  const int p = ctx.nranks();
  const std::uint64_t n = r.count;
  const Chunk input{Buf::input, 0, n}, output{Buf::output, 0, n};
  s.scratch_count = 2 * n;  // the alternating targets' two slots
  Fold fold(ctx.topology, ctx.rank);
  // One pattern's moves are the round robin from x; the farthest are taken first.
  const SwingPattern pattern(fold.virtual_sizes(), fold.rings(), 0, false);
  AlternatingTargets targets(n, static_cast<int>(pattern.moves().size()) + fold.takes(),
                             r.in_place);
  std::uint32_t phase = 0;
  Chunk cur = input;
  if (fold.append(s, phase, cur, output, [&] { return targets.next(); })) return s;
  const std::vector<int> v = fold.virtual_coord();
  for (int m = static_cast<int>(pattern.moves().size()) - 1; m >= 0; --m) {
    const int peer = fold.rank_of_virtual(pattern.peer(v, m));
    const Chunk to = targets.next();
    s.steps.push_back({Kind::send, peer, 0, phase, cur, {}});
    s.steps.push_back({Kind::recv_reduce, peer, 0, phase, cur, to});
    ++phase;
    cur = to;
  }
  if (cur.buf != Buf::output && n > 0) s.steps.push_back({Kind::copy, -1, 0, phase++, cur, output});
  phase = append_average(s, r.average, output, static_cast<std::uint32_t>(p), phase);
  fold.unfold(s, phase, output);
  return s;
}

Schedule build_swing_dims(const Spec& r, const Context& ctx) {
  Schedule s;
  if (alone(r, ctx, s)) return s;
  const int p = ctx.nranks();
  const std::uint64_t n = r.count;
  const Chunk input{Buf::input, 0, n}, output{Buf::output, 0, n};
  Fold fold(ctx.topology, ctx.rank);
  std::uint32_t phase = 0;
  Chunk cur = input;
  // The fold reduces into the output (in place from the second neighbour on).
  if (fold.append(s, phase, cur, output, [&] { return output; })) return s;
  // One part per (first dimension, plain or mirrored); dimensions of virtual size 1 have none.
  const std::vector<int> sizes = fold.virtual_sizes(), v = fold.virtual_coord();
  std::vector<SwingPattern> parts;
  for (int d = 0; d < ctx.topology.dimensions(); ++d)
    if (sizes[static_cast<std::size_t>(d)] > 1)
      for (bool mirrored : {false, true}) parts.emplace_back(sizes, fold.rings(), d, mirrored);
  const Blocks regions = even_blocks(0, n, static_cast<int>(parts.size()));
  const std::uint32_t start = phase;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const SwingPattern& pattern = parts[i];
    phase = std::max(
        phase, append_halving_doubling(
                   s, regions[i], static_cast<int>(pattern.moves().size()), pattern.position(v),
                   [&](int m, int k) {
                     std::vector<int> q = pattern.peer(v, m);
                     for (int j = 1; j <= k; ++j) q = pattern.peer(q, m + j);
                     return HalvingPeer{fold.rank_of_virtual(q), pattern.position(q)};
                   },
                   static_cast<int>(i), cur.buf, r.average, static_cast<std::uint32_t>(p), start));
  }
  fold.unfold(s, phase, output);
  return s;
}

}  // namespace toroid::schedule
