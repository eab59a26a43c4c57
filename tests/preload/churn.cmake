# 1000 communicators created, used by every intercepted collective and freed under the
# preload: resident memory after the last must stay within a margin of memory after the 100th.
# A leaked toroid state costs its communicators, schedules and 128 KiB buffers, so 900 leaks
# would add far more than the margin; MPI's own allocator noise stays well inside it.
# Inputs: MPIEXEC, PRELOAD, PROGRAM
include(${CMAKE_CURRENT_LIST_DIR}/../bench/expect.cmake)
set(margin_kib 16384)
expect_run(0 "rss_kib_100" ${MPIEXEC} -n 2 --oversubscribe -x LD_PRELOAD=${PRELOAD} ${PROGRAM} 1000)
string(REGEX MATCH "rss_kib_100 ([0-9]+) rss_kib_last ([0-9]+) served ([0-9]+) wrong 0" got "${last_output}")
if(NOT got)
  message(FATAL_ERROR "unexpected output: ${last_output}")
endif()
set(at100 ${CMAKE_MATCH_1})
set(last ${CMAKE_MATCH_2})
set(served ${CMAKE_MATCH_3})
math(EXPR growth "${last} - ${at100}")
message(STATUS "resident memory: ${at100} KiB after 100 communicators, ${last} KiB after 1000 (+${growth} KiB); toroid served ${served} calls")
if(served LESS 3000)
  message(FATAL_ERROR "toroid served ${served} calls, not the 3000 this test is about")
endif()
if(growth GREATER margin_kib)
  message(FATAL_ERROR "resident memory grew by ${growth} KiB over 900 communicators (margin ${margin_kib} KiB)")
endif()
