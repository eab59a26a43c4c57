# One rank skips a collective: with TOROID_TIMEOUT=2 the job must end (non-zero) within a few
# seconds of the timeout, with the watchdog's message naming the collective and the peer.
set(ENV{TOROID_TIMEOUT} 2)
string(TIMESTAMP start "%s")
execute_process(COMMAND ${MPIEXEC} -n 3 --oversubscribe ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 120)
string(TIMESTAMP stop "%s")
math(EXPR took "${stop} - ${start}")
message(STATUS "exit ${rc} after ${took} s\n${out}${err}")
if(rc EQUAL 0 OR rc MATCHES "timeout")
  message(FATAL_ERROR "the job did not end through the watchdog (exit '${rc}')")
endif()
if(NOT err MATCHES "made no progress for 2 s" OR NOT err MATCHES "allreduce \\(ring\\)" OR NOT err MATCHES "waiting: ")
  message(FATAL_ERROR "the watchdog message is missing or incomplete")
endif()
if(took GREATER 30)
  message(FATAL_ERROR "the job took ${took} s to end, timeout was 2 s")
endif()
