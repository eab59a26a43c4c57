// toroid-overlap-bench: how much of an all-reduce hides behind computation.
//
//   mpirun -np 2 toroid-overlap-bench -b 1M -e 64M --algo ring
//
// Per size, in one run, each the median over iterations of the slowest rank:
//   comm      the all-reduce alone (blocking)
//   compute   a compute loop alone, sized to take as long as `comm` (or --compute-ms)
//   serial    compute, then the all-reduce
//   overlap   start the all-reduce, compute, wait, in three ways:
//               caller   no toroid call during the compute: the collective moves only in wait()
//               polled   test() every 1/32 of the compute (spin only)
//               thread   the communicator's progress thread (TOROID_PROGRESS=thread)
// ideal = max(compute, comm); hidden = (serial - overlap) / min(compute, comm): 1 means all of
// the shorter one was hidden, 0 none. Two kinds of compute (--compute, both by default):
//   spin   arithmetic on registers (no memory traffic): it holds the core, as CPU compute does,
//          so it competes with the collective only for cores
//   sleep  the rank sleeps as long, as a caller waiting for an accelerator does: the core is free
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "core/parse_size.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;

namespace {

// `units` of register-only arithmetic; returns a value so the work is not optimized away.
double compute(std::uint64_t units) {
  double a = 1.0, b = 0.5, c = 0.25, d = 0.125;
  for (std::uint64_t i = 0; i < units; ++i)
    for (int k = 0; k < 64; ++k) {
      a = a * 0.9999999 + 1e-7;
      b = b * 0.9999998 + 2e-7;
      c = c * 0.9999997 + 3e-7;
      d = d * 0.9999996 + 4e-7;
    }
  return a + b + c + d;
}

volatile double sink = 0;

void sleep_us(double us) {
  timespec t{static_cast<time_t>(us / 1e6), static_cast<long>(std::fmod(us, 1e6) * 1e3)};
  nanosleep(&t, nullptr);
}

template <class Fn>
double median_us(int iters, MPI_Comm comm, Fn&& fn) {
  std::vector<double> t;
  for (int it = 0; it < iters + 2; ++it) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    fn();
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (it >= 2) t.push_back(dt * 1e6);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Args {
  std::uint64_t min_bytes = 1 << 20, max_bytes = 16 << 20;
  int iters = 10;
  double compute_ms = 0;  // 0: as long as the all-reduce
  Algorithm algo = Algorithm::ring;
  std::vector<std::string> kinds = {"spin", "sleep"};
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InvalidArgument(fmt::format("{} needs a value", k));
      return argv[++i];
    };
    if (k == "-b")
      a.min_bytes = parse_size(value(), "-b");
    else if (k == "-e")
      a.max_bytes = parse_size(value(), "-e");
    else if (k == "-n")
      a.iters = std::stoi(value());
    else if (k == "--compute-ms")
      a.compute_ms = std::stod(value());
    else if (k == "--algo")
      a.algo = parse_algorithm(value());
    else if (k == "--compute") {
      a.kinds.clear();
      const std::string v = value();
      for (std::size_t at = 0; at <= v.size();) {
        const std::size_t end = std::min(v.find(',', at), v.size());
        const std::string kind = v.substr(at, end - at);
        if (kind != "spin" && kind != "sleep")
          throw InvalidArgument(fmt::format("--compute: '{}' is not spin or sleep", kind));
        a.kinds.push_back(kind);
        at = end + 1;
      }
    } else
      throw InvalidArgument(
          fmt::format("unknown argument '{}' (-b, -e, -n, --compute-ms, --compute, --algo)", k));
  }
  if (a.min_bytes > a.max_bytes || a.min_bytes < 4)
    throw InvalidArgument("-b must be >= 4 and <= -e");
  if (a.iters < 1) throw InvalidArgument("-n must be at least 1");
  if (a.algo == Algorithm::mpi)
    throw InvalidArgument("--algo mpi: the stock collective has no non-blocking form here");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  int status = 0;
  try {
    const Args a = parse(argc, argv);
    Communicator caller(MPI_COMM_WORLD);
    Options o;
    o.progress = ProgressMode::thread;
    Communicator threaded(MPI_COMM_WORLD, o);
    // Compute units per microsecond on this rank, alone.
    const double t0 = MPI_Wtime();
    sink = compute(20000);
    double per_us = 20000 / ((MPI_Wtime() - t0) * 1e6);
    MPI_Allreduce(MPI_IN_PLACE, &per_us, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) {
      fmt::print("# toroid-overlap-bench  ranks {}  algo {}  thread level {}  iterations {}\n", p,
                 to_string(a.algo), provided == MPI_THREAD_MULTIPLE ? "multiple" : "lower",
                 a.iters);
      fmt::print(
          "# times in us (median of the slowest rank); ideal = max(compute, comm); hidden = "
          "(serial - overlap) / min(compute, comm)\n");
      fmt::print("{:>6} {:>10} {:>9} {:>9} {:>9} {:>9} {:>14} {:>14} {:>14}\n", "kind", "bytes",
                 "comm", "compute", "serial", "ideal", "caller(hid)", "polled(hid)", "thread(hid)");
    }
    for (const std::string& kind : a.kinds)
      for (std::uint64_t bytes = a.min_bytes; bytes <= a.max_bytes; bytes *= 4) {
        const bool spin = kind == "spin";
        const std::size_t n = bytes / 4;
        std::vector<float> in(n, 1.0f), out(n);
        auto blocking = [&](Communicator& c) {
          allreduce(std::span<const float>(in), std::span<float>(out), ReduceOp::sum, c, a.algo);
        };
        const double comm_us = median_us(a.iters, MPI_COMM_WORLD, [&] { blocking(caller); });
        const double want_us = a.compute_ms > 0 ? a.compute_ms * 1e3 : comm_us;
        const auto units = static_cast<std::uint64_t>(want_us * per_us);
        auto work = [&](double fraction) {
          if (spin)
            sink = compute(static_cast<std::uint64_t>(static_cast<double>(units) * fraction));
          else
            sleep_us(want_us * fraction);
        };
        const double compute_us = median_us(a.iters, MPI_COMM_WORLD, [&] { work(1.0); });
        const double serial_us = median_us(a.iters, MPI_COMM_WORLD, [&] {
          work(1.0);
          blocking(caller);
        });
        auto overlapped = [&](Communicator& c, bool poll) {
          return median_us(a.iters, MPI_COMM_WORLD, [&] {
            Request r = iallreduce(std::span<const float>(in), std::span<float>(out), ReduceOp::sum,
                                   c, a.algo);
            if (poll) {
              for (int k = 0; k < 32; ++k) {
                work(1.0 / 32);
                if (r.active()) r.test();
              }
            } else {
              work(1.0);
            }
            if (r.active()) r.wait();
          });
        };
        // Polling between sleeps would time the timer's slack (tens of us per sleep), not the overlap.
        const double caller_us = overlapped(caller, false),
                     polled_us = spin ? overlapped(caller, true) : 0,
                     thread_us = overlapped(threaded, false);
        // A wrong sum is an error whatever the timing says.
        bool ok = true;
        for (std::size_t i = 0; i < n && ok; ++i) ok = out[i] == static_cast<float>(p);
        int all = ok ? 1 : 0;
        MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all) status = 1;
        const double shorter = std::min(compute_us, comm_us);
        auto hid = [&](double t) {
          return t == 0 ? std::string("-")
                        : fmt::format("{:.0f}({:.2f})", t, (serial_us - t) / shorter);
        };
        if (rank == 0)
          fmt::print("{:>6} {:>10} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>14} {:>14} {:>14}{}\n",
                     kind, bytes, comm_us, compute_us, serial_us, std::max(compute_us, comm_us),
                     hid(caller_us), hid(polled_us), hid(thread_us), all ? "" : "  WRONG RESULT");
        if (bytes > UINT64_MAX / 4) break;
      }
  } catch (const Error& e) {
    if (rank == 0) fmt::print(stderr, "toroid-overlap-bench: {}\n", e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}
