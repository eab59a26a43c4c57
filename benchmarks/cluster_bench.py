#!/usr/bin/python3
"""toroid's all-reduce algorithms and the stock MPI_Allreduce on an emulated torus of hosts
(scripts/cluster.sh), next to what toroid-sim predicts for the same network.

Brings up a torus of X*Y (or X*Y*Z, ...) hosts (one rank each) with every link direction shaped to --rate,
fits the per-message latency from a ping-pong between two neighbours (toroid-sim --calibrate),
then runs toroid-bench: once with every toroid algorithm (beside the stock default), and once
per further stock configuration (forced ring, forced Rabenseifner, coll/han). Prints, per size,
each row's time, busbw against the link rate, the best toroid row against the best stock
configuration, the CPU busy share during the runs, and toroid-sim's prediction with the
measured/predicted ratio. The cluster is taken down at the end (--keep leaves it up).

  benchmarks/cluster_bench.py [--torus 4x2|2x2x2] [--rate 200mbit] [-b 64K] [-e 16M] [-n 3] [--eager B] [--algos a,b]
                              [--axes xz]

--axes runs every row along those axes of the hosts' torus (each sub-torus on its own, the stock
rows on a communicator of each group) and simulates the same.

--eager B sets Open MPI's TCP eager limit (and largest send) for every run, stock and toroid
alike; by default both keep Open MPI's own (64 KiB). Above it a message waits for a rendezvous
reply that travels behind the other direction's bulk data in the same TCP stream, which is why
communicators spanning nodes use 56 KiB segments (communicator.hpp, docs/cluster.md).
"""
import argparse
import csv
import io
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")


def library_algorithms(build):
    """{collective: [algorithms with a schedule for it]}, as the library has them
    (toroid-sim --list-algorithms)."""
    out = subprocess.run([os.path.join(build, "tools", "toroid-sim"), "--list-algorithms"],
                         capture_output=True, text=True, check=True).stdout
    by_op = {}
    for line in out.splitlines():
        name, _, ops = line.partition(" ")
        if name in ("auto", "mpi"):
            continue
        for op in filter(None, ops.split(",")):
            by_op.setdefault(op, []).append(name)
    return by_op


# One rank a host here: a node-aware all-to-all has no node to gather in.
EXCLUDED_BY_OP = {"alltoall": {"hierarchical"}}
TOROID_ALGOS = []  # the op's, from the library (main)
# Stock configurations beyond the default, per collective: Open MPI 4.1 coll/tuned forced
# algorithms, and coll/han.
def forced(param, number):
    return ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", f"coll_tuned_{param}_algorithm", str(number)]


STOCK_BY_OP = {
    "allreduce": {"mpi_ring": forced("allreduce", 4), "mpi_rabenseifner": forced("allreduce", 6),
                  "mpi_han": ["--mca", "coll_han_priority", "100"]},
    # toroid-bench's reduce-scatter has equal blocks: MPI_Reduce_scatter_block.
    "reduce_scatter": {"mpi_doubling": forced("reduce_scatter_block", 2),
                       "mpi_halving": forced("reduce_scatter_block", 3),
                       "mpi_butterfly": forced("reduce_scatter_block", 4),
                       "mpi_han": ["--mca", "coll_han_priority", "100"]},
    "allgather": {"mpi_ring": forced("allgather", 4), "mpi_neighbor": forced("allgather", 5),
                  "mpi_han": ["--mca", "coll_han_priority", "100"]},
    # Open MPI 4.1's tuned all-to-all: 1 linear, 2 pairwise, 3 modified Bruck, 4 linear_sync.
    "alltoall": {"mpi_linear": forced("alltoall", 1), "mpi_pairwise": forced("alltoall", 2),
                 "mpi_bruck": forced("alltoall", 3), "mpi_linear_sync": forced("alltoall", 4)},
}
STOCK = STOCK_BY_OP["allreduce"]


def rate_gbps(rate):
    m = re.fullmatch(r"(\d+)(kbit|mbit|gbit)", rate)
    if not m:
        sys.exit(f"--rate {rate}: expected e.g. 200mbit")
    return int(m.group(1)) * {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[m.group(2)] / 8 / 1e9


def cpu_ticks():
    """Jiffies of all cores: total, idle (with iowait), system (with interrupts: the kernel's
    TCP and forwarding work)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4], v[2] + v[5] + v[6]


def cluster(*args, **kw):
    return subprocess.run([CLUSTER, *args], capture_output=True, text=True, **kw)


def bench(args, extra, algo, name):
    """One toroid-bench run on the cluster: CSV rows, and the CPU busy share while it ran."""
    t0, i0, s0 = cpu_ticks()
    eager = ["--mca", "btl_tcp_eager_limit", str(args.eager), "--mca", "btl_tcp_max_send_size",
             str(args.eager)] if args.eager else []
    # The communicator plays the hosts' torus (auto would take the most square 2D grid of the
    # host count: 4x2 for the 8 hosts of 2x2x2).
    cmd = ["run", "-x", "TOROID_TIMEOUT=600", *eager, *extra, "--", os.path.join(args.build, "benchmarks", "toroid-bench"),
           "--topology", args.torus, "--op", args.op, "--algo", algo, "-b", args.b, "-e", args.e, "-f", "4", "-n", str(args.n), "-w", "1", "--check", "1",
           "--format", "csv", *(["--axes", args.axes] if args.axes else [])]
    p = cluster(*cmd, timeout=3000)
    t1, i1, s1 = cpu_ticks()
    if p.returncode != 0:
        sys.exit(f"{name}: exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in p.stdout.splitlines() if not l.startswith("#")))))
    if any(int(r["wrong"]) for r in rows):
        sys.exit(f"{name}: wrong elements")
    for r in rows:
        if r["algo"] == "mpi":
            r["algo"] = name if name != "toroid" else "mpi_default"
    busy = (100.0 * (1 - (i1 - i0) / max(t1 - t0, 1)), 100.0 * (s1 - s0) / max(t1 - t0, 1))
    return rows, busy


def calibrate(args):
    p = cluster("run", "--np", "2", "--", os.path.join(args.build, "tools", "toroid-sim"), "--calibrate",
                "--calibrate-max", "8M", "--calibrate-iters", "5", timeout=600)
    m = re.search(r"# alpha ([0-9.]+) us, beta ([0-9.]+) GB/s, f32 sum kernel ([0-9.]+) GB/s", p.stdout)
    big = re.search(r"messages >= 1 MiB alone: beta ([0-9.]+) GB/s", p.stdout)
    if p.returncode or not m:
        sys.exit(f"calibration failed:\n{p.stdout}\n{p.stderr}")
    return float(m.group(1)), float(big.group(1)) if big else float(m.group(2)), float(m.group(3))


def simulate(args, hop_us, link_gbps, reduce_gbps):
    p = subprocess.run([os.path.join(args.build, "tools", "toroid-sim"), "--topology", args.torus, "--op", args.op, "--algo",
                        ",".join(TOROID_ALGOS), "--bytes", f"{args.b}:{args.e}", "--link-gbps", f"{link_gbps}",
                        "--hop-us", f"{hop_us}", "--reduce-gbps", f"{reduce_gbps}",
                        "--segment-bytes", "cross-node", "--format", "csv",  # one rank per host
                        *(["--axes", args.axes] if args.axes else [])],
                       capture_output=True, text=True, check=True)
    rows = csv.DictReader(io.StringIO("\n".join(l for l in p.stdout.splitlines() if not l.startswith("#"))))
    return {(r["algo"], int(r["bytes"])): float(r["time_us"]) for r in rows}


def human(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def main():
    global TOROID_ALGOS, STOCK
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--torus", default="4x2")
    ap.add_argument("--rate", default="200mbit")
    ap.add_argument("-b", default="64K")
    ap.add_argument("-e", default="16M")
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--eager", help="btl_tcp_eager_limit and btl_tcp_max_send_size for every run "
                                     "(default: Open MPI's own)")
    ap.add_argument("--build", default=os.environ.get("TOROID_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--keep", action="store_true", help="leave the cluster up")
    ap.add_argument("--op", default="allreduce", choices=sorted(STOCK_BY_OP),
                    help="the collective (stock configurations forced for it)")
    ap.add_argument("--axes", help="run along these axes of the torus (x, z, xz, ...): every sub-torus at once")
    ap.add_argument("--algos", help="toroid algorithms to run (comma list; default: every one that runs "
                                     "on the shape, Swing's being 2D)")
    args = ap.parse_args()
    TOROID_ALGOS = [a for a in library_algorithms(args.build)[args.op]
                    if a not in EXCLUDED_BY_OP.get(args.op, ())]
    if args.algos is None:
        dims = len(args.torus.split(":")[0].split("x")) if not args.axes else len(args.axes)
        # swing_latency's reduce-scatter and all-gather are 2D only (Swing's all-reduces run on any shape)
        args.algos = ",".join(a for a in TOROID_ALGOS
                              if dims <= 2 or args.op == "allreduce" or a != "swing_latency")
    STOCK = STOCK_BY_OP[args.op]
    unknown = [a for a in args.algos.split(",") if a not in TOROID_ALGOS]
    if unknown:
        sys.exit(f"--algos: unknown {', '.join(unknown)} (valid: {', '.join(TOROID_ALGOS)})")
    TOROID_ALGOS = args.algos.split(",")
    if args.eager:
        m = re.fullmatch(r"(\d+)([KM]?)", args.eager)
        if not m:
            sys.exit(f"--eager {args.eager}: expected bytes, e.g. 65536, 256K or 1M")
        args.eager = int(m.group(1)) << {"": 0, "K": 10, "M": 20}[m.group(2)]
    link = rate_gbps(args.rate)
    os.environ["TOROID_BUILD_DIR"] = args.build
    up = cluster("up", "torus", args.torus, "--rate", args.rate)
    if up.returncode:
        sys.exit(up.stderr)
    try:
        started = time.time()
        hop_us, beta, reduce_gbps = calibrate(args)
        rows, busy = bench(args, [], ",".join(TOROID_ALGOS), "toroid")
        busy_all = {"toroid rows + mpi_default": busy}
        for name, mca in STOCK.items():
            more, b = bench(args, mca, "mpi", name)
            rows += more
            busy_all[name] = b
        predicted = simulate(args, hop_us, link, reduce_gbps)
    finally:
        if not args.keep:
            cluster("down")
    stock_names = ["mpi_default", *STOCK]
    sizes = sorted({int(r["size"]) for r in rows})
    t = {(r["algo"], int(r["size"])): float(r["time_us"]) for r in rows}
    bus = {(r["algo"], int(r["size"])): float(r["busbw"]) for r in rows}
    hosts = 1
    for v in args.torus.split(":")[0].split("x"):  # XxY[xZ...][:wrap=...]
        hosts *= int(v)
    print(f"# torus {args.torus} ({hosts} hosts, 1 rank each), every link direction {args.rate} = {link:.4f} GB/s; "
          f"ping-pong fit: {hop_us:.1f} us per message, {beta:.4f} GB/s for >= 1 MiB; "
          f"{time.time() - started:.0f} s of runs; median of {args.n} iterations, f32 sum {args.op}; "
          f"btl_tcp_eager_limit {args.eager or 'Open MPI default'}" +
          (f"; along {args.axes}, each sub-torus on its own" if args.axes else ""))
    print("# CPU busy during the runs (all, of which kernel: TCP, forwarding, shaping): " +
          ", ".join(f"{k} {v[0]:.0f}% ({v[1]:.0f}%)" for k, v in busy_all.items()))
    print()
    print("| size | algorithm | time (ms) | busbw (GB/s) | busbw / link | predicted (ms) | measured / predicted |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n in sizes:
        for a in stock_names + TOROID_ALGOS:
            if (a, n) not in t:
                continue
            p = predicted.get((a, n))
            pred = f"{p / 1000:.2f}" if p else "-"
            ratio = f"{t[(a, n)] / p:.2f}" if p else "-"
            print(f"| {human(n)} | {a} | {t[(a, n)] / 1000:.2f} | {bus[(a, n)]:.4f} | {bus[(a, n)] / link:.2f} | "
                  f"{pred} | {ratio} |")
    print()
    print("| size | best stock | time (ms) | best toroid | time (ms) | toroid speedup | bidir/ring | "
          "torus2d_both/torus2d | measured order | predicted order |")
    print("|---:|---|---:|---|---:|---:|---:|---:|---|---|")
    for n in sizes:
        stock = min((t[(a, n)], a) for a in stock_names if (a, n) in t)
        ours = min((t[(a, n)], a) for a in TOROID_ALGOS if (a, n) in t)
        measured = [a for _, a in sorted((t[(a, n)], a) for a in TOROID_ALGOS if (a, n) in t)]
        pred = [a for _, a in sorted((predicted[(a, n)], a) for a in TOROID_ALGOS if (a, n) in predicted)]
        def ratio(a, b):  # "-" where --algos left one out
            return f"{t[(a, n)] / t[(b, n)]:.2f}" if (a, n) in t and (b, n) in t else "-"
        print(f"| {human(n)} | {stock[1]} | {stock[0] / 1000:.2f} | {ours[1]} | {ours[0] / 1000:.2f} | "
              f"{stock[0] / ours[0]:.2f} | {ratio('ring', 'bidir_ring')} | {ratio('torus2d', 'torus2d_both')} | "
              f"{' < '.join(measured[:4])} | {' < '.join(pred[:4])} |")


if __name__ == "__main__":
    main()
