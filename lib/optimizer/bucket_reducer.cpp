#include "optimizer/bucket_reducer.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/convert.hpp"
#include "kernels/reduce.hpp"
#include "mpi_base/agreement.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid::optimizer {
namespace {

// Copies one piece of a gradient (f32 or bf16) into a bucket of type T (f32 or bf16).
template <class T>
void pack_piece(const GradientSource& g, const Piece& piece, T* bucket) {
  T* dst = bucket + piece.offset;
  if (g.type == data_type_v<T>) {
    kernels::copy(dst, static_cast<const T*>(g.data) + piece.tensor_offset,
                  piece.count * sizeof(T));
  } else if constexpr (std::is_same_v<T, float>) {  // bf16 gradients into an f32 bucket
    kernels::convert(static_cast<const bfloat16*>(g.data) + piece.tensor_offset, dst, piece.count);
  } else {  // f32 gradients into a bf16 bucket
    kernels::convert(static_cast<const float*>(g.data) + piece.tensor_offset, dst, piece.count);
  }
}

}  // namespace

BucketReducer::BucketReducer(Communicator& comm, std::vector<GradientSource> sources,
                             ReducerSettings settings)
    : comm_(comm), sources_(std::move(sources)), settings_(std::move(settings)) {
  marked_flags_.assign(sources_.size(), 0);
  for (std::size_t t = 0; t < sources_.size(); ++t) index_of_.emplace(sources_[t].name, t);
  build(reverse_order(sources_.size()));
}

BucketReducer::~BucketReducer() {
  // The buffers go with this object: nothing may still be moving into them.
  for (std::size_t k = 0; k < next_; ++k) {
    try {
      if (!done_[k]) requests_[k].wait();
    } catch (...) {  // already reported to whoever waited; a destructor cannot throw
    }
  }
}

void BucketReducer::build(std::span<const std::size_t> order) {
  const bool scatter = settings_.reduction == Reduction::reduce_scatter;
  const int parts = scatter ? comm_.size() : 1;
  const int part = scatter ? comm_.rank() : 0;
  const std::size_t elem = settings_.bf16_wire ? sizeof(bfloat16) : sizeof(float);
  std::vector<std::size_t> sizes;
  for (const auto& s : sources_) sizes.push_back(s.count);
  layout_ = make_layout(sizes, order, settings_.first_bucket_bytes / elem,
                        settings_.bucket_bytes / elem, parts, part);

  pieces_of_.assign(sources_.size(), {});
  for (std::size_t k = 0; k < layout_.buckets.size(); ++k)
    for (std::size_t i = 0; i < layout_.buckets[k].pieces.size(); ++i)
      pieces_of_[layout_.buckets[k].pieces[i].tensor].emplace_back(k, i);

  // Fresh buffers (collective; zero filled, so the padding is zero: ready() writes only the
  // pieces, and no collective writes into its input).
  packed_bf16_ = {}, packed_f32_ = {}, out_bf16_ = {}, result_own_ = {};
  if (settings_.bf16_wire) {
    packed_bf16_ = comm_.allocate<bfloat16>(layout_.padded_total);
    if (scatter) out_bf16_ = comm_.allocate<bfloat16>(layout_.state_elements);
    result_own_ = comm_.allocate<float>(layout_.state_elements);
    result_ = result_own_.data();
  } else {
    packed_f32_ = comm_.allocate<float>(layout_.padded_total);
    if (scatter) result_own_ = comm_.allocate<float>(layout_.state_elements);
    result_ = scatter ? result_own_.data() : packed_f32_.data();  // all-reduce in place
  }

  const DataType wire = settings_.bf16_wire ? DataType::bf16 : DataType::f32;
  const std::size_t wire_size = size_of(wire);
  auto* packed = settings_.bf16_wire ? static_cast<void*>(packed_bf16_.data()) : packed_f32_.data();
  auto* out = settings_.bf16_wire ? static_cast<void*>(out_bf16_.data()) : result_own_.data();
  requests_.clear();
  for (const auto& b : layout_.buckets) {
    char* in = static_cast<char*>(packed) + b.padded_begin * wire_size;
    if (scatter)
      requests_.push_back(
          reduce_scatter_init(in, b.padded, static_cast<char*>(out) + b.state_offset * wire_size,
                              b.shard, wire, ReduceOp::sum, comm_, settings_.algorithm));
    else
      requests_.push_back(allreduce_init(in, b.padded, in, b.padded, wire, ReduceOp::sum, comm_,
                                         settings_.algorithm));
  }
  clear_marks();
}

void BucketReducer::clear_marks() {
  std::fill(marked_flags_.begin(), marked_flags_.end(), 0), marked_ = 0;
  pending_.resize(layout_.buckets.size());
  for (std::size_t k = 0; k < layout_.buckets.size(); ++k)
    pending_[k] = layout_.buckets[k].pieces.size();
  done_.assign(layout_.buckets.size(), 0);
  next_ = 0;
  problem_.clear();
}

std::vector<std::vector<std::string>> BucketReducer::bucket_names() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& b : layout_.buckets) {
    out.emplace_back();
    for (const auto& piece : b.pieces) out.back().push_back(sources_[piece.tensor].name);
  }
  return out;
}

void BucketReducer::record(std::string problem) {
  if (problem_.empty()) problem_ = std::move(problem);
}

void BucketReducer::pack(std::size_t t) {
  for (const auto& [k, i] : pieces_of_[t]) {
    const Bucket& b = layout_.buckets[k];
    if (settings_.bf16_wire)
      pack_piece(sources_[t], b.pieces[i], packed_bf16_.data() + b.padded_begin);
    else
      pack_piece(sources_[t], b.pieces[i], packed_f32_.data() + b.padded_begin);
    --pending_[k];  // a tensor has at most one piece per bucket
  }
  marked_flags_[t] = 1;
  ++marked_;
}

void BucketReducer::start_complete_buckets() {
  while (next_ < requests_.size() && pending_[next_] == 0) requests_[next_++].start();
}

void BucketReducer::ready(std::size_t t) {
  if (t >= sources_.size())
    return record(fmt::format("ready({}) on rank {}: index out of range ({} {}s)", t, comm_.rank(),
                              sources_.size(), settings_.kind));
  if (marked_flags_[t])
    return record(fmt::format("{} {} '{}' was marked ready twice in one step on rank {}",
                              settings_.kind, t, sources_[t].name, comm_.rank()));
  observed_.push_back(t);
  pack(t);
  start_complete_buckets();
  poll();
}

void BucketReducer::ready(std::string_view name) {
  if (const auto it = index_of_.find(name); it != index_of_.end()) return ready(it->second);
  record(fmt::format("ready(\"{}\") on rank {}: no {} has that name", name, comm_.rank(),
                     settings_.kind));
}

void BucketReducer::ready_all() {
  all_by_ready_ = false;
  for (std::size_t t : layout_.order)
    if (!marked_flags_[t]) pack(t);
  start_complete_buckets();
}

void BucketReducer::poll() {
  // Testing the oldest bucket in flight runs a round of the whole engine; a completed one is
  // recorded so wait() does not wait again.
  for (std::size_t k = 0; k < next_; ++k) {
    if (done_[k]) continue;
    if (!requests_[k].test()) return;
    done_[k] = 1;
  }
}

void BucketReducer::close() {
  std::string problem = problem_;
  if (problem.empty() && marked_ < sources_.size()) {
    std::size_t missing = 0;
    while (marked_flags_[missing]) ++missing;
    problem =
        fmt::format("{} {} '{}' was never marked ready on rank {} ({} of {} were)", settings_.kind,
                    missing, sources_[missing].name, comm_.rank(), marked_, sources_.size());
  }
  try {
    toroid::run_agreed(
        comm_.mpi_comm(),
        [&] {
          if (!problem.empty())
            throw InvalidArgument(fmt::format("{}: {}", settings_.owner, problem));
        },
        comm_.timeout_seconds());
  } catch (...) {
    // Every rank starts the rest in bucket order, so the collectives still match; then nothing
    // is left moving into the buffers and the next step starts clean.
    while (next_ < requests_.size()) requests_[next_++].start();
    for (std::size_t k = 0; k < requests_.size(); ++k)
      if (!done_[k]) requests_[k].wait();
    clear_marks();
    observed_.clear(), all_by_ready_ = true;
    throw;
  }
}

void BucketReducer::wait(std::size_t k) {
  if (!done_[k]) requests_[k].wait();
  done_[k] = 1;
  if (!settings_.bf16_wire) return;
  const Bucket& b = layout_.buckets[k];
  if (settings_.reduction == Reduction::reduce_scatter)
    kernels::convert(out_bf16_.data() + b.state_offset, result_ + b.state_offset, b.shard);
  else
    kernels::convert(packed_bf16_.data() + b.padded_begin, result_ + b.state_offset, b.padded);
}

std::optional<Layout> BucketReducer::next_step() {
  ++steps_;
  clear_marks();
  std::vector<std::size_t> order = std::move(observed_);
  observed_.clear();
  const bool by_ready = all_by_ready_ && order.size() == sources_.size();
  all_by_ready_ = true;
  if (!settings_.rebuild || steps_ != 1) return std::nullopt;

  // Every rank must cut the same buckets: rank 0's order, and only if every rank observed one.
  int everyone = by_ready ? 1 : 0;
  const MPI_Comm mpi = comm_.mpi_comm();
  toroid::mpi_check(MPI_Allreduce(MPI_IN_PLACE, &everyone, 1, MPI_INT, MPI_MIN, mpi),
                    "MPI_Allreduce");
  if (!everyone) return std::nullopt;
  std::vector<std::uint64_t> wire(order.begin(), order.end());
  toroid::mpi_check(MPI_Bcast(wire.data(), static_cast<int>(wire.size()), MPI_UINT64_T, 0, mpi),
                    "MPI_Bcast");
  order.assign(wire.begin(), wire.end());
  if (order == layout_.order) return std::nullopt;
  Layout old = std::move(layout_);
  build(order);
  return old;
}

}  // namespace toroid::optimizer
