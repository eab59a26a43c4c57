// toroid-sim: toroid's schedules, exactly as the MPI executor would run them, costed on a model
// of a torus of chips of 1 to 6 dimensions (lib/model/simulator.hpp; docs/simulator.md).
//
//   toroid-sim --preset tpu-v3-multipod --op allreduce --algo torus2d,ring --bytes 1K:1G
//   scripts/mpirun.sh -np 2 toroid-sim --calibrate --compare np2.csv,np4.csv
//
// Exit status: 0 ok, 1 a schedule failed to simulate (deadlock, size mismatch), 2 bad input.
#include <fmt/format.h>
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "model/selector.hpp"
#include "model/timeline.hpp"
#include "sim/calibrate.hpp"
#include "sim/options.hpp"
#include "sim/report.hpp"

using namespace toroid;
using namespace toroid::sim_cli;

namespace {

// `auto` on the modeled torus: above kMaxModeledRanks chips the rule the library follows at
// that scale (model::fixed_rule), else what the selector does (every candidate priced, the
// fastest wins; here on the torus's own links). Along axes the same for the sub-torus, priced
// on it alone (its groups share no link), the pick then run along the axes.
model::SimResult simulate_auto(const sim_cli::CommandLine& o, const schedule::Spec& r,
                               const std::vector<int>& nodes, Algorithm& picked) {
  const model::SimModel priced = o.axes ? model::model_along(o.model, *o.axes) : o.model;
  schedule::Spec alone = r;
  alone.axes.reset();
  const Torus& t = priced.topology;
  std::optional<model::SimResult> best;
  if (t.chips() > model::kMaxModeledRanks) {
    picked = model::fixed_rule(r.collective, r.count * size_of(o.type), t);
  } else {
    for (Algorithm a : all_algorithms) {
      if (!has_schedule(a) || !implements(a, r.collective)) continue;
      model::SimResult res;
      try {
        res = model::simulate_collective(priced, a, alone, o.type,
                                         o.axes ? std::vector<int>{} : nodes);
      } catch (const InvalidArgument&) {
        continue;  // cannot run on this shape
      }
      if (res.error.empty() && (!best || res.time_s < best->time_s)) {
        best = std::move(res);
        picked = a;
      }
    }
    if (!best) throw InvalidArgument("auto: no algorithm can run this collective here");
    if (!o.axes) return *best;
  }
  return model::simulate_collective(o.model, picked, r, o.type, nodes);
}

}  // namespace

int main(int argc, char** argv) {
  sim_cli::CommandLine o;
  try {
    bool help = false;
    std::string help_text;
    o = parse_options(argc, argv, help, help_text);
    if (help) {
      std::cout << help_text;
      return 0;
    }
  } catch (const Error& ex) {
    fmt::print(stderr, "toroid-sim: {}\n", ex.what());
    return 2;
  }
  std::FILE* out = stdout;
  if (!o.output.empty() && !(out = std::fopen(o.output.c_str(), "w"))) {
    fmt::print(stderr, "toroid-sim: --output: cannot open '{}' for writing\n", o.output);
    return 2;
  }
  if (o.calibrate) return run_calibration(argc, argv, o, out);

  // Every rank's schedule is built, compacted and freed in turn; keeping freed memory in the
  // process (instead of returning it to the system each time) halves the time of 4096-rank rings.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const std::vector<int> nodes = nodes_of(o);
  std::FILE* links = nullptr;  // opened before any row is printed: a bad path prints nothing
  if (!o.links.empty()) {
    if (!(links = std::fopen(o.links.c_str(), "w"))) {
      fmt::print(stderr, "toroid-sim: --links: cannot open '{}' for writing\n", o.links);
      return 2;
    }
    write_links_header(links, o);
  }
  std::FILE* trace = nullptr;
  if (!o.trace.empty() && !(trace = std::fopen(o.trace.c_str(), "w"))) {
    fmt::print(stderr, "toroid-sim: --trace: cannot open '{}' for writing\n", o.trace);
    return 2;
  }
  std::vector<model::RankTimeline> timeline;
  Report report(out, o);
  report.begin();
  int status = 0;
  for (Collective c : o.ops)
    for (Algorithm a : o.algos) {
      if (!implements(a, c)) continue;  // e.g. swing: all-reduce only
      for (std::uint64_t bytes : o.sizes) {
        schedule::Spec r;
        r.collective = c;
        r.count = bytes / size_of(o.type);
        r.axes = o.axes;
        const auto t0 = std::chrono::steady_clock::now();
        Row row{c, a, bytes, {}, 0.0};
        try {
          if (a == Algorithm::automatic)
            row.result = simulate_auto(o, r, nodes, row.picked);
          else
            row.result = model::simulate_collective(o.model, a, r, o.type, nodes,
                                                    trace ? &timeline : nullptr);
        } catch (const InvalidArgument& ex) {
          // A shape the algorithm does not take (swing on three dimensions): with --algo all a
          // note, named by the caller an error.
          fmt::print(stderr, "toroid-sim: {}{}\n", ex.what(),
                     o.every_algorithm ? " (skipped)" : "");
          if (!o.every_algorithm) status = 2;
          break;
        }
        row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!row.result.error.empty()) status = 1;
        report.row(row);
        if (links) write_links(links, o, row);
        std::fflush(out);
      }
    }
  report.end();
  if (trace) {
    std::vector<std::string> events;
    events.reserve(timeline.size());
    for (const model::RankTimeline& t : timeline) events.push_back(model::chrome_trace_events(t));
    const std::string file = model::chrome_trace_file(events, "toroid-sim, modeled", 0);
    std::fwrite(file.data(), 1, file.size(), trace);
    std::fclose(trace);
  }
  if (links) std::fclose(links);
  if (out != stdout) std::fclose(out);
  return status;
}
