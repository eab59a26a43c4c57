// toroid-host-probe: what this machine gives two processes that hand data to each other, with
// no toroid and no MPI in the way. It separates "toroid is slow" from "the host is slow now":
// run it beside a benchmark (benchmarks/run_spread.py --host-probe does, before every job).
//
//   parent (CPU a)                  child (CPU b)
//   ── flag = k ──────────────────▶ sees k, writes flag = k+1       ping-pong: one cache line
//   ◀───────────────────── k+1 ──                                    handed back and forth
//   fills slot s, posts s ────────▶ copies slot s out, frees s       pipeline: N-slot ring, as
//                                                                     toroid's shared-memory
//                                                                     channels move a vector
//   fills slot s (plain stores, ──▶ adds slot s into its own       hand-off: a cache-sized
//     or non-temporal ones)         vector, frees s                  vector, as a recv_reduce
// Prints one line of key=value pairs:
//   pingpong_ns   median round trip of the cache line (both processes spinning)
//   stalls        round trips over 20 us (the other process was not running: a vCPU or task
//                 descheduled), per 100,000
//   pipe_gbs      the pipeline's rate, bytes moved / time (MiB-sized vector through 256 KiB slots)
//   copy_gbs      one process copying the same vector alone (the memory's own rate)
//   handoff_us    1 MiB through four 64 KiB slots that the parent fills with plain stores
//                 (the lines stay in its cache, and the child takes them from there), the
//                 child adding each slot into a vector of its own; median of the rounds
//   handoff_nt_us the same with non-temporal stores (the lines go to memory): far less than
//                 handoff_us where the two CPUs share no cache (exec/slot_fill.hpp)
//   steal_pct     the host's steal time over the probe, percent of the CPUs' time (/proc/stat)
//
//   toroid-host-probe [--cpus A,B] [--bytes N] [--slot N] [--rounds N]
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

enum { kPingPongs = 100000, kSlots = 4, kLine = 64 };
enum { kHandBytes = 1 << 20, kHandSlot = 64 << 10, kHandRounds = 9 };

struct Shared {
  _Alignas(kLine) atomic_uint_fast64_t flag;      // ping-pong counter
  _Alignas(kLine) atomic_uint_fast64_t posted;    // slots filled by the parent, in order
  _Alignas(kLine) atomic_uint_fast64_t consumed;  // slots emptied by the child, in order
  _Alignas(kLine) atomic_int phase;               // 0 ping-pong, 1 pipeline, 2 done
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    fprintf(stderr, "toroid-host-probe: cannot run on CPU %d\n", cpu);
    exit(2);
  }
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Steal and total jiffies of all CPUs, from the first line of /proc/stat.
static void cpu_times(unsigned long long* steal, unsigned long long* total) {
  unsigned long long v[8] = {0};
  FILE* f = fopen("/proc/stat", "r");
  *steal = *total = 0;
  if (!f) return;
  if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
             &v[5], &v[6], &v[7]) == 8) {
    for (int i = 0; i < 8; ++i) *total += v[i];
    *steal = v[7];
  }
  fclose(f);
}

static int compare_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// memcpy whose stores bypass the cache (SSE2, part of x86-64; elsewhere plain memcpy). `d` is
// 16-byte aligned and `n` a multiple of 16 here.
static void copy_nt(char* d, const char* src, size_t n) {
#if defined(__x86_64__)
  for (size_t i = 0; i < n; i += 16)
    _mm_stream_si128((__m128i*)(d + i), _mm_loadu_si128((const __m128i*)(src + i)));
  _mm_sfence();
#else
  memcpy(d, src, n);
#endif
}

// The hand-off's sequence numbers continue the pipeline's on `posted` and `consumed`: round r
// of way w (0 plain, 1 non-temporal) moves segments base + (w * kHandRounds + r) * per of it.
static uint64_t hand_segments(void) { return kHandBytes / kHandSlot; }

static void hand_child(struct Shared* sh, const char* slots, uint64_t base) {
  static float acc[kHandBytes / sizeof(float)];
  const uint64_t per = hand_segments();
  for (uint64_t s = base; s < base + 2 * kHandRounds * per; ++s) {
    while (atomic_load_explicit(&sh->posted, memory_order_acquire) <= s) relax();
    const float* in = (const float*)(slots + (s % kSlots) * kHandSlot);
    float* to = acc + ((s - base) % per) * (kHandSlot / sizeof(float));
    for (size_t i = 0; i < kHandSlot / sizeof(float); ++i) to[i] += in[i];
    atomic_store_explicit(&sh->consumed, s + 1, memory_order_release);
  }
}

static double hand_parent(struct Shared* sh, char* slots, const char* in, uint64_t base, int way) {
  const uint64_t per = hand_segments();
  double t[kHandRounds];
  for (int r = 0; r < kHandRounds; ++r) {
    const uint64_t first = base + ((uint64_t)way * kHandRounds + (uint64_t)r) * per;
    const double t0 = now_s();
    for (uint64_t s = first; s < first + per; ++s) {
      while (s >= kSlots && atomic_load_explicit(&sh->consumed, memory_order_acquire) <= s - kSlots)
        relax();
      char* to = slots + (s % kSlots) * kHandSlot;
      const char* from = in + (s - first) * kHandSlot;
      if (way)
        copy_nt(to, from, kHandSlot);
      else
        memcpy(to, from, kHandSlot);
      atomic_store_explicit(&sh->posted, s + 1, memory_order_release);
    }
    while (atomic_load_explicit(&sh->consumed, memory_order_acquire) < first + per) relax();
    t[r] = now_s() - t0;
  }
  qsort(t, kHandRounds, sizeof t[0], compare_double);
  return t[kHandRounds / 2];
}

static size_t parse_size(const char* what, const char* text) {
  char* end = NULL;
  unsigned long long v = strtoull(text, &end, 10);
  if (end && (*end == 'K' || *end == 'k'))
    v <<= 10, ++end;
  else if (end && *end == 'M')
    v <<= 20, ++end;
  if (!end || *end != '\0' || v == 0) {
    fprintf(stderr, "toroid-host-probe: %s: '%s' is not a size\n", what, text);
    exit(2);
  }
  return (size_t)v;
}

static void child(struct Shared* sh, char* slots, size_t slot, size_t bytes, int rounds,
                  char* out) {
  for (uint64_t k = 1; k <= 2 * (uint64_t)kPingPongs; k += 2) {
    while (atomic_load_explicit(&sh->flag, memory_order_acquire) != k) relax();
    atomic_store_explicit(&sh->flag, k + 1, memory_order_release);
  }
  const uint64_t per_round = (bytes + slot - 1) / slot;
  for (uint64_t s = 0; s < per_round * (uint64_t)rounds; ++s) {
    while (atomic_load_explicit(&sh->posted, memory_order_acquire) <= s) relax();
    const size_t at = (size_t)(s % per_round) * slot;
    const size_t n = bytes - at < slot ? bytes - at : slot;
    memcpy(out + at, slots + (s % kSlots) * slot, n);
    atomic_store_explicit(&sh->consumed, s + 1, memory_order_release);
  }
  hand_child(sh, slots, per_round * (uint64_t)rounds);
}

int main(int argc, char** argv) {
  int cpu_a = 0, cpu_b = 1, rounds = 5;
  size_t bytes = 16u << 20, slot = 256u << 10;
  for (int i = 1; i < argc; ++i) {
    const char* next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--cpus") && next) {
      if (sscanf(next, "%d,%d", &cpu_a, &cpu_b) != 2) {
        fprintf(stderr, "toroid-host-probe: --cpus: '%s' is not A,B (or -1,-1: unpinned)\n", next);
        return 2;
      }
    } else if (!strcmp(argv[i], "--bytes") && next) {
      bytes = parse_size("--bytes", next);
    } else if (!strcmp(argv[i], "--slot") && next) {
      slot = parse_size("--slot", next);
    } else if (!strcmp(argv[i], "--rounds") && next) {
      rounds = atoi(next);
      if (rounds < 1) {
        fprintf(stderr, "toroid-host-probe: --rounds: '%s' must be at least 1\n", next);
        return 2;
      }
    } else {
      fprintf(stderr,
              "toroid-host-probe: unrecognised argument '%s'\n"
              "usage: toroid-host-probe [--cpus A,B] [--bytes N] [--slot N] [--rounds N]\n",
              argv[i]);
      return 2;
    }
    ++i;
  }
  const size_t slot_room = kSlots * (slot > kHandSlot ? slot : kHandSlot);
  struct Shared* sh =
      mmap(NULL, sizeof *sh + slot_room, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  char* in = malloc(bytes > kHandBytes ? bytes : kHandBytes);
  char* out = malloc(bytes);
  if (sh == MAP_FAILED || !in || !out) {
    fprintf(stderr, "toroid-host-probe: out of memory for %zu bytes\n", bytes);
    return 1;
  }
  char* slots = (char*)(sh + 1);
  memset(sh, 0, sizeof *sh + slot_room);
  memset(in, 0, bytes > kHandBytes ? bytes : kHandBytes);
  memset(out, 2, bytes);
  unsigned long long steal0, total0, steal1, total1;
  cpu_times(&steal0, &total0);

  const pid_t pid = fork();
  if (pid < 0) {
    perror("toroid-host-probe: fork");
    return 1;
  }
  if (pid == 0) {
    pin(cpu_b);
    child(sh, slots, slot, bytes, rounds, out);
    _exit(0);
  }
  pin(cpu_a);
  static double trip[kPingPongs];
  long stalls = 0;
  for (uint64_t k = 1; k <= 2 * (uint64_t)kPingPongs; k += 2) {
    const double t0 = now_s();
    atomic_store_explicit(&sh->flag, k, memory_order_release);
    while (atomic_load_explicit(&sh->flag, memory_order_acquire) != k + 1) relax();
    trip[k / 2] = now_s() - t0;
    stalls += trip[k / 2] > 20e-6;
  }
  qsort(trip, kPingPongs, sizeof trip[0], compare_double);

  const uint64_t per_round = (bytes + slot - 1) / slot;
  const double p0 = now_s();
  for (uint64_t s = 0; s < per_round * (uint64_t)rounds; ++s) {
    while (s >= kSlots && atomic_load_explicit(&sh->consumed, memory_order_acquire) <= s - kSlots)
      relax();
    const size_t at = (size_t)(s % per_round) * slot;
    const size_t n = bytes - at < slot ? bytes - at : slot;
    memcpy(slots + (s % kSlots) * slot, in + at, n);
    atomic_store_explicit(&sh->posted, s + 1, memory_order_release);
  }
  while (atomic_load_explicit(&sh->consumed, memory_order_acquire) < per_round * (uint64_t)rounds)
    relax();
  const double pipe_s = now_s() - p0;
  const double hand_s = hand_parent(sh, slots, in, per_round * (uint64_t)rounds, 0);
  const double hand_nt_s = hand_parent(sh, slots, in, per_round * (uint64_t)rounds, 1);
  int status = 0;
  waitpid(pid, &status, 0);

  double copy_s = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const double c0 = now_s();
    memcpy(out, in, bytes);
    __asm__ volatile("" : : "r"(out) : "memory");
    const double c = now_s() - c0;
    if (c < copy_s) copy_s = c;
  }
  cpu_times(&steal1, &total1);
  const double steal_pct =
      total1 > total0 ? 100.0 * (double)(steal1 - steal0) / (double)(total1 - total0) : 0.0;
  printf(
      "pingpong_ns=%.0f stalls=%ld pipe_gbs=%.2f copy_gbs=%.2f steal_pct=%.2f handoff_us=%.1f "
      "handoff_nt_us=%.1f\n",
      1e9 * trip[kPingPongs / 2], stalls, (double)bytes * rounds / pipe_s / 1e9,
      (double)bytes / copy_s / 1e9, steal_pct, 1e6 * hand_s, 1e6 * hand_nt_s);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
