#!/usr/bin/env bash
# mpirun with what this machine needs: the launcher CMake's FindMPI found, permission to run
# as root, and oversubscription when there are more ranks than cores.
#   scripts/mpirun.sh -np 4 program args...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TOROID_BUILD_DIR:-$root/build}
launcher=$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
launcher=${launcher:-mpirun}
flags=(--oversubscribe)
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
exec "$launcher" "${flags[@]}" "$@"
