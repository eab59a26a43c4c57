// The step vocabulary: an algorithm is a per-rank list of these, built without calling MPI.
//
//   chunk   = (buffer, offset, count) in elements of the collective's data type; or gathered:
//             `count` elements made of `pieces` runs of the buffer, listed in Schedule::pieces
//             in ascending order, read (or written) one after the other as if contiguous. A
//             gathered chunk may be a send's or recv_reduce's source, a recv's destination or
//             one side of a copy; it lets a part of an algorithm walk the vector in another
//             order (one part's layout of the torus) without a copy (torus_dims.cpp)
//   step    = send | recv | recv_reduce | copy | scale over chunks, addressed to a peer rank
//   phase   = the builder's grouping of steps that may be in flight together; a step only reads
//             data written in earlier phases (the verifier checks this)
//   tag     = lane id, so two transfers between the same pair in one phase stay apart
//   dep     = what a step waits for, derived from the phases and the chunks (dependencies.hpp):
//             `done` (an earlier step has finished) or `follow` (element e of this step's
//             source is final once element offset + e of an earlier receive is: the step may
//             start on the first segments while that receive still brings the rest)
//   channel = (direction, peer, tag): the steps on one channel are matched in schedule order
//
// Executors (the dataflow engine, the in-process verifier, the simulator) run the same Schedule.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "toroid/algorithm.hpp"
#include "toroid/block.hpp"

namespace toroid::schedule {

enum class Buf : std::uint8_t { input, output, scratch };

struct Chunk {
  Buf buf = Buf::input;
  std::uint64_t offset = 0;                   // gathered: where the first piece starts
  std::uint64_t count = 0;                    // elements in all
  std::uint32_t first_piece = 0, pieces = 0;  // gathered: Schedule::pieces[first, first+pieces)
  std::uint64_t extent = 0;                   // gathered: from offset to the last piece's end

  bool gathered() const noexcept { return pieces > 0; }
  // The span of the buffer the chunk lies in (its runs and what lies between them).
  std::uint64_t span() const noexcept { return gathered() ? extent : count; }
};

enum class Kind : std::uint8_t {
  send,         // send src to peer
  recv,         // receive from peer into dst
  recv_reduce,  // receive from peer, dst = src op received (src may equal dst)
  copy,         // dst = src, local
  scale,        // dst = dst / divisor (the final step of an average), local
  reduce,       // dst = dst op src, local (contiguous chunks of one size: what another
                // receive landed, summed once several arrived at once)
};

struct Step {
  Kind kind = Kind::send;
  std::int32_t peer = -1;  // communicator rank; -1 for local steps
  std::int32_t tag = 0;
  std::uint32_t phase = 0;
  Chunk src;
  Chunk dst;
  std::uint32_t divisor = 1;  // scale only
  std::uint32_t dep_begin = 0,
                dep_count = 0;  // this step's deps: Schedule::deps[dep_begin, +count)
};

enum class Wait : std::uint8_t {
  done,    // the earlier step has finished (all its reads and writes)
  follow,  // segment by segment: element e of this step's source is final once element
           // offset + e of the earlier step's destination is (the earlier step writes in order)
};

// When a step may start: the one rule the engine, the verifier and the simulator run. The step
// is first on its channel (direction, peer, tag: steps of one channel start in schedule order)
// and each dependency lets it go: a `done` one once the earlier step has finished, a `follow`
// one once the earlier step has started (its segments then pace this step's). The engine checks
// it task by task (Engine::can_start); the verifier and the simulator count down a WaitGraph
// (wait_graph.hpp) whose waiters are released by the same rule.
inline bool lets_go_on_start(Wait w) noexcept { return w == Wait::follow; }
inline bool lets_go(Wait w, bool started, bool finished) noexcept {
  return lets_go_on_start(w) ? started : finished;
}

struct Dep {
  std::uint32_t step = 0;  // index of an earlier step of the same schedule
  Wait wait = Wait::done;
  std::uint64_t offset = 0;  // follow: where this step's source starts in the earlier destination
};

// What becomes of the bytes a receive writes (schedule/later_use.hpp): dead (no other later
// step reads them before one overwrites them all, or the schedule ends with them in scratch; a
// ring all-reduce's partial sums), read (something else reads them later), or final (output
// that nothing in the collective reads again). not_asked: a step the question is not asked of.
enum class LaterUse : std::uint8_t { not_asked, dead, read, final };

struct Schedule {
  std::string algorithm;
  int rank = 0;
  int nranks = 1;
  std::uint64_t scratch_count = 0;  // elements of scratch the executor must provide
  bool in_place = false;            // input and output are one buffer (not for allgather)
  // Every transfer is one message, an empty one too, and a receive checks the size that came:
  // the two ends' counts are each rank's own arguments (alltoallv), so a disagreement is an
  // error the receiver reports, never a hang or a write past its block.
  bool exact_messages = false;
  std::vector<Step> steps;    // ordered by phase
  std::vector<Dep> deps;      // grouped by step (Step::dep_begin)
  std::vector<Block> pieces;  // the runs of gathered chunks (Chunk::first_piece)
  // Per step, where the engine asks (schedule/later_use.hpp: set_later_uses, once per schedule
  // it runs; empty in schedules only simulated or verified).
  std::vector<LaterUse> later_use;

  std::uint32_t phase_count() const { return steps.empty() ? 0 : steps.back().phase + 1; }
};

// Which collective a schedule computes (the build request names it, not the Schedule); the
// verifier's reference depends on it.
using toroid::Collective;

std::string_view to_string(Kind k) noexcept;
std::string describe(const Step& s);  // one line, for error messages and debugging

inline bool is_local(Kind k) noexcept {
  return k == Kind::copy || k == Kind::scale || k == Kind::reduce;
}

// Calls f(buffer offset, position in the chunk, count) for each run of the chunk's elements
// [lo, hi) (positions in the chunk), in order; once for a contiguous chunk.
template <class F>
void each_run(const Chunk& c, const Block* pieces, std::uint64_t lo, std::uint64_t hi, F&& f) {
  if (!c.gathered()) {
    if (lo < hi) f(c.offset + lo, lo, hi - lo);
    return;
  }
  std::uint64_t at = 0;  // position of the current piece in the chunk
  for (std::uint32_t k = 0; k < c.pieces && at < hi; ++k) {
    const Block& b = pieces[c.first_piece + k];
    const std::uint64_t from = std::max(lo, at), to = std::min(hi, at + b.count);
    if (from < to) f(b.offset + (from - at), from, to - from);
    at += b.count;
  }
}

// Sorts steps by phase (stable): builders append concurrent lanes one after the other.
void order_by_phase(Schedule& s);

}  // namespace toroid::schedule
