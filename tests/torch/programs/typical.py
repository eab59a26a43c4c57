#!/usr/bin/python3
"""A torch program as people write them, unmodified but for the backend's name: 2D parallelism
with row and column groups, loss logging with dist.reduce, evaluation with gather_object, an
all_to_all_single exchange, configuration sent with broadcast_object_list, and training with
ZeroRedundancyOptimizer over DDP. Prints one JSON line of everything it computed on rank 0.

    mpirun -np 4 /usr/bin/python3 tests/torch/programs/typical.py --backend toroid
"""
import argparse
import json

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

import toroid.distributed as td


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="toroid")
    ap.add_argument("--steps", type=int, default=8)
    a = ap.parse_args()
    torch.set_num_threads(1)
    td.init_process_group(a.backend)
    P, R = dist.get_world_size(), dist.get_rank()
    out = {"world": P}

    # Configuration from rank 0.
    config = [{"lr": 0.05, "hidden": 24, "seed": 7}] if R == 0 else [None]
    dist.broadcast_object_list(config, src=0)
    config = config[0]
    out["config"] = config

    # Row and column groups of a 2 x P/2 grid (one row when P is odd): every rank creates every
    # group, in the same order.
    cols = P // 2 if P % 2 == 0 and P > 2 else P
    nrows = P // cols
    rows = [dist.new_group([y * cols + x for x in range(cols)], backend=a.backend) for y in range(nrows)]
    columns = [dist.new_group([y * cols + x for y in range(nrows)], backend=a.backend) for x in range(cols)]
    row, column = rows[R // cols], columns[R % cols]
    # Model parallel along the row: a sharded matmul summed over the row; data parallel along
    # the column: the result averaged over it.
    torch.manual_seed(config["seed"] + R)
    x = torch.randn(16, 8)
    partial = x @ torch.ones(8, 4) * (R % cols + 1)
    dist.all_reduce(partial, group=row)
    dist.all_reduce(partial, op=dist.ReduceOp.SUM, group=column)
    partial /= dist.get_world_size(column)
    gathered = [torch.zeros_like(partial) for _ in range(P)]
    dist.all_gather(gathered, partial)
    out["two_d"] = [round(float(g.sum()), 3) for g in gathered]

    # all_to_all_single: rank r sends k + 1 rows to rank k.
    send = torch.arange(sum(k + 1 for k in range(P)) * 3, dtype=torch.float32).reshape(-1, 3) + 1000 * R
    recv = torch.empty((R + 1) * P, 3)
    dist.all_to_all_single(recv, send, output_split_sizes=[R + 1] * P, input_split_sizes=[k + 1 for k in range(P)])
    all_recv = [None] * P
    dist.all_gather_object(all_recv, recv.sum(0).tolist())
    out["all_to_all"] = all_recv

    # Training: ZeRO over DDP, losses logged with dist.reduce, evaluation with gather_object.
    torch.manual_seed(config["seed"])
    model = torch.nn.Sequential(torch.nn.Linear(8, config["hidden"]), torch.nn.Tanh(), torch.nn.Linear(config["hidden"], 1))
    ddp = DDP(model)
    opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=config["lr"])
    g = torch.Generator().manual_seed(123)
    data = torch.randn(64, 8, generator=g)
    target = (data[:, :1] * 2 - data[:, 1:2]).tanh()
    per = 64 // P
    losses = []
    for step in range(a.steps):
        xb = data[R * per:(R + 1) * per]
        yb = target[R * per:(R + 1) * per]
        loss = torch.nn.functional.mse_loss(ddp(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        logged = loss.detach().clone()
        dist.reduce(logged, dst=0)
        losses.append(float(logged) / P)
    opt.consolidate_state_dict(to=0)
    if R == 0:
        state = opt.state_dict()
        out["zero_state_steps"] = sorted(int(s["step"]) for s in state["state"].values())
    with torch.no_grad():
        mine = float(torch.nn.functional.mse_loss(model(data[R * per:(R + 1) * per]), target[R * per:(R + 1) * per]))
    evals = [None] * P if R == 0 else None
    dist.gather_object({"rank": R, "eval": mine}, evals, dst=0)
    if R == 0:
        out["losses"] = losses
        out["evals"] = [e["eval"] for e in evals]
        out["weights"] = [round(float(p.sum()), 5) for p in model.parameters()]
    dist.barrier()
    dist.destroy_process_group()
    if R == 0:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
