#include "schedule/dimension.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "schedule/bidir_ring.hpp"
#include "schedule/line.hpp"
#include "schedule/ring.hpp"

namespace toroid::schedule {
namespace {

// Whether the half-way chains load every link alike: the members that own a block own one of
// the same size (to one element) and lie evenly round the ring (every member, or every other
// one, ...: the gaps between owners differ by at most one). Owners bunched together (a row
// where only the last members own a block) would load the links near them.
bool evenly_owned(const Blocks& blocks) {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  int first = -1, last = -1, min_gap = INT_MAX, max_gap = 0;
  const int p = static_cast<int>(blocks.size());
  for (int j = 0; j < p; ++j) {
    if (blocks[j].count == 0) continue;
    lo = std::min(lo, blocks[j].count), hi = std::max(hi, blocks[j].count);
    if (last >= 0) min_gap = std::min(min_gap, j - last), max_gap = std::max(max_gap, j - last);
    if (first < 0) first = j;
    last = j;
  }
  if (first < 0) return true;
  const int wrap_gap = first + p - last;
  min_gap = std::min(min_gap, wrap_gap), max_gap = std::max(max_gap, wrap_gap);
  return hi - lo <= 1 && max_gap - min_gap <= 1;
}

}  // namespace

std::uint32_t append_reduce_scatter(Schedule& s, Links links, const Group& g, const Blocks& blocks,
                                    int tag, const Source& from, Buf acc, Chunk result,
                                    std::uint32_t phase, const HalfCut& cut) {
  switch (links) {
    case Links::ring:
      return append_ring_reduce_scatter(s, g, blocks, +1, tag, from, acc, result, phase);
    case Links::line:
      return append_line_reduce_scatter(s, g, blocks, tag, from, acc, result, phase);
    case Links::bidir_ring:
      if (evenly_owned(blocks))
        return append_bidir_ring_reduce_scatter(s, g, blocks, tag, from, acc, result, phase, cut);
      [[fallthrough]];
    case Links::opposite_rings: {
      // In this order (the +1 ring's steps first): the arguments of one call would be unordered.
      const std::uint32_t a = append_ring_reduce_scatter(s, g, first_halves(blocks), +1, tag, from,
                                                         acc, first_half(s, result), phase);
      const std::uint32_t b = append_ring_reduce_scatter(s, g, second_halves(blocks), -1, tag + 1,
                                                         from, acc, second_half(s, result), phase);
      return std::max(a, b);
    }
  }
  return phase;
}

std::uint32_t append_allgather(Schedule& s, Links links, const Group& g, const Blocks& blocks,
                               int tag, Chunk own, const Source& out, std::uint32_t phase,
                               const HalfCut& cut) {
  switch (links) {
    case Links::ring:
      return append_ring_allgather(s, g, blocks, +1, tag, own, out, phase);
    case Links::line:
      return append_line_allgather(s, g, blocks, tag, own, out, phase);
    case Links::bidir_ring:
      if (evenly_owned(blocks))
        return append_bidir_ring_allgather(s, g, blocks, tag, own, out, phase, cut);
      [[fallthrough]];
    case Links::opposite_rings: {
      const std::uint32_t a = append_ring_allgather(s, g, first_halves(blocks), +1, tag,
                                                    first_half(s, own), out, phase);
      const std::uint32_t b = append_ring_allgather(s, g, second_halves(blocks), -1, tag + 1,
                                                    second_half(s, own), out, phase);
      return std::max(a, b);
    }
  }
  return phase;
}

}  // namespace toroid::schedule
