"""Every operation of the "toroid" backend x dtype against a reference computed from every
rank's input; async works and their futures; what is refused."""
import numpy as np
import pytest
import torch
import torch.distributed as dist
from mpi4py import MPI

from conftest import agree

world = MPI.COMM_WORLD
P, R = world.size, world.rank
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int64]
OPS = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}


def make(n, dtype, op, rank):
    i = torch.arange(n)
    v = 1 + (i + rank) % 2 if op == "product" else (i * 7 + rank * 3) % 11 - 4
    return v.to(dtype)


def reference(n, dtype, op):
    xs = np.stack([make(n, torch.float64, op, r).numpy() for r in range(P)])
    f = {"sum": xs.sum, "product": xs.prod, "min": xs.min, "max": xs.max, "avg": xs.mean}[op]
    return torch.from_numpy(f(axis=0)).to(dtype)


def test_backend_name():
    assert agree(dist.get_backend() == "toroid" and dist.get_world_size() == P and dist.get_rank() == R)


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_reduce(dtype):
    ok = True
    ops = dict(OPS)
    if dtype.is_floating_point:
        ops["avg"] = dist.ReduceOp.AVG
    for n in (1, P + 1, 1003):
        for name, op in ops.items():
            t = make(n, dtype, name, R)
            dist.all_reduce(t, op=op)
            want = reference(n, dtype, name)
            if name == "avg":
                ok = ok and torch.allclose(t.double(), want.double(), rtol=1e-2, atol=1e-2)
            else:
                ok = ok and torch.equal(t, want)
    assert agree(ok)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_scatter_broadcast(dtype):
    n = 37
    ok = True
    # all_gather (list) and all_gather_into_tensor (_allgather_base)
    mine = make(n, dtype, "sum", R)
    outs = [torch.empty(n, dtype=dtype) for _ in range(P)]
    dist.all_gather(outs, mine)
    ok = ok and all(torch.equal(outs[r], make(n, dtype, "sum", r)) for r in range(P))
    flat = torch.empty(n * P, dtype=dtype)
    dist.all_gather_into_tensor(flat, mine)
    ok = ok and torch.equal(flat, torch.cat([make(n, dtype, "sum", r) for r in range(P)]))
    # reduce_scatter (list) and reduce_scatter_tensor (_reduce_scatter_base): block r of the sum lands on rank r
    full = make(n * P, dtype, "sum", R)
    want = reference(n * P, dtype, "sum")[R * n:(R + 1) * n]
    out = torch.empty(n, dtype=dtype)
    dist.reduce_scatter(out, list(full.split(n)))
    ok = ok and torch.equal(out, want)
    out2 = torch.empty(n, dtype=dtype)
    dist.reduce_scatter_tensor(out2, full)
    ok = ok and torch.equal(out2, want)
    # broadcast from every root
    for root in range(P):
        t = make(n, dtype, "sum", root) if R == root else torch.zeros(n, dtype=dtype)
        dist.broadcast(t, src=root)
        ok = ok and torch.equal(t, make(n, dtype, "sum", root))
    assert agree(ok)


@pytest.mark.filterwarnings("ignore:torch.distributed.all_reduce_coalesced")
def test_coalesced_and_multidimensional():
    ts = [make(n, torch.float32, "sum", R).reshape(-1, 1) if n % 2 else make(n, torch.float32, "sum", R)
          for n in (5, 64, 1001)]
    dist.all_reduce_coalesced(ts)
    ok = all(torch.equal(t.flatten(), reference(t.numel(), torch.float32, "sum")) for t in ts)
    m = make(6 * 7, torch.float64, "sum", R).reshape(6, 7)
    dist.all_reduce(m)
    ok = ok and torch.equal(m.flatten(), reference(42, torch.float64, "sum"))
    assert agree(ok)


def test_async_works_and_futures():
    ts = [make(4099, torch.float32, "sum", R) * (k + 1) for k in range(6)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    fut = works[0].get_future()
    chained = fut.then(lambda f: f.value()[0].sum().item())
    ok = True
    for k in reversed(range(6)):
        works[k].wait()
        ok = ok and works[k].is_completed() and torch.equal(ts[k], reference(4099, torch.float32, "sum") * (k + 1))
    ok = ok and chained.wait() == pytest.approx(float(ts[0].sum()))
    b = dist.barrier(async_op=True)
    b.wait()
    ok = ok and b.is_completed()
    assert agree(ok)


def test_refused():
    def message(f):
        try:
            f()
        except RuntimeError as e:
            return str(e)
        return ""
    ok = "allreduce: the tensor is not contiguous" in message(lambda: dist.all_reduce(torch.zeros(4, 4).t()))
    ok = ok and "tensors of type Bool are not supported" in message(lambda: dist.all_reduce(torch.zeros(3, dtype=torch.bool)))
    ok = ok and "reduce op" in message(lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int32), op=dist.ReduceOp.BAND))
    ok = ok and "does not support" in message(lambda: dist.gather(torch.zeros(3), [torch.zeros(3) for _ in range(P)] if R == 0 else None))
    ok = ok and "does not support" in message(lambda: dist.send(torch.zeros(3), dst=(R + 1) % P))
    ok = ok and "output has" in message(lambda: dist.all_gather_into_tensor(torch.zeros(P * 3 + 1), torch.zeros(3)))
    # The group still works after the refusals.
    t = torch.ones(3)
    dist.all_reduce(t)
    assert agree(ok and torch.equal(t, torch.full((3,), float(P))))


def test_destroyed_with_works_in_flight():
    # Works dropped at once leave their tensors to the completer, which frees them (taking the
    # GIL) while Python destroys the group holding it: the destructor must let go of the GIL.
    g = dist.new_group(backend="toroid")
    for _ in range(32):
        dist.all_reduce(torch.ones(1 << 15), group=g, async_op=True)
    dist.destroy_process_group(g)
    t = torch.ones(4)
    dist.all_reduce(t)
    assert agree(bool((t == dist.get_world_size()).all()))


def test_sub_groups():
    # Every rank enters every new_group call, in the same order, as torch requires; each group
    # is an MPI communicator of its members in group-rank order.
    evens = dist.new_group([r for r in range(P) if r % 2 == 0], backend="toroid")
    odds = dist.new_group([r for r in range(P) if r % 2 == 1], backend="toroid") if P > 1 else None
    mine = evens if R % 2 == 0 else odds
    t = torch.full((1000,), float(R + 1))
    dist.all_reduce(t, group=mine)
    ok = torch.equal(t, torch.full((1000,), float(sum(r + 1 for r in range(P) if r % 2 == R % 2))))
    # All but rank 0 (torch sorts a group's ranks): group rank k is MPI rank k + 1.
    if P > 1:
        rest = dist.new_group(list(range(1, P)), backend="toroid")
        if R > 0:
            ok = ok and dist.get_rank(rest) == R - 1
            gathered = [torch.zeros(2) for _ in range(P - 1)]
            dist.all_gather(gathered, torch.full((2,), float(R)), group=rest)
            ok = ok and all(torch.equal(g, torch.full((2,), float(k + 1))) for k, g in enumerate(gathered))
            x = torch.full((5,), float(R))
            dist.broadcast(x, src=P - 1, group=rest)  # src is a global rank
            ok = ok and torch.equal(x, torch.full((5,), float(P - 1)))
    # Rows and columns of a torus, the layout of data parallelism along one axis and model
    # parallelism along the other: 2 x P/2 when P is even.
    if P % 2 == 0 and P > 2:
        cols = P // 2
        rows = [dist.new_group([y * cols + x for x in range(cols)], backend="toroid") for y in range(2)]
        columns = [dist.new_group([y * cols + x for y in range(2)], backend="toroid") for x in range(cols)]
        row, column = rows[R // cols], columns[R % cols]
        a = torch.full((300,), float(R))
        dist.all_reduce(a, group=row)
        ok = ok and torch.equal(a, torch.full((300,), float(sum((R // cols) * cols + x for x in range(cols)))))
        b = torch.full((300,), float(R))
        dist.all_reduce(b, group=column)
        ok = ok and torch.equal(b, torch.full((300,), float(R % cols + (R % cols + cols))))
    assert agree(ok)
