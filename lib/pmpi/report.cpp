#include "pmpi/report.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "pmpi/settings.hpp"

namespace toroid::pmpi {
namespace {

bool world_root() {
  static const bool root = [] {
    int rank = -1;
    return PMPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS && rank == 0;
  }();
  return root;
}

std::string type_name(MPI_Datatype type) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  if (PMPI_Type_get_name(type, name, &len) != MPI_SUCCESS || len == 0) return "a derived datatype";
  return std::string(name, static_cast<std::size_t>(len));
}

std::atomic<unsigned long long> served_calls{0};

}  // namespace

void note_served() noexcept { served_calls.fetch_add(1, std::memory_order_relaxed); }
unsigned long long served_count() noexcept { return served_calls.load(std::memory_order_relaxed); }

void report(const char* call, const Decision& d, MPI_Datatype type) noexcept {
  if (!preload_config().log_info || (!d.plan && !d.why) || !world_root()) return;
  try {
    std::string line = d.plan ? fmt::format("toroid: {}: served by toroid", call)
                              : fmt::format("toroid: {}: forwarded to MPI: {}", call, d.why);
    if (d.why == kNoTypeTwin) line += " (" + type_name(type) + ")";
    static std::mutex mutex;
    static std::set<std::string> said;
    const std::lock_guard<std::mutex> lock(mutex);
    if (!said.insert(line).second) return;
    fmt::print(stderr, "{}\n", line);
    std::fflush(stderr);
  } catch (...) {
    // The account is a convenience: a call is never failed for it.
  }
}

}  // namespace toroid::pmpi
