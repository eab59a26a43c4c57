# gc_mpi4py.py at NP ranks, RUNS times: the job must end (MPI_Finalize from mpi4py's exit handler
# returns on every rank) within 60 s each time.
# Inputs: MPIEXEC, PRELOAD, PYTHON, SCRIPT, NP, RUNS
foreach(run RANGE 1 ${RUNS})
  execute_process(COMMAND ${MPIEXEC} -n ${NP} --oversubscribe -x LD_PRELOAD=${PRELOAD} -x TOROID_MIN_BYTES=0
                          -x TOROID_TIMEOUT=30 ${PYTHON} ${SCRIPT}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "toroid served [1-9][0-9]* calls")
    message(FATAL_ERROR "run ${run} at ${NP} ranks: exit '${rc}' (a hang ends as 'Process terminated due to timeout')\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "${RUNS} runs at ${NP} ranks ended: ${out}")
