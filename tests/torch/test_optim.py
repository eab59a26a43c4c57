"""toroid.optim.ShardedOptimizer (weight-update sharding as a torch optimizer): the same weights
with and without overlap (bitwise), sharded as replicated, and as torch's own optimizers on
all-reduced gradients; bf16 summation, param groups, lr schedulers, gradient accumulation,
state dicts across layouts, and every refusal."""
import numpy as np
import pytest
import torch
from mpi4py import MPI

import toroid.optim
from conftest import agree

world = MPI.COMM_WORLD
P, R = world.size, world.rank
KINDS = ["sgd", "adam", "adamw", "lamb", "lars"]
SMALL = dict(bucket_bytes=1024, first_bucket_bytes=256)  # several buckets, tensors straddling them


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.Tanh(), torch.nn.Linear(32, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 3))


def batch(step, rank=R):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(8, 10, generator=g), torch.randn(8, 3, generator=g)


def loss_of(m, step):
    x, y = batch(step)
    return torch.nn.functional.mse_loss(m(x), y)


def weights(m):
    return torch.cat([p.detach().flatten() for p in m.parameters()])


def train(make_opt, steps=4, allreduce_grads=False, each_step=None):
    m = model()
    opt = make_opt(m)
    for s in range(steps):
        opt.zero_grad()
        loss_of(m, s).backward()
        if allreduce_grads:  # the reference: torch's optimizer on the mean gradient
            for p in m.parameters():
                world.Allreduce(MPI.IN_PLACE, p.grad.numpy())
                p.grad /= P
        opt.step()
        if each_step:
            each_step(opt)
    return weights(m), opt


def close(a, b, rtol=1e-5, atol=1e-6):
    return torch.allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("kind", KINDS)
def test_overlap_bitwise_and_sharded_as_replicated(kind):
    wd = 0.01 if kind in ("adamw", "lamb", "lars") else 0.0
    make = lambda **kw: (lambda m: toroid.optim.ShardedOptimizer(m.named_parameters(), kind, lr=0.01, weight_decay=wd,
                                                                  no_weight_decay=["bias"], **SMALL, **kw))
    overlapped, opt = train(make())
    plain, _ = train(make(overlap=False))
    replicated, _ = train(make(shard=False, overlap=False))
    ok = torch.equal(overlapped, plain) and close(overlapped, replicated)
    ok = ok and opt.last_reports[0]["step"] == 4
    # The hooks handed every gradient over during backward.
    m = model()
    o = make()(m)
    o.zero_grad()
    loss_of(m, 0).backward()
    ok = ok and o.handed_over == len(list(m.parameters()))
    o.step()
    ok = ok and o.handed_over == 0
    # Every rank holds the same weights.
    ok = ok and torch.equal(torch.from_numpy(world.bcast(overlapped.numpy(), root=0)), overlapped)
    assert agree(ok)


@pytest.mark.parametrize("kind", ["sgd", "adam", "adamw"])
def test_equals_torch_optimizers(kind):
    ours, _ = train(lambda m: toroid.optim.ShardedOptimizer(m.parameters(), kind, lr=0.01, momentum=0.9,
                                                            weight_decay=0.01, **SMALL))
    ref = {"sgd": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, weight_decay=0.01),
           "adam": lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.01),
           "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.01)}[kind]
    theirs, _ = train(lambda m: ref(m.parameters()), allreduce_grads=True)
    assert agree(close(ours, theirs))


def test_bf16_gradients_within_two_percent_of_the_move():
    start = weights(model())
    f32, _ = train(lambda m: toroid.optim.ShardedOptimizer(m.parameters(), "lamb", lr=0.01, **SMALL))
    bf16, _ = train(lambda m: toroid.optim.ShardedOptimizer(m.parameters(), "lamb", lr=0.01, bf16_gradients=True, **SMALL))
    move = (f32 - start).norm()
    assert agree(float((bf16 - f32).norm()) < 0.02 * float(move) and not torch.equal(bf16, f32) or P == 1)


def test_param_groups_and_lr_scheduler():
    def make(m):
        groups = [{"params": list(m[0].parameters()), "lr": 0.02, "weight_decay": 0.1},
                  {"params": list(m[2].parameters()) + list(m[4].parameters())}]
        opt = toroid.optim.ShardedOptimizer(groups, "adamw", lr=0.01, **SMALL)
        make.sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
        return opt
    ours, opt = train(make, each_step=lambda o: make.sched.step())

    def ref(m):
        groups = [{"params": list(m[0].parameters()), "lr": 0.02, "weight_decay": 0.1},
                  {"params": list(m[2].parameters()) + list(m[4].parameters())}]
        opt = torch.optim.AdamW(groups, lr=0.01, weight_decay=0.0)  # torch defaults to 0.01, toroid to 0
        ref.sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
        return opt
    theirs, _ = train(ref, allreduce_grads=True, each_step=lambda o: ref.sched.step())
    ok = close(ours, theirs) and abs(opt.param_groups[0]["lr"] - 0.02 / 5) < 1e-12
    assert agree(ok)


def test_gradient_accumulation_none_grads_and_unused_parameters():
    # Two micro-batches (the first under no_sync) equal one step on their summed gradients;
    # grads set to None by the model (autograd then makes new tensors) and a parameter no
    # forward uses are both handled.
    def run(accumulate):
        m = model()
        extra = torch.nn.Parameter(torch.ones(5))  # never used: no gradient
        opt = toroid.optim.ShardedOptimizer(list(m.parameters()) + [extra], "adam", lr=0.01, **SMALL)
        for s in range(3):
            m.zero_grad(set_to_none=True)
            if accumulate:
                with opt.no_sync():
                    loss_of(m, 2 * s).backward()
                loss_of(m, 2 * s + 1).backward()
            else:
                (loss_of(m, 2 * s) + loss_of(m, 2 * s + 1)).backward()
            opt.step()
        return torch.cat([weights(m), extra.detach()])
    a, b = run(True), run(False)
    assert agree(close(a, b) and torch.equal(a[-5:], torch.ones(5)))


def test_state_dict_across_layouts():
    # Three steps, the state taken, then two more steps: continued in place, and in a fresh
    # optimizer of another layout (replicated, other buckets) loaded from the state dict.
    for kind in ("adam", "sgd"):
        m = model()
        opt = toroid.optim.ShardedOptimizer(m.parameters(), kind, lr=0.01, **SMALL)
        for s in range(3):
            opt.zero_grad()
            loss_of(m, s).backward()
            opt.step()
        sd = opt.state_dict()
        saved = {k: v.clone() for k, v in m.state_dict().items()}
        names = {"adam": {"step", "exp_avg", "exp_avg_sq"}, "sgd": {"step", "momentum"}}[kind]
        ok = set(sd["state"][0].keys()) == names and int(sd["state"][0]["step"]) == 3
        ok = ok and sd["state"][0][sorted(names - {"step"})[0]].shape == next(m.parameters()).shape
        for s in range(3, 5):
            opt.zero_grad()
            loss_of(m, s).backward()
            opt.step()
        m2 = model()
        m2.load_state_dict(saved)
        opt2 = toroid.optim.ShardedOptimizer(m2.parameters(), kind, lr=0.01, shard=False, bucket_bytes=4096,
                                             first_bucket_bytes=4096)
        opt2.load_state_dict(sd)
        for s in range(3, 5):
            opt2.zero_grad()
            loss_of(m2, s).backward()
            opt2.step()
        ok = ok and close(weights(m), weights(m2))
        assert agree(ok)


def test_refused():
    def message(f, kind=Exception):
        try:
            f()
        except kind as e:
            return str(e)
        return ""
    m = model()
    ok = "kind is 'adagrad'" in message(lambda: toroid.optim.ShardedOptimizer(m.parameters(), "adagrad"))
    ok = ok and "is torch.float64" in message(
        lambda: toroid.optim.ShardedOptimizer([torch.nn.Parameter(torch.ones(3, dtype=torch.float64))]))
    ok = ok and "needs one param group" in message(lambda: toroid.optim.ShardedOptimizer(
        [{"params": list(m[0].parameters())}, {"params": list(m[2].parameters())}], max_grad_norm=1.0))
    opt = toroid.optim.ShardedOptimizer(m.named_parameters(), "adam", **SMALL)
    # A second backward pass outside no_sync: named in the error.
    opt.zero_grad()
    loss_of(m, 0).backward()
    ok = ok and "parameter '4.bias' got a gradient again" in message(lambda: loss_of(m, 1).backward())
    # Changed betas after construction; a state dict of another shape or kind.
    opt2 = toroid.optim.ShardedOptimizer(model().parameters(), "adam", overlap=False)
    opt2.param_groups[0]["betas"] = (0.5, 0.9)
    ok = ok and "betas changed" in message(lambda: opt2.step())
    ok = ok and "param groups are fixed at construction" in message(
        lambda: opt2.add_param_group({"params": [torch.nn.Parameter(torch.ones(2))]}))
    with torch.no_grad():  # built under no_grad: the hooks still go on
        built = toroid.optim.ShardedOptimizer(model().parameters(), "sgd")
    ok = ok and len(built._hooks) == 6
    small = torch.nn.Linear(2, 2)
    sd = toroid.optim.ShardedOptimizer(small.parameters(), "adam").state_dict()
    ok = ok and "group 0 has 2 parameters, this optimizer's 6" in message(
        lambda: toroid.optim.ShardedOptimizer(model().parameters(), "adam").load_state_dict(sd))
    ok = ok and "the state is adam's" in message(
        lambda: toroid.optim.ShardedOptimizer(torch.nn.Linear(2, 2).parameters(), "sgd").load_state_dict(sd))
    assert agree(ok)


def test_defaults_are_the_library_s():
    """Every default of the torch optimizer's signature is the C++ OptimizerConfig's."""
    import inspect
    d = toroid._toroid.optimizer_defaults()
    p = inspect.signature(toroid.optim.ShardedOptimizer.__init__).parameters
    names = {"kind": "kind", "lr": "learning_rate", "eps": "epsilon", "weight_decay": "weight_decay",
             "momentum": "momentum", "nesterov": "nesterov", "trust_coefficient": "lars_trust_coefficient",
             "max_grad_norm": "max_grad_norm", "bf16_gradients": "bf16_gradients", "shard": "shard",
             "average": "average", "bucket_bytes": "bucket_bytes", "first_bucket_bytes": "first_bucket_bytes",
             "rebuild_buckets": "rebuild_buckets"}
    for py_name, cpp_name in names.items():
        assert p[py_name].default == d[cpp_name], py_name
    assert p["betas"].default == (d["beta1"], d["beta2"])
    # Every C++ default has its Python parameter.
    assert set(names.values()) | {"beta1", "beta2"} == set(d)
