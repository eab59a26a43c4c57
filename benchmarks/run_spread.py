#!/usr/bin/python3
"""How alike fresh runs are: toroid-bench started N times as new processes (a new mpirun each),
the same rows every time, and per row the spread of its medians across the runs.

One run's rows (each a median over -n iterations) say nothing about the next process: where the
buffers land, which pages back them, how the ranks are placed all change with a new job, and a
slow state that comes and goes between jobs shows only here. Per row (collective, algorithm,
size) it prints the run medians' min, median and max and max/min ("spread"); per run, whether
any toroid row from 256 KiB was slower than that same run's stock row (the ratio a same-run
comparison would have reported).

  benchmarks/run_spread.py -np 2 -n 10 --algo ring,rabenseifner,auto -b 1M -e 64M -f 4 [--cold]

Per job it prints the job's toroid and stock rows relative to their medians and how the job's
shared-memory slots were written (`slot_stores`, measured per job under auto). --host-probe runs
toroid-host-probe (no toroid, no MPI: two processes handing a cache line and a vector through
shared memory, benchmarks/host_probe.c) just before every job and adds the host's numbers: a
slow job whose probe was slow too was the host's.

Exit 0; the summary's last line names the widest toroid row and the runs where toroid lost.
--csv FILE writes every run's rows (run, collective, algo, bytes, time_us).
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_run(args, bench):
    cmd = [os.path.join(ROOT, "scripts", "mpirun.sh"), "-np", str(args.np), bench, "--format", "csv",
           "--op", args.op, "--algo", args.algo, "-b", args.b, "-e", args.e, "-f", str(args.f), "-n", str(args.n),
           "--check", "1"] + (["--cold"] if args.cold else []) + args.extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"run_spread: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(l for l in p.stdout.splitlines() if not l.startswith("#"))))]
    bad = [r for r in rows if r["wrong"] != "0"]
    if bad:
        sys.exit(f"run_spread: wrong results in {bad[0]['algo']} at {bad[0]['size']} bytes")
    # How the node's senders wrote the shared-memory slots this job (measured per job under auto).
    slots = next((l.split("slot_stores ", 1)[1].split()[0] for l in p.stdout.splitlines()
                  if l.startswith("#") and "slot_stores " in l), "-")
    return {(r["collective"], r["algo"], int(r["size"])): float(r["time_us"]) for r in rows}, slots


def host_probe(probe):
    p = subprocess.run([probe], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"run_spread: {probe} failed ({p.returncode}): {p.stderr}")
    return {k: float(v) for k, v in (f.split("=") for f in p.stdout.split())}


def print_jobs(runs, probes, slots, from_bytes):
    """Per job: its toroid rows and its stock rows from `from_bytes`, each as the geometric mean
    of time / that row's median over the jobs (1.00: a typical job), the slot stores the job's
    communicator chose, and the probe's numbers when the host was probed."""
    keys = set().union(*runs)
    median = {key: statistics.median(r[key] for r in runs if key in r) for key in keys}

    def slowness(r, stock):
        ratios = [r[key] / median[key] for key in r if key[2] >= from_bytes and (key[1] == "mpi") == stock]
        return statistics.geometric_mean(ratios) if ratios else float("nan")

    probed = ", and the host probe before it" if probes else ""
    print(f"# per job, rows from {from_bytes} B against their medians, the slot stores{probed}")
    head = f"{'job':>4}{'toroid':>8}{'stock':>8}{'slots':>11}"
    if probes:
        head += (f"{'pingpong_ns':>13}{'stalls':>8}{'pipe_gbs':>10}{'copy_gbs':>10}{'steal_pct':>10}"
                 f"{'handoff_us':>12}{'handoff_nt_us':>15}")
    print(head)
    for k, r in enumerate(runs):
        line = f"{k + 1:>4}{slowness(r, False):>8.2f}{slowness(r, True):>8.2f}{slots[k]:>11}"
        if probes:
            pr = probes[k]
            line += (f"{pr['pingpong_ns']:>13.0f}{pr['stalls']:>8.0f}{pr['pipe_gbs']:>10.2f}"
                     f"{pr['copy_gbs']:>10.2f}{pr['steal_pct']:>10.2f}"
                     f"{pr.get('handoff_us', float('nan')):>12.1f}{pr.get('handoff_nt_us', float('nan')):>15.1f}")
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-np", type=int, default=2)
    ap.add_argument("--runs", "-r", type=int, default=10, help="fresh runs (new mpirun each)")
    ap.add_argument("--op", default="allreduce")
    ap.add_argument("--algo", default="ring,rabenseifner,auto")
    ap.add_argument("-b", default="1M")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-f", type=int, default=4)
    ap.add_argument("-n", type=int, default=20, help="iterations per size in each run")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "benchmarks", "toroid-bench"))
    ap.add_argument("--csv", help="write every run's rows here")
    ap.add_argument("--host-probe", action="store_true", help="probe the host before every job (toroid-host-probe)")
    ap.add_argument("--from-bytes", type=int, default=256 << 10, help="where toroid must not lose to stock")
    ap.add_argument("extra", nargs="*", help="more toroid-bench arguments (after --)")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs must be at least 2")
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"run_spread: {args.bench} is not built (scripts/setup.sh builds it)")
    probe = os.path.join(os.path.dirname(args.bench), "toroid-host-probe")
    if args.host_probe and not os.access(probe, os.X_OK):
        sys.exit(f"run_spread: --host-probe: {probe} is not built")
    runs, probes, slots = [], [], []
    for k in range(args.runs):
        if args.host_probe:
            probes.append(host_probe(probe))
        rows, way = one_run(args, args.bench)
        runs.append(rows)
        slots.append(way)
        print(f"# run {k + 1}/{args.runs} done", file=sys.stderr, flush=True)
    keys = sorted(set().union(*runs), key=lambda t: (t[0], t[1] == "mpi", t[1], t[2]))
    print(f"# {args.runs} fresh runs at {args.np} ranks ({'cold' if args.cold else 'warm'} caches); "
          "per row the runs' medians (us)")
    print(f"{'collective':<15}{'algo':<16}{'bytes':>11}{'min':>11}{'median':>11}{'max':>11}{'spread':>8}")
    widest = None
    for key in keys:
        times = [r[key] for r in runs if key in r]
        lo, mid, hi = min(times), statistics.median(times), max(times)
        spread = hi / lo
        print(f"{key[0]:<15}{key[1]:<16}{key[2]:>11}{lo:>11.1f}{mid:>11.1f}{hi:>11.1f}{spread:>8.2f}")
        if key[1] != "mpi" and (widest is None or spread > widest[0]):
            widest = (spread, key)
    losses = []
    for k, r in enumerate(runs):
        for (coll, algo, size), t in r.items():
            stock = r.get((coll, "mpi", size))
            if algo != "mpi" and stock is not None and size >= args.from_bytes and t > stock:
                losses.append(f"run {k + 1}: {algo} {size} B {t:.0f} us against stock {stock:.0f} us")
    print(f"# widest toroid row: {widest[1][1]} {widest[1][2]} B, max/min {widest[0]:.2f}" if widest else "# no toroid rows")
    print("# toroid slower than the same run's stock row from "
          f"{args.from_bytes} B: " + ("; ".join(losses) if losses else "never"))
    print_jobs(runs, probes, slots, args.from_bytes)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["run", "collective", "algo", "bytes", "time_us"])
            for k, r in enumerate(runs):
                for (coll, algo, size), t in sorted(r.items()):
                    w.writerow([k + 1, coll, algo, size, t])
    return 0


if __name__ == "__main__":
    sys.exit(main())
