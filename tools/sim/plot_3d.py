#!/usr/bin/python3
"""All-reduce time vs size on the modeled TPU v4 pod (16x16x16), beside its bound.

    /usr/bin/python3 tools/sim/plot_3d.py [--sim build/tools/toroid-sim] [--out docs/sim_3d.png]

Runs toroid-sim (CSV) on the tpu-v4-pod preset for torus2d (one dimension at a time),
torus2d_both (one part per dimension, every dimension's links busy) and swing_latency, f32,
1 KiB to 1 GiB by 4x; draws time against size with the limit (the largest of the bounds,
docs/simulator.md), and under it each algorithm's share of that limit. Prints the rows as a
Markdown table. torus2d_both simulates one chip from 256 KiB, every chip (4096) below: about
20 s in all.
"""
import argparse
import csv
import io
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ALGOS = ["torus2d", "torus2d_both", "swing_latency"]
LABELS = {"torus2d": "torus2d (x, then y, then z)", "torus2d_both": "torus2d_both (one part per dimension)",
          "swing_latency": "swing_latency (Swing's peers, whole vector)"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default="build/tools/toroid-sim")
    ap.add_argument("--out", default="docs/sim_3d.png")
    ap.add_argument("--bytes", default="1K:1G")
    args = ap.parse_args()
    out = subprocess.run([args.sim, "--preset", "tpu-v4-pod", "--op", "allreduce", "--algo", ",".join(ALGOS),
                          "--bytes", args.bytes, "--factor", "4", "--format", "csv"],
                         check=True, capture_output=True, text=True).stdout
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in out.splitlines() if not l.startswith("#")))))
    by = {a: sorted(((int(r["bytes"]), float(r["time_us"]), float(r["of_limit"])) for r in rows if r["algo"] == a))
          for a in ALGOS}
    limit = {}
    for a in ALGOS:
        for b, t, f in by[a]:
            limit[b] = t * f
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    sizes = sorted(limit)
    top.plot(sizes, [limit[b] for b in sizes], "k--", label="limit (largest bound)")
    for a in ALGOS:
        top.plot([b for b, _, _ in by[a]], [t for _, t, _ in by[a]], marker="o", label=LABELS[a])
        bottom.plot([b for b, _, _ in by[a]], [f for _, _, f in by[a]], marker="o", label=a)
    top.set_xscale("log", base=2)
    top.set_yscale("log")
    top.set_ylabel("time (µs)")
    top.set_title("all-reduce, f32, on the modeled TPU v4 pod: 16x16x16 torus, 50 GB/s links, 1 µs hops")
    top.legend(fontsize=8)
    top.grid(True, which="both", alpha=0.3)
    bottom.set_ylabel("of the limit")
    bottom.set_xlabel("vector size (bytes)")
    bottom.set_ylim(0, 1.05)
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print("| size | " + " | ".join(ALGOS) + " | limit |")
    print("|---:|" + "---:|" * (len(ALGOS) + 1))
    for b in sizes:
        cells = []
        for a in ALGOS:
            hit = [(t, f) for bb, t, f in by[a] if bb == b]
            cells.append(f"{hit[0][0]:.1f} µs ({hit[0][1]:.0%})" if hit else "-")
        print(f"| {b} | " + " | ".join(cells) + f" | {limit[b]:.1f} µs |")


if __name__ == "__main__":
    main()
