# toroid-tune under mpirun: a short run writes a tuning file the library reads back (the
# communicator's selector names it), and each bad input exits with status 2 and a message.
# Inputs: MPIEXEC, TUNE, BENCH, NP, WORK_DIR
file(MAKE_DIRECTORY ${WORK_DIR})
set(launch ${MPIEXEC} -n ${NP} --oversubscribe)
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)

set(file ${WORK_DIR}/tuning${NP}.txt)
expect_run(0 "wrote ${file}" ${launch} ${TUNE} --max-bytes 64K --iters 3 --out ${file})
file(READ ${file} text)
if(NOT text MATCHES "toroid-tuning 1" OR NOT text MATCHES "shm.alpha_us = " OR NOT text MATCHES "reduce.gbps = ")
  message(FATAL_ERROR "tuning file lacks its header or keys:\n${text}")
endif()
# The file is usable: toroid-bench's auto row runs with it and prints the model's pick.
set(ENV{TOROID_TUNING} ${file})
expect_run(0 ",auto," ${launch} ${BENCH} --algo auto -b 4K -e 4K -n 2 -w 0 --format csv)
unset(ENV{TOROID_TUNING})

expect_run(2 "--iters 1: at least 3" ${launch} ${TUNE} --iters 1)
expect_run(2 "--max-bytes 1K: at least 4K" ${launch} ${TUNE} --max-bytes 1K)
expect_run(2 "--max-bytes: '12Q' is not a size" ${launch} ${TUNE} --max-bytes 12Q)
expect_run(2 "--network-links ring: switch or torus" ${launch} ${TUNE} --network-links ring)
expect_run(2 "unrecognised option" ${launch} ${TUNE} --frobnicate)
