#!/usr/bin/env python3
"""toroid against every configuration of the stock MPI_Allreduce of Open MPI.

Runs toroid-bench once per stock configuration (the default, then each forced
coll_tuned_allreduce_algorithm), each run holding toroid's rows too, and prints per size:
every stock configuration's time, toroid's best row, the ratio against the best stock
configuration (from the same run), and how close toroid gets to the memory-traffic bound
(--bound: every rank copying its vector at once, at the aggregate copy rate; the memory-traffic
bound 2·p·N bytes over that copy bandwidth, and toroid's time against both).

  scripts/compare_stock.py -np 4 [--algo ring,bidir_ring,...] [--transport shm] [-b 4K -e 64M]
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Open MPI 4.1 coll_tuned_allreduce_algorithm values.
STOCK = {0: "default", 1: "basic_linear", 2: "nonoverlapping", 3: "recursive_doubling", 4: "ring",
         5: "segmented_ring", 6: "rabenseifner"}


def run(args, forced):
    cmd = [os.path.join(ROOT, "scripts", "mpirun.sh"), "-np", str(args.np)]
    if forced:
        cmd += ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_allreduce_algorithm", str(forced)]
    cmd += [os.path.join(args.build, "benchmarks", "toroid-bench"), "--algo", args.algo, "--transport", args.transport,
            "--bound", "-b", args.b, "-e", args.e, "-f", args.f, "-n", str(args.n), "--check", "1", "--format", "csv"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(l for l in out.splitlines() if not l.startswith("#"))))]
    wrong = sum(int(r["wrong"]) for r in rows)
    if wrong:
        sys.exit(f"{wrong} wrong elements with stock configuration {STOCK[forced]}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-np", type=int, default=4)
    ap.add_argument("--algo", default="ring,bidir_ring,rabenseifner,auto")
    ap.add_argument("--transport", default="shm")
    ap.add_argument("-b", default="4K")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-f", default="4")
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--configs", default="0,1,2,3,4,5,6", help="stock configurations to run (0: default)")
    args = ap.parse_args()

    runs = {k: run(args, k) for k in (int(c) for c in args.configs.split(","))}
    sizes = sorted({int(r["size"]) for rows in runs.values() for r in rows})
    head = ["size"] + [STOCK[k] for k in runs] + ["toroid best", "algo", "vs best stock", "vs best (its run)",
                                                   "copy", "bound", "of bound", "of copy"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for size in sizes:
        stock, best_toroid, worst_ratio, best_algo, copies, of_bound = [], None, None, "", [], []
        best_stock = None  # (stock time, ratio in that configuration's own run)
        for k, rows in runs.items():
            here = [r for r in rows if int(r["size"]) == size]
            st = next(float(r["time_us"]) for r in here if r["algo"] == "mpi")
            mine = [r for r in here if r["algo"] not in ("mpi", "copy_bound")]
            fastest = min(mine, key=lambda r: float(r["time_us"]))
            t = float(fastest["time_us"])
            stock.append(st)
            # Ratios against this stock configuration and this run's copy time: same run.
            ratio = st / t
            if best_stock is None or st < best_stock[0]:
                best_stock = (st, ratio)
            if worst_ratio is None or ratio < worst_ratio:
                worst_ratio = ratio
            if best_toroid is None or t < best_toroid:
                best_toroid, best_algo = t, fastest["algo"]
            copy = next(float(r["time_us"]) for r in here if r["algo"] == "copy_bound")
            copies.append(copy)
            of_bound.append(2 * copy / t)
        copy, share = statistics.median(copies), statistics.median(of_bound)
        cells = [str(size)] + [f"{s:.1f}" for s in stock] + [
            f"{best_toroid:.1f}", best_algo, f"{worst_ratio:.2f}", f"{best_stock[1]:.2f}", f"{copy:.1f}",
            f"{2 * copy:.1f}",
            f"{100 * share:.0f}%", f"{50 * share:.0f}%"]
        print("| " + " | ".join(cells) + " |")
    print("\ntimes in µs (median of the slowest rank); 'vs best stock' = the smallest, over stock configurations, "
          "of stock time / toroid's fastest time in the same run; 'vs best (its run)' = the same ratio in the run of "
          "the fastest stock configuration; 'copy' = every rank copying its vector once at "
          "the aggregate copy rate (toroid-bench --bound), median over the runs; 'bound' = 2·p·N bytes over that "
          "copy bandwidth (p·N bytes copied per 'copy'), i.e. 2 × copy; 'of bound' and 'of copy' = that time / "
          "toroid's fastest time in the same run, median over the runs")


if __name__ == "__main__":
    main()
