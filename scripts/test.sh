#!/usr/bin/env bash
# Every test: set up and build (Release), run the whole suite; then build everything with
# AddressSanitizer + UndefinedBehaviorSanitizer and run the suite again there.
#   scripts/test.sh            (TOROID_SKIP_SANITIZE=1 skips the sanitizer pass)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
started=$(date +%s)
trap 'echo "== test command: $(( $(date +%s) - started )) s in all =="' EXIT
"$root/scripts/setup.sh" -DTOROID_WERROR=ON
jobs=$(nproc)
echo "== tests (Release) =="
ctest --test-dir "$root/build" --output-on-failure -j"$jobs"
if [ "${TOROID_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== tests (ASan + UBSan) =="
  asan=$root/build-asan
  cmake -S "$root" -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOROID_SANITIZE=ON -DTOROID_WERROR=ON \
        -DTOROID_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$asan" -j"$jobs"
  # Open MPI keeps allocations until exit on purpose; leak checking would only report those.
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j"$jobs"
fi
