// toroid-tune: measures the link parameters `auto`'s cost model prices schedules with, and
// writes them to a tuning file (TOROID_TUNING=<file> makes every communicator use it).
//
//   class    measured between                        how
//   shm      ranks of one node, in pairs, all pairs   toroid's shared-memory links
//            at once (as in a collective)
//   mpi      the same pairs                           TOROID_TRANSPORT=mpi (MPI's own path)
//   network  local rank 0 of node 0 and of node 1     MPI between the nodes
//   reduce   every rank at once                       the f32 sum kernel, 16 MiB operands
//   choose   the communicator of this job's layout    every algorithm and stock per size class
//                                                     (tune/choices.hpp)
//
// Each link is timed with an in-place 2-rank ring all-gather of n bytes (one exchange of n/2
// bytes each way: what the model calls one message), median over iterations of the slower rank
// of the pair, then fitted to t = alpha + (n/2) / bandwidth (fit_regimes).
//
//   mpirun -np 4 toroid-tune --out toroid-tuning.txt
//   (the file keeps the choices it held for other layouts: run it at 2 and at 4 ranks, and
//   both layouts' choices are there)
//   (hosts wired as a torus, one rank each: --network-links torus, so the network parameters
//   are priced per link and hop; scripts/cluster.sh up torus makes such hosts)
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/parse_size.hpp"
#include "measure/cli.hpp"
#include "model/tuning.hpp"
#include "sim/fit.hpp"  // reduce_throughput
#include "toroid/toroid.hpp"
#include "tune/choices.hpp"

namespace {

using namespace toroid;

struct CommandLine {
  std::string out = "toroid-tuning.txt";
  std::uint64_t max_bytes = 16u << 20;
  int iters = 20;
  bool network_torus = false;              // --network-links torus
  std::uint64_t choose_up_to = 64u << 20;  // --choose-up-to; 0: no measured choices
};

// Every rank parses the same argv, so every rank reaches the same verdict; rank 0 speaks.
[[noreturn]] void finish_early(int rank, int status, const std::string& text) {
  if (rank == 0) fmt::print(status == 0 ? stdout : stderr, "{}", text);
  MPI_Finalize();
  std::exit(status);
}

CommandLine parse(int argc, char** argv, int rank) {
  namespace po = boost::program_options;
  CommandLine s;
  std::string max_bytes = "16M", links = "switch", choose = "64M";
  po::options_description d(
      "toroid-tune: measures auto's link parameters\n"
      "  mpirun -np N toroid-tune [options]");
  d.add_options()("help,h", "print this help")("out", po::value(&s.out)->default_value(s.out),
                                               "the tuning file to write")(
      "max-bytes", po::value(&max_bytes)->default_value(max_bytes),
      "largest exchange timed (>= 4K; K/M/G suffixes)")(
      "iters", po::value(&s.iters)->default_value(s.iters), "timed exchanges per size (>= 3)")(
      "network-links", po::value(&links)->default_value(links),
      "switch | torus: torus when the nodes are wired as the communicator's torus, one rank "
      "per node")(
      "choose-up-to", po::value(&choose)->default_value(choose),
      "measure which algorithm (stock included) is fastest per size class up to this size on "
      "this job's layout, for auto to follow (0: do not)");
  try {
    bool help = false;
    std::string help_text;
    cli::parse_command_line(d, argc, argv, help, help_text);
    if (help) finish_early(rank, 0, help_text);
    s.max_bytes = parse_size(max_bytes, "--max-bytes");
    if (s.max_bytes < 4096)
      throw InvalidArgument(fmt::format("--max-bytes {}: at least 4K", max_bytes));
    if (s.iters < 3) throw InvalidArgument(fmt::format("--iters {}: at least 3", s.iters));
    if (links != "switch" && links != "torus")
      throw InvalidArgument(fmt::format("--network-links {}: switch or torus", links));
    s.network_torus = links == "torus";
    s.choose_up_to = parse_size(choose, "--choose-up-to");
  } catch (const InvalidArgument& e) {
    finish_early(rank, 2, fmt::format("toroid-tune: {}\n", e.what()));
  }
  return s;
}

// Times an in-place all-gather of n bytes on `pair` (2 ranks) while every rank of the world
// runs the same loop (those outside a pair only join the barriers). Returns the median over
// iterations of the slower rank of each pair, on the pair's rank 0 (others: 0).
double time_exchange(Communicator* pair, std::uint64_t bytes, int iters, std::vector<float>& buf) {
  std::vector<double> times;
  const std::size_t count = std::max<std::uint64_t>(bytes / 4, 2);
  for (int it = 0; it < iters + 2; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (pair) allgather(std::span<float>(buf.data(), count), *pair, Algorithm::ring);
    double t = MPI_Wtime() - t0;
    if (pair) MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, pair->mpi_comm());
    if (it >= 2) times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  return pair && pair->rank() == 0 ? times[times.size() / 2] : 0.0;
}

// alpha from the small messages (the least time up to 1 KiB), the bandwidth from a line through
// the messages of 64 KiB and more alone: one least-squares line through both ends would bend
// toward the middle, where MPI switches protocols (TCP: eager below 64 KiB, rendezvous above,
// 9x slower per byte across that step on the emulated cluster).
sim_cli::Fit fit_regimes(const std::vector<std::pair<double, double>>& pts) {
  double alpha = pts.front().second;
  for (auto [n, t] : pts)
    if (n <= 1024) alpha = std::min(alpha, t);
  double k = 0, sn = 0, st = 0, snn = 0, snt = 0;
  for (auto [n, t] : pts) {
    if (n < 65536) continue;
    k += 1, sn += n, st += t, snn += n * n, snt += n * t;
  }
  const double slope = k >= 2 ? (k * snt - sn * st) / (k * snn - sn * sn) : 0;
  return {alpha, slope > 0 ? 1.0 / slope : pts.back().first / pts.back().second};
}

// Fits one link class from the pairs' exchanges: the median pair's fit on rank 0.
std::optional<model::LinkParams> measure(std::optional<int> pair_color, const CommandLine& s,
                                         std::optional<Transport> transport, const char* name,
                                         int rank) {
  MPI_Comm split = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, pair_color ? *pair_color : MPI_UNDEFINED, rank, &split);
  std::optional<Communicator> pair;
  if (split != MPI_COMM_NULL) {
    Options o;
    o.transport = transport;
    o.topology = "2x1";
    o.nodes = "real";
    pair.emplace(split, o);
  }
  int any = split != MPI_COMM_NULL ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  std::optional<model::LinkParams> result;
  if (any) {
    std::vector<float> buf(s.max_bytes / 4 + 2, 1.0f);
    std::vector<std::pair<double, double>> pts;
    for (std::uint64_t n = 8; n <= s.max_bytes; n *= 4) {
      const double t = time_exchange(pair ? &*pair : nullptr, n, s.iters, buf);
      pts.push_back({static_cast<double>(std::max<std::uint64_t>(n / 4, 2) * 4 / 2), t});
    }
    // Pair leaders send their fits to rank 0, which keeps the median.
    double mine[2] = {-1, -1};
    if (pair && pair->rank() == 0) {
      const sim_cli::Fit f = fit_regimes(pts);
      mine[0] = f.alpha_s;
      mine[1] = f.beta_bytes_per_s;
      {
        std::string row;
        for (auto [b, t] : pts)
          row += fmt::format(" {}:{:.2f}", static_cast<std::uint64_t>(b), t * 1e6);
        fmt::print(
            "toroid-tune: {} pair of world rank {}: one-way us by bytes{} -> alpha {:.2f} us, "
            "{:.2f} GB/s\n",
            name, rank, row, f.alpha_s * 1e6, f.beta_bytes_per_s / 1e9);
      }
    }
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<double> all(static_cast<std::size_t>(2 * size));
    MPI_Gather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::vector<std::pair<double, double>> fits;
      for (int r = 0; r < size; ++r)
        if (all[2 * r] >= 0) fits.push_back({all[2 * r + 1], all[2 * r]});
      std::sort(fits.begin(), fits.end());
      const auto [bw, alpha] = fits[fits.size() / 2];
      result = model::LinkParams{alpha, bw};
    }
  }
  pair.reset();
  if (split != MPI_COMM_NULL) MPI_Comm_free(&split);
  return result;
}

// The choices `out` already holds for layouts other than this run's are kept (a file that does
// not parse keeps nothing, and is replaced whole).
void keep_other_layouts(const std::string& out, model::Tuning& t) {
  std::ifstream in(out);
  if (!in) return;
  std::ostringstream text;
  text << in.rdbuf();
  try {
    const model::Tuning old = model::parse_tuning(text.str(), out);
    for (const model::MeasuredChoices& m : old.choices)
      if (!t.choices_for(m.layout)) {
        t.choices.push_back(m);
        fmt::print("toroid-tune: kept the choices of {} from {}\n", m.layout, out);
      }
  } catch (const InvalidArgument& e) {
    fmt::print("toroid-tune: {} is replaced whole ({})\n", out, e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const CommandLine s = parse(argc, argv, rank);
  int status = 0;
  try {
    // The real nodes: emulated ones (TOROID_NODES) share this machine's memory, no network.
    Options real;
    real.nodes = "real";
    Communicator world(MPI_COMM_WORLD, real);
    const int node = world.node_of(rank);
    int local = 0, nodes = world.nodes();
    for (int r = 0; r < rank; ++r) local += world.node_of(r) == node;
    int local_size = 0;
    for (int r = 0; r < size; ++r) local_size += world.node_of(r) == node;
    int most_local = local_size;
    MPI_Allreduce(MPI_IN_PLACE, &most_local, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    // Pairs inside a node: local ranks (0,1), (2,3), ...; color unique per pair.
    std::optional<int> inside;
    if (local / 2 * 2 + 1 < local_size) inside = node * size + local / 2;
    model::Tuning t;
    t.links = {};
    t.network_torus = s.network_torus;
    if (most_local >= 2) {
      t[model::LinkClass::shm] = measure(inside, s, Transport::shm, "shm", rank);
      t[model::LinkClass::mpi] = measure(inside, s, Transport::mpi, "mpi", rank);
    }
    if (nodes >= 2) {
      std::optional<int> across;
      if (local == 0 && node < 2) across = 0;
      t[model::LinkClass::network] = measure(across, s, std::nullopt, "network", rank);
    }
    if (s.choose_up_to > 0) {
      // This job's layout as every communicator over it sees it (the environment's topology,
      // transport and nodes), not the real-node view the links were measured with.
      Communicator comm(MPI_COMM_WORLD);
      tune::ChoiceSettings cs;
      cs.up_to = s.choose_up_to;
      t.choices = {tune::measure_choices(comm, cs, rank == 0)};
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double reduce = sim_cli::reduce_throughput();
    std::vector<double> reduces(static_cast<std::size_t>(size));
    MPI_Gather(&reduce, 1, MPI_DOUBLE, reduces.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::sort(reduces.begin(), reduces.end());
      t.reduce_bytes_per_s = reduces[reduces.size() / 2];
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      const std::time_t now = std::time(nullptr);
      char when[64];
      std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
      keep_other_layouts(s.out, t);
      const std::string text = model::format_tuning(
          t, fmt::format(
                 "toroid-tune on {}, {}: {} ranks on {} node(s), at most {} per node\n"
                 "{}",
                 host, when, size, nodes, most_local,
                 nodes < 2
                     ? "no network.* (one node): communicators across nodes need a run across nodes"
                     : ""));
      std::ofstream out(s.out);
      out << text;
      if (!out) {
        fmt::print(stderr, "toroid-tune: cannot write '{}'\n", s.out);
        status = 1;
      } else {
        fmt::print("{}toroid-tune: wrote {} (TOROID_TUNING={} uses it)\n", text, s.out, s.out);
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "toroid-tune: rank {}: {}\n", rank, e.what());
    status = 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
