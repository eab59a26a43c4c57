#!/usr/bin/python3
"""torch.distributed.all_reduce on the "toroid" backend against gloo (and the stock MPI through
mpi4py) in the same run: the world group is toroid's, a second group over the same ranks is
gloo's. A barrier before each iteration, the slowest rank's time, the median over iterations.

    mpirun -np 4 /usr/bin/python3 benchmarks/torch_bench.py --sizes 4K,64K,1M,16M,64M --ddp-steps 10

With --ddp-steps, then a DDP step of examples/torch_ddp.py's CNN on each backend, alternating
step by step in the same run: backward with DDP (its communication, what is not hidden, inside),
the same backward without communication (no_sync), and their difference, exposed communication.
"""
import importlib.util
import os
import time
import argparse
import sys

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI

import toroid.distributed as td
from bench_timing import median_us, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4K,64K,1M,16M,64M")
    ap.add_argument("--ddp-steps", type=int, default=0, help="timed DDP steps per backend (0: none)")
    ap.add_argument("--batch", type=int, default=32, help="global batch of the DDP steps")
    a = ap.parse_args()
    torch.set_num_threads(1)
    td.init_process_group("toroid")
    gloo = dist.new_group(backend="gloo")
    world = MPI.COMM_WORLD
    if world.rank == 0:
        print(f"# {world.size} ranks, float32 sum, torch.distributed.all_reduce; median of the slowest rank (us)")
        print(f"{'bytes':>10} {'iters':>6} {'toroid':>11} {'gloo':>11} {'mpi4py':>11} {'gloo/toroid':>12} {'mpi4py/toroid':>14}")
    for nbytes in (size(s) for s in a.sizes.split(",")):
        t = torch.zeros(nbytes // 4)
        t.fill_(0.0)  # real pages, not the zero page
        x = t.numpy()
        iters = max(10, min(500, (256 << 20) // max(nbytes, 1) // 8))
        ours = lambda: dist.all_reduce(t)
        theirs = lambda: dist.all_reduce(t, group=gloo)
        stock = lambda: world.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        for f in (ours, theirs, stock):
            for _ in range(3):
                f()
        t_ours, t_gloo, t_stock = (median_us(world, iters, f) for f in (ours, theirs, stock))
        if world.rank == 0:
            print(f"{nbytes:>10} {iters:>6} {t_ours:>11.1f} {t_gloo:>11.1f} {t_stock:>11.1f} {t_gloo / t_ours:>12.2f} "
                  f"{t_stock / t_ours:>14.2f}", flush=True)
    if a.ddp_steps > 0:
        ddp_steps(a, gloo, world)
    dist.destroy_process_group()
    return 0


def ddp_steps(a, gloo, world):
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("torch_ddp", os.path.join(here, "..", "examples", "torch_ddp.py"))
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    p, r = world.size, world.rank
    lo, n = r * (a.batch // p), a.batch // p
    models = {}
    for name, group in (("toroid", None), ("gloo", gloo)):
        torch.manual_seed(1)
        net = ex.Net()
        models[name] = (torch.nn.parallel.DistributedDataParallel(net, process_group=group), net)
    split = {name: {"backward": [], "alone": []} for name in models}
    for step in range(a.ddp_steps + 1):
        x, y = ex.batch(step + 1, lo, lo + n, 1)
        for name, (ddp, net) in models.items():
            for key, sync in (("backward", True), ("alone", False)):
                loss = torch.nn.functional.cross_entropy(ddp(x), y)
                world.Barrier()
                t0 = time.perf_counter()
                if sync:
                    loss.backward()
                else:
                    with ddp.no_sync():
                        loss.backward()
                dt = world.allreduce(time.perf_counter() - t0, op=MPI.MAX)
                net.zero_grad(set_to_none=False)
                if step > 0:  # the first step builds DDP's buckets
                    split[name][key].append(dt * 1e3)
    if r == 0:
        print(f"# DDP step of the {sum(t.numel() for t in models['toroid'][1].parameters())}-parameter CNN, global batch "
              f"{a.batch}, {a.ddp_steps} steps per backend alternating; median of the slowest rank (ms)")
        print(f"{'backend':>8} {'backward+comm':>14} {'backward alone':>15} {'exposed comm':>13}")
        for name, t in split.items():
            b, b0 = float(np.median(t["backward"])), float(np.median(t["alone"]))
            print(f"{name:>8} {b:>14.2f} {b0:>15.2f} {b - b0:>13.2f}")


if __name__ == "__main__":
    sys.exit(main())
