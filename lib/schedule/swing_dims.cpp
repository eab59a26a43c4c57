// Swing's all-reduce on three dimensions and more (swing.cpp has the 2D forms and the terms).
//
// swing (bandwidth-optimal) folds every dimension in turn (x, then y, then z, ...: a coordinate
// that sends hands its vector on and waits for the result), runs on the virtual grid of powers
// of two, and sends the result back to the ranks that folded, in reverse order.
//
// swing_latency: moves round robin over the dimensions that still have steps, the farthest
// first, each sending the whole vector and reducing the peers'.
//
//     16x16x16: moves z3 y3 x3 z2 y2 x2 ... x0 (farthest first), distances 5, 5, 5, 3, 3, 3,
//     1, 1, 1, 1, 1, 1 hops: 30 in all, where recursive doubling's partners at 2^k cross
//     8+4+2+1 a dimension, 45, and the diameter is 24.
//
//   A ring of k = 2^a · m (m odd, its prime factors f1 <= f2 <= ... at most kMaxCombPeers + 1) is
//   not folded: Swing's a steps run on the ring itself (c + ρ(j) for c even, c − ρ(j) for c
//   odd, mod k), after which c holds the sum of 2^a consecutive coordinates, the same window
//   moved along for c + 2^a (even shifts keep every parity, so every peer). Then one *comb* per
//   odd factor f with spacing s (2^a, then 2^a·f1, ...): c exchanges with the f − 1 coordinates
//   c ± s, c ± 2s, ... c ± (f−1)/2·s and sums them, f windows side by side:
//
//     k = 24 = 8·3: Swing on the ring (1, 1, 3 hops), then the comb of spacing 8:
//       c:  [ window of 8 ]  c−8 [ window ]  c+8 [ window ]   -> all 24
//       hops 1 + 1 + 3 + 8 = 13 (diameter 12); the fold to 16 crossed 22 on v5p's z.
//
//   Its distances add up to Swing's on 2^a plus 2^a·(m − 1)/2: the diameter's excess is
//   Swing's on 2^a alone. An odd size is all combs (3: c ± 1, one hop). A ring of 8 is one comb
//   of all 8 (c ± 1, ± 2, ± 3, + 4: its diameter, 4 hops, where Swing's take 5). A comb of f
//   sends f − 1 messages in one move, so a factor above kMaxCombPeers + 1, or a line, folds
//   (a coordinate hands its vector to its neighbour and waits for the result).
//
//   A twisted torus (every size even) is walked the same way, each move going from chip to
//   chip through the twisted wraparound links: 4x4x8 twisted, x 1 + 1, y 1 + 1, z one comb of
//   8 (4 hops): 8 hops where its diameter is 6 (folded as lines before: 11). A short
//   dimension's walk closes after 2k chips, so it takes no comb of all k (its k/2 peer would
//   be 2·k/2 away from its own), only Swing's moves and odd combs (symmetric: ±s, ±2s, ...).
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
#include <bit>

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

  // `combed(d)`: dimension d stays whole (swing_latency's combs), else it folds to a power of two.
  template <class Combed>
  Fold(const Torus& torus, int rank, Combed&& combed) : t(torus), me(torus.coord_of(rank)) {
    for (int d = 0; d < t.dimensions(); ++d)
      dims.push_back(combed(d) ? DimensionFold::whole(t.size(d)) : DimensionFold(t.size(d)));
  }
  Fold(const Torus& torus, int rank) : Fold(torus, rank, [](int) { return false; }) {}
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

// swing_latency's combs (the block comment): a comb sends one message a peer in one move.
constexpr int kMaxCombPeers = 7;

// The odd prime factors of k, the smallest first (empty when one needs more than kMaxCombPeers
// peers, or k is a power of two).
std::vector<int> comb_factors(int k) {
  std::vector<int> f;
  k >>= std::countr_zero(static_cast<unsigned>(k));
  for (int q = 3; k > 1; q += 2)
    for (; k % q == 0; k /= q) {
      if (q - 1 > kMaxCombPeers) return {};
      f.push_back(q);
    }
  return f;
}
bool combs_take(int k) {
  return std::has_single_bit(static_cast<unsigned>(k)) || !comb_factors(k).empty();
}

// Swing's hops round a ring of k = 2^a: Σ_j the distance of ρ(j).
int swing_hops(int k) {
  int hops = 0;
  for (int j = 0; (1 << j) < k; ++j) {
    const auto r = static_cast<int>(((swing_rho(j) % k) + k) % k);
    hops += std::min(r, k - r);
  }
  return hops;
}
// A ring of k = 2^a taken as one comb of all k (its diameter, k/2 hops) instead of Swing's a
// moves: where that is fewer hops within kMaxCombPeers (k = 8: 4 hops against 5).
bool one_comb(int k) {
  return std::has_single_bit(static_cast<unsigned>(k)) && k - 1 <= kMaxCombPeers &&
         swing_hops(k) > k / 2;
}

// swing_latency *walks* dimension d (no fold: its moves go from chip to chip along it, through
// the wraparound links): its row closes into a ring and combs take its odd factors; on a
// twisted torus every dimension or none, where every size is even (a coordinate then keeps its
// parity across a twisted wraparound, which lands k further along: Swing's pairs stay pairs)
// and combs take every size. A walked twisted short dimension is the ring of 2k chips its
// wraparound links close over two planes; the block comment's windows, k along each short
// dimension and 2k along each long one, still tile the torus (they form a box whose sides are
// the twist's lattice diagonal).
bool walked(const Torus& t, int d) {
  if (!t.twisted()) return t.ring_along(d) && combs_take(t.size(d));
  for (int e = 0; e < t.dimensions(); ++e)
    if (t.size(e) % 2 != 0 || !combs_take(t.size(e))) return false;
  return true;
}

// The chip `offset` links from `rank` along d (negative: the other way), a twisted wraparound
// included.
int walk(const Torus& t, int rank, int d, int offset) {
  for (int i = 0; i < std::abs(offset); ++i) rank = *t.neighbour(rank, d, offset > 0 ? 1 : -1);
  return rank;
}

// One swing_latency move along `dimension` of (virtual) size k: Swing's step j (spacing 0), or
// a comb of `factor` coordinates `spacing` apart.
struct LatencyMove {
  int dimension = 0, k = 1;
  bool ring = true;
  int step = 0, spacing = 0, factor = 0;

  // The peers' offsets from coordinate c along the dimension: Swing's ±ρ(j) by c's parity (on a
  // line the XOR partner's), a comb's ±s, ±2s, ..., and k/2 once where an even comb closes
  // the ring.
  std::vector<int> offsets(int c) const {
    if (spacing == 0) {
      if (!ring) return {(c ^ (1 << step)) - c};
      return {static_cast<int>((c % 2 == 0 ? 1 : -1) * swing_rho(step))};
    }
    std::vector<int> out;
    for (int i = 1; i <= (factor - 1) / 2; ++i)
      for (const int sign : {1, -1}) out.push_back(sign * i * spacing);
    if (factor % 2 == 0) out.push_back(factor / 2 * spacing);
    return out;
  }
};

// Every dimension's moves, the nearest first, round robin from x (a dimension whose moves are
// used up drops out): Swing's steps on the (virtual) power of two (or one comb of all of it),
// then a walked ring's combs.
std::vector<LatencyMove> latency_moves(const Torus& t, const Fold& fold) {
  std::vector<std::vector<LatencyMove>> per(static_cast<std::size_t>(t.dimensions()));
  for (int d = 0; d < t.dimensions(); ++d) {
    const int k = fold.of(d).k2, twos = std::countr_zero(static_cast<unsigned>(k));
    const bool ring = walked(t, d) || t.ring_along(d);
    auto& list = per[static_cast<std::size_t>(d)];
    // Not along a twisted short dimension: its walk closes after 2k chips, not k, so the comb's
    // k/2 peer would not be its own peer's.
    if (ring && t.ring_along(d) && one_comb(k)) {
      list.push_back({d, k, true, 0, 1, k});
      continue;
    }
    for (int j = 0; j < twos; ++j) list.push_back({d, k, ring, j, 0, 0});
    if (!walked(t, d)) continue;
    int spacing = 1 << twos;
    for (const int f : comb_factors(k)) {
      list.push_back({d, k, true, 0, spacing, f});
      spacing *= f;
    }
  }
  std::vector<LatencyMove> moves;
  for (std::size_t round = 0, left = 1; left > 0; ++round) {
    left = 0;
    for (const auto& list : per)
      if (round < list.size()) {
        moves.push_back(list[round]);
        ++left;
      }
  }
  return moves;
}

}  // namespace

Schedule build_swing_latency_dims(const Spec& r, const Context& ctx) {
  Schedule s;
  if (alone(r, ctx, s)) return s;
  const int p = ctx.nranks();
  const std::uint64_t n = r.count;
  const Chunk input{Buf::input, 0, n}, output{Buf::output, 0, n};
  const Torus& t = ctx.topology;
  Fold fold(t, ctx.rank, [&](int d) { return walked(t, d); });
  const std::vector<LatencyMove> moves = latency_moves(t, fold);
  // The alternating targets' two slots, then one for each comb peer's vector after the first.
  std::uint64_t landing = 0;
  for (const LatencyMove& m : moves)
    landing = std::max<std::uint64_t>(landing, m.spacing == 0 ? 0 : m.factor - 2);
  s.scratch_count = (2 + landing) * n;
  AlternatingTargets targets(n, static_cast<int>(moves.size()) + fold.takes(), r.in_place);
  const auto landed = [&](std::size_t i) { return Chunk{Buf::scratch, (1 + i) * n, n}; };
  std::uint32_t phase = 0;
  Chunk cur = input;
  if (fold.append(s, phase, cur, output, [&] { return targets.next(); })) return s;
  const std::vector<int> v = fold.virtual_coord();
  for (auto m = moves.rbegin(); m != moves.rend(); ++m) {  // the farthest first
    // Every peer's vector at once: the first reduced as it lands, the others landing in
    // slots of their own and added after (one reduce a phase: each writes the sum).
    const Chunk to = targets.next();
    const auto d = static_cast<std::size_t>(m->dimension);
    const std::vector<int> offsets = m->offsets(v[d]);
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      int peer = 0;
      if (walked(t, m->dimension)) {
        peer = walk(t, ctx.rank, m->dimension, offsets[i]);
      } else {  // on the virtual grid
        std::vector<int> q = v;
        q[d] = ((v[d] + offsets[i]) % m->k + m->k) % m->k;
        peer = fold.rank_of_virtual(q);
      }
      s.steps.push_back({Kind::send, peer, 0, phase, cur, {}});
      if (i == 0)
        s.steps.push_back({Kind::recv_reduce, peer, 0, phase, cur, to});
      else
        s.steps.push_back({Kind::recv, peer, 0, phase, {}, landed(i)});
    }
    for (std::size_t i = 1; i < offsets.size(); ++i)
      s.steps.push_back({Kind::reduce, -1, 0, ++phase, landed(i), to});
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
