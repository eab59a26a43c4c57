// The c10d operations toroid has no schedules for, on MPI over the group's own duplicate
// communicator: gather, scatter and all-to-all run on the caller's thread (collectives are
// called in the same order on every rank, so blocking there cannot cross another rank's wait)
// and return completed works; send and recv are non-blocking, so an isend/irecv pair in either
// order completes. Their tensors move as bytes: every dtype torch has is served. So do
// broadcast and all-gather of the dtypes toroid has no type for (uint8, int8, int16, bool,
// complex: broadcast_object_list and all_gather_object send uint8), and all-reduce and reduce
// where toroid has no type or no op (uint8, int8, int16; the bitwise ops on integers).
#include <fmt/format.h>

#include <climits>
#include <cstring>

#include "gil.hpp"
#include "process_group.hpp"
#include "tensor_checks.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid::torch_backend {
namespace {

int bytes_of(const at::Tensor& t, const char* op) {
  const auto n = t.numel() * static_cast<std::int64_t>(t.element_size());
  if (n > INT_MAX)
    throw InvalidArgument(fmt::format(
        "toroid backend: {}: {} bytes is more than one MPI call moves ({})", op, n, INT_MAX));
  return static_cast<int>(n);
}

// Every tensor of `list` shaped and typed like `like`, `want` of them.
void require_like(const std::vector<at::Tensor>& list, const at::Tensor& like, std::size_t want,
                  const char* op, const char* what) {
  if (list.size() != want)
    throw InvalidArgument(fmt::format("toroid backend: {}: {} has {} tensors, expected {}", op,
                                      what, list.size(), want));
  for (const auto& t : list) {
    require_dense(t, op, what);
    if (t.scalar_type() != like.scalar_type() || t.numel() != like.numel())
      throw InvalidArgument(fmt::format(
          "toroid backend: {}: {} holds a {} tensor of {} elements, the input is {} of {}", op,
          what, c10::toString(t.scalar_type()), t.numel(), c10::toString(like.scalar_type()),
          like.numel()));
  }
}

}  // namespace

// ---- MpiWork

MpiWork::MpiWork(int rank, c10d::OpType type, std::vector<at::Tensor> tensors, MPI_Request request)
    : c10d::Work(rank, type), tensors_(std::move(tensors)), request_(request) {}

MpiWork::~MpiWork() {
  // A work dropped before completion (allowed by torch) must not leave MPI writing into freed
  // tensors: it is finished here.
  std::lock_guard lock(mutex_);
  if (!done_) {
    ReleaseGilIfHeld gil;
    MPI_Wait(&request_, &status_);
  }
}

bool MpiWork::test_locked() {
  if (done_) return true;
  int flag = 0;
  mpi_check(MPI_Test(&request_, &flag, &status_), "toroid backend: MPI_Test");
  done_ = flag != 0;
  return done_;
}

bool MpiWork::isCompleted() {
  std::lock_guard lock(mutex_);
  return test_locked();
}

bool MpiWork::isSuccess() const {
  std::lock_guard lock(mutex_);
  return done_;
}

std::vector<at::Tensor> MpiWork::result() { return tensors_; }

bool MpiWork::wait(std::chrono::milliseconds timeout) {
  ReleaseGilIfHeld gil;
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (test_locked()) return true;
    }
    if (timeout != kNoTimeout && std::chrono::steady_clock::now() > until)
      throw Error(fmt::format("toroid backend: {} not completed within {} ms",
                              c10d::opTypeToString(retrieveOpType()), timeout.count()));
    std::this_thread::yield();
  }
}

int MpiWork::sourceRank() const {
  std::lock_guard lock(mutex_);
  return done_ ? status_.MPI_SOURCE : -1;
}

// ---- the operations

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::completed(c10d::OpType type,
                                                             std::vector<at::Tensor> outputs) {
  auto work = c10::make_intrusive<ToroidWork>(*this, type, std::move(outputs));
  work->complete(nullptr);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  require_one(inputs, "gather");
  const at::Tensor& in = inputs[0];
  const bool root = getRank() == opts.rootRank;
  int bytes = 0;
  toroid::run_agreed(mpi_, [&] {
    require_dense(in, "gather", "the input");
    bytes = bytes_of(in, "gather");
    if (!root) return;
    if (outputs.size() != 1)
      throw InvalidArgument("toroid backend: gather: the root expects one list of outputs");
    require_like(outputs[0], in, static_cast<std::size_t>(getSize()), "gather", "the output list");
  });
  at::Tensor staging = root ? at::empty({getSize() * in.numel()}, in.options()) : at::Tensor();
  {
    ReleaseGilIfHeld gil;
    mpi_check(MPI_Gather(in.data_ptr(), bytes, MPI_BYTE, root ? staging.data_ptr() : nullptr, bytes,
                         MPI_BYTE, static_cast<int>(opts.rootRank), mpi_),
              "toroid backend: MPI_Gather");
  }
  if (root)
    for (int r = 0; r < getSize(); ++r)
      std::memcpy(outputs[0][r].data_ptr(), static_cast<char*>(staging.data_ptr()) + r * bytes,
                  bytes);
  return completed(c10d::OpType::GATHER, root ? outputs[0] : std::vector<at::Tensor>{});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::broadcast_bytes(at::Tensor& t, int root) {
  int bytes = 0;
  toroid::run_agreed(mpi_, [&] {
    require_dense(t, "broadcast", "the tensor");
    bytes = bytes_of(t, "broadcast");
  });
  {
    ReleaseGilIfHeld gil;
    mpi_check(MPI_Bcast(t.data_ptr(), bytes, MPI_BYTE, root, mpi_), "toroid backend: MPI_Bcast");
  }
  return completed(c10d::OpType::BROADCAST, {t});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::allgather_bytes(const at::Tensor& in,
                                                                   std::vector<at::Tensor> outputs,
                                                                   c10d::OpType type) {
  const char* op = type == c10d::OpType::_ALLGATHER_BASE ? "_allgather_base" : "allgather";
  int bytes = 0;
  toroid::run_agreed(mpi_, [&] {
    require_dense(in, op, "the input");
    bytes = bytes_of(in, op);
    (void)bytes_of(outputs[0], op);
  });
  // One flat output (_allgather_base, checked by the caller) is written in place; a list
  // through a staging buffer.
  const bool flat = type == c10d::OpType::_ALLGATHER_BASE;
  at::Tensor staging = flat ? outputs[0] : at::empty({getSize() * in.numel()}, in.options());
  {
    ReleaseGilIfHeld gil;
    mpi_check(
        MPI_Allgather(in.data_ptr(), bytes, MPI_BYTE, staging.data_ptr(), bytes, MPI_BYTE, mpi_),
        "toroid backend: MPI_Allgather");
  }
  if (!flat)
    for (int r = 0; r < getSize(); ++r)
      std::memcpy(outputs[r].data_ptr(), static_cast<char*>(staging.data_ptr()) + r * bytes, bytes);
  return completed(type, outputs);
}

namespace {

// MPI's type for a dtype toroid has no type for (or any integer or float one), null if none.
MPI_Datatype mpi_type_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kByte:
      return MPI_UINT8_T;
    case at::kChar:
      return MPI_INT8_T;
    case at::kShort:
      return MPI_INT16_T;
    case at::kInt:
      return MPI_INT32_T;
    case at::kLong:
      return MPI_INT64_T;
    case at::kFloat:
      return MPI_FLOAT;
    case at::kDouble:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op_of(const c10d::ReduceOp& op, bool integer) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return MPI_SUM;
    case c10d::ReduceOp::PRODUCT:
      return MPI_PROD;
    case c10d::ReduceOp::MIN:
      return MPI_MIN;
    case c10d::ReduceOp::MAX:
      return MPI_MAX;
    case c10d::ReduceOp::BAND:
      return integer ? MPI_BAND : MPI_OP_NULL;
    case c10d::ReduceOp::BOR:
      return integer ? MPI_BOR : MPI_OP_NULL;
    case c10d::ReduceOp::BXOR:
      return integer ? MPI_BXOR : MPI_OP_NULL;
    default:
      return MPI_OP_NULL;
  }
}

}  // namespace

bool ProcessGroupToroid::mpi_reduces(const at::Tensor& t, const c10d::ReduceOp& op) {
  const MPI_Datatype type = mpi_type_of(t);
  return type != MPI_DATATYPE_NULL &&
         mpi_op_of(op, !at::isFloatingType(t.scalar_type())) != MPI_OP_NULL;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::allreduce_on_mpi(
    at::Tensor& t, const c10d::ReduceOp& op, bool in_place, c10d::OpType type, const char* name) {
  int count = 0;
  toroid::run_agreed(mpi_, [&] {
    require_dense(t, name, "the tensor");
    if (t.numel() > INT_MAX)
      throw InvalidArgument(
          fmt::format("toroid backend: {}: {} elements is more than one MPI "
                      "call reduces ({})",
                      name, t.numel(), INT_MAX));
    count = static_cast<int>(t.numel());
  });
  const MPI_Datatype dtype = mpi_type_of(t);
  const MPI_Op mop = mpi_op_of(op, !at::isFloatingType(t.scalar_type()));
  at::Tensor scratch = in_place ? at::Tensor() : at::empty_like(t);
  {
    ReleaseGilIfHeld gil;
    mpi_check(MPI_Allreduce(in_place ? MPI_IN_PLACE : t.data_ptr(),
                            in_place ? t.data_ptr() : scratch.data_ptr(), count, dtype, mop, mpi_),
              "toroid backend: MPI_Allreduce");
  }
  return completed(type, {t});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  require_one(outputs, "scatter");
  at::Tensor& out = outputs[0];
  const bool root = getRank() == opts.rootRank;
  int bytes = 0;
  toroid::run_agreed(mpi_, [&] {
    require_dense(out, "scatter", "the output");
    bytes = bytes_of(out, "scatter");
    if (!root) return;
    if (inputs.size() != 1)
      throw InvalidArgument("toroid backend: scatter: the root expects one list of inputs");
    require_like(inputs[0], out, static_cast<std::size_t>(getSize()), "scatter", "the input list");
  });
  at::Tensor staging;
  if (root) {
    staging = at::empty({getSize() * out.numel()}, out.options());
    for (int r = 0; r < getSize(); ++r)
      std::memcpy(static_cast<char*>(staging.data_ptr()) + r * bytes, inputs[0][r].data_ptr(),
                  bytes);
  }
  {
    ReleaseGilIfHeld gil;
    mpi_check(MPI_Scatter(root ? staging.data_ptr() : nullptr, bytes, MPI_BYTE, out.data_ptr(),
                          bytes, MPI_BYTE, static_cast<int>(opts.rootRank), mpi_),
              "toroid backend: MPI_Scatter");
  }
  return completed(c10d::OpType::SCATTER, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::alltoall_bytes(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
    std::vector<int64_t>& input_splits) {
  const int p = getSize();
  // Rows of dim 0, as torch splits them; no splits: equal parts.
  auto cut = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* what) {
    const std::int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const std::int64_t row_bytes = rows ? t.numel() * t.element_size() / rows : 0;
    std::vector<int> counts(p), displs(p);
    if (!splits.empty() && splits.size() != static_cast<std::size_t>(p))
      throw InvalidArgument(
          fmt::format("toroid backend: alltoall_base: {} splits has {} sizes "
                      "for {} ranks",
                      what, splits.size(), p));
    if (splits.empty() && rows % p != 0)
      throw InvalidArgument(fmt::format(
          "toroid backend: alltoall_base: the {} has {} rows, not a multiple of {} ranks", what,
          rows, p));
    std::int64_t at = 0;
    for (int r = 0; r < p; ++r) {
      const std::int64_t n = (splits.empty() ? rows / p : splits[r]) * row_bytes;
      if (at + n > INT_MAX)
        throw InvalidArgument("toroid backend: alltoall_base: more bytes than one MPI call moves");
      counts[r] = static_cast<int>(n), displs[r] = static_cast<int>(at), at += n;
    }
    if (at != t.numel() * static_cast<std::int64_t>(t.element_size()))
      throw InvalidArgument(fmt::format(
          "toroid backend: alltoall_base: the {} splits add up to {} bytes, the tensor has {}",
          what, at, t.numel() * t.element_size()));
    return std::pair{counts, displs};
  };
  std::pair<std::vector<int>, std::vector<int>> sends, recvs;
  toroid::run_agreed(mpi_, [&] {
    require_dense(input, "alltoall_base", "the input");
    require_dense(output, "alltoall_base", "the output");
    if (input.scalar_type() != output.scalar_type())
      throw InvalidArgument("toroid backend: alltoall_base: input and output differ in dtype");
    sends = cut(input, input_splits, "input");
    recvs = cut(output, output_splits, "output");
  });
  auto& [send_counts, send_displs] = sends;
  auto& [recv_counts, recv_displs] = recvs;
  {
    ReleaseGilIfHeld gil;
    mpi_check(
        MPI_Alltoallv(input.data_ptr(), send_counts.data(), send_displs.data(), MPI_BYTE,
                      output.data_ptr(), recv_counts.data(), recv_displs.data(), MPI_BYTE, mpi_),
        "toroid backend: MPI_Alltoallv");
  }
  return completed(c10d::OpType::ALLTOALL_BASE, {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::alltoall_bytes_list(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllToAllOptions&) {
  const int p = getSize();
  std::vector<int> send_counts(p), send_displs(p), recv_counts(p), recv_displs(p);
  std::int64_t send_total = 0, recv_total = 0;
  toroid::run_agreed(mpi_, [&] {
    if (inputs.size() != static_cast<std::size_t>(p) || outputs.size() != inputs.size())
      throw InvalidArgument(
          fmt::format("toroid backend: alltoall: expects {} inputs and {} outputs, got {} and {}",
                      p, p, inputs.size(), outputs.size()));
    for (int r = 0; r < p; ++r) {
      require_dense(inputs[r], "alltoall", "an input");
      require_dense(outputs[r], "alltoall", "an output");
      if (inputs[r].scalar_type() != inputs[0].scalar_type() ||
          outputs[r].scalar_type() != inputs[0].scalar_type())
        throw InvalidArgument("toroid backend: alltoall: every tensor must have one dtype");
      send_counts[r] = bytes_of(inputs[r], "alltoall"),
      send_displs[r] = static_cast<int>(send_total);
      recv_counts[r] = bytes_of(outputs[r], "alltoall"),
      recv_displs[r] = static_cast<int>(recv_total);
      send_total += send_counts[r], recv_total += recv_counts[r];
      if (send_total > INT_MAX || recv_total > INT_MAX)
        throw InvalidArgument("toroid backend: alltoall: more bytes than one MPI call moves");
    }
  });
  std::vector<char> send(static_cast<std::size_t>(send_total)), recv(recv_total);
  for (int r = 0; r < p; ++r)
    std::memcpy(send.data() + send_displs[r], inputs[r].data_ptr(), send_counts[r]);
  {
    ReleaseGilIfHeld gil;
    mpi_check(MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_BYTE,
                            recv.data(), recv_counts.data(), recv_displs.data(), MPI_BYTE, mpi_),
              "toroid backend: MPI_Alltoallv");
  }
  for (int r = 0; r < p; ++r)
    std::memcpy(outputs[r].data_ptr(), recv.data() + recv_displs[r], recv_counts[r]);
  return completed(c10d::OpType::ALLTOALL, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::point_to_point(std::vector<at::Tensor>& tensors,
                                                                  int peer, int tag, bool sending,
                                                                  const char* op) {
  require_one(tensors, op);
  at::Tensor& t = tensors[0];
  require_dense(t, op, "the tensor");
  const int bytes = bytes_of(t, op);
  MPI_Request request = MPI_REQUEST_NULL;
  if (sending)
    mpi_check(MPI_Isend(t.data_ptr(), bytes, MPI_BYTE, peer, tag, mpi_, &request),
              "toroid backend: MPI_Isend");
  else
    mpi_check(MPI_Irecv(t.data_ptr(), bytes, MPI_BYTE, peer, tag, mpi_, &request),
              "toroid backend: MPI_Irecv");
  const auto type = sending                  ? c10d::OpType::SEND
                    : peer == MPI_ANY_SOURCE ? c10d::OpType::RECVANYSOURCE
                                             : c10d::OpType::RECV;
  return c10::make_intrusive<MpiWork>(getRank(), type, tensors, request);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::send(std::vector<at::Tensor>& tensors, int dst,
                                                        int tag) {
  return point_to_point(tensors, dst, tag, true, "send");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::recv(std::vector<at::Tensor>& tensors, int src,
                                                        int tag) {
  return point_to_point(tensors, src, tag, false, "recv");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  return point_to_point(tensors, MPI_ANY_SOURCE, tag, false, "recv");
}

}  // namespace toroid::torch_backend
