# One program run twice at NP ranks, without and with the preload: every result line must be
# the same (results.c makes them exact), toroid must have served exactly the calls its rules
# say, and TOROID_LOG=info must have said once what it chose for MPI_COMM_WORLD, and once per
# kind of call whether it served it or why not.
# 1-rank communicators (MPI_COMM_SELF on every rank) are reported once, not once per rank.
# Inputs: MPIEXEC, NP, PROGRAM, PRELOAD, MIN_BYTES, SETTINGS (VAR=value|... for the preload run),
#         LOG_TEXT (optional: a regular expression the log must also match)
include(${CMAKE_CURRENT_LIST_DIR}/../bench/expect.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/log_lines.cmake)
set(ENV{TOROID_MIN_BYTES} ${MIN_BYTES})
set(launch ${MPIEXEC} -n ${NP} --oversubscribe)

expect_run(0 "served -1 expected" ${launch} ${PROGRAM})
set(stock "${last_output}")

set(exports -x LD_PRELOAD=${PRELOAD} -x TOROID_LOG=info)
string(REPLACE "|" ";" settings "${SETTINGS}")
foreach(setting IN LISTS settings)
  list(APPEND exports -x ${setting})
endforeach()
execute_process(COMMAND ${launch} ${exports} ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE preloaded ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "with the preload: exit ${rc}\n${preloaded}\n${err}")
endif()

string(REGEX MATCHALL "toroid: MPI_COMM_WORLD \\(" said "${err}")
list(LENGTH said n_said)
string(REGEX MATCH "toroid: MPI_COMM_WORLD \\([0-9]+ ranks?\\)[^\n]*" line "${err}")
if(NOT n_said EQUAL 1 OR NOT line)
  message(FATAL_ERROR "TOROID_LOG=info said ${n_said} times what it chose for MPI_COMM_WORLD, not once:\n${err}")
endif()
message(STATUS "${line}")
string(REGEX MATCHALL "toroid: MPI_COMM_SELF \\(" self_said "${err}")
list(LENGTH self_said n_self)
if(n_self GREATER 1)
  message(FATAL_ERROR "TOROID_LOG=info reported MPI_COMM_SELF ${n_self} times (once is the rule):\n${err}")
endif()
# What it did with each kind of call, once per kind (rank 0 of MPI_COMM_WORLD).
expect_said_once("${err}" "MPI_Bcast: served by toroid"
                 "MPI_Allgatherv: served by toroid"
                 "MPI_Alltoallv: served by toroid"
                 "MPI_Alltoall: forwarded to MPI: an all-to-all in place"
                 "MPI_Allreduce: forwarded to MPI: the datatype has no toroid twin \\(MPI_SHORT\\)"
                 "MPI_Allreduce: forwarded to MPI: the op has no toroid twin"
                 "MPI_Allgather: forwarded to MPI: the send side is described otherwise")
if(DEFINED LOG_TEXT AND NOT err MATCHES "${LOG_TEXT}")
  message(FATAL_ERROR "TOROID_LOG=info did not say '${LOG_TEXT}':\n${err}")
endif()

string(REGEX MATCH "served ([0-9-]+) expected ([0-9]+) mismatched_ranks ([0-9]+)" counts "${preloaded}")
if(NOT counts OR NOT CMAKE_MATCH_1 EQUAL CMAKE_MATCH_2 OR NOT CMAKE_MATCH_3 EQUAL 0 OR CMAKE_MATCH_1 EQUAL 0)
  message(FATAL_ERROR "toroid served the wrong calls: '${counts}'")
endif()
message(STATUS "${counts}")

# Everything but the last line (the counts) must match byte for byte.
string(REGEX REPLACE "served [^\n]*\n?$" "" stock "${stock}")
string(REGEX REPLACE "served [^\n]*\n?$" "" preloaded "${preloaded}")
if(NOT stock STREQUAL preloaded)
  string(REPLACE "\n" ";" a "${stock}")
  string(REPLACE "\n" ";" b "${preloaded}")
  foreach(line IN LISTS a)
    list(POP_FRONT b other)
    if(NOT line STREQUAL other)
      message(FATAL_ERROR "results differ with the preload:\n  without: ${line}\n  with:    ${other}")
    endif()
  endforeach()
  message(FATAL_ERROR "results differ with the preload (different number of lines)")
endif()
string(REGEX MATCHALL "\n" lines "${stock}")
list(LENGTH lines n_lines)
message(STATUS "${n_lines} results identical with and without the preload")
