#!/usr/bin/env bash
# bench/tilexp/ncu.sh: Nsight Compute on six points of bench/tilexp/tune.yaml's `noload` entry
# (no global load: the shared loads, stores, barriers and FFMAs alone), one launch each (the
# second): shared wavefronts (to set beside ptxsim's count), issue rate, warps, pipe use and
# stall reasons. Writes $OUT/ncu-N.csv, ncu.log, device.txt.
set -u
: "${OUT:?Error: set OUT to the folder the results go to}"
cd "$(dirname "$0")/../.."
R=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg
M=$M,smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum
M=$M,smsp__inst_executed_pipe_lsu.sum,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed
M=$M,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg
for s in long_scoreboard mio_throttle short_scoreboard wait math_pipe_throttle not_selected \
    selected dispatch_stall barrier lg_throttle no_instruction; do M=$M,${R}_${s}_per_issue_active.ratio; done
i=0
for t in "BM=128 BN=128 BK=16 TM=16 TN=4 VEC=0 PAD=0" "BM=128 BN=128 BK=16 TM=16 TN=4 VEC=1 PAD=0" \
    "BM=128 BN=128 BK=16 TM=8 TN=8 VEC=0 PAD=0" "BM=128 BN=128 BK=16 TM=8 TN=8 VEC=1 PAD=0" \
    "BM=64 BN=128 BK=16 TM=4 TN=8 VEC=1 PAD=0" "BM=64 BN=128 BK=16 TM=8 TN=4 VEC=0 PAD=0"; do
  i=$((i + 1))
  echo "$i: $t" >> "$OUT/ncu.log"
  PYTHONPATH=. ncu --csv --print-units base -k "regex:tilexp" --launch-skip 1 --launch-count 1 \
    --metrics "$M" python3 -m occupancy measure bench/tilexp/tune.yaml --kernel noload \
    --tiles "$t" --reps 3 > "$OUT/ncu-$i.csv" 2>> "$OUT/ncu.log"
  echo "$i: exit $?" >> "$OUT/ncu.log"
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt"
