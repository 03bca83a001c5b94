#!/usr/bin/env bash
# bench/ncu/vec_broadcast.sh: what a broadcast LDS.128 costs the load/store unit. Two points
# of SGEMM_CUDA's vectorized kernel (bench/ncu/vec_broadcast.yaml; the corpus's calibration
# part): Nsight Compute's shared wavefronts, LSU instructions and pipe utilisation, issue
# rate and stall reasons, one launch each (the second). Needs the corpus's SGEMM_CUDA
# sources placed (bench/CORPUS.md). Writes $OUT/vec-P.csv, vec.log, device.txt.
set -u
: "${OUT:?Error: set OUT to the folder the results go to}"
cd "$(dirname "$0")/../.."
R=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg
M=$M,smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum
M=$M,smsp__inst_executed_pipe_lsu.sum,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed
M=$M,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active
for s in long_scoreboard mio_throttle short_scoreboard wait math_pipe_throttle not_selected \
    selected dispatch_stall barrier lg_throttle; do M=$M,${R}_${s}_per_issue_active.ratio; done
for k in vec16x4 vec8x8; do
  PYTHONPATH=. ncu --csv --print-units base -k "regex:sgemmVectorize" --launch-skip 1 \
    --launch-count 1 --metrics "$M" python3 -m occupancy measure bench/ncu/vec_broadcast.yaml \
    --kernel "$k" --reps 3 > "$OUT/vec-$k.csv" 2>> "$OUT/vec.log"
  echo "$k: exit $?" | tee -a "$OUT/vec.log"
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt"
