#include "bench/report.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>

#include "bench/host_info.hpp"
#include "kernels/table.hpp"
#include "model/selector.hpp"
#include "topology/node_layout.hpp"

namespace toroid::bench {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", c);
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// How the node's senders write shared-memory slots, and the measurement behind `auto`'s choice
// (exec/slot_fill.hpp): a job's rows depend on it where the cores share no cache.
std::string slot_stores_text(const Communicator& comm) {
  if (!comm.uses_shared_memory()) return "-";
  const std::string way(to_string(comm.slot_stores()));
  const std::string measured = comm.slot_stores_measurement();
  if (measured.empty()) return way;
  return fmt::format("{} ({})", way, measured);
}

}  // namespace

RunInfo describe_run(const Settings& s, const std::vector<std::unique_ptr<Communicator>>& comms) {
  const Communicator& comm = *comms.front();
  RunInfo info;
  // "auto (shared memory)" when the transport found ranks to share the node with, "auto (mpi)"
  // when it did not, one entry per transport of the run.
  std::string transports;
  for (std::size_t t = 0; t < comms.size(); ++t)
    transports += fmt::format(
        "{}{} ({})", t ? ", " : "", to_string(s.transports[t]),
        comms[t]->uses_shared_memory() ? "shared memory on the node, mpi beyond" : "mpi");
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, static_cast<std::size_t>(len));
  v = v.substr(0, v.find_first_of("\n,"));
  const auto host = host_info();
  const int per_node = comm.size() / std::max(comm.nodes(), 1);
  info.fields = {
      {"toroid", TOROID_VERSION_STRING},
      {"mpi", v},
      {"ranks", std::to_string(comm.size())},
      {"nodes", std::to_string(comm.nodes())},
      {"rank_order", std::string(comm.node_placement())},
      {"topology", comm.shape().to_string()},
      {"type", std::string(to_string(s.type))},
      {"redop", std::string(to_string(s.op))},
      {"placement", s.in_place ? "in-place" : "out-of-place"},
      {"output_offset", std::to_string(s.output_offset)},
      {"kernel_isa", std::string(kernels::to_string(kernels::active_kernels().isa))},
      {"segment_bytes", std::to_string(comm.segment_bytes())},
      {"transport", transports},
      {"slot_stores", slot_stores_text(comm)},
      {"cores", std::to_string(host.cores)},
      {"hardware_threads", std::to_string(host.pus)},
      {"rank0_binding", host.binding.empty() ? "?" : host.binding},
      {"timeout_s", fmt::format("{}", comm.timeout_seconds())},
      {"iterations", std::to_string(s.iters)},
      {"warmup", std::to_string(s.warmup)},
      {"batch", s.in_place    ? "1 (in place)"
                : s.batch > 0 ? std::to_string(s.batch)
                              : fmt::format("auto (calls per iteration for {:g} us, at most {})",
                                            Settings::kBatchTargetUs, Settings::kMaxBatch)},
      {"buffers", s.memories.size() > 1 ? "user and toroid (ALGO+owned)"
                  : s.memories.front() == Settings::Memory::toroid
                      ? "toroid (Communicator::allocate)"
                      : "user"},
      {"caches",
       s.cold ? fmt::format("cold (buffer sets over 2x the {} last-level cache{})",
                            model::size_text(cache_bytes(s)), s.cache_bytes > 0 ? ", --cache" : "")
              : "warm (the same buffers every iteration)"}};
  if (s.axes)  // after the topology: every row runs along these axes
    info.fields.insert(
        info.fields.begin() + 6,
        {"along", fmt::format("{} (each sub-torus, {}, on its own)", s.axes->to_string(),
                              comm.shape().along(*s.axes).to_string())});
  if (host.cores > 0 && per_node > host.cores)
    info.warnings.push_back(fmt::format(
        "{} ranks per node on {} cores: ranks share cores, timings include waiting for a core",
        per_node, host.cores));
  return info;
}

void Report::begin(const RunInfo& info, int iters) {
  if (format_ == "json") {
    fmt::print(out_, "{{\n  \"run\": {{");
    for (std::size_t i = 0; i < info.fields.size(); ++i)
      fmt::print(out_, "{}\n    {}: {}", i ? "," : "", json_string(info.fields[i].first),
                 json_string(info.fields[i].second));
    fmt::print(out_, "\n  }},\n  \"warnings\": [");
    for (std::size_t i = 0; i < info.warnings.size(); ++i)
      fmt::print(out_, "{}{}", i ? ", " : "", json_string(info.warnings[i]));
    fmt::print(out_, "],\n  \"rows\": [");
    return;
  }
  std::string line;
  for (const auto& [k, v] : info.fields) {
    const std::string item = fmt::format("{} {}", k, v);
    if (line.size() + item.size() > 96) {
      fmt::print(out_, "#{}\n", line);
      line.clear();
    }
    line += "  " + item;
  }
  if (!line.empty()) fmt::print(out_, "#{}\n", line);
  for (const auto& w : info.warnings) fmt::print(out_, "# WARNING: {}\n", w);
  fmt::print(
      out_,
      "# time = median over {} iterations of the slowest rank; vs_mpi = stock time / this time\n",
      iters);
  if (format_ == "csv")
    fmt::print(out_,
               "size,count,type,redop,algo,time_us,min_us,max_us,algbw,busbw,wrong,vs_mpi,"
               "collective,predicted_us,picked,of_copy,vs_mpi_low,vs_mpi_high\n");
  else
    fmt::print(
        out_,
        "{:>15} {:>12} {:>10} {:>5} {:>5} {:>18} {:>11} {:>8} {:>8} {:>6} {:>7} {:>7} {:>11}\n",
        "collective", "size(B)", "count", "type", "redop", "algo", "time(us)", "algbw", "busbw",
        "wrong", "vs_mpi", "of_copy", "vs_mpi_range");
  std::fflush(out_);  // the run is set up: whoever watches the output sees it before the first row
}

void Report::row(const Row& r, bool has_baseline) {
  const std::string vs = has_baseline ? fmt::format("{:.2f}", r.vs_mpi) : "-";
  const bool ranged = has_baseline && r.vs_mpi_high > 0;  // --rounds: the rounds' own ratios
  // A ratio of the range, or `none` (JSON's null, CSV's empty field) without one.
  const auto ratio = [&](double v, const char* none) {
    return ranged ? fmt::format("{:.4f}", v) : std::string(none);
  };
  if (format_ == "json") {
    fmt::print(out_,
               "{}\n    {{\"collective\": \"{}\", \"size\": {}, \"count\": {}, \"type\": \"{}\", "
               "\"redop\": \"{}\", "
               "\"algo\": \"{}\", \"time_us\": {:.3f}, \"min_us\": {:.3f}, \"max_us\": {:.3f}, "
               "\"algbw\": {:.4f}, "
               "\"busbw\": {:.4f}, \"wrong\": {}, \"vs_mpi\": {}, \"predicted_us\": {}, "
               "\"picked\": \"{}\", \"of_copy\": {}, \"vs_mpi_low\": {}, \"vs_mpi_high\": {}}}",
               first_row_ ? "" : ",", r.coll, r.bytes, r.count, r.type, r.redop, r.algo,
               r.median_us, r.min_us, r.max_us, r.algbw, r.busbw, r.wrong,
               has_baseline ? fmt::format("{:.4f}", r.vs_mpi) : "null",
               r.predicted_us > 0 ? fmt::format("{:.3f}", r.predicted_us) : "null", r.picked,
               r.of_copy > 0 ? fmt::format("{:.4f}", r.of_copy) : "null",
               ratio(r.vs_mpi_low, "null"), ratio(r.vs_mpi_high, "null"));
  } else if (format_ == "csv") {
    fmt::print(out_, "{},{},{},{},{},{:.2f},{:.2f},{:.2f},{:.4f},{:.4f},{},{},{},{},{},{},{},{}\n",
               r.bytes, r.count, r.type, r.redop, r.algo, r.median_us, r.min_us, r.max_us, r.algbw,
               r.busbw, r.wrong, has_baseline ? fmt::format("{:.4f}", r.vs_mpi) : "", r.coll,
               r.predicted_us > 0 ? fmt::format("{:.2f}", r.predicted_us) : "", r.picked,
               r.of_copy > 0 ? fmt::format("{:.4f}", r.of_copy) : "", ratio(r.vs_mpi_low, ""),
               ratio(r.vs_mpi_high, ""));
  } else {
    fmt::print(out_,
               "{:>15} {:>12} {:>10} {:>5} {:>5} {:>18} {:>11.1f} {:>8.2f} {:>8.2f} {:>6} {:>7} "
               "{:>7} {:>11}\n",
               r.coll, r.bytes, r.count, r.type, r.redop, r.algo, r.median_us, r.algbw, r.busbw,
               r.wrong, vs, r.of_copy > 0 ? fmt::format("{:.0f}%", 100 * r.of_copy) : "-",
               ranged ? fmt::format("{:.2f}-{:.2f}", r.vs_mpi_low, r.vs_mpi_high) : "-");
  }
  first_row_ = false;
  std::fflush(out_);
}

void Report::end() {
  if (format_ == "json") fmt::print(out_, "\n  ]\n}}\n");
  std::fflush(out_);
}

}  // namespace toroid::bench
