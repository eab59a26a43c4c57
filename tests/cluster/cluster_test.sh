#!/usr/bin/env bash
# toroid across an emulated cluster (scripts/cluster.sh): the benchmark's checked sweep, MPI
# tests, the sharded optimizer, the training example and the preload, all with ranks on several
# hosts that reach each other over TCP only. The cluster is taken down however the test ends.
#   cluster_test.sh switch HOSTS RANKS_PER_HOST BUILD_DIR
#   cluster_test.sh torus XxY 1 BUILD_DIR
set -euo pipefail
layout=$1 shape=$2 per=$3
. "$(dirname "$0")/common.sh"
cluster_test_setup "$4" cluster-test
# run NAME mpirun-args... -- program args: runs on the cluster with a time bound, output in $log/NAME
run() {
  local name=$1; shift
  local start=$SECONDS
  if ! timeout 300 "$cluster" run --ranks-per-host "$per" -x TOROID_TIMEOUT=60 "$@" >"$log/$name" 2>&1; then
    tail -40 "$log/$name" >&2
    fail "$name: exit non-zero"
  fi
  echo "ok   $name ($((SECONDS - start)) s)"
}

if [ "$layout" = switch ]; then "$cluster" up switch --hosts "$shape"; else "$cluster" up torus "$shape"; fi
hosts=$(cat "$TOROID_CLUSTER_DIR/hosts")
np=$((hosts * per))

# Every algorithm and op, checked against the stock result; the header names the real nodes.
run bench -- "$build/benchmarks/toroid-bench" --algo all --op all --check 1 -b 4 -e 256K -f 64 -n 2 -w 1
grep -q "nodes $hosts " "$log/bench" || fail "bench: header does not say nodes $hosts: $(head -2 "$log/bench")"
awk '$1 ~ /^(allreduce|reduce_scatter|allgather)$/ { rows++; if ($10 != 0) bad++ } END { exit !(rows > 50 && bad == 0) }' \
  "$log/bench" || fail "bench: wrong elements or too few rows: $(grep -c '^ *all\|^ *reduce' "$log/bench") rows"
echo "     $(awk '$1 ~ /^(allreduce|reduce_scatter|allgather)$/' "$log/bench" | wc -l) rows, 0 wrong"

# The MPI tests of axes, transports, hierarchy, placement, errors, lifetime and toroid-owned
# buffers (across hosts they run their schedules; allocate's errors reach every host). "every algorithm
# on every shape" (thousands of tiny calls: 90 s over TCP on two cores) is left to the one-node
# runs; the benchmark's checked sweep above covers every algorithm and op across the hosts. So
# are the shared-memory rings' hand-over cases (an all-gather's own block, mixed sizes back to
# back: 15 s of this test over TCP), whose rings join the two ranks of one host, as at 2 ranks
# on one node; the transports' mixed cases (a step over MPI handed to one over shared memory)
# run here.
run mpi_tests -- "$build/tests/toroid_mpi_tests" \
  "axis collectives*,transport: shared memory*,transport: every algorithm*,transport: large vectors*,transport: auto*,transport: TOROID_TRANSPORT*,lifetime*,hierarchical*,explicit topologies*,argument errors*,with checking on*,Options::nodes*,a topology error on one rank*,single-copy*"
grep -q "All tests passed" "$log/mpi_tests" || fail "mpi_tests: $(tail -5 "$log/mpi_tests")"
# Ranks dealt out over the hosts: auto must keep one dimension inside the hosts (the test
# checks it), and toroid's results stay right.
run mpi_tests_map_by_node --map-by node -- "$build/tests/toroid_mpi_tests" "explicit topologies*,axis collectives*"
grep -q "All tests passed" "$log/mpi_tests_map_by_node" || fail "mpi_tests --map-by node"
if [ "$per" -gt 1 ]; then
  grep -q "rank_order round robin" <(timeout 120 "$cluster" run --ranks-per-host "$per" --map-by node -- \
    "$build/benchmarks/toroid-bench" -b 1K -e 1K -n 1 -w 0 2>&1) || fail "bench --map-by node: rank order not round robin"
fi

# The sharded optimizer's rules, checkpoints and errors (its bf16 case, 30 s of tiny calls over
# TCP, is left to the one-node runs; a spec of exclusions alone would also run the hidden cases).
run optimizer -- "$build/tests/optimizer/toroid_optimizer_tests" '~"bf16 gradients*" ~[.]'
grep -q "All tests passed" "$log/optimizer" || fail "optimizer: $(tail -5 "$log/optimizer")"

# Sharded and replicated training print the same losses.
run train_sharded -- "$build/examples/train_mlp" --optimizer adam --steps 20 --shard on
run train_replicated -- "$build/examples/train_mlp" --optimizer adam --steps 20 --shard off
/usr/bin/python3 - "$log/train_sharded" "$log/train_replicated" <<'PY' || fail "train_mlp: sharded and replicated losses differ"
import re, sys
a, b = ({int(s): float(l) for s, l in re.findall(r"^step (\d+) loss ([0-9.eE+-]+)$", open(f).read(), re.M)} for f in sys.argv[1:])
assert len(a) == 20 and a.keys() == b.keys(), (a, b)
assert all(abs(a[k] - b[k]) <= 1e-5 * abs(b[k]) for k in a), (a, b)
assert a[20] < a[1], a
print(f"     losses agree over 20 steps ({a[1]:.4f} -> {a[20]:.4f})")
PY

# Checkpoints across hosts: written by every rank into the shared build tree and resumed on the
# same curve; a directory that is each host's own (/tmp here) is an error naming it, and no
# file is left on any host.
ck=$build/cluster_test.ckpt  # the hosts' /tmp (and $log) are their own
run train_checkpoint -- "$build/examples/train_mlp" --optimizer adam --steps 10 --checkpoint "$ck"
run train_resumed -- "$build/examples/train_mlp" --optimizer adam --steps 10 --resume "$ck"
rm -f "$ck"
/usr/bin/python3 - "$log/train_sharded" "$log/train_resumed" <<'PY' || fail "train_mlp: the resumed run left the curve"
import re, sys
a, b = ({int(s): float(l) for s, l in re.findall(r"^step (\d+) loss ([0-9.eE+-]+)$", open(f).read(), re.M)} for f in sys.argv[1:])
assert sorted(b) == list(range(11, 21)) and all(abs(a[k] - b[k]) <= 1e-5 * abs(a[k]) for k in b), (a, b)
print(f"     resumed across hosts on the same curve (step 20: {b[20]:.6f})")
PY
if timeout 120 "$cluster" run --ranks-per-host "$per" -- "$build/examples/train_mlp" --steps 2 \
     --checkpoint /tmp/node-local.ckpt >"$log/ck_local" 2>&1; then
  fail "a checkpoint into each host's own /tmp was not refused"
fi
grep -q "must be one file system that all ranks share" "$log/ck_local" ||
  fail "node-local checkpoint: no message saying so: $(tail -5 "$log/ck_local")"
for h in $(seq 0 $((hosts - 1))); do
  [ -z "$("$cluster" exec "h$h" -- sh -c 'ls /tmp/node-local.ckpt* 2>/dev/null')" ] ||
    fail "node-local checkpoint: a file was left on h$h"
done
echo "     node-local directory refused: $(grep -o 'rank [0-9]* (host [^)]*) cannot open' "$log/ck_local" | head -1)"

# The preload under plain MPI programs: the same results with and without it, and MPI_Finalize
# returning with communicators alive.
preload=$build/lib/pmpi/libtoroid_preload.so
run results_stock -x TOROID_MIN_BYTES=0 -- "$build/tests/preload/preload_results"
run results_preload -x TOROID_MIN_BYTES=0 -x LD_PRELOAD="$preload" -x TOROID_LOG=info -- "$build/tests/preload/preload_results"
# Compared: every line but the preload's own (served counts, its log line) and mpirun's
# "[host:pid] ..." diagnostics (its rsh launcher may warn that setpgid raced with the agent's
# exec, at random, in either run).
results() { grep -v -e '^served' -e '^toroid:' -e '^\[[^]]*\] ' "$1" | sort; }
diff <(results "$log/results_stock") <(results "$log/results_preload") >"$log/results_diff" ||
  fail "preload: results differ with and without the preload: $(head -5 "$log/results_diff")"
grep -q "served [1-9]" "$log/results_preload" || fail "preload: nothing served"
grep -q "toroid: MPI_COMM_WORLD ($np ranks): .* $hosts nodes" "$log/results_preload" ||
  fail "preload: log line does not give $hosts nodes: $(grep 'toroid: MPI_COMM_WORLD' "$log/results_preload")"
echo "     $(grep 'toroid: MPI_COMM_WORLD' "$log/results_preload" | cut -c1-160)..."
run finalize -x TOROID_MIN_BYTES=0 -x LD_PRELOAD="$preload" -- "$build/tests/preload/preload_finalize" some
[ "$(grep -c 'returned from MPI_Finalize' "$log/finalize")" = "$np" ] || fail "finalize: not every rank returned"
# Non-blocking collectives across hosts: the progress thread moves them over MPI (the program
# asks for MPI_THREAD_MULTIPLE); every result against MPI's, requests left to MPI_Finalize.
run nonblocking -x TOROID_MIN_BYTES=0 -x LD_PRELOAD="$preload" -- "$build/tests/preload/preload_nonblocking"
grep -q "served [1-9][0-9]* expected [1-9][0-9]* wrong 0" "$log/nonblocking" ||
  fail "nonblocking: $(grep -m1 'served\|differs' "$log/nonblocking")"
[ "$(grep -c 'late 0' "$log/nonblocking")" = "$np" ] || fail "nonblocking: requests left to MPI_Finalize not settled"
echo "     non-blocking across hosts: $(grep -o 'served [0-9]* expected [0-9]* wrong 0' "$log/nonblocking")"
# Under plain MPI_Init the progress thread may not call MPI, and steps between hosts need it:
# every non-blocking call forwarded, saying so, every result still MPI's.
run nonblocking_single -x TOROID_MIN_BYTES=0 -x TOROID_LOG=info -x LD_PRELOAD="$preload" -- \
  "$build/tests/preload/preload_nonblocking" single forwarded
grep -q "served 0 expected 0 wrong 0" "$log/nonblocking_single" ||
  fail "nonblocking under MPI_Init: $(grep -m1 'served\|differs' "$log/nonblocking_single")"
grep -q "MPI_Iallreduce: forwarded to MPI: non-blocking calls on a communicator that spans nodes need MPI_THREAD_MULTIPLE" \
  "$log/nonblocking_single" || fail "nonblocking under MPI_Init: no reason given for forwarding"
echo "     under MPI_Init across hosts: forwarded, the log says why"

"$cluster" down >/dev/null
leftover=$(ip netns list | grep -c '^toroid-' || true)
[ "$leftover" = 0 ] || fail "down left $leftover namespaces"
echo "cluster $layout $shape x $per: every check passed"
