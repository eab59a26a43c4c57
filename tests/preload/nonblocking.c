/* The non-blocking collectives through the preload: every served call against MPI's own
 * blocking call on the same inputs (PMPI_, which the preload never sees), requests completed
 * in every way MPI offers and mixed with point-to-point and forwarded ones, MPI_Cancel and
 * persistent collectives (MPI_<call>_init or MPIX_<call>_init, MPI_Start, MPI_Startall) run for
 * several rounds with new inputs and completed every way, MPI_Request_free on served
 * requests (both erroneous in MPI for a collective; the preload
 * gives them a defined outcome), a rank that blocks in MPI_Recv while the collective it
 * started must progress, and requests never waited for at MPI_Finalize. Built against MPI only.
 *
 *   nonblocking [LEVEL] [forwarded]   LEVEL: the thread level the program asks for: multiple
 *                          (MPI_Init_thread(MPI_THREAD_MULTIPLE), the default), serialized,
 *                          funneled, or single (plain MPI_Init). toroid serves every eligible
 *                          call at each; `forwarded`: the run expects them all forwarded
 *                          (the script makes it so, e.g. TOROID_TRANSPORT=mpi below MULTIPLE).
 *                          Under TOROID_THREAD_LEVEL=multiple the preload asks MPI for
 *                          MULTIPLE whatever the program asked, and serves them all.
 *                          The program must see the level it asked for (provided and
 *                          MPI_Query_thread), whatever the preload asked MPI for.
 *   nonblocking overlap N [LEVEL]  MiB: time start + compute + wait against the parts alone
 *
 * Inputs are small integers, so every result is exact in any order of reduction: each element
 * is compared with the stock result. Output (rank 0): "served <n> expected <m> wrong <w>", and
 * after MPI_Finalize "late <w>" for the requests settled there. Exit 1 on anything wrong. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

/* The persistent collectives: MPI-4's names (MPICH 4), or Open MPI 4.1's MPIX_ extension. */
#if MPI_VERSION >= 4
#define PERSISTENT(call) MPI_##call##_init
#elif defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#define PERSISTENT(call) MPIX_##call##_init
#endif

static int rank, size;
static int served_here = 1;             /* whether the run expects eligible calls served */
static int asked = MPI_THREAD_MULTIPLE; /* the thread level the program asks for */
static long long wrong, expected;

static void fill(float* v, int n, int seed) {
  for (int i = 0; i < n; ++i) v[i] = (float)((seed * 31 + i * 7) % 19 - 9);
}
static void compare(const char* what, const void* got, const void* want, size_t bytes) {
  if (memcmp(got, want, bytes) == 0) return;
  ++wrong;
  fprintf(stderr, "rank %d: %s differs from MPI's result\n", rank, what);
}
/* A served call counts only where the run serves them (else it is forwarded). */
static void serves(int n) { expected += served_here ? n : 0; }

static void check_status(const char* what, const MPI_Status* s) {
  int count = -1;
  MPI_Get_count(s, MPI_BYTE, &count);
  if (served_here && (s->MPI_SOURCE != MPI_ANY_SOURCE || s->MPI_TAG != MPI_ANY_TAG || count != 0)) {
    ++wrong;
    fprintf(stderr, "rank %d: %s: status source %d tag %d count %d, not an empty status\n", rank,
            what, s->MPI_SOURCE, s->MPI_TAG, count);
  }
}

/* Every served call, in place and not, against PMPI's blocking call. */
static void each_call(int n) {
  const int total = n * size;
  float* in = malloc(sizeof(float) * (size_t)total);
  float* out = malloc(sizeof(float) * (size_t)total);
  float* ref = malloc(sizeof(float) * (size_t)total);
  int* counts = malloc(sizeof(int) * (size_t)size);
  int* displs = malloc(sizeof(int) * (size_t)size);
  MPI_Request r;
  MPI_Status st;
  for (int in_place = 0; in_place < 2; ++in_place) {
    /* all-reduce */
    fill(in, n, rank);
    memcpy(out, in, sizeof(float) * (size_t)n);
    must(MPI_Iallreduce(in_place ? MPI_IN_PLACE : in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                        &r),
         "MPI_Iallreduce");
    must(MPI_Wait(&r, &st), "MPI_Wait");
    check_status("MPI_Iallreduce", &st);
    must(PMPI_Allreduce(in, ref, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "PMPI_Allreduce");
    compare("MPI_Iallreduce", out, ref, sizeof(float) * (size_t)n);
    serves(1);
    /* reduce-scatter (block, and the block rule's uneven counts) */
    fill(in, total, rank);
    memcpy(out, in, sizeof(float) * (size_t)total);
    must(MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : in, out, n, MPI_FLOAT, MPI_MAX,
                                   MPI_COMM_WORLD, &r),
         "MPI_Ireduce_scatter_block");
    must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    must(PMPI_Reduce_scatter_block(in, ref, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD),
         "PMPI_Reduce_scatter_block");
    compare("MPI_Ireduce_scatter_block", out, ref, sizeof(float) * (size_t)n);
    serves(1);
    const int uneven = total - 1 > 0 ? total - 1 : 1;
    for (int q = 0; q < size; ++q) counts[q] = uneven / size + (q < uneven % size);
    fill(in, uneven, rank + 3);
    memcpy(out, in, sizeof(float) * (size_t)uneven);
    must(MPI_Ireduce_scatter(in_place ? MPI_IN_PLACE : in, out, counts, MPI_FLOAT, MPI_SUM,
                             MPI_COMM_WORLD, &r),
         "MPI_Ireduce_scatter");
    must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    must(PMPI_Reduce_scatter(in, ref, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
         "PMPI_Reduce_scatter");
    compare("MPI_Ireduce_scatter", out, ref, sizeof(float) * (size_t)counts[rank]);
    serves(1);
    /* all-gather, and all-gatherv in the rule's layout and in reversed rank order */
    fill(in, n, rank + 5);
    memset(out, 0, sizeof(float) * (size_t)total);
    if (in_place) memcpy(out + (size_t)rank * (size_t)n, in, sizeof(float) * (size_t)n);
    must(MPI_Iallgather(in_place ? MPI_IN_PLACE : in, n, MPI_FLOAT, out, n, MPI_FLOAT,
                        MPI_COMM_WORLD, &r),
         "MPI_Iallgather");
    must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    must(PMPI_Allgather(in, n, MPI_FLOAT, ref, n, MPI_FLOAT, MPI_COMM_WORLD), "PMPI_Allgather");
    compare("MPI_Iallgather", out, ref, sizeof(float) * (size_t)total);
    serves(1);
    for (int reversed = 0; reversed < 2; ++reversed) {
      int at = 0;
      for (int q = 0; q < size; ++q) counts[q] = uneven / size + (q < uneven % size);
      for (int k = 0; k < size; ++k) {
        const int q = reversed ? size - 1 - k : k;
        displs[q] = at;
        at += counts[q];
      }
      fill(in, counts[rank], rank + 7);
      memset(out, 0, sizeof(float) * (size_t)uneven);
      if (in_place) memcpy(out + displs[rank], in, sizeof(float) * (size_t)counts[rank]);
      must(MPI_Iallgatherv(in_place ? MPI_IN_PLACE : in, counts[rank], MPI_FLOAT, out, counts,
                           displs, MPI_FLOAT, MPI_COMM_WORLD, &r),
           "MPI_Iallgatherv");
      must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
      must(PMPI_Allgatherv(in, counts[rank], MPI_FLOAT, ref, counts, displs, MPI_FLOAT,
                           MPI_COMM_WORLD),
           "PMPI_Allgatherv");
      compare("MPI_Iallgatherv", out, ref, sizeof(float) * (size_t)uneven);
      serves(1);
    }
  }
  /* all-to-all (n elements a block: the whole vector n * size), and all-to-allv with skewed
   * counts (rank r sends q (r + 2q) % 3 * n / 2 elements, some none), blocks packed */
  fill(in, total, rank + 9);
  memset(out, 0, sizeof(float) * (size_t)total);
  must(MPI_Ialltoall(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD, &r), "MPI_Ialltoall");
  must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
  must(PMPI_Alltoall(in, n, MPI_FLOAT, ref, n, MPI_FLOAT, MPI_COMM_WORLD), "PMPI_Alltoall");
  compare("MPI_Ialltoall", out, ref, sizeof(float) * (size_t)total);
  serves(1);
  int* rcounts = malloc(sizeof(int) * (size_t)size);
  int* rdispls = malloc(sizeof(int) * (size_t)size);
  int sent = 0, received = 0;
  for (int q = 0; q < size; ++q) {
    counts[q] = (rank + 2 * q) % 3 * n / 2;
    displs[q] = sent, sent += counts[q];
    rcounts[q] = (q + 2 * rank) % 3 * n / 2;
    rdispls[q] = received, received += rcounts[q];
  }
  fill(in, sent, rank + 13);
  memset(out, 0, sizeof(float) * (size_t)received);
  must(MPI_Ialltoallv(in, counts, displs, MPI_FLOAT, out, rcounts, rdispls, MPI_FLOAT,
                      MPI_COMM_WORLD, &r),
       "MPI_Ialltoallv");
  must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
  must(PMPI_Alltoallv(in, counts, displs, MPI_FLOAT, ref, rcounts, rdispls, MPI_FLOAT,
                      MPI_COMM_WORLD),
       "PMPI_Alltoallv");
  compare("MPI_Ialltoallv", out, ref, sizeof(float) * (size_t)received);
  /* An alltoallv's messages go over MPI, which the progress thread calls only under MULTIPLE
   * (asked for by the program, or by the preload for it). */
  const char* floor = getenv("TOROID_THREAD_LEVEL");
  if (asked == MPI_THREAD_MULTIPLE || (floor && strcmp(floor, "multiple") == 0)) serves(1);
  free(rcounts), free(rdispls);
  /* broadcast from the last rank */
  fill(out, n, rank == size - 1 ? 11 : rank + 40);
  fill(ref, n, 11);
  must(MPI_Ibcast(out, n, MPI_FLOAT, size - 1, MPI_COMM_WORLD, &r), "MPI_Ibcast");
  must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
  compare("MPI_Ibcast", out, ref, sizeof(float) * (size_t)n);
  serves(1);
  free(in), free(out), free(ref), free(counts), free(displs);
}

/* Every served type and op: MPI_Iallreduce and MPI_Ireduce_scatter_block, in place and not,
 * against PMPI's blocking calls on the same exact small-integer inputs. */
static void types_and_ops(void) {
  const MPI_Datatype types[] = {MPI_FLOAT,     MPI_DOUBLE,  MPI_INT,    MPI_LONG,
                                MPI_LONG_LONG, MPI_INT32_T, MPI_INT64_T};
  const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  enum { N = 777 };
  static char in[8 * N * 16], out[8 * N * 16], ref[8 * N * 16];
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t)
    for (int o = 0; o < 4; ++o)
      for (int in_place = 0; in_place < 2; ++in_place) {
        int es = 0;
        MPI_Type_size(types[t], &es);
        const int total = N * size;
        for (int i = 0; i < total; ++i) {
          const long long v = o == 0   ? (rank * 31 + i * 7) % 19 - 9
                              : o == 1 ? ((rank + i) % 3 == 0   ? 2
                                          : (rank + i) % 3 == 1 ? -1
                                                                : 1)
                                       : (rank * 13 + i * 5) % 101 - 50;
          char* at = in + (size_t)i * (size_t)es;
          if (types[t] == MPI_FLOAT)
            *(float*)at = (float)v;
          else if (types[t] == MPI_DOUBLE)
            *(double*)at = (double)v;
          else if (es == 4)
            *(int32_t*)at = (int32_t)v;
          else
            *(int64_t*)at = (int64_t)v;
        }
        MPI_Request r;
        memcpy(out, in, (size_t)total * (size_t)es);
        must(MPI_Iallreduce(in_place ? MPI_IN_PLACE : in, out, N, types[t], ops[o], MPI_COMM_WORLD,
                            &r),
             "MPI_Iallreduce");
        must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
        must(PMPI_Allreduce(in, ref, N, types[t], ops[o], MPI_COMM_WORLD), "PMPI_Allreduce");
        compare("MPI_Iallreduce (types and ops)", out, ref, (size_t)N * (size_t)es);
        memcpy(out, in, (size_t)total * (size_t)es);
        must(MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : in, out, N, types[t], ops[o],
                                       MPI_COMM_WORLD, &r),
             "MPI_Ireduce_scatter_block");
        must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
        must(PMPI_Reduce_scatter_block(in, ref, N, types[t], ops[o], MPI_COMM_WORLD),
             "PMPI_Reduce_scatter_block");
        compare("MPI_Ireduce_scatter_block (types and ops)", out, ref, (size_t)N * (size_t)es);
        serves(2);
      }
}

/* One array of five: a receive from the left, a served all-reduce, a send to the right, a served
 * broadcast, and a forwarded all-reduce (MPI_SHORT has no toroid twin). */
enum { K = 5, N = 20000 };
typedef struct {
  MPI_Request r[K];
  float sum[N], bc[N];
  short shorts[N];
  int token_in, token_out;
} Mixed;

static void start_mixed(Mixed* m) {
  fill(m->sum, N, rank);
  fill(m->bc, N, rank == 0 ? 3 : 99);
  for (int i = 0; i < N; ++i) m->shorts[i] = (short)(rank + i % 5);
  m->token_out = rank * 1000 + 7;
  m->token_in = -1;
  must(MPI_Irecv(&m->token_in, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD, &m->r[0]),
       "MPI_Irecv");
  must(MPI_Iallreduce(MPI_IN_PLACE, m->sum, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &m->r[1]),
       "MPI_Iallreduce");
  must(MPI_Isend(&m->token_out, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD, &m->r[2]),
       "MPI_Isend");
  must(MPI_Ibcast(m->bc, N, MPI_FLOAT, 0, MPI_COMM_WORLD, &m->r[3]), "MPI_Ibcast");
  must(MPI_Iallreduce(MPI_IN_PLACE, m->shorts, N, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD, &m->r[4]),
       "MPI_Iallreduce");
  serves(2);
}

static void check_mixed(const char* how, const Mixed* m) {
  float want_sum[N], want_bc[N], in[N];
  for (int i = 0; i < N; ++i) want_sum[i] = 0;
  for (int q = 0; q < size; ++q) {
    fill(in, N, q);
    for (int i = 0; i < N; ++i) want_sum[i] += in[i];
  }
  fill(want_bc, N, 3);
  int bad = m->token_in != ((rank + size - 1) % size) * 1000 + 7;
  bad |= memcmp(m->sum, want_sum, sizeof want_sum) != 0;
  bad |= memcmp(m->bc, want_bc, sizeof want_bc) != 0;
  for (int i = 0; i < N; ++i) {
    short want = 0;
    for (int q = 0; q < size; ++q) want = (short)(want + q + i % 5);
    bad |= m->shorts[i] != want;
  }
  for (int k = 0; k < K; ++k) bad |= m->r[k] != MPI_REQUEST_NULL;
  if (bad) {
    ++wrong;
    fprintf(stderr, "rank %d: mixed requests completed by %s: wrong results\n", rank, how);
  }
}

static void mixed_arrays(void) {
  static Mixed m;
  MPI_Status sts[K]; /* not MPI_STATUSES_IGNORE: MPICH's is a pointer GCC sees as an empty array */
  start_mixed(&m);
  must(MPI_Waitall(K, m.r, sts), "MPI_Waitall");
  check_mixed("MPI_Waitall", &m);

  start_mixed(&m);
  for (int done = 0; done < K; ++done) {
    int index = -1;
    must(MPI_Waitany(K, m.r, &index, MPI_STATUS_IGNORE), "MPI_Waitany");
  }
  check_mixed("MPI_Waitany", &m);

  start_mixed(&m);
  for (int done = 0; done < K;) {
    int out = 0, idx[K];
    must(MPI_Waitsome(K, m.r, &out, idx, sts), "MPI_Waitsome");
    done += out;
  }
  check_mixed("MPI_Waitsome", &m);

  start_mixed(&m);
  for (int flag = 0; !flag;) must(MPI_Testall(K, m.r, &flag, sts), "MPI_Testall");
  check_mixed("MPI_Testall", &m);

  start_mixed(&m);
  for (int done = 0; done < K;) {
    int index = -1, flag = 0;
    must(MPI_Testany(K, m.r, &index, &flag, MPI_STATUS_IGNORE), "MPI_Testany");
    done += flag && index != MPI_UNDEFINED;
  }
  check_mixed("MPI_Testany", &m);

  start_mixed(&m);
  for (int done = 0; done < K;) {
    int out = 0, idx[K];
    must(MPI_Testsome(K, m.r, &out, idx, sts), "MPI_Testsome");
    if (out != MPI_UNDEFINED) done += out;
  }
  check_mixed("MPI_Testsome", &m);

  /* One by one, last first, each with MPI_Test until it completes; MPI_Request_get_status
   * first (it completes nothing). */
  start_mixed(&m);
  for (int k = K - 1; k >= 0; --k) {
    int flag = 0;
    must(MPI_Request_get_status(m.r[k], &flag, MPI_STATUS_IGNORE), "MPI_Request_get_status");
    while (m.r[k] != MPI_REQUEST_NULL)
      must(MPI_Test(&m.r[k], &flag, MPI_STATUS_IGNORE), "MPI_Test");
  }
  check_mixed("MPI_Test, last first", &m);
}

/* Rank 0 blocks in MPI_Recv for a message rank 1 sends only after its MPI_Wait on the
 * collective both started: the collective must progress while rank 0 sits in MPI_Recv. */
static void progress_while_blocked(void) {
  if (size < 2) return;
  static float v[1 << 16];
  fill(v, 1 << 16, rank);
  MPI_Request r;
  must(MPI_Iallreduce(MPI_IN_PLACE, v, 1 << 16, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r),
       "MPI_Iallreduce");
  serves(1);
  int token = 0;
  if (rank == 0) {
    must(MPI_Recv(&token, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
  } else {
    must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    if (rank == 1) must(MPI_Send(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD), "MPI_Send");
  }
}

/* MPI_Cancel cancels nothing: the collective completes and MPI_Test_cancelled says false. */
static void cancel_one(void) {
  static float v[4096], ref[4096];
  fill(v, 4096, rank);
  MPI_Request r;
  MPI_Status st;
  must(MPI_Iallreduce(MPI_IN_PLACE, v, 4096, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r),
       "MPI_Iallreduce");
  serves(1);
  must(MPI_Cancel(&r), "MPI_Cancel");
  must(MPI_Wait(&r, &st), "MPI_Wait");
  int cancelled = 1;
  must(MPI_Test_cancelled(&st, &cancelled), "MPI_Test_cancelled");
  fill(ref, 4096, rank);
  must(PMPI_Allreduce(MPI_IN_PLACE, ref, 4096, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
       "PMPI_Allreduce");
  if (served_here && cancelled)
    ++wrong, fprintf(stderr, "rank %d: a served request was cancelled\n", rank);
  compare("MPI_Iallreduce after MPI_Cancel", v, ref, sizeof v);
}

#ifdef PERSISTENT
/* Seven persistent collectives over buffers of n per rank, bound once; each round new inputs. */
enum { NP = 7 };
typedef struct {
  int n;
  MPI_Request r[NP];
  float *ar_in, *ar_out, *rs_buf, *rsv_buf, *ag_in, *ag_out, *agv_in, *agv_out, *bc, *aa_in,
      *aa_out;
  int *counts, *displs;
} Bound;

static void bind(Bound* b, int n) {
  const int total = n * size;
  b->n = n;
  b->ar_in = calloc((size_t)n, sizeof(float)), b->ar_out = calloc((size_t)n, sizeof(float));
  b->rs_buf = calloc((size_t)total, sizeof(float)),
  b->rsv_buf = calloc((size_t)total, sizeof(float));
  b->ag_in = calloc((size_t)n, sizeof(float)), b->ag_out = calloc((size_t)total, sizeof(float));
  b->agv_in = calloc((size_t)n, sizeof(float)), b->agv_out = calloc((size_t)total, sizeof(float));
  b->bc = calloc((size_t)n, sizeof(float));
  b->aa_in = calloc((size_t)total, sizeof(float)), b->aa_out = calloc((size_t)total, sizeof(float));
  b->counts = calloc((size_t)size, sizeof(int)), b->displs = calloc((size_t)size, sizeof(int));
  const int uneven = total - 1 > 0 ? total - 1 : 1;
  int at = 0;
  for (int q = 0; q < size; ++q) b->counts[q] = uneven / size + (q < uneven % size);
  for (int q = size - 1; q >= 0; --q) b->displs[q] = at, at += b->counts[q]; /* reversed */
  must(PERSISTENT(Allreduce)(b->ar_in, b->ar_out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &b->r[0]),
       "Allreduce_init");
  must(PERSISTENT(Reduce_scatter_block)(MPI_IN_PLACE, b->rs_buf, n, MPI_FLOAT, MPI_MAX,
                                        MPI_COMM_WORLD, MPI_INFO_NULL, &b->r[1]),
       "Reduce_scatter_block_init");
  must(PERSISTENT(Reduce_scatter)(MPI_IN_PLACE, b->rsv_buf, b->counts, MPI_FLOAT, MPI_SUM,
                                  MPI_COMM_WORLD, MPI_INFO_NULL, &b->r[2]),
       "Reduce_scatter_init");
  must(PERSISTENT(Allgather)(b->ag_in, n, MPI_FLOAT, b->ag_out, n, MPI_FLOAT, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &b->r[3]),
       "Allgather_init");
  must(PERSISTENT(Allgatherv)(b->agv_in, b->counts[rank], MPI_FLOAT, b->agv_out, b->counts,
                              b->displs, MPI_FLOAT, MPI_COMM_WORLD, MPI_INFO_NULL, &b->r[4]),
       "Allgatherv_init");
  must(PERSISTENT(Bcast)(b->bc, n, MPI_FLOAT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &b->r[5]),
       "Bcast_init");
  must(PERSISTENT(Alltoall)(b->aa_in, n, MPI_FLOAT, b->aa_out, n, MPI_FLOAT, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &b->r[6]),
       "Alltoall_init");
}

static void refill(Bound* b, int round) {
  const int total = b->n * size;
  fill(b->ar_in, b->n, rank + round);
  fill(b->rs_buf, total, rank * 3 + round);
  fill(b->rsv_buf, total, rank * 5 + round);
  fill(b->ag_in, b->n, rank + 2 * round);
  fill(b->agv_in, b->counts[rank], rank + 3 * round);
  fill(b->bc, b->n, rank == size - 1 ? 17 + round : -1);
  fill(b->aa_in, total, rank * 7 + round);
}

/* Each result against MPI's blocking call on the same inputs (refilled again for it). */
static void check_bound(const char* how, Bound* b, int round) {
  const int total = b->n * size, n = b->n;
  float* in = malloc(sizeof(float) * (size_t)total);
  float* ref = malloc(sizeof(float) * (size_t)total);
  fill(in, n, rank + round);
  PMPI_Allreduce(in, ref, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  int bad = memcmp(b->ar_out, ref, sizeof(float) * (size_t)n) != 0;
  fill(in, total, rank * 3 + round);
  PMPI_Reduce_scatter_block(in, ref, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  bad |= (memcmp(b->rs_buf, ref, sizeof(float) * (size_t)n) != 0) << 1;
  fill(in, total, rank * 5 + round);
  PMPI_Reduce_scatter(in, ref, b->counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  bad |= (memcmp(b->rsv_buf, ref, sizeof(float) * (size_t)b->counts[rank]) != 0) << 2;
  fill(in, n, rank + 2 * round);
  PMPI_Allgather(in, n, MPI_FLOAT, ref, n, MPI_FLOAT, MPI_COMM_WORLD);
  bad |= (memcmp(b->ag_out, ref, sizeof(float) * (size_t)total) != 0) << 3;
  fill(in, b->counts[rank], rank + 3 * round);
  PMPI_Allgatherv(in, b->counts[rank], MPI_FLOAT, ref, b->counts, b->displs, MPI_FLOAT,
                  MPI_COMM_WORLD);
  bad |= (memcmp(b->agv_out, ref, sizeof(float) * (size_t)(total - 1 > 0 ? total - 1 : 1)) != 0)
         << 4;
  fill(ref, n, 17 + round);
  bad |= (memcmp(b->bc, ref, sizeof(float) * (size_t)n) != 0) << 5;
  fill(in, total, rank * 7 + round);
  PMPI_Alltoall(in, n, MPI_FLOAT, ref, n, MPI_FLOAT, MPI_COMM_WORLD);
  bad |= (memcmp(b->aa_out, ref, sizeof(float) * (size_t)total) != 0) << 6;
  for (int k = 0; k < NP; ++k) bad |= (b->r[k] == MPI_REQUEST_NULL) << 7; /* still bound */
  if (bad)
    ++wrong, fprintf(stderr, "rank %d: persistent round %d by %s: wrong (mask %d)\n", rank, round,
                     how, bad);
  free(in), free(ref);
}

static void persistent_calls(int n) {
  Bound b;
  bind(&b, n);
  int flag = 0;
  must(MPI_Request_get_status(b.r[0], &flag, MPI_STATUS_IGNORE), "MPI_Request_get_status");
  /* MPI: an inactive persistent request is complete (MPICH 4.0's own says it is not) */
  if (served_here && !flag)
    ++wrong, fprintf(stderr, "rank %d: an inactive persistent request is not complete\n", rank);
  for (int round = 0; round < 6; ++round) {
    refill(&b, round);
    /* Rounds alternate MPI_Start and MPI_Startall, and the ways to complete. */
    if (round % 2 == 0)
      for (int k = 0; k < NP; ++k) must(MPI_Start(&b.r[k]), "MPI_Start");
    else
      must(MPI_Startall(NP, b.r), "MPI_Startall");
    serves(NP);
    const char* how = "";
    MPI_Status sts[NP];
    /* Forwarded to stock MPI, only the two plain ways: MPICH 4.0's MPI_Waitany returns a
     * completed persistent collective again once it is inactive (found here). */
    switch (served_here ? round : round % 2) {
      case 0:
        how = "MPI_Wait each";
        for (int k = 0; k < NP; ++k)
          must(MPI_Wait(&b.r[k], &sts[k]), "MPI_Wait"), check_status(how, &sts[k]);
        break;
      case 1: {
        how = "MPI_Waitall with others"; /* with a served request, a receive and a send */
        static float extra[1000];
        int token_in = -1, token_out = rank;
        MPI_Request all[NP + 3];
        memcpy(all, b.r, sizeof b.r);
        fill(extra, 1000, rank);
        must(
            MPI_Iallreduce(MPI_IN_PLACE, extra, 1000, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &all[NP]),
            "MPI_Iallreduce");
        must(MPI_Irecv(&token_in, 1, MPI_INT, (rank + size - 1) % size, 8, MPI_COMM_WORLD,
                       &all[NP + 1]),
             "MPI_Irecv");
        must(MPI_Isend(&token_out, 1, MPI_INT, (rank + 1) % size, 8, MPI_COMM_WORLD, &all[NP + 2]),
             "MPI_Isend");
        serves(1);
        MPI_Status st[NP + 3];
        must(MPI_Waitall(NP + 3, all, st), "MPI_Waitall");
        for (int k = 0; k < NP; ++k) {
          if (all[k] != b.r[k])
            ++wrong, fprintf(stderr, "rank %d: MPI_Waitall changed a persistent handle\n", rank);
          check_status(how, &st[k]);
        }
        if (token_in != (rank + size - 1) % size || all[NP] != MPI_REQUEST_NULL) ++wrong;
        break;
      }
      case 2:
        how = "MPI_Waitany";
        for (int k = 0; k < NP; ++k) {
          int index = -1;
          must(MPI_Waitany(NP, b.r, &index, MPI_STATUS_IGNORE), "MPI_Waitany");
          if (index == MPI_UNDEFINED)
            ++wrong, fprintf(stderr, "rank %d: MPI_Waitany found none\n", rank);
        }
        break;
      case 3:
        how = "MPI_Testsome";
        for (int done = 0; done < NP;) {
          int out = 0, idx[NP];
          must(MPI_Testsome(NP, b.r, &out, idx, sts), "MPI_Testsome");
          if (out != MPI_UNDEFINED) done += out;
        }
        break;
      case 4:
        how = "MPI_Testall";
        for (flag = 0; !flag;) must(MPI_Testall(NP, b.r, &flag, sts), "MPI_Testall");
        break;
      default:
        how = "MPI_Test and MPI_Waitsome";
        for (flag = 0; !flag;) must(MPI_Test(&b.r[0], &flag, MPI_STATUS_IGNORE), "MPI_Test");
        for (int done = 1; done < NP;) {
          int out = 0, idx[NP];
          must(MPI_Waitsome(NP, b.r, &out, idx, sts), "MPI_Waitsome");
          if (out == MPI_UNDEFINED) break;
          done += out;
        }
        break;
    }
    check_bound(how, &b, round);
  }
  /* Every one inactive now: a wait on them all returns at once. */
  int index = 0;
  must(MPI_Waitany(NP, b.r, &index, MPI_STATUS_IGNORE), "MPI_Waitany");
  if (served_here && index != MPI_UNDEFINED) /* MPICH 4.0's own returns one (see above) */
    ++wrong,
        fprintf(stderr, "rank %d: MPI_Waitany on inactive requests returned %d\n", rank, index);
  for (int k = 0; k < NP; ++k) {
    must(MPI_Request_free(&b.r[k]), "MPI_Request_free");
    if (b.r[k] != MPI_REQUEST_NULL) ++wrong;
  }
  free(b.ar_in), free(b.ar_out), free(b.rs_buf), free(b.rsv_buf), free(b.ag_in), free(b.ag_out);
  free(b.agv_in), free(b.agv_out), free(b.bc), free(b.counts), free(b.displs);
  free(b.aa_in), free(b.aa_out);
}
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static volatile double sink;
static void compute(double seconds) {
  const double end = now() + seconds;
  double x = 1;
  while (now() < end)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
}

/* start, compute, wait against the collective alone and the compute alone (rank 0 prints). */
static void overlap(int mib) {
  const int n = mib * (1 << 20) / 4;
  float* v = malloc(sizeof(float) * (size_t)n);
  fill(v, n, rank);
  MPI_Request r;
  double alone = 1e9, both = 1e9, comp = 1e9, tail = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t = now();
    must(MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD, &r),
         "MPI_Iallreduce");
    must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    const double a = now() - t;
    alone = a < alone ? a : alone;
    MPI_Barrier(MPI_COMM_WORLD);
    t = now();
    compute(a);
    const double c = now() - t;
    comp = c < comp ? c : comp;
    MPI_Barrier(MPI_COMM_WORLD);
    t = now();
    must(MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD, &r),
         "MPI_Iallreduce");
    compute(a);
    const double w = now();
    must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    const double b = now() - t;
    both = b < both ? b : both;
    tail = now() - w < tail ? now() - w : tail;
  }
  if (rank == 0)
    printf(
        "overlap %d MiB at %d ranks: collective %.2f ms, compute %.2f ms, start+compute+wait "
        "%.2f ms (the wait %.2f ms): %.0f%% of the collective hidden\n",
        mib, size, alone * 1e3, comp * 1e3, both * 1e3, tail * 1e3,
        100.0 * (alone + comp - both) / alone);
  free(v);
}

static int level_named(const char* name) {
  if (strcmp(name, "single") == 0) return MPI_THREAD_SINGLE;
  if (strcmp(name, "funneled") == 0) return MPI_THREAD_FUNNELED;
  if (strcmp(name, "serialized") == 0) return MPI_THREAD_SERIALIZED;
  if (strcmp(name, "multiple") == 0) return MPI_THREAD_MULTIPLE;
  fprintf(stderr, "unknown thread level '%s'\n", name);
  exit(2);
}

int main(int argc, char** argv) {
  const int overlapping = argc > 2 && strcmp(argv[1], "overlap") == 0;
  const char* level_name =
      overlapping ? (argc > 3 ? argv[3] : "multiple") : (argc > 1 ? argv[1] : "multiple");
  asked = level_named(level_name);
  served_here = !(argc > 2 && strcmp(argv[2], "forwarded") == 0);
  int provided = -1;
  if (asked == MPI_THREAD_SINGLE)
    MPI_Init(&argc, &argv);
  else
    MPI_Init_thread(&argc, &argv, asked, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* The level the program asked for, as MPI would have told it (MPI_Init: SINGLE). */
  int queried = -1;
  MPI_Query_thread(&queried);
  if (queried != asked || (asked != MPI_THREAD_SINGLE && provided != asked)) {
    fprintf(stderr,
            "rank %d: asked for thread level %d, told %d by MPI_Query_thread, %d by "
            "provided\n",
            rank, asked, queried, provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (overlapping) {
    overlap(atoi(argv[2]));
    MPI_Finalize();
    return 0;
  }
  if (served_calls() < 0) {
    if (rank == 0) fprintf(stderr, "the preload is not loaded\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int sizes[] = {1, 1000, 30001};
  for (int k = 0; k < 3; ++k) each_call(sizes[k]);
  types_and_ops();
  mixed_arrays();
#ifdef PERSISTENT
  persistent_calls(1000);
  persistent_calls(7);
#endif
  progress_while_blocked();
  if (served_here) cancel_one(); /* stock MPI may refuse to cancel a collective */

  /* Left to MPI_Finalize: one request freed while active, one never waited for. */
  static float freed[50000], unwaited[50000];
  fill(freed, 50000, rank);
  fill(unwaited, 50000, rank + 1);
  MPI_Request a, b;
  must(MPI_Iallreduce(MPI_IN_PLACE, freed, 50000, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &a),
       "MPI_Iallreduce");
  /* MPI makes freeing an active collective request erroneous, and Open MPI refuses it; the
   * preload lets a served one complete and settles it by MPI_Finalize. */
  if (served_here)
    must(MPI_Request_free(&a), "MPI_Request_free");
  else
    must(MPI_Wait(&a, MPI_STATUS_IGNORE), "MPI_Wait");
  must(MPI_Iallreduce(MPI_IN_PLACE, unwaited, 50000, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &b),
       "MPI_Iallreduce");
  serves(2);
  /* MPI wants every request completed before MPI_Finalize; stock MPI need not finish one
   * that was not, the preload settles the ones it served. */
  if (!served_here) must(MPI_Wait(&b, MPI_STATUS_IGNORE), "MPI_Wait");

  const long long got = served_calls();
  long long all_wrong = 0;
  must(PMPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD),
       "PMPI_Allreduce");
  if (rank == 0) printf("served %lld expected %lld wrong %lld\n", got, expected, all_wrong);
  fflush(stdout);
  MPI_Finalize();

  /* After MPI_Finalize both must hold the sum over every rank. */
  long long late = 0;
  float in[50000];
  for (int which = 0; which < 2; ++which) {
    float want[50000];
    memset(want, 0, sizeof want);
    for (int q = 0; q < size; ++q) {
      fill(in, 50000, q + which);
      for (int i = 0; i < 50000; ++i) want[i] += in[i];
    }
    late += memcmp(which ? unwaited : freed, want, sizeof want) != 0;
  }
  printf("rank %d late %lld\n", rank, late);
  return all_wrong != 0 || got != expected || late != 0;
}
