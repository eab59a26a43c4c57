// Swing's all-reduce: `swing` on three dimensions and more, `swing_latency` on any shape
// (swing.cpp has the 2D forms of the others and the terms).
//
// swing (bandwidth-optimal) folds every dimension in turn (x, then y, then z, ...: a coordinate
// that sends hands its vector on and waits for the result), runs on the virtual grid of powers
// of two, and sends the result back to the ranks that folded, in reverse order.
//
// swing_latency's all-reduce (on any number of dimensions, two included: swing.cpp keeps its
// 2D reduce-scatter and all-gather): moves round robin over the dimensions that still have
// steps, the farthest first, each sending the whole vector and reducing the peers'.
//
//     16x16x16, Swing's moves alone: z3 y3 x3 z2 y2 x2 ... x0 (farthest first), distances 5, 5,
//     5, 3, 3, 3, 1, 1, 1, 1, 1, 1 hops: 30 in all, where recursive doubling's partners at 2^k
//     cross 8+4+2+1 a dimension, 45, and the diameter is 24 (27 with the closing combs below,
//     which the simulator's model takes at small sizes).
//
//   A ring of k = 2^a · m (m odd, its prime factors f1 <= f2 <= ... at most kMaxCombPeers + 1) is
//   not folded. One *comb* per odd factor runs first, the largest spacing first (k/f_last,
//   ..., 2^a·f1, then 2^a): c exchanges with the f − 1 coordinates c ± s, c ± 2s, ...
//   c ± (f−1)/2·s and sums them, after which c holds the sum over its coset of the ring
//   modulo 2^a. Then Swing's a moves run on the ring itself (c + ρ(j) for c even, c − ρ(j) for
//   c odd, mod k), which modulo 2^a are Swing's moves on a ring of 2^a:
//
//     k = 24 = 3·8: the comb of spacing 8 (c−8, c+8: 8 hops), then Swing (1, 1, 3 hops):
//       13 hops (diameter 12); the fold to 16 crossed 22 on v5p's z.
//
//   Its distances add up to Swing's on 2^a plus 2^a·(m − 1)/2: the diameter's excess is
//   Swing's on 2^a alone. An odd size is all combs (3: c ± 1, one hop). A ring of k = 2^a >= 8
//   may instead begin with a comb of 8 that closes it, c ± k/8, ± 2k/8, ± 3k/8 and c + k/2
//   (its own peer's too: k/2 = −k/2 round the ring), then Swing's moves on k/8 (closing_comb
//   below says where):
//
//     k = 32: the closing comb of spacing 4 (16 hops), then Swing on 4 (1, 1 hop): 18 where
//     Swing's five moves cross 1 + 1 + 3 + 5 + 11 = 21 (diameter 16); 16: 8 + 1 against 10;
//     8: the comb alone, 4 against 5.
//
//   A comb of f sends f − 1 messages in one move, so a factor above kMaxCombPeers + 1, or a
//   line, folds (a coordinate hands its vector to its neighbour and waits for the result).
//
//   Every rank ends with the same bits: the combs run first (the farthest moves), each over a
//   coset of the ring (c, c ± s, ... are the same set for each of them, c + k/2 too), summed
//   in the order of the members' coordinates; then Swing's moves run on what is left, the
//   ring modulo 2^a, whose classes are a power of two's.
//
//   A twisted torus is walked too, its moves going chip to chip through the twisted links.
//   Its rows do not form a product of rings, so the dimensions go one after another instead
//   of round robin, each over what the ones before leave:
//   - first the long dimensions (plain rings of 2k);
//   - then each short one, whose walk of k steps lands in the same coset of what the long
//     ones summed, k further along them.
//   Each dimension is then a ring of its size over those cosets, and every chip sums in the
//   same groupings. Swing's pairs (c ± ρ) are exact chip to chip. A comb of all k along a
//   short dimension is not: its k/2 peer's own k/2 peer lies 2·k/2 along the twisted walk,
//   another chip of the coset. 4x4x8 twisted: z one comb of 8 (4 hops), then y 1 + 1, then
//   x 1 + 1: 8 hops where its diameter is 6 (folded as lines: 11).
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

// A ring of k = 2^a >= 8 may end with a comb of 8 that closes it (spacing s = k/8, peers ±s,
// ±2s, ±3s and k/2) instead of Swing's last three moves: k/2 hops where those take more (8: 4
// against 5; 16: 8 against 9; 32: 16 against 19; 64: 32 against 37). But its seven vectors
// load a link direction with 10s = 1.25k vectors (the ±s, ±2s, ±3s peers 6s each way, the k/2
// one 4s more on the + side) where Swing's three moves load it with half their hops, so it
// pays only while the vector is small. Taken where the hops it saves outweigh that, with the
// hop latency and link rate known (the simulator's model; an engine does not know its links':
// there, Swing's three moves, fewer messages). toroid-sim, all-reduce, the comb's break-even:
// 32x32 at 80 GB/s about 8 KiB, 16x16x16 at 50 GB/s 3-4 KiB, as this estimate puts it.
constexpr int kClosingComb = 8;
bool closing_comb(int k, const Spec& r, const Context& ctx, int d) {
  if (!std::has_single_bit(static_cast<unsigned>(k)) || k < kClosingComb || !ctx.knows_hops() ||
      r.elem_bytes == 0)
    return false;
  int tail = 0;  // Swing's last three moves' hops
  for (int j = std::countr_zero(static_cast<unsigned>(k)) - 3; (1 << j) < k; ++j) {
    const auto rho = static_cast<int>(((swing_rho(j) % k) + k) % k);
    tail += std::min(rho, k - rho);
  }
  const double bytes = static_cast<double>(r.count) * r.elem_bytes;
  const double extra_s =
      bytes * (1.25 * k - tail / 2.0) / ctx.link_rate[static_cast<std::size_t>(d)];
  const double saved_s = (tail - k / 2) * ctx.hop_seconds[static_cast<std::size_t>(d)];
  return extra_s < saved_s;
}

// swing_latency *walks* dimension d (no fold: its moves go from chip to chip along it, through
// the wraparound links): its row closes into a ring and combs take its odd factors; on a
// twisted torus every dimension or none (the block comment: the long ones first, then the
// short ones, each over what the ones before leave).
bool walked(const Torus& t, int d) {
  if (!t.twisted()) return t.ring_along(d) && combs_take(t.size(d));
  for (int e = 0; e < t.dimensions(); ++e)
    if (!combs_take(t.size(e))) return false;
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

// Every dimension's moves, the nearest first (built from the end), round robin from x (a
// dimension whose moves are used up drops out): Swing's steps on the (virtual) power of two,
// then a walked ring's combs or its closing comb of 8.
std::vector<LatencyMove> latency_moves(const Spec& r, const Context& ctx, const Fold& fold) {
  const Torus& t = ctx.topology;
  std::vector<std::vector<LatencyMove>> per(static_cast<std::size_t>(t.dimensions()));
  for (int d = 0; d < t.dimensions(); ++d) {
    const int k = fold.of(d).k2, twos = std::countr_zero(static_cast<unsigned>(k));
    const bool ring = walked(t, d) || t.ring_along(d);
    auto& list = per[static_cast<std::size_t>(d)];
    // Not along a twisted short dimension: its walk closes after 2k chips, not k, so the comb's
    // k/2 peer would not be its own peer's.
    if (t.ring_along(d) && closing_comb(k, r, ctx, d)) {
      for (int j = 0; (kClosingComb << j) < k; ++j) list.push_back({d, k, true, j, 0, 0});
      list.push_back({d, k, true, 0, k / kClosingComb, kClosingComb});
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
  if (t.twisted() && walked(t, 0)) {  // executed from the end: the long dimensions first
    for (int d = 0; d < t.dimensions(); ++d)
      if (!t.ring_along(d)) moves.insert(moves.end(), per[d].begin(), per[d].end());
    for (int d = 0; d < t.dimensions(); ++d)
      if (t.ring_along(d)) moves.insert(moves.end(), per[d].begin(), per[d].end());
    return moves;
  }
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
  const std::vector<LatencyMove> moves = latency_moves(r, ctx, fold);
  // The alternating targets' two slots, then one for each comb peer's vector.
  std::uint64_t landing = 0;
  for (const LatencyMove& m : moves)
    landing = std::max<std::uint64_t>(landing, m.spacing == 0 ? 0 : m.factor - 1);
  s.scratch_count = (2 + landing) * n;
  AlternatingTargets targets(n, static_cast<int>(moves.size()) + fold.takes(), r.in_place);
  const auto landed = [&](std::size_t i) { return Chunk{Buf::scratch, (1 + i) * n, n}; };
  std::uint32_t phase = 0;
  Chunk cur = input;
  if (fold.append(s, phase, cur, output, [&] { return targets.next(); })) return s;
  const std::vector<int> v = fold.virtual_coord();
  for (auto m = moves.rbegin(); m != moves.rend(); ++m) {  // the farthest first
    const Chunk to = targets.next();
    const auto d = static_cast<std::size_t>(m->dimension);
    const std::vector<int> offsets = m->offsets(v[d]);
    const auto peer_at = [&](int offset) {
      if (walked(t, m->dimension)) return walk(t, ctx.rank, m->dimension, offset);
      std::vector<int> q = v;  // on the virtual grid
      q[d] = ((v[d] + offset) % m->k + m->k) % m->k;
      return fold.rank_of_virtual(q);
    };
    if (offsets.size() == 1) {  // Swing's pair: a + b is b + a to the bit
      const int peer = peer_at(offsets[0]);
      s.steps.push_back({Kind::send, peer, 0, phase, cur, {}});
      s.steps.push_back({Kind::recv_reduce, peer, 0, phase++, cur, to});
      cur = to;
      continue;
    }
    // A comb: every peer's vector lands at once in a slot of its own; then the comb's members
    // (a coset of the ring: every member has the same ones) are summed in the order of their
    // coordinates, so that every member holds the same bits (float sums depend on the order).
    // (Coordinates modulo the coset's period: what the combs before it have made alike.)
    const int period = m->spacing * m->factor;
    std::vector<std::pair<int, Chunk>> members{{v[d] % period, cur}};
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      const int peer = peer_at(offsets[i]);
      s.steps.push_back({Kind::send, peer, 0, phase, cur, {}});
      s.steps.push_back({Kind::recv, peer, 0, phase, {}, landed(i + 1)});
      members.push_back({((v[d] + offsets[i]) % period + period) % period, landed(i + 1)});
    }
    std::sort(members.begin(), members.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    s.steps.push_back({Kind::copy, -1, 0, ++phase, members[0].second, to});
    for (std::size_t i = 1; i < members.size(); ++i)
      s.steps.push_back({Kind::reduce, -1, 0, ++phase, members[i].second, to});
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
