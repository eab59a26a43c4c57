// A schedule reduced to what the simulator needs: per step its kind, peer, tag, bytes and what
// it waits for (the schedule's dependencies). 24 bytes a step plus 4 a dependency (a Step is
// ~80), so 4096 ranks of `ring` (8190 steps each) fit in about 1 GB.
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/step.hpp"
#include "schedule/wait_graph.hpp"

namespace toroid::exec::sim {

enum class OpKind : std::uint8_t { send, recv, recv_reduce, local };

struct Op {
  std::uint64_t bytes = 0;
  std::int32_t peer = -1;
  std::uint16_t tag = 0;
  OpKind kind = OpKind::local;
  std::uint32_t dep_begin = 0;  // Program::deps[dep_begin, + dep_count)
  std::uint16_t dep_count = 0;
};
static_assert(sizeof(Op) == 24);

// A dependency: the earlier op's index, with kFollow set for a segment-by-segment one (the same
// bit the wait graph marks such waiters with).
inline constexpr std::uint32_t kFollow = schedule::WaitGraph::kFollow;

struct Program {
  std::vector<Op> ops;
  std::vector<std::uint32_t> deps;
  std::vector<std::uint32_t>
      phase_numbers;  // per op, kept for rank 0 only (its per-phase breakdown)
};

// Throws InvalidArgument for a tag outside 0..65535, steps out of phase order, or more than
// 65535 dependencies on one step.
Program compile(const schedule::Schedule& s, std::size_t elem_size, bool keep_phase_numbers);

}  // namespace toroid::exec::sim
