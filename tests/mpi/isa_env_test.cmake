# TOROID_ISA in a real process: an unknown name, and a level the CPU lacks. This machine may well
# have AVX-512, but valgrind's virtual CPU never does (3.19 has no AVX-512), so under valgrind
# asking for avx512 is asking for a level the CPU lacks. Both must end toroid-bench with status 2
# and the message, never run with another level.
#   cmake -DBENCH=... -DVALGRIND=... -P isa_env_test.cmake
include(${CMAKE_CURRENT_LIST_DIR}/../bench/expect.cmake)
set(args -b 4K -e 4K -n 1 -w 0 --algo ring --no-baseline)
set(ENV{TOROID_ISA} avx9)
expect_run(2 "TOROID_ISA='avx9' is not a kernel level \\(valid: auto, scalar, avx2, avx512\\)" ${BENCH} ${args})
set(ENV{TOROID_ISA} avx512)
expect_run(2 "TOROID_ISA=avx512: this CPU or build cannot run that level \\(available: scalar, avx2\\)"
           ${VALGRIND} -q --error-exitcode=42 ${BENCH} ${args})
