#include "tune/choices.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "measure/measure.hpp"
#include "model/selector.hpp"

namespace toroid::tune {
namespace {

using model::Selector;

constexpr double kKeep = 1.03;

// Every algorithm auto could run for c, and stock.
std::vector<Algorithm> candidates(Collective c) {
  std::vector<Algorithm> out;
  for (Algorithm a : all_algorithms)
    if (a != Algorithm::automatic && implements(a, c)) out.push_back(a);
  return out;
}

// One row's median in microseconds; nullopt on every rank when the algorithm cannot run here
// (an error toroid raises on every rank alike, e.g. a shape it cannot be built on).
std::optional<double> time_row(Collective c, std::uint64_t bytes, Algorithm a, int iters,
                               Communicator& comm) {
  bench::Settings s;
  s.check = false;
  s.warmup = 1;
  s.iters = iters;
  int failed = 0;
  double us = 0;
  try {
    us = bench::measure(c, s, bytes, a, comm).median_us;
  } catch (const InvalidArgument&) {
    failed = 1;
  } catch (const TopologyError&) {
    failed = 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm.mpi_comm());
  if (failed) return std::nullopt;
  return us;
}

}  // namespace

model::MeasuredChoices measure_choices(Communicator& comm, const ChoiceSettings& s, bool report) {
  model::MeasuredChoices out;
  out.layout = comm.tuning_layout();
  const int p = comm.size();
  const int first = Selector::size_class(4), last = Selector::size_class(s.up_to);
  for (Collective c : model::kRuleCollectives) {
    const std::vector<Algorithm> algos = candidates(c);
    Algorithm current = Algorithm::automatic, best = Algorithm::automatic;
    std::uint64_t from = 0, measured_bytes = 0;
    for (int k = first; k <= last; ++k) {
      // The class's middle, as the model prices it, rounded to whole f32 blocks of every rank
      // (small classes of many ranks round to one size: measured once).
      const std::uint64_t bytes =
          std::max<std::uint64_t>(std::min(Selector::class_middle(k), s.up_to) / (4 * p), 1) * 4 *
          p;
      const std::uint64_t low = k == first ? 0 : Selector::class_low(k);
      if (bytes == measured_bytes) continue;
      measured_bytes = bytes;
      // Iterations per round from one untimed look at each candidate: about seconds_per_row.
      std::vector<int> iters(algos.size(), 0);
      std::vector<std::vector<double>> medians(algos.size());
      for (std::size_t i = 0; i < algos.size(); ++i) {
        const std::optional<double> once = time_row(c, bytes, algos[i], 1, comm);
        if (!once) continue;
        iters[i] = static_cast<int>(std::clamp(s.seconds_per_row / (*once * 1e-6), 3.0, 200.0));
      }
      for (int round = 0; round < s.rounds; ++round)
        for (std::size_t i = 0; i < algos.size(); ++i)
          if (iters[i] > 0)
            if (const auto t = time_row(c, bytes, algos[i], iters[i], comm))
              medians[i].push_back(*t);
      best = Algorithm::automatic;
      double best_us = std::numeric_limits<double>::infinity();
      std::string line;
      for (std::size_t i = 0; i < algos.size(); ++i) {
        if (medians[i].empty()) continue;
        std::sort(medians[i].begin(), medians[i].end());
        const double us = medians[i][medians[i].size() / 2];
        line += fmt::format(" {} {:.2f}", to_string(algos[i]), us);
        if (us < best_us) best_us = us, best = algos[i];
      }
      if (best == Algorithm::automatic) continue;  // nothing ran (cannot happen: stock runs)
      // The previous class's winner stays while within kKeep of the best: candidates that run
      // the same schedule here (ring and torus2d on 2x1) trade places by noise alone, and the
      // ranges stay few.
      for (std::size_t i = 0; i < algos.size(); ++i)
        if (algos[i] == current && !medians[i].empty() &&
            medians[i][medians[i].size() / 2] <= kKeep * best_us)
          best = current;
      if (report && comm.rank() == 0)
        fmt::print("toroid-tune: {} {} B: {} (us:{})\n", to_string(c), bytes, to_string(best),
                   line);
      if (best != current) {
        if (current != Algorithm::automatic) out.rules.push_back({c, from, low, current, ""});
        current = best;
        from = low;
      }
    }
    if (current != Algorithm::automatic)
      out.rules.push_back({c, from, Selector::class_low(last + 1), current, ""});
  }
  for (model::AlgorithmRule& r : out.rules)
    r.text =
        fmt::format("{}:{}-{}={}", to_string(r.collective), r.low, r.high, to_string(r.algorithm));
  return out;
}

}  // namespace toroid::tune
