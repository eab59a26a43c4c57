#include "process_group.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "gil.hpp"
#include "tensor_checks.hpp"
#include "toroid/collectives.hpp"
#include "toroid/error.hpp"

namespace toroid::torch_backend {
namespace {

// MPI_Comm_create_group's tag: torch makes groups one at a time, in the same order everywhere.
constexpr int kGroupTag = 7411;

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

// toroid's type for a tensor's dtype, and its op for a c10d op; nothing where it has none.
std::optional<DataType> toroid_type(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return DataType::f32;
    case at::kDouble:
      return DataType::f64;
    case at::kBFloat16:
      return DataType::bf16;
    case at::kHalf:
      return DataType::f16;
    case at::kInt:
      return DataType::i32;
    case at::kLong:
      return DataType::i64;
    default:
      return std::nullopt;
  }
}

std::optional<ReduceOp> toroid_op(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return ReduceOp::sum;
    case c10d::ReduceOp::AVG:
      return ReduceOp::avg;
    case c10d::ReduceOp::PRODUCT:
      return ReduceOp::prod;
    case c10d::ReduceOp::MIN:
      return ReduceOp::min;
    case c10d::ReduceOp::MAX:
      return ReduceOp::max;
    default:
      return std::nullopt;
  }
}

bool toroid_has(const at::Tensor& t) { return toroid_type(t).has_value(); }

DataType type_of(const at::Tensor& t, const char* op) {
  if (const auto type = toroid_type(t)) return *type;
  throw InvalidArgument(
      fmt::format("toroid backend: {}: tensors of type {} are not supported (float32, float64, "
                  "bfloat16, float16, int32, int64; reductions of uint8, int8, int16 through MPI)",
                  op, c10::toString(t.scalar_type())));
}

ReduceOp op_of(const c10d::ReduceOp& op, const char* call) {
  if (const auto ours = toroid_op(op)) return *ours;
  throw InvalidArgument(
      fmt::format("toroid backend: {}: reduce op {} is not supported (SUM, AVG, PRODUCT, MIN, "
                  "MAX; BAND, BOR, BXOR on integers)",
                  call, static_cast<int>(op.op_)));
}

void require_same(const at::Tensor& a, const at::Tensor& b, const char* op) {
  if (a.scalar_type() != b.scalar_type())
    throw InvalidArgument(fmt::format("toroid backend: {}: input is {} and output {}", op,
                                      c10::toString(a.scalar_type()),
                                      c10::toString(b.scalar_type())));
}

std::uint64_t count_of(const at::Tensor& t) { return static_cast<std::uint64_t>(t.numel()); }

// The torus of the job's world group (the first group torch makes), which sub-groups are cut
// from.
std::mutex world_torus_mutex;
std::optional<Torus> world_torus;

// A sub-group's torus: where its members, in group-rank order, are a box of the world's torus in
// its own order (first dimension fastest: a row, a column, a plane of a 3D torus, several whole
// rows, ...), that box's dimensions longer than one, each wrapping where the world's row along
// it closes into a ring and the box spans all of it; a box with one such dimension (a row, a
// column) is laid along x, as a ring or line ("4x1", "4x1:wrap=none"). Anything else: "auto"
// (the most square grid of its size, as for any communicator).
std::string sub_group_topology(const std::vector<int>& members) {
  std::lock_guard lock(world_torus_mutex);
  if (!world_torus) return "auto";
  const Torus& t = *world_torus;
  for (int m : members)
    if (m < 0 || m >= t.chips()) return "auto";
  const int dims = t.dimensions();
  std::vector<int> low = t.coord_of(members.front()), high = low;
  for (int m : members) {
    const std::vector<int> c = t.coord_of(m);
    for (int d = 0; d < dims; ++d) {
      low[static_cast<std::size_t>(d)] =
          std::min(low[static_cast<std::size_t>(d)], c[static_cast<std::size_t>(d)]);
      high[static_cast<std::size_t>(d)] =
          std::max(high[static_cast<std::size_t>(d)], c[static_cast<std::size_t>(d)]);
    }
  }
  std::vector<int> sizes, extent(static_cast<std::size_t>(dims));
  std::vector<bool> wraps;
  std::size_t box = 1;
  for (int d = 0; d < dims; ++d) {
    const auto i = static_cast<std::size_t>(d);
    extent[i] = high[i] - low[i] + 1;
    box *= static_cast<std::size_t>(extent[i]);
    if (extent[i] > 1) {
      sizes.push_back(extent[i]);
      wraps.push_back(t.ring_along(d) && extent[i] == t.size(d));
    }
  }
  if (box != members.size()) return "auto";
  // The members in the box's own order: member i at the box coordinates of i, x fastest.
  std::vector<int> at = low;
  for (std::size_t i = 0; i < members.size(); ++i) {
    std::size_t rest = i;
    for (int d = 0; d < dims; ++d) {
      const auto k = static_cast<std::size_t>(d);
      at[k] = low[k] + static_cast<int>(rest % static_cast<std::size_t>(extent[k]));
      rest /= static_cast<std::size_t>(extent[k]);
    }
    if (members[i] != t.rank_of(at)) return "auto";
  }
  if (sizes.empty()) return "1x1";
  if (sizes.size() == 1) return Torus2D(sizes[0], 1, wraps[0], wraps[0]).to_string();
  return Torus(sizes, wraps).to_string();
}

}  // namespace

// ---- ToroidWork

ToroidWork::ToroidWork(ProcessGroupToroid& group, c10d::OpType type,
                       std::vector<at::Tensor> outputs)
    : c10d::Work(group.getRank(), type), queue_(group.works()), outputs_(std::move(outputs)) {}

bool ToroidWork::isCompleted() {
  std::lock_guard lock(mutex_);
  return done_;
}

bool ToroidWork::isSuccess() const {
  std::lock_guard lock(mutex_);
  return done_ && !error_;
}

std::exception_ptr ToroidWork::exception() const {
  std::lock_guard lock(mutex_);
  return error_;
}

std::vector<at::Tensor> ToroidWork::result() { return outputs_; }

bool ToroidWork::wait(std::chrono::milliseconds timeout) {
  ReleaseGilIfHeld gil;  // the completer may need it to complete this work
  // The oldest work, not yet taken by the completer: drive it here, with no hand-off. (While
  // the work is incomplete its group is alive: the group's destructor completes every work.)
  if (!isCompleted() && queue_.claim_oldest(*this)) {
    drive(true);
    queue_.retire(*this);
  }
  std::unique_lock lock(mutex_);
  if (timeout == kNoTimeout) {
    done_cv_.wait(lock, [&] { return done_; });
  } else if (!done_cv_.wait_for(lock, timeout, [&] { return done_; })) {
    throw Error(fmt::format("toroid backend: work not completed within {} ms", timeout.count()));
  }
  if (error_) std::rethrow_exception(error_);
  return true;
}

// Made when asked for (DDP and communication hooks ask; a synchronous call does not), and
// completed at once when the work already is.
c10::intrusive_ptr<c10::ivalue::Future> ToroidWork::getFuture() {
  static const c10::TypePtr list_of_tensors = c10::ListType::create(c10::TensorType::get());
  c10::intrusive_ptr<c10::ivalue::Future> made;
  {
    std::lock_guard lock(mutex_);
    if (future_) return future_;
    future_ = c10::make_intrusive<c10::ivalue::Future>(list_of_tensors);
    if (!done_) return future_;
    made = future_;
  }
  settle(*made);
  return made;
}

void ToroidWork::settle(c10::ivalue::Future& future) {
  if (error_)
    future.setError(error_);
  else
    future.markCompleted(c10::IValue(outputs_));
}

void ToroidWork::drive(bool caller) {
  std::exception_ptr error;
  try {
    for (auto& r : requests) {
      if (caller) {
        r.wait();  // the caller has nothing else to do: toroid's own wait, as a blocking call
        continue;
      }
      while (!r.test())
        sched_yield();  // one round per test: the caller may start a collective between
    }
    if (finish) finish();
  } catch (...) {
    error = std::current_exception();
  }
  complete(error);
}

void ToroidWork::complete(std::exception_ptr error) {
  std::vector<at::Tensor> release;
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    error_ = error;
    release.swap(keep);
    future = future_;
  }
  // Dropped outside the lock: the last reference to a tensor may free its Python object, which
  // takes the GIL, and a thread holding the GIL may be waiting for this lock (is_completed).
  release.clear();
  done_cv_.notify_all();
  // The future's callbacks (DDP's, a communication hook's) run here, on the driving thread.
  if (future) settle(*future);
}

// ---- ProcessGroupToroid

ProcessGroupToroid::ProcessGroupToroid(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size)
    : c10d::ProcessGroup(rank, size) {
  int initialized = 0, level = 0, mpi_rank = 0, mpi_size = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    throw InvalidArgument(
        "toroid backend: MPI is not initialized (import toroid.distributed does it through mpi4py; "
        "launch the job with mpirun)");
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE)
    throw InvalidArgument(
        "toroid backend: MPI runs below MPI_THREAD_MULTIPLE; the backend completes works on a "
        "thread of its own (mpi4py initializes with MULTIPLE unless mpi4py.rc.thread_level says "
        "otherwise)");
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  // Which MPI ranks this group holds, in group-rank order: each member publishes its own
  // through the group's store (torch gives every group a store of its own), which is also the
  // rendezvous: every member has its process group before the first call.
  store->set("toroid/world_rank/" + std::to_string(rank), bytes_of(std::to_string(mpi_rank)));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back("toroid/world_rank/" + std::to_string(r));
  store->wait(keys);
  std::vector<int> members;
  for (const std::string& key : keys) {
    const std::vector<uint8_t> v = store->get(key);
    members.push_back(std::stoi(std::string(v.begin(), v.end())));
  }
  std::vector<int> seen = members;
  std::sort(seen.begin(), seen.end());
  if (size > mpi_size || std::adjacent_find(seen.begin(), seen.end()) != seen.end() ||
      seen.front() < 0 || seen.back() >= mpi_size)
    throw InvalidArgument(fmt::format(
        "toroid backend: the group's {} ranks are not {} distinct ranks of the mpirun job ({} "
        "ranks): each process must be one MPI rank (use toroid.distributed.init_process_group)",
        size, size, mpi_size));
  std::vector<int> identity(static_cast<std::size_t>(mpi_size));
  std::iota(identity.begin(), identity.end(), 0);
  if (members == identity) {
    comm_ = std::make_unique<Communicator>(MPI_COMM_WORLD);
    std::lock_guard lock(world_torus_mutex);
    if (!world_torus) world_torus = comm_->shape();
  } else {
    // A sub-group (dist.new_group, new_subgroups) or another order: an MPI communicator of
    // exactly those ranks in that order, made by its members only (MPI_Comm_create_group).
    MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, size, members.data(), &group);
    const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, kGroupTag, &sub);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    if (rc != MPI_SUCCESS || sub == MPI_COMM_NULL)
      throw MpiError("toroid backend: MPI_Comm_create_group for a sub-group failed", rc);
    try {
      toroid::Options options;
      options.topology = sub_group_topology(members);
      comm_ = std::make_unique<Communicator>(sub, options);  // keeps a duplicate
    } catch (...) {
      MPI_Comm_free(&sub);
      throw;
    }
    MPI_Comm_free(&sub);
  }
  MPI_Comm_dup(comm_->mpi_comm(), &mpi_);
  MPI_Comm_set_errhandler(mpi_, MPI_ERRORS_RETURN);
}

ProcessGroupToroid::~ProcessGroupToroid() {
  works_.stop();  // every pending work completed, while the communicator lives
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && mpi_ != MPI_COMM_NULL) MPI_Comm_free(&mpi_);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::enqueue(c10::intrusive_ptr<ToroidWork> work) {
  works_.push(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::start_allreduce(std::vector<at::Tensor>& tensors,
                                                                   const c10d::ReduceOp& reduce_op,
                                                                   bool in_place, c10d::OpType type,
                                                                   const char* name) {
  require_one(tensors, name);
  at::Tensor& t = tensors[0];
  require_dense(t, name, "the tensor");
  // Through toroid where it has the dtype and the op, else through MPI where it has them.
  if ((!toroid_has(t) || !toroid_op(reduce_op)) && mpi_reduces(t, reduce_op))
    return allreduce_on_mpi(t, reduce_op, in_place, type, name);
  if (!toroid_has(t) && mpi_reduces(t, c10d::ReduceOp::SUM))  // the dtype is MPI's, not the op
    throw InvalidArgument(fmt::format(
        "toroid backend: {}: reduce op {} on {} is not supported (through MPI: SUM, PRODUCT, MIN, "
        "MAX, BAND, BOR, BXOR)",
        name, static_cast<int>(reduce_op.op_), c10::toString(t.scalar_type())));
  const DataType element = type_of(t, name);
  const ReduceOp op = op_of(reduce_op, name);
  at::Tensor out = in_place ? t : at::empty_like(t);
  auto work = c10::make_intrusive<ToroidWork>(*this, type, tensors);
  work->keep = {t, out};
  work->requests.push_back(
      iallreduce(t.data_ptr(), count_of(t), out.data_ptr(), count_of(out), element, op, *comm_));
  return enqueue(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  return start_allreduce(tensors, opts.reduceOp, true, c10d::OpType::ALLREDUCE, "allreduce");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const ReduceOp op = op_of(opts.reduceOp, "allreduce_coalesced");
  std::vector<DataType> types;  // every tensor checked before any collective starts
  for (const auto& t : tensors) {
    require_dense(t, "allreduce_coalesced", "a tensor");
    types.push_back(type_of(t, "allreduce_coalesced"));
  }
  // One request per tensor, all in flight at once: no copy into a flat buffer.
  auto work = c10::make_intrusive<ToroidWork>(*this, c10d::OpType::ALLREDUCE_COALESCED, tensors);
  work->keep = tensors;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    at::Tensor& t = tensors[i];
    work->requests.push_back(
        iallreduce(t.data_ptr(), count_of(t), t.data_ptr(), count_of(t), types[i], op, *comm_));
  }
  return enqueue(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  require_one(tensors, "broadcast");
  at::Tensor& t = tensors[0];
  if (!toroid_has(t)) return broadcast_bytes(t, static_cast<int>(opts.rootRank));
  require_dense(t, "broadcast", "the tensor");
  auto work = c10::make_intrusive<ToroidWork>(*this, c10d::OpType::BROADCAST, tensors);
  work->keep = tensors;
  work->requests.push_back(ibroadcast(t.data_ptr(), count_of(t), type_of(t, "broadcast"),
                                      static_cast<int>(opts.rootRank), *comm_));
  return enqueue(work);
}

// all_to_all_single: tensors of a dtype toroid has go through toroid: equal parts through its
// all-to-all (auto), split sizes (rows of dim 0, as torch splits them) through its alltoallv.
// Other dtypes, and splits that do not fit their tensor (which alltoall_bytes names), go
// through MPI_Alltoallv.
c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
    std::vector<int64_t>& input_splits, const c10d::AllToAllOptions&) {
  const auto p = static_cast<std::uint64_t>(getSize());
  if (!toroid_has(input) || input.scalar_type() != output.scalar_type() || !input.is_contiguous() ||
      !output.is_contiguous())
    return alltoall_bytes(output, input, output_splits, input_splits);  // checks and says why
  const bool equal = output_splits.empty() && input_splits.empty();
  if (equal && (count_of(input) != count_of(output) || count_of(input) % p != 0 ||
                (input.dim() > 0 && input.size(0) % static_cast<std::int64_t>(p) != 0)))
    return alltoall_bytes(output, input, output_splits, input_splits);
  // Elements per rank from a tensor's splits (none: equal parts); empty where they do not fit.
  const auto elements = [&](const at::Tensor& t, const std::vector<int64_t>& splits) {
    const std::int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const auto row = static_cast<std::uint64_t>(rows ? t.numel() / rows : 0);
    std::vector<std::uint64_t> counts;
    if (splits.empty()) {
      if (rows % static_cast<std::int64_t>(p) == 0)
        counts.assign(p, static_cast<std::uint64_t>(rows) / p * row);
      return counts;
    }
    std::int64_t total = 0;
    for (std::int64_t rows_to : splits) {
      if (rows_to < 0) return std::vector<std::uint64_t>{};
      counts.push_back(static_cast<std::uint64_t>(rows_to) * row);
      total += rows_to;
    }
    if (splits.size() != p || total != rows) counts.clear();
    return counts;
  };
  const std::vector<std::uint64_t> sends = equal ? std::vector<std::uint64_t>{}
                                                 : elements(input, input_splits),
                                   recvs = equal ? std::vector<std::uint64_t>{}
                                                 : elements(output, output_splits);
  if (!equal && (sends.size() != p || recvs.size() != p))
    return alltoall_bytes(output, input, output_splits, input_splits);
  require_dense(input, "alltoall_base", "the input");
  require_dense(output, "alltoall_base", "the output");
  auto work = c10::make_intrusive<ToroidWork>(*this, c10d::OpType::ALLTOALL_BASE,
                                              std::vector<at::Tensor>{output});
  work->keep = {input, output};
  const DataType type = type_of(input, "alltoall_base");
  work->requests.push_back(equal ? ialltoall(input.data_ptr(), count_of(input), output.data_ptr(),
                                             count_of(output), type, *comm_)
                                 : ialltoallv(input.data_ptr(), count_of(input), {sends},
                                              output.data_ptr(), count_of(output), {recvs}, type,
                                              *comm_));
  return enqueue(work);
}

// all_to_all (a tensor per peer): a dtype toroid has goes through its alltoallv, the inputs
// packed into one staging tensor and the outputs copied out of another when it completes.
c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions& opts) {
  const auto p = static_cast<std::size_t>(getSize());
  bool ours = inputs.size() == p && outputs.size() == p && p > 0 && toroid_has(inputs[0]);
  for (std::size_t r = 0; ours && r < p; ++r)
    ours = inputs[r].scalar_type() == inputs[0].scalar_type() &&
           outputs[r].scalar_type() == inputs[0].scalar_type() && inputs[r].is_contiguous() &&
           outputs[r].is_contiguous();
  if (!ours) return alltoall_bytes_list(outputs, inputs, opts);  // checks and says why
  std::vector<std::uint64_t> sends(p), recvs(p);
  std::vector<at::Tensor> flat_in(p);
  for (std::size_t r = 0; r < p; ++r) {
    require_dense(inputs[r], "alltoall", "an input");
    require_dense(outputs[r], "alltoall", "an output");
    sends[r] = count_of(inputs[r]);
    recvs[r] = count_of(outputs[r]);
    flat_in[r] = inputs[r].reshape({-1});
  }
  at::Tensor send = at::cat(flat_in);
  const auto recv_total = std::accumulate(recvs.begin(), recvs.end(), std::uint64_t{0});
  at::Tensor recv = at::empty({static_cast<std::int64_t>(recv_total)}, send.options());
  auto work = c10::make_intrusive<ToroidWork>(*this, c10d::OpType::ALLTOALL, outputs);
  work->keep = {send, recv};
  work->requests.push_back(ialltoallv(send.data_ptr(), count_of(send), {sends}, recv.data_ptr(),
                                      count_of(recv), {recvs}, type_of(send, "alltoall"), *comm_));
  work->finish = [outputs, recv, recvs] {
    std::int64_t at = 0;
    for (std::size_t r = 0; r < outputs.size(); ++r) {
      const auto n = static_cast<std::int64_t>(recvs[r]);
      at::Tensor out = outputs[r];
      out.view({-1}).copy_(recv.narrow(0, at, n));
      at += n;
    }
  };
  return enqueue(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::_allgather_base(at::Tensor& output,
                                                                   at::Tensor& input,
                                                                   const c10d::AllgatherOptions&) {
  require_dense(input, "_allgather_base", "the input");
  require_dense(output, "_allgather_base", "the output");
  require_same(input, output, "_allgather_base");
  if (count_of(output) != count_of(input) * static_cast<std::uint64_t>(getSize()))
    throw InvalidArgument(
        fmt::format("toroid backend: _allgather_base: output has {} elements, expected {} (input "
                    "{} x {} ranks)",
                    count_of(output), count_of(input) * getSize(), count_of(input), getSize()));
  if (!toroid_has(input)) return allgather_bytes(input, {output}, c10d::OpType::_ALLGATHER_BASE);
  auto work = c10::make_intrusive<ToroidWork>(*this, c10d::OpType::_ALLGATHER_BASE,
                                              std::vector<at::Tensor>{output});
  work->keep = {input, output};
  work->requests.push_back(iallgather(input.data_ptr(), count_of(input), output.data_ptr(),
                                      count_of(output), type_of(input, "_allgather_base"), *comm_));
  return enqueue(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  require_one(inputs, "allgather");
  if (outputs.size() != 1 || outputs[0].size() != static_cast<std::size_t>(getSize()))
    throw InvalidArgument(
        fmt::format("toroid backend: allgather: expects one list of {} output tensors", getSize()));
  at::Tensor& in = inputs[0];
  require_dense(in, "allgather", "the input");
  for (const auto& o : outputs[0]) {
    require_same(in, o, "allgather");
    if (o.numel() != in.numel())
      throw InvalidArgument(
          fmt::format("toroid backend: allgather: an output has {} elements, the input {}",
                      o.numel(), in.numel()));
  }
  if (!toroid_has(in)) return allgather_bytes(in, outputs[0], c10d::OpType::ALLGATHER);
  // Gathered into one flat tensor (toroid's layout), then copied into the list.
  at::Tensor flat = at::empty({in.numel() * getSize()}, in.options());
  auto work = c10::make_intrusive<ToroidWork>(*this, c10d::OpType::ALLGATHER, outputs[0]);
  work->keep = {in, flat};
  work->requests.push_back(iallgather(in.data_ptr(), count_of(in), flat.data_ptr(), count_of(flat),
                                      type_of(in, "allgather"), *comm_));
  std::vector<at::Tensor> outs = outputs[0];
  const int64_t n = in.numel();
  work->finish = [outs, flat, n]() mutable {
    for (std::size_t r = 0; r < outs.size(); ++r)
      outs[r].copy_(flat.narrow(0, static_cast<int64_t>(r) * n, n).view(outs[r].sizes()));
  };
  return enqueue(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const char* name = "allgather_coalesced";
  if (inputs.empty())
    throw InvalidArgument("toroid backend: allgather_coalesced: no input tensors");
  if (outputs.size() != static_cast<std::size_t>(getSize()))
    throw InvalidArgument(fmt::format(
        "toroid backend: allgather_coalesced: {} output lists, expected one per rank ({})",
        outputs.size(), getSize()));
  const DataType element = type_of(inputs[0], name);
  int64_t total = 0;
  for (const auto& in : inputs) {
    require_dense(in, name, "an input");
    require_same(inputs[0], in, name);
    total += in.numel();
  }
  for (std::size_t r = 0; r < outputs.size(); ++r) {
    if (outputs[r].size() != inputs.size())
      throw InvalidArgument(fmt::format(
          "toroid backend: allgather_coalesced: output list {} has {} tensors, the input list {}",
          r, outputs[r].size(), inputs.size()));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      require_same(inputs[i], outputs[r][i], name);
      if (outputs[r][i].numel() != inputs[i].numel())
        throw InvalidArgument(fmt::format(
            "toroid backend: allgather_coalesced: output {} of list {} has {} elements, input {} "
            "has {}",
            i, r, outputs[r][i].numel(), i, inputs[i].numel()));
    }
  }
  // The inputs packed into one block, gathered in one collective (toroid's layout: rank r's
  // block at r x total), then unpacked into every rank's list.
  std::vector<at::Tensor> parts;
  for (const auto& in : inputs) parts.push_back(in.reshape({-1}));
  at::Tensor packed = at::cat(parts);
  at::Tensor flat = at::empty({total * getSize()}, packed.options());
  std::vector<at::Tensor> all_outputs;
  for (const auto& list : outputs) all_outputs.insert(all_outputs.end(), list.begin(), list.end());
  auto work =
      c10::make_intrusive<ToroidWork>(*this, c10d::OpType::ALLGATHER_COALESCED, all_outputs);
  work->keep = {packed, flat};
  work->requests.push_back(iallgather(packed.data_ptr(), count_of(packed), flat.data_ptr(),
                                      count_of(flat), element, *comm_));
  std::vector<std::vector<at::Tensor>> outs = outputs;
  work->finish = [outs, flat, total]() mutable {
    for (std::size_t r = 0; r < outs.size(); ++r) {
      int64_t at = static_cast<int64_t>(r) * total;
      for (auto& o : outs[r]) {
        o.copy_(flat.narrow(0, at, o.numel()).view(o.sizes()));
        at += o.numel();
      }
    }
  };
  return enqueue(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  require_dense(input, "_reduce_scatter_base", "the input");
  require_dense(output, "_reduce_scatter_base", "the output");
  require_same(input, output, "_reduce_scatter_base");
  if (count_of(input) != count_of(output) * static_cast<std::uint64_t>(getSize()))
    throw InvalidArgument(
        fmt::format("toroid backend: _reduce_scatter_base: input has {} elements, expected {} "
                    "(output {} x {} ranks)",
                    count_of(input), count_of(output) * getSize(), count_of(output), getSize()));
  const ReduceOp op = op_of(opts.reduceOp, "_reduce_scatter_base");
  auto work = c10::make_intrusive<ToroidWork>(*this, c10d::OpType::_REDUCE_SCATTER_BASE,
                                              std::vector<at::Tensor>{output});
  work->keep = {input, output};
  work->requests.push_back(ireduce_scatter(input.data_ptr(), count_of(input), output.data_ptr(),
                                           count_of(output), type_of(input, "_reduce_scatter_base"),
                                           op, *comm_));
  return enqueue(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  require_one(outputs, "reduce_scatter");
  if (inputs.size() != 1 || inputs[0].size() != static_cast<std::size_t>(getSize()))
    throw InvalidArgument(fmt::format(
        "toroid backend: reduce_scatter: expects one list of {} input tensors", getSize()));
  at::Tensor& out = outputs[0];
  require_dense(out, "reduce_scatter", "the output");
  for (const auto& i : inputs[0]) {
    require_same(i, out, "reduce_scatter");
    if (i.numel() != out.numel())
      throw InvalidArgument(
          fmt::format("toroid backend: reduce_scatter: an input has {} elements, the output {}",
                      i.numel(), out.numel()));
  }
  const ReduceOp op = op_of(opts.reduceOp, "reduce_scatter");
  // The list into one flat tensor (toroid's layout: block r is rank r's).
  std::vector<at::Tensor> flat_parts;
  for (const auto& i : inputs[0]) flat_parts.push_back(i.reshape({-1}));
  at::Tensor flat = at::cat(flat_parts);
  auto work = c10::make_intrusive<ToroidWork>(*this, c10d::OpType::REDUCE_SCATTER, outputs);
  work->keep = {flat, out};
  work->requests.push_back(ireduce_scatter(flat.data_ptr(), count_of(flat), out.data_ptr(),
                                           count_of(out), type_of(out, "reduce_scatter"), op,
                                           *comm_));
  return enqueue(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  // An all-reduce (toroid has no reduce-to-one schedule; an all-reduce costs up to twice a
  // reduce's traffic, and runs toroid's algorithms): in place on the root, into scratch elsewhere.
  return start_allreduce(tensors, opts.reduceOp, getRank() == opts.rootRank, c10d::OpType::REDUCE,
                         "reduce");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupToroid::barrier(const c10d::BarrierOptions&) {
  // Every rank has joined once a one-element all-reduce has completed.
  at::Tensor one = at::ones({1}, at::kInt);
  auto work =
      c10::make_intrusive<ToroidWork>(*this, c10d::OpType::BARRIER, std::vector<at::Tensor>{});
  work->keep = {one};
  work->requests.push_back(
      iallreduce(one.data_ptr(), 1, one.data_ptr(), 1, DataType::i32, ReduceOp::sum, *comm_));
  return enqueue(work);
}

}  // namespace toroid::torch_backend
