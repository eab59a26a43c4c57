#!/usr/bin/env python3
"""examples/train_numpy.py end to end: the same loss curve at 1 and 4 ranks (the global batch is
the same; only the order of additions differs), the loss falls, bad options are errors.

usage: train_numpy_test.py MPIEXEC PYTHON TRAIN_NUMPY
"""
import sys

import example_run
from example_run import check, losses

mpiexec, python, script = sys.argv[1:4]


def run(np, *args, expect_rc=0):
    return example_run.run(mpiexec, np, [python, script, *args], expect_rc, timeout=300)


for opt in ("adam", "sgd"):
    one = losses(run(1, "--steps", "20", "--optimizer", opt, "--lr", "0.01" if opt == "adam" else "0.1"))
    four = losses(run(4, "--steps", "20", "--optimizer", opt, "--lr", "0.01" if opt == "adam" else "0.1"))
    check(len(one) == 20 and one.keys() == four.keys() and all(abs(one[k] - four[k]) <= 1e-5 * one[k] for k in one),
          f"{opt}: the same losses at 1 and 4 ranks (1e-5 relative)")
    check(one[20] < 0.8 * one[1], f"{opt}: the loss falls ({one[1]:.4f} -> {one[20]:.4f})")
check("unknown optimizer 'rmsprop'" in run(2, "--optimizer", "rmsprop", expect_rc=2), "bad --optimizer value")
check("--steps must be positive" in run(1, "--steps", "0", expect_rc=2), "bad --steps value")
example_run.finish()
