#include "sim/options.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <sstream>

#include "core/parse_size.hpp"
#include "measure/cli.hpp"
#include "toroid/defaults.hpp"

namespace po = boost::program_options;

namespace toroid::sim_cli {
namespace {

struct Preset {
  const char* name;
  const char* topology;
  double link_gbps;  // per link direction, GB/s (sources in docs/simulator.md "Presets")
  const char* note;
};

// Link figures are per direction; the multipod's X dimension (128) has no wraparound link: an
// assumption (pods joined side by side along X), overridable with --wrap. TPU v4: 6 ICI links of
// 50 GB/s each way per chip (Jouppi et al., ISCA'23); v5p: 1200 GB/s bidirectional ICI per chip
// over its 6 links, 100 GB/s each way (Cloud TPU v5p documentation). Hop latency: 1 us on all.
constexpr Preset kPresets[] = {
    {"tpu-v3-pod", "32x32", 80, "32x32 torus (wraparound in both dimensions)"},
    {"tpu-v3-multipod", "128x32:wrap=y", 80,
     "128x32, wraparound only along the 32 (Y) dimension (assumed)"},
    {"tpu-v4-pod", "16x16x16", 50, "TPU v4 pod, 4096 chips, 3D torus"},
    {"tpu-v4", "4x4x8", 50, "TPU v4 slice of 128 chips, untwisted 3D torus"},
    {"tpu-v4-twisted", "4x4x8:twist", 50, "the same slice as a twisted torus"},
    {"tpu-v5p", "16x16x24", 100, "TPU v5p's largest slice, 6144 chips, 3D torus"},
};

std::string preset_names() {
  std::string names;
  for (const Preset& p : kPresets) names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
  return names;
}

double positive(const po::variables_map& vm, const char* name, double fallback) {
  if (!vm.count(name)) return fallback;
  const double v = vm[name].as<double>();
  if (!(v > 0) || !std::isfinite(v))
    throw InvalidArgument(fmt::format("--{} {} must be a positive number", name, v));
  return v;
}

double not_negative(const po::variables_map& vm, const char* name, double fallback) {
  if (!vm.count(name)) return fallback;
  const double v = vm[name].as<double>();
  if (!(v >= 0) || !std::isfinite(v))
    throw InvalidArgument(fmt::format("--{} {} must not be negative", name, v));
  return v;
}

// "1K:1G" (with --factor), "64M", or "4K,1M,1G".
std::vector<std::uint64_t> parse_sizes(const std::string& text, std::uint64_t factor) {
  std::vector<std::uint64_t> out;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    const std::uint64_t lo = parse_size(text.substr(0, colon), "--bytes");
    const std::uint64_t hi = parse_size(text.substr(colon + 1), "--bytes");
    if (lo == 0 || lo > hi)
      throw InvalidArgument(fmt::format("--bytes: '{}' needs 0 < low <= high", text));
    for (std::uint64_t b = lo; b <= hi; b *= factor) {
      out.push_back(b);
      if (b > UINT64_MAX / factor) break;
    }
  } else {
    for (const std::string& item : cli::split_list(text)) {
      const std::uint64_t b = parse_size(item, "--bytes");
      if (b == 0) throw InvalidArgument("--bytes: sizes must be positive");
      out.push_back(b);
    }
  }
  if (out.empty()) throw InvalidArgument(fmt::format("--bytes: '{}' names no size", text));
  return out;
}

}  // namespace

CommandLine parse_options(int argc, char** argv, bool& help, std::string& help_text) {
  CommandLine o;
  std::string preset = "tpu-v3-pod", topology, wrap, op = "allreduce",
              algo = "ring,bidir_ring,torus2d,torus2d_both,hierarchical", bytes = "1K:1G",
              dtype = "f32", segment = "engine", cal_max = "64M", compare, symmetry = "on";
  std::uint64_t factor = 4;
  po::options_description d(
      "toroid-sim: the schedules of toroid's algorithms costed on a modeled torus of chips of 1\n"
      "to 6 dimensions (docs/simulator.md). Presets: tpu-v3-pod = 32x32 torus; tpu-v3-multipod =\n"
      "128x32 with wraparound only along the 32 dimension (an assumption: override with --wrap);\n"
      "both 80 GB/s per link direction, 1 us per hop, 300 GB/s reduction per chip. tpu-v4-pod =\n"
      "16x16x16, tpu-v4 = 4x4x8 (tpu-v4-twisted: twisted), 50 GB/s; tpu-v5p = 16x16x24, 100 GB/s\n"
      "(docs/simulator.md, Presets, has their sources).\n\n"
      "  toroid-sim --preset tpu-v3-multipod --algo torus2d,ring --bytes 1K:1G\n"
      "  scripts/mpirun.sh -np 2 toroid-sim --calibrate [--compare bench_np2.csv,bench_np4.csv]\n\n"
      "Options");
  d.add_options()("help,h", "print this help")(
      "preset", po::value(&preset)->default_value(preset),
      "tpu-v3-pod | tpu-v3-multipod | tpu-v4-pod | tpu-v4 | tpu-v4-twisted | tpu-v5p")(
      "topology", po::value(&topology),
      "XxY[xZ...][:wrap=LETTERS|none][,twist] (default: the preset's)")(
      "axes", po::value<std::string>(),
      "run every row along these axes, each sub-torus on its own: x (the rows), z, xz (the "
      "xz-planes); the bounds are the sub-torus's")(
      "wrap", po::value(&wrap),
      "dimensions with wraparound links: letters of x y z ... | none (overrides --topology's)")(
      "op", po::value(&op)->default_value(op),
      "allreduce | reduce_scatter | allgather | broadcast | alltoall, a comma list, or all (the "
      "first four)")(
      "algo", po::value(&algo)->default_value(algo),
      ("comma list of " + cli::algorithm_names(scheduled_algorithms, " | ") +
       " | auto (above 64 chips the rule auto follows at that scale, else the fastest simulated "
       "candidate), or all (those that implement the op)")
          .c_str())("bytes", po::value(&bytes)->default_value(bytes),
                    "vector size: LOW:HIGH (times --factor), one size, or a comma list; K/M/G")(
      "factor", po::value(&factor)->default_value(factor), "size step for LOW:HIGH (>= 2)")(
      "dtype", po::value(&dtype)->default_value(dtype), "f32 | bf16 | f16 | f64 | i32 | i64")(
      "link-gbps", po::value<double>(),
      "link bandwidth per direction, GB/s (1e9 bytes/s), every dimension (default: the "
      "preset's)")("link-gbps-x", po::value<double>(), "... along X only")(
      "link-gbps-y", po::value<double>(), "... along Y only")("link-gbps-z", po::value<double>(),
                                                              "... along Z only")(
      "hop-us", po::value<double>(), "latency per hop, microseconds, every dimension")(
      "hop-us-x", po::value<double>(), "... along X only")(
      "hop-us-y", po::value<double>(), "... along Y only")("hop-us-z", po::value<double>(),
                                                           "... along Z only")(
      "reduce-gbps", po::value<double>(),
      "reduction throughput per chip, GB/s of received data (also copies)")(
      "segment-bytes", po::value(&segment)->default_value(segment),
      "pipelining segment (as TOROID_SEGMENT_BYTES): a size, 'default' (a communicator on one "
      "node), 'cross-node' (one spanning nodes, e.g. one rank per host) or 'engine' (what the "
      "engine picks: cross-node for a preset, whose chips span hosts; default for --topology)")(
      "chips-per-node", po::value(&o.chips_per_node)->default_value(0),
      "hierarchical: consecutive chips per node (0: one row of X chips)")(
      "phases", "also print rank 0's time per phase")(
      "symmetry", po::value(&symmetry)->default_value(symmetry),
      "on: simulate one chip per class of chips whose schedules are moved copies of each other "
      "(translations along wrapping axes, found and checked per row; column sim_ranks); off: "
      "every chip")("links", po::value(&o.links),
                    "write every link direction's bytes and busy time per row to this CSV file "
                    "(tools/sim/plot_links.py draws it)")(
      "format", po::value(&o.format)->default_value(o.format), "table | csv | json")(
      "output", po::value(&o.output), "write to this file instead of stdout")(
      "trace", po::value(&o.trace),
      "write the simulated timeline of every rank's steps to this file, in the Chrome trace "
      "format Perfetto opens, as TOROID_TRACE writes a measured one (one --op, one --algo, "
      "one --bytes)")(
      "calibrate",
      "under mpirun -np 2: fit latency and bandwidth from an MPI ping-pong, measure the "
      "reduction, then predict toroid-bench's all-reduce at 2 and 4 ranks")(
      "calibrate-max", po::value(&cal_max)->default_value(cal_max), "largest ping-pong message")(
      "calibrate-iters", po::value(&o.calibrate_iters)->default_value(o.calibrate_iters),
      "ping-pongs per size")(
      "compare", po::value(&compare),
      "with --calibrate: comma list of toroid-bench CSV files to set against the predictions")(
      "list-algorithms",
      "print each algorithm with the collectives it runs, as the library has them, and exit "
      "(benchmarks/cluster_bench.py asks this)");
  const po::variables_map vm = cli::parse_command_line(d, argc, argv, help, help_text);
  if (vm.count("list-algorithms")) {  // printed as --help is: then the program ends
    help = true;
    help_text.clear();
    for (Algorithm a : all_algorithms) {
      std::string runs;
      for (Collective c : all_collectives)
        if (implements(a, c)) {
          if (!runs.empty()) runs += ',';
          runs += to_string(c);
        }
      help_text += std::string(to_string(a)) + " " + runs + "\n";
    }
    return {};
  }

  const Preset* p = nullptr;
  for (const Preset& q : kPresets)
    if (preset == q.name) p = &q;
  if (!p)
    throw InvalidArgument(
        fmt::format("--preset: unknown preset '{}' (valid: {})", preset, preset_names()));
  o.preset = preset;
  try {
    o.model.topology = Torus::parse(topology.empty() ? p->topology : topology);
    if (!wrap.empty()) {  // the shape's sizes with these wraparound links
      const Torus& t = o.model.topology;
      std::string sizes;
      for (int d = 0; d < t.dimensions(); ++d)
        sizes += fmt::format("{}{}", d ? "x" : "", t.size(d));
      o.model.topology = Torus::parse(sizes + ":wrap=" + wrap);
    }
  } catch (const Error& ex) {
    throw InvalidArgument(fmt::format("--{}: {}", wrap.empty() ? "topology" : "wrap", ex.what()));
  }
  const double gbps = positive(vm, "link-gbps", p->link_gbps),
               hop = not_negative(vm, "hop-us", 1.0);
  o.model.link_bytes_per_s.fill(gbps * 1e9);
  o.model.hop_latency_s.fill(hop * 1e-6);
  o.model.link_bytes_per_s[0] = positive(vm, "link-gbps-x", gbps) * 1e9;
  o.model.link_bytes_per_s[1] = positive(vm, "link-gbps-y", gbps) * 1e9;
  o.model.link_bytes_per_s[2] = positive(vm, "link-gbps-z", gbps) * 1e9;
  o.model.hop_latency_s[0] = not_negative(vm, "hop-us-x", hop) * 1e-6;
  o.model.hop_latency_s[1] = not_negative(vm, "hop-us-y", hop) * 1e-6;
  o.model.hop_latency_s[2] = not_negative(vm, "hop-us-z", hop) * 1e-6;
  if (!o.links.empty() && !o.model.topology.as_torus2d())
    throw InvalidArgument(fmt::format(
        "--links {}: the link CSV (and tools/sim/plot_links.py) draw 2D shapes; {} is not one",
        o.links, o.model.topology.to_string()));
  o.model.reduce_bytes_per_s = positive(vm, "reduce-gbps", 300.0) * 1e9;
  // A preset is a pod: its chips sit on many hosts, where the engine pipelines in cross-node
  // segments (api/communicator.cpp); a bare --topology keeps the one-node default.
  const bool spans_hosts = topology.empty();
  o.model.segment_bytes =
      segment == "default" || (segment == "engine" && !spans_hosts) ? default_segment_bytes
      : segment == "cross-node" || segment == "engine"              ? cross_node_segment_bytes
                                                       : parse_size(segment, "--segment-bytes");
  if (o.model.segment_bytes < 64)
    throw InvalidArgument(fmt::format("--segment-bytes {} must be at least 64", segment));
  if (symmetry != "on" && symmetry != "off")
    throw InvalidArgument(fmt::format("--symmetry: '{}' is not on or off", symmetry));
  o.model.symmetric = symmetry == "on";
  if (o.chips_per_node < 0 || o.chips_per_node > o.model.topology.chips())
    throw InvalidArgument(fmt::format("--chips-per-node {} must be 0..{}", o.chips_per_node,
                                      o.model.topology.chips()));

  o.ops = cli::parse_collectives(op);
  if (vm.count("axes")) {
    try {
      o.axes = Axes::parse(vm["axes"].as<std::string>());
    } catch (const InvalidArgument& ex) {
      throw InvalidArgument(std::string("--axes: ") + ex.what());
    }
    // As the library: all-reduce, reduce-scatter and all-gather run along axes ("all": those).
    const bool every_op = op == "all";
    std::erase(o.ops, Collective::broadcast);
    if (o.ops.empty() || (!every_op && op.find("broadcast") != std::string::npos))
      throw InvalidArgument(
          "--axes: broadcast has no form along axes (--op allreduce, reduce_scatter or allgather)");
  }
  o.every_algorithm = algo == "all";
  o.algos = cli::parse_algorithms(algo, scheduled_algorithms);
  for (Algorithm a : o.algos)
    if (a == Algorithm::mpi)
      throw InvalidArgument(fmt::format("--algo: '{}' has no schedule to simulate", to_string(a)));
  if (factor < 2) throw InvalidArgument(fmt::format("--factor {} must be at least 2", factor));
  o.sizes = parse_sizes(bytes, factor);
  try {
    o.type = parse_data_type(dtype);
  } catch (const InvalidArgument& ex) {
    throw InvalidArgument(std::string("--dtype: ") + ex.what());
  }
  if (o.format != "table" && o.format != "csv" && o.format != "json")
    throw InvalidArgument("--format: '" + o.format + "' is not table, csv or json");
  o.phases = vm.count("phases") > 0;
  o.calibrate = vm.count("calibrate") > 0;
  o.calibrate_max = parse_size(cal_max, "--calibrate-max");
  if (o.calibrate_max < 1024)
    throw InvalidArgument(fmt::format("--calibrate-max {} must be at least 1K", cal_max));
  if (o.calibrate_iters < 1)
    throw InvalidArgument(
        fmt::format("--calibrate-iters {} must be at least 1", o.calibrate_iters));
  o.compare = cli::split_list(compare);
  if (!o.compare.empty() && !o.calibrate) throw InvalidArgument("--compare: only with --calibrate");
  if (!o.trace.empty() && (o.ops.size() != 1 || o.algos.size() != 1 || o.sizes.size() != 1 ||
                           o.algos[0] == Algorithm::automatic))
    throw InvalidArgument(fmt::format(
        "--trace {}: a timeline is of one call: give one --op, one --algo (not auto) and one "
        "--bytes (here {} ops, {} algorithms, {} sizes)",
        o.trace, o.ops.size(), o.algos.size(), o.sizes.size()));
  return o;
}

std::vector<int> nodes_of(const CommandLine& o) {
  const int n = o.model.topology.chips();
  const int per = o.chips_per_node > 0 ? o.chips_per_node : o.model.topology.size(0);
  std::vector<int> node(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) node[r] = r / per;
  return node;
}

}  // namespace toroid::sim_cli
