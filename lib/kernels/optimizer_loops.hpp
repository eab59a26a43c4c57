// The optimizer kernels of optimizer_kernels.hpp, written once over "f32 lane traits" V:
//
//   Vec, kLanes          register type, floats per register (the scalar level: float, 1)
//   load/store           kLanes floats; load_n/store_n the first n < kLanes (loads zero-fill)
//   add sub mul div sqrt set1
//   Acc, acc_zero, acc_squares(acc, v), acc_total(acc)   f64 sum of squares
//
// Include only after defining the traits in an unnamed namespace (see simd_loops.hpp: every
// instantiation must have internal linkage, and nothing here may call an inline library
// function, so no code built for one ISA leaks into another).
#pragma once

#include <cstddef>

#include "kernels/optimizer_kernels.hpp"

namespace toroid::kernels::opt {

// One register's worth of elements [i, i + len), len == kLanes except at the tail.
template <class V>
struct Lanes {
  std::size_t i, len;
  typename V::Vec load(const float* p) const {
    return len == V::kLanes ? V::load(p + i) : V::load_n(p + i, len);
  }
  void store(float* p, typename V::Vec v) const {
    if (len == V::kLanes)
      V::store(p + i, v);
    else
      V::store_n(p + i, v, len);
  }
};

template <class V, class Body>
inline void for_lanes(std::size_t n, Body body) {
  std::size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) body(Lanes<V>{i, V::kLanes});
  if (i < n) body(Lanes<V>{i, n - i});
}

template <class V>
void momentum(float* w, const float* g, float* m, std::size_t n, const MomentumArgs& a) {
  const auto scale = V::set1(a.grad_scale), wd = V::set1(a.weight_decay);
  const auto mu = V::set1(a.momentum), lr_in = V::set1(a.lr_in), lr_out = V::set1(a.lr_out);
  const bool nesterov = a.nesterov;
  for_lanes<V>(n, [&](Lanes<V> at) {
    const auto W = at.load(w);
    const auto grad = V::add(V::mul(scale, at.load(g)), V::mul(wd, W));
    const auto s = V::mul(lr_in, grad);
    const auto M = V::add(V::mul(mu, at.load(m)), s);
    const auto d = nesterov ? V::add(s, V::mul(mu, M)) : M;
    at.store(m, M);
    at.store(w, V::sub(W, V::mul(lr_out, d)));
  });
}

// Adam's moments and direction for one register; shared by adam and lamb_direction.
template <class V>
struct AdamMath {
  typename V::Vec scale, wd, b1, c1, b2, c2, eps, inv1, inv2;
  bool decoupled;
  explicit AdamMath(const AdamArgs& a)
      : scale(V::set1(a.grad_scale)),
        wd(V::set1(a.weight_decay)),
        b1(V::set1(a.beta1)),
        c1(V::set1(1.0f - a.beta1)),
        b2(V::set1(a.beta2)),
        c2(V::set1(1.0f - a.beta2)),
        eps(V::set1(a.epsilon)),
        inv1(V::set1(a.inv_bias1)),
        inv2(V::set1(a.inv_bias2)),
        decoupled(a.decoupled) {}
  // Updates m and v in place (through the references) and returns the direction u.
  typename V::Vec direction(typename V::Vec W, typename V::Vec G, typename V::Vec& M,
                            typename V::Vec& Vv) const {
    auto grad = V::mul(scale, G);
    if (!decoupled) grad = V::add(grad, V::mul(wd, W));
    M = V::add(V::mul(b1, M), V::mul(c1, grad));
    Vv = V::add(V::mul(b2, Vv), V::mul(c2, V::mul(grad, grad)));
    auto u = V::div(V::mul(M, inv1), V::add(V::sqrt(V::mul(Vv, inv2)), eps));
    if (decoupled) u = V::add(u, V::mul(wd, W));
    return u;
  }
};

template <class V>
void adam(float* w, const float* g, float* m, float* v, std::size_t n, const AdamArgs& a) {
  const AdamMath<V> math(a);
  const auto lr = V::set1(a.lr);
  for_lanes<V>(n, [&](Lanes<V> at) {
    const auto W = at.load(w);
    auto M = at.load(m), Vv = at.load(v);
    const auto u = math.direction(W, at.load(g), M, Vv);
    at.store(m, M);
    at.store(v, Vv);
    at.store(w, V::sub(W, V::mul(lr, u)));
  });
}

template <class V>
SquareSums lamb_direction(const float* w, const float* g, float* m, float* v, float* u,
                          std::size_t n, const AdamArgs& a) {
  const AdamMath<V> math(a);
  auto w_sq = V::acc_zero(), u_sq = V::acc_zero();
  for_lanes<V>(n, [&](Lanes<V> at) {
    const auto W = at.load(w);
    auto M = at.load(m), Vv = at.load(v);
    const auto U = math.direction(W, at.load(g), M, Vv);
    at.store(m, M);
    at.store(v, Vv);
    at.store(u, U);
    // A tail's unused lanes hold zero weights, gradients and moments, so their direction is 0.
    w_sq = V::acc_squares(w_sq, W);
    u_sq = V::acc_squares(u_sq, U);
  });
  return {V::acc_total(w_sq), V::acc_total(u_sq)};
}

template <class V>
void apply(float* w, const float* u, std::size_t n, float step) {
  const auto s = V::set1(step);
  for_lanes<V>(n, [&](Lanes<V> at) { at.store(w, V::sub(at.load(w), V::mul(s, at.load(u)))); });
}

template <class V>
double sum_squares(const float* x, std::size_t n) {
  auto acc = V::acc_zero();
  for_lanes<V>(n, [&](Lanes<V> at) { acc = V::acc_squares(acc, at.load(x)); });
  return V::acc_total(acc);
}

template <class V>
constexpr OptimizerKernels make_optimizer_kernels() {
  return {momentum<V>, adam<V>, lamb_direction<V>, apply<V>, sum_squares<V>};
}

}  // namespace toroid::kernels::opt
