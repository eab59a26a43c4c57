#include "sim/fit.hpp"

#include <algorithm>
#include <chrono>

#include "kernels/reduce.hpp"

namespace toroid::sim_cli {

Fit fit(const std::vector<std::pair<double, double>>& pts) {
  double sw = 0, sn = 0, snn = 0, st = 0, snt = 0;
  for (auto [n, t] : pts) {
    const double w = 1.0 / (t * t);
    sw += w, sn += w * n, snn += w * n * n, st += w * t, snt += w * n * t;
  }
  const double det = sw * snn - sn * sn;
  const double gamma = (sw * snt - sn * st) / det, alpha = (st - gamma * sn) / sw;
  return {std::max(alpha, 0.0), gamma > 0 ? 1.0 / gamma : 1e12};
}

double reduce_throughput() {
  const std::size_t n = 4u << 20;  // 16 MiB of f32 per operand
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  const auto fn = kernels::reduce_fn(DataType::f32, ReduceOp::sum);
  double best = 1e30;
  for (int i = 0; i < 7; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn(c.data(), a.data(), b.data(), n);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return static_cast<double>(n * sizeof(float)) / best;
}

}  // namespace toroid::sim_cli
