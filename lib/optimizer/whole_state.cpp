#include "optimizer/whole_state.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mpi_base/agreement.hpp"
#include "toroid/collectives.hpp"
#include "toroid/error.hpp"

namespace toroid {
namespace optimizer {

std::vector<float> whole_array(const ShardedOptimizer::Impl& s, const Layout& layout,
                               std::span<const float> part_array) {
  const std::vector<std::size_t> starts = s.registration_starts();
  std::vector<float> whole(layout.total, 0.0f);
  for (const auto& b : layout.buckets)
    for (const auto& piece : b.own)
      std::copy_n(part_array.data() + b.state_offset + piece.offset, piece.count,
                  whole.data() + starts[piece.tensor] + piece.tensor_offset);
  if (s.sharded()) allreduce(std::span<float>(whole), ReduceOp::sum, s.comm);
  return whole;
}

void place_array(const ShardedOptimizer::Impl& s, const Layout& layout,
                 std::span<const float> whole, std::vector<float>& part_array) {
  const std::vector<std::size_t> starts = s.registration_starts();
  part_array.assign(layout.state_elements, 0.0f);
  for (const auto& b : layout.buckets)
    for (const auto& piece : b.own)
      std::copy_n(whole.data() + starts[piece.tensor] + piece.tensor_offset, piece.count,
                  part_array.data() + b.state_offset + piece.offset);
}

}  // namespace optimizer

std::vector<std::string> state_names(OptimizerKind kind) {
  if (kind == OptimizerKind::sgd || kind == OptimizerKind::lars) return {"momentum"};
  return {"exp_avg", "exp_avg_sq"};
}

OptimizerState ShardedOptimizer::state() const {
  const Impl& s = *impl_;
  OptimizerState out;
  out.steps = s.steps;
  out.names = state_names(s.config.kind);
  for (const auto& array : s.state)
    out.arrays.push_back(optimizer::whole_array(s, s.layout(), array));
  return out;
}

void ShardedOptimizer::set_state(const OptimizerState& state) {
  Impl& s = *impl_;
  toroid::run_agreed(s.comm.mpi_comm(), [&] {
    const std::vector<std::string> names = state_names(s.config.kind);
    if (state.arrays.size() != names.size())
      throw InvalidArgument(
          fmt::format("ShardedOptimizer::set_state on rank {}: {} state arrays, {} keeps {} ({})",
                      s.comm.rank(), state.arrays.size(), to_string(s.config.kind), names.size(),
                      fmt::join(names, ", ")));
    if (!state.names.empty() && state.names != names)
      throw InvalidArgument(
          fmt::format("ShardedOptimizer::set_state on rank {}: state arrays named {}, {} keeps {}",
                      s.comm.rank(), fmt::join(state.names, ", "), to_string(s.config.kind),
                      fmt::join(names, ", ")));
    for (std::size_t a = 0; a < names.size(); ++a)
      if (state.arrays[a].size() != s.layout().total)
        throw InvalidArgument(fmt::format(
            "ShardedOptimizer::set_state on rank {}: state array '{}' has {} elements, the "
            "parameters {}",
            s.comm.rank(), names[a], state.arrays[a].size(), s.layout().total));
    if (state.steps < 0)
      throw InvalidArgument(fmt::format("ShardedOptimizer::set_state on rank {}: steps is {}",
                                        s.comm.rank(), state.steps));
  });
  s.steps = state.steps;
  for (std::size_t a = 0; a < s.state.size(); ++a)
    optimizer::place_array(s, s.layout(), state.arrays[a], s.state[a]);
}

}  // namespace toroid
