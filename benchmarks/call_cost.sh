#!/usr/bin/env bash
# Instructions per call of an 8-byte f32 sum all-reduce at one rank, toroid's against
# MPI_Allreduce's (callgrind; see benchmarks/call_cost.cpp), toroid's twice: a loop reusing its
# buffers, and every call on buffers other than the last's. The counts are stable run to run.
#   benchmarks/call_cost.sh [ALGO [BYTES [CALLS]]]     e.g. benchmarks/call_cost.sh recursive_doubling 8
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TOROID_BUILD_DIR:-$root/build}
algo=${1:-auto} bytes=${2:-8} calls=${3:-2000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for side in toroid toroid-new stock; do
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    valgrind -q --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/$side" \
    "$build/benchmarks/toroid-call-cost" "$side" "$algo" "$bytes" "$calls" 2>"$out/$side.err" ||
    { grep -v -e hwloc -e 'May be reenabled' -e 'reloading them' "$out/$side.err" >&2; exit 1; }
  case $side in
    toroid) name="toroid $algo" ;;
    toroid-new) name="toroid $algo, new buffers" ;;
    *) name="MPI_Allreduce" ;;
  esac
  awk -v n="$calls" -v name="$name" -v b="$bytes" \
    '/^summary:/ { printf "%-40s %6d instructions per call (%d B, %d calls, one rank)\n", name, $2 / n, b, n }' \
    "$out/$side".1
done
