"""Bad inputs are toroid exceptions with toroid's message; with argument checking on, a bad
input on one rank raises on every rank (no rank is left in a collective)."""
import numpy as np
import pytest
from mpi4py import MPI

import toroid
from conftest import agree

world = MPI.COMM_WORLD
P, R = world.size, world.rank


def raises(f, kind, text):
    """Whether f() raises `kind` with `text` in its message, on this rank."""
    try:
        f()
    except kind as e:
        if text not in str(e):
            print(f"rank {R}: message was: {e}")
        return text in str(e)
    return False


def test_exception_kinds():
    assert issubclass(toroid.InvalidArgument, toroid.Error) and issubclass(toroid.Error, RuntimeError)
    assert issubclass(toroid.TopologyError, toroid.Error) and issubclass(toroid.MpiError, toroid.Error)


def test_bad_arrays(comm):
    x = np.zeros(10, dtype=np.float32)
    ro = np.zeros(10, dtype=np.float32)
    ro.setflags(write=False)
    ok = raises(lambda: comm.allreduce(x[::2]), toroid.InvalidArgument, "allreduce: x is not contiguous")
    ok &= raises(lambda: comm.allreduce(ro), toroid.InvalidArgument, "allreduce: x is read-only and the result is written into it")
    ok &= comm.allreduce(ro, out=np.zeros(10, dtype=np.float32)) is not None  # read-only input, separate output: fine
    ok &= raises(lambda: comm.allreduce(np.zeros(4, dtype=np.uint8)), toroid.InvalidArgument, "has element format 'B'")
    ok &= raises(lambda: comm.allreduce(x, out=np.zeros(10)), toroid.InvalidArgument, "x is float32 and out is float64")
    ok &= raises(lambda: comm.allreduce([1.0, 2.0]), toroid.InvalidArgument, "x is a list, which has neither the buffer protocol nor __dlpack__")
    ok &= raises(lambda: comm.allreduce(x, op="mean"), toroid.InvalidArgument, "mean")
    ok &= raises(lambda: comm.allreduce(x, algorithm="butterfly"), toroid.InvalidArgument, "butterfly")
    ok &= raises(lambda: comm.allreduce(x, out=np.zeros(5, dtype=np.float32)), toroid.InvalidArgument, "out")
    ok &= raises(lambda: comm.broadcast(x, root=P), toroid.InvalidArgument, "root")
    ok &= raises(lambda: comm.allreduce_axis(x, "q"), toroid.InvalidArgument, "axis 'q': axes 'q': 'q' is not an axis")
    ok &= raises(lambda: comm.allreduce_axis(x, ("x", 0)), toroid.InvalidArgument, "'x' appears twice")
    ok &= raises(lambda: comm.allreduce(np.zeros((4, 4), dtype=np.float32).T), toroid.InvalidArgument, "not contiguous")
    assert agree(ok)
    # 2-D contiguous arrays are fine: every element takes part.
    y = np.ones((3, 5), dtype=np.float64)
    comm.allreduce(y)
    assert agree(np.array_equal(y, np.full((3, 5), float(P))))


def test_bad_communicator():
    ok = raises(lambda: toroid.Communicator(topology="7x3"), toroid.TopologyError, "7x3")
    ok &= raises(lambda: toroid.Communicator(comm="world"), toroid.InvalidArgument, "comm is a str")
    ok &= raises(lambda: toroid.Communicator(transport="carrier-pigeon"), toroid.InvalidArgument, "carrier-pigeon")
    ok &= raises(lambda: toroid.Communicator(slot_stores="fast"), toroid.InvalidArgument,
                 "unknown slot stores 'fast'")
    assert agree(ok)


@pytest.mark.skipif(P < 2, reason="needs two ranks to have one differ")
def test_one_bad_rank_raises_everywhere(checked):
    """With check=True the argument conversion is agreed: rank 1's bad array raises on every rank."""
    x = np.zeros(10, dtype=np.float32)
    bad = x[::2] if R == 1 else x
    # Rank 1 gets its own message; the others the same one, prefixed with "rank 1: ".
    ok = raises(lambda: checked.allreduce(bad), toroid.InvalidArgument,
                "allreduce: x is not contiguous" if R == 1 else "rank 1: allreduce: x is not contiguous")
    # Counts that differ between ranks: the C++ check names them.
    n = 10 if R != 1 else 11
    ok &= raises(lambda: checked.allreduce(np.zeros(n, dtype=np.float32)), toroid.InvalidArgument, "differs between ranks")
    # And the communicator still works.
    y = np.ones(3, dtype=np.float32)
    checked.allreduce(y)
    assert agree(ok and np.array_equal(y, np.full(3, float(P), dtype=np.float32)))


def test_optimizer_errors(comm):
    w = np.zeros(10, dtype=np.float32)
    g = np.zeros(10, dtype=np.float32)
    ok = raises(lambda: toroid.NumpyShardedOptimizer(comm, [("w", w, g)], kind="rmsprop"), toroid.InvalidArgument, "unknown optimizer 'rmsprop'")
    ok &= raises(lambda: toroid.NumpyShardedOptimizer(comm, [("w", w, g)], learning_rat=0.1), toroid.InvalidArgument, "unknown setting 'learning_rat'")
    ok &= raises(lambda: toroid.NumpyShardedOptimizer(comm, [("w", w.astype(np.float64), g)]), toroid.InvalidArgument, "weights are float64, expected float32")
    ok &= raises(lambda: toroid.NumpyShardedOptimizer(comm, [("w", w, g[:9])]), toroid.InvalidArgument, "has 10 weights but 9 gradients")
    ok &= raises(lambda: toroid.NumpyShardedOptimizer(comm, [("w", w)]), toroid.InvalidArgument, "parameter 0 has 2 fields, expected 3")
    ok &= raises(lambda: toroid.NumpyShardedOptimizer(comm, [("w", w, g)], learning_rate="fast"), toroid.InvalidArgument, "wrong type")
    opt = toroid.NumpyShardedOptimizer(comm, [("w", w, g), ("b", np.zeros(3, np.float32), np.zeros(3, np.float32))])
    if R == P - 1:
        opt.ready("w")
    ok &= raises(opt.step, toroid.InvalidArgument, "never marked ready")
    ok &= opt.step()["step"] == 1
    red = toroid.GradientReducer(comm, [("g", g)])
    red.ready("nope")
    ok &= raises(red.finish, toroid.InvalidArgument, "ready(\"nope\")")
    assert agree(ok)
