#!/usr/bin/env bash
# bench/ncu/sass_stalls.sh: where in the SASS the warps of nine SGEMM points stall, by
# instruction (Nsight Compute's warp-state samples per PC), to find what the dispatch stall
# that SGEMM_CUDA's 2-D kernel pays (0.77-0.99 an instruction, warptiling's 0.26-0.33:
# bench/results/h200-sgemm2d-ncu, h200-wt-ncu) sits on. The points: bench/ncu/sass_stalls.yaml
# (one launch each, the second; seven at 2048^3, two at 8192^3). Needs the corpus's
# SGEMM_CUDA sources placed (bench/CORPUS.md). Writes $OUT/sass-stalls.tar.gz (per point:
# P.ncu-rep; P-sass.csv, its `ncu --page source` view: every SASS instruction with its
# samples by stall reason; P-details.csv; P-measure.txt, what `measure` printed) and
# $OUT/sass-stalls.log, $OUT/device.txt. bench/ncu/sass_stalls_summary.py reads them (the
# record, bench/results/h200-sass-stalls, keeps all but the .ncu-rep files).
set -u
: "${OUT:?Error: set OUT to the folder the results go to}"
cd "$(dirname "$0")/../.."
W=/tmp/sass-stalls
rm -rf "$W" && mkdir -p "$W"
M=smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.per_cycle_active
M=$M,smsp__warps_active.avg.per_cycle_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed_pipe_lsu.sum
M=$M,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,lts__t_sector_hit_rate.pct
M=$M,dram__bytes_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
for p in sgemm2d_d:sgemm2DBlocktiling sgemm2d_c:sgemm2DBlocktiling wt_fast:sgemmWarptiling \
    wt_lead:sgemmWarptiling sgemm1d_best:sgemm1DBlocktiling vec_best:sgemmVectorize \
    own_sgemm:sgemm2DBlocktiling own_one_block:sgemm2DBlocktiling \
    own_best_8192:sgemm2DBlocktiling; do
  k=${p%%:*} f=${p##*:}
  PYTHONPATH=. ncu --section SourceCounters --section WarpStateStats --section SchedulerStats \
    --metrics "$M" --import-source no -k "regex:$f" --launch-skip 1 --launch-count 1 \
    -f -o "$W/$k" python3 -m occupancy measure bench/ncu/sass_stalls.yaml --kernel "$k" \
    --reps 3 > "$W/$k-measure.txt" 2>> "$OUT/sass-stalls.log"
  echo "$k: profile exit $?" | tee -a "$OUT/sass-stalls.log"
  ncu -i "$W/$k.ncu-rep" --page source --csv --print-source sass > "$W/$k-sass.csv" \
    2>> "$OUT/sass-stalls.log"
  echo "$k: source page exit $?" | tee -a "$OUT/sass-stalls.log"
  ncu -i "$W/$k.ncu-rep" --page details --csv --print-units base > "$W/$k-details.csv" \
    2>> "$OUT/sass-stalls.log"
done
tar -C "$W" -czf "$OUT/sass-stalls.tar.gz" .
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt"
ncu --version >> "$OUT/device.txt"
