"""Shared by the end-to-end example tests: launch under mpirun, read `step N loss X` lines,
record checks, exit with their outcome."""
import os
import re
import subprocess
import sys

failures = []


def run(mpiexec, np, command, expect_rc=0, timeout=600):
    """Runs `command` (a list) on np ranks; exits the test with the output if the code differs."""
    forward = ["-x", "PYTHONPATH"] if "PYTHONPATH" in os.environ else []
    cmd = [mpiexec, "-np", str(np), "--oversubscribe", *forward, *command]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != expect_rc:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect_rc}\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr


def losses(out):
    return {int(s): float(l) for s, l in re.findall(r"^step (\d+) loss ([0-9.eE+-]+)$", out, re.M)}


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def finish():
    sys.exit(1 if failures else 0)
