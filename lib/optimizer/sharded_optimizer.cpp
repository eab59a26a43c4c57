// ShardedOptimizer: construction (checked on every rank) and the step: reduce-scatter the
// gradients bucket by bucket, update this rank's shard, all-gather the weights.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "api/agreement.hpp"
#include "kernels/convert.hpp"
#include "optimizer/config.hpp"
#include "optimizer/impl.hpp"
#include "toroid/collectives.hpp"

namespace toroid {
namespace {

using optimizer::Bucket;

std::vector<std::size_t> sizes_of(const std::vector<Parameter>& params) {
  std::vector<std::size_t> sizes;
  for (const auto& p : params) sizes.push_back(p.weights.size());
  return sizes;
}

// Copies one piece of a gradient (f32 or bf16) into a bucket of type T (f32 or bf16).
template <class T>
void pack_piece(const Parameter& p, const optimizer::Piece& piece, T* bucket) {
  T* dst = bucket + piece.offset;
  if (p.grad_type == data_type_v<T>) {
    std::memcpy(dst, static_cast<const T*>(p.grads) + piece.tensor_offset, piece.count * sizeof(T));
  } else if constexpr (std::is_same_v<T, float>) {  // bf16 gradients into an f32 bucket
    kernels::convert(static_cast<const bfloat16*>(p.grads) + piece.tensor_offset, dst, piece.count);
  } else {  // f32 gradients into a bf16 bucket
    kernels::convert(static_cast<const float*>(p.grads) + piece.tensor_offset, dst, piece.count);
  }
}

template <class T>
void pack_gradients(const ShardedOptimizer::Impl& s, const Bucket& b, T* bucket) {
  for (const auto& piece : b.pieces) pack_piece(s.params[piece.tensor], piece, bucket);
  std::fill(bucket + b.length, bucket + b.padded, T{});  // padding: zero, so it adds nothing
}

// grad_shard = this part's shard of the sum over ranks of every bucket.
void reduce_gradients(ShardedOptimizer::Impl& s) {
  for (const auto& b : s.layout.buckets) {
    float* out = s.grad_shard.data() + b.state_offset;
    if (!s.config.bf16_gradients) {
      pack_gradients(s, b, s.bucket.data());
      if (s.sharded()) reduce_scatter(s.bucket.data(), b.padded, out, b.shard, DataType::f32, ReduceOp::sum, s.comm);
      else allreduce(s.bucket.data(), b.padded, out, b.padded, DataType::f32, ReduceOp::sum, s.comm);
    } else {
      bfloat16* packed = s.bucket_bf16.data();
      pack_gradients(s, b, packed);
      if (s.sharded()) {
        reduce_scatter(packed, b.padded, s.shard_bf16.data(), b.shard, DataType::bf16, ReduceOp::sum, s.comm);
        kernels::convert(s.shard_bf16.data(), out, b.shard);
      } else {
        allreduce(packed, b.padded, packed, b.padded, DataType::bf16, ReduceOp::sum, s.comm);
        kernels::convert(packed, out, b.padded);
      }
    }
  }
}

// Every rank's weights = the shards every part just updated.
void gather_weights(ShardedOptimizer::Impl& s) {
  float* buf = s.bucket.data();
  for (const auto& b : s.layout.buckets) {
    float* own = buf + b.own_begin;
    for (const auto& piece : b.own) std::memcpy(own + piece.offset, s.weights_at(piece), piece.count * sizeof(float));
    // The padding inside this shard (only the last shard of a bucket can have any).
    std::fill(buf + std::clamp(b.length, b.own_begin, b.own_begin + b.shard), own + b.shard, 0.0f);
    allgather(own, b.shard, buf, b.padded, DataType::f32, s.comm);
    for (const auto& piece : b.pieces)
      std::memcpy(s.params[piece.tensor].weights.data() + piece.tensor_offset, buf + piece.offset,
                  piece.count * sizeof(float));
  }
}

}  // namespace

ShardedOptimizer::Impl::Impl(Communicator& c, std::vector<Parameter> p, OptimizerConfig cfg)
    : comm(c), params(std::move(p)), config(std::move(cfg)) {
  parts = config.shard ? comm.size() : 1;
  part = config.shard ? comm.rank() : 0;
  const auto sizes = sizes_of(params);
  layout = optimizer::make_layout(sizes, config.bucket_bytes / sizeof(float), parts, part);
  for (const auto& param : params) {
    decays.push_back(!optimizer::matches_any(param.name, config.no_weight_decay));
    adapts.push_back(!optimizer::matches_any(param.name, config.no_trust_ratio));
  }
  trust.assign(params.size(), 1.0);
  grad_shard.assign(layout.state_elements, 0.0f);
  state.assign(optimizer::state_arrays(config.kind), std::vector<float>(layout.state_elements, 0.0f));
  if (config.kind == OptimizerKind::lamb) direction.assign(layout.state_elements, 0.0f);
  bucket.assign(layout.max_padded, 0.0f);
  if (config.bf16_gradients) {
    bucket_bf16.assign(layout.max_padded, bfloat16{});
    if (sharded()) shard_bf16.assign(layout.max_shard, bfloat16{});
  }
}

ShardedOptimizer::ShardedOptimizer(Communicator& comm, std::vector<Parameter> params,
                                   OptimizerConfig config) {
  const MPI_Comm mpi = comm.mpi_comm();
  api::run_agreed(mpi, [&] { optimizer::validate(params, config); });
  api::require_agreement(mpi, "ShardedOptimizer",
                         {{"parameter count", static_cast<std::int64_t>(params.size())},
                          {"parameter names, sizes and gradient types (hash)", optimizer::parameters_hash(params)},
                          {"optimizer", static_cast<std::int64_t>(config.kind)},
                          {"configuration (hash)", optimizer::hyper_parameters_hash(config)}});
  impl_ = std::make_unique<Impl>(comm, std::move(params), std::move(config));
}

ShardedOptimizer::~ShardedOptimizer() = default;

StepReport ShardedOptimizer::step() {
  Impl& s = *impl_;
  StepReport report;
  report.step = s.steps + 1;
  const double base = s.config.learning_rate;
  report.learning_rate = s.config.schedule ? s.config.schedule(report.step, base) : base;
  optimizer::check_learning_rate(report.learning_rate, report.step);

  const double t0 = MPI_Wtime();
  reduce_gradients(s);
  const double t1 = MPI_Wtime();
  s.steps = report.step;
  optimizer::update_shard(s, report.learning_rate, report);
  const double t2 = MPI_Wtime();
  if (s.sharded()) gather_weights(s);
  const double t3 = MPI_Wtime();
  report.reduce_seconds = t1 - t0, report.update_seconds = t2 - t1, report.gather_seconds = t3 - t2;
  return report;
}

std::int64_t ShardedOptimizer::steps_taken() const noexcept { return impl_->steps; }
std::span<const double> ShardedOptimizer::trust_ratios() const noexcept { return impl_->trust; }
std::size_t ShardedOptimizer::shard_elements() const noexcept { return impl_->layout.state_elements; }
std::size_t ShardedOptimizer::state_bytes() const noexcept {
  std::size_t n = impl_->direction.size();
  for (const auto& a : impl_->state) n += a.size();
  return n * sizeof(float);
}

}  // namespace toroid
