# Builds the parser fuzzers with clang++ in WORK_DIR and runs each for SECONDS, starting from the
# seed corpus in the source tree (read only: new inputs go to WORK_DIR/corpus). Fails on any
# crash, sanitizer report, broken invariant, unexpected exception, or input that runs > 10 s.
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -DCLANGXX=clang++ [-DSECONDS=5] -P fuzz_test.cmake
if(NOT SECONDS)
  set(SECONDS 5)
endif()
set(fuzz_src ${SOURCE_DIR}/tests/fuzz)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${fuzz_src} -B ${WORK_DIR} -DCMAKE_CXX_COMPILER=${CLANGXX}
                        -DCMAKE_BUILD_TYPE=Debug
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the fuzz build failed:\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR} -j2 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the fuzzers failed:\n${out}\n${err}")
endif()
foreach(name topology size config)
  file(MAKE_DIRECTORY ${WORK_DIR}/corpus/${name})
  execute_process(COMMAND ${WORK_DIR}/fuzz_${name} -max_total_time=${SECONDS} -timeout=10 -print_final_stats=1
                          -artifact_prefix=${WORK_DIR}/ ${WORK_DIR}/corpus/${name} ${fuzz_src}/corpus/${name}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCH "number_of_executed_units: *[0-9]+" execs "${err}")
  message(STATUS "fuzz_${name}: exit ${rc}, ${execs}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fuzz_${name} found a failing input (saved under ${WORK_DIR}/):\n${err}")
  endif()
endforeach()
