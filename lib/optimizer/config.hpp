// Checking an optimizer's parameters and configuration, and the name patterns that exclude
// tensors from weight decay and layer adaptation.
#pragma once

#include <string_view>
#include <vector>

#include "toroid/gradient_reducer.hpp"
#include "toroid/optimizer.hpp"

namespace toroid::optimizer {

// Throws InvalidArgument naming the parameter or setting and its value.
void validate(std::span<const Parameter> params, const OptimizerConfig& config);
// A learning rate from the schedule that is NaN, infinite or negative raises InvalidArgument.
void check_learning_rate(double lr, std::int64_t step);

// Glob match (`*` any run, `?` one character) of the whole name; a pattern without wildcards
// matches every name that contains it ("bias" matches "fc1.bias").
bool matches(std::string_view name, std::string_view pattern);
bool matches_any(std::string_view name, const std::vector<std::string>& patterns);

// The same for a GradientReducer.
void validate(std::span<const Gradient> grads, const ReducerConfig& config);
// Both between 4 bytes and 1 GiB; InvalidArgument starting with `owner` otherwise.
void check_bucket_sizes(std::string_view owner, std::size_t bucket_bytes,
                        std::size_t first_bucket_bytes);

// Hashes of everything every rank must agree on, for require_agreement.
std::int64_t parameters_hash(std::span<const Parameter> params);
std::int64_t hyper_parameters_hash(const OptimizerConfig& config);
std::int64_t gradients_hash(std::span<const Gradient> grads);
std::int64_t reducer_config_hash(const ReducerConfig& config);

}  // namespace toroid::optimizer
