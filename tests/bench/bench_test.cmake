# toroid-bench end to end under mpirun:
#   MODE=sweep : a short checked sweep of every op and algorithm; CSV and JSON written and read
#                back; the CSV plotted to a PNG when matplotlib is there; every call mode
#                (blocking, non-blocking, persistent); the overlap benchmark; run_spread.py
#   MODE=bad   : each bad input exits with status 2 and a message naming it
#   MODE=flood : 12 ranks as a 2x2x3 torus of hosts (TOROID_NODES one rank each, a tuning with
#                network.links = torus): small all-reduces whose last row, a ring of 3, floods
#                (schedule/ring_flood.hpp; test_selector shows this context floods them), every
#                element checked, every call mode
#   MODE=twisted : 16 ranks as 2x2x4:twist (the short rows' wraparound leads 2 further along z):
#                every collective and torus algorithm on the engine (Swing's all-reduce),
#                every element checked
# Inputs: MPIEXEC, BENCH, OVERLAP (sweep), NP, WORK_DIR, SOURCE_DIR, PYTHON
file(MAKE_DIRECTORY ${WORK_DIR})
set(launch ${MPIEXEC} -n ${NP} --oversubscribe ${BENCH})

include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
function(run_bench expect_rc expect_text)
  expect_run(${expect_rc} "${expect_text}" ${launch} ${ARGN})
  set(last_output "${last_output}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "sweep")
  set(csv ${WORK_DIR}/sweep${NP}.csv)
  set(json ${WORK_DIR}/sweep${NP}.json)
  run_bench(0 "vs_mpi" --op all --algo all -b 8 -e 64K -f 8 -n 2 -w 1 --check 1)
  # The watchdog: TOROID_TIMEOUT (120 in the test environment) unless --timeout is given.
  if(NOT "${last_output}" MATCHES "timeout_s $ENV{TOROID_TIMEOUT} ")
    message(FATAL_ERROR "TOROID_TIMEOUT=$ENV{TOROID_TIMEOUT} is not the run's timeout:\n${last_output}")
  endif()
  run_bench(0 "timeout_s 9 " --op allreduce --algo ring -b 8 -e 8 -n 1 -w 0 --timeout 9)
  # Along an axis of a 3D shape: each line on its own, stock on a communicator of each line,
  # every element checked against the line's own result (exit 1 on any wrong one).
  # (np 2: 2x1x1's lines along z are single chips; np 4: 2x1x2's are pairs.)
  if(NP EQUAL 4)
    set(line 2)
  else()
    set(line 1)
  endif()
  run_bench(0 "along z \\(each sub-torus, ${line}, on its own\\).*allgather.*torus2d_both" --topology 2x1x${line} --axes z
            --op allreduce,reduce_scatter,allgather --algo auto,torus2d_both,mpi --mode blocking,nonblocking
            -b 1K -e 64K -f 64 -n 2 -w 1 --check 1)
  # Rows in rounds (taking turns): one row per algorithm and size still, each checked.
  run_bench(0 "vs_mpi" --op allreduce --algo ring,auto,mpi -b 8 -e 64K -f 64 -n 2 -w 1 --rounds 3
            --check 1 --format csv)
  string(REGEX MATCHALL "\n[0-9]+,[0-9]+,f32,sum,(ring|auto|mpi)," rows "${last_output}")
  list(LENGTH rows nrows)
  if(NOT nrows EQUAL 9)
    message(FATAL_ERROR "--rounds 3: expected 9 rows (3 sizes x ring, auto, mpi), got ${nrows}:\n${last_output}")
  endif()
  # Each row's range of the rounds' own ratios: stock against itself is 1 in every round, the
  # others give two numbers.
  string(REGEX MATCHALL "\n[0-9]+,[0-9]+,f32,sum,mpi,[^\n]*,1\\.0000,1\\.0000" stock_ranges "${last_output}")
  string(REGEX MATCHALL "\n[0-9]+,[0-9]+,f32,sum,ring,[^\n]*,[0-9.]+,[0-9.]+" ring_ranges "${last_output}")
  list(LENGTH stock_ranges nstock)
  list(LENGTH ring_ranges nring)
  if(NOT nstock EQUAL 3 OR NOT nring EQUAL 3)
    message(FATAL_ERROR "--rounds 3: expected every row's vs_mpi_low,vs_mpi_high (stock 1,1):\n${last_output}")
  endif()
  # Where the outputs lie against the inputs (--offset; the header says it): every collective
  # checked (status 0: no wrong element) with the output 0, 16 and 2048 (the default) bytes past
  # a 4 KiB multiple, the library's copies on both sides of 2 KiB.
  run_bench(0 "output_offset 2048 " --op allgather --algo ring -b 8 -e 8 -n 1 -w 0)
  # Calls per timed iteration: auto unless a count is given; in place one.
  run_bench(0 "batch auto \\(" --op allreduce --algo ring -b 8 -e 8 -n 1 -w 0)
  run_bench(0 "batch 5[ \n]" --op all --algo ring,mpi -b 8 -e 4K -f 8 -n 2 -w 1 --batch 5 --check 1)
  run_bench(0 "batch 1 \\(in place\\)" --op allreduce --algo ring -b 8 -e 8 -n 1 -w 0 --inplace 1)
  foreach(offset 0 16)
    run_bench(0 "output_offset ${offset} " --op all --algo ring,mpi -b 4K -e 256K -f 8 -n 2 -w 1
              --check 1 --offset ${offset})
  endforeach()
  # Every call mode, checked; rows named ALGO:MODE, the stock rows once.
  run_bench(0 "torus2d:persistent" --op all --algo ring,torus2d,mpi --mode blocking,nonblocking,persistent
            -b 8 -e 64K -f 8 -n 2 -w 1 --check 1)
  foreach(row "ring:blocking" "ring:nonblocking" "broadcast .* torus2d:nonblocking")
    if(NOT "${last_output}" MATCHES "${row}")
      message(FATAL_ERROR "no ${row} row:\n${last_output}")
    endif()
  endforeach()
  if("${last_output}" MATCHES "mpi:nonblocking")
    message(FATAL_ERROR "the stock rows run blocking only:\n${last_output}")
  endif()
  # The copy bound and cold caches: a copy_bound row per size, every row's of_copy, the header
  # saying the caches are cold; checked sums with rotating buffer sets (in place too, and
  # persistent: one bound request per set).
  # --csv: the same rows as CSV besides the table (scripts/run.sh plots them). --cache 4M: sets
  # over 8 MiB, not over twice what a VM's CPUID claims (here 508 MiB: a GiB of sets per rank and
  # row, most of this test's time); the run after it sizes its sets by the machine's figure.
  set(bound_csv ${WORK_DIR}/bound${NP}.csv)
  file(REMOVE ${bound_csv})
  run_bench(0 "caches +cold \\(buffer sets over 2x the 4 MiB last-level cache, --cache\\)"
            --op allreduce,allgather --algo ring,mpi --bound --cold --cache 4M -b 64 -e 1M -f 128
            -n 3 -w 1 --check 1 --mode blocking,persistent --csv ${bound_csv})
  foreach(row "allreduce +64 [^\n]* copy_bound [^\n]* 100%" "allreduce +1048576 [^\n]*ring:persistent [^\n]* [0-9]+%")
    if(NOT "${last_output}" MATCHES "${row}")
      message(FATAL_ERROR "no row matching '${row}' with --bound --cold:\n${last_output}")
    endif()
  endforeach()
  file(STRINGS ${bound_csv} bound_rows REGEX "^[0-9]+,.*,copy_bound,")
  file(STRINGS ${bound_csv} all_rows REGEX "^[0-9]")
  list(LENGTH bound_rows n_bound)
  list(LENGTH all_rows n_all)
  # 2 collectives x 3 sizes (64, 8K, 1M) x (ring blocking and persistent, mpi, copy_bound)
  if(NOT n_bound EQUAL 6 OR NOT n_all EQUAL 24)
    message(FATAL_ERROR "--csv wrote ${n_all} rows, ${n_bound} of them copy_bound (expected 24 and 6)")
  endif()
  run_bench(0 "caches cold" --op allreduce --algo ring --cold --inplace 1 -b 64K -e 64K -n 3 -w 1 --check 1)
  # The overlap benchmark: both kinds of compute, all three ways, and right sums.
  expect_run(0 "thread\\(hid\\)" ${MPIEXEC} -n ${NP} --oversubscribe ${OVERLAP} -b 64K -e 256K -n 2)
  if("${last_output}" MATCHES "WRONG" OR NOT "${last_output}" MATCHES "sleep +262144")
    message(FATAL_ERROR "overlap benchmark:\n${last_output}")
  endif()
  run_bench(0 "" --op allreduce --algo all -b 4 -e 4K -f 4 -n 2 -w 0 --dtype bf16 --redop avg --inplace 1 --format csv --output ${csv})
  file(STRINGS ${csv} lines REGEX "^[0-9]")
  list(LENGTH lines n)
  if(n LESS 8)
    message(FATAL_ERROR "CSV has ${n} rows")
  endif()
  file(STRINGS ${csv} header REGEX "^size,")
  if(NOT header STREQUAL "size,count,type,redop,algo,time_us,min_us,max_us,algbw,busbw,wrong,vs_mpi,collective,predicted_us,picked,of_copy,vs_mpi_low,vs_mpi_high")
    message(FATAL_ERROR "CSV header is '${header}'")
  endif()
  run_bench(0 "" --op reduce_scatter --algo torus2d,ring -b 1K -e 8K -f 8 -n 2 --dtype i64 --redop max --format json --output ${json})
  file(READ ${json} text)
  string(JSON rows LENGTH "${text}" rows)
  string(JSON algo GET "${text}" rows 1 algo)
  if(rows LESS 4 OR NOT algo STREQUAL "torus2d")
    message(FATAL_ERROR "JSON: ${rows} rows, second algo '${algo}'")
  endif()
  file(REMOVE ${WORK_DIR}/sweep${NP}.png)
  execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/benchmarks/plot_bench.py ${csv} -o ${WORK_DIR}/sweep${NP}.png
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc OR NOT EXISTS ${WORK_DIR}/sweep${NP}.png)
    message(FATAL_ERROR "plot_bench.py (${PYTHON}) failed: ${rc}\n${out}${err}\n"
                        "(it needs python3-matplotlib: scripts/setup.sh installs it)")
  endif()
  # benchmarks/run_spread.py: fresh runs, the spread of each row's medians, stock as the yardstick.
  expect_run(0 "2 fresh runs at ${NP} ranks.*allreduce +ring +4096.*# widest toroid row: .* max/min [0-9.]+.*toroid slower than the same run's stock row"
             ${PYTHON} ${SOURCE_DIR}/benchmarks/run_spread.py -np ${NP} --runs 2 --algo ring,auto -b 4K -e 16K -n 2
             --bench ${BENCH} --csv ${WORK_DIR}/spread${NP}.csv)
  expect_run(2 "--runs must be at least 2" ${PYTHON} ${SOURCE_DIR}/benchmarks/run_spread.py --runs 1 --bench ${BENCH})
  file(REMOVE ${WORK_DIR}/bound${NP}.png)
  execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/benchmarks/plot_bench.py ${bound_csv} -o ${WORK_DIR}/bound${NP}.png
                          --title "copy bound and cold caches"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc OR NOT EXISTS ${WORK_DIR}/bound${NP}.png)
    message(FATAL_ERROR "plot_bench.py with copy_bound rows and --title failed: ${rc}\n${out}${err}")
  endif()
elseif(MODE STREQUAL "bad")
  run_bench(2 "--algo: unknown algorithm 'fastest'" --algo fastest)
  run_bench(2 "--redop: unknown reduction op 'xor'" --redop xor)
  run_bench(2 "--dtype: unknown data type 'f8'" --dtype f8)
  run_bench(2 "-e: '12Q' is not a size" -e 12Q)
  run_bench(2 "-b 1M is larger than -e 4K" -b 1M -e 4K)
  run_bench(2 "topology 3x3 needs 9 ranks, communicator has ${NP}" --topology 3x3)
  run_bench(2 "--op: unknown collective 'bcast'" --op bcast)
  run_bench(2 "--mode: 'async' is not blocking, nonblocking or persistent" --mode blocking,async)
  run_bench(2 "--redop avg needs a floating --dtype" --redop avg --dtype i32)
  run_bench(2 "--rounds 0 must be at least 1" --rounds 0)
  run_bench(2 "--cache: must be at least 1 byte, got 0" --cold --cache 0)
  run_bench(2 "--cache: only --cold uses it" --cache 1M)
  run_bench(2 "--cache: '12Q' is not a size" --cold --cache 12Q)
  run_bench(2 "--offset 4096: must be below 4096" --offset 4096)
  run_bench(2 "--offset 4: must be below 4096 and a multiple of the 8-byte f64 element" --offset 4 --dtype f64)
  run_bench(2 "--offset: 'x' is not a size" --offset x)
  run_bench(2 "--batch 0: must be auto or a count from 1 to 1000" --batch 0)
  run_bench(2 "--batch 2x: must be auto or a count" --batch 2x)
  run_bench(2 "--axes: axes 'xq': 'q' is not an axis" --axes xq)
  run_bench(2 "--axes: broadcast has no form along axes" --axes x --op broadcast)
  run_bench(2 "--axes: the collectives along axes have no persistent form" --axes x --mode persistent)
  run_bench(2 "unrecognised option" --frobnicate)
elseif(MODE STREQUAL "flood")
  set(ENV{TOROID_NODES} "1,1,1,1,1,1,1,1,1,1,1,1")
  set(ENV{TOROID_TUNING} "${SOURCE_DIR}/tests/bench/torus_of_hosts.tuning")
  run_bench(0 "topology 2x2x3.*allreduce +48 .*torus2d_both" --topology 2x2x3 --op allreduce
            --algo torus2d,torus2d_both,auto,mpi --mode blocking,nonblocking,persistent
            -b 48 -e 48K -f 10 -n 2 -w 1 --check 1)
  run_bench(0 "allreduce +480 .*torus2d" --topology 2x2x3 --op allreduce --algo torus2d
            --dtype f64 --redop max --inplace 1 -b 480 -e 480 -n 2 -w 1 --check 1)
elseif(MODE STREQUAL "twisted")
  run_bench(0 "topology 2x2x4:twist.*allreduce +245760 .*allgather +245760 .*broadcast +245760 " --topology 2x2x4:twist
            --op allreduce,reduce_scatter,allgather,broadcast --algo torus2d,torus2d_both,swing,auto
            -b 60 -e 240K -f 64 -n 1 -w 0 --check 1)
  run_bench(0 "allreduce +3840 .*swing_latency" --topology 2x2x4:twist --op allreduce
            --algo swing_latency,torus2d_both --mode nonblocking,persistent --dtype i32 --redop max
            -b 60 -e 3840 -f 64 -n 1 -w 0 --check 1)
else()
  message(FATAL_ERROR "MODE must be sweep, bad, flood or twisted")
endif()
