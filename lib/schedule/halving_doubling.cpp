// Latency algorithms for all-reduce on any number of ranks.
//
//   p2    = largest power of two <= p;  rem = p - p2
//   fold  = ranks r < 2·rem pair up (r even, r+1): the even one sends its whole vector to the
//           odd one and sits out; p2 ranks remain, renumbered 0..p2-1 ("new rank")
//   unfold= at the end the odd one sends the result back to its even partner
//
// recursive_doubling: log2(p2) rounds; in round k new rank n exchanges its whole partial vector
// with n XOR 2^k and both reduce. Partial vectors alternate between two scratch slots so a
// round never writes what it sends; the last round writes the output.
//
//      n0 <-> n1   n2 <-> n3        round 0 (distance 1)
//      n0 <----> n2, n1 <----> n3   round 1 (distance 2)
//
// rabenseifner: recursive halving reduce-scatter (round k: keep one half of the current range
// of blocks, send the other half to n XOR p2/2^(k+1), reduce what arrives) leaves new rank n with
// block n; then recursive doubling all-gather reverses the exchanges. 2·log2(p2) rounds (each
// sent in pieces in the order the next rounds use them, group.hpp), about 2(p2-1)/p2 of the
// vector sent per rank.
#include <bit>

#include "schedule/build.hpp"
#include "schedule/group.hpp"

namespace toroid::schedule {
namespace {

struct Fold {
  int p2 = 1, rem = 0;
  int new_rank = -1;  // -1: an even rank that sits out
  bool odd_folded = false;
  int real(int n) const { return n < rem ? 2 * n + 1 : n + rem; }
};

Fold fold_of(int rank, int p) {
  Fold f;
  f.p2 = static_cast<int>(std::bit_floor(static_cast<unsigned>(p)));
  f.rem = p - f.p2;
  if (rank < 2 * f.rem) {
    f.odd_folded = rank % 2 == 1;
    f.new_rank = f.odd_folded ? rank / 2 : -1;
  } else {
    f.new_rank = rank - f.rem;
  }
  return f;
}

struct HalvingBuilder {
  Schedule& s;
  std::uint32_t phase = 0;
  void add(Kind k, int peer, Chunk src, Chunk dst) {
    if ((k == Kind::send ? src.count : dst.count) > 0)
      s.steps.push_back({k, peer, 0, phase, src, dst});
  }
};

}  // namespace

Schedule build_halving_doubling(Algorithm a, const Spec& r, const Context& ctx) {
  Schedule s;
  const int p = ctx.nranks(), rank = ctx.rank;
  const std::uint64_t n = r.count;
  const Chunk input{Buf::input, 0, n}, output{Buf::output, 0, n};
  HalvingBuilder b{s};
  const Fold f = fold_of(rank, p);
  auto scale = [&](Chunk c) {
    b.phase = append_average(s, r.average, c, static_cast<std::uint32_t>(p), b.phase);
  };
  if (p == 1) {
    if (!r.in_place && n > 0) s.steps.push_back({Kind::copy, -1, 0, 0, input, output});
    return s;
  }
  if (f.new_rank < 0) {  // folded away: hand over the data, get the result back
    b.add(Kind::send, rank + 1, input, {});
    ++b.phase;
    b.add(Kind::recv, rank + 1, {}, output);
    return s;
  }
  const int rounds = std::countr_zero(static_cast<unsigned>(f.p2));
  if (a == Algorithm::recursive_doubling) {
    s.scratch_count = 2 * n;
    AlternatingTargets targets(n, rounds + (f.odd_folded ? 1 : 0), r.in_place);
    Chunk cur = input;
    auto next_target = [&]() { return targets.next(); };
    if (f.odd_folded) {
      const Chunk t = next_target();
      b.add(Kind::recv_reduce, rank - 1, cur, t);
      ++b.phase;
      cur = t;
    }
    for (int mask = 1; mask < f.p2; mask <<= 1) {
      const int partner = f.real(f.new_rank ^ mask);
      const Chunk t = next_target();
      b.add(Kind::send, partner, cur, {});
      b.add(Kind::recv_reduce, partner, cur, t);
      ++b.phase;
      cur = t;
    }
    if (cur.buf != Buf::output && n > 0)
      s.steps.push_back({Kind::copy, -1, 0, b.phase++, cur, output});
  } else {
    Buf from = Buf::input;
    if (f.odd_folded) {
      b.add(Kind::recv_reduce, rank - 1, input, output);
      ++b.phase;
      from = Buf::output;
    }
    b.phase = append_halving_doubling(
        s, {0, n}, rounds, static_cast<std::uint32_t>(f.new_rank),
        [&](int m, int k) {  // distance p2/2 first
          int at = f.new_rank;
          for (int j = m; j <= m + k; ++j) at ^= 1 << (rounds - 1 - j);
          return HalvingPeer{f.real(at), static_cast<std::uint32_t>(at)};
        },
        0, from, r.average, static_cast<std::uint32_t>(p), b.phase);
  }
  if (a == Algorithm::recursive_doubling) scale(output);
  if (f.odd_folded) {
    b.add(Kind::send, rank - 1, output, {});
    ++b.phase;
  }
  return s;
}

}  // namespace toroid::schedule
