// The update rules on one rank's shard. Each walks the shard's pieces (a piece lies inside one
// tensor, so per-tensor settings such as weight-decay exclusion apply per call) and runs one
// fused kernel per piece. Norms that span a whole tensor (clipping, LAMB and LARS trust ratios)
// are partial sums over the pieces here, summed across ranks with one small all-reduce of a
// vector holding every tensor's sums.
#include <cmath>

#include "kernels/optimizer_kernels.hpp"
#include "optimizer/impl.hpp"
#include "toroid/collectives.hpp"

namespace toroid::optimizer {
namespace {

// Per-tensor sums of squares, `rows` values per tensor, summed over the parts.
struct TensorSums {
  std::size_t tensors, rows;
  std::vector<double> values;
  TensorSums(std::size_t t, std::size_t r) : tensors(t), rows(r), values(t * r, 0.0) {}
  double& at(std::size_t row, std::size_t tensor) { return values[row * tensors + tensor]; }
  void sum_over(ShardedOptimizer::Impl& s) {
    if (s.sharded()) allreduce(std::span<double>(values), ReduceOp::sum, s.comm);
  }
};

float f(double x) { return static_cast<float>(x); }

// max_grad_norm / norm, at most 1 (the usual 1e-6 keeps a zero gradient finite).
double clip_factor(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (norm + 1e-6));
}

// Gradient (and for LARS weight) norms per tensor before the update. Row 0: raw gradient sums of
// squares; row 1: weights. Returns the scale to apply to the raw summed gradient.
double scale_gradients(ShardedOptimizer::Impl& s, TensorSums& sums, StepReport& report) {
  const auto& k = kernels::optimizer_kernels();
  const bool lars = s.config.kind == OptimizerKind::lars;
  s.for_own_pieces([&](const Piece& piece, std::size_t at) {
    sums.at(0, piece.tensor) += k.sum_squares(s.grad_shard.data() + at, piece.count);
    if (lars) sums.at(1, piece.tensor) += k.sum_squares(s.weights_at(piece), piece.count);
  });
  sums.sum_over(s);
  const double mean = s.config.average ? 1.0 / s.comm.size() : 1.0;
  double total = 0;
  for (std::size_t t = 0; t < sums.tensors; ++t) total += sums.at(0, t);
  report.grad_norm = std::sqrt(total) * mean;
  report.clip_scale = clip_factor(report.grad_norm, s.config.max_grad_norm);
  return mean * report.clip_scale;
}

void momentum_rule(ShardedOptimizer::Impl& s, double lr, double grad_scale, const TensorSums* lars) {
  const auto& k = kernels::optimizer_kernels();
  const auto& c = s.config;
  if (lars) {
    for (std::size_t t = 0; t < s.params.size(); ++t) {
      const double w = std::sqrt(lars->values[lars->tensors + t]);
      const double g = std::sqrt(lars->values[t]) * grad_scale;
      const double wd = s.weight_decay_of(t);
      s.trust[t] = s.adapts[t] && w > 0 && g > 0 ? c.lars_trust_coefficient * w / (g + wd * w) : 1.0;
    }
  }
  s.for_own_pieces([&](const Piece& piece, std::size_t at) {
    kernels::MomentumArgs a;
    a.grad_scale = f(grad_scale), a.weight_decay = f(s.weight_decay_of(piece.tensor));
    a.momentum = f(c.momentum), a.nesterov = c.nesterov;
    if (lars) a.lr_in = f(lr * s.trust[piece.tensor]), a.lr_out = 1.0f;
    else a.lr_in = 1.0f, a.lr_out = f(lr);
    k.momentum(s.weights_at(piece), s.grad_shard.data() + at, s.state[0].data() + at, piece.count, a);
  });
}

kernels::AdamArgs adam_args(const ShardedOptimizer::Impl& s, double lr, double grad_scale) {
  const auto& c = s.config;
  const auto t = static_cast<double>(s.steps);
  kernels::AdamArgs a;
  a.grad_scale = f(grad_scale), a.beta1 = f(c.beta1), a.beta2 = f(c.beta2), a.epsilon = f(c.epsilon);
  a.inv_bias1 = f(1.0 / (1.0 - std::pow(c.beta1, t)));
  a.inv_bias2 = f(1.0 / (1.0 - std::pow(c.beta2, t)));
  a.lr = f(lr);
  a.decoupled = c.kind != OptimizerKind::adam;
  return a;
}

void adam_rule(ShardedOptimizer::Impl& s, double lr, double grad_scale) {
  const auto& k = kernels::optimizer_kernels();
  kernels::AdamArgs a = adam_args(s, lr, grad_scale);
  s.for_own_pieces([&](const Piece& piece, std::size_t at) {
    a.weight_decay = f(s.weight_decay_of(piece.tensor));
    k.adam(s.weights_at(piece), s.grad_shard.data() + at, s.state[0].data() + at, s.state[1].data() + at,
           piece.count, a);
  });
}

// LAMB (You et al. 2019): the AdamW direction u, then w -= lr * (||w|| / ||u||) * u per tensor.
void lamb_rule(ShardedOptimizer::Impl& s, double lr, double grad_scale) {
  const auto& k = kernels::optimizer_kernels();
  kernels::AdamArgs a = adam_args(s, lr, grad_scale);
  TensorSums sums(s.params.size(), 2);  // row 0: weights, row 1: directions
  s.for_own_pieces([&](const Piece& piece, std::size_t at) {
    a.weight_decay = f(s.weight_decay_of(piece.tensor));
    const auto sq = k.lamb_direction(s.weights_at(piece), s.grad_shard.data() + at, s.state[0].data() + at,
                                     s.state[1].data() + at, s.direction.data() + at, piece.count, a);
    sums.at(0, piece.tensor) += sq.w;
    sums.at(1, piece.tensor) += sq.u;
  });
  sums.sum_over(s);
  for (std::size_t t = 0; t < s.params.size(); ++t) {
    const double w = std::sqrt(sums.at(0, t)), u = std::sqrt(sums.at(1, t));
    s.trust[t] = s.adapts[t] && w > 0 && u > 0 ? w / u : 1.0;
  }
  s.for_own_pieces([&](const Piece& piece, std::size_t at) {
    k.apply(s.weights_at(piece), s.direction.data() + at, piece.count, f(lr * s.trust[piece.tensor]));
  });
}

}  // namespace

std::size_t state_arrays(OptimizerKind kind) {
  return kind == OptimizerKind::sgd || kind == OptimizerKind::lars ? 1 : 2;
}

void update_shard(ShardedOptimizer::Impl& s, double lr, StepReport& report) {
  const auto& c = s.config;
  const bool lars = c.kind == OptimizerKind::lars;
  double grad_scale = c.average ? 1.0 / s.comm.size() : 1.0;
  TensorSums sums(s.params.size(), lars ? 2 : 1);
  if (lars || c.max_grad_norm > 0) grad_scale = scale_gradients(s, sums, report);
  switch (c.kind) {
    case OptimizerKind::sgd: momentum_rule(s, lr, grad_scale, nullptr); break;
    case OptimizerKind::lars: momentum_rule(s, lr, grad_scale, &sums); break;
    case OptimizerKind::adam:
    case OptimizerKind::adamw: adam_rule(s, lr, grad_scale); break;
    case OptimizerKind::lamb: lamb_rule(s, lr, grad_scale); break;
  }
}

}  // namespace toroid::optimizer
