// Keeping ranks in step when something goes wrong on only some of them.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "toroid/mpi_helpers.hpp"

namespace toroid {

// run_agreed (toroid/mpi_helpers.hpp): a piece of work that fails on every rank or none.

// Completes `req` (a non-blocking collective every rank must join). With timeout_s > 0 a rank
// that never joins ends the job after that long, with a message naming `what` and `comm`.
void finish_watched(MPI_Request& req, MPI_Comm comm, double timeout_s, const char* what);

// `text` as rank `root` has it, on every rank of comm (collective; the others' `text` is unused).
std::string broadcast_text(MPI_Comm comm, const std::string& text, int root);

// Every rank passes the same named fields; if any field differs between ranks, every rank throws
// InvalidArgument naming the field and which ranks hold which value, e.g.
// "allreduce: count differs between ranks: ranks 0,1,3 have 1048576; rank 2 has 1048552".
struct Field {
  std::string_view name;
  std::int64_t value;
  std::string_view (*show)(std::int64_t) =
      nullptr;  // the value's name in messages (null: the number)
};
void require_agreement(MPI_Comm comm, std::string_view what, const std::vector<Field>& fields,
                       double timeout_s = 0);

// Settings that decide what every rank does must be the same on every rank: a TOROID_* variable
// exported on one host only would make some ranks serve a call (or build a schedule) that the
// others forward, and the job would hang in mismatched collectives. Compares the environment
// variables `names` across `comm` (one small all-gather) and, if any differs, throws
// InvalidArgument on every rank naming the first that differs and which ranks hold which value.
void require_same_environment(MPI_Comm comm, const std::vector<const char*>& names,
                              double timeout_s = 0);

}  // namespace toroid
