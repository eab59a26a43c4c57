// Fitting t(n) = alpha + n / bandwidth to measured times, and the reduction kernel's throughput:
// shared by toroid-sim --calibrate and toroid-tune.
#pragma once

#include <utility>
#include <vector>

namespace toroid::sim_cli {

struct Fit {
  double alpha_s, beta_bytes_per_s;
};

// Least squares on the relative error (weights 1/t^2), so small messages pin alpha and large
// ones the bandwidth. pts: (bytes, seconds).
Fit fit(const std::vector<std::pair<double, double>>& pts);

// The f32 sum kernel on 16 MiB operands: bytes of one operand reduced per second (best of 7).
double reduce_throughput();

}  // namespace toroid::sim_cli
