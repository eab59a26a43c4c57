/* Communicators made every way a program makes them, used through the preload, some freed and
 * the rest left alive at MPI_Finalize, which must return on every rank.
 *
 * Under the preload each communicator gets toroid state the first time a call is served on it,
 * and that state is freed wherever the program lets go: in MPI_Comm_free, or at MPI_Finalize for
 * what is still alive. Each rank gets there on its own, so nothing in that teardown may wait for
 * another rank. To make the ranks' views differ the way real programs do, rank 0 alone frees a
 * few hundred small heap blocks between the first two served calls: from then on its states sit
 * elsewhere in its heap than the other ranks' (an order by address is no longer shared).
 *
 *   finalize alive|free|some
 *     alive: free nothing; free: free every communicator (newest first, the same order on every
 *     rank, as MPI requires); some: free two of them and leave the rest.
 * Prints "rank R returned from MPI_Finalize" on every rank once MPI_Finalize has returned, after
 * "served S wrong W" on rank 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { COUNT = 16384, BLOCKS = 400 }; /* 128 KiB of doubles: the shared-memory path */

static int wrong = 0;

/* Every intercepted collective on c, results checked (a rank without c does nothing). */
static void use(MPI_Comm c, double* in, double* out) {
  if (c == MPI_COMM_NULL) return;
  int rank, size;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  for (int i = 0; i < COUNT; ++i) in[i] = (i % 5) + rank;
  must(MPI_Allreduce(in, out, COUNT, MPI_DOUBLE, MPI_SUM, c), "MPI_Allreduce");
  for (int i = 0; i < COUNT; i += 97)
    wrong += out[i] != (double)((i % 5) * size + size * (size - 1) / 2);
  const int block = COUNT / size;
  must(MPI_Reduce_scatter_block(in, out, block, MPI_DOUBLE, MPI_MAX, c),
       "MPI_Reduce_scatter_block");
  wrong += out[0] != (double)((block * rank) % 5 + size - 1);
  must(MPI_Allgather(in, block, MPI_DOUBLE, out, block, MPI_DOUBLE, c), "MPI_Allgather");
  for (int r = 0; r < size; ++r) wrong += out[r * block + 1] != (double)(1 + r);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const char* mode = argc > 1 ? argv[1] : "alive";
  if (strcmp(mode, "alive") && strcmp(mode, "free") && strcmp(mode, "some")) {
    fprintf(stderr, "finalize: mode '%s' is not alive, free or some\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double* in = malloc(sizeof(double) * COUNT);
  double* out = malloc(sizeof(double) * COUNT);
  void* blocks[BLOCKS];
  for (int i = 0; i < BLOCKS; ++i) blocks[i] = malloc(16 + 16 * (i % 3));

  enum { N = 6 };
  MPI_Comm made[N];
  must(MPI_Comm_dup(MPI_COMM_WORLD, &made[0]), "MPI_Comm_dup");
  must(MPI_Comm_dup(MPI_COMM_WORLD, &made[1]), "MPI_Comm_dup");
  /* Unequal parts, ranks reversed inside each: a third and two thirds. */
  must(MPI_Comm_split(MPI_COMM_WORLD, rank < (size + 2) / 3 ? 0 : 1, size - rank, &made[2]),
       "MPI_Comm_split");
  /* The last rank gets MPI_COMM_NULL (with more than one rank). */
  must(MPI_Comm_split(MPI_COMM_WORLD, size > 1 && rank == size - 1 ? MPI_UNDEFINED : 0, rank,
                      &made[3]),
       "MPI_Comm_split");
  must(MPI_Comm_dup(made[2], &made[4]), "MPI_Comm_dup");
  /* Every rank alone: 1-rank communicators are served too. */
  must(MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &made[5]), "MPI_Comm_split");

  use(made[0], in, out);
  if (rank == 0)
    for (int i = 0; i < BLOCKS; ++i) free(blocks[i]);
  use(made[1], in, out);
  use(MPI_COMM_WORLD, in, out);
  for (int i = N - 1; i >= 2; --i) use(made[i], in, out);

  /* Newest first on every rank: the order MPI requires of a collective free is one every rank
   * holding the communicators shares. */
  for (int i = N - 1; i >= 0; --i) {
    const int freed = !strcmp(mode, "free") || (!strcmp(mode, "some") && (i == 1 || i == 3));
    if (freed && made[i] != MPI_COMM_NULL) must(MPI_Comm_free(&made[i]), "MPI_Comm_free");
  }
  /* What is left is still usable. */
  for (int i = 0; i < N; ++i) use(made[i], in, out);

  int wrong_all = 0;
  must(MPI_Reduce(&wrong, &wrong_all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
  if (rank == 0) printf("served %lld wrong %d\n", served_calls(), wrong_all);
  fflush(stdout);
  if (rank != 0)
    for (int i = 0; i < BLOCKS; ++i) free(blocks[i]);
  free(in);
  free(out);
  MPI_Finalize();
  printf("rank %d returned from MPI_Finalize\n", rank);
  return wrong_all ? 1 : 0;
}
