#!/usr/bin/env bash
# bench/ncu/rolled.sh: where the warps of a rolled k loop wait, instruction by instruction
# (Nsight Compute's warp-state samples per SASS instruction, one launch each): SGEMM_CUDA
# warptiling at 2048^3 with 128 x 128 tiles and 256 threads at BK = 8 (unrolled) and 16
# (rolled; 23% slower), and bench/lsu/lds_ffma.cu built as close to that loop as it goes
# (-DPATTERN -DDOT -DREFILL -DBTILE -DSYNC=16, rolled and unrolled; +2% rolled), at 2 blocks
# of 8 warps an SM. docs/model.md item 43. Needs the corpus's SGEMM_CUDA sources placed
# (bench/CORPUS.md). Writes $OUT/rolled.tar.gz (per run: NAME-sass.csv, the source page;
# NAME-raw.csv, the launch's metrics), $OUT/rolled.log and $OUT/device.txt.
# WT=0 skips warptiling; LDS_FLAGS adds flags to the microbenchmark's build (and "-hoist",
# "-batch" to its runs' names where it holds -DHOIST, -DBATCH), OUTTAG a part of the names
# before their "-rolledN".
set -u
: "${OUT:?Error: set OUT to the folder the results go to}"
cd "$(dirname "$0")/../.."
W=/tmp/rolled; rm -rf "$W" && mkdir -p "$W"
M=smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.per_cycle_active
M=$M,smsp__warps_active.avg.per_cycle_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,gpu__time_duration.sum
R=smsp__average_warps_issue_stalled
for s in short_scoreboard long_scoreboard barrier mio_throttle wait not_selected dispatch_stall; do
  M=$M,${R}_${s}_per_issue_active.ratio; done
S="--section SourceCounters --section WarpStateStats --metrics $M"
prof() {  # NAME KERNEL-REGEX SKIP COMMAND...
  local name=$1 k=$2 skip=$3; shift 3
  echo "== $name: $*" >> "$OUT/rolled.log"
  ncu $S -k "regex:$k" --launch-skip "$skip" --launch-count 1 -f -o "$W/$name" "$@" \
    >> "$OUT/rolled.log" 2>&1
  echo "$name: exit $?" >> "$OUT/rolled.log"
  ncu -i "$W/$name.ncu-rep" --page source --csv --print-source sass > "$W/$name-sass.csv" 2>> "$OUT/rolled.log"
  ncu -i "$W/$name.ncu-rep" --page raw --csv > "$W/$name-raw.csv" 2>> "$OUT/rolled.log"
  rm -f "$W/$name.ncu-rep"
}
for bk in $([ "${WT:-1}" = 1 ] && echo 8 16); do
  PYTHONPATH=. prof "wt-bk$bk" sgemmWarptiling 1 python3 -m occupancy measure bench/ncu/warptiling.yaml \
    --kernel sgemmWarptiling --reps 3 \
    --tiles "BK=$bk BM=128 BN=128 WM=64 WN=32 WNITER=1 TM=8 TN=8 NUM_THREADS=256"
done
for r in 0 1; do
  nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 -DPATTERN -DDOT -DREFILL -DBTILE -DSYNC=16 \
    $([ $r = 1 ] && echo -DROLLED) ${LDS_FLAGS:-} -o "$W/l$r" bench/lsu/lds_ffma.cu >> "$OUT/rolled.log" 2>&1
  prof "lds-ffma$([[ "${LDS_FLAGS:-}" == *HOIST* ]] && echo -hoist)$([[ "${LDS_FLAGS:-}" == *BATCH* ]] && echo -batch)${OUTTAG:-}-rolled$r" outer 3 "$W/l$r" 256:0:1
done
tar -C "$W" -czf "$OUT/rolled.tar.gz" $(cd "$W" && ls ./*.csv)  # the pages, not the executables
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt"
ncu --version >> "$OUT/device.txt"
grep "exit" "$OUT/rolled.log"
