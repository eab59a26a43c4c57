#include "measure/settings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <sstream>

#include "core/parse_size.hpp"
#include "kernels/isa.hpp"
#include "measure/cli.hpp"

namespace po = boost::program_options;

namespace toroid::bench {

std::string_view to_string(Settings::Mode m) noexcept {
  switch (m) {
    case Settings::Mode::blocking:
      return "blocking";
    case Settings::Mode::nonblocking:
      return "nonblocking";
    case Settings::Mode::persistent:
      return "persistent";
  }
  return "?";
}

std::string_view to_string(Settings::Memory m) noexcept {
  return m == Settings::Memory::toroid ? "toroid" : "user";
}

// Throws InvalidArgument with the option name on bad values. Exit status 2 on every rank.
Settings parse_settings(int argc, char** argv, bool& help, std::string& help_text) {
  po::options_description d("toroid-bench options");
  std::string op = "allreduce", algo = "ring", dtype = "f32", redop = "sum", b = "4K", e = "64M";
  Settings s;
  int check = 1, inplace = 0;
  d.add_options()("help,h", "print this help")(
      "op", po::value(&op)->default_value(op),
      "comma list of allreduce|reduce_scatter|allgather|broadcast|alltoall|alltoallv "
      "(alltoallv: skewed blocks, as a gate makes them), "
      "or all (the first four)")("algo", po::value(&algo)->default_value(algo),
                                 ("comma list of " + cli::algorithm_names(all_algorithms) +
                                  ", or all (every algorithm that implements the collective)")
                                     .c_str())(
      "topology", po::value(&s.topology)->default_value("auto"),
      "XxY[xZ...][:wrap=LETTERS|none][,twist] (1 to 6 dimensions: 4x2, 2x2x2:wrap=xz) or auto")(
      "axes", po::value<std::string>(),
      "run every row along these axes of the topology, each sub-torus on its own: x (the rows), "
      "z, xz (the xz-planes); the stock row runs on a communicator of each group. All-reduce, "
      "reduce-scatter and all-gather, blocking and non-blocking")(
      "dtype", po::value(&dtype)->default_value(dtype), "f32|f64|bf16|f16|i32|i64")(
      "redop", po::value(&redop)->default_value(redop), "sum|prod|min|max|avg")(
      ",b", po::value(&b)->default_value(b), "smallest message in bytes (K/M/G suffixes)")(
      ",e", po::value(&e)->default_value(e), "largest message in bytes")(
      ",f", po::value(&s.factor)->default_value(s.factor), "size multiplication factor (>= 2)")(
      ",n", po::value(&s.iters)->default_value(s.iters), "timed iterations per size")(
      ",w", po::value(&s.warmup)->default_value(s.warmup), "warm-up iterations per size")(
      "rounds", po::value(&s.rounds)->default_value(s.rounds),
      "time every row this many times, the rows of a size taking turns, and report the median "
      "of the rounds' medians (a slow spell of the machine then hits every row alike)")(
      "offset", po::value<std::string>(),
      "output placement: each output set starts this many bytes past a 4 KiB multiple from its "
      "input, which is page-aligned (0-4095, a multiple of the element size; default 2048). "
      "Stock's copies are many times slower at 1-31 (glibc's and the kernel's rep movsb) and its "
      "reductions at 0, where malloc often puts two vectors")(
      "batch", po::value<std::string>()->default_value("auto"),
      "calls per timed iteration, back to back, the time divided by them (a barrier's skew "
      "otherwise outweighs a call of a microsecond): a count, or auto (enough calls for 50 us, "
      "at most 1000; in place: 1)")("check", po::value(&check)->default_value(check),
                                    "verify every element (0|1)")(
      "inplace", po::value(&inplace)->default_value(inplace), "in-place collectives (0|1)")(
      "no-baseline", "do not add the stock MPI collective as a baseline")(
      "format", po::value(&s.format)->default_value(s.format), "table|csv|json")(
      "output", po::value(&s.output), "write the results to this file instead of stdout")(
      "csv", po::value(&s.csv),
      "also write the rows as CSV to this file, whatever --format is (for "
      "benchmarks/plot_bench.py)")(
      "isa", po::value<std::string>(),
      "comma list of kernel levels (scalar, avx2, avx512, auto): toroid's rows "
      "are repeated per level, named ALGO@LEVEL, all in this run")(
      "transport", po::value<std::string>(),
      "comma list of auto|mpi|shm: toroid's rows over each transport "
      "(named ALGO/TRANSPORT when more than one), all in this run")(
      "mode", po::value<std::string>(),
      "comma list of blocking|nonblocking|persistent: how toroid's rows call "
      "the collective (named ALGO:MODE when more than one); stock rows block")(
      "buffers", po::value<std::string>(),
      "comma list of user|toroid: toroid's rows on ordinary memory (user, the default) or on "
      "Communicator::allocate's (toroid: single-copy under auto on one node), named ALGO+owned "
      "when both are listed; stock rows use ordinary memory")(
      "bound",
      "add a copy_bound row per size: every rank copies its vector at once (memcpy), the time "
      "the bytes an all-reduce must move (read the input, write the output) take; every row "
      "then shows of_copy = that time / its time")(
      "cold",
      "cold caches: every row (and the copy bound) rotates over input/output sets whose total on "
      "the node is twice the last-level cache (2 to 1024 sets), instead of reusing one")(
      "cache", po::value<std::string>(),
      "the last-level cache --cold defeats (bytes, K/M/G suffixes; default: the kernel's "
      "figure, else the CPU's, which under a VM can be many times the real one)")(
      "timeout", po::value<double>(),
      "seconds without progress before a stuck collective reports and ends the run (0: off; "
      "default: "
      "TOROID_TIMEOUT, else 300)");
  const po::variables_map vm = cli::parse_command_line(d, argc, argv, help, help_text);
  {
    // alltoallv: the all-to-all's rows with skewed blocks (one of the two per run).
    std::vector<std::string> names = cli::split_list(op);
    const bool v = std::find(names.begin(), names.end(), "alltoallv") != names.end();
    if (v && std::find(names.begin(), names.end(), "alltoall") != names.end())
      throw InvalidArgument("--op: alltoall and alltoallv in one run; run them one at a time");
    std::string list;
    for (const std::string& n : names)
      list += (list.empty() ? "" : ",") + (v && n == "alltoallv" ? std::string("alltoall") : n);
    s.alltoallv = v;
    s.ops = cli::parse_collectives(list);
  }
  s.algos = cli::parse_algorithms(algo, all_algorithms);
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
  if (s.rounds < 1) throw InvalidArgument(fmt::format("--rounds {} must be at least 1", s.rounds));
  if (s.format != "table" && s.format != "csv" && s.format != "json")
    throw InvalidArgument("--format: '" + s.format + "' is not table, csv or json");
  if (s.op == ReduceOp::avg && !is_floating(s.type))
    throw InvalidArgument(
        fmt::format("--redop avg needs a floating --dtype, got {}", to_string(s.type)));
  if (const std::string b = vm["batch"].as<std::string>(); b != "auto") {
    char* end = nullptr;
    const long n = std::strtol(b.c_str(), &end, 10);
    if (b.empty() || *end != '\0' || n < 1 || n > Settings::kMaxBatch)
      throw InvalidArgument(
          fmt::format("--batch {}: must be auto or a count from 1 to {}", b, Settings::kMaxBatch));
    s.batch = static_cast<int>(n);
  }
  if (vm.count("offset")) {
    s.output_offset = parse_size(vm["offset"].as<std::string>(), "--offset");
    if (s.output_offset >= 4096 || s.output_offset % size_of(s.type) != 0)
      throw InvalidArgument(
          fmt::format("--offset {}: must be below 4096 and a multiple of the {}-byte {} element",
                      vm["offset"].as<std::string>(), size_of(s.type), to_string(s.type)));
  }
  if (vm.count("timeout")) s.timeout_s = vm["timeout"].as<double>();
  if (s.timeout_s && !(*s.timeout_s >= 0))
    throw InvalidArgument(fmt::format("--timeout {} must not be negative", *s.timeout_s));
  if (vm.count("isa")) {
    for (const std::string& level : cli::split_list(vm["isa"].as<std::string>())) {
      try {
        (void)kernels::select_isa(level);  // validates the name and that this CPU has it
      } catch (const InvalidArgument& ex) {
        throw InvalidArgument(std::string("--isa: ") + ex.what());
      }
      s.isas.push_back(level);
    }
  }
  if (vm.count("transport")) {
    s.transports.clear();
    for (const std::string& t : cli::split_list(vm["transport"].as<std::string>())) {
      try {
        s.transports.push_back(parse_transport(t));
      } catch (const InvalidArgument& ex) {
        throw InvalidArgument(std::string("--transport: ") + ex.what());
      }
    }
  }
  if (vm.count("mode")) {
    s.modes.clear();
    for (const std::string& m : cli::split_list(vm["mode"].as<std::string>())) {
      bool found = false;
      for (Settings::Mode k :
           {Settings::Mode::blocking, Settings::Mode::nonblocking, Settings::Mode::persistent})
        if (m == to_string(k)) s.modes.push_back(k), found = true;
      if (!found)
        throw InvalidArgument("--mode: '" + m + "' is not blocking, nonblocking or persistent");
    }
  }
  if (vm.count("buffers")) {
    s.memories.clear();
    for (const std::string& m : cli::split_list(vm["buffers"].as<std::string>())) {
      if (m == "user")
        s.memories.push_back(Settings::Memory::user);
      else if (m == "toroid")
        s.memories.push_back(Settings::Memory::toroid);
      else
        throw InvalidArgument("--buffers: '" + m + "' is not user or toroid");
    }
  }
  for (Collective c : s.ops)
    if (c == Collective::alltoall && inplace != 0)
      throw InvalidArgument("--inplace 1: an all-to-all is never in place");
  if (vm.count("axes")) {
    try {
      s.axes = Axes::parse(vm["axes"].as<std::string>());
    } catch (const InvalidArgument& ex) {
      throw InvalidArgument(std::string("--axes: ") + ex.what());
    }
    for (Collective c : s.ops)
      if (c == Collective::broadcast || c == Collective::alltoall)
        throw InvalidArgument(fmt::format(
            "--axes: {} has no form along axes (--op allreduce, reduce_scatter or allgather)",
            s.alltoallv ? "alltoallv" : to_string(c)));
    for (Settings::Mode m : s.modes)
      if (m == Settings::Mode::persistent)
        throw InvalidArgument(
            "--axes: the collectives along axes have no persistent form "
            "(--mode blocking or nonblocking)");
  }
  s.bound = vm.count("bound") > 0;
  s.cold = vm.count("cold") > 0;
  if (vm.count("cache")) {
    s.cache_bytes = parse_size(vm["cache"].as<std::string>(), "--cache");
    if (s.cache_bytes == 0) throw InvalidArgument("--cache: must be at least 1 byte, got 0");
    if (!s.cold) throw InvalidArgument("--cache: only --cold uses it (add --cold)");
  }
  s.check = check != 0;
  s.in_place = inplace != 0;
  return s;
}

}  // namespace toroid::bench
