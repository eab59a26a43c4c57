#!/usr/bin/python3
"""Draws toroid-bench CSV output: busbw vs size per algorithm, and the speedup over stock MPI.

    toroid-bench --format csv --output run.csv ...
    benchmarks/plot_bench.py run.csv -o run.png
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path):
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    if not rows:
        sys.exit(f"plot_bench: {path} has no rows")
    missing = {"size", "algo", "busbw", "vs_mpi"} - set(rows[0])
    if missing:
        sys.exit(f"plot_bench: {path} lacks columns {sorted(missing)}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("-o", "--output", default="bench.png")
    ap.add_argument("--title", help="a title above the plots (e.g. the machine and date)")
    args = ap.parse_args()
    rows = read_rows(args.csv)
    collectives = sorted({r.get("collective", "allreduce") for r in rows})
    fig, axes = plt.subplots(2, len(collectives), figsize=(6.5 * len(collectives), 8), squeeze=False)
    for col, coll in enumerate(collectives):
        series = defaultdict(list)
        for r in rows:
            if r.get("collective", "allreduce") == coll:
                series[r["algo"]].append(r)
        bw, speed = axes[0][col], axes[1][col]
        colors = {a: f"C{i}" for i, a in enumerate(sorted(series))}  # one color per row, both panels
        for algo, rs in sorted(series.items()):
            rs.sort(key=lambda r: int(r["size"]))
            sizes = [int(r["size"]) for r in rs]
            style = "--" if algo == "mpi" else ":" if algo == "copy_bound" else "-o"
            color = "k" if algo == "mpi" else colors[algo]
            bw.plot(sizes, [float(r["busbw"]) for r in rs], style, color=color, label=algo, markersize=3)
            if algo not in ("mpi", "copy_bound"):
                speed.plot(sizes, [float(r["vs_mpi"] or "nan") for r in rs], "-o", color=color, label=algo,
                           markersize=3)
        for ax in (bw, speed):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("message size (bytes)")
            ax.grid(True, which="both", alpha=0.3)
        bw.set_yscale("log")  # the copy bound sits far above the collectives at small sizes
        bw.set_ylabel("busbw (GB/s)")
        bw.set_title(coll)
        bw.legend(fontsize=7)
        speed.axhline(1.0, color="k", linestyle="--", linewidth=1)
        speed.set_ylabel("speedup over stock MPI (x)")
        speed.legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"plot_bench: wrote {args.output}")


if __name__ == "__main__":
    main()
