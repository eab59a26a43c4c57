// Line collectives (a mesh dimension: no link between the two ends).
//
// p members m0 - m1 - ... - m(p-1); member i owns block Bi. Block j is reduced by two chains
// that end at its owner: a rightward chain m0 -> m1 -> ... -> mj and a leftward chain
// m(p-1) -> ... -> mj. They are staggered so each link direction carries one block per step:
//
//   rightward, step s: member i sends B(i + p-1 - s) to i+1      (for blocks right of i)
//   leftward,  step s: member i sends B(s - (p-1-i)) to i-1      (for blocks left of i)
//
//      p = 4, step 0:  m0 -B3-> m1          m2 <-B0- m3
//             step 1:  m0 -B2-> m1 -B3-> m2 m1 <-B0- m2 <-B1- m3
//             step 2:  m0 -B1-> m1 -B2-> m2 -B3-> m3 ... (and leftward B0,B1,B2 arrive)
//
// Both chains reach the owner in step p-2; the leftward one is sent and reduced in an extra
// phase (p-1) so the two never write the own block in the same phase, and no rank waits in
// phase p-2 for a neighbour that is already in p-1. Busiest link: (p-1)/p of the data in
// each direction, the same as a one-directional ring, using both directions of each link.
//
// All-gather: block j spreads right (m_j -> m_j+1 -> ...) and left at once; member i sends
// B(i-s) rightward and B(i+s) leftward in step s.
//
// All-reduce of one range (the middle phase of a 2D all-reduce whose other dimension is a line):
// the partials flow to the middle member mc = (p-1)/2 from both ends, each member adding its
// own as they pass (in place, segment by segment), and the total flows back out both ways:
//
//      m0 --L--> m1 --L--> mc <--R-- m3 <--R-- m4        L = m0+..+mi, R = mi+..+m(p-1)
//      m0 <--T-- m1 <--T-- mc --T--> m3 --T--> m4        T = the total
//
// Every link direction carries the range once (a reduce-scatter and an all-gather along the
// line carry (p-1)/p of it each on the end links, the same in all), but as one pipeline of
// about p hops where they take 2(p-1) steps, each a hop and a block.
#include "schedule/line.hpp"

#include <algorithm>

namespace toroid::schedule {

std::uint32_t append_line_reduce_scatter(Schedule& s, const Group& g, const Blocks& blocks, int tag,
                                         const Source& from, Buf acc, Chunk result,
                                         std::uint32_t phase) {
  const int p = g.size(), i = g.position;
  if (p == 1) return phase + (append_move(s, from.chunk(s, blocks[0]), result, phase) ? 1 : 0);
  const int right = i + 1 < p ? g.members[i + 1] : -1, left = i > 0 ? g.members[i - 1] : -1;
  const int rtag = tag, ltag = tag + 1;
  auto add = [&](Kind k, int peer, int t, std::uint32_t ph, Chunk src, Chunk dst) {
    append_transfer(s, k, peer, t, ph, src, dst);
  };
  for (int step = 0; step <= p - 2; ++step) {
    const std::uint32_t ph = phase + static_cast<std::uint32_t>(step);
    // Rightward chain.
    if (right >= 0 && step >= i) {
      const int j = i + p - 1 - step;
      add(Kind::send, right, rtag, ph, i == 0 ? from.chunk(s, blocks[j]) : chunk(acc, blocks[j]),
          {});
    }
    if (left >= 0 && step >= i - 1) {
      const int j = i - 1 + p - 1 - step;
      add(Kind::recv_reduce, left, rtag, ph, from.chunk(s, blocks[j]),
          j == i ? result : chunk(acc, blocks[j]));
    }
    // Leftward chain.
    if (left >= 0 && step >= p - 1 - i) {
      const int j = step - (p - 1 - i);
      // The left neighbour's own block: when both chains end there, it is reduced a phase
      // later, so it is sent a phase later too. Sending it in this phase would hold this rank
      // in phase p-2 until the neighbour reaches p-1, and that wait would ripple down the line.
      const bool deferred = j == i - 1 && i - 1 > 0;
      add(Kind::send, left, ltag, deferred ? ph + 1 : ph,
          i == p - 1 ? from.chunk(s, blocks[j]) : chunk(acc, blocks[j]), {});
    }
    if (right >= 0 && step >= p - 2 - i) {
      const int j = step - (p - 2 - i);
      if (j < i) {
        add(Kind::recv_reduce, right, ltag, ph, from.chunk(s, blocks[j]), chunk(acc, blocks[j]));
      } else if (left < 0) {  // member 0: only the leftward chain brings its block
        add(Kind::recv_reduce, right, ltag, ph, from.chunk(s, blocks[j]), result);
      } else {  // both chains end here: reduce the second one a phase later
        add(Kind::recv_reduce, right, ltag, ph + 1, result, result);
      }
    }
  }
  return phase + static_cast<std::uint32_t>(p);  // p-1 steps and the deferred last reduction
}

std::uint32_t append_line_allgather(Schedule& s, const Group& g, const Blocks& blocks, int tag,
                                    Chunk own, const Source& out, std::uint32_t phase) {
  const int p = g.size(), i = g.position;
  const Chunk own_place = out.chunk(s, blocks[i]);
  append_move(s, own, own_place, phase);
  if (p == 1) return phase + 1;
  const int right = i + 1 < p ? g.members[i + 1] : -1, left = i > 0 ? g.members[i - 1] : -1;
  auto add = [&](Kind k, int peer, int t, std::uint32_t ph, Chunk src, Chunk dst) {
    append_transfer(s, k, peer, t, ph, src, dst);
  };
  for (int step = 0; step <= p - 2; ++step) {
    const std::uint32_t ph = phase + static_cast<std::uint32_t>(step);
    if (right >= 0 && step <= i)
      add(Kind::send, right, tag, ph, step == 0 ? own : out.chunk(s, blocks[i - step]), {});
    if (left >= 0 && step <= i - 1)
      add(Kind::recv, left, tag, ph, {}, out.chunk(s, blocks[i - 1 - step]));
    if (left >= 0 && i + step <= p - 1)
      add(Kind::send, left, tag + 1, ph, step == 0 ? own : out.chunk(s, blocks[i + step]), {});
    if (right >= 0 && i + 1 + step <= p - 1)
      add(Kind::recv, right, tag + 1, ph, {}, out.chunk(s, blocks[i + 1 + step]));
  }
  return phase + static_cast<std::uint32_t>(p - 1);
}

std::uint32_t append_line_allreduce(Schedule& s, const Group& g, int tag, Chunk partial,
                                    Chunk total, std::uint32_t phase) {
  const int p = g.size(), i = g.position, middle = (p - 1) / 2;
  // Its steps take 4 phases, its pipeline about p hops: it returns p phases on (a phase stands
  // for about a step's time), so that what follows on the same channels in phase order runs
  // after it in time too (torus2d_both's pipelined pieces; 4 instead cost the multipod 10-20%
  // from 128 MiB, the next piece's scatter queued behind this piece's gather).
  const auto span = static_cast<std::uint32_t>(std::max(p, 4));
  if (partial.count == 0 || p < 2) return phase;
  const int right = i + 1 < p ? g.members[i + 1] : -1, left = i > 0 ? g.members[i - 1] : -1;
  const int rtag = tag, ltag = tag + 1;
  auto add = [&](Kind k, int peer, int t, std::uint32_t ph, Chunk src, Chunk dst) {
    s.steps.push_back({k, peer, t, ph, src, dst});
  };
  if (i == middle) {
    if (left >= 0) add(Kind::recv_reduce, left, rtag, phase, partial, partial);
    add(Kind::recv_reduce, right, ltag, phase + 1, partial, total);
    add(Kind::send, right, rtag, phase + 2, total, {});
    if (left >= 0) add(Kind::send, left, ltag, phase + 2, total, {});
    return phase + span;
  }
  // On the middle's left the partials go right and the total comes from the right; mirrored on
  // its right.
  const bool west = i < middle;
  const int inward = west ? right : left, outward = west ? left : right;
  const int in_tag = west ? rtag : ltag, out_tag = west ? ltag : rtag;
  if (outward >= 0) add(Kind::recv_reduce, outward, in_tag, phase, partial, partial);
  add(Kind::send, inward, in_tag, phase + 1, partial, {});
  add(Kind::recv, inward, out_tag, phase + 2, {}, total);
  if (outward >= 0) add(Kind::send, outward, out_tag, phase + 3, total, {});
  return phase + span;
}

}  // namespace toroid::schedule
