// Calibration.
//
//   one-way time t(n) = rtt(n) / 2 of an MPI_Send/MPI_Recv ping-pong of n bytes (median)
//   fit  t(n) = alpha + n / beta  by least squares on the relative error (weights 1/t^2), so
//        small messages pin alpha and large ones beta
//   reducer: the f32 sum kernel on rank 0, bytes of one operand reduced per second
//
// The fitted model is one hop of latency alpha and bandwidth beta per link direction, on the
// shapes toroid-bench runs (2 ranks: 2x1, 4 ranks: 2x2), with toroid-bench's count rounding.
#include "sim/calibrate.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "sim/fit.hpp"

namespace toroid::sim_cli {
namespace {

double ping_pong(int rank, std::vector<char>& buf, std::size_t n, int iters) {
  std::vector<double> times;
  for (int it = 0; it < iters + 2; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf.data(), static_cast<int>(n), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), static_cast<int>(n), MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf.data(), static_cast<int>(n), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), static_cast<int>(n), MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
    if (it >= 2) times.push_back((MPI_Wtime() - t0) / 2);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// (ranks, algo, bytes) -> median time in us, from toroid-bench CSV (ranks from its '#' header).
using Measured = std::map<std::tuple<int, std::string, std::uint64_t>, double>;

void read_bench_csv(const std::string& path, Measured& into) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument(fmt::format("--compare: cannot read '{}'", path));
  int ranks = 0;
  std::vector<std::string> cols;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) {
      std::istringstream ss(line.substr(1));
      // "ranks 4" in the run header (other lines say "4 ranks per node").
      for (std::string k, v; ss >> k;)
        if (k == "ranks" && ranks == 0 && ss >> v && !v.empty() &&
            std::isdigit(static_cast<unsigned char>(v[0])))
          ranks = std::stoi(v);
      continue;
    }
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string item; std::getline(ss, item, ',');) f.push_back(item);
    if (cols.empty()) {
      cols = f;
      continue;
    }
    auto at = [&](const char* name) -> std::string {
      const auto it = std::find(cols.begin(), cols.end(), name);
      const auto i = static_cast<std::size_t>(it - cols.begin());
      return it == cols.end() || i >= f.size() ? "" : f[i];
    };
    if (at("collective") != "allreduce" || at("size").empty()) continue;
    try {
      into[{ranks, at("algo"), std::stoull(at("size"))}] = std::stod(at("time_us"));
    } catch (const std::exception&) {
      throw InvalidArgument(fmt::format("--compare: '{}': unreadable row '{}'", path, line));
    }
  }
  if (cols.empty() || ranks == 0)
    throw InvalidArgument(
        fmt::format("--compare: '{}' is not toroid-bench CSV (--format csv)", path));
}

}  // namespace

int run_calibration(int argc, char** argv, const CommandLine& o, std::FILE* out) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0)
      fmt::print(
          stderr,
          "toroid-sim: --calibrate needs exactly 2 ranks (scripts/mpirun.sh -np 2 toroid-sim "
          "--calibrate), got {}\n",
          size);
    MPI_Finalize();
    return 2;
  }
  Measured measured;
  int bad = 0;
  if (rank == 0) {
    try {
      for (const std::string& f : o.compare) read_bench_csv(f, measured);
    } catch (const InvalidArgument& ex) {
      fmt::print(stderr, "toroid-sim: {}\n", ex.what());
      bad = 1;
    }
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (bad) {
    MPI_Finalize();
    return 2;
  }
  std::vector<char> buf(o.calibrate_max, 1);
  std::vector<std::pair<double, double>> pts;
  for (std::size_t n = 8; n <= o.calibrate_max; n *= 4)
    pts.push_back({double(n), ping_pong(rank, buf, n, o.calibrate_iters)});
  MPI_Barrier(MPI_COMM_WORLD);
  const double reduce = rank == 0 ? reduce_throughput() : 0.0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const Fit f = fit(pts);
    // Messages past the caches run at memory speed: a second fit on those alone shows how much
    // of a large-size miss is the cache/DRAM step that one bandwidth cannot describe.
    std::vector<std::pair<double, double>> large;
    for (auto pt : pts)
      if (pt.first >= (1 << 20)) large.push_back(pt);
    const Fit fl = large.size() >= 2 ? fit(large) : f;
    fmt::print(
        out,
        "# ping-pong between 2 ranks, one-way time (median of {}), fit t(n) = alpha + n/beta\n",
        o.calibrate_iters);
    fmt::print(out, "{:>12}{:>14}{:>14}{:>8}\n", "bytes", "measured(us)", "fit(us)", "fit/m");
    for (auto [n, t] : pts) {
      const double ft = f.alpha_s + n / f.beta_bytes_per_s;
      fmt::print(out, "{:>12}{:>14.2f}{:>14.2f}{:>8.2f}\n", static_cast<std::uint64_t>(n), t * 1e6,
                 ft * 1e6, ft / t);
    }
    fmt::print(out,
               "# alpha {:.3f} us, beta {:.3f} GB/s, f32 sum kernel {:.3f} GB/s (one operand)\n",
               f.alpha_s * 1e6, f.beta_bytes_per_s / 1e9, reduce / 1e9);
    fmt::print(out,
               "# as toroid-sim options: --hop-us {:.3f} --link-gbps {:.3f} --reduce-gbps {:.3f}\n",
               f.alpha_s * 1e6, f.beta_bytes_per_s / 1e9, reduce / 1e9);
    fmt::print(out, "# messages >= 1 MiB alone: beta {:.3f} GB/s (column 'pred_1M+')\n\n",
               fl.beta_bytes_per_s / 1e9);

    fmt::print(
        out,
        "# predicted toroid-bench all-reduce (f32, count rounded to a multiple of the ranks)\n");
    fmt::print(out, "{:>6}{:>9}{:>13}{:>11}{:>15}{:>15}{:>10}{:>12}{:>10}\n", "ranks", "shape",
               "algo", "bytes", "predicted(us)", "measured(us)", "m/p", "pred_1M+", "m/p_1M+");
    for (int np : {2, 4}) {
      model::SimModel m;
      m.topology = np == 2 ? Torus2D(2, 1) : Torus2D(2, 2);
      m.link_bytes_per_s[0] = m.link_bytes_per_s[1] = f.beta_bytes_per_s;
      m.hop_latency_s[0] = m.hop_latency_s[1] = f.alpha_s;
      m.reduce_bytes_per_s = reduce;
      m.segment_bytes = o.model.segment_bytes;
      model::SimModel ml = m;
      ml.link_bytes_per_s[0] = ml.link_bytes_per_s[1] = fl.beta_bytes_per_s;
      for (Algorithm a : {Algorithm::ring, Algorithm::bidir_ring, Algorithm::torus2d})
        for (std::uint64_t bytes = 4096; bytes <= (64ull << 20); bytes *= 4) {
          schedule::Spec r;
          r.count = std::max<std::uint64_t>(bytes / 4 / np, 1) * np;  // as toroid-bench rounds
          const model::SimResult s = model::simulate_collective(m, a, r, DataType::f32);
          const model::SimResult sl = model::simulate_collective(ml, a, r, DataType::f32);
          const auto it = measured.find({np, std::string(to_string(a)), r.count * 4});
          const bool have = it != measured.end();
          fmt::print(out, "{:>6}{:>9}{:>13}{:>11}{:>15.2f}{:>15}{:>10}{:>12.2f}{:>10}\n", np,
                     m.topology.to_string(), to_string(a), r.count * 4, s.time_s * 1e6,
                     have ? fmt::format("{:.2f}", it->second) : "-",
                     have ? fmt::format("{:.2f}", it->second / (s.time_s * 1e6)) : "-",
                     sl.time_s * 1e6,
                     have ? fmt::format("{:.2f}", it->second / (sl.time_s * 1e6)) : "-");
        }
    }
  }
  MPI_Finalize();
  return 0;
}

}  // namespace toroid::sim_cli
