#!/usr/bin/env bash
# A node whose /dev/shm cannot hold the shared-memory channels: the job runs in a private mount
# namespace with an 8 MiB tmpfs on /dev/shm (room for Open MPI's own segment, not for toroid's
# channels). There transport shm must be an error on every rank and auto must run over MPI with
# right sums (the hidden [.shm_room] case of the MPI tests); and toroid-bench must exit 2 naming it.
# Needs root (mount namespaces).
#   shm_room_test.sh MPIEXEC BUILD_DIR
set -euo pipefail
mpiexec=$1 build=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TOROID_TIMEOUT=60
inner() {
  mount -t tmpfs -o size=8m tmpfs /dev/shm
  echo "== /dev/shm: $(df -k /dev/shm | awk 'NR == 2 { print $2 " KiB" }')"
  "$mpiexec" -n 2 --oversubscribe "$build/tests/toroid_mpi_tests" "[.shm_room]"
  set +e
  out=$("$mpiexec" -n 2 --oversubscribe "$build/benchmarks/toroid-bench" --transport shm --algo ring \
        -b 1M -e 1M -n 1 -w 0 2>&1)
  rc=$?
  set -e
  echo "$out" | grep "toroid-bench:" || true
  [ "$rc" = 2 ] || { echo "FAIL: toroid-bench --transport shm exited $rc, expected 2:"; echo "$out"; exit 1; }
  echo "$out" | grep -q "no room in /dev/shm" || { echo "FAIL: no 'no room in /dev/shm' message:"; echo "$out"; exit 1; }
  echo "ok: shm refused, auto over MPI"
}
export -f inner
export mpiexec build
exec timeout 300 unshare --mount --propagation private bash -c inner
