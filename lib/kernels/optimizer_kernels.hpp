// Fused f32 optimizer kernels: one pass over a piece of the weights, its gradient and its
// optimizer state per call. Every ISA level runs the same operations in the same order (no
// contraction into FMA, correctly rounded sqrt and division), so the update kernels give the
// scalar level's bits exactly; the sums of squares add in a different order per level and agree
// to rounding.
//
// Terms: `grad_scale` multiplies the raw gradient first (it folds the 1/p of averaging and the
// global-norm clipping factor into the same pass); weight decay is either added to the gradient
// (L2, classic Adam and SGD) or to the update direction (decoupled, AdamW and LAMB).
#pragma once

#include <cstddef>

namespace toroid::kernels {

// SGD with momentum, and LARS (which scales inside the momentum buffer):
//   g' = grad_scale*g + weight_decay*w;  s = lr_in*g';  m = momentum*m + s
//   d  = nesterov ? s + momentum*m : m;  w = w - lr_out*d
// SGD: lr_in = 1, lr_out = lr.  LARS: lr_in = lr*trust_ratio, lr_out = 1.
struct MomentumArgs {
  float grad_scale = 1, weight_decay = 0, momentum = 0, lr_in = 1, lr_out = 1;
  bool nesterov = false;
};
using MomentumFn = void (*)(float* w, const float* g, float* m, std::size_t n,
                            const MomentumArgs& a);

// Adam / AdamW / the LAMB direction:
//   g' = grad_scale*g (+ weight_decay*w when !decoupled)
//   m = beta1*m + (1-beta1)*g';  v = beta2*v + (1-beta2)*g'*g'
//   u = (m*inv_bias1) / (sqrt(v*inv_bias2) + epsilon) (+ weight_decay*w when decoupled)
// adam: w = w - lr*u.  lamb_direction: writes u and returns sum(w^2), sum(u^2) for the trust ratio.
struct AdamArgs {
  float grad_scale = 1, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f, inv_bias1 = 1, inv_bias2 = 1;
  float lr = 0, weight_decay = 0;
  bool decoupled = true;
};
struct SquareSums {
  double w = 0, u = 0;
};
using AdamFn = void (*)(float* w, const float* g, float* m, float* v, std::size_t n,
                        const AdamArgs& a);
using LambDirectionFn = SquareSums (*)(const float* w, const float* g, float* m, float* v, float* u,
                                       std::size_t n, const AdamArgs& a);
// w = w - step*u
using ApplyFn = void (*)(float* w, const float* u, std::size_t n, float step);
// sum of x[i]^2, accumulated in f64
using SumSquaresFn = double (*)(const float* x, std::size_t n);

struct OptimizerKernels {
  MomentumFn momentum;
  AdamFn adam;
  LambDirectionFn lamb_direction;
  ApplyFn apply;
  SumSquaresFn sum_squares;
};

// The active level's kernels (the level reduce.hpp runs; see isa.hpp).
const OptimizerKernels& optimizer_kernels();

}  // namespace toroid::kernels
