// Helpers for tests that run under mpirun: every assertion is on a value agreed by all ranks,
// so one rank's failure fails every rank instead of leaving the others waiting.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

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
// This rank's index on its node and the ranks there (MPI_COMM_TYPE_SHARED), itself included.
inline std::pair<int, int> place_on_my_node() {
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int r = 0, n = 1;
  MPI_Comm_rank(local, &r);
  MPI_Comm_size(local, &n);
  MPI_Comm_free(&local);
  return {r, n};
}
inline int ranks_on_my_node() { return place_on_my_node().second; }
// Nodes the job spans: one per rank that is first on its node.
inline int real_nodes() {
  int first = place_on_my_node().first == 0 ? 1 : 0, nodes = 0;
  MPI_Allreduce(&first, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return nodes;
}
// A file rank 0 writes with `text` and every rank names (one machine's /tmp, or the cluster's
// bind-mounted repository for rank 0's host): a path no other test run uses; rank 0 removes it.
class RankZeroFile {
 public:
  RankZeroFile(const std::string& what, const std::string& text) {
    long pid = static_cast<long>(getpid());
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    path_ = "/tmp/toroid_test_" + what + "_" + std::to_string(pid) + ".txt";
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
      if (std::FILE* f = std::fopen(path_.c_str(), "w")) {
        std::fputs(text.c_str(), f);
        std::fclose(f);
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~RankZeroFile() {
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::remove(path_.c_str());
  }
  RankZeroFile(const RankZeroFile&) = delete;
  RankZeroFile& operator=(const RankZeroFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};
// True on every rank when `ok` is true on every rank.
inline bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

}  // namespace toroid::testing
