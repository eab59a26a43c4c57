#!/usr/bin/env bash
# Long soak: a seeded random mix of collectives, each checked against stock MPI, at 4 ranks
# (and more with NP=...). scripts/soak.sh [iterations]   (default 20000)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
build=${TOROID_BUILD_DIR:-$root/build}
export TOROID_SOAK_ITERS=${1:-20000} TOROID_TIMEOUT=${TOROID_TIMEOUT:-120}
for np in ${NP:-4}; do
  echo "soak: $TOROID_SOAK_ITERS collectives at $np ranks"
  "$root/scripts/mpirun.sh" -np "$np" "$build/tests/toroid_mpi_tests" "soak*"
done
