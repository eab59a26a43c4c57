#!/usr/bin/python3
"""A small transformer language model trained with weight-update sharding: toroid's torch
optimizer (toroid.optim.ShardedOptimizer), LAMB, gradients summed in bfloat16.

    mpirun -np 4 /usr/bin/python3 examples/torch_lm.py --steps 30
    mpirun -np 2 /usr/bin/python3 examples/torch_lm.py --steps 10 --checkpoint lm.pt
    mpirun -np 4 /usr/bin/python3 examples/torch_lm.py --steps 10 --resume lm.pt
    mpirun -np 4 /usr/bin/python3 examples/torch_lm.py --compare --steps 12

The text is generated: lines of additions ("37+485=522;"), characters as tokens, so the model
has something to learn (the digits of a sum depend on the operands) and the example needs no
file. A decoder-only transformer (causal self-attention; 4 layers, width 256, 3.2 M
parameters) predicts the next character. Every rank count sees the same global batches (rank r
takes its block of each), and the optimizer averages the gradients, so the loss curve is the
same at 1, 2 and 4 ranks up to rounding: the additions' order and, with --bf16-grads, where
the bfloat16 roundings fall.

Prints `step N loss X` (mean over the global batch), then the time split per step (slowest
rank): forward, backward (the gradients' hand-over to the reduce-scatters inside), exposed
communication (the part of the reduce-scatters and all-gathers step() waits for), update.
--compare instead runs three set-ups in one job, a step of each in turn on its own copy of
the model: the sharded optimizer on toroid, DDP on toroid with torch's AdamW, DDP on gloo
with torch's AdamW (DDP's exposed communication: its backward minus the same backward under
no_sync(), timed on extra steps). A barrier after each backward takes the ranks' skew apart
(one rank's backward ending later), which would otherwise count as communication.
"""
import argparse
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import toroid
import toroid.distributed as td
import toroid.optim

VOCAB = "0123456789+=;\n"


def text(seed, chars):
    """Lines of random additions, `chars` characters of them."""
    g = torch.Generator().manual_seed(seed)
    parts, n = [], 0
    while n < chars:
        a, b = (int(v) for v in torch.randint(0, 1000, (2,), generator=g))
        line = f"{a}+{b}={a + b};\n"
        parts.append(line)
        n += len(line)
    return "".join(parts)[:chars]


class LM(nn.Module):
    def __init__(self, width=256, layers=4, heads=4, context=64):
        super().__init__()
        self.embed = nn.Embedding(len(VOCAB), width)
        self.position = nn.Parameter(torch.randn(context, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, len(VOCAB))
        self.register_buffer("causal", torch.triu(torch.full((context, context), float("-inf")), 1))

    def forward(self, tokens):
        n = tokens.shape[1]
        h = self.embed(tokens) + self.position[:n]
        h = self.blocks(h, mask=self.causal[:n, :n])
        return self.head(self.norm(h))


def batches(corpus, step, lo, hi, context, seed):
    """Samples lo..hi-1 of global batch `step`: windows of the corpus at fixed random places."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    starts = torch.randint(0, len(corpus) - context - 1, (hi,), generator=g)[lo:hi]
    x = torch.stack([corpus[s:s + context] for s in starts])
    y = torch.stack([corpus[s + 1:s + context + 1] for s in starts])
    return x, y


def sharded_optimizer(model, a):
    return toroid.optim.ShardedOptimizer(model.named_parameters(), "lamb", lr=a.lr, weight_decay=0.01,
                                         no_weight_decay=["bias", "norm", "position"], no_trust_ratio=["bias", "norm"],
                                         bf16_gradients=a.bf16_grads, bucket_bytes=4 << 20, first_bucket_bytes=1 << 20)


def forward_backward(net, opt, x, y):
    """One pass: the loss, and the seconds its forward and its backward took."""
    t0 = time.perf_counter()
    loss = F.cross_entropy(net(x).flatten(0, 1), y.flatten())
    t1 = time.perf_counter()
    opt.zero_grad()
    loss.backward()
    return loss, t1 - t0, time.perf_counter() - t1


def slowest(values):
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def train(a, corpus, p, r):
    torch.manual_seed(a.seed)
    model = LM(context=a.context)
    opt = sharded_optimizer(model, a)
    first = 1
    if a.resume:
        state = torch.load(a.resume)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        first = state["step"] + 1
    lo, hi = r * (a.batch // p), (r + 1) * (a.batch // p)
    split = {"forward": [], "backward": [], "exposed communication": [], "update": []}
    for step in range(first, first + a.steps):
        x, y = batches(corpus, step, lo, hi, a.context, a.seed)
        loss, forward, backward = forward_backward(model, opt, x, y)
        opt.step()
        rep = opt.last_reports[0]
        total = loss.detach().clone()
        dist.all_reduce(total)
        if step > first:  # the first step re-cuts the buckets in the order autograd gave them
            split["forward"].append(forward)
            split["backward"].append(backward)
            split["exposed communication"].append(rep["reduce_seconds"] + rep["gather_seconds"])
            split["update"].append(rep["update_seconds"])
        if r == 0:
            print(f"step {step} loss {total.item() / p:.9g}", flush=True)
    if split["forward"]:
        worst = slowest([statistics.median(v) * 1e3 for v in split.values()])
        if r == 0:
            params = sum(t.numel() for t in model.parameters())
            print(f"sharded LAMB{' (bf16 gradients)' if a.bf16_grads else ''}, {params} parameters, {p} ranks, "
                  f"global batch {a.batch} x {a.context} tokens")
            print("time per step (ms, median, slowest rank): " + ", ".join(f"{k} {v:.2f}" for k, v in zip(split, worst)))
    if a.checkpoint:
        state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": first + a.steps - 1}
        if r == 0:
            torch.save(state, a.checkpoint)


def compare(a, corpus, p, r):
    """A step of each set-up in turn, each on its own copy of the model."""
    gloo = dist.new_group(backend="gloo")
    setups = {}
    for name in ("sharded, toroid", "DDP, toroid", "DDP, gloo"):
        torch.manual_seed(a.seed)
        model = LM(context=a.context)
        if name.startswith("DDP"):
            net = nn.parallel.DistributedDataParallel(model, process_group=gloo if "gloo" in name else None)
            opt = torch.optim.AdamW(model.parameters(), lr=a.lr / 10, weight_decay=0.01)
        else:
            net, opt = model, sharded_optimizer(model, a)
        setups[name] = (net, opt, {"forward": [], "backward": [], "skew": [], "exposed communication": [],
                                   "update": [], "backward alone": []})
    lo, hi = r * (a.batch // p), (r + 1) * (a.batch // p)
    for step in range(1, a.steps + 1):
        x, y = batches(corpus, step, lo, hi, a.context, a.seed)
        for name, (net, opt, t) in setups.items():
            loss, forward, backward = forward_backward(net, opt, x, y)
            # Waiting for the slowest rank's backward, apart: otherwise it shows in the first
            # wait for a collective (DDP's inside backward, the sharded step's in step()).
            tb = time.perf_counter()
            dist.barrier()
            t2 = time.perf_counter()
            opt.step()
            t3 = time.perf_counter()
            if step <= 2:
                continue  # buckets being built and re-cut
            t["forward"].append(forward)
            t["backward"].append(backward)
            t["skew"].append(t2 - tb)
            if name.startswith("DDP"):
                t["update"].append(t3 - t2)
                with net.no_sync():  # the same backward without communication
                    loss = F.cross_entropy(net(x).flatten(0, 1), y.flatten())
                    t4 = time.perf_counter()
                    loss.backward()
                    t["backward alone"].append(time.perf_counter() - t4)
                opt.zero_grad()
            else:
                rep = opt.last_reports[0]
                t["exposed communication"].append(rep["reduce_seconds"] + rep["gather_seconds"])
                t["update"].append(rep["update_seconds"])
    if r == 0:
        print(f"{p} ranks, {sum(q.numel() for q in setups['DDP, gloo'][0].parameters())} parameters, "
              f"global batch {a.batch} x {a.context} tokens; ms per step, median over {a.steps - 2} steps, slowest rank")
        print(f"{'set-up':<18} {'forward':>8} {'backward':>9} {'rank skew':>10} {'exposed comm':>13} {'update':>8} "
              f"{'step':>8}")
    for name, (net, opt, t) in setups.items():
        if name.startswith("DDP"):
            t["exposed communication"] = [max(0.0, b - b0) for b, b0 in zip(t["backward"], t["backward alone"])]
            t["backward"] = t["backward alone"]
        keys = ["forward", "backward", "skew", "exposed communication", "update"]
        f, b, k, c, u = slowest([statistics.median(t[k]) * 1e3 for k in keys])
        if r == 0:
            print(f"{name:<18} {f:>8.1f} {b:>9.1f} {k:>10.1f} {c:>13.1f} {u:>8.1f} {f + b + k + c + u:>8.1f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=16, help="global batch of sequences (a multiple of the rank count)")
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bf16-grads", type=int, default=1, help="sum gradients in bfloat16 (1) or float32 (0)")
    ap.add_argument("--checkpoint", help="save model and optimizer here at the end (rank 0 writes)")
    ap.add_argument("--resume", help="load model and optimizer from here first")
    ap.add_argument("--compare", action="store_true", help="the sharded optimizer against DDP on toroid and gloo")
    a = ap.parse_args()
    if a.steps <= 0 or a.batch <= 0 or not 2 <= a.context <= 512:
        ap.error("--steps and --batch must be positive, --context in [2, 512]")
    torch.set_num_threads(1)  # one core per rank: ranks share the machine's cores
    td.init_process_group("toroid")
    p, r = dist.get_world_size(), dist.get_rank()
    if a.batch % p:
        raise toroid.InvalidArgument(f"--batch {a.batch} is not a multiple of the {p} ranks")
    corpus = torch.tensor([VOCAB.index(c) for c in text(a.seed, 200_000)], dtype=torch.long)
    (compare if a.compare else train)(a, corpus, p, r)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except toroid.Error as e:
        print(f"torch_lm: error: {e}", file=sys.stderr)
        sys.exit(2)
