// Which path a call takes and which algorithm it runs: the one rule that prepare()
// (collectives.cpp) follows for every call and Communicator::plan() reports (toroid-bench's rows,
// the tests).
#pragma once

#include <cstdint>
#include <optional>

#include "api/communicator_impl.hpp"
#include "toroid/call_plan.hpp"

namespace toroid::api {

// Whether axes name the whole communicator (their sub-torus is every rank): a call along them is
// the communicator's own (auto and the node paths as for any call).
inline bool spans_communicator(const Communicator::Impl& m, const Axes& axes) {
  return !axes.empty() && m.topology.along(axes).chips() == m.size;
}

// Whether a call may go through the node's control block: `auto`, over the whole communicator
// (no axes), every rank on this node and the block set up, not a broadcast, and something to
// move (an alltoallv may have nothing on this rank and still take part). Which of the block's
// paths it takes is exec::node_path's, from the count and whose memory the buffers are.
bool node_path_possible(const Communicator::Impl& m, Collective c, Algorithm a, bool along_axes,
                        std::uint64_t count, bool varying);

// The algorithm a call on the schedule (or stock) path runs: a named one as asked; `auto` by the
// communicator's model for `bytes` (the whole vector's), along axes by the group's (made at the
// first such call); an alltoallv's `auto` is direct, its one schedule (the model prices equal
// blocks).
Algorithm schedule_algorithm(Communicator::Impl& m, Collective c, std::uint64_t bytes, Algorithm a,
                             const std::optional<Axes>& axes, bool varying);

// Both, and the model's price of the schedule: Communicator::plan.
CallPlan plan_call(Communicator::Impl& m, const CallQuery& q);

}  // namespace toroid::api
