// toroid-sim's output: one row per (collective, algorithm, size) as a table, CSV or JSON, with
// the model in a header ('#' lines, or a "model" object).
#pragma once

#include <cstdio>
#include <string>

#include "model/simulator.hpp"
#include "sim/options.hpp"

namespace toroid::sim_cli {

struct Row {
  Collective op;
  Algorithm algo;
  std::uint64_t bytes;
  model::SimResult result;
  double wall_s;             // how long the simulation took here
  Algorithm picked = algo;   // auto: what it chose
  std::string name() const;  // "swing", or "auto:swing"
};

class Report {
 public:
  Report(std::FILE* out, const CommandLine& o) : out_(out), o_(o) {}
  void begin();
  void row(const Row& r);
  void end();

 private:
  std::FILE* out_;
  const CommandLine& o_;
  bool first_ = true;
};

std::string link_name(const Torus& t, int link);  // "37+x": chip 37's +x link direction

// --links: one line per (row, link direction): op, algo, bytes, x, y, dir, link bytes, busy
// seconds, busy / the row's time. The header names the shape and wraparound.
void write_links_header(std::FILE* f, const CommandLine& o);
void write_links(std::FILE* f, const CommandLine& o, const Row& r);

}  // namespace toroid::sim_cli
