# stress.c -skip / -skip-later at 3 ranks under the preload: rank 1 never starts a served
# MPI_Iallreduce that ranks 0 and 2 wait for in MPI_Wait, as the first call on its communicator
# (the others wait in building toroid's state there) or a later one (they wait in the collective).
# With TOROID_TIMEOUT=2 the job must end (non-zero) within seconds, the watchdog naming what
# waited, on which communicator, and (a later call) the rank that never came.
# Inputs: MPIEXEC, PRELOAD, PROGRAM
include(${CMAKE_CURRENT_LIST_DIR}/launch.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/../expect_watchdog.cmake)
preload_launch(launch 3 LD_PRELOAD=${PRELOAD} TOROID_MIN_BYTES=0 TOROID_TIMEOUT=2)

function(skip_case mode)
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${launch} ${PROGRAM} ${mode} 1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 100)
  string(TIMESTAMP stop "%s")
  math(EXPR took "${stop} - ${start}")
  expect_watchdog(${mode} "${rc}" ${took} "${out}" "${err}" ${ARGN})
  message(STATUS "${mode}: ended after ${took} s:\n${err}")
endfunction()

skip_case(-skip "building toroid's communicator \\(MPI_Comm_idup\\) made no progress for 2 s \\(TOROID_TIMEOUT\\) on stress communicator")
skip_case(-skip-later "non-blocking allreduce \\([a-z_]+\\) made no progress for 2 s"
                      "on stress communicator \\(world rank [02]\\)" "waiting: .*rank 1")
