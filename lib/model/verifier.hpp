// In-process verifier: runs every rank's schedule in one process on real data.
//
// It runs the schedules as the engine does, as a dataflow: a step runs once the steps it waits
// for (its dependencies) have finished and it is the next step on its channel (direction, peer,
// tag); a transfer runs when both its send and its receive can (MPI's strictest, rendezvous,
// semantics), so a send is never assumed to be buffered. Reported: a size mismatch, a step that
// reads or writes outside its buffer, two steps of one phase that touch the same memory while
// one of them writes, a dependency that is missing (two steps of different phases conflict and
// nothing orders them) or wrong (a `follow` the executors could not pipeline), and deadlock
// (with each stuck rank's first waiting step).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "schedule/step.hpp"
#include "toroid/types.hpp"

namespace toroid::model {

struct RankMemory {
  std::vector<std::byte> input;  // unused when in place (input aliases output)
  std::vector<std::byte> output;
  bool in_place = false;
};

struct Traffic {
  std::set<std::pair<int, int>> links;  // (sender, receiver) pairs that exchanged data
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
};

// Runs the schedules (index = rank) over `memory`. Returns "" on success, else what went wrong.
std::string execute_in_process(const std::vector<schedule::Schedule>& schedules,
                               std::vector<RankMemory>& memory, DataType type, ReduceOp op,
                               Traffic* traffic = nullptr);

// Builds every rank's schedule with `build(rank)`, runs it on inputs whose exact result is
// known (small integers), and compares every rank's output with a directly computed reference.
// `count` is the full vector length (for allgather: the gathered length). Returns "" when right.
struct CheckSpec {
  schedule::Collective collective = schedule::Collective::allreduce;
  int nranks = 1;
  std::uint64_t count = 0;
  bool in_place = false;
  DataType type = DataType::i64;
  ReduceOp op = ReduceOp::sum;
  int root = 0;  // broadcast: a place in each group
  // The groups that each run the collective on their own (a collective along axes:
  // Torus::group_along), each listed in its members' order, which is their block order; every
  // rank in one. Empty: one group, every rank in rank order.
  std::vector<std::vector<int>> groups;
};
std::string check_collective(const CheckSpec& spec,
                             const std::function<schedule::Schedule(int rank)>& build,
                             Traffic* traffic = nullptr);

}  // namespace toroid::model
