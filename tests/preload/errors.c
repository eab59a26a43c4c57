/* A toroid error under the preload reaches the program through the communicator's error
 * handler, as an MPI error code, never as a crash.
 *   errors handler : a handler of the program's own on MPI_COMM_WORLD records each code. Two
 *                    MPI_Allreduce calls that toroid would serve must each fail, return the
 *                    code the handler saw, and carry toroid's message in MPI_Error_string; a
 *                    call below TOROID_MIN_BYTES (left to MPI) must still work. Rank 0 prints
 *                    "class <arg|topology|other> handler_calls <n> message <text>".
 *   errors fatal   : the default handler (MPI_ERRORS_ARE_FATAL) must end the job. */
#include <stdio.h>
#include <string.h>

#include "common.h"

static int handler_calls, last_code;

static void record(MPI_Comm* comm, int* code, ...) {
  (void)comm;
  ++handler_calls;
  last_code = *code;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int handled = argc > 1 && strcmp(argv[1], "handler") == 0;
  if (handled) {
    MPI_Errhandler h;
    must(MPI_Comm_create_errhandler(record, &h), "MPI_Comm_create_errhandler");
    must(MPI_Comm_set_errhandler(MPI_COMM_WORLD, h), "MPI_Comm_set_errhandler");
    MPI_Errhandler_free(&h);
  }
  enum { N = 1 << 16 };
  static float data[N];
  int codes[2], same = 1;
  for (int k = 0; k < 2; ++k) {
    codes[k] = MPI_Allreduce(MPI_IN_PLACE, data, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    same = same && codes[k] != MPI_SUCCESS && codes[k] == last_code;
  }
  /* Two floats are under any TOROID_MIN_BYTES the tests use: stock MPI serves them. */
  float small[2] = {1, 1};
  const int small_rc = MPI_Allreduce(MPI_IN_PLACE, small, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  int cls = 0, len = 0;
  char text[MPI_MAX_ERROR_STRING] = "";
  MPI_Error_class(codes[0], &cls);
  MPI_Error_string(codes[0], text, &len);
  if (rank == 0)
    printf("class %s handler_calls %d same_code %d small_call %s message %.*s\n",
           cls == MPI_ERR_ARG        ? "arg"
           : cls == MPI_ERR_TOPOLOGY ? "topology"
                                     : "other",
           handler_calls, same,
           small_rc == MPI_SUCCESS && small[0] == (float)size ? "ok" : "failed", len, text);
  MPI_Finalize();
  return 0;
}
