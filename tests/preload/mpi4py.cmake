# comm.Allreduce, comm.Bcast and their non-blocking forms from mpi4py under the preload: the script checks results and which calls toroid
# served; here, that TOROID_LOG=info said so once for MPI_COMM_WORLD.
# Inputs: MPIEXEC, PRELOAD, PYTHON, SCRIPT
include(${CMAKE_CURRENT_LIST_DIR}/../bench/expect.cmake)
execute_process(COMMAND ${PYTHON} -c "import mpi4py, numpy" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "${PYTHON} lacks mpi4py or numpy (Debian: python3-mpi4py python3-numpy; "
                      "scripts/setup.sh installs them):\n${err}")
endif()
# stdout (the script) comes before stderr (the log line) in what expect_run matches.
expect_run(0 "toroid served 9.*toroid: MPI_COMM_WORLD \\(3 ranks\\): "
           ${MPIEXEC} -n 3 --oversubscribe -x LD_PRELOAD=${PRELOAD} -x TOROID_LOG=info ${PYTHON} ${SCRIPT})
message(STATUS "${last_output}")
