#!/usr/bin/env bash
# The one-node measurements of docs/performance.md in one run, each step under a time limit of
# its own so one slow step cannot take the rest with it: the spread of fresh runs (2 and 4
# ranks), toroid against every Open MPI configuration at 4 ranks warm and cold (16 and 64 MiB,
# against the copy bound), small calls on new buffers at 2 ranks, 8 and 16 ranks against the
# stock field, and `auto` against the fastest fixed algorithm (--algo all, three runs per
# layout). Meant for a machine with a core per rank (16 cores for every step); on fewer cores
# the ranks share them and the numbers say more about the scheduler than about toroid.
#   benchmarks/node_check.sh OUTDIR [BUILD]        (BUILD holds benchmarks/toroid-bench)
#   TOROID_NODE_CHECK_QUICK=1 ...                  (tiny sizes and counts: checks the script)
#   TOROID_NODE_CHECK_STEPS="probe auto_np2 ..."   (only these steps; names as in the output)
# Each step writes OUTDIR/<step>.txt (and .csv where there are rows); the summary goes to stdout.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: node_check.sh OUTDIR [BUILD]}
build=$(cd "${2:-$root/build}" && pwd)
bench=$build/benchmarks/toroid-bench
py=${TOROID_PYTHON:-/usr/bin/python3}
mkdir -p "$out"
[ -x "$bench" ] || { echo "node_check: no toroid-bench in $build/benchmarks" >&2; exit 2; }

quick=${TOROID_NODE_CHECK_QUICK:-0}
if [ "$quick" = 1 ]; then
  big=(-b 64K -e 256K) small=(-b 16 -e 64) runs=2 iters=2 allsizes=(-b 8 -e 64K -f 64) many=(-b 64K -e 256K)
  maxnp=4 stock=default,tuned:4
else
  big=(-b 16M -e 64M) small=(-b 16 -e 4K) runs=10 iters=10 allsizes=(-b 8 -e 64M -f 4) many=(-b 64K -e 64M)
  maxnp=16 stock=default,tuned:1,tuned:2,tuned:3,tuned:4,tuned:5,tuned:6,han,adapt,sm,ucx
fi

steps=" ${TOROID_NODE_CHECK_STEPS:-} "
step() {  # step NAME SECONDS command...
  local name=$1 limit=$2 start rc
  shift 2
  [ "$steps" = "  " ] || [[ "$steps" == *" $name "* ]] || [[ "$steps" == *" ${name%_[0-9]} "* ]] || return 0
  start=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" >"$out/$name.txt" 2>&1
  rc=$?
  echo "== $name (rc $rc, $(($(date +%s) - start)) s): $*"
  grep -v '^# running' "$out/$name.txt" | tail -n 30
}

echo "node_check: $(nproc) cores, $(date -u +%FT%TZ), $bench"
lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Thread|Socket|NUMA node\(s\)|L3' | sed 's/  */ /g'
step smoke 60 "$root/scripts/mpirun.sh" -np 2 "$bench" -b 8 -e 64K -f 64 -n 2 --check 1
# How far apart the cores are: a cache line's round trip between CPU 0 and a near, a middle and
# the last CPU (no toroid, no MPI; the slow state of docs/performance.md is this number).
probe="$build/benchmarks/toroid-host-probe"
probing=()
[ -x "$probe" ] && probing=(--host-probe)
[ -x "$probe" ] && step probe 60 bash -c 'last=$(($(nproc) - 1)); for b in $(printf "%s\n" 1 $((last / 2)) $last | sort -un); do
  ((b > 0)) && echo "cpus 0,$b: $("$0" --cpus 0,$b)"; done; echo "unpinned: $("$0")"' "$probe"
step spread_np2 150 "$py" "$root/benchmarks/run_spread.py" -np 2 --runs "$runs" -n "$iters" "${big[@]}" \
  --bench "$bench" --csv "$out/spread_np2.csv" "${probing[@]}"
step spread_np4 150 "$py" "$root/benchmarks/run_spread.py" -np 4 --runs "$runs" -n "$iters" "${big[@]}" \
  --bench "$bench" --csv "$out/spread_np4.csv" "${probing[@]}"
step stock_np4_warm 120 "$py" "$root/benchmarks/compare_stock.py" -np 4 "${big[@]}" -f 4 -n "$iters" \
  --configs "$stock" --build "$build" --brief --csv "$out/stock_np4_warm.csv"
step stock_np4_cold 150 "$py" "$root/benchmarks/compare_stock.py" -np 4 --cold "${big[@]}" -f 4 -n "$iters" \
  --configs "$stock" --build "$build" --brief --csv "$out/stock_np4_cold.csv"
step small_np2_cold 90 "$py" "$root/benchmarks/compare_stock.py" -np 2 --cold "${small[@]}" -f 2 -n 200 \
  --configs "$stock" --build "$build" --brief --csv "$out/small_np2_cold.csv"
for np in 8 16; do
  ((np <= maxnp)) || np=$maxnp
  step "stock_np$np" 120 "$py" "$root/benchmarks/compare_stock.py" -np "$np" "${many[@]}" -f 8 -n "$iters" \
    --algo ring,bidir_ring,rabenseifner,torus2d,torus2d_both,swing,auto --configs default,tuned:4,tuned:6,han \
    --build "$build" --brief --csv "$out/stock_np$np.csv"
  ((np < maxnp)) || break
done
for np in 2 4; do
  files=()
  for r in 1 2 3; do
    step "auto_np${np}_$r" 120 "$root/scripts/mpirun.sh" -np "$np" "$bench" --op all --algo all "${allsizes[@]}" \
      -n "$iters" --format csv --output "$out/auto_np${np}_$r.csv"
    files+=("$out/auto_np${np}_$r.csv")
  done
  step "auto_np${np}" 30 "$py" "$root/benchmarks/auto_check.py" --median "${files[@]}"
done
echo "node_check: done $(date -u +%FT%TZ)"
