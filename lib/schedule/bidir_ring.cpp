// Bidirectional ring: each block reduced by two chains that meet at its owner.
//
// p members in a ring, member i owns block Bi. Of the p-1 other members, the L before the owner
// reduce towards it rightward and the R = p-1-L after it leftward, each chain adding one
// member's contribution a hop:
//
//   block j:   m(j-L) --> ... --> m(j-1) --> mj <-- m(j+1) <-- ... <-- m(j+R)
//
//   rightward, step t < L: member i sends B(i+L-t) to i+1 (its own input at t = 0, else the
//                          partial it received at t-1 plus its input)
//   leftward,  step t < R: member i sends B(i-R+t) to i-1
//
//      p = 5, L = R = 2:  step 0   m0 -B2-> m1   m0 -B3-> m4      (and so on round the ring)
//                         step 1   m1 -B2-> m2   m4 -B3-> m3      B2 and B3 complete
//
// Member i sits on the rightward chains of B(i+1..i+L) and the leftward ones of B(i-R..i-1):
// disjoint blocks, so one partial a block. So a reduce-scatter is max(L, R) steps where a
// one-direction ring (ring.hpp) takes p-1, and each step moves a block each way:
// (p-1)/p of the data leaves every member, half each way, as when the blocks' halves go round
// the ring in opposite directions. Only the chains are shorter: on a torus, where each step
// costs a hop and a segment, the ring phases take half the time when they are bound by steps.
//
// Odd p: L = R = (p-1)/2, whole blocks; both chains reach the owner in the same step, so the
// leftward one's last hop goes a phase later (the owner adds the two partials one after the
// other). Even p: the antipode would make one way carry p/2 blocks and the other p/2-1, so each
// block is cut in halves: the first halves with L = p/2 (tag), the second with L = p/2-1
// (tag+1), and each way carries p-1 halves. p = 2 is the two lanes to the one neighbour.
// Where the halves lie in a block is the caller's HalfCut (group.hpp): the middle, or relative
// to the row that follows.
//
// All-gather: the reverse. Block j spreads from its owner leftward over L members and rightward
// over R, every member forwarding what it received the step before:
//
//   leftward,  step t < L: member i sends B(i+t) to i-1 (its own at t = 0)
//   rightward, step t < R: member i sends B(i-t) to i+1
#include "schedule/bidir_ring.hpp"

#include <algorithm>

namespace toroid::schedule {
namespace {

struct Ring {
  int p, i, next, prev;
};

Ring ring_of(const Group& g) {
  const int p = g.size(), i = g.position;
  return {p, i, g.members[ring_position(i + 1, p)], g.members[ring_position(i - 1, p)]};
}

// One set of blocks (each as its runs), L of the others reducing rightward. Returns the phase
// after its steps.
std::uint32_t chains_reduce_scatter(Schedule& s, const Ring& r, const std::vector<BlockRuns>& bl,
                                    int L, int tag, const Source& from, Buf acc, Chunk result,
                                    std::uint32_t phase) {
  const int p = r.p, i = r.i, R = p - 1 - L;
  const bool tie = L == R;  // both end in one step: the leftward one's last hop a phase later
  // The owner's first arriving partial adds its own input; the second adds to that.
  const bool rightward_first = R == 0 || (L > 0 && L <= R);
  for (int t = 0; t < std::max(L, R); ++t) {
    const std::uint32_t ph = phase + static_cast<std::uint32_t>(t);
    if (t < L) {
      const int sent = ring_position(i + L - t, p), got = ring_position(i + L - 1 - t, p);
      append_transfer(s, Kind::send, r.next, tag, ph,
                      t == 0 ? from.chunk(s, bl[sent]) : Source(acc).chunk(s, bl[sent]), {});
      const bool last = got == i;
      const Chunk local = last && !rightward_first ? result : from.chunk(s, bl[got]);
      append_transfer(s, Kind::recv_reduce, r.prev, tag, ph, local,
                      last ? result : Source(acc).chunk(s, bl[got]));
    }
    if (t < R) {
      const int sent = ring_position(i - R + t, p), got = ring_position(i + 1 - R + t, p);
      const bool last_hop = t == R - 1;
      const std::uint32_t lph = tie && last_hop ? ph + 1 : ph;
      append_transfer(s, Kind::send, r.prev, tag, lph,
                      t == 0 ? from.chunk(s, bl[sent]) : Source(acc).chunk(s, bl[sent]), {});
      const bool last = got == i;
      const Chunk local = last && rightward_first ? result : from.chunk(s, bl[got]);
      append_transfer(s, Kind::recv_reduce, r.next, tag, lph, local,
                      last ? result : Source(acc).chunk(s, bl[got]));
    }
  }
  return phase + static_cast<std::uint32_t>(std::max(L, R) + (tie && R > 0 ? 1 : 0));
}

// One set of blocks spreading L members leftward and R rightward from their owners.
std::uint32_t chains_allgather(Schedule& s, const Ring& r, const std::vector<BlockRuns>& bl, int L,
                               int tag, Chunk own, const Source& out, std::uint32_t phase) {
  const int p = r.p, i = r.i, R = p - 1 - L;
  for (int t = 0; t < std::max(L, R); ++t) {
    const std::uint32_t ph = phase + static_cast<std::uint32_t>(t);
    if (t < L) {
      append_transfer(s, Kind::send, r.prev, tag, ph,
                      t == 0 ? own : out.chunk(s, bl[ring_position(i + t, p)]), {});
      append_transfer(s, Kind::recv, r.next, tag, ph, {},
                      out.chunk(s, bl[ring_position(i + 1 + t, p)]));
    }
    if (t < R) {
      append_transfer(s, Kind::send, r.next, tag, ph,
                      t == 0 ? own : out.chunk(s, bl[ring_position(i - t, p)]), {});
      append_transfer(s, Kind::recv, r.prev, tag, ph, {},
                      out.chunk(s, bl[ring_position(i - 1 - t, p)]));
    }
  }
  return phase + static_cast<std::uint32_t>(std::max(L, R));
}

// Odd p: whole blocks, as runs of one.
std::vector<BlockRuns> whole(const Blocks& b) {
  std::vector<BlockRuns> w(b.size());
  for (std::size_t j = 0; j < b.size(); ++j) w[j] = {b[j]};
  return w;
}

}  // namespace

std::uint32_t append_bidir_ring_reduce_scatter(Schedule& s, const Group& g, const Blocks& blocks,
                                               int tag, const Source& from, Buf acc, Chunk result,
                                               std::uint32_t phase, const HalfCut& cut) {
  const Ring r = ring_of(g);
  if (r.p == 1) return phase + (append_move(s, from.chunk(s, blocks[0]), result, phase) ? 1 : 0);
  if (r.p % 2)
    return chains_reduce_scatter(s, r, whole(blocks), (r.p - 1) / 2, tag, from, acc, result, phase);
  const Block mine = blocks[static_cast<std::size_t>(r.i)];
  const std::vector<BlockRuns> first = halves(blocks, cut, true),
                               second = halves(blocks, cut, false);
  const std::size_t i = static_cast<std::size_t>(r.i);
  const std::uint32_t a = chains_reduce_scatter(s, r, first, r.p / 2, tag, from, acc,
                                                runs_of(s, result, mine, first[i]), phase);
  const std::uint32_t b = chains_reduce_scatter(s, r, second, r.p / 2 - 1, tag + 1, from, acc,
                                                runs_of(s, result, mine, second[i]), phase);
  return std::max(a, b);
}

std::uint32_t append_bidir_ring_allgather(Schedule& s, const Group& g, const Blocks& blocks,
                                          int tag, Chunk own, const Source& out,
                                          std::uint32_t phase, const HalfCut& cut) {
  const Ring r = ring_of(g);
  const bool moved = append_move(s, own, out.chunk(s, blocks[r.i]), phase);
  if (r.p == 1) return phase + (moved ? 1 : 0);
  if (r.p % 2) return chains_allgather(s, r, whole(blocks), (r.p - 1) / 2, tag, own, out, phase);
  const Block mine = blocks[static_cast<std::size_t>(r.i)];
  const std::vector<BlockRuns> first = halves(blocks, cut, true),
                               second = halves(blocks, cut, false);
  const std::size_t i = static_cast<std::size_t>(r.i);
  const std::uint32_t a =
      chains_allgather(s, r, first, r.p / 2, tag, runs_of(s, own, mine, first[i]), out, phase);
  const std::uint32_t b = chains_allgather(s, r, second, r.p / 2 - 1, tag + 1,
                                           runs_of(s, own, mine, second[i]), out, phase);
  return std::max(a, b);
}

}  // namespace toroid::schedule
