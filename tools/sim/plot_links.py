#!/usr/bin/python3
"""How busy every link of the modeled torus was: one picture per simulated row.

    build/tools/toroid-sim --preset tpu-v3-multipod --algo torus2d_both --bytes 64M --links links.csv
    /usr/bin/python3 tools/sim/plot_links.py links.csv --out docs/sim_links.png [--title "..."]

Reads toroid-sim's --links CSV and draws, for each (algorithm, size) in it, the torus as four
grids of chips, one per link direction (+x, -x, +y, -y): the cell at (x, y) is the link direction
leaving chip (x, y), coloured by its busy time over the collective's time (0: idle, 1: busy
throughout). Link directions that do not exist (the far end of a line) are grey. Rows with the
same shape share one colour scale, so a picture of two algorithms compares them directly.
"""
import argparse
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

DIRS = ["+x", "-x", "+y", "-y"]


def size_text(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def read(path):
    with open(path) as f:
        header = f.readline()
        if not header.startswith("# topology"):
            sys.exit(f"plot_links: {path} is not toroid-sim --links output (first line: {header.strip()!r})")
        fields = header.split()
        topology, wrap_x, wrap_y = fields[2], fields[4] == "1", fields[6] == "1"
        X, Y = (int(v) for v in topology.split(":")[0].split("x"))
        rows = {}
        for r in csv.DictReader(f):
            key = (r["op"], r["algo"], int(r["bytes"]))
            grid = rows.setdefault(key, np.full((4, Y, X), np.nan))
            grid[DIRS.index(r["dir"]), int(r["y"]), int(r["x"])] = float(r["util"])
    # A line has no link out of its ends: +x of the last column, -x of the first (same for y).
    for grid in rows.values():
        if not wrap_x:
            grid[0, :, X - 1] = np.nan
            grid[1, :, 0] = np.nan
        if not wrap_y:
            grid[2, Y - 1, :] = np.nan
            grid[3, 0, :] = np.nan
    return topology, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("links", help="toroid-sim --links CSV")
    ap.add_argument("--out", default="sim_links.png")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    topology, rows = read(a.links)
    if not rows:
        sys.exit(f"plot_links: {a.links} has no rows")
    keys = list(rows)
    fig, axes = plt.subplots(len(keys), 4, figsize=(16, 2.2 + 2.6 * len(keys)), squeeze=False)
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad("lightgrey")
    image = None
    for i, key in enumerate(keys):
        op, algo, size = key
        grid = rows[key]
        mean = np.nanmean(grid)
        for d in range(4):
            ax = axes[i][d]
            image = ax.imshow(np.ma.masked_invalid(grid[d]), cmap=cmap, vmin=0, vmax=1,
                              interpolation="nearest", aspect="auto", origin="lower")
            if i == 0:
                ax.set_title(f"{DIRS[d]} link directions", fontsize=10)
            if i == len(keys) - 1:
                ax.set_xlabel("x")
            if d == 0:
                ax.set_ylabel(f"{algo}\n{size_text(size)}, mean {mean:.2f}\ny", fontsize=9)
    fig.suptitle(a.title or f"{topology}: busy time of each link direction / collective time")
    fig.colorbar(image, ax=axes, shrink=0.8, label="busy / time")
    fig.savefig(a.out, dpi=110)
    print(f"plot_links: wrote {a.out} ({len(keys)} rows)")


if __name__ == "__main__":
    main()
