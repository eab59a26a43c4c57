#!/usr/bin/python3
"""A mixture-of-experts model trained with expert parallelism: each rank holds some of the
experts, and every MoE layer moves the tokens to their experts and back with two all-to-alls
(dispatch and combine) on torch.distributed's "toroid" backend, with split sizes that change
every step (toroid's alltoallv).

    mpirun -np 4 /usr/bin/python3 examples/torch_moe.py --steps 30
    mpirun -np 4 /usr/bin/python3 examples/torch_moe.py --backend gloo --steps 30
    /usr/bin/python3 examples/torch_moe.py --steps 30          # one process, every expert

The layer (GShard's, with its load-balancing loss): a gate picks each token's top 2 of --experts experts (their weights
renormalized to sum to 1); each expert takes at most C = ceil(capacity_factor * T * 2 /
experts) tokens of a group of T tokens (first choices first, then second choices, in token
order), and drops the rest, whose output is then only the residual. The global batch is
--groups groups of --group-tokens tokens, and rank r takes its block of the groups, so the
routing, the capacity and the drops do not depend on the rank count: the loss curve is the
same on one process, on 2 or 4 ranks, and on gloo, up to the order of the additions.

    tokens -> Linear+ReLU -> gate -> top-2 -> dispatch (all-to-all) -> experts (FFN)
           -> combine (all-to-all) -> weighted sum + residual -> Linear -> loss (MSE)

The dispatch first exchanges the counts (how many tokens each rank sends each expert: an
all-to-all of equal parts), then the tokens (all_to_all_single with split sizes); the
combine sends the experts' outputs back the same way, and autograd runs both in reverse for the
gradients. The gate and the projections are replicated (their gradients averaged with
all_reduce); each expert's gradient gathers every rank's tokens through the combine's reverse
all-to-all.

Prints `step N loss X` (mean over the global batch) and `step N dropped D` (token choices over
capacity), and the time per step
(slowest rank) split into dispatch (counts and tokens, forward and backward), experts (forward),
combine (forward and backward) and the rest.
"""
import argparse
import math
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import toroid
import toroid.distributed as td

TIMES = {}


class Timed:
    def __init__(self, label):
        self.label = label

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        TIMES[self.label] = TIMES.get(self.label, 0.0) + time.perf_counter() - self.t0


class AllToAll(torch.autograd.Function):
    """all_to_all_single with split sizes along dim 0; the backward sends the gradients back the
    other way (out_splits and in_splits swapped)."""

    @staticmethod
    def forward(ctx, x, out_splits, in_splits, label):
        ctx.splits, ctx.label = (out_splits, in_splits), label
        out = x.new_empty((sum(out_splits),) + tuple(x.shape[1:]))
        with Timed(label):
            dist.all_to_all_single(out, x.contiguous(), out_splits, in_splits)
        return out

    @staticmethod
    def backward(ctx, grad):
        out_splits, in_splits = ctx.splits
        back = grad.new_empty((sum(in_splits),) + tuple(grad.shape[1:]))
        with Timed(ctx.label):
            dist.all_to_all_single(back, grad.contiguous(), in_splits, out_splits)
        return back, None, None, None


class Expert(nn.Module):
    def __init__(self, width, hidden, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)  # the same expert whichever rank holds it
        self.w1 = nn.Parameter(torch.randn(width, hidden, generator=g) / math.sqrt(width))
        self.w2 = nn.Parameter(torch.randn(hidden, width, generator=g) / math.sqrt(hidden))

    def forward(self, x):
        return F.relu(x @ self.w1) @ self.w2


class MoE(nn.Module):
    def __init__(self, width, hidden, experts, capacity_factor, seed):
        super().__init__()
        self.p, self.r = dist.get_world_size(), dist.get_rank()
        self.experts_total, self.local = experts, experts // self.p
        self.capacity_factor = capacity_factor
        self.gate = nn.Linear(width, experts, bias=False)
        first = self.r * self.local
        self.experts = nn.ModuleList(
            Expert(width, hidden, seed * 1009 + first + e) for e in range(self.local))
        self.dropped = 0
        self.balance = torch.zeros(())

    def route(self, x, tokens_per_group):
        """Per token: its two experts, their weights, and whether each choice fits the
        expert's capacity in the token's group."""
        probs = F.softmax(self.gate(x), dim=-1)
        weight, expert = probs.topk(2, dim=-1)
        weight = weight / weight.sum(dim=-1, keepdim=True)
        capacity = math.ceil(self.capacity_factor * tokens_per_group * 2 / self.experts_total)
        groups = x.shape[0] // tokens_per_group
        # Queue positions per group: first choices in token order, then second choices.
        one_hot = F.one_hot(expert, self.experts_total).view(groups, tokens_per_group, 2, -1)
        order = one_hot.transpose(1, 2).reshape(groups, 2 * tokens_per_group, -1)
        position = (order.cumsum(dim=1) - 1).view(groups, 2, tokens_per_group, -1).transpose(1, 2)
        position = (position * one_hot).sum(dim=-1).reshape(-1, 2)
        keep = position < capacity
        # GShard's load-balancing loss, per group: experts x sum over experts of (the share of
        # first choices it got) x (its mean gate probability); 1 when balanced.
        first = one_hot[:, :, 0, :].float().mean(dim=1)
        mean_prob = probs.view(groups, tokens_per_group, -1).mean(dim=1)
        self.balance = (first * mean_prob).sum(dim=1).mean() * self.experts_total
        return expert, weight, keep

    def forward(self, x, tokens_per_group):
        expert, weight, keep = self.route(x, tokens_per_group)
        self.dropped = int((~keep).sum())
        # The kept (token, choice) pairs, ordered by expert (so by destination rank), then by
        # token: the rows each rank sends each expert.
        token = torch.arange(x.shape[0]).unsqueeze(1).expand(-1, 2)
        choice = torch.arange(2).unsqueeze(0).expand(x.shape[0], -1)
        e_kept, t_kept, c_kept = expert[keep], token[keep], choice[keep]
        order = torch.argsort(e_kept * x.shape[0] + t_kept)
        e_kept, t_kept, c_kept = e_kept[order], t_kept[order], c_kept[order]
        with Timed("dispatch"):
            send_counts = torch.bincount(e_kept, minlength=self.experts_total)  # per expert
            recv_counts = torch.empty_like(send_counts)  # per (source rank, my expert)
            dist.all_to_all_single(recv_counts, send_counts)
        per_rank = send_counts.view(self.p, self.local).sum(dim=1).tolist()
        from_rank = recv_counts.view(self.p, self.local).sum(dim=1).tolist()
        arrived = AllToAll.apply(x[t_kept], from_rank, per_rank, "dispatch")
        with Timed("experts"):
            # Rows from each source in expert order: expert e's rows of every source at once.
            owner = torch.repeat_interleave(
                torch.arange(self.local).repeat(self.p), recv_counts.view(-1))
            done = torch.empty_like(arrived)
            for e, ffn in enumerate(self.experts):
                rows = (owner == e).nonzero().squeeze(1)
                done = done.index_copy(0, rows, ffn(arrived[rows]))
        back = AllToAll.apply(done, per_rank, from_rank, "combine")
        with Timed("combine"):
            w = weight[t_kept, c_kept].unsqueeze(1)
            return x.index_add(0, t_kept, back * w)


class Net(nn.Module):
    def __init__(self, width, hidden, experts, capacity_factor, seed):
        super().__init__()
        self.inp = nn.Linear(width, width)
        self.moe = MoE(width, hidden, experts, capacity_factor, seed)
        self.out = nn.Linear(width, 1)

    def forward(self, x, tokens_per_group):
        return self.out(self.moe(F.relu(self.inp(x)), tokens_per_group)).squeeze(1)


def batch(step, groups, tokens, width, seed):
    """The global batch of `step`: groups x tokens inputs, and a target that depends on where
    each input lies (a different smooth function in each of 8 regions), so experts pay off."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    x = torch.randn(groups * tokens, width, generator=g)
    t = torch.Generator().manual_seed(seed)
    centers, slopes = torch.randn(8, width, generator=t), torch.randn(8, width, generator=t)
    region = (x @ centers.T).argmax(dim=1)
    y = torch.sin((x * slopes[region]).sum(dim=1) / math.sqrt(width)) + 0.1 * region.float()
    return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="toroid", choices=["toroid", "gloo"])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--experts", type=int, default=8, help="in all (a multiple of the ranks)")
    ap.add_argument("--groups", type=int, default=8, help="token groups a step (a multiple of the ranks)")
    ap.add_argument("--group-tokens", type=int, default=64)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--capacity-factor", type=float, default=1.25)
    ap.add_argument("--balance", type=float, default=0.01, help="weight of the load-balancing loss")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.steps <= 0 or a.group_tokens <= 0 or a.capacity_factor <= 0:
        ap.error("--steps, --group-tokens and --capacity-factor must be positive")
    torch.set_num_threads(1)  # one core per rank: ranks share the machine's cores
    td.init_process_group(a.backend)
    p, r = dist.get_world_size(), dist.get_rank()
    for name, value in (("--experts", a.experts), ("--groups", a.groups)):
        if value <= 0 or value % p:
            raise toroid.InvalidArgument(f"{name} {value} is not a positive multiple of the {p} ranks")
    torch.manual_seed(a.seed)  # the replicated layers: the same on every rank
    model = Net(a.width, a.hidden, a.experts, a.capacity_factor, a.seed)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    replicated = [q for n, q in model.named_parameters() if ".experts." not in n]
    experts = [q for n, q in model.named_parameters() if ".experts." in n]
    if r == 0:
        print(f"{a.backend}, {p} ranks, {a.experts} experts ({a.experts // p} a rank), "
              f"{a.groups}x{a.group_tokens} tokens a step, capacity factor {a.capacity_factor}")
    lo, hi = r * a.groups // p, (r + 1) * a.groups // p
    steps = []
    for step in range(1, a.steps + 1):
        x, y = batch(step, a.groups, a.group_tokens, a.width, a.seed)
        x, y = x[lo * a.group_tokens:hi * a.group_tokens], y[lo * a.group_tokens:hi * a.group_tokens]
        TIMES.clear()
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = F.mse_loss(model(x, a.group_tokens), y)
        (loss + a.balance * model.moe.balance).backward()
        with Timed("rest: gradients"):
            # The replicated layers' gradients averaged; an expert's already sums every rank's
            # tokens (through the combine's reverse all-to-all): / p makes it the global mean's.
            flat = torch.cat([q.grad.view(-1) for q in replicated])
            dist.all_reduce(flat)
            at = 0
            for q in replicated:
                q.grad.copy_(flat[at:at + q.numel()].view_as(q) / p)
                at += q.numel()
            for q in experts:
                q.grad.div_(p)
        opt.step()
        total = time.perf_counter() - t0
        report = torch.tensor([loss.item(), float(model.moe.dropped), total,
                               TIMES.get("dispatch", 0.0), TIMES.get("experts", 0.0),
                               TIMES.get("combine", 0.0)], dtype=torch.float64)
        summed, slowest = report.clone(), report.clone()
        dist.all_reduce(summed)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        if r == 0:
            print(f"step {step} loss {summed[0].item() / p:.8f}\n"
                  f"step {step} dropped {int(summed[1].item())}", flush=True)
        steps.append(slowest[2:].tolist())
    if r == 0:
        mid = steps[len(steps) // 2:] or steps
        mean = [sum(s[i] for s in mid) / len(mid) * 1e3 for i in range(4)]
        rest = mean[0] - sum(mean[1:])
        print(f"step time {mean[0]:.2f} ms (slowest rank, mean of the last {len(mid)} steps): "
              f"dispatch {mean[1]:.2f} ms, experts {mean[2]:.2f} ms, combine {mean[3]:.2f} ms, "
              f"the rest {rest:.2f} ms")
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except toroid.InvalidArgument as e:
        print(f"torch_moe.py: {e}", file=sys.stderr)
        sys.exit(2)
