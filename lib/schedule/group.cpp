#include "schedule/group.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace toroid::schedule {

Group group_of(std::vector<int> members, int me) {
  Group g;
  const auto it = std::find(members.begin(), members.end(), me);
  if (it == members.end()) throw std::logic_error("group_of: rank is not a member");
  g.position = static_cast<int>(it - members.begin());
  g.members = std::move(members);
  return g;
}

Blocks even_blocks(std::uint64_t offset, std::uint64_t count, int p) {
  Blocks b(p);
  for (int j = 0; j < p; ++j) {
    b[j] = block_of(count, p, j);
    b[j].offset += offset;
  }
  return b;
}

Blocks first_halves(const Blocks& b) {
  Blocks h(b.size());
  for (std::size_t j = 0; j < b.size(); ++j) h[j] = {b[j].offset, b[j].count - b[j].count / 2};
  return h;
}

Blocks second_halves(const Blocks& b) {
  Blocks h(b.size());
  for (std::size_t j = 0; j < b.size(); ++j) {
    const std::uint64_t first = b[j].count - b[j].count / 2;
    h[j] = {b[j].offset + first, b[j].count / 2};
  }
  return h;
}

Chunk first_half(Chunk c) { return {c.buf, c.offset, c.count - c.count / 2}; }
Chunk second_half(Chunk c) {
  const std::uint64_t first = c.count - c.count / 2;
  return {c.buf, c.offset + first, c.count / 2};
}

Chunk gathered_chunk(Schedule& s, Buf buf, const std::vector<Block>& runs) {
  std::vector<Block> merged;
  std::uint64_t count = 0;
  for (const Block& r : runs) {
    if (r.count == 0) continue;
    count += r.count;
    if (!merged.empty() && merged.back().offset + merged.back().count == r.offset)
      merged.back().count += r.count;
    else
      merged.push_back(r);
  }
  if (merged.empty()) return {buf, 0, 0};
  if (merged.size() == 1) return chunk(buf, merged[0]);
  Chunk c{buf, merged[0].offset, count};
  c.first_piece = static_cast<std::uint32_t>(s.pieces.size());
  c.pieces = static_cast<std::uint32_t>(merged.size());
  c.extent = merged.back().offset + merged.back().count - merged[0].offset;
  s.pieces.insert(s.pieces.end(), merged.begin(), merged.end());
  return c;
}

Chunk Source::chunk(Schedule& s, const Block& b) const {
  if (!map) return schedule::chunk(buf, b);
  std::vector<Block> runs;
  const std::uint64_t end = b.offset + b.count;
  auto it = std::upper_bound(map->runs.begin(), map->runs.end(), b.offset,
                             [](std::uint64_t at, const Gather::Run& r) { return at < r.at; });
  if (it != map->runs.begin()) --it;
  for (; it != map->runs.end() && it->at < end; ++it) {
    const std::uint64_t lo = std::max(b.offset, it->at), hi = std::min(end, it->at + it->count);
    if (lo < hi) runs.push_back({it->from + (lo - it->at), hi - lo});
  }
  return gathered_chunk(s, buf, runs);
}

bool append_move(Schedule& s, Chunk from, Chunk to, std::uint32_t phase) {
  if (from.count == 0 ||
      (!from.gathered() && !to.gathered() && from.buf == to.buf && from.offset == to.offset))
    return false;
  s.steps.push_back({Kind::copy, -1, 0, phase, from, to});
  return true;
}

std::uint32_t append_halving_doubling(Schedule& s, Block region, int moves, std::uint32_t position,
                                      const std::function<HalvingPeer(int move)>& peer, int tag,
                                      Buf from, bool average, std::uint32_t divisor,
                                      std::uint32_t phase) {
  const Blocks blocks = even_blocks(region.offset, region.count, 1 << moves);
  auto range = [&](std::uint32_t lo, std::uint32_t hi) {  // blocks [lo, hi) as one chunk
    const std::uint64_t begin = blocks[lo].offset,
                        end = blocks[hi - 1].offset + blocks[hi - 1].count;
    return Block{begin, end - begin};
  };
  auto add = [&](Kind k, int to, Chunk src, Chunk dst, std::uint32_t half = 0) {
    if ((k == Kind::send ? src.count : dst.count) > 0)
      s.steps.push_back({k, to, tag, phase + half, src, dst});
  };
  // Blocks [lo, hi) as its two halves, the upper one first when `upper_first`.
  auto halves = [&](std::uint32_t lo, std::uint32_t hi, bool upper_first) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    std::array<Block, 2> h{range(lo, mid), range(mid, hi)};
    if (upper_first) std::swap(h[0], h[1]);
    return h;
  };
  std::uint32_t lo = 0, hi = 1U << moves;
  for (int m = 0; m < moves; ++m) {
    const HalvingPeer q = peer(m);
    const std::uint32_t mask = 1U << (moves - 1 - m), mid = lo + (hi - lo) / 2;
    const bool lower = (position & mask) == 0;
    const std::uint32_t keep_lo = lower ? lo : mid, give_lo = lower ? mid : lo;
    if (m + 1 == moves) {
      add(Kind::send, q.rank, chunk(from, range(give_lo, give_lo + 1)), {});
      add(Kind::recv_reduce, q.rank, chunk(from, range(keep_lo, keep_lo + 1)),
          chunk(Buf::output, range(keep_lo, keep_lo + 1)));
    } else {
      // Each half in two, the half its receiver sends on at the next move first (group.hpp),
      // in phases of their own: that send then follows this transfer from its first segment,
      // and the receiver's reduction of the rest follows the second.
      const std::uint32_t next = mask >> 1;
      const auto give = halves(give_lo, give_lo + mask, (q.position & next) == 0);
      const auto keep = halves(keep_lo, keep_lo + mask, (position & next) == 0);
      for (std::uint32_t h = 0; h < 2; ++h) {
        add(Kind::send, q.rank, chunk(from, give[h]), {}, h);
        add(Kind::recv_reduce, q.rank, chunk(from, keep[h]), chunk(Buf::output, keep[h]), h);
      }
      ++phase;
    }
    ++phase;
    lo = keep_lo, hi = keep_lo + mask;
    from = Buf::output;
  }
  phase = append_average(s, average, chunk(Buf::output, blocks[position]), divisor, phase);
  for (int m = moves - 1; m >= 0; --m) {
    const HalvingPeer q = peer(m);
    const std::uint32_t mask = 1U << (moves - 1 - m);
    const std::uint32_t mine = position & ~(mask - 1), theirs = q.position & ~(mask - 1);
    // What a rank holds is the half it held before the last move (final) and the half that
    // move brought (maybe still arriving): the final one first, so the other can follow its
    // receive to the end.
    if (mask == 1) {
      add(Kind::send, q.rank, chunk(Buf::output, range(mine, mine + 1)), {});
      add(Kind::recv, q.rank, {}, chunk(Buf::output, range(theirs, theirs + 1)));
    } else {
      const auto out = halves(mine, mine + mask, (position & (mask >> 1)) != 0);
      const auto in = halves(theirs, theirs + mask, (q.position & (mask >> 1)) != 0);
      for (std::uint32_t h = 0; h < 2; ++h) {
        add(Kind::send, q.rank, chunk(Buf::output, out[h]), {}, h);
        add(Kind::recv, q.rank, {}, chunk(Buf::output, in[h]), h);
      }
      ++phase;
    }
    ++phase;
  }
  return phase;
}

std::uint32_t append_average(Schedule& s, bool average, Chunk c, std::uint32_t divisor,
                             std::uint32_t phase) {
  if (!average || c.count == 0 || divisor <= 1) return phase;
  s.steps.push_back({Kind::scale, -1, 0, phase, {}, c, divisor});
  return phase + 1;
}

}  // namespace toroid::schedule
