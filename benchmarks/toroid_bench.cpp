// toroid-bench: times toroid's collectives against the stock MPI collective of the same MPI,
// on the same ranks, in the same run.
//
//   mpirun -np 4 toroid-bench --topology 2x2 --algo ring -b 4K -e 64M -f 4
//
// Each iteration starts after a barrier; its time is the slowest rank's; the median over
// iterations is reported. vs_mpi = stock time / this algorithm's time (> 1: toroid is faster).
#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

#include "core/element.hpp"
#include "core/parse_size.hpp"
#include "toroid/toroid.hpp"
#include "topology/nodes.hpp"

namespace po = boost::program_options;
using namespace toroid;

namespace {


struct Settings {
  std::vector<Collective> ops;
  std::vector<Algorithm> algos;
  std::string topology;
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  std::uint64_t min_bytes = 4096, max_bytes = 64ull << 20, factor = 4;
  int iters = 20, warmup = 3;
  bool check = true, in_place = false, baseline = true;
  std::string format = "table";
};

struct Row {
  std::string coll;
  std::uint64_t bytes, count;
  std::string algo;
  double median_us, min_us, max_us, algbw, busbw;
  std::uint64_t wrong;
  double vs_mpi;
};


std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Throws InvalidArgument with the option name on bad values. Exit status 2 on every rank.
Settings parse(int argc, char** argv, bool& help, std::string& help_text) {
  po::options_description d("toroid-bench options");
  std::string op = "allreduce", algo = "ring", dtype = "f32", redop = "sum", b = "4K", e = "64M";
  Settings s;
  int check = 1, inplace = 0;
  d.add_options()
      ("help,h", "print this help")
      ("op", po::value(&op)->default_value(op), "allreduce|reduce_scatter|allgather|all")
      ("algo", po::value(&algo)->default_value(algo),
       "comma list of auto|ring|bidir_ring|torus2d|torus2d_both|hierarchical|recursive_doubling|rabenseifner|mpi, "
       "or all (every algorithm that implements the collective)")
      ("topology", po::value(&s.topology)->default_value("auto"), "XxY[:wrap=xy|x|y|none] or auto")
      ("dtype", po::value(&dtype)->default_value(dtype), "f32|f64|bf16|f16|i32|i64")
      ("redop", po::value(&redop)->default_value(redop), "sum|prod|min|max|avg")
      (",b", po::value(&b)->default_value(b), "smallest message in bytes (K/M/G suffixes)")
      (",e", po::value(&e)->default_value(e), "largest message in bytes")
      (",f", po::value(&s.factor)->default_value(s.factor), "size multiplication factor (>= 2)")
      (",n", po::value(&s.iters)->default_value(s.iters), "timed iterations per size")
      (",w", po::value(&s.warmup)->default_value(s.warmup), "warm-up iterations per size")
      ("check", po::value(&check)->default_value(check), "verify every element (0|1)")
      ("inplace", po::value(&inplace)->default_value(inplace), "in-place collectives (0|1)")
      ("no-baseline", "do not add the stock MPI collective as a baseline")
      ("format", po::value(&s.format)->default_value(s.format), "table|csv");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, d), vm);
    po::notify(vm);
  } catch (const po::error& ex) {
    throw InvalidArgument(ex.what());
  }
  std::ostringstream h;
  h << d;
  help_text = h.str();
  help = vm.count("help") > 0;
  for (const std::string& o : op == "all" ? std::vector<std::string>{"allreduce", "reduce_scatter", "allgather"} : split(op)) {
    if (o == "allreduce") s.ops.push_back(Collective::allreduce);
    else if (o == "reduce_scatter") s.ops.push_back(Collective::reduce_scatter);
    else if (o == "allgather") s.ops.push_back(Collective::allgather);
    else throw InvalidArgument("--op: unknown collective '" + o + "' (valid: allreduce, reduce_scatter, allgather, all)");
  }
  std::vector<std::string> every;
  for (Algorithm a : all_algorithms) every.emplace_back(to_string(a));
  for (const std::string& a : algo == "all" ? every : split(algo)) {
    try {
      s.algos.push_back(parse_algorithm(a));
    } catch (const InvalidArgument& ex) {
      throw InvalidArgument(std::string("--algo: ") + ex.what());
    }
  }
  s.baseline = vm.count("no-baseline") == 0;
  // The stock collective runs first at every size, so every row can show its ratio to it.
  const bool listed = std::find(s.algos.begin(), s.algos.end(), Algorithm::mpi) != s.algos.end();
  std::erase(s.algos, Algorithm::mpi);
  if (s.baseline || listed) s.algos.insert(s.algos.begin(), Algorithm::mpi);
  try {
    s.type = parse_data_type(dtype);
  } catch (const InvalidArgument& ex) {
    throw InvalidArgument(std::string("--dtype: ") + ex.what());
  }
  try {
    s.op = parse_reduce_op(redop);
  } catch (const InvalidArgument& ex) {
    throw InvalidArgument(std::string("--redop: ") + ex.what());
  }
  s.min_bytes = parse_size(b, "-b");
  s.max_bytes = parse_size(e, "-e");
  if (s.min_bytes > s.max_bytes)
    throw InvalidArgument(fmt::format("-b {} is larger than -e {}", b, e));
  if (s.factor < 2) throw InvalidArgument(fmt::format("-f {} must be at least 2", s.factor));
  if (s.iters < 1) throw InvalidArgument(fmt::format("-n {} must be at least 1", s.iters));
  if (s.warmup < 0) throw InvalidArgument(fmt::format("-w {} must not be negative", s.warmup));
  if (s.format != "table" && s.format != "csv") throw InvalidArgument("--format: '" + s.format + "' is not table or csv");
  if (s.op == ReduceOp::avg && !is_floating(s.type))
    throw InvalidArgument(fmt::format("--redop avg needs a floating --dtype, got {}", to_string(s.type)));
  s.check = check != 0;
  s.in_place = inplace != 0;
  return s;
}

// One collective call of `c` with this rank's buffers; `in` is the full-length input.
void call(Collective c, const Settings& s, std::vector<std::byte>& in, std::vector<std::byte>& out,
          std::uint64_t count, Algorithm algo, Communicator& comm) {
  const std::size_t es = size_of(s.type);
  const Block own = block_of(count, comm.size(), comm.rank());
  switch (c) {
    case Collective::allreduce:
      if (s.in_place) allreduce(out.data(), count, out.data(), count, s.type, s.op, comm, algo);
      else allreduce(in.data(), count, out.data(), count, s.type, s.op, comm, algo);
      return;
    case Collective::reduce_scatter:
      if (s.in_place) reduce_scatter(out.data(), count, out.data(), count, s.type, s.op, comm, algo);
      else reduce_scatter(in.data(), count, out.data(), own.count, s.type, s.op, comm, algo);
      return;
    case Collective::allgather:
      if (s.in_place) allgather(out.data() + own.offset * es, own.count, out.data(), count, s.type, comm, algo);
      else allgather(in.data() + own.offset * es, own.count, out.data(), count, s.type, comm, algo);
      return;
  }
}

// Number of wrong elements after one call, given inputs exact_input(op, rank, i).
std::uint64_t count_wrong(Collective c, const Settings& s, const std::vector<std::byte>& out,
                          std::uint64_t count, Communicator& comm) {
  const int p = comm.size();
  const std::size_t es = size_of(s.type);
  const Block own = block_of(count, p, comm.rank());
  const std::uint64_t first = c == Collective::reduce_scatter ? own.offset : 0;
  const std::uint64_t len = c == Collective::reduce_scatter ? own.count : count;
  const std::uint64_t at = c == Collective::reduce_scatter && !s.in_place ? 0 : first;
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < len; ++i) {
    const std::uint64_t g = first + i;
    double want;
    if (c == Collective::allgather) {
      int owner = 0;
      while (block_of(count, p, owner).offset + block_of(count, p, owner).count <= g) ++owner;
      want = exact_input(s.op, owner, g);
    } else {
      want = exact_input(s.op, 0, g);
      for (int r = 1; r < p; ++r) {
        const double v = exact_input(s.op, r, g);
        switch (s.op) {
          case ReduceOp::sum: case ReduceOp::avg: want += v; break;
          case ReduceOp::prod: want *= v; break;
          case ReduceOp::min: want = std::min(want, v); break;
          case ReduceOp::max: want = std::max(want, v); break;
        }
      }
      if (s.op == ReduceOp::avg) want /= p;
    }
    std::byte ref[8];
    store_as(s.type, ref, want);
    const double got = load_as_double(s.type, out.data() + (at + i) * es), exp = load_as_double(s.type, ref);
    const double tol = s.op == ReduceOp::avg ? 1e-2 * std::max(1.0, std::abs(exp)) : 0.0;
    wrong += std::abs(got - exp) > tol;
  }
  return wrong;
}

Row measure(Collective c, const Settings& s, std::uint64_t bytes, Algorithm algo, Communicator& comm) {
  const std::size_t es = size_of(s.type);
  const int p = comm.size();
  // Round the count to a multiple of p so every block is equal (as MPI_Reduce_scatter_block needs).
  std::uint64_t count = std::max<std::uint64_t>(bytes / es / p, 1) * p;
  std::vector<std::byte> in(count * es), out(count * es);
  auto fill = [&] {
    for (std::uint64_t i = 0; i < count; ++i) store_as(s.type, in.data() + i * es, exact_input(s.op, comm.rank(), i));
    if (s.in_place) out = in;
  };
  fill();
  std::uint64_t wrong = 0;
  if (s.check) {
    call(c, s, in, out, count, algo, comm);
    wrong = count_wrong(c, s, out, count, comm);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UINT64_T, MPI_SUM, comm.mpi_comm());
  }
  std::vector<double> times;
  for (int it = 0; it < s.warmup + s.iters; ++it) {
    if (s.in_place) out = in;  // in place overwrites the input; restore it outside the timing
    MPI_Barrier(comm.mpi_comm());
    const double t0 = MPI_Wtime();
    call(c, s, in, out, count, algo, comm);
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm.mpi_comm());
    if (it >= s.warmup) times.push_back(dt * 1e6);
  }
  std::sort(times.begin(), times.end());
  const double med = times[times.size() / 2];
  const double total = static_cast<double>(count * es);
  const double factor = c == Collective::allreduce ? 2.0 * (p - 1) / p : static_cast<double>(p - 1) / p;
  const double algbw = total / (med * 1e-6) / 1e9;
  return {std::string(to_string(c)), count * es, count, std::string(to_string(algo)), med, times.front(), times.back(),
          algbw, algbw * factor, wrong, 0.0};
}

void print_header(const Settings& s, Communicator& comm) {
  const auto host = topology::host_info();
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, static_cast<std::size_t>(len));
  v = v.substr(0, v.find_first_of("\n,"));
  fmt::print("# toroid-bench {}  |  MPI: {}\n", TOROID_VERSION_STRING, v);
  fmt::print("# ranks {}  nodes {}  topology {}  type {}  redop {}  {}\n", comm.size(), comm.nodes(),
             comm.topology().to_string(), to_string(s.type), to_string(s.op), s.in_place ? "in-place" : "out-of-place");
  fmt::print("# host: {} cores, {} hardware threads, rank 0 bound to {}\n", host.cores, host.pus,
             host.binding.empty() ? "?" : host.binding);
  if (host.cores > 0 && comm.size() / std::max(comm.nodes(), 1) > host.cores)
    fmt::print("# WARNING: {} ranks per node on {} cores: ranks share cores, timings include waiting for a core\n",
               comm.size() / std::max(comm.nodes(), 1), host.cores);
  fmt::print("# time = median over {} iterations of the slowest rank; vs_mpi = stock time / this time\n", s.iters);
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
    const Settings s = parse(argc, argv, help, help_text);
    if (help) {
      if (rank == 0) std::cout << help_text;
      MPI_Finalize();
      return 0;
    }
    Options o;
    o.topology = s.topology;
    Communicator comm(MPI_COMM_WORLD, o);
    if (rank == 0) {
      if (s.format == "table") {
        print_header(s, comm);
        fmt::print("{:>15} {:>12} {:>5} {:>6} {:>14} {:>8} {:>11} {:>8} {:>8} {:>6} {:>7}\n", "collective", "size(B)",
                   "type", "redop", "algo", "count", "time(us)", "algbw", "busbw", "wrong", "vs_mpi");
      } else {
        fmt::print("collective,size,count,type,redop,algo,time_us,min_us,max_us,algbw,busbw,wrong,vs_mpi\n");
      }
      std::fflush(stdout);
    }
    std::uint64_t total_wrong = 0;
    for (Collective c : s.ops)
      for (std::uint64_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= s.factor) {
        double stock_us = 0;
        for (Algorithm a : s.algos) {
          if (!implements(a, c)) continue;  // e.g. rabenseifner: all-reduce only
          Row row = measure(c, s, bytes, a, comm);
          if (a == Algorithm::mpi) stock_us = row.median_us;
          row.vs_mpi = stock_us > 0 ? stock_us / row.median_us : 0.0;
          total_wrong += row.wrong;
          if (rank != 0) continue;
          const std::string vs = stock_us > 0 ? fmt::format("{:.2f}", row.vs_mpi) : "-";
          if (s.format == "table")
            fmt::print("{:>15} {:>12} {:>5} {:>6} {:>14} {:>8} {:>11.1f} {:>8.2f} {:>8.2f} {:>6} {:>7}\n", row.coll,
                       row.bytes, to_string(s.type), to_string(s.op), row.algo, row.count, row.median_us, row.algbw,
                       row.busbw, row.wrong, vs);
          else
            fmt::print("{},{},{},{},{},{},{:.2f},{:.2f},{:.2f},{:.4f},{:.4f},{},{}\n", row.coll, row.bytes, row.count,
                       to_string(s.type), to_string(s.op), row.algo, row.median_us, row.min_us, row.max_us, row.algbw,
                       row.busbw, row.wrong, stock_us > 0 ? fmt::format("{:.4f}", row.vs_mpi) : "");
          std::fflush(stdout);
        }
        if (bytes > UINT64_MAX / s.factor) break;
      }
    if (total_wrong > 0) {
      if (rank == 0) fmt::print(stderr, "toroid-bench: {} wrong elements\n", total_wrong);
      status = 1;
    }
  } catch (const Error& e) {
    fmt::print(stderr, "toroid-bench: rank {}: {}\n", rank, e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}
