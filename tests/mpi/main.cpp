// Catch2 under mpirun: every rank runs every test; only rank 0 reports, and the exit status
// is failing when any rank failed. Catch2's implementation is tests/catch_impl.cpp.
#include <mpi.h>

#include <fstream>
#include <iostream>
#include <string>

#include "catch_run.hpp"

int main(int argc, char** argv) {
  // MPI_THREAD_MULTIPLE: the progress-thread tests need it (test_nonblocking.cpp).
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Ranks other than 0 report into a file of their own, shown only when that rank failed.
  const std::string log = "toroid_mpi_tests.rank" + std::to_string(rank) + ".log";
  bool command_line_ok = true;
  const int failed =
      toroid_test::run_catch(argc, argv, rank != 0 ? log : std::string(), command_line_ok);
  if (!command_line_ok) {
    MPI_Finalize();
    return failed;
  }
  if (rank != 0 && failed) {
    std::ifstream in(log);
    std::cerr << "---- rank " << rank << " ----\n" << in.rdbuf();
  }
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
