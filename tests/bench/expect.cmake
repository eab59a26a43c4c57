# expect_run(RC TEXT COMMAND...): runs COMMAND, fails the test unless it exits with RC and its
# output matches the regular expression TEXT. Leaves stdout in `last_output`.
function(expect_run expect_rc expect_text)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expect_rc)
    message(FATAL_ERROR "${ARGN}: exit ${rc}, expected ${expect_rc}\n${out}\n${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${expect_text}")
    message(FATAL_ERROR "${ARGN}: output lacks '${expect_text}'\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
