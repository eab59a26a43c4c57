#include "pmpi/plan.hpp"

#include <variant>

#include "api/internal.hpp"
#include "pmpi/guard.hpp"
#include "pmpi/mpi_types.hpp"
#include "pmpi/settings.hpp"
#include "pmpi/state.hpp"
#include "pmpi/thread_level.hpp"
#include "toroid/collectives.hpp"
#include "toroid/error.hpp"

namespace toroid::pmpi {
namespace {

// The communicator's size when the type and op have toroid twins and toroid may work on the
// communicator. Type and op first: a forwarded type costs no MPI query, and a call made from
// inside toroid none at all.
std::variant<int, Decision> eligible_size(MPI_Datatype type, std::optional<ReduceOp> op,
                                          MPI_Comm comm) {
  if (inside_toroid()) return Decision::forward(nullptr);
  if (!op)
    return Decision::forward(
        "the op has no toroid twin (user-defined, or not SUM, PROD, MIN, MAX)");
  if (!toroid_type(type)) return Decision::forward(kNoTypeTwin);
  if (comm == MPI_COMM_NULL) return Decision::forward("MPI_COMM_NULL");
  int inter = 0, size = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return Decision::forward("an inter-communicator");
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return Decision::forward("MPI_Comm_size failed");
  return size;
}

Decision sized(std::uint64_t total, MPI_Datatype type, std::optional<ReduceOp> op, int size) {
  const DataType t = *toroid_type(type);
  if (total == 0) return Decision::forward("no data");
  if (total * size_of(t) < preload_config().min_bytes)
    return Decision::forward("fewer bytes than TOROID_MIN_BYTES");
  return Plan{t, *op, total, size};
}

// `count` elements, times the communicator size for the calls that count per rank.
Decision counted(int count, bool per_rank, MPI_Datatype type, std::optional<ReduceOp> op,
                 MPI_Comm comm) {
  if (count <= 0) return Decision::forward(inside_toroid() ? nullptr : "no data");
  const auto size = eligible_size(type, op, comm);
  if (const Decision* d = std::get_if<Decision>(&size)) return *d;
  const int p = std::get<int>(size);
  const std::uint64_t ranks = per_rank ? static_cast<std::uint64_t>(p) : 1;
  return sized(static_cast<std::uint64_t>(count) * ranks, type, op, p);
}

// Per-rank counts that follow toroid's block rule (block_of), as one vector of their total.
Decision block_rule(const int counts[], MPI_Datatype type, std::optional<ReduceOp> op,
                    MPI_Comm comm) {
  if (!counts) return Decision::forward(inside_toroid() ? nullptr : "no counts");
  const auto size = eligible_size(type, op, comm);
  if (const Decision* d = std::get_if<Decision>(&size)) return *d;
  const int p = std::get<int>(size);
  std::uint64_t total = 0;
  for (int r = 0; r < p; ++r) {
    if (counts[r] < 0) return Decision::forward("a negative count");
    total += static_cast<std::uint64_t>(counts[r]);
  }
  for (int r = 0; r < p; ++r)
    if (static_cast<std::uint64_t>(counts[r]) != block_of(total, p, r).count)
      return Decision::forward("the counts do not follow toroid's block rule");
  return sized(total, type, op, p);
}

}  // namespace

Decision plan_allreduce(int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return counted(count, false, type, toroid_op(op), comm);
}

Decision plan_reduce_scatter_block(int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return counted(count, true, type, toroid_op(op), comm);
}

Decision plan_reduce_scatter(const int counts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return block_rule(counts, type, toroid_op(op), comm);
}

Decision plan_allgatherv(const int counts[], MPI_Datatype type, MPI_Comm comm) {
  return block_rule(counts, type, ReduceOp::sum, comm);
}

Decision plan_bcast(int count, MPI_Datatype type, int root, MPI_Comm comm) {
  Decision d = counted(count, false, type, ReduceOp::sum, comm);
  if (d && (root < 0 || root >= d->size))
    return Decision::forward("the root is outside the communicator");
  return d;
}

Decision in_background(MPI_Comm comm, Decision d, Messages m) {
  if (!d) return d;
  if (job_thread_level() >= MPI_THREAD_MULTIPLE) return d;
  if (m == Messages::exact)
    return Decision::forward(
        "an alltoallv's messages go over MPI, which the progress thread may call only under "
        "MPI_THREAD_MULTIPLE (TOROID_THREAD_LEVEL=multiple)");
  api::MpiSteps steps = api::MpiSteps::none;
  {
    ToroidScope inside;
    AttachedComm* s = nullptr;
    try {
      s = &state_of(comm);
      steps = api::steps_over_mpi(internal::impl(s->comm));
    } catch (...) {
      return d;  // serving it reports the error (every rank alike)
    }
    // The call runs on the background communicator, whose links are its own: build it now
    // (collective, as serving would) and forward where it cannot run without MPI after all
    // (no room in /dev/shm for its links), which it says alike on every rank.
    if (steps == api::MpiSteps::none) try {
        s->background();
      } catch (const InvalidArgument&) {
        return Decision::forward(
            "non-blocking calls need MPI_THREAD_MULTIPLE here: the progress thread's communicator "
            "found its ranks not all linked by shared memory (no room in /dev/shm?)");
      } catch (...) {
        return d;
      }
  }
  switch (steps) {
    case api::MpiSteps::none:
      return d;
    case api::MpiSteps::between_nodes:
      return Decision::forward(
          "non-blocking calls on a communicator that spans nodes need MPI_THREAD_MULTIPLE (the "
          "progress thread calls MPI there; TOROID_THREAD_LEVEL=multiple asks for it)");
    case api::MpiSteps::unlinked:
      return Decision::forward(
          "non-blocking calls on ranks not linked by shared memory (transport mpi, or no room in "
          "/dev/shm) need MPI_THREAD_MULTIPLE (TOROID_THREAD_LEVEL=multiple asks for it)");
    case api::MpiSteps::too_many_lanes:
      return Decision::forward(
          "non-blocking calls on a shape of more than 4 dimensions need MPI_THREAD_MULTIPLE (some "
          "steps go over MPI; TOROID_THREAD_LEVEL=multiple asks for it)");
  }
  return d;
}

Decision plan_allgather(int count, MPI_Datatype type, MPI_Comm comm) {
  return counted(count, true, type, ReduceOp::sum, comm);
}

Decision plan_alltoall(int count, MPI_Datatype type, MPI_Comm comm) {
  return counted(count, true, type, ReduceOp::sum, comm);
}

Decision plan_alltoallv(MPI_Datatype type, MPI_Comm comm) {
  const auto size = eligible_size(type, ReduceOp::sum, comm);
  if (const Decision* d = std::get_if<Decision>(&size)) return *d;
  return Plan{*toroid_type(type), ReduceOp::sum, 0, std::get<int>(size)};
}

}  // namespace toroid::pmpi
