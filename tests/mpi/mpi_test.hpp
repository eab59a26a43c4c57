// Helpers for tests that run under mpirun: every assertion is on a value agreed by all ranks,
// so one rank's failure fails every rank instead of leaving the others waiting.
#pragma once

#include <mpi.h>

#include <string>

namespace toroid::testing {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}
// True on every rank when `ok` is true on every rank.
inline bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

}  // namespace toroid::testing
