// toroid-bench's output: a header block describing the run, then one row per measurement, as a
// table, CSV (header block as '#' lines, then the named columns) or JSON.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "measure/measure.hpp"

namespace toroid::bench {

// What the run was: (key, value) pairs, plus warnings.
struct RunInfo {
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<std::string> warnings;
};

// Collective over comm (hwloc and MPI queries); meaningful on every rank.
// `comms`: one communicator per requested transport, in the order of s.transports.
RunInfo describe_run(const Settings& s, const std::vector<std::unique_ptr<Communicator>>& comms);

class Report {
 public:
  Report(std::FILE* out, std::string format) : out_(out), format_(std::move(format)) {}
  void begin(const RunInfo& info, int iters);
  void row(const Row& r, bool has_baseline);
  void end();

 private:
  std::FILE* out_;
  std::string format_;
  bool first_row_ = true;
};

}  // namespace toroid::bench
