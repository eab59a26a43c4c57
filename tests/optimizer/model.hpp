// A small set of tensors with deterministic weights and per-rank gradients for optimizer tests,
// a single-process reference of every update rule in double precision, and what the tests
// compare with.
//
// Gradients: rank r of p gets base(step, tensor, i) + 0.25 * (r - (p-1)/2), so the mean over
// ranks is base(...) for every p (the offsets are exact in f32): runs at different rank counts
// follow the same trajectory, which the checkpoint tests rely on.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "toroid/optimizer.hpp"

namespace toroid::testing {

struct Model {
  std::vector<std::string> names;
  std::vector<std::vector<float>> weights, grads;

  explicit Model(const std::vector<std::size_t>& sizes) {
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      names.push_back(name_of(t));
      weights.emplace_back(sizes[t]);
      grads.emplace_back(sizes[t]);
      for (std::size_t i = 0; i < sizes[t]; ++i)
        weights[t][i] = static_cast<float>(std::cos(0.91 * i + 2.1 * t));
    }
  }
  static std::string name_of(std::size_t t) {
    static const char* kNames[] = {"fc1.weight", "fc1.bias", "fc2.weight", "LayerNorm.weight",
                                   "embedding"};
    return t < 5 ? kNames[t] : "extra" + std::to_string(t);
  }
  static float base(std::int64_t step, std::size_t t, std::size_t i) {
    return static_cast<float>(0.8 * std::sin(0.37 * i + 1.3 * t + 0.7 * step) + 0.1);
  }
  void set_gradients(std::int64_t step, int rank, int p) {
    const float offset = 0.25f * (static_cast<float>(rank) - 0.5f * static_cast<float>(p - 1));
    for (std::size_t t = 0; t < grads.size(); ++t)
      for (std::size_t i = 0; i < grads[t].size(); ++i) grads[t][i] = base(step, t, i) + offset;
  }
  std::vector<Parameter> parameters() {
    std::vector<Parameter> out;
    for (std::size_t t = 0; t < weights.size(); ++t)
      out.emplace_back(names[t], std::span<float>(weights[t]), std::span<const float>(grads[t]));
    return out;
  }
};

// The update rules on whole tensors with the mean gradient, in double.
struct Reference {
  OptimizerConfig c;
  std::vector<std::vector<double>> w, m, v;
  std::vector<double> trust;
  std::int64_t step = 0;

  Reference(const Model& model, OptimizerConfig config) : c(std::move(config)) {
    for (const auto& t : model.weights) {
      w.emplace_back(t.begin(), t.end());
      m.emplace_back(t.size(), 0.0);
      v.emplace_back(t.size(), 0.0);
    }
    trust.assign(w.size(), 1.0);
  }
  static bool excluded(const std::string& name, const std::vector<std::string>& patterns) {
    for (const auto& p : patterns)
      if (name.find(p) != std::string::npos) return true;
    return false;
  }
  void advance(const Model& model) {
    ++step;
    std::vector<std::vector<double>> g(w.size());
    double total = 0;
    for (std::size_t t = 0; t < w.size(); ++t)
      for (std::size_t i = 0; i < w[t].size(); ++i) {
        g[t].push_back(Model::base(step, t, i));
        total += g[t].back() * g[t].back();
      }
    const double clip =
        c.max_grad_norm > 0 ? std::min(1.0, c.max_grad_norm / (std::sqrt(total) + 1e-6)) : 1.0;
    for (std::size_t t = 0; t < w.size(); ++t) {
      const std::string& name = model.names[t];
      const double wd = excluded(name, c.no_weight_decay) ? 0.0 : c.weight_decay;
      const bool adapt = !excluded(name, c.no_trust_ratio);
      const std::size_t n = w[t].size();
      for (auto& x : g[t]) x *= clip;
      const double lr = c.learning_rate;
      if (c.kind == OptimizerKind::sgd || c.kind == OptimizerKind::lars) {
        double ratio = 1, ws = 0, gs = 0;
        for (std::size_t i = 0; i < n; ++i) ws += w[t][i] * w[t][i], gs += g[t][i] * g[t][i];
        if (c.kind == OptimizerKind::lars && adapt && ws > 0 && gs > 0)
          ratio = c.lars_trust_coefficient * std::sqrt(ws) / (std::sqrt(gs) + wd * std::sqrt(ws));
        trust[t] = c.kind == OptimizerKind::lars ? ratio : 1.0;
        const double lr_in = c.kind == OptimizerKind::lars ? lr * ratio : 1.0;
        const double lr_out = c.kind == OptimizerKind::lars ? 1.0 : lr;
        for (std::size_t i = 0; i < n; ++i) {
          const double s = lr_in * (g[t][i] + wd * w[t][i]);
          m[t][i] = c.momentum * m[t][i] + s;
          w[t][i] -= lr_out * (c.nesterov ? s + c.momentum * m[t][i] : m[t][i]);
        }
      } else {
        const bool decoupled = c.kind != OptimizerKind::adam;
        const double b1 = 1 - std::pow(c.beta1, step), b2 = 1 - std::pow(c.beta2, step);
        std::vector<double> u(n);
        double ws = 0, us = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const double gi = g[t][i] + (decoupled ? 0.0 : wd * w[t][i]);
          m[t][i] = c.beta1 * m[t][i] + (1 - c.beta1) * gi;
          v[t][i] = c.beta2 * v[t][i] + (1 - c.beta2) * gi * gi;
          u[i] = (m[t][i] / b1) / (std::sqrt(v[t][i] / b2) + c.epsilon) +
                 (decoupled ? wd * w[t][i] : 0.0);
          ws += w[t][i] * w[t][i], us += u[i] * u[i];
        }
        double ratio = 1;
        if (c.kind == OptimizerKind::lamb && adapt && ws > 0 && us > 0)
          ratio = std::sqrt(ws) / std::sqrt(us);
        trust[t] = ratio;
        for (std::size_t i = 0; i < n; ++i) w[t][i] -= lr * ratio * u[i];
      }
    }
  }
};

// Largest |a - b| / max(|b|, floor) over every element of every tensor.
inline double max_relative(const std::vector<std::vector<float>>& a,
                           const std::vector<std::vector<float>>& b, double floor = 1e-2) {
  double worst = 0;
  for (std::size_t t = 0; t < a.size(); ++t)
    for (std::size_t i = 0; i < a[t].size(); ++i)
      worst = std::max(
          worst, std::abs(double(a[t][i]) - b[t][i]) / std::max(std::abs(double(b[t][i])), floor));
  return worst;
}

// A file name every rank agrees on, in the build tree: a directory every host of the emulated
// cluster shares (their /tmp is their own), as parallel checkpoints need.
inline std::string shared_path(const char* tag) {
  long pid = getpid();
  MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  return std::string(TOROID_TEST_SCRATCH) + "/toroid_test_" + std::to_string(pid) + "_" + tag +
         ".ckpt";
}

}  // namespace toroid::testing
