# nonblocking.c at NP ranks under the preload: every result exact, exactly the calls the rules
# say served, every rank back from MPI_Finalize with the requests it left there settled, and the
# log saying what was served. MODE: the thread level the program asks for (multiple, the default,
# serialized, funneled, or single: plain MPI_Init). FORWARDED=1: under TOROID_TRANSPORT=mpi, so
# below MPI_THREAD_MULTIPLE every non-blocking call is forwarded, and the log says why. A hang
# ends at 120 s. RAISED=1: under TOROID_THREAD_LEVEL=multiple and TOROID_TRANSPORT=mpi, every
# call served over MPI by the progress thread, the program still told the level it asked for.
# Inputs: MPIEXEC, PRELOAD, PROGRAM, NP, MODE (optional), FORWARDED, RAISED (optional)
include(${CMAKE_CURRENT_LIST_DIR}/log_lines.cmake)

include(${CMAKE_CURRENT_LIST_DIR}/launch.cmake)
if(NOT MODE)
  set(MODE multiple)
endif()
set(transport)
set(forwarded)
if(FORWARDED)
  set(transport TOROID_TRANSPORT=mpi)
  set(forwarded forwarded)
elseif(RAISED)
  set(transport TOROID_TRANSPORT=mpi TOROID_THREAD_LEVEL=multiple)
endif()
preload_launch(launch ${NP} LD_PRELOAD=${PRELOAD} TOROID_MIN_BYTES=0 TOROID_LOG=info TOROID_TIMEOUT=60
               ${transport})
execute_process(COMMAND ${launch} ${PROGRAM} ${MODE} ${forwarded}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit '${rc}' (a hang ends as 'Process terminated due to timeout')\n${out}\n${err}")
endif()
if(NOT out MATCHES "served ([0-9]+) expected ([0-9]+) wrong 0")
  message(FATAL_ERROR "results wrong:\n${out}\n${err}")
endif()
set(served ${CMAKE_MATCH_1})
if(NOT served EQUAL CMAKE_MATCH_2)
  message(FATAL_ERROR "toroid served ${served} calls, its rules say ${CMAKE_MATCH_2}:\n${out}\n${err}")
endif()
string(REGEX MATCHALL "rank [0-9]+ late 0" settled "${out}")
list(LENGTH settled n_settled)
if(NOT n_settled EQUAL NP)
  message(FATAL_ERROR "${n_settled} of ${NP} ranks found the requests left to MPI_Finalize settled:\n${out}\n${err}")
endif()
if(FORWARDED)
  set(why "non-blocking calls on ranks not linked by shared memory \\(transport mpi, or no room in /dev/shm\\) need MPI_THREAD_MULTIPLE")
  set(kinds "MPI_Iallreduce: forwarded to MPI: ${why}" "MPI_Ibcast: forwarded to MPI: ${why}"
            "MPIX?_Allreduce_init: forwarded to MPI: ${why}")
  # The blocking calls the program makes are still served; no non-blocking one is.
  if(err MATCHES "MPI_I[a-z_]+: served by toroid")
    message(FATAL_ERROR "a non-blocking call was served over MPI below MPI_THREAD_MULTIPLE:\n${err}")
  endif()
else()
  set(kinds "MPI_Iallreduce: served by toroid" "MPI_Ireduce_scatter_block: served by toroid"
            "MPI_Ireduce_scatter: served by toroid" "MPI_Iallgather: served by toroid"
            "MPI_Iallgatherv: served by toroid" "MPI_Ibcast: served by toroid"
            "MPI_Iallreduce: forwarded to MPI: the datatype has no toroid twin \\(MPI_SHORT\\)"
            "MPIX?_Allreduce_init: served by toroid" "MPIX?_Reduce_scatter_block_init: served by toroid"
            "MPIX?_Reduce_scatter_init: served by toroid" "MPIX?_Allgather_init: served by toroid"
            "MPIX?_Allgatherv_init: served by toroid" "MPIX?_Bcast_init: served by toroid"
            "MPIX?_Alltoall_init: served by toroid")
  if(MODE STREQUAL "multiple" OR RAISED)
    list(APPEND kinds "MPI_Ialltoallv: served by toroid")
  else()
    list(APPEND kinds "MPI_Ialltoallv: forwarded to MPI: an alltoallv's messages go over MPI, which the progress thread may call only under MPI_THREAD_MULTIPLE")
  endif()
  if(RAISED)
    list(APPEND kinds "MPI_Init: MPI is at MPI_THREAD_MULTIPLE \\(TOROID_THREAD_LEVEL\\), the program asked for MPI_THREAD_SINGLE and is told so")
  endif()
  if(served EQUAL 0)
    message(FATAL_ERROR "nothing served:\n${out}\n${err}")
  endif()
endif()
expect_said_once("${err}" ${kinds})
message(STATUS "${NP} ranks at ${MODE} (forwarded '${FORWARDED}', raised '${RAISED}'): served ${served}, every result exact, every rank settled at MPI_Finalize")
