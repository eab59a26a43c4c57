# TOROID_PROGRESS=thread below MPI_THREAD_MULTIPLE (thread_level_main.cpp), at 2 ranks on this
# node, under plain MPI_Init and under FUNNELED: over shared memory it runs (an alltoallv in the
# background too on the node's path, one named `direct` refused in the background and run
# blocking); over MPI (TOROID_TRANSPORT=mpi) it is an error on every rank
# that names the level and the reason. The caller mode works in every case.
set(ENV{TOROID_PROGRESS} thread)
function(probe out_var level)
  execute_process(COMMAND ${MPIEXEC} -n 2 --oversubscribe ${PROGRAM} ${level} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  message(STATUS "${level} $ENV{TOROID_TRANSPORT}: exit ${rc}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the probe failed (exit '${rc}')")
  endif()
  foreach(rank 0 1)
    if(NOT out MATCHES "rank ${rank}: caller mode sum 2")
      message(FATAL_ERROR "rank ${rank}: the caller mode did not work")
    endif()
  endforeach()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

set(needs "progress mode thread \\(Options::progress or TOROID_PROGRESS\\) on rank")
foreach(level single funneled)
  if(level STREQUAL "single")
    set(name MPI_THREAD_SINGLE)
  else()
    set(name MPI_THREAD_FUNNELED)
  endif()
  probe(out ${level})
  foreach(rank 0 1)
    foreach(line "rank ${rank}: constructed with progress thread" "rank ${rank}: background sum 2"
            "rank ${rank}: background alltoallv exact"
            "rank ${rank}: background direct alltoallv error: non-blocking alltoallv \\(direct\\) on rank ${rank}: its messages go over MPI, which this communicator's progress thread may call only under MPI_THREAD_MULTIPLE \\(MPI is at ${name}\\)"
            "rank ${rank}: blocking direct alltoallv exact")
      if(NOT out MATCHES "${line}")
        message(FATAL_ERROR "${name} over shared memory: no '${line}'")
      endif()
    endforeach()
  endforeach()

  set(ENV{TOROID_TRANSPORT} mpi)
  probe(out ${level})
  foreach(rank 0 1)
    if(NOT out MATCHES "rank ${rank}: error: ${needs} ${rank} with MPI at ${name}: its ranks are not linked by shared memory \\(transport mpi, or no room in /dev/shm\\), so their steps go over MPI, and the progress thread may call MPI only under MPI_THREAD_MULTIPLE")
      message(FATAL_ERROR "rank ${rank} did not name the level and the transport")
    endif()
  endforeach()
  unset(ENV{TOROID_TRANSPORT})
endforeach()
