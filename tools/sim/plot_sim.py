#!/usr/bin/python3
"""Predicted all-reduce time vs size from toroid-sim, on the tpu-v3 presets.

    /usr/bin/python3 tools/sim/plot_sim.py [--sim build/tools/toroid-sim] [--out docs/sim_allreduce.png]

Runs toroid-sim (CSV) for ring, bidir_ring, torus2d, torus2d_both and hierarchical on 32x32
(tpu-v3-pod) and 128x32 (tpu-v3-multipod), 1K..1G, plus the gradient sizes of ResNet-50
(25.6M parameters) and BERT-Large (335M) in f32 and bf16; draws one panel per topology with the
model sizes marked, and prints a Markdown table of the model points.
"""
import argparse
import csv
import io
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ALGOS = ["ring", "bidir_ring", "torus2d", "torus2d_both", "hierarchical"]
PRESETS = [("tpu-v3-pod", "32x32 torus (tpu-v3-pod)"), ("tpu-v3-multipod", "128x32, wrap along Y only (tpu-v3-multipod)")]
MODELS = [("ResNet-50", 25_600_000), ("BERT-Large", 335_000_000)]
DTYPES = [("f32", 4), ("bf16", 2)]


def run(sim, preset, dtype, sizes):
    cmd = [sim, "--preset", preset, "--op", "allreduce", "--algo", ",".join(ALGOS), "--dtype", dtype,
           "--bytes", sizes, "--format", "csv"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [line for line in out.splitlines() if not line.startswith("#")]
    return list(csv.DictReader(io.StringIO("\n".join(rows))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default="build/tools/toroid-sim")
    ap.add_argument("--out", default="docs/sim_allreduce.png")
    args = ap.parse_args()

    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    table = []
    for ax, (preset, title) in zip(axes, PRESETS):
        print(f"simulating {preset} ...", file=sys.stderr)
        curve = run(args.sim, preset, "f32", "1K:1G")
        for algo in ALGOS:
            pts = [(int(r["bytes"]), float(r["time_us"])) for r in curve if r["algo"] == algo]
            ax.loglog([b for b, _ in pts], [t for _, t in pts], marker=".", label=algo)
        for dtype, esize in DTYPES:
            sizes = ",".join(str(p * esize) for _, p in MODELS)
            for r in run(args.sim, preset, dtype, sizes):
                name = next(n for n, p in MODELS if p * esize == int(r["bytes"]))
                table.append((preset, name, dtype, int(r["bytes"]), r["algo"], float(r["time_us"]), float(r["busbw"])))
        for name, params in MODELS:
            for dtype, esize in DTYPES:
                b = params * esize
                ax.axvline(b, color="grey", lw=0.8, ls="--" if dtype == "f32" else ":")
                ax.text(b, 0.02, f" {name} {dtype}", rotation=90, fontsize=7, va="bottom", ha="right",
                        color="dimgrey", transform=ax.get_xaxis_transform())
        ax.set_title(title)
        ax.set_xlabel("all-reduce size (bytes)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("predicted time (us)")
    axes[0].legend()
    fig.suptitle("toroid-sim: predicted all-reduce time (80 GB/s per link direction, 1 us per hop, 300 GB/s reduction)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}", file=sys.stderr)

    print("| topology | model | dtype | bytes | algorithm | time (ms) | busbw (GB/s) |")
    print("|---|---|---|---:|---|---:|---:|")
    for preset, name, dtype, b, algo, t, bw in table:
        print(f"| {preset} | {name} | {dtype} | {b} | {algo} | {t / 1000:.3f} | {bw:.1f} |")


if __name__ == "__main__":
    main()
