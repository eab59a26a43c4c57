"""Shared by the Python benchmarks: sizes with K/M/G suffixes, and toroid-bench's timing (a
barrier before each iteration, the slowest rank's time, the median over iterations)."""
import numpy as np
from mpi4py import MPI


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    return int(t[:-1]) * units[t[-1]] if t[-1] in units else int(t)


def median_us(world, iters, fn):
    times = np.empty(iters)
    for i in range(iters):
        world.Barrier()
        t0 = MPI.Wtime()
        fn()
        times[i] = MPI.Wtime() - t0
    world.Allreduce(MPI.IN_PLACE, times, op=MPI.MAX)
    return float(np.median(times)) * 1e6
