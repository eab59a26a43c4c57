#!/usr/bin/env bash
# Every test: set up and build (Release), run the whole suite; then build everything with
# AddressSanitizer + UndefinedBehaviorSanitizer and run the suite again there.
# Between the two, a tree against MPICH runs the MPI tests there.
#   scripts/test.sh            (TOROID_SKIP_SANITIZE=1 skips the sanitizer pass, TOROID_SKIP_MPICH=1 the MPICH one)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
started=$(date +%s)
trap 'echo "== test command: $(( $(date +%s) - started )) s in all =="' EXIT
at() { echo "($(( $(date +%s) - started )) s)"; }  # the phase headers say when each began
"$root/scripts/setup.sh" -DTOROID_WERROR=ON
jobs=$(nproc)
echo "== format (clang-format, .clang-format) == $(at)"
(cd "$root" && git ls-files '*.cpp' '*.hpp' '*.c' '*.h' | grep -v '^examples/consumer/' |
   xargs clang-format --dry-run --Werror)
echo "== tests (Release) == $(at)"
ctest --test-dir "$root/build" --output-on-failure -j"$jobs"
# The same library against Debian's MPICH 4.0: unit tests of the MPI layers, the MPI tests at
# np 1 and 2, at np 3 and 4 the cases tagged [mpich] (MPICH spins without yielding on
# oversubscribed cores).
if [ "${TOROID_SKIP_MPICH:-0}" != 1 ]; then
  echo "== tests (MPICH) == $(at)"
  mpich=$root/build-mpich
  cmake -S "$root" -B "$mpich" -DCMAKE_BUILD_TYPE=Release -DTOROID_WERROR=ON \
        -DMPI_C_COMPILER=/usr/bin/mpicc.mpich -DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich \
        -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich -DTOROID_MPIEXEC_FLAGS= \
        -DTOROID_BUILD_PYTHON=OFF -DTOROID_BUILD_EXAMPLES=OFF -DTOROID_BUILD_BENCHMARKS=OFF \
        "-DTOROID_MPI_TEST_SPEC_NP3_UP=[mpich]" \
        >/dev/null
  cmake --build "$mpich" -j"$jobs" --target toroid_unit_mpi_tests toroid_mpi_tests toroid_preload \
        preload_nonblocking
  ctest --test-dir "$mpich" --output-on-failure -j"$jobs" \
        -R '^unit_mpi_layers$|^mpi_np[1-4]$|^preload_nonblocking_(np[1-3]|single)$'
fi
if [ "${TOROID_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== tests (ASan + UBSan) == $(at)"
  asan=$root/build-asan
  # -O1 -g1 (line tables for the reports): what the sanitizers recommend, and the tree builds in
  # 40% less time than at -O2 -g on 2 cores.
  cmake -S "$root" -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOROID_SANITIZE=ON -DTOROID_WERROR=ON \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
        -DTOROID_BUILD_EXAMPLES=OFF >/dev/null
  # Only what the sanitizer tree's tests run (its ctest lists them): a test whose program is
  # missing here fails, so a new one cannot be skipped silently.
  cmake --build "$asan" -j"$jobs" --target toroid_unit_tests toroid_unit_mpi_tests toroid_mpi_tests \
        toroid_optimizer_tests toroid_watchdog_probe toroid_thread_level_probe toroid_trace_probe \
        toroid-bench toroid-overlap-bench toroid-tune toroid-sim
  # Open MPI keeps allocations until exit on purpose; leak checking would only report those.
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j"$jobs"
fi
