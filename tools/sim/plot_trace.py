#!/usr/bin/python3
"""Draws timelines (TOROID_TRACE, toroid-sim --trace) as Perfetto lays them out: one row per
track (a rank's channels), one bar per step, coloured by kind; several files side by side.

    TOROID_TRACE=run.json mpirun -np 4 PROGRAM
    toroid-sim --topology 2x2 --algo torus2d_both --bytes 1M --trace sim.json
    tools/sim/plot_trace.py run.json sim.json -o timeline.png [--call N]
"""
import argparse
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"send": "tab:blue", "recv": "tab:green", "recv_reduce": "tab:orange",
          "copy": "tab:gray", "scale": "tab:purple", "reduce": "tab:red", "local": "tab:gray"}


def read(path, call):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"plot_trace: {path}: {e}")
    events = data.get("traceEvents", [])
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "step"]
    calls = sorted({e["args"]["call"] for e in steps})
    if not calls:
        sys.exit(f"plot_trace: {path} holds no steps")
    pick = calls[-1] if call is None else call
    if pick not in calls:
        sys.exit(f"plot_trace: {path} has no call {pick} (it has {calls[0]}..{calls[-1]})")
    steps = [e for e in steps if e["args"]["call"] == pick]
    t0 = min(e["ts"] for e in steps)
    rows = defaultdict(list)
    for e in steps:
        rows[(e["pid"], e["tid"])].append((e["ts"] - t0, e["dur"], e["args"]["kind"]))
    source = data.get("otherData", {}).get("source", path)
    return source, pick, rows, names


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", help="trace JSON files")
    ap.add_argument("-o", "--output", required=True, help="PNG to write")
    ap.add_argument("--call", type=int, help="which call (default: each file's last)")
    args = ap.parse_args()
    read_all = [read(p, args.call) for p in args.traces]
    height = max(len(rows) for _, _, rows, _ in read_all)
    fig, axes = plt.subplots(1, len(read_all), figsize=(7 * len(read_all), 0.32 * height + 1.5),
                             squeeze=False)
    for ax, (source, call, rows, names) in zip(axes[0], read_all):
        keys = sorted(rows)
        for y, key in enumerate(keys):
            for start, dur, kind in rows[key]:
                ax.barh(y, max(dur, 1e-3), left=start, height=0.7,
                        color=COLORS.get(kind, "black"), edgecolor="white", linewidth=0.3)
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels([f"rank {p}  {names.get((p, t), t)}" for p, t in keys], fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel("µs from the call's first step")
        ax.set_title(f"{source} (call {call})", fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in list(COLORS.values())[:5]]
    fig.legend(handles, list(COLORS)[:5], loc="lower center", ncol=5, fontsize=7)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(args.output, dpi=130)
    print(f"plot_trace: wrote {args.output}")


if __name__ == "__main__":
    main()
