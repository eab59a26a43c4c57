cmake_minimum_required(VERSION 3.25)
# The shared library's exports are its public API (include/toroid/export.hpp): `nm -D` of
# libtoroid.so names no namespace of the layers below (toroid::exec::, toroid::model::, ...: any
# lower-case namespace inside toroid), no Impl or State behind a public pointer, and does name the
# API (so an export macro that exported nothing would fail too). Besides toroid's own, only the
# standard library's template instances appear (libstdc++ declares them with default visibility).
#   cmake -DNM=<nm> -DLIBRARY=<libtoroid.so> -P exports_test.cmake
execute_process(COMMAND ${NM} -D --defined-only -C ${LIBRARY} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D ${LIBRARY} failed (${rc})")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(bad "")
set(count 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  math(EXPR count "${count} + 1")
  if(line MATCHES "toroid::[a-z_0-9]+::" OR line MATCHES "::(Impl|State)(::|[^a-zA-Z_])")
    string(APPEND bad "\n  ${line}")
  elseif(NOT line MATCHES "toroid::" AND NOT line MATCHES " (std|__gnu_cxx)::" AND
         NOT line MATCHES " (typeinfo|typeinfo name|vtable|VTT) for (std|__gnu_cxx)::")
    string(APPEND bad "\n  ${line} (neither toroid's API nor the standard library's)")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "libtoroid.so exports what is not its public API:${bad}")
endif()
foreach(api "toroid::Communicator::Communicator(" "toroid::allreduce(" "toroid::ialltoallv("
        "toroid::Communicator::plan(" "toroid::ShardedOptimizer::step()" "toroid::run_agreed("
        "toroid::mpi_check(" "typeinfo for toroid::InvalidArgument" "toroid::Torus::parse(")
  string(FIND "${out}" "${api}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "libtoroid.so does not export ${api}...: the public API is missing from `nm -D`")
  endif()
endforeach()
message(STATUS "libtoroid.so: ${count} exported symbols, all of the public API or the standard library's")
