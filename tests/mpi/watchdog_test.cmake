# One rank skips a collective: with TOROID_TIMEOUT=2 the job must end (non-zero) within a few
# seconds of the timeout, with the watchdog's message naming the collective and the peer. With
# TOROID_CHECK=1 the waiting ranks are stuck in the argument check instead, which must be watched
# the same way.
set(ENV{TOROID_TIMEOUT} 2)
include(${CMAKE_CURRENT_LIST_DIR}/../expect_watchdog.cmake)

# watchdog_case(CHECK MODE TEXT...): runs the probe (MODE: blocking or nonblocking) with
# TOROID_CHECK=CHECK; the output must match every TEXT.
function(watchdog_case check mode)
  set(ENV{TOROID_CHECK} ${check})
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${MPIEXEC} -n 3 --oversubscribe ${PROGRAM} ${mode} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 120)
  string(TIMESTAMP stop "%s")
  math(EXPR took "${stop} - ${start}")
  message(STATUS "TOROID_CHECK=${check} ${mode}: exit ${rc} after ${took} s\n${out}${err}")
  expect_watchdog("TOROID_CHECK=${check} ${mode}" "${rc}" ${took} "${out}" "${err}" ${ARGN})
endfunction()

watchdog_case(0 blocking "made no progress for 2 s" "allreduce \\(ring\\)" "waiting: ")
watchdog_case(1 blocking "argument check \\(MPI_Iallreduce\\) made no progress for 2 s" "has not entered the same call")
# A request in flight: the message names the non-blocking collective, the step and its peer.
watchdog_case(0 nonblocking "non-blocking allreduce \\(ring\\) made no progress for 2 s"
              "waiting: phase [0-9]+ (send|recv|recv_reduce).* (to|from) 1 " "non-blocking allreduce \\(ring\\), (mpi|shared memory)")
