#include "exec/stock.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstring>
#include <vector>

#include "mpi_base/mpi_check.hpp"
#include "kernels/reduce.hpp"
#include "toroid/block.hpp"
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
    case ReduceOp::avg:
      return user_op<T, ReduceOp::sum>;
    case ReduceOp::prod:
      return user_op<T, ReduceOp::prod>;
    case ReduceOp::min:
      return user_op<T, ReduceOp::min>;
    case ReduceOp::max:
      return user_op<T, ReduceOp::max>;
  }
  return nullptr;
}

// Largest element count handed to one MPI call.
constexpr std::uint64_t max_piece = 1ull << 30;

int as_int(std::uint64_t v, const char* what) {
  if (v > static_cast<std::uint64_t>(INT_MAX))
    throw InvalidArgument(
        fmt::format("stock MPI {}: block of {} elements exceeds MPI's int count", what, v));
  return static_cast<int>(v);
}

// The blocks of `count` over p ranks as MPI's int counts (and displacements, when asked for:
// only all-gather needs them, and only then must the offsets fit in an int).
void block_ints(std::uint64_t count, int p, const char* what, std::vector<int>& counts,
                std::vector<int>* displs) {
  counts.resize(static_cast<std::size_t>(p));
  if (displs) displs->resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    const Block b = block_of(count, p, r);
    counts[static_cast<std::size_t>(r)] = as_int(b.count, what);
    if (displs) (*displs)[static_cast<std::size_t>(r)] = as_int(b.offset, what);
  }
}

// After MPI has reduced: toroid's conventions on top of MPI's result. avg divides by p, and an
// in-place reduce-scatter moves the own block from the front (MPI's layout) to its offset.
void finish_stock(schedule::Collective c, const void* in, void* out, std::uint64_t count,
                  DataType type, ReduceOp op, int p, int rank) {
  const std::size_t es = size_of(type);
  auto* o = static_cast<std::byte*>(out);
  const Block own = block_of(count, p, rank);
  const auto divisor = static_cast<std::uint32_t>(p);
  if (c == schedule::Collective::allreduce) {
    if (op == ReduceOp::avg) kernels::divide(type, out, count, divisor);
  } else if (c == schedule::Collective::reduce_scatter) {
    if (in == out && own.count > 0) std::memmove(o + own.offset * es, o, own.count * es);
    if (op == ReduceOp::avg)
      kernels::divide(type, in == out ? o + own.offset * es : o, own.count, divisor);
  }
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
      case ReduceOp::avg:
        return MPI_SUM;
      case ReduceOp::prod:
        return MPI_PROD;
      case ReduceOp::min:
        return MPI_MIN;
      case ReduceOp::max:
        return MPI_MAX;
    }
  }
  const ReduceOp key_op = op == ReduceOp::avg ? ReduceOp::sum : op;
  auto it = created_.find({type, key_op});
  if (it != created_.end()) return it->second;
  MPI_Op made = MPI_OP_NULL;
  MPI_User_function* fn =
      type == DataType::f16 ? user_fn<DataType::f16>(key_op) : user_fn<DataType::bf16>(key_op);
  mpi_check(MPI_Op_create(fn, 1, &made), "MPI_Op_create");
  created_[{type, key_op}] = made;
  return made;
}

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::f32:
      return MPI_FLOAT;
    case DataType::f64:
      return MPI_DOUBLE;
    case DataType::i32:
      return MPI_INT32_T;
    case DataType::i64:
      return MPI_INT64_T;
    case DataType::f16:
    case DataType::bf16:
      return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

void run_stock(schedule::Collective c, const void* in, void* out, std::uint64_t count,
               DataType type, ReduceOp op, MPI_Comm comm, StockOps& ops, int root) {
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
    case schedule::Collective::broadcast:
      for (std::uint64_t at = 0; at < count; at += max_piece)
        mpi_check(MPI_Bcast(o + at * es, static_cast<int>(std::min(max_piece, count - at)), dt,
                            root, comm),
                  "MPI_Bcast");
      return;
    case schedule::Collective::allreduce:
      // Elementwise, so large vectors go as several calls of at most 2^30 elements.
      for (std::uint64_t at = 0; at < count; at += max_piece) {
        const int n = static_cast<int>(std::min(max_piece, count - at));
        const void* send = in == out ? MPI_IN_PLACE : static_cast<const void*>(i + at * es);
        mpi_check(MPI_Allreduce(send, o + at * es, n, dt, mop, comm), "MPI_Allreduce");
      }
      finish_stock(c, in, out, count, type, op, p, rank);
      return;
    case schedule::Collective::reduce_scatter: {
      std::vector<int> counts;
      block_ints(count, p, "reduce_scatter", counts, nullptr);
      const bool equal = count % static_cast<std::uint64_t>(p) == 0;
      if (equal && in != out)  // the specialised stock call, as benchmarks compare against
        mpi_check(MPI_Reduce_scatter_block(in, out, counts[0], dt, mop, comm),
                  "MPI_Reduce_scatter_block");
      else
        mpi_check(
            MPI_Reduce_scatter(in == out ? MPI_IN_PLACE : in, out, counts.data(), dt, mop, comm),
            "MPI_Reduce_scatter");
      finish_stock(c, in, out, count, type, op, p, rank);
      return;
    }
    case schedule::Collective::allgather: {
      std::vector<int> counts, displs;
      block_ints(count, p, "allgather", counts, &displs);
      const bool in_place = i == o + own.offset * es;
      if (count % static_cast<std::uint64_t>(p) == 0) {
        mpi_check(MPI_Allgather(in_place ? MPI_IN_PLACE : in, counts[rank], dt, out, counts[rank],
                                dt, comm),
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

StockCall::StockCall(schedule::Collective c, const void* in, void* out, std::uint64_t count,
                     DataType type, ReduceOp op, MPI_Comm comm, StockOps& ops, int root)
    : c_(c),
      in_(in),
      out_(out),
      count_(count),
      type_(type),
      op_(op),
      comm_(comm),
      mop_(ops.op(type, op)),
      root_(root) {
  mpi_check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &p_), "MPI_Comm_size");
  if (c == schedule::Collective::reduce_scatter || c == schedule::Collective::allgather)
    block_ints(count, p_, toroid::to_string(c).data(), counts_,
               c == schedule::Collective::allgather ? &displs_ : nullptr);
}

void StockCall::start() {
  requests_.clear();
  const std::size_t es = size_of(type_);
  const MPI_Datatype dt = mpi_type(type_);
  auto* o = static_cast<std::byte*>(out_);
  const auto* i = static_cast<const std::byte*>(in_);
  auto next = [&]() -> MPI_Request* { return &requests_.emplace_back(MPI_REQUEST_NULL); };
  switch (c_) {
    case schedule::Collective::broadcast:
      requests_.reserve(count_ / max_piece + 1);
      for (std::uint64_t at = 0; at < count_; at += max_piece)
        mpi_check(MPI_Ibcast(o + at * es, static_cast<int>(std::min(max_piece, count_ - at)), dt,
                             root_, comm_, next()),
                  "MPI_Ibcast");
      break;
    case schedule::Collective::allreduce:
      requests_.reserve(count_ / max_piece + 1);
      for (std::uint64_t at = 0; at < count_; at += max_piece) {
        const int n = static_cast<int>(std::min(max_piece, count_ - at));
        const void* send = in_ == out_ ? MPI_IN_PLACE : static_cast<const void*>(i + at * es);
        mpi_check(MPI_Iallreduce(send, o + at * es, n, dt, mop_, comm_, next()), "MPI_Iallreduce");
      }
      break;
    case schedule::Collective::reduce_scatter:
      if (count_ % static_cast<std::uint64_t>(p_) == 0 && in_ != out_)
        mpi_check(MPI_Ireduce_scatter_block(in_, out_, counts_[0], dt, mop_, comm_, next()),
                  "MPI_Ireduce_scatter_block");
      else
        mpi_check(MPI_Ireduce_scatter(in_ == out_ ? MPI_IN_PLACE : in_, out_, counts_.data(), dt,
                                      mop_, comm_, next()),
                  "MPI_Ireduce_scatter");
      break;
    case schedule::Collective::allgather: {
      const bool in_place =
          i == o + static_cast<std::size_t>(displs_[static_cast<std::size_t>(rank_)]) * es;
      const int mine = counts_[static_cast<std::size_t>(rank_)];
      mpi_check(MPI_Iallgatherv(in_place ? MPI_IN_PLACE : in_, mine, dt, out_, counts_.data(),
                                displs_.data(), dt, comm_, next()),
                "MPI_Iallgatherv");
      break;
    }
  }
}

void StockCall::finish() {
  finish_stock(c_, in_, out_, count_, type_, op_, p_, rank_);
  requests_.clear();
}

bool StockCall::test() {
  if (requests_.empty()) return true;
  int flag = 0;
  mpi_check(
      MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag, MPI_STATUSES_IGNORE),
      "MPI_Testall");
  if (flag) finish();
  return flag != 0;
}

bool StockCall::complete() const {
  for (MPI_Request r : requests_) {
    int flag = 0;
    mpi_check(MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE), "MPI_Request_get_status");
    if (!flag) return false;
  }
  return true;
}

void StockCall::wait() {
  if (requests_.empty()) return;
  mpi_check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
  finish();
}

}  // namespace toroid::exec
