# finalize.c at NP ranks, RUNS times over (modes alive, free, some in turn): every run must end,
# every rank must return from MPI_Finalize, and every result must be right. A run that has not
# ended after 60 s is a hang (the watchdog, TOROID_TIMEOUT, ends one inside toroid's
# collectives sooner; this bound catches one anywhere else, MPI_Finalize included).
# Inputs: MPIEXEC, PRELOAD, PROGRAM, NP, RUNS
set(modes alive free some)
foreach(run RANGE 1 ${RUNS})
  math(EXPR pick "${run} % 3")
  list(GET modes ${pick} mode)
  execute_process(COMMAND ${MPIEXEC} -n ${NP} --oversubscribe -x LD_PRELOAD=${PRELOAD} -x TOROID_MIN_BYTES=0
                          -x TOROID_TIMEOUT=30 ${PROGRAM} ${mode}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${run} (${mode}) at ${NP} ranks: exit '${rc}' (a hang ends as 'Process terminated due to timeout')\n${out}\n${err}")
  endif()
  string(REGEX MATCHALL "rank [0-9]+ returned from MPI_Finalize" returned "${out}")
  list(LENGTH returned n_returned)
  if(NOT n_returned EQUAL NP OR NOT out MATCHES "served ([0-9]+) wrong 0" OR CMAKE_MATCH_1 EQUAL 0)
    message(FATAL_ERROR "run ${run} (${mode}) at ${NP} ranks: ${n_returned} ranks returned from MPI_Finalize, "
                        "or results wrong, or nothing served:\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "${RUNS} runs at ${NP} ranks (alive, free, some): every rank returned from MPI_Finalize; ${out}")
