// ShardedOptimizer::save and ::load: seconds and MB/s of the file, repeated, warm and cold.
//
//   mpirun -np 4 toroid-checkpoint-bench --mb 100 --path /var/tmp/ck --repeat 3 [--cold on]
//
// The model is 8 tensors holding `--mb` MB of f32 weights with Adam's two state arrays (a file
// of 3 × mb), after one step so that the state is not zero. A save is timed from a barrier to
// the end of the call on the slowest rank: it includes the checksums, the writes, the fsync and
// the rename. With --cold on, rank 0 drops the page cache before each load (root only). Uses
// only the public API, so the same source times any build of the library.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "toroid/toroid.hpp"

namespace {

struct CommandLine {
  double mb = 100;
  std::string path = "toroid-checkpoint-bench.ckpt";
  int repeat = 3;
  bool cold = false;
};

CommandLine parse(int argc, char** argv) {
  CommandLine o;
  for (int i = 1; i < argc; i += 2) {
    const std::string opt = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(opt + ": missing value");
    const std::string v = argv[i + 1];
    if (opt == "--mb")
      o.mb = std::stod(v);
    else if (opt == "--path")
      o.path = v;
    else if (opt == "--repeat")
      o.repeat = std::stoi(v);
    else if (opt == "--cold")
      o.cold = v == "on";
    else
      throw std::invalid_argument("unknown option '" + opt +
                                  "' (--mb MB --path FILE --repeat N --cold on|off)");
  }
  if (!(o.mb > 0) || o.repeat < 1)
    throw std::invalid_argument("--mb must be > 0 and --repeat >= 1");
  return o;
}

// Seconds of f() on the slowest rank, started together.
template <class F>
double timed(F f) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  f();
  double mine = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

void drop_caches(int rank) {
  if (rank == 0) {
    std::fflush(nullptr);
    std::system("sync");
    std::ofstream("/proc/sys/vm/drop_caches") << "3\n";
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 0;
  try {
    const CommandLine o = parse(argc, argv);
    toroid::Communicator comm(MPI_COMM_WORLD);
    const std::size_t tensors = 8;
    const auto per = static_cast<std::size_t>(o.mb * 1e6 / 4 / tensors);
    std::vector<std::vector<float>> w(tensors, std::vector<float>(per)), g = w;
    std::vector<toroid::Parameter> params;
    for (std::size_t t = 0; t < tensors; ++t) {
      for (std::size_t i = 0; i < per; ++i)
        w[t][i] = 0.001f * static_cast<float>((i * 7 + t) % 1000), g[t][i] = w[t][i] - 0.5f;
      params.emplace_back("layer" + std::to_string(t), std::span<float>(w[t]),
                          std::span<const float>(g[t]));
    }
    toroid::OptimizerConfig c;
    c.kind = toroid::OptimizerKind::adam;
    toroid::ShardedOptimizer opt(comm, params, c);
    opt.step();
    const double file_mb = 3.0 * static_cast<double>(per * tensors) * 4 / 1e6;
    if (rank == 0)
      std::printf("# ranks %d, file %.1f MB (weights %.1f MB + Adam state), %s\n", size, file_mb,
                  file_mb / 3, o.cold ? "cold-cache loads" : "warm loads");
    std::vector<double> saves, loads;
    for (int r = 0; r < o.repeat; ++r) {
      saves.push_back(timed([&] { opt.save(o.path); }));
      if (o.cold) drop_caches(rank);
      loads.push_back(timed([&] { opt.load(o.path); }));
    }
    if (rank == 0) {
      auto line = [&](const char* what, std::vector<double> t) {
        std::sort(t.begin(), t.end());
        std::printf("%-5s s: min %.3f median %.3f max %.3f   MB/s at the median: %.0f\n", what,
                    t.front(), t[t.size() / 2], t.back(), file_mb / t[t.size() / 2]);
      };
      line("save", saves);
      line("load", loads);
      std::remove(o.path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "toroid-checkpoint-bench: rank %d: %s\n", rank, e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
