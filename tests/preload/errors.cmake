# Bad settings under the preload: the error comes back through the MPI error handler with
# toroid's message, and with the default handler the job ends cleanly (no crash).
# Inputs: MPIEXEC, PRELOAD, PROGRAM
include(${CMAKE_CURRENT_LIST_DIR}/../bench/expect.cmake)
set(launch ${MPIEXEC} -n 2 --oversubscribe -x LD_PRELOAD=${PRELOAD})

# handled(SETTING CLASS CALLS SMALL TEXT): the program's handler sees each failing call once,
# with the same code each time. A malformed preload setting (TOROID_MIN_BYTES, TOROID_LOG)
# leaves the size threshold unknown, so the small call fails too (CALLS 3, SMALL failed).
function(handled setting cls calls small text)
  expect_run(0 "class ${cls} handler_calls ${calls} same_code 1 small_call ${small} message toroid: MPI_Allreduce: ${text}"
             ${launch} -x ${setting} ${PROGRAM} handler)
  message(STATUS "${setting}: ${last_output}")
endfunction()
handled(TOROID_ALGO=bogus arg 2 ok "TOROID_ALGO: unknown algorithm 'bogus'")
handled(TOROID_TOPOLOGY=3x3 topology 2 ok "topology 3x3 needs 9 ranks, communicator has 2")
handled(TOROID_MIN_BYTES=lots arg 3 failed "TOROID_MIN_BYTES: 'lots' is not a size")
handled(TOROID_MIN_BYTES=-5 arg 3 failed "TOROID_MIN_BYTES: '-5' is not a size \\(a size cannot be negative")
handled(TOROID_LOG=loud arg 3 failed "TOROID_LOG: 'loud' is not off or info")

# A setting exported on one rank only (here rank 1): compared at MPI_Init, so every rank serves
# its first call and reports which ranks hold which value, instead of a hang.
expect_run(0 "class arg handler_calls 3 same_code 1 small_call failed message toroid: MPI_Allreduce: TOROID_MIN_BYTES differs between ranks: rank 0 has it unset; rank 1 has '0'"
           ${MPIEXEC} --oversubscribe -n 1 -x LD_PRELOAD=${PRELOAD} ${PROGRAM} handler
           : -n 1 -x LD_PRELOAD=${PRELOAD} -x TOROID_MIN_BYTES=0 ${PROGRAM} handler)
message(STATUS "TOROID_MIN_BYTES on rank 1 only: ${last_output}")

# The default handler aborts the job with toroid's message; nothing crashes on the way.
execute_process(COMMAND ${launch} -x TOROID_ALGO=bogus ${PROGRAM} fatal RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "toroid: MPI_Allreduce: TOROID_ALGO: "
   OR "${out}${err}" MATCHES "Segmentation|terminate called|core dumped|signal 6|signal 11")
  message(FATAL_ERROR "MPI_ERRORS_ARE_FATAL with a bad TOROID_ALGO: exit ${rc}\n${out}\n${err}")
endif()
