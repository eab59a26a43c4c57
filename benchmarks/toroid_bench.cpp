// toroid-bench: times toroid's collectives against the stock MPI collective of the same MPI,
// on the same ranks, in the same run.
//
//   mpirun -np 4 toroid-bench --topology 2x2 --algo all -b 4K -e 64M -f 4
//
// Each iteration starts after a barrier; its time is the slowest rank's; the median over
// iterations is reported. vs_mpi = stock time / this algorithm's time (> 1: toroid is faster).
// Exit status: 0 ok, 1 some element was wrong, 2 bad input (on every rank).
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "bench/report.hpp"
#include "kernels/table.hpp"
#include "measure/measure.hpp"
#include "measure/settings.hpp"

using namespace toroid;
using namespace toroid::bench;

namespace {

// What the library runs for the row (Communicator::plan: the call's own rule), and auto's model
// of it: the algorithm, or the node path ("staged", "single_copy", "remote_reads") where auto's
// call goes through the node's control block, which the model does not price.
void predict(Row& row, Collective c, Algorithm a, Communicator& comm, Settings::Memory memory,
             std::optional<Axes> axes, bool varying) {
  CallQuery q;
  q.collective = c;
  q.count = row.count;
  q.type = parse_data_type(row.type);
  q.algorithm = a;
  q.axes = axes;
  q.toroid_buffers = memory == Settings::Memory::toroid;
  q.varying_blocks = varying;
  const CallPlan plan = comm.plan(q);
  row.picked = plan.path == CallPath::schedule || plan.path == CallPath::stock
                   ? std::string(to_string(plan.algorithm))
                   : std::string(to_string(plan.path));
  if (plan.predicted_seconds) row.predicted_us = *plan.predicted_seconds * 1e6;
}

int run(const Settings& s, int rank) {
  // One communicator per transport (each has its own shared-memory channels, or none).
  std::vector<std::unique_ptr<Communicator>> comms;
  for (Transport t : s.transports) {
    Options o;
    o.topology = s.topology;
    o.transport = t;
    // The option wins; without it TOROID_TIMEOUT applies (the library reads it), and without
    // either the benchmark still never hangs for good.
    if (s.timeout_s)
      o.timeout_seconds = *s.timeout_s;
    else if (!setting_from_environment("TOROID_TIMEOUT"))
      o.timeout_seconds = Settings::kDefaultTimeoutS;
    comms.push_back(std::make_unique<Communicator>(MPI_COMM_WORLD, o));
  }
  Communicator& comm = *comms.front();
  const RunInfo info = describe_run(s, comms);
  std::FILE* out = stdout;
  if (rank == 0 && !s.output.empty()) {
    out = std::fopen(s.output.c_str(), "w");
    if (!out) {
      fmt::print(stderr, "toroid-bench: --output: cannot open '{}' for writing\n", s.output);
      out = stdout;
    }
  }
  // The results as --format says, and with --csv the same rows as CSV besides.
  std::vector<Report> reports{Report(out, s.format)};
  std::FILE* csv = nullptr;
  if (rank == 0 && !s.csv.empty()) {
    csv = std::fopen(s.csv.c_str(), "w");
    if (!csv)
      fmt::print(stderr, "toroid-bench: --csv: cannot open '{}' for writing\n", s.csv);
    else
      reports.emplace_back(csv, "csv");
  }
  if (rank == 0)
    for (Report& r : reports) r.begin(info, s.iters);
  const bool progress =
      rank == 0 && isatty(STDERR_FILENO) && (out != stdout || !isatty(STDOUT_FILENO));
  std::size_t total = 0, done = 0;
  for (std::uint64_t b = s.min_bytes; b <= s.max_bytes; b *= s.factor) {
    total += s.ops.size() * s.algos.size();
    if (b > UINT64_MAX / s.factor) break;
  }
  std::uint64_t wrong = 0;
  const kernels::Isa default_isa = kernels::active_kernels().isa;
  for (Collective c : s.ops)
    for (std::uint64_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= s.factor) {
      double stock_us = 0;
      // The copy bound first, so that every row can say how close it comes.
      std::optional<Row> bound;
      if (s.bound) bound = measure_copy_bound(c, s, bytes, comm);
      // Every row of this size: (algorithm, transport, mode, memory, kernel level).
      struct Spec {
        Algorithm a;
        std::size_t t;
        Settings::Mode mode;
        Settings::Memory memory;
        std::string level;
      };
      std::vector<Spec> specs;
      for (Algorithm a : s.algos) {
        if (!implements(a, c)) continue;  // e.g. rabenseifner: all-reduce only
        // The stock collective runs once; toroid's algorithms once per requested kernel level.
        const std::vector<std::string> levels =
            a == Algorithm::mpi || s.isas.empty() ? std::vector<std::string>{""} : s.isas;
        const std::size_t transports = a == Algorithm::mpi ? 1 : comms.size();
        const std::vector<Settings::Mode> modes =
            a == Algorithm::mpi ? std::vector<Settings::Mode>{Settings::Mode::blocking} : s.modes;
        const std::vector<Settings::Memory> memories =
            a == Algorithm::mpi ? std::vector<Settings::Memory>{Settings::Memory::user}
                                : s.memories;
        for (std::size_t t = 0; t < transports; ++t)
          for (Settings::Mode mode : modes)
            for (Settings::Memory memory : memories)
              for (const std::string& level : levels) specs.push_back({a, t, mode, memory, level});
      }
      // --rounds: the rows take turns, each timed once per round; a row reports the median of
      // its rounds' medians, so a slow spell of the machine hits every row alike.
      std::vector<std::vector<Row>> rounds(specs.size());
      for (int round = 0; round < s.rounds; ++round)
        for (std::size_t i = 0; i < specs.size(); ++i) {
          const Spec& sp = specs[i];
          if (round == 0) ++done;
          if (progress)
            fmt::print(stderr, "\r[{}/{}] {} {} B {}        ", done, total, to_string(c), bytes,
                       to_string(sp.a));
          // The stock row runs with the default level too (its f16/bf16 MPI_Ops use toroid's
          // kernels).
          kernels::use_isa(sp.level.empty() ? default_isa : kernels::select_isa(sp.level));
          rounds[i].push_back(measure(c, s, bytes, sp.a, *comms[sp.t], sp.mode, sp.memory));
        }
      // The stock row's rounds, for each row's range of per-round ratios.
      const std::vector<Row>* stock_rounds = nullptr;
      for (std::size_t i = 0; i < specs.size(); ++i)
        if (specs[i].a == Algorithm::mpi) stock_rounds = &rounds[i];
      for (std::size_t i = 0; i < specs.size(); ++i) {
        const Spec& sp = specs[i];
        const Algorithm a = sp.a;
        kernels::use_isa(sp.level.empty() ? default_isa : kernels::select_isa(sp.level));
        Row row = median_of_rounds(rounds[i]);
        if (stock_rounds && s.rounds > 1) {
          row.vs_mpi_low = std::numeric_limits<double>::infinity();
          for (std::size_t r = 0; r < rounds[i].size(); ++r) {
            const double ratio = (*stock_rounds)[r].median_us / rounds[i][r].median_us;
            row.vs_mpi_low = std::min(row.vs_mpi_low, ratio);
            row.vs_mpi_high = std::max(row.vs_mpi_high, ratio);
          }
        }
        predict(row, c, a, *comms[sp.t], sp.memory, s.axes,
                s.alltoallv && c == Collective::alltoall);
        if (comms.size() > 1 && a != Algorithm::mpi)
          row.algo = fmt::format("{}/{}", row.algo, to_string(s.transports[sp.t]));
        if (s.modes.size() > 1 && a != Algorithm::mpi)
          row.algo = fmt::format("{}:{}", row.algo, to_string(sp.mode));
        if (sp.memory == Settings::Memory::toroid && a != Algorithm::mpi) row.algo += "+owned";
        if (!sp.level.empty())
          row.algo =
              fmt::format("{}@{}", row.algo, kernels::to_string(kernels::active_kernels().isa));
        if (a == Algorithm::mpi) stock_us = row.median_us;
        row.vs_mpi = stock_us > 0 ? stock_us / row.median_us : 0.0;
        if (bound) row.of_copy = bound->median_us / row.median_us;
        wrong += row.wrong;
        if (rank == 0)
          for (Report& r : reports) r.row(row, stock_us > 0);
      }
      if (bound) {
        bound->vs_mpi = stock_us > 0 ? stock_us / bound->median_us : 0.0;
        bound->of_copy = 1.0;
        if (rank == 0)
          for (Report& r : reports) r.row(*bound, stock_us > 0);
      }
      if (bytes > UINT64_MAX / s.factor) break;
    }
  if (progress) fmt::print(stderr, "\r{:60}\r", "");
  if (rank == 0) {
    for (Report& r : reports) r.end();
    if (out != stdout) std::fclose(out);
    if (csv) std::fclose(csv);
  }
  if (wrong > 0 && rank == 0) fmt::print(stderr, "toroid-bench: {} wrong elements\n", wrong);
  return wrong > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  try {
    bool help = false;
    std::string help_text;
    const Settings s = parse_settings(argc, argv, help, help_text);
    if (help) {
      if (rank == 0) std::cout << help_text;
    } else {
      status = run(s, rank);
    }
  } catch (const Error& e) {
    // Every rank parsed the same arguments and agreed on the communicator, so every rank is
    // here; rank 0 speaks for all of them.
    if (rank == 0) fmt::print(stderr, "toroid-bench: {}\n", e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}
