#!/usr/bin/python3
"""Python call cost of toroid: time per all-reduce from Python (numpy float32, in place) beside
mpi4py's Allreduce (the stock MPI) in the same run, measured as toroid-bench measures: a barrier
before each iteration, the slowest rank's time, the median over iterations.

    mpirun -np 2 /usr/bin/python3 benchmarks/python_bench.py --sizes 8,1K,1M,16M --algo ring
    mpirun -np 2 build/benchmarks/toroid-bench --algo ring -b 8 -e 16M -f 8     # the C++ call

Prints one row per size: toroid's time, mpi4py's, and their ratio.
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI

import toroid
from bench_timing import median_us, size


def float32_size(text):
    n = size(text)
    if n < 4 or n % 4:
        raise argparse.ArgumentTypeError(f"size {text!r}: a positive multiple of 4 bytes (float32)")
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8,1K,64K,1M,16M", help="comma list of bytes (K/M/G suffixes)")
    ap.add_argument("--algo", default="ring", help="toroid algorithm (default ring, as toroid-bench)")
    ap.add_argument("--iters", type=int, default=0, help="timed iterations per size (0: by size)")
    ap.add_argument("--hugepages", type=int, choices=(0, 1), default=1, help="numpy's madvise(MADV_HUGEPAGE) on "
                    "large arrays (its default; C++ std::vector buffers, as toroid-bench's, get none)")
    ap.add_argument("--inplace", type=int, choices=(0, 1), default=0, help="in place (1) or into a second array (0, "
                    "as toroid-bench's default)")
    a = ap.parse_args()
    sizes = [float32_size(s) for s in a.sizes.split(",")]
    np.core.multiarray._set_madvise_hugepage(bool(a.hugepages))
    world = MPI.COMM_WORLD
    comm = toroid.Communicator(algorithm=a.algo)
    if world.rank == 0:
        print(f"# {world.size} ranks, algorithm {a.algo}, float32 sum {'in place' if a.inplace else 'out of place'}; time = median over iterations "
              f"of the slowest rank (us)")
        print(f"{'bytes':>10} {'iters':>6} {'toroid':>12} {'mpi4py':>12} {'mpi4py/toroid':>14}")
    for nbytes in sizes:
        # Zeros (the sums stay 0 over the iterations) written into fresh pages: np.zeros would leave
        # them mapped to the kernel's one zero page, and reading that is a cache hit.
        x = np.empty(nbytes // 4, dtype=np.float32)
        x.fill(0.0)
        y = x if a.inplace else np.empty_like(x)
        y.fill(1.0)
        iters = a.iters or max(20, min(2000, (64 << 20) // nbytes))
        ours = (lambda: comm.allreduce(x)) if a.inplace else (lambda: comm.allreduce(x, out=y))
        stock = (lambda: world.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)) if a.inplace else \
            (lambda: world.Allreduce(x, y, op=MPI.SUM))
        for _ in range(3):
            ours()
            stock()
        t_toroid = median_us(world, iters, ours)
        t_stock = median_us(world, iters, stock)
        if world.rank == 0:
            print(f"{nbytes:>10} {iters:>6} {t_toroid:>12.2f} {t_stock:>12.2f} {t_stock / t_toroid:>14.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
