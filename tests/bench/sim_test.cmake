# toroid-sim end to end (no MPI): a small run prints its row; each bad input exits with status 2
# and a message naming the option.
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
function(run_sim expect_rc expect_text)
  expect_run(${expect_rc} "${expect_text}" ${SIM} ${ARGN})
endfunction()

run_sim(0 "allreduce +torus2d +1048576" --topology 8x4 --algo torus2d --bytes 1M)
run_sim(0 "\"algo\": \"torus2d_both\"" --preset tpu-v3-pod --algo torus2d_both --bytes 64K --format json)
# The limit beside the time: 16 MiB on the pod is bandwidth-bound at 104.7 us (the reducer's
# bound 55.9 us and then the radius, 32, the port bound 52.4, the distance bound 52.4 + 32 =
# 84.4); a reduce-scatter of it is bound by the reducer (no radius: its last sum may be the
# owner's); on the multipod the corner's distance bound, 69.9 + 143 us.
run_sim(0 "allreduce,swing,16777216,4194304,[0-9.]+,104\\.7[0-9]*,32\\.0+,87\\.8[0-9]*,52\\.4[0-9]*,84\\.4[0-9]*,0\\.[0-9]+" --preset tpu-v3-pod --algo swing --bytes 16M --format csv)
run_sim(0 "reduce_scatter,torus2d,16777216,4194304,[0-9.]+,52\\.3[0-9]*,32\\.0+,55\\.8[0-9]*,52\\.3[0-9]*,55\\.3[0-9]*,0\\.[0-9]+" --preset tpu-v3-pod --op reduce_scatter --algo torus2d --bytes 16M --format csv)
run_sim(0 "allreduce,torus2d,16777216,4194304,[0-9.]+,[0-9.]+,143\\.0+,[0-9.]+,[0-9.]+,212\\.9[0-9]*,0\\.[0-9]+" --preset tpu-v3-multipod --algo torus2d --bytes 16M --format csv)
# The segment by name: a communicator spanning nodes pipelines in 56 KiB.
run_sim(0 "segment 57344" --topology 2x2 --bytes 1M --segment-bytes cross-node)
run_sim(0 "segment 262144" --topology 2x2 --bytes 1M)
# A preset's chips span hosts, so by default it pipelines as the engine would there.
run_sim(0 "segment 57344" --preset tpu-v3-pod --algo swing_latency --bytes 1K)
# One chip per class: a rank-order ring on 8x4 with Y wraparound runs one row of 8 (sim_ranks,
# before the error column); with --symmetry off all 32.
run_sim(0 "allreduce,ring,1048576,.*,8,\"\"" --topology 8x4 --wrap y --algo ring --bytes 1M --format csv)
run_sim(0 "allreduce,ring,1048576,.*,32,\"\"" --topology 8x4 --wrap y --algo ring --bytes 1M --format csv --symmetry off)
run_sim(0 "\"sim_ranks\": 8," --topology 8x4 --wrap y --algo ring --bytes 1M --format json)
# Along axes: the xz-planes of 4x2x2 run 4x2's schedule at once, bound by 4x2's limit; auto
# picks what the sub-torus's model does and runs it along the axes.
run_sim(0 "along xz \\(sub-tori 4x2\\)" --topology 4x2x2 --axes xz --algo torus2d_both --bytes 1M)
run_sim(0 "allreduce,auto:[a-z_]+,1048576" --topology 4x2x2 --axes z --algo auto --bytes 1M --format csv)
run_sim(2 "--axes: broadcast has no form along axes" --topology 4x2x2 --axes z --op allreduce,broadcast)
run_sim(2 "--axes: axes 'q': 'q' is not an axis" --topology 4x2x2 --axes q)
run_sim(2 "--symmetry: 'maybe' is not on or off" --symmetry maybe)
run_sim(2 "--segment-bytes: 'cross' is not a size" --topology 2x2 --segment-bytes cross)
run_sim(2 "--topology: invalid topology '8x'" --topology 8x)
run_sim(2 "--preset: unknown preset 'foo'" --preset foo)
run_sim(2 "--bytes: '1Q' is not a size" --bytes 1Q)
run_sim(2 "--link-gbps -3 must be a positive number" --link-gbps -3)
run_sim(2 "--algo: 'mpi' has no schedule to simulate" --algo mpi)
run_sim(2 "--op: unknown collective 'bcast'" --op bcast)
run_sim(2 "--links: cannot open '/nonexistent/links.csv' for writing" --topology 2x2 --bytes 1K --links /nonexistent/links.csv)
run_sim(2 "--trace t.json: a timeline is of one call: give one --op, one --algo \\(not auto\\) and one --bytes \\(here 1 ops, 2 algorithms, 1 sizes\\)" --topology 2x2 --algo ring,torus2d --bytes 1K --trace t.json)
run_sim(2 "--trace: cannot open '/nonexistent/t.json' for writing" --topology 2x2 --algo ring --bytes 1K --trace /nonexistent/t.json)
