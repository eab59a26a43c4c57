#!/usr/bin/env python3
"""examples/torch_lm.py end to end: a transformer language model trained with toroid's torch
ShardedOptimizer (LAMB, bfloat16 gradient summation). The loss falls; 1, 2 and 4 ranks give the
same losses within 1e-3 relative over the first 4 steps (bf16 roundings fall differently with
the rank count: 5e-5 seen at step 8); a checkpoint written at 2 ranks resumes at 4 on the same
curve; the comparison with DDP runs; a bad batch is an error.

usage: torch_lm_test.py MPIEXEC PYTHON TORCH_LM WORK_DIR
"""
import os
import sys

import example_run
from example_run import check, losses

mpiexec, python, script, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
small = ["--batch", "8", "--context", "16"]


def run(np, *args, expect_rc=0):
    return example_run.run(mpiexec, np, [python, script, *small, *args], expect_rc)


def close(a, b, steps, rel=1e-3):
    return all(s in a and s in b and abs(a[s] - b[s]) <= rel * abs(b[s]) for s in steps)


out4 = run(4, "--steps", "8")
t4 = losses(out4)
check("sharded LAMB (bf16 gradients), 3170830 parameters, 4 ranks" in out4 and "exposed communication" in out4,
      "prints the model and the step split")
check(len(t4) == 8 and t4[8] < 0.9 * t4[1], f"the loss falls ({t4[1]:.4f} -> {t4[8]:.4f})")
t1 = losses(run(1, "--steps", "4"))  # one process does every rank's work: 4 steps show it
# The 2-rank run is the one that writes the checkpoint: its four steps are the 2-rank curve.
ckpt = os.path.join(work, "torch_lm.pt")
t2 = losses(run(2, "--steps", "4", "--checkpoint", ckpt))
check(close(t1, t4, range(1, 5)) and close(t2, t4, range(1, 5)),
      f"1, 2 and 4 ranks: the same losses (step 4: {t1[4]:.6f}, {t2[4]:.6f}, {t4[4]:.6f})")
resumed = losses(run(4, "--steps", "4", "--resume", ckpt))
check(sorted(resumed) == [5, 6, 7, 8] and close(resumed, t4, range(5, 9)),
      "a checkpoint from 2 ranks resumes at 4 on the same curve")
cmp = run(2, "--compare", "--steps", "3")
check(all(s in cmp for s in ("sharded, toroid", "DDP, toroid", "DDP, gloo", "exposed comm")),
      "--compare prints the three set-ups")
check("--batch 5 is not a multiple of the 2 ranks" in run(2, "--batch", "5", "--steps", "1", expect_rc=2),
      "a batch that does not split is an error")
example_run.finish()
