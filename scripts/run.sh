#!/usr/bin/env bash
# The main job: set up and build, then compare toroid's all-reduce with MPI_Allreduce on a
# 2x2 torus (4 ranks) at a few sizes.
#   scripts/run.sh [toroid-bench options...]   (defaults below; see toroid-bench --help)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
build=${TOROID_BUILD_DIR:-$root/build}
args=("$@")
((${#args[@]})) || args=(--op allreduce --algo ring --topology 2x2 -b 4K -e 64M -f 16 -n 10 -w 2)
"$root/scripts/mpirun.sh" -np 4 "$build/benchmarks/toroid-bench" "${args[@]}"
