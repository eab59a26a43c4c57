#include "exec/stock.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstring>
#include <vector>

#include "kernels/reduce.hpp"
#include "toroid/block.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

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
constexpr std::uint64_t kMaxPiece = 1ull << 30;

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
               DataType type, ReduceOp op, MPI_Comm comm, StockOps& ops, int root,
               const schedule::VarBlocks* blocks) {
  StockCall call(c, in, out, count, type, op, comm, ops, root, blocks);
  call.issue(true);
  call.finish();
}

StockCall::StockCall(schedule::Collective c, const void* in, void* out, std::uint64_t count,
                     DataType type, ReduceOp op, MPI_Comm comm, StockOps& ops, int root,
                     const schedule::VarBlocks* blocks)
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
  if (c == schedule::Collective::alltoall && blocks) {  // MPI's int counts and displacements
    const auto ints = [](const std::vector<std::uint64_t>& v, std::vector<int>& out) {
      out.clear();
      for (std::uint64_t x : v) out.push_back(as_int(x, "alltoallv"));
    };
    ints(blocks->send_counts, counts_);
    ints(blocks->send_offsets, displs_);
    ints(blocks->recv_counts, recv_counts_);
    ints(blocks->recv_offsets, recv_displs_);
  } else if (c == schedule::Collective::alltoall) {  // p equal blocks (validated before)
    counts_.assign(1, as_int(count / static_cast<std::uint64_t>(p_), "alltoall"));
  }
}

void StockCall::start() { issue(false); }

// The one switch over the stock calls: each collective's MPI call, blocking, or its MPI_I...
// form whose request joins requests_. The specialised calls (MPI_Reduce_scatter_block,
// MPI_Allgather) where the blocks are equal, as a user of stock MPI would call them.
void StockCall::issue(bool blocking) {
  requests_.clear();
  const std::size_t es = size_of(type_);
  const MPI_Datatype dt = mpi_type(type_);
  auto* o = static_cast<std::byte*>(out_);
  const auto* i = static_cast<const std::byte*>(in_);
  auto next = [&]() -> MPI_Request* { return &requests_.emplace_back(MPI_REQUEST_NULL); };
  const bool equal = count_ % static_cast<std::uint64_t>(p_) == 0;
  switch (c_) {
    case schedule::Collective::broadcast:
      // Elementwise, so large vectors go as several calls of at most 2^30 elements.
      requests_.reserve(count_ / kMaxPiece + 1);
      for (std::uint64_t at = 0; at < count_; at += kMaxPiece) {
        const int n = static_cast<int>(std::min(kMaxPiece, count_ - at));
        mpi_check(blocking ? MPI_Bcast(o + at * es, n, dt, root_, comm_)
                           : MPI_Ibcast(o + at * es, n, dt, root_, comm_, next()),
                  "MPI_Bcast");
      }
      return;
    case schedule::Collective::allreduce:
      requests_.reserve(count_ / kMaxPiece + 1);
      for (std::uint64_t at = 0; at < count_; at += kMaxPiece) {
        const int n = static_cast<int>(std::min(kMaxPiece, count_ - at));
        const void* send = in_ == out_ ? MPI_IN_PLACE : static_cast<const void*>(i + at * es);
        mpi_check(blocking ? MPI_Allreduce(send, o + at * es, n, dt, mop_, comm_)
                           : MPI_Iallreduce(send, o + at * es, n, dt, mop_, comm_, next()),
                  "MPI_Allreduce");
      }
      return;
    case schedule::Collective::reduce_scatter:
      if (equal && in_ != out_)
        mpi_check(blocking
                      ? MPI_Reduce_scatter_block(in_, out_, counts_[0], dt, mop_, comm_)
                      : MPI_Ireduce_scatter_block(in_, out_, counts_[0], dt, mop_, comm_, next()),
                  "MPI_Reduce_scatter_block");
      else {
        const void* send = in_ == out_ ? MPI_IN_PLACE : in_;
        mpi_check(blocking
                      ? MPI_Reduce_scatter(send, out_, counts_.data(), dt, mop_, comm_)
                      : MPI_Ireduce_scatter(send, out_, counts_.data(), dt, mop_, comm_, next()),
                  "MPI_Reduce_scatter");
      }
      return;
    case schedule::Collective::alltoall:
      if (!recv_counts_.empty()) {
        mpi_check(blocking
                      ? MPI_Alltoallv(in_, counts_.data(), displs_.data(), dt, out_,
                                      recv_counts_.data(), recv_displs_.data(), dt, comm_)
                      : MPI_Ialltoallv(in_, counts_.data(), displs_.data(), dt, out_,
                                       recv_counts_.data(), recv_displs_.data(), dt, comm_, next()),
                  "MPI_Alltoallv");
        return;
      }
      mpi_check(blocking ? MPI_Alltoall(in_, counts_[0], dt, out_, counts_[0], dt, comm_)
                         : MPI_Ialltoall(in_, counts_[0], dt, out_, counts_[0], dt, comm_, next()),
                "MPI_Alltoall");
      return;
    case schedule::Collective::allgather: {
      const auto me = static_cast<std::size_t>(rank_);
      const bool in_place = i == o + static_cast<std::size_t>(displs_[me]) * es;
      const void* send = in_place ? MPI_IN_PLACE : in_;
      const int mine = counts_[me];
      if (equal)
        mpi_check(blocking ? MPI_Allgather(send, mine, dt, out_, mine, dt, comm_)
                           : MPI_Iallgather(send, mine, dt, out_, mine, dt, comm_, next()),
                  "MPI_Allgather");
      else
        mpi_check(blocking ? MPI_Allgatherv(send, mine, dt, out_, counts_.data(), displs_.data(),
                                            dt, comm_)
                           : MPI_Iallgatherv(send, mine, dt, out_, counts_.data(), displs_.data(),
                                             dt, comm_, next()),
                  "MPI_Allgatherv");
      return;
    }
  }
}

// After MPI has reduced: toroid's conventions on top of MPI's result. avg divides by p, and an
// in-place reduce-scatter moves the own block from the front (MPI's layout) to its offset.
void StockCall::finish() {
  requests_.clear();
  const std::size_t es = size_of(type_);
  auto* o = static_cast<std::byte*>(out_);
  const Block own = block_of(count_, p_, rank_);
  const auto divisor = static_cast<std::uint32_t>(p_);
  if (c_ == schedule::Collective::allreduce) {
    if (op_ == ReduceOp::avg) kernels::divide(type_, out_, count_, divisor);
  } else if (c_ == schedule::Collective::reduce_scatter) {
    if (in_ == out_ && own.count > 0) std::memmove(o + own.offset * es, o, own.count * es);
    if (op_ == ReduceOp::avg)
      kernels::divide(type_, in_ == out_ ? o + own.offset * es : o, own.count, divisor);
  }
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
