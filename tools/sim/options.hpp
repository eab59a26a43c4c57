// toroid-sim's command line: the machine model (preset, then per-option overrides), what to
// simulate, and how to print it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/simulator.hpp"
#include "toroid/toroid.hpp"

namespace toroid::sim_cli {

struct CommandLine {
  model::SimModel model;
  std::string preset;
  int chips_per_node = 0;  // hierarchical: consecutive chips per node; 0 = one row (X chips)
  std::vector<Collective> ops;
  std::vector<Algorithm> algos;
  bool every_algorithm = false;      // --algo all: those that cannot run on the shape are skipped
  std::optional<Axes> axes;          // --axes: every row along these, each sub-torus on its own
  std::vector<std::uint64_t> sizes;  // bytes
  DataType type = DataType::f32;
  std::string format = "table";
  std::string output;
  bool phases = false;  // rank 0's per-phase breakdown too
  std::string links;    // set: every link direction's bytes and busy time of every row, as CSV
  std::string trace;    // set: the one row's timeline (model/timeline.hpp), Chrome trace JSON
  // --calibrate (under mpirun -np 2)
  bool calibrate = false;
  std::uint64_t calibrate_max = 64ull << 20;
  int calibrate_iters = 20;
  std::vector<std::string> compare;  // toroid-bench CSV files to set against the predictions
};

// Throws InvalidArgument naming the option and its value (the caller exits with status 2).
// Sets `help` and `help_text` for --help.
CommandLine parse_options(int argc, char** argv, bool& help, std::string& help_text);

// The node of every chip for the hierarchical algorithm.
std::vector<int> nodes_of(const CommandLine& o);

}  // namespace toroid::sim_cli
