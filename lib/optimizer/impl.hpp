// What a ShardedOptimizer holds, shared by its parts: the step (sharded_optimizer.cpp), the
// update rules (update.cpp) and checkpoints (checkpoint.cpp).
#pragma once

#include <vector>

#include "optimizer/layout.hpp"
#include "toroid/optimizer.hpp"

namespace toroid {

struct ShardedOptimizer::Impl {
  Impl(Communicator& c, std::vector<Parameter> p, OptimizerConfig cfg);

  Communicator& comm;
  std::vector<Parameter> params;
  OptimizerConfig config;
  int parts = 1, part = 0;  // shards: the rank count when sharding, 1 when replicated
  optimizer::Layout layout;
  std::vector<char> decays, adapts;  // per tensor: weight decay on, trust ratio on
  std::vector<double> trust;         // per tensor, last step
  std::int64_t steps = 0;

  // This part's shard of every bucket, concatenated (layout.state_elements each).
  std::vector<float> grad_shard;
  std::vector<std::vector<float>> state;  // m (sgd, lars: momentum), v (adam family)
  std::vector<float> direction;           // lamb: the update before its trust ratio
  // One bucket at a time: packed gradients (f32 or bf16) and the weights being gathered.
  std::vector<float> bucket;
  std::vector<bfloat16> bucket_bf16, shard_bf16;

  float* weights_at(const optimizer::Piece& piece) const {
    return params[piece.tensor].weights.data() + piece.tensor_offset;
  }
  // The own pieces of every bucket with their offset in the state arrays.
  template <class F>
  void for_own_pieces(F f) const {
    for (const auto& b : layout.buckets)
      for (const auto& piece : b.own) f(piece, b.state_offset + piece.offset);
  }
  double weight_decay_of(std::size_t tensor) const { return decays[tensor] ? config.weight_decay : 0.0; }
  bool sharded() const { return parts > 1; }
};

namespace optimizer {
// The update of this part's shard from grad_shard, for step `impl.steps` (already counted).
// Sums per-tensor partial norms across ranks where the rule needs them.
void update_shard(ShardedOptimizer::Impl& impl, double lr, StepReport& report);
// Number of state arrays per element of each kind.
std::size_t state_arrays(OptimizerKind kind);
}  // namespace optimizer

}  // namespace toroid
