// A schedule reduced to what the simulator needs: per step its kind, peer, tag and bytes, and
// where each phase begins. 16 bytes a step (a Step is ~70), so 4096 ranks of `ring` fit.
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/step.hpp"

namespace toroid::exec::sim {

enum class OpKind : std::uint8_t { send, recv, recv_reduce, local };

struct Op {
  std::uint64_t bytes = 0;
  std::int32_t peer = -1;
  std::uint16_t tag = 0;
  OpKind kind = OpKind::local;
  bool phase_begins = false;  // first op of its phase
};
static_assert(sizeof(Op) == 16);

struct Program {
  std::vector<Op> ops;
  std::vector<std::uint32_t> phase_numbers;  // kept for rank 0 only (its per-phase breakdown)
};

// Throws InvalidArgument for a tag outside 0..65535 or steps out of phase order.
Program compile(const schedule::Schedule& s, std::size_t elem_size, bool keep_phase_numbers);

}  // namespace toroid::exec::sim
