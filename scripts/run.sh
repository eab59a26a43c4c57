#!/usr/bin/env bash
# The main job: set up and build, then show what toroid is for on this machine: its all-reduce
# on a 2x2 torus (4 ranks) as auto picks it, torus2d_both (both dimensions at once) and a plain
# ring, beside the stock MPI_Allreduce and the copy bound (every rank copying its vector at
# once: the memory traffic an all-reduce cannot avoid), from 4 KiB to 64 MiB, in 3 rounds
# that take turns (each row the median of its rounds, with the range of the rounds' own ratios
# to stock: vs_mpi_range); then a plot of it, named at the end. Where the 4 ranks outnumber
# the cores the header says so: they take turns on the cores, and the ratios move from run to
# run more than the rounds show.
#   scripts/run.sh [toroid-bench options...]   (defaults below; see toroid-bench --help)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
build=${TOROID_BUILD_DIR:-$root/build}
args=("$@")
plot=0
if ! ((${#args[@]})); then
  args=(--op allreduce --algo auto,torus2d_both,ring --topology 2x2 --bound -b 4K -e 64M -f 4
        -n 10 -w 2 --rounds 3 --csv "$build/run.csv")
  plot=1
fi
"$root/scripts/mpirun.sh" -np 4 "$build/benchmarks/toroid-bench" "${args[@]}"
if ((plot)); then
  /usr/bin/python3 "$root/benchmarks/plot_bench.py" "$build/run.csv" -o "$build/run.png" \
    --title "all-reduce f32 on a 2x2 torus, $(nproc) cores, $(date +%F)"
  echo "run.sh: plot in $build/run.png (rows in $build/run.csv)"
fi
