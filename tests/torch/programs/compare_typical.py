#!/usr/bin/python3
"""typical.py, a torch program the backend has not been written around (row/column groups,
reduce, gather_object, all_to_all_single, broadcast_object_list, ZeroRedundancyOptimizer over
DDP), on backend "toroid" and on gloo at 2 and 4 ranks: the same results, the floating point
ones within 1e-5 relative (different addition orders).

    compare_typical.py MPIEXEC PYTHON typical.py
"""
import json
import math
import subprocess
import sys


def run(mpiexec, python, program, np, backend):
    cmd = [mpiexec, "-n", str(np), "--oversubscribe", "-x", "PYTHONPATH", python, program, "--backend", backend]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"{backend} at {np} ranks failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def close(a, b, path=""):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], f"{path}.{k}") for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
    if isinstance(a, float):
        ok = math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
    else:
        ok = a == b
    if not ok:
        print(f"differs at {path}: toroid {a}, gloo {b}")
    return ok


def main():
    mpiexec, python, program = sys.argv[1:4]
    failed = False
    for np in (2, 4):
        ours, theirs = run(mpiexec, python, program, np, "toroid"), run(mpiexec, python, program, np, "gloo")
        same = close(ours, theirs)
        falls = ours["losses"][-1] < 0.5 * ours["losses"][0]
        print(f"{np} ranks: toroid equals gloo: {same}; loss {ours['losses'][0]:.4f} -> {ours['losses'][-1]:.4f}")
        failed = failed or not same or not falls
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
