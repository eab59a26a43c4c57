#!/usr/bin/env python3
"""CPU and wall seconds of each CTest test of a build tree, run one at a time with nothing beside
it: which tests the test command's time goes to (docs/testing.md, "Against the 20 minutes").
Each test runs as CTest would (its command, environment and working directory), its output
discarded; the CPU column is user + system time of everything it started.

usage: /usr/bin/python3 scripts/test_cpu_times.py [BUILD_DIR] [-R REGEX]
"""
import json
import os
import re
import resource
import subprocess
import sys
import time


def main(argv):
    build, pattern = "build", None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "-R" and args:
            pattern = re.compile(args.pop(0))
        elif a.startswith("-"):
            sys.exit(f"test_cpu_times.py: unknown option {a} (usage: [BUILD_DIR] [-R REGEX])")
        else:
            build = a
    listing = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                             capture_output=True, text=True)
    if listing.returncode != 0:
        sys.exit(f"test_cpu_times.py: ctest cannot list {build}: {listing.stderr.strip()}")
    total_cpu = total_wall = 0.0
    for test in json.loads(listing.stdout)["tests"]:
        if pattern and not pattern.search(test["name"]):
            continue
        env, cwd = dict(os.environ), build
        for prop in test.get("properties", []):
            if prop["name"] == "ENVIRONMENT":
                env.update(kv.split("=", 1) for kv in prop["value"])
            elif prop["name"] == "WORKING_DIRECTORY":
                cwd = prop["value"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.time()
        rc = subprocess.call(test["command"], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        wall = time.time() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        total_cpu, total_wall = total_cpu + cpu, total_wall + wall
        print(f"{cpu:7.1f} cpu {wall:7.1f} wall  rc {rc}  {test['name']}", flush=True)
    print(f"{total_cpu:7.1f} cpu {total_wall:7.1f} wall  in all")


if __name__ == "__main__":
    main(sys.argv[1:])
