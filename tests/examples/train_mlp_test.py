#!/usr/bin/env python3
"""examples/train_mlp end to end: sharded and replicated runs print the same losses, the loss
falls for every optimizer, bf16 gradients stay close, a checkpoint written at 2 ranks resumes at
3 ranks on the same curve, the summation overlapped with the backward pass prints bitwise the
losses of the one after it (several layers, many buckets), and bad options are errors.

usage: train_mlp_test.py MPIEXEC TRAIN_MLP WORK_DIR
"""
import os
import re
import sys

import example_run
from example_run import check, losses

mpiexec, binary, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)


def run(np, *args, expect_rc=0):
    return example_run.run(mpiexec, np, [binary, *args], expect_rc, timeout=300)


def close(a, b, rel):
    return all(k in b and abs(a[k] - b[k]) <= rel * abs(b[k]) for k in a) and a.keys() == b.keys()


for opt in ["sgd", "adam", "lamb", "lars"]:
    sharded = losses(run(3, "--optimizer", opt, "--steps", "30", "--shard", "on"))
    replicated = losses(run(3, "--optimizer", opt, "--steps", "30", "--shard", "off"))
    check(len(sharded) == 30 and close(sharded, replicated, 1e-5),
          f"{opt}: --shard on and off print the same losses (1e-5 relative)")
    check(sharded[30] < 0.85 * sharded[1], f"{opt}: loss falls ({sharded[1]:.4f} -> {sharded[30]:.4f})")

f32 = losses(run(2, "--steps", "20"))
bf16 = losses(run(2, "--steps", "20", "--bf16-grads", "on"))
check(close(bf16, f32, 0.01), "bf16 gradients: every loss within 1% of the f32 run")

ckpt = os.path.join(work, "train_mlp.ckpt")
out = run(2, "--steps", "10", "--checkpoint", ckpt)
check("time per step" in out and "optimizer state" in out, "prints the timing split and the state size")
resumed = losses(run(3, "--steps", "5", "--resume", ckpt))
straight = losses(run(3, "--steps", "15"))
check(sorted(resumed) == list(range(11, 16)) and close(resumed, {k: straight[k] for k in resumed}, 1e-5),
      "checkpoint from 2 ranks resumes at 3 ranks on the same loss curve")

deep = ["--layers", "3", "--hidden", "96", "--steps", "6", "--bucket-kb", "16", "--first-bucket-kb", "4"]
for np in (2, 3):
    for opt in ("adam", "lamb"):
        on = run(np, *deep, "--optimizer", opt, "--overlap", "on")
        off = run(np, *deep, "--optimizer", opt, "--overlap", "off")
        check(len(losses(on)) == 6 and losses(on) == losses(off),
              f"{opt} at {np} ranks, 4 layers: --overlap on and off print identical losses")
        check(re.search(r"overlap on, (\d+) buckets", on) and int(re.search(r"(\d+) buckets", on)[1]) > 3,
              f"{opt} at {np} ranks: the gradients travel in several buckets")
check("exposed communication" in on and "backward" in on, "prints the backward / exposed communication split")

check("--shard: expected on or off, got 'maybe'" in run(2, "--shard", "maybe", expect_rc=2), "bad --shard value")
check("--overlap: expected on or off, got 'yes'" in run(2, "--overlap", "yes", expect_rc=2), "bad --overlap value")
check("--layers: expected a positive integer, got '0'" in run(2, "--layers", "0", expect_rc=2), "bad --layers value")
check("unknown optimizer 'rmsprop'" in run(2, "--optimizer", "rmsprop", expect_rc=2), "bad --optimizer value")
check("cannot open '/nonexistent/x.ckpt' for reading" in run(2, "--resume", "/nonexistent/x.ckpt", expect_rc=2),
      "missing checkpoint file")
example_run.finish()
