/* Communicators created, used by every intercepted collective, and freed, over and over. Under
 * the preload each one gets toroid state (duplicate and row/column communicators, schedules,
 * scratch) that the attribute's delete callback must free when the program frees the
 * communicator. Prints, on rank 0, resident memory after iteration 100 and after the last
 * (largest over ranks), and the calls toroid served on rank 0:
 *   rss_kib_100 <k> rss_kib_last <k> served <n>
 *   churn [iterations=1000] */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

enum { COUNT = 16384 }; /* 128 KiB of doubles: large enough for toroid, and for a leak to show */

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int iterations = argc > 1 ? atoi(argv[1]) : 1000;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int block = COUNT / size;
  double* in = malloc(sizeof(double) * COUNT);
  double* out = malloc(sizeof(double) * COUNT);
  for (int i = 0; i < COUNT; ++i) in[i] = i % 7;
  long rss[2] = {0, 0}, worst[2] = {0, 0};
  int wrong = 0;
  for (int it = 1; it <= iterations; ++it) {
    /* Duplicates and splits alternate: both ways of making a communicator. */
    MPI_Comm c;
    if (it % 2)
      must(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup");
    else
      must(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c), "MPI_Comm_split");
    must(MPI_Allreduce(in, out, COUNT, MPI_DOUBLE, MPI_SUM, c), "MPI_Allreduce");
    wrong += out[COUNT - 1] != (double)((COUNT - 1) % 7 * size);
    must(MPI_Reduce_scatter_block(in, out, block, MPI_DOUBLE, MPI_MAX, c),
         "MPI_Reduce_scatter_block");
    must(MPI_Allgather(in, block, MPI_DOUBLE, out, block, MPI_DOUBLE, c), "MPI_Allgather");
    wrong += out[block * size - 1] != (double)((block - 1) % 7);
    MPI_Comm_free(&c);
    if (it == 100) rss[0] = resident_kib();
    if (it == iterations) rss[1] = resident_kib();
  }
  must(MPI_Reduce(rss, worst, 2, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD), "MPI_Reduce");
  int wrong_all = 0;
  must(MPI_Reduce(&wrong, &wrong_all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
  if (rank == 0)
    printf("rss_kib_100 %ld rss_kib_last %ld served %lld wrong %d\n", worst[0], worst[1],
           served_calls(), wrong_all);
  free(in);
  free(out);
  MPI_Finalize();
  return wrong_all ? 1 : 0;
}
