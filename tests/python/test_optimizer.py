"""ShardedOptimizer and GradientReducer from Python: the sharded update equals the replicated
one, ready() during a backward pass gives bitwise the same weights, the reducer averages,
checkpoints round-trip, a damaged one is refused by section and a failed save keeps the file."""
import os

import numpy as np
import pytest
from mpi4py import MPI

import toroid
from conftest import agree

world = MPI.COMM_WORLD
P, R = world.size, world.rank
SIZES = [37, 1, 250, 1001, 5]


def model():
    ws = [np.cos(0.91 * np.arange(n) + 2.1 * t).astype(np.float32) for t, n in enumerate(SIZES)]
    gs = [np.zeros(n, dtype=np.float32) for n in SIZES]
    return ws, gs


def set_grads(gs, step):
    for t, g in enumerate(gs):
        g[:] = (0.8 * np.sin(0.37 * np.arange(g.size) + 1.3 * t + 0.7 * step) + 0.1 + 0.25 * (R - (P - 1) / 2)).astype(np.float32)


def test_sharded_equals_replicated_and_overlap_is_bitwise(comm):
    settings = dict(kind="adamw", learning_rate=0.01, weight_decay=0.01, no_weight_decay=["bias"], bucket_bytes=1024,
                    first_bucket_bytes=128)
    (w1, g1), (w2, g2), (w3, g3) = model(), model(), model()
    names = [f"t{t}" for t in range(len(SIZES))]
    a = toroid.NumpyShardedOptimizer(comm, list(zip(names, w1, g1)), **settings)
    b = toroid.NumpyShardedOptimizer(comm, list(zip(names, w2, g2)), shard=False, **settings)
    c = toroid.NumpyShardedOptimizer(comm, list(zip(names, w3, g3)), **settings)
    for step in range(1, 8):
        for gs in (g1, g2, g3):
            set_grads(gs, step)
        rep = a.step()
        b.step()
        for t in reversed(range(len(SIZES))):  # the backward pass: last first
            c.ready(names[t])
            c.poll()
        c.step()
    rel = max(np.linalg.norm(x - y) / np.linalg.norm(y) for x, y in zip(w1, w2))
    ok = rel <= 1e-6 and all(np.array_equal(x, y) for x, y in zip(w1, w3))
    ok = ok and rep["step"] == 7 and a.steps_taken == 7 and a.buckets() == c.buckets()
    ok = ok and a.state_bytes == 2 * 4 * a.shard_elements
    assert agree(ok)


def test_gradient_reducer_averages(comm):
    gs = [np.full(n, float(R + 1), dtype=np.float32) for n in SIZES]
    red = toroid.GradientReducer(comm, [(f"g{t}", g) for t, g in enumerate(gs)], bucket_bytes=512, first_bucket_bytes=64)
    for t in reversed(range(len(SIZES))):
        red.ready(t)
    red.finish()
    want = np.float32(sum(range(1, P + 1))) * np.float32(1.0 / P)
    assert agree(all(np.all(g == want) for g in gs) and len(red.buckets()) > 3)


def saved_after_one_step(comm, tmp_path_factory):
    """An Adam optimizer after one step, saved to a path every rank shares; its weights then."""
    path = world.bcast(str(tmp_path_factory.mktemp("ckpt") / "opt.ckpt") if R == 0 else None)
    ws, gs = model()
    opt = toroid.NumpyShardedOptimizer(comm, [(f"t{t}", w, g) for t, (w, g) in enumerate(zip(ws, gs))], kind="adam")
    set_grads(gs, 1)
    opt.step()
    opt.save(path)
    return path, opt, ws, gs, [w.copy() for w in ws]


def test_checkpoint_roundtrip(comm, tmp_path_factory):
    path, opt, ws, gs, saved = saved_after_one_step(comm, tmp_path_factory)
    set_grads(gs, 2)
    opt.step()
    opt.load(path)
    assert agree(all(np.array_equal(w, s) for w, s in zip(ws, saved)) and opt.steps_taken == 1)


def test_checkpoint_refused_when_damaged_and_kept_when_a_save_fails(comm, tmp_path_factory):
    path, opt, ws, gs, saved = saved_after_one_step(comm, tmp_path_factory)
    good = open(path, "rb").read()
    # The last byte of the file lies in the second moment of the last tensor.
    if R == 0:
        with open(path, "r+b") as f:
            f.seek(len(good) - 1)
            f.write(bytes([good[-1] ^ 1]))
    world.Barrier()
    set_grads(gs, 2)
    opt.step()
    after = [w.copy() for w in ws]
    with pytest.raises(toroid.Error, match=f"the checksum of the second moment of 't{len(SIZES) - 1}' does not match"):
        opt.load(path)
    assert agree(all(np.array_equal(w, a) for w, a in zip(ws, after)) and opt.steps_taken == 2)
    # A save that cannot start (its temporary's place is taken by a directory) leaves the file.
    if R == 0:
        os.mkdir(path + ".saving")
    world.Barrier()
    with pytest.raises(toroid.Error, match="Is a directory"):
        opt.save(path)
    world.Barrier()
    assert agree(open(path, "rb").read()[:-1] == good[:-1])
    if R == 0:
        os.rmdir(path + ".saving")
        with open(path, "wb") as f:
            f.write(good)
    world.Barrier()
    opt.load(path)
    assert agree(all(np.array_equal(w, s) for w, s in zip(ws, saved)) and opt.steps_taken == 1)
