// What a ShardedOptimizer holds, shared by its parts: the step (sharded_optimizer.cpp), the
// update rules (update.cpp) and checkpoints (checkpoint.cpp).
#pragma once

#include <memory>
#include <vector>

#include "kernels/optimizer_kernels.hpp"
#include "optimizer/bucket_reducer.hpp"
#include "optimizer/layout.hpp"
#include "toroid/optimizer.hpp"
#include "toroid/request.hpp"

namespace toroid {

struct ShardedOptimizer::Impl {
  Impl(Communicator& c, std::vector<Parameter> p, OptimizerConfig cfg);

  Communicator& comm;
  std::vector<Parameter> params;
  OptimizerConfig config;
  int parts = 1, part = 0;  // shards: the rank count when sharding, 1 when replicated
  // The buckets: gradients packed as they become ready, their reduce-scatters (all-reduces
  // when replicated), the summed shard of every bucket in reducer->result().
  std::unique_ptr<optimizer::BucketReducer> reducer;
  std::vector<char> decays, adapts;  // per tensor: weight decay on, trust ratio on
  std::vector<double> trust;         // per tensor, last step
  std::int64_t steps = 0;

  std::vector<std::vector<float>> state;  // m (sgd, lars: momentum), v (adam family)
  std::vector<float> direction;           // lamb: the update before its trust ratio
  // The weights being gathered, every bucket padded (the reducer's packed gradients when they
  // are f32: free once a bucket's reduce-scatter is done), and one all-gather per bucket.
  Buffer<float> gather_own;  // Communicator::allocate's: single-copy all-gathers on one node
  float* gather = nullptr;
  std::vector<Request> gathers;

  const optimizer::Layout& layout() const { return reducer->layout(); }
  float* grads() const { return reducer->result(); }  // this part's summed shards, f32
  float* weights_at(const optimizer::Piece& piece) const {
    return params[piece.tensor].weights.data() + piece.tensor_offset;
  }
  // The own pieces of every bucket with their offset in the state arrays.
  template <class F>
  void for_own_pieces(F f) const {
    for (const auto& b : layout().buckets)
      for (const auto& piece : b.own) f(piece, b.state_offset + piece.offset);
  }
  // Where each tensor starts when all are laid end to end in registration order (checkpoint
  // files, moving state between layouts); layout().total elements in all.
  std::vector<std::size_t> registration_starts() const {
    std::vector<std::size_t> starts;
    std::size_t at = 0;
    for (const auto& p : params) starts.push_back(at), at += p.weights.size();
    return starts;
  }
  double weight_decay_of(std::size_t tensor) const {
    return decays[tensor] ? config.weight_decay : 0.0;
  }
  bool sharded() const { return parts > 1; }
  // Sizes the state and the gather requests to the current layout.
  void bind();
};

namespace optimizer {
// What a step needs before any bucket is updated.
struct UpdatePlan {
  double lr = 0, grad_scale = 1;
  kernels::AdamArgs adam;
};
// Whether the rule needs every bucket's summed gradient before the first update: clipping,
// LAMB and LARS (norms over tensors that may straddle buckets).
bool needs_every_gradient(const OptimizerConfig& config);
// For step `impl.steps` (already counted): norms, trust ratios and LAMB's directions where the
// rule has them (summed across ranks), from every bucket's gradient when needs_every_gradient.
UpdatePlan plan_update(ShardedOptimizer::Impl& impl, double lr, StepReport& report);
// The update of this part's shard of one bucket.
void update_bucket(ShardedOptimizer::Impl& impl, const Bucket& bucket, const UpdatePlan& plan);
// Sharded: every part's own weights to every part (all buckets' all-gathers at once).
void gather_weights(ShardedOptimizer::Impl& impl);
// Number of state arrays per element of each kind.
std::size_t state_arrays(OptimizerKind kind);
}  // namespace optimizer

}  // namespace toroid
