#include "mpi_base/agreement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/who_holds.hpp"
#include "mpi_base/comm_name.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"
#include "toroid/settings.hpp"

namespace toroid {
namespace {

enum class ErrorKind : int { none, invalid_argument, topology, mpi, other };

[[noreturn]] void raise(ErrorKind k, const std::string& msg) {
  switch (k) {
    case ErrorKind::invalid_argument:
      throw InvalidArgument(msg);
    case ErrorKind::topology:
      throw TopologyError(msg);
    case ErrorKind::mpi:
      throw MpiError(msg, MPI_ERR_OTHER);
    default:
      throw Error(msg);
  }
}

}  // namespace

// Without a timeout it just waits; with one it polls, and after timeout_s seconds with the
// request still open reports and ends the job, as the executor's watchdog does for the
// collective proper.
void finish_watched(MPI_Request& req, MPI_Comm comm, double timeout_s, const char* call) {
  if (timeout_s <= 0) {
    mpi_check(MPI_Wait(&req, MPI_STATUS_IGNORE), call);
    return;
  }
  const double since = MPI_Wtime();
  for (int done = 0; !done;) {
    mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), call);
    if (!done && MPI_Wtime() - since > timeout_s) {
      int rank = 0;
      MPI_Comm_rank(comm, &rank);
      fmt::print(stderr,
                 "toroid: rank {}: {} made no progress for {} s "
                 "(TOROID_TIMEOUT) on {}: some rank has not entered the same call (under the "
                 "preload: or does not have it loaded)\n",
                 rank, call, timeout_s, comm_name(comm));
      std::fflush(stderr);
      MPI_Abort(comm, 3);
      std::abort();
    }
  }
}

void run_agreed(MPI_Comm comm, const std::function<void()>& f, double timeout_s) {
  ErrorKind kind = ErrorKind::none;
  std::string msg;
  try {
    f();
  } catch (const InvalidArgument& e) {
    kind = ErrorKind::invalid_argument, msg = e.what();
  } catch (const TopologyError& e) {
    kind = ErrorKind::topology, msg = e.what();
  } catch (const MpiError& e) {
    kind = ErrorKind::mpi, msg = e.what();
  } catch (const Error& e) {
    kind = ErrorKind::other, msg = e.what();
  }
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const int mine = kind == ErrorKind::none ? size : rank;
  int first = size;
  MPI_Request req = MPI_REQUEST_NULL;
  mpi_check(MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm, &req), "MPI_Iallreduce");
  finish_watched(req, comm, timeout_s, "the cross-rank argument check (MPI_Iallreduce)");
  if (first == size) return;
  int first_kind = static_cast<int>(kind);
  mpi_check(MPI_Bcast(&first_kind, 1, MPI_INT, first, comm), "MPI_Bcast");
  const std::string text = broadcast_text(comm, msg, first);
  if (kind != ErrorKind::none) raise(kind, msg);  // a failing rank reports its own error
  raise(static_cast<ErrorKind>(first_kind), fmt::format("rank {}: {}", first, text));
}

std::string broadcast_text(MPI_Comm comm, const std::string& text, int root) {
  int rank = 0;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  long long size = static_cast<long long>(text.size());
  mpi_check(MPI_Bcast(&size, 1, MPI_LONG_LONG, root, comm), "MPI_Bcast");
  std::string out = rank == root ? text : std::string(static_cast<std::size_t>(size), '\0');
  if (size > 0)
    mpi_check(MPI_Bcast(out.data(), static_cast<int>(size), MPI_CHAR, root, comm), "MPI_Bcast");
  return out;
}

void require_agreement(MPI_Comm comm, std::string_view what, const std::vector<Field>& fields,
                       double timeout_s) {
  int size = 1;
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const int n = static_cast<int>(fields.size());
  std::vector<std::int64_t> mine(n), all(static_cast<std::size_t>(n) * size);
  for (int i = 0; i < n; ++i) mine[i] = fields[i].value;
  MPI_Request req = MPI_REQUEST_NULL;
  mpi_check(MPI_Iallgather(mine.data(), n, MPI_INT64_T, all.data(), n, MPI_INT64_T, comm, &req),
            "MPI_Iallgather");
  finish_watched(req, comm, timeout_s, "the cross-rank argument check (MPI_Iallgather)");
  for (int i = 0; i < n; ++i) {
    std::map<std::int64_t, std::vector<int>> holders;
    for (int r = 0; r < size; ++r) holders[all[static_cast<std::size_t>(r) * n + i]].push_back(r);
    if (holders.size() == 1) continue;
    Holders groups;
    for (auto& [value, ranks] : holders)
      groups.emplace_back(
          fields[i].show ? std::string(fields[i].show(value)) : std::to_string(value),
          std::move(ranks));
    throw InvalidArgument(
        fmt::format("{}: {} differs between ranks: {}", what, fields[i].name, who_holds(groups)));
  }
}

namespace {

// Through the table of settings, as every other reader (toroid/settings.hpp).
std::string_view env_value(const char* name) {
  const char* v = setting_from_environment(name);
  return v ? v : "";
}

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

void require_same_environment(MPI_Comm comm, const std::vector<const char*>& names,
                              double timeout_s) {
  int size = 1;
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const int n = static_cast<int>(names.size());
  std::vector<std::uint64_t> mine(static_cast<std::size_t>(n)),
      all(static_cast<std::size_t>(n) * size);
  for (int i = 0; i < n; ++i) mine[i] = fnv1a(env_value(names[i]));
  MPI_Request req = MPI_REQUEST_NULL;
  mpi_check(MPI_Iallgather(mine.data(), n, MPI_UINT64_T, all.data(), n, MPI_UINT64_T, comm, &req),
            "MPI_Iallgather");
  finish_watched(req, comm, timeout_s, "the cross-rank argument check (MPI_Iallgather)");
  for (int i = 0; i < n; ++i) {
    bool same = true;
    for (int r = 1; r < size; ++r)
      same = same && all[static_cast<std::size_t>(r) * n + i] == all[i];
    if (same) continue;
    // Every rank knows the values differ; now gather the values themselves to name them.
    constexpr int kText = 64;
    std::vector<char> text(kText, '\0'), texts(static_cast<std::size_t>(kText) * size);
    const std::string_view v = env_value(names[i]);
    std::copy_n(v.begin(), std::min<std::size_t>(v.size(), kText - 1), text.begin());
    mpi_check(MPI_Allgather(text.data(), kText, MPI_CHAR, texts.data(), kText, MPI_CHAR, comm),
              "MPI_Allgather");
    std::vector<std::string> values;
    for (int r = 0; r < size; ++r)
      values.emplace_back(texts.data() + static_cast<std::size_t>(r) * kText);
    Holders holders = holders_by_first_rank(values);
    for (auto& [value, ranks] : holders) value = value.empty() ? "it unset" : "'" + value + "'";
    throw InvalidArgument(
        fmt::format("{} differs between ranks: {} (every rank must see the same TOROID_* "
                    "settings: export them everywhere, e.g. mpirun -x {})",
                    names[i], who_holds(holders), names[i]));
  }
}

}  // namespace toroid
