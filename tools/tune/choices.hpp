// toroid-tune's measured choices: what `auto` runs on this very layout, measured rather than
// modeled, stock MPI among the candidates.
//
//   per collective (all-reduce, reduce-scatter, all-gather, broadcast) and size class
//   [2^(k-1), 2^k) from 4 B up to --choose-up-to:
//     every algorithm that implements the collective here, and `mpi`, timed at the class's
//     middle size as toroid-bench times a row (a barrier, the slowest rank, the median), in
//     `rounds` interleaved rounds so a slow spell of the machine hits every candidate alike;
//     the least median of the rounds' medians wins the class (the previous class's winner
//     stays while within 3% of it)
//   adjacent classes with one winner join into a range:
//     choose 2 ranks, 2x1, 1 node(s), shm = allreduce:0-12=mpi,12-3K=recursive_doubling,...
#pragma once

#include <cstdint>
#include <string>

#include "model/tuning.hpp"
#include "toroid/toroid.hpp"

namespace toroid::tune {

struct ChoiceSettings {
  std::uint64_t up_to = 64u << 20;  // the largest size measured (its class included)
  int rounds = 3;
  double seconds_per_row = 0.02;  // the iterations of one row in one round take about this long
};

// Collective over `comm`; every rank returns the same choices, for comm's layout
// (Selector::layout). Rank 0 prints one line per size class and collective when `report`.
model::MeasuredChoices measure_choices(Communicator& comm, const ChoiceSettings& s, bool report);

}  // namespace toroid::tune
