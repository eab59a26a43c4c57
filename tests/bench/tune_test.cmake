# toroid-tune under mpirun: a short run writes a tuning file the library reads back (the
# communicator's selector names it), and each bad input exits with status 2 and a message.
# Inputs: MPIEXEC, TUNE, BENCH, NP, WORK_DIR
file(MAKE_DIRECTORY ${WORK_DIR})
set(launch ${MPIEXEC} -n ${NP} --oversubscribe)
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)

set(file ${WORK_DIR}/tuning${NP}.txt)
file(REMOVE ${file})
expect_run(0 "wrote ${file}" ${launch} ${TUNE} --max-bytes 64K --iters 3 --choose-up-to 4K --out ${file})
file(READ ${file} text)
if(NOT text MATCHES "toroid-tuning 1" OR NOT text MATCHES "shm.alpha_us = " OR NOT text MATCHES "reduce.gbps = ")
  message(FATAL_ERROR "tuning file lacks its header or keys:\n${text}")
endif()
# Measured choices for this layout, every collective, from 0 to the class above 4K.
set(layout "${NP} ranks, ${NP}x1, 1 node\\(s\\), shm")
foreach(coll allreduce reduce_scatter allgather broadcast)
  if(NOT text MATCHES "choose ${layout} = ${coll}:0-([^\n]*-)?8K=[a-z0-9_]+\n")
    message(FATAL_ERROR "tuning file lacks the measured ${coll} choices of ${layout}:\n${text}")
  endif()
endforeach()
# The file is usable: toroid-bench's auto row runs with it, and auto follows the measured choice
# at 4 KiB (TOROID_LOG=info names it).
set(ENV{TOROID_TUNING} ${file})
set(ENV{TOROID_LOG} info)
expect_run(0 "auto allreduce of 4 KiB - 8 KiB on ${NP} ranks .*: [a-z0-9_]+ \\(measured fastest by toroid-tune: allreduce:"
           ${launch} ${BENCH} --algo auto -b 4K -e 4K -n 2 -w 0 --format csv)
unset(ENV{TOROID_LOG})
unset(ENV{TOROID_TUNING})
# Another layout's run into the same file keeps this layout's choices beside its own.
set(ENV{TOROID_TRANSPORT} mpi)
expect_run(0 "kept the choices of ${layout}" ${launch} ${TUNE} --max-bytes 4K --iters 3 --choose-up-to 64 --out ${file})
unset(ENV{TOROID_TRANSPORT})
file(READ ${file} text)
if(NOT text MATCHES "choose ${layout} = allreduce:" OR NOT text MATCHES "choose ${NP} ranks, ${NP}x1, 1 node\\(s\\), mpi = allreduce:0-([^\n]*-)?128=")
  message(FATAL_ERROR "tuning file lacks one of the two layouts' choices:\n${text}")
endif()

expect_run(2 "--iters 1: at least 3" ${launch} ${TUNE} --iters 1)
expect_run(2 "--max-bytes 1K: at least 4K" ${launch} ${TUNE} --max-bytes 1K)
expect_run(2 "--max-bytes: '12Q' is not a size" ${launch} ${TUNE} --max-bytes 12Q)
expect_run(2 "--network-links ring: switch or torus" ${launch} ${TUNE} --network-links ring)
expect_run(2 "--choose-up-to: '12Q' is not a size" ${launch} ${TUNE} --choose-up-to 12Q)
expect_run(2 "unrecognised option" ${launch} ${TUNE} --frobnicate)
