"""Every collective x dtype x op against numpy computed from every rank's input, in place and
not, odd sizes; numpy arrays and (when torch is installed) torch tensors, bfloat16 included."""
import numpy as np
import pytest
from mpi4py import MPI

import toroid
from conftest import agree

world = MPI.COMM_WORLD
P, R = world.size, world.rank
DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64]
COUNTS = [0, 1, P + 1, 1003]


def inputs(n, dtype, op, rank):
    """Small integers (sums, products and means stay exact or nearly), different per rank."""
    i = np.arange(n)
    if op == "prod":
        return (1 + (i + rank) % 2).astype(dtype)
    return ((i * 7 + rank * 3) % 11 - 4).astype(dtype)


def reference(xs, op, dtype):
    stack = np.stack(xs).astype(np.float64)
    r = {"sum": stack.sum(0), "prod": stack.prod(0), "min": stack.min(0), "max": stack.max(0),
         "avg": stack.mean(0)}[op]
    return r.astype(dtype)


def close(got, want, op, dtype):
    if op == "avg" or dtype == np.float16:
        return np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=2e-3)
    return np.array_equal(got, want)


def ops_for(dtype):
    ops = ["sum", "prod", "min", "max"]
    return ops + ["avg"] if np.issubdtype(dtype, np.floating) else ops


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_place", [True, False])
def test_allreduce(comm, dtype, in_place):
    ok = True
    for n in COUNTS:
        for op in ops_for(dtype):
            x = inputs(n, dtype, op, R)
            want = reference(world.allgather(x), op, dtype)
            if in_place:
                got = comm.allreduce(x, op=op)
                ok = ok and got is x
            else:
                out = np.full(n, 99, dtype=dtype)
                got = comm.allreduce(x, op=op, out=out)
                ok = ok and got is out and np.array_equal(x, inputs(n, dtype, op, R))
            ok = ok and close(got, want, op, dtype)
    assert agree(ok)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_scatter(comm, dtype):
    ok = True
    for n in COUNTS:
        for op in ops_for(dtype):
            x = inputs(n, dtype, op, R)
            off, cnt = toroid.block_of(n, P, R)
            want = reference(world.allgather(x), op, dtype)[off:off + cnt]
            got = comm.reduce_scatter(x, op=op)
            ok = ok and got.dtype == dtype and got.shape == (cnt,) and close(got, want, op, dtype)
            out = np.empty(cnt, dtype=dtype)
            ok = ok and comm.reduce_scatter(x, op=op, out=out) is out and close(out, want, op, dtype)
    assert agree(ok)


@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather(comm, dtype):
    ok = True
    for n in COUNTS:
        off, cnt = toroid.block_of(n, P, R)
        full = inputs(n, dtype, "sum", 0)
        mine = full[off:off + cnt].copy()
        got = comm.allgather(mine)
        ok = ok and got.shape == (n,) and np.array_equal(got, full)
        out = np.zeros(n, dtype=dtype)
        ok = ok and comm.allgather(mine, out=out) is out and np.array_equal(out, full)
    assert agree(ok)


def test_algorithms(comm):
    """Every algorithm that implements all-reduce gives the same sums (float32, exact)."""
    ok = True
    x0 = inputs(1003, np.float32, "sum", R)
    want = reference(world.allgather(x0), "sum", np.float32)
    for algo in ["ring", "bidir_ring", "torus2d", "torus2d_both", "hierarchical", "recursive_doubling", "rabenseifner",
                 "swing", "swing_latency", "mpi", "auto"]:
        got = comm.allreduce(x0.copy(), algorithm=algo)
        ok = ok and np.array_equal(got, want)
    assert agree(ok)


def test_axis_collectives():
    """Rows and columns of a 2D torus: sums over each line through this rank."""
    dims = {4: "2x2", 6: "3x2", 8: "4x2"}.get(P, f"{P}x1")
    comm = toroid.Communicator(topology=dims)
    x_dim, y_dim = comm.dims
    cx, cy = comm.coord
    ok = comm.coord == (R % x_dim, R // x_dim)
    n = 101
    x = inputs(n, np.int64, "sum", R)
    xs = world.allgather(x)
    row = [r for r in range(P) if r // x_dim == cy]
    col = [r for r in range(P) if r % x_dim == cx]
    for axis, line in (("x", row), ("y", col)):
        want = np.sum([xs[r] for r in line], axis=0)
        ok = ok and np.array_equal(comm.allreduce_axis(x.copy(), axis), want)
        coord = cx if axis == "x" else cy
        off, cnt = toroid.block_of(n, len(line), coord)
        ok = ok and np.array_equal(comm.reduce_scatter_axis(x, axis), want[off:off + cnt])
        gathered = comm.allgather_axis(want[off:off + cnt].copy(), axis)
        ok = ok and np.array_equal(gathered, want)
    assert agree(ok)


def test_three_dimensions():
    """A 3D shape (2x1x2 at 4 ranks, 2x1x1 at 2, the ring P x 1 x 1 otherwise): one size, one
    coordinate, one wrap flag per dimension, first dimension fastest; the torus algorithms and
    both Swing all-reduces right on it, swing_latency's reduce-scatter refused with the reason."""
    shape = {4: (2, 1, 2), 2: (2, 1, 1)}.get(P, (P, 1, 1))
    comm = toroid.Communicator(topology="x".join(map(str, shape)))
    ok = comm.dims == shape and comm.topology == "x".join(map(str, shape))
    ok = ok and comm.coord == (R % shape[0], R // shape[0] % shape[1], R // (shape[0] * shape[1]))
    ok = ok and comm.wraps == (True, True, True)
    n = 1001
    x = inputs(n, np.float64, "sum", R)
    want = np.sum(world.allgather(x), axis=0)
    for algo in ["torus2d", "torus2d_both", "swing", "swing_latency", "auto"]:
        ok = ok and np.allclose(comm.allreduce(x.copy(), algorithm=algo), want)
        off, cnt = toroid.block_of(n, P, R)
        if not algo.startswith("swing"):
            ok = ok and np.allclose(comm.reduce_scatter(x, algorithm=algo), want[off:off + cnt])
            ok = ok and np.allclose(comm.allgather(want[off:off + cnt].copy(), algorithm=algo), want)
    if P > 1:
        with pytest.raises(toroid.InvalidArgument, match="2D shapes"):
            comm.reduce_scatter(x, algorithm="swing_latency")
    # Along every set of axes (rows, planes, the whole): the sums over this rank's sub-torus,
    # whose members group_along lists in block order.
    xs = world.allgather(x)
    for axis in ("x", "y", "z", "xz", ("y", "z"), (0, 1, 2)):
        members, at = comm.group_along(axis)
        ok = ok and members[at] == R and len(set(members)) == len(members)
        want = np.sum([xs[r] for r in members], axis=0)
        off, cnt = toroid.block_of(n, len(members), at)
        for algo in [None, "torus2d_both", "mpi"]:
            ok = ok and np.allclose(comm.allreduce_axis(x.copy(), axis, algorithm=algo), want)
            ok = ok and np.allclose(comm.reduce_scatter_axis(x, axis, algorithm=algo), want[off:off + cnt])
            ok = ok and np.allclose(comm.allgather_axis(want[off:off + cnt].copy(), axis, algorithm=algo), want)
    assert agree(ok)


def test_broadcast(comm):
    ok = True
    for root in range(P):
        for n in (0, 1, 5000):
            x = np.arange(n, dtype=np.float64) * (root + 1) if R == root else np.zeros(n)
            ok = ok and comm.broadcast(x, root=root) is x and np.array_equal(x, np.arange(n) * (root + 1.0))
    assert agree(ok)


def test_nonblocking(comm):
    """Several collectives in flight, completed in reverse order; wait() returns the output."""
    n = 4099
    xs = [inputs(n, np.float32, "sum", R) * (k + 1) for k in range(4)]
    wants = [reference(world.allgather(x), "sum", np.float32) for x in xs]
    reqs = [comm.iallreduce(x) for x in xs]
    rs_in = inputs(n, np.int32, "sum", R)
    off, cnt = toroid.block_of(n, P, R)
    rs = comm.ireduce_scatter(rs_in)
    bc = np.arange(10.0) if R == 0 else np.zeros(10)
    b = comm.ibroadcast(bc, root=0)
    ag = comm.iallgather(np.full(toroid.block_of(n, P, R)[1], R, dtype=np.int64))
    ok = True
    for k in reversed(range(4)):
        ok = ok and reqs[k].wait() is xs[k] and np.array_equal(xs[k], wants[k]) and not reqs[k].active
    got = rs.wait()
    ok = ok and np.array_equal(got, reference(world.allgather(rs_in), "sum", np.int32)[off:off + cnt])
    while not b.test():
        pass
    ok = ok and np.array_equal(bc, np.arange(10.0))
    want_ag = np.concatenate([np.full(toroid.block_of(n, P, r)[1], r) for r in range(P)])
    ok = ok and np.array_equal(ag.wait(), want_ag)
    # A request dropped while in flight completes first (its buffers are held until then).
    y = np.ones(1000, dtype=np.float32)
    comm.iallreduce(y)
    ok = ok and np.array_equal(y, np.full(1000, P, dtype=np.float32))
    assert agree(ok)


def test_other_buffer_objects(comm):
    import array
    a = array.array("d", [float(R)] * 7)
    comm.allreduce(a)
    m = memoryview(bytearray(np.full(3, R + 1, dtype=np.int32).tobytes())).cast("i")
    comm.allreduce(m, op="max")
    assert agree(list(a) == [float(sum(range(P)))] * 7 and list(m) == [P] * 3)


@pytest.mark.skipif(P < 2, reason="a one-rank all-reduce in place moves nothing: no time to tick in")
def test_gil_released_while_running(comm):
    """A Python thread keeps running while the main thread is inside long collectives: at least
    50 ms of them (ten switch intervals), and on until every rank has seen a tick inside one or
    10 s have passed (ranks that outnumber the cores may keep the ticking thread off a core for a
    while; a held GIL keeps it off for the whole 10 s)."""
    import threading
    import time
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.0005)
    t = threading.Thread(target=tick)
    t.start()
    x = np.ones(16 << 20, dtype=np.float32)  # 64 MiB
    during = 0  # ticks that happened inside toroid's calls (mpi4py's own calls release the GIL too)
    start = time.perf_counter()
    def more():
        elapsed = world.allreduce(time.perf_counter() - start, op=MPI.MIN)
        everyone_ticked = world.allreduce(1 if during > 0 else 0, op=MPI.MIN) == 1
        return elapsed < 0.05 or (not everyone_ticked and elapsed < 10.0)
    while more():
        before = len(ticks)
        comm.allreduce(x)
        during += len(ticks) - before
    stop.set()
    t.join()
    assert agree(during > 0)


try:
    import torch
except ImportError:  # pragma: no cover - torch is optional; the numpy tests above cover the rest
    torch = None


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16", "int32", "int64"])
def test_torch_tensors(comm, dtype):
    """CPU torch tensors through DLPack, in place, without a copy; bfloat16 summed with f32 adds."""
    t_dtype = getattr(torch, dtype)
    n = 1003
    x = torch.from_numpy(inputs(n, np.float32, "sum", R)).to(t_dtype)
    ptr = x.data_ptr()
    xs = world.allgather(x.to(torch.float64).numpy())
    want = torch.from_numpy(np.sum(xs, axis=0)).to(t_dtype)
    got = comm.allreduce(x)
    ok = got is x and x.data_ptr() == ptr and torch.equal(x, want)
    off, cnt = toroid.block_of(n, P, R)
    shard = comm.reduce_scatter(torch.from_numpy(inputs(n, np.float32, "sum", R)).to(t_dtype))
    ok = ok and isinstance(shard, torch.Tensor) and shard.dtype == t_dtype and torch.equal(shard, want[off:off + cnt])
    full = comm.allgather(shard)
    ok = ok and isinstance(full, torch.Tensor) and torch.equal(full, want)
    r = comm.iallreduce(x)
    ok = ok and r.wait() is x and torch.equal(x, want * P)
    try:
        comm.allreduce(torch.ones(3, requires_grad=True))
        ok = False
    except toroid.InvalidArgument as e:
        ok = ok and "x.__dlpack__() failed" in str(e) and "detach" in str(e)
    ok = ok and comm.allreduce(torch.ones(3, requires_grad=True).detach()).sum().item() == 3 * P
    assert agree(ok)


def test_allocate_runs_single_copy(comm):
    """Arrays from Communicator.allocate: exact sums, all three collectives, and (all ranks on one
    node, shared memory allowed) the single-copy path taken, counted by the communicator."""
    n = 100_003
    x, out = comm.allocate(n), comm.allocate((n,), "float32")
    ok = x.dtype == np.float32 and x.shape == (n,) and not x.any()  # zero filled
    before = comm.single_copy_calls
    x[:] = inputs(n, np.float32, "sum", R)
    want = reference(world.allgather(x.copy()), "sum", np.float32)
    comm.allreduce(x, out=out)
    ok = ok and np.array_equal(out, want)
    off, cnt = toroid.block_of(n, P, R)
    block = comm.allocate(cnt)
    comm.reduce_scatter(x, out=block)
    ok = ok and np.array_equal(block, want[off:off + cnt])
    comm.allgather(block, out=out)
    ok = ok and np.array_equal(out, want)
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    one_node = world.allreduce(1 if node.size == P else 0, op=MPI.MIN) == 1 and comm.nodes == 1
    node.Free()
    ok = ok and comm.single_copy_calls - before == (3 if one_node and comm.transport != "mpi" else 0)
    assert agree(ok)


@pytest.mark.parametrize("stores", ["cached", "streaming"])
def test_slot_stores_either_way_same_sums(stores):
    """Shared-memory slots written with plain or with non-temporal stores: the option is taken,
    and the sums are those of the measured default (several slots' worth, floats whose sum
    depends on the order)."""
    fixed = toroid.Communicator(slot_stores=stores)
    measured = toroid.Communicator()
    on_node = world.Split_type(MPI.COMM_TYPE_SHARED).size > 1
    assert fixed.slot_stores == (stores if on_node else "auto")
    assert measured.slot_stores in (("cached", "streaming") if on_node else ("auto",))
    x = (1.0 / (np.arange(300_007) % 977 + 1 + R)).astype(np.float32)
    a, b = x.copy(), x.copy()
    fixed.allreduce(a, algorithm="ring")
    measured.allreduce(b, algorithm="ring")
    assert agree(np.array_equal(a, b))


def test_alltoall(comm):
    """Block j of every rank's x reaches rank j, at block (sender); every algorithm, blocking and
    non-blocking, against mpi4py's Alltoall."""
    b = 37
    x = (np.arange(P * b, dtype=np.float64) + 1000.0 * R)
    want = np.empty_like(x)
    world.Alltoall(x, want)
    ok = True
    for algo in (None, "direct", "torus2d", "torus2d_both", "mpi"):
        ok = ok and np.array_equal(comm.alltoall(x, algorithm=algo), want)
        ok = ok and np.array_equal(comm.ialltoall(x, algorithm=algo).wait(), want)
    if P > 1:
        with pytest.raises(toroid.InvalidArgument, match="equal blocks"):
            comm.alltoall(np.zeros(P * b + 1))
    assert agree(ok)


def test_alltoall_axis(comm):
    """Along every axis set of the communicator's shape: against mpi4py's Alltoall on the
    group's own communicator."""
    ok = True
    for axis in ("x", "y"):
        group, at = comm.group_along(axis)
        k = len(group)
        line = world.Split(group[0], at)
        x = (np.arange(k * 3, dtype=np.float64) + 1000.0 * R)
        want = np.empty_like(x)
        line.Alltoall(x, want)
        line.Free()
        for algo in (None, "direct", "mpi"):
            ok = ok and np.array_equal(comm.alltoall_axis(x, axis, algorithm=algo), want)
    assert agree(ok)


def test_alltoallv(comm):
    """Skewed blocks (some empty) against mpi4py's Alltoallv: packed and with offsets, blocking
    and non-blocking, numpy and torch; a receive count that disagrees raises on its rank."""
    def count(i, j):
        return 0 if (i + 2 * j) % 3 == 0 else 5 * ((i * 7 + j) % 4) + 1
    send = [count(R, j) for j in range(P)]
    recv = [count(i, R) for i in range(P)]
    x = np.arange(sum(send), dtype=np.float32) + 1000.0 * R
    want = np.empty(sum(recv), dtype=np.float32)
    world.Alltoallv([x, send], [want, recv])
    ok = True
    for algo in (None, "direct", "mpi"):
        ok = ok and np.array_equal(comm.alltoallv(x, send, recv, algorithm=algo), want)
        ok = ok and np.array_equal(comm.ialltoallv(x, send, recv, algorithm=algo).wait(), want)
    # Receive blocks in reverse rank order, one element apart.
    offsets, at = [0] * P, 0
    for i in reversed(range(P)):
        offsets[i] = at
        at += recv[i] + 1
    spaced = comm.alltoallv(x, send, recv, recv_offsets=offsets)
    for i in range(P):
        start = sum(recv[:i])
        ok = ok and np.array_equal(spaced[offsets[i]:offsets[i] + recv[i]],
                                   want[start:start + recv[i]])
    try:
        import torch
        t = torch.from_numpy(x.copy())
        ok = ok and np.array_equal(comm.alltoallv(t, send, recv).numpy(), want)
    except ImportError:
        pass
    assert agree(ok)
    if P > 1:
        wrong = list(recv)
        if R == P - 1:
            wrong[0] += 1
        out = np.zeros(sum(wrong), dtype=np.float32)
        raised = ""
        try:
            comm.alltoallv(x, send, wrong, out=out)
        except toroid.InvalidArgument as e:
            raised = str(e)
        # On one node under auto every rank compares every layout and raises alike; across
        # nodes (or over MPI) the receiver alone.
        everywhere = comm.nodes == 1 and comm.transport != "mpi" and comm.algorithm == "auto"
        if everywhere:
            assert agree(f"to rank {P - 1}, whose receive count for rank 0 is" in raised)
        else:
            expect = f"whose receive count for rank 0 is {wrong[0]}" if R == P - 1 else ""
            assert agree((expect in raised) if expect else raised == "")
        with pytest.raises(toroid.InvalidArgument, match="send_counts has a negative entry"):
            comm.alltoallv(x, [-1] * P, recv)
