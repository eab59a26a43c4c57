"""A measured and a simulated timeline of the same call hold the same steps.

Runs trace_main (one torus2d_both all-reduce on a 2x2 torus, 4 ranks, TOROID_TRACE) and
toroid-sim --trace for the same call, then checks that both files are trace JSON as Perfetto
reads it (traceEvents with complete events, every process and track named) and that every rank
has every step of its schedule in both, with the same kind, peer, tag, bytes and phase.

    trace_test.py MPIEXEC TRACE_MAIN TOROID_SIM WORK_DIR
"""
import collections
import json
import os
import subprocess
import sys

BYTES = 1 << 20


def load(path):
    with open(path) as f:
        data = json.load(f)  # the whole file must be one JSON document
    events = data["traceEvents"]
    assert isinstance(events, list) and events, f"{path}: no traceEvents"
    named_pids = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    named_tids = {(e["pid"], e["tid"]) for e in events
                  if e["ph"] == "M" and e["name"] == "thread_name"}
    steps = collections.defaultdict(list)
    calls = collections.Counter()
    for e in events:
        if e["ph"] != "X":
            continue
        assert e["dur"] >= 0 and e["ts"] >= 0, f"{path}: negative time in {e}"
        assert e["pid"] in named_pids, f"{path}: process {e['pid']} has no name"
        assert (e["pid"], e["tid"]) in named_tids, f"{path}: track {e['tid']} has no name"
        if e["cat"] == "call":
            calls[e["pid"]] += 1
        else:
            a = e["args"]
            steps[e["pid"]].append((a["step"], a["kind"], a["peer"], a["tag"], a["bytes"],
                                    a["phase"]))
    # Slices of one track never overlap (Perfetto nests or drops those that do).
    by_track = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "X" and e["cat"] == "step":
            by_track[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for track, spans in by_track.items():
        spans.sort()
        for (s0, e0), (s1, _) in zip(spans, spans[1:]):
            assert s1 >= e0 - 1e-3, f"{path}: overlapping slices on track {track}"
    return data, calls, steps


def main():
    mpiexec, probe, sim, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    measured, simulated = os.path.join(work, "measured.json"), os.path.join(work, "modeled.json")
    for f in (measured, simulated):
        if os.path.exists(f):
            os.remove(f)
    run = subprocess.run([mpiexec, "-n", "4", "--oversubscribe", probe, measured, str(BYTES)],
                         capture_output=True, text=True, timeout=240)
    print(run.stdout + run.stderr)
    assert run.returncode == 0, f"trace_main failed: {run.returncode}"
    lines = run.stdout.splitlines()
    for r in range(4):
        # Rank 0 found it; the others say whose error it is ("rank 0: ...").
        said = [l for l in lines if l.startswith(f"rank {r}: error: ")]
        assert said and ("trace (TOROID_TRACE or Options::trace): cannot write "
                         "/nonexistent-directory/trace.json") in said[0], f"rank {r}: no error"
        assert f"rank {r}: done" in run.stdout
    subprocess.run([sim, "--topology", "2x2", "--algo", "torus2d_both", "--bytes", str(BYTES),
                    "--trace", simulated], check=True, timeout=120)
    m_data, m_calls, m_steps = load(measured)
    s_data, s_calls, s_steps = load(simulated)
    assert m_data["otherData"]["source"] == "toroid, measured"
    assert s_data["otherData"]["source"] == "toroid-sim, modeled"
    assert m_data["otherData"]["dropped"] == 0
    assert sorted(m_calls) == sorted(s_calls) == [0, 1, 2, 3], (m_calls, s_calls)
    assert all(n == 1 for n in m_calls.values()), m_calls
    for r in range(4):
        mine, model = sorted(m_steps[r]), sorted(s_steps[r])
        assert mine, f"rank {r}: no steps measured"
        assert [s[0] for s in mine] == list(range(len(mine))), f"rank {r}: steps missing"
        assert mine == model, f"rank {r}: measured and simulated steps differ"
        print(f"rank {r}: {len(mine)} steps, the same in both timelines")


if __name__ == "__main__":
    main()
