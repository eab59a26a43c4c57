// The torus's dimensions as the collectives use them: this rank's row along each, and the
// all-reduce that runs down them one after another (torus_dims.cpp).
#pragma once

#include <span>
#include <vector>

#include "schedule/build.hpp"
#include "schedule/dimension.hpp"

namespace toroid::schedule {

// This rank's row along one dimension of the shape and the links it runs on: a bidirectional
// ring where the row closes into one (Torus::ring_along), else a line.
struct Row {
  int dimension = 0;
  Group group;
  Links links = Links::line;
};

// Whether the all-reduce along a row of these links and size is a line's one pipeline to its
// middle and back (line.hpp): a line of more than 2.
inline bool line_pipeline(Links links, int size) { return links == Links::line && size > 2; }

// What a row carries per direction, relative to its link rate: a ring of more than 2 moves its
// halves both ways (2); a line (or a pair) one way at a time (1), or, cut into k pipelined
// pieces, both ways less the pipeline's fill and drain (2k / (k + 2)).
inline double carries(bool ring, int size, int pieces = 1) {
  if (ring && size > 2) return 2;
  return pieces > 1 ? 2.0 * pieces / (pieces + 2) : 1;
}

// My rows along the dimensions longer than one, in dimension order; a shape of one chip gives
// its first dimension's row (of one member), so that there is always one.
std::vector<Row> rows_of(const Context& ctx);

// Where the last row of an all-reduce, a ring of more than 2, floods its range instead of
// reduce-scattering and all-gathering it (ring_flood.hpp): ranges of fewer than `below`
// elements (0: never), its buffers in scratch from `scratch_at` on (past what the rows use).
struct RingFlood {
  std::uint64_t below = 0, scratch_at = 0;
};

// All-reduce of `region`, dimension by dimension in the order of `rows`: reduce-scatter along
// rows[0], then along rows[1] on the shard it leaves, ..., the last row all-reduces the
// smallest shard (a line of more than 2 in one pipeline to its middle and back, line.hpp), then
// all-gathers back out in reverse. The input is read by the first reduce-scatter only; partials
// and results are kept in the output at the blocks' offsets (a line's pipeline passes its
// partials in scratch at the same offsets). Every row uses tags `tag` and `tag` + 1 (their peers
// differ). The all-gather along rows[0] starts no earlier than `gather_from`; `before_gather`,
// when given, gets the phase it would start in without that. `relative_halves`: an even ring
// ahead of another ring cuts its blocks relative to my place in that row (HalfCut, group.hpp),
// else (and ahead of a line) at their middles. `flood`: where the last row floods its range
// instead (RingFlood). Returns the next free phase.
std::uint32_t append_allreduce_rows(Schedule& s, std::span<const Row> rows, Block region, int tag,
                                    bool average, std::uint32_t divisor, std::uint32_t phase,
                                    std::uint32_t gather_from = 0,
                                    std::uint32_t* before_gather = nullptr,
                                    bool relative_halves = false, const RingFlood& flood = {});

// The same cut into `chunks` pieces that follow each other on the same channels, piece k+lag's
// reduce-scatters beside piece k's all-gathers (torus2d.cpp's block comment, "Pipelined
// pieces"): piece k starts k strides of phases after the first, where a stride is the phases a
// piece spends before its last all-gather over `lag`. One piece: append_allreduce_rows.
void append_allreduce_rows_pipelined(Schedule& s, std::span<const Row> rows, Block region, int tag,
                                     bool average, std::uint32_t divisor, int chunks, int lag,
                                     bool relative_halves = false, const RingFlood& flood = {});

// The every-dimension-busy all-reduce's parts: part i's rows in the order i, i+1, ..., i-1,
// where a part starts along a twisted short dimension its ring of 2k through the twisted links
// and then the first long dimension as a line inside its sheet (torus_dims.cpp).
std::vector<std::vector<Row>> allreduce_part_rows(const Context& ctx);

// The every-dimension-busy reduce-scatter or all-gather (r.collective) over `rows` (more than
// one), each part in `pieces` pipelined pieces (torus_dims.cpp; build() picks the count by size).
Schedule build_busy_rows(const Spec& r, const Context& ctx, const std::vector<Row>& rows,
                         int pieces);

}  // namespace toroid::schedule
