// ShardedOptimizer: construction (checked on every rank) and the step: wait for each bucket's
// reduce-scatter, update this rank's shard of it, start its all-gather; then wait for the
// all-gathers and unpack the weights.
//
//   step():  wait rs0 | update 0 | start ag0 | wait rs1 | update 1 | start ag1 | ... | wait ag*
//   network: ...rs0....|....rs1 (started during the backward pass)....|ag0....|ag1........
//
// Clipping, LAMB and LARS need norms over all of the gradient first: they wait for every
// reduce-scatter, plan the step, then update bucket by bucket with the all-gathers behind.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/reduce.hpp"
#include "mpi_base/agreement.hpp"
#include "optimizer/config.hpp"
#include "optimizer/impl.hpp"
#include "optimizer/whole_state.hpp"
#include "toroid/collectives.hpp"

namespace toroid {
namespace {

using optimizer::Bucket;
using optimizer::Layout;

optimizer::ReducerSettings reducer_settings(const OptimizerConfig& c, bool sharded) {
  optimizer::ReducerSettings s;
  s.reduction = sharded ? optimizer::Reduction::reduce_scatter : optimizer::Reduction::allreduce;
  s.bf16_wire = c.bf16_gradients;
  s.first_bucket_bytes = c.first_bucket_bytes, s.bucket_bytes = c.bucket_bytes;
  s.rebuild = c.rebuild_buckets;
  s.owner = "ShardedOptimizer", s.kind = "parameter";
  return s;
}

std::vector<optimizer::GradientSource> sources_of(const std::vector<Parameter>& params) {
  std::vector<optimizer::GradientSource> out;
  for (const auto& p : params) out.push_back({p.name, p.grads, p.grad_count, p.grad_type});
  return out;
}

// This part's own weights of bucket b into the gather buffer, padding zeroed (only the last
// shard of a bucket can have any), so the gathered padding stays zero.
void pack_own_weights(const ShardedOptimizer::Impl& s, const Bucket& b) {
  float* own = s.gather + b.padded_begin + b.own_begin;
  for (const auto& piece : b.own)
    kernels::copy(own + piece.offset, s.weights_at(piece), piece.count * sizeof(float));
  float* bucket = s.gather + b.padded_begin;
  std::fill(bucket + std::clamp(b.length, b.own_begin, b.own_begin + b.shard), own + b.shard, 0.0f);
}

void unpack_weights(const ShardedOptimizer::Impl& s, const Bucket& b) {
  const float* bucket = s.gather + b.padded_begin;
  for (const auto& piece : b.pieces)
    kernels::copy(s.params[piece.tensor].weights.data() + piece.tensor_offset,
                  bucket + piece.offset, piece.count * sizeof(float));
}

}  // namespace

void optimizer::gather_weights(ShardedOptimizer::Impl& s) {
  const auto& buckets = s.layout().buckets;
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    pack_own_weights(s, buckets[k]);
    s.gathers[k].start();
  }
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    s.gathers[k].wait();
    unpack_weights(s, buckets[k]);
  }
}

namespace {

// The optimizer state after the buckets were re-cut: every element's state moves from the
// part that owned it in `old` to the part that owns it now (through the whole array: one
// all-reduce of each state array, once per run).
void move_state(ShardedOptimizer::Impl& s, const Layout& old) {
  for (auto& array : s.state)
    optimizer::place_array(s, s.layout(), optimizer::whole_array(s, old, array), array);
  if (!s.direction.empty()) s.direction.assign(s.layout().state_elements, 0.0f);
}

}  // namespace

ShardedOptimizer::Impl::Impl(Communicator& c, std::vector<Parameter> p, OptimizerConfig cfg)
    : comm(c), params(std::move(p)), config(std::move(cfg)) {
  parts = config.shard ? comm.size() : 1;
  part = config.shard ? comm.rank() : 0;
  for (const auto& param : params) {
    decays.push_back(!optimizer::matches_any(param.name, config.no_weight_decay));
    adapts.push_back(!optimizer::matches_any(param.name, config.no_trust_ratio));
  }
  trust.assign(params.size(), 1.0);
  reducer = std::make_unique<optimizer::BucketReducer>(comm, sources_of(params),
                                                       reducer_settings(config, sharded()));
  state.assign(optimizer::state_arrays(config.kind),
               std::vector<float>(layout().state_elements, 0.0f));
  if (config.kind == OptimizerKind::lamb) direction.assign(layout().state_elements, 0.0f);
  bind();
}

void ShardedOptimizer::Impl::bind() {
  gathers.clear();
  if (!sharded()) return;
  const Layout& l = layout();
  gather = reducer->packed_f32();
  if (!gather) {
    gather_own = comm.allocate<float>(l.padded_total);
    gather = gather_own.data();
  }
  for (const auto& b : l.buckets)
    gathers.push_back(allgather_init(gather + b.padded_begin + b.own_begin, b.shard,
                                     gather + b.padded_begin, b.padded, DataType::f32, comm));
}

ShardedOptimizer::ShardedOptimizer(Communicator& comm, std::vector<Parameter> params,
                                   OptimizerConfig config) {
  const MPI_Comm mpi = comm.mpi_comm();
  toroid::run_agreed(mpi, [&] { optimizer::validate(params, config); });
  toroid::require_agreement(
      mpi, "ShardedOptimizer",
      {{"parameter count", static_cast<std::int64_t>(params.size())},
       {"parameter names, sizes and gradient types (hash)", optimizer::parameters_hash(params)},
       {"optimizer", static_cast<std::int64_t>(config.kind)},
       {"configuration (hash)", optimizer::hyper_parameters_hash(config)}});
  impl_ = std::make_unique<Impl>(comm, std::move(params), std::move(config));
}

ShardedOptimizer::~ShardedOptimizer() = default;

void ShardedOptimizer::ready(std::string_view name) { impl_->reducer->ready(name); }
void ShardedOptimizer::ready(std::size_t index) { impl_->reducer->ready(index); }
void ShardedOptimizer::poll() { impl_->reducer->poll(); }
std::vector<std::vector<std::string>> ShardedOptimizer::buckets() const {
  return impl_->reducer->bucket_names();
}

StepReport ShardedOptimizer::step() {
  Impl& s = *impl_;
  optimizer::BucketReducer& reducer = *s.reducer;
  StepReport report;
  report.step = s.steps + 1;
  const double base = s.config.learning_rate;
  report.learning_rate = s.config.schedule ? s.config.schedule(report.step, base) : base;
  optimizer::check_learning_rate(report.learning_rate, report.step);

  double mark = MPI_Wtime();
  auto lap = [&mark](double& into) {
    const double now = MPI_Wtime();
    into += now - mark;
    mark = now;
  };
  if (!reducer.any_marked()) reducer.ready_all();
  reducer.close();
  s.steps = report.step;
  const auto& buckets = s.layout().buckets;
  const bool every = optimizer::needs_every_gradient(s.config);
  if (every)
    for (std::size_t k = 0; k < buckets.size(); ++k) reducer.wait(k);
  lap(report.reduce_seconds);
  const optimizer::UpdatePlan plan = optimizer::plan_update(s, report.learning_rate, report);
  lap(report.update_seconds);
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    if (!every) reducer.wait(k);
    lap(report.reduce_seconds);
    optimizer::update_bucket(s, buckets[k], plan);
    lap(report.update_seconds);
    if (s.sharded()) {
      pack_own_weights(s, buckets[k]);
      s.gathers[k].start();
    }
    lap(report.gather_seconds);
  }
  if (s.sharded())
    for (std::size_t k = 0; k < buckets.size(); ++k) {
      s.gathers[k].wait();
      unpack_weights(s, buckets[k]);
    }
  lap(report.gather_seconds);
  if (auto old = reducer.next_step()) {
    move_state(s, *old);
    s.bind();
  }
  return report;
}

std::int64_t ShardedOptimizer::steps_taken() const noexcept { return impl_->steps; }
std::span<const double> ShardedOptimizer::trust_ratios() const noexcept { return impl_->trust; }
std::size_t ShardedOptimizer::shard_elements() const noexcept {
  return impl_->layout().state_elements;
}
std::size_t ShardedOptimizer::state_bytes() const noexcept {
  std::size_t n = impl_->direction.size();
  for (const auto& a : impl_->state) n += a.size();
  return n * sizeof(float);
}

}  // namespace toroid
