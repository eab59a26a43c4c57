#!/usr/bin/python3
"""An unmodified DDP training loop on toroid: a small CNN (2.2 M parameters) on synthetic 32x32
images, data-parallel under mpirun with torch.distributed's "toroid" backend (or "gloo", to
compare under the same launcher).

    mpirun -np 4 /usr/bin/python3 examples/torch_ddp.py --backend toroid --steps 20
    mpirun -np 4 /usr/bin/python3 examples/torch_ddp.py --backend gloo --steps 20
    mpirun -np 2 /usr/bin/python3 examples/torch_ddp.py --steps 10 --checkpoint run.pt
    mpirun -np 4 /usr/bin/python3 examples/torch_ddp.py --steps 10 --resume run.pt

Every rank count sees the same global batches (sample k of step s is a fixed function of s and
k; rank r takes its block of each batch), and DDP averages the gradients, so the loss curve is
the same at 1, 2 and 4 ranks up to the order of the additions. Prints `step N loss X`, then the
time split per step (slowest rank): forward, backward with DDP's communication (what it does
not hide is inside), the same backward without communication (model.no_sync(), measured on
extra steps), and the optimizer step.
"""
import argparse
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import toroid
import toroid.distributed as td


class Net(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.conv3 = nn.Conv2d(64, 128, 3, padding=1)
        self.fc1 = nn.Linear(128 * 8 * 8, 256)
        self.fc2 = nn.Linear(256, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def batch(step, lo, hi, seed):
    """Samples lo..hi-1 of global batch `step`: a class, and its fixed random template image
    under noise."""
    templates = torch.randn(10, 3, 32, 32, generator=torch.Generator().manual_seed(seed * 7919 + 1))
    xs, ys = [], []
    for k in range(lo, hi):
        g = torch.Generator().manual_seed((seed * 1_000_003 + step) * 100_003 + k)
        y = int(torch.randint(0, 10, (1,), generator=g))
        xs.append(templates[y] + 1.0 * torch.randn(3, 32, 32, generator=g))
        ys.append(y)
    return torch.stack(xs), torch.tensor(ys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="toroid", choices=["toroid", "gloo"])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32, help="global batch (a multiple of the rank count)")
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bucket-mb", type=float, default=25, help="DDP bucket_cap_mb")
    ap.add_argument("--timing-steps", type=int, default=3, help="extra steps under no_sync() for the split")
    ap.add_argument("--checkpoint", help="save model and optimizer here at the end (rank 0)")
    ap.add_argument("--resume", help="load model and optimizer from here first")
    a = ap.parse_args()
    if a.steps <= 0 or a.batch <= 0:
        ap.error("--steps and --batch must be positive")
    torch.set_num_threads(1)  # one core per rank: ranks share the machine's cores
    td.init_process_group(a.backend)
    p, r = dist.get_world_size(), dist.get_rank()
    if a.batch % p:
        raise toroid.InvalidArgument(f"--batch {a.batch} is not a multiple of the {p} ranks")
    torch.manual_seed(a.seed)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    first = 1
    if a.resume:
        state = torch.load(a.resume)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        first = state["step"] + 1
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a.bucket_mb)
    lo = r * (a.batch // p)
    hi = lo + a.batch // p
    times = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0, "backward_no_sync": 0.0}
    timed = 0
    for step in range(first, first + a.steps):
        x, y = batch(step, lo, hi, a.seed)
        t0 = time.perf_counter()
        loss = F.cross_entropy(ddp(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=False)
        t3 = time.perf_counter()
        total = loss.detach().clone()
        dist.all_reduce(total)
        if step > first:  # the first step builds DDP's buckets
            times["forward"] += t1 - t0
            times["backward"] += t2 - t1
            times["optimizer"] += t3 - t2
            timed += 1
        if r == 0:
            print(f"step {step} loss {total.item() / p:.9g}", flush=True)
    # The same backward without communication: what the pass costs alone.
    for k in range(a.timing_steps):
        x, y = batch(first + a.steps + k, lo, hi, a.seed)
        with ddp.no_sync():
            loss = F.cross_entropy(ddp(x), y)
            t1 = time.perf_counter()
            loss.backward()
            times["backward_no_sync"] += time.perf_counter() - t1
        opt.zero_grad(set_to_none=False)
    per = {k: v / max(1, timed if k != "backward_no_sync" else a.timing_steps) * 1e3 for k, v in times.items()}
    worst = torch.tensor([per["forward"], per["backward"], per["optimizer"], per["backward_no_sync"]], dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    f, b, o, b0 = worst.tolist()
    if r == 0:
        params = sum(t.numel() for t in model.parameters())
        print(f"{a.backend}, {params} parameters, {p} ranks, global batch {a.batch}, bucket {a.bucket_mb} MB")
        print(f"time per step (ms, slowest rank): forward {f:.2f}, backward with DDP {b:.2f}, "
              f"backward alone {b0:.2f}, exposed communication {max(0.0, b - b0):.2f}, optimizer {o:.2f}")
    if a.checkpoint and r == 0:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": first + a.steps - 1}, a.checkpoint)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except toroid.Error as e:
        print(f"torch_ddp: error: {e}", file=sys.stderr)
        sys.exit(2)
