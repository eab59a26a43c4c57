#!/usr/bin/env python3
"""Checkpoints that survive a crash, end to end (needs root: a private mount namespace).

1. examples/train_mlp saves a checkpoint; the next run resumes from it and is SIGKILLed on rank
   0 in the middle of its own save (TOROID_TEST_KILL_SAVE_AFTER, a test hook: rank 0 kills
   itself after writing that many bytes). The job ends well within the watchdog bound, the
   previous checkpoint is byte-identical, and a run resumed from it prints the losses of an
   uninterrupted run; its save replaces the stale temporary.
2. On a 256 KiB tmpfs the optimizer tests' [.checkpoint_full] case at 1-4 ranks: a save that
   runs out of room is an error on every rank and the previous file still loads.

usage: checkpoint_crash_test.py MPIEXEC TRAIN_MLP OPTIMIZER_TESTS WORK_DIR
"""
import hashlib
import os
import subprocess
import sys
import time

if os.environ.get("TOROID_CRASH_TEST_NAMESPACE") != "1":
    os.environ["TOROID_CRASH_TEST_NAMESPACE"] = "1"
    os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable, *sys.argv])

mpiexec, train_mlp, optimizer_tests, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
failures = []
TIMEOUT = 120  # the watchdog bound the tests run under (TOROID_TIMEOUT)


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(np, command, env=None, expect_ok=True):
    extra = env or {}
    forward = [a for k in extra for a in ("-x", k)]
    cmd = [mpiexec, "-np", str(np), "--oversubscribe", *forward, *command]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=2 * TIMEOUT, env={**os.environ, **extra})
    elapsed = time.monotonic() - start
    out = p.stdout + p.stderr
    if expect_ok and p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{out}")
    return p.returncode, out, elapsed


def losses(out):
    return {int(l.split()[1]): l.split()[3] for l in out.splitlines() if l.startswith("step ")}


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# 1. Killed in the middle of a save.
model = [train_mlp, "--hidden", "512", "--layers", "3"]
ckpt = os.path.join(work, "crash.ckpt")
for stale in (ckpt, ckpt + ".saving"):
    if os.path.exists(stale):
        os.remove(stale)
_, straight, _ = run(2, [*model, "--steps", "10"])
run(2, [*model, "--steps", "5", "--checkpoint", ckpt])
before, size = digest(ckpt), os.path.getsize(ckpt)
rc, out, elapsed = run(2, [*model, "--steps", "5", "--resume", ckpt, "--checkpoint", ckpt],
                       env={"TOROID_TEST_KILL_SAVE_AFTER": str(size // 4)}, expect_ok=False)
check(rc != 0 and "signal 9" in out, f"rank 0 killed in the middle of its save (exit {rc})")
check(elapsed < TIMEOUT, f"the job ended in {elapsed:.1f} s, within the {TIMEOUT} s watchdog bound")
check(os.path.exists(ckpt + ".saving"), "the killed save left its temporary beside the checkpoint")
check(digest(ckpt) == before, "the previous checkpoint is byte-identical")
_, resumed, _ = run(2, [*model, "--steps", "5", "--resume", ckpt, "--checkpoint", ckpt])
want = {k: v for k, v in losses(straight).items() if k > 5}
check(len(want) == 5 and losses(resumed) == want,
      "resumed from it, steps 6-10 print the losses of the uninterrupted run, digit for digit")
check(not os.path.exists(ckpt + ".saving") and digest(ckpt) != before,
      "the next save replaced the stale temporary and the checkpoint")

# 2. A full file system.
full = os.path.join(work, "full")
os.makedirs(full, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", full], check=True)
for np in (1, 2, 3, 4):
    rc, out, _ = run(np, [optimizer_tests, "[.checkpoint_full]"], env={"TOROID_TEST_FULL_DIR": full},
                     expect_ok=False)
    check(rc == 0 and "All tests passed" in out,
          f"{np} ranks: out of room is an error on every rank, the previous file loads" +
          ("" if rc == 0 else "\n" + out[-3000:]))
subprocess.run(["umount", full], check=True)
sys.exit(1 if failures else 0)
