#!/usr/bin/python3
"""toroid against every stock configuration a user could pick, on one node: MPI_Allreduce, or with
--op alltoall / alltoallv MPI_Alltoall / MPI_Alltoallv (toroid-bench's skewed blocks).

Runs toroid-bench once per stock configuration, each run holding toroid's rows and the copy
bound (--bound: every rank copying its vector at once) beside the stock row, and prints per size
every stock configuration's time, the best of them, toroid's best row, the ratio against the best
stock configuration (in that configuration's own run), and how close toroid and the best stock
come to the one-node memory limit ("of copy": an all-reduce reads every rank's input and writes
every rank's output, 2·p·N bytes, exactly the traffic of one concurrent copy of every rank's
vector, so the copy bound's time over the collective's time is the fraction of the limit).

The stock field (Open MPI 4.1; names for --configs):
  default             coll/tuned with its own decision rules
  tuned:1 ... tuned:6 coll_tuned_allreduce_algorithm forced (basic_linear, nonoverlapping,
                      recursive_doubling, ring, segmented_ring, rabenseifner); all-to-all:
                      coll_tuned_alltoall_algorithm 1-5 (basic_linear, pairwise, modified_bruck,
                      linear_sync, two_proc); all-to-allv: coll_tuned_alltoallv_algorithm 1-2
                      (basic_linear, pairwise)
  han, adapt, sm      coll/han, coll/adapt, coll/sm at priority 100 (all-reduce only: none of
                      them has an all-to-all, which then stays coll/tuned's)
  ucx                 pml ucx (tls and devices any) under the default coll
  mpich, mpich:release_gather, mpich:recursive_doubling, mpich:reduce_scatter_allgather
                      Debian's MPICH 4.0 (a toroid-bench built with mpicxx.mpich, in
                      build-mpich-bench/, configured and built when missing): its default, its
                      shared-memory release_gather algorithm, and forced inter-node algorithms;
                      all-to-all: mpich:brucks, mpich:pairwise, mpich:scattered; all-to-allv:
                      mpich:pairwise_sendrecv_replace, mpich:scattered

toroid's rows run on ordinary memory; with --buffers user,toroid each run also holds toroid's
rows on Communicator::allocate's memory (toroid-bench --buffers, rows named ALGO+owned: the
single-copy path under auto), reported in columns of their own ("owned").

  benchmarks/compare_stock.py -np 4 [--op allreduce|alltoall|alltoallv] [--cold] [--buffers user,toroid]
                              [--configs all|default,han,...] [-b 4K -e 64M]
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Per operation: Open MPI's forced coll/tuned algorithms, and MPICH's configurations.
TUNED = {"allreduce": {1: "basic_linear", 2: "nonoverlapping", 3: "recursive_doubling", 4: "ring",
                       5: "segmented_ring", 6: "rabenseifner"},
         "alltoall": {1: "basic_linear", 2: "pairwise", 3: "modified_bruck", 4: "linear_sync", 5: "two_proc"},
         "alltoallv": {1: "basic_linear", 2: "pairwise"}}
MPICH_OF = {
    "allreduce": {"mpich": {}, "mpich:release_gather": {"MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM": "release_gather"},
                  "mpich:recursive_doubling": {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"},
                  "mpich:reduce_scatter_allgather": {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "reduce_scatter_allgather"}},
    "alltoall": {"mpich": {}, "mpich:brucks": {"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "brucks"},
                 "mpich:pairwise": {"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "pairwise"},
                 "mpich:scattered": {"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "scattered"}},
    "alltoallv": {"mpich": {},
                  "mpich:pairwise_sendrecv_replace": {"MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM": "pairwise_sendrecv_replace"},
                  "mpich:scattered": {"MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM": "scattered"}}}
OMPI, MPICH, ALL = {}, {}, []


def configurations(op, np):
    """The stock field of `op` at np ranks: fills OMPI, MPICH and ALL (two_proc, the all-to-all
    of exactly 2 ranks, only there: elsewhere MPI refuses it, so no user could pick it)."""
    OMPI.clear()
    OMPI.update({"default": [], "ucx": ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca",
                                        "pml_ucx_devices", "any"]})
    if op == "allreduce":
        OMPI.update({"han": ["--mca", "coll_han_priority", "100"], "adapt": ["--mca", "coll_adapt_priority", "100"],
                     "sm": ["--mca", "coll_sm_priority", "100"]})
    for k in TUNED[op]:
        if TUNED[op][k] == "two_proc" and np != 2:
            continue
        OMPI[f"tuned:{k}"] = ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca",
                              f"coll_tuned_{op}_algorithm", str(k)]
    MPICH.clear()
    MPICH.update(MPICH_OF[op])
    ALL[:] = list(OMPI) + list(MPICH)


def mpich_bench(build):
    """The MPICH build of toroid-bench: configured when missing, brought up to date every time."""
    bench = os.path.join(build, "benchmarks", "toroid-bench")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                        "-DMPI_C_COMPILER=/usr/bin/mpicc.mpich", "-DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich",
                        "-DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich", "-DTOROID_BUILD_PYTHON=OFF",
                        "-DTOROID_BUILD_TESTS=OFF", "-DTOROID_BUILD_EXAMPLES=OFF"], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count()), "--target", "toroid-bench"],
                   check=True, stdout=subprocess.DEVNULL)
    return bench


def run(args, name):
    bench_args = ["--op", args.op, "--algo", args.algo, "--transport", args.transport, "--bound", "-b", args.b,
                  "-e", args.e,
                  "-f", args.f, "-n", str(args.n), "--check", "1", "--format", "csv", "--buffers", args.buffers]
    if args.cold:
        bench_args.append("--cold")
    env = dict(os.environ)
    if name in OMPI:
        cmd = [os.path.join(ROOT, "scripts", "mpirun.sh"), "-np", str(args.np)] + OMPI[name] + [
            os.path.join(args.build, "benchmarks", "toroid-bench")]
    else:
        # hydra passes the environment on; MPICH spins while it waits, as toroid does.
        env.update(MPICH[name])
        cmd = ["/usr/bin/mpiexec.mpich", "-n", str(args.np), args.mpich_bench]
    proc = subprocess.run(cmd + bench_args, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"stock configuration {name}: toroid-bench exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in proc.stdout.splitlines() if not l.startswith("#")))))
    wrong = sum(int(r["wrong"]) for r in rows)
    if wrong:
        sys.exit(f"{wrong} wrong elements with stock configuration {name}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-np", type=int, default=4)
    ap.add_argument("--op", default="allreduce", choices=sorted(TUNED))
    ap.add_argument("--algo", help="toroid's rows (default: ring,bidir_ring,recursive_doubling,rabenseifner,"
                    "auto for allreduce; direct,bruck,ring,torus2d,torus2d_both,auto for alltoall; direct,auto for alltoallv)")
    ap.add_argument("--transport", default="shm")
    ap.add_argument("--cold", action="store_true", help="toroid-bench --cold: buffer sets over 2x the LLC")
    ap.add_argument("--buffers", default="user",
                    help="toroid-bench --buffers: user, toroid or user,toroid (owned rows in columns of their own)")
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-f", default="8")
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--mpich-build", default=os.path.join(ROOT, "build-mpich-bench"))
    ap.add_argument("--configs", default="all", help="comma list of stock configurations (see above), or all")
    ap.add_argument("--csv", help="also write every run's rows, with a config column, to this file")
    ap.add_argument("--brief", action="store_true", help="leave out the column of each stock configuration")
    args = ap.parse_args()
    configurations(args.op, args.np)
    if args.algo is None:
        args.algo = {"allreduce": "ring,bidir_ring,recursive_doubling,rabenseifner,auto",
                     "alltoall": "direct,bruck,ring,torus2d,torus2d_both,auto", "alltoallv": "direct,auto"}[args.op]
    names = ALL if args.configs == "all" else args.configs.split(",")
    for n in names:
        if n not in ALL:
            sys.exit(f"--configs: unknown stock configuration '{n}' (expected one of {', '.join(ALL)} or all)")

    # Built before any run, so the build never runs beside a measurement.
    args.mpich_bench = mpich_bench(args.mpich_build) if any(n in MPICH for n in names) else None
    runs = {}
    for n in names:
        print(f"# running {n}", file=sys.stderr, flush=True)
        runs[n] = run(args, n)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["config"] + list(next(iter(runs.values()))[0].keys()))
            w.writeheader()
            for n, rows in runs.items():
                for r in rows:
                    w.writerow({"config": n, **r})

    sizes = sorted({int(r["size"]) for rows in runs.values() for r in rows})
    owned = "toroid" in args.buffers.split(",")
    head = ["size"] + ([] if args.brief else names) + ["best stock", "toroid", "algo", "vs best stock", "toroid of copy",
                               "best stock of copy"]
    if owned:
        head += ["owned", "owned vs best stock", "owned of copy"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for size in sizes:
        stock, best = [], None  # best: (stock time, name, toroid time in that run, ratio, copy)
        toroid_best, toroid_algo, copies = None, "", []
        owned_best = None  # (time, copy) over the Open MPI runs
        for n, rows in runs.items():
            here = [r for r in rows if int(r["size"]) == size]
            st = next(float(r["time_us"]) for r in here if r["algo"] == "mpi")
            copy = next(float(r["time_us"]) for r in here if r["algo"] == "copy_bound")
            user_rows = [r for r in here if r["algo"] not in ("mpi", "copy_bound") and not r["algo"].endswith("+owned")]
            owned_rows = [r for r in here if r["algo"].endswith("+owned")]
            if not user_rows:
                user_rows = owned_rows
            mine = min(user_rows, key=lambda r: float(r["time_us"]))
            t = float(mine["time_us"])
            if owned_rows and n in OMPI:
                o = min(float(r["time_us"]) for r in owned_rows)
                if owned_best is None or o < owned_best[0]:
                    owned_best = (o, copy)
            stock.append(st)
            copies.append(copy)
            if best is None or st < best[0]:
                best = (st, n, t, st / t, copy)
            # toroid's own rows: from the Open MPI runs (the MPICH runs time toroid on MPICH).
            if n in OMPI and (toroid_best is None or t < toroid_best[0]):
                toroid_best, toroid_algo = (t, copy), mine["algo"]
        if toroid_best is None:  # MPICH only
            toroid_best = (best[2], best[4])
        cells = [str(size)] + ([] if args.brief else [f"{s:.1f}" for s in stock]) + [
            f"{best[0]:.1f} ({best[1]})", f"{toroid_best[0]:.1f}", toroid_algo, f"{best[3]:.2f}",
            f"{100 * toroid_best[1] / toroid_best[0]:.0f}%", f"{100 * best[4] / best[0]:.0f}%"]
        if owned:
            cells += ["–", "–", "–"] if owned_best is None else [
                f"{owned_best[0]:.1f}", f"{best[0] / owned_best[0]:.2f}", f"{100 * owned_best[1] / owned_best[0]:.0f}%"]
        print("| " + " | ".join(cells) + " |")
    print(f"\ntimes in µs (median of the slowest rank, {'cold' if args.cold else 'warm'} caches); "
          "'best stock' = the fastest stock configuration; 'vs best stock' = its time / toroid's fastest row in "
          "that configuration's own run; 'toroid' = toroid's fastest row over the Open MPI runs; 'of copy' = the "
          "copy bound's time (every rank copying its vector at once, same run) / the time: the fraction of the "
          "one-node memory limit reached"
          + ("; 'owned' = toroid's fastest row on Communicator::allocate's memory over the Open MPI runs, "
             "'owned vs best stock' = the best stock time / that (across runs)" if owned else ""))


if __name__ == "__main__":
    main()
