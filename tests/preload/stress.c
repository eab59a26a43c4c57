/* Many non-blocking collectives in flight on several communicators, under the preload: the
 * shape of a third-party stress program that once hung the job.
 *
 *   preload_stress SEED... [-ops N] [-window W] [-sleep-ms S] [-single]
 *                                  -single: plain MPI_Init (below MPI_THREAD_MULTIPLE the
 *                                  preload still serves them all on one node)
 *   preload_stress -skip R         rank R never starts a served MPI_Iallreduce the others wait
 *                                  for, the first call on a communicator named "stress
 *                                  communicator" (which builds toroid's state there): the
 *                                  watchdog (TOROID_TIMEOUT) must end the job naming it
 *   preload_stress -skip-later R   the same for its second call: the message names rank R
 *
 * Four communicators (MPI_COMM_WORLD and three duplicates). Each rank keeps a window of up to W
 * requests in flight. Every rank starts the same sequence of operations (one generator seeded
 * alike everywhere): a random non-blocking collective on a random communicator (the seven the
 * preload serves, in place or not, all-to-all among them, mixed with forwarded ones: MPI_SHORT
 * all-reduce, barrier, gather, scatter, scan, reduce) or a point-to-point pair (a send to the right and
 * a receive from the left, now and then 128 KiB, past every eager limit). Each rank completes its
 * window its own way (a second generator, seeded per rank): MPI_Waitall, MPI_Waitany,
 * MPI_Waitsome, MPI_Wait, MPI_Testall, MPI_Testany, MPI_Testsome, MPI_Test and
 * MPI_Request_get_status polled, on the whole window or on one request, and now and then it
 * sleeps. So the ranks drift apart: one waits on a request whose peers have not started it yet,
 * because they are still waiting on requests of their own.
 *
 * When every request has completed, every operation is replayed in order with MPI's blocking
 * call on the same inputs (PMPI_, which the preload never sees) and each result compared byte
 * for byte; a point-to-point message against the sender's input, rebuilt here. Output per seed
 * (rank 0): "seed <s>: <ops> ops, served <n> expected <m> wrong <w>"; exit 1 on anything wrong.
 * A hang is what this program exists to catch: run it under a timeout (and TOROID_TIMEOUT). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

enum { kComms = 4, kMaxWindow = 64 };

typedef enum {
  allreduce,     /* served: int sum */
  allreduce_max, /* served: int max, in place */
  reduce_scatter_block,
  reduce_scatter, /* the block rule's counts */
  allgather,
  allgatherv, /* the block rule's counts, in the rule's layout */
  bcast,
  alltoall,
  kServedKinds, /* every kind below is forwarded to MPI */
  allreduce_short = kServedKinds,
  barrier,
  gather,
  scatter,
  scan,
  reduce,
  p2p,
  kKinds
} Kind;

static const char* const kind_names[kKinds] = {"MPI_Iallreduce",
                                               "MPI_Iallreduce (max, in place)",
                                               "MPI_Ireduce_scatter_block",
                                               "MPI_Ireduce_scatter",
                                               "MPI_Iallgather",
                                               "MPI_Iallgatherv",
                                               "MPI_Ibcast",
                                               "MPI_Ialltoall",
                                               "MPI_Iallreduce (MPI_SHORT)",
                                               "MPI_Ibarrier",
                                               "MPI_Igather",
                                               "MPI_Iscatter",
                                               "MPI_Iscan",
                                               "MPI_Ireduce",
                                               "MPI_Isend/MPI_Irecv"};

typedef struct {
  Kind kind;
  int comm, n, root, in_place, shift; /* shift: the p2p distance to the right */
  int *in, *out;                      /* what the operation read and wrote */
  int *counts, *displs;               /* reduce-scatter and all-gatherv */
  int open;                           /* requests of this op not yet completed */
} Op;

static int rank, size, threaded;
static MPI_Comm comms[kComms];

/* xorshift64*: the same sequence on every platform. */
static uint64_t next(uint64_t* s) {
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}
static int below(uint64_t* s, int n) { return (int)(next(s) % (uint64_t)n); }

/* The input of op `k` on rank `r`: small integers, so every sum is exact in any order. */
static int value(int seed, int k, int r, int i) {
  return (seed * 7 + k * 13 + r * 31 + i * 5) % 23 - 11;
}
static int* input(int seed, int k, int r, int n) {
  int* v = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  for (int i = 0; i < n; ++i) v[i] = value(seed, k, r, i);
  return v;
}

/* Block q of n over p ranks, as the block rule cuts (the preload serves these counts). */
static void block_rule(int n, int* counts, int* displs) {
  int at = 0;
  for (int q = 0; q < size; ++q) {
    counts[q] = n / size + (q < n % size);
    displs[q] = at;
    at += counts[q];
  }
}

/* Draws op k (same on every rank) and starts it; its requests go to `reqs`/`owner`. */
static void start(int seed, int k, Op* op, uint64_t* shared, MPI_Request* reqs, int* owner,
                  int* active) {
  memset(op, 0, sizeof *op);
  op->kind = (Kind)below(shared, kKinds);
  op->comm = below(shared, kComms);
  op->n = below(shared, 10) == 0 ? 8000 + below(shared, 9000) : 1 + below(shared, 40);
  op->root = below(shared, size);
  op->in_place = below(shared, 2);
  op->shift = 1 + below(shared, size > 1 ? size - 1 : 1);
  MPI_Comm c = comms[op->comm];
  const int n = op->n, whole = n * size;
  MPI_Request* r = &reqs[*active];
  int requests = 1;
  switch (op->kind) {
    case allreduce:
    case allreduce_max:
      op->in = input(seed, k, rank, n);
      op->out = calloc((size_t)n, sizeof(int));
      if (op->kind == allreduce_max) {
        memcpy(op->out, op->in, sizeof(int) * (size_t)n);
        must(MPI_Iallreduce(MPI_IN_PLACE, op->out, n, MPI_INT, MPI_MAX, c, r), "MPI_Iallreduce");
      } else {
        must(MPI_Iallreduce(op->in, op->out, n, MPI_INT, MPI_SUM, c, r), "MPI_Iallreduce");
      }
      break;
    case reduce_scatter_block:
      op->in = input(seed, k, rank, whole);
      op->out = calloc((size_t)whole, sizeof(int));
      if (op->in_place) memcpy(op->out, op->in, sizeof(int) * (size_t)whole);
      must(MPI_Ireduce_scatter_block(op->in_place ? MPI_IN_PLACE : op->in, op->out, n, MPI_INT,
                                     MPI_SUM, c, r),
           "MPI_Ireduce_scatter_block");
      break;
    case reduce_scatter:
      op->counts = malloc(sizeof(int) * (size_t)size);
      op->displs = malloc(sizeof(int) * (size_t)size);
      block_rule(n, op->counts, op->displs);
      op->in = input(seed, k, rank, n);
      op->out = calloc((size_t)n, sizeof(int));
      if (op->in_place) memcpy(op->out, op->in, sizeof(int) * (size_t)n);
      must(MPI_Ireduce_scatter(op->in_place ? MPI_IN_PLACE : op->in, op->out, op->counts, MPI_INT,
                               MPI_SUM, c, r),
           "MPI_Ireduce_scatter");
      break;
    case allgather:
      op->in = input(seed, k, rank, n);
      op->out = calloc((size_t)whole, sizeof(int));
      if (op->in_place) memcpy(op->out + (size_t)rank * (size_t)n, op->in, sizeof(int) * (size_t)n);
      must(MPI_Iallgather(op->in_place ? MPI_IN_PLACE : op->in, n, MPI_INT, op->out, n, MPI_INT, c,
                          r),
           "MPI_Iallgather");
      break;
    case allgatherv:
      op->counts = malloc(sizeof(int) * (size_t)size);
      op->displs = malloc(sizeof(int) * (size_t)size);
      block_rule(n, op->counts, op->displs);
      op->in = input(seed, k, rank, op->counts[rank]);
      op->out = calloc((size_t)n, sizeof(int));
      must(MPI_Iallgatherv(op->in, op->counts[rank], MPI_INT, op->out, op->counts, op->displs,
                           MPI_INT, c, r),
           "MPI_Iallgatherv");
      break;
    case bcast:
      op->in = input(seed, k, op->root, n); /* the root's data, what every rank must end with */
      op->out = rank == op->root ? input(seed, k, rank, n) : calloc((size_t)n, sizeof(int));
      must(MPI_Ibcast(op->out, n, MPI_INT, op->root, c, r), "MPI_Ibcast");
      break;
    case allreduce_short: {
      short* in = malloc(sizeof(short) * (size_t)n);
      for (int i = 0; i < n; ++i) in[i] = (short)value(seed, k, rank, i);
      op->in = (int*)in;
      op->out = calloc((size_t)n, sizeof(short));
      must(MPI_Iallreduce(in, op->out, n, MPI_SHORT, MPI_SUM, c, r), "MPI_Iallreduce");
      break;
    }
    case barrier:
      must(MPI_Ibarrier(c, r), "MPI_Ibarrier");
      break;
    case gather:
      op->in = input(seed, k, rank, n);
      op->out = calloc((size_t)whole, sizeof(int));
      must(MPI_Igather(op->in, n, MPI_INT, op->out, n, MPI_INT, op->root, c, r), "MPI_Igather");
      break;
    case scatter:
      op->in = input(seed, k, rank, whole);
      op->out = calloc((size_t)n, sizeof(int));
      must(MPI_Iscatter(op->in, n, MPI_INT, op->out, n, MPI_INT, op->root, c, r), "MPI_Iscatter");
      break;
    case alltoall:
      op->in = input(seed, k, rank, whole);
      op->out = calloc((size_t)whole, sizeof(int));
      must(MPI_Ialltoall(op->in, n, MPI_INT, op->out, n, MPI_INT, c, r), "MPI_Ialltoall");
      break;
    case scan:
      op->in = input(seed, k, rank, n);
      op->out = calloc((size_t)n, sizeof(int));
      must(MPI_Iscan(op->in, op->out, n, MPI_INT, MPI_SUM, c, r), "MPI_Iscan");
      break;
    case reduce:
      op->in = input(seed, k, rank, n);
      op->out = calloc((size_t)n, sizeof(int));
      must(MPI_Ireduce(op->in, op->out, n, MPI_INT, MPI_SUM, op->root, c, r), "MPI_Ireduce");
      break;
    case p2p: {
      if (op->n > 40)
        op->n = 32768; /* 128 KiB: a rendezvous, which needs the receiver's progress */
      const int to = (rank + op->shift) % size, from = (rank - op->shift + size) % size;
      op->in = input(seed, k, rank, op->n);
      op->out = calloc((size_t)op->n, sizeof(int));
      must(MPI_Irecv(op->out, op->n, MPI_INT, from, k, c, r), "MPI_Irecv");
      must(MPI_Isend(op->in, op->n, MPI_INT, to, k, c, r + 1), "MPI_Isend");
      requests = 2;
      break;
    }
    default:
      break;
  }
  for (int i = 0; i < requests; ++i) owner[*active + i] = k;
  op->open = requests;
  *active += requests;
}

/* One request of the window completed: its op's count goes down, and the window closes up. */
static void retire(int i, MPI_Request* reqs, int* owner, int* active, Op* ops) {
  --ops[owner[i]].open;
  reqs[i] = reqs[*active - 1];
  owner[i] = owner[*active - 1];
  --*active;
}
static void retire_nulls(MPI_Request* reqs, int* owner, int* active, Op* ops) {
  for (int i = *active - 1; i >= 0; --i)
    if (reqs[i] == MPI_REQUEST_NULL) retire(i, reqs, owner, active, ops);
}

/* Completes at least one request of the window, in a way drawn from this rank's generator. */
static void complete_some(MPI_Request* reqs, int* owner, int* active, Op* ops, uint64_t* mine) {
  int index = 0, flag = 0, count = 0, indices[2 * kMaxWindow];
  MPI_Status
      statuses[2 * kMaxWindow]; /* not MPI_STATUSES_IGNORE: MPICH's (1) trips gcc's bounds check */
  const int one = below(mine, *active);
  switch (below(mine, 9)) {
    case 0:
      must(MPI_Waitall(*active, reqs, statuses), "MPI_Waitall");
      break;
    case 1:
      must(MPI_Waitany(*active, reqs, &index, MPI_STATUS_IGNORE), "MPI_Waitany");
      break;
    case 2:
      must(MPI_Waitsome(*active, reqs, &count, indices, statuses), "MPI_Waitsome");
      break;
    case 3:
      must(MPI_Wait(&reqs[one], MPI_STATUS_IGNORE), "MPI_Wait");
      break;
    case 4:
      while (!flag) must(MPI_Testall(*active, reqs, &flag, statuses), "MPI_Testall");
      break;
    case 5:
      while (!flag)
        must(MPI_Testany(*active, reqs, &index, &flag, MPI_STATUS_IGNORE), "MPI_Testany");
      break;
    case 6:
      while (count == 0)
        must(MPI_Testsome(*active, reqs, &count, indices, statuses), "MPI_Testsome");
      break;
    case 7:
      while (!flag) must(MPI_Test(&reqs[one], &flag, MPI_STATUS_IGNORE), "MPI_Test");
      break;
    default: /* polled without completing, then completed */
      while (!flag)
        must(MPI_Request_get_status(reqs[one], &flag, MPI_STATUS_IGNORE), "MPI_Request_get_status");
      must(MPI_Wait(&reqs[one], MPI_STATUS_IGNORE), "MPI_Wait");
      break;
  }
  retire_nulls(reqs, owner, active, ops);
}

/* Op k replayed with MPI's blocking call; whether this rank's result equals it. */
static int matches(int seed, int k, const Op* op) {
  MPI_Comm c = comms[op->comm];
  const int n = op->n, whole = n * size;
  int* ref = calloc((size_t)(whole > 0 ? whole : 1), sizeof(int));
  size_t bytes = 0;
  int ok = 1;
  switch (op->kind) {
    case allreduce:
      must(PMPI_Allreduce(op->in, ref, n, MPI_INT, MPI_SUM, c), "PMPI_Allreduce");
      bytes = sizeof(int) * (size_t)n;
      break;
    case allreduce_max:
      must(PMPI_Allreduce(op->in, ref, n, MPI_INT, MPI_MAX, c), "PMPI_Allreduce");
      bytes = sizeof(int) * (size_t)n;
      break;
    case reduce_scatter_block:
      must(PMPI_Reduce_scatter_block(op->in, ref, n, MPI_INT, MPI_SUM, c),
           "PMPI_Reduce_scatter_block");
      bytes = sizeof(int) * (size_t)n;
      break;
    case reduce_scatter:
      must(PMPI_Reduce_scatter(op->in, ref, op->counts, MPI_INT, MPI_SUM, c),
           "PMPI_Reduce_scatter");
      bytes = sizeof(int) * (size_t)op->counts[rank];
      break;
    case allgather:
      must(PMPI_Allgather(op->in, n, MPI_INT, ref, n, MPI_INT, c), "PMPI_Allgather");
      bytes = sizeof(int) * (size_t)whole;
      break;
    case allgatherv:
      must(PMPI_Allgatherv(op->in, op->counts[rank], MPI_INT, ref, op->counts, op->displs, MPI_INT,
                           c),
           "PMPI_Allgatherv");
      bytes = sizeof(int) * (size_t)n;
      break;
    case bcast:
      memcpy(ref, op->in, sizeof(int) * (size_t)n);
      must(PMPI_Bcast(ref, n, MPI_INT, op->root, c), "PMPI_Bcast");
      bytes = sizeof(int) * (size_t)n;
      break;
    case allreduce_short:
      must(PMPI_Allreduce(op->in, ref, n, MPI_SHORT, MPI_SUM, c), "PMPI_Allreduce");
      bytes = sizeof(short) * (size_t)n;
      break;
    case gather:
      must(PMPI_Gather(op->in, n, MPI_INT, ref, n, MPI_INT, op->root, c), "PMPI_Gather");
      bytes = rank == op->root ? sizeof(int) * (size_t)whole : 0;
      break;
    case scatter:
      must(PMPI_Scatter(op->in, n, MPI_INT, ref, n, MPI_INT, op->root, c), "PMPI_Scatter");
      bytes = sizeof(int) * (size_t)n;
      break;
    case alltoall:
      must(PMPI_Alltoall(op->in, n, MPI_INT, ref, n, MPI_INT, c), "PMPI_Alltoall");
      bytes = sizeof(int) * (size_t)whole;
      break;
    case scan:
      must(PMPI_Scan(op->in, ref, n, MPI_INT, MPI_SUM, c), "PMPI_Scan");
      bytes = sizeof(int) * (size_t)n;
      break;
    case reduce:
      must(PMPI_Reduce(op->in, ref, n, MPI_INT, MPI_SUM, op->root, c), "PMPI_Reduce");
      bytes = rank == op->root ? sizeof(int) * (size_t)n : 0;
      break;
    case p2p: {
      int* sent = input(seed, k, (rank - op->shift + size) % size, n);
      memcpy(ref, sent, sizeof(int) * (size_t)n);
      free(sent);
      bytes = sizeof(int) * (size_t)n;
      break;
    }
    default:
      break;
  }
  if (bytes && memcmp(op->out, ref, bytes) != 0) {
    ok = 0;
    fprintf(
        stderr,
        "rank %d: seed %d op %d (%s on communicator %d, %d elements%s) differs from MPI's result\n",
        rank, seed, k, kind_names[op->kind], op->comm, n, op->in_place ? ", in place" : "");
  }
  free(ref);
  return ok;
}

static void release(Op* op) { free(op->in), free(op->out), free(op->counts), free(op->displs); }

/* One rank skips a collective its peers wait for: the job must end through the watchdog. */
static int skip(int who, int later) {
  MPI_Comm c;
  must(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup");
  MPI_Comm_set_name(c, "stress communicator");
  int v[1000];
  for (int i = 0; i < 1000; ++i) v[i] = rank;
  MPI_Request r;
  if (later) { /* a first call every rank makes: toroid's state exists on every rank */
    must(MPI_Iallreduce(MPI_IN_PLACE, v, 1000, MPI_INT, MPI_SUM, c, &r), "MPI_Iallreduce");
    must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
  }
  if (rank == who) {
    const struct timespec pause = {120, 0};
    nanosleep(&pause, NULL); /* the others' watchdog ends the job long before */
  } else {
    must(MPI_Iallreduce(MPI_IN_PLACE, v, 1000, MPI_INT, MPI_SUM, c, &r), "MPI_Iallreduce");
    must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
  }
  fprintf(stderr, "rank %d: MPI_Wait returned on a collective rank %d never started\n", rank, who);
  MPI_Finalize();
  return 1;
}

int main(int argc, char** argv) {
  int ops_per_seed = 400, window = 20, sleep_ms = 20, seeds[16], n_seeds = 0, skipper = -1,
      later = 0, single = 0;
  for (int a = 1; a < argc; ++a) {
    if ((strcmp(argv[a], "-skip") == 0 || strcmp(argv[a], "-skip-later") == 0) && a + 1 < argc) {
      later = strcmp(argv[a], "-skip-later") == 0;
      skipper = atoi(argv[++a]);
    } else if (strcmp(argv[a], "-ops") == 0 && a + 1 < argc) {
      ops_per_seed = atoi(argv[++a]);
    } else if (strcmp(argv[a], "-window") == 0 && a + 1 < argc)
      window = atoi(argv[++a]);
    else if (strcmp(argv[a], "-sleep-ms") == 0 && a + 1 < argc)
      sleep_ms = atoi(argv[++a]);
    else if (strcmp(argv[a], "-single") == 0)
      single = 1;
    else if (n_seeds < 16 && atoi(argv[a]) > 0)
      seeds[n_seeds++] = atoi(argv[a]);
    else {
      fprintf(stderr,
              "preload_stress: bad argument '%s' (SEED... [-ops N] [-window W] [-sleep-ms S] "
              "[-single])\n",
              argv[a]);
      return 2;
    }
  }
  if (n_seeds == 0) seeds[n_seeds++] = 1;
  if (window < 2 || window > kMaxWindow || ops_per_seed < 1) {
    fprintf(stderr, "preload_stress: -window must be 2-%d and -ops at least 1\n", kMaxWindow);
    return 2;
  }
  int provided = MPI_THREAD_SINGLE;
  if (single)
    MPI_Init(&argc, &argv);
  else
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  /* Served either way on one node (docs/preload.md, "Non-blocking calls"). */
  threaded = single || provided == MPI_THREAD_MULTIPLE;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (skipper >= 0) return skip(skipper, later);
  comms[0] = MPI_COMM_WORLD;
  for (int c = 1; c < kComms; ++c) must(MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]), "MPI_Comm_dup");

  long long all_wrong = 0;
  Op* ops = malloc(sizeof(Op) * (size_t)ops_per_seed);
  for (int s = 0; s < n_seeds; ++s) {
    const int seed = seeds[s];
    uint64_t shared = 0x9E3779B97F4A7C15ULL * (uint64_t)seed | 1;
    uint64_t mine = 0xD1B54A32D192ED03ULL * (uint64_t)(seed * 1000 + rank + 1) | 1;
    MPI_Request reqs[2 * kMaxWindow];
    int owner[2 * kMaxWindow], active = 0;
    const long long served_before = served_calls(); /* -1: the preload is not loaded */
    long long expected = 0;
    for (int k = 0; k < ops_per_seed; ++k) {
      /* Room for a pair, and now and then fewer in flight than the window allows. */
      while (active + 2 > window || (active > 0 && below(&mine, 4) == 0)) {
        if (sleep_ms > 0 && below(&mine, 40) == 0) {
          const struct timespec pause = {0, (long)(1 + below(&mine, sleep_ms)) * 1000000L};
          nanosleep(&pause, NULL);
        }
        complete_some(reqs, owner, &active, ops, &mine);
      }
      start(seed, k, &ops[k], &shared, reqs, owner, &active);
      expected += served_before >= 0 && threaded && ops[k].kind < kServedKinds;
    }
    while (active > 0) complete_some(reqs, owner, &active, ops, &mine);
    const long long served = served_before < 0 ? 0 : served_calls() - served_before;

    long long wrong = 0;
    for (int k = 0; k < ops_per_seed; ++k) {
      if (ops[k].open != 0) {
        ++wrong;
        fprintf(stderr, "rank %d: seed %d op %d has %d requests never completed\n", rank, seed, k,
                ops[k].open);
      }
      wrong += !matches(seed, k, &ops[k]);
      release(&ops[k]);
    }
    if (served != expected) {
      ++wrong;
      fprintf(stderr, "rank %d: seed %d: toroid served %lld calls, the rules say %lld\n", rank,
              seed, served, expected);
    }
    long long counts[3] = {served, expected, wrong}, sums[3];
    must(PMPI_Allreduce(counts, sums, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD), "PMPI_Allreduce");
    if (rank == 0)
      printf("seed %d: %d ops, served %lld expected %lld wrong %lld\n", seed, ops_per_seed, sums[0],
             sums[1], sums[2]);
    all_wrong += sums[2];
  }
  free(ops);
  for (int c = 1; c < kComms; ++c) MPI_Comm_free(&comms[c]);
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
