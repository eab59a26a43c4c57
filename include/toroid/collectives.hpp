// All-reduce, reduce-scatter and all-gather over a toroid::Communicator.
//
// Which block of a vector each rank owns: toroid/block.hpp (`block_of`).
//
// All counts are 64-bit element counts; toroid's algorithms split transfers so no MPI count
// overflows. The stock algorithm (`mpi`) splits all-reduce and broadcast; its reduce-scatter and
// all-gather refuse blocks or displacements above INT_MAX elements (InvalidArgument).
#pragma once

#include <cstdint>
#include <span>

#include "toroid/algorithm.hpp"
#include "toroid/block.hpp"
#include "toroid/communicator.hpp"
#include "toroid/export.hpp"
#include "toroid/topology.hpp"
#include "toroid/torus.hpp"
#include "toroid/types.hpp"

TOROID_API_BEGIN
namespace toroid {

// ---- Type-erased core. `in == out` means in place. Element counts, not bytes. ----
// allreduce: out[0, in_count) = op over ranks of in. Requires out_count >= in_count.
void allreduce(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
               DataType type, ReduceOp op, Communicator& comm,
               std::optional<Algorithm> algo = std::nullopt);
// reduce_scatter: out[0, block.count) = block `rank` of (op over ranks of in).
// In place (in == out): the block is left at its own offset inside in; other blocks are
// clobbered.
void reduce_scatter(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                    DataType type, ReduceOp op, Communicator& comm,
                    std::optional<Algorithm> algo = std::nullopt);
// allgather: out (total `out_count` elements) = concatenation of every rank's block, where this
// rank's `in` holds block_of(out_count, p, rank).count elements. In place: in == out and the
// own block already sits at its offset inside out.
void allgather(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
               DataType type, Communicator& comm, std::optional<Algorithm> algo = std::nullopt);

// ---- Axis collectives: every row (Axis::x), every column (Axis::y), every xz-plane
// ({Axis::x, Axis::z}), ... at once (toroid::Axes, torus.hpp) ----
// The group is the sub-torus along the axes through this rank (Torus::group_along); blocks
// follow the block rule over its chips, and a rank's block index is its place in it
// (Torus::position_along: along one axis, its coordinate there). Algorithms: auto is the
// model's choice for the sub-torus's shape; along one axis bidir_ring is a bidirectional ring
// (a line on a mesh axis) and ring one direction; any algorithm runs along any axes, on the
// sub-torus, whose links are the torus's
// (docs/algorithms.md, "Along axes"). mpi: the stock collective on a communicator of the group
// (split from the communicator at its first such call along these axes).
void allreduce_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                    DataType type, ReduceOp op, Axes axes, Communicator& comm,
                    std::optional<Algorithm> algo = std::nullopt);
void reduce_scatter_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                         DataType type, ReduceOp op, Axes axes, Communicator& comm,
                         std::optional<Algorithm> algo = std::nullopt);
void allgather_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                    DataType type, Axes axes, Communicator& comm,
                    std::optional<Algorithm> algo = std::nullopt);
// All-to-all among the group along the axes: `in` holds one block per member, in block order
// (Torus::group_along), as alltoall's below over the group.
void alltoall_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                   DataType type, Axes axes, Communicator& comm,
                   std::optional<Algorithm> algo = std::nullopt);

// ---- All-to-all: `in` holds p equal blocks (in_count a multiple of p), block j for rank j;
// rank i's block for this rank lands at block i of `out` (out_count >= in_count). Not in place.
// Algorithms: direct (every block straight to its rank), torus2d (one phase per torus
// dimension, blocks aggregated: Σ(k_d - 1) messages a rank where direct sends p - 1),
// torus2d_both (as torus2d, a part of every block through each dimension order, all links
// busy), mpi (MPI_Alltoall), auto (docs/algorithms.md, "All-to-all").
void alltoall(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
              DataType type, Communicator& comm, std::optional<Algorithm> algo = std::nullopt);

// ---- alltoallv: blocks of each rank's own sizes, which may change at every call (the
// dispatch and combine of mixture-of-experts layers). Per peer q: send.counts[q] elements from
// in + send.offsets[q] go to q, and recv.counts[q] elements from q land at out +
// recv.offsets[q]. Empty offsets: the blocks packed in rank order. in_count and out_count are
// the buffers' lengths (every block must lie inside). Rank i's send count to j must equal j's
// receive count from i: where they differ, j's call throws naming both ranks (i's completes),
// and no block is written past; under TOROID_CHECK=1, and on the single-copy path (buffers from
// Communicator::allocate on one node), every rank throws before any data moves.
// Blocks of at most 2^31 - 1 bytes, receive blocks apart from each other, not in place.
// Algorithms: direct (each block straight to its rank, one message per peer), mpi
// (MPI_Alltoallv), auto (direct).
// (BlockLayout: block.hpp.)
void alltoallv(const void* in, std::uint64_t in_count, BlockLayout send, void* out,
               std::uint64_t out_count, BlockLayout recv, DataType type, Communicator& comm,
               std::optional<Algorithm> algo = std::nullopt);

// ---- Broadcast: `data` (count elements) of rank `root` ends in `data` on every rank.
// Algorithms: ring (two pipelined chains from the root, both ways around the rank ring), torus2d
// (chains along the root's row, then along every column), recursive_doubling (a binomial tree,
// for small vectors), mpi (MPI_Bcast), auto (the tree below broadcast_tree_bytes, 64 KiB (defaults.hpp), else torus2d on a 2D torus,
// else ring).
void broadcast(void* data, std::uint64_t count, DataType type, int root, Communicator& comm,
               std::optional<Algorithm> algo = std::nullopt);

// The typed (std::span) forms of every call: typed.hpp, included below.

}  // namespace toroid
TOROID_API_END

// Last, so that each header alone gives every form (typed.hpp includes both).
#include "toroid/request.hpp"
#include "toroid/typed.hpp"
