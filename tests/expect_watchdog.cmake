# expect_watchdog(<what> <rc> <took> <out> <err> <text>...): a job that must have ended through
# toroid's watchdog: a non-zero exit that is not the outer timeout, every <text> regex in its
# stderr, and within 30 s of the start (the tests set TOROID_TIMEOUT=2). Shared by the MPI
# tests' and the preload's watchdog cases.
function(expect_watchdog what rc took out err)
  if(rc EQUAL 0 OR rc MATCHES "timeout")
    message(FATAL_ERROR "${what}: the job did not end through the watchdog (exit '${rc}')\n${out}\n${err}")
  endif()
  foreach(text IN LISTS ARGN)
    if(NOT err MATCHES "${text}")
      message(FATAL_ERROR "${what}: the watchdog's message lacks '${text}':\n${out}\n${err}")
    endif()
  endforeach()
  if(took GREATER 30)
    message(FATAL_ERROR "${what}: the job took ${took} s to end, the timeout was 2 s")
  endif()
endfunction()
