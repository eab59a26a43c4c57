#include "schedule/dimension.hpp"

#include <algorithm>

#include "schedule/bidir_ring.hpp"
#include "schedule/line.hpp"
#include "schedule/ring.hpp"

namespace toroid::schedule {
namespace {

// Whether every member's block is the same size (to one element): then the half-way chains
// load every link alike; blocks that differ (torus2d_both's reduce-scatter rows, where only
// some members own one) would load the links near their owners.
bool equal_blocks(const Blocks& blocks) {
  const auto [lo, hi] =
      std::minmax_element(blocks.begin(), blocks.end(),
                          [](const Block& a, const Block& b) { return a.count < b.count; });
  return hi->count - lo->count <= 1;
}

}  // namespace

std::uint32_t append_reduce_scatter(Schedule& s, Links links, const Group& g, const Blocks& blocks,
                                    int tag, const Source& from, Buf acc, Chunk result,
                                    std::uint32_t phase) {
  switch (links) {
    case Links::ring:
      return append_ring_reduce_scatter(s, g, blocks, +1, tag, from, acc, result, phase);
    case Links::line:
      return append_line_reduce_scatter(s, g, blocks, tag, from, acc, result, phase);
    case Links::bidir_ring:
      if (equal_blocks(blocks))
        return append_bidir_ring_reduce_scatter(s, g, blocks, tag, from, acc, result, phase);
      [[fallthrough]];
    case Links::opposite_rings: {
      // In this order (the +1 ring's steps first): the arguments of one call would be unordered.
      const std::uint32_t a = append_ring_reduce_scatter(s, g, first_halves(blocks), +1, tag, from,
                                                         acc, first_half(result), phase);
      const std::uint32_t b = append_ring_reduce_scatter(s, g, second_halves(blocks), -1, tag + 1,
                                                         from, acc, second_half(result), phase);
      return std::max(a, b);
    }
  }
  return phase;
}

std::uint32_t append_allgather(Schedule& s, Links links, const Group& g, const Blocks& blocks,
                               int tag, Chunk own, Buf out, std::uint32_t phase) {
  switch (links) {
    case Links::ring:
      return append_ring_allgather(s, g, blocks, +1, tag, own, out, phase);
    case Links::line:
      return append_line_allgather(s, g, blocks, tag, own, out, phase);
    case Links::bidir_ring:
      if (equal_blocks(blocks))
        return append_bidir_ring_allgather(s, g, blocks, tag, own, out, phase);
      [[fallthrough]];
    case Links::opposite_rings: {
      const std::uint32_t a =
          append_ring_allgather(s, g, first_halves(blocks), +1, tag, first_half(own), out, phase);
      const std::uint32_t b = append_ring_allgather(s, g, second_halves(blocks), -1, tag + 1,
                                                    second_half(own), out, phase);
      return std::max(a, b);
    }
  }
  return phase;
}

}  // namespace toroid::schedule
