#!/usr/bin/env bash
# Faults across hosts of the emulated cluster (2 hosts x 2 ranks): each ends the job within a
# bound, non-zero, with a message saying what happened, and leaves no process on any host.
#   fault_test.sh BUILD_DIR
set -euo pipefail
. "$(dirname "$0")/common.sh"
cluster_test_setup "$1" cluster-faults

# fault NAME TRIGGER MESSAGE ACTION -- [mpirun options] -- program args: runs the program on
# the cluster; once its output matches TRIGGER, runs ACTION (may be empty: the program faults
# itself), and requires the job to end within 56 s of that moment, non-zero, with MESSAGE (an
# extended regular expression), leaving no process on any host.
fault() {
  local name=$1 trigger=$2 message=$3 action=$4
  shift 5
  : >"$log/$name"
  (for _ in $(seq 600); do
     if grep -aEq "$trigger" "$log/$name"; then date +%s >"$log/$name.fault"; eval "$action"; break; fi
     sleep 0.1
   done) &
  local rc=0
  timeout 150 "$cluster" run --ranks-per-host 2 -x TOROID_TIMEOUT=5 "$@" >"$log/$name" 2>&1 || rc=$?
  wait
  [ -f "$log/$name.fault" ] || fail "$name: '$trigger' never appeared (exit $rc)"
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

# Faults inside toroid's collectives: the probe loops over 16 MiB ring all-reduces with nothing
# between them (a fault between collectives, in a barrier, say, is MPI's own to notice). With
# --map-by node its rank 1, the one that signals itself, is on h1.
probe=$build/tests/toroid_fault_probe
bench=$build/benchmarks/toroid-bench
"$cluster" up switch --hosts 2

# A program under this machine's /tmp, outside the shared folders, is not on the hosts (each has
# a private /tmp): run refuses before launching and names the folders it shares.
outside=$(mktemp -d)
cp "$build/benchmarks/toroid-bench" "$outside/"
rc=0
"$cluster" run -- "$outside/toroid-bench" >"$log/outside" 2>&1 || rc=$?
rm -rf "$outside"
((rc == 2)) && grep -q "is not visible on the emulated hosts.*--share" "$log/outside" ||
  fail "a program outside the shared folders: exit $rc: $(cat "$log/outside")"
echo "ok   a program outside the shared folders is refused before launch"
# The same job's command line for real hosts, as docs/hosts.md describes it.
"$cluster" command --ranks-per-host 2 -x TOROID_LOG=info -- "$build/benchmarks/toroid-bench" -b 1K |
  grep -q "on real hosts: mpirun --hostfile HOSTS -np 4 -x TOROID_LOG=info .*toroid-bench -b 1K" ||
  fail "cluster.sh command: no mpirun line for real hosts"
echo "ok   cluster.sh command prints the mpirun line for real hosts"
# A killed rank's sockets close: its TCP peers fail first ("Connection reset by peer"), or
# mpirun reports the signal, whichever comes first.
fault kill_rank "sends itself SIGKILL" "exited on signal 9|Connection reset by peer" "" -- --map-by node -- "$probe" kill 2
fault stop_rank "sends itself SIGSTOP" "made no progress for 5 s" "" -- --map-by node -- "$probe" stop 2
# Two bounds race here: toroid's watchdog (5 s without progress) and the loss of h1's daemon
# (keepalives: about 10 s idle); either may end the job first.
fault cut_link_in_toroid "first all-reduce is done" "made no progress for 5 s|lost communication with a remote daemon" \
  '"$cluster" exec h1 -- ip link set eth0 down' -- -- "$probe" none
"$cluster" exec h1 -- ip link set eth0 up
# A cut inside the stock MPI_Allreduce (and its benchmark's barriers): MPI's daemons notice.
fault cut_link_in_stock "size\(B\)" "lost communication with a remote daemon" \
  'sleep 3; "$cluster" exec h1 -- ip link set eth0 down' -- -- "$bench" --algo mpi -b 4M -e 4M -n 1000000
echo "every fault ended the job with a message and left no process"
