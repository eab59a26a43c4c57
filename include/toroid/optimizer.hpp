// Weight-update sharding: every rank reduce-scatters the gradients, updates only its shard of
// the weights with only its shard of the optimizer state, and all-gathers the new weights.
//
//   ranks 0..p-1 each hold all weights W and their own gradients G_r
//
//   bucket  | t2 .. | t1 ........ | t0 ...... |pad|   parameters flattened last first, cut into
//           |  shard 0  |  shard 1  |  shard 2  |     buckets of `bucket_bytes`, each padded to a
//                                                     multiple of p and split into p equal shards
//   1. reduce-scatter G over ranks (optionally in bf16)  -> rank r: sum of shard r
//   2. norms: one small all-reduce of per-tensor partial sums of squares (clipping, LAMB, LARS)
//   3. update shard r of W with shard r of the state (fused kernel, one pass)
//   4. all-gather W                                        -> every rank: all new weights
//
// Overlap (docs/overlap.md): the buckets are a GradientReducer's (gradient_reducer.hpp). Call
// ready(name) as each gradient is produced in the backward pass and every full bucket's
// reduce-scatter starts at once; step() then waits for them in bucket order, and the update and
// all-gather of bucket k run while the reduce-scatters of later buckets are in flight. Rules
// that need every gradient first (clipping, LAMB, LARS: global or per-tensor norms) wait for all
// reduce-scatters, then update bucket by bucket, each all-gather starting as its update ends.
// A step() without ready() calls marks everything ready itself (no overlap). The result is
// bitwise the same with and without ready() calls, for one bucket layout.
//
// A training program adopts it in a few lines:
//
//   toroid::Communicator comm(MPI_COMM_WORLD);
//   std::vector<toroid::Parameter> params = {{"fc1.weight", w1, g1}, {"fc1.bias", b1, gb1}};
//   toroid::ShardedOptimizer opt(comm, params, {.kind = toroid::OptimizerKind::adam});
//   for (...) { forward_backward(); opt.step(); }   // weights w1, b1 updated on every rank
//   for (...) { forward(); backward_fc2(); opt.ready("fc2.weight"); ...; opt.step(); }   // overlapped
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "toroid/communicator.hpp"
#include "toroid/defaults.hpp"
#include "toroid/export.hpp"
#include "toroid/types.hpp"

TOROID_API_BEGIN
namespace toroid {

enum class OptimizerKind { sgd, adam, adamw, lamb, lars };
std::string_view to_string(OptimizerKind kind) noexcept;
// "sgd", "adam", "adamw", "lamb", "lars"; throws InvalidArgument naming the value otherwise.
OptimizerKind parse_optimizer_kind(std::string_view name);

// One tensor: its f32 master weights (updated in place by step()) and its gradient, f32 or
// bf16, with as many elements. The spans must stay valid for the optimizer's life.
struct Parameter {
  Parameter(std::string name, std::span<float> weights, std::span<const float> grads);
  Parameter(std::string name, std::span<float> weights, std::span<const bfloat16> grads);
  std::string name;
  std::span<float> weights;
  const void* grads;
  std::size_t grad_count;
  DataType grad_type;  // f32 or bf16
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  double learning_rate = 1e-3;
  // Learning rate of step `step` (1-based) from the base rate; empty: constant. Must give the
  // same value on every rank.
  std::function<double(std::int64_t step, double base)> schedule;
  double momentum = 0.9;                              // sgd, lars
  bool nesterov = false;                              // sgd, lars
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // adam, adamw, lamb (bias-corrected)
  // sgd, adam: added to the gradient (L2); adamw, lamb: decoupled, added to the update;
  // lars: inside the trust ratio and the update, as in You et al. 2017.
  double weight_decay = 0;
  // Name patterns (glob with * and ?; a pattern without them matches any name containing it)
  // of tensors excluded from weight decay, and from LAMB/LARS layer adaptation (trust ratio 1),
  // e.g. {"bias", "LayerNorm"}.
  std::vector<std::string> no_weight_decay;
  std::vector<std::string> no_trust_ratio;
  double lars_trust_coefficient = 0.001;  // eta
  // > 0: scale the averaged gradient so its global L2 norm is at most this.
  double max_grad_norm = 0;
  // Off: every rank all-reduces and updates everything (the replicated baseline).
  bool shard = true;
  // Send gradients in bf16 (each addition in f32, rounded to bf16 between hops); the shard is
  // widened to f32 before the update.
  bool bf16_gradients = false;
  // Divide the summed gradient by the rank count (data-parallel mean).
  bool average = true;
  // Bucket sizes, in bytes of the wire type (f32, or bf16 with bf16_gradients); the first
  // bucket (the last layers) is smaller so its communication starts early (as PyTorch DDP).
  std::size_t bucket_bytes = default_bucket_bytes;
  std::size_t first_bucket_bytes = default_first_bucket_bytes;
  // After the first step with ready() calls, re-cut the buckets in the order rank 0 saw them
  // (the optimizer state moves with the elements; one all-reduce of the state, once).
  bool rebuild_buckets = true;
};

// What one step did and how long its phases took (seconds, this rank).
struct StepReport {
  std::int64_t step = 0;
  double learning_rate = 0;
  double grad_norm = -1;  // global L2 norm of the averaged gradient; -1 when not computed
  double clip_scale = 1;  // factor applied by max_grad_norm
  // reduce: inside step(), waiting for reduce-scatters (or all-reduces) that the backward
  // pass did not hide; update: the update kernels and norms; gather: packing, starting and
  // waiting for the all-gathers and unpacking the weights.
  double reduce_seconds = 0, update_seconds = 0, gather_seconds = 0;
};

// The whole optimizer state, the same on every rank and independent of the rank count and the
// bucket layout (what a torch-style state_dict holds).
struct OptimizerState {
  std::int64_t steps = 0;
  std::vector<std::string> names;  // state_names(kind); empty in set_state: not checked
  // Per name, every tensor's elements end to end in registration order.
  std::vector<std::vector<float>> arrays;
};
// The state arrays of a kind, in torch's names: {"momentum"} (sgd, lars), {"exp_avg",
// "exp_avg_sq"} (adam, adamw, lamb).
std::vector<std::string> state_names(OptimizerKind kind);

class ShardedOptimizer {
 public:
  // Collective over comm. Throws InvalidArgument on every rank for an empty parameter list,
  // weights and gradients of different sizes, duplicate names, bad hyper-parameters, or
  // parameter lists / configurations that differ between ranks.
  ShardedOptimizer(Communicator& comm, std::vector<Parameter> params, OptimizerConfig config);
  ~ShardedOptimizer();
  ShardedOptimizer(const ShardedOptimizer&) = delete;
  ShardedOptimizer& operator=(const ShardedOptimizer&) = delete;

  // Parameter `name` (or index, registration order) has its final gradient for this step:
  // pack it and start every bucket now complete. Errors (unknown, twice, never) are raised by
  // step() on every rank; gradient_reducer.hpp has the rules.
  void ready(std::string_view name);
  void ready(std::size_t index);
  // One round of progress on the buckets in flight.
  void poll();
  // Collective: one optimizer step from the current gradients. Without ready() calls since the
  // last step it marks every parameter ready first.
  StepReport step();
  // Parameter names per bucket, in bucket order.
  std::vector<std::vector<std::string>> buckets() const;

  std::int64_t steps_taken() const noexcept;
  // LAMB/LARS: the trust ratio each parameter got in the last step (1 where excluded).
  std::span<const double> trust_ratios() const noexcept;
  // Bytes of optimizer state (moments, momentum, LAMB scratch) this rank holds.
  std::size_t state_bytes() const noexcept;
  // Elements of the flattened parameters this rank updates (padding included).
  std::size_t shard_elements() const noexcept;

  // Collective. One file with the step count, every weight and the whole optimizer state,
  // independent of the rank count and of sharding; `load` accepts a file from any rank count
  // whose parameters have the same names and sizes, and sets the weights too. Every rank
  // writes and reads its own part (MPI-IO), so `path` must be on a file system all ranks see.
  // A save is all or nothing: it writes `path.saving` and renames it over `path` once synced,
  // so a failed or killed save leaves the previous file. Every section carries a CRC-32;
  // `load` verifies them all before it sets anything and names the first damaged one.
  void save(const std::string& path);
  void load(const std::string& path);
  // Collective. The whole state (steps and every state array) on every rank, and setting it
  // from such a state taken at any rank count or layout (the weights are the caller's). A
  // state of another kind or size is an InvalidArgument on every rank.
  OptimizerState state() const;
  void set_state(const OptimizerState& state);

  struct TOROID_HIDDEN Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace toroid
TOROID_API_END
