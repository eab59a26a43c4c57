# stress.c at NP ranks under the preload, for each seed in SEEDS (one job): many non-blocking
# collectives in flight on four communicators, completed every way, every result equal to MPI's
# blocking call, exactly the calls the rules say served. CHECK=1 adds TOROID_CHECK=1. A hang
# ends with the watchdog's message (TOROID_TIMEOUT=30), or at the outer limit.
# Inputs: MPIEXEC, PRELOAD (LD_PRELOAD's value), PROGRAM, NP, SEEDS (separated by '|'), CHECK
# (optional), EXTRA (optional: more VAR=value for the ranks, separated by '|'), ARGS (optional:
# more program arguments, separated by '|', e.g. -single)
include(${CMAKE_CURRENT_LIST_DIR}/launch.cmake)
string(REPLACE "|" ";" seeds "${SEEDS}")
string(REPLACE "|" ";" extra "${EXTRA}")
string(REPLACE "|" ";" args "${ARGS}")
set(vars LD_PRELOAD=${PRELOAD} TOROID_MIN_BYTES=0 TOROID_TIMEOUT=30 ${extra})
if(CHECK)
  list(APPEND vars TOROID_CHECK=1)
endif()
preload_launch(launch ${NP} ${vars})
execute_process(COMMAND ${launch} ${PROGRAM} ${seeds} ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit '${rc}' (a hang ends with the watchdog's 'waiting' lines, or as "
                      "'Process terminated due to timeout')\n${out}\n${err}")
endif()
foreach(seed IN LISTS seeds)
  if(NOT out MATCHES "seed ${seed}: ([0-9]+) ops, served ([0-9]+) expected ([0-9]+) wrong 0")
    message(FATAL_ERROR "seed ${seed}: results wrong or missing:\n${out}\n${err}")
  endif()
  if(CMAKE_MATCH_2 EQUAL 0 OR NOT CMAKE_MATCH_2 EQUAL CMAKE_MATCH_3)
    message(FATAL_ERROR "seed ${seed}: served ${CMAKE_MATCH_2}, the rules say ${CMAKE_MATCH_3}:\n${out}")
  endif()
endforeach()
message(STATUS "${NP} ranks, seeds ${SEEDS}${CHECK} ${ARGS}: every result exact\n${out}")
