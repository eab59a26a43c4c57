#!/usr/bin/env bash
# toroid on an emulated 3D torus of hosts (scripts/cluster.sh up torus 2x2x2): every host has a
# link to its neighbour along x, y and z and forwards the rest in dimension order. The
# communicator is told the same shape (--topology 2x2x2); the torus algorithms, their
# every-dimension-busy parts and auto run every collective across the hosts, checked against
# the stock result. The cluster is taken down however the test ends.
#   torus3d_test.sh BUILD_DIR
set -euo pipefail
. "$(dirname "$0")/common.sh"
cluster_test_setup "$1" cluster-3d

"$cluster" up torus 2x2x2
[ "$(cat "$TOROID_CLUSTER_DIR/hosts")" = 8 ] || fail "2x2x2 should have 8 hosts"
# Every host has exactly its three neighbours' links (a dimension of 2: one link each).
for h in 0 5; do
  links=$("$cluster" exec "h$h" -- ip -br link | awk '$1 ~ /^[xyz][pm]@/ {print substr($1, 1, 2)}' | sort | tr '\n' ' ')
  [ "$(echo "$links" | wc -w)" = 3 ] || fail "h$h has links '$links', expected one along each of x, y, z"
done

start=$SECONDS
timeout 300 "$cluster" run -x TOROID_TIMEOUT=60 -- \
  "$build/benchmarks/toroid-bench" --topology 2x2x2 --algo torus2d,torus2d_both,auto --op all --check 1 \
  -b 4 -e 1M -f 16 -n 2 -w 1 >"$log/bench" 2>&1 || { tail -40 "$log/bench" >&2; fail "bench: exit non-zero"; }
grep -Eq "topology 2x2x2( |$)" "$log/bench" || fail "bench: header does not name the 2x2x2 shape: $(head -3 "$log/bench")"
awk '$1 ~ /^(allreduce|reduce_scatter|allgather|broadcast)$/ { rows++; if ($10 != 0) bad++ }
     END { exit !(rows >= 30 && bad == 0) }' "$log/bench" ||
  fail "bench: wrong elements or too few rows: $(grep -cE '^ *(all|reduce|broad)' "$log/bench") rows"
echo "ok   bench on 2x2x2 hosts: $(grep -cE '^ *(allreduce|reduce_scatter|allgather|broadcast) ' "$log/bench") rows, 0 wrong ($((SECONDS - start)) s)"
