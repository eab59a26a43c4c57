#!/usr/bin/python3
"""What the preload costs a program's own point-to-point calls.

The preload asks MPI for a thread level of its own (docs/preload.md, "Non-blocking calls"):
MPI_THREAD_FUNNELED by default, MPI_THREAD_MULTIPLE under TOROID_THREAD_LEVEL=multiple. A
program that makes no collective call pays only for that. This runs toroid-pingpong (plain
MPI_Init, 2 ranks, 8 B to 64 KiB) in fresh jobs, interleaved: without the preload, with it, and
with it under TOROID_THREAD_LEVEL=multiple; and prints, per size, the median half round trip of
each and the ratio of each preload run to the run without it just before (median and range).

  benchmarks/preload_p2p_cost.py [--build build] [--runs 7] [--level single|funneled|multiple]
"""
import argparse
import os
import statistics
import subprocess
import sys


def run(program, level, env_extra):
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    cmd = ["mpiexec", "-n", "2"]
    for k, v in env_extra.items():
        cmd += ["-x", f"{k}={v}"]
    cmd += [program, level]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    times = {}
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == "bytes":
            times[int(f[1])] = float(f[3])
    if not times:
        sys.exit(f"no timings from {' '.join(cmd)}:\n{out.stdout}{out.stderr}")
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--level", default="single", choices=["single", "funneled", "multiple"],
                    help="the thread level the program itself asks for")
    a = ap.parse_args()
    program = os.path.join(a.build, "benchmarks", "toroid-pingpong")
    preload = os.path.abspath(os.path.join(a.build, "lib", "pmpi", "libtoroid_preload.so"))
    for path in (program, preload):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: build the project first")
    configs = {
        "none": {},
        "preload": {"LD_PRELOAD": preload},
        "preload multiple": {"LD_PRELOAD": preload, "TOROID_THREAD_LEVEL": "multiple"},
    }
    results = {name: [] for name in configs}
    for _ in range(a.runs):
        for name, extra in configs.items():
            results[name].append(run(program, a.level, extra))
    sizes = sorted(results["none"][0])
    print(f"toroid-pingpong {a.level}, 2 ranks, {a.runs} fresh runs each, interleaved: "
          "half round trip in us (median); ratio to the run without the preload just before "
          "(median, min-max)")
    print(f"{'bytes':>7} {'none':>8} {'preload':>8} {'ratio':>17} {'multiple':>9} {'ratio':>17}")
    medians = {"preload": [], "preload multiple": []}
    for b in sizes:
        row = [f"{b:>7}", f"{statistics.median(r[b] for r in results['none']):8.3f}"]
        for name in ("preload", "preload multiple"):
            ratios = [p[b] / n[b] for p, n in zip(results[name], results["none"])]
            medians[name].append(statistics.median(ratios))
            row.append(f"{statistics.median(r[b] for r in results[name]):8.3f}")
            row.append(f"{statistics.median(ratios):5.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
        print(" ".join(row))
    for name, m in medians.items():
        print(f"{name}: median ratio over 8 B - 64 KiB {statistics.median(m):.3f}, "
              f"largest per-size median {max(m):.3f}")


if __name__ == "__main__":
    main()
