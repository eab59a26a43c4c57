// toroid-sim --calibrate: fit the model to this machine from an MPI ping-pong between 2 ranks,
// then predict toroid-bench's all-reduce at 2 and 4 ranks (and set measured CSVs beside them).
#pragma once

#include <cstdio>

#include "sim/options.hpp"

namespace toroid::sim_cli {

// Initialises and finalises MPI itself. Returns the exit status (2: not run on 2 ranks).
int run_calibration(int argc, char** argv, const CommandLine& o, std::FILE* out);

}  // namespace toroid::sim_cli
