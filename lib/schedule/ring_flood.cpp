// Ring flood all-reduce. Terms: k members round a ring, member i's partial x_i; W_t = the sum of
// the t members before i (x_(i-1) + ... + x_(i-t)), received from the left at step t-1; h = k/2
// messages go rightward, k-1-h leftward.
//
//   step t, every member:  receive W_(t+1) from the left, send x_i + W_(t+1) to the right
//                          (= the right neighbour's W_(t+2)); the mirror image leftward
//
//       x0 ──x0──▶ x1 ──x0+x1──▶ x2 ──x0+x1+x2──▶ ...      (and the same from every member)
//
// After h steps member i holds the h members on its left and the k-1-h on its right: the total.
// Every member is its own root, so the total needs no trip back: about k/2 hops against a
// reduce-scatter's and an all-gather's k (bidir_ring.hpp), while each link direction carries
// the whole range h times instead of once and every member reduces k-1 ranges instead of
// (k-1)/k of one. So it pays where the range crosses a link in less than a hop's latency
// (torus_dims.cpp: the last row of the every-dimension-busy all-reduce).
//
// Each forward is one step (recv_reduce of the received window onto x_i into a send buffer),
// two buffers a direction taking turns, so that a forward's segments follow the window in as
// it lands while the one before still leaves. The sends read a copy of x_i; the last window
// from the left lands on x_i's place (x_i's copy added), the last one from the right a phase
// later (no two steps write it in one phase).
#include "schedule/ring_flood.hpp"

#include <algorithm>

namespace toroid::schedule {

std::uint32_t append_ring_flood_allreduce(Schedule& s, const Group& g, int tag, Chunk partial,
                                          std::uint64_t scratch_at, std::uint32_t phase) {
  const int k = g.size(), i = g.position;
  const int right = g.members[static_cast<std::size_t>((i + 1) % k)];
  const int left = g.members[static_cast<std::size_t>((i + k - 1) % k)];
  const int rightward = k / 2, leftward = k - 1 - rightward;
  const std::uint64_t n = partial.count;
  s.scratch_count = std::max(s.scratch_count, scratch_at + 5 * n);
  // x_i's copy, which the sends and forwards read: the last windows land on x_i itself, and
  // writing it while a send of it still waited for a neighbour's receive would wait round the
  // ring for ever.
  const Chunk own{Buf::scratch, scratch_at + 4 * n, n};
  const auto buffer = [&](int direction, int t) {  // direction 0: rightward
    return Chunk{Buf::scratch, scratch_at + static_cast<std::uint64_t>(2 * direction + t % 2) * n,
                 n};
  };
  append_move(s, partial, own, phase);
  const std::uint32_t first = phase + 1;
  // One direction: `messages` windows received from `from`, forwarded (x_i added) to `to`,
  // the last landing on x_i's place at phase `last` (onto `onto`: x_i's copy or the place). The
  // last message goes in phase `last` on both sides: sent earlier, pipelined pieces that share
  // the channel (torus_dims.cpp) would send theirs between it and its receive, in another order
  // than their receives.
  const auto chain = [&](int direction, int messages, int from, int to, std::uint32_t last,
                         Chunk onto) {
    const int t_tag = tag + direction;
    const auto at = [&](int m) {
      return m + 1 == messages ? last : first + static_cast<std::uint32_t>(m);
    };
    append_transfer(s, Kind::send, to, t_tag, at(0), own, {});
    for (int m = 0; m + 1 < messages; ++m) {
      append_transfer(s, Kind::recv_reduce, from, t_tag, at(m), own, buffer(direction, m));
      append_transfer(s, Kind::send, to, t_tag, at(m + 1), buffer(direction, m), {});
    }
    append_transfer(s, Kind::recv_reduce, from, t_tag, last, onto, partial);
  };
  // The last windows land after the first sends (a ring of 3 has one message each way).
  const auto end = first + static_cast<std::uint32_t>(std::max(rightward, 2));
  chain(0, rightward, left, right, end - 1, own);
  chain(1, leftward, right, left, end, partial);
  return end + 1;
}

}  // namespace toroid::schedule
