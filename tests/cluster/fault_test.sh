#!/usr/bin/env bash
# Faults across hosts of the emulated cluster (2 hosts x 2 ranks): each ends the job within a
# bound, non-zero, with a message saying what happened, and leaves no process on any host.
#   fault_test.sh BUILD_DIR
set -euo pipefail
. "$(dirname "$0")/common.sh"
cluster_test_setup "$1" cluster-faults

# fault NAME ALGO MESSAGE ACTION: starts a long all-reduce (toroid's ring, or the stock one),
# runs ACTION 3 s after the benchmark has printed its column header (its communicators are
# built, so the fault lands inside the measured collective, not in set-up, which under a loaded
# machine can take longer than a fixed delay), and requires the job to end within 56 s of the
# fault, non-zero, with MESSAGE (an extended regular expression).
fault() {
  local name=$1 algo=$2 message=$3 action=$4
  local baseline=--no-baseline
  [ "$algo" = mpi ] && baseline=
  : >"$log/$name"
  (for _ in $(seq 600); do
     if grep -q "size(B)" "$log/$name"; then sleep 3; date +%s >"$log/$name.fault"; eval "$action"; break; fi
     sleep 0.1
   done) &
  local rc=0
  timeout 150 "$cluster" run --ranks-per-host 2 -x TOROID_TIMEOUT=5 -- "$build/benchmarks/toroid-bench" \
    --algo "$algo" $baseline -b 4M -e 4M -n 1000000 >"$log/$name" 2>&1 || rc=$?
  wait
  [ -f "$log/$name.fault" ] || fail "$name: the benchmark never started its collectives"
  local took=$(($(date +%s) - $(cat "$log/$name.fault")))
  ((rc != 0 && rc != 124)) || fail "$name: exit $rc, $took s after the fault (124: still running at 150 s)"
  ((took <= 56)) || fail "$name: ended $took s after the fault"
  grep -aEq "$message" "$log/$name" || { tail -20 "$log/$name" >&2; fail "$name: no '$message' in the output"; }
  sleep 1
  for h in h0 h1; do
    local left
    left=$("$cluster" pids "$h" | wc -l)
    # One process per host is the cluster's own (the holder of its namespaces).
    ((left == 1)) || fail "$name: $((left - 1)) processes left on $h: $("$cluster" pids "$h" | xargs -r ps -o comm= -p | tr '\n' ' ')"
  done
  echo "ok   $name: exit $rc, $took s after the fault: $(grep -aE -m1 "$message" "$log/$name" | cut -c1-120)"
}

"$cluster" up switch --hosts 2
fault kill_rank ring "exited on signal 9" 'kill -9 $("$cluster" pids h1 toroid-bench | head -1)'
fault stop_rank ring "made no progress for 5 s" 'kill -STOP $("$cluster" pids h1 toroid-bench | head -1)'
# Two bounds race here: toroid's watchdog (5 s without progress) and the loss of h1's daemon
# (keepalives: about 10 s idle); either may end the job first.
fault cut_link_in_toroid ring "made no progress for 5 s|lost communication with a remote daemon" \
  '"$cluster" exec h1 -- ip link set eth0 down'
"$cluster" exec h1 -- ip link set eth0 up
fault cut_link_in_stock mpi "lost communication with a remote daemon" '"$cluster" exec h1 -- ip link set eth0 down'
echo "every fault ended the job with a message and left no process"
