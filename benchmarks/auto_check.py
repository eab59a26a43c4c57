#!/usr/bin/python3
"""How good `auto` is, from toroid-bench CSV files of `--algo all` runs (one file per layout):

  per size: the fastest fixed algorithm of the run, what auto picked and its time, auto/best;
  per algorithm and size: the cost model's prediction against the measured time.

  scripts/mpirun.sh -np 4 build/benchmarks/toroid-bench --op all --algo all -b 8 -e 64M \
      --format csv --output np4.csv
  benchmarks/auto_check.py np4.csv [--within 1.10]
  benchmarks/auto_check.py --median run1.csv run2.csv run3.csv    (runs of one layout: each row's
                                                                median over the runs)

The best row is the fastest of every fixed algorithm, stock `mpi` included: a candidate `auto`
may pick when toroid-tune's measured choices are in its tuning file (--no-stock: toroid's only).

Exit status 0 always: the goal (auto within 10% of the best) is reported, not enforced, since
times on a shared machine are noisy; the numbers go in the docs.
"""
import argparse
import csv
import sys
from collections import defaultdict


def read(path):
    header, rows = [], []
    with open(path) as f:
        lines = [l for l in f if l.strip()]
    header = [l[1:].strip() for l in lines if l.startswith("#")]
    body = [l for l in lines if not l.startswith("#")]
    for r in csv.DictReader(body):
        rows.append(r)
    if not rows or "predicted_us" not in rows[0]:
        sys.exit(f"auto_check: {path}: not toroid-bench CSV with predicted_us (--format csv of a current build)")
    return header, rows


def run_label(header):
    words = " ".join(header).split()
    def after(key):
        return words[words.index(key) + 1] if key in words else "?"
    return f"{after('ranks')} ranks, {after('nodes')} node(s), topology {after('topology')}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--within", type=float, default=1.10, help="auto/best ratio counted as a hit")
    ap.add_argument("--median", action="store_true", help="the files are runs of one layout: median per row")
    ap.add_argument("--no-stock", action="store_true", help="the best row among toroid's algorithms only")
    a = ap.parse_args()
    groups = [a.csv] if a.median else [[p] for p in a.csv]
    excluded = ("auto", "copy_bound") + (("mpi",) if a.no_stock else ())
    for paths in groups:
        runs = []
        for path in paths:
            header, rows = read(path)
            runs.append(rows)
        print(f"## {', '.join(paths)}: {run_label(header)}" +
              (f" (median of {len(paths)} runs)" if len(paths) > 1 else "") + "\n")
        by = defaultdict(dict)  # (collective, size) -> algo -> row (time_us: the runs' median)
        times = defaultdict(list)
        for rows in runs:
            for r in rows:
                key = (r["collective"], int(r["size"]), r["algo"])
                times[key].append(float(r["time_us"]))
                by[key[:2]].setdefault(r["algo"], dict(r))
        for (coll, size, algo), ts in times.items():
            ts.sort()
            by[(coll, size)][algo]["time_us"] = ts[len(ts) // 2]
        # auto/best compares two separately timed rows, so it carries the run's noise (the same
        # algorithm timed twice differs by up to 2x at small sizes on oversubscribed cores);
        # pick/best compares the picked algorithm's own row: the cost of the choice alone.
        print("| collective | size | best fixed | time (us) | auto picks | auto (us) | auto/best | pick/best | stock (us) |")
        print("|---|---:|---|---:|---|---:|---:|---:|---:|")
        misses, total, pick_hits, no_row = [], 0, 0, 0
        for (coll, size), algos in sorted(by.items()):
            fixed = {k: float(v["time_us"]) for k, v in algos.items() if k not in excluded}
            if not fixed or "auto" not in algos:
                continue
            best = min(fixed, key=fixed.get)
            auto = float(algos["auto"]["time_us"])
            ratio = auto / fixed[best]
            total += 1
            picked = algos["auto"]["picked"]
            # A pick with no fixed row of its own (the staged single copy of small calls on
            # one node) has no pick/best; it is counted apart, not as a miss of its row.
            pick_ratio = fixed.get(picked, float("nan")) / fixed[best]
            no_row += picked not in fixed
            pick_hits += pick_ratio <= a.within
            if ratio > a.within:
                misses.append((coll, size, ratio, algos["auto"]["picked"], best))
            stock = algos.get("mpi", {}).get("time_us", "-")
            print(f"| {coll} | {size} | {best} | {fixed[best]:.2f} | {picked} | {auto:.2f} | "
                  f"{ratio:.2f} | {pick_ratio:.2f} | {stock} |")
        print(f"\nauto's row within {a.within:.2f}x of the best fixed algorithm at {total - len(misses)} of {total} sizes; "
              f"the picked algorithm's own row at {pick_hits} of {total - no_row}"
              + (f" ({no_row} picks with no fixed row of their own)" if no_row else ""))
        for coll, size, ratio, picked, best in misses:
            print(f"- miss: {coll} {size} B: auto ran {picked}, {ratio:.2f}x of {best}")
        print("\nmeasured / predicted, per algorithm (all-reduce):\n")
        algos = sorted({k for (c, _), v in by.items() if c == "allreduce" for k in v
                        if k not in ("auto", "mpi", "copy_bound")})
        print("| size | " + " | ".join(algos) + " |")
        print("|---:|" + "---:|" * len(algos))
        for (coll, size), v in sorted(by.items()):
            if coll != "allreduce":
                continue
            cells = []
            for k in algos:
                r = v.get(k)
                if not r or not r["predicted_us"]:
                    cells.append("-")
                    continue
                cells.append(f"{float(r['time_us']) / float(r['predicted_us']):.2f}")
            print(f"| {size} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
