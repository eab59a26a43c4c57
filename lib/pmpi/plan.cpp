#include "pmpi/plan.hpp"

#include "pmpi/guard.hpp"
#include "pmpi/mpi_types.hpp"
#include "pmpi/settings.hpp"
#include "toroid/collectives.hpp"

namespace toroid::pmpi {
namespace {

// The communicator's size when the type and op have toroid twins and toroid may work on the
// communicator. Type and op first: a forwarded type costs no MPI query, and a call made from
// inside toroid none at all.
std::optional<int> eligible_size(MPI_Datatype type, std::optional<ReduceOp> op, MPI_Comm comm) {
  if (!op || !toroid_type(type) || inside_toroid() || comm == MPI_COMM_NULL) return std::nullopt;
  int inter = 0, size = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return std::nullopt;
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return std::nullopt;
  return size;
}

std::optional<Plan> sized(std::uint64_t total, MPI_Datatype type, std::optional<ReduceOp> op,
                          int size) {
  const DataType t = *toroid_type(type);
  if (total == 0 || total * size_of(t) < settings().min_bytes) return std::nullopt;
  return Plan{t, *op, total, size};
}

// `count` elements, times the communicator size for the calls that count per rank.
std::optional<Plan> counted(int count, bool per_rank, MPI_Datatype type, std::optional<ReduceOp> op,
                            MPI_Comm comm) {
  if (count <= 0) return std::nullopt;
  const std::optional<int> size = eligible_size(type, op, comm);
  if (!size) return std::nullopt;
  const std::uint64_t ranks = per_rank ? static_cast<std::uint64_t>(*size) : 1;
  return sized(static_cast<std::uint64_t>(count) * ranks, type, op, *size);
}

// Per-rank counts that follow toroid's block rule (block_of), as one vector of their total.
std::optional<Plan> block_rule(const int counts[], MPI_Datatype type, std::optional<ReduceOp> op,
                               MPI_Comm comm) {
  const std::optional<int> size = counts ? eligible_size(type, op, comm) : std::nullopt;
  if (!size) return std::nullopt;
  std::uint64_t total = 0;
  for (int r = 0; r < *size; ++r) {
    if (counts[r] < 0) return std::nullopt;
    total += static_cast<std::uint64_t>(counts[r]);
  }
  for (int r = 0; r < *size; ++r)
    if (static_cast<std::uint64_t>(counts[r]) != block_of(total, *size, r).count)
      return std::nullopt;
  return sized(total, type, op, *size);
}

}  // namespace

std::optional<Plan> plan_allreduce(int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return counted(count, false, type, toroid_op(op), comm);
}

std::optional<Plan> plan_reduce_scatter_block(int count, MPI_Datatype type, MPI_Op op,
                                              MPI_Comm comm) {
  return counted(count, true, type, toroid_op(op), comm);
}

std::optional<Plan> plan_reduce_scatter(const int counts[], MPI_Datatype type, MPI_Op op,
                                        MPI_Comm comm) {
  return block_rule(counts, type, toroid_op(op), comm);
}

std::optional<Plan> plan_allgatherv(const int counts[], MPI_Datatype type, MPI_Comm comm) {
  return block_rule(counts, type, ReduceOp::sum, comm);
}

std::optional<Plan> plan_bcast(int count, MPI_Datatype type, int root, MPI_Comm comm) {
  std::optional<Plan> p = counted(count, false, type, ReduceOp::sum, comm);
  if (!p || root < 0 || root >= p->size) return std::nullopt;
  return p;
}

std::optional<Plan> plan_allgather(int count, MPI_Datatype type, MPI_Comm comm) {
  return counted(count, true, type, ReduceOp::sum, comm);
}

}  // namespace toroid::pmpi
