// The update rules on one rank's shard. Each walks the shard's pieces (a piece lies inside one
// tensor, so per-tensor settings such as weight-decay exclusion apply per call) and runs one
// fused kernel per piece. Norms that span a whole tensor (clipping, LAMB and LARS trust ratios)
// are partial sums over the pieces here, summed across ranks with one small all-reduce of a
// vector holding every tensor's sums.
//
// A step is planned once (plan_update: norms, trust ratios, LAMB's directions; it needs every
// bucket's gradient when the rule has norms) and applied bucket by bucket (update_bucket), so
// that the all-gather of one bucket can run while the next is updated. The kernels see the same
// pieces in the same order either way, so the result does not depend on how it was split.
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
    sums.at(0, piece.tensor) += k.sum_squares(s.grads() + at, piece.count);
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

// LARS trust ratios from the norms of scale_gradients.
void lars_trust(ShardedOptimizer::Impl& s, const TensorSums& sums, double grad_scale) {
  for (std::size_t t = 0; t < s.params.size(); ++t) {
    const double w = std::sqrt(sums.values[sums.tensors + t]);
    const double g = std::sqrt(sums.values[t]) * grad_scale;
    const double wd = s.weight_decay_of(t);
    s.trust[t] =
        s.adapts[t] && w > 0 && g > 0 ? s.config.lars_trust_coefficient * w / (g + wd * w) : 1.0;
  }
}

kernels::AdamArgs adam_args(const ShardedOptimizer::Impl& s, double lr, double grad_scale) {
  const auto& c = s.config;
  const auto t = static_cast<double>(s.steps);
  kernels::AdamArgs a;
  a.grad_scale = f(grad_scale), a.beta1 = f(c.beta1), a.beta2 = f(c.beta2),
  a.epsilon = f(c.epsilon);
  a.inv_bias1 = f(1.0 / (1.0 - std::pow(c.beta1, t)));
  a.inv_bias2 = f(1.0 / (1.0 - std::pow(c.beta2, t)));
  a.lr = f(lr);
  a.decoupled = c.kind != OptimizerKind::adam;
  return a;
}

// LAMB (You et al. 2019): the AdamW direction u of every piece, then per tensor the trust
// ratio ||w|| / ||u||; update_bucket applies w -= lr * ratio * u.
void lamb_directions(ShardedOptimizer::Impl& s, const kernels::AdamArgs& args) {
  const auto& k = kernels::optimizer_kernels();
  kernels::AdamArgs a = args;
  TensorSums sums(s.params.size(), 2);  // row 0: weights, row 1: directions
  s.for_own_pieces([&](const Piece& piece, std::size_t at) {
    a.weight_decay = f(s.weight_decay_of(piece.tensor));
    const auto sq =
        k.lamb_direction(s.weights_at(piece), s.grads() + at, s.state[0].data() + at,
                         s.state[1].data() + at, s.direction.data() + at, piece.count, a);
    sums.at(0, piece.tensor) += sq.w;
    sums.at(1, piece.tensor) += sq.u;
  });
  sums.sum_over(s);
  for (std::size_t t = 0; t < s.params.size(); ++t) {
    const double w = std::sqrt(sums.at(0, t)), u = std::sqrt(sums.at(1, t));
    s.trust[t] = s.adapts[t] && w > 0 && u > 0 ? w / u : 1.0;
  }
}

}  // namespace

std::size_t state_arrays(OptimizerKind kind) {
  return kind == OptimizerKind::sgd || kind == OptimizerKind::lars ? 1 : 2;
}

bool needs_every_gradient(const OptimizerConfig& c) {
  return c.kind == OptimizerKind::lars || c.kind == OptimizerKind::lamb || c.max_grad_norm > 0;
}

UpdatePlan plan_update(ShardedOptimizer::Impl& s, double lr, StepReport& report) {
  const auto& c = s.config;
  UpdatePlan plan;
  plan.lr = lr;
  plan.grad_scale = c.average ? 1.0 / s.comm.size() : 1.0;
  if (c.kind == OptimizerKind::lars || c.max_grad_norm > 0) {
    TensorSums sums(s.params.size(), c.kind == OptimizerKind::lars ? 2 : 1);
    plan.grad_scale = scale_gradients(s, sums, report);
    if (c.kind == OptimizerKind::lars) lars_trust(s, sums, plan.grad_scale);
  }
  plan.adam = adam_args(s, lr, plan.grad_scale);
  if (c.kind == OptimizerKind::lamb) lamb_directions(s, plan.adam);
  return plan;
}

void update_bucket(ShardedOptimizer::Impl& s, const Bucket& b, const UpdatePlan& plan) {
  const auto& k = kernels::optimizer_kernels();
  const auto& c = s.config;
  for (const auto& piece : b.own) {
    const std::size_t at = b.state_offset + piece.offset;
    float* w = s.weights_at(piece);
    switch (c.kind) {
      case OptimizerKind::sgd:
      case OptimizerKind::lars: {
        kernels::MomentumArgs a;
        a.grad_scale = f(plan.grad_scale), a.weight_decay = f(s.weight_decay_of(piece.tensor));
        a.momentum = f(c.momentum), a.nesterov = c.nesterov;
        if (c.kind == OptimizerKind::lars)
          a.lr_in = f(plan.lr * s.trust[piece.tensor]), a.lr_out = 1.0f;
        else
          a.lr_in = 1.0f, a.lr_out = f(plan.lr);
        k.momentum(w, s.grads() + at, s.state[0].data() + at, piece.count, a);
        break;
      }
      case OptimizerKind::adam:
      case OptimizerKind::adamw: {
        kernels::AdamArgs a = plan.adam;
        a.weight_decay = f(s.weight_decay_of(piece.tensor));
        k.adam(w, s.grads() + at, s.state[0].data() + at, s.state[1].data() + at, piece.count, a);
        break;
      }
      case OptimizerKind::lamb:
        k.apply(w, s.direction.data() + at, piece.count, f(plan.lr * s.trust[piece.tensor]));
        break;
    }
  }
}

}  // namespace toroid::optimizer
