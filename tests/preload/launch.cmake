# preload_launch(<out> <np> <VAR=value>...): the command line that starts NP ranks with each
# variable set in the ranks only. Open MPI's mpirun passes variables with -x VAR=value (and needs
# --oversubscribe past the cores); MPICH's mpiexec with -genv VAR value. Reads MPIEXEC.
function(preload_launch out np)
  set(launch ${MPIEXEC} -n ${np})
  if(MPIEXEC MATCHES "mpich")
    foreach(v IN LISTS ARGN)
      string(REGEX MATCH "^([^=]*)=(.*)$" pair "${v}")
      list(APPEND launch -genv ${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    endforeach()
  else()
    list(APPEND launch --oversubscribe)
    foreach(v IN LISTS ARGN)
      list(APPEND launch -x ${v})
    endforeach()
  endif()
  set(${out} ${launch} PARENT_SCOPE)
endfunction()
