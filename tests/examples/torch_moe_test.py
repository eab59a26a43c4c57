#!/usr/bin/env python3
"""examples/torch_moe.py end to end: expert parallelism on the "toroid" backend (the dispatch and
combine all-to-alls with split sizes, toroid's alltoallv) gives the same losses as one process
holding every expert and as gloo (1e-5 relative, every step), at 2 and 4 ranks; the loss falls and
the load-balancing loss drops fewer tokens; the step split is printed; bad options are errors.

usage: torch_moe_test.py MPIEXEC PYTHON TORCH_MOE
"""
import re
import subprocess
import sys

import example_run
from example_run import check, losses

mpiexec, python, script = sys.argv[1:4]


def run(np, *args, expect_rc=0):
    return example_run.run(mpiexec, np, [python, script, *args], expect_rc)


def close(a, b, rel=1e-5):
    return len(a) > 0 and sorted(a) == sorted(b) and all(abs(a[s] - b[s]) <= rel * abs(b[s]) for s in a)


def dropped(out):
    return {int(s): int(d) for s, d in re.findall(r"^step (\d+) dropped (\d+)$", out, re.M)}


steps = ["--steps", "20"]
one = subprocess.run([python, script, *steps], capture_output=True, text=True, timeout=600)
check(one.returncode == 0, f"one process runs ({one.stderr[-300:]})")
l1 = losses(one.stdout)
t2_out = run(2, *steps)
t2, g2 = losses(t2_out), losses(run(2, *steps, "--backend", "gloo"))
t4_out = run(4, *steps)
t4 = losses(t4_out)
check(len(l1) == 20 and close(t2, l1) and close(t4, l1),
      "2 and 4 ranks on toroid: the losses of one process holding every expert (1e-5 relative)")
check(close(t2, g2), "2 ranks: toroid's losses are gloo's (1e-5 relative)")
check(t4[20] < 0.9 * t4[1], f"the loss falls ({t4[1]:.4f} -> {t4[20]:.4f})")
d4 = dropped(t4_out)
check(d4[20] < d4[1], f"the load-balancing loss drops fewer tokens ({d4[1]} -> {d4[20]})")
check("8 experts (2 a rank)" in t4_out and re.search(r"dispatch [0-9.]+ ms, experts [0-9.]+ ms, combine", t4_out),
      "prints the layout and the step split")
check("--experts 6 is not a positive multiple of the 4 ranks" in run(4, "--experts", "6", "--steps", "1", expect_rc=2),
      "experts that do not split over the ranks are an error")
example_run.finish()
