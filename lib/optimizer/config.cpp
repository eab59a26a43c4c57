#include "optimizer/config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>

#include "toroid/error.hpp"

namespace toroid {

std::string_view to_string(OptimizerKind kind) noexcept {
  switch (kind) {
    case OptimizerKind::sgd:
      return "sgd";
    case OptimizerKind::adam:
      return "adam";
    case OptimizerKind::adamw:
      return "adamw";
    case OptimizerKind::lamb:
      return "lamb";
    case OptimizerKind::lars:
      return "lars";
  }
  return "?";
}

OptimizerKind parse_optimizer_kind(std::string_view name) {
  for (auto k : {OptimizerKind::sgd, OptimizerKind::adam, OptimizerKind::adamw, OptimizerKind::lamb,
                 OptimizerKind::lars})
    if (name == to_string(k)) return k;
  throw InvalidArgument(
      fmt::format("unknown optimizer '{}' (expected sgd, adam, adamw, lamb or lars)", name));
}

Gradient::Gradient(std::string n, std::span<float> g)
    : name(std::move(n)), data(g.data()), count(g.size()), type(DataType::f32) {}
Gradient::Gradient(std::string n, std::span<bfloat16> g)
    : name(std::move(n)), data(g.data()), count(g.size()), type(DataType::bf16) {}

Parameter::Parameter(std::string n, std::span<float> w, std::span<const float> g)
    : name(std::move(n)),
      weights(w),
      grads(g.data()),
      grad_count(g.size()),
      grad_type(DataType::f32) {}
Parameter::Parameter(std::string n, std::span<float> w, std::span<const bfloat16> g)
    : name(std::move(n)),
      weights(w),
      grads(g.data()),
      grad_count(g.size()),
      grad_type(DataType::bf16) {}

}  // namespace toroid

namespace toroid::optimizer {
namespace {

void require(bool ok, std::string_view what, double value, std::string_view rule) {
  if (!ok)
    throw InvalidArgument(fmt::format("ShardedOptimizer: {} is {}, must be {}", what, value, rule));
}

// FNV-1a, 64 bits.
struct Hasher {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
      h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  }
  template <class T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  void text(std::string_view s) { value(s.size()), bytes(s.data(), s.size()); }
};

}  // namespace

void validate(std::span<const Parameter> params, const OptimizerConfig& c) {
  if (params.empty()) throw InvalidArgument("ShardedOptimizer: the parameter list is empty");
  std::map<std::string_view, std::size_t> seen;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    if (p.weights.size() != p.grad_count)
      throw InvalidArgument(
          fmt::format("ShardedOptimizer: parameter {} '{}' has {} weights but {} gradients", i,
                      p.name, p.weights.size(), p.grad_count));
    if (p.grad_type != DataType::f32 && p.grad_type != DataType::bf16)
      throw InvalidArgument(
          fmt::format("ShardedOptimizer: parameter {} '{}' has {} gradients (f32 or bf16 only)", i,
                      p.name, to_string(p.grad_type)));
    if (!p.weights.empty() && (p.weights.data() == nullptr || p.grads == nullptr))
      throw InvalidArgument(
          fmt::format("ShardedOptimizer: parameter {} '{}' has a null buffer", i, p.name));
    if (auto [it, fresh] = seen.emplace(p.name, i); !fresh)
      throw InvalidArgument(
          fmt::format("ShardedOptimizer: parameter name '{}' is used by parameters {} and {}",
                      p.name, it->second, i));
  }
  require(std::isfinite(c.learning_rate) && c.learning_rate >= 0, "learning_rate", c.learning_rate,
          "finite and >= 0");
  require(std::isfinite(c.momentum) && c.momentum >= 0 && c.momentum < 1, "momentum", c.momentum,
          "in [0, 1)");
  require(std::isfinite(c.beta1) && c.beta1 >= 0 && c.beta1 < 1, "beta1", c.beta1, "in [0, 1)");
  require(std::isfinite(c.beta2) && c.beta2 >= 0 && c.beta2 < 1, "beta2", c.beta2, "in [0, 1)");
  require(std::isfinite(c.epsilon) && c.epsilon > 0, "epsilon", c.epsilon, "finite and > 0");
  require(std::isfinite(c.weight_decay) && c.weight_decay >= 0, "weight_decay", c.weight_decay,
          "finite and >= 0");
  require(std::isfinite(c.lars_trust_coefficient) && c.lars_trust_coefficient > 0,
          "lars_trust_coefficient", c.lars_trust_coefficient, "finite and > 0");
  require(std::isfinite(c.max_grad_norm) && c.max_grad_norm >= 0, "max_grad_norm", c.max_grad_norm,
          "finite and >= 0 (0: no clipping)");
  check_bucket_sizes("ShardedOptimizer", c.bucket_bytes, c.first_bucket_bytes);
  if (c.nesterov && c.kind != OptimizerKind::sgd && c.kind != OptimizerKind::lars)
    throw InvalidArgument(fmt::format("ShardedOptimizer: nesterov applies to sgd and lars, not {}",
                                      to_string(c.kind)));
}

void check_learning_rate(double lr, std::int64_t step) {
  if (!std::isfinite(lr) || lr < 0)
    throw InvalidArgument(
        fmt::format("ShardedOptimizer: the learning-rate schedule gave {} at step {}, "
                    "must be finite and >= 0",
                    lr, step));
}

bool matches(std::string_view name, std::string_view pattern) {
  if (pattern.find_first_of("*?") == std::string_view::npos)
    return name.find(pattern) != std::string_view::npos;
  // Iterative glob with one backtrack point (the last `*`): linear in practice, no recursion.
  std::size_t n = 0, p = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++n, ++p;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1, n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool matches_any(std::string_view name, const std::vector<std::string>& patterns) {
  for (const auto& p : patterns)
    if (matches(name, p)) return true;
  return false;
}

std::int64_t parameters_hash(std::span<const Parameter> params) {
  Hasher h;
  for (const auto& p : params) h.text(p.name), h.value(p.weights.size()), h.value(p.grad_type);
  return static_cast<std::int64_t>(h.h);
}

std::int64_t hyper_parameters_hash(const OptimizerConfig& c) {
  Hasher h;
  h.value(c.kind), h.value(c.learning_rate), h.value(c.momentum), h.value(c.nesterov);
  h.value(c.beta1), h.value(c.beta2), h.value(c.epsilon), h.value(c.weight_decay);
  h.value(c.lars_trust_coefficient), h.value(c.max_grad_norm), h.value(c.shard);
  h.value(c.bf16_gradients), h.value(c.average), h.value(c.bucket_bytes),
      h.value(static_cast<bool>(c.schedule));
  h.value(c.first_bucket_bytes), h.value(c.rebuild_buckets);
  for (const auto& s : c.no_weight_decay) h.text(s);
  h.value(std::size_t{0xffff});
  for (const auto& s : c.no_trust_ratio) h.text(s);
  return static_cast<std::int64_t>(h.h);
}

}  // namespace toroid::optimizer

namespace toroid::optimizer {

void validate(std::span<const Gradient> grads, const ReducerConfig& c) {
  if (grads.empty()) throw InvalidArgument("GradientReducer: the gradient list is empty");
  std::map<std::string_view, std::size_t> seen;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Gradient& g = grads[i];
    if (g.name.empty())
      throw InvalidArgument(fmt::format("GradientReducer: gradient {} has an empty name", i));
    if (g.type != DataType::f32 && g.type != DataType::bf16)
      throw InvalidArgument(
          fmt::format("GradientReducer: gradient {} '{}' is {} (f32 or bf16 only)", i, g.name,
                      to_string(g.type)));
    if (g.count > 0 && g.data == nullptr)
      throw InvalidArgument(
          fmt::format("GradientReducer: gradient {} '{}' has a null buffer", i, g.name));
    if (auto [it, fresh] = seen.emplace(g.name, i); !fresh)
      throw InvalidArgument(
          fmt::format("GradientReducer: gradient name '{}' is used by gradients {} and {}", g.name,
                      it->second, i));
  }
  check_bucket_sizes("GradientReducer", c.bucket_bytes, c.first_bucket_bytes);
}

void check_bucket_sizes(std::string_view owner, std::size_t bucket_bytes,
                        std::size_t first_bucket_bytes) {
  constexpr std::size_t most = std::size_t{1} << 30;
  if (bucket_bytes < sizeof(float) || bucket_bytes > most)
    throw InvalidArgument(
        fmt::format("{}: bucket_bytes is {}, must be between 4 and 1 GiB", owner, bucket_bytes));
  if (first_bucket_bytes < sizeof(float) || first_bucket_bytes > most)
    throw InvalidArgument(
        fmt::format("{}: first_bucket_bytes is {}, must be between 4 and 1 GiB (it is capped at "
                    "bucket_bytes)",
                    owner, first_bucket_bytes));
}

std::int64_t gradients_hash(std::span<const Gradient> grads) {
  Hasher h;
  for (const auto& g : grads) h.text(g.name), h.value(g.count), h.value(g.type);
  return static_cast<std::int64_t>(h.h);
}

std::int64_t reducer_config_hash(const ReducerConfig& c) {
  Hasher h;
  h.value(c.bucket_bytes), h.value(c.first_bucket_bytes), h.value(c.bf16), h.value(c.average);
  h.value(c.rebuild_buckets), h.value(c.algorithm.has_value());
  if (c.algorithm) h.value(*c.algorithm);
  return static_cast<std::int64_t>(h.h);
}

}  // namespace toroid::optimizer
