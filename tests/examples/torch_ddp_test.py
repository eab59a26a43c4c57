#!/usr/bin/env python3
"""examples/torch_ddp.py end to end on the "toroid" backend: the losses match gloo's at 4 ranks
within 1e-4 relative over the first 20 steps, and toroid's own at 1, 2 and 4 ranks over the
first 10 (after that the addition order's rounding grows as training amplifies it: about
6e-3 by step 40), the loss
falls, a checkpoint written at 2 ranks resumes at 4 on the same curve, bad options are errors.

usage: torch_ddp_test.py MPIEXEC PYTHON TORCH_DDP WORK_DIR
"""
import os
import sys

import example_run
from example_run import check, losses

mpiexec, python, script, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)


def run(np, *args, expect_rc=0):
    return example_run.run(mpiexec, np, [python, script, *args], expect_rc)


def close(a, b, steps, rel=1e-4):
    return all(s in a and s in b and abs(a[s] - b[s]) <= rel * abs(b[s]) for s in steps)


first20 = range(1, 21)
t4_out = run(4, "--steps", "40")
t4 = losses(t4_out)
check("exposed communication" in t4_out and "toroid, 2193226 parameters, 4 ranks" in t4_out, "prints the model and the step split")
check(len(t4) == 40 and t4[40] < 0.6 * t4[1], f"the loss falls at 4 ranks ({t4[1]:.4f} -> {t4[40]:.4f})")
g4 = losses(run(4, "--backend", "gloo", "--steps", "20"))
check(close(t4, g4, first20), "4 ranks: toroid's losses match gloo's (1e-4 relative, 20 steps)")
t1 = losses(run(1, "--steps", "10"))  # one process does every rank's work: 10 steps show it
# The 2-rank run is the one that writes the checkpoint: its ten steps are the 2-rank curve.
ckpt = os.path.join(work, "torch_ddp.pt")
t2 = losses(run(2, "--steps", "10", "--checkpoint", ckpt))
check(close(t1, t4, range(1, 11)) and close(t2, t4, range(1, 11)), "1, 2 and 4 ranks: the same losses")
resumed = losses(run(4, "--steps", "10", "--resume", ckpt))
check(sorted(resumed) == list(range(11, 21)) and close(resumed, t4, range(11, 21)),
      "a checkpoint from 2 ranks resumes at 4 on the same curve")
check("--batch 31 is not a multiple of the 2 ranks" in run(2, "--batch", "31", "--steps", "1", expect_rc=2),
      "a batch that does not split is an error")
example_run.finish()
