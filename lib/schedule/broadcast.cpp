// Broadcast: the root's vector reaches every rank (in place: each rank's buffer is the output).
//
//   chains (ring, and each line of torus2d): from the root both ways along a line of ranks, each
//   rank receiving from the neighbour nearer the root and forwarding to the one further away.
//   The forward follows the receive segment by segment, so the vector streams down the chain:
//   time ~ (p/2) hops + n / bandwidth.
//
//      ring, p = 7, root 0:      r4 <- r5 <- r6 <- r0 -> r1 -> r2 -> r3
//                                (wrapping: the two chains split the ring)
//
//   torus2d: chains along the root's row, then from every rank of that row chains along its
//   column; a column starts on the first segments its row member has received. On more
//   dimensions, then from every chip of that plane along the third dimension, and so on.
//
//      x ->    r0  r1  r2  r3          root r5: row y=1 first (r4 <- r5 -> r6 -> r7),
//              r4 [r5] r6  r7          then every column from y=1 (r1 <- r5 -> r9 ...)
//              r8  r9  r10 r11
//
//   tree (recursive_doubling): binomial, log2(p) rounds; in round k the ranks that have the
//   data (relative rank < 2^k) send it to relative rank + 2^k. For small vectors: fewest rounds.
#include "schedule/build.hpp"
#include "schedule/group.hpp"

namespace toroid::schedule {
namespace {

// Chains from members[root] along `g` (both ways when it wraps, else toward each end), on tags
// tag (away from the root upwards) and tag + 1 (downwards). Returns the phase after them.
std::uint32_t append_line_broadcast(Schedule& s, const Group& g, bool wraps, int root, int tag,
                                    Chunk data, std::uint32_t phase) {
  const int p = g.size(), i = g.position;
  if (p == 1 || data.count == 0) return phase;
  const int up = wraps ? p / 2 : p - 1 - root;  // members the upward chain reaches
  const int down = wraps ? (p - 1) / 2 : root;  // and the downward one
  const int d_up = ring_position(i - root, p),
            d_down = ring_position(root - i, p);  // distance from the root
  auto member = [&](int pos) { return g.members[static_cast<std::size_t>(ring_position(pos, p))]; };
  if (i == root) {
    if (up > 0) s.steps.push_back({Kind::send, member(i + 1), tag, phase, data, {}});
    if (down > 0) s.steps.push_back({Kind::send, member(i - 1), tag + 1, phase, data, {}});
  } else if (d_up <= up && (wraps || i > root)) {
    const auto ph = phase + static_cast<std::uint32_t>(d_up - 1);
    s.steps.push_back({Kind::recv, member(i - 1), tag, ph, {}, data});
    if (d_up < up) s.steps.push_back({Kind::send, member(i + 1), tag, ph + 1, data, {}});
  } else {
    const auto ph = phase + static_cast<std::uint32_t>(d_down - 1);
    s.steps.push_back({Kind::recv, member(i + 1), tag + 1, ph, {}, data});
    if (d_down < down) s.steps.push_back({Kind::send, member(i - 1), tag + 1, ph + 1, data, {}});
  }
  return phase + static_cast<std::uint32_t>(std::max(up, down));
}

void append_tree_broadcast(Schedule& s, int p, int rank, int root, Chunk data) {
  const int rel = (rank - root + p) % p;
  std::uint32_t phase = 0;
  for (int mask = 1; mask < p; mask <<= 1, ++phase) {
    if (rel < mask && rel + mask < p)
      s.steps.push_back({Kind::send, (rel + mask + root) % p, 0, phase, data, {}});
    else if (rel >= mask && rel < 2 * mask)
      s.steps.push_back({Kind::recv, (rel - mask + root) % p, 0, phase, {}, data});
  }
}

}  // namespace

Schedule build_broadcast(Algorithm a, const Spec& r, const Context& ctx) {
  Schedule s;
  const int p = ctx.nranks();
  const Chunk data{Buf::output, 0, r.count};
  if (p == 1 || r.count == 0) return s;
  switch (a) {
    case Algorithm::recursive_doubling:
      append_tree_broadcast(s, p, ctx.rank, r.root, data);
      break;
    case Algorithm::torus2d: {
      // Dimension d's chains run from the chips that have the vector (coordinates from d on
      // the root's) along rows of d; a chip receives in the highest dimension where it differs
      // from the root and forwards along every later one. Dimension d's chains start where the
      // longest chains of the earlier ones end, on every row alike.
      const Torus& t = ctx.topology;
      const std::vector<int> me = t.coord_of(ctx.rank), from = t.coord_of(r.root);
      int differs = -1;  // the highest dimension where my coordinate is not the root's
      for (int d = 0; d < t.dimensions(); ++d)
        if (me[static_cast<std::size_t>(d)] != from[static_cast<std::size_t>(d)]) differs = d;
      std::uint32_t phase = 0;
      for (int d = 0; d < t.dimensions(); ++d) {
        const int k = t.size(d), at = from[static_cast<std::size_t>(d)];
        const bool ring = t.ring_along(d);
        if (d >= differs)
          append_line_broadcast(s, group_of(t.line_through(ctx.rank, d), ctx.rank), ring, at,
                                2 * (d % 2), data, phase);
        phase += static_cast<std::uint32_t>(ring ? k / 2 : std::max(at, k - 1 - at));
      }
      break;
    }
    default: {  // ring: every rank in rank order, wrapping
      Group g;
      for (int q = 0; q < p; ++q) g.members.push_back(q);
      g.position = ctx.rank;
      append_line_broadcast(s, g, true, r.root, 0, data, 0);
      break;
    }
  }
  return s;
}

}  // namespace toroid::schedule
