# One rank skips a collective: with TOROID_TIMEOUT=2 the job must end (non-zero) within a few
# seconds of the timeout, with the watchdog's message naming the collective and the peer. With
# TOROID_CHECK=1 the waiting ranks are stuck in the argument check instead, which must be watched
# the same way.
set(ENV{TOROID_TIMEOUT} 2)

# watchdog_case(CHECK TEXT...): runs the probe with TOROID_CHECK=CHECK; the output must match
# every TEXT.
function(watchdog_case check)
  set(ENV{TOROID_CHECK} ${check})
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${MPIEXEC} -n 3 --oversubscribe ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 120)
  string(TIMESTAMP stop "%s")
  math(EXPR took "${stop} - ${start}")
  message(STATUS "TOROID_CHECK=${check}: exit ${rc} after ${took} s\n${out}${err}")
  if(rc EQUAL 0 OR rc MATCHES "timeout")
    message(FATAL_ERROR "the job did not end through the watchdog (exit '${rc}')")
  endif()
  foreach(text ${ARGN})
    if(NOT err MATCHES "${text}")
      message(FATAL_ERROR "the watchdog message lacks '${text}'")
    endif()
  endforeach()
  if(took GREATER 30)
    message(FATAL_ERROR "the job took ${took} s to end, timeout was 2 s")
  endif()
endfunction()

watchdog_case(0 "made no progress for 2 s" "allreduce \\(ring\\)" "waiting: ")
watchdog_case(1 "argument check \\(MPI_Iallreduce\\) made no progress for 2 s" "has not entered the same call")
