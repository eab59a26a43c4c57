/* Every call the toroid preload intercepts (all-reduce, reduce-scatter, all-gather, all-gatherv,
 * broadcast, all-to-all, all-to-allv), for every type and op, in place and not, and calls it must leave to MPI. Built against MPI only.
 *
 * Inputs are small integers chosen per op, so every sum, product, min and max is exact in any
 * order of reduction, floats included: the results are bit-identical with and without the
 * preload, and each element is also checked against its exact value (exit 1 on any wrong one).
 *
 * Output (rank 0): one line per case, "<case> <hash of every rank's result>", to be compared
 * with a run without the preload; then "served <n> expected <m> mismatched_ranks <k>": calls
 * toroid served on rank 0 (-1 without the preload), how many the preload's rules say it should
 * serve given TOROID_MIN_BYTES (a plain byte count here; unset counts as 0), and on how many
 * ranks the two differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { SUM, PROD, MIN, MAX, NOPS };
static const char* op_names[NOPS] = {"sum", "prod", "min", "max"};
static MPI_Op ops[NOPS];

typedef struct {
  MPI_Datatype type;
  const char* name;
  int is_float;
  size_t size;
  int toroid; /* has a toroid element type: the preload serves it */
} Type;
enum { NTYPES = 8 };
static Type types[NTYPES];

static int rank, size;
static long long min_bytes, expected_served, wrong_total;
static int* world_ranks; /* 0..size-1: whose inputs a result over MPI_COMM_WORLD combines */

static void init(void) {
  const Type t[NTYPES] = {
      {MPI_FLOAT, "float", 1, sizeof(float), 1},
      {MPI_DOUBLE, "double", 1, sizeof(double), 1},
      {MPI_INT, "int", 0, sizeof(int), 1},
      {MPI_LONG, "long", 0, sizeof(long), 1},
      {MPI_LONG_LONG, "long_long", 0, sizeof(long long), 1},
      {MPI_INT32_T, "int32", 0, 4, 1},
      {MPI_INT64_T, "int64", 0, 8, 1},
      {MPI_SHORT, "short", 0, sizeof(short), 0}, /* no 16-bit integer in toroid: forwarded */
  };
  memcpy(types, t, sizeof t);
  ops[SUM] = MPI_SUM, ops[PROD] = MPI_PROD, ops[MIN] = MPI_MIN, ops[MAX] = MPI_MAX;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  world_ranks = malloc(sizeof(int) * (size_t)size);
  for (int r = 0; r < size; ++r) world_ranks[r] = r;
  const char* v = getenv("TOROID_MIN_BYTES");
  min_bytes = v && *v ? atoll(v) : 0;
}

/* Rank r's input at element i: products stay within +-16, sums within +-36 at four ranks. */
static long long input(int op, int r, long long i) {
  if (op == SUM) return (r * 31 + i * 7) % 19 - 9;
  if (op == PROD) return (r + i) % 3 == 0 ? 2 : (r + i) % 3 == 1 ? -1 : 1;
  return (r * 13 + i * 5) % 101 - 50;
}

static long long reduced(int op, const int* ranks, int n, long long i) {
  long long v = input(op, ranks[0], i);
  for (int k = 1; k < n; ++k) {
    const long long w = input(op, ranks[k], i);
    v = op == SUM ? v + w : op == PROD ? v * w : op == MIN ? (w < v ? w : v) : (w > v ? w : v);
  }
  return v;
}

static void store(const Type* t, void* buf, long long i, long long v) {
  char* at = (char*)buf + i * (long long)t->size;
  if (t->is_float && t->size == 4)
    *(float*)at = (float)v;
  else if (t->is_float)
    *(double*)at = (double)v;
  else if (t->size == 2)
    *(int16_t*)at = (int16_t)v;
  else if (t->size == 4)
    *(int32_t*)at = (int32_t)v;
  else
    *(int64_t*)at = (int64_t)v;
}

static double load(const Type* t, const void* buf, long long i) {
  const char* at = (const char*)buf + i * (long long)t->size;
  if (t->is_float && t->size == 4) return *(const float*)at;
  if (t->is_float) return *(const double*)at;
  if (t->size == 2) return *(const int16_t*)at;
  if (t->size == 4) return *(const int32_t*)at;
  return (double)*(const int64_t*)at;
}

static uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const unsigned char* p = data;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* The preload's rule: a toroid type and op, and at least TOROID_MIN_BYTES in the whole vector. */
static int served(int toroid_type_and_op, long long whole_bytes) {
  return toroid_type_and_op && whole_bytes > 0 && whole_bytes >= min_bytes;
}

/* Hash of every rank's result (rank order), wrong elements over all ranks, one output line. */
static void finish(const char* name, const void* result, size_t bytes, long long wrong,
                   int expect_served) {
  uint64_t h = fnv1a(14695981039346656037ull, result, bytes);
  uint64_t* all = malloc(sizeof(uint64_t) * (size_t)size);
  long long wrong_all = 0;
  must(MPI_Gather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Gather");
  must(MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
  if (rank == 0) {
    printf(
        "%s %016llx\n", name,
        (unsigned long long)fnv1a(14695981039346656037ull, all, sizeof(uint64_t) * (size_t)size));
    if (wrong_all) fprintf(stderr, "WRONG: %s: %lld wrong elements\n", name, wrong_all);
  }
  free(all);
  wrong_total += wrong_all;
  expected_served += expect_served;
}

static void fill(void* buf, size_t bytes) { memset(buf, 0x5a, bytes); }

/* MPI_Allreduce of `count` elements on comm, whose members' world ranks are ranks[0..n). */
static void allreduce_case(const char* label, const Type* t, int op, MPI_Op mpi_op, int in_place,
                           int count, MPI_Comm comm, const int* ranks, int n, int expect_served) {
  const size_t bytes = (size_t)count * t->size;
  char* send = malloc(bytes);
  char* recv = malloc(bytes);
  char* mine = in_place ? recv : send;
  if (!in_place) fill(recv, bytes);
  for (long long i = 0; i < count; ++i) store(t, mine, i, input(op, rank, i));
  must(MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, t->type, mpi_op, comm),
       "MPI_Allreduce");
  long long wrong = 0;
  for (long long i = 0; i < count; ++i) {
    wrong += load(t, recv, i) != (double)reduced(op, ranks, n, i);
    if (!in_place) wrong += load(t, send, i) != (double)input(op, rank, i); /* input untouched */
  }
  char name[160];
  snprintf(name, sizeof name, "allreduce%s %s %s %s n=%d", label, t->name, op_names[op],
           in_place ? "inplace" : "out", count);
  finish(name, recv, bytes, wrong, expect_served);
  free(send);
  free(recv);
}

/* MPI_Reduce_scatter(_block): rank r receives counts[r] elements starting at the sum of the
 * counts before it. `block` uses MPI_Reduce_scatter_block (all counts equal). */
static void reduce_scatter_case(const Type* t, int op, int in_place, const int* counts, int block,
                                int expect_rule) {
  long long total = 0, offset = 0;
  for (int r = 0; r < size; ++r) {
    if (r == rank) offset = total;
    total += counts[r];
  }
  const int mine = counts[rank];
  char* send = malloc((size_t)total * t->size + 1);
  char* recv = malloc((size_t)(in_place ? total : mine) * t->size + 1);
  char* full = in_place ? recv : send;
  if (!in_place) fill(recv, (size_t)mine * t->size);
  for (long long i = 0; i < total; ++i) store(t, full, i, input(op, rank, i));
  const void* sendbuf = in_place ? MPI_IN_PLACE : send;
  if (block)
    must(MPI_Reduce_scatter_block(sendbuf, recv, counts[0], t->type, ops[op], MPI_COMM_WORLD),
         "MPI_Reduce_scatter_block");
  else
    must(MPI_Reduce_scatter(sendbuf, recv, counts, t->type, ops[op], MPI_COMM_WORLD),
         "MPI_Reduce_scatter");
  long long wrong = 0;
  for (long long j = 0; j < mine; ++j)
    wrong += load(t, recv, j) != (double)reduced(op, world_ranks, size, offset + j);
  char name[160];
  snprintf(name, sizeof name, "%s %s %s %s n=%lld%s",
           block ? "reduce_scatter_block" : "reduce_scatter", t->name, op_names[op],
           in_place ? "inplace" : "out", total, expect_rule ? "" : " uneven");
  finish(name, recv, (size_t)mine * t->size, wrong,
         served(t->toroid && expect_rule, total * (long long)t->size));
  free(send);
  free(recv);
}

/* MPI_Allgather of `count` elements per rank; `as` describes the send side (NULL: like t). */
static void allgather_case(const Type* t, int in_place, int count, MPI_Datatype as, int as_count,
                           int expect_served) {
  const size_t block = (size_t)count * t->size, bytes = block * (size_t)size;
  char* send = malloc(block + 1);
  char* recv = malloc(bytes + 1);
  fill(recv, bytes);
  char* mine = in_place ? recv + (size_t)rank * block : send;
  for (long long j = 0; j < count; ++j)
    store(t, mine, j, input(SUM, rank, (long long)rank * count + j));
  must(MPI_Allgather(in_place ? MPI_IN_PLACE : send, as != MPI_DATATYPE_NULL ? as_count : count,
                     as != MPI_DATATYPE_NULL ? as : t->type, recv, count, t->type, MPI_COMM_WORLD),
       "MPI_Allgather");
  long long wrong = 0;
  for (long long g = 0; g < (long long)count * size; ++g)
    wrong += load(t, recv, g) != (double)input(SUM, (int)(g / count), g);
  char name[160];
  snprintf(name, sizeof name, "allgather %s %s n=%d%s", t->name, in_place ? "inplace" : "out",
           count, as != MPI_DATATYPE_NULL ? " derived" : "");
  finish(name, recv, bytes, wrong, expect_served);
  free(send);
  free(recv);
}

/* MPI_Allgatherv of `total` elements: rank r's block counts[r] long; `rule` says whether the
 * counts follow toroid's block rule (served), `reversed` places the blocks in reverse rank order
 * in the receive buffer (displacements are each rank's own: still served, moved after). */
static void allgatherv_case(const Type* t, int in_place, int total, int rule, int reversed) {
  int* counts = malloc(sizeof(int) * (size_t)size);
  int* displs = malloc(sizeof(int) * (size_t)size);
  long long* first = malloc(sizeof(long long) * (size_t)size); /* rank r's first element */
  long long sum = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = rule ? total / size + (r < total % size) : 100 * (r + 1);
    first[r] = sum, sum += counts[r];
  }
  for (int r = 0, at = 0; r < size; ++r) {
    const int q = reversed ? size - 1 - r : r;
    displs[q] = at, at += counts[q];
  }
  const size_t bytes = (size_t)sum * t->size;
  char* send = malloc((size_t)counts[rank] * t->size + 1);
  char* recv = malloc(bytes + 1);
  fill(recv, bytes);
  char* mine = in_place ? recv + (size_t)displs[rank] * t->size : send;
  for (long long j = 0; j < counts[rank]; ++j) store(t, mine, j, input(SUM, rank, first[rank] + j));
  must(MPI_Allgatherv(in_place ? MPI_IN_PLACE : send, counts[rank], t->type, recv, counts, displs,
                      t->type, MPI_COMM_WORLD),
       "MPI_Allgatherv");
  long long wrong = 0;
  for (int r = 0; r < size; ++r)
    for (long long j = 0; j < counts[r]; ++j)
      wrong += load(t, recv, displs[r] + j) != (double)input(SUM, r, first[r] + j);
  char name[160];
  snprintf(name, sizeof name, "allgatherv %s %s n=%lld%s%s", t->name, in_place ? "inplace" : "out",
           sum, rule ? "" : " uneven", reversed ? " reversed" : "");
  finish(name, recv, bytes, wrong, served(t->toroid && (rule || size == 1), (long long)bytes));
  free(counts);
  free(displs);
  free(first);
  free(send);
  free(recv);
}

/* MPI_Alltoall of `count` elements per block (Ialltoall when `nonblocking`); element j of rank
 * r's block for q is input(SUM, r, q * count + j). In place, forwarded. */
static void alltoall_case(const Type* t, int count, int in_place, int nonblocking) {
  const size_t bytes = (size_t)count * (size_t)size * t->size;
  char* send = malloc(bytes + 1);
  char* recv = malloc(bytes + 1);
  fill(recv, bytes);
  char* mine = in_place ? recv : send;
  for (long long i = 0; i < (long long)count * size; ++i) store(t, mine, i, input(SUM, rank, i));
  const void* from = in_place ? MPI_IN_PLACE : send;
  if (nonblocking) {
    MPI_Request req;
    must(MPI_Ialltoall(from, count, t->type, recv, count, t->type, MPI_COMM_WORLD, &req),
         "MPI_Ialltoall");
    must(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
  } else {
    must(MPI_Alltoall(from, count, t->type, recv, count, t->type, MPI_COMM_WORLD), "MPI_Alltoall");
  }
  long long wrong = 0;
  for (int q = 0; q < size; ++q)
    for (long long j = 0; j < count; ++j)
      wrong += load(t, recv, (long long)q * count + j) !=
               (double)input(SUM, q, (long long)rank * count + j);
  char name[160];
  snprintf(name, sizeof name, "%salltoall %s %s n=%d", nonblocking ? "i" : "", t->name,
           in_place ? "inplace" : "out", count);
  /* Served blocking or not: under plain MPI_Init too, all on this one node (plan.hpp,
   * in_background). */
  finish(name, recv, bytes, wrong,
         !in_place && served(t->toroid, (long long)count * size * (long long)t->size));
  free(send);
  free(recv);
}

/* MPI_Alltoallv with skewed counts: rank r sends q (r * 7 + q * 3) % 5 * scale elements (some
 * none), from the end of its send buffer backwards, and places the blocks it receives in reverse
 * rank order with a gap of 2; element j of r's block for q is input(SUM, r, q * 1000 + j). */
static void alltoallv_case(const Type* t, int scale) {
  int* sc = malloc(sizeof(int) * (size_t)size);
  int* sd = malloc(sizeof(int) * (size_t)size);
  int* rc = malloc(sizeof(int) * (size_t)size);
  int* rd = malloc(sizeof(int) * (size_t)size);
  int in = 0, out = 0;
  for (int q = size - 1; q >= 0; --q) {
    sc[q] = (rank * 7 + q * 3) % 5 * scale;
    sd[q] = in, in += sc[q];
    rc[q] = (q * 7 + rank * 3) % 5 * scale;
    rd[q] = out, out += rc[q] + 2;
  }
  const size_t bytes = (size_t)out * t->size;
  char* send = malloc((size_t)in * t->size + 1);
  char* recv = malloc(bytes + 1);
  fill(recv, bytes);
  for (int q = 0; q < size; ++q)
    for (long long j = 0; j < sc[q]; ++j)
      store(t, send, sd[q] + j, input(SUM, rank, q * 1000LL + j));
  must(MPI_Alltoallv(send, sc, sd, t->type, recv, rc, rd, t->type, MPI_COMM_WORLD),
       "MPI_Alltoallv");
  long long wrong = 0;
  for (int q = 0; q < size; ++q)
    for (long long j = 0; j < rc[q]; ++j)
      wrong += load(t, recv, rd[q] + j) != (double)input(SUM, q, rank * 1000LL + j);
  char name[160];
  snprintf(name, sizeof name, "alltoallv %s scale=%d", t->name, scale);
  /* Served at any size (the counts differ from rank to rank: plan.hpp). The gaps keep the
   * fill pattern, so the hash compares them too. */
  finish(name, recv, bytes, wrong, t->toroid);
  free(sc);
  free(sd);
  free(rc);
  free(rd);
  free(send);
  free(recv);
}

/* MPI_Bcast of `count` elements from `root`. */
static void bcast_case(const Type* t, int count, int root) {
  const size_t bytes = (size_t)count * t->size;
  char* buf = malloc(bytes + 1);
  fill(buf, bytes);
  if (rank == root)
    for (long long i = 0; i < count; ++i) store(t, buf, i, input(SUM, root, i));
  must(MPI_Bcast(buf, count, t->type, root, MPI_COMM_WORLD), "MPI_Bcast");
  long long wrong = 0;
  for (long long i = 0; i < count; ++i) wrong += load(t, buf, i) != (double)input(SUM, root, i);
  char name[160];
  snprintf(name, sizeof name, "bcast %s n=%d root=%d", t->name, count, root);
  finish(name, buf, bytes, wrong, served(t->toroid, (long long)bytes));
  free(buf);
}

static void user_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}

/* Communicators other than MPI_COMM_WORLD, a user op and a derived type. */
static void other_cases(void) {
  const Type* dbl = &types[1];
  const Type* integer = &types[2];
  MPI_Op user;
  must(MPI_Op_create(user_sum, 1, &user), "MPI_Op_create");
  allreduce_case(" userop", integer, SUM, user, 0, 1000, MPI_COMM_WORLD, world_ranks, size, 0);
  MPI_Op_free(&user);

  MPI_Datatype pair;
  must(MPI_Type_contiguous(2, MPI_INT, &pair), "MPI_Type_contiguous");
  must(MPI_Type_commit(&pair), "MPI_Type_commit");
  allgather_case(integer, 0, 1000, pair, 500, 0);
  MPI_Type_free(&pair);

  allreduce_case(" self", dbl, SUM, MPI_SUM, 0, 1000, MPI_COMM_SELF, &rank, 1, served(1, 8000));

  /* Even and odd ranks: a state per sub-communicator; then an inter-communicator between them,
   * where MPI_Allreduce combines the other group's inputs (forwarded). */
  MPI_Comm half, inter;
  must(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half), "MPI_Comm_split");
  int same[64], other[64], nsame = 0, nother = 0;
  for (int r = 0; r < size && r < 64; ++r) {
    if (r % 2 == rank % 2)
      same[nsame++] = r;
    else
      other[nother++] = r;
  }
  allreduce_case(" half", dbl, SUM, MPI_SUM, 1, 1000, half, same, nsame, served(1, 8000));
  if (size >= 2) {
    must(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter),
         "MPI_Intercomm_create");
    allreduce_case(" inter", integer, SUM, MPI_SUM, 0, 1000, inter, other, nother, 0);
    MPI_Comm_free(&inter);
  }
  MPI_Comm_free(&half);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  init();
  int* counts = malloc(sizeof(int) * (size_t)size);
  for (int ti = 0; ti < NTYPES; ++ti) {
    const Type* t = &types[ti];
    for (int op = 0; op < NOPS; ++op)
      for (int in_place = 0; in_place < 2; ++in_place) {
        const int ar_counts[] = {1, 5, 1000, 33333};
        for (int k = 0; k < 4; ++k)
          allreduce_case("", t, op, ops[op], in_place, ar_counts[k], MPI_COMM_WORLD, world_ranks,
                         size, served(t->toroid, ar_counts[k] * (long long)t->size));
        const int per_rank[] = {1, 300, 9000};
        for (int k = 0; k < 3; ++k) {
          for (int r = 0; r < size; ++r) counts[r] = per_rank[k];
          reduce_scatter_case(t, op, in_place, counts, 1, 1);
        }
        /* Block rule: the first total % size ranks get one more (served); then counts growing
         * with the rank, which break it whenever size > 1 (forwarded). */
        const int totals[] = {7, 1001, 30001};
        for (int k = 0; k < 3; ++k) {
          for (int r = 0; r < size; ++r) counts[r] = totals[k] / size + (r < totals[k] % size);
          reduce_scatter_case(t, op, in_place, counts, 0, 1);
        }
        for (int r = 0; r < size; ++r) counts[r] = 100 * (r + 1);
        reduce_scatter_case(t, op, in_place, counts, 0, size == 1);
      }
    for (int in_place = 0; in_place < 2; ++in_place) {
      const int ag_counts[] = {1, 250, 10000};
      for (int k = 0; k < 3; ++k)
        allgather_case(t, in_place, ag_counts[k], MPI_DATATYPE_NULL, 0,
                       served(t->toroid, ag_counts[k] * (long long)t->size * size));
      const int agv_totals[] = {7, 1001, 30001};
      for (int k = 0; k < 3; ++k)
        for (int reversed = 0; reversed < 2; ++reversed)
          allgatherv_case(t, in_place, agv_totals[k], 1, reversed);
      allgatherv_case(t, in_place, 0, 0, 0);
    }
    const int a2a_counts[] = {1, 300, 5000};
    for (int k = 0; k < 3; ++k)
      for (int in_place = 0; in_place < 2; ++in_place) alltoall_case(t, a2a_counts[k], in_place, 0);
    alltoall_case(t, 300, 0, 1);
    alltoallv_case(t, 1);
    alltoallv_case(t, 997);
    const int bc_counts[] = {1, 1000, 33333};
    for (int k = 0; k < 3; ++k) {
      bcast_case(t, bc_counts[k], 0);
      bcast_case(t, bc_counts[k], size - 1);
    }
  }
  other_cases();

  const long long got = served_calls();
  const int mismatch = got != expected_served;
  int mismatched = 0;
  must(MPI_Reduce(&mismatch, &mismatched, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
  if (rank == 0)
    printf("served %lld expected %lld mismatched_ranks %d\n", got, expected_served, mismatched);
  free(counts);
  free(world_ranks);
  MPI_Finalize();
  return wrong_total ? 1 : 0;
}
