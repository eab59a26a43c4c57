// Catch2 under mpirun: every rank runs every test; only rank 0 reports, and the exit status
// is failing when any rank failed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv); rc != 0) {
    MPI_Finalize();
    return rc;
  }
  if (rank != 0) session.configData().outputFilename = "/dev/null";
  const int failed = session.run();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
