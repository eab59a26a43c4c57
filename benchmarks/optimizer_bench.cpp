// The sharded optimizer against the replicated one in the same run: per-phase time (gradient
// reduction, update, weight all-gather) and optimizer-state bytes per rank.
//
//   mpirun -np 4 toroid-optimizer-bench --params 50000000 --optimizer adam --steps 5
//
// The model is `--tensors` tensors of about equal size holding `--params` f32 weights; the
// gradients are fixed random values (the time of a step does not depend on them).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "toroid/toroid.hpp"

namespace {

struct CommandLine {
  std::size_t params = 50'000'000, tensors = 8;
  int steps = 5;
  std::vector<toroid::OptimizerKind> kinds = {toroid::OptimizerKind::adam,
                                              toroid::OptimizerKind::lamb};
  bool bf16 = false;
};

std::size_t number(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n == 0)
    throw std::invalid_argument(opt + ": expected a positive integer, got '" + v + "'");
  return static_cast<std::size_t>(n);
}

CommandLine parse(int argc, char** argv) {
  CommandLine o;
  for (int i = 1; i < argc; i += 2) {
    const std::string opt = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(opt + ": missing value");
    const std::string v = argv[i + 1];
    if (opt == "--params")
      o.params = number(opt, v);
    else if (opt == "--tensors")
      o.tensors = number(opt, v);
    else if (opt == "--steps")
      o.steps = static_cast<int>(number(opt, v));
    else if (opt == "--bf16-grads")
      o.bf16 = v == "on";
    else if (opt == "--optimizer") {
      o.kinds.clear();
      for (std::size_t b = 0; b <= v.size();) {
        const std::size_t e = std::min(v.find(',', b), v.size());
        o.kinds.push_back(toroid::parse_optimizer_kind(v.substr(b, e - b)));
        b = e + 1;
      }
    } else {
      throw std::invalid_argument(
          "unknown option '" + opt +
          "' (--params N --tensors N --steps N --optimizer a,b --bf16-grads on|off)");
    }
  }
  return o;
}

struct Result {
  double reduce = 0, update = 0, gather = 0, total = 0;
  std::size_t state = 0;
};

Result measure(toroid::Communicator& comm, const CommandLine& o, toroid::OptimizerKind kind,
               bool shard, std::vector<std::vector<float>>& weights,
               const std::vector<std::vector<float>>& grads) {
  std::vector<toroid::Parameter> params;
  for (std::size_t t = 0; t < weights.size(); ++t)
    params.emplace_back("layer" + std::to_string(t) + ".weight", std::span<float>(weights[t]),
                        std::span<const float>(grads[t]));
  toroid::OptimizerConfig c;
  c.kind = kind, c.shard = shard, c.bf16_gradients = o.bf16, c.weight_decay = 0.01;
  toroid::ShardedOptimizer opt(comm, params, c);
  opt.step();  // warm-up: first touch of the state and buffers
  Result r;
  for (int s = 0; s < o.steps; ++s) {
    MPI_Barrier(comm.mpi_comm());
    const double t0 = MPI_Wtime();
    const auto rep = opt.step();
    r.total += MPI_Wtime() - t0;
    r.reduce += rep.reduce_seconds, r.update += rep.update_seconds, r.gather += rep.gather_seconds;
  }
  double v[4] = {r.reduce, r.update, r.gather, r.total};
  MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_DOUBLE, MPI_MAX, comm.mpi_comm());  // the slowest rank
  return {v[0] / o.steps, v[1] / o.steps, v[2] / o.steps, v[3] / o.steps, opt.state_bytes()};
}

int run(const CommandLine& o) {
  toroid::Communicator comm(MPI_COMM_WORLD);
  std::vector<std::vector<float>> weights, grads;
  for (std::size_t t = 0; t < o.tensors; ++t) {
    const std::size_t n = o.params / o.tensors + (t < o.params % o.tensors);
    weights.emplace_back(n);
    grads.emplace_back(n);
    for (std::size_t i = 0; i < n; ++i) {
      weights[t][i] = static_cast<float>((i * 2654435761u % 1000) * 1e-3 - 0.5);
      grads[t][i] = static_cast<float>((i * 40503u % 1000) * 1e-4 - 0.05);
    }
  }
  if (comm.rank() == 0)
    std::printf(
        "# %zu parameters in %zu tensors, %d ranks, topology %s, bf16 gradients %s, %d steps (ms "
        "per step, slowest rank)\n"
        "%-6s %-10s %10s %10s %10s %10s %14s\n",
        o.params, o.tensors, comm.size(), comm.shape().to_string().c_str(), o.bf16 ? "on" : "off",
        o.steps, "opt", "mode", "reduce", "update", "gather", "step", "state MiB/rank");
  for (auto kind : o.kinds) {
    Result res[2];
    for (bool shard : {false, true}) {
      res[shard] = measure(comm, o, kind, shard, weights, grads);
      if (comm.rank() == 0)
        std::printf("%-6s %-10s %10.2f %10.2f %10.2f %10.2f %14.1f\n",
                    std::string(toroid::to_string(kind)).c_str(), shard ? "sharded" : "replicated",
                    res[shard].reduce * 1e3, res[shard].update * 1e3, res[shard].gather * 1e3,
                    res[shard].total * 1e3, res[shard].state / 1048576.0);
    }
    if (comm.rank() == 0)
      std::printf("%-6s %-10s %10s %10.3f %10s %10.3f %14.3f\n",
                  std::string(toroid::to_string(kind)).c_str(), "shard/rep", "",
                  res[1].update / res[0].update, "", res[1].total / res[0].total,
                  double(res[1].state) / double(res[0].state));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    rc = run(parse(argc, argv));
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "toroid-optimizer-bench: error: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
