#include "api/agreement.hpp"

#include <fmt/format.h>

#include <map>
#include <string>

#include "exec/mpi_check.hpp"
#include "toroid/error.hpp"

namespace toroid::api {
namespace {

enum class ErrorKind : int { none, invalid_argument, topology, mpi, other };

[[noreturn]] void raise(ErrorKind k, const std::string& msg) {
  switch (k) {
    case ErrorKind::invalid_argument: throw InvalidArgument(msg);
    case ErrorKind::topology: throw TopologyError(msg);
    case ErrorKind::mpi: throw MpiError(msg, MPI_ERR_OTHER);
    default: throw Error(msg);
  }
}

}  // namespace

void run_agreed(MPI_Comm comm, const std::function<void()>& f) {
  using exec::mpi_check;
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
  mpi_check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (first == size) return;
  int header[2] = {static_cast<int>(kind), static_cast<int>(msg.size())};
  mpi_check(MPI_Bcast(header, 2, MPI_INT, first, comm), "MPI_Bcast");
  std::string text(static_cast<std::size_t>(header[1]), '\0');
  if (rank == first) text = msg;
  mpi_check(MPI_Bcast(text.data(), header[1], MPI_CHAR, first, comm), "MPI_Bcast");
  if (kind != ErrorKind::none) raise(kind, msg);  // a failing rank reports its own error
  raise(static_cast<ErrorKind>(header[0]), fmt::format("rank {}: {}", first, text));
}

void require_agreement(MPI_Comm comm, std::string_view what, const std::vector<Field>& fields) {
  using exec::mpi_check;
  int size = 1;
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const int n = static_cast<int>(fields.size());
  std::vector<std::int64_t> mine(n), all(static_cast<std::size_t>(n) * size);
  for (int i = 0; i < n; ++i) mine[i] = fields[i].value;
  mpi_check(MPI_Allgather(mine.data(), n, MPI_INT64_T, all.data(), n, MPI_INT64_T, comm),
            "MPI_Allgather");
  for (int i = 0; i < n; ++i) {
    std::map<std::int64_t, std::vector<int>> holders;
    for (int r = 0; r < size; ++r) holders[all[static_cast<std::size_t>(r) * n + i]].push_back(r);
    if (holders.size() == 1) continue;
    std::string detail;
    for (const auto& [value, ranks] : holders)
      detail += fmt::format("{}{} {} {} {}", detail.empty() ? "" : "; ",
                            ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ","),
                            ranks.size() == 1 ? "has" : "have", value);
    throw InvalidArgument(fmt::format("{}: {} differs between ranks: {}", what, fields[i].name, detail));
  }
}

}  // namespace toroid::api
