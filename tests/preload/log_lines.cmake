# expect_said_once(<log> <line regex>...): TOROID_LOG=info must have said each line exactly once
# (the preload says what it did with each kind of call once, on world rank 0).
function(expect_said_once log)
  foreach(kind IN LISTS ARGN)
    string(REGEX MATCHALL "toroid: ${kind}" said "${log}")
    list(LENGTH said n)
    if(NOT n EQUAL 1)
      message(FATAL_ERROR "TOROID_LOG=info said '${kind}' ${n} times, not once:\n${log}")
    endif()
  endforeach()
endfunction()
