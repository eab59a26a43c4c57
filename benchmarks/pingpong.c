/* Point-to-point latency, and nothing else: two ranks hand a message back and forth, 8 B to
 * 64 KiB, and rank 0 prints the best half round trip per size of several rounds. The program
 * makes no collective call at all (ranks meet with a ping first), so under the preload what it
 * measures is what the preload costs a program's own MPI calls: the thread level it asks MPI
 * for (docs/preload.md). benchmarks/preload_p2p_cost.py runs it with and without.
 *
 *   toroid-pingpong [single|funneled|multiple]   the level the program itself asks for
 * Output (rank 0): one line per size, "bytes <b> half_rtt_us <t> level <MPI_Query_thread>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double half_round_trip(char* buf, int bytes, int iters, int rank) {
  const double t = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - t) / iters / 2 * 1e6;
}

int main(int argc, char** argv) {
  const char* level = argc > 1 ? argv[1] : "single";
  int provided = 0;
  if (strcmp(level, "single") == 0)
    MPI_Init(&argc, &argv);
  else
    MPI_Init_thread(&argc, &argv,
                    strcmp(level, "multiple") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED,
                    &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "toroid-pingpong: run at 2 ranks (got %d)\n", size);
    MPI_Finalize();
    return 2;
  }
  MPI_Query_thread(&provided);
  char* buf = calloc(1, 65536);
  for (int bytes = 8; bytes <= 65536; bytes *= 2) {
    const int iters = bytes <= 4096 ? 5000 : 1000;
    half_round_trip(buf, bytes, iters / 5, rank); /* warm, and the ranks meet */
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      const double t = half_round_trip(buf, bytes, iters, rank);
      best = t < best ? t : best;
    }
    if (rank == 0) printf("bytes %d half_rtt_us %.4f level %d\n", bytes, best, provided);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
