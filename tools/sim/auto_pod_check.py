#!/usr/bin/python3
"""auto at pod scale against the simulator's best: one row per size class.

    build/tools/toroid-sim --preset tpu-v3-pod --algo all --bytes 1K:1G --factor 2 --format csv --output all.csv
    build/tools/toroid-sim --preset tpu-v3-pod --algo auto --bytes 1K:1G --factor 2 --format csv --output auto.csv
    /usr/bin/python3 tools/sim/auto_pod_check.py all.csv auto.csv

For each size: the fastest simulated algorithm, what `auto` picked (above 64 chips, the library's
rule, exec::fixed_rule), auto's time over the best's, and the best's share of the limit
(of_limit). Exits 1 when auto is more than --tolerance (default 1.10) from the best anywhere.
"""
import argparse
import csv
import sys


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("all_csv")
    ap.add_argument("auto_csv")
    ap.add_argument("--tolerance", type=float, default=1.10)
    a = ap.parse_args()
    best = {}
    for r in rows(a.all_csv):
        b, t = int(r["bytes"]), float(r["time_us"])
        if b not in best or t < best[b][1]:
            best[b] = (r["algo"], t, float(r["of_limit"]))
    worst = 0.0
    print("| bytes | fastest | time (us) | of limit | auto picks | auto / fastest |")
    print("|---:|---|---:|---:|---|---:|")
    for r in rows(a.auto_csv):
        b = int(r["bytes"])
        if b not in best:
            continue
        algo, t, of = best[b]
        ratio = float(r["time_us"]) / t
        worst = max(worst, ratio)
        print(f"| {b} | {algo} | {t:.1f} | {of:.2f} | {r['algo'].removeprefix('auto:')} | {ratio:.2f} |")
    print(f"worst auto / fastest: {worst:.2f}")
    sys.exit(0 if worst <= a.tolerance else 1)


if __name__ == "__main__":
    main()
