#include "pmpi/settings.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

#include "api/config.hpp"
#include "core/config_values.hpp"
#include "core/parse_size.hpp"
#include "mpi_base/agreement.hpp"
#include "pmpi/guard.hpp"
#include "pmpi/thread_level.hpp"
#include "toroid/error.hpp"
#include "toroid/settings.hpp"

namespace toroid::pmpi {
namespace {

// Every variable is read through the table of settings (toroid/settings.hpp).
std::string_view env(const char* name) {
  const char* v = setting_from_environment(name);
  return v ? v : "";
}

PreloadConfig read_preload_config() {
  PreloadConfig s;
  try {
    if (const std::string_view v = env("TOROID_MIN_BYTES"); !v.empty())
      s.min_bytes = parse_size(v, "TOROID_MIN_BYTES");
    if (const std::string_view level = env("TOROID_THREAD_LEVEL"); level == "multiple")
      s.thread_floor = MPI_THREAD_MULTIPLE;
    else if (level == "funneled")
      s.thread_floor = MPI_THREAD_FUNNELED;
    else if (!level.empty() && level != "program")
      throw InvalidArgument("TOROID_THREAD_LEVEL: '" + std::string(level) +
                            "' is not program, funneled or multiple");
    if (const std::string_view log = env("TOROID_LOG"); !log.empty())
      s.log_info = parse_log(log, "TOROID_LOG");
  } catch (const Error& e) {
    s.error = e.what();
    s.min_bytes = 0;
  }
  return s;
}

PreloadConfig& mutable_preload_config() {
  static PreloadConfig s = read_preload_config();
  return s;
}

// How long MPI_Init's comparison waits for every rank: TOROID_TIMEOUT where that is longer (a
// malformed one is reported by the first Communicator built; here it leaves the floor).
double init_timeout_s() {
  constexpr double floor_s = 60;
  const std::string_view v = env("TOROID_TIMEOUT");
  if (v.empty()) return floor_s;
  try {
    return std::max(floor_s, parse_seconds(v, "TOROID_TIMEOUT"));
  } catch (const InvalidArgument&) {
    return floor_s;
  }
}

}  // namespace

const PreloadConfig& preload_config() { return mutable_preload_config(); }

void agree_on_settings() noexcept {
  ToroidScope inside;  // the comparison's own collectives go to MPI
  try {
    std::vector<const char*> names = api::variables_read(Options{});
    for (const Setting& v : toroid::settings())  // the preload's own (MIN_BYTES, THREAD_LEVEL)
      if (v.scope == SettingScope::preload && v.must_agree) names.push_back(v.variable.data());
    // A rank without the preload never joins the comparison; rather than wait for it for good,
    // give up after a while with a message (the first served call would hang anyway).
    toroid::require_same_environment(MPI_COMM_WORLD, names, init_timeout_s());
    agree_on_thread_level();  // every rank got here: the job's lowest level, for plan.cpp
  } catch (const Error& e) {
    PreloadConfig& s = mutable_preload_config();
    s.error = e.what();
    s.min_bytes = 0;
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
      fmt::print(stderr, "toroid: MPI_Init: {}\n", e.what());
      std::fflush(stderr);
    }
  }
}

}  // namespace toroid::pmpi
