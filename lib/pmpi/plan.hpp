// Serve or forward: whether toroid takes an intercepted call, and as what.
//
// The answer must be the same on every rank, or some ranks would run toroid's schedule while
// others wait in the stock collective. So it depends only on what MPI requires every rank to
// pass alike (count, datatype, op, the reduce-scatter counts, the communicator) and on the
// preload's settings (the same environment on every rank), never on buffers or timing.
//
// Every function forwards (to PMPI_ unchanged), saying why, for: a call made from inside toroid,
// MPI_COMM_NULL, an inter-communicator, a type or op toroid has no twin for, no data, or fewer
// bytes in the whole vector than TOROID_MIN_BYTES.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>

#include "toroid/types.hpp"

namespace toroid::pmpi {

struct Plan {
  DataType type;
  ReduceOp reduction;   // all-gather: unused
  std::uint64_t count;  // elements of the whole vector
  int size;             // ranks of the communicator
};

// A plan, or why the call goes to MPI (static text; null for a call made from inside toroid,
// which is never reported).
struct Decision {
  std::optional<Plan> plan;
  const char* why = nullptr;

  Decision(Plan p) : plan(p) {}  // NOLINT: served
  static Decision forward(const char* why) { return Decision(why); }
  explicit operator bool() const { return plan.has_value(); }
  const Plan* operator->() const { return &*plan; }
  const Plan& operator*() const { return *plan; }

 private:
  explicit Decision(const char* reason) : why(reason) {}
};

// Reasons the callers and the log need to recognise.
inline constexpr const char* kNoTypeTwin = "the datatype has no toroid twin";
inline constexpr const char* kSendSideDiffers =
    "the send side is described otherwise than the receive side";

// The non-blocking form of a call planned as `d` on `comm`. Toroid's progress thread moves it
// while the program does anything else (requests.hpp), so where MPI is below
// MPI_THREAD_MULTIPLE (thread_level.hpp) and the thread may not call MPI, it is served only
// where every step goes over shared memory (api::steps_over_mpi: one node, all ranks linked;
// never an alltoallv's exact messages). That builds comm's state at the first such call, as
// serving it would (collective; the decision so far is alike on every rank), and is alike on
// every rank too.
enum class Messages { over_schedule, exact };
Decision in_background(MPI_Comm comm, Decision d, Messages m = Messages::over_schedule);

// MPI_Allreduce: `count` elements.
Decision plan_allreduce(int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
// MPI_Reduce_scatter_block: `count` elements per rank.
Decision plan_reduce_scatter_block(int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
// MPI_Reduce_scatter: only counts that follow toroid's block rule (equal counts, or the first
// total % p ranks one element more, as toroid::block_of cuts); others are forwarded.
Decision plan_reduce_scatter(const int counts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm);
// MPI_Allgather: `count` elements per rank of `type`. The caller has checked that the send side
// is MPI_IN_PLACE or the same count and type.
Decision plan_allgather(int count, MPI_Datatype type, MPI_Comm comm);

// MPI_Alltoall: `count` elements per block, p blocks (the whole vector: count * p). The caller
// has checked that the send side is the same count and type, and not MPI_IN_PLACE.
Decision plan_alltoall(int count, MPI_Datatype type, MPI_Comm comm);
// MPI_Alltoallv: decided on the type and the communicator alone, never on the counts, which
// differ from rank to rank (a decision on them would differ too, and ranks would meet in
// different collectives): served at any size, TOROID_MIN_BYTES aside (plan.count is 0). The
// caller has checked that the send type is the receive type, and not MPI_IN_PLACE.
Decision plan_alltoallv(MPI_Datatype type, MPI_Comm comm);

// MPI_Bcast: `count` elements from `root` (a root outside the communicator is MPI's to report).
Decision plan_bcast(int count, MPI_Datatype type, int root, MPI_Comm comm);
// MPI_Allgatherv: only receive counts that follow toroid's block rule (as plan_reduce_scatter).
// The displacements are not part of the decision: MPI lets each rank place the blocks its own
// way, so they may differ between ranks; the caller moves blocks that are not at the block
// rule's offsets. The caller has checked that the send side is MPI_IN_PLACE or this rank's
// count of the same type.
Decision plan_allgatherv(const int counts[], MPI_Datatype type, MPI_Comm comm);

}  // namespace toroid::pmpi
