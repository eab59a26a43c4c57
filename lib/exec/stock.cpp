#include "exec/stock.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstring>
#include <vector>

#include "exec/mpi_check.hpp"
#include "kernels/reduce.hpp"
#include "toroid/collectives.hpp"
#include "toroid/error.hpp"

namespace toroid::exec {
namespace {

template <DataType T, ReduceOp O>
void user_op(void* in, void* inout, int* len, MPI_Datatype*) {
  kernels::reduce_fn(T, O)(inout, inout, in, static_cast<std::size_t>(*len));
}

template <DataType T>
MPI_User_function* user_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return user_op<T, ReduceOp::sum>;
    case ReduceOp::prod: return user_op<T, ReduceOp::prod>;
    case ReduceOp::min: return user_op<T, ReduceOp::min>;
    case ReduceOp::max: return user_op<T, ReduceOp::max>;
  }
  return nullptr;
}

// Largest element count handed to one MPI call.
constexpr std::uint64_t max_piece = 1ull << 30;

int as_int(std::uint64_t v, const char* what) {
  if (v > static_cast<std::uint64_t>(INT_MAX))
    throw InvalidArgument(fmt::format("stock MPI {}: block of {} elements exceeds MPI's int count", what, v));
  return static_cast<int>(v);
}

}  // namespace

StockOps::~StockOps() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& [key, op] : created_) MPI_Op_free(&op);
}

MPI_Op StockOps::op(DataType type, ReduceOp op) {
  if (type != DataType::f16 && type != DataType::bf16) {
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: return MPI_SUM;
      case ReduceOp::prod: return MPI_PROD;
      case ReduceOp::min: return MPI_MIN;
      case ReduceOp::max: return MPI_MAX;
    }
  }
  const ReduceOp key_op = op == ReduceOp::avg ? ReduceOp::sum : op;
  auto it = created_.find({type, key_op});
  if (it != created_.end()) return it->second;
  MPI_Op made = MPI_OP_NULL;
  MPI_User_function* fn = type == DataType::f16 ? user_fn<DataType::f16>(key_op) : user_fn<DataType::bf16>(key_op);
  mpi_check(MPI_Op_create(fn, 1, &made), "MPI_Op_create");
  created_[{type, key_op}] = made;
  return made;
}

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::f32: return MPI_FLOAT;
    case DataType::f64: return MPI_DOUBLE;
    case DataType::i32: return MPI_INT32_T;
    case DataType::i64: return MPI_INT64_T;
    case DataType::f16:
    case DataType::bf16: return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

void run_stock(schedule::Collective c, const void* in, void* out, std::uint64_t count,
               DataType type, ReduceOp op, MPI_Comm comm, StockOps& ops) {
  int rank = 0, p = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  const std::size_t es = size_of(type);
  const MPI_Datatype dt = mpi_type(type);
  const MPI_Op mop = ops.op(type, op);
  auto* o = static_cast<std::byte*>(out);
  const auto* i = static_cast<const std::byte*>(in);
  const Block own = block_of(count, p, rank);
  switch (c) {
    case schedule::Collective::allreduce:
      // Elementwise, so large vectors go as several calls of at most 2^30 elements.
      for (std::uint64_t at = 0; at < count; at += max_piece) {
        const int n = static_cast<int>(std::min(max_piece, count - at));
        const void* send = in == out ? MPI_IN_PLACE : static_cast<const void*>(i + at * es);
        mpi_check(MPI_Allreduce(send, o + at * es, n, dt, mop, comm), "MPI_Allreduce");
      }
      if (op == ReduceOp::avg) kernels::divide(type, out, count, static_cast<std::uint32_t>(p));
      return;
    case schedule::Collective::reduce_scatter: {
      std::vector<int> counts(p);
      for (int r = 0; r < p; ++r) counts[r] = as_int(block_of(count, p, r).count, "reduce_scatter");
      const bool equal = count % static_cast<std::uint64_t>(p) == 0;
      if (equal && in != out) {  // the specialised stock call, as benchmarks compare against
        mpi_check(MPI_Reduce_scatter_block(in, out, counts[0], dt, mop, comm), "MPI_Reduce_scatter_block");
        if (op == ReduceOp::avg) kernels::divide(type, out, own.count, static_cast<std::uint32_t>(p));
      } else if (in == out) {
        mpi_check(MPI_Reduce_scatter(MPI_IN_PLACE, out, counts.data(), dt, mop, comm), "MPI_Reduce_scatter");
        if (own.count > 0) std::memmove(o + own.offset * es, o, own.count * es);  // toroid's in-place layout
        if (op == ReduceOp::avg) kernels::divide(type, o + own.offset * es, own.count, static_cast<std::uint32_t>(p));
      } else {
        mpi_check(MPI_Reduce_scatter(in, out, counts.data(), dt, mop, comm), "MPI_Reduce_scatter");
        if (op == ReduceOp::avg) kernels::divide(type, out, own.count, static_cast<std::uint32_t>(p));
      }
      return;
    }
    case schedule::Collective::allgather: {
      std::vector<int> counts(p), displs(p);
      for (int r = 0; r < p; ++r) {
        const Block b = block_of(count, p, r);
        counts[r] = as_int(b.count, "allgather");
        displs[r] = as_int(b.offset, "allgather");
      }
      const bool in_place = i == o + own.offset * es;
      if (count % static_cast<std::uint64_t>(p) == 0) {
        mpi_check(MPI_Allgather(in_place ? MPI_IN_PLACE : in, counts[rank], dt, out, counts[rank], dt, comm),
                  "MPI_Allgather");
        return;
      }
      mpi_check(MPI_Allgatherv(in_place ? MPI_IN_PLACE : in, counts[rank], dt, out, counts.data(),
                               displs.data(), dt, comm),
                "MPI_Allgatherv");
      return;
    }
  }
}

}  // namespace toroid::exec
