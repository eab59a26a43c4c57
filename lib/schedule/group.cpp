#include "schedule/group.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

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

Blocks spread_blocks(std::uint64_t offset, std::uint64_t count, int p) {
  Blocks b(static_cast<std::size_t>(p));
  const auto edge = [&](int j) {  // floor(j * count / p) without overflow
    const auto q = static_cast<std::uint64_t>(p), u = static_cast<std::uint64_t>(j);
    return u * (count / q) + u * (count % q) / q;
  };
  for (int j = 0; j < p; ++j)
    b[static_cast<std::size_t>(j)] = {offset + edge(j), edge(j + 1) - edge(j)};
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

std::vector<Blocks> even_sub_blocks(const Blocks& b, int parts) {
  std::vector<Blocks> sub;
  sub.reserve(b.size());
  for (const Block& x : b) sub.push_back(even_blocks(x.offset, x.count, parts));
  return sub;
}

std::vector<BlockRuns> halves(const Blocks& b, const HalfCut& cut, bool first) {
  std::vector<BlockRuns> h(b.size());
  if (cut.sub.empty()) {
    const Blocks middle = first ? first_halves(b) : second_halves(b);
    for (std::size_t j = 0; j < b.size(); ++j) h[j] = {middle[j]};
    return h;
  }
  for (std::size_t j = 0; j < b.size(); ++j) {
    const Blocks& sub = cut.sub[j];
    const int k = static_cast<int>(sub.size());
    BlockRuns& runs = h[j];
    // Sub-blocks first, first+1, ... round the block: k/2 whole ones to each half, the middle
    // one of an odd number cut at its middle (the first half takes its larger part).
    for (int t = 0; t < k; ++t) {
      const Block& x = sub[static_cast<std::size_t>(ring_position(cut.first + t, k))];
      Block piece{x.offset, 0};
      if (k % 2 && t == k / 2) {
        const std::uint64_t lead = x.count - x.count / 2;
        piece = first ? Block{x.offset, lead} : Block{x.offset + lead, x.count / 2};
      } else if ((t < k / 2) == first) {
        piece = x;
      }
      if (piece.count > 0) runs.push_back(piece);  // empty pieces would hide the cut below
    }
    std::sort(runs.begin(), runs.end(),
              [](const Block& a, const Block& c) { return a.offset < c.offset; });
    // Adjacent pieces as one run; then at least two, so that every chip's half is gathered
    // alike, wrapped round the block or not (the next row's reads of it then wait for it
    // the same way on every chip: a gathered read never follows a contiguous write).
    BlockRuns merged;
    for (const Block& x : runs) {
      if (!merged.empty() && merged.back().offset + merged.back().count == x.offset)
        merged.back().count += x.count;
      else
        merged.push_back(x);
    }
    if (merged.size() == 1 && k > 2) {  // not wrapped: cut after its first (lowest) piece
      const std::uint64_t lead = runs.front().count;
      if (lead > 0 && lead < merged[0].count)
        merged = {{merged[0].offset, lead}, {merged[0].offset + lead, merged[0].count - lead}};
    }
    runs = std::move(merged);
  }
  return h;
}

Chunk runs_of(Schedule& s, const Chunk& c, const Block& whole, const BlockRuns& runs) {
  std::vector<Block> at;  // collected first: gathered_chunk adds to s.pieces
  for (const Block& r : runs)
    each_run(c, s.pieces.data(), r.offset - whole.offset, r.offset - whole.offset + r.count,
             [&](std::uint64_t o, std::uint64_t, std::uint64_t n) {
               at.push_back({o, n});
             });
  return gathered_chunk(s, c.buf, at, runs.size() > 1);
}

Chunk part_of(Schedule& s, const Chunk& c, std::uint64_t lo, std::uint64_t n) {
  if (!c.gathered()) return {c.buf, c.offset + lo, n};
  std::vector<Block> runs;  // collected first: gathered_chunk adds to s.pieces
  each_run(c, s.pieces.data(), lo, lo + n, [&](std::uint64_t at, std::uint64_t, std::uint64_t k) {
    runs.push_back({at, k});
  });
  return gathered_chunk(s, c.buf, runs);
}
Chunk first_half(Schedule& s, const Chunk& c) { return part_of(s, c, 0, c.count - c.count / 2); }
Chunk second_half(Schedule& s, const Chunk& c) {
  return part_of(s, c, c.count - c.count / 2, c.count / 2);
}

Chunk gathered_chunk(Schedule& s, Buf buf, const std::vector<Block>& runs, bool apart) {
  std::vector<Block> merged;
  std::uint64_t count = 0;
  for (const Block& r : runs) {
    if (r.count == 0) continue;
    count += r.count;
    if (!apart && !merged.empty() && merged.back().offset + merged.back().count == r.offset)
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

namespace {

// Appends to `runs` where the map puts elements [b.offset, b.offset + b.count) of its layout.
void mapped_runs(const Gather& map, const Block& b, std::vector<Block>& runs) {
  const std::uint64_t end = b.offset + b.count;
  auto it = std::upper_bound(map.runs.begin(), map.runs.end(), b.offset,
                             [](std::uint64_t at, const Gather::Run& r) { return at < r.at; });
  if (it != map.runs.begin()) --it;
  for (; it != map.runs.end() && it->at < end; ++it) {
    const std::uint64_t lo = std::max(b.offset, it->at), hi = std::min(end, it->at + it->count);
    if (lo < hi) runs.push_back({it->from + (lo - it->at), hi - lo});
  }
}

}  // namespace

Chunk Source::chunk(Schedule& s, const Block& b) const {
  if (!map) return schedule::chunk(buf, b);
  std::vector<Block> runs;
  mapped_runs(*map, b, runs);
  return gathered_chunk(s, buf, runs);
}

// The runs ascend in the layout, and a range of a layout ascends in the vector (the builders'
// layouts keep a member's ranks in rank order), so the mapped runs ascend too.
Chunk Source::chunk(Schedule& s, const BlockRuns& runs) const {
  if (runs.size() == 1) return chunk(s, runs[0]);
  std::vector<Block> at;
  for (const Block& r : runs)
    if (map)
      mapped_runs(*map, r, at);
    else
      at.push_back(r);
  return gathered_chunk(s, buf, at, true);
}

namespace {

bool same_place(const Schedule& s, const Chunk& a, const Chunk& b) {
  if (a.buf != b.buf || a.offset != b.offset || a.gathered() != b.gathered()) return false;
  if (!a.gathered()) return true;
  const auto runs = s.pieces.begin();
  return a.count == b.count && a.pieces == b.pieces &&
         std::equal(runs + a.first_piece, runs + a.first_piece + a.pieces, runs + b.first_piece);
}

}  // namespace

bool append_move(Schedule& s, Chunk from, Chunk to, std::uint32_t phase) {
  if (from.count == 0 || same_place(s, from, to)) return false;
  s.steps.push_back({Kind::copy, -1, 0, phase, from, to});
  return true;
}

std::uint32_t append_halving_doubling(Schedule& s, Block region, int moves, std::uint32_t position,
                                      const std::function<HalvingPeer(int move, int k)>& peer,
                                      int tag, Buf from, bool average, std::uint32_t divisor,
                                      std::uint32_t phase) {
  const Blocks blocks = spread_blocks(region.offset, region.count, 1 << moves);
  auto range = [&](std::uint32_t lo, std::uint32_t hi) {  // blocks [lo, hi) as one chunk
    const std::uint64_t begin = blocks[lo].offset,
                        end = blocks[hi - 1].offset + blocks[hi - 1].count;
    return Block{begin, end - begin};
  };
  // A step in `phase`, or `piece` phases later (a move's pieces go one phase each).
  auto add = [&](Kind k, int to, Chunk src, Chunk dst, std::uint32_t piece = 0) {
    if ((k == Kind::send ? src.count : dst.count) > 0)
      s.steps.push_back({k, to, tag, phase + piece, src, dst});
  };
  // The `n` blocks from `at` as `keeper` splits them at a reduce-scatter move: where the half
  // it gives starts, and where the half it keeps.
  auto split = [](std::uint32_t at, std::uint32_t n, std::uint32_t keeper) {
    return (keeper & n) ? std::pair{at, at + n} : std::pair{at + n, at};
  };
  // The `size` blocks from `lo` that the rank at `self` receives at a reduce-scatter move, in
  // the order it goes on with them: the half it gives at its next move, then the half it keeps;
  // and each of those halves in two the same way, the given one as `taker` (who keeps it at
  // that next move) goes on, the kept one as `self` does.
  auto in_use_order = [&](std::uint32_t lo, std::uint32_t size, std::uint32_t self,
                          std::uint32_t taker) {
    const std::uint32_t half = size / 2;
    const auto [given, kept] = split(lo, half, self);
    if (half < 2) return std::vector<Block>{range(given, given + 1), range(kept, kept + 1)};
    std::vector<Block> out;
    for (const auto& [at, keeper] : {std::pair{given, taker}, std::pair{kept, self}}) {
      const auto [gives, keeps] = split(at, half / 2, keeper);
      out.push_back(range(gives, gives + half / 2));
      out.push_back(range(keeps, keeps + half / 2));
    }
    return out;
  };
  std::uint32_t lo = 0;  // the range this rank holds: 2^(moves-m) blocks from lo
  for (int m = 0; m < moves; ++m) {
    const HalvingPeer q = peer(m, 0);
    const std::uint32_t mask = 1U << (moves - 1 - m);
    const auto [give_lo, keep_lo] = split(lo, mask, position);
    if (m + 1 == moves) {
      add(Kind::send, q.rank, chunk(from, range(give_lo, give_lo + 1)), {});
      add(Kind::recv_reduce, q.rank, chunk(from, range(keep_lo, keep_lo + 1)),
          chunk(Buf::output, range(keep_lo, keep_lo + 1)));
    } else {
      // In the order its receiver goes on with it (group.hpp), each piece in a phase of its
      // own: the receiver's next send follows this transfer from its first segment.
      const std::vector<Block> give = in_use_order(give_lo, mask, q.position, peer(m, 1).position);
      const std::vector<Block> keep =
          in_use_order(keep_lo, mask, position, peer(m + 1, 0).position);
      for (std::uint32_t k = 0; k < give.size(); ++k) {
        add(Kind::send, q.rank, chunk(from, give[k]), {}, k);
        add(Kind::recv_reduce, q.rank, chunk(from, keep[k]), chunk(Buf::output, keep[k]), k);
      }
      phase += static_cast<std::uint32_t>(give.size()) - 1;
    }
    ++phase;
    lo = keep_lo;
    from = Buf::output;
  }
  phase = append_average(s, average, chunk(Buf::output, blocks[position]), divisor, phase);
  // Blocks [lo, lo + size) as the rank holding it at some all-gather move sends them: the half
  // with position `held(0)` (what it held before) whole, then the other half as the move before
  // brought it, from the rank at position held(1) (group.hpp).
  auto pieces = [&](std::uint32_t lo, std::uint32_t size,
                    const std::function<std::uint32_t(int)>& held) {
    std::vector<Block> out;
    for (int k = 0; size > 1; ++k) {
      size /= 2;
      const bool upper = (held(k) & size) != 0;
      out.push_back(range(upper ? lo + size : lo, (upper ? lo + size : lo) + size));
      if (!upper) lo += size;
    }
    out.push_back(range(lo, lo + 1));
    return out;
  };
  for (int m = moves - 1; m >= 0; --m) {
    const HalvingPeer q = peer(m, 0);
    const std::uint32_t mask = 1U << (moves - 1 - m);
    const std::uint32_t mine = position & ~(mask - 1), theirs = q.position & ~(mask - 1);
    const std::vector<Block> out =
        pieces(mine, mask, [&](int k) { return k == 0 ? position : peer(m + 1, k - 1).position; });
    const std::vector<Block> in = pieces(theirs, mask, [&](int k) { return peer(m, k).position; });
    for (std::uint32_t k = 0; k < out.size(); ++k) {
      add(Kind::send, q.rank, chunk(Buf::output, out[k]), {}, k);
      add(Kind::recv, q.rank, {}, chunk(Buf::output, in[k]), k);
    }
    phase += static_cast<std::uint32_t>(out.size());
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
