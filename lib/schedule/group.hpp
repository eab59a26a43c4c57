// Groups of ranks and the blocks they own: the vocabulary shared by every builder.
//
//   group   = ordered list of communicator ranks taking part in one sub-collective
//             (a ring, a line, a row, a column, a node)
//   blocks  = one (offset, count) per group member, absolute element offsets in the buffer:
//             member j owns blocks[j] after a reduce-scatter and contributes it to an all-gather
#pragma once

#include <functional>
#include <vector>

#include "schedule/step.hpp"
#include "toroid/block.hpp"

namespace toroid::schedule {

struct Group {
  std::vector<int> members;
  int position = 0;  // my index in members
  int size() const { return static_cast<int>(members.size()); }
};

// Group of `members` seen from communicator rank `me` (which must be one of them).
Group group_of(std::vector<int> members, int me);

using Blocks = std::vector<Block>;

// [offset, offset + count) cut into p blocks by the block rule of block_of.
Blocks even_blocks(std::uint64_t offset, std::uint64_t count, int p);
// [offset, offset + count) cut into p blocks whose longer ones lie evenly among them (block j
// starts at floor(j·count/p)): any m consecutive blocks hold the same count to one element,
// wherever they start. For a schedule's own cuts (its steps then carry alike sizes on every
// chip, as the simulator's classes ask: model/sim_symmetry.hpp), not for the blocks a
// reduce-scatter leaves, which follow block_of.
Blocks spread_blocks(std::uint64_t offset, std::uint64_t count, int p);
// Each block cut in two: first halves (the larger when odd) and second halves.
Blocks first_halves(const Blocks& b);
Blocks second_halves(const Blocks& b);
// Parts of the buffer in ascending order, taken as one chunk (a gathered one when apart).
using BlockRuns = std::vector<Block>;

// Where an even ring cuts its blocks in two (bidir_ring.cpp). By default at each block's middle.
// Ahead of another row, relative to this chip's place in it: block j is sub[j] (that row's
// blocks inside it, one per member), and its first half is the sub-blocks from the one of
// member `first` half way round the block (the middle one cut at its middle when their number
// is odd), the second half the rest:
//
//   sub-blocks of a block, next row of 4:   [ s0 | s1 | s2 | s3 ]
//   first = 0:  first half s0 s1, second s2 s3;   first = 3:  first half s3 s0 (two runs)
//
// Every chip of this ring has the same place in the next row, so they agree on the cut; and
// each chip's next row reads, at its k-th step, the half it read at the same step on every
// other chip, so chips a translation of the torus carries into each other run moved copies of
// one program (the simulator's classes, model/sim_symmetry.hpp). Cut at the middle, the
// sub-blocks a chip's next row needs first lie in one half or the other by its place, and
// a 4096-chip row simulates every chip (docs/simulator.md "Speed").
//
// With more than 2 sub-blocks a half is always two runs or more (a contiguous one is cut after
// its first piece): a half that wraps round the block cannot follow the write it lies in
// segment by segment (its elements are not consecutive there), so no chip's half does, and
// every chip waits for the same steps the same way. Reductions then land in gathered runs
// (the executors take them: schedule/buffers.hpp each_pair). Used by the all-gathers on tori
// of any dimension and by torus2d_both's all-reduce there, ahead of a ring; ahead of a line the
// middle stays (a line delivers from its ends, not round the chip, and no translation runs
// along it: relative halves cost the twisted 4x4x8's all-gather 6%). A reduce-scatter keeps
// the middle too (relative halves cost it 9-11% on 4x4x8, where a ring of 4 ends a level in few
// steps and the next level's reads then wait for it whole instead of following it).
struct HalfCut {
  std::vector<Blocks> sub;  // per block its sub-blocks, in order; empty: cut at the middle
  int first = 0;
};
// Each block's first or second half by `cut`, as runs.
std::vector<BlockRuns> halves(const Blocks& b, const HalfCut& cut, bool first);
// The sub-blocks of each of `b`, every block cut into `parts` by the block rule.
std::vector<Blocks> even_sub_blocks(const Blocks& b, int parts);
// The part of chunk `c`, which holds block `whole`, that holds `runs` (inside `whole`).
Chunk runs_of(Schedule& s, const Chunk& c, const Block& whole, const BlockRuns& runs);

// Elements [lo, lo + n) of a chunk in its order (of a gathered one, its runs cut there).
Chunk part_of(Schedule& s, const Chunk& c, std::uint64_t lo, std::uint64_t n);
// The part of a chunk that corresponds to first_halves/second_halves of its block.
Chunk first_half(Schedule& s, const Chunk& c);
Chunk second_half(Schedule& s, const Chunk& c);

inline Chunk chunk(Buf buf, const Block& b) { return {buf, b.offset, b.count}; }

// Position v of a ring of p members, wrapped into [0, p).
inline int ring_position(int v, int p) { return ((v % p) + p) % p; }

// Appends a send or receive step unless what it moves is empty (a send's source, a receive's
// destination): empty blocks (count < p) are skipped on both sides alike.
inline void append_transfer(Schedule& s, Kind k, int peer, int tag, std::uint32_t phase, Chunk src,
                            Chunk dst) {
  if ((k == Kind::send ? src.count : dst.count) > 0)
    s.steps.push_back({k, peer, tag, phase, src, dst});
}

// Elements laid out in one order in one place and another order elsewhere: runs
// (at, count, from) say that elements [at, at + count) of the accumulation's layout are
// elements [from, from + count) of the source buffer. Ascending in `at`, covering a range.
struct Gather {
  struct Run {
    std::uint64_t at = 0, count = 0, from = 0;
  };
  std::vector<Run> runs;
};

// A buffer as a builder's blocks name it: at the blocks' offsets, or, with a Gather, at the
// runs of that buffer the blocks' offsets map to (a gathered chunk when more than one). Where
// a reduce-scatter reads its own contribution, and where an all-gather puts the blocks.
struct Source {
  Buf buf;
  const Gather* map = nullptr;
  Source(Buf b) : buf(b) {}  // NOLINT: a buffer read in place is the common case
  Source(Buf b, const Gather& m) : buf(b), map(&m) {}
  Chunk chunk(Schedule& s, const Block& b) const;
  Chunk chunk(Schedule& s, const BlockRuns& runs) const;
};

// Appends `copy from -> to` in `phase` unless it is empty or `from` already sits at `to`
// (same buffer id and offset, or the same runs; the executor also skips a copy whose two
// addresses coincide in place). Returns whether a step was added.
bool append_move(Schedule& s, Chunk from, Chunk to, std::uint32_t phase);

// A gathered chunk of `buf` made of `runs` (ascending; adjacent runs are merged unless `apart`,
// and a chunk of one run is contiguous). The runs are added to s.pieces.
Chunk gathered_chunk(Schedule& s, Buf buf, const std::vector<Block>& runs, bool apart = false);

// Where successive whole-vector reductions write (recursive doubling, swing_latency): write k
// to scratch slot k % 2 (of a 2n scratch), so a step never writes what it sends, and the last
// one to the output, unless it is the only write of an in-place call (it would read the output
// it writes: then a slot, and the caller copies).
class AlternatingTargets {
 public:
  // `ends_in_output` false: every write goes to a slot (a reduce-scatter keeps one block).
  AlternatingTargets(std::uint64_t n, int writes, bool in_place, bool ends_in_output = true)
      : n_(n), writes_(writes), last_to_output_(ends_in_output && !(writes == 1 && in_place)) {}
  Chunk next() {
    const bool last = k_ == writes_ - 1;
    const Chunk t = last && last_to_output_
                        ? Chunk{Buf::output, 0, n_}
                        : Chunk{Buf::scratch, static_cast<std::uint64_t>(k_ % 2) * n_, n_};
    ++k_;
    return t;
  }

 private:
  std::uint64_t n_;
  int writes_, k_ = 0;
  bool last_to_output_;
};

// Recursive halving reduce-scatter of `region`, cut into 2^moves blocks, then a recursive
// doubling all-gather retracing it (Rabenseifner's body, and each Swing part's). This rank's
// block is at `position`; at move s it exchanges with peer(s): of the range both hold, each keeps
// the half with its own position (bit moves-1-s) and sends the other. The first move reads
// `from`, partials and results are kept in the output at the blocks' offsets, and the own block
// is averaged in between. Returns the next free phase.
//
// Every move but the last sends its range in pieces, each in a phase of its own, in the order
// the receiver goes on with them, so that the next move streams behind this one (a send or an
// in-place reduction follows the receive it reads, from that receive's first segment). A
// reduce-scatter move's range in quarters (halves at the second-to-last move):
//
//   [ the peer gives at s+1:          |  the peer keeps at s+1:           ]
//   [ its taker gives at s+2 | keeps  |  it gives at s+2 | it keeps       ]
//
// Sent whole, a part the next move needs might come last, and that move would wait for it.
// The all-gather sends what it holds as it came: the half it held before move s+1 (final) in
// one piece, then the other half in the pieces move s+1 brought it in, which the peer of s+1
// sent the same way, so every piece but the first is exactly one earlier receive and follows it:
//
//   all-gather, move s:      [ held before s+1 | held by the s+1 peer before s+2 | … | 1 block ]
//                              mask/2 blocks      mask/4                              1
struct HalvingPeer {
  int rank = -1;               // communicator rank
  std::uint32_t position = 0;  // its block's position
};
// `peer(move, k)`: the rank reached from my move-`move` peer through that peer's moves move+1,
// …, move+k; k = 0 is the peer itself (the pieces' order needs the others' positions).
std::uint32_t append_halving_doubling(Schedule& s, Block region, int moves, std::uint32_t position,
                                      const std::function<HalvingPeer(int move, int k)>& peer,
                                      int tag, Buf from, bool average, std::uint32_t divisor,
                                      std::uint32_t phase);

// The last step of an average: `c` divided by `divisor`, in a phase of its own. Nothing when not
// averaging, when `c` is empty or when the divisor is 1. Returns the next free phase.
std::uint32_t append_average(Schedule& s, bool average, Chunk c, std::uint32_t divisor,
                             std::uint32_t phase);

}  // namespace toroid::schedule
