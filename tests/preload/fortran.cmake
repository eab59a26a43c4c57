# fortran.F90 (one binding: mpif.h, use mpi or use mpi_f08) at NP ranks, without the preload
# and under it: both runs exact, the same checksum of every result (byte-identical results
# as the sums are exact), and the log saying that toroid served every kind of call.
# Inputs: MPIEXEC, PRELOAD, PROGRAM, NP, PERSISTENT (the persistent calls' prefix: MPI or MPIX)
include(${CMAKE_CURRENT_LIST_DIR}/launch.cmake)
preload_launch(stock ${NP})
execute_process(COMMAND ${stock} ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT out MATCHES "fortran wrong 0 checksum ([-0-9.]+)")
  message(FATAL_ERROR "stock run: exit '${rc}'\n${out}\n${err}")
endif()
set(stock_sum ${CMAKE_MATCH_1})
preload_launch(launch ${NP} LD_PRELOAD=${PRELOAD} TOROID_MIN_BYTES=0 TOROID_LOG=info
               TOROID_TIMEOUT=60)
execute_process(COMMAND ${launch} ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT out MATCHES "fortran wrong 0 checksum ([-0-9.]+)")
  message(FATAL_ERROR "under the preload: exit '${rc}'\n${out}\n${err}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL stock_sum)
  message(FATAL_ERROR "checksum ${CMAKE_MATCH_1} under the preload, ${stock_sum} stock:\n${out}")
endif()
set(kinds MPI_Allreduce MPI_Reduce_scatter_block MPI_Reduce_scatter MPI_Allgather MPI_Allgatherv
          MPI_Bcast MPI_Alltoall MPI_Alltoallv MPI_Iallreduce MPI_Ireduce_scatter_block
          MPI_Ireduce_scatter MPI_Iallgather MPI_Iallgatherv MPI_Ibcast MPI_Ialltoall
          ${PERSISTENT}_Allreduce_init ${PERSISTENT}_Reduce_scatter_block_init
          ${PERSISTENT}_Bcast_init ${PERSISTENT}_Alltoall_init)
if(PERSISTENT STREQUAL "MPIX")  # MPICH's persistent all-gather is left out: fortran.F90
  list(APPEND kinds MPIX_Allgather_init)
endif()
foreach(kind IN LISTS kinds)
  if(NOT err MATCHES "toroid: ${kind}: served by toroid")
    message(FATAL_ERROR "${kind} was not served:\n${err}")
  endif()
endforeach()
list(LENGTH kinds n_kinds)
message(STATUS "${NP} ranks: every result exact, checksum ${stock_sum} as stock, each of the ${n_kinds} kinds served")
