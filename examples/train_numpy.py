#!/usr/bin/python3
"""Data-parallel training from Python: a two-layer MLP classifier in numpy, its weight update
sharded across the ranks with toroid.NumpyShardedOptimizer, the gradients of each layer marked ready
as the backward pass produces them (the reduce-scatters overlap the rest of the pass).

    mpirun -np 4 /usr/bin/python3 examples/train_numpy.py --steps 30 --optimizer adam

Every rank sees the same global batches (sample k of step s is a fixed function of s and k) and
computes the gradient of its slice divided by the global batch size, so the summed gradient is
the exact mean over the global batch at any rank count: the loss curve is the same at 1 and 4
ranks, up to the order of the additions.
"""
import argparse
import sys

import numpy as np

import toroid


def batch(step, lo, hi, inputs, classes, seed):
    """Samples lo..hi-1 of global batch `step` and their labels from a fixed random teacher."""
    rng_x = [np.random.default_rng([seed, step, k]) for k in range(lo, hi)]
    x = np.stack([r.standard_normal(inputs) for r in rng_x]).astype(np.float32) if hi > lo else np.zeros((0, inputs), np.float32)
    teacher = np.random.default_rng([seed, 999]).standard_normal((inputs, classes))
    return x, np.argmax(x @ teacher, axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--inputs", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--optimizer", default="adam")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    for name in ("steps", "batch", "inputs", "hidden", "classes"):
        if getattr(a, name) <= 0:
            ap.error(f"--{name} must be positive, got {getattr(a, name)}")

    comm = toroid.Communicator()
    p, r = comm.size, comm.rank
    init = np.random.default_rng([a.seed, 0])
    w1 = (init.standard_normal((a.hidden, a.inputs)) * np.sqrt(2.0 / a.inputs)).astype(np.float32)
    b1 = np.zeros(a.hidden, np.float32)
    w2 = (init.standard_normal((a.classes, a.hidden)) * np.sqrt(1.0 / a.hidden)).astype(np.float32)
    b2 = np.zeros(a.classes, np.float32)
    grads = {name: np.zeros_like(v) for name, v in (("fc1.weight", w1), ("fc1.bias", b1), ("fc2.weight", w2), ("fc2.bias", b2))}
    params = [("fc1.weight", w1, grads["fc1.weight"]), ("fc1.bias", b1, grads["fc1.bias"]),
              ("fc2.weight", w2, grads["fc2.weight"]), ("fc2.bias", b2, grads["fc2.bias"])]
    opt = toroid.NumpyShardedOptimizer(comm, params, kind=a.optimizer, learning_rate=a.lr, weight_decay=1e-4,
                                  no_weight_decay=["bias"], average=False)
    lo, n = toroid.block_of(a.batch, p, r)
    loss_sum = np.zeros(1)
    for step in range(1, a.steps + 1):
        x, y = batch(step, lo, lo + n, a.inputs, a.classes, a.seed)
        h = np.maximum(x @ w1.T + b1, 0)
        z = h @ w2.T + b2
        z -= z.max(axis=1, keepdims=True) if n else 0
        e = np.exp(z)
        prob = e / e.sum(axis=1, keepdims=True) if n else e
        loss_sum[0] = -np.log(prob[np.arange(n), y]).sum() if n else 0.0
        d = prob
        d[np.arange(n), y] -= 1
        d /= a.batch
        # Backward, last layer first; each gradient is marked ready when it is final.
        grads["fc2.bias"][:] = d.sum(axis=0)
        opt.ready("fc2.bias")
        grads["fc2.weight"][:] = d.T @ h
        opt.ready("fc2.weight")
        dh = (d @ w2) * (h > 0)
        grads["fc1.bias"][:] = dh.sum(axis=0)
        opt.ready("fc1.bias")
        grads["fc1.weight"][:] = dh.T @ x
        opt.ready("fc1.weight")
        opt.step()
        comm.allreduce(loss_sum)
        if r == 0:
            print(f"step {step} loss {loss_sum[0] / a.batch:.9g}", flush=True)
    if r == 0:
        print(f"{a.optimizer}, {sum(v.size for _, v, _ in params)} parameters, {p} ranks, "
              f"optimizer state {opt.state_bytes} bytes/rank")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except toroid.Error as e:
        print(f"train_numpy: error: {e}", file=sys.stderr)
        sys.exit(2)
