"""Every operation of the "toroid" backend x dtype against a reference computed from every
rank's input; async works and their futures; what is refused."""
import os

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


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.bool, torch.complex64])
def test_movement_of_other_dtypes(dtype):
    # Types toroid has none for move as bytes on MPI: broadcast and all-gather in every form,
    # odd byte counts included, and the object collectives that send uint8.
    def mine(r, n):
        v = (torch.arange(n) * 3 + r * 5) % 7
        return (v % 2 == 1) if dtype == torch.bool else v.to(dtype)
    ok = True
    for n in (1, 5, 1001):
        for root in range(P):
            t = mine(root, n) if R == root else torch.zeros(n, dtype=dtype)
            dist.broadcast(t, src=root)
            ok = ok and torch.equal(t, mine(root, n))
        outs = [torch.zeros(n, dtype=dtype) for _ in range(P)]
        dist.all_gather(outs, mine(R, n))
        ok = ok and all(torch.equal(o, mine(r, n)) for r, o in enumerate(outs))
        flat = torch.zeros(n * P, dtype=dtype)
        dist.all_gather_into_tensor(flat, mine(R, n))
        ok = ok and torch.equal(flat, torch.cat([mine(r, n) for r in range(P)]))
    objs = [{"from": 0, "x": list(range(7))}, "text"] if R == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)
    everyone = [None] * P
    dist.all_gather_object(everyone, ("rank", R))
    ok = ok and objs == [{"from": 0, "x": list(range(7))}, "text"] and everyone == [("rank", r) for r in range(P)]
    assert agree(ok)


def test_reductions_on_mpi():
    # Reductions toroid has no type or op for, through MPI: small integer dtypes (a flag, a
    # count) and the bitwise ops on integers; reduce keeps the other ranks' tensors.
    ok = True
    for dtype in (torch.uint8, torch.int8, torch.int16):
        for name in ("sum", "min", "max"):
            t = make(37, torch.int64, name, R).abs().to(dtype)
            dist.all_reduce(t, op=OPS[name])
            xs = torch.stack([make(37, torch.int64, name, r).abs() for r in range(P)])
            want = {"sum": xs.sum(0), "min": xs.min(0).values, "max": xs.max(0).values}[name].to(dtype)
            ok = ok and torch.equal(t, want)
        t = torch.full((5,), R + 1, dtype=dtype)
        mine = t.clone()
        dist.reduce(t, dst=P - 1)
        ok = ok and torch.equal(t, torch.full((5,), P * (P + 1) // 2, dtype=dtype) if R == P - 1 else mine)
    for dtype in (torch.int32, torch.int64):
        bits = torch.tensor([1 << R, 0b1011 ^ R, -1], dtype=dtype)
        for op, fold in ((dist.ReduceOp.BAND, lambda a, b: a & b), (dist.ReduceOp.BOR, lambda a, b: a | b),
                         (dist.ReduceOp.BXOR, lambda a, b: a ^ b)):
            t = bits.clone()
            dist.all_reduce(t, op=op)
            want = torch.tensor([1 << 0, 0b1011 ^ 0, -1], dtype=dtype)
            for r in range(1, P):
                want = fold(want, torch.tensor([1 << r, 0b1011 ^ r, -1], dtype=dtype))
            ok = ok and torch.equal(t, want)
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


@pytest.mark.filterwarnings("ignore:torch.distributed.all_gather_coalesced")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_all_gather_coalesced(dtype):
    # Rank r's list of tensors (sizes 1, 5 and 2x3) lands in output list r on every rank.
    shapes = [(1,), (5,), (2, 3)]
    mine = [make(int(np.prod(s)), dtype, "sum", R + 10 * i).reshape(s) for i, s in enumerate(shapes)]
    outs = [[torch.empty(s, dtype=dtype) for s in shapes] for _ in range(P)]
    for async_op in (False, True):
        w = dist.all_gather_coalesced(outs, mine, async_op=async_op)
        if async_op:
            w.wait()
        ok = all(torch.equal(outs[r][i], make(int(np.prod(s)), dtype, "sum", r + 10 * i).reshape(s))
                 for r in range(P) for i, s in enumerate(shapes))
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


def test_works_driven_by_callers_and_completer():
    # A synchronous call is driven by its caller; an async work nobody waits on is the
    # completer's (it polls while calls come, or sleeps and is woken): it completes alone.
    import time
    ok = True
    for k in range(200):
        t = torch.full((1024,), float(R + k))
        dist.all_reduce(t)
        ok = ok and torch.equal(t, torch.full((1024,), float(sum(r + k for r in range(P)))))
    for pause in (0.0, 0.2):  # while the completer polls, and after it has gone to sleep
        time.sleep(pause)
        t = torch.full((4099,), float(R))
        w = dist.all_reduce(t, async_op=True)
        deadline = time.monotonic() + 30
        while not w.is_completed() and time.monotonic() < deadline:
            time.sleep(0.001)
        ok = ok and w.is_completed() and torch.equal(t, torch.full((4099,), float(sum(range(P)))))
        f = w.get_future()  # made after completion: completed at once
        ok = ok and f.done() and torch.equal(f.value()[0], t)
    # Async works waited on out of order, with synchronous calls between.
    ts = [torch.full((3001,), float(R * k)) for k in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in ts[:2]]
    mid = torch.ones(5)
    dist.all_reduce(mid)
    works += [dist.all_reduce(t, async_op=True) for t in ts[2:]]
    for w in reversed(works):
        w.wait()
    ok = ok and torch.equal(mid, torch.full((5,), float(P)))
    ok = ok and all(torch.equal(t, torch.full((3001,), float(k * sum(range(P))))) for k, t in enumerate(ts))
    assert agree(ok)


def test_works_on_several_groups_completed_in_any_order():
    # Works in flight on four groups at once (the default one and three of all ranks), started
    # in one order everywhere, among them some that run on MPI (all_to_all_single), and waited
    # for in an order of each rank's own, some by polling is_completed: every result exact.
    import random
    groups = [None] + [dist.new_group(backend="toroid") for _ in range(3)]
    shared = random.Random(7)
    mine = random.Random(100 + R)
    works, checks = [], []
    for k in range(60):
        g = groups[shared.randrange(4)]
        n = shared.choice([1, 17, 4099, 40000])
        kind = shared.randrange(4)
        if kind == 0:
            t = make(n, torch.float32, "sum", R) * (k % 5 + 1)
            works.append(dist.all_reduce(t, group=g, async_op=True))
            checks.append(lambda t=t, n=n, k=k: torch.equal(t, reference(n, torch.float32, "sum") * (k % 5 + 1)))
        elif kind == 1:
            t = torch.full((n,), float(R + k)) if R == k % P else torch.zeros(n)
            works.append(dist.broadcast(t, src=k % P, group=g, async_op=True))
            checks.append(lambda t=t, n=n, k=k: torch.equal(t, torch.full((n,), float(k % P + k))))
        elif kind == 2:
            outs = [torch.zeros(n) for _ in range(P)]
            works.append(dist.all_gather(outs, torch.full((n,), float(R * 3 + k)), group=g, async_op=True))
            checks.append(lambda outs=outs, n=n, k=k: all(torch.equal(o, torch.full((n,), float(r * 3 + k))) for r, o in enumerate(outs)))
        else:
            src = torch.arange(P * 3, dtype=torch.float32) + 100 * R + k
            out = torch.zeros(P * 3)
            works.append(dist.all_to_all_single(out, src, group=g, async_op=True))
            want = torch.cat([torch.arange(R * 3, R * 3 + 3, dtype=torch.float32) + 100 * r + k for r in range(P)])
            checks.append(lambda out=out, want=want: torch.equal(out, want))
    order = list(range(len(works)))
    mine.shuffle(order)
    for i in order:
        if mine.randrange(3) == 0:
            while not works[i].is_completed():
                pass
        works[i].wait()
    ok = all(c() for c in checks)
    for g in groups[1:]:
        dist.destroy_process_group(g)
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
    ok = ok and "reduce op 5 is not supported" in message(lambda: dist.all_reduce(torch.zeros(3), op=dist.ReduceOp.BAND))
    ok = ok and "reduce op 1 on Char is not supported (through MPI" in message(
        lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int8), op=dist.ReduceOp.AVG))
    ok = ok and "the output list has 1 tensors" in message(lambda: dist.gather(torch.zeros(3), [torch.zeros(3)] if R == 0 else None)) if P > 1 else ok
    ok = ok and f"{P + 1} output lists, expected one per rank" in message(
        lambda: dist.all_gather_coalesced([[torch.zeros(3)] for _ in range(P + 1)], [torch.zeros(3)]))
    ok = ok and "output 1 of list 0 has 2 elements, input 1 has 3" in message(
        lambda: dist.all_gather_coalesced([[torch.zeros(1), torch.zeros(2)] for _ in range(P)], [torch.zeros(1), torch.zeros(3)]))
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
        # All-to-all inside a row and inside a column (expert parallelism along one axis): block
        # j of a member's input goes to group rank j, with equal blocks and with split sizes
        # (group rank i sends group rank j i + j + 1 elements).
        for g, members in ((row, [(R // cols) * cols + x for x in range(cols)]),
                           (column, [y * cols + R % cols for y in range(2)])):
            k, me = len(members), members.index(R)
            out = torch.empty(3 * k)
            dist.all_to_all_single(out, torch.tensor([100.0 * R + j for j in range(k) for _ in range(3)]), group=g)
            ok = ok and out.tolist() == [100.0 * m + me for m in members for _ in range(3)]
            sends = [me + j + 1 for j in range(k)]
            inp = torch.cat([torch.full((n,), 1000.0 * R + j) for j, n in enumerate(sends)])
            out = torch.empty(sum(i + me + 1 for i in range(k)))
            dist.all_to_all_single(out, inp, output_split_sizes=[i + me + 1 for i in range(k)],
                                   input_split_sizes=sends, group=g)
            want = torch.cat([torch.full((i + me + 1,), 1000.0 * m + me) for i, m in enumerate(members)])
            ok = ok and torch.equal(out, want)
    assert agree(ok)


def test_sub_group_topology():
    # A group that is a block of the world's torus (a row, a column, a segment of a line) gets
    # that block as its torus, wrapping only where the world wraps across the whole dimension;
    # any other group the most square grid of its size (auto). The test command runs this with
    # the world as a ring (auto on one node: P x 1), at 4 ranks as a 2x2 torus and at 8 as a 2x2x2
    # one, whose planes and lines are the groups of 3D parallelism.
    world = dist.distributed_c10d._get_default_group().topology
    assert os.environ.get("TOROID_TOPOLOGY", world) == world  # the shape the test command set
    groups = {"rest": list(range(1, P)), "ends": [0, P - 1], "first two": [0, 1]}
    if world == f"{P}x1" and P > 2:
        want = {"rest": f"{P - 1}x1:wrap=none", "first two": "2x1:wrap=none", "ends": "2x1"}
    elif world == "2x2":
        groups.update({"row 1": [2, 3], "column 1": [1, 3]})
        want = {"rest": "3x1", "ends": "2x1", "first two": "2x1", "row 1": "2x1", "column 1": "2x1"}
    elif world == "2x2x2":
        groups.update({"plane z=1": [4, 5, 6, 7], "plane x=0": [0, 2, 4, 6], "line along z": [1, 5],
                       "line along y": [4, 6]})
        want = {"plane z=1": "2x2", "plane x=0": "2x2", "line along z": "2x1", "line along y": "2x1",
                "first two": "2x1", "ends": "2x1", "rest": "7x1"}
    else:
        want = {}
    got = {}
    for name, members in groups.items():
        g = dist.new_group(members, backend="toroid") if P > 1 else None
        if g is not None and R in members:
            got[name] = g.topology
            t = torch.ones(7)
            dist.all_reduce(t, group=g)  # the group runs on that torus
            got[name + " sum"] = float(t[0])
    ok = all(got[k] == v for k, v in want.items() if k in got)
    ok = ok and all(got[k + " sum"] == len(groups[k]) for k in groups if k in got)
    ok = ok and (P < 3 or world != f"{P}x1" or R not in groups["rest"] or "rest" in got)
    assert agree(ok), (world, got)


def test_reduce_gather_scatter_all_to_all_send_recv():
    ok = True
    for root in {0, P - 1}:
        for dtype in (torch.float32, torch.bfloat16, torch.int64):
            t = torch.full((1001,), R + 1, dtype=dtype)
            mine = t.clone()
            dist.reduce(t, dst=root)
            want = torch.full((1001,), P * (P + 1) // 2, dtype=dtype)
            ok = ok and (torch.equal(t, want) if R == root else torch.equal(t, mine))
        m = torch.full((7,), float(R))
        dist.reduce(m, dst=root, op=dist.ReduceOp.MAX)
        ok = ok and (R != root or torch.equal(m, torch.full((7,), float(P - 1))))
        # gather and scatter move bytes: any dtype, bool included
        out = [torch.zeros(3, dtype=torch.int16) for _ in range(P)] if R == root else None
        dist.gather(torch.full((3,), R, dtype=torch.int16), out, dst=root)
        ok = ok and (R != root or all(torch.equal(o, torch.full((3,), r, dtype=torch.int16)) for r, o in enumerate(out)))
        got = torch.zeros(4, dtype=torch.bool)
        dist.scatter(got, [torch.full((4,), r % 2 == 1) for r in range(P)] if R == root else None, src=root)
        ok = ok and torch.equal(got, torch.full((4,), R % 2 == 1))
    # all-to-all, equal and uneven splits (rank r sends r + 1 rows to everyone)
    inp = torch.arange(P * 2, dtype=torch.float32) + 100 * R
    out = torch.zeros(P * 2)
    dist.all_to_all_single(out, inp)
    ok = ok and torch.equal(out, torch.tensor([100.0 * s + 2 * R + k for s in range(P) for k in range(2)]))
    # equal parts of toroid's dtypes run toroid's all-to-all: rows of a 2D tensor, async too
    for dtype in (torch.bfloat16, torch.int64, torch.float64):
        inp = (torch.arange(P * 3 * 5) + 1000 * R).reshape(P * 3, 5).to(dtype)
        out = torch.zeros(P * 3, 5, dtype=dtype)
        dist.all_to_all_single(out, inp, async_op=True).wait()
        want = torch.cat([(torch.arange(P * 3 * 5) + 1000 * s).reshape(P * 3, 5)[3 * R:3 * R + 3]
                          for s in range(P)]).to(dtype)
        ok = ok and torch.equal(out, want)
    inp = torch.full((P * (R + 1), 2), float(R))
    out = torch.zeros(sum(s + 1 for s in range(P)), 2)
    dist.all_to_all_single(out, inp, output_split_sizes=[s + 1 for s in range(P)], input_split_sizes=[R + 1] * P)
    ok = ok and torch.equal(out[:, 0], torch.tensor([float(s) for s in range(P) for _ in range(s + 1)]))
    # skewed split sizes (some peers none), rows of 3, toroid's alltoallv, async
    def rows(i, j):
        return 0 if (i + j) % 3 == 0 else (i * 5 + j) % 4 + 1
    for dtype in (torch.bfloat16, torch.int64):
        inp = torch.cat([torch.full((rows(R, j), 3), 10 * R + j) for j in range(P)]).to(dtype)
        out = torch.zeros(sum(rows(i, R) for i in range(P)), 3, dtype=dtype)
        dist.all_to_all_single(out, inp, output_split_sizes=[rows(i, R) for i in range(P)],
                               input_split_sizes=[rows(R, j) for j in range(P)], async_op=True).wait()
        want = torch.cat([torch.full((rows(i, R), 3), 10 * i + R) for i in range(P)]).to(dtype)
        ok = ok and torch.equal(out, want)
    outs = [torch.zeros(r + 1) for r in range(P)]
    dist.all_to_all(outs, [torch.full((R + 1,), float(10 * R + s)) for s in range(P)])
    ok = ok and all(torch.equal(o, torch.full((r + 1,), float(10 * r + R))) for r, o in enumerate(outs))
    # a ring exchange with isend/irecv in both orders, large enough for a rendezvous
    n = 1 << 18
    to, fro = (R + 1) % P, (R - 1) % P
    got = torch.zeros(n)
    if R % 2 == 0:
        works = [dist.isend(torch.full((n,), float(R)), dst=to), dist.irecv(got, src=fro)]
    else:
        works = [dist.irecv(got, src=fro), dist.isend(torch.full((n,), float(R)), dst=to)]
    for w in works:
        w.wait()
    ok = ok and torch.equal(got, torch.full((n,), float(fro)))
    # from any source: who sent it
    if P > 1:
        if R == 0:
            senders = set()
            for _ in range(P - 1):
                t = torch.zeros(1)
                w = dist.irecv(t, tag=5)
                w.wait()
                senders.add(w._source_rank() if hasattr(w, "_source_rank") else int(t.item()))
                ok = ok and int(t.item()) in range(1, P)
            ok = ok and senders == set(range(1, P))
        else:
            dist.send(torch.full((1,), float(R)), dst=0, tag=5)
    # gather_object and reduce as programs write them
    objs = [None] * P if R == 0 else None
    dist.gather_object({"rank": R, "loss": 0.5 * R}, objs, dst=0)
    ok = ok and (R != 0 or [o["rank"] for o in objs] == list(range(P)))
    assert agree(ok)
