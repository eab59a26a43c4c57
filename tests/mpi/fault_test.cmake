# A rank killed (SIGKILL) or frozen (SIGSTOP) inside a long collective: the job must end with a
# non-zero status, a message, and within a bound measured from the moment of the signal.
#   kill, watchdog off:  Open MPI's mpirun sees its child die and ends the job
#   kill, watchdog on:   the same (mpirun is faster than any useful timeout)
#   stop, watchdog on:   mpirun sees nothing; the survivors' watchdog reports and aborts
# (stop without the watchdog hangs for ever: that is what TOROID_TIMEOUT is for.)
include(${CMAKE_CURRENT_LIST_DIR}/../bench/expect.cmake)

# fault_case(MODE TIMEOUT RC TEXT BOUND): runs the probe at 3 ranks and expects exit status RC,
# output matching TEXT, and the job gone within BOUND seconds of the signal.
function(fault_case mode timeout expect_rc text bound)
  if(timeout)
    set(ENV{TOROID_TIMEOUT} ${timeout})
  else()
    unset(ENV{TOROID_TIMEOUT})
  endif()
  expect_run(${expect_rc} "${text}" ${MPIEXEC} -n 3 --oversubscribe ${PROGRAM} ${mode} 1)
  string(TIMESTAMP stop "%s%f")
  if(NOT last_output MATCHES "at ([0-9]+) us")
    message(FATAL_ERROR "${mode}: the probe never sent its signal\n${last_output}")
  endif()
  math(EXPR ms "(${stop} - ${CMAKE_MATCH_1}) / 1000")
  message(STATUS "${mode}, TOROID_TIMEOUT=${timeout}: exit ${expect_rc}, ended ${ms} ms after the signal")
  if(ms GREATER ${bound}000)
    message(FATAL_ERROR "${mode}: the job took ${ms} ms to end after the signal, bound ${bound} s")
  endif()
endfunction()

fault_case(kill "" 137 "exited on signal 9" 15)
fault_case(kill 2 137 "exited on signal 9" 15)
fault_case(stop 2 3 "made no progress for 2 s" 20)
