// swing_latency's all-reduce on three dimensions and more (swing.cpp has the 2D form and the
// terms): every dimension folds in turn (x, then y, then z, ...: a coordinate that sends hands
// its vector on and waits for the result), the virtual grid of powers of two then runs Swing's
// moves, round robin over the dimensions that still have steps, the farthest first, each move
// sending the whole vector and reducing the peer's; the result goes back to the ranks that
// folded, in reverse order.
//
//     16x16x16: moves z3 y3 x3 z2 y2 x2 ... x0 (farthest first), distances 5, 5, 5, 3, 3, 3,
//     1, 1, 1, 1, 1, 1 hops: 30 in all, where recursive doubling's partners at 2^k cross
//     8+4+2+1 a dimension, 45, and the diameter is 24.
#include <algorithm>

#include "schedule/build.hpp"
#include "schedule/group.hpp"
#include "schedule/swing_pattern.hpp"

namespace toroid::schedule {

Schedule build_swing_latency_dims(const Spec& r, const Context& ctx) {
  Schedule s;
  const Torus& t = ctx.topology;
  const int p = ctx.nranks(), dims = t.dimensions();
  const std::uint64_t n = r.count;
  const Chunk input{Buf::input, 0, n}, output{Buf::output, 0, n};
  if (p == 1) {
    if (!r.in_place && n > 0) s.steps.push_back({Kind::copy, -1, 0, 0, input, output});
    return s;
  }
  s.scratch_count = 2 * n;  // the alternating targets' two slots
  std::vector<DimensionFold> fold;
  std::vector<SwingDimension> swing;
  for (int d = 0; d < dims; ++d) {
    fold.emplace_back(t.size(d));
    swing.emplace_back(fold.back().k2, t.ring_along(d), false);
  }
  const std::vector<int> me = t.coord_of(ctx.rank);
  const auto at = [&](int d, int c) {  // my neighbour with coordinate c along d
    std::vector<int> q = me;
    q[static_cast<std::size_t>(d)] = c;
    return t.rank_of(q);
  };
  // The moves, round robin over the dimensions with steps left: (dimension, relative step).
  std::vector<std::pair<int, int>> moves;
  for (int j = 0, more = 1; more; ++j) {
    more = 0;
    for (int d = 0; d < dims; ++d)
      if (j < swing[static_cast<std::size_t>(d)].steps()) {
        moves.emplace_back(d, j);
        more = 1;
      }
  }
  int takes = 0;  // fold receives, for the targets' count
  for (int d = 0; d < dims; ++d) {
    const int c = me[static_cast<std::size_t>(d)];
    if (fold[static_cast<std::size_t>(d)].sends(c)) break;
    takes += fold[static_cast<std::size_t>(d)].receives(c) ? 1 : 0;
  }
  AlternatingTargets targets(n, static_cast<int>(moves.size()) + takes, r.in_place);
  std::uint32_t phase = 0;
  Chunk cur = input;
  std::vector<int> took;  // the dimensions whose neighbour folded into me, in order
  for (int d = 0; d < dims; ++d) {
    const DimensionFold& f = fold[static_cast<std::size_t>(d)];
    const int c = me[static_cast<std::size_t>(d)];
    if (f.sends(c)) {  // hand over, wait for the result, pass it back to those folded into me
      s.steps.push_back({Kind::send, at(d, c + 1), 0, phase++, cur, {}});
      s.steps.push_back({Kind::recv, at(d, c + 1), 0, phase++, {}, output});
      for (auto e = took.rbegin(); e != took.rend(); ++e)
        s.steps.push_back(
            {Kind::send, at(*e, me[static_cast<std::size_t>(*e)] - 1), 0, phase++, output, {}});
      return s;
    }
    if (f.receives(c)) {
      const Chunk to = targets.next();
      s.steps.push_back({Kind::recv_reduce, at(d, c - 1), 0, phase++, cur, to});
      cur = to;
      took.push_back(d);
    }
  }
  std::vector<int> v(me.size());
  for (int d = 0; d < dims; ++d)
    v[static_cast<std::size_t>(d)] =
        fold[static_cast<std::size_t>(d)].virtual_of(me[static_cast<std::size_t>(d)]);
  for (auto m = moves.rbegin(); m != moves.rend(); ++m) {  // the farthest first
    const auto [d, j] = *m;
    std::vector<int> q(me.size());
    for (int e = 0; e < dims; ++e) {
      const int ve =
          e == d ? swing[static_cast<std::size_t>(e)].peer(v[static_cast<std::size_t>(e)], j)
                 : v[static_cast<std::size_t>(e)];
      q[static_cast<std::size_t>(e)] = fold[static_cast<std::size_t>(e)].real_of(ve);
    }
    const int peer = t.rank_of(q);
    const Chunk to = targets.next();
    s.steps.push_back({Kind::send, peer, 0, phase, cur, {}});
    s.steps.push_back({Kind::recv_reduce, peer, 0, phase, cur, to});
    ++phase;
    cur = to;
  }
  if (cur.buf != Buf::output && n > 0) s.steps.push_back({Kind::copy, -1, 0, phase++, cur, output});
  phase = append_average(s, r.average, output, static_cast<std::uint32_t>(p), phase);
  for (auto e = took.rbegin(); e != took.rend(); ++e)
    s.steps.push_back(
        {Kind::send, at(*e, me[static_cast<std::size_t>(*e)] - 1), 0, phase++, output, {}});
  return s;
}

}  // namespace toroid::schedule
